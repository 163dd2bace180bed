"""One step of a continuously batching engine: decode requests and prefill chunks in one forward
pass on a fixed layout (docs/model.md §E1).

``mixed_step_s`` is the definition, written on ``StepModel``: a pass over ``D + P`` tokens
(``D`` decoding requests, ``P`` prompt tokens) whose KV reads and attention arithmetic are those
of the decoding requests' contexts and of the prompt chunk's prefix. ``StepTable`` evaluates the
same thing fast: everything that depends only on the tokens of the step is tabulated for every
whole token count, and the context enters through two linear terms (§E1), so a step costs two
table look-ups and a ``max``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .latency import StepModel, total_time_s
from .workload import Workload


@dataclass(frozen=True)
class EngineLayout:
    """The whole layout an engine instance runs with: GPUs, pipeline degree, attention divisor
    (attention tensor degree = GPUs / pipeline / divisor) and 1-D or 2-D tensor parallelism."""

    gpus: int
    pipeline: int = 1
    attention_divisor: float = 1.0
    two_d: bool = False

    @property
    def tensor_degree(self) -> int:
        return self.gpus // self.pipeline

    @property
    def attention_degree(self) -> float:
        return self.tensor_degree / self.attention_divisor

    def describe(self) -> str:
        """Such as "8 GPUs: TP8 (attention TP8), PP1, 1-D"."""
        dims = "2-D" if self.two_d and self.tensor_degree > 1 else "1-D"
        return (
            f"{self.gpus} GPUs: TP{self.tensor_degree} (attention TP{self.attention_degree:g}), "
            f"PP{self.pipeline}, {dims}"
        )


def layer_positions(work: Workload, context):
    """Cached positions summed over the layers, Σ_g L_g·min(n, window_g): what one request's
    KV cache holds (times the bytes per position per layer) and what one of its tokens attends
    to (times the FLOP per position per layer)."""
    total = 0.0
    for g in work.groups:
        total = total + g.layers * np.minimum(context, g.window)
    return total


def mixed_step_s(
    model: StepModel,
    prefill_work: Workload,
    layout: EngineLayout,
    decode_requests,
    decode_context,
    prefill_tokens,
    prefill_context=0.0,
):
    """Seconds of one engine step (arrays broadcast): ``decode_requests`` requests decoding one
    token each at mean context ``decode_context``, and a prompt chunk of ``prefill_tokens``
    tokens after ``prefill_context`` tokens already prefilled (§E1). ``prefill_work`` is the
    workload with causal attention (the mean context over the chunk, §B8). 0 for an empty step.
    """
    D = np.asarray(decode_requests, dtype=float)
    P = np.asarray(prefill_tokens, dtype=float)
    tokens = D + P
    N, p = float(layout.gpus), float(layout.pipeline)
    base = model.pipeline_part(N, np.maximum(tokens, 1.0), 1.0, 0.0, p)
    w, m = model.work, model.machine
    kv_bytes = w.kv_cache_bytes(decode_context, D) + w.kv_cache_bytes(prefill_context, P > 0)
    ctx_flop = w.flop(D, 1.0, decode_context)[1] + prefill_work.flop(1.0, P, prefill_context)[1]
    part = dataclasses.replace(
        base,
        kv_read_s=kv_bytes / (N * m.hbm_bandwidth_bytes_per_s),
        ff_context_compute_s=base.ff_context_compute_s + ctx_flop / (N * m.flop_per_s),
        flop=base.flop + ctx_flop,
    )
    lat2, lat1 = model.latency_by_dims(part, layout.attention_divisor)
    return np.where(tokens > 0, lat2 if layout.two_d else lat1, 0.0)


class StepTable:
    """``mixed_step_s`` for every whole token count up to ``max_tokens``, split as

        step = fixed[T] + max(memory[T] + kv_s·Q_kv, compute[T] + attention_s·Q_att)

    with ``T`` the tokens of the step, ``Q_kv`` the layer-positions of KV cache read and
    ``Q_att`` the layer-positions attended to, summed over the step's tokens (§E1). The split
    is checked against ``StepModel.latency`` when the table is built.
    """

    def __init__(self, model: StepModel, layout: EngineLayout, max_tokens: int) -> None:
        self.layout = layout
        self.max_tokens = int(max_tokens)
        N, p, adiv = float(layout.gpus), float(layout.pipeline), layout.attention_divisor
        T = np.arange(self.max_tokens + 1, dtype=float)
        part = model.pipeline_part(N, np.maximum(T, 1.0), 1.0, 0.0, p)
        attention = total_time_s(model.attention_calls(part, adiv, layout.two_d))
        shared = part.collective_2d_s if layout.two_d else part.collective_1d_s
        weights, acts = model.attention_reads(part, adiv)
        memory = part.memory_base_s + weights + acts
        compute = model.compute_time(part, adiv)
        fixed = model.kernel_s + attention + shared + np.zeros_like(T)
        lat2, lat1 = model.latency_by_dims(part, adiv)
        expected = lat2 if layout.two_d else lat1
        if not np.allclose(fixed + np.maximum(memory, compute), expected, rtol=1e-9, atol=0.0):
            raise RuntimeError(
                "model/mixed_step.py: the split of a step no longer matches StepModel.latency; "
                "update StepTable to the new terms of the step model"
            )
        empty = T == 0
        # plain lists: the simulator indexes them one step at a time
        self.fixed_s = np.where(empty, 0.0, fixed).tolist()
        self.memory_s = np.where(empty, 0.0, memory).tolist()
        self.compute_s = np.where(empty, 0.0, compute).tolist()
        self.flop = np.where(empty, 0.0, part.flop).tolist()
        work, machine = model.work, model.machine
        self.kv_s = work.kv_bytes_per_position_per_layer / (N * machine.hbm_bandwidth_bytes_per_s)
        self.attention_s = work.context_flop_per_position_per_layer / (N * machine.flop_per_s)
        self.attention_flop = work.context_flop_per_position_per_layer
        self.peak_flop_per_s = N * machine.peak_flop_per_s

    def time_s(self, tokens: int, kv_positions: float, attention_positions: float) -> float:
        """Seconds of one step (scalars; 0 for an empty step)."""
        if tokens == 0:
            return 0.0
        return self.fixed_s[tokens] + max(
            self.memory_s[tokens] + self.kv_s * kv_positions,
            self.compute_s[tokens] + self.attention_s * attention_positions,
        )

    def run_time_s(self, tokens: int, positions: float, growth: float, steps: int) -> float:
        """Seconds of ``steps`` decode-only steps of ``tokens`` requests whose KV
        layer-positions start at ``positions`` and grow by ``growth`` per step, in closed form:
        each step's time is the larger of two lines in the step index (memory and compute)."""
        if steps <= 0 or tokens == 0:
            return 0.0
        u0 = self.memory_s[tokens] + self.kv_s * positions
        v0 = self.compute_s[tokens] + self.attention_s * positions
        du, dv = self.kv_s * growth, self.attention_s * growth
        d0, d1 = u0 - v0, du - dv  # memory minus compute at step j: d0 + d1·j
        if d1 == 0.0 or (d0 >= 0.0) == (d1 > 0.0):
            split = steps  # one side binds throughout
        elif d0 >= 0.0:  # memory binds until d0 + d1·j < 0
            split = min(steps, math.floor(-d0 / d1) + 1)
        else:  # compute binds until d0 + d1·j >= 0
            split = min(steps, math.ceil(-d0 / d1))
        first = (u0, du) if d0 >= 0.0 else (v0, dv)
        second = (v0, dv) if d0 >= 0.0 else (u0, du)
        return (
            steps * self.fixed_s[tokens]
            + _line_sum(*first, 0, split)
            + _line_sum(*second, split, steps)
        )

    def times_s(self, tokens: int, positions):
        """Seconds of decode-only steps of ``tokens`` requests whose KV layer-positions are the
        array ``positions`` (a decoding token attends to exactly what its request caches)."""
        return self.fixed_s[tokens] + np.maximum(
            self.memory_s[tokens] + self.kv_s * positions,
            self.compute_s[tokens] + self.attention_s * positions,
        )


def _line_sum(start: float, slope: float, lo: int, hi: int) -> float:
    """Σ_{j=lo}^{hi-1} (start + slope·j)."""
    n = hi - lo
    return n * start + slope * (lo + hi - 1) * n / 2.0 if n > 0 else 0.0
