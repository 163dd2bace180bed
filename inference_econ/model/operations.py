"""A step as a list of operations, built once for one layout (docs/model.md "A step as
operations").

``step_operations`` turns a ``StepModel`` (the workload on a machine under assumptions), a
layout (GPUs ``N``, batch ``B``, pipeline ``p``, attention divisor ``a``, 1-D or 2-D) and the
batch's tokens per pass ``S`` and context into the operations of one step: each GEMM, the
attention, the elementwise passes, every collective, the kernel launches and the host's work,
each with its calls, the shape a kernel table prices it by, and its FLOP and bytes. The numbers
come from what the step model already computes (``StepModel.pipeline_part``, the
``CollectiveCalls`` of ``StepCalls``, the ``Workload``'s bytes and FLOP); the clocks in
``model/clocks.py`` price the list. Scalars: the list is built for one layout, off the search's
hot path.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np

from .step_calls import DENSE_REDUCTION, NO_CACHE, CollectiveCalls
from .workload import GroupWork, matmul_activation_bytes_per_token

#: ``latency.StepModel`` and ``latency.PipelinePart``, named here but not imported: the step
#: model prices its steps on the kernel clock, which builds on this module.
StepModel: TypeAlias = Any
PipelinePart: TypeAlias = Any

#: What an operation is (``Operation.kind``): a matrix multiply, the attention over the cache
#: (and a recurrent mixer's state update), the routed experts' grouped GEMM, a pass over each
#: token's row (norms, residual adds, the activation function), the logits and sampling, a
#: collective, the kernel launches' gaps, the host's work.
OperationClass = Literal[
    "gemm", "attention", "moe", "elementwise", "sampling", "collective", "launch", "host"
]

#: The engine step's kernel class of an operation's work (``Operation.work``): the GEMM classes
#: of ``efficiency.StepWork`` (projection, dense, head, expert), the router's gate (a GEMM the
#: engine step charges within its per-layer overhead), the KV reads of attention and a
#: recurrent state, the activation function's rows, the elementwise rows, the logits, the
#: collectives (a row-parallel all-reduce that an engine may fuse with its GEMM apart), the
#: per-layer launch overhead and the host's.
WorkClass = Literal[
    "projection",
    "dense",
    "head",
    "expert",
    "router",
    "attention",
    "state",
    "activation",
    "elementwise",
    "logits",
    "collective",
    "row-parallel all-reduce",
    "launch",
    "host",
]

#: Names of the attention matrices of §A1 by how many a layer has: a fused QKV and the output;
#: MLA's latent form (down-projection, up-projection, output); MLA in full (§B3).
ATTENTION_MATRIX_NAMES = {
    2: ("qkv projection", "attention output projection"),
    3: ("qkv down projection", "qkv up projection", "attention output projection"),
    4: (
        "qkv down projection",
        "query up projection",
        "key-value up projection",
        "attention output projection",
    ),
}


@dataclass(frozen=True)
class Operation:
    """One operation of a step: ``calls`` kernels (or collectives) per GPU over the step, all
    of one ``shape``, and their work. FLOP are the instance's over the whole batch (what MFU
    counts); ``flop_per_gpu`` and the bytes are one GPU's over the step, the attention
    projections repeated ``a`` times under the paper's divisor (§A5). The bytes are Part A's
    (what the roofline reads); elementwise passes, sampling, launches and the host carry none
    there (the engine clock charges them by its own terms, §F1)."""

    name: str
    kind: OperationClass
    calls: float
    shape: Mapping[str, float]
    work: WorkClass
    flop: float = 0.0
    flop_per_gpu: float = 0.0
    weight_bytes: float = 0.0
    activation_bytes: float = 0.0
    kv_bytes: float = 0.0
    #: The collective calls of a collective operation (``StepCalls``), else None.
    collective: CollectiveCalls | None = None
    #: The layer group (from 1) of a feed-forward operation; None for the others.
    group: int | None = None

    @property
    def bytes(self) -> float:
        """HBM bytes one GPU reads and writes for the operation over the step (Part A's)."""
        return self.weight_bytes + self.activation_bytes + self.kv_bytes


@dataclass(frozen=True)
class StepOperations:
    """The operations of one step of one layout, with what the clocks need besides them."""

    operations: tuple[Operation, ...]
    model: StepModel
    #: The step's ``PipelinePart`` with its KV copies (§B13).
    part: PipelinePart
    adiv: float
    two_d: bool
    #: Whether the layout fits (weights, KV cache and its copies; the engine's layouts).
    fits: bool
    #: FLOP of the step (``PipelinePart.flop``).
    flop: float

    def __iter__(self):
        return iter(self.operations)

    def __len__(self) -> int:
        return len(self.operations)

    @property
    def names(self) -> list[str]:
        return [op.name for op in self.operations]


def step_operations(model: StepModel, N, B, S, context, p, adiv, two_d: bool) -> StepOperations:
    """The operations of one step: ``N`` GPUs, batch ``B``, ``S`` tokens per request, at
    ``context`` cached tokens, on pipeline degree ``p``, attention divisor ``adiv`` and 1-D or
    2-D tensor parallelism (scalars)."""
    N, B, S, context, p, adiv = (float(x) for x in (N, B, S, context, p, adiv))
    bare = model.pipeline_part(N, B, S, context, p)
    part = model.with_copies(bare, model.copies_of(bare, adiv))
    fits = bool(model.fits(N, B, p, context, adiv))
    if model.engine is not None and two_d and "tensor_2d" not in model.features:
        fits = False  # no engine runs 2-D tensor parallelism (§F11)
    ops = part_operations(model, part, S, context, adiv, two_d)
    # §B12: fewer requests than stages are timed as ``step_batch``, micro-batches of one (their
    # FLOP per GPU), but the FLOP an operation states are its requests' own (the step's, what
    # MFU counts)
    b = float(part.micro_batch)
    if b > B / p:
        ops = tuple(dataclasses.replace(op, flop=op.flop * B / (b * p)) for op in ops)
    return StepOperations(
        operations=ops,
        model=model,
        part=part,
        adiv=adiv,
        two_d=bool(two_d),
        fits=fits,
        flop=float(part.flop),
    )


def part_operations(
    model: StepModel, part: PipelinePart, S, context, adiv, two_d: bool
) -> tuple[Operation, ...]:
    """The operations of a step of ``part`` (with its KV copies) at ``S`` tokens a request,
    ``context`` cached positions and divisor ``adiv``: numbers, or arrays over a grid of
    layouts (each operation's shape and amounts then arrays of the grid's shape)."""
    b = _Builder(model, part, S, context, adiv, bool(two_d))
    ops = b.elementwise() + b.attention() + b.feed_forward() + b.tail()
    # a group of one rank communicates with nobody: no collective (its cost is 0; over a
    # grid a collective some layouts run stays, at 0 where its group is one rank)
    ops = [op for op in ops if op.kind != "collective" or np.any(op.shape["ranks"] > 1.0)]
    return _named_apart(ops)


class _Builder:
    """The operations of one step, by part of the model (``step_operations``)."""

    def __init__(self, model: StepModel, part: PipelinePart, S, context, adiv, two_d) -> None:
        self.model, self.part, self.S, self.context = model, part, S, context
        self.adiv, self.two_d = adiv, two_d
        w = self.work = model.work
        self.N, self.p, self.t = _num(part.gpus), _num(part.pipeline), _num(part.tensor_degree)
        self.b = _num(part.micro_batch)
        self.tokens = _num(part.tokens)  # a micro-batch's tokens: b·S
        self.all_tokens = self.b * self.p * S  # the whole batch's, B·S (FLOP count them)
        self.dp = model.assumptions.attention_data_parallel
        #: The attention work is done a times under the paper's divisor (§A5), once with
        #: attention data parallelism (§B1), whose replicas each serve 1/a of the tokens.
        self.repeat = 1.0 if self.dp else adiv
        self.replicas = adiv if self.dp else 1.0
        self.t_at = self.t / adiv
        self.per_gpu = self.p / self.N  # a micro-batch's bytes over the stage's GPUs, p times
        self.ff, ctx, self.proj = (_num(x) for x in w.flop(self.b * self.p, S, context))
        self.recurrent_flop = _num(
            sum(g.layers * g.recurrent_flop_per_token for g in w.groups) * self.all_tokens
        )
        self.ctx = ctx - self.recurrent_flop
        fused = model.engine is not None and model.engine.profile.gemm_allreduce_overlap
        #: The 1-D all-reduces that follow a row-parallel GEMM (§F6), told apart for the
        #: engine clock (an engine that fuses them hides part of their bandwidth).
        self.fusable = fused and not two_d

    # --- the token mixer --------------------------------------------------------------------
    def elementwise(self) -> list[Operation]:
        """Norms, residual adds and the rotary embedding: passes over each token's d-wide row
        (the engine's ``elementwise_passes``, §F1; Part A counts none)."""
        w = self.work
        shape = {"tokens": self.tokens / self.replicas, "width": w.d_model}
        return [_op("norms, residual and rope", "elementwise", w.layers, shape, "elementwise")]

    def attention(self) -> list[Operation]:
        """The attention projections (or a hybrid's recurrent mixers' matrices), the
        attention over the cache and the recurrent state update, and the attention's
        collectives."""
        w = self.work
        mats = [(m, k, w.attention_share) for m, k in w.attention_matrices]
        names = list(ATTENTION_MATRIX_NAMES.get(len(mats), ()))
        names += [f"attention matrix {i + 1}" for i in range(len(names), len(mats))]
        rec = list(w.recurrent_matrices)
        names += [f"recurrent projection {i + 1}" for i in range(len(rec))]
        matrices = self._projections(mats + rec, names, len(mats))
        ops = matrices[: len(mats) - 1] + self._mixers() + matrices[len(mats) - 1 :]
        calls = self.model.attention_calls(self.part, self.adiv, self.two_d, exchange=False)
        fused = [
            self.fusable and c.what in ("all-reduce (attention)", DENSE_REDUCTION) for c in calls
        ]
        return ops + [self._collective(c, f) for c, f in zip(calls, fused)]

    def _projections(self, mats, names, attention_count) -> list[Operation]:
        """One GEMM per matrix of the mixers (m outputs, k inputs; ``share`` of the layers):
        the §A1 parameters' FLOP shared by the matrices' sizes, their weights read ``a``
        times (§A5), column-parallel but the last attention matrix (the output projection,
        row-parallel; each recurrent mixer's last too)."""
        w = self.work
        sizes = [m * k * share for m, k, share in mats]
        total_flop = 2.0 * w.layers * w.attention_params_per_layer * self.all_tokens
        kernel_tokens = self.tokens / self.replicas
        ops = []
        for i, ((m, k, share), name) in enumerate(zip(mats, names)):
            out = i == attention_count - 1 or (i >= attention_count and i == len(mats) - 1)
            ways = self.t_at
            acts = matmul_activation_bytes_per_token(
                m, k, ways, w.bytes_per_activation, w.matmul_replication
            )
            flop = total_flop * sizes[i] / sum(sizes)
            layers = w.layers * share
            shape = {"m": kernel_tokens, "n": m if out else m / ways, "k": k / ways if out else k}
            amounts = self._amounts(
                flop,
                m * k * w.dense_weight_bytes * self.adiv,
                _num(acts) * self.tokens * self.repeat,
                layers,
                self.repeat,
            )
            ops.append(_op(name, "gemm", layers, shape, "projection", **amounts))
        return ops

    def _mixers(self) -> list[Operation]:
        """The attention over the KV cache (with its copies beyond the KV heads, §B13) and a
        hybrid's recurrent state update (§C2)."""
        w, model = self.work, self.model
        kv_batch = self.b * self.p if model.assumptions.kv_read_whole_batch else self.b
        copies = model.copies_of(self.part, self.adiv)
        copies = 1.0 if copies is None else _num(copies)
        attention_layers = w.layers if w.attention_layers is None else w.attention_layers
        kind = "prefill" if model.expert_parallel_by_tokens else "decode"
        shape = {
            "batch": self.b / self.replicas,
            "tokens": self.tokens / self.replicas,
            "positions": _num(w.effective_context(self.context, self.S)),
            "heads": w.query_heads / self.t_at,
            # the KV heads (one latent for MLA) split over the group, with their copies
            "kv_heads": min(w.kv_vectors / 2.0, w.kv_shards) / self.t_at * copies,
            "head_dim": w.head_dim,
        }
        ops = []
        if attention_layers:
            kv = _num(w.attention_kv_bytes(self.context, kv_batch)) * copies * self.per_gpu
            ops.append(
                _op(
                    f"attention ({kind})",
                    "attention",
                    attention_layers,
                    shape,
                    "attention",
                    flop=self.ctx,
                    flop_per_gpu=self.ctx / self.N,
                    kv_bytes=kv,
                )
            )
        if w.recurrent_matrices:
            state = w.state_bytes_per_sequence * kv_batch * self.per_gpu
            ops.append(
                _op(
                    "recurrent state update",
                    "attention",
                    w.layers - attention_layers,
                    {"batch": self.b, "state_bytes": w.state_bytes_per_sequence},
                    "state",
                    flop=self.recurrent_flop,
                    flop_per_gpu=self.recurrent_flop / self.N,
                    kv_bytes=state,
                )
            )
        return ops

    # --- the feed-forward blocks ------------------------------------------------------------
    def feed_forward(self) -> list[Operation]:
        """Each layer group's feed-forward: the router, the routed experts with their dispatch
        and combine, the shared experts, a dense block's two GEMMs, the activation function, and
        the reductions."""
        model = self.model
        part = self.part
        per = 2 if self.two_d else 1
        reductions = part.ff_calls(self.two_d)
        moe = iter(c for c in part.shared_calls if c.what != "pipeline send")
        by_divisor = iter(model.calls.expert_exchange(part, self.adiv, NO_CACHE))
        ops: list[Operation] = []
        for gi, g in enumerate(self.work.groups):
            e, t_ff = model.calls.split(gi, g, self.b, self.t, self.tokens, NO_CACHE)
            e, t_ff = _num(e), _num(t_ff)
            a2a = []
            if g.experts > 1 and model.calls.exchange_by_method:
                a2a = next(by_divisor)  # dispatch and combine, or the combining all-reduce
            elif g.experts > 1:
                a2a = (
                    [next(moe)]
                    if not model.assumptions.expert_all_to_all
                    else [next(moe), next(moe)]
                )
            own = reductions[gi * per : (gi + 1) * per]
            before = [c for c in a2a if "dispatch" in c.what]  # the combines after the GEMMs
            router = [self._router(g)] if g.experts > 1 else []  # routes before the dispatch
            group = (
                router
                + [self._collective(c) for c in before]
                + self._group(g, e, t_ff)
                + [self._collective(c, self.fusable and g.experts <= 1) for c in own]
                + [self._collective(c) for c in a2a if "dispatch" not in c.what]
            )
            ops += [dataclasses.replace(op, group=gi + 1) for op in group]
        return ops

    def _group(self, g: GroupWork, e: float, t_ff: float) -> list[Operation]:
        """A group's GEMMs (Part A's bytes of §A2 and FLOP of §A1, every layer of the group)
        and its activation function's rows, in the order a layer runs them."""
        w = self.work
        if g.experts <= 1 and self.model.calls.dense_with_attention:
            return self._dense_with_attention(g)
        weights, acts = (_num(x) for x in w.ff_bytes(g, self.tokens, t_ff))
        shared = []
        if g.shared:  # the shared experts' bytes: the group's less the routed experts'
            own_w, own_a = (_num(x) for x in w.ff_bytes(_unshared(g), self.tokens, t_ff))
            shared = [self._shared(g, weights - own_w, acts - own_a)]
            weights, acts = own_w, own_a
        width = g.d_ff * (g.active + g.shared * g.shared_d_ff / g.d_ff) / self.t
        activation = _op(
            "activation",
            "elementwise",
            g.layers,
            {"tokens": self.tokens, "width": width, "passes": 1.0 + g.matrices_in},
            "activation",
        )
        if g.experts > 1:
            return [self._routed(g, e, t_ff, weights, acts), activation] + shared
        ff_in, ff_out = self._dense(g, t_ff, weights, acts)
        return [ff_in, activation, ff_out] + shared

    def _amounts(self, flop, weights, acts, layers, repeat=1.0) -> dict:
        """An operation's FLOP (the batch's), FLOP per GPU and bytes per GPU of the step from
        one micro-batch's bytes of one layer."""
        scale = layers * self.per_gpu
        return {
            "flop": flop,
            "flop_per_gpu": flop * repeat / self.N,
            "weight_bytes": weights * scale,
            "activation_bytes": acts * scale,
        }

    def _shared(self, g: GroupWork, weights, acts) -> Operation:
        """The shared experts: dense GEMMs over the stage's t GPUs, in and out; where they run
        with the attention (§F7), each replica's tokens at the attention's degree, their
        weights read by every replica; where they run whole on every GPU
        (``StepCalls.shared_on_every_gpu``), each GPU's share of the tokens."""
        flop = 2.0 * g.layers * self.work.shared_ff_params(g) * self.all_tokens
        t, rows = self.t, self.tokens
        if self.model.calls.shared_on_every_gpu:
            t, rows, weights = 1.0, self.tokens / self.t, weights * self.t
        elif self.model.calls.dense_with_attention:
            t, rows, weights = self.t_at, self.tokens / self.adiv, weights * self.adiv
        inner = g.shared * g.matrices_in * g.shared_d_ff / t
        shape = {"m": rows, "n": inner, "k": self.work.d_model}
        amounts = self._amounts(flop, weights, acts, g.layers)
        return _op("shared experts", "gemm", 2.0 * g.layers, shape, "dense", **amounts)

    def _router(self, g: GroupWork) -> Operation:
        """The router's gate: a GEMM a layer of each rank's own tokens against every expert's
        row, in BF16 (the quantised checkpoints leave it out: ModelOpt's ``mlp.gate`` in
        ``exclude_modules``; AIConfigurator's ``router_gemm``, ``bfloat16``). Part A counts no
        router and the engine step charges it within its per-layer overhead: no FLOP or bytes
        here, the kernel clock its measured time."""
        shape = {"m": self.tokens / self.replicas, "n": g.experts, "k": self.work.d_model}
        return _op("router", "gemm", g.layers, shape, "router")

    def _routed(self, g: GroupWork, e, t_ff, weights, acts) -> Operation:
        """The routed experts: a grouped GEMM a layer over the experts the tokens hit."""
        w = self.work
        flop = 2.0 * g.layers * g.experts * w.ff_params_per_expert(g) / g.sparsity
        shape = {
            "tokens": self.tokens,
            "hidden": w.d_model,
            "inter": g.d_ff,
            "topk": g.active,
            "experts": g.experts,
            "tp": t_ff,
            "ep": e,
        }
        amounts = self._amounts(flop * self.all_tokens, weights, acts, g.layers)
        return _op("routed experts", "moe", g.layers, shape, "expert", **amounts)

    def _dense_with_attention(self, g: GroupWork) -> list[Operation]:
        """A MoE model's dense block where it runs with the attention's layout (§F7): each of
        the ``adiv`` replicas runs it on its own tokens at the attention's tensor degree, its
        weights read by every replica; its reduction is among the attention's collectives."""
        weights, acts = (_num(x) for x in self.work.ff_bytes(g, self.tokens, self.t_at))
        tokens = self.tokens / self.adiv
        width = g.d_ff / self.t_at
        passes = 1.0 + g.matrices_in
        shape = {"tokens": tokens, "width": width, "passes": passes}
        activation = _op("activation", "elementwise", g.layers, shape, "activation")
        ff_in, ff_out = self._dense(g, self.t_at, weights * self.adiv, acts, tokens)
        return [ff_in, activation, ff_out]

    def _dense(self, g: GroupWork, t_ff, weights, acts, tokens=None) -> list[Operation]:
        """A dense block's input GEMM (its gate and up matrices fused) and output GEMM, the
        block's bytes and FLOP shared by their matrices; ``tokens``: a GEMM's rows (default the
        micro-batch's)."""
        d, f = self.work.d_model, g.d_ff
        flop = 2.0 * g.layers * self.work.ff_params_per_expert(g) * self.all_tokens
        mats = g.matrices_in + g.matrices_out
        rows = self.tokens if tokens is None else tokens
        ops = []
        for name, count, n, k in (
            ("feed-forward in", g.matrices_in, g.matrices_in * f / t_ff, d),
            ("feed-forward out", g.matrices_out, d, f / t_ff),
        ):
            share = count / mats
            shape = {"m": rows, "n": n, "k": k}
            amounts = self._amounts(flop * share, weights * share, acts * share, g.layers)
            ops.append(_op(name, "gemm", g.layers, shape, "dense", **amounts))
        return ops

    # --- after the layers -------------------------------------------------------------------
    def tail(self) -> list[Operation]:
        """The pipeline sends, the output head (and a draft head's input projection), the
        logits and sampling, the kernel launches and the host's work."""
        w, model = self.work, self.model
        ops = [self._collective(c) for c in self.part.shared_calls if c.what == "pipeline send"]
        if w.extra_matrices:
            flop = 2.0 * w.extra_params * self.all_tokens
            m, k = w.extra_matrices[0]
            ops.append(
                _op(
                    "draft head input projection",
                    "gemm",
                    float(len(w.extra_matrices)),
                    {"m": self.tokens, "n": m / self.t, "k": k},
                    "projection",
                    flop=flop,
                    flop_per_gpu=flop * self.repeat / self.N,
                    weight_bytes=w.extra_params * w.dense_weight_bytes * self.per_gpu,
                )
            )
        flop = 2.0 * w.embedding_params * self.all_tokens
        # the positions sampled: a prefill pass's last token a sequence, as the engine clock's
        # head GEMM reads them (``achievable``, §F2), every token of a decode step
        sampled = self.b if model.expert_parallel_by_tokens else self.tokens
        rows, width = sampled, w.vocab_size / self.t
        head_bytes = w.unembedding_bytes * self.per_gpu
        if model.calls.vocabulary_with_attention:  # each replica its own head (§F8)
            rows, width = sampled / self.replicas, w.vocab_size / self.t_at
            extra = model.calls.vocabulary_replica_bytes(self.adiv, w.vocab_size * w.d_model)
            head_bytes = head_bytes + extra * self.per_gpu
        ops.append(
            _op(
                "lm head",
                "gemm",
                1.0,
                {"m": rows, "n": width, "k": w.d_model},
                "head",
                flop=flop,
                flop_per_gpu=flop * self.repeat / self.N,
                weight_bytes=head_bytes,
            )
        )
        sequences = {"sequences": self.b, "vocab": w.vocab_size / self.t}
        if model.calls.vocabulary_with_attention:  # each replica samples its own sequences
            sequences = {"sequences": self.b / self.replicas, "vocab": w.vocab_size / self.t_at}
        ops.append(_op("sampling", "sampling", 1.0, sequences, "logits"))
        kernels = w.layers * model.assumptions.kernels_per_layer
        ops.append(_op("kernel launches", "launch", kernels, {"layers": w.layers}, "launch"))
        # each attention-DP rank's scheduler prepares its own share (§F5, host_overhead_s)
        host = {"sequences": self.b / self.replicas}
        ops.append(_op("host and scheduling", "host", 1.0, host, "host"))
        return ops

    def _collective(self, c: CollectiveCalls, fusable: bool = False) -> Operation:
        """A collective operation of ``c``'s calls, over its group, each moving its bytes."""
        ranks, nodes = (_num(x) for x in c.group) if c.group else (1.0, 1.0)
        shape = {
            "ranks": ranks,
            "nodes": nodes,
            "bytes": _num(c.bytes_per_token * c.tokens),
        }
        work = "row-parallel all-reduce" if fusable else "collective"
        return _op(c.what, "collective", _num(c.calls), shape, work, collective=c)


def _num(x):
    """A number of an operation: a float, or a float array where the layouts are a grid."""
    a = np.asarray(x, dtype=float)
    return float(a) if a.ndim == 0 else a


def _op(name, kind, calls, shape, work, **amounts) -> Operation:
    """An ``Operation``, its calls a number and its shape a dict of its own."""
    return Operation(name, kind, _num(calls), dict(shape), work, **amounts)


def _unshared(g: GroupWork) -> GroupWork:
    """The group without its shared experts (their bytes apart from the routed ones')."""
    return dataclasses.replace(g, shared=0)


def _named_apart(ops: list[Operation]) -> tuple[Operation, ...]:
    """The operations, a name that several layer groups share numbered by group ("activation
    (layer group 2)"), so that every row of a table is named apart."""
    counts = Counter(op.name for op in ops)
    return tuple(
        dataclasses.replace(op, name=_in_group(op.name, op.group))
        if counts[op.name] > 1 and op.group is not None
        else op
        for op in ops
    )


def _in_group(name: str, group: int) -> str:
    """``name`` of layer group ``group``: "activation (layer group 2)", "all-reduce
    (feed-forward, layer group 2)"."""
    if name.endswith(")"):
        return f"{name[:-1]}, layer group {group})"
    return f"{name} (layer group {group})"
