"""The engine step: one step of a layout as a serving engine's kernels run it (docs/model.md
Part F).

The roofline step (``latency.StepModel``: every kernel at the hardware's limits, one maximum of
memory against arithmetic per step) and the engine step are two models over the same
``Workload`` and ``Machine``. Both see the same layouts, bytes, FLOP and collective calls
(``PipelinePart``); the engine step turns them into ``StepWork`` — the work of each kernel class
in ideal seconds, with the shapes its efficiency depends on — and ``efficiency.combine``
charges each class at the engine profile's efficiency and sums the classes. ``StepModel``
holds an ``EngineStep`` when its assumptions name an engine and asks it for the step's time
and breakdown; mixed steps (``mixed_step``) and calibration build ``StepWork`` through it too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import overlap
from .breakdown import Breakdown
from .efficiency import (
    StepTimes,
    StepWork,
    combine,
    eager_steps,
    expected_expert_rows,
    expert_imbalance,
    expert_size_factor,
    exposed_collective_bandwidth_s,
    hidden_host_s,
    tile_rounded,
)
from .machine import Machine
from .moe import (
    balanced_slots,
    eplb_routing_factor,
    expert_kernel_format,
    moe_format_factor,
    moe_routing_factor,
    routing_of,
    slots_read_share,
)
from .values import Flags, Floats
from .workload import Workload

#: The share of a step's activation buffers one GPU holds at an attention tensor degree (the
#: first entry at or below it), relative to a GPU holding them whole: NVIDIA AIConfigurator's
#: TensorRT-LLM activation coefficients 22, 13, 10 and 10 buffers (MoE; 11, 6.5, 5, 5 dense) at
#: tensor degrees 1, 2, 4 and 8 or more, which its memory model reproduces TensorRT-LLM's
#: measured KV-cache capacity with (github.com/ai-dynamo/aiconfigurator @095f58a,
#: aic-core/src/aiconfigurator_core/sdk/backends/trtllm_backend.py; Apache-2.0).
ACTIVATION_SHARES = ((1.0, 1.0), (2.0, 13.0 / 22.0), (4.0, 10.0 / 22.0))
#: NCCL's buffers on a GPU with tensor peers, by tensor degree (bytes): AIConfigurator's
#: systems/*.yaml ``nccl_mem`` (342 MiB at 2, 392 MiB at 4 and 8; 0 alone), as above.
NCCL_BUFFER_BYTES = ((1.0, 0.0), (2.0, 358612992.0), (4.0, 411041792.0))


def _by_degree(table, degree):
    """The value of ``table`` ((degree, value), ascending) at the last degree <= ``degree``."""
    out = np.zeros_like(degree) + table[0][1]
    for at, value in table[1:]:
        out = np.where(degree >= at, value, out)
    return out if out.ndim else float(out)


@dataclass(frozen=True)
class AchievablePart:
    """The part of a step's ``StepWork`` that does not depend on the attention divisor, per
    GPU of a stage, summed over the stages (docs/model.md §F1-§F7)."""

    kv_request_read_s: Floats  # one cached position per request, all attention layers
    #: The feed-forward activation function's traffic: a gated unit reads its two f-wide
    #: rows and writes one (three passes; two without a gate), sharded over t.
    activation_ff_s: Floats
    logits_read_s: Floats
    dense_gemm_s: Floats
    dense_volume: Floats
    expert_gemm_s: Floats
    expert_volume: Floats
    expert_imbalance: Floats
    #: The grouped expert GEMM's share of its plateau at its experts' size (§F7).
    expert_size: Floats
    head_gemm_s: Floats
    head_volume: Floats
    attention_s: Floats  # attention-context arithmetic at the machine's attention rate
    sequences: Floats  # requests (and prompts) of the step: per-sequence costs, logits
    eager: Flags
    #: The routed experts' share of the step's weight reads, in ideal seconds per GPU: their
    #: fused kernels stream at the profile's ``hbm_efficiency``, not the part's measured
    #: small-batch line of dense kernels (§F2).
    expert_weight_read_s: Floats = 0.0
    #: GEMM kernels of the dense and shared-expert feed-forward, every layer: two a layer
    #: (the input matrices fused into one kernel, the output one; §F2).
    dense_kernels: float = 0.0
    #: The dense (and shared-expert) feed-forward's output matrices' part of ``dense_gemm_s``:
    #: the row-parallel GEMMs whose partial sums the tensor-parallel all-reduce adds (§F6).
    dense_out_gemm_s: Floats = 0.0
    #: The redundant expert copies' reads beyond the experts' (EPLB, §F7), in ideal seconds
    #: per GPU: part of the weight reads, streamed as the routed experts' are.
    redundant_read_s: Floats = 0.0


class EngineStep:
    """The engine step of one workload on one machine under an engine profile (§F1-§F8).

    ``attention_data_parallel``: attention replicas each serve their share of the tokens
    (§B1); ``expert_parallel_by_tokens``: a prefill pass, whose output head samples one
    position per sequence rather than one per token (§F2).
    """

    def __init__(
        self,
        work: Workload,
        machine: Machine,
        profile,
        attention_data_parallel: bool,
        expert_parallel_by_tokens: bool = False,
        two_batch_overlap: bool = False,
    ) -> None:
        self.work = work
        self.machine = machine
        self.profile = profile
        self.attention_data_parallel = attention_data_parallel
        self.expert_parallel_by_tokens = expert_parallel_by_tokens
        #: The engine whose two-batch overlap splits the steps (``overlap.MIN_TOKENS``'s key,
        #: its profile's family), or None: one batch a step (§F7 "Two-batch overlap").
        self.overlap_family = profile.family if two_batch_overlap else None
        mats = work.attention_matrices
        self.attention_nk = sum(m * k for m, k in mats) / max(len(mats), 1)
        self.projection_params = work.layers * work.attention_params_per_layer + work.extra_params
        # one kernel per fused attention matrix a layer (QKV fused, the output: two), averaged
        # over a hybrid's mixers, and the extra matrices applied once a token (§F2)
        per_layer = work.attention_share * len(mats) + sum(s for _, _, s in work.recurrent_matrices)
        self.projection_kernels = work.layers * per_layer + len(work.extra_matrices)
        self.tile = float(profile.gemm_tile_tokens)
        # the output projections (the last matrix of attention and of each recurrent mixer,
        # over their layers): their share of the projections' work, row-parallel under
        # tensor parallelism (§F6); the extra matrices applied once a token are not
        out = work.attention_share * mats[-1][0] * mats[-1][1] + sum(
            share * m * k for m, k, share in work.recurrent_matrices[-1:]
        )
        self.attention_out_share = work.layers * out / self.projection_params
        #: The moe tables' name of the format TensorRT-LLM runs the routed experts at on this
        #: part (``moe.expert_kernel_format``; None: BF16 or a format without a factor, §F7).
        self.expert_format = expert_kernel_format(
            machine.gpu, work.weight_bits, work.gemm_bits, work.weight_block_scaled
        )
        #: The routing the experts see (``moe.routing_of``): the fused MoE's charge, calibrated
        #: on balanced routing, times its measured factor for it (§F7).
        self.routing = routing_of(work.model_class, work.expert_routing)

    # --- memory (§F8) ---------------------------------------------------------------------
    def kv_capacity_bytes(self, N, free_bytes, weights_total_bytes, adiv=1.0):
        """Bytes of KV cache ``N`` GPUs in ``adiv`` attention replicas hold: a fraction of the
        memory left after the weights (``free_bytes``) and the step's activations, or of all
        memory after the engine's workspace and the activations, less the weights (§F8)."""
        prof = self.profile
        activations = N * self.activation_bytes_per_gpu(N, adiv)
        if prof.kv_cache_fraction_of == "free":
            return prof.kv_cache_memory_fraction * np.maximum(free_bytes - activations, 0.0)
        hbm = self.machine.gpu.hbm_capacity_bytes
        return (
            N * (prof.kv_cache_memory_fraction * hbm - prof.activation_workspace_bytes_per_gpu)
            - activations
            - weights_total_bytes
        )

    def activation_bytes_per_gpu(self, N, adiv=1.0):
        """Memory a GPU sets aside for one step's activations before it sizes its KV cache
        (§F8): the profile's 16-bit buffers of the attention width per token of the engine's
        step budget (``activation_buffers_per_token``, an MoE model's
        ``moe_activation_buffers_per_token``), at the share an attention tensor degree of
        ``N / adiv`` leaves a GPU (``ACTIVATION_SHARES``); an MLA model's experts add their
        FP8 dispatch's block scales, one 4-byte scale per 128 values of each routed copy of a
        rank's tokens; with tensor peers, NCCL's buffers (``NCCL_BUFFER_BYTES``). 0 for a
        profile without activation buffers."""
        prof, work = self.profile, self.work
        buffers = (
            prof.activation_buffers_per_token
            if work.model_class == "dense"
            else prof.moe_activation_buffers_per_token
        )
        if buffers <= 0.0:
            return 0.0
        _, budget = prof.scheduler_limits(self.machine.gpu, False)
        mla = work.model_class == "mla"
        width = work.d_model if mla else work.query_heads * work.head_dim
        degree = np.maximum(np.asarray(N, dtype=float) / np.asarray(adiv, dtype=float), 1.0)
        share = _by_degree(ACTIVATION_SHARES, degree)
        out = 2.0 * budget * width * buffers * share + _by_degree(NCCL_BUFFER_BYTES, degree)
        if mla:
            E, k = max((g.experts, g.active) for g in work.groups)
            out = out + budget * width * E * k / 128.0 * 4.0 / degree
        return out

    # --- work by kernel class (§F1-§F7) ---------------------------------------------------
    def gemm(self, params, tokens, nk_per_gpu, t):
        """(ideal seconds per GPU, volume M·N·K) of ``2·params·tokens`` FLOP over ``t`` GPUs
        of weights outside the routed experts (at their format's rate, §B5), the tokens
        rounded up to whole tiles (§F2)."""
        rounded = tile_rounded(np.asarray(tokens, dtype=float), self.tile)
        seconds = 2.0 * params * rounded / (t * self.machine.dense_gemm_rate)
        return seconds, rounded * nk_per_gpu  # the work the padded kernel does

    def grouped_expert_gemm(self, g, tokens, e, t_ff, t, per_d_ff):
        """(ideal seconds per GPU, volume) of a layer group's routed experts as one grouped
        GEMM over the tokens actually routed (§F7): ``tokens`` tokens each choosing k of E
        experts give each expert a binomial load, which it pads to whole tiles; an expert with
        no token costs nothing (``expected_expert_rows``). The volume is the whole group's on
        one GPU (its share ``1/e`` of the rows, each expert split over ``t_ff`` tensor ranks):
        one kernel per layer, not one per expert."""
        rows = expected_expert_rows(tokens, g.active, g.experts, self.tile)
        seconds = 2.0 * g.layers * per_d_ff * g.d_ff * rows / (t * self.machine.gemm_rate)
        return seconds, rows / e * self.work.d_model * g.d_ff / t_ff

    def routing_factor(self, g, e, tokens):
        """The measured routing factor of a group's fused MoE (``moe_routing_factor``); with
        redundant experts (EPLB) where experts are parallel, the balanced rank's (§F7)."""
        m = self.machine
        factor = moe_routing_factor(m.gpu, self.routing, g.experts, e, tokens)
        if not self.work.redundant_experts:
            return factor
        spread = expert_imbalance(tokens, g.active, g.experts, e)
        even = balanced_slots(g.experts, self.work.redundant_experts, e)
        return np.where(even, eplb_routing_factor(factor, spread), factor)

    def slots_read(self, g, e, tokens):
        """The routed weights read with the redundant copies where experts are parallel over
        those read without (``slots_read_share``; 1 without copies)."""
        r = self.work.redundant_experts
        if not r:
            return 1.0
        share = slots_read_share(g.experts, g.active, g.experts + r, tokens)
        return np.where(balanced_slots(g.experts, r, e), share, 1.0)

    def part(self, B, p, t, tokens, splits, context_flop) -> AchievablePart:
        """The divisor-independent work of a pipeline degree (§F1-§F7): ``splits`` holds each
        layer group's (expert degree, feed-forward tensor degree); ``context_flop`` is the
        attention-context FLOP of the whole batch."""
        w, prof, m = self.work, self.profile, self.machine
        bw = m.gpu.hbm_bandwidth_bytes_per_s
        b = B / p
        dense_s = dense_v = expert_s = expert_v = expert_slow = 0.0
        imbalance = 1.0
        f_rows = 0.0
        dense_kernels = expert_bytes = dense_out = copies = 0.0
        for g, (e, t_ff) in zip(w.groups, splits):
            # the dense feed-forward's output matrix: row-parallel where t > 1 (§F6)
            out_share = (g.experts <= 1) * g.matrices_out / (g.matrices_in + g.matrices_out)
            dense_kernels += 2.0 * g.layers * ((g.experts <= 1) + (g.shared > 0))
            if g.experts > 1:  # the routed experts' bytes alone (as Part A counts them)
                # the format's kernel against the reference formats', and the routing real
                # tokens take against balanced routing (§F7): reads and GEMM
                shape = (w.d_model, g.d_ff, g.experts, g.active)
                fmt = moe_format_factor(m.gpu, self.expert_format, shape, e, tokens)
                fmt = fmt * self.routing_factor(g, e, tokens)
                routed = w.routed_expert_bytes(g, tokens)
                extra = (self.slots_read(g, e, tokens) - 1.0) * g.layers * routed
                copies = copies + extra
                expert_bytes = expert_bytes + fmt * g.layers * routed + fmt * extra
            per = (g.matrices_in + g.matrices_out) * w.d_model
            passes = 1 + g.matrices_in  # read the input rows (gate and up), write one
            f_rows = f_rows + passes * g.layers * g.d_ff * (
                g.active + g.shared * g.shared_d_ff / g.d_ff
            )
            if g.shared:
                sec, vol = self.gemm(
                    g.layers * g.shared * per * g.shared_d_ff,
                    tokens,
                    w.d_model * g.shared_d_ff / t,
                    t,
                )
                dense_s, dense_v = dense_s + sec, dense_v + sec * vol
            if g.experts > 1:
                sec, vol = self.grouped_expert_gemm(g, tokens, e, t_ff, t, per)
                sec = fmt * sec
                expert_s, expert_v = expert_s + sec, expert_v + sec * vol
                size = expert_size_factor(w.d_model * g.d_ff / t_ff, prof.moe_expert_half_params)
                expert_slow = expert_slow + sec / size
                imbalance = expert_imbalance(
                    tokens, g.active, g.experts, e, prof.expert_routing_skew
                )
            else:
                sec, vol = self.gemm(g.layers * per * g.d_ff, tokens, w.d_model * g.d_ff / t, t)
                dense_s, dense_v = dense_s + sec, dense_v + sec * vol
                if prof.gemm_allreduce_overlap:  # only an engine that fuses reads it (§F6)
                    dense_out = dense_out + np.where(np.asarray(t) > 1.0, out_share * sec, 0.0)
        heads = b if self.expert_parallel_by_tokens else tokens  # positions sampled (§F2)
        head_s, head_v = self.gemm(w.vocab_size * w.d_model, heads, w.vocab_size * w.d_model / t, t)
        return AchievablePart(
            kv_request_read_s=w.kv_bytes_per_token * b / (t * bw),
            activation_ff_s=2.0 * f_rows * tokens / (t * bw),  # BF16 rows
            logits_read_s=12.0 * w.vocab_size * b / (t * bw),  # FP32 logits of each sequence
            dense_gemm_s=dense_s,
            dense_volume=_weighted(dense_v, dense_s),
            expert_gemm_s=expert_s,
            expert_volume=_weighted(expert_v, expert_s),
            expert_imbalance=imbalance,
            # the groups' seconds over their seconds at their own size factors (§F7)
            expert_size=np.where(
                np.asarray(expert_slow) > 0.0,
                np.asarray(expert_s, dtype=float) / np.maximum(expert_slow, 1e-300),
                1.0,
            ),
            head_gemm_s=head_s,
            head_volume=head_v,
            attention_s=context_flop / (p * t * m.attention_flop_per_s),
            sequences=b,
            eager=eager_steps(tokens, prof.cuda_graph_max_batch),
            dense_kernels=dense_kernels,
            expert_weight_read_s=expert_bytes / (t * bw),  # the stage's GPUs: N / p = t
            dense_out_gemm_s=dense_out,
            redundant_read_s=copies / (t * bw),
        )

    def micro_batches(self, part, adiv):
        """Micro-batches of the step of ``part`` on divisor ``adiv`` (1 without two-batch
        overlap; ``overlap.micro_batches`` at each attention rank's tokens)."""
        if self.overlap_family is None:
            return 1.0
        ranks = self.attention_replicas(adiv)
        return overlap.micro_batches(self.overlap_family, part.tokens / ranks, ranks)

    def step_work(
        self, part, adiv, coll_lat, coll_bw, attention_reads, fusable_bw=0.0, exchange=(0.0, 0.0)
    ) -> StepWork:
        """The ``StepWork`` of a layout with divisor ``adiv`` and the given collective seconds
        (§F1): Part A's bytes in ideal seconds (``part``'s and the attention reads of the
        roofline step, ``attention_reads`` = (weights, activations)) plus the per-class work
        of ``part.achievable``; ``fusable_bw``: the bandwidth seconds of the row-parallel
        all-reduces among ``coll_bw`` (``StepModel.fusable_bandwidth_s``, §F6); ``exchange``:
        the (latency, bandwidth) seconds of the MoE token exchange among them, which two-batch
        overlap runs under the other micro-batch (``StepModel.exchange_terms_s``)."""
        w, ap = self.work, part.achievable
        bw = self.machine.gpu.hbm_bandwidth_bytes_per_s
        t = part.tensor_degree
        dp = self.attention_data_parallel
        replicas = self.attention_replicas(adiv)
        weights, acts = attention_reads
        proj_s, proj_v = self.gemm(
            self.projection_params * (1.0 if dp else adiv),
            part.tokens / replicas,
            self.attention_nk * adiv / t,
            t / replicas,
        )
        rows = 2.0 * w.d_model * w.layers * part.tokens / replicas / bw  # BF16 d-wide rows
        row_parallel = 0.0  # read only by an engine that fuses each GEMM with its all-reduce
        if self.profile.gemm_allreduce_overlap:
            # the output projection is row-parallel where its attention group spans GPUs (§F6)
            reduced = np.asarray(t / (1.0 if dp else adiv)) > 1.0
            out = np.where(reduced, self.attention_out_share, 0.0)
            row_parallel = ap.dense_out_gemm_s + out * proj_s
        return StepWork(
            weight_read_s=part.ff_weight_read_s + weights + ap.redundant_read_s,
            activation_read_s=part.ff_activation_read_s + acts + ap.activation_ff_s,
            kv_read_s=part.kv_read_s,
            kv_request_read_s=ap.kv_request_read_s,
            elementwise_read_s=rows,
            logits_read_s=ap.logits_read_s,
            dense_gemm_s=ap.dense_gemm_s,
            dense_volume=ap.dense_volume,
            projection_gemm_s=proj_s,
            projection_volume=proj_v,
            head_gemm_s=ap.head_gemm_s,
            head_volume=ap.head_volume,
            expert_gemm_s=ap.expert_gemm_s,
            expert_volume=ap.expert_volume,
            expert_imbalance=ap.expert_imbalance,
            expert_size=ap.expert_size,
            attention_s=ap.attention_s,
            collective_latency_s=coll_lat,
            collective_bandwidth_s=coll_bw,
            layers=float(w.layers),
            sequences=ap.sequences,
            eager=ap.eager,
            power_derating=self.machine.gemm_power_derating,
            moe_share=self.machine.moe_plateau_share,
            projection_kernels=self.projection_kernels,
            dense_kernels=ap.dense_kernels,
            expert_weight_read_s=ap.expert_weight_read_s,
            small_batch_fixed_s=self.machine.small_batch_fixed_s,
            small_batch_stream_share=self.machine.small_batch_stream_share,
            row_parallel_gemm_s=row_parallel,
            allreduce_bandwidth_s=fusable_bw,
            host_ranks=replicas,
            micro_batches=self.micro_batches(part, adiv),
            expert_read_per_micro_batch=(
                1.0
                if self.overlap_family is None
                else overlap.half_read_share(self.work, part.tokens)
            ),
            exchange_latency_s=exchange[0],
            exchange_bandwidth_s=exchange[1],
        )

    # --- time and breakdown ---------------------------------------------------------------
    @property
    def collective_scale(self) -> float:
        """The engine's step-time factor, which scales collectives like every other part."""
        return self.profile.step_time_scale

    def hidden_collective_s(self, part, adiv, attention_reads, coll_bw, fusable_bw):
        """Seconds of the collectives' bandwidth ``coll_bw`` the step's GEMMs hide, scaled as
        the step is (§F6): 0 unless the engine fuses each row-parallel GEMM with its
        all-reduce (``gemm_allreduce_overlap``); ``part`` with its KV copies."""
        prof = self.profile
        if not prof.gemm_allreduce_overlap:
            return 0.0
        work = self.step_work(part, adiv, 0.0, coll_bw, attention_reads, fusable_bw)
        return prof.step_time_scale * (coll_bw - exposed_collective_bandwidth_s(work, prof))

    def rest_s(self, part, adiv, attention_reads):
        """Seconds of every part of the step but its collectives (§F1), the GPU's alone (the
        host's floor is the whole step's: ``host_floor_s``)."""
        work = self.step_work(part, adiv, 0.0, 0.0, attention_reads)
        return combine(work, self.profile, host_floor=False).total_s

    def attention_replicas(self, adiv):
        """Divisor ``adiv``'s attention replicas under attention data parallelism, else 1:
        each serves its share of the tokens, and its executor schedules its own share of the
        sequences (§F5)."""
        return adiv if self.attention_data_parallel else 1.0

    def host_floor_s(self, part, adiv):
        """Seconds the whole step lasts at least because of the host work the runtime overlaps
        with it (§F5, ``efficiency.hidden_host_s``): the step's sequences over its
        ``attention_replicas``."""
        return hidden_host_s(self.profile, part.achievable.sequences, self.attention_replicas(adiv))

    def breakdown(
        self, part, adiv, coll_lat, coll_bw, attention_reads, ok, fusable_bw=0.0, exchange=(0, 0)
    ) -> Breakdown:
        """A ``Breakdown`` whose parts add up to the engine step (§F1): the host's work, the
        per-layer overhead as the launch part and the GEMM kernels' fixed cost apart (§F5,
        §F2), elementwise traffic with the activations, each roofline's binding side; ``ok``
        marks the layouts that fit; ``exchange`` as ``step_work``'s."""
        work = self.step_work(part, adiv, coll_lat, coll_bw, attention_reads, fusable_bw, exchange)
        times = combine(work, self.profile)
        return _breakdown(times, ok, part.flop)


def _breakdown(times: StepTimes, ok, flop) -> Breakdown:
    """The ``Breakdown`` of an engine step's ``StepTimes``: each roofline's reads in full and
    its arithmetic beyond them (``bound_label`` then names the side that holds the step)."""
    gemm_beyond = np.maximum(times.gemm_compute_s - times.gemm_memory_s, 0.0)
    attention_beyond = np.maximum(times.attention_compute_s - times.kv_s, 0.0)
    zero = np.zeros_like(np.asarray(times.total_s, dtype=float))

    def shown(x):
        return np.where(ok, x + zero, np.nan)

    return Breakdown(
        latency_s=np.where(ok, times.total_s + zero, np.inf),
        host_s=shown(times.host_s),
        # the engine's per-layer overhead: its overheads less the host's and the GEMMs' own
        kernel_launch_s=shown(times.overhead_s - times.gemm_fixed_s - times.host_s),
        gemm_fixed_s=shown(times.gemm_fixed_s),
        collective_latency_s=shown(times.collective_latency_s),
        collective_bandwidth_s=shown(times.collective_bandwidth_s),
        # the reads in full, whichever side of a roofline binds (what the kernels stream), and
        # as arithmetic the time the compute side takes beyond them
        weight_read_s=shown(times.gemm_weight_s),
        kv_read_s=shown(times.kv_s),
        activation_read_s=shown(times.gemm_memory_s - times.gemm_weight_s + times.elementwise_s),
        arithmetic_s=shown(gemm_beyond + attention_beyond),
        memory_time_s=shown(times.gemm_memory_s + times.kv_s + times.elementwise_s),
        # the compute side in full: the GEMM kernels' own time, their fixed cost included
        # (charged beside the reads, in the overheads part, but time the kernels run)
        compute_time_s=shown(times.gemm_compute_s + times.gemm_fixed_s + times.attention_compute_s),
        weight_read_full_s=shown(times.gemm_weight_s),
        kv_read_full_s=shown(times.kv_s),
        activation_read_full_s=shown(
            times.gemm_memory_s - times.gemm_weight_s + times.elementwise_s
        ),
        flop=flop + zero,
    )


def _weighted(weighted_sum, weights):
    """A volume averaged over classes by their seconds (0 where there is no work)."""
    w = np.asarray(weights, dtype=float)
    return np.where(w > 0.0, np.asarray(weighted_sum, dtype=float) / np.where(w > 0.0, w, 1.0), 0.0)
