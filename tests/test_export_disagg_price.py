"""A disaggregated export's expected price is that of the pools it launches: every prefill
worker beside the decode worker, paid for all the time, at the rate the slower pool sets."""

from __future__ import annotations

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
    assert plan.expected["usd_per_m_output_tokens"] == pytest.approx(1.242, abs=0.001)


def test_disagg_export_price_interval_holds_the_price(deepseek_pools):
    value = deepseek_pools.expected["usd_per_m_output_tokens"]
    ends = deepseek_pools.intervals
    low, high = ends["usd_per_m_output_tokens_low80"], ends["usd_per_m_output_tokens_high80"]
    assert low < value < high
    assert (
        ends["usd_per_m_output_tokens_low90"] <= low
        and high <= ends["usd_per_m_output_tokens_high90"]
    )
