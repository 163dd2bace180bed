"""import-hf from the Hugging Face Hub (a fake huggingface_hub: CI has no network), precision
from quantization_config, names, text_config nesting, and bad configs."""

import json
import sys
import types

import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.model.workload import compile_workload
from inference_econ.specs.hf_import import import_config, import_repo

REFINED = ie.preset("refined")

# deepseek-ai/DeepSeek-V3 config.json as published (architectural and quantization fields)
DEEPSEEK_V3_FP8 = {
    "_name_or_path": "deepseek-ai/DeepSeek-V3",
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "n_group": 8,
    "topk_group": 4,
    "topk_method": "noaux_tc",
    "scoring_func": "sigmoid",
    "routed_scaling_factor": 2.5,
    "norm_topk_prob": True,
    "moe_layer_freq": 1,
    "first_k_dense_replace": 3,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "vocab_size": 129280,
    "max_position_embeddings": 163840,
    "num_nextn_predict_layers": 1,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "quantization_config": {
        "activation_scheme": "dynamic",
        "fmt": "e4m3",
        "quant_method": "fp8",
        "weight_block_size": [128, 128],
    },
}
# meta-llama/Llama-4-Maverick-17B-128E: the text model nested under text_config
LLAMA4_MAVERICK = {
    "architectures": ["Llama4ForConditionalGeneration"],
    "model_type": "llama4",
    "image_token_index": 200092,
    "vision_config": {"hidden_size": 1408, "num_hidden_layers": 34},
    "text_config": {
        "model_type": "llama4_text",
        "hidden_size": 5120,
        "intermediate_size": 8192,
        "intermediate_size_mlp": 16384,
        "num_hidden_layers": 48,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "num_local_experts": 128,
        "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 2,
        "attention_chunk_size": 8192,
        "vocab_size": 202048,
        "max_position_embeddings": 1048576,
        "rope_theta": 500000.0,
        "tie_word_embeddings": False,
    },
}
LLAMA_8B = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
}


def counts(arch):
    w = compile_workload(arch, REFINED)
    return w.total_params, w.active_params


@pytest.fixture
def fake_hub(monkeypatch, tmp_path):
    """A stand-in huggingface_hub whose repositories are folders of tmp_path."""
    repos: dict[str, dict[str, dict]] = {}
    calls = []

    class EntryNotFoundError(Exception):
        pass

    class RepositoryNotFoundError(Exception):
        pass

    def hf_hub_download(repo_id, filename, *, revision=None, **_):
        calls.append((repo_id, filename, revision))
        if repo_id not in repos:
            raise RepositoryNotFoundError(f"404 Client Error. Repository Not Found for {repo_id}")
        if filename not in repos[repo_id]:
            raise EntryNotFoundError(f"{filename} not found")
        path = tmp_path / repo_id.replace("/", "--") / filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(repos[repo_id][filename]))
        return str(path)

    module = types.SimpleNamespace(hf_hub_download=hf_hub_download)
    monkeypatch.setitem(sys.modules, "huggingface_hub", module)
    module.repos, module.calls = repos, calls
    return module


def test_hub_fp8_deepseek_imports_as_8_bit_named_after_the_repository(fake_hub):
    fake_hub.repos["deepseek-ai/DeepSeek-V3"] = {"config.json": DEEPSEEK_V3_FP8}
    arch, text = import_repo("deepseek-ai/DeepSeek-V3")
    assert arch.name == "DeepSeek-V3" and "deepseek-ai/DeepSeek-V3" in arch.aliases
    assert arch.precision.weight_bits == 8 and arch.precision.activation_bits == 16
    assert counts(arch) == pytest.approx(counts(ie.load_model("DeepSeek-V3")), rel=1e-9)
    assert arch.mtp is not None and arch.mtp.modules == 1 and arch.mtp.layer_group == "moe"
    assert "weight_bits: 8" in text
    # max_position_embeddings is kept as the model's window, as the shipped file has it
    assert arch.max_context_tokens == 163840 == ie.load_model("DeepSeek-V3").max_context_tokens
    assert "max_context_tokens: 163840" in text
    # config.json, then the optional ModelOpt file (absent here)
    assert [c[1] for c in fake_hub.calls] == ["config.json", "hf_quant_config.json"]


def test_modelopt_hf_quant_config_sets_weight_and_kv_bits(fake_hub):
    quant = {
        "producer": {"name": "modelopt"},
        "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"},
    }
    fake_hub.repos["nvidia/Llama-3.1-8B-Instruct-FP4"] = {
        "config.json": LLAMA_8B,
        "hf_quant_config.json": quant,
    }
    arch, _ = import_repo("nvidia/Llama-3.1-8B-Instruct-FP4", revision="main")
    assert arch.precision.weight_bits == 4 and arch.precision.kv_cache_bits == 8
    assert fake_hub.calls[0] == ("nvidia/Llama-3.1-8B-Instruct-FP4", "config.json", "main")


@pytest.mark.parametrize(
    "qc, bits",
    [
        ({"quant_method": "gptq", "bits": 4, "group_size": 128}, 4),
        ({"quant_method": "awq", "bits": 4}, 4),
        ({"quant_method": "bitsandbytes", "load_in_8bit": True}, 8),
        ({"quant_method": "mxfp4"}, 4.25),  # an 8-bit scale per 32 4-bit values
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}},
            },
            8,
        ),
    ],
)
def test_quantization_config_gives_the_weight_bits(tmp_path, qc, bits):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA_8B, "quantization_config": qc}))
    arch, _ = import_config(path)
    assert arch.precision.weight_bits == bits


@pytest.mark.parametrize(
    "qc, gemm_bits",
    [
        ({"quant_method": "awq", "bits": 4}, 16),  # W4A16: dequantized into BF16 GEMMs
        ({"quant_method": "gptq", "bits": 4}, 16),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, 16),
        ({"quant_method": "compressed-tensors",
          "config_groups": {"g": {"weights": {"num_bits": 4}}}}, 16),  # no input activations
        ({"quant_method": "compressed-tensors",
          "config_groups": {"g": {"weights": {"num_bits": 8},
                                  "input_activations": {"num_bits": 8}}}}, None),  # W8A8
        ({"quant_method": "fp8"}, None),
    ],
)  # fmt: skip
def test_a_weight_only_format_multiplies_in_16_bits(tmp_path, qc, gemm_bits):
    """AWQ, GPTQ and bitsandbytes store 4-bit weights but multiply in BF16: imported as 4-bit
    weights with 16-bit GEMM activations, not at the GPU's 4-bit tensor-core rate (a B200's
    8,000-token prefill of such a model had been 2.7 times too fast)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA_8B, "quantization_config": qc}))
    arch, _ = import_config(path)
    assert arch.precision.gemm_activation_bits == gemm_bits


def test_imported_checkpoints_keep_their_formats_as_the_shipped_files_do(tmp_path):
    """gpt-oss's config leaves attention, router and embeddings unquantized
    (``modules_to_not_convert``): imported with BF16 dense weights beside its 4.25-bit MXFP4
    experts (and MXFP8 GEMM activations), its precision and weight bytes are the shipped
    file's (65 GB; all-4-bit it had been 58); a ModelOpt quantization_config states its FP8
    KV cache as hf_quant_config.json does; a float32 checkpoint is served in 16 bits."""
    oss = {
        "model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880,
        "num_hidden_layers": 36, "num_attention_heads": 64, "num_key_value_heads": 8,
        "head_dim": 64, "num_local_experts": 128, "num_experts_per_tok": 4,
        "vocab_size": 201088, "sliding_window": 128, "max_position_embeddings": 131072,
        "layer_types": ["sliding_attention", "full_attention"] * 18,
        "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
            "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
            "lm_head"]},
    }  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(oss))
    arch, _ = import_config(path)
    shipped = ie.load_model("gpt-oss-120b")
    assert arch.precision == shipped.precision
    got = compile_workload(arch, REFINED).weights_total_bytes
    assert got == pytest.approx(compile_workload(shipped, REFINED).weights_total_bytes, rel=1e-3)
    modelopt = {"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}
    path.write_text(json.dumps({**LLAMA_8B, "quantization_config": modelopt}))
    arch, _ = import_config(path)
    assert (arch.precision.weight_bits, arch.precision.kv_cache_bits) == (4, 8)
    path.write_text(json.dumps({**LLAMA_8B, "torch_dtype": "float32"}))
    assert import_config(path)[0].precision.weight_bits == 16


def test_block_scaled_fp8_checkpoints_import_as_block_scaled(tmp_path):
    """DeepSeek-V3's, Kimi K2's and Qwen3's FP8 releases state ``weight_block_size`` (and an
    llm-compressor checkpoint ``"strategy": "block"``): imported as the shipped DeepSeek-V3
    file is, block-scaled 8-bit weights, which the engine clock prices with the block-scaled
    kernels (a DeepSeek-V3 decode step on 8 H200s at batch 256 had been 5 % faster, as
    per-tensor FP8); a per-tensor FP8 config stays per-tensor."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(DEEPSEEK_V3_FP8))
    arch, text = import_config(path)
    assert arch.precision == ie.load_model("DeepSeek-V3").precision
    assert arch.precision.weight_block_scaled is True and arch.precision.label() == (
        "w8a16/block-scaled"
    )
    assert "weight_block_scaled: true" in text
    block = {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]}
    for qc, scaled in (
        ({"quant_method": "fp8", "activation_scheme": "dynamic"}, False),
        ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": block}}}, True),
        ({"quant_method": "compressed-tensors",
          "config_groups": {"g": {"weights": {**block, "strategy": "channel"}}}}, False),
    ):  # fmt: skip
        path.write_text(json.dumps({**LLAMA_8B, "quantization_config": qc}))
        assert import_config(path)[0].precision.weight_block_scaled is scaled
    bad = {**DEEPSEEK_V3_FP8["quantization_config"], "weight_block_size": "128"}
    path.write_text(json.dumps({**LLAMA_8B, "quantization_config": bad}))
    with pytest.raises(ie.SpecError, match="weight_block_size"):
        import_config(path)


def test_unknown_quantization_is_an_error_not_16_bits(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA_8B, "quantization_config": {"quant_method": "mystery"}}))
    with pytest.raises(ie.SpecError, match="weight bits of 'mystery'"):
        import_config(path)


def test_text_config_nesting_llama4_round_trips_to_the_shipped_model(tmp_path):
    folder = tmp_path / "Llama-4-Maverick-17B-128E"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA4_MAVERICK))
    arch, _ = import_config(folder)  # a folder holding config.json
    assert arch.name == "Llama-4-Maverick-17B-128E"  # the folder, not the model type
    shipped = ie.load_model("Llama 4 Maverick")
    assert counts(arch) == pytest.approx(counts(shipped), rel=1e-9)
    got = sorted((g.layers, g.sliding_window_tokens or 0, g.ffn.is_moe) for g in arch.layer_groups)
    want = sorted(
        (g.layers, g.sliding_window_tokens or 0, g.ffn.is_moe) for g in shipped.layer_groups
    )
    assert got == want
    assert "vision encoder is not modelled" in arch.description
    assert arch.max_context_tokens == shipped.max_context_tokens == 1048576  # from text_config
    assert arch.expert_routing == shipped.expert_routing == "power_law_1.01"  # AIConfigurator's
    assert import_config_dict_without_window().max_context_tokens is None


def import_config_dict_without_window():
    """A config without max_position_embeddings imports with no window (none is guessed)."""
    from inference_econ.specs.architecture import architecture_from_dict
    from inference_econ.specs.hf_import import config_to_dict

    return architecture_from_dict(config_to_dict(LLAMA_8B), "config.json")


def test_gemma3_config_as_the_hub_ships_it_takes_transformers_defaults(tmp_path):
    # google/gemma-3-27b-it's text_config leaves out what Gemma3TextConfig defaults (its
    # vocabulary, 262,208, and its pattern, one global layer in 6): the import takes them and
    # gives the shipped model's 52 local + 10 global layers, not Gemma 2's alternation
    text = {
        "model_type": "gemma3_text", "hidden_size": 5376, "intermediate_size": 21504,
        "num_hidden_layers": 62, "num_attention_heads": 32, "num_key_value_heads": 16,
        "head_dim": 128, "sliding_window": 1024, "query_pre_attn_scalar": 168,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
    }  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma3", "text_config": text,
                                "_name_or_path": "google/gemma-3-27b-it"}))  # fmt: skip
    arch, _ = import_config(path)
    shipped = ie.load_model("Gemma 3 27B")
    layers = sorted((g.layers, g.sliding_window_tokens or 0) for g in arch.layer_groups)
    assert layers == [(10, 0), (52, 1024)]
    assert arch.vocab_size == shipped.vocab_size == 262_208
    assert counts(arch) == pytest.approx(counts(shipped), rel=1e-9)
    # the 12B states no head size (16 heads of 256 on a 3,840-wide model, not 240) and the 4B
    # no head counts: both take Gemma3TextConfig's defaults
    twelve = {**text, "hidden_size": 3840, "num_hidden_layers": 48, "num_attention_heads": 16,
              "num_key_value_heads": 8, "intermediate_size": 15360}  # fmt: skip
    del twelve["head_dim"]
    path.write_text(json.dumps({"model_type": "gemma3", "text_config": twelve}))
    arch, _ = import_config(path)
    assert (arch.attention.query_heads, arch.attention.head_dim) == (16, 256)
    assert arch.max_context_tokens == 131_072
    four = {k: v for k, v in twelve.items() if not k.startswith("num_") or k == "num_hidden_layers"}
    four.update(hidden_size=2560, num_hidden_layers=34, intermediate_size=10240)
    path.write_text(json.dumps({"model_type": "gemma3", "text_config": four}))
    arch, _ = import_config(path)
    assert (arch.attention.query_heads, arch.attention.kv_heads, arch.attention.head_dim) == (
        8,
        4,
        256,
    )


def test_name_comes_from_name_or_path_not_model_type(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA_8B, "_name_or_path": "meta-llama/Llama-3.1-8B"}))
    assert import_config(path)[0].name == "Llama-3.1-8B"


def test_without_name_or_path_the_name_is_the_folders_and_help_says_so(tmp_path):
    """The help said "default: the repository or _name_or_path"; a local config without
    _name_or_path takes its folder's name (the guide's examples/config.json: 'examples')."""
    folder = tmp_path / "Mistral-7B-v0.3"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA_8B))
    assert import_config(folder / "config.json")[0].name == "Mistral-7B-v0.3"
    text = " ".join(CliRunner().invoke(main, ["import-hf", "--help"]).output.split())
    assert "else the folder that holds config.json" in text


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("num_attention_heads", 0, "num_attention_heads"),
        ("hidden_size", "4096x", "expected a number"),
        ("num_hidden_layers", float("nan"), "nan"),
        ("intermediate_size", 14336.5, "whole number"),
    ],
)
def test_bad_fields_are_one_line_and_exit_2(tmp_path, field, value, words):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA_8B, field: value}))  # json writes NaN for nan
    with pytest.raises(ie.SpecError) as info:
        import_config(path)
    assert info.value.field == field and words in str(info.value)
    result = CliRunner().invoke(main, ["import-hf", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.count("\n") == 1 and field in result.output


def test_cli_reads_a_repository_and_reports_hub_failures(fake_hub, tmp_path):
    fake_hub.repos["Qwen/Qwen3-8B"] = {
        "config.json": {**LLAMA_8B, "model_type": "qwen3", "_name_or_path": "Qwen/Qwen3-8B"}
    }
    out = tmp_path / "qwen.yaml"
    result = CliRunner().invoke(main, ["import-hf", "Qwen/Qwen3-8B", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert ie.load_model(out).name == "Qwen3-8B"
    result = CliRunner().invoke(main, ["import-hf", "nobody/missing-model"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "nobody/missing-model" in result.output and "RepositoryNotFoundError" in result.output


def test_without_huggingface_hub_the_fix_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import fails
    result = CliRunner().invoke(main, ["import-hf", "deepseek-ai/DeepSeek-V3"])
    assert result.exit_code == 2 and 'pip install "inference-econ[hub]"' in result.output


def test_a_llama4_no_rope_list_of_another_length_is_refused(tmp_path):
    """``no_rope_layers`` gives each layer its attention (RoPE and chunked, or global): a list
    of 4 for 48 layers had been read as 3 chunked layers and 45 more taken as chunked; like a
    short ``layer_types`` it is refused, naming the field."""
    text = {**LLAMA4_MAVERICK["text_config"], "no_rope_layers": [1, 1, 1, 0]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA4_MAVERICK, "text_config": text}))
    with pytest.raises(ie.SpecError, match="no_rope_layers.*4 entries for 48 layers"):
        import_config(path)


@pytest.mark.parametrize(
    "qc, field",
    [
        ({"quant_method": "gptq", "bits": 3.5, "group_size": 128}, "quantization_config.bits"),
        ({"quant_method": "awq", "bits": "4.5"}, "quantization_config.bits"),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": 2.5}}},
            },
            "quantization_config.config_groups.weights.num_bits",
        ),
    ],
)
def test_a_fractional_bit_width_is_refused_not_cut_to_a_whole_one(tmp_path, qc, field):
    """GPTQ's ``"bits": 3.5`` had imported as 3-bit weights (exit 0); now one line naming the
    field and the fix, exit 2. Whole widths still import (3 stays 3)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA_8B, "quantization_config": qc}))
    with pytest.raises(ie.SpecError) as info:
        import_config(path)
    assert info.value.field == field and "not a whole number of bits" in str(info.value)
    result = CliRunner().invoke(main, ["import-hf", str(path)])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert field in result.output and "(2, 3, 4 or 8)" in result.output
    path.write_text(json.dumps({**LLAMA_8B, "quantization_config": {**qc, "bits": 3}}))
    if "bits" in qc:
        assert import_config(path)[0].precision.weight_bits == 3


def test_group_limited_routing_imports_as_the_shipped_deepseek_v3_has_it(tmp_path):
    """DeepSeek-V3's ``n_group: 8`` / ``topk_group: 4`` (a token's 8 experts on at most 4 of 8
    groups, report §2.1.2) had been ignored: the imported model routed over every group where
    the shipped file has ``expert_groups: 8``, ``groups_per_token: 4``. DeepSeek-V2 (8 and 3,
    ``group_limited_greedy``) keeps its limit; one group, or V2-Lite's plain ``greedy``
    top-k, limits nothing; a limit wider than the groups is the config's error."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(DEEPSEEK_V3_FP8))
    moe = import_config(path)[0].layer_groups[-1].ffn
    shipped = ie.load_model("DeepSeek-V3").layer_groups[-1].ffn
    assert (moe.expert_groups, moe.groups_per_token) == (8, 4)
    assert (shipped.expert_groups, shipped.groups_per_token) == (8, 4)
    for extra, limit in (
        ({"n_group": 8, "topk_group": 3, "topk_method": "group_limited_greedy"}, (8, 3)),
        ({"n_group": 1, "topk_group": 1, "topk_method": "greedy"}, (1, 0)),
        ({"n_group": 8, "topk_group": 3, "topk_method": "greedy"}, (1, 0)),
    ):
        path.write_text(json.dumps({**DEEPSEEK_V3_FP8, **extra}))
        ffn = import_config(path)[0].layer_groups[-1].ffn
        assert (ffn.expert_groups, ffn.groups_per_token) == limit, extra
    path.write_text(json.dumps({**DEEPSEEK_V3_FP8, "topk_group": 9}))
    result = CliRunner().invoke(main, ["import-hf", str(path)])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert "groups_per_token" in result.output


# zai-org/GLM-4.5 config.json (Hugging Face Hub, MIT licence), every field as published;
# the same dimensions as NVIDIA Megatron-Bridge's GLM 4.5 page and the GLM-4.5 report, Table 1.
# GLM-4.6 is this config with max_position_embeddings 202752 (models/glm-4.6.yaml).
GLM_4_5 = {
    "architectures": ["Glm4MoeForCausalLM"],
    "attention_bias": True,
    "attention_dropout": 0.0,
    "pad_token_id": 151329,
    "eos_token_id": [151329, 151336, 151338],
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 5120,
    "partial_rotary_factor": 0.5,
    "initializer_range": 0.02,
    "intermediate_size": 12288,
    "max_position_embeddings": 131072,
    "model_type": "glm4_moe",
    "moe_intermediate_size": 1536,
    "norm_topk_prob": True,
    "num_attention_heads": 96,
    "n_group": 1,
    "topk_group": 1,
    "n_routed_experts": 160,
    "n_shared_experts": 1,
    "routed_scaling_factor": 2.5,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "num_hidden_layers": 92,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "num_nextn_predict_layers": 1,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.54.0",
    "use_cache": True,
    "use_qk_norm": True,
    "vocab_size": 151552,
}
# Qwen/Qwen3-Next-80B-A3B-Instruct config.json (Hugging Face Hub, Apache-2.0), its
# architectural fields as published (-Thinking's are the same); transformers derives the
# layers' mixers from full_attention_interval (no layer_types in the file).
QWEN3_NEXT = {
    "architectures": ["Qwen3NextForCausalLM"],
    "attention_dropout": 0.0,
    "decoder_sparse_step": 1,
    "full_attention_interval": 4,
    "head_dim": 256,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "initializer_range": 0.02,
    "intermediate_size": 5120,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "linear_value_head_dim": 128,
    "max_position_embeddings": 262144,
    "mlp_only_layers": [],
    "model_type": "qwen3_next",
    "moe_intermediate_size": 512,
    "norm_topk_prob": True,
    "num_attention_heads": 16,
    "num_experts": 512,
    "num_experts_per_tok": 10,
    "num_hidden_layers": 48,
    "num_key_value_heads": 2,
    "output_router_logits": False,
    "partial_rotary_factor": 0.25,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 10000000,
    "router_aux_loss_coef": 0.001,
    "shared_expert_intermediate_size": 512,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 151936,
}


def _same_layers(arch, shipped):
    """Each layer group's layers, FFN and mixer as the shipped file has them."""
    assert len(arch.layer_groups) == len(shipped.layer_groups)
    for got, want in zip(arch.layer_groups, shipped.layer_groups):
        assert (got.name, got.layers, got.mixer) == (want.name, want.layers, want.mixer)
        assert got.ffn == want.ffn, got.name


@pytest.mark.parametrize(
    "cfg, shipped",
    [
        (GLM_4_5, "GLM-4.5"),
        ({**GLM_4_5, "max_position_embeddings": 202752}, "GLM-4.6"),
    ],
)
def test_glm4_moe_imports_as_the_shipped_glm_files(tmp_path, cfg, shipped):
    """``glm4_moe`` had been refused (exit 2, "cannot map architecture"); GLM-4.5's published
    config now gives the shipped file's model: 3 dense layers of 12,288 then 89 MoE layers of
    160 routed experts (8 a token) and 1 shared of 1,536, GQA 96/8 heads of 128 (KV 376,832
    bytes a token at 16 bits), 352.7B parameters (card: 355B) and 33.6B active with the
    embeddings (card: 32B, without them). Its MTP layer is imported too, as DeepSeek-V3's."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    arch, text = import_config(path)
    model = ie.load_model(shipped)
    _same_layers(arch, model)
    assert arch.attention == model.attention and arch.precision == model.precision
    assert arch.max_context_tokens == model.max_context_tokens
    assert counts(arch) == pytest.approx(counts(model), rel=1e-12)
    total, active = counts(arch)
    assert total == pytest.approx(355e9, rel=0.02) and active == pytest.approx(33.5e9, rel=0.02)
    work = compile_workload(arch, REFINED)
    assert work.kv_bytes_per_token == compile_workload(model, REFINED).kv_bytes_per_token
    assert work.kv_bytes_per_token == 92 * 2 * 8 * 128 * 2
    assert arch.mtp is not None and (arch.mtp.modules, arch.mtp.layer_group) == (1, "moe")
    out = tmp_path / "glm.yaml"
    out.write_text(text)
    assert counts(ie.load_model(out)) == pytest.approx(counts(arch), rel=1e-12)


@pytest.mark.parametrize("shipped", ["GLM-4.5", "GLM-4.6"])
def test_glm_files_carry_their_mtp_layer_as_the_import_does(tmp_path, shipped):
    """GLM-4.5's config (and report, Table 1) states one MTP layer, which the import writes as
    DeepSeek-V3's (``mtp: {modules: 1, layer_group: moe}``); the shipped GLM files had left it
    out, so ``--draft-heads mtp`` was refused for them ("has no multi-token prediction
    modules"). Its resident weights: one GQA + MoE layer and the 2 x 5,120 -> 5,120 projection,
    3.99B parameters (7.97 GB in BF16), outside the 352.7B main model."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GLM_4_5))
    model = ie.load_model(shipped)
    assert model.mtp == import_config(path)[0].mtp
    assert (model.mtp.modules, model.mtp.layer_group) == (1, "moe")
    work, copies = ie.mtp_heads(model, 0.8).resident(REFINED)
    assert copies == 1 and work.weights_total_bytes == 7_974_420_480
    assert counts(model)[0] == pytest.approx(352.72e9, rel=1e-4)  # the totals leave it out


def test_qwen3_next_imports_as_the_shipped_hybrid(tmp_path):
    """``qwen3_next`` had been refused (exit 2); its published config now gives the shipped
    file's hybrid: 36 Gated DeltaNet layers (16 key and 32 value heads of 128, 4 taps: a fixed
    state, no KV cache) and 12 gated full-attention layers (16/2 heads of 256, output gate),
    every layer 512 routed experts of 512 (10 a token) and a shared one; 79.6B parameters
    (card: 80B), a KV cache of the 12 attention layers only (24,576 bytes a token)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN3_NEXT))
    arch, text = import_config(path)
    model = ie.load_model("Qwen3-Next-80B-A3B")
    _same_layers(arch, model)
    assert arch.attention == model.attention and arch.attention.output_gate is True
    assert arch.layer_groups[0].mixer.kind == "gated_deltanet" and arch.attention_layers == 12
    assert counts(arch) == pytest.approx(counts(model), rel=1e-12)
    assert counts(arch)[0] == pytest.approx(79.62e9, rel=1e-3)
    work, shipped = compile_workload(arch, REFINED), compile_workload(model, REFINED)
    assert work.kv_bytes_per_token == shipped.kv_bytes_per_token == 12 * 2 * 2 * 256 * 2
    assert work.state_bytes_per_sequence == shipped.state_bytes_per_sequence > 0
    assert arch.mtp is None  # the config does not state num_nextn_predict_layers
    with_mtp = import_config({**QWEN3_NEXT, "num_nextn_predict_layers": 1})[0]
    assert (with_mtp.mtp.modules, with_mtp.mtp.layer_group) == (1, "full")
    # layer_types, where a config writes them out, give the same layers
    kinds = (["linear_attention"] * 3 + ["full_attention"]) * 12
    listed = import_config({**QWEN3_NEXT, "layer_types": kinds})[0]
    assert counts(listed) == counts(arch)
    out = tmp_path / "next.yaml"
    out.write_text(text)
    assert counts(ie.load_model(out)) == pytest.approx(counts(arch), rel=1e-12)


@pytest.mark.parametrize(
    "extra, field",
    [
        ({"layer_types": ["linear_attention"] * 47}, "layer_types"),
        ({"layer_types": ["sliding_attention"] * 48}, "layer_types"),
        ({"full_attention_interval": 0}, "full_attention_interval"),
        ({"linear_num_value_heads": 24}, "value_heads"),  # not a multiple of the 16 key heads
    ],
)
def test_a_bad_qwen3_next_field_is_one_line_naming_it(tmp_path, extra, field):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN3_NEXT, **extra}))
    result = CliRunner().invoke(main, ["import-hf", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.count("\n") == 1 and field in result.output


def test_qwen3_next_fields_are_not_read_for_another_architecture(tmp_path):
    """The Gated DeltaNet fields are Qwen3-Next's: on a Llama config they are unmapped."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA_8B, "linear_num_key_heads": 16}))
    with pytest.raises(ie.SpecError, match="linear_num_key_heads"):
        import_config(path)


# Qwen/Qwen2.5-72B-Instruct-AWQ config.json (Hugging Face Hub, Qwen licence), its
# architectural and quantization fields as published. Qwen padded the MLP of its 72B AWQ and
# GPTQ releases with zeros from the base model's 29,568 to 29,696 (29,696 / 128 groups divides
# by 8, so vLLM can split the 4-bit weights over 8 GPUs; Qwen's "pad intermediate_size to
# 29696" commits; github.com/QwenLM/Qwen3-VL/issues/230): the checkpoint holds, and an
# engine multiplies, 72.96B parameters, 70.46B of them in the layers (the card, copied from the
# base model: 72.7B and 70.0B).
# The repository's 41,607,438,677 bytes are these weights at AWQ's 4 bits plus a 16-bit scale
# and a 4-bit zero per group of 128 (41.60 GB, 29,568 would give 41.46) and the tokenizer files.
QWEN25_72B_AWQ = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 8192,
    "intermediate_size": 29696,
    "num_hidden_layers": 80,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "max_window_layers": 70,
    "vocab_size": 152064,
    "max_position_embeddings": 32768,
    "sliding_window": 131072,
    "use_sliding_window": False,
    "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-06,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
    "quantization_config": {
        "bits": 4,
        "group_size": 128,
        "modules_to_not_convert": None,
        "quant_method": "awq",
        "version": "gemm",
        "zero_point": True,
    },
}


def test_awq_and_gptq_keep_the_embeddings_and_head_in_16_bits(tmp_path):
    """AWQ and GPTQ quantise the layers' linear weights only; the 2.49B weights of Qwen2.5-72B's
    embedding table and output head had been counted at 4 bits (1.25 GB where the checkpoint
    holds 4.98 GB) and the head read at 4 bits each step. They import as 16-bit tables:
    weights 40.21 GB under the paper's bytes (70.46B x 0.5 + 2.49B x 2), not 36.48. The
    release's padded MLP (29,696 wide) is imported as the checkpoint stores it."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN25_72B_AWQ))
    arch, text = import_config(path)
    assert arch.precision.weight_bits == 4 and arch.precision.embedding_bits == 16
    assert "embedding_bits: 16" in text and arch.precision.label() == "w4a16/gemm-a16/emb16"
    base = ie.load_model("Qwen2.5-72B").layer_groups[0].ffn.d_ff
    assert arch.layer_groups[0].ffn.d_ff == 29696 == base + 128
    work = compile_workload(arch, ie.preset("paper"))
    assert work.total_params == 72_955_723_776  # 72.7B on the card, before the padding
    assert work.embedding_params == 2 * 152064 * 8192
    layers = work.total_params - work.embedding_params
    assert layers == 70_464_307_200 == 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 29696)
    assert work.weights_total_bytes == pytest.approx(layers * 0.5 + work.embedding_params * 2)
    assert work.weights_total_bytes / 1e9 == pytest.approx(40.21, abs=0.01)
    assert work.unembedding_bytes == 152064 * 8192 * 2
    out = tmp_path / "awq.yaml"
    out.write_text(text)
    assert ie.load_model(out).precision == arch.precision
    gptq = {"quant_method": "gptq", "bits": 4, "group_size": 128, "lm_head": False}
    path.write_text(json.dumps({**QWEN25_72B_AWQ, "quantization_config": gptq}))
    assert import_config(path)[0].precision.embedding_bits == 16
    path.write_text(
        json.dumps({**QWEN25_72B_AWQ, "quantization_config": {**gptq, "lm_head": True}})
    )
    result = CliRunner().invoke(main, ["import-hf", str(path)])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert "quantization_config.lm_head" in result.output
    fp8 = {"quant_method": "fp8", "activation_scheme": "dynamic"}  # as the shipped FP8 files
    path.write_text(json.dumps({**QWEN25_72B_AWQ, "quantization_config": fp8}))
    assert import_config(path)[0].precision.embedding_bits is None
