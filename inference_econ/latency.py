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
    #: Discrete layouts: 2-D splits into whole ranks (R divides the degree), see discrete.py.
    integer_layouts: bool = False

    @classmethod
    def build(
        cls, gpu: GPU, weight_bits: float, assumptions: Assumptions, integer_layouts: bool = False
    ) -> Machine:
        return cls(
            gpu=gpu,
            flop_per_s=gpu.sustained_flop_per_s(weight_bits, assumptions.native_fp4),
            peak_flop_per_s=gpu.peak_flop_per_s(weight_bits, assumptions.native_fp4),
            hbm_bandwidth_bytes_per_s=gpu.sustained_hbm_bandwidth_bytes_per_s,
            usable_hbm_bytes=gpu.hbm_capacity_bytes * (1.0 - assumptions.memory_reserve_fraction),
            node_gpus=float(gpu.scale_up_domain_gpus),
            launch_s=gpu.kernel_launch_latency_s * assumptions.launch_latency_scale,
            protocols=protocols_for(assumptions.nccl_latency_model, assumptions.nvls and gpu.nvls),
            latency_scale=assumptions.collective_latency_scale * gpu.collective_latency_scale,
            integer_layouts=integer_layouts,
        )

    def tensor_group(self, degree, two_d: bool):
        """(ranks R, nodes M, parallel reductions) of a tensor-parallel group of ``degree`` (A5)."""
        if two_d and self.integer_layouts:
            # whole ranks: R x (degree / R) with R the larger factor of the most nearly square
            # split (at least sqrt(degree), so never cheaper than the paper's R = sqrt(degree));
            # the group spans the paper's sqrt(nodes) scaled by R / sqrt(degree)
            ranks = square_split(degree)
            nodes = np.clip(
                np.sqrt(np.ceil(degree / self.node_gpus)) * ranks / np.sqrt(degree),
                1.0,
                np.maximum(ranks, 1.0),
            )
        elif two_d:
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


def square_split(n):
    """For whole numbers n, the smallest divisor of n that is at least sqrt(n): the larger
    side of the most nearly square R x (n / R) split (n itself for a prime)."""
    n_arr = np.asarray(np.rint(n), dtype=np.int64)
    out = np.ones(n_arr.shape)
    for value in np.unique(n_arr):
        if value <= 1:
            continue
        root = int(np.ceil(np.sqrt(value) - 1e-9))
        out[n_arr == value] = next(d for d in range(root, value + 1) if value % d == 0)
    return out if out.ndim else float(out)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def expert_degree(b, t, experts, min_micro_batch, integer=False):
    """Expert-parallel degree (A5): min(t, E), but 1 while the micro-batch is below the minimum.

    With ``integer`` (discrete layouts) the degree must divide both the experts and the tensor
    degree: gcd(t, E). Scalar or uniform conditions keep the result as small as its inputs (a
    row of the grid rather than the whole grid).
    """
    if experts <= 1:
        return 1.0
    full = (
        np.gcd(np.rint(t).astype(np.int64), experts).astype(float)
        if integer
        else np.minimum(t, experts)
    )
    small = np.asarray(b < min_micro_batch)
    if small.all():
        return 1.0
    if not small.any():
        return full
    return np.where(small, 1.0, full)


class _Memo:
    """Compute-once values for one block of points and one pipeline degree (``None``: no cache)."""

    def __init__(self, cache: dict | None) -> None:
        self.cache = cache

    def __call__(self, key, make):
        if self.cache is None:
            return make()
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]


class StepModel:
    """One model on one GPU under some assumptions: evaluates layouts for (N, B) arrays."""

    def __init__(
        self, work: Workload, gpu: GPU, assumptions: Assumptions, integer_layouts: bool = False
    ) -> None:
        self.work = work
        self.assumptions = assumptions
        self.machine = Machine.build(gpu, work.weight_bits, assumptions, integer_layouts)
        m = self.machine
        self.kernel_s = work.layers * assumptions.kernels_per_layer * m.launch_s
        self.dense_layers = sum(g.layers for g in work.groups if g.experts <= 1)
        #: Prefill passes carry many tokens per request: experts saturate on tokens, not requests.
        self.expert_parallel_by_tokens = False
        self.weights_bytes = work.total_params * work.weight_bytes
        # node-aligned layouts (Part B): whole pipeline degrees dividing the layers and whole
        # attention degrees dividing the heads, searched besides the paper's log grids
        aligned = assumptions.node_aligned_layouts
        self.extra_pipeline_degrees = (
            tuple(d for d in _divisors(work.layers) if d > 1) if aligned else ()
        )
        self.extra_attention_degrees = (
            tuple(d for d in _divisors(int(work.tp_heads)) if d > 1) if aligned else ()
        )

    # --- feasibility ----------------------------------------------------------------------
    def fits(self, N, B, p, context):
        """Weights plus KV cache fit in HBM, and the pipeline is not deeper than N or B."""
        w = self.work
        # in float64 whatever the search's precision: a point is feasible or not, exactly
        N, B, p = (np.asarray(x, dtype=np.float64) for x in (N, B, p))
        kv_batch = B if self.assumptions.kv_capacity_whole_batch else B / p
        need = self.weights_bytes + w.kv_cache_bytes(context, kv_batch)
        return (N * self.machine.usable_hbm_bytes >= need) & (p <= np.minimum(N, B))

    # --- the parts of a layout ------------------------------------------------------------
    def pipeline_part(self, N, B, S, context, p, detail=False, cache=None):
        """Everything that depends on the pipeline degree but not on the attention divisor.

        ``cache`` (a dict kept by the caller for one block of points and one ``p``) holds the
        collective structures, which do not depend on the tokens per pass ``S``.
        """
        memo = _Memo(cache)
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
            basis = tokens if self.expert_parallel_by_tokens else b
            e = memo(
                ("e", id(g)),
                lambda g=g, basis=basis: expert_degree(
                    basis, t, g.experts, ep_min * g.sparsity, m.integer_layouts
                ),
            )
            t_ff = memo(("t_ff", id(g)), lambda e=e: np.maximum(1.0, t / e))
            for two_d in (True, False):
                ranks, nodes = m.tensor_group(t_ff, two_d)
                cc = memo(("ff", id(g), two_d), lambda r=ranks, n=nodes: m.collective(r, n))
                # every active expert's output is reduced; shared experts too (Part B)
                per_rank = (g.active + g.shared) / (t / ranks)
                words = [per_rank * g.matrices_out * w.d_model]
                if two_d:
                    words.insert(0, per_rank * g.matrices_in * g.d_ff)
                for word in words:
                    if detail:
                        lat, bw, _ = cc.terms(word * tokens * ab)
                        coll_terms[two_d][0] = coll_terms[two_d][0] + g.layers * lat
                        coll_terms[two_d][1] = coll_terms[two_d][1] + g.layers * bw
                    else:
                        coll[two_d] = coll[two_d] + cc.time_linear(word * ab, tokens, g.layers)
            if g.experts > 1:
                r = np.minimum(g.active, e)
                a2a = memo(
                    ("a2a", id(g)), lambda r=r: m.collective(r, np.ceil(r / m.node_gpus), ALLTOALL)
                )
                per_token = w.d_model * r * ab / t
                if detail:
                    lat, bw, _ = a2a.terms(per_token * tokens)
                    shared_lat = shared_lat + 2 * g.layers * lat
                    shared_bw = shared_bw + 2 * g.layers * bw
                else:
                    shared_lat = shared_lat + a2a.time_linear(per_token, tokens, 2 * g.layers)
            wt, ac = w.ff_bytes(g, tokens, t_ff)
            ff_weight = ff_weight + g.layers * wt
            ff_act = ff_act + g.layers * ac
        # pipeline: p - 1 point-to-point sends between stages (2 ranks on 2 nodes)
        p2p = m.collective(2.0, 2.0, P2P)
        if detail:
            lat, bw, _ = p2p.terms(w.d_model * tokens * ab / t)
            shared_lat = shared_lat + (p - 1.0) * lat
            shared_bw = shared_bw + (p - 1.0) * bw
        elif np.any(np.asarray(p) > 1.0):
            shared_lat = shared_lat + p2p.time_linear(w.d_model * ab / t, tokens, p - 1.0)
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
            # what the attention divisor does not change, summed once
            out["coll_with_shared"] = {k: v + shared_lat for k, v in coll.items()}
            out["memory_base_s"] = out["kv_s"] + out["ff_weight_s"] + out["ff_act_s"]
        return out

    def attention_part(self, part, adiv, two_d, detail=False, cache=None, key=None):
        """Attention collectives and reads for divisor ``adiv`` (t_at = t / a)."""
        w, m = self.work, self.machine
        t_at = part["t"] / adiv
        if not detail and np.all(t_at <= 1.0):
            return 0.0, 0.0  # one rank per attention group: no attention collectives
        ranks, nodes = m.tensor_group(t_at, two_d)
        cc = _Memo(cache if key is not None else None)(
            ("att", key, two_d), lambda: m.collective(ranks, nodes)
        )
        if two_d:
            par = t_at / ranks
            words = (w.d_model / par, w.attention_heads_words / par)
        else:
            words = (w.d_model,)
        # attention data parallelism (Part B): each of the a replicas reduces only its share
        tokens = (
            part["tokens"] / adiv if self.assumptions.attention_data_parallel else part["tokens"]
        )
        lat = 0.0
        bw = 0.0
        for word in words:
            if detail:
                l_, b_, _ = cc.terms(word * tokens * w.activation_bytes)
                lat = lat + w.layers * l_
                bw = bw + w.layers * b_
            else:
                lat = lat + cc.time_linear(word * w.activation_bytes, tokens, w.layers)
        if (
            self.assumptions.attention_data_parallel
            and self.dense_layers
            and np.any(np.asarray(adiv) > 1.0)
        ):
            # dense feed-forward blocks are tensor-parallel over all t GPUs: gather the
            # replicas' tokens before them and scatter after (two all-to-alls over a ranks)
            redistribute = m.collective(
                adiv, np.clip(np.ceil(part["t"] / m.node_gpus), 1.0, adiv), ALLTOALL
            )
            per_token = w.d_model * w.activation_bytes / part["t"]
            if detail:
                l_, b_, _ = redistribute.terms(per_token * part["tokens"])
                lat = lat + 2 * self.dense_layers * l_
                bw = bw + 2 * self.dense_layers * b_
            else:
                lat = lat + redistribute.time_linear(
                    per_token, part["tokens"], 2 * self.dense_layers
                )
        return lat, bw

    def attention_reads(self, part, N, p, adiv, cache=None, key=None):
        """(weight, activation) read seconds of attention for divisor ``adiv``.

        A5: both are multiplied by a. With attention data parallelism (Part B) each replica
        reads the weights (still a times) but only its own tokens' activations.
        """
        w, m = self.work, self.machine
        memo = _Memo(cache if key is not None else None)
        scale = memo(
            ("scale", key), lambda: p * w.layers * adiv / (N * m.hbm_bandwidth_bytes_per_s)
        )
        act_scale = scale / adiv if self.assumptions.attention_data_parallel else scale
        per_token = memo(
            ("att_io", key),
            lambda: w.attention_activation_bytes_per_token(part["t"] / adiv) * act_scale,
        )
        weights = memo(("att_w", key), lambda: w.attention_matrix_weight_bytes * scale)
        return weights, per_token * part["tokens"]

    def compute_time(self, part, adiv):
        """Arithmetic seconds: projections run a times under the paper's divisor (A5), once
        with attention data parallelism."""
        proj = (
            part["proj_compute_s"]
            if self.assumptions.attention_data_parallel
            else part["proj_compute_s"] * adiv
        )
        return part["ffctx_compute_s"] + proj

    # --- a whole layout -------------------------------------------------------------------
    def latency_from_part(self, part, N, p, adiv, cache=None, key=None):
        """Latency of divisor ``adiv`` given the pipeline part (no feasibility check)."""
        return self.latency_by_dims(part, N, p, adiv, both=False, cache=cache, key=key)

    def latency_by_dims(self, part, N, p, adiv, both=True, cache=None, key=None):
        """(2-D TP latency, 1-D TP latency) of divisor ``adiv``, or their minimum."""
        att2, _ = self.attention_part(part, adiv, True, cache=cache, key=key)
        att1, _ = self.attention_part(part, adiv, False, cache=cache, key=key)
        c2 = att2 + part["coll_with_shared"][True]
        c1 = att1 + part["coll_with_shared"][False]
        rest = self._memory_compute(part, N, p, adiv, cache, key)
        if both:
            return self.kernel_s + c2 + rest, self.kernel_s + c1 + rest
        return self.kernel_s + np.minimum(c2, c1) + rest

    def _memory_compute(self, part, N, p, adiv, cache=None, key=None):
        weights, acts = self.attention_reads(part, N, p, adiv, cache, key)
        return np.maximum(part["memory_base_s"] + (weights + acts), self.compute_time(part, adiv))

    def breakdown(self, N, B, S, context, p, adiv, two_d) -> Breakdown:
        """The full breakdown of one layout with 1-D or 2-D tensor parallelism."""
        part = self.pipeline_part(N, B, S, context, p, detail=True)
        lat, bw = self.attention_part(part, adiv, two_d, detail=True)
        ff_lat, ff_bw = part["coll_terms"][two_d]
        sh_lat, sh_bw = part["shared_terms"]
        coll_lat = lat + ff_lat + sh_lat
        coll_bw = bw + ff_bw + sh_bw
        aw, aa = self.attention_reads(part, N, p, adiv)
        weight_s = part["ff_weight_s"] + aw
        act_s = part["ff_act_s"] + aa
        kv_s = part["kv_s"]
        memory = weight_s + act_s + kv_s
        compute = self.compute_time(part, adiv)
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


def prefill_step_model(
    work_for, gpu: GPU, assumptions: Assumptions, integer_layouts: bool = False
) -> StepModel:
    """The step model of a prefill pass: causal attention (the mean context over the pass) and
    expert parallelism decided by tokens, since one long prompt saturates the experts.

    ``work_for(assumptions)`` compiles the workload under the adjusted assumptions.
    """
    a = assumptions.replace(mean_context_over_pass=True)
    model = StepModel(work_for(a), gpu, a, integer_layouts=integer_layouts)
    model.expert_parallel_by_tokens = True
    return model
