"""The scheduler's policies, each chosen once when an engine is built (docs/model.md §E3).

* Admission (``EngineConfig.admission``): waiting requests join the batch first come, first
  served while it has room (``max_batch_requests``) and the KV cache can hold them:
  ``Recompute`` asks for room for the prompt now and for every running request's next token
  (vLLM's order), ``NoEvict`` for the whole request, prompt and output, beside the peaks promised
  to every admitted request (TensorRT-LLM's guaranteed no-evict policy; ``PlainNoEvict`` is the
  same rule without a prefix cache, written for speed). A request that never fits is rejected.
* Preemption (``Admission.preempt``): when the cache cannot hold the next token of every
  running request (possible only under recompute admission) the request admitted last loses
  its cache and waits at the head of the queue, to be prefilled again with the tokens it had
  generated (recomputation, as vLLM does); nothing is admitted until a request finishes.
* Prefill (``EngineConfig.prefill``): what a step's token budget, less a token per decoding
  request, buys of the prompts, from the head of the queue: chunks of them (``Chunked``), whole
  prompts while they fit (``Whole``), whole prompts in steps of their own while decoding
  waits (``Separate``), or chunks of them in steps of their own (``ChunkedSeparate``); a
  prompt longer than the whole budget goes in chunks of it under every mode.

An admission policy reads and writes the engine's state (``engine_state.EngineState``); a
prefill policy only answers for the step being planned.
"""

from __future__ import annotations

import math

from .engine import PROMPTS_FIRST
from .engine_state import EPS, EngineState, count_done
from .prefix_cache import Node
from .records import prompts_sharing

#: No prefix-cache nodes (a request admitted without a prefix cache).
NO_NODES: list = []


class Admission:
    """Which waiting requests join an engine's batch before a step (``admit``), and the
    preemption when its cache is full (module docstring). Subclasses say whether a request has
    room (``room``)."""

    __slots__ = ("engine",)
    #: Whether it promises admitted requests memory (``release`` frees a finished one's).
    promises = False

    def __init__(self, engine: EngineState) -> None:
        self.engine = engine

    def room(self, i: int, need: float) -> bool:
        """Whether request ``i``, holding ``need`` layer-positions once admitted, joins now."""
        raise NotImplementedError

    def release(self, done) -> None:
        """The requests ``done`` finished (what the policy promised them is free again)."""

    def admit(self) -> None:
        """Admit from the head of the queue while the batch has room and ``room`` says yes;
        drop the requests that never fit (the scheduler calls it unless a preemption holds
        admission)."""
        e = self.engine
        r = e.req
        running, prefilling, waiting = e.running, e.prefilling, e.waiting
        limit = e.limit
        rejected, n_in, gen, needs_prefill = r.rejected, r.n_in, r.gen, r.needs_prefill
        cache, layers = e.cache, e.layers
        plain = not e.windowed  # a request's layer-positions: layers x its context
        ranks = e.ranks
        while waiting:
            i = waiting[0]
            if rejected[i]:
                waiting.popleft()
                count_done(e, 1, i)
                continue
            if len(running) + len(prefilling) >= limit:
                return
            prefill = needs_prefill[i]
            context = n_in[i] + gen[i] - (0 if prefill else 1)  # Python ints
            need = layers * context if plain else e.pos(context)
            nodes: list[Node] = NO_NODES
            hit = 0
            if cache is not None and prefill:
                nodes = cache.lookup(prompts_sharing(r).segments[i])
                hit = cache.hit_tokens(nodes, n_in[i])
                need -= cache.held_by_others(nodes)  # stored once
            if not self.room(i, need):
                return
            waiting.popleft()
            e.admitted += 1
            if ranks is not None:
                ranks.assign(i)
            r.admitted_at[i] = e.t
            r.seq[i] = e.admitted
            if cache is not None and prefill:
                if math.isnan(r.cached[i]):
                    r.cached[i] = hit
                    if r.tier_cached is not None:  # of them, those loaded from each tier
                        for cached, tokens in zip(r.tier_cached, cache.tier_tokens(nodes, hit)):
                            cached[i] = tokens
                cache.pin(nodes, e.t)
                e.chain[i] = list(nodes)
            if prefill:
                prefilling.append([i, hit, context])
                e.reserved += layers * context if plain else e.pos(context)
            else:  # arrives with its prompt's cache (disaggregated decode)
                e.join_decode(i, context)
            if len(running) + len(prefilling) > e.peak_batch:
                e.peak_batch = len(running) + len(prefilling)
        if cache is not None:
            e.trim()

    def preempt(self) -> None:
        """Drop the cache of the request admitted last and put it back at the queue's head,
        with the tokens it has generated (they are prefilled again)."""
        e = self.engine
        r = e.req
        seq = r.seq
        last = max(e.running, key=seq.__getitem__, default=-1)  # the first of the latest
        decode_seq = seq[last] if last >= 0 else -1
        if e.prefilling and seq[e.prefilling[-1][0]] > decode_seq:
            i, _, context = e.prefilling.pop()
            e.reserved -= e.pos(context)
            if e.ranks is not None:
                e.ranks.leave(i, False)
        else:
            i = last
            context = e.leave(i)
            r.gen[i] = max(int(r.gen[i]), int(context + EPS) - int(r.n_in[i]) + 1)
            if e.ranks is not None:
                e.ranks.leave(i, True)
        if e.cache is not None and i in e.chain:  # its prefix stays cached
            e.cache.release(e.chain.pop(i), e.t)
        r.preempted[i] += 1
        if e.trace is not None:  # recorded for the timeline (``timeline.Lane``)
            e.trace.append(("preempt", e.t, i))
        r.needs_prefill[i] = True
        e.waiting.appendleft(i)
        e.hold = True


class Recompute(Admission):
    """vLLM's admission: the prompt must fit now, beside room for every running request's next
    token; a full cache later preempts (module docstring)."""

    __slots__ = ()

    def room(self, i: int, need: float) -> bool:
        """Room for every running request's next token first (vLLM V1's order); an empty
        engine takes any request that fits at its peak (``rejected`` holds the others): one
        whose prompt fills the cache to its last position waited forever."""
        e = self.engine
        running, prefilling, layers = e.running, e.prefilling, e.layers
        if not (running or prefilling):
            return True
        used = (
            layers * (e.sum_base + len(running) * e.G) + e.reserved
            if not e.windowed and e.cache is None  # ``used``, inline (``held`` is ``reserved``)
            else e.used()
        )
        return not used + need + layers * (len(running) + len(prefilling) + 1) > e.cap


class NoEvict(Admission):
    """TensorRT-LLM's guaranteed no-evict admission: each request's peak, prompt and output,
    must fit beside the peaks promised to the admitted requests (``committed``)."""

    __slots__ = ("committed",)
    promises = True

    def __init__(self, engine: EngineState) -> None:
        super().__init__(engine)
        self.committed = 0.0  # layer-positions promised to the admitted requests

    def room(self, i: int, need: float) -> bool:
        """Whether request ``i``'s peak fits beside those promised; it is promised if so."""
        peak = self.engine.req.full[i]
        if self.committed + peak > self.engine.cap:
            return False
        self.committed += peak
        return True

    def release(self, done) -> None:
        full = self.engine.req.full
        committed = self.committed
        for i in done:
            committed -= full[i]
        self.committed = committed


class PlainNoEvict(NoEvict):
    """``NoEvict`` without a prefix cache (most measured runs). About one request is admitted
    per step, so the state ``admit`` reads and writes is held in locals, written back at the
    end."""

    __slots__ = ()

    def admit(self) -> None:
        e = self.engine
        r = e.req
        running, prefilling, waiting = e.running, e.prefilling, e.waiting
        rejected, n_in, gen, needs_prefill, full = (
            r.rejected,
            r.n_in,
            r.gen,
            r.needs_prefill,
            r.full,
        )
        admitted_at, seq, t = r.admitted_at, r.seq, e.t
        layers, cap, limit = e.layers, e.cap, e.limit
        plain = not e.windowed  # a request's layer-positions: layers x its context
        committed, admitted, reserved = self.committed, e.admitted, e.reserved
        batch = len(running) + len(prefilling)
        assign = e.ranks.assign if e.ranks is not None else None
        while waiting:
            i = waiting.popleft()
            if rejected[i]:
                count_done(e, 1, i)
                continue
            peak = full[i]
            if batch >= limit or committed + peak > cap:
                waiting.appendleft(i)  # it waits for room, at the head of the queue
                break
            committed += peak
            admitted += 1
            admitted_at[i] = t
            seq[i] = admitted
            if assign is not None:
                assign(i)
            if needs_prefill[i]:
                context = n_in[i] + gen[i]  # Python ints
                prefilling.append([i, 0, context])
                reserved += layers * context if plain else e.pos(context)
                batch += 1
            else:  # arrives with its prompt's cache (disaggregated decode)
                self.committed = committed  # ``release`` frees a finished request's peak
                e.join_decode(i, n_in[i] + gen[i] - 1)
                committed = self.committed
                batch = len(running) + len(prefilling)
        self.committed, e.admitted, e.reserved = committed, admitted, reserved
        if batch > e.peak_batch:  # the batch only grew in the loop
            e.peak_batch = batch


def admission(engine: EngineState, policy: str) -> Admission:
    """The admission policy ``policy`` (``EngineConfig.admission``) of ``engine``."""
    if policy != "no_evict":
        return Recompute(engine)
    return PlainNoEvict(engine) if engine.cache is None else NoEvict(engine)


class Prefill:
    """How a step's token budget goes to the prompts being prefilled (module docstring). Under
    every policy a prompt that fits the room left in the step goes whole (the scheduler takes
    it without asking); the policy says what happens to one that does not: here, only a
    prompt longer than the whole budget goes, in chunks of it, and decoding shares the step."""

    __slots__ = ("separate",)

    def __init__(self, mode: str) -> None:
        #: Prompts go in steps of their own, decoding waits (``engine.PROMPTS_FIRST``).
        self.separate = mode in PROMPTS_FIRST

    def goes(self, decode: int, budget: int, left: int) -> bool:
        """Whether the next step carries prompt tokens although the first prompt, ``left``
        tokens still to prefill, does not fit beside the ``decode`` tokens of the decoding
        requests in the step's ``budget``."""
        return decode == 0 or (left > budget and budget > decode)

    def part(self, left: int, room: int, first: bool, budget: int) -> int:
        """Tokens a prompt with ``left`` still to prefill takes of the ``room`` left in the step
        when it does not fit (``first``: no prompt took any before it; ``budget``: the whole
        step's): a prompt that never fits whole goes in chunks of the room left."""
        return room if first and left > budget else 0


class Chunked(Prefill):
    """Chunks of the prompts fill what the decoding requests leave of every step."""

    __slots__ = ()

    def goes(self, decode: int, budget: int, left: int) -> bool:
        return budget > decode

    def part(self, left: int, room: int, first: bool, budget: int) -> int:
        return room


class Whole(Prefill):
    """Whole prompts while they fit beside the decoding requests."""

    __slots__ = ()


class Separate(Prefill):
    """Whole prompts in steps of their own, first: decoding waits for them."""

    __slots__ = ()

    def goes(self, decode: int, budget: int, left: int) -> bool:
        return True


class ChunkedSeparate(Chunked):
    """Chunks of the prompts fill steps of their own, first: decoding waits for them (SGLang's
    scheduler runs a prefill batch whenever one is waiting, up to its chunk size, the prompt
    that crosses it cut; it mixes decoding requests in only with ``--enable-mixed-chunk``)."""

    __slots__ = ()

    def goes(self, decode: int, budget: int, left: int) -> bool:
        return True


#: The prefill policy of each ``EngineConfig.prefill``.
PREFILL: dict[str, Prefill] = {
    mode: policy(mode)
    for mode, policy in (
        ("chunked", Chunked),
        ("whole", Whole),
        ("separate", Separate),
        ("chunked_separate", ChunkedSeparate),
    )
}
