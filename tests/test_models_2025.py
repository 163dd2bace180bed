"""The models people serve (2025): every file listed and shown with its published parameter
count; hybrids with recurrent mixers (docs/model.md §C2) hold a fixed state per request."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.model.workload import compile_workload, recurrent_mixer_shape
from inference_econ.specs.architecture import architecture_from_dict

REFINED = ie.preset("refined")
NEW_MODELS = [
    "Llama 2 70B",
    "Qwen2.5-7B",
    "Qwen2.5-72B",
    "Qwen3-8B",
    "Qwen3-32B",
    "Gemma 2 27B",
    "Gemma 3 27B",
    "DeepSeek-V3.1",
    "DeepSeek-R1",
    "Mistral Small 3",
    "Qwen3-Next-80B-A3B",
    "Jamba 1.5 Mini",
    "Jamba 1.5 Large",
]
#: Models whose card's active count is defined like ours (both embedding tables included).
ACTIVE_COMPARABLE = {"DeepSeek-V3.1", "DeepSeek-R1", "Jamba 1.5 Mini", "Jamba 1.5 Large"}


def test_every_new_model_is_listed():
    result = CliRunner().invoke(main, ["list", "models", "--format", "json"])
    assert set(NEW_MODELS) <= {row["name"] for row in json.loads(result.output)["rows"]}


@pytest.mark.parametrize("name", NEW_MODELS)
def test_show_gives_the_published_parameter_count(name):
    # published counts take tied embeddings once: the refined preset's accounting
    result = CliRunner().invoke(
        main, ["show", name, "--assumptions", "refined", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)["rows"][0]
    assert shown["total_params"] == pytest.approx(shown["published_total_params"], rel=0.02)
    if name in ACTIVE_COMPARABLE:
        assert shown["active_params"] == pytest.approx(shown["published_active_params"], rel=0.02)


def test_recurrent_mixers_match_the_checkpoints():
    # transformers' Qwen3NextGatedDeltaNet: in_proj_qkvz 25,165,824 + in_proj_ba 131,072 +
    # conv 32,768 + A_log, dt_bias, norm 192 + out_proj 8,388,608
    qwen = ie.load_model("Qwen3-Next-80B-A3B")
    mats, other, state, _, _ = recurrent_mixer_shape(qwen.group("linear").mixer, 2048)
    assert sum(m * k for m, k in mats) + other == 33_718_464
    assert state == 32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)
    # Jamba 1.5 Mini's Mamba block (its three 288-weight layer norms aside)
    jamba = ie.load_model("Jamba 1.5 Mini")
    mats, other, state, _, _ = recurrent_mixer_shape(jamba.group("mamba-dense").mixer, 4096)
    assert sum(m * k for m, k in mats) + other == 105_308_448 - 288
    assert state == 8192 * 16 + 3 * 8192


def test_a_hybrid_caches_positions_only_in_its_attention_layers():
    work = compile_workload(ie.load_model("Qwen3-Next-80B-A3B"), REFINED)
    # 12 gated-attention layers x (2 KV heads x 2 x 256) x 2 bytes
    assert work.kv_bytes_per_token == 12 * 2 * 2 * 256 * 2
    state = 36 * (32 * 128 * 128 + 3 * 8192) * 2
    assert work.state_bytes_per_sequence == state
    assert work.kv_cache_bytes(0.0, 1.0) == state  # the state is there from the first token
    grown = work.kv_cache_bytes(100_000.0, 3.0) - work.kv_cache_bytes(0.0, 3.0)
    assert grown == pytest.approx(3 * 100_000 * work.kv_bytes_per_token)
    # the gate doubles the query projection's output: (2·16 + 2·2)·256·2048 + 16·256·2048
    attention = ie.load_model("Qwen3-Next-80B-A3B").attention
    assert attention.output_gate
    mixer_total = work.layers * work.attention_params_per_layer
    assert mixer_total == pytest.approx(12 * 27_262_976 + 36 * 33_718_464)


def test_at_long_context_a_hybrid_reads_less_than_a_transformer():
    def kv_read(model, context):
        row = ie.point(
            model, "H200", gpus=8, batch=32, context_tokens=context, assumptions="refined"
        )
        return row.memory_time_s

    grow_jamba = kv_read("Jamba 1.5 Mini", 128_000) / kv_read("Jamba 1.5 Mini", 1_000)
    grow_mixtral = kv_read("Mixtral 8x7B", 128_000) / kv_read("Mixtral 8x7B", 1_000)
    assert 1.0 < grow_jamba < grow_mixtral


def test_gemma_local_and_global_layers():
    gemma3 = ie.load_model("Gemma 3 27B")
    assert {(g.layers, g.sliding_window_tokens) for g in gemma3.layer_groups} == {
        (52, 1024),
        (10, None),
    }
    work = compile_workload(gemma3, REFINED)
    per_layer = 16 * 2 * 128 * 2
    assert work.kv_cache_bytes(32_768.0, 1.0) == per_layer * (52 * 1024 + 10 * 32_768)


MINI = {
    "name": "M",
    "d_model": 1024,
    "vocab_size": 1000,
    "attention": {"kind": "gqa", "query_heads": 8, "kv_heads": 2},
}


def _group(**kw):
    return {"name": "g", "layers": 2, "ffn": {"d_ff": 4096}, **kw}


def test_mixer_errors_name_the_field():
    mamba = {"kind": "mamba", "inner": 2048, "state_dim": 16, "conv_kernel": 4}
    with pytest.raises(ie.SpecError) as info:
        architecture_from_dict(
            {**MINI, "layer_groups": [_group(mixer=mamba, sliding_window_tokens=64)]}, "m.yaml"
        )
    assert info.value.field == "layer_groups[0].sliding_window_tokens"
    with pytest.raises(ie.SpecError, match="did you mean 'mamba'"):
        architecture_from_dict(
            {**MINI, "layer_groups": [_group(mixer={**mamba, "kind": "mambo"})]}, "m.yaml"
        )
    delta = {
        "kind": "gated_deltanet",
        "key_heads": 3,
        "value_heads": 8,
        "key_head_dim": 64,
        "value_head_dim": 64,
        "conv_kernel": 4,
    }
    with pytest.raises(ie.SpecError, match="not a multiple of key_heads"):
        architecture_from_dict({**MINI, "layer_groups": [_group(mixer=delta)]}, "m.yaml")
    with pytest.raises(ie.SpecError, match="did you mean 'state_dim'"):
        architecture_from_dict(
            {**MINI, "layer_groups": [_group(mixer={**mamba, "state_dims": 16})]}, "m.yaml"
        )
    with pytest.raises(ie.SpecError) as info:
        architecture_from_dict(
            {**MINI, "layer_groups": [_group()], "mtp": {"modules": 1, "layer_group": "x"}},
            "m.yaml",
        )
    assert info.value.field == "mtp.layer_group"


def test_hybrid_frontier_is_sane_under_both_presets():
    for preset_name in ("paper", "refined"):
        f = ie.frontier(
            "Jamba 1.5 Mini", "MI325X", assumptions=preset_name, grid_points=24, context_tokens=8000
        )
        assert not f.empty
        pts = f.points
        assert np.all(np.diff(pts.tokens_per_s) > 0) and np.all(np.diff(pts.usd_per_mtok) > 0)
