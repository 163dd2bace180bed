"""Money and utilisation: $ per million tokens, GPU-seconds and MFU (docs/model.md §A7). Every
module that prices a configuration calls these (the FLOP/s a chip sustains: ``machine``)."""

from __future__ import annotations

import numpy as np

SECONDS_PER_HOUR = 3600.0


def gpu_seconds_per_token(gpus, latency_s, batch):
    """GPU-seconds one token costs: N·latency/B (§A7)."""
    return gpus * latency_s / batch


def usd_per_mtok(gpus, latency_s, tokens_per_step, price_usd_per_hour):
    """$ per million tokens when ``gpus`` GPUs produce ``tokens_per_step`` tokens every
    ``latency_s`` seconds (§A7: 1e6·N·latency/B·price/3600)."""
    return 1e6 * gpus * latency_s / tokens_per_step * price_usd_per_hour / SECONDS_PER_HOUR


def priced_grid(gpus, latency_s, batch, price_usd_per_hour, max_throughput_tokens_per_s):
    """$ per million tokens of every configuration of a grid, inf where its throughput
    B/latency exceeds the demand cap (§A7: a provider cannot sell more tokens than are asked
    for). Arrays broadcast; infinite latencies stay infinite costs."""
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = usd_per_mtok(gpus, latency_s, batch, price_usd_per_hour)
        return np.where(batch / latency_s > max_throughput_tokens_per_s, np.inf, cost)


def usd_per_mtok_at_throughput(tokens_per_s_per_gpu, price_usd_per_hour):
    """$ per million tokens of a GPU producing ``tokens_per_s_per_gpu`` tokens per second."""
    return 1e6 * price_usd_per_hour / SECONDS_PER_HOUR / tokens_per_s_per_gpu


def mfu(flop, gpus, peak_flop_per_s, latency_s):
    """Model FLOP utilisation: useful FLOP over what the uncapped peak could do (§A7)."""
    return flop / (gpus * peak_flop_per_s * latency_s)
