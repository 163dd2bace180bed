"""Where the time of one step goes: the breakdown both step models fill in (docs/model.md §A5,
§F1), the parts that add up to the total and the label of what binds."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from .values import Floats

#: The parts only an engine step has (Part F): a roofline step's are 0, and a figure or hover
#: of roofline results leaves them out.
ENGINE_PARTS = ("host_s", "gemm_fixed_s")

#: The memory side by kind, in full whichever side binds (besides memory and compute time).
FULL_READS = ("weight_read_full_s", "kv_read_full_s", "activation_read_full_s")

#: Components of the latency breakdown that add up to the total, in display order: the host's
#: work, the gaps of kernel launches, the GEMM kernels' fixed cost, the collectives, the reads
#: and the arithmetic.
ADDITIVE_PARTS = (
    "host_s",
    "kernel_launch_s",
    "gemm_fixed_s",
    "collective_latency_s",
    "collective_bandwidth_s",
    "weight_read_s",
    "kv_read_s",
    "activation_read_s",
    "arithmetic_s",
)


@dataclass(frozen=True)
class Breakdown:
    """Where the time of one step goes, per configuration (arrays or scalars, seconds).

    The parts in ``ADDITIVE_PARTS`` add up to ``latency_s``: the read and arithmetic parts
    belong to whichever of memory and compute is binding (``bound_label`` names it); ``memory_time_s`` and
    ``compute_time_s`` hold both sides in full, and the ``*_read_full_s`` parts the memory side
    by kind whichever side binds (figures split the overlapped time with them). Apart from them:
    ``host_s``, the host's scheduling and bookkeeping the GPU waits for (§F5; the same on any
    GPU); ``kernel_launch_s``, the gaps between kernels (the roofline's launches, an engine's
    per-layer overhead: the same on any GPU of one engine); ``gemm_fixed_s``, each GEMM
    kernel's fixed cost, time on the GPU that grows as its FLOP rate falls (§F2; 0 on the
    roofline).
    """

    latency_s: Floats
    host_s: Floats
    kernel_launch_s: Floats
    gemm_fixed_s: Floats
    collective_latency_s: Floats
    collective_bandwidth_s: Floats
    weight_read_s: Floats
    kv_read_s: Floats
    activation_read_s: Floats
    arithmetic_s: Floats
    memory_time_s: Floats
    compute_time_s: Floats
    weight_read_full_s: Floats
    kv_read_full_s: Floats
    activation_read_full_s: Floats
    flop: Floats


#: What bounds a step (``bound_label``): its reads, its arithmetic, both, or nothing (the step
#: does not fit).
Bound = Literal["memory", "compute", "mixed", "n/a"]
BOUNDS: tuple[Bound, ...] = get_args(Bound)
#: ``bound`` names a side when it holds at least this share of the read and arithmetic parts.
BOUND_SHARE = 0.9


def bound_label(weight_read_s, kv_read_s, activation_read_s, arithmetic_s):
    """What bounds a step, read off the breakdown parts it summarises (docs/model.md §A5):
    ``memory`` when the reads hold at least ``BOUND_SHARE`` of the read and arithmetic time,
    ``compute`` when arithmetic does, ``mixed`` otherwise (a speculative cycle whose
    verification pass is compute-bound and whose draft passes are memory-bound; kernels of an
    achievable step that bind on different sides), ``n/a`` where the step does not fit."""
    reads = np.asarray(weight_read_s, dtype=float) + kv_read_s + activation_read_s
    arithmetic = np.asarray(arithmetic_s, dtype=float)
    both = reads + arithmetic
    with np.errstate(invalid="ignore"):
        label = np.where(
            arithmetic <= (1.0 - BOUND_SHARE) * both,
            "memory",
            np.where(reads <= (1.0 - BOUND_SHARE) * both, "compute", "mixed"),
        )
    return np.where(np.isfinite(both), label, "n/a")


def roofline_breakdown(
    ok, kernel_s, coll_lat, coll_bw, weight_s, act_s, kv_s, compute, flop
) -> Breakdown:
    """The breakdown of a roofline step (§A5): kernels + collectives + max(memory, compute),
    the reads shown where memory bounds the step and the arithmetic where compute does (every
    figure in full beside them); inf and blanks where the layout does not fit (``ok``)."""
    memory = weight_s + act_s + kv_s
    memory_bound = memory >= compute
    total = kernel_s + coll_lat + coll_bw + np.maximum(memory, compute)
    zero = np.zeros_like(np.asarray(total, dtype=float))

    def shown(x, keep=True):
        return np.where(ok, np.where(keep, x + zero, 0.0), np.nan)

    return Breakdown(
        latency_s=np.where(ok, total, np.inf),
        host_s=shown(zero),  # Part A counts no host work
        kernel_launch_s=shown(kernel_s),
        gemm_fixed_s=shown(zero),  # nor a fixed cost per GEMM kernel
        collective_latency_s=shown(coll_lat),
        collective_bandwidth_s=shown(coll_bw),
        weight_read_s=shown(weight_s, memory_bound),
        kv_read_s=shown(kv_s, memory_bound),
        activation_read_s=shown(act_s, memory_bound),
        arithmetic_s=shown(compute, ~memory_bound),
        memory_time_s=shown(memory),
        compute_time_s=shown(compute),
        weight_read_full_s=shown(weight_s),
        kv_read_full_s=shown(kv_s),
        activation_read_full_s=shown(act_s),
        flop=flop + zero,
    )


def scaled_to(bd: Breakdown, latency_s) -> Breakdown:
    """``bd`` with every time scaled so that its parts add up to ``latency_s`` where it fits
    (the kernel clock's total over the engine step's split: that clock prices operations, not
    these parts; its own split is the operation list)."""
    total, new = np.asarray(bd.latency_s, dtype=float), np.asarray(latency_s, dtype=float)
    fits = np.isfinite(total) & (total > 0)
    with np.errstate(divide="ignore", invalid="ignore"):  # blanks where the new total is inf
        factor = np.where(fits, np.where(np.isfinite(new), new / total, np.nan), 1.0)
    times = {
        f.name: getattr(bd, f.name) * factor
        for f in dataclasses.fields(bd)
        if f.name not in ("latency_s", "flop")
    }
    return dataclasses.replace(bd, latency_s=np.where(fits, new, total), **times)
