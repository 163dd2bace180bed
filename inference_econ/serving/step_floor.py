"""The fastest any step of an instance can be: the ideal bound's one token of one request on
its GPUs (docs/model.md §F12). No time per output token, time to first token or request
latency of a run under load can be shorter, so no end of their intervals is."""

from __future__ import annotations

import math
from functools import lru_cache

from ..model.latency import StepModel
from ..model.layouts import best_latency
from ..model.workload import compile_workload
from .setting import Setting


def one_step_floor_s(bound: Setting, gpu_counts) -> float:
    """Seconds of the fastest layout of ``bound`` (an ideal bound's setting,
    ``intervals.ideal``) decoding one token of one request with nothing cached, the least over
    ``gpu_counts`` (each pool's GPUs an instance); 0 with speculation, whose verified tokens
    can each take less than one step."""
    if bound.spec is not None:
        return 0.0
    counts = tuple(sorted({int(n) for n in gpu_counts if n and n >= 1}))
    return _floor_s(bound.model, bound.gpu, bound.assumptions, counts) if counts else 0.0


@lru_cache(maxsize=64)
def _floor_s(model, gpu, assumptions, counts: tuple[int, ...]) -> float:
    step = StepModel(compile_workload(model, assumptions), gpu, assumptions)
    times = [float(best_latency(step, float(n), 1.0)) for n in counts]
    finite = [t for t in times if math.isfinite(t) and t > 0.0]
    return min(finite) if finite else 0.0
