"""The frontier of the paper's Section 2 toy model (docs/model.md §A8, Figure 1)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..model.assumptions import PAPER
from ..model.economics import priced_grid, usd_per_mtok
from ..model.machine import flop_rates, min_gpus
from ..model.workload import compile_workload
from ..serving.toy import grid_latency_s
from ..specs.architecture import Architecture
from ..specs.catalog import display_path
from ..specs.hardware import GPU
from .frontier import Frontier, pareto_indices
from .method import GRID_MAX_LOG2, SPEED_RANGE


def toy_frontier(
    arch: Architecture,
    gpu: GPU,
    context_tokens: float = 1.0,
    max_throughput_tokens_per_s: float = math.inf,
    points: int = 400,
    label: str = "",
    allreduce_latency_s: float = 2e-6,
    base_latency_s: float = 6e-6,
    all_points: bool = False,
):
    """Figure 1: the toy model's Pareto frontier on the §A7 grid, with a demand cap.

    Like the main optimiser, batches reach 2^(18 + log2 s) for a mixture of experts (sparsity
    s), MFU counts the FLOP of the active parameters, and the frontier keeps the paper's range
    (down to 1/100 of the fastest speed) unless ``all_points``."""
    work = compile_workload(arch, PAPER)
    start = min_gpus(work.weights_total_bytes, gpu)
    sparsity = max(g.sparsity for g in work.groups)
    n = np.logspace(np.log2(start), GRID_MAX_LOG2, points, base=2)
    b = np.logspace(0, GRID_MAX_LOG2 + np.log2(sparsity), points, base=2)
    N, B = np.meshgrid(n, b)
    latency = grid_latency_s(arch, gpu, N, B, context_tokens, allreduce_latency_s, base_latency_s)
    cost = priced_grid(N, latency, B, gpu.price_usd_per_hour, max_throughput_tokens_per_s)
    idx = pareto_indices(latency, cost)
    lat, n_sel, b_sel = latency.ravel()[idx], N.ravel()[idx], B.ravel()[idx]
    peak = flop_rates(gpu, work.weight_bits, PAPER)[0]
    df = pd.DataFrame(
        {
            "tokens_per_s": 1.0 / lat,
            "usd_per_mtok": usd_per_mtok(n_sel, lat, b_sel, gpu.price_usd_per_hour),
            "latency_s": lat,
            "gpus": n_sel,
            "batch": b_sel,
            "mfu": 2.0 * work.active_params * b_sel / (n_sel * peak * lat),
            "throughput_tokens_per_s": b_sel / lat,
        }
    ).sort_values("tokens_per_s", kind="stable")
    if not all_points:
        df = df[df["tokens_per_s"] >= df["tokens_per_s"].max() / SPEED_RANGE * (1 - 1e-12)]
    meta = {
        "model": arch.name,
        "model_file": display_path(arch.source_file),
        "hardware": gpu.name,
        "hardware_file": display_path(gpu.source_file),
        "weight_bits": float(work.weight_bits),
        "context_tokens": float(context_tokens),
        "method": f"toy model of Section 2, grid {points} x {points}"
        + ("" if all_points else f", speeds from fastest/{SPEED_RANGE:g}"),
        "allreduce_latency_s": allreduce_latency_s,
        "base_latency_s": base_latency_s,
    }
    if math.isfinite(max_throughput_tokens_per_s):
        meta["max_throughput_tokens_per_s"] = float(max_throughput_tokens_per_s)
    return Frontier(
        label=label or arch.name,
        points=df.reset_index(drop=True),
        grid_points=N.size,
        metadata=meta,
    )
