"""A disaggregated export's expected price is that of the pools it launches: every prefill
worker beside the decode worker, paid for all the time, at the rate the slower pool sets."""

from __future__ import annotations

import json

import pytest

from inference_econ import api


@pytest.fixture(scope="module")
def deepseek_pools():
    """DeepSeek-R1 on B200: a decode worker of 16 GPUs at batch 1,024 fed by prefill workers
    of 8 GPUs (two of them: one alone would keep it busy 68 % of the time)."""
    return api.export(
        "DeepSeek-R1", "B200", engine="sglang", plan="disagg", gpus=16, batch=1024,
        prefill_gpus=8, prompt_tokens=4000, output_tokens=1000, weight_bits=8,
    )  # fmt: skip


def test_disagg_export_prices_every_launched_gpu(deepseek_pools):
    plan = deepseek_pools
    gpus = sum(w.count * w.gpus for w in plan.workers)
    assert [(w.role, w.count, w.gpus) for w in plan.workers] == [
        ("prefill", 2, 8),
        ("decode", 1, 16),
    ]
    assert gpus == 32
    usd_per_hour = gpus * plan.setting.gpu.price_usd_per_hour  # 32 x 3.52
    # two prefill workers outpace the decode worker, which then runs its whole batch
    tokens_per_s = plan.expected["output_tokens_per_s"]
    assert tokens_per_s == pytest.approx(1024 / plan.expected["tpot_s"])
    priced = usd_per_hour / (tokens_per_s * 3600) * 1e6
    assert plan.expected["usd_per_m_output_tokens"] == pytest.approx(priced, rel=1e-9)
    assert plan.expected["usd_per_m_output_tokens"] == pytest.approx(1.049, abs=0.001)


def test_disagg_export_price_interval_holds_the_price(deepseek_pools):
    value = deepseek_pools.expected["usd_per_m_output_tokens"]
    ends = deepseek_pools.intervals
    low, high = ends["usd_per_m_output_tokens_low80"], ends["usd_per_m_output_tokens_high80"]
    assert low < value < high
    assert (
        ends["usd_per_m_output_tokens_low90"] <= low
        and high <= ends["usd_per_m_output_tokens_high90"]
    )


def test_disagg_benchmark_result_reads_back_with_its_pools(deepseek_pools, tmp_path):
    """The benchmark's metadata and plan.json name both pools, so a result of a disaggregated
    plan is predicted (its decode GPUs known) rather than left unresolved."""
    from inference_econ.export import benchmark_commands as bc
    from inference_econ.export import bundle
    from inference_econ.measured.reading import load_measured
    from inference_econ.measured.tool_results import tool_frame

    meta = bc.metadata(deepseek_pools)
    assert meta["ie_parallelism"] == "prefill: TP8 (EP8) x2; decode: TP16 (EP16, attn-DP)"
    (tmp_path / "plan.json").write_text(json.dumps(bundle.plan_record(deepseek_pools)))
    run = {
        "backend": "sglang", "model_id": "deepseek-ai/DeepSeek-R1", "num_prompts": 10240,
        "completed": 10240, "max_concurrency": 1024, "request_rate": "inf",
        "total_input_tokens": 4000 * 10240, "total_output_tokens": 1000 * 10240,
        "output_throughput": 24000.0, "mean_tpot_ms": 40.0,
    }  # fmt: skip
    (tmp_path / "results").mkdir()
    for name, extra in (("bare.json", {}), ("tagged.json", meta)):
        path = tmp_path / "results" / name
        path.write_text(json.dumps({**run, **extra}))
        frame = tool_frame(path)
        assert set(frame["parallelism"]) == {meta["ie_parallelism"]}
        assert set(frame["n_gpus"]) == {"32"}
        throughput = [r for r in load_measured(path) if r.metric_text == "throughput"]
        assert throughput and all(r.ok and r.decode_gpus == 16 for r in throughput)
