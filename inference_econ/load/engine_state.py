"""What one engine instance holds between steps, and how requests move through it
(docs/model.md §E3).

A request arrives (``arr`` at known times in ``order``; ``late`` for those pushed later: a
session's next turn, a router's choice), waits (``waiting``), is admitted (the admission
policy, ``scheduling``), has its prompt prefilled (``prefilling``), decodes (``running``) and
finishes (``complete``), or is preempted back to the queue. The decoding requests are kept by
the progress at which they end: ``G`` counts the tokens every running request has gained since
the engine started (one per step, or a cycle's expected tokens when it speculates, §E8), a
request's context is its base plus ``G``, so a step advances the whole batch by adding to one
number. The KV cache is counted in layer-positions (``used``). The counters a ``RunRecord``
reads (busy seconds, FLOP, steps, the peak of the cache) are kept here too (``end_prompt_step``;
``_Engine.decode_run`` counts its runs).

What each step does (admission, prompts, a run of decode steps) is the scheduler's:
``simulate._Engine``, which extends this class.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from collections import deque
from collections.abc import Callable

import numpy as np

from ..model.workload import prefix_sums
from .attention_dp import Ranks
from .engine import Instance
from .prefix_cache import PrefixCache
from .records import Requests, prompts_sharing
from .timeline import RECORDING

#: Completions are exact to this many tokens of progress (speculation advances by fractions).
EPS = 1e-9
#: ``math.inf`` read as a module global (``np.inf`` is the same float, one look-up more).
_INF = math.inf


class SortedBases:
    """A windowed model's decoding requests' bases (context less ``G``) in order, kept as they
    join and leave, with the exact sum of those that are whole numbers and the count of the
    others. Where every base, step and window is a whole number (every run without
    speculation), each sum of contexts is exact in any order, so a batch's layer-positions
    are priced from this list, the same floats as the sorted contexts' prefix sums give,
    without sorting or summing them again when a step moves ``G``; otherwise (speculation's
    fractional steps) from those prefix sums, kept while the batch and ``G`` stay the same
    (``positions``)."""

    __slots__ = (
        "values", "whole_sum", "odd", "whole_windows", "array", "array_at", "sums", "contexts",
        "contexts_at",
    )  # fmt: skip

    #: At most this many steps ahead are each priced on their own from the list (an
    #: attention-DP rank's turn asks for one), cheaper than an array of them.
    FEW_AHEAD = 8
    #: Whole numbers whose sums stay below this are added exactly in float64, in any order; a
    #: price sums contexts at most this many tokens ahead of now (a run's steps).
    EXACT_BELOW, AHEAD_AT_MOST = 2.0**53, 2.0**20

    def __init__(self, windows) -> None:
        self.values: list[float] = []
        self.whole_sum, self.odd = 0, 0
        self.whole_windows = all(not math.isfinite(w) or float(w).is_integer() for w in windows)
        #: the list as an array, the batch change it was made at, and its prefix sums
        self.array, self.array_at = np.empty(0), -1
        self.sums: np.ndarray | None = None
        #: otherwise: the sorted contexts, their prefix sums and their positions now (once
        #: asked), at (changes, G)
        self.contexts: list = []
        self.contexts_at: tuple = ()

    def join(self, base: float) -> None:
        """A decoding request of this base joins the batch."""
        insort(self.values, base)
        if float(base).is_integer():
            self.whole_sum += int(base)
        else:
            self.odd += 1

    def leave(self, base: float) -> None:
        """A decoding request of this base leaves the batch (finished or preempted)."""
        values = self.values
        k = bisect_left(values, base)
        if k == len(values) or values[k] != base:  # a join not kept: the prices would be wrong
            raise RuntimeError(f"load simulator: a decoding request's base {base} was not kept")
        del values[k]
        if float(base).is_integer():
            self.whole_sum -= int(base)
        else:
            self.odd -= 1

    def sorted_array(self, changes: int) -> np.ndarray:
        """The bases as an array, made again only when the batch has changed."""
        if self.array_at != changes:
            self.array, self.array_at, self.sums = np.array(self.values, dtype=float), changes, None
        return self.array

    def positions(self, work, G: float, ahead, changes: int):
        """``work.layer_positions_of_many`` of the contexts ``bases + G`` ``ahead`` steps on
        (a number or an array); ``changes``: the batch's count of changes."""
        exact = self._exact_positions(work, G, ahead, changes)
        if exact is not None:
            return exact
        if self.contexts_at != (changes, G):  # a step's calls share its contexts
            # sorted(b) + G is sorted(b + G) exactly: adding G keeps the order of floats
            ctx = self.sorted_array(changes) + G
            self.contexts, self.contexts_at = [ctx, prefix_sums(ctx), None], (changes, G)
        ctx, cums, now = self.contexts
        if type(ahead) is int and ahead == 0:  # (asked several times a step: kept once asked)
            if now is None:
                now = self.contexts[2] = work.layer_positions_of_many(ctx, 0, cums)
            return now
        return work.layer_positions_of_many(ctx, ahead, cums)

    def _exact_positions(self, work, G: float, ahead, changes: int):
        """``positions`` where every sum is exact; None where one may not be."""
        values = self.values
        if self.odd or not self.whole_windows or not G.is_integer():
            return None
        if (
            values
            and len(values) * (max(-values[0], values[-1]) + abs(G) + self.AHEAD_AT_MOST)
            >= self.EXACT_BELOW
        ):
            return None
        kind = type(ahead)
        if kind is int or kind is float:
            if not float(ahead).is_integer():
                return None
            return work.layer_positions_of_whole(values, self.whole_sum, G, ahead)
        if kind is np.ndarray and ahead.ndim == 1 and 0 < ahead.size <= self.FEW_AHEAD:
            if not all(float(a).is_integer() for a in ahead):
                return None
            at, total = work.layer_positions_of_whole, self.whole_sum
            return np.array([at(values, total, G, float(a)) for a in ahead])
        if np.any(np.asarray(ahead) % 1.0):
            return None
        array = self.sorted_array(changes)
        if self.sums is None:  # the bases' own sums, kept while the batch is the same
            self.sums = prefix_sums(array)
        return work.layer_positions_of_many(array, ahead, self.sums, shift=G)


class EngineState:
    """An engine's requests, KV cache and counters between steps (module docstring).

    Slots, not a __dict__: the scheduler reads and writes its state several times a step, and
    a slot is read faster than an entry of a dict of this many attributes (more than the 30 a
    class's instances share their keys for)."""

    # fmt: off
    __slots__ = (
        "G", "t", "req", "inst", "table", "cfg", "cap", "windowed", "layers", "budget",
        "limit", "window", "phase", "clients", "order", "released", "arr", "late",
        "next_arrival", "on_finish", "progress", "next_report", "waiting", "prefilling",
        "reserved", "admitted", "hold", "running", "by_end", "ends", "sum_base", "changes",
        "bases", "draft", "q_ref", "cache", "chain", "ranks",
        "last_run",
        "release_promised", "busy", "prefill_s", "flop", "batch_s", "peak", "steps",
        "spec_steps", "decode_steps", "trace", "peak_batch", "end_of", "ahead", "prepared",
        "cadence", "cadence_floor", "tick",
    )
    # fmt: on
    #: What finishing requests frees of the admission policy's promises (``scheduling``'s
    #: ``Admission.release``; None: it promises nothing). The scheduler sets it when it
    #: chooses the policy.
    release_promised: Callable[[tuple[int, ...] | list[int]], None] | None

    def __init__(self, inst: Instance, req: Requests, progress, clients, order, on_finish):
        self.inst, self.table, self.cfg = inst, inst.table, inst.config
        self.req = req
        self.cap = inst.kv_capacity
        self.windowed = inst.windowed
        self.layers = float(sum(g.layers for g in inst.work.groups))
        self._arrivals(order, clients)
        self.on_finish = on_finish
        self.budget, self.limit = self.cfg.step_token_budget, self.cfg.max_batch_requests
        #: multi-step scheduling (``EngineConfig.scheduler_steps``): decode steps per
        #: scheduler call, and those taken of the current window (0: at a scheduling point)
        self.window, self.phase = int(self.cfg.scheduler_steps), 0
        #: a prefill-admission cadence (``EngineConfig.admission_cadence``): calls per admitting
        #: one (0: each admits), the requests below which each does, the next call's place
        gap, self.cadence_floor = self.cfg.admission_cadence
        self.cadence, self.tick = (gap + 1 if gap else 0), 0
        self.admitted = 0
        self.waiting: deque[int] = deque()
        self.prefilling: list[list] = []  # [request, tokens done, tokens to prefill]
        self.reserved = 0.0  # KV layer-positions held by prompts being prefilled
        # the decoding requests: request -> its base (context - G), the G at which each has
        # all its tokens (by request), the requests by that G, and a heap of those G (each
        # pushed when it first has a request; stale entries skipped)
        self.running: dict[int, float] = {}
        self.end_of = req.end_of  # shared: a request decodes on one engine at a time
        self.by_end: dict[float, list[int]] = {}
        self.ends: list[float] = []
        self.sum_base = 0.0
        # windowed models: the decoding requests' bases in order, and the count of changes
        # to the batch (joins and leaves) that tells when their array is out of date
        self.bases = SortedBases([g.window for g in inst.work.groups])
        self.changes = 0
        self.G, self.t = 0.0, 0.0
        self.ahead, self.prepared = self.table.prepares_ahead, 0.0
        self.last_run: tuple = ()  # an overlap scheduler's arrivals: ``admissible_by``
        self.hold = False  # no admission after a preemption until a request finishes
        self.busy = self.prefill_s = self.flop = self.batch_s = self.peak = 0.0
        self.steps = self.spec_steps = self.decode_steps = 0
        #: The most requests decoding and prefilling at once (after an admission: nothing else
        #: adds to them): the only figure ``limit`` is compared with.
        self.peak_batch = 0
        #: The steps as a recording timeline keeps them (``timeline.Lane``; None: none records).
        self.trace: list | None = [] if RECORDING.get() is not None else None
        self.progress, self.next_report = progress, max(1, req.n // 10)
        # speculation (§E8): the cycle at each batch, and the reference positions it is chosen at
        self.draft = inst.draft
        if self.draft is not None:
            self.q_ref = float(inst.positions(self.draft.context))
        # the prefix cache (§E9): only where prompts share segments
        self.cache = None
        self.chain: dict[int, list] = {}
        if inst.config.prefix_caching and req.sharing is not None:
            pos, layers = self.pos, self.layers
            if self.windowed:
                span = lambda a, b: pos(b) - pos(a)  # noqa: E731
            else:  # ``pos`` inline: the same products
                span = lambda a, b: layers * b - layers * a  # noqa: E731
            self.cache = PrefixCache(span, inst.tiers)
            if inst.tiers and req.tier_cached is None:
                req.tier_cached = [[math.nan] * req.n for _ in inst.tiers]
        # data-parallel attention ranks that schedule their own requests (§F9, "Attention DP"):
        # none where the engine pools them (the ideal engine), speculates (not modelled per
        # rank) or has one attention group
        ranks = int(round(inst.layout.attention_divisor))
        self.ranks = None
        if self.cfg.rank_scheduling and self.draft is None and ranks >= 2:
            self.ranks = Ranks(ranks, req.n_in, self.budget, self.limit, self.cfg.adp_balancing)

    def _arrivals(self, order, clients) -> None:
        """Requests this engine receives at known times, in order (``order``), and those it
        receives later (a session's next turn, a router's push) on a heap; with ``clients``, the
        first that many at once, each next one when one finishes."""
        req = self.req
        self.clients = clients
        idx = np.asarray([] if order is None else order, dtype=np.intp)  # an array or a list
        self.order = idx.tolist()
        if clients is not None:
            self.released = min(int(clients), len(self.order))
            self.arr = [0.0] * self.released + [np.inf] * (len(self.order) - self.released)
            req.sent[idx] = np.nan
            req.sent[idx[: self.released]] = 0.0
        else:
            self.arr = req.sent[idx].tolist()
        #: ``arr`` ends with an inf (no one else arrives): ``arr[next_arrival]`` is always the
        #: next known arrival time, without a test of the index on every turn
        self.arr.append(_INF)
        self.next_arrival = 0
        self.late: list[tuple[float, int]] = []

    # --- the KV cache ------------------------------------------------------------------
    def decode_positions(self, ahead=0):
        """Σ over decoding requests of their layer-positions ``ahead`` tokens from now
        (``ahead`` may be an array)."""
        if not self.windowed:
            return self.layers * (self.sum_base + len(self.running) * (self.G + ahead))
        return self.bases.positions(self.inst.work, self.G, ahead, self.changes)

    def growth(self, per_step: float = 1.0) -> float:
        """Layer-positions the decoding requests add in one step of ``per_step`` tokens."""
        if not self.windowed:
            return self.layers * len(self.running) * per_step
        return float(self.decode_positions(per_step)) - float(self.decode_positions(0))

    def held(self) -> float:
        """Layer-positions held outside the decoding requests' contexts: prompts being
        prefilled, less the copies of shared prefixes stored once (§E9)."""
        return self.reserved - (self.cache.shared if self.cache is not None else 0.0)

    def used(self) -> float:
        if not self.windowed:
            return self.layers * (self.sum_base + len(self.running) * self.G) + self.held()
        return float(self.decode_positions()) + self.held()

    def pos(self, context) -> float:
        """Layer-positions one request of this context holds."""
        if not self.windowed:
            return self.layers * context
        return float(self.inst.positions(context))

    def trim(self) -> None:
        """Evict cached prefixes the running requests need the memory of (§E9)."""
        c = self.cache
        if c is not None and c.cached > 0.0:
            over = self.used() + c.cached - self.cap
            if over > 0.0:
                c.evict(over)

    # --- speculation ---------------------------------------------------------------------
    def cycle(self, D: int):
        """The speculative cycle of a step with ``D`` decoding requests (None: none)."""
        if self.draft is None or D == 0:
            return None
        return self.draft.cycle_at(self.table, D, self.q_ref)

    def decode_tokens(self) -> int:
        """Tokens the decoding requests take of the next step's budget (a speculative cycle
        verifies several per request)."""
        D = len(self.running)
        c = self.cycle(D)
        return D if c is None else D * c.verify_tokens

    # --- arrivals ----------------------------------------------------------------------
    def next_time(self) -> float:
        """When the next request reaches this engine (inf: none known)."""
        a = self.arr[self.next_arrival]  # inf past the last (``arr``'s end)
        return min(a, self.late[0][0]) if self.late else a

    def push(self, i: int, at: float) -> None:
        """Request ``i`` reaches this engine at ``at`` (a session's next turn, a router)."""
        heapq.heappush(self.late, (at, i))

    def arrive(self, t: float) -> None:
        """The requests arrived by ``t`` (``admissible_by``) join the queue in the order they
        arrived (``iterate`` takes those at known times itself when no others are due)."""
        arr, order, late, waiting = self.arr, self.order, self.late, self.waiting
        j = self.next_arrival
        while True:
            a = arr[j]
            b = late[0][0] if late else _INF
            if a > t and b > t:  # min(a, b) > t
                break
            if a <= b:
                waiting.append(order[j])
                j += 1
            else:
                waiting.append(heapq.heappop(late)[1])
        self.next_arrival = j

    def outstanding(self) -> int:
        """Requests routed here and not finished (a router's measure of load)."""
        return len(self.waiting) + len(self.prefilling) + len(self.running) + len(self.late)

    # --- the decoding batch --------------------------------------------------------------
    def join_decode(self, i: int, context: int) -> None:
        """Request ``i``, of this context, decodes (or finishes, with all its tokens)."""
        r = self.req
        left = int(r.n_out[i] - r.gen[i])
        if left <= 0:
            if self.ranks is not None:
                self.ranks.leave(i, False)
            self.finished(i)
            count_done(self, 1, i)
            return
        if self.ranks is not None:
            self.ranks.decoding(i)
        G = self.G
        end = G + left
        self.running[i] = context - G
        if self.windowed:
            self.bases.join(context - G)
        self.end_of[i] = end
        self.changes += 1
        same = self.by_end.get(end)
        if same is None:  # a new end: on the heap once
            self.by_end[end] = [i]
            heapq.heappush(self.ends, end)
        else:
            same.append(i)
        self.sum_base += context - G

    def join_prefilled(self, prefilled: list, G: float) -> None:
        """The prompts ``prefilled`` to their end by the step just taken (``G`` after it): each
        emits its first token and decodes, or finishes if that was its last."""
        r, cache, layers, pos = self.req, self.cache, self.layers, self.pos
        plain = not self.windowed
        running, end_of, ends, ranks = self.running, self.end_of, self.ends, self.ranks
        first, gen, needs_prefill, n_out = r.first, r.gen, r.needs_prefill, r.n_out
        t, by_end = self.t, self.by_end
        # the engine's sums in locals, written back after the loop (the calls in it read none)
        reserved, sum_base, decoding = self.reserved, self.sum_base, len(running)
        join = self.bases.join
        for i, _, context in prefilled:
            reserved -= layers * context if plain else pos(context)
            g = gen[i] + 1
            gen[i] = g
            needs_prefill[i] = False
            f = first[i]
            if f != f:  # NaN: its first token
                first[i] = t
            if cache is not None and i in self.chain:  # its prompt's segments are cached
                segs = prompts_sharing(r).segments[i]
                held_nodes = self.chain[i]
                self.chain[i] = held_nodes + cache.insert(
                    segs[len(held_nodes) :], held_nodes[-1] if held_nodes else None, self.t
                )
            left = n_out[i] - g  # ``join_decode``, inline (once per request)
            if left <= 0:  # its first token was its last
                if ranks is not None:
                    ranks.leave(i, False)
                self.finished(i)
                count_done(self, 1, i)
                continue
            if ranks is not None:
                ranks.decoding(i)
            end, base = G + left, context - G
            running[i] = base
            if not plain:
                join(base)
            end_of[i] = end
            same = by_end.get(end)
            if same is None:  # a new end: on the heap once
                by_end[end] = [i]
                heapq.heappush(ends, end)
            else:
                same.append(i)
            sum_base += base
        self.reserved, self.sum_base = reserved, sum_base
        self.changes += len(running) - decoding  # one change per request that joined

    def leave(self, i: int) -> float:
        """Take request ``i`` out of the decoding batch; its context."""
        base = self.running.pop(i)
        if self.windowed:
            self.bases.leave(base)
        self.changes += 1
        self.sum_base -= base
        same = self.by_end[self.end_of[i]]
        same.remove(i)
        if not same:
            del self.by_end[self.end_of[i]]
        return base + self.G

    # --- finishing -----------------------------------------------------------------------
    def finished(self, i: int) -> None:
        """Request ``i`` has its last token now: its finish time, what admission promised it,
        and its answer cached for the session's next turn (§E9)."""
        r = self.req
        r.finish[i] = self.t
        if r.watch is not None:
            r.watch.finished((i,), self.t, r.first, r.n_out)
        if self.release_promised is not None:
            self.release_promised((i,))
        if self.cache is not None and i in self.chain:
            nodes = self.chain.pop(i)
            key = prompts_sharing(r).answer_keys[i]
            if key is not None:  # the answer: the next turn's prompt starts with it
                nodes += self.cache.insert(((key, int(r.n_out[i])),), nodes[-1], self.t)
            self.cache.release(nodes, self.t)

    def complete(self) -> None:
        """Requests whose last token came out of the step just taken."""
        ends, by_end, running, r = self.ends, self.by_end, self.running, self.req
        reach = self.G + EPS  # the progress every request finishing now has reached
        ranks, cache, release, watch = self.ranks, self.cache, self.release_promised, r.watch
        windowed, leave = self.windowed, self.bases.leave
        counted = self.clients is None and r.sharing is None and self.progress is None
        while ends:
            end = ends[0]
            if end not in by_end:
                heapq.heappop(ends)
                continue
            if end > reach:
                return
            heapq.heappop(ends)
            done = by_end.pop(end)
            self.changes += 1
            if ranks is not None:
                ranks.finished(done)
            if cache is not None:
                for i in done:
                    base = running.pop(i)
                    self.sum_base -= base
                    if windowed:
                        leave(base)
                    self.finished(i)
            else:  # ``finished`` without a prefix cache, inline, the sum in a local
                finish, t, sum_base = r.finish, self.t, self.sum_base
                for i in done:
                    base = running.pop(i)
                    sum_base -= base
                    if windowed:
                        leave(base)
                    finish[i] = t
                self.sum_base = sum_base
                if release is not None:
                    release(done)
                if watch is not None:
                    watch.finished(done, t, r.first, r.n_out)
            self.hold = False
            if counted:
                r.done += len(done)  # ``count_done`` has nothing else to do
            else:
                for i in done:
                    count_done(self, 1, i)

    def close(self) -> None:
        """Drop what refers back to this engine (its admission policy, the prefix cache's
        measure of a prompt): without these cycles the run's per-request lists are freed with
        the engine, not by a pass of the cyclic collector."""
        self.release_promised = None
        self.cache = None

    # --- the record's counters ---------------------------------------------------------------
    def end_prompt_step(self, dt, alone, D, flop, advance, c, separate, prefilled, *tokens):
        """After a step with prompt tokens of ``dt`` seconds and ``flop`` FLOP (``alone``: the
        seconds of its ``D`` decoding requests alone, each advancing ``advance`` tokens; ``c``:
        its speculative cycle; ``separate``: decoding waited; ``tokens``: its prompt tokens and
        chunks): first the prefixes it loaded from a host tier (§E13), overlapped with it or
        before it, and its timeline event; its counters, the requests it finished, the prompts
        it ``prefilled`` to their end joining the batch."""
        cache, loaded = self.cache, 0.0
        if cache is not None and cache.pending_s:
            loaded = cache.pending_s
            dt = cache.charged(dt)
        if self.trace is not None:  # with the seconds of its tiers' loads
            self.trace.append(("prompt", self.t, dt, D, *tokens, loaded))
        self.prepared = self.t
        self.t += dt
        self.G = G = self.G + advance
        self.busy += dt
        self.batch_s += D * dt
        self.flop += flop
        if D:
            self.decode_steps += 1
            if c is not None:
                self.spec_steps += 1
        if self.windowed or cache is not None:
            used = self.used()
        else:  # ``used``, inline (``held`` is ``reserved`` without a prefix cache)
            used = self.layers * (self.sum_base + len(self.running) * G) + self.reserved
        peak = used / self.cap
        if peak > self.peak:
            self.peak = peak
        self.prefill_s += dt - alone
        self.steps += 1
        if self.cadence:
            self.tick = (self.tick + 1) % self.cadence
        ends = self.ends
        if not separate and ends and ends[0] <= G + EPS:  # ``complete``'s first test
            self.complete()
        self.join_prefilled(prefilled, G)
        self.phase = 0  # a step with prompt tokens is a scheduler call of its own
        if cache is not None:
            self.trim()


def order_free(e: EngineState) -> bool:
    """Whether the order in which requests finishing in one step are handed on moves nothing
    (no closed-loop clients, shared prompts, prefix cache, progress reports or promises), and
    every context and end is a whole number (no speculation): then a step may move either side
    of its batch (``decode_beside``) for the same run."""
    return (
        e.draft is None
        and e.cache is None
        and e.clients is None
        and e.progress is None
        and e.req.sharing is None
        and e.release_promised is None
    )


def decode_beside(e: EngineState, moving: list, rank_of, busy) -> float:
    """A step of prompts on the attention ranks ``busy`` (``rank_of``: each request's rank)
    beside which the other ranks' requests ``moving`` decode a token, prompts run first: the
    tokens ``G`` gains. Where fewer requests wait than decode (and ``order_free``), the whole
    batch advances and the waiting ones move a token back, else the decoding ones a token on:
    every context and end a whole number, the two are the same run."""
    if len(e.running) - len(moving) < len(moving) and order_free(e):
        shift_some(e, [i for i in e.running if rank_of[i] in busy], -1)
        return 1.0
    shift_some(e, moving, 1)
    return 0.0


def shift_some(e: EngineState, ids: list, step: int) -> None:
    """Requests ``ids`` of engine ``e`` move ``step`` tokens against the rest of its batch
    (``+1``: they decode a token in a step whose other decoding requests wait, the attention
    ranks that prefill where prompts run first; ``-1``: they wait in a step that advances
    ``G``, the same move seen from the others): each one's base grows by ``step`` and its last
    token comes ``step`` steps sooner."""
    running, end_of, by_end, ends = e.running, e.end_of, e.by_end, e.ends
    windowed, bases = e.windowed, e.bases
    for i in ids:
        base = running[i]
        running[i] = base + step
        if windowed:
            bases.leave(base)
            bases.join(base + step)
        end = end_of[i]
        same = by_end[end]
        same.remove(i)
        if not same:
            del by_end[end]
        end -= step
        end_of[i] = end
        others = by_end.get(end)
        if others is None:
            by_end[end] = [i]
            heapq.heappush(ends, end)
        else:
            others.append(i)
    e.sum_base += step * len(ids)
    e.changes += 1  # the cached sums of positions are stale


def count_done(e: EngineState, count: int, i: int) -> None:
    """``count`` more requests of engine ``e`` are done, ``i`` the last: a closed loop's
    client sends its next one, a session's next turn is sent after its think time, progress
    is reported."""
    r = e.req
    r.done += count
    if e.clients is not None:  # each finished request's client sends its next one now
        for _ in range(count):
            if e.released < len(e.order):
                e.arr[e.released] = e.t
                r.sent[e.order[e.released]] = e.t
                e.released += 1
    if r.sharing is not None:
        nxt = int(r.sharing.follows[i])
        if nxt >= 0:  # the session's next turn, a think time after this answer
            at = e.t + float(r.sharing.think_s[nxt])
            r.sent[nxt] = at
            if e.on_finish is not None:
                e.on_finish(nxt, at)
            else:
                e.push(nxt, at)
    if e.progress is not None and r.done >= e.next_report:
        e.progress(r.done, r.n)
        e.next_report += max(1, r.n // 10)


def admits_now(e: EngineState) -> bool:
    """Whether this scheduler call admits waiting requests under the engine's cadence
    (``EngineConfig.admission_cadence``): its admitting call, or fewer requests running than
    the cadence's floor; every call without one."""
    return not e.tick or len(e.running) + len(e.prefilling) < e.cadence_floor


def cadence_cut(e: EngineState, k: int, deadline) -> tuple[int, tuple[int, int] | None]:
    """(steps, cycle) of a run of at most ``k`` decode steps where the engine's cadence holds
    admission back (``admits_now``): with requests waiting, it ends before the admitting call;
    cut by an arrival (a ``deadline``), it goes on to that call (the cycle, ``steps_on``)."""
    if not e.cadence or len(e.running) + len(e.prefilling) < e.cadence_floor:
        return k, None
    if e.waiting:
        return min(k, e.cadence - e.tick), None
    return k, (None if deadline is None else (e.tick, e.cadence))


def admissible_by(e: EngineState) -> float:
    """The latest arrival the next step of ``e`` admits: now, or, under an overlap scheduler
    (``StepTable.prepares_ahead``, §E3) with requests in the batch, when the step just taken
    started (``prepared``; after a decode run, its last step's own time before the run's end,
    computed here when first asked: most runs end with no arrival pending)."""
    if not e.ahead or not (e.running or e.prefilling):
        return e.t
    if e.prepared != e.prepared:  # NaN: the last decode run's, not computed yet
        end, D, q, growth, terms = e.last_run
        e.prepared = end - e.table.run_time_s(D, q, growth, 1, terms=terms)
    return e.prepared
