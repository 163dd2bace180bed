"""Context windows and datasheet caps stated where a reader meets them: the H200 datasheet's
sustained FLOP fraction, a whole batch's KV cache beyond HBM, warnings for contexts beyond a
model's window (sweeps, drafts), help examples within their models' windows, and `show`'s window
apart from the KV tokens one GPU holds."""

import warnings

import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ import api
from inference_econ.cli import main
from inference_econ.errors import InferenceEconWarning
from inference_econ.specs.architecture import load_model
from inference_econ.specs.hardware import load_hardware
from inference_econ.studies import sensitivity as sens
from inference_econ.studies.inverse.variants import Variant, setting_for


def _warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, InferenceEconWarning)]


def test_h200_datasheet_file_sustains_the_h100_flop_fraction_and_the_paper_file_keeps_its_cap():
    assert load_hardware("H200").sustained_flop_fraction == 0.7
    assert load_hardware("H100").sustained_flop_fraction == 0.7
    assert load_hardware("H200-paper").sustained_flop_fraction == 0.6
    # same die, faster HBM: a compute-bound prefill is no slower on the H200 (it was 7/6 as
    # long at the 0.6 cap), and a memory-bound decode step is faster
    from inference_econ.serving.prefill import prefill

    def pre(gpu):
        setting = ie.make_setting("Llama 3.3 70B", gpu, weight_bits=8, assumptions="refined")
        return prefill(setting, 4, 8000).latency_s

    assert pre("H200") <= pre("H100") < 1.1 * pre("H200")
    kw = dict(gpus=4, batch=64, context_tokens=2000, assumptions="refined", weight_bits=8)
    h100 = api.points("Llama 3.3 70B", "H100", **kw).latency_s[0]
    h200 = api.points("Llama 3.3 70B", "H200", **kw).latency_s[0]
    assert h200 < h100


def test_point_notes_a_whole_batch_kv_cache_beyond_hbm_under_the_paper_preset():
    args = ["point", "Llama 3.3 70B", "-H", "H100", "--gpus", "8", "--batch", "64"]
    big = CliRunner().invoke(main, [*args, "--context", "100000", "--format", "csv"])
    assert big.exit_code == 0, big.output
    # 64 x 100,000 tokens x 327,680 B = 2,097 GB, weights 141 GB, 8 x 80 GB of HBM
    assert (
        "(64 x 100,000 tokens, 2,097 GB) plus the weights (141 GB) exceed the 684 GB" in big.output
    )
    small = CliRunner().invoke(main, [*args, "--context", "1000", "--format", "csv"])
    assert small.exit_code == 0 and "whole batch" not in small.output
    refined = CliRunner().invoke(main, [*args, "--context", "100000", "--assumptions", "refined"])
    assert refined.exit_code == 1
    req = ["request", "Llama 3.3 70B", "-H", "H100", "--gpus", "8", "--batch", "64"]
    req += ["--prompt-tokens", "60000", "--output-tokens", "1000", "--format", "csv"]
    out = CliRunner().invoke(main, req)
    assert out.exit_code == 0 and "(64 x 60,500 tokens, 1,269 GB)" in out.output


def test_context_window_warnings_cover_sweeps_drafts_and_default_drafts():
    base = ie.make_setting("Llama 3 8B", "H100")
    caught = _warnings(lambda: sens.vary(base, "context", 100000))
    assert any("100,000 tokens exceeds the window of Llama 3 8B" in m for m in caught)
    assert not _warnings(lambda: sens.vary(base, "context", 1000))
    caught = _warnings(
        lambda: ie.make_setting("Llama 3.1 70B", "H100", context_tokens=100000, draft="Llama 3 8B")
    )
    assert any("the window of the draft model Llama 3 8B (8,192 tokens" in m for m in caught)
    # the inverse studies' default draft applied to an 8B offer: the warning says how to stop it
    caught = _warnings(
        lambda: setting_for(
            load_model("Llama 3 8B"), Variant("H100-paper", "paper", 16.0), "Llama 3 8B"
        )
    )
    assert any("self-speculation" in m and "--no-speculation" in m for m in caught)
    tornado = CliRunner().invoke(
        main, ["sweep", "Llama 3 8B", "-H", "H100", "--param", "context", "--tornado", "t.png"]
    )
    assert tornado.exit_code == 2 and "cannot be given with --param" in tornado.output


def test_help_examples_fit_their_models_windows():
    # lognormal:1000:0.8 prompts reach ~18K tokens; context-parallel's default prompts 64K
    for command, model in [("simulate", "Llama 3.3 70B"), ("capacity", "Llama 3.1 8B")]:
        text = CliRunner().invoke(main, [command, "--help"]).output
        assert f'{command} "{model}"' in text
        assert load_model(model).max_context_tokens >= 100_000
    text = CliRunner().invoke(main, ["context-parallel", "--help"]).output
    assert 'context-parallel "Llama 3.1 8B"' in text
    assert load_model("Llama 3.1 8B").max_context_tokens >= 64_000
    assert "1/100 of its own fastest" in CliRunner().invoke(main, ["sweep", "--help"]).output


def test_show_model_states_its_window_apart_from_the_kv_tokens_one_gpu_holds():
    summary = api.model_summary("Llama 3 70B", "H100-paper")
    assert summary["max_context_tokens"] == 8192
    assert "max_context_tokens_one_request_one_gpu" not in summary
    assert summary["kv_tokens_beside_weights_one_gpu"] == 0.0  # 141 GB of weights on 80 GB
    eight = api.model_summary("Llama 3 8B", "H100-paper")
    # (80e9 - 16.06e9 B) / 131,072 B per token
    assert eight["kv_tokens_beside_weights_one_gpu"] == pytest.approx(
        (80e9 - eight["weights_total_bytes"]) / 131072
    )
    assert eight["kv_tokens_beside_weights_one_gpu"] == pytest.approx(487_800, rel=1e-3)
    # the refined preset keeps 10 % of HBM for activations (§A5): (0.9 x 80e9 - weights) / KV
    refined = api.model_summary("Llama 3 8B", "H100-paper", "refined")
    assert refined["kv_tokens_beside_weights_one_gpu"] == pytest.approx(
        (0.9 * 80e9 - eight["weights_total_bytes"]) / 131072
    )


def test_show_model_holds_the_kv_cache_the_engine_sizes():
    """Under an engine, the tokens one GPU holds are the cache the engine sizes (§F8), as the
    load engine and the exports size it: TensorRT-LLM's 0.9 of the memory its 3.5 GiB runtime,
    the weights and one step's activations leave (8,192 tokens x 32 heads x 128 x 11 16-bit
    buffers for a dense model at tensor degree 1), not the whole HBM less the runtime."""
    from inference_econ.load.run import instance_in
    from inference_econ.model.mixed_step import EngineLayout

    summary = api.model_summary("Llama 3.1 8B", "H100", "achievable")
    hbm, weights = 85_520_809_984, summary["weights_total_bytes"]
    by_hand = 0.9 * (hbm - 3_758_096_384 - weights - 2 * 8192 * 4096 * 11) / 131072
    assert summary["kv_tokens_beside_weights_one_gpu"] == pytest.approx(by_hand, rel=1e-9)
    assert summary["kv_tokens_beside_weights_one_gpu"] == pytest.approx(446_076, abs=1)
    setting = ie.make_setting("Llama 3.1 8B", "H100", assumptions="achievable")
    inst = instance_in(setting, EngineLayout(1, 1, 1.0))
    # the load engine's cache counts layer-positions: 32 layers a token
    assert inst.kv_capacity == pytest.approx(by_hand * 32, rel=1e-9)


def test_a_context_sweeps_footer_says_each_row_has_its_own_context():
    """A sweep of the context states each row's context in its row: its "Computed with" line
    says so, where it had given the base setting's 1,000 tokens under rows at 8,000."""
    args = ["sweep", "Llama 3 8B", "-H", "H100", "--param", "context", "--values", "1000,8000"]
    out = CliRunner().invoke(main, [*args, "--grid-points", "60"]).output
    footer = next(line for line in out.splitlines() if line.startswith("Computed with:"))
    assert "context each row's value (swept)" in footer and "context 1,000 tokens" not in footer
