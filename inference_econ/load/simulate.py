"""The step-level simulation of one engine instance under load (docs/model.md §E3).

The engine works in steps. Before each step its scheduler admits waiting requests first come,
first served, while the batch has room (``max_batch_requests``) and the KV cache can hold the
prompt (``recompute`` admission) or the whole request, prompt and output, on top of what every
running request will reach (``no_evict``: TensorRT-LLM's guaranteed no-evict policy). A step
decodes one token for every running request and spends what is left of the step's token budget
on prompts: chunks of them (``chunked``), whole prompts while they fit (``whole``), or, with
``separate`` prefill, whole prompts in steps of their own while decoding waits; first come first
served (a prompt longer than the whole budget goes in chunks of it under every mode), and a
prompt's last token emits its first output token. When the cache cannot hold the
next token of every running request (possible only under ``recompute``), the request admitted
last is preempted: its cache is dropped and it waits at the head of the queue, to be prefilled
again with the tokens it had generated (recomputation, as vLLM does); no request is admitted
until another one finishes.

Requests arrive at given times, or from ``clients`` closed-loop clients: each sends its next
request the moment its last one finishes (a concurrency sweep: ``vllm bench serve
--max-concurrency``, llmperf, InferenceMAX).

Steps that only decode are simulated in vectorised runs: between two events (an arrival that
could be admitted, a completion, a full cache) the batch does not change and each step's time
follows from the contexts, which all grow by one token per step.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..errors import SpecError
from ..model.mixed_step import StepTable
from ..serving.setting import check_context
from ..specs.collector import gc_paused
from .arrivals import Arrivals, Sharing
from .engine import Instance
from .prefix_cache import Node, PrefixCache
from .speculation import DraftEngine

#: Longest run of decode steps evaluated at once (bounds the arrays).
RUN_STEPS = 4096
#: A decoding request's base (its context less G) from its ``running`` entry.
_BASE = operator.itemgetter(0)
#: ``math.inf`` read as a module global (``np.inf`` is the same float, one look-up more).
_INF = math.inf


@dataclass(frozen=True, eq=False)
class RunRecord:
    """What one simulated instance measured: per request, and for the whole run."""

    arrivals: Arrivals
    first_token_s: np.ndarray  # absolute time of the first token (NaN: not produced here)
    finish_s: np.ndarray  # absolute completion time (NaN: rejected)
    admitted_s: np.ndarray  # when each request last entered the batch (NaN: never)
    preemptions: np.ndarray  # times each request was preempted
    rejected: np.ndarray  # requests whose prompt and output never fit in the KV cache
    busy_s: float  # time spent in steps
    prefill_s: float  # the part of step time that prompt tokens added
    flop: float  # model FLOP of every step
    steps: int
    end_s: float  # when the last request finished
    batch_seconds: float  # Σ decoding requests × step time (for the mean batch)
    peak_kv_fraction: float  # largest share of the KV cache in use
    #: Prompt tokens each request's first admission found in the prefix cache (None: the
    #: prompts share nothing, §E9).
    cached_tokens: np.ndarray | None = None
    spec_steps: int = 0  # decode steps that speculated (§E8)
    decode_steps: int = 0  # steps with decoding requests
    instances: int = 1  # instances simulated (busy, prefill, FLOP and batch are per instance)
    #: The run stopped once it certainly missed its targets (``simulate``'s ``stop``): the
    #: requests not finished by then have no finish time.
    stopped: bool = False


#: No prefix-cache nodes (a request admitted without a prefix cache).
NO_NODES: list = []
#: Completions are exact to this many tokens of progress (speculation advances by fractions).
_EPS = 1e-9


def _step_terms(table: StepTable) -> tuple:
    """What ``StepTable.time_s`` reads, by row (steps' tokens) and per position or request:
    ``_Engine.mixed_step`` evaluates it itself where there are no pipeline bubbles."""
    return (
        table.fixed_s,
        table.memory_s,
        table.compute_s,
        table.sequence_s,
        table.request_s,
        table.kv_s,
        table.attention_s,
        table.flop,
        table.attention_flop,
    )


def _sharing(requests) -> Sharing:
    """The prompts' sharing of requests a prefix cache serves (a cache is made only for them)."""
    if requests.sharing is None:
        raise RuntimeError("a prefix cache serving requests without shared prefixes")
    return requests.sharing


class _Watch:
    """The latency limits a run is stopped at (``simulate``'s ``stop``): it counts the requests
    whose time to first token, time per output token or end-to-end latency breaks its limit as
    each becomes known, and says when so many do that the p99 is certainly above the limit. A
    time to first token is known to break its limit once the limit has passed since the request
    arrived (``overdue``: its first token came late, or is still to come); the others at the
    request's last token.

    A p99 is ``np.percentile``'s linear interpolation at the virtual index 0.99 (n - 1) of the
    n measured values sorted: at least the value at its floor ``k``, which exceeds the limit
    once ``n - k`` values do. One more value is asked for, so that the rounding of the index
    cannot matter. A run with a request that never fits is certain at once (``verdict``)."""

    def __init__(self, limits: dict[str, float], req: _Requests, prefilled) -> None:
        inf = math.inf
        self.ttft = limits.get("ttft", inf)
        self.tpot = limits.get("tpot", inf)
        self.e2e = limits.get("e2e", inf)
        self.sent = req.sent.tolist()  # open loop: the arrival times
        fits = ~req.rejected_mask
        fresh = fits & ~np.asarray(prefilled, dtype=bool)  # a first token of its own
        many = fresh & (req.output_tokens > 1)  # a time per output token
        self.left = [self._need(int(m.sum())) for m in (fresh, many, fits)]
        self.certain = not fits.all()
        # the requests with a first token of their own, by arrival (``overdue``)
        fresh_ids = np.flatnonzero(fresh) if math.isfinite(self.ttft) else np.empty(0, int)
        self.by_arrival = fresh_ids[np.argsort(req.sent[fresh_ids], kind="stable")].tolist()
        self.next = 0
        #: when the next request by arrival came (inf: none left): the scheduler calls
        #: ``overdue`` only once ``t - next_sent > ttft`` (its first test), not every turn
        self.next_sent = self.sent[self.by_arrival[0]] if self.by_arrival else inf

    def overdue(self, t: float, first: list) -> None:
        """Count the requests whose TTFT limit has passed by ``t`` since they arrived: each whose
        first token came after it, or has not come (it comes after ``t``), breaks it."""
        queue, sent, limit = self.by_arrival, self.sent, self.ttft
        j, n = self.next, len(queue)
        while j < n:
            i = queue[j]
            if not t - sent[i] > limit:
                break
            f = first[i]
            if f != f or f - sent[i] > limit:  # NaN: no first token yet
                self.count(0)
            j += 1
        self.next = j
        self.next_sent = sent[queue[j]] if j < n else math.inf

    @staticmethod
    def _need(n: int) -> int:
        """Values above a limit that put the p99 of ``n`` values above it."""
        return n - math.floor(0.99 * (n - 1)) + 1 if n > 0 else 1 << 62

    def finished(self, done, t: float, first: list, n_out: list) -> None:
        """The requests ``done`` finished at ``t`` (``first``: first-token times; ``n_out``:
        output tokens; per request). A time per output token exists for a request with a
        first token and more than one output token (a NaN first token compares false)."""
        tpot, e2e = self.tpot, self.e2e
        if tpot < math.inf:  # (a time per output token is never above an infinite limit)
            for i in done:
                n = n_out[i]
                if n > 1 and (t - first[i]) / (n - 1) > tpot:
                    self.count(1)
        if e2e < math.inf:
            sent = self.sent
            for i in done:
                if t - sent[i] > e2e:
                    self.count(2)

    def count(self, metric: int) -> None:
        """One more request broke the limit of ``metric`` (0 TTFT, 1 TPOT, 2 end-to-end)."""
        self.left[metric] -= 1
        if self.left[metric] <= 0:
            self.certain = True


class _Requests:
    """Per-request state shared by every engine of a simulation (each request is served by
    one engine: a group of instances writes into the same arrays). The scheduler reads and
    writes one request at a time, so the state is held in Python lists (a list's element is
    read several times faster than a numpy array's; the values are the same floats and
    integers) and turned into arrays for the record (``_record``)."""

    def __init__(self, arrivals: Arrivals, prefilled, full, cap) -> None:
        n = len(arrivals)
        self.n = n
        self.n_in = arrivals.prompt_tokens.astype(np.int64).tolist()
        self.output_tokens = arrivals.output_tokens.astype(np.int64)  # (the watch's)
        self.n_out = self.output_tokens.tolist()
        self.first = [math.nan] * n
        self.finish = [math.nan] * n
        self.admitted_at = [math.nan] * n
        self.sent = np.asarray(arrivals.arrival_s, dtype=float).copy()
        self.preempted = [0] * n
        self.cached = [math.nan] * n  # prompt tokens its first admission found cached
        flags = np.broadcast_to(np.asarray(prefilled, dtype=bool), (n,))
        if flags.any():
            self.gen = flags.astype(np.int64).tolist()
            self.needs_prefill = (~flags).tolist()
        else:  # none prefilled (nearly every run): the same lists, without numpy's
            self.gen, self.needs_prefill = [0] * n, [True] * n
        full = np.broadcast_to(np.asarray(full, dtype=float), (n,))
        self.full = full.tolist()
        self.rejected_mask = full > cap
        self.rejected = self.rejected_mask.tolist()
        self.seq = [0] * n  # admission order
        self.sharing = arrivals.sharing
        self.done = 0
        self.watch: _Watch | None = None


class _Engine:
    """The scheduler's state between steps.

    Decoding requests are kept by the progress at which they end: ``G`` counts the tokens
    every running request has gained since the engine started (one per step, or a cycle's
    expected tokens when it speculates, §E8), a request's context is its base plus ``G``.
    """

    #: Slots, not a __dict__: the scheduler reads and writes its state several times a step,
    #: and a slot is read faster than an entry of a dict of this many attributes (more than
    #: the 30 a class's instances share their keys for).
    __slots__ = (
        "G",
        "act_n",
        "act_tok",
        "adp_batch",
        "adp_wait",
        "admitted",
        "arr",
        "batch_s",
        "bubbles",
        "budget",
        "busy",
        "by_end",
        "cache",
        "cap",
        "cfg",
        "chain",
        "changes",
        "clients",
        "committed",
        "decode_steps",
        "draft",
        "ends",
        "flop",
        "gen_n",
        "hold",
        "inst",
        "late",
        "layers",
        "limit",
        "mode",
        "next_arrival",
        "next_report",
        "no_evict",
        "on_finish",
        "order",
        "peak",
        "phase",
        "pipeline",
        "prefill_s",
        "prefilling",
        "progress",
        "balancing",
        "q_ref",
        "rank_budget",
        "rank_limit",
        "rank_of",
        "ranks",
        "released",
        "req",
        "reserved",
        "running",
        "sorted_at",
        "sorted_bases",
        "spec_steps",
        "steps",
        "sum_base",
        "t",
        "table",
        "terms",
        "waiting",
        "window",
        "windowed",
    )

    def __init__(
        self,
        inst: Instance,
        req: _Requests,
        progress,
        clients=None,
        order=None,
        on_finish=None,
    ) -> None:
        self.inst, self.table, self.cfg = inst, inst.table, inst.config
        self.req = req
        self.cap = inst.kv_capacity
        self.windowed = inst.windowed
        self.layers = float(sum(g.layers for g in inst.work.groups))
        n = req.n
        self.clients = clients
        #: Requests this engine receives at known times, in order (``order``), and those it
        #: receives later (a session's next turn, a router's push) on a heap.
        idx = np.asarray([] if order is None else order, dtype=np.intp)  # an array or a list
        self.order = idx.tolist()
        if (
            clients is not None
        ):  # the first ``clients`` requests at once, each next one when one finishes
            self.released = min(int(clients), len(self.order))
            self.arr = [0.0] * self.released + [np.inf] * (len(self.order) - self.released)
            req.sent[idx] = np.nan
            req.sent[idx[: self.released]] = 0.0
        else:
            self.arr = req.sent[idx].tolist()
        #: ``arr`` ends with an inf (no one else arrives): ``arr[next_arrival]`` is always the
        #: next known arrival time, without a test of the index on every turn
        self.arr.append(_INF)
        self.late: list[tuple[float, int]] = []
        self.on_finish = on_finish
        self.no_evict = self.cfg.admission == "no_evict"
        self.budget, self.limit = self.cfg.step_token_budget, self.cfg.max_batch_requests
        #: A step's time is ``table.time_s``, written out in ``mixed_step`` where the table has
        #: no pipeline bubbles (§B12): the terms it reads, fetched once (``_step_terms``).
        self.bubbles, self.pipeline = inst.table.bubbles, inst.table.pipeline
        self.terms = _step_terms(inst.table)
        self.committed = 0.0  # no_evict: layer-positions promised to the admitted requests
        self.mode = self.cfg.prefill
        #: multi-step scheduling (``EngineConfig.scheduler_steps``): decode steps per
        #: scheduler call, and those taken of the current window (0: at a scheduling point)
        self.window, self.phase = int(self.cfg.scheduler_steps), 0
        self.admitted = 0
        self.next_arrival = 0
        self.waiting: deque[int] = deque()
        self.prefilling: list[list] = []  # [request, tokens done, tokens to prefill]
        self.reserved = 0.0  # KV layer-positions held by prompts being prefilled
        # the decoding requests: request -> (context - G, G once it has all its tokens), the
        # requests by the G they finish at, and a heap of those G (each pushed when it first
        # has a request; stale entries skipped)
        self.running: dict[int, tuple[float, float]] = {}
        self.by_end: dict[float, list[int]] = {}
        self.ends: list[float] = []
        self.sum_base = 0.0
        # the decoding requests' bases sorted (windowed models), and the change of the batch
        # they were sorted at: ``decode_positions`` sorts again only when it has changed
        self.changes = 0
        self.sorted_at, self.sorted_bases = -1, np.empty(0)
        self.G, self.t = 0.0, 0.0
        self.hold = False  # no admission after a preemption until a request finishes
        self.busy = self.prefill_s = self.flop = self.batch_s = self.peak = 0.0
        self.steps = self.spec_steps = self.decode_steps = 0
        self.progress, self.next_report = progress, max(1, n // 10)
        # speculation (§E8): the cycle at each batch, and the reference positions it is chosen at
        self.draft = inst.draft
        if self.draft is not None:
            self.q_ref = float(inst.positions(self.draft.context))
        # the prefix cache (§E9): only where prompts share segments
        self.cache = None
        self.chain: dict[int, list] = {}
        if inst.config.prefix_caching and req.sharing is not None:
            pos = self.pos
            self.cache = PrefixCache(lambda a, b: pos(b) - pos(a))
        # data-parallel attention ranks that schedule their own requests (§F9, "Attention DP"):
        # 1 where the engine pools them (the ideal engine), speculates (not modelled per rank)
        # or has one attention group
        ranks = int(round(inst.layout.attention_divisor))
        if not self.cfg.rank_scheduling or self.draft is not None or ranks < 2:
            ranks = 1
        self.ranks = ranks
        if ranks > 1:
            #: each request's rank (-1: none); per rank its active requests (prefilling and
            #: decoding), their prompt tokens and its decoding requests
            self.rank_of = [-1] * n
            self.act_n, self.act_tok, self.gen_n = [0] * ranks, [0] * ranks, [0] * ranks
            #: a rank's share of the instance's limits (each rank's own, ``per_instance``)
            self.rank_budget = max(1, self.budget // ranks)
            self.rank_limit = max(1, self.limit // ranks)
            #: TensorRT-LLM's balancing (wait, timeout steps; None: off) and its two counters
            self.balancing = self.cfg.adp_balancing
            self.adp_wait = self.adp_batch = 0

    # --- the KV cache ------------------------------------------------------------------
    def decode_positions(self, ahead=0):
        """Σ over decoding requests of their layer-positions ``ahead`` tokens from now
        (``ahead`` may be an array)."""
        if not self.windowed:
            return self.layers * (self.sum_base + len(self.running) * (self.G + ahead))
        if self.sorted_at != self.changes:
            base = np.fromiter(map(_BASE, self.running.values()), float, len(self.running))
            self.sorted_bases, self.sorted_at = np.sort(base), self.changes
        # sorted(b) + G is sorted(b + G) exactly: adding G keeps the order of floats
        return self.inst.work.layer_positions_of_many(self.sorted_bases + self.G, ahead)

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

    def advance(self, D: int) -> float:
        """Tokens each decoding request gains per step at batch ``D``."""
        c = self.cycle(D)
        return 1.0 if c is None else c.expected_tokens

    # --- arrivals ----------------------------------------------------------------------
    def next_time(self) -> float:
        """When the next request reaches this engine (inf: none known)."""
        a = self.arr[self.next_arrival]  # inf past the last (``arr``'s end)
        return min(a, self.late[0][0]) if self.late else a

    def push(self, i: int, at: float) -> None:
        """Request ``i`` reaches this engine at ``at`` (a session's next turn, a router)."""
        heapq.heappush(self.late, (at, i))

    def arrive(self) -> None:
        """The requests that have arrived by now join the queue, in the order they arrived
        (``iterate`` takes those at known times itself when no others are due)."""
        arr, order, late, waiting = self.arr, self.order, self.late, self.waiting
        t, j = self.t, self.next_arrival
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

    # --- admission and preemption ------------------------------------------------------
    def admit(self) -> None:
        running, prefilling, waiting = self.running, self.prefilling, self.waiting
        if self.hold:  # nothing is admitted after a preemption until a request finishes ...
            if not running and not prefilling:
                self.hold = False  # ... or everything was preempted: start again
            elif self.cache is not None:
                self.trim()
                return
            else:
                return
        if self.no_evict and self.cache is None:
            self._admit_no_evict()
            return
        r = self.req
        limit = self.limit
        rejected, n_in, gen, needs_prefill = r.rejected, r.n_in, r.gen, r.needs_prefill
        cache, layers, cap = self.cache, self.layers, self.cap
        plain = not self.windowed  # a request's layer-positions: layers x its context
        while waiting:
            i = waiting[0]
            if rejected[i]:
                waiting.popleft()
                self._count_done(1, i)
                continue
            if len(running) + len(prefilling) >= limit:
                return
            prefill = needs_prefill[i]
            context = n_in[i] + gen[i] - (0 if prefill else 1)  # Python ints
            need = layers * context if plain else self.pos(context)
            nodes: list[Node] = NO_NODES
            hit = 0
            if cache is not None and prefill:
                nodes = cache.lookup(_sharing(r).segments[i])
                hit = cache.hit_tokens(nodes, n_in[i])
                need -= cache.held_by_others(nodes)  # stored once
            if self.no_evict:
                if self.committed + r.full[i] > cap:
                    return
                self.committed += r.full[i]
            elif (running or prefilling) and (
                (
                    layers * (self.sum_base + len(running) * self.G) + self.reserved
                    if plain and cache is None  # ``used``, inline (``held`` is ``reserved``)
                    else self.used()
                )
                + need
                + layers * (len(running) + len(prefilling) + 1)
                > cap
            ):
                # room for every running request's next token first (vLLM V1's order); an
                # empty engine takes any request that fits at its peak (``rejected`` holds the
                # others): one whose prompt fills the cache to its last position waited forever
                return
            waiting.popleft()
            self.admitted += 1
            if self.ranks > 1:
                self._assign(i)
            r.admitted_at[i] = self.t
            r.seq[i] = self.admitted
            if cache is not None and prefill:
                cache.pin(nodes, self.t)
                self.chain[i] = list(nodes)
                if math.isnan(r.cached[i]):
                    r.cached[i] = hit
            if prefill:
                prefilling.append([i, hit, context])
                self.reserved += layers * context if plain else self.pos(context)
            else:  # arrives with its prompt's cache (disaggregated decode)
                self._join_decode(i, context)
        if cache is not None:
            self.trim()

    def _admit_no_evict(self) -> None:
        """``admit`` under ``no_evict`` without a prefix cache (TensorRT-LLM's policy; most
        measured runs): first come first served while the batch has room and each request's
        peak fits beside those promised. About one request is admitted per step, so the state
        it reads and writes is held in locals, written back at the end."""
        r = self.req
        running, prefilling, waiting = self.running, self.prefilling, self.waiting
        rejected, n_in, gen, needs_prefill, full = (
            r.rejected,
            r.n_in,
            r.gen,
            r.needs_prefill,
            r.full,
        )
        admitted_at, seq, t = r.admitted_at, r.seq, self.t
        layers, cap, limit = self.layers, self.cap, self.limit
        plain = not self.windowed  # a request's layer-positions: layers x its context
        committed, admitted, reserved = self.committed, self.admitted, self.reserved
        batch = len(running) + len(prefilling)
        assign = self._assign if self.ranks > 1 else None
        while waiting:
            i = waiting.popleft()
            if rejected[i]:
                self._count_done(1, i)
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
                reserved += layers * context if plain else self.pos(context)
                batch += 1
            else:  # arrives with its prompt's cache (disaggregated decode)
                self.committed = committed  # ``_finished`` releases a request's peak
                self._join_decode(i, n_in[i] + gen[i] - 1)
                committed = self.committed
                batch = len(running) + len(prefilling)
        self.committed, self.admitted, self.reserved = committed, admitted, reserved

    def _join_decode(self, i: int, context: int) -> None:
        r = self.req
        left = int(r.n_out[i] - r.gen[i])
        if left <= 0:
            if self.ranks > 1:
                self._rank_done(i, False)
            self._finished(i)
            self._count_done(1, i)
            return
        if self.ranks > 1:
            self.gen_n[self.rank_of[i]] += 1
        G = self.G
        end = G + left
        self.running[i] = (context - G, end)
        self.changes += 1
        same = self.by_end.get(end)
        if same is None:  # a new end: on the heap once
            self.by_end[end] = [i]
            heapq.heappush(self.ends, end)
        else:
            same.append(i)
        self.sum_base += context - G

    def _assign(self, i: int) -> None:
        """Put admitted request ``i`` on a data-parallel attention rank as TensorRT-LLM's
        executor request queue does (``_schedule_attention_dp_requests``,
        ``_balance_requests_across_ranks``): among the ranks holding fewer active requests than
        ``max(ceil((active + 1) / ranks), most on a rank)``, the one whose active requests have
        the fewest prompt tokens (then the fewest requests, then the lowest rank)."""
        n, tok, ranks = self.act_n, self.act_tok, self.ranks
        expected = max(-(-(sum(n) + 1) // ranks), max(n))
        r = min((tok[k], n[k], k) for k in range(ranks) if n[k] < expected)[2]
        self.rank_of[i] = r
        n[r] += 1
        tok[r] += self.req.n_in[i]

    def _rank_done(self, i: int, decoding: bool) -> None:
        """Request ``i`` leaves its rank (finished or preempted); ``decoding``: it was decoding."""
        r = self.rank_of[i]
        if r < 0:
            return
        self.rank_of[i] = -1
        self.act_n[r] -= 1
        self.act_tok[r] -= self.req.n_in[i]
        if decoding:
            self.gen_n[r] -= 1

    def min_end(self) -> float:
        """The G at which the next decoding request finishes."""
        while self.ends[0] not in self.by_end:
            heapq.heappop(self.ends)
        return self.ends[0]

    def _leave(self, i: int) -> float:
        """Take request ``i`` out of the decoding batch; its context."""
        base, end = self.running.pop(i)
        self.changes += 1
        self.sum_base -= base
        same = self.by_end[end]
        same.remove(i)
        if not same:
            del self.by_end[end]
        return base + self.G

    def preempt(self) -> None:
        """Drop the cache of the request admitted last and put it back at the queue's head,
        with the tokens it has generated (they are prefilled again)."""
        r = self.req
        seq = r.seq
        last = max(self.running, key=lambda k: seq[k], default=-1)
        decode_seq = seq[last] if last >= 0 else -1
        if self.prefilling and seq[self.prefilling[-1][0]] > decode_seq:
            i, _, context = self.prefilling.pop()
            self.reserved -= self.pos(context)
            if self.ranks > 1:
                self._rank_done(i, False)
        else:
            i = last
            context = self._leave(i)
            r.gen[i] = max(int(r.gen[i]), int(context + _EPS) - int(r.n_in[i]) + 1)
            if self.ranks > 1:
                self._rank_done(i, True)
        if self.cache is not None and i in self.chain:  # its prefix stays cached
            self.cache.release(self.chain.pop(i), self.t)
        r.preempted[i] += 1
        r.needs_prefill[i] = True
        self.waiting.appendleft(i)
        self.hold = True

    def _finished(self, i: int) -> None:
        r = self.req
        r.finish[i] = self.t
        if r.watch is not None:
            r.watch.finished((i,), self.t, r.first, r.n_out)
        if self.no_evict:
            self.committed -= r.full[i]
        if self.cache is not None and i in self.chain:
            nodes = self.chain.pop(i)
            key = _sharing(r).answer_keys[i]
            if key is not None:  # the answer: the next turn's prompt starts with it
                nodes += self.cache.insert(((key, int(r.n_out[i])),), nodes[-1], self.t)
            self.cache.release(nodes, self.t)

    def _count_done(self, count: int, i: int) -> None:
        r = self.req
        r.done += count
        if self.clients is not None:  # each finished request's client sends its next one now
            for _ in range(count):
                if self.released < len(self.order):
                    self.arr[self.released] = self.t
                    r.sent[self.order[self.released]] = self.t
                    self.released += 1
        if r.sharing is not None:
            nxt = int(r.sharing.follows[i])
            if nxt >= 0:  # the session's next turn, a think time after this answer
                at = self.t + float(r.sharing.think_s[nxt])
                r.sent[nxt] = at
                if self.on_finish is not None:
                    self.on_finish(nxt, at)
                else:
                    self.push(nxt, at)
        if self.progress is not None and r.done >= self.next_report:
            self.progress(r.done, r.n)
            self.next_report += max(1, r.n // 10)

    def _complete(self) -> None:
        """Requests whose last token came out of the step just taken."""
        ends, by_end, running, r = self.ends, self.by_end, self.running, self.req
        while ends:
            end = ends[0]
            if end not in by_end:
                heapq.heappop(ends)
                continue
            if end > self.G + _EPS:
                return
            heapq.heappop(ends)
            done = by_end.pop(end)
            self.changes += 1
            if self.ranks > 1:
                for i in done:
                    self._rank_done(i, True)
            if self.cache is not None:
                for i in done:
                    self.sum_base -= running.pop(i)[0]
                    self._finished(i)
            else:  # ``_finished`` without a prefix cache, inline, the sums in locals
                finish, t, full, no_evict = r.finish, self.t, r.full, self.no_evict
                sum_base, committed = self.sum_base, self.committed
                for i in done:
                    sum_base -= running.pop(i)[0]
                    finish[i] = t
                    if no_evict:
                        committed -= full[i]
                self.sum_base, self.committed = sum_base, committed
                if r.watch is not None:
                    r.watch.finished(done, t, r.first, r.n_out)
            self.hold = False
            if self.clients is None and r.sharing is None and self.progress is None:
                r.done += len(done)  # ``_count_done`` has nothing else to do
            else:
                for i in done:
                    self._count_done(1, i)

    # --- steps -------------------------------------------------------------------------
    def decode_tokens(self) -> int:
        """Tokens the decoding requests take of the next step's budget (a speculative cycle
        verifies several per request)."""
        D = len(self.running)
        c = self.cycle(D)
        return D if c is None else D * c.verify_tokens

    def can_prefill(self, budget: int) -> bool:
        """Whether the next step carries prompt tokens (``budget``: the step's token budget)."""
        if not self.prefilling:
            return False
        D = self.decode_tokens()
        if self.mode == "chunked":
            return budget > D
        if self.mode == "whole":
            left = self.prefilling[0][2] - self.prefilling[0][1]
            return D == 0 or D + left <= budget or (left > budget and budget > D)
        return True  # separate: prompts go first

    def _room_for_prompts(self, separate: bool, D: int, E: float) -> float | None:
        """Before a step with prompt tokens: the decoding requests' layer-positions read by it
        (``decode_positions``; 0 without decoding requests in the step), or None if the cache
        had to make room first (a request preempted) for their ``E`` tokens each."""
        n_running = len(self.running)
        if not self.windowed:  # a context's layer-positions: layers x the context
            layers = self.layers
            q = layers * (self.sum_base + n_running * self.G)  # decode_positions()
            held = self.reserved if self.cache is None else self.held()  # held(), no cache
            if not separate and q + held + layers * n_running * E > self.cap:
                self.preempt()
                return None
            return q if D else 0.0  # a float: ``layers`` is
        if not separate and self.used() + self.growth(E) > self.cap:
            self.preempt()
            return None
        return float(self.decode_positions()) if D else 0.0

    def mixed_step(self, budget: int) -> bool:
        """One step with prompt tokens (all of ``budget`` for them: the decoding requests'
        tokens already taken out, except with separate prefill); False if the cache had to
        make room first."""
        mode = self.mode
        separate = mode == "separate"
        running, prefilling, cache = self.running, self.prefilling, self.cache
        n_running = len(running)
        D = 0 if separate else n_running
        c = self.cycle(D) if self.draft is not None else None
        E = 1.0 if c is None else c.expected_tokens
        v = 1 if c is None else c.verify_tokens
        plain = not self.windowed  # a context's layer-positions: layers x the context
        layers = self.layers
        decode_q = self._room_for_prompts(separate, D, E)
        if decode_q is None:
            return False
        kv, att, taken = decode_q, v * decode_q, 0
        # the prompts' chunks, from the head of the queue: (tokens prefilled before, tokens
        # taken) of each for the draft's own prefill; each prompt's progress is written at once
        # (nothing reads it before the step's end)
        chunks: list[tuple[int, int]] = []
        drafted = self.draft is not None
        n_chunks = n_done = 0
        largest = 1
        pos = self.pos
        chunked = mode == "chunked"
        for entry in prefilling:
            done = entry[1]
            left = entry[2] - done
            if chunked:
                room = budget - taken
                take = room if room < left else left  # min(left, room)
            elif taken + left <= budget:
                take = left  # whole prompts
            elif not n_chunks and left > self.budget:
                take = budget  # a prompt that never fits whole: in chunks of the room left
            else:
                take = 0
            if take <= 0:
                break
            if plain:
                kv += layers * done
                att += take * (layers * (done + (take - 1) / 2.0))
            else:
                kv += pos(done)
                att += take * pos(done + (take - 1) / 2.0)
            entry[1] = done + take
            if drafted:
                chunks.append((done, take))
            if take == left and n_done == n_chunks:  # prefilled to its end, as all before it
                n_done += 1
            n_chunks += 1
            taken += take
            if take > largest:
                largest = take
        T = D * v + taken
        if D and v > largest:
            largest = v
        R = D + n_chunks  # the step's sequences: decoding requests and prompt chunks
        # ``table.time_s`` of the step and of its decoding requests alone, written out where
        # it looks a step up at its own tokens: without pipeline bubbles, or with as many
        # sequences as stages (``StepTable._charged``, §B12). Nearly every step comes here,
        # and the two calls (with ``_charged``'s) were a fifth of the simulator's time; the
        # same terms in the same order, so the same floats.
        fixed, memory, compute, seq_s, req_s, kv_s, att_s, flops, att_flop = self.terms
        own = not self.bubbles
        if c is None and T and (own or self.pipeline <= R):
            u, w = memory[T] + kv_s * kv + req_s * R, compute[T] + att_s * att
            dt = fixed[T] + seq_s * R + (w if w > u else u)  # max(u, w)
        else:
            dt = self.table.time_s(T, kv, att, R, largest)
        if not D:
            alone = 0.0
        elif c is None and (own or self.pipeline <= D):
            u, w = memory[D] + kv_s * decode_q + req_s * D, compute[D] + att_s * decode_q
            alone = fixed[D] + seq_s * D + (w if w > u else u)
        else:
            alone = self.table.time_s(D * v, decode_q, v * decode_q, D, v)
        flop = flops[T] + att_flop * att
        if self.draft is not None:
            extra, extra_flop, decode_extra = self._draft_work(D, c, chunks, taken)
            dt += extra
            alone += decode_extra
            flop += extra_flop
        advance = E if (T and not separate and D) else 0.0
        self._account(dt, D, flop, advance, c)
        self.prefill_s += dt - alone
        self.steps += 1
        G, ends = self.G, self.ends
        if not separate and ends and ends[0] <= G + _EPS:  # ``_complete``'s first test
            self._complete()
        # the prompts prefilled to their end, from the head of the queue: each decodes now (the
        # chunks counted them; the test goes on past them as the scheduler's rule is written)
        n = n_done
        while n < len(prefilling) and prefilling[n][1] >= prefilling[n][2]:
            n += 1
        prefilled = prefilling[:n]
        del prefilling[:n]
        self._join_prefilled(prefilled, G)
        self.phase = 0  # a step with prompt tokens is a scheduler call of its own
        if cache is not None:
            self.trim()
        return True

    def _join_prefilled(self, prefilled: list, G: float) -> None:
        """The prompts ``prefilled`` to their end by the step just taken (``G`` after it): each
        emits its first token and decodes, or finishes if that was its last."""
        r, cache, layers, pos = self.req, self.cache, self.layers, self.pos
        plain = not self.windowed
        running, ends, ranked = self.running, self.ends, self.ranks > 1
        first, gen, needs_prefill, n_out = r.first, r.gen, r.needs_prefill, r.n_out
        t, by_end = self.t, self.by_end
        # the engine's sums in locals, written back after the loop (the calls in it read none)
        reserved, sum_base, changes = self.reserved, self.sum_base, self.changes
        for i, _, context in prefilled:
            reserved -= layers * context if plain else pos(context)
            g = gen[i] + 1
            gen[i] = g
            needs_prefill[i] = False
            f = first[i]
            if f != f:  # NaN: its first token
                first[i] = t
            if cache is not None and i in self.chain:  # its prompt's segments are cached
                segs = _sharing(r).segments[i]
                held_nodes = self.chain[i]
                self.chain[i] = held_nodes + cache.insert(
                    segs[len(held_nodes) :], held_nodes[-1] if held_nodes else None, self.t
                )
            left = n_out[i] - g  # ``_join_decode``, inline (once per request)
            if left <= 0:  # its first token was its last
                if ranked:
                    self._rank_done(i, False)
                self._finished(i)
                self._count_done(1, i)
                continue
            if ranked:
                self.gen_n[self.rank_of[i]] += 1
            end, base = G + left, context - G
            running[i] = (base, end)
            changes += 1
            same = by_end.get(end)
            if same is None:  # a new end: on the heap once
                by_end[end] = [i]
                heapq.heappush(ends, end)
            else:
                same.append(i)
            sum_base += base
        self.reserved, self.sum_base, self.changes = reserved, sum_base, changes

    # --- data-parallel attention ranks (§F9, "Attention DP") --------------------------------
    def _rank_turn(self, D: int, horizon: float) -> bool:
        """``iterate``'s step where the attention ranks schedule their own requests: the prompt
        chunks each rank takes (``_rank_plan``), released or held by the balancing
        (``_balance``); a step with them (``_rank_step``), else decode-only steps (one at a
        time while prompts are held: the balancing decides again every step)."""
        plan, taken = self._rank_plan()
        release = True
        all_gen = min(self.gen_n) > 0
        if self.balancing is not None:
            release = self._balance(min(taken) > 0, all_gen)
        if plan and release:
            self._rank_step(plan, taken)
            return True
        room = not self.waiting and not self.hold and D + len(self.prefilling) < self.limit
        before = self.steps
        self.decode_run(room, horizon, 1 if plan else 0)
        if self.balancing is not None and not plan:
            self._balance_idle(self.steps - before - 1, all_gen)
        return True

    def _rank_plan(self) -> tuple[list, list]:
        """([(prefilling entry, tokens it takes)], prompt tokens per rank) of the next step:
        each rank's scheduler takes its own prompts first come, first served into its share of
        the token budget beside its decoding requests (``rank_budget``; its ``max_num_tokens``),
        as the pooled step takes them into the whole budget (``mixed_step``)."""
        ranks, budget = self.ranks, self.rank_budget
        taken = [0] * ranks
        plan: list = []
        if not self.prefilling:
            return plan, taken
        closed = [False] * ranks
        shut = 0  # ranks closed: when every one is, no later prompt can go
        rank_of, gen = self.rank_of, self.gen_n
        separate, chunked = self.mode == "separate", self.mode == "chunked"
        for entry in self.prefilling:
            r = rank_of[entry[0]]
            if closed[r]:
                continue
            left = entry[2] - entry[1]
            room = budget - taken[r] - (0 if separate else gen[r])
            if chunked:
                take = min(left, room)
            elif left <= room:
                take = left  # whole prompts
            elif not taken[r] and left > budget:
                take = room  # a prompt that never fits whole: in chunks of the room left
            else:
                take = 0
            if take <= 0:
                closed[r] = True  # the rank's step is full: its later prompts wait
                shut += 1
                if shut == ranks:
                    break
                continue
            plan.append((entry, take))
            taken[r] += take
        return plan, taken

    def _balance(self, all_ctx: bool, all_gen: bool) -> bool:
        """One step of TensorRT-LLM's attention-DP balancing (py_executor
        ``_balance_adp_requests``): whether the prompts the ranks scheduled go into this step.
        When every rank has a prompt and room for it (fewer decoding requests than its batch),
        they go, after ``wait`` steps held if every rank also decodes; otherwise they are held
        until ``timeout`` steps have been counted (the count runs on decode-only steps too) or
        some rank has nothing to decode."""
        wait, timeout = self.balancing  # type: ignore[misc]
        if all_ctx and max(self.gen_n) < self.rank_limit:
            self.adp_wait = 0
            if all_gen:
                if self.adp_batch < wait:
                    self.adp_batch += 1
                    return False
                self.adp_batch = 0
            return True
        self.adp_wait += 1
        if self.adp_wait >= timeout or not all_gen:
            self.adp_wait = 0
            return True
        return False

    def _balance_idle(self, steps: int, all_gen: bool) -> None:
        """The balancing's count over ``steps`` more decode-only steps without prompts
        (``_balance`` of each: its count wraps at the timeout, or restarts while some rank has
        nothing to decode)."""
        if steps <= 0:
            return
        timeout = self.balancing[1]  # type: ignore[index]
        self.adp_wait = (self.adp_wait + steps) % timeout if all_gen else 0

    def _rank_step(self, plan: list, taken: list) -> bool:
        """One step with the prompt chunks of ``plan`` (``_rank_plan``) on an instance whose
        ranks schedule their own requests. Every step is synchronous across the ranks (the
        expert layers exchange tokens in every layer), so it lasts as long as its busiest
        rank's: the pooled step (``mixed_step``) with the decoding requests as they are and the
        prompt work of the rank with the most prompt tokens on every rank (its tokens, chunks,
        cache reads and attention times the ranks). Its FLOP are the work done. False if the
        cache had to make room first."""
        separate = self.mode == "separate"
        running, prefilling, cache = self.running, self.prefilling, self.cache
        n_running = len(running)
        D = 0 if separate else n_running
        plain = not self.windowed
        layers, pos = self.layers, self.pos
        decode_q = self._room_for_prompts(separate, D, 1.0)
        if decode_q is None:
            return False
        ranks, rank_of = self.ranks, self.rank_of
        kv, att, chunks = [0.0] * ranks, [0.0] * ranks, [0] * ranks
        attended, largest, total = 0.0, 1, 0
        for entry, take in plan:
            done, r = entry[1], rank_of[entry[0]]
            if plain:
                kv[r] += layers * done
                a = take * (layers * (done + (take - 1) / 2.0))
            else:
                kv[r] += pos(done)
                a = take * pos(done + (take - 1) / 2.0)
            att[r] += a
            attended += a
            chunks[r] += 1
            entry[1] = done + take
            total += take
            if take > largest:
                largest = take
        b = max(range(ranks), key=taken.__getitem__)  # the busiest rank (the first of them)
        table = self.table
        dt = table.time_s(
            D + ranks * taken[b],
            decode_q + ranks * kv[b],
            decode_q + ranks * att[b],
            D + ranks * chunks[b],
            largest,
        )
        alone = table.time_s(D, decode_q, decode_q, D, 1) if D else 0.0
        flop = table.flop[D + total] + table.attention_flop * (decode_q + attended)
        self._account(dt, D, flop, 1.0 if D else 0.0)
        self.prefill_s += dt - alone
        self.steps += 1
        G, ends = self.G, self.ends
        if not separate and ends and ends[0] <= G + _EPS:  # ``_complete``'s first test
            self._complete()
        # each rank's prompts prefilled to their end (a rank's may finish behind another's)
        prefilled = [e for e in prefilling if e[1] >= e[2]]
        if prefilled:
            prefilling[:] = [e for e in prefilling if e[1] < e[2]]
        self._join_prefilled(prefilled, G)
        self.phase = 0
        if cache is not None:
            self.trim()
        return True

    @property
    def _draft(self) -> DraftEngine:
        """The draft engine of a speculating step (a cycle is chosen only with one, §E8)."""
        if self.draft is None:
            raise RuntimeError("a speculative cycle on an instance without a draft")
        return self.draft

    def _draft_work(self, D: int, c, chunks, taken: int):
        """(seconds, FLOP, seconds without the prompt chunks) the draft adds to a mixed
        step: its passes for the decoding requests when the step speculates, and its own
        prefill of the prompt chunks, ``chunks`` (tokens prefilled before the step, tokens
        taken) of each prompt (its cache follows the target's, §E8)."""
        d = self._draft
        tab = d.table
        seconds = flop = decode_only = 0.0
        if c is not None:
            ctx = self.sum_base + D * self.G
            qd = d.draft_positions(ctx)
            for tokens, count in c.draft_passes:
                s = tab.time_s(D * tokens, qd, tokens * qd, D, tokens)
                seconds += count * s
                decode_only += count * s
                flop += count * (tab.flop[D * tokens] + tab.attention_flop * tokens * qd)
        if taken:
            kv = sum(d.layers * done for done, _ in chunks)
            att = sum(take * d.layers * (done + (take - 1) / 2.0) for done, take in chunks)
            largest = max(take for _, take in chunks)
            seconds += tab.time_s(taken, kv, att, len(chunks), largest)
            flop += tab.flop[taken] + tab.attention_flop * att
        return seconds, flop, decode_only

    def _account(self, dt: float, D: int, flop: float, advance: float, c=None) -> None:
        self.t += dt
        self.G += advance
        self.busy += dt
        self.batch_s += D * dt
        self.flop += flop
        if D:
            self.decode_steps += 1
            if c is not None:
                self.spec_steps += 1
        if self.windowed or self.cache is not None:
            used = self.used()
        else:  # ``used``, inline (``held`` is ``reserved`` without a prefix cache)
            used = self.layers * (self.sum_base + len(self.running) * self.G) + self.reserved
        if used / self.cap > self.peak:
            self.peak = used / self.cap

    def decode_run(self, admit_more: bool, horizon: float = np.inf, most: int = 0) -> None:
        """Decode-only steps until the next event: an arrival that could be admitted, a
        completion, or a full cache (and no later than ``horizon`` when requests may be
        admitted: a router's next arrival), at most ``most`` of them (0: no limit). With
        multi-step scheduling (``window`` > 1) the run ends at its window's end or a
        completion instead: nothing is admitted before."""
        D = len(self.running)
        c = self.cycle(D) if self.draft is not None else None
        E = 1.0 if c is None else c.expected_tokens
        k = max(1, math.ceil((self.min_end() - self.G) / E - _EPS))
        if most:
            k = min(k, most)
        window = self.window
        if window > 1:  # multi-step: the run goes on to the window's end whatever arrives
            k = min(k, window - self.phase)
            deadline = None
        else:
            deadline = min(self.next_time(), horizon) - self.t if admit_more else None
            if deadline is not None and not math.isfinite(deadline):
                deadline = None
        if self.windowed:
            k, span, attended, after, flop = self._run_arrays(D, min(k, RUN_STEPS), deadline, c)
        else:
            k, span, attended, after, flop = self._run_closed(D, k, deadline, c)
        if k == 0:
            self.preempt()
            return
        self.t += span
        self.G += k * E
        self.busy += span
        self.batch_s += D * span
        self.flop += flop
        self.steps += k
        self.decode_steps += k
        self.spec_steps += k if c is not None else 0
        if window > 1:
            self.phase = (self.phase + k) % window
        held = self.reserved if self.cache is None else self.held()  # held(), without a cache
        peak = (after + held) / self.cap
        if peak > self.peak:  # max(self.peak, peak)
            self.peak = peak
        ends = self.ends
        if ends and ends[0] <= self.G + _EPS:  # ``_complete``'s first test
            self._complete()
        if self.cache is not None:
            self.trim()

    def _run_time(self, D: int, q0: float, growth: float, k: int, c=None) -> float:
        if c is None:
            return self.table.run_time_s(D, q0, growth, k)
        E = c.expected_tokens
        s0 = self.sum_base + D * self.G
        return self._draft.run_s(self.table, D, q0, growth, s0, D * E, k, c)

    def _run_flop(self, D: int, k: int, attended: float, c) -> float:
        """FLOP of ``k`` decode steps whose positions attended sum to ``attended``."""
        tab = self.table
        if c is None:
            return k * tab.flop[D] + tab.attention_flop * attended
        v = c.verify_tokens
        flop = k * tab.flop[D * v] + tab.attention_flop * v * attended
        d = self._draft
        ratio = d.layers / self.layers
        for tokens, count in c.draft_passes:
            flop += count * (
                k * d.table.flop[D * tokens] + d.table.attention_flop * tokens * ratio * attended
            )
        return flop

    def _run_closed(self, D: int, k: int, deadline, c):
        """(steps, seconds, Σ positions attended, positions after, FLOP) of a run of at most
        ``k`` steps, in closed form: the positions grow by the same amount every step."""
        E = 1.0 if c is None else c.expected_tokens
        q0 = self.layers * (self.sum_base + D * self.G)
        growth = self.layers * D * E
        held = self.reserved if self.cache is None else self.held()  # held(), without a cache
        k = min(k, int((self.cap - held - q0) // growth))
        if k <= 0:
            return 0, 0.0, 0.0, q0, 0.0
        # the seconds of a run of ``steps`` steps
        if c is None:
            run = partial(self.table.run_time_s, D, q0, growth)
        else:
            run = partial(self._run_time, D, q0, growth, c=c)

        span = None  # the run's seconds, once known
        if deadline is not None:
            span = run(k)
            if span > deadline:
                lo, hi = 1, k  # the first step count whose run reaches the arrival
                while lo < hi:
                    mid = (lo + hi) // 2
                    seconds = run(mid)
                    if seconds >= deadline:
                        hi, span = mid, seconds
                    else:
                        lo = mid + 1
                k = lo
        if span is None:
            span = run(k)
        attended = k * q0 + growth * k * (k - 1) / 2.0
        return k, span, attended, q0 + growth * k, self._run_flop(D, k, attended, c)

    def _run_arrays(self, D: int, k: int, deadline, c):
        """The same for models with sliding windows, one array element per step."""
        E = 1.0 if c is None else c.expected_tokens
        q = self.decode_positions(E * np.arange(k + 1))
        k = min(k, int(np.searchsorted(q[1:] + self.held(), self.cap, side="right")))
        if k == 0:
            return 0, 0.0, 0.0, float(q[0]), 0.0
        if c is None:
            times = self.table.times_s(D, q[:k])
        else:
            v, d = c.verify_tokens, self._draft
            times = self.table.times_s(D * v, q[:k], D, v)
            ctx = self.sum_base + D * (self.G + E * np.arange(k))
            qd = d.draft_positions(ctx)
            for tokens, count in c.draft_passes:
                times = times + count * d.table.times_s(D * tokens, qd, D, tokens)
        cum = np.cumsum(times)
        if deadline is not None:
            k = min(k, int(np.searchsorted(cum, deadline)) + 1)
        attended = float(q[:k].sum())
        return k, float(cum[k - 1]), attended, float(q[k]), self._run_flop(D, k, attended, c)

    def iterate(self, horizon: float = np.inf) -> bool:
        """One turn of the scheduler: admit, then one step with prompt tokens or a run of
        decode steps. False when there is nothing to do before ``horizon``."""
        late, t = self.late, self.t
        running, prefilling, waiting = self.running, self.prefilling, self.waiting
        arr, j = self.arr, self.next_arrival
        if late:
            if arr[j] <= t or late[0][0] <= t:  # something has arrived
                self.arrive()
        elif arr[j] <= t:  # only requests at known times (nearly every run): those due, in order
            order = self.order
            while arr[j] <= t:  # ``arr`` ends with an inf
                waiting.append(order[j])
                j += 1
            self.next_arrival = j
        if self.phase and not running and not prefilling:
            self.phase = 0  # an idle engine schedules at once
        if self.phase:
            pass  # inside a window of decode steps: nothing is scheduled until it ends
        elif waiting or self.cache is not None:
            self.admit()
        elif self.hold and not running and not prefilling:
            self.hold = False  # ``admit`` with no one waiting
        D = len(running)
        if D == 0 and not prefilling:
            if waiting:
                return True  # rejected requests were dropped; try the next one
            nxt = self.next_time()
            if not math.isfinite(nxt) or nxt > horizon:
                return False
            self.t = max(self.t, nxt)
            return True
        if self.ranks > 1:
            return self._rank_turn(D, horizon)
        budget = self.budget
        if self.draft is not None:
            if self.can_prefill(budget):
                separate = self.mode == "separate"
                self.mixed_step(budget if separate else budget - self.decode_tokens())
                return True
        elif prefilling:  # ``can_prefill``, the decoding requests taking a token each
            mode = self.mode
            if mode == "chunked":
                go = budget > D
            elif mode == "whole":
                first = prefilling[0]
                left = first[2] - first[1]
                go = D == 0 or D + left <= budget or (left > budget and budget > D)
            else:
                go = True
            if go:
                self.mixed_step(budget if mode == "separate" else budget - D)
                return True
        room = not waiting and not self.hold and D + len(prefilling) < self.limit
        self.decode_run(room, horizon)
        return True

    def run(self) -> bool:
        """Serve every request; False when a watch (``_Watch``) stopped the run first."""
        w = self.req.watch
        if w is None:
            while self.iterate():
                pass
            return True
        first = self.req.first
        while not w.certain and self.iterate():
            if self.t - w.next_sent > w.ttft:  # ``overdue``'s first test
                w.overdue(self.t, first)
        return not w.certain


def _record(engines, req: _Requests, arrivals: Arrivals, stopped: bool = False) -> RunRecord:
    """What the engines measured: per request, and per instance on average."""
    g = len(engines)
    n = req.n  # (``np.fromiter`` reads a list of known length faster than ``np.array``)
    finish = np.fromiter(req.finish, float, n)
    finished = finish[np.isfinite(finish)]
    sent = np.where(np.isfinite(req.sent), req.sent, np.nan)
    arrivals = Arrivals(sent, arrivals.prompt_tokens, arrivals.output_tokens, arrivals.sharing)
    return RunRecord(
        arrivals=arrivals,
        first_token_s=np.fromiter(req.first, float, n),
        finish_s=finish,
        admitted_s=np.fromiter(req.admitted_at, float, n),
        preemptions=np.fromiter(req.preempted, np.int64, n),
        rejected=req.rejected_mask,
        busy_s=sum(e.busy for e in engines) / g,
        prefill_s=sum(e.prefill_s for e in engines) / g,
        flop=sum(e.flop for e in engines) / g,
        steps=sum(e.steps for e in engines),
        end_s=float(finished.max()) if finished.size else 0.0,
        batch_seconds=sum(e.batch_s for e in engines) / g,
        peak_kv_fraction=max(e.peak for e in engines),
        cached_tokens=np.fromiter(req.cached, float, n) if req.sharing is not None else None,
        spec_steps=sum(e.spec_steps for e in engines),
        decode_steps=sum(e.decode_steps for e in engines),
        instances=g,
        stopped=stopped,
    )


def _checked(instance: Instance, arrivals: Arrivals, prefilled) -> _Requests:
    n = len(arrivals)
    if n:  # the longest request against the model's window
        longest = np.max(arrivals.prompt_tokens + arrivals.output_tokens)
        check_context(instance.setting.model, float(longest))
    flags = np.broadcast_to(np.asarray(prefilled, dtype=bool), (n,))
    peak = arrivals.prompt_tokens.astype(np.int64) + arrivals.output_tokens - 1
    return _Requests(arrivals, flags, instance.positions(peak), instance.kv_capacity)


def simulate(
    instance: Instance,
    arrivals: Arrivals,
    prefilled=False,
    progress: Callable[[int, int], None] | None = None,
    clients: int | None = None,
    stop: dict[str, float] | None = None,
) -> RunRecord:
    """Serve ``arrivals`` on one engine instance. ``prefilled`` (bool or per request) marks
    requests that arrive with their prompt's KV cache and first token (a disaggregated decode
    pool); ``progress(done, total)`` is called as requests finish. With ``clients``, the
    arrival times are ignored: that many closed-loop clients send the requests in order, each
    its next one when its last one finishes (the record holds the times they arrived). A
    session's later turns are sent when the turn before them finishes (``arrivals.sharing``).
    ``stop`` (p99 limits by metric, ``Targets.limits``) ends the run as soon as it certainly
    misses one of them (``_Watch``; the record says ``stopped``): a load search's verdict
    without the rest of a failing run. It applies to open-loop arrivals without sessions (the
    others run in full)."""
    if clients is not None and (
        isinstance(clients, bool) or int(clients) != clients or clients < 1
    ):
        raise SpecError("argument", "concurrency", f"is {clients!r}", "a whole number >= 1")
    req = _checked(instance, arrivals, prefilled)
    if clients is not None:
        order = np.arange(req.n)
    else:
        order = np.flatnonzero(np.isfinite(req.sent))
    sessions = arrivals.sharing is not None and bool(np.any(arrivals.sharing.follows >= 0))
    if stop is not None and clients is None and not sessions:
        req.watch = _Watch(stop, req, prefilled)
    engine = _Engine(instance, req, progress, clients, order)
    with gc_paused():  # its per-request lists and tuples make no cycles
        finished = engine.run()
    return _record([engine], req, arrivals, stopped=not finished)


def simulate_group(
    instances: list[Instance],
    arrivals: Arrivals,
    route: Callable,
    progress: Callable[[int, int], None] | None = None,
) -> RunRecord:
    """Serve ``arrivals`` on a group of instances behind a router (docs/model.md §E10):
    ``route(engines, request, time)`` picks the engine each request goes to when it arrives
    (a session's later turns arrive when the turn before them finishes). The engines run in
    time order, the one furthest behind first; a request routed to an engine in the middle of
    a run of decode steps joins it at the end of that run, as it would at the end of a step."""
    req = _checked(instances[0], arrivals, False)
    pending: list[tuple[float, int]] = []

    def follow(i: int, at: float) -> None:
        heapq.heappush(pending, (at, i))

    engines = [_Engine(inst, req, None, on_finish=follow) for inst in instances]
    pending += [(float(req.sent[i]), int(i)) for i in np.flatnonzero(np.isfinite(req.sent))]
    heapq.heapify(pending)
    active = [False] * len(engines)
    step = max(1, req.n // 10)
    report = step
    while True:
        a = pending[0][0] if pending else np.inf
        busy = [k for k, on in enumerate(active) if on]
        k = min(busy, key=lambda j: engines[j].t, default=-1)
        if k >= 0 and engines[k].t < a:
            active[k] = engines[k].iterate(a)
            if progress is not None and req.done >= report:
                progress(req.done, req.n)
                report += step
            continue
        if not pending:
            if k < 0:
                break
            active[k] = engines[k].iterate(np.inf)
            continue
        at, i = heapq.heappop(pending)
        j = route(engines, i, at)
        engines[j].push(i, at)
        if not active[j]:
            engines[j].t = max(engines[j].t, at)
            active[j] = True
    return _record(engines, req, arrivals)
