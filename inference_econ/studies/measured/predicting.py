"""Predicting measured operating points: the model evaluated at exactly the layout and batch
a benchmark ran, and measured / predicted for every row.

We evaluate the model at the measured layout and batch (tensor parallelism 1-D, as serving
engines implement it; context = input + output/2) and report measured / predicted. A roofline
should never be beaten by a real system by more than a few per cent; where it is, we say so.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ...model.economics import usd_per_mtok_at_throughput
from ...model.latency import StepModel
from ...model.workload import compile_workload
from ...serving.prefill import prefill
from ...serving.setting import make_setting
from ...specs.hardware import GPU
from .reading import MeasuredPoint, load_measured

#: A system beating the roofline by more than this is reported (measured / predicted speed).
BEAT_TOLERANCE = 1.03


def predict(
    point: MeasuredPoint,
    gpu: GPU | None = None,
    assumptions="paper",
    prefill_interference: bool = True,
) -> dict:
    """The model's latency at the measured layout and batch (1-D tensor parallelism).

    Benchmarks such as AIPerf keep the concurrency constant, so new prompts are prefilled on
    the same GPUs while others decode: with ``prefill_interference`` each decode step also
    carries the prefills of the B / n_out requests that arrive per step (as in
    ``disagg.compare``'s co-located case).
    """
    gpu = gpu or point.gpu
    setting = make_setting(
        point.arch,
        gpu,
        weight_bits=point.weight_bits,
        activation_bits=point.activation_bits,
        kv_cache_bits=point.kv_bits,
        assumptions=assumptions,
    )
    work = compile_workload(setting.model, setting.assumptions)
    model = StepModel(work, gpu, setting.assumptions)
    n = float(point.gpus / point.replicas)
    # requests beyond what HBM holds queue: the engine runs the largest batch that fits
    kv_per_request = work.kv_cache_bytes(point.context_tokens + point.output_len / 2.0, 1.0)
    room = n * model.machine.usable_hbm_bytes - model.weights_total_bytes
    running = (
        min(point.batch_per_replica, max(1.0, math.floor(room / kv_per_request)))
        if kv_per_request > 0
        else point.batch_per_replica
    )
    N, B = np.array([n]), np.array([running])
    bd = model.breakdown(
        N, B, 1, point.context_tokens, np.array([float(point.pipeline)]), np.array([1.0]), False
    )
    latency = float(bd.latency_s[0])
    stall = 0.0
    if prefill_interference and math.isfinite(latency):
        pre = prefill(setting, n, point.input_len, batch=1.0)
        stall = running / point.output_len * float(pre.latency_s)
    latency += stall
    return {
        "running_batch": running,
        "prefill_stall_s": stall,
        "predicted_tokens_per_s": 1.0 / latency if 0 < latency < math.inf else 0.0,
        "predicted_throughput_per_gpu": running / latency / n,
        "predicted_bound": "memory" if bd.memory_time_s[0] >= bd.compute_time_s[0] else "compute",
        "predicted_latency_s": latency,
    }


def compare(path: str | Path, assumptions="paper") -> pd.DataFrame:
    """Every measured point with the model's prediction and measured / predicted ratios."""
    rows = []
    for p in load_measured(path):
        pred = predict(p, assumptions=assumptions)
        ratio = (
            p.tokens_per_s / pred["predicted_tokens_per_s"]
            if pred["predicted_tokens_per_s"] > 0
            else math.inf
        )
        rows.append(
            {
                "row": p.row,
                "model": p.arch.name,
                "hardware": p.gpu.name,
                "precision": f"w{p.weight_bits:g}a{p.activation_bits:g}kv{p.kv_bits:g}",
                "gpus": p.gpus,
                "pipeline": p.pipeline,
                "concurrency": p.concurrency,
                "input_len": p.input_len,
                "output_len": p.output_len,
                "measured_tokens_per_s": p.tokens_per_s,
                **pred,
                "speed_ratio": ratio,
                "measured_throughput_per_gpu": p.throughput_per_gpu,
                "throughput_ratio": (p.throughput_per_gpu / pred["predicted_throughput_per_gpu"])
                if p.throughput_per_gpu
                else math.nan,
                "queueing": p.saturated or pred["running_batch"] < p.batch_per_replica,
                "beats_roofline": ratio > BEAT_TOLERANCE,
            }
        )
    return pd.DataFrame(rows)


def layout_curve(path, assumptions="paper", points: int = 30) -> pd.DataFrame:
    """The predicted speed and cost of the first measured row's layout with its batch swept
    from 1 to twice the largest measured concurrency (prefills interleaved as measured)."""
    rows = load_measured(path)
    first = rows[0]
    top = max(p.concurrency for p in rows if _same_system(p, first)) * 2
    price = first.gpu.price_usd_per_hour
    curve = []
    for batch in np.unique(np.round(np.logspace(0, np.log10(top), points))):
        probe = MeasuredPoint(**{**first.__dict__, "concurrency": float(batch)})
        pred = predict(probe, assumptions=assumptions)
        if pred["predicted_tokens_per_s"] > 0:
            cost = usd_per_mtok_at_throughput(pred["predicted_throughput_per_gpu"], price)
            curve.append(
                {
                    "tokens_per_s": pred["predicted_tokens_per_s"],
                    "usd_per_mtok": cost,
                    "batch": float(batch),
                }
            )
    return pd.DataFrame(curve).sort_values("tokens_per_s")


def _same_system(p: MeasuredPoint, q: MeasuredPoint) -> bool:
    key = lambda x: (x.arch.name, x.gpu.name, x.gpus, x.input_len, x.output_len)  # noqa: E731
    return key(p) == key(q)


def same_system_points(path) -> list[MeasuredPoint]:
    """The measured rows of the same model, GPU, GPU count and lengths as the first row."""
    rows = load_measured(path)
    return [p for p in rows if _same_system(p, rows[0])]
