"""The kernel clock: a step's operations priced one by one from the measured kernel tables
(docs/model.md "A step as operations"; the tables: kernels/README.md).

``KernelClock`` prices each operation of a ``StepOperations`` list with ``kernel_prices``: a
GEMM by its (m, n, k) in the workload's format, the attention by its batch, cached positions
and heads, the routed experts as one fused MoE call, each collective inside a node by the
engine's all-reduce or NCCL's tables, the per-token passes by the project's measured passes.
Where the GPU has no table of that class and format, ``kernel_prices`` prices the operation's
physics form with the parameters fitted to the parts that have (kernels/engine_clock.yaml).
The kernels of a step run one after another, so the step is the sum of its operations (but an
MoE layer's shared experts run beside its routed experts where the engine gives them a stream of
their own in the steps it replays from CUDA graphs, ``shared_expert_overlap``: the shorter path
is hidden), plus the engine's own host work:

* kernel launches: nothing inside a CUDA graph (each table's time is a kernel's in a graph,
  its floor included); outside one (more tokens than the engine captures) the profile's
  ``eager_layer_overhead_s`` a layer, which states its source.
* host and scheduling: the profile's step and per-sequence host work, times the share the
  GPU waits for (``efficiency.host_overhead_s``; 0 under an overlap scheduler).

No per-layer overhead fitted end to end is charged: the tables measure the kernels it stood
for. The tables are TensorRT-LLM 1.3.0rc20's; another engine family's step is theirs scaled by
the profile's ``step_time_scale`` (that engine's step time against TensorRT-LLM's, the one
figure the profiles state for it). Shapes may be numpy arrays (every operation of a grid of
layouts at once).
"""

from __future__ import annotations

import math

import numpy as np

from .breakdown import ADDITIVE_PARTS
from .clocks import Clock, EngineClock, RooflineClock
from .efficiency import eager_steps, host_overhead_s
from .kernel_prices import (
    allreduce_s,
    collective_s,
    context_attention_s,
    gemm_s,
    generation_attention_s,
    mla_s,
    moe_s,
    pass_s,
)
from .machine import mx_gemm_bits
from .moe import BLOCK_FP8, EPLB_RANK_LOAD, balanced_slots, routing_of
from .operations import Operation, PipelinePart, StepOperations, part_operations
from .step_calls import VOCABULARY_BYTES_PER_WEIGHT
from .workload import Workload

#: The columns of a clock's parts (``ADDITIVE_PARTS``), by name.
_COLUMN = {name: i for i, name in enumerate(ADDITIVE_PARTS)}
#: The engine family whose kernels the tables measured.
TABLES_ENGINE = "trtllm"
#: A GEMM's element bits -> the tables' format (FP4 weights: NVFP4, block scales included).
GEMM_FORMAT = {16: "bfloat16", 8: "fp8", 4: "nvfp4"}
#: An MXFP4 expert's arithmetic bits -> the fused MoE's format.
MXFP4_MOE_FORMAT = {16: "w4a16_mxfp4", 8: "w4a8_mxfp4_mxfp8"}
#: Collectives by the start of their name -> NCCL's operation (an all-reduce inside a node is
#: the engine's own kernel).
NCCL_OPERATION = {"all-gather": "all_gather", "reduce-scatter": "reduce_scatter"}


class Formats:
    """The tables' formats of a workload's kernels: the dense GEMMs' (attention, dense
    feed-forward, shared experts), the routed experts', the output head's and the KV cache's."""

    def __init__(self, work: Workload, gpu=None) -> None:
        gemm_bits = work.gemm_bits if work.gemm_bits is not None else work.weight_bits
        dense_bits = work.dense_gemm_bits if work.dense_gemm_bits is not None else gemm_bits
        self.dense = _gemm_format(dense_bits)
        fractional = work.weight_bits != math.floor(work.weight_bits)
        if fractional and gpu is not None:  # no 4-bit tensor cores: BF16 GEMMs (§B5)
            gemm_bits = mx_gemm_bits(gpu, work.weight_bits, gemm_bits)
        self.moe = MXFP4_MOE_FORMAT[_bits(gemm_bits)] if fractional else _gemm_format(gemm_bits)
        if work.weight_block_scaled:  # a block-scaled FP8 checkpoint runs block-scaled kernels
            self.dense = BLOCK_FP8 if self.dense == "fp8" else self.dense
            self.moe = BLOCK_FP8 if self.moe == "fp8" else self.moe
        # a quantised checkpoint keeps its output head and its routers' gates in 16 bits
        # (``VOCABULARY_BYTES_PER_WEIGHT``: ModelOpt and the engines' FP8/FP4 recipes exclude
        # lm_head and mlp.gate); a BF16 model's are BF16 anyway
        self.head = _gemm_format(8.0 * VOCABULARY_BYTES_PER_WEIGHT)
        self.kv = "fp8" if work.bytes_per_kv_element <= 1.0 else "bfloat16"


def _bits(bits: float) -> int:
    """The element bits of a format (4.25-bit MXFP4 is 4-bit), 4, 8 or 16."""
    b = math.floor(float(bits) + 1e-9)
    return 4 if b <= 4 else 8 if b <= 8 else 16


def _gemm_format(bits: float) -> str:
    """The GEMM table format of a GEMM's bits."""
    return GEMM_FORMAT[_bits(bits)]


class KernelClock(Clock):
    """A step's operations at the measured kernels' times, one after another."""

    name = "kernels"

    def parts(self, step: StepOperations) -> np.ndarray:
        """Each operation's seconds in the additive part its kernel is bound by: collectives
        their bandwidth, launches and host work the launch part, GEMMs and attention their
        reads where the roofline says memory binds the operation, else arithmetic."""
        seconds = self.seconds(step)
        out = np.zeros((len(step), len(ADDITIVE_PARTS)))
        m = step.model.machine
        for i, (op, s) in enumerate(zip(step, seconds)):
            out[i, _COLUMN[_column(op, m)]] = float(s)
        return out

    def seconds(self, step: StepOperations) -> list:
        """Seconds of each operation of the step (arrays where the shapes are)."""
        return _Pricer(step.model, step.part).each(list(step))


def kernel_step_s(model, part: PipelinePart, adiv, two_d: bool = False):
    """(collective seconds, every other operation's seconds) of the step of ``part`` (with
    its KV copies) under divisor ``adiv`` on the kernel clock, over a grid of layouts
    (``StepModel``'s step under ``kernel_tables``)."""
    S = np.asarray(part.tokens, dtype=float) / np.asarray(part.micro_batch, dtype=float)
    ops = part_operations(model, part, S, part.context, adiv, two_d)
    collectives, rest = 0.0, 0.0
    for op, seconds in zip(ops, _Pricer(model, part).each(ops)):
        if op.kind == "collective":
            collectives = collectives + seconds
        else:
            rest = rest + seconds
    return collectives, rest


def clock_of(model) -> Clock:
    """The clock of a step model: the kernel clock under an engine profile with
    ``kernel_tables``, the engine's under one without, else the roofline."""
    if model.engine is not None and model.assumptions.kernel_tables:
        return KernelClock()
    return EngineClock() if model.engine is not None else RooflineClock()


def _column(op: Operation, machine) -> str:
    """The additive part an operation's kernel time is shown under."""
    if op.kind == "collective":
        return "collective_bandwidth_s"
    if op.kind == "host":
        return "host_s"
    if op.kind == "launch":
        return "kernel_launch_s"
    if op.kind in ("elementwise", "sampling"):
        return "activation_read_s"
    memory = op.bytes / machine.hbm_bandwidth_bytes_per_s
    rate = machine.attention_flop_per_s if op.kind == "attention" else machine.flop_per_s
    if op.flop_per_gpu / rate > memory:
        return "arithmetic_s"
    return "kv_read_s" if op.kind == "attention" else "weight_read_s"


class _Pricer:
    """Prices one step's operations: its GPU, formats, engine and the shapes they share."""

    def __init__(self, model, part: PipelinePart) -> None:
        self.part, self.work = part, model.work
        self.gpu = model.machine.gpu
        self.formats = Formats(model.work, model.machine.gpu)
        #: The routing the experts are read at (``moe.routing_of``: the model file's, else its class's).
        self.routing = routing_of(model.work.model_class, model.work.expert_routing)
        self.profile = model.profile
        family = self.profile.family if self.profile is not None else TABLES_ENGINE
        #: another engine's kernels: TensorRT-LLM's scaled by its step-time factor
        self.scale = 1.0 if family == TABLES_ENGINE else float(self.profile.step_time_scale)

    def __call__(self, op: Operation):
        price = getattr(self, f"_{op.kind}")
        return self.scale * price(op)

    def each(self, ops) -> list:
        """Seconds of each of ``ops`` in step order. An engine that fuses each row-parallel
        GEMM with the all-reduce of its output (``gemm_allreduce_overlap``, §F6) sends the
        partial sums while the GEMM runs: such an all-reduce costs what its measured time
        exceeds its GEMM's by, its latency no less (the engine clock's rule, kernel by kernel)."""
        overlap = float(self.profile.gemm_allreduce_overlap) if self.profile is not None else 0.0
        out, gemm = [], 0.0
        for op in ops:
            seconds = self(op)
            if op.kind == "gemm":
                gemm = seconds
            elif overlap and op.work == "row-parallel all-reduce" and op.collective is not None:
                latency = self.scale * op.collective.terms_s()[0]
                hidden = np.minimum(np.maximum(seconds - latency, 0.0), gemm)
                seconds = seconds - overlap * hidden
            out.append(seconds)
        return self._overlapped(ops, out)

    def _overlapped(self, ops, out: list) -> list:
        """Where the engine runs an MoE layer's shared experts on a stream of their own beside
        its routed experts (``shared_expert_overlap``) in a step it replays from a CUDA graph,
        the shorter of the two paths - the routed experts with their dispatch and combine, the
        shared experts - is hidden under the longer: the shared experts' operation keeps only
        what its time exceeds the routed path's by."""
        share = float(self.profile.shared_expert_overlap) if self.profile is not None else 0.0
        if not share:
            return out
        graphed = 1.0 - eager_steps(self.part.tokens, self.profile.cuda_graph_max_batch)
        routed: dict = {}
        for op, seconds in zip(ops, out):
            if op.group is not None and (op.kind == "moe" or op.name.startswith("expert")):
                routed[op.group] = routed.get(op.group, 0.0) + seconds
        for i, op in enumerate(ops):
            if op.name.startswith("shared experts") and op.group in routed:
                hidden = np.minimum(out[i], routed[op.group])
                out[i] = out[i] - share * graphed * hidden
        return out

    def _gemm(self, op: Operation):
        fmt = self.formats.head if op.work in ("head", "router") else self.formats.dense
        s = op.shape
        return op.calls * gemm_s(self.gpu, fmt, *(_at_least_1(s[x]) for x in "mnk"))

    def _attention(self, op: Operation):
        s = op.shape
        if op.work == "state":  # a recurrent mixer's state: read and written once a step
            bw = self.gpu.hbm_bandwidth_bytes_per_s
            return 2.0 * op.kv_bytes / bw
        batch, heads = _at_least_1(s["batch"]), _at_least_1(s["heads"])
        kv_heads, dim = _at_least_1(s["kv_heads"]), s["head_dim"]
        prompt = _at_least_1(np.asarray(s["tokens"]) / np.maximum(s["batch"], 1e-12))
        positions = _at_least_1(s["positions"])
        mla = self.work.model_class == "mla"  # the MLA kernel's own tables, where measured
        fmt, total = self.formats.kv, 0.0
        for layers, w in layer_windows(self.work, op.calls):
            if not op.name.endswith("(prefill)"):
                one = mla_s(self.gpu, fmt, batch, heads, positions=positions) if mla else None
                if one is None:
                    one = generation_attention_s(
                        self.gpu, fmt, batch, positions, heads, kv_heads, dim, w
                    )
                total = total + layers * one
                continue
            # a chunk after a cached prefix runs as the prompt without one that attends as
            # many positions (the tables time no prefix); the chunk's own length without one
            equal = _equal_prompt(self._prefix(s["positions"], prompt), prompt, w)
            one = mla_s(self.gpu, fmt, batch, heads, tokens=equal) if mla else None
            if one is None:
                one = context_attention_s(self.gpu, fmt, batch, equal, heads, kv_heads, dim, w)
            total = total + layers * one
        return total

    def _prefix(self, positions, prompt):
        """The cached positions before a prompt chunk of ``prompt`` tokens whose operation
        holds ``positions``: ``Workload.effective_context`` of the prefix, whatever that adds
        to it taken back off."""
        offset = self.work.effective_context(0.0, prompt)
        return np.maximum(np.asarray(positions) - offset, 0.0)

    def _moe(self, op: Operation):
        s = op.shape
        shape = (
            self.gpu, self.formats.moe, _at_least_1(s["tokens"]), _at_least_1(s["hidden"]),
            _at_least_1(s["inter"]), s["topk"],
        )  # fmt: skip
        one = moe_s(*shape, s["experts"], s["tp"], s["ep"], self.routing)
        copies = self.work.redundant_experts
        if copies:  # EPLB: the slots balanced, the busiest rank at its measured load (§F7)
            slots = np.asarray(s["experts"], dtype=float) + copies
            balanced = EPLB_RANK_LOAD * moe_s(*shape, slots, s["tp"], s["ep"], "balanced")
            even = balanced_slots(s["experts"], copies, s["ep"])  # as engines run them
            one = np.where(even, np.minimum(one, balanced), one)
        return op.calls * one

    def _elementwise(self, op: Operation):
        s = op.shape
        tokens = _at_least_1(s["tokens"])
        if op.work == "activation":
            if op.group is not None and self.work.groups[op.group - 1].experts > 1:
                return 0.0 * tokens  # inside the fused MoE kernel the table timed
            return op.calls * pass_s(self.gpu, "silu_mul", tokens, _at_least_1(s["width"]))
        # two residual adds, each fused with its norm, a layer; the rotary embedding runs
        # inside the engine's attention kernel (its QKV preprocessing), which the tables time
        return op.calls * 2.0 * pass_s(self.gpu, "add_rmsnorm", tokens, _at_least_1(s["width"]))

    def _sampling(self, op: Operation):
        # the engine gathers each sequence's logits over the whole vocabulary to sample
        sequences = _at_least_1(op.shape["sequences"])
        return op.calls * pass_s(self.gpu, "sample_greedy", sequences, self.work.vocab_size)

    def _collective(self, op: Operation):
        s = op.shape
        ranks, nodes, nbytes = s["ranks"], s["nodes"], np.maximum(s["bytes"], 0.0)
        name, table = op.name, _nccl_table(op.name)
        if name.startswith("all-reduce"):
            inside = allreduce_s(self.gpu, np.maximum(ranks, 1.0), nbytes)
        elif table is not None:
            inside = collective_s(self.gpu, table, np.maximum(ranks, 1.0), nbytes)
        elif name.startswith("expert"):
            inside = collective_s(self.gpu, "alltoall", np.maximum(ranks, 1.0), nbytes)
        else:
            inside = None
        c = op.collective
        if c is None:
            return op.calls * (0.0 if inside is None else inside)
        lat, bw = c.terms_s()
        across = lat + bw  # across nodes (and a pipeline send): the collective's own model
        if inside is None:
            return across
        return np.where(np.asarray(nodes) > 1.0, across, op.calls * inside)

    def _launch(self, op: Operation):
        if self.profile is None:
            return 0.0
        tokens = self.part.tokens
        eager = eager_steps(tokens, self.profile.cuda_graph_max_batch)
        return self.work.layers * eager * self.profile.eager_layer_overhead_s

    def _host(self, op: Operation):
        if self.profile is None:
            return 0.0
        return host_overhead_s(self.profile, op.shape["sequences"]) / self.scale


def layer_windows(work: Workload, calls) -> list[tuple[float, float]]:
    """(layers, window) of a workload's attention layers, the window as the tables' window
    field reads it (0: full attention): sliding-window layers read and attend to at most theirs;
    ``calls`` layers of one class where none has a window. The one place the kernel clock splits
    the attention by window, for a step's operations and for the load engine's prompt slope."""
    windows = [(g.layers, g.window) for g in work.groups if g.window > 0]
    if all(math.isinf(w) for _, w in windows):
        return [(calls, 0.0)]
    return [(layers, 0.0 if math.isinf(w) else w) for layers, w in windows]


def _at_least_1(x):
    """A size as the tables price it: no fewer than one (a layout that splits a dimension
    finer than one element per GPU still runs a kernel on its busiest GPU's element)."""
    return np.maximum(np.asarray(x, dtype=float), 1.0)


def kernel_terms(model, part: PipelinePart, adiv):
    """``StepModel``'s (2-D collectives, 1-D collectives, the rest) of the step of ``part``
    (with its KV copies) on the kernel clock (``kernel_tables``); 2-D is inf where the
    engine does not run it (§F11)."""
    one_d, rest = kernel_step_s(model, part, adiv, False)
    if "tensor_2d" in model.features:
        two_d = kernel_step_s(model, part, adiv, True)[0]
    else:
        two_d = np.full(np.shape(one_d), np.inf)
    return two_d, one_d, rest


#: The decode batch and the two contexts whose steps give the kernel clock's seconds a cached
#: position (``table_terms``), and the prompt whose attention gives its seconds an attended
#: position where the engine's prompt chunk is not known: shapes inside the measured tables
#: (generation attention to 1 Mi positions, context attention to 16 Ki tokens).
SLOPE_BATCH, SLOPE_CONTEXTS, SLOPE_PROMPT = 64.0, (1024.0, 8192.0), 2048.0
#: The prompts the context-attention slope is read at (``table_terms``): the tables' range.
#: The kernel's rate grows with the prompt (B200, 64 query heads over 4 KV heads, FP8: 0.115,
#: 0.888 and 2.94 ms a layer at 2,048, 8,192 and 16,384 tokens, 0.61 then 1.24 then 1.50 PFLOP/s),
#: so a slope read at 2,048 tokens charged a 16 Ki-token prompt 2.4 times its measured time.
SLOPE_PROMPT_RANGE = (256.0, 16384.0)
#: The decode batch whose secant from one sequence gives the seconds a sequence of the kernels
#: a step runs once a sequence (``per_sequence_terms``): inside the measured attention tables
#: (1 to 2,048 sequences), where the decode attention's cost a sequence has levelled off.
SEQUENCE_BATCH = 1024.0


def _once_a_sequence_s(model, part: PipelinePart, adiv, two_d: bool):
    """Seconds of the operations of the step of ``part`` (with its KV copies) that run once a
    sequence whatever its tokens: the attention over the cache (a recurrent state's update),
    the output head and sampling (the engines compute a prompt's logits at its last token
    only: TensorRT-LLM unless asked for context logits, vLLM at the positions it samples)."""
    S = np.asarray(part.tokens, dtype=float) / np.asarray(part.micro_batch, dtype=float)
    pricer = _Pricer(model, part)
    total = 0.0
    for op in part_operations(model, part, S, part.context, adiv, two_d):
        if op.kind in ("attention", "sampling") or op.work == "head":
            total = total + pricer(op)
    return total


def per_sequence_terms(model, gpus, pipeline, adiv, two_d: bool, tokens: np.ndarray):
    """(seconds of the once-a-sequence operations in the step of ``tokens`` decoding requests
    at no context, their floor a step, their seconds a sequence): the step at ``tokens``
    tokens counts each token as a sequence, but a prompt chunk of many tokens is one sequence
    of the decode attention, the output head and sampling (its attention is the context
    kernel's, charged a position attended). The floor and the seconds a sequence are the secant between one and
    ``SEQUENCE_BATCH`` sequences."""
    N, p = float(gpus), float(pipeline)

    def once(b):
        q = model.pipeline_part(N, b, 1.0, 0.0, p, charged=True)
        return _once_a_sequence_s(
            model, model.with_copies(q, model.copies_of(q, adiv)), adiv, two_d
        )

    one, many = float(once(1.0)), float(once(SEQUENCE_BATCH))
    slope = (many - one) / (SEQUENCE_BATCH - 1.0)
    return once(np.maximum(tokens, 1.0)), one - slope, slope


#: The load engine's table of the kernel clock's step is priced at every token count up to
#: ``TABLE_EXACT_TOKENS`` and above it at ``TABLE_POINTS_PER_OCTAVE`` counts an octave,
#: linearly between them (the measured grids the prices interpolate are far coarser there):
#: a table of 32,768 rows prices 1,345 steps.
TABLE_EXACT_TOKENS, TABLE_POINTS_PER_OCTAVE = 1024, 64


def table_grid(tokens: np.ndarray) -> np.ndarray:
    """The token counts ``table_terms`` prices the step at, for a table over ``tokens``: every
    whole count to ``TABLE_EXACT_TOKENS``, then ``TABLE_POINTS_PER_OCTAVE`` an octave, and the
    largest."""
    top = float(np.max(tokens))
    exact = np.arange(0.0, min(top, TABLE_EXACT_TOKENS) + 1.0)
    if top <= TABLE_EXACT_TOKENS:
        return exact
    steps = math.ceil(math.log2(top / TABLE_EXACT_TOKENS) * TABLE_POINTS_PER_OCTAVE)
    octaves = np.arange(1, steps + 1) / TABLE_POINTS_PER_OCTAVE
    above = np.round(TABLE_EXACT_TOKENS * 2.0**octaves)
    return np.unique(np.concatenate([exact, above[above < top], [top]]))


def table_terms(model, gpus, pipeline, adiv, two_d: bool, tokens: np.ndarray):
    """The kernel clock's step in the load engine's form (``mixed_step.StepTable``): (seconds
    of a step of ``tokens`` tokens at no context less its per-sequence host work, seconds a
    sequence, seconds a cached layer-position read). The step at no context is
    ``StepModel``'s own (``kernel_tables``); a cached position's seconds are the generation
    attention's slope, ``SLOPE_BATCH`` decoding requests between the two ``SLOPE_CONTEXTS``
    (a position attended: ``attention_slope_s``)."""
    N, p = float(gpus), float(pipeline)
    tokens = np.asarray(tokens, dtype=float)
    grid = table_grid(tokens)
    part = model.pipeline_part(N, np.maximum(grid, 1.0), 1.0, 0.0, p, charged=True)
    lat2, lat1 = model.latency_by_dims(part, adiv, floor=False)  # the table floors the step
    step = lat2 if two_d else lat1
    profile, w = model.profile, model.work
    sequence_s = 0.0
    if profile is not None:
        ranks = model.engine.attention_replicas(adiv) if model.engine is not None else 1.0
        host = host_overhead_s(profile, 1.0 / p, ranks) - host_overhead_s(profile, 0.0)
        sequence_s = float(host)
    # the once-a-sequence kernels apart: a step's sequences, not its tokens, run them
    once, floor, a_sequence = per_sequence_terms(model, gpus, pipeline, adiv, two_d, grid)
    step = step - once + floor + a_sequence * grid
    step = (
        np.interp(tokens, grid, step) if np.all(np.isfinite(step)) else np.full_like(tokens, np.inf)
    )
    sequence_s += a_sequence
    rests = []
    for c in SLOPE_CONTEXTS:
        q = model.pipeline_part(N, SLOPE_BATCH, 1.0, c, p, charged=True)
        q = model.with_copies(q, model.copies_of(q, adiv))
        rests.append(float(kernel_step_s(model, q, adiv, two_d)[1]))
    read = SLOPE_BATCH * (
        w.layer_positions(SLOPE_CONTEXTS[1]) - w.layer_positions(SLOPE_CONTEXTS[0])
    )
    kv_s = (rests[1] - rests[0]) / read if read > 0.0 else 0.0
    return step - sequence_s * np.asarray(tokens, dtype=float), sequence_s, max(kv_s, 0.0)


def attention_slope_s(model, gpus, pipeline, adiv, two_d: bool, prompt: float) -> float:
    """The kernel clock's seconds a layer-position attended in a prompt (``StepTable``): the
    measured context attention of one prompt of ``prompt`` tokens (inside
    ``SLOPE_PROMPT_RANGE``) over its causal positions, shared by the ``adiv`` attention ranks
    that run their own prompts side by side (the load engine charges the positions of every
    rank's prompts, as many as the busiest rank's). A chunk of a longer prompt attends to its
    prefix too, so the prompt, not the chunk, sets the kernel's rate."""
    N, p, w = float(gpus), float(pipeline), model.work
    q = model.pipeline_part(N, SLOPE_BATCH, 1.0, SLOPE_CONTEXTS[0], p, charged=True)
    q = model.with_copies(q, model.copies_of(q, adiv))
    ops = part_operations(model, q, 1.0, SLOPE_CONTEXTS[0], adiv, two_d)
    attention = next((op for op in ops if op.work == "attention"), None)
    if attention is None:
        return 0.0
    s, gpu, kv = attention.shape, model.machine.gpu, Formats(w).kv
    heads, kv_heads = _at_least_1(s["heads"]), _at_least_1(s["kv_heads"])
    lo, hi = SLOPE_PROMPT_RANGE
    tokens = float(np.clip(prompt, lo, hi))
    # each layer at its own window's kernel, as a step's prompt attention is priced (a
    # sliding-window layer's prompt is not a full layer's: gpt-oss-20b's 16 Ki-token prompt on
    # a B200 is 41.1 ms over its 24 layers in BF16, where 24 full layers would be 71.9 ms)
    total = 0.0
    for layers, window in layer_windows(w, attention.calls):
        one = mla_s(gpu, kv, 1.0, heads, tokens=tokens) if w.model_class == "mla" else None
        if one is None:
            one = context_attention_s(gpu, kv, 1.0, tokens, heads, kv_heads, s["head_dim"], window)
        total = total + layers * float(one)
    attended = w.layer_positions(tokens) * tokens / 2.0
    ranks = float(np.asarray(adiv).flat[0])
    return _Pricer(model, q).scale * total / (attended * ranks)


def _nccl_table(name: str) -> str | None:
    """The NCCL table of the collective an operation's name states first (``all-gather
    (...)``) or in its parentheses, before any layer group (``expert dispatch (all-gather,
    layer group 1)``); None for another."""
    head, _, inner = name.partition(" (")
    return NCCL_OPERATION.get(head) or NCCL_OPERATION.get(inner.split(",")[0].rstrip(")"))


def _equal_prompt(prefix, tokens, window: float):
    """The causal prompt with no cached prefix that attends as many positions as ``tokens``
    after ``prefix`` do (``_attended``), each within ``window``: ``tokens`` itself without a
    prefix. A chunk's work scales so while each kernel's fixed cost is paid once (scaling the
    table's time of the chunk alone by the positions had multiplied that cost too: one token
    after 1,024 cached ones charged as 2,049 one-token prompts)."""
    target = _attended(prefix, tokens, window)
    plain = np.sqrt(2.0 * target)
    if not window:
        return plain
    inside = window * window / 2.0  # a prompt of the window's length attends this many
    return np.where(target <= inside, plain, window + (target - inside) / window)


def _attended(prefix, tokens, window: float):
    """Positions ``tokens`` causal tokens after ``prefix`` cached ones attend to in all, each
    at most ``window`` (0: none): tokens·(prefix + tokens/2) without one."""
    if not window:
        return tokens * (prefix + tokens / 2.0)
    below = np.clip(window - prefix, 0.0, tokens)  # tokens whose reach is inside the window
    return below * (prefix + below / 2.0) + (tokens - below) * window
