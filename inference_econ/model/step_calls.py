"""The collectives of a step (docs/model.md §A5, §B1, §B2, §B11): each layer group's expert
split (the expert degree and the feed-forward tensor degree left), its reductions, and for a
MoE group the all-to-alls that dispatch its tokens to the experts and combine them; the
attention's reductions over its tensor group, and with attention data parallelism the
all-to-alls that move tokens to and from the dense layers. Each is kept as ``CollectiveCalls``
(summed as totals, or split into latency and bandwidth terms), their structures in the
``StepCache`` of a search block."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .assumptions import Assumptions
from .collectives import ALLTOALL, EXPERT_ALLTOALL, CollectiveCost, counted
from .machine import Machine, mx_gemm_bits
from .overlap import overlapped_s, runs_deepep
from .values import Floats, add_into
from .workload import Workload, embedding_weight_bytes

#: The names of a step's reductions (their operations in model/operations.py): with 1-D
#: tensor parallelism one all-reduce of the block's output; with 2-D, the feed-forward's inner
#: activations and the attention's heads are reduced too, before the output (§A5).
FF_REDUCTIONS_1D = ("all-reduce (feed-forward)",)
FF_REDUCTIONS_2D = ("all-reduce (feed-forward inner, 2-D)", "all-reduce (feed-forward)")
ATTENTION_REDUCTIONS_1D = ("all-reduce (attention)",)
ATTENTION_REDUCTIONS_2D = ("all-reduce (attention)", "all-reduce (attention heads, 2-D)")
#: A dense feed-forward block's reduction where it runs with the attention's ranks (§F7).
DENSE_REDUCTION = "all-reduce (dense feed-forward)"
#: The reduction that combines a MoE group's experts where the engine exchanges no tokens
#: (``StepCalls.expert_exchange``, §F7): every rank holds every token.
EXPERT_COMBINE_REDUCTION = "all-reduce (expert combine)"
#: How the names of the calls that move a MoE group's tokens begin (``all_to_all``,
#: ``_gather_scatter``): its token exchange, which two-batch overlap hides (§F7).
EXCHANGE_OPERATIONS = ("expert dispatch", "expert combine")


def expert_degree(b, t, experts, min_micro_batch, integer=False, copies=0):
    """Expert-parallel degree (§A5): min(t, E), but 1 while the micro-batch is below the minimum.

    With ``integer`` (discrete layouts) the degree must divide both the experts and the tensor
    degree: gcd(t, E), or gcd(t, E + ``copies``) where that is wider: the engines' balancers
    split the slots, experts and redundant copies (EPLB), evenly over the ranks
    (``moe.balanced_slots``: 288 slots over EP72 of DeepSeek's 256 experts; copies that split
    no wider are memory only). Scalar or uniform conditions keep the result as small as its
    inputs (a row of the grid rather than the whole grid).
    """
    if experts <= 1:
        return 1.0
    if integer:
        whole = np.rint(t).astype(np.int64)
        full = np.maximum(np.gcd(whole, int(experts)), np.gcd(whole, int(experts + copies)))
        full = full.astype(float)
    else:
        full = np.minimum(t, experts)
    small = np.asarray(b < min_micro_batch)
    if small.all():
        return 1.0
    if not small.any():
        return full
    return np.where(small, 1.0, full)


def whole_expert_degrees(experts, t: int, copies=0) -> set[int]:
    """The degrees a whole layout of tensor degree ``t`` splits its MoE groups' experts at
    once batches are large (§A5 on whole layouts: gcd(t, E + copies)), one per distinct group;
    empty for a dense model. ``experts``: each layer group's routed experts (1 for a dense
    one); ``copies``: the redundant copies of each MoE layer (EPLB)."""
    return {
        int(expert_degree(math.inf, t, int(e), 0, integer=True, copies=int(copies)))
        for e in experts
        if e > 1
    }


def expert_remote_share(g, nodes):
    """Share of a token's k expert copies that cross the network when the kernel sends one
    copy per destination node and forwards it inside the node (DeepEP's normal kernels, §B11):
    the distinct other nodes its experts land on, M·(1 − (1 − 1/M)^k) nodes in all (uniform
    routing) of which (M − 1)/M are remote, at most the node limit of node-limited routing
    (a token's experts in ``groups_per_token`` of ``expert_groups`` groups, each group on
    M / groups nodes), per copy."""
    M = np.maximum(np.asarray(nodes, dtype=float), 1.0)
    k = float(g.active)
    distinct = M * (1.0 - (1.0 - 1.0 / M) ** k)
    if g.groups_per_token:
        limit = g.groups_per_token * np.maximum(M / g.expert_groups, 1.0)
        distinct = np.minimum(distinct, limit)
    return distinct * (M - 1.0) / M / k


#: Bytes a weight of the embedding table and the output head takes in an engine (and of a MoE
#: router's gate): 16 bits, the engines building them in the model's dtype and the quantisation
#: recipes leaving lm_head and mlp.gate out; the kernel clock's head format, and what each
#: attention replica holds (``StepCalls.vocabulary_with_attention``, §F8).
VOCABULARY_BYTES_PER_WEIGHT = 2.0


@dataclass(frozen=True)
class CollectiveCalls:
    """``calls`` identical collectives in one step, each moving ``bytes_per_token · tokens``."""

    cost: CollectiveCost
    bytes_per_token: Floats
    tokens: Floats
    calls: Floats
    #: ``cost.folded(bytes_per_token, calls)`` when a search shares it across the tokens per
    #: pass (``StepCache.fold``), else None.
    folded: tuple | None = None
    #: What the calls do (the name of their operation in a step's list, model/operations.py)
    #: and the (ranks, nodes) of the group they run over.
    what: str = ""
    group: tuple = ()

    def time_s(self):
        """Seconds of all the calls, best protocol per point."""
        if self.folded is not None:
            return self.cost.time_folded(self.folded, self.tokens)
        return self.cost.time_linear(self.bytes_per_token, self.tokens, self.calls)

    def terms_s(self):
        """(latency seconds, bandwidth seconds) of all the calls, best protocol per point."""
        lat, bw, _ = self.cost.terms(self.bytes_per_token * self.tokens)
        return counted(self.calls, lat), counted(self.calls, bw)


def total_time_s(calls: tuple[CollectiveCalls, ...]):
    """Seconds of a list of collective calls (0.0 for none). The first call's times are the
    start of the sum (0.0 + t is t: times are never -0.0), and consecutive calls of one cost
    and count share its scaled factors (``CollectiveCost.scaled``): fewer grid operations,
    the same numbers."""
    total = None
    shared = None  # (cost, calls, its scaled factors) of the last call timed unfolded
    for c in calls:
        if c.folded is not None:
            t = c.time_s()
        else:
            if not (shared and shared[0] is c.cost and _same_count(shared[1], c.calls)):
                shared = (c.cost, c.calls, c.cost.scaled(c.calls))
            t = c.cost.time_linear(c.bytes_per_token, c.tokens, c.calls, shared[2])
        total = t if total is None else add_into(total, t)  # each call's times are new arrays
    return 0.0 if total is None else total


def _same_count(a, b) -> bool:
    """Whether two call counts are the same number (arrays never count as the same)."""
    return np.ndim(a) == 0 and np.ndim(b) == 0 and a == b


def total_terms_s(calls: tuple[CollectiveCalls, ...]):
    """(latency, bandwidth) seconds of a list of collective calls."""
    lat, bw = 0.0, 0.0
    for c in calls:
        l_, b_ = c.terms_s()
        lat, bw = lat + l_, bw + b_
    return lat, bw


class StepCache:
    """Values computed once per block of points and pipeline degree, reused across the tokens
    per pass ``S`` and the attention divisors (``None`` as the store: no caching).

    With ``fold`` (a search over several tokens per pass) each collective call's factors that
    do not depend on the tokens are kept too (``CollectiveCost.folded``)."""

    def __init__(
        self, store: dict | None = None, fold: bool = False, feasible=None, points: bool = False
    ) -> None:
        self.store = store
        self.fold = fold and store is not None
        #: The block's feasible points, when its caller sets every other point's latency to
        #: inf whatever the step gives there (the grid search): ``_if_kv_fits`` need not mask
        #: the others.
        self.feasible = feasible if store is not None else None
        #: Whether ``at_points`` fills the tokens in at the points (``feasible``'s shape).
        self.points = points and self.feasible is not None
        self._points: tuple | None = None  # the last array ``at_points`` filled, and its source

    def at_points(self, x):
        """``x`` (the tokens of a pass, a column of the grid) broadcast to the block's points
        as one contiguous array, kept while the same ``x`` is asked for again; ``x`` itself
        off the grid search or when it already has the points' shape. The same numbers: an
        operation of a row of the grid (a collective's factors) with a column costs about
        twice one of a row with a whole array, as numpy iterates such a pair row by row
        (docs/model.md "The search")."""
        if not self.points or self.feasible is None or type(x) is not np.ndarray:
            return x
        shape = np.shape(self.feasible)
        if x.shape == shape or np.broadcast_shapes(x.shape, shape) != shape:
            return x
        if self._points is not None and self._points[0] is x:
            return self._points[1]
        full = np.empty(shape, dtype=x.dtype)
        full[...] = x
        self._points = (x, full)
        return full

    def calls(
        self, key: tuple, cost, bytes_per_token, tokens, calls, what: str = "", group=()
    ) -> CollectiveCalls:
        """``CollectiveCalls(cost, bytes_per_token, tokens, calls)``, its folded factors kept
        under ``key`` when folding (``key`` names the call within the block: the same cost,
        bytes per token and calls for every tokens per pass); the tokens at the block's
        points (``at_points``); ``what`` and ``group`` name the calls and their group."""
        folded = None
        if self.fold:
            folded = self.get(("fold",) + key, lambda: cost.folded(bytes_per_token, calls))
        tokens = self.at_points(tokens)
        return CollectiveCalls(cost, bytes_per_token, tokens, calls, folded, what, group)

    def get(self, key: tuple, make):
        if self.store is None:
            return make()
        if key not in self.store:
            self.store[key] = make()
        return self.store[key]


NO_CACHE = StepCache(None)


class _DivisorCache(StepCache):
    """A block's ``StepCache`` (the same store) whose calls are kept per attention divisor
    ``key`` (their counts depend on it: ``StepCalls.expert_exchange``)."""

    def __init__(self, cache: StepCache, key) -> None:
        self.__dict__.update(vars(cache))
        self.key = key

    def calls(self, key: tuple, *args, **kwargs) -> CollectiveCalls:
        return super().calls(("divisor", self.key) + key, *args, **kwargs)


def _count(g, mask, adiv):
    """A group's calls a step where ``mask`` holds, 0 elsewhere (1.0 for a scalar mask that
    holds), in the divisor's precision."""
    if np.ndim(mask) == 0 or mask.all():
        return float(g.layers)
    a = np.asarray(adiv)
    return g.layers * mask.astype(a.dtype if a.dtype.kind == "f" else float)


def attention_degree(part, adiv, cache: StepCache = NO_CACHE, key=None):
    """The attention tensor degree ``t_at = t / adiv`` of divisor ``adiv`` (§A5) on the step's
    ``part`` (a ``latency.PipelinePart``), kept for the block (the 2-D and 1-D groups and the
    attention reads share it; only read)."""
    return cache.get(("t_at", key), lambda: part.tensor_degree / adiv)


def shared_on_every_gpu(work: Workload, assumptions: Assumptions, dense_with_attention) -> bool:
    """Whether a MoE model's shared experts run whole on every GPU, each on its share of the
    stage's tokens, though its dense layers stay tensor-parallel: SGLang with DeepEP's exchange
    builds them at tensor degree 1 (``shared_experts`` of
    ``python/sglang/srt/models/deepseek_v2.py``, ``tp_size=1`` where the all-to-all backend is
    DeepEP, MoRI or FlashInfer's; its qwen2_moe and glm4_moe likewise), the MoE input scattered
    over the attention group, with or without attention DP. Read where DeepEP's kernels run
    (``runs_deepep``); another library's all-to-all a row states (MoRI, FlashInfer's) keeps
    them tensor-parallel here. An engine whose dense blocks run with the attention runs its
    shared experts there already; another engine's over DeepEP (vLLM's without attention DP)
    keeps them tensor-parallel."""
    profile = assumptions.profile()
    return bool(
        not dense_with_attention
        and profile is not None
        and profile.family == "sglang"
        and runs_deepep(profile, assumptions)
        and any(g.experts > 1 and g.shared for g in work.groups)
    )


class StepCalls:
    """The collectives of one model's steps on one machine: its ``StepModel`` builds every
    step's from here (``pipeline_part``, ``attention_calls``). ``by_tokens`` decides the
    expert degree by the tokens of a pass rather than the requests (prefill)."""

    #: Whether a MoE model's dense feed-forward blocks (its dense layers' and its shared
    #: experts) run with the attention's layout under attention data parallelism (the
    #: engine's ``dense_under_attention_dp``, §F7): each replica on its own tokens at the
    #: replica's tensor degree, their weights on every replica, nothing exchanged between
    #: replicas (else tensor-parallel over the stage).
    dense_with_attention: bool
    vocabulary_with_attention: bool

    def __init__(
        self, work: Workload, machine: Machine, assumptions: Assumptions, by_tokens: bool
    ) -> None:
        self.work = work
        self.machine = machine
        self.assumptions = assumptions
        self.by_tokens = by_tokens
        #: Layers without routed experts (their feed-forward blocks are dense).
        self.dense_layers = sum(g.layers for g in work.groups if g.experts <= 1)
        profile = assumptions.profile()
        self.dense_with_attention = bool(
            assumptions.attention_data_parallel
            and profile is not None
            and profile.dense_under_attention_dp == "data_parallel"
            and any(g.experts > 1 for g in work.groups)
        )
        #: Shared experts whole on every GPU; outside the stage's tensor group (either way).
        self.shared_on_every_gpu = shared_on_every_gpu(work, assumptions, self.dense_with_attention)
        self.shared_with_attention = self.dense_with_attention or self.shared_on_every_gpu
        #: Whether each attention replica holds and runs its own embedding table and output
        #: head under attention data parallelism (the engine's
        #: ``vocabulary_under_attention_dp``, §F8): at 16 bits, the head read by every replica
        #: for its own sequences (else split over the stage, as without replicas); a dense
        #: model's too, the engines building them so for any model under attention DP.
        self.vocabulary_with_attention = bool(
            assumptions.attention_data_parallel
            and profile is not None
            and profile.vocabulary_under_attention_dp == "data_parallel"
        )
        #: Whether the MoE groups' tokens move as the engine's communication strategy picks
        #: them for the attention divisor (``expert_exchange``) rather than by §B11's
        #: all-to-all on every layout (``all_to_all``, part of the pipeline part); an engine
        #: running DeepEP's kernels (``runs_deepep``: two micro-batches a step) takes §B11's.
        self.exchange_by_method = bool(
            profile is not None
            and profile.expert_exchange_by_method
            and not runs_deepep(profile, assumptions)
            and any(g.experts > 1 for g in work.groups)
        )
        #: No engine: the ideal bound, whose exchange moves the fewest bytes any kernel does.
        self.ideal = profile is None
        #: Whether an exchange by all-gather carries the tokens in the GEMMs' input format.
        self.gathered_quantised = profile is None or bool(profile.gathered_tokens_quantised)
        #: Where the engine runs the one-sided all-to-all (``one_sided_exchange``, §F7): 2 at
        #: any expert degree, 1 above a token's top-k, 0 never.
        self.one_sided_rule = int(profile.one_sided_exchange) if profile is not None else 2

    def vocabulary_replica_bytes(self, adiv, params):
        """Bytes of ``params`` weights of the embedding table or output head held (or read)
        beyond what the weights count where each of ``adiv`` attention replicas holds its own
        copy at 16 bits (``vocabulary_with_attention``, §F8): ``adiv`` such copies for the one
        the weights count at the tables' format; 0 otherwise, or with one replica."""
        if not self.vocabulary_with_attention:
            return 0.0
        a = np.asarray(adiv, dtype=float)
        copies = a * VOCABULARY_BYTES_PER_WEIGHT - embedding_weight_bytes(self.work)
        out = np.where(a > 1.0, params * copies, 0.0)
        return float(out) if out.ndim == 0 else out

    def split(self, gi, g, b, t, tokens, cache: StepCache):
        """(expert degree e, feed-forward tensor degree t_ff = max(1, t/e)) of a group (§A5)."""
        basis = tokens if self.by_tokens else b
        ep_min = self.assumptions.expert_parallel_min_batch_per_sparsity * g.sparsity
        integer = self.machine.integer_layouts
        copies = self.work.redundant_experts
        e = cache.get(
            ("e", gi), lambda: expert_degree(basis, t, g.experts, ep_min, integer, copies)
        )
        t_ff = cache.get(("t_ff", gi), lambda: np.maximum(1.0, t / e))
        return e, t_ff

    def reductions(self, gi, g, t, t_ff, tokens, two_d: bool, cache: StepCache) -> list:
        """The feed-forward reductions of a group: every active expert's output is reduced,
        shared experts too (§A5, §B2); 2-D also reduces the inner activations. Under an engine
        profile a routed group's 1-D reduction is one d-wide row a token (§F7 "One reduction
        of the combined experts"): the fused MoE sums each token's top-k outputs on its GPU
        and the shared experts' is added before the one all-reduce."""
        w, m = self.work, self.machine
        names = FF_REDUCTIONS_2D if two_d else FF_REDUCTIONS_1D
        if self.dense_with_attention and g.experts <= 1:
            # reduced over the attention's ranks (``attention``): none over the stage, the
            # group's place in the list kept by calls over one rank, which cost nothing
            one = cache.get(("ff_one",), lambda: m.collective(1.0, 1.0))
            return [
                cache.calls(("ff", gi, two_d, i), one, 0.0, tokens, g.layers, what, (1.0, 1.0))
                for i, what in enumerate(names)
            ]

        def structure():  # what does not depend on the tokens: kept for the block
            spanned = cache.get(("ff_nodes", gi), lambda: m.nodes_spanned(t_ff))  # 2-D and 1-D
            ranks, nodes = m.tensor_group(t_ff, two_d, spanned)
            cc = cache.get(
                ("ff", gi, two_d), lambda: m.collective(ranks, nodes, where=cache.feasible)
            )
            per_rank = (g.active + g.shared) / (t / ranks)
            combined = g.experts > 1 and self.assumptions.profile() is not None
            outputs = (1.0 / (t / ranks)) if combined else per_rank
            words = [outputs * g.matrices_out * w.d_model]
            if two_d:
                words.insert(0, per_rank * g.matrices_in * g.d_ff)
            return cc, [word * w.bytes_per_activation for word in words], (ranks, nodes)

        cc, per_token, group = cache.get(("ff_calls", gi, two_d), structure)
        return [
            cache.calls(("ff", gi, two_d, i), cc, x, tokens, g.layers, what, group)
            for i, (x, what) in enumerate(zip(per_token, names))
        ]

    def all_to_all(
        self, gi, g, e, t, tokens, cache: StepCache, per_rank: bool = False, calls=None
    ) -> list[CollectiveCalls]:
        """Dispatch and combine of a MoE group. §A5: two all-to-alls over r = min(k, e) ranks.
        §B11 (``expert_all_to_all``): over all e expert-parallel ranks on ⌈e/G⌉ nodes, each
        token's k copies (one per chosen expert, as low-latency decode kernels send them; in
        prefill one per destination node, forwarded inside it, within the node limit),
        dispatched in the GEMMs' input format and combined in the activations'. ``per_rank``:
        one copy per destination rank instead, e·(1 − (1 − 1/e)^k) of them under uniform
        routing (TensorRT-LLM's NVLink one-sided kernel, §F7). ``calls``: the count of each
        (default the group's layers; ``expert_exchange`` masks it by layout)."""
        w, m = self.work, self.machine
        calls = g.layers if calls is None else calls
        if not self.assumptions.expert_all_to_all:
            r = np.minimum(g.active, e)
            r = float(r) if np.ndim(r) == 0 else r  # a numpy float64 would make the search double
            group = cache.get(("a2a_group", gi), lambda: (r, np.ceil(r / m.node_gpus)))
            a2a = cache.get(("a2a", gi), lambda: m.collective(group[0], group[1], ALLTOALL))
            experts = g.active if self.assumptions.all_to_all_bytes_all_active else r
            per_token = cache.get(
                ("a2a_bytes", gi), lambda: w.d_model * experts * w.bytes_per_activation / t
            )
            what = "expert dispatch and combine"
            return [cache.calls(("a2a", gi), a2a, per_token, tokens, 2 * calls, what, group)]
        if self._gathers_tokens():
            return self._gather_scatter(gi, g, e, tokens, cache, calls)
        nodes = np.ceil(e / m.node_gpus)
        k = float(g.active)
        ranks = np.minimum(k, e * (1.0 - (1.0 - 1.0 / np.maximum(e, 1.0)) ** k))
        # the ideal bound (no engine) moves the fewest bytes any kernel does: a token once to
        # each rank its experts land on, and once over the network to each such other domain
        per_rank = per_rank or self.ideal
        share = None
        if self.by_tokens or self.ideal:  # a network copy per destination domain, forwarded inside
            share = expert_remote_share(g, nodes) * (k / ranks if per_rank else 1.0)
        a2a = cache.get(
            ("a2a", gi),
            lambda: m.collective(
                e, nodes, EXPERT_ALLTOALL, inter_share=share, prefill=self.by_tokens
            ),
        )
        dispatch = self._dispatch_bytes()

        def bytes_per_token():
            copies = w.d_model * (ranks if per_rank else k) / t  # elements a token, each GPU
            return copies * dispatch, copies * w.bytes_per_activation

        sent, combined = cache.get(("a2a_bytes", gi, per_rank), bytes_per_token)
        at, group = ("a2a", gi, per_rank), (e, nodes)
        return [
            cache.calls(at + (0,), a2a, sent, tokens, calls, "expert dispatch", group),
            cache.calls(at + (1,), a2a, combined, tokens, calls, "expert combine", group),
        ]

    def _dispatch_bytes(self) -> float:
        """Bytes per element the expert dispatch carries: the GEMMs' activation operand where
        it is narrower than the activations (§B11), except a block-scaled FP8 MoE's under an
        engine that quantises its activations inside the fused MoE (the profile's
        ``block_fp8_dispatch_quantised``, §F7), and MX-format experts on a chip that runs them
        as BF16 GEMMs (``mx_gemm_bits``: Hopper's Triton MoE takes the gathered BF16 tokens),
        which exchange the activations."""
        w = self.work
        if w.dispatch_bytes_per_element is None:
            return w.bytes_per_activation
        gemm = w.gemm_bits
        if gemm is not None and mx_gemm_bits(self.machine.gpu, w.weight_bits, gemm) > gemm:
            return w.bytes_per_activation
        profile = self.assumptions.profile()
        unquantised = profile is not None and not profile.block_fp8_dispatch_quantised
        if w.weight_block_scaled and unquantised:
            return w.bytes_per_activation
        return w.dispatch_bytes_per_element

    def _gathers_tokens(self) -> bool:
        """Whether an engine moves a MoE group's tokens by an all-gather and a reduce-scatter
        rather than an all-to-all (§F7 "Dispatch and combine by the engine's method"):
        TensorRT-LLM's ``CommunicationFactory.create_strategy`` falls back to
        ``AllGatherReduceScatter`` where no all-to-all kernel runs on the part (its NVLink
        one- and two-sided kernels need NVLink, DeepEP NVLink or RDMA): PCIe cards without
        NVLink bridges. Only under an engine profile; the roofline step keeps §B11's."""
        gpu = self.machine.gpu
        pcie = gpu.interconnect == "pcie" and gpu.nvlink_bridge_gpus <= 1
        return pcie and self.assumptions.profile() is not None

    def _gather_scatter(
        self, gi, g, e, tokens, cache: StepCache, calls=None
    ) -> list[CollectiveCalls]:
        """Dispatch and combine of a MoE group as an all-gather and a reduce-scatter over ``e``
        ranks (its expert-parallel ranks under ``_gathers_tokens``, the stage's under
        ``expert_exchange``; ``calls`` as ``all_to_all``'s): every rank gathers every token of the
        step in the format the expert GEMMs take (TensorRT-LLM quantises before the gather)
        and reduce-scatters the layer's output for every token in the activations' precision,
        so each rank's message is all ``tokens``' rows, d wide (NCCL's ring: (e − 1)/e of it
        crosses its links, the library protocols' cost of §A4/§C1)."""
        w, m = self.work, self.machine
        calls = g.layers if calls is None else calls
        nodes = np.ceil(e / m.node_gpus)
        cost = cache.get(("gather", gi), lambda: m.collective(e, nodes, ALLTOALL))
        dispatch = self._dispatch_bytes() if self.gathered_quantised else w.bytes_per_activation
        group = (e, nodes)
        return [
            cache.calls(
                ("gather", gi, 0), cost, w.d_model * dispatch, tokens, calls,
                "expert dispatch (all-gather)", group,
            ),
            cache.calls(
                ("gather", gi, 1), cost, w.d_model * w.bytes_per_activation, tokens, calls,
                "expert combine (reduce-scatter)", group,
            ),
        ]  # fmt: skip

    def expert_exchange(self, part, adiv, cache: StepCache, key=None) -> list[list]:
        """The calls that move each MoE group's tokens (one list a group, in group order)
        under the engine's communication strategy (``exchange_by_method``, §F7) for divisor
        ``adiv``; empty without it (``all_to_all`` is then part of the pipeline part). With
        attention data parallelism (``adiv`` > 1) the NVLink one-sided all-to-all, one copy
        per destination rank, where the GPU has it (``_one_sided``), the expert ranks share
        one NVLink domain and the experts are not tensor-split (and where the profile's
        ``one_sided_exchange`` allows it: at any degree, above a token's top-k, or never), else
        an all-gather and a reduce-scatter over the stage's t ranks
        (``AllGatherReduceScatter``; "AlltoAll cannot support MoE TP"). Without it no
        exchange: every rank holds every token and one all-reduce of the combined output
        over the e expert ranks sums the experts' shares. Arrays of layouts take each by
        its count (0 where another applies)."""
        if not self.exchange_by_method:
            return []
        cache = cache if key is not None else NO_CACHE  # the counts are the divisor's
        keyed = _DivisorCache(cache, key)
        b, t, tokens = part.micro_batch, part.tensor_degree, part.tokens
        dp = bool(self.assumptions.attention_data_parallel)
        spread = np.asarray(dp) & (np.asarray(adiv) > 1.0)
        out = []
        for gi, g in enumerate(self.work.groups):
            if g.experts <= 1:
                continue
            e, t_ff = self.split(gi, g, b, t, tokens, cache)
            one_domain = np.asarray(e) <= self.machine.node_gpus  # MNNVL across every rank
            a2a = spread & self._one_sided() & (np.asarray(t_ff) <= 1.0) & one_domain
            if self.one_sided_rule < 2:  # TensorRT-LLM before 1.2 above the top-k; vLLM never
                a2a = a2a & (np.asarray(e) > g.active) & (self.one_sided_rule > 0)
            calls: list = []
            if np.any(a2a):
                calls += self.all_to_all(gi, g, e, t, tokens, keyed, True, _count(g, a2a, adiv))
            if np.any(spread & ~a2a):
                n = _count(g, spread & ~a2a, adiv)
                calls += self._gather_scatter(gi, g, t, tokens, keyed, n)
            if np.any(~spread):
                calls += self._combine(gi, g, e, tokens, keyed, _count(g, ~spread, adiv))
            out.append(calls)
        return out

    def _combine(self, gi, g, e, tokens, cache, calls) -> list[CollectiveCalls]:
        """The all-reduce of a MoE group's combined output over its ``e`` expert ranks where
        no tokens are exchanged (``expert_exchange``): one d-wide row a token."""
        w, m = self.work, self.machine
        nodes = np.ceil(e / m.node_gpus)
        cost = cache.get(("combine", gi), lambda: m.collective(e, nodes, where=cache.feasible))
        per_token = w.d_model * w.bytes_per_activation
        group = (e, nodes)
        what = EXPERT_COMBINE_REDUCTION
        return [cache.calls(("combine", gi), cost, per_token, tokens, calls, what, group)]

    def _one_sided(self) -> bool:
        """Whether the GPU runs TensorRT-LLM's NVLink one-sided all-to-all: an NVLink switch
        on SM 100 or later (``MnnvlMemory.supports_mnnvl()``, as AIConfigurator's
        ``select_alltoall_kernel`` takes it), which the GPU files mark by FP4 tensor cores."""
        gpu = self.machine.gpu
        return gpu.interconnect == "switch" and gpu.flop_entry(4)[0] == 4

    def attention(
        self,
        part,
        adiv,
        two_d: bool,
        cache: StepCache,
        key=None,
        reductions_only: bool = False,
        exchange: bool = True,
    ) -> tuple[CollectiveCalls, ...]:
        """Attention reductions for divisor ``adiv`` (t_at = t / adiv) on the step's ``part`` (a
        ``latency.PipelinePart``), and with attention data parallelism (§B1) either the dense
        layers' reductions over the same ranks, where they run with the attention
        (``dense_with_attention``), or the all-to-alls that move tokens to and from them, where
        they are tensor-parallel over the stage (not with ``reductions_only``); then, with
        ``exchange``, the MoE groups' exchange where it depends on the divisor
        (``expert_exchange``)."""
        w, m = self.work, self.machine
        dp = self.assumptions.attention_data_parallel
        ab = w.bytes_per_activation
        calls = []

        def structure():  # what does not depend on the tokens: kept for the block
            t_at = attention_degree(part, adiv, cache, key)
            spanned = cache.get(("att_nodes", key), lambda: self._nodes_spanned(t_at))
            if spanned is None:  # one rank per attention group: no reductions
                return None
            ranks, nodes = m.tensor_group(t_at, two_d, spanned)
            cc = cache.get(
                ("att", key, two_d), lambda: m.collective(ranks, nodes, where=cache.feasible)
            )
            if two_d:
                par = t_at / ranks
                words: tuple[Floats, ...] = (w.d_model / par, w.attention_heads_words / par)
            else:
                words = (w.d_model,)
            return cc, [word * ab for word in words], (ranks, nodes)

        reductions = cache.get(("att_calls", key, two_d), structure)
        if reductions is not None:
            cc, per_token, group = reductions
            # with attention data parallelism each of the a replicas reduces only its share
            tokens = part.tokens / adiv if dp else part.tokens
            names = ATTENTION_REDUCTIONS_2D if two_d else ATTENTION_REDUCTIONS_1D
            calls += [
                cache.calls(("att", key, two_d, i), cc, x, tokens, w.layers, what, group)
                for i, (x, what) in enumerate(zip(per_token, names))
            ]
            if self.dense_with_attention:  # the dense blocks' outputs, over the same ranks
                calls += self._dense_reductions(cc, tokens, group, cache, (key, two_d))
        if (
            dp
            and self.dense_layers
            and not self.dense_with_attention
            and np.any(np.asarray(adiv) > 1.0)
            and not reductions_only
        ):
            calls.append(self._redistribution(part, adiv, cache, key))
        if exchange and not reductions_only:
            calls += [c for group in self.expert_exchange(part, adiv, cache, key) for c in group]
        return tuple(calls)

    def _dense_reductions(self, cc, tokens, group, cache: StepCache, key) -> list:
        """The dense blocks' output reductions where they run with the attention
        (``dense_with_attention``): over the attention's ranks (``cc``, ``group``) for its
        replicas' ``tokens``, one row of ``m_out·d`` a token a dense layer (layer groups of
        one width as one operation)."""
        w = self.work
        layers: dict[float, float] = {}
        for g in w.groups:
            if g.experts <= 1:
                layers[g.matrices_out] = layers.get(g.matrices_out, 0.0) + g.layers
        ab = w.bytes_per_activation
        return [
            cache.calls(
                ("dense", key, mo), cc, mo * w.d_model * ab, tokens, n, DENSE_REDUCTION, group
            )
            for mo, n in layers.items()
        ]

    def _redistribution(self, part, adiv, cache: StepCache, key) -> CollectiveCalls:
        """Dense feed-forward blocks tensor-parallel over all t GPUs under attention data
        parallelism: the replicas' tokens gathered before each and scattered after (two
        all-to-alls over the ``adiv`` ranks, §B1)."""
        w, m = self.work, self.machine

        def gather():
            nodes = np.clip(np.ceil(part.tensor_degree / m.node_gpus), 1.0, adiv)
            redistribute = cache.get(
                ("redistribute", key), lambda: m.collective(adiv, nodes, ALLTOALL)
            )
            return (
                redistribute,
                w.d_model * w.bytes_per_activation / part.tensor_degree,
                (adiv, nodes),
            )

        redistribute, per_token_dense, group = cache.get(("redistribute_calls", key), gather)
        return cache.calls(
            ("redistribute", key), redistribute, per_token_dense, part.tokens,
            2 * self.dense_layers, "attention-DP gather and scatter", group,
        )  # fmt: skip

    def _nodes_spanned(self, t_at):
        """The nodes an attention group of ``t_at`` GPUs spans (``Machine.nodes_spanned``),
        or None where every group is one rank (no reductions): shared by the 2-D and 1-D
        groups of a divisor."""
        if np.all(t_at <= 1.0):
            return None
        return self.machine.nodes_spanned(t_at)


def exchange_terms_s(model, part, adiv, cache=NO_CACHE, key=None):
    """(latency, bandwidth) seconds of the MoE token exchange of a ``StepModel``'s step of
    ``part`` on divisor ``adiv``: its dispatch and combine calls (1-D; §B11, §F7), unscaled;
    (0, 0) unless the engine overlaps two micro-batches, whose exchange runs under the other's
    work."""
    if model.engine is None or model.engine.overlap_family is None:
        return 0.0, 0.0
    calls = model.attention_calls(part, adiv, False, cache, key) + part.shared_calls
    return total_terms_s(tuple(c for c in calls if c.what.startswith(EXCHANGE_OPERATIONS)))


def overlapped_terms(model, part, adiv, one_d, rest, cache=NO_CACHE, key=None):
    """(the 1-D collectives but the MoE exchange, the rest with the exchange run under the
    step's other work) of a ``StepModel``'s step split into two micro-batches: their sum is
    ``overlapped_s`` of the other work (``rest`` already reads the weights and pays each
    kernel's and layer's fixed cost once per micro-batch), every term scaled as the step is."""
    scale = model.engine.collective_scale
    x_lat, x_bw = exchange_terms_s(model, part, adiv, cache, key)
    x_lat, x_bw = scale * x_lat, scale * x_bw
    m = model.engine.micro_batches(part, adiv)
    others = one_d - x_lat - x_bw
    return others, overlapped_s(rest + others, x_lat, x_bw, m) - others
