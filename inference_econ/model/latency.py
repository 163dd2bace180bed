"""Time of one forward pass for a given layout, with its breakdown (docs/model.md §A5).

A layout of an instance of ``N`` GPUs serving ``B`` requests is a pipeline degree ``p``, an
attention divisor ``adiv`` and 1-D or 2-D tensor parallelism; expert parallelism follows from
them. The step time is ``kernels + collectives + max(memory time, compute time)``, infinite
when the weights and KV cache do not fit or the pipeline is deeper than the GPUs or the batch.

Everything is vectorised: ``N``, ``B``, ``p`` and ``adiv`` may be arrays of one broadcast shape.
A step is evaluated in two parts: ``PipelinePart`` holds what does not depend on the attention
divisor, so the search over divisors (``layouts.py``) reuses it. Collectives are kept as lists
of ``CollectiveCalls``, summed as totals on the fast path and split into latency and bandwidth
terms for the breakdown, so both paths charge exactly the same calls.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property, partial
from typing import TYPE_CHECKING

import numpy as np

from ..specs.architecture import Architecture
from ..specs.features import LAYOUT_FEATURES
from ..specs.hardware import GPU
from .assumptions import NO_EXPERT_PARALLEL, Assumptions
from .breakdown import (
    ADDITIVE_PARTS,
    BOUND_SHARE,
    FULL_READS,
    Breakdown,
    bound_label,
    roofline_breakdown,
    scaled_to,
)
from .collectives import P2P
from .machine import Machine, mx_gemm_bits
from .overlap import check_overlap
from .step_calls import (
    NO_CACHE,
    CollectiveCalls,
    StepCache,
    StepCalls,
    attention_degree,
    exchange_terms_s,
    overlapped_terms,
    total_terms_s,
    total_time_s,
    whole_expert_degrees,
)
from .values import Floats, add_into, maximum_into, minimum_into
from .workload import Workload, compile_workload

if TYPE_CHECKING:
    from .achievable import AchievablePart, EngineStep

__all__ = [
    "ADDITIVE_PARTS",
    "BOUND_SHARE",
    "FULL_READS",
    "Breakdown",
    "bound_label",
    "PipelinePart",
    "StepModel",
    "prefill_step_model",
]


@dataclass(frozen=True)
class PipelinePart:
    """What a step costs for one pipeline degree, before the attention divisor is chosen."""

    gpus: Floats  # N
    pipeline: Floats  # p
    micro_batch: Floats  # b = B / p
    tensor_degree: Floats  # t = N / p
    tokens: Floats  # b · S
    #: Feed-forward reductions with 2-D and with 1-D tensor parallelism.
    ff_calls_2d: tuple[CollectiveCalls, ...]
    ff_calls_1d: tuple[CollectiveCalls, ...]
    #: Calls that do not depend on the tensor dimensions: MoE all-to-alls, pipeline sends.
    shared_calls: tuple[CollectiveCalls, ...]
    kv_read_s: Floats
    ff_weight_read_s: Floats
    ff_activation_read_s: Floats
    ff_context_compute_s: Floats  # feed-forward and attention-context FLOP, whole batch
    projection_compute_s: Floats  # attention projections and embeddings, whole batch
    flop: Floats
    #: The work the achievable preset charges per kernel class (§F1); None for the ideal.
    achievable: AchievablePart | None = None
    #: §B13: the attention layers' part of ``kv_read_s``, and the KV bytes that must be
    #: resident (all of them, and the attention layers' part), for copies beyond the KV heads.
    kv_attention_read_s: Floats = 0.0
    kv_resident_bytes: Floats = 0.0
    kv_attention_bytes: Floats = 0.0
    #: The context (tokens) its KV figures are for.
    context: Floats = 0.0

    def ff_calls(self, two_d: bool) -> tuple[CollectiveCalls, ...]:
        return self.ff_calls_2d if two_d else self.ff_calls_1d

    @cached_property
    def shared_collective_s(self):
        return total_time_s(self.shared_calls)

    @cached_property
    def collective_2d_s(self):
        """Feed-forward and shared collectives with 2-D tensor parallelism (seconds)."""
        return add_into(total_time_s(self.ff_calls_2d), self.shared_collective_s)

    @cached_property
    def collective_1d_s(self):
        return add_into(total_time_s(self.ff_calls_1d), self.shared_collective_s)

    @cached_property
    def memory_base_s(self):
        """Memory time that does not depend on the attention divisor."""
        return self.kv_read_s + self.ff_weight_read_s + self.ff_activation_read_s


def _host_floored(model, part: PipelinePart, adiv, *steps):
    """``steps`` (seconds, divisor ``adiv``) no shorter than the host work an engine's
    runtime overlaps with them (§F5, ``EngineStep.host_floor_s``); as they are under an
    ideal preset."""
    if model.engine is None:
        return steps
    floor = model.engine.host_floor_s(part, adiv)
    if not np.any(floor):
        return steps
    return tuple(np.maximum(s, floor) for s in steps)


def divisors(n: int) -> list[int]:
    """The divisors of a positive integer, ascending."""
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


class StepModel:
    """One model on one GPU under some assumptions: evaluates layouts for (N, B) arrays.

    ``expert_parallel_by_tokens`` decides the expert degree by the tokens of a pass rather than
    the requests (prefill: one long prompt saturates the experts). ``companion`` is a workload
    whose weights and KV cache share the GPUs (``companion_copies`` times: draft heads, §C3).
    """

    def __init__(
        self,
        work: Workload,
        gpu: GPU,
        assumptions: Assumptions,
        integer_layouts: bool = False,
        expert_parallel_by_tokens: bool = False,
        companion: Workload | None = None,
        companion_copies: int = 0,
    ) -> None:
        self.work = work
        self.companion = companion
        self.companion_copies = companion_copies if companion is not None else 0
        #: Layout features the engine runs for this model (§F11; every one without a profile).
        profile = assumptions.profile()
        self.features = (
            frozenset(LAYOUT_FEATURES)
            if profile is None
            else profile.layout_features(work.model_class)
        )
        assumptions = engine_layouts(assumptions, self.features)
        self.assumptions = assumptions
        self.machine = Machine.build(
            gpu,
            work.weight_bits
            if work.gemm_bits is None
            else mx_gemm_bits(gpu, work.weight_bits, work.gemm_bits),
            assumptions,
            integer_layouts,
            work.attention_bits,
            work.dense_gemm_bits,
        )
        self.kernel_s = work.layers * assumptions.kernels_per_layer * self.machine.launch_s
        #: The engine profile of the achievable preset (docs/model.md Part F), else None.
        self.profile = assumptions.profile()
        #: The engine step (model/achievable.py) under an engine profile, else None: the
        #: roofline step of this class is then replaced by the engine's per-class times.
        self.engine: EngineStep | None = None
        if self.profile is not None:  # the ideal presets never load model/achievable.py
            from .achievable import EngineStep

            self.engine = EngineStep(
                work,
                self.machine,
                self.profile,
                assumptions.attention_data_parallel,
                expert_parallel_by_tokens,
                assumptions.two_batch_overlap,
            )
        check_overlap(assumptions, gpu, any(g.experts > 1 for g in work.groups), work.name)
        self.dense_layers = sum(g.layers for g in work.groups if g.experts <= 1)
        self.expert_parallel_by_tokens = expert_parallel_by_tokens
        #: The collectives of a step: each layer group's expert split, reductions and
        #: all-to-alls, and the attention's.
        self.calls = StepCalls(work, self.machine, assumptions, expert_parallel_by_tokens)
        self.weights_total_bytes = work.weights_total_bytes
        if companion is not None and self.companion_copies:
            self.weights_total_bytes += self.companion_copies * companion.weights_total_bytes
        (self.extra_pipeline_degrees, self.idle_stage_degrees, self.extra_attention_degrees) = (
            searched_degrees(work, assumptions, self.features)
        )

    # --- feasibility ----------------------------------------------------------------------
    def fits(self, N, B, p, context, adiv=1.0):
        """Weights plus KV cache fit in HBM with room to spare, and the pipeline is not deeper
        than N or B (§A5; under §B12's bubbles it may be deeper than B, stages left idle). A
        count whose weights exactly fill HBM has no room for anything else and does not fit.
        With attention divisor ``adiv`` (1: attention tensor-parallel over the whole stage)
        the KV copies of §B13 count too; ``adiv=None`` leaves them out (the
        test every divisor must pass, before the divisors are searched)."""
        # in float64 whatever the search's precision: a point is feasible or not, exactly
        N, B, p = (np.asarray(x, dtype=np.float64) for x in (N, B, p))
        kv, attention = self._resident_kv(B, p, context)
        copies, a = (1.0, 1.0) if adiv is None else (self.kv_copies(N / p / adiv), adiv)
        return self._kv_room(N, kv, attention, copies, a, p) & (
            p <= np.minimum(N, step_batch(self.assumptions, B, p))
        )

    def _resident_kv(self, B, p, context):
        """(KV bytes that must be resident, the target's attention layers' part of them)."""
        w = self.work
        kv_batch = B if self.assumptions.kv_capacity_whole_batch else B / p
        kv = w.kv_held_bytes(context, kv_batch)
        if self.companion is not None and self.companion_copies:
            kv = kv + self.companion_copies * self.companion.kv_held_bytes(context, kv_batch)
        return kv, w.attention_held_bytes(context, kv_batch)

    def _kv_room(self, N, kv, attention, copies, adiv=1.0, p=1.0):
        """Whether ``kv`` resident bytes, ``attention`` of them held ``copies`` times, fit: in the
        engine's KV memory (§F8, ``adiv``, ``p``) or, with room to spare, beside the weights."""
        need = kv if np.all(np.asarray(copies) == 1.0) else kv + attention * (copies - 1.0)
        if self.profile is not None:
            return need <= self.kv_capacity_bytes(N, adiv, p)
        return N * self.machine.usable_hbm_bytes > self.weights_total_bytes + need

    def kv_copies(self, attention_degree):
        """Copies of the attention KV cache over an attention tensor group (§B13): 1 without
        ``kv_replication``."""
        if not self.assumptions.kv_replication:
            return 1.0
        return self.work.kv_replication(attention_degree)

    def free_hbm_bytes(self, N):
        """Usable HBM of ``N`` GPUs left once the weights are in (§A5)."""
        return N * self.machine.usable_hbm_bytes - self.weights_total_bytes

    def kv_capacity_bytes(self, N, adiv=1.0, p=1.0):
        """Bytes of KV cache ``N`` GPUs of ``p`` stages hold once the weights are in (§A5; §F8:
        an engine's share of the memory left, each of ``adiv`` attention replicas with its own)."""
        if self.engine is None:
            return self.free_hbm_bytes(N)
        extra = replicated_weight_bytes(self, adiv, np.asarray(N, dtype=float) / p)
        free, weights = self.free_hbm_bytes(N) - extra, self.weights_total_bytes + extra
        return self.engine.kv_capacity_bytes(N, free, weights, adiv)

    # --- the part that does not depend on the attention divisor ---------------------------
    def pipeline_part(
        self, N, B, S, context, p, cache: StepCache = NO_CACHE, charged: bool = False
    ) -> PipelinePart:
        """Everything of a step of ``B`` sequences with pipeline degree ``p`` that the
        attention divisor leaves unchanged, priced for ``step_batch`` sequences, its KV cache
        and FLOP the ``B`` sequences' own. ``charged``: ``B`` is already what the step is
        priced for (the mixed step's tokens, §B12). ``cache`` holds the collective
        structures, which do not depend on ``S``."""
        w, m = self.work, self.machine
        held = B  # the sequences whose cache is resident and whose FLOP the step does
        B = B if charged else step_batch(self.assumptions, B, p)
        b = B / p
        t = N / p
        tokens = b * S
        ff_2d, ff_1d, shared = [], [], []
        ff_weight = 0.0
        ff_act = 0.0
        splits = []
        for gi, g in enumerate(w.groups):
            e, t_ff = self.calls.split(gi, g, b, t, tokens, cache)
            splits.append((e, t_ff))
            ff_2d += self.calls.reductions(gi, g, t, t_ff, tokens, True, cache)
            ff_1d += self.calls.reductions(gi, g, t, t_ff, tokens, False, cache)
            if g.experts > 1 and not self.calls.exchange_by_method:  # else by divisor (§F7)
                shared += self.calls.all_to_all(gi, g, e, t, tokens, cache)
            wt, ac = w.ff_bytes(g, tokens, t_ff)
            ff_weight = ff_weight + g.layers * wt
            ff_act = ff_act + g.layers * ac
        if np.any(np.asarray(p) > 1.0):  # p - 1 sends between stages (2 ranks on 2 nodes)
            p2p = m.collective(2.0, 2.0, P2P)
            per_token = cache.get(("p2p",), lambda: w.d_model * w.bytes_per_activation / t)
            sends = cache.calls(
                ("p2p",), p2p, per_token, tokens, p - 1.0, "pipeline send", (2.0, 2.0)
            )
            shared.append(sends)
        bw_total = N * m.hbm_bandwidth_bytes_per_s
        kv_batch = B if self.assumptions.kv_read_whole_batch else b
        resident, attention_resident = self._resident_kv(held, p, context)
        ff, ctx, proj = w.flop(B, S, context)
        done = (ff, ctx, proj) if held is B else w.flop(held, S, context)
        return PipelinePart(
            gpus=N,
            pipeline=p,
            micro_batch=b,
            tensor_degree=t,
            tokens=tokens,
            ff_calls_2d=tuple(ff_2d),
            ff_calls_1d=tuple(ff_1d),
            shared_calls=tuple(shared),
            kv_read_s=p * w.kv_cache_bytes(context, kv_batch) / bw_total,
            kv_attention_read_s=p * w.attention_kv_bytes(context, kv_batch) / bw_total,
            kv_resident_bytes=resident,
            kv_attention_bytes=attention_resident,
            context=context,
            ff_weight_read_s=p * (ff_weight + w.output_weight_bytes) / bw_total,
            ff_activation_read_s=p * ff_act / bw_total,
            ff_context_compute_s=ff_context_s(self.machine, w, ff, ctx, N, B, S),
            projection_compute_s=proj / (N * m.flop_per_s),
            flop=sum(done),
            achievable=None
            if self.engine is None
            else self.engine.part(B, p, t, tokens, splits, ctx),
        )

    # --- the attention divisor ------------------------------------------------------------
    def attention_calls(
        self,
        part: PipelinePart,
        adiv,
        two_d: bool,
        cache: StepCache = NO_CACHE,
        key=None,
        reductions_only: bool = False,
        exchange: bool = True,
    ) -> tuple[CollectiveCalls, ...]:
        """The calls that depend on divisor ``adiv`` (``StepCalls.attention``): the attention's
        reductions, with attention data parallelism the all-to-alls around the dense layers,
        and with ``exchange`` a MoE's exchange where the engine picks it by layout."""
        return self.calls.attention(part, adiv, two_d, cache, key, reductions_only, exchange)

    attention_degree = staticmethod(attention_degree)

    def attention_reads(self, part: PipelinePart, adiv, cache: StepCache = NO_CACHE, key=None):
        """(weight, activation) read seconds of attention for divisor ``adiv``.

        §A5: both are multiplied by a. With attention data parallelism (§B1) each replica
        reads the weights (still a times) but only its own tokens' activations; dense blocks
        that run with the attention add their replicas' (``dense_replica_bytes``)."""
        w, m = self.work, self.machine
        N, p = part.gpus, part.pipeline
        scale = cache.get(
            ("scale", key), lambda: p * w.layers * adiv / (N * m.hbm_bandwidth_bytes_per_s)
        )
        act_scale = scale / adiv if self.assumptions.attention_data_parallel else scale
        per_token = cache.get(
            ("att_io", key),
            lambda: (
                w.attention_activation_bytes_per_token(
                    self.attention_degree(part, adiv, cache, key)
                )
                * act_scale
            ),
        )
        weights = cache.get(("att_w", key), lambda: replica_weight_reads(self, adiv, scale, N / p))
        return weights, per_token * cache.at_points(part.tokens)

    def compute_time(self, part: PipelinePart, adiv):
        """Arithmetic seconds: projections run a times under the paper's divisor (§A5), once
        with attention data parallelism (§B1)."""
        if self.assumptions.attention_data_parallel:
            return part.ff_context_compute_s + part.projection_compute_s
        return add_into(part.projection_compute_s * adiv, part.ff_context_compute_s)

    # --- a whole layout -------------------------------------------------------------------
    def _terms(self, part: PipelinePart, adiv, cache: StepCache, key):
        """(2-D collectives, 1-D collectives, the rest) seconds for ``adiv``: the rest is
        max(memory, compute) of the roofline step, or under an engine profile every part of
        the engine step but its collectives (§F1), the collectives then scaled by the
        engine's step-time factor."""
        att2 = total_time_s(self.attention_calls(part, adiv, True, cache, key))
        att1 = total_time_s(self.attention_calls(part, adiv, False, cache, key))
        reads = self.attention_reads(part, adiv, cache, key)
        # the KV copies, their reads and whether they fit do not depend on the tokens per
        # pass: kept for the block (``cache``), the same numbers for every S; the reads and
        # the fit depend on the context (a TTFT's first step shares the block's cache at the
        # prompt's length), kept for each context given as one number
        copies = cache.get(("copies", key), lambda: self.copies_of(part, adiv))
        kv_cache, kv_key = (
            (cache, (key, float(part.context))) if np.ndim(part.context) == 0 else (NO_CACHE, key)
        )
        if self.engine is not None and self.assumptions.kernel_tables:
            from .kernel_clock import kernel_terms  # each operation at its measured kernel's

            two_d, one_d, rest = kernel_terms(self, self.with_copies(part, copies), adiv)
            return two_d, one_d, self._if_kv_fits(part, copies, rest, kv_cache, kv_key, adiv)
        if self.engine is not None:
            scale = self.engine.collective_scale
            two_d = scale * (att2 + part.collective_2d_s)
            if "tensor_2d" not in self.features:  # §F11: no engine runs 2-D tensor parallelism
                two_d = np.full(np.shape(two_d), np.inf, dtype=np.result_type(two_d, 1.0))
            copied = self.with_copies(part, copies)
            rest = self.engine.rest_s(copied, adiv, reads)
            one_d = scale * (att1 + part.collective_1d_s)
            if self.engine.profile.gemm_allreduce_overlap:  # fused GEMMs hide some (§F6)
                bw = self.collective_terms(part, adiv, False)[1]
                fusable = self.fusable_bandwidth_s(part, adiv, False)
                one_d = one_d - self.engine.hidden_collective_s(copied, adiv, reads, bw, fusable)
            if self.engine.overlap_family is not None:  # the exchange under the other half
                one_d, rest = overlapped_terms(self, part, adiv, one_d, rest, cache, key)
            return two_d, one_d, self._if_kv_fits(part, copies, rest, kv_cache, kv_key, adiv)
        weights, acts = reads  # the activations' times are a new array: summed into it
        memory = add_into(add_into(acts, weights), part.memory_base_s)
        if copies is not None:  # in the search's precision (the fit below in double)
            dtype = np.result_type(memory, 1.0)

            def copies_read():
                extra = np.asarray(copies, dtype=dtype) - 1.0
                return part.kv_attention_read_s * extra

            read = kv_cache.get(("copies_read", kv_key, dtype.str), copies_read)
            memory = add_into(memory, read)
        rest = maximum_into(memory, self.compute_time(part, adiv))
        rest = self._if_kv_fits(part, copies, rest, kv_cache, kv_key, adiv)
        return add_into(att2, part.collective_2d_s), add_into(att1, part.collective_1d_s), rest

    def copies_of(self, part: PipelinePart, adiv):
        """Copies of the attention KV cache on the layout of divisor ``adiv`` (§B13); None
        without ``kv_replication`` (nothing to add)."""
        if not self.assumptions.kv_replication:
            return None
        return self.kv_copies(part.tensor_degree / adiv)

    @staticmethod
    def with_copies(part: PipelinePart, copies) -> PipelinePart:
        """The part with its attention KV reads made ``copies`` times (§B13): each rank of an
        attention group wider than the KV heads reads the copy it holds."""
        if copies is None:
            return part
        extra = part.kv_attention_read_s * (copies - 1.0)
        ap = part.achievable
        if ap is not None:
            ap = dataclasses.replace(ap, kv_request_read_s=ap.kv_request_read_s * copies)
        return dataclasses.replace(part, kv_read_s=part.kv_read_s + extra, achievable=ap)

    def _if_kv_fits(self, part: PipelinePart, copies, seconds, cache=NO_CACHE, key=None, adiv=1.0):
        """``seconds`` where the part's resident KV with its copies fits (§B13) beside divisor
        ``adiv``'s attention replicas (§F8), else inf. The fit does not depend on the tokens
        per pass: kept for the block (``cache``), and None when every point fits."""
        if copies is None or not np.any(np.asarray(part.kv_attention_bytes) > 0):
            return seconds

        def fit():
            room = partial(
                self._kv_room, part.gpus, part.kv_resident_bytes, part.kv_attention_bytes
            )
            if cache.feasible is not None and self.engine is None:
                # the most copies any divisor makes are the whole stage's (t_at = t, the
                # divisor 1): where they fit at every point the block keeps, so do every
                # divisor's (docs/model.md "The search"), and nothing need be masked; under
                # an engine the attention replicas' weights (§F8) grow with the divisor
                most = room(self.kv_copies(part.tensor_degree))
                if np.all(most | ~cache.feasible):
                    return None
            ok = room(copies, adiv)
            return None if np.all(ok) else ok

        ok = cache.get(("kv_fits", key), fit)
        if ok is None:
            return seconds
        return np.where(ok, seconds, np.inf)

    def latency_by_dims(
        self, part: PipelinePart, adiv, cache: StepCache = NO_CACHE, key=None, floor=True
    ):
        """(latency with 2-D tensor parallelism, latency with 1-D) for divisor ``adiv``;
        ``floor``: no shorter than the overlapped host work (False: the GPU's step alone)."""
        c2, c1, rest = self._terms(part, adiv, cache, key)
        two_d, one_d = self.kernel_s + c2 + rest, self.kernel_s + c1 + rest
        return _host_floored(self, part, adiv, two_d, one_d) if floor else (two_d, one_d)

    def latency(self, part: PipelinePart, adiv, cache: StepCache = NO_CACHE, key=None):
        """Latency of divisor ``adiv``, the better of 1-D and 2-D (no feasibility check)."""
        c2, c1, rest = self._terms(part, adiv, cache, key)  # new arrays: combined in place
        total = add_into(add_into(minimum_into(c2, c1), self.kernel_s), rest)
        return _host_floored(self, part, adiv, total)[0]

    def collective_terms(self, part: PipelinePart, adiv, two_d):
        """(latency, bandwidth) seconds of every collective of a step; ``two_d`` may be an
        array choosing 2-D or 1-D tensor parallelism per point."""
        two_d = np.asarray(two_d, dtype=bool)
        terms = {}
        for flag in (True, False):
            if np.any(two_d == flag):
                calls = (
                    self.attention_calls(part, adiv, flag) + part.ff_calls(flag) + part.shared_calls
                )
                terms[flag] = total_terms_s(calls)
        if len(terms) == 1:
            return next(iter(terms.values()))
        (l2, b2), (l1, b1) = terms[True], terms[False]
        return np.where(two_d, l2, l1), np.where(two_d, b2, b1)

    def fusable_bandwidth_s(self, part: PipelinePart, adiv, two_d):
        """Bandwidth seconds of the step's row-parallel all-reduces (§F6): the attention
        output's and the dense feed-forward's 1-D reductions, which an engine that fuses each
        with its GEMM can hide; 0 where the profile does not fuse them, and with 2-D tensor
        parallelism (its reductions are not one all-reduce per GEMM)."""
        if self.engine is None or not self.engine.profile.gemm_allreduce_overlap:
            return 0.0
        calls = self.attention_calls(part, adiv, False, reductions_only=True)
        # one 1-D reduction per layer group, in group order (``pipeline_part``)
        calls += tuple(c for g, c in zip(self.work.groups, part.ff_calls_1d) if g.experts <= 1)
        bw = total_terms_s(calls)[1]
        return np.where(two_d, 0.0, bw) if np.any(two_d) else bw

    def breakdown(self, N, B, S, context, p, adiv, two_d) -> Breakdown:
        """The full breakdown of layouts with 1-D or 2-D tensor parallelism (``two_d``: a
        flag, or an array of flags per point)."""
        alone = self.pipeline_part(N, B, S, context, p)
        coll_lat, coll_bw = self.collective_terms(alone, adiv, two_d)
        ok = self.fits(N, B, p, context, adiv)
        part = self.with_copies(alone, self.copies_of(alone, adiv))
        if self.engine is not None:
            reads, exchange = self.attention_reads(part, adiv), exchange_terms_s(self, part, adiv)
            fusable = self.fusable_bandwidth_s(part, adiv, two_d)
            bd = self.engine.breakdown(part, adiv, coll_lat, coll_bw, reads, ok, fusable, exchange)
            if self.assumptions.kernel_tables:  # the step's total as the kernel clock prices it
                two, one = self.latency_by_dims(alone, adiv)
                bd = scaled_to(bd, np.where(two_d, two, one))
            return bd
        aw, aa = self.attention_reads(part, adiv)
        weight_s, act_s = part.ff_weight_read_s + aw, part.ff_activation_read_s + aa
        compute, kernel_s = self.compute_time(part, adiv), self.kernel_s
        return roofline_breakdown(
            ok, kernel_s, coll_lat, coll_bw, weight_s, act_s, part.kv_read_s, compute, part.flop
        )


def step_batch(assumptions: Assumptions, B, p):
    """The sequences a decode step of ``B`` over ``p`` stages is priced for: ``B`` (§A5), or
    under ``pipeline_bubbles`` at least ``p`` (§B12): with fewer sequences than stages each
    micro-batch holds one and crosses every stage, the others idle, so a token takes as long
    as with ``p`` sequences."""
    if not assumptions.pipeline_bubbles:
        return B
    return np.where(np.asarray(p) > 1.0, np.maximum(B, p), B)


def stage_busy_share(assumptions: Assumptions, B, p):
    """The share of a step of ``B`` sequences over ``p`` stages that each stage works:
    ``B / step_batch`` (§B12): 1, but with fewer sequences than stages each stage runs its
    ``B`` micro-batches of one and idles while ``p - B`` more would have crossed it, so its
    GPUs draw the power of that share (§G2)."""
    B = np.asarray(B, dtype=float)
    return B / step_batch(assumptions, B, p)


def searched_degrees(work: Workload, assumptions: Assumptions, features) -> tuple:
    """(pipeline degrees, idle-stage degrees, attention degrees) searched besides the paper's
    log grids. Node-aligned layouts (§B7): whole pipeline degrees dividing the layers and
    whole attention degrees dividing the heads. Under pipeline bubbles (§B12) a batch smaller
    than the stages is a launchable layout (one sequence a micro-batch, the other stages
    idle): the powers of two up to the layers that the first hold none of, searched there."""
    aligned = assumptions.node_aligned_layouts
    pipe = "pipeline" in features
    pipeline = tuple(d for d in divisors(work.layers) if d > 1) if aligned and pipe else ()
    powers = (2**k for k in range(1, int(work.layers).bit_length()))
    idle = (
        tuple(d for d in powers if d <= work.layers and d not in pipeline)
        if assumptions.pipeline_bubbles and pipe
        else ()
    )
    attention = (
        tuple(d for d in divisors(int(work.tp_heads)) if d > 1)
        if aligned and "attention_data" in features
        else ()
    )
    return pipeline, idle, attention


def replicated_weight_bytes(model: StepModel, adiv, tensor):
    """Bytes of weights an engine holds beyond one copy because attention data parallelism
    runs the attention on ``adiv`` replicas, each with all its weights (§F8): ``(adiv - 1)``
    times the attention matrices of every layer, as the step reads them (``attention_reads``),
    and the dense feed-forward blocks' where they run with the attention, and the embedding
    table and output head where each replica holds its own
    (``StepCalls.vocabulary_replica_bytes``); and the shared experts' where they run whole on
    every one of a stage's ``tensor`` GPUs (``dense_replica_bytes``). 0 without an engine
    profile, or without replicas and copies."""
    if model.engine is None:
        return 0.0
    w = model.work
    replicas = np.maximum(np.asarray(adiv, dtype=float) - 1.0, 0.0)
    extra = replicas * (w.layers * w.attention_matrix_weight_bytes)
    if model.calls.shared_with_attention:
        extra = extra + dense_replica_bytes(model, adiv, tensor)
    resident = w.embedding_params - w.shared_embedding_params  # a draft's shared head is held once
    extra = extra + model.calls.vocabulary_replica_bytes(adiv, resident)
    return float(extra) if np.ndim(extra) == 0 else extra


def replica_weight_reads(model: StepModel, adiv, scale, tensor):
    """Seconds of the attention replicas' weight reads (``StepModel.attention_reads``): the
    attention matrices of every layer on each of ``adiv`` replicas (``scale``: p·L·a/(N·BW)),
    the dense blocks' copies beyond one where they run with the attention or on every one of
    a stage's ``tensor`` GPUs, and the output head's where each replica reads its own."""
    w = model.work
    weights = w.attention_matrix_weight_bytes * scale
    if model.calls.shared_with_attention:
        extra = dense_replica_bytes(model, adiv, tensor)
        weights = weights + extra * (scale / (w.layers * adiv))
    if model.calls.vocabulary_with_attention:
        head = model.calls.vocabulary_replica_bytes(adiv, w.vocab_size * w.d_model)
        weights = weights + head * (scale / (w.layers * adiv))
    return weights


def dense_replica_bytes(model: StepModel, adiv, tensor):
    """Bytes of a MoE model's dense feed-forward weights (its dense layers' and its shared
    experts') held beyond one copy where those blocks run with the attention's layout
    (``StepCalls.dense_with_attention``, §F7): each of the ``adiv`` attention replicas holds
    and reads all of them at its tensor degree; or of its shared experts alone where they run
    whole on every one of a stage's ``tensor`` GPUs (``StepCalls.shared_on_every_gpu``)."""
    w, calls = model.work, model.calls
    adiv = np.asarray(adiv, dtype=float)
    shared = sum(
        g.layers * w.shared_ff_params(g) * w.dense_weight_bytes for g in w.groups if g.experts > 1
    )
    if calls.shared_on_every_gpu:
        return np.maximum(np.asarray(tensor, dtype=float) - 1.0, 0.0) * shared
    dense = sum(g.layers * w.ff_bytes(g, 0.0, 1.0)[0] for g in w.groups if g.experts <= 1)
    return np.maximum(adiv - 1.0, 0.0) * (dense + shared)


def ff_context_s(m: Machine, work: Workload, ff_flop, ctx_flop, N, B, S):
    """Seconds of feed-forward and attention-context FLOP of ``B`` x ``S`` tokens on N GPUs:
    at one rate (the paper's), attention at its own (§B5), the routed experts' at the fused
    MoE's measured rate where it differs (§B15, ``Workload.routed_expert_flop``)."""
    if m.expert_flop_per_s != m.flop_per_s:
        experts = work.routed_expert_flop(B, S)
        dense = (ff_flop - experts) / m.flop_per_s + experts / m.expert_flop_per_s
        return (dense + ctx_flop / m.attention_flop_per_s) / N
    if m.attention_flop_per_s == m.flop_per_s:
        return (ff_flop + ctx_flop) / (N * m.flop_per_s)
    return ff_flop / (N * m.flop_per_s) + ctx_flop / (N * m.attention_flop_per_s)


def model_inputs(model: StepModel) -> tuple:
    """What a step model is made of: its workload, GPU, assumptions (as its engine runs them),
    layout rule, expert split, companion and layout features. Models of equal inputs give the
    same latencies, so the passes and step tables kept by searches are keyed by them
    (``optimiser.model_passes``, ``engine.step_table``)."""
    machine = model.machine
    return (
        model.work, machine.gpu, model.assumptions, machine.integer_layouts,
        model.expert_parallel_by_tokens, model.companion, model.companion_copies, model.features,
    )  # fmt: skip


def engine_layouts(assumptions: Assumptions, features) -> Assumptions:
    """The assumptions searched under an engine that runs only ``features`` (§F11): one
    pipeline degree without "pipeline", one attention divisor without "attention_data" (two,
    1 and the tensor degree, with "attention_data_whole"), no
    expert parallelism without "expert" (2-D tensor parallelism is refused in the step
    itself); the assumptions unchanged when every feature is there."""
    changes: dict[str, float] = {}
    if "pipeline" not in features:
        changes["pipeline_degree_count"] = 1
    if "attention_data" not in features:
        # the divisors 1 and t (attention over the whole group or every GPU alone), or 1
        whole = "attention_data_whole" in features
        changes["attention_divisor_count"] = min(
            assumptions.attention_divisor_count, 2 if whole else 1
        )
    if "expert" not in features:
        changes["expert_parallel_min_batch_per_sparsity"] = NO_EXPERT_PARALLEL
    return assumptions.replace(**changes) if changes else assumptions


def stated_experts(assumptions, split: bool | None):
    """The assumptions of a layout that states how its experts are placed: ``split`` over the
    tensor group at every micro-batch (an engine launched with expert parallelism, ``--ep-size
    8`` or ``--enable-expert-parallel``, runs it whatever the batch), or never (the experts'
    matrices tensor-parallel); None keeps §A5's rule (split once a micro-batch holds
    ``expert_parallel_min_batch_per_sparsity`` x the sparsity). An engine without the
    "expert" feature never splits them whatever is stated (``engine_layouts``)."""
    if split is None:
        return assumptions
    least = 0.0 if split else NO_EXPERT_PARALLEL
    return assumptions.replace(expert_parallel_min_batch_per_sparsity=least)


def experts_placement(work: Workload, t: int, least_per_sparsity: float) -> str:
    """Where a layout of tensor degree ``t`` places a mixture of experts' routed experts
    (§A5), as a layout's description ends: "experts EP8" (split over the group at every
    micro-batch), "experts EP8 from a micro-batch of 64, tensor-split below" (§A5's rule: its
    sequences in a decode step, its tokens in a prefill pass), "experts tensor-split (EP1)";
    "" for a dense model or one GPU a stage."""
    groups = [g for g in work.groups if g.experts > 1]
    degrees = sorted(whole_expert_degrees([g.experts for g in groups], t, work.redundant_experts))
    if not degrees or t <= 1:
        return ""
    if degrees[-1] <= 1 or least_per_sparsity >= NO_EXPERT_PARALLEL:
        return "experts tensor-split (EP1)"
    split = "experts " + "/".join(f"EP{d}" for d in degrees)
    if least_per_sparsity <= 0.0:
        return split
    least = min(least_per_sparsity * g.sparsity for g in groups)
    return f"{split} from a micro-batch of {least:g}, tensor-split below"


def engine_attention_degrees(degrees: list[int], t: int, features, experts=()) -> list[int]:
    """The attention tensor degrees of a tensor group of ``t`` GPUs that an engine with these
    layout ``features`` runs (§F11), out of ``degrees`` (the divisors of ``t`` the heads
    allow, ascending): every one with "attention_data"; with "attention_data_whole"
    (TensorRT-LLM's enable_attention_dp, no partial attention DP) every GPU attending alone
    (1), and the whole group (``t``) where the heads allow it; else attention over the whole
    group (``t``, or the largest allowed). With
    "attention_data_expert" (vLLM) attention splits into data-parallel ranks only where every
    MoE group's routed ``experts`` divide ``t``: its expert parallelism spans the group;
    elsewhere attention runs over the whole group or the layout is not launched (none). An
    engine without data-parallel attention for the model launches no group whose heads do not
    split over it (none)."""
    tensor = [t] if t in degrees else []
    if "attention_data_expert" in features and any(e > 1 and e % t for e in experts):
        return [t] if t in degrees else []
    if "attention_data" in features:
        return list(degrees)
    if "attention_data_whole" in features:  # every GPU alone, or the whole group the heads allow
        return sorted({1, t}) if t in degrees else [1]
    return tensor


def allowed_attention_degrees(
    heads: int, query_heads: float, t: int, copies: bool = False
) -> list[int]:
    """The attention tensor degrees a tensor group of ``t`` GPUs can split its heads over: the
    divisors of ``t`` that divide ``heads`` (the KV heads; the query heads of MLA or a single
    KV head); with ``copies`` (the preset counts §B13's KV copies) also ``t`` itself where the
    query heads split over it and the KV heads divide it: each KV head on ``t / heads`` GPUs,
    its cache copied, as vLLM, SGLang and TensorRT-LLM run a tensor group wider than the KV
    heads."""
    out = [d for d in divisors(t) if heads % d == 0]
    if copies and t not in out and t % heads == 0 and float(query_heads) % t == 0:
        out.append(t)
    return out


def launched_attention_degrees(work, t: int, features, copies: bool = False) -> list[int]:
    """The attention tensor degrees of a tensor group of ``t`` GPUs that the engine runs for
    ``work`` (``engine_attention_degrees`` of those its heads allow)."""
    allowed = allowed_attention_degrees(work.tp_heads, work.query_heads, t, copies)
    return engine_attention_degrees(allowed, t, features, [g.experts for g in work.groups])


def prefill_step_model(
    arch: Architecture, gpu: GPU, assumptions: Assumptions, integer_layouts: bool = False
) -> StepModel:
    """The step model of a prefill pass (§B8): causal attention (the mean context over the
    pass) and expert parallelism decided by tokens, since one long prompt saturates the experts.
    """
    a = assumptions.replace(mean_context_over_pass=True)
    return StepModel(
        compile_workload(arch, a), gpu, a, integer_layouts, expert_parallel_by_tokens=True
    )
