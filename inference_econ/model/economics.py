"""Money and utilisation: $ per million tokens, GPU-seconds, MFU and the FLOP/s a chip sustains
(docs/model.md §A3, §A7). Every module that prices or rates a configuration calls these."""

from __future__ import annotations

from ..specs.hardware import GPU
from .assumptions import Assumptions

SECONDS_PER_HOUR = 3600.0


def flop_rates(gpu: GPU, weight_bits: float, assumptions: Assumptions) -> tuple[float, float]:
    """(peak, sustained) dense FLOP/s of matmuls with ``weight_bits`` weights (§A3).

    A precision the chip lacks runs at the next wider one; without ``native_fp4`` 4-bit
    weights run at the 8-bit rate even on chips with FP4 tensor cores (the paper's rule).
    """
    peak = gpu.peak_flop_per_s(weight_bits, assumptions.native_fp4)
    return peak, peak * gpu.sustained_flop_fraction


def gpu_seconds_per_token(gpus, latency_s, batch):
    """GPU-seconds one token costs: N·latency/B (§A7)."""
    return gpus * latency_s / batch


def usd_per_mtok(gpus, latency_s, tokens_per_step, price_usd_per_hour):
    """$ per million tokens when ``gpus`` GPUs produce ``tokens_per_step`` tokens every
    ``latency_s`` seconds (§A7: 1e6·N·latency/B·price/3600)."""
    return 1e6 * gpus * latency_s / tokens_per_step * price_usd_per_hour / SECONDS_PER_HOUR


def usd_per_mtok_at_throughput(tokens_per_s_per_gpu, price_usd_per_hour):
    """$ per million tokens of a GPU producing ``tokens_per_s_per_gpu`` tokens per second."""
    return 1e6 * price_usd_per_hour / SECONDS_PER_HOUR / tokens_per_s_per_gpu


def mfu(flop, gpus, peak_flop_per_s, latency_s):
    """Model FLOP utilisation: useful FLOP over what the uncapped peak could do (§A7)."""
    return flop / (gpus * peak_flop_per_s * latency_s)
