"""Token latency of one forward pass for a given layout, with its breakdown (MODEL.md A5).

A layout of an instance of ``N`` GPUs serving ``B`` requests is a pipeline degree ``p``, an
attention divisor ``a`` and 1-D or 2-D tensor parallelism; expert parallelism follows from
them. The latency is ``kernels + collectives + max(memory time, compute time)``, infinite when
the weights and KV cache do not fit or the pipeline is deeper than the GPUs or the batch.

Everything is vectorised: ``N``, ``B``, ``p`` and ``a`` may be arrays of one broadcast shape.
The search over layouts lives in ``search.py``; this module evaluates given layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .assumptions import Assumptions
from .collectives import ALLREDUCE, ALLTOALL, P2P, CollectiveCost, protocols_for
from .hardware import GPU
from .workload import Workload

#: Components of the latency breakdown that add up to the total, in display order.
ADDITIVE_PARTS = (
    "kernel_launch_s",
    "collective_latency_s",
    "collective_bandwidth_s",
    "weight_read_s",
    "kv_read_s",
    "activation_read_s",
    "arithmetic_s",
)


@dataclass(frozen=True)
class Machine:
    """The hardware figures the latency model uses, after sustained caps (A3)."""

    gpu: GPU
    flop_per_s: float  # sustained, at the weight precision
    peak_flop_per_s: float  # uncapped, for MFU
    hbm_bandwidth_bytes_per_s: float  # sustained
    usable_hbm_bytes: float
    node_gpus: float
    launch_s: float
    protocols: tuple
    latency_scale: float

    @classmethod
    def build(cls, gpu: GPU, weight_bits: float, assumptions: Assumptions) -> Machine:
        return cls(
            gpu=gpu,
            flop_per_s=gpu.sustained_flop_per_s(weight_bits, assumptions.native_fp4),
            peak_flop_per_s=gpu.peak_flop_per_s(weight_bits, assumptions.native_fp4),
            hbm_bandwidth_bytes_per_s=gpu.sustained_hbm_bandwidth_bytes_per_s,
            usable_hbm_bytes=gpu.hbm_capacity_bytes * (1.0 - assumptions.memory_reserve_fraction),
            node_gpus=float(gpu.scale_up_domain_gpus),
            launch_s=gpu.kernel_launch_latency_s * assumptions.launch_latency_scale,
            protocols=protocols_for(assumptions.nccl_latency_model),
            latency_scale=assumptions.collective_latency_scale,
        )

    def tensor_group(self, degree, two_d: bool):
        """(ranks R, nodes M, parallel reductions) of a tensor-parallel group of ``degree`` (A5)."""
        if two_d:
            ranks = np.sqrt(degree)
            nodes = np.sqrt(np.ceil(degree / self.node_gpus))
        else:
            ranks = degree
            nodes = np.ceil(degree / self.node_gpus)
        return ranks, nodes

    def collective(self, ranks, nodes, kind=ALLREDUCE) -> CollectiveCost:
        return CollectiveCost(ranks, nodes, self.gpu, kind, self.protocols, self.latency_scale)


@dataclass(frozen=True)
class Breakdown:
    """Where the time of one token goes, per configuration (arrays or scalars, seconds).

    The parts in ``ADDITIVE_PARTS`` add up to ``latency_s``: the read and arithmetic parts
    belong to whichever of memory and compute is binding; ``memory_time_s`` and
    ``compute_time_s`` hold both sides in full.
    """

    latency_s: object
    kernel_launch_s: object
    collective_latency_s: object
    collective_bandwidth_s: object
    weight_read_s: object
    kv_read_s: object
    activation_read_s: object
    arithmetic_s: object
    memory_time_s: object
    compute_time_s: object
    flop: object

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class StepModel:
    """One model on one GPU under some assumptions: evaluates layouts for (N, B) arrays."""

    def __init__(self, work: Workload, gpu: GPU, assumptions: Assumptions) -> None:
        self.work = work
        self.assumptions = assumptions
        self.machine = Machine.build(gpu, work.weight_bits, assumptions)
        m = self.machine
        self.kernel_s = work.layers * assumptions.kernels_per_layer * m.launch_s
        self.weights_bytes = work.total_params * work.weight_bytes

    # --- feasibility ----------------------------------------------------------------------
    def fits(self, N, B, p, context):
        """Weights plus KV cache fit in HBM, and the pipeline is not deeper than N or B."""
        w = self.work
        kv_batch = B if self.assumptions.kv_capacity_whole_batch else B / p
        need = self.weights_bytes + w.kv_cache_bytes(context, kv_batch)
        return (N * self.machine.usable_hbm_bytes >= need) & (p <= np.minimum(N, B))

    # --- the parts of a layout ------------------------------------------------------------
    def pipeline_part(self, N, B, S, context, p, detail=False):
        """Everything that depends on the pipeline degree but not on the attention divisor."""
        w, m = self.work, self.machine
        ab = w.activation_bytes
        b = B / p
        t = N / p
        tokens = b * S
        out = {"b": b, "t": t, "tokens": tokens}
        coll = {True: 0.0, False: 0.0}
        coll_terms = {True: [0.0, 0.0], False: [0.0, 0.0]}
        shared_lat = 0.0
        shared_bw = 0.0
        ff_weight = 0.0
        ff_act = 0.0
        ep_min = self.assumptions.expert_parallel_min_batch_per_sparsity
        for g in w.groups:
            if g.experts > 1:
                e = np.where(b < ep_min * g.sparsity, 1.0, np.minimum(t, g.experts))
            else:
                e = 1.0
            t_ff = np.maximum(1.0, t / e)
            for two_d in (True, False):
                ranks, nodes = m.tensor_group(t_ff, two_d)
                cc = m.collective(ranks, nodes)
                per_rank = g.active / (t / ranks)
                words = [per_rank * g.matrices_out * w.d_model]
                if two_d:
                    words.insert(0, per_rank * g.matrices_in * g.d_ff)
                for word in words:
                    nbytes = word * tokens * ab
                    if detail:
                        lat, bw, _ = cc.terms(nbytes)
                        coll_terms[two_d][0] = coll_terms[two_d][0] + g.layers * lat
                        coll_terms[two_d][1] = coll_terms[two_d][1] + g.layers * bw
                    else:
                        coll[two_d] = coll[two_d] + g.layers * cc.time(nbytes)
            if g.experts > 1:
                r = np.minimum(g.active, e)
                a2a = m.collective(r, np.ceil(r / m.node_gpus), ALLTOALL)
                nbytes = w.d_model * tokens * r * ab / t
                if detail:
                    lat, bw, _ = a2a.terms(nbytes)
                    shared_lat = shared_lat + 2 * g.layers * lat
                    shared_bw = shared_bw + 2 * g.layers * bw
                else:
                    shared_lat = shared_lat + 2 * g.layers * a2a.time(nbytes)
            wt, ac = w.ff_bytes(g, tokens, t_ff)
            ff_weight = ff_weight + g.layers * wt
            ff_act = ff_act + g.layers * ac
        # pipeline: p - 1 point-to-point sends between stages (2 ranks on 2 nodes)
        p2p = m.collective(2.0, 2.0, P2P)
        nbytes = w.d_model * tokens * ab / t
        if detail:
            lat, bw, _ = p2p.terms(nbytes)
            shared_lat = shared_lat + (p - 1.0) * lat
            shared_bw = shared_bw + (p - 1.0) * bw
        else:
            shared_lat = shared_lat + (p - 1.0) * p2p.time(nbytes)
        bw_total = N * m.hbm_bandwidth_bytes_per_s
        out["kv_s"] = p * w.kv_cache_bytes(context, b) / bw_total
        out["ff_weight_s"] = p * (ff_weight + w.unembedding_bytes) / bw_total
        out["ff_act_s"] = p * ff_act / bw_total
        ff, ctx, proj = w.flop(B, S, context)
        out["ffctx_compute_s"] = (ff + ctx) / (N * m.flop_per_s)
        out["proj_compute_s"] = proj / (N * m.flop_per_s)
        out["flop"] = ff + ctx + proj
        if detail:
            out["coll_terms"] = coll_terms
            out["shared_terms"] = (shared_lat, shared_bw)
        else:
            out["coll"] = coll
            out["shared"] = shared_lat
        return out

    def attention_part(self, part, adiv, two_d, detail=False):
        """Attention collectives and reads for divisor ``adiv`` (t_at = t / a)."""
        w, m = self.work, self.machine
        t_at = part["t"] / adiv
        ranks, nodes = m.tensor_group(t_at, two_d)
        cc = m.collective(ranks, nodes)
        if two_d:
            par = t_at / ranks
            words = (w.d_model / par, w.attention_heads_words / par)
        else:
            words = (w.d_model,)
        lat = 0.0
        bw = 0.0
        for word in words:
            nbytes = word * part["tokens"] * w.activation_bytes
            if detail:
                l_, b_, _ = cc.terms(nbytes)
                lat = lat + w.layers * l_
                bw = bw + w.layers * b_
            else:
                lat = lat + w.layers * cc.time(nbytes)
        return lat, bw

    def attention_memory(self, part, N, p, adiv):
        """(weight, activation) read seconds of attention for divisor ``adiv`` (A5: times a)."""
        w, m = self.work, self.machine
        wt, ac = w.attention_bytes(part["tokens"], part["t"] / adiv)
        scale = p * w.layers * adiv / (N * m.hbm_bandwidth_bytes_per_s)
        return wt * scale, ac * scale

    # --- a whole layout -------------------------------------------------------------------
    def latency(self, N, B, S, context, p, adiv):
        """Token latency of the better of 1-D and 2-D TP for layout (p, a); inf if infeasible."""
        part = self.pipeline_part(N, B, S, context, p)
        total = self.latency_from_part(part, N, p, adiv)
        return np.where(self.fits(N, B, p, context), total, np.inf)

    def latency_from_part(self, part, N, p, adiv):
        """Latency of divisor ``adiv`` given the pipeline part (no feasibility check)."""
        att2, _ = self.attention_part(part, adiv, True)
        att1, _ = self.attention_part(part, adiv, False)
        coll = np.minimum(att2 + part["coll"][True], att1 + part["coll"][False]) + part["shared"]
        aw, aa = self.attention_memory(part, N, p, adiv)
        memory = part["kv_s"] + part["ff_weight_s"] + part["ff_act_s"] + aw + aa
        compute = part["ffctx_compute_s"] + part["proj_compute_s"] * adiv
        return self.kernel_s + coll + np.maximum(memory, compute)

    def breakdown(self, N, B, S, context, p, adiv, two_d) -> Breakdown:
        """The full breakdown of one layout with 1-D or 2-D tensor parallelism."""
        part = self.pipeline_part(N, B, S, context, p, detail=True)
        lat, bw = self.attention_part(part, adiv, two_d, detail=True)
        ff_lat, ff_bw = part["coll_terms"][two_d]
        sh_lat, sh_bw = part["shared_terms"]
        coll_lat = lat + ff_lat + sh_lat
        coll_bw = bw + ff_bw + sh_bw
        aw, aa = self.attention_memory(part, N, p, adiv)
        weight_s = part["ff_weight_s"] + aw
        act_s = part["ff_act_s"] + aa
        kv_s = part["kv_s"]
        memory = weight_s + act_s + kv_s
        compute = part["ffctx_compute_s"] + part["proj_compute_s"] * adiv
        memory_bound = memory >= compute
        total = self.kernel_s + coll_lat + coll_bw + np.maximum(memory, compute)
        ok = self.fits(N, B, p, context)
        zero = np.zeros_like(np.asarray(total, dtype=float))

        def shown(x, keep):
            return np.where(ok, np.where(keep, x + zero, 0.0), np.nan)

        return Breakdown(
            latency_s=np.where(ok, total, np.inf),
            kernel_launch_s=np.where(ok, self.kernel_s + zero, np.nan),
            collective_latency_s=np.where(ok, coll_lat + zero, np.nan),
            collective_bandwidth_s=np.where(ok, coll_bw + zero, np.nan),
            weight_read_s=shown(weight_s, memory_bound),
            kv_read_s=shown(kv_s, memory_bound),
            activation_read_s=shown(act_s, memory_bound),
            arithmetic_s=shown(compute, ~memory_bound),
            memory_time_s=np.where(ok, memory + zero, np.nan),
            compute_time_s=np.where(ok, compute + zero, np.nan),
            flop=part["flop"] + zero,
        )
