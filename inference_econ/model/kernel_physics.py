"""The engine clock's physics forms: one kernel's seconds from its shape and the datasheet, one
form per op class with a few parameters fitted to the measured kernel tables.

Each form charges what the kernel must do against the part's datasheet figures (dense peak
FLOP/s at the format's bits, HBM bandwidth, the all-reduce bus bandwidth of its scale-up
links), so the fitted shares transfer to a part without tables:

* ``gemm``: fixed µs + max(FLOP / (peak·efficiency·m/(m + m½)), bytes / (HBM·stream share));
  the bytes are the weights at the format's width and BF16 activations in and out.
* ``generation_attention``: floor µs + µs a sequence·batch + K and V bytes / (HBM·share) +
  4·heads·head_dim FLOP a cached position / (BF16 peak·efficiency).
* ``context_attention``: floor µs + Q, K, V and output bytes / (HBM·share) + causal FLOP /
  (peak at the format's bits·efficiency·n/(n + n½)), ``n`` the prompt's tokens.
* ``allreduce`` (one node, the engine's own kernel) and ``collective`` (NCCL, per operation):
  latency µs + µs·log2(ranks) + the ring's bytes on a link / (bus bandwidth·share).
* ``moe``: fixed µs + max(FLOP / (peak·efficiency·s/(s + s½)), bytes of the experts touched /
  (HBM·share)), ``s`` the routed tokens an expert.
* ``pass`` (norm, activation, rotary, sampling): floor µs + the pass's fewest bytes / (HBM·share).

The parameters are data (kernels/engine_clock.yaml, with the tables they were fitted to);
``model/kernel_fit.py`` refits them. Nothing here fits at run time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import SpecError

Shape = Mapping[str, np.ndarray]

#: GEMM format -> (bits its FLOP/s is read at, bytes a weight: block scales included).
GEMM_FORMATS: dict[str, tuple[int, float]] = {
    "bfloat16": (16, 2.0),
    "fp8": (8, 1.0),
    "fp8_block": (8, 1.0 + 4.0 / (128 * 128)),
    "nvfp4": (4, 0.5 + 1.0 / 16.0),
}
#: Fused-MoE format -> (bits of its arithmetic, bytes a weight): MXFP4 weights with BF16 or FP8
#: activations run at the activations' rate.
MOE_FORMATS: dict[str, tuple[int, float]] = {
    **GEMM_FORMATS,
    "w4a16_mxfp4": (16, 0.5 + 1.0 / 32.0),
    "w4a8_mxfp4_mxfp8": (8, 0.5 + 1.0 / 32.0),
}
#: Attention format (the KV cache's, or the arithmetic's in context) -> (bits, bytes a value).
ATTENTION_FORMATS: dict[str, tuple[int, float]] = {"bfloat16": (16, 2.0), "fp8": (8, 1.0)}
#: Names a caller may give a format by.
FORMAT_ALIASES = {"bf16": "bfloat16", "fp16": "bfloat16", "float16": "bfloat16", "half": "bfloat16"}
#: NCCL operation -> the share of the message each rank sends over its links (a ring).
COLLECTIVES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "all_reduce": lambda r: 2.0 * (r - 1.0) / r,
    "all_gather": lambda r: (r - 1.0) / r,
    "reduce_scatter": lambda r: (r - 1.0) / r,
    "alltoall": lambda r: (r - 1.0) / r,
}
#: Pass -> (bytes a token·width, bytes a width, bytes a token): the fewest bytes it moves, as
#: benchmarks/measure_passes.py counts them (``rope``'s width is query heads of 128, a quarter
#: as many key/value heads, cos and sin of 64).
PASSES: dict[str, tuple[float, float, float]] = {
    "add_rmsnorm": (8.0, 2.0, 0.0),  # read x, the residual, the weight; write the residual, y
    "silu_mul": (6.0, 0.0, 0.0),  # read gate and up, write their product (width: one of them)
    "rope": (2.0 * 2.0 * 128.0 * 1.25, 0.0, 2.0 * 2.0 * 64.0),  # read and write q and k
    "sample_greedy": (4.0, 0.0, 8.0),  # read float32 logits, write an int64 a row
}


@dataclass(frozen=True)
class Sheet:
    """The datasheet figures a form reads: dense peak FLOP/s by bits, HBM and all-reduce bus
    bandwidth (bytes/s)."""

    peaks: tuple[tuple[int, float], ...]
    hbm: float
    bus: float

    @classmethod
    def of(cls, gpu: Any) -> Sheet:
        """The figures of a catalogue GPU."""
        bus = float(gpu.intra_node_allreduce_bandwidth_bytes_per_s)
        return cls(tuple(sorted(gpu.flop_per_s)), float(gpu.hbm_bandwidth_bytes_per_s), bus)

    def peak(self, bits: int) -> float:
        """Dense peak at ``bits``: a width the part lacks runs at the next wider one."""
        for width, rate in self.peaks:
            if width >= bits:
                return rate
        return self.peaks[-1][1]


def _fraction(value: np.ndarray, half: float) -> np.ndarray:
    """value / (value + half): the share of the plateau a size reaches."""
    return value / (value + half)


def gemm(p: Mapping[str, float], sheet: Sheet, fmt: str, s: Shape) -> np.ndarray:
    """A GEMM: fixed time + the larger of its arithmetic and its weights and activations."""
    bits, per_weight = GEMM_FORMATS[fmt]
    m, n, k = s["m"], s["n"], s["k"]
    rate = sheet.peak(bits) * p["efficiency"] * _fraction(m, p["half_tokens"])
    nbytes = n * k * per_weight + 2.0 * m * (n + k)
    memory = nbytes / (sheet.hbm * p["stream_share"])
    return p["fixed_us"] * 1e-6 + np.maximum(2.0 * m * n * k / rate, memory)


def attended_positions(tokens: np.ndarray, window: np.ndarray) -> np.ndarray:
    """The mean over a causal prompt of ``tokens`` of the positions a token attends to, each
    capped at ``window`` (0: none)."""
    n = tokens
    w = np.where(window > 0, window, n)
    return np.where(n <= w, (n + 1.0) / 2.0, (w * (w + 1.0) / 2.0 + (n - w) * w) / n)


def generation_attention(p: Mapping[str, float], sheet: Sheet, fmt: str, s: Shape) -> np.ndarray:
    """A decode step's attention: floor + a sequence's cost + K and V bytes + arithmetic."""
    _, width = ATTENTION_FORMATS[fmt]
    b, d = s["batch"], s["head_dim"]
    positions = np.where(s["window"] > 0, np.minimum(s["positions"], s["window"]), s["positions"])
    nbytes = b * positions * 2.0 * s["kv_heads"] * d * width
    flop = 4.0 * b * s["heads"] * d * positions
    fixed = (p["floor_us"] + p["sequence_us"] * b) * 1e-6
    return (
        fixed + nbytes / (sheet.hbm * p["stream_share"]) + flop / (sheet.peak(16) * p["efficiency"])
    )


def context_attention(p: Mapping[str, float], sheet: Sheet, fmt: str, s: Shape) -> np.ndarray:
    """Causal prompt attention: floor + Q, K, V and output bytes + causal arithmetic."""
    bits, _ = ATTENTION_FORMATS[fmt]
    b, n, d = s["batch"], s["tokens"], s["head_dim"]
    nbytes = 2.0 * b * n * d * (2.0 * s["heads"] + 2.0 * s["kv_heads"])
    flop = 4.0 * b * s["heads"] * d * n * attended_positions(n, s["window"])
    rate = sheet.peak(bits) * p["efficiency"] * _fraction(n, p["half_tokens"])
    return p["floor_us"] * 1e-6 + nbytes / (sheet.hbm * p["stream_share"]) + flop / rate


def collective(p: Mapping[str, float], sheet: Sheet, op: str, s: Shape) -> np.ndarray:
    """A collective inside a node: latency growing with log2(ranks) + the ring's bytes."""
    r = s["ranks"]
    wire = COLLECTIVES["all_reduce" if op == "custom" else op](r) * s["nbytes"]
    latency = (p["latency_us"] + p["rank_us"] * np.log2(r)) * 1e-6
    return np.where(r > 1, latency + wire / (sheet.bus * p["bus_share"]), 0.0)


def moe(p: Mapping[str, float], sheet: Sheet, fmt: str, s: Shape) -> np.ndarray:
    """A fused MoE layer: fixed time + the larger of its arithmetic and its touched experts."""
    bits, per_weight = MOE_FORMATS[fmt]
    tokens, e, tp, ep = s["tokens"], s["experts"], s["tp"], s["ep"]
    routed = tokens * s["topk"]
    matrix = s["hidden"] * s["inter"] / tp  # one of an expert's three matrices on one GPU
    touched = (e / ep) * -np.expm1(routed * np.log1p(-1.0 / np.maximum(e, 2.0)))
    nbytes = touched * 3.0 * matrix * per_weight + 2.0 * tokens * s["hidden"] * 2.0
    rate = sheet.peak(bits) * p["efficiency"] * _fraction(routed / e, p["half_tokens"])
    arithmetic = 6.0 * routed * matrix / ep / rate
    return p["fixed_us"] * 1e-6 + np.maximum(arithmetic, nbytes / (sheet.hbm * p["stream_share"]))


def pass_bytes(op: str, tokens: np.ndarray, width: np.ndarray) -> np.ndarray:
    """The fewest bytes pass ``op`` moves over ``tokens`` rows of ``width``."""
    a, b, c = PASSES[op]
    return a * tokens * width + b * width + c * tokens


def passes(p: Mapping[str, float], sheet: Sheet, op: str, s: Shape) -> np.ndarray:
    """A per-token pass: floor + its fewest bytes."""
    nbytes = pass_bytes(op, s["tokens"], s["width"])
    return p["floor_us"] * 1e-6 + nbytes / (sheet.hbm * p["stream_share"])


@dataclass(frozen=True)
class Form:
    """One op class's physics: its seconds function and its parameters with a first guess."""

    seconds: Callable[[Mapping[str, float], Sheet, str, Shape], np.ndarray]
    start: Mapping[str, float]


FORMS: dict[str, Form] = {
    "gemm": Form(
        gemm, {"fixed_us": 4.0, "efficiency": 0.7, "half_tokens": 64.0, "stream_share": 0.8}
    ),
    "generation_attention": Form(
        generation_attention,
        {"floor_us": 8.0, "sequence_us": 0.05, "stream_share": 0.7, "efficiency": 0.3},
    ),
    "context_attention": Form(
        context_attention,
        {"floor_us": 8.0, "stream_share": 0.5, "efficiency": 0.5, "half_tokens": 512.0},
    ),
    "allreduce": Form(collective, {"latency_us": 5.0, "rank_us": 1.0, "bus_share": 0.5}),
    "collective": Form(collective, {"latency_us": 10.0, "rank_us": 2.0, "bus_share": 0.5}),
    "moe": Form(
        moe, {"fixed_us": 20.0, "efficiency": 0.5, "half_tokens": 32.0, "stream_share": 0.6}
    ),
    "pass": Form(passes, {"floor_us": 2.0, "stream_share": 0.7}),
}


@lru_cache(maxsize=1)
def fitted() -> dict[str, Any]:
    """kernels/engine_clock.yaml, read once."""
    from ..specs.kernel_tables import engine_clock_fits

    return engine_clock_fits()


def parameters(op: str, variant: str) -> dict[str, float]:
    """The fitted parameters of ``op`` at ``variant`` (a format, or a collective's or a pass's
    name); the class's first listed variant where that one was never measured (its form still
    reads the variant's bits and bytes)."""
    table = fitted().get(op)
    if not isinstance(table, dict) or not table:
        raise SpecError("kernels/engine_clock.yaml", op, "is missing", _REFIT)
    entry = table.get(variant, next(iter(table.values())))
    try:
        return {name: float(entry[name]) for name in FORMS[op].start}
    except (KeyError, TypeError, ValueError):
        raise SpecError(
            "kernels/engine_clock.yaml", f"{op}.{variant}", "is incomplete", _REFIT
        ) from None


_REFIT = "rewrite it with benchmarks/fit_kernel_prices.py"


def physics_s(op: str, variant: str, sheet: Sheet, shape: Shape, params=None) -> np.ndarray:
    """Seconds of ``op`` (a key of FORMS) at ``variant`` on a part of datasheet ``sheet``."""
    p = parameters(op, variant) if params is None else params
    return np.asarray(FORMS[op].seconds(p, sheet, variant, shape), dtype=float)
