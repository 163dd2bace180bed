"""Real data: importing config.json files and what-if sweeps (measured systems and calibration:
tests/test_measured.py)."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.model.workload import compile_workload
from inference_econ.specs.hf_import import import_config
from inference_econ.studies import sensitivity

REFINED = ie.preset("refined")

# config.json files written from the published architectures (no download)
LLAMA_70B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "num_hidden_layers": 80,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
}
DEEPSEEK_V3 = {
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
    "first_k_dense_replace": 3,
    "moe_layer_freq": 1,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "vocab_size": 129280,
    "num_nextn_predict_layers": 1,
    "tie_word_embeddings": False,
}
MIXTRAL = {
    "model_type": "mixtral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "vocab_size": 32000,
    "sliding_window": None,
}
GPT_OSS = {
    "model_type": "gpt_oss",
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "num_hidden_layers": 4,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "num_local_experts": 128,
    "experts_per_token": 4,
    "vocab_size": 201088,
    "sliding_window": 128,
    "tie_word_embeddings": False,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
}


def write(tmp_path, cfg, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(cfg))
    return path


def counts(arch):
    w = compile_workload(arch, REFINED)
    return w.total_params, w.active_params


@pytest.mark.parametrize(
    "cfg, shipped",
    [(LLAMA_70B, "Llama 3 70B"), (DEEPSEEK_V3, "DeepSeek-V3"), (MIXTRAL, "Mixtral 8x7B")],
)
def test_import_round_trips_to_the_shipped_counts(tmp_path, cfg, shipped):
    arch, text = import_config(write(tmp_path, cfg), name="imported")
    assert counts(arch) == pytest.approx(counts(ie.load_model(shipped)), rel=1e-9)
    out = tmp_path / "model.yaml"
    out.write_text(text)
    assert counts(ie.load_model(out)) == pytest.approx(counts(arch), rel=1e-12)


def test_import_hf_prints_a_summary_in_any_format(tmp_path):
    import json

    path = write(tmp_path, LLAMA_70B)
    out = tmp_path / "model.yaml"
    result = CliRunner().invoke(
        main, ["import-hf", str(path), "--name", "imported", "-o", str(out), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)["rows"][0]
    assert row["layers"] == 80 and row["kv_bytes_per_token"] == 327680 and out.is_file()


def test_import_sliding_window_layers(tmp_path):
    arch, _ = import_config(write(tmp_path, GPT_OSS), name="oss")
    assert {(g.layers, g.sliding_window_tokens) for g in arch.layer_groups} == {(2, 128), (2, None)}


def test_imported_yaml_writes_each_groups_ffn_in_full(tmp_path):
    """Groups sharing one feed-forward (gpt-oss's sliding and full layers) are written each with
    its own ``ffn``, not as a YAML anchor and alias, so editing one group's in the written file
    leaves the other's as imported (it had changed both)."""
    _, text = import_config(write(tmp_path, GPT_OSS), name="oss")
    assert "&id" not in text and "*id" not in text
    assert text.count("ffn: {d_ff: 2880, activation: swiglu, experts: 128") == 2
    edited = tmp_path / "oss.yaml"
    edited.write_text(text.replace("experts: 128, active_experts: 4", "experts: 64, "
                                   "active_experts: 4", 1))  # fmt: skip
    groups = ie.load_model(edited).layer_groups
    assert [(g.name, g.ffn.experts) for g in groups] == [("sliding", 64), ("full", 128)]


def test_layer_types_of_one_kind_import_as_one_group(tmp_path):
    """A config whose ``layer_types`` are all full attention (the window unused) or all
    sliding imports as one group of every layer; it had been refused naming a field of the
    written YAML, 'layer_groups[0].layers': is 0. A Gemma config whose pattern leaves no
    global layer is one local group."""
    full = {**GPT_OSS, "layer_types": ["full_attention"] * 4}
    arch, _ = import_config(write(tmp_path, full), name="oss")
    assert [(g.name, g.layers, g.sliding_window_tokens) for g in arch.layer_groups] == [
        ("full", 4, None)
    ]
    sliding = {**GPT_OSS, "layer_types": ["sliding_attention"] * 4}
    arch, _ = import_config(write(tmp_path, sliding), name="oss")
    assert [(g.name, g.layers, g.sliding_window_tokens) for g in arch.layer_groups] == [
        ("sliding", 4, 128)
    ]
    gemma = {"model_type": "gemma3_text", "hidden_size": 1152, "intermediate_size": 6912,
             "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 1,
             "head_dim": 256, "sliding_window": 512, "sliding_window_pattern": 6}  # fmt: skip
    arch, _ = import_config(write(tmp_path, gemma), name="gemma")
    assert [(g.name, g.layers, g.sliding_window_tokens) for g in arch.layer_groups] == [
        ("local", 4, 512)
    ]


def test_unknown_architecture_lists_unmapped_fields(tmp_path):
    cfg = {"model_type": "mamba", "hidden_size": 10, "ssm_state_size": 16, "conv_kernel": 4}
    with pytest.raises(ie.SpecError) as info:
        import_config(write(tmp_path, cfg))
    msg = str(info.value)
    assert "mamba" in msg and "ssm_state_size" in msg and "conv_kernel" in msg
    with pytest.raises(ie.SpecError, match="fields the importer cannot map: weird_field"):
        import_config(write(tmp_path, {**LLAMA_70B, "weird_field": 1}))
    result = CliRunner().invoke(main, ["import-hf", str(write(tmp_path, cfg))])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_sweep_and_elasticities():
    # a coarse grid: the invariants below hold on any grid
    coarse = ie.Method(grid_points=60)
    setting = ie.make_setting("Llama 3 70B", "H100-paper", weight_bits=8)
    df = sensitivity.sweep(setting, "hbm_bandwidth", [0.5, 1, 2, 4], method=coarse)
    assert np.all(np.diff(df.fastest_tokens_per_s) > 0) and np.all(
        np.diff(df.usd_per_mtok_at_speed) <= 0
    )
    # costs are compared at half the base fastest speed, and every row says so
    base = ie.frontier(setting, method=coarse).fastest().tokens_per_s
    assert np.allclose(df.at_speed_tokens_per_s, 0.5 * base, rtol=1e-12)
    price = sensitivity.sweep(setting, "price", [1, 2], method=coarse)
    assert price.usd_per_mtok_at_speed[1] == pytest.approx(2 * price.usd_per_mtok_at_speed[0])
    nccl = sensitivity.sweep(setting, "nccl_latency", [0, 1, 2], method=coarse)
    assert np.all(np.diff(nccl.fastest_tokens_per_s) < 0)
    spec = ie.make_setting("Llama 3 70B", "H100-paper", weight_bits=8, draft="Llama 3 8B")
    acc = sensitivity.sweep(spec, "acceptance", [0.0, 0.6, 0.9], method=coarse)
    assert (
        np.all(np.diff(acc.fastest_tokens_per_s) >= 0)
        and acc.fastest_tokens_per_s[2] > acc.fastest_tokens_per_s[0]
    )
    ctx = sensitivity.sweep(setting, "context", [0, 10000, 100000], method=coarse)
    assert np.all(np.diff(ctx.usd_per_mtok_at_speed) > 0)
    with pytest.raises(ie.SpecError, match="did you mean"):
        sensitivity.sweep(setting, "hbm_bandwith", [1])


def test_rules_of_thumb():
    # §5.1.3: doubling memory bandwidth alone cuts short-context latency by far less than half
    setting = ie.make_setting("Llama 3 70B", "H100-paper", weight_bits=8)
    df = sensitivity.sweep(setting, "hbm_bandwidth", [1, 2])
    cut = 1 - df.fastest_latency_s[1] / df.fastest_latency_s[0]
    assert 0.05 < cut < 0.3
    # §4.2: each halving of weight precision raises the maximum speed by roughly sqrt(2)
    # (Eq. 18 gives 2^(1/3) = 1.26); our full model gives about 1.22
    fastest = {
        b: ie.frontier("Llama 3 70B", "H100-paper", weight_bits=b).fastest().tokens_per_s
        for b in (16, 8, 4)
    }
    for hi, lo in ((16, 8), (8, 4)):
        assert 1.15 < fastest[lo] / fastest[hi] < 1.45
