"""One step of a continuously batching engine: decode requests and prefill chunks in one forward
pass on a fixed layout (docs/model.md §E1).

``mixed_step_s`` is the definition, written on ``StepModel``: a pass over ``D + P`` tokens
(``D`` decoding requests, ``P`` prompt tokens) whose KV reads and attention arithmetic are those
of the decoding requests' contexts and of the prompt chunk's prefix. ``StepTable`` evaluates the
same thing fast: everything that depends only on the tokens of the step is tabulated for every
whole token count, and the context enters through two linear terms (§E1), so a step costs two
table look-ups and a ``max``.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..errors import plural
from ..specs.features import LAYOUT_FEATURES
from .efficiency import StepWork, combine, hidden_host_s, host_overhead_s
from .latency import StepModel, divisors, launched_attention_degrees
from .step_calls import exchange_terms_s, total_time_s
from .workload import Workload


@dataclass(frozen=True)
class EngineLayout:
    """The whole layout an engine instance runs with: GPUs, pipeline degree, attention divisor
    (attention tensor degree = GPUs / pipeline / divisor) and 1-D or 2-D tensor parallelism."""

    gpus: int
    pipeline: int = 1
    attention_divisor: float = 1.0
    two_d: bool = False

    @property
    def tensor_degree(self) -> int:
        return self.gpus // self.pipeline

    @property
    def attention_degree(self) -> float:
        return self.tensor_degree / self.attention_divisor

    def describe(self) -> str:
        """Such as "8 GPUs: TP8 (attention TP8), PP1, 1-D"."""
        dims = "" if self.tensor_degree <= 1 else ", 2-D" if self.two_d else ", 1-D"
        return (
            f"{self.gpus} {plural(self.gpus, 'GPU')}: TP{self.tensor_degree} "
            f"(attention TP{self.attention_degree:g}), PP{self.pipeline}{dims}"
        )


def candidate_layouts(
    work: Workload, gpus: int, pipeline: bool = True, features=LAYOUT_FEATURES, copies=False
) -> list[EngineLayout]:
    """Every whole layout of an instance of ``gpus`` GPUs (§B7's rules) that an engine with
    these layout ``features`` runs (§F11); ``copies``: the preset counts §B13's KV copies."""
    out = []
    pipeline = pipeline and "pipeline" in features
    for p in divisors(work.layers) if pipeline else [1]:
        if gpus % p:
            continue
        t = gpus // p
        for t_at in launched_attention_degrees(work, t, features, copies):
            for two_d in (False, True) if t > 1 and "tensor_2d" in features else (False,):
                out.append(EngineLayout(gpus, p, t / t_at, two_d))
    return out


def mixed_step_s(
    model: StepModel,
    prefill_work: Workload,
    layout: EngineLayout,
    decode_requests,
    decode_context,
    prefill_tokens,
    prefill_context=0.0,
    prefill_prompts=None,
):
    """Seconds of one engine step (arrays broadcast): ``decode_requests`` requests decoding one
    token each at mean context ``decode_context``, and ``prefill_tokens`` prompt tokens in
    chunks of ``prefill_prompts`` prompts (default: one chunk when there are any) after
    ``prefill_context`` tokens of each already prefilled (§E1). ``prefill_work`` is the
    workload with causal attention (the mean context over a chunk, §B8). The chunks share the
    step's one read of the weights. 0 for an empty step.
    """
    part, tokens = _mixed_part(
        model,
        prefill_work,
        layout,
        decode_requests,
        decode_context,
        prefill_tokens,
        prefill_context,
        prefill_prompts,
    )
    lat2, lat1 = model.latency_by_dims(part, layout.attention_divisor)
    return np.where(tokens > 0, lat2 if layout.two_d else lat1, 0.0)


def mixed_step_work(
    model: StepModel,
    prefill_work: Workload,
    layout: EngineLayout,
    decode_requests,
    decode_context,
    prefill_tokens,
    prefill_context=0.0,
    prefill_prompts=None,
) -> StepWork:
    """The ``StepWork`` of a mixed step under an engine profile (§F1): ``combine`` of it with
    the model's profile is ``mixed_step_s`` (for a non-empty step); calibration combines it
    with other trial terms."""
    if model.engine is None:
        raise ValueError("mixed_step_work needs a model under an engine profile (achievable)")
    part, _ = _mixed_part(
        model,
        prefill_work,
        layout,
        decode_requests,
        decode_context,
        prefill_tokens,
        prefill_context,
        prefill_prompts,
    )
    adiv, two_d = layout.attention_divisor, layout.two_d
    coll_lat, coll_bw = model.collective_terms(part, adiv, two_d)
    fusable = model.fusable_bandwidth_s(part, adiv, two_d)
    part = model.with_copies(part, model.copies_of(part, adiv))  # §B13, as the step has them
    reads = model.attention_reads(part, adiv)
    exchange = exchange_terms_s(model, part, adiv)
    return model.engine.step_work(part, adiv, coll_lat, coll_bw, reads, fusable, exchange)


def _mixed_part(
    model,
    prefill_work,
    layout,
    decode_requests,
    decode_context,
    prefill_tokens,
    prefill_context,
    prefill_prompts,
):
    """(PipelinePart of the mixed step, tokens) as §E1 defines the step (with §B12's
    pipeline bubbles: the step is charged ``pipeline_tokens`` tokens, its KV reads and
    attention in proportion; its FLOP stay the tokens' own)."""
    D = np.asarray(decode_requests, dtype=float)
    P = np.asarray(prefill_tokens, dtype=float)
    R = (P > 0).astype(float) if prefill_prompts is None else np.asarray(prefill_prompts, float)
    tokens = D + P
    N, p = float(layout.gpus), float(layout.pipeline)
    chunk = np.where(R > 0, P / np.maximum(R, 1e-300), 0.0)  # tokens of each prompt's chunk
    largest = np.maximum(chunk, np.where(D > 0, 1.0, 0.0))
    charged = pipeline_tokens(model, tokens, largest, p, D + R)
    scale = charged / np.maximum(tokens, 1.0)
    base = model.pipeline_part(N, np.maximum(charged, 1.0), 1.0, 0.0, p, charged=True)
    w, m = model.work, model.machine
    kv_bytes = w.kv_cache_bytes(decode_context, D) + w.kv_cache_bytes(prefill_context, R)
    attention_kv = w.attention_kv_bytes(decode_context, D) + w.attention_kv_bytes(
        prefill_context, R
    )
    ctx_flop = w.flop(D, 1.0, decode_context)[1] + prefill_work.flop(R, chunk, prefill_context)[1]
    flop = base.flop + ctx_flop
    if charged is not tokens:  # the bubbles: time as charged, FLOP as done
        kv_bytes, flop = kv_bytes * scale, base.flop / scale + ctx_flop
        ctx_flop, attention_kv = ctx_flop * scale, attention_kv * scale
    part = dataclasses.replace(
        base,
        kv_read_s=kv_bytes / (N * m.hbm_bandwidth_bytes_per_s),
        kv_attention_read_s=attention_kv / (N * m.hbm_bandwidth_bytes_per_s),
        ff_context_compute_s=base.ff_context_compute_s + ctx_flop / (N * m.attention_flop_per_s),
        flop=flop,
    )
    if part.achievable is not None:
        part = _achievable_mixed(model, part, D + R, ctx_flop, N)
    return part, tokens


def pipeline_tokens(model: StepModel, tokens, largest, pipeline, sequences):
    """Tokens a step over ``pipeline`` stages is charged for (docs/model.md §B12): its
    ``tokens`` as p balanced micro-batches (the paper), or under ``pipeline_bubbles``, where
    its ``sequences`` (decoding requests and prompt chunks) are fewer than the stages and so
    cannot fill p micro-batches, p times its largest one, which holds its largest sequence
    (``largest`` tokens: a prompt's chunk, or 1 for a decoding request): that micro-batch
    crosses the stages one after another, and a lone prompt crosses them serially. With as
    many sequences as stages an engine fills its micro-batches side by side (the paper's
    balanced micro-batches). ``tokens`` itself where nothing changes."""
    if pipeline <= 1 or not model.assumptions.pipeline_bubbles:
        return tokens
    few = np.asarray(sequences, dtype=float) < pipeline
    return np.where(few, np.maximum(tokens, pipeline * np.asarray(largest, dtype=float)), tokens)


def _achievable_mixed(model: StepModel, part, sequences, ctx_flop, N):
    """The per-sequence work of a mixed step under an engine profile (§F1): KV costs per
    request, logits and per-sequence overheads for the decoding requests and the chunks'
    prompts only; attention arithmetic of the actual contexts."""
    ap, w = part.achievable, model.work
    t, p = part.tensor_degree, part.pipeline
    seqs = sequences / p  # per micro-batch, as pipeline_part counts requests
    bw = model.machine.gpu.hbm_bandwidth_bytes_per_s
    new = dataclasses.replace(
        ap,
        kv_request_read_s=w.kv_bytes_per_token * seqs / (t * bw),
        logits_read_s=12.0 * w.vocab_size * seqs / (t * bw),
        attention_s=ctx_flop / (N * model.machine.attention_flop_per_s),
        sequences=seqs,
    )
    return dataclasses.replace(part, achievable=new)


def row_floats(values: np.ndarray) -> Sequence[float]:
    """A step table's column by row as an array of 8-byte floats: indexed a step at a time as
    a list is, each row a Python float of the same value, without a float object a row (a
    list's 32 bytes a row were most of the tables a long run keeps, one an instance)."""
    return array("d", np.ascontiguousarray(values, dtype=float).tobytes())


class StepTable:
    """``mixed_step_s`` for every whole token count up to ``max_tokens``, split as

        step = fixed[T] + max(memory[T] + kv_s·Q_kv, compute[T] + attention_s·Q_att)

    with ``T`` the tokens of the step, ``Q_kv`` the layer-positions of KV cache read and
    ``Q_att`` the layer-positions attended to, summed over the step's tokens (§E1). The split
    is checked against ``StepModel.latency`` when the table is built.
    """

    def __init__(
        self, model: StepModel, layout: EngineLayout, max_tokens: int, prompt: float | None = None
    ) -> None:
        """``prompt``: the prompt whose context attention gives the kernel clock's seconds a
        position attended (None: ``kernel_clock.SLOPE_PROMPT``; ``at_prompt`` reads another)."""
        self.layout = layout
        self.max_tokens = int(max_tokens)
        #: §B12: a step is looked up at the tokens it is charged for (``pipeline_tokens``),
        #: up to p times the most tokens of a step.
        self.pipeline = int(layout.pipeline)
        self.bubbles = layout.pipeline > 1 and model.assumptions.pipeline_bubbles
        if self.bubbles:
            self.max_tokens *= self.pipeline
        #: Seconds per request of the step outside (sequence_s) and on the memory side of
        #: (request_s) the attention roofline: 0 for the ideal presets (§F1, §F5).
        self.sequence_s = self.request_s = 0.0
        #: A step lasts at least ``host_floor_s + host_sequence_s·r`` (``r`` its requests and
        #: chunks) where the runtime overlaps its host work with the GPU (§F5,
        #: ``efficiency.hidden_host_s``); 0: no such floor.
        self.host_floor_s = self.host_sequence_s = 0.0
        #: The runtime plans each step's batch while the GPU runs the one before (an overlap
        #: scheduler, ``host_overhead_exposed`` < 1): an arrival joins the step after next (§F5).
        self.prepares_ahead = False
        #: A decode-only step of ``r`` requests runs as the CUDA graph of ``graph_requests[r]``
        #: (``with_graphs``, §F5); None: as it is.
        self.graph_requests: list[int] | None = None
        #: A step's prompt attention runs after its decoding requests' as a kernel of its own,
        #: so their seconds add (the kernel clock's step is its kernels' sum); False: the
        #: roofline's overlap of the two lines (``time_s``'s ``prompt_kv`` and ``prompt_att``).
        self.serial_prompts = False
        #: Seconds a layer-position a prompt chunk attends where ``serial_prompts``: the context
        #: kernel's own rate, which ``attention_s`` holds to the generation kernel's.
        self.prompt_attention_s = 0.0
        #: the kernel clock's model and its slopes by prompt (``at_prompt``); None: another clock
        self._kernel_model: StepModel | None = None
        self._prompts: dict = {}
        if model.engine is not None and model.assumptions.kernel_tables:
            self._kernels(model, prompt)
            return
        if model.engine is not None:
            self._achievable(model)
            return
        N, p, adiv = float(layout.gpus), float(layout.pipeline), layout.attention_divisor
        T = np.arange(self.max_tokens + 1, dtype=float)
        part = model.pipeline_part(N, np.maximum(T, 1.0), 1.0, 0.0, p, charged=True)
        attention = total_time_s(model.attention_calls(part, adiv, layout.two_d))
        shared = part.collective_2d_s if layout.two_d else part.collective_1d_s
        weights, acts = model.attention_reads(part, adiv)
        memory = part.memory_base_s + weights + acts
        compute = model.compute_time(part, adiv)
        fixed = model.kernel_s + attention + shared + np.zeros_like(T)
        lat2, lat1 = model.latency_by_dims(part, adiv)
        expected = lat2 if layout.two_d else lat1
        if not np.allclose(fixed + np.maximum(memory, compute), expected, rtol=1e-9, atol=0.0):
            raise RuntimeError(
                "model/mixed_step.py: the split of a step no longer matches StepModel.latency; "
                "update StepTable to the new terms of the step model"
            )
        empty = T == 0
        # 8-byte rows read as Python floats: the simulator indexes them one step at a time
        self.fixed_s = row_floats(np.where(empty, 0.0, fixed))
        self.memory_s = row_floats(np.where(empty, 0.0, memory))
        self.compute_s = row_floats(np.where(empty, 0.0, compute))
        self.flop = row_floats(np.where(empty, 0.0, part.flop))
        work, machine = model.work, model.machine
        copies = float(model.kv_copies(layout.attention_degree))  # §B13
        self.kv_s = (
            copies * work.kv_bytes_per_position_per_layer / (N * machine.hbm_bandwidth_bytes_per_s)
        )
        self.attention_s = work.context_flop_per_position_per_layer / (
            N * machine.attention_flop_per_s
        )
        self.attention_flop = work.context_flop_per_position_per_layer
        self.peak_flop_per_s = N * machine.peak_flop_per_s

    def _achievable(self, model: StepModel) -> None:
        """The table of an achievable step (§F1): the GEMM roofline, elementwise traffic,
        collectives and fixed overheads by tokens; per-request terms (sequence overheads and
        logits; decode attention's fixed cost per request) apart; KV and attention lines."""
        layout, prof = self.layout, model.profile
        N, p, adiv = float(layout.gpus), float(layout.pipeline), layout.attention_divisor
        T = np.arange(self.max_tokens + 1, dtype=float)
        part = model.pipeline_part(N, np.maximum(T, 1.0), 1.0, 0.0, p, charged=True)
        lat, bw = model.collective_terms(part, adiv, layout.two_d)
        fusable = model.fusable_bandwidth_s(part, adiv, layout.two_d)
        plain = part  # StepModel.latency adds the copies itself: the check below uses this
        part = model.with_copies(part, model.copies_of(part, adiv))  # §B13
        assert model.engine is not None, "a step table is built under an engine profile"
        reads, exchange = model.attention_reads(part, adiv), exchange_terms_s(model, part, adiv)
        work = model.engine.step_work(part, adiv, lat, bw, reads, fusable, exchange)
        self._host_terms(model)
        alone = combine(  # the GPU's step: the host's floor apart (``time_s``)
            work.replace(sequences=0.0, kv_request_read_s=0.0, logits_read_s=0.0, kv_read_s=0.0),
            prof,
            host_floor=False,
        )
        one = work.replace(
            sequences=1.0 / p, kv_request_read_s=work.kv_request_read_s / np.maximum(T, 1.0)
        )
        one = one.replace(logits_read_s=one.logits_read_s / np.maximum(T, 1.0))
        per = combine(one, prof, host_floor=False)
        ranks = model.engine.attention_replicas(adiv)  # each schedules its share (§F5)
        host = host_overhead_s(prof, 1.0 / p, ranks) - host_overhead_s(prof, 0.0)
        scale = prof.step_time_scale
        self.sequence_s = float(scale * host) + float(
            np.asarray(per.elementwise_s - alone.elementwise_s)[1]
        )
        self.request_s = float(np.asarray(per.kv_s)[1])
        empty = T == 0
        self.fixed_s = row_floats(np.where(empty, 0.0, alone.total_s))
        self.memory_s = [0.0] * len(T)
        self.compute_s = [0.0] * len(T)
        self.flop = row_floats(np.where(empty, 0.0, part.flop))
        w, gpu = model.work, model.machine.gpu
        self.kv_s = (
            scale
            * float(model.kv_copies(layout.attention_degree))  # §B13
            * w.kv_bytes_per_position_per_layer
            / (N * gpu.hbm_bandwidth_bytes_per_s * prof.kv_read_efficiency)
        )
        self.attention_s = (
            scale
            * w.context_flop_per_position_per_layer
            / (N * model.machine.attention_flop_per_s * prof.attention_efficiency)
        )
        self.attention_flop = w.context_flop_per_position_per_layer
        self.peak_flop_per_s = N * model.machine.peak_flop_per_s
        lat2, lat1 = model.latency_by_dims(plain, adiv)
        expected = np.where(empty, 0.0, lat2 if layout.two_d else lat1)
        # time_s of each row as itself, no KV or attention positions, one request per token
        got = np.where(
            empty,
            0.0,
            self._floored(
                np.asarray(self.fixed_s)
                + self.sequence_s * T
                + np.maximum(np.asarray(self.memory_s) + self.request_s * T, self.compute_s),
                T,
            ),
        )
        if not np.allclose(got, expected, rtol=1e-9, atol=0.0):
            # part of a request's KV read hides behind other work of the step (a hybrid's
            # recurrent layers): its slope is the step's own, one request more
            self.request_s = float(np.asarray(expected)[1] - self.fixed_s[1]) - self.sequence_s
            got = np.where(
                empty,
                0.0,
                self._floored(np.asarray(self.fixed_s) + (self.sequence_s + self.request_s) * T, T),
            )
        if not np.allclose(got, expected, rtol=1e-9, atol=0.0):
            raise RuntimeError(
                "model/mixed_step.py: the achievable table no longer matches StepModel.latency"
            )

    def _host_terms(self, model: StepModel) -> None:
        """The profile's overlapped host work a step and a request (``1/p`` a micro-batch, §F5)."""
        engine, prof, p = model.engine, model.profile, float(self.layout.pipeline)
        ranks = engine.attention_replicas(self.layout.attention_divisor) if engine else 1.0
        self.host_floor_s = float(hidden_host_s(prof, 0.0))
        self.host_sequence_s = float(hidden_host_s(prof, 1.0 / p, ranks)) - self.host_floor_s
        self.prepares_ahead = bool(float(prof.host_overhead_exposed) < 1.0)

    def _kernels(self, model: StepModel, prompt: float | None) -> None:
        """The table of the kernel clock's step (``kernel_tables``, ``kernel_clock``): its
        step at no context by tokens, its host work a sequence, and the measured attention's
        seconds a cached position read (memory side) and a position attended (arithmetic)."""
        from .kernel_clock import SLOPE_PROMPT, table_terms

        layout = self.layout
        T = np.arange(self.max_tokens + 1, dtype=float)
        fixed, self.sequence_s, self.kv_s = table_terms(
            model, layout.gpus, layout.pipeline, layout.attention_divisor, layout.two_d, T
        )
        self._kernel_model = model
        self.serial_prompts = True
        key = SLOPE_PROMPT if prompt is None else prompt
        self.attention_s, self.prompt_attention_s = self._attention_at(key)
        self._host_terms(model)
        empty = T == 0
        self.fixed_s = row_floats(np.where(empty, 0.0, fixed))
        self.memory_s = [0.0] * len(T)
        self.compute_s = [0.0] * len(T)
        N = float(layout.gpus)
        # the step's FLOP (``PipelinePart.flop``), without the rest of the part it sits in
        ff, ctx, proj = model.work.flop(np.maximum(T, 1.0), 1.0, 0.0)
        self.flop = row_floats(np.where(empty, 0.0, ff + ctx + proj))
        self.attention_flop = model.work.context_flop_per_position_per_layer
        self.peak_flop_per_s = N * model.machine.peak_flop_per_s

    def _attention_at(self, prompt: float) -> tuple[float, float]:
        """The kernel clock's seconds a layer-position attended at prompts of ``prompt``
        tokens (``kernel_clock.attention_slope_s``), kept by prompt: (held to the generation
        attention's, for the step's lines; as measured, for the prompts' own kernel)."""
        from .kernel_clock import SLOPE_PROMPT_RANGE, attention_slope_s

        key = float(np.clip(prompt, *SLOPE_PROMPT_RANGE))
        if key not in self._prompts:
            lay = self.layout
            slope = attention_slope_s(
                self._kernel_model, lay.gpus, lay.pipeline, lay.attention_divisor, lay.two_d, key
            )
            # a decoding request's positions count on both sides of the step's maximum: a
            # short prompt's kernel, its fixed time spread over few positions, would otherwise
            # charge every decode step's attention at its rate instead of the generation
            # kernel's; the prompts' own kernel, charged after the lines, keeps its rate
            self._prompts[key] = (min(slope, self.kv_s), slope)
        return self._prompts[key]

    def at_prompt(self, prompt: float) -> StepTable:
        """The table for prompts of ``prompt`` tokens (a mean): under the kernel clock its
        seconds a position attended read at them, since a context-attention kernel's rate grows
        with its prompt (``kernel_clock.SLOPE_PROMPT_RANGE``); the table itself under another
        clock, whose attention runs at one rate, or where ``prompt`` is not a number of tokens."""
        if self._kernel_model is None or not math.isfinite(prompt) or prompt <= 0.0:
            return self
        slope, own = self._attention_at(prompt)
        if (slope, own) == (self.attention_s, self.prompt_attention_s):
            return self
        out = copy.copy(self)
        out.attention_s, out.prompt_attention_s = slope, own
        return out

    def slowed(self, factor: float) -> StepTable:
        """The same table with every step ``factor`` times as long: each time term scaled (the
        FLOP and the layout unchanged), for an engine at an end of its step time's interval
        (docs/model.md §F12)."""
        out = copy.copy(self)
        out._kernel_model = None  # its attention slope stays as slowed (``at_prompt``)
        for name in ("fixed_s", "memory_s", "compute_s"):
            setattr(out, name, [factor * t for t in getattr(self, name)])
        for name in ("sequence_s", "request_s", "kv_s", "attention_s", "prompt_attention_s"):
            setattr(out, name, factor * getattr(self, name))
        out.host_floor_s, out.host_sequence_s = (
            factor * self.host_floor_s,
            factor * self.host_sequence_s,
        )
        return out

    def _charged(self, tokens: int, largest: float = 1.0, sequences=None) -> tuple[int, float]:
        """(row of the table, factor on the positions) of a step of ``tokens`` tokens in
        ``sequences`` sequences (default: one per token) whose largest has ``largest`` tokens
        (§B12; the step itself without pipeline bubbles, or with as many sequences as stages)."""
        sequences = tokens if sequences is None else sequences
        if not self.bubbles or sequences >= self.pipeline:
            return tokens, 1.0
        row = min(max(tokens, math.ceil(self.pipeline * largest - 1e-9)), self.max_tokens)
        return row, row / tokens

    def _graph(self, tokens: int, r) -> tuple[int, int]:
        """(tokens, sequences) a decode-only step of ``tokens`` tokens in ``r`` requests runs as:
        its CUDA graph's, the requests padded (``graph_requests``) with dummy requests of as many
        tokens each, whose caches are empty; itself without graphs."""
        g = self.graph_requests
        if g is None or not 0 < r < len(g) or g[r] == r:
            return tokens, r
        padded = g[int(r)]
        return min(self.max_tokens, padded * int(tokens) // int(r)), padded

    def time_s(
        self,
        tokens: int,
        kv_positions: float,
        attention_positions: float,
        requests=None,
        largest: float = 1.0,
        prompt_kv: float = 0.0,
        prompt_att: float = 0.0,
    ) -> float:
        """Seconds of one step (scalars; 0 for an empty step). ``requests``: the decoding
        requests and prompt chunks of the step (default: one per token), for the per-request
        costs of an engine profile (§F1); ``largest``: the tokens of its largest prompt chunk
        (1: decoding requests only), for the pipeline's bubbles (§B12); ``prompt_kv`` and
        ``prompt_att``: the part of the positions read and attended that the prompt chunks
        account for, charged after the decoding requests' where ``serial_prompts``."""
        if tokens == 0:
            return 0.0
        r = tokens if requests is None else requests
        row, scale = self._charged(tokens, largest, r)
        after = 0.0
        if self.serial_prompts and (prompt_kv or prompt_att):
            kv_positions -= prompt_kv  # the context kernel reads the prefixes it attends to
            attention_positions -= prompt_att
            after = self.prompt_attention_s * prompt_att
        if scale != 1.0:
            kv_positions, attention_positions = kv_positions * scale, attention_positions * scale
            after *= scale
        gpu = (
            self.fixed_s[row]
            + self.sequence_s * r
            + max(
                self.memory_s[row] + self.kv_s * kv_positions + self.request_s * r,
                self.compute_s[row] + self.attention_s * attention_positions,
            )
            + after
        )
        if self.host_sequence_s:
            return max(gpu, self.host_floor_s + self.host_sequence_s * r)
        return gpu

    def _floored(self, gpu, requests):
        """Step seconds ``gpu`` no shorter than the host's overlapped work for ``requests``."""
        if not self.host_sequence_s:
            return gpu
        return np.maximum(gpu, self.host_floor_s + self.host_sequence_s * np.asarray(requests))

    def run_time_s(
        self,
        tokens: int,
        positions: float,
        growth: float,
        steps: int,
        requests=None,
        attention: float = 1.0,
        terms: tuple | None = None,
    ) -> float:
        """Seconds of ``steps`` decode-only steps of ``tokens`` tokens whose KV
        layer-positions start at ``positions`` and grow by ``growth`` per step, in closed form:
        each step's time is the larger of two lines in the step index (memory and compute),
        and no shorter than the host's overlapped work (``host_floor_s``), the same for every
        step of the run, up to the step from which the GPU's is longer.
        ``requests``: the sequences of the step (default: one per token); ``attention``: the
        tokens each sequence's cache is attended by (a verification of ``v`` tokens per
        request reads the cache once and attends to it ``v`` times, §E8); ``terms``: their
        ``decode_terms``, where the caller keeps them."""
        if steps <= 0 or tokens == 0:
            return 0.0
        if terms is None:
            terms = self.decode_terms(tokens, tokens if requests is None else requests, attention)
        host = terms[7]
        if host and decode_step_s(terms, positions) < host:
            # the steps' GPU time grows with the run: the first j whose is the longer
            lo, hi = 0, steps  # gpu(lo) < host; hi: none found below it
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if decode_step_s(terms, positions + growth * mid) < host:
                    lo = mid
                else:
                    hi = mid
            rest = decode_run_s(terms, positions + growth * hi, growth, steps - hi)
            return hi * host + rest
        return decode_run_s(terms, positions, growth, steps)

    def decode_terms(self, tokens: int, r, attention: float = 1.0) -> tuple:
        """What the decode-only steps of ``tokens`` tokens in ``r`` sequences (``attention`` as
        in ``run_time_s``) read of the table, the same for every step of a run: (seconds
        outside the two lines, the memory line's row, its per-request part, the compute line's
        row, the two lines' seconds a position, the factor on the positions (§B12), the host's
        floor (0: none)). A run of steps keeps them (``DecodeRuns``): looked up once, not a
        step at a time."""
        row, g = self._graph(tokens, r)
        row, scale = self._charged(row, row / g, g)
        host = self.host_floor_s + self.host_sequence_s * r if self.host_sequence_s else 0.0
        return (
            self.fixed_s[row] + self.sequence_s * g,
            self.memory_s[row],
            self.request_s * g,
            self.compute_s[row],
            self.kv_s,
            self.attention_s * attention,
            scale,
            host,
        )

    def times_s(self, tokens: int, positions, requests=None, attention: float = 1.0):
        """Seconds of decode-only steps of ``tokens`` tokens whose KV layer-positions are the
        array ``positions`` (a decoding token attends to exactly what its request caches;
        ``requests`` and ``attention`` as in ``run_time_s``)."""
        gpu = self._gpu_times_s(tokens, positions, requests, attention)
        if self.host_sequence_s:
            r = tokens if requests is None else requests
            return np.maximum(gpu, self.host_floor_s + self.host_sequence_s * r)
        return gpu

    def _gpu_times_s(self, tokens: int, positions, requests=None, attention: float = 1.0):
        """``times_s`` of the GPU's steps alone (no host floor)."""
        tokens, r = self._graph(tokens, tokens if requests is None else requests)
        row, scale = self._charged(tokens, tokens / r, r)
        positions = positions * scale
        gpu = (
            self.fixed_s[row]
            + self.sequence_s * r
            + np.maximum(
                self.memory_s[row] + self.kv_s * positions + self.request_s * r,
                self.compute_s[row] + self.attention_s * attention * positions,
            )
        )
        return gpu


def table_steps_s(
    table: StepTable, tokens, kv_positions, attention_positions, requests, largest, prompt_att
):
    """``table.time_s`` over arrays of steps whose prompt chunks start from nothing (what they
    attend, ``prompt_att``, is read from no cache): the layout choice's estimate reads the
    table as the simulation does (§E6)."""
    T = np.asarray(tokens, dtype=np.int64)
    r = np.asarray(requests, dtype=float)
    if table.bubbles:  # a step's row and scale depend on its sequences (§B12): one by one
        each = np.broadcast_arrays(T, kv_positions, attention_positions, r, largest, prompt_att)
        flat = zip(*(np.ravel(x) for x in each))
        one = [table.time_s(int(t), k, a, q, b, 0.0, pa) for t, k, a, q, b, pa in flat]
        return np.reshape(one, each[0].shape)
    att, after = np.asarray(attention_positions, dtype=float), 0.0
    if table.serial_prompts:
        att, after = att - prompt_att, table.prompt_attention_s * np.asarray(prompt_att)
    fixed, memory, compute = (  # a view of each 8-byte column, no copy (a list: the zeros)
        (np.frombuffer(c, dtype=float) if isinstance(c, array) else np.asarray(c, dtype=float))[T]
        for c in (table.fixed_s, table.memory_s, table.compute_s)
    )
    gpu = fixed + table.sequence_s * r + after
    gpu += np.maximum(
        memory + table.kv_s * kv_positions + table.request_s * r,
        compute + table.attention_s * att,
    )
    return np.where(T == 0, 0.0, table._floored(gpu, r))


def decode_step_s(terms: tuple, positions: float) -> float:
    """The GPU's seconds (no host floor) of one decode-only step of a table's
    ``StepTable.decode_terms`` at ``positions``: the larger of the memory and compute lines."""
    fixed, memory, per_request, compute, kv_s, attention_s, scale, _ = terms
    p = positions * scale
    u = memory + kv_s * p + per_request
    w = compute + attention_s * p
    return fixed + (w if w > u else u)  # max(u, w)


def decode_run_s(terms: tuple, positions: float, growth: float, steps: int) -> float:
    """``StepTable.run_time_s`` of the GPU's steps alone (no host floor), of a table's
    ``StepTable.decode_terms``."""
    if steps <= 0:
        return 0.0
    fixed, memory, per_request, compute, kv_s, at_s, scale, _ = terms
    if scale != 1.0:
        positions, growth = positions * scale, growth * scale
    u0 = memory + kv_s * positions + per_request
    v0 = compute + at_s * positions
    du, dv = kv_s * growth, at_s * growth
    d0, d1 = u0 - v0, du - dv  # memory minus compute at step j: d0 + d1·j
    if d1 == 0.0 or (d0 >= 0.0) == (d1 > 0.0):
        split = steps  # one side binds throughout
    elif d0 >= 0.0:  # memory binds until d0 + d1·j < 0
        split = min(steps, math.floor(-d0 / d1) + 1)
    else:  # compute binds until d0 + d1·j >= 0
        split = min(steps, math.ceil(-d0 / d1))
    if d0 >= 0.0:  # memory first, then compute
        a, da, b, db = u0, du, v0, dv
    else:
        a, da, b, db = v0, dv, u0, du
    # Σ_{j=lo}^{hi-1} (start + slope·j) = n·start + slope·(lo + hi - 1)·n/2 (n = hi - lo) over
    # steps [0, split) of the first line and [split, steps) of the second, written out (the
    # simulator calls this for every run of decode steps)
    first = split * a + da * (split - 1) * split / 2.0 if split > 0 else 0.0
    n = steps - split
    second = n * b + db * (split + steps - 1) * n / 2.0 if n > 0 else 0.0
    return steps * fixed + first + second


def run_reaching_s(
    table: StepTable,
    tokens: int,
    positions: float,
    growth: float,
    steps: int,
    seconds: float,
    full_s: float,
    terms: tuple | None = None,
) -> tuple[int, float]:
    """(n, ``table.run_time_s`` of n steps): the fewest of ``steps`` decode-only steps (as in
    ``table.run_time_s``) whose run lasts ``seconds`` or more, given ``full_s``, the seconds of
    all ``steps`` (at least ``seconds``). No step is shorter than the one before it, so n lies
    between ``seconds`` over the n-th step's time and over the first's: two guesses from
    those bound the search, which is then a bisection of a step or two, not of the run.
    ``terms``: the steps' ``table.decode_terms``, where the caller keeps them."""
    if terms is None:
        terms = table.decode_terms(tokens, tokens)
    run = partial(table.run_time_s, tokens, positions, growth, terms=terms)
    lo, hi, span = 1, steps, full_s  # the answer lies in [lo, hi]; span: run(hi)
    host, step = terms[7], decode_step_s
    first = max(step(terms, positions), host)
    if first > 0.0 and seconds > 0.0:
        guess = math.ceil(seconds / first)  # run(guess) >= guess x first >= seconds
        if guess < hi:
            s = run(guess)
            if s >= seconds:
                hi, span = guess, s
            else:
                lo = guess + 1
        longest = max(step(terms, positions + growth * (hi - 1)), host)
        guess = math.ceil(seconds / longest)  # run(guess - 1) < seconds
        if lo < guess <= hi:
            s = run(guess - 1)
            if s < seconds:
                lo = guess
            else:
                hi, span = guess - 1, s
    return first_reaching(run, seconds, lo, hi, span)


def first_reaching(run, seconds: float, lo: int, hi: int, span: float) -> tuple[int, float]:
    """(n, run(n)): the fewest steps n in [lo, hi] whose ``run(n)`` (seconds, never less for more
    steps) reaches ``seconds``, by bisection, given ``span`` = run(hi) >= seconds."""
    while lo < hi:
        mid = (lo + hi) // 2
        s = run(mid)
        if s >= seconds:
            hi, span = mid, s
        else:
            lo = mid + 1
    return hi, span


def captured_sizes(sizes, rank_cap: int = 0) -> list[int]:
    """The CUDA graph batch sizes an engine captures of ``sizes`` (TensorRT-LLM's
    ``cuda_graph_config.batch_sizes`` with ``enable_padding``, §F5): those above a rank's
    largest decode batch ``rank_cap`` (0: none) give way to ``rank_cap`` itself."""
    ordered = sorted(int(s) for s in sizes)
    if rank_cap and ordered and ordered[-1] > rank_cap:
        ordered = [s for s in ordered if s < rank_cap] + [int(rank_cap)]
    return ordered


def graph_batch(requests: float, captured: list[int], ranks: int = 1) -> float:
    """The requests a decode-only step of ``requests`` runs as over ``ranks`` attention-DP
    ranks under the ``captured`` graphs (``captured_sizes``): each rank pads the busiest rank's
    count (``ceil(requests / ranks)``, balanced ranks) up to the next size, so the step runs
    ``ranks`` x that; ``requests`` itself above the largest size or without graphs."""
    busiest = math.ceil(requests / ranks - 1e-9)
    if not captured or busiest > captured[-1] or requests <= 0:
        return requests
    return float(ranks * captured[bisect.bisect_left(captured, busiest)])


def graph_padded_requests(limit: int, captured: list[int], ranks: int = 1) -> list[int]:
    """``graph_batch`` of every request count up to ``limit`` (the step table's rows), held to
    ``limit``: one array operation, as a step table is built for every instance."""
    r = np.arange(int(limit) + 1)
    if not captured:
        return r.tolist()
    sizes = np.asarray(captured, dtype=np.int64)
    busiest = -(-r // ranks)
    idx = np.minimum(np.searchsorted(sizes, busiest), len(sizes) - 1)
    padded = np.where((r > 0) & (busiest <= sizes[-1]), ranks * sizes[idx], r)
    return np.minimum(padded, int(limit)).tolist()


def with_graphs(table: StepTable, captured: list[int], ranks: int = 1) -> StepTable:
    """``table`` with its decode-only steps charged at the CUDA graph each replays of the
    ``captured`` sizes (``captured_sizes``) over ``ranks`` attention ranks; ``table`` itself
    without graphs."""
    if not captured:
        return table
    out = copy.copy(table)
    out.graph_requests = graph_padded_requests(table.max_tokens, captured, ranks)
    return out
