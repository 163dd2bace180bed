"""Achievable efficiency: what kernels of a real engine reach, as functions of shape, precision
and context (docs/model.md Part F).

The ``achievable`` preset evaluates the same work as Part A — the bytes, FLOP and collectives of
a step — but charges each kernel class at a measured or fitted efficiency instead of the ideal
roofline, and sums the classes instead of taking one maximum per step. ``StepWork`` holds a
step's work in *ideal seconds* (datasheet rates, efficiency 1) per kernel class, together with
the shapes the efficiencies depend on; ``combine`` turns it into seconds with a profile's
efficiency terms. ``StepModel`` (model/latency.py) builds the ``StepWork`` of its layouts and
calls ``combine`` on both its fast path and its breakdown; ``calibrate`` builds the
``StepWork`` of every measured row once and calls ``combine`` for each trial of the terms.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, fields

import numpy as np

from ..specs.hardware import GPU
from .overlap import overlapped_s
from .values import Flags, Floats

#: Best-shape GEMM efficiency of a part without a measurement: the median of the catalog's
#: measured parts (H100, H200, B200, GB200, A100, MI300X, MI325X, MI355X: 0.51-0.87; §F2).
DEFAULT_GEMM_EFFICIENCY = 0.73

#: A sub-8-bit rate above the FP8 one (NVFP4 on Blackwell) without its own figure reaches this
#: share of the part's 8-bit best-shape efficiency: the median over the five parts whose FP4
#: and FP8 best shapes were timed in one table (B200 0.72, GB200 0.74, B300 0.61, GB300 0.57,
#: RTX PRO 6000 0.93; AIConfigurator's TensorRT-LLM 1.3.0rc20 tables, §F2).
NARROW_GEMM_SHARE = 0.72


def best_gemm_efficiency(gpu: GPU, weight_bits: float, native_fp4: bool = True) -> float:
    """Best-shape GEMM fraction of the peak the GEMM runs at, ``gpu.peak_flop_per_s(weight_bits,
    native_fp4)`` (§F2).

    A rate of the FP8 tier or wider takes the part's measured figure for that format (4-bit
    weights that run at the FP8 rate, the FP8 one). A sub-8-bit rate above the FP8 one takes
    the part's own figure of that width, else ``NARROW_GEMM_SHARE`` of its 8-bit one: an
    FP4 tensor core doubles the peak, not the best shape's rate. A part with no measurement:
    ``DEFAULT_GEMM_EFFICIENCY`` (times the share for the narrow tier).
    """
    bits = float(weight_bits)
    narrow = bits < 8 and gpu.peak_flop_per_s(bits, native_fp4) > gpu.peak_flop_per_s(8) * (
        1 + 1e-9
    )
    if narrow:
        own = sorted((b, f) for b, f in gpu.gemm_efficiency if b < 8 and b >= math.floor(bits))
        if own:
            return own[0][1]
    measured = gpu.best_gemm_efficiency(max(bits, 8.0))
    eight = DEFAULT_GEMM_EFFICIENCY if measured is None else measured
    return eight * NARROW_GEMM_SHARE if narrow else eight


def tile_rounded(tokens, tile: float):
    """Tokens of a GEMM rounded up to whole tiles (tile quantisation, §F2); 0 stays 0."""
    t = np.asarray(tokens, dtype=float)
    if tile <= 1:
        return t
    return np.ceil(np.maximum(t, 0.0) / tile - 1e-9) * tile


#: Half-width of the window of tiles summed exactly in ``expected_expert_rows``, in units of
#: (standard deviation + 1) of an expert's load: by Bennett's inequality each tile left out is
#: within exp(-30) ≈ 1e-13 of 1 below the window and of 0 above it (§F7).
_TAIL_WIDTH = 8.0


#: ``expected_expert_rows`` at every whole token count below a power of two, by (active,
#: experts, tile): a step table asks for the same counts 0..N at every build, and the
#: binomial tails cost about 3 µs a count (``_whole_token_rows``).
_WHOLE_TOKEN_ROWS: dict[tuple, np.ndarray] = {}
_WHOLE_TOKEN_LOCK = threading.Lock()
#: The whole token counts kept at most (2^22: 32 MB a key; 2^24, 128 MB, over every key) and
#: the fewest worth a table.
_WHOLE_TOKEN_MAX, _WHOLE_TOKEN_BUDGET, _WHOLE_TOKEN_MIN = 1 << 22, 1 << 24, 256


def expected_expert_rows(tokens, active: int, experts: int, tile: float):
    """``_expert_rows``, read from a table of every whole token count where ``tokens`` is an
    array of at least ``_WHOLE_TOKEN_MIN`` whole numbers (a step table's rows): the same
    numbers bit for bit, since each count's rows are computed on their own (the sums run
    over its own window of tiles, in the same order, whatever counts come with it)."""
    T = np.asarray(tokens, dtype=float)
    if T.ndim == 0 or T.size < _WHOLE_TOKEN_MIN or tile <= 1:
        return _expert_rows(tokens, active, experts, tile)
    top = float(np.max(T))
    dense = 4 * T.size >= top  # most counts up to the largest are asked for
    # whole counts >= 0 only (``_expert_rows`` takes a negative count as no token)
    whole = np.all(np.floor(T) == T) and float(np.min(T)) >= 0.0
    if not (dense and 0.0 <= top < _WHOLE_TOKEN_MAX and whole):
        return _expert_rows(tokens, active, experts, tile)
    return _whole_token_rows(active, experts, float(tile), int(top) + 1)[T.astype(np.intp)]


def _whole_token_rows(active: int, experts: int, tile: float, n: int) -> np.ndarray:
    """``_expert_rows`` at the token counts 0, 1, ... up to at least ``n - 1`` (the next power
    of two), kept by (active, experts, tile) and grown when a larger count is asked for."""
    key = (int(active), int(experts), tile)
    with _WHOLE_TOKEN_LOCK:  # the search's threads share the tables
        rows = _WHOLE_TOKEN_ROWS.get(key)
        if rows is None or rows.size < n:
            size = 1 << max(n - 1, 1).bit_length()
            # only the counts not yet kept: each count's rows are its own (see above)
            have = np.empty(0) if rows is None else rows
            new = np.arange(have.size, size, dtype=float)
            rows = np.concatenate((have, _expert_rows(new, active, experts, tile)))
            rows.flags.writeable = False
            _WHOLE_TOKEN_ROWS.pop(key, None)
            if sum(r.size for r in _WHOLE_TOKEN_ROWS.values()) + size > _WHOLE_TOKEN_BUDGET:
                _WHOLE_TOKEN_ROWS.clear()
            _WHOLE_TOKEN_ROWS[key] = rows
        return rows


def _expert_rows(tokens, active: int, experts: int, tile: float):
    """Expected rows of a grouped expert GEMM in which each expert pads its own tokens to whole
    tiles (§F7): ``tokens`` T tokens each choosing ``active`` k of ``experts`` E uniformly, an
    expert's load is n ~ Binomial(T, k/E), and the rows are E·tile·E[ceil(n/tile)]; an expert
    with no token costs nothing.

    E[ceil(n/tile)] = Σ_j P(n > j·tile), each term the binomial tail I_p(m + 1, T − m) at
    m = floor(j·tile) (scipy's regularised incomplete beta, which also takes a fractional mean
    token count T: the j = 0 term is the distinct experts hit, 1 − (1 − k/E)^T), summed in a
    window of ±8·(σ + 1) loads about the mean, σ² = T·p·(1 − p). Where σ ≥ tile an expert's
    load modulo the tile is uniform to within exp(−2π²σ²/tile²) ≈ 3e-9 (the binomial's
    characteristic function at 2π/tile), so it pads (tile − 1)/2 rows on average: the rows are
    T·k + E·(tile − 1)/2 there, to below 1e-7 rows an expert. Arrays of T broadcast; T·k with
    tiles of one token or fewer."""
    T = np.maximum(np.asarray(tokens, dtype=float), 0.0)
    p = active / experts
    if tile <= 1:
        return T * active
    sd = np.sqrt(T * p * (1.0 - p))
    rows = T * active + experts * (tile - 1.0) / 2.0  # residues uniform (σ ≥ tile)
    near = sd < tile
    if not np.any(near):
        return rows
    from scipy.special import betainc  # 0.3 s to import: only where experts are routed

    t = T[near]
    mean = t * p
    reach = _TAIL_WIDTH * (sd[near] + 1.0)
    lo = np.maximum(np.floor((mean - reach) / tile), 0.0)  # tiles every expert fills surely
    count = (np.ceil(np.minimum(mean + reach, t) / tile) - lo).astype(np.int64) + 1
    owner = np.repeat(np.arange(t.size), count)  # one entry per (token count, tile) pair
    j = lo[owner] + np.arange(owner.size) - np.repeat(np.cumsum(count) - count, count)
    m = np.floor(j * tile + 1e-9)
    b = t[owner] - m  # P(n > m) = 0 where m >= T
    tail = np.where(b > 0.0, betainc(m + 1.0, np.maximum(b, 1e-300), p), 0.0)
    tiles = lo + np.bincount(owner, weights=tail, minlength=t.size)
    rows = np.array(rows, dtype=float)  # a writable copy, 0-d for a scalar
    rows[near] = experts * tile * tiles
    return rows


def size_factor(volume, half_volume):
    """Share of the best-shape efficiency a GEMM of ``volume`` = M·N·K per GPU reaches:
    V / (V + V½) (§F2; in a step its fixed part is charged apart, ``gemm_compute_s``)."""
    v = np.maximum(np.asarray(volume, dtype=float), 0.0)
    return v / (v + half_volume)


def expert_size_factor(params, half_params: float):
    """Share of its plateau a grouped expert GEMM reaches with experts of ``params``
    parameters per matrix per GPU (d·f/t_ff): S / (S + S½), 1 where ``half_params`` is 0
    (§F7). TensorRT-LLM's fused MoE at 1,024 rows an expert on B200 in BF16 runs at 0.38 of
    the best-shape GEMM rate with 2,048 × 512 experts and 0.87 with 4,096 × 1,536 ones
    (AIConfigurator's measured tables; ``benchmarks/moe_table_fit.py``): narrow experts stay
    slow however many rows they take, which the group's volume (``size_factor``) does not
    see."""
    s = np.maximum(np.asarray(params, dtype=float), 0.0)
    if half_params <= 0.0:
        return np.ones_like(s)
    return s / np.maximum(s + half_params, 1e-300)


def expert_imbalance(tokens, active: int, experts: int, degree, skew: float = 1.0):
    """Busiest expert-parallel rank over the mean rank (§F7): ``tokens·k`` routed picks spread
    over ``e`` ranks; with uniform routing a rank's load is binomial, and the largest of ``e``
    exceeds the mean by about sqrt(2 ln e) standard deviations, and holds at least one pick.
    Times the routing ``skew``; at most ``e`` (everything on one rank); 1 without expert
    parallelism."""
    e = np.asarray(degree, dtype=float)
    picks = np.maximum(np.asarray(tokens, dtype=float) * active, 1e-9)
    z = np.sqrt(2.0 * np.log(np.maximum(e, 1.0)))
    spread = np.sqrt(np.maximum(e - 1.0, 0.0) / picks)
    # the busiest rank holds at least one whole pick: e / picks times the mean
    ratio = np.maximum(1.0 + z * spread, e / np.maximum(picks, 1.0))
    return np.where(e > 1.0, np.minimum(skew * ratio, e), 1.0)


@dataclass(frozen=True)
class StepWork:
    """The work of one step per GPU in ideal seconds, by kernel class (§F1-§F6).

    Memory classes are bytes over the datasheet HBM bandwidth; GEMM classes are FLOP (tokens
    rounded to whole tiles) over the GPU's best-shape GEMM rate at the weight precision, with
    the volume M·N·K per GPU their efficiency depends on; attention arithmetic is over the
    16-bit peak. Collectives are already in seconds (§F6). Arrays broadcast.
    """

    weight_read_s: Floats
    activation_read_s: Floats
    kv_read_s: Floats
    #: One cached position per request, all attention layers: times ``kv_request_positions``.
    kv_request_read_s: Floats
    #: One pass over a d-wide BF16 row per token and layer (and the f-wide rows): times
    #: ``elementwise_passes``.
    elementwise_read_s: Floats
    logits_read_s: Floats
    dense_gemm_s: Floats
    dense_volume: Floats
    projection_gemm_s: Floats
    projection_volume: Floats
    head_gemm_s: Floats
    head_volume: Floats
    expert_gemm_s: Floats
    expert_volume: Floats
    expert_imbalance: Floats
    #: The share of its plateau the grouped expert GEMM reaches at its experts' size
    #: (``expert_size_factor``; 1: no such term).
    expert_size: Floats
    attention_s: Floats
    collective_latency_s: Floats
    collective_bandwidth_s: Floats
    layers: Floats
    sequences: Floats
    #: 1 where the step runs without CUDA graphs, else 0.
    eager: Flags
    #: The part's own power derating of its GEMM rate (1: none; §F2).
    power_derating: Floats
    #: The part's fused-MoE plateau as a share of Hopper's, which the engine's MoE term is
    #: fitted on (``GPU.moe_plateau_share``, §F7; 1: Hopper's).
    moe_share: Floats
    #: GEMM kernels of the step per GPU outside the routed experts and the output head: the
    #: attention projections' and the dense (and shared-expert) feed-forward's, every layer.
    projection_kernels: Floats = 0.0
    dense_kernels: Floats = 0.0
    #: The routed experts' part of ``weight_read_s`` (their fused kernels stream at the
    #: profile's ``hbm_efficiency`` whatever the part's small-batch line says).
    expert_weight_read_s: Floats = 0.0
    #: The part's measured small-batch line in the weights' format (``GPU.small_batch_gemm``,
    #: §F2): fixed seconds per kernel and the share of HBM bandwidth the other weights stream
    #: at (0: not measured, the profile's ``hbm_efficiency`` and fixed cost alone).
    small_batch_fixed_s: Floats = 0.0
    small_batch_stream_share: Floats = 0.0
    #: Ideal seconds of the row-parallel GEMMs whose output a tensor-parallel all-reduce adds
    #: (the attention output projection and the dense feed-forward's output matrix, where
    #: their tensor degree is above 1), and those all-reduces' bandwidth seconds: what an
    #: engine that fuses each GEMM with its all-reduce hides, and under what (§F6).
    row_parallel_gemm_s: Floats = 0.0
    allreduce_bandwidth_s: Floats = 0.0
    #: The attention-DP ranks whose executors each schedule their own share of ``sequences``
    #: (1: one scheduling loop for the step's sequences; ``hidden_host_s``).
    host_ranks: Floats = 1.0
    #: Micro-batches the step runs as (2 under two-batch overlap where the step is split,
    #: ``overlap.micro_batches``; 1: one batch), and the latency and bandwidth seconds of its
    #: MoE token exchange among ``collective_latency_s`` and ``collective_bandwidth_s``: what
    #: runs under the other micro-batch's work (§F7 "Two-batch overlap").
    micro_batches: Floats = 1.0
    #: The share of ``expert_weight_read_s`` one micro-batch reads (``overlap.
    #: half_read_share``: the experts its half of the tokens hit; read with ``micro_batches``).
    expert_read_per_micro_batch: Floats = 1.0
    exchange_latency_s: Floats = 0.0
    exchange_bandwidth_s: Floats = 0.0

    def replace(self, **changes) -> StepWork:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return StepWork(**values)

    def flat(self) -> StepWork:
        """Every field broadcast to one shape and flattened (to concatenate many steps)."""
        arrays = np.broadcast_arrays(
            *(np.asarray(getattr(self, f.name), float) for f in fields(self))
        )
        return StepWork(*(a.ravel().copy() for a in arrays))


def concatenate(works: list[StepWork]) -> StepWork:
    """Many flattened ``StepWork`` as one."""
    flat = [w.flat() for w in works]
    return StepWork(*(np.concatenate([getattr(w, f.name) for w in flat]) for f in fields(StepWork)))


@dataclass(frozen=True)
class StepTimes:
    """Seconds of one step by part (§F1): the GEMM classes share one roofline (memory against
    arithmetic), decode attention another, and the rest add. ``total_s`` is their sum, times
    the engine's ``step_time_scale``; every part below is already scaled."""

    total_s: Floats
    overhead_s: Floats
    collective_latency_s: Floats
    collective_bandwidth_s: Floats
    elementwise_s: Floats
    gemm_memory_s: Floats
    gemm_weight_s: Floats
    gemm_compute_s: Floats
    #: The GEMMs' fixed cost per kernel (§F2), part of ``overhead_s``.
    gemm_fixed_s: Floats
    #: The host's work the GPU waits for (§F5, ``host_overhead_s``), part of ``overhead_s``.
    host_s: Floats
    kv_s: Floats
    attention_compute_s: Floats

    @property
    def gemm_memory_bound(self):
        return self.gemm_memory_s >= self.gemm_compute_s

    @property
    def attention_memory_bound(self):
        return self.kv_s >= self.attention_compute_s


def gemm_compute_s(work: StepWork, terms):
    """(arithmetic seconds, fixed seconds, small-batch floor seconds) of the step's GEMMs (§F2).

    A GEMM class of ideal seconds ``s`` and volume ``V`` per GPU at the shape-dependent
    efficiency ``η·V/(V + V½)`` takes ``s/η + (s/η)·V½/V``: its arithmetic at the best-shape
    efficiency, on the compute side of the GEMM roofline, and a fixed cost per kernel (ramp-up,
    tail, prologue), ``2·V½/(η·F)``, which a kernel pays whether it streams its weights or
    multiplies: it adds to the step, outside the roofline. So a decode GEMM of one token stays
    memory-bound, its fixed cost beside its weight reads.

    Where the part's kernels were timed at decode batches in the weights' format, a projection
    or dense kernel's fixed cost is at least the measured one (``small_batch_fixed_s``), added
    outside the roofline like the profile's own: the same tables time a kernel at
    fixed + max(weights at the line's rate, arithmetic at the best shape's) with about that
    fixed time at every token count from 64 to 2,048 (B200 NVFP4: 12.8-15.0 us beside the
    line's 14.1; docs/model.md §F2), so a prompt chunk pays it too."""
    v_half = terms.gemm_half_volume
    base = terms.gemm_efficiency_scale * work.power_derating
    classes = (
        (work.dense_gemm_s, work.dense_volume, 1.0, work.dense_kernels),
        (work.projection_gemm_s, work.projection_volume, 1.0, work.projection_kernels),
        (work.head_gemm_s, work.head_volume, 1.0, 0.0),
        (
            work.expert_gemm_s * work.expert_imbalance,
            work.expert_volume,
            terms.moe_gemm_efficiency * work.expert_size * work.moe_share,
            0.0,
        ),
    )
    arithmetic = fixed = floor = 0.0
    for seconds, volume, efficiency, kernels in classes:
        core = _over(seconds, base * efficiency)
        own = _over(core * v_half, volume)
        arithmetic = arithmetic + core
        fixed = fixed + own
        floor = floor + np.maximum(kernels * work.small_batch_fixed_s - own, 0.0)
    return arithmetic, fixed, floor


def _over(seconds, efficiency):
    """seconds / efficiency, 0 where there is no work (a class a model does not have)."""
    s = np.asarray(seconds, dtype=float)
    return np.where(s > 0.0, s / np.maximum(efficiency, 1e-300), 0.0)


def combine(work: StepWork, terms, host_floor: bool = True) -> StepTimes:
    """Seconds of a step from its ideal work and a profile's terms (§F1-§F6).

    ``terms`` is an ``EngineProfile`` or any object with its term names as attributes (arrays
    that broadcast against the work: ``calibrate`` evaluates many trials at once). ``host_floor``:
    the step no shorter than its overlapped host work (``hidden_host_s``); False: the GPU's
    step alone (a part of a step whose floor is applied to the whole).
    """
    eta_w = terms.hbm_efficiency
    share = np.asarray(work.small_batch_stream_share, dtype=float)
    experts = work.expert_weight_read_s
    weights = (work.weight_read_s - experts) / np.where(share > 0.0, share, eta_w) + experts / eta_w
    compute, own_fixed, floor = gemm_compute_s(work, terms)
    gemm_fixed = own_fixed + floor  # each kernel's fixed cost: the larger of the two
    m = work.micro_batches
    split = bool(np.any(np.asarray(m) > 1.0))
    if split:  # each micro-batch reads the weights it needs and runs every kernel (§F7)
        others = (work.weight_read_s - experts) / np.where(share > 0.0, share, eta_w)
        weights = m * (others + work.expert_read_per_micro_batch * experts / eta_w)
        gemm_fixed = m * gemm_fixed
    memory = weights + work.activation_read_s / eta_w
    kv = (work.kv_read_s + terms.kv_request_positions * work.kv_request_read_s) / (
        terms.kv_read_efficiency
    )
    attention = work.attention_s / terms.attention_efficiency
    elementwise = (terms.elementwise_passes * work.elementwise_read_s + work.logits_read_s) / eta_w
    host = host_overhead_s(terms, work.sequences, work.host_ranks)
    layer = work.layers * (terms.layer_overhead_s + work.eager * terms.eager_layer_overhead_s)
    overhead = (m * layer if split else layer) + host + gemm_fixed
    collective_lat = work.collective_latency_s
    collective_bw = exposed_collective_bandwidth_s(work, terms)
    scale = terms.step_time_scale
    if split:  # the exchange runs under the other micro-batch's work (§F7)
        x_lat, x_bw = work.exchange_latency_s, work.exchange_bandwidth_s
        collective_lat, collective_bw = collective_lat - x_lat, collective_bw - x_bw
    step = (
        overhead
        + collective_lat
        + collective_bw
        + elementwise
        + np.maximum(memory, compute)
        + np.maximum(kv, attention)
    )
    if split:  # what the exchange exceeds shows; a point not split has it in series
        gpu, step = step, overlapped_s(step, x_lat, x_bw, m)
        one = np.asarray(m) <= 1.0
        collective_lat = collective_lat + np.where(one, x_lat, 0.0)
        collective_bw = collective_bw + (step - gpu) - np.where(one, x_lat, 0.0)
    total = scale * step
    # a host that overlaps the step and takes longer: the GPU waits for it (§F5)
    wait = 0.0
    if host_floor:
        wait = np.maximum(hidden_host_s(terms, work.sequences, work.host_ranks) - total, 0.0)
    total = total + wait
    return StepTimes(
        total_s=total,
        overhead_s=scale * overhead + wait,
        collective_latency_s=scale * collective_lat,
        collective_bandwidth_s=scale * collective_bw,
        elementwise_s=scale * elementwise,
        gemm_memory_s=scale * memory,
        gemm_weight_s=scale * weights,
        gemm_compute_s=scale * compute,
        gemm_fixed_s=scale * gemm_fixed,
        host_s=scale * host + wait,
        kv_s=scale * kv,
        attention_compute_s=scale * attention,
    )


def exposed_collective_bandwidth_s(work: StepWork, terms):
    """Seconds of the step's collective bandwidth no GEMM hides (§F6): an engine that fuses
    each row-parallel GEMM with the all-reduce of its output (``gemm_allreduce_overlap`` 1)
    sends the partial sums while the kernel multiplies, so those all-reduces'
    bandwidth time costs only what exceeds the GEMMs' arithmetic at the engine's best-shape
    rate; other collectives (expert all-to-alls, pipeline sends, attention-DP redistribution)
    and the all-reduces' latency stay. 0 runs them apart: the step's bandwidth as it is."""
    if not np.any(terms.gemm_allreduce_overlap):
        return work.collective_bandwidth_s
    arithmetic = _over(work.row_parallel_gemm_s, terms.gemm_efficiency_scale * work.power_derating)
    hidden = np.minimum(work.allreduce_bandwidth_s, arithmetic)
    return work.collective_bandwidth_s - terms.gemm_allreduce_overlap * hidden


def host_overhead_s(terms, sequences, ranks=1.0):
    """Seconds of a step's host work the GPU waits for (§F5): scheduling and input preparation
    (``step_overhead_s``) and per-sequence bookkeeping (``sequence_overhead_s`` each), times
    ``host_overhead_exposed`` - 1 for an engine that prepares a step after the last one ends,
    0 for one whose overlap scheduler does it while the GPU runs the step before (TensorRT-LLM
    1.x), where it is hidden as long as it is shorter than the GPU's step. Over ``ranks``
    attention-DP ranks each rank's scheduler prepares its own even share of the sequences at
    once (SGLang's DP-attention ranks and vLLM's data-parallel engine cores are each their
    own scheduler process), so the step waits for one share."""
    share = np.asarray(sequences, dtype=float) / np.maximum(np.asarray(ranks, dtype=float), 1.0)
    host = terms.step_overhead_s + terms.sequence_overhead_s * share
    return terms.host_overhead_exposed * host


#: The attention-DP degree at which the overlapped host work a sequence was measured
#: (``hidden_sequence_overhead_s``: TensorRT-LLM PR #10273, two ranks).
HOST_MEASURED_RANKS = 2.0


def host_sequences(sequences, ranks=1.0):
    """The sequences whose host work one step waits for (§F5 "Host work the GPU does not
    wait for"): the instance's up to ``HOST_MEASURED_RANKS`` attention-DP ranks, as measured;
    beyond, each rank's executor schedules its own requests, so each rank's even share (the
    busiest's under balanced routing) at the cost a sequence of a rank was measured at
    (``HOST_MEASURED_RANKS`` instance sequences' worth). One loop's cost a sequence thus
    doubles from one rank to two and stays there."""
    ranks = np.maximum(np.asarray(ranks, dtype=float), 1.0)
    return np.asarray(sequences, dtype=float) * np.minimum(1.0, HOST_MEASURED_RANKS / ranks)


def hidden_host_s(terms, sequences, ranks=1.0):
    """Seconds a step lasts at least because of the host work its runtime overlaps with the
    GPU (§F5 "Host work the GPU does not wait for"): the overlapped share of the step
    overhead plus ``hidden_sequence_overhead_s`` for each of ``host_sequences`` of the
    step's ``sequences`` over its ``ranks`` attention-DP ranks. The host prepares the next
    step while the GPU runs this one, so a step no shorter than the host's hides it, and a
    shorter one waits for it; 0 for a runtime that waits for its host work anyway
    (``host_overhead_exposed`` 1)."""
    per = np.asarray(getattr(terms, "hidden_sequence_overhead_s", 0.0), dtype=float)
    if not np.any(per > 0.0):
        return 0.0
    hidden = 1.0 - np.asarray(terms.host_overhead_exposed, dtype=float)
    seqs = host_sequences(sequences, ranks)
    return hidden * (terms.step_overhead_s + per * seqs) * (per > 0.0)


def eager_steps(tokens, cuda_graph_max_batch: float):
    """1 where a step of ``tokens`` tokens is too large for the captured CUDA graphs (§F5)."""
    limit = math.inf if cuda_graph_max_batch is None else float(cuda_graph_max_batch)
    return np.where(np.asarray(tokens, dtype=float) > limit, 1.0, 0.0)
