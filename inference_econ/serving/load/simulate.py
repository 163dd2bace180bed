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
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...errors import SpecError
from ..setting import check_context
from .arrivals import Arrivals
from .engine import Instance

#: Longest run of decode steps evaluated at once (bounds the arrays).
RUN_STEPS = 4096


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


class _Engine:
    """The scheduler's state between steps."""

    def __init__(
        self, inst: Instance, arrivals: Arrivals, prefilled, progress, clients=None
    ) -> None:
        self.inst, self.table, self.cfg = inst, inst.table, inst.config
        self.cap = inst.kv_capacity
        self.windowed = inst.windowed
        self.layers = float(sum(g.layers for g in inst.work.groups))
        n = len(arrivals)
        self.clients = clients
        if clients is None:
            self.arr = arrivals.arrival_s.tolist()
        else:  # the first ``clients`` requests at once, each next one when one finishes
            self.released = min(int(clients), n)
            self.arr = [0.0] * self.released + [np.inf] * (n - self.released)
        self.n_in = arrivals.prompt_tokens.astype(np.int64)
        self.n_out = arrivals.output_tokens.astype(np.int64)
        self.first = np.full(n, np.nan)
        self.finish = np.full(n, np.nan)
        self.admitted_at = np.full(n, np.nan)
        self.preempted = np.zeros(n, dtype=np.int64)
        self.gen = np.where(prefilled, 1, 0).astype(np.int64)
        self.needs_prefill = ~np.asarray(prefilled, dtype=bool)  # a new, writable array
        peak = self.n_in + self.n_out - 1
        self.full = np.broadcast_to(np.asarray(inst.positions(peak), dtype=float), (n,))
        self.rejected = self.full > self.cap
        self.no_evict = self.cfg.admission == "no_evict"
        self.committed = 0.0  # no_evict: layer-positions promised to the admitted requests
        self.mode = self.cfg.prefill
        self.seq = np.zeros(n, dtype=np.int64)  # admission order
        self.admitted = 0
        self.n, self.next_arrival, self.done = n, 0, 0
        self.waiting: deque[int] = deque()
        self.prefilling: list[list] = []  # [request, tokens done, tokens to prefill]
        self.reserved = 0.0  # KV layer-positions held by prompts being prefilled
        # the decoding requests: request -> (context - G, G once it has all its tokens), the
        # requests by the G they finish at, and a heap of those G (stale entries skipped)
        self.running: dict[int, tuple[int, int]] = {}
        self.by_end: dict[int, list[int]] = {}
        self.ends: list[int] = []
        self.sum_base = 0
        self.G, self.t = 0, 0.0
        self.hold = False  # no admission after a preemption until a request finishes
        self.busy = self.prefill_s = self.flop = self.batch_s = self.peak = 0.0
        self.steps = 0
        self.progress, self.next_report = progress, max(1, n // 10)

    # --- the KV cache ------------------------------------------------------------------
    def decode_positions(self, ahead=0):
        """Σ over decoding requests of their layer-positions ``ahead`` steps from now
        (``ahead`` may be an array)."""
        if not self.windowed:
            return self.layers * (self.sum_base + len(self.running) * (self.G + ahead))
        base = np.fromiter((b for b, _ in self.running.values()), float, len(self.running))
        return self.inst.work.layer_positions_of_many(np.sort(base + self.G), ahead)

    def growth(self) -> float:
        """Layer-positions the decoding requests add in one step."""
        if not self.windowed:
            return self.layers * len(self.running)
        return float(self.decode_positions(1)) - float(self.decode_positions(0))

    def used(self) -> float:
        if not self.windowed:
            return self.layers * (self.sum_base + len(self.running) * self.G) + self.reserved
        return float(self.decode_positions()) + self.reserved

    def pos(self, context) -> float:
        """Layer-positions one request of this context holds."""
        if not self.windowed:
            return self.layers * context
        return float(self.inst.positions(context))

    # --- admission and preemption ------------------------------------------------------
    def arrive(self) -> None:
        while self.next_arrival < self.n and self.arr[self.next_arrival] <= self.t:
            self.waiting.append(self.next_arrival)
            self.next_arrival += 1

    def admit(self) -> None:
        limit = self.cfg.max_batch_requests
        if self.hold and not self.running and not self.prefilling:
            self.hold = False  # everything was preempted: start again
        while self.waiting and not self.hold:
            i = self.waiting[0]
            if self.rejected[i]:
                self.waiting.popleft()
                self._count_done(1)
                continue
            if len(self.running) + len(self.prefilling) >= limit:
                return
            context = int(self.n_in[i] + self.gen[i] - (0 if self.needs_prefill[i] else 1))
            need = self.pos(context)
            if self.no_evict:
                if self.committed + self.full[i] > self.cap:
                    return
                self.committed += self.full[i]
            elif (
                self.used() + need + self.layers * (len(self.running) + len(self.prefilling) + 1)
                > self.cap
            ):
                return  # room for every running request's next token first (vLLM V1's order)
            self.waiting.popleft()
            self.admitted += 1
            self.admitted_at[i] = self.t
            self.seq[i] = self.admitted
            if self.needs_prefill[i]:
                self.prefilling.append([i, 0, context])
                self.reserved += need
            else:  # arrives with its prompt's cache (disaggregated decode)
                self._join_decode(i, context)

    def _join_decode(self, i: int, context: int) -> None:
        left = int(self.n_out[i] - self.gen[i])
        if left <= 0:
            self.finish[i] = self.t
            if self.no_evict:
                self.committed -= self.full[i]
            self._count_done(1)
            return
        end = self.G + left
        self.running[i] = (context - self.G, end)
        self.by_end.setdefault(end, []).append(i)
        heapq.heappush(self.ends, end)
        self.sum_base += context - self.G

    def min_end(self) -> int:
        """The G at which the next decoding request finishes."""
        while self.ends[0] not in self.by_end:
            heapq.heappop(self.ends)
        return self.ends[0]

    def _leave(self, i: int) -> None:
        """Take request ``i`` out of the decoding batch."""
        base, end = self.running.pop(i)
        self.sum_base -= base
        same = self.by_end[end]
        same.remove(i)
        if not same:
            del self.by_end[end]

    def preempt(self) -> None:
        """Drop the cache of the request admitted last and put it back at the queue's head."""
        seq = self.seq
        last = max(self.running, key=lambda k: seq[k], default=-1)
        decode_seq = seq[last] if last >= 0 else -1
        if self.prefilling and seq[self.prefilling[-1][0]] > decode_seq:
            i, _, context = self.prefilling.pop()
            self.reserved -= self.pos(context)
        else:
            i = last
            self._leave(i)
        self.preempted[i] += 1
        self.needs_prefill[i] = True
        self.waiting.appendleft(i)
        self.hold = True

    def _count_done(self, count: int) -> None:
        self.done += count
        if self.clients is not None:  # each finished request's client sends its next one now
            for _ in range(count):
                if self.released < self.n:
                    self.arr[self.released] = self.t
                    self.released += 1
        if self.progress is not None and self.done >= self.next_report:
            self.progress(self.done, self.n)
            self.next_report += max(1, self.n // 10)

    def _complete(self) -> None:
        """Requests whose last token came out of the step just taken."""
        G = self.G
        done = self.by_end.pop(G, None)
        if not done:
            return
        for i in done:
            self.sum_base -= self.running.pop(i)[0]
            self.finish[i] = self.t
            if self.no_evict:
                self.committed -= self.full[i]
        self.hold = False
        self._count_done(len(done))

    # --- steps -------------------------------------------------------------------------
    def can_prefill(self, budget: int) -> bool:
        """Whether the next step carries prompt tokens (``budget``: the step's token budget)."""
        if not self.prefilling:
            return False
        D = len(self.running)
        if self.mode == "chunked":
            return budget > D
        if self.mode == "whole":
            left = self.prefilling[0][2] - self.prefilling[0][1]
            return D == 0 or D + left <= budget or (left > budget and budget > D)
        return True  # separate: prompts go first

    def mixed_step(self, budget: int) -> bool:
        """One step with prompt tokens (all of ``budget`` for them: the decoding requests'
        tokens already taken out, except with separate prefill); False if the cache had to
        make room first."""
        separate = self.mode == "separate"
        D = 0 if separate else len(self.running)
        if not separate and self.used() + self.growth() > self.cap:
            self.preempt()
            return False
        decode_q = float(self.decode_positions()) if D else 0.0
        kv, att, taken = decode_q, decode_q, 0
        chunks = []
        for entry in self.prefilling:
            left = entry[2] - entry[1]
            if self.mode == "chunked":
                take = min(left, budget - taken)
            elif taken + left <= budget:
                take = left  # whole prompts
            elif not chunks and left > self.cfg.step_token_budget:
                take = budget  # a prompt that never fits whole: in chunks of the room left
            else:
                take = 0
            if take <= 0:
                break
            kv += self.pos(entry[1])
            att += take * self.pos(entry[1] + (take - 1) / 2.0)
            chunks.append((entry, take))
            taken += take
        T = D + taken
        dt = self.table.time_s(T, kv, att, D + len(chunks))
        self._account(dt, D, T, att, decode=not separate)
        self.prefill_s += dt - (self.table.time_s(D, decode_q, decode_q) if D else 0.0)
        self.steps += 1
        for entry, take in chunks:
            entry[1] += take
        if not separate:
            self._complete()
        while self.prefilling and self.prefilling[0][1] >= self.prefilling[0][2]:
            i, _, context = self.prefilling.pop(0)
            self.reserved -= self.pos(context)
            self.gen[i] += 1
            self.needs_prefill[i] = False
            if np.isnan(self.first[i]):
                self.first[i] = self.t
            self._join_decode(i, context)
        return True

    def _account(self, dt: float, D: int, T: int, attended: float, decode=True) -> None:
        self.t += dt
        self.G += 1 if (T and decode) else 0
        self.busy += dt
        self.batch_s += D * dt
        self.flop += self.table.flop[T] + self.table.attention_flop * attended
        self.peak = max(self.peak, self.used() / self.cap)

    def decode_run(self, admit_more: bool) -> None:
        """Decode-only steps until the next event: an arrival that could be admitted, a
        completion, or a full cache."""
        D = len(self.running)
        k = self.min_end() - self.G
        deadline = (
            self.arr[self.next_arrival] - self.t
            if admit_more and self.next_arrival < self.n
            else None
        )
        if self.windowed:
            k, span, attended, after = self._run_arrays(D, min(k, RUN_STEPS), deadline)
        else:
            k, span, attended, after = self._run_closed(D, k, deadline)
        if k == 0:
            self.preempt()
            return
        self.t += span
        self.G += k
        self.busy += span
        self.batch_s += D * span
        self.flop += k * self.table.flop[D] + self.table.attention_flop * attended
        self.steps += k
        self.peak = max(self.peak, (after + self.reserved) / self.cap)
        self._complete()

    def _run_closed(self, D: int, k: int, deadline):
        """(steps, seconds, Σ positions attended, positions after) of a run of at most ``k``
        steps, in closed form: the positions grow by the same amount every step."""
        q0 = self.layers * (self.sum_base + D * self.G)
        growth = self.layers * D
        k = min(k, int((self.cap - self.reserved - q0) // growth))
        if k <= 0:
            return 0, 0.0, 0.0, q0
        run = self.table.run_time_s
        if deadline is not None and run(D, q0, growth, k) > deadline:
            lo, hi = 1, k  # the first step count whose run reaches the arrival
            while lo < hi:
                mid = (lo + hi) // 2
                if run(D, q0, growth, mid) >= deadline:
                    hi = mid
                else:
                    lo = mid + 1
            k = lo
        attended = k * q0 + growth * k * (k - 1) / 2.0
        return k, run(D, q0, growth, k), attended, q0 + growth * k

    def _run_arrays(self, D: int, k: int, deadline):
        """The same for models with sliding windows, one array element per step."""
        q = self.decode_positions(np.arange(k + 1))
        k = min(k, int(np.searchsorted(q[1:] + self.reserved, self.cap, side="right")))
        if k == 0:
            return 0, 0.0, 0.0, float(q[0])
        cum = np.cumsum(self.table.times_s(D, q[:k]))
        if deadline is not None:
            k = min(k, int(np.searchsorted(cum, deadline)) + 1)
        return k, float(cum[k - 1]), float(q[:k].sum()), float(q[k])

    def run(self) -> None:
        budget = self.cfg.step_token_budget
        while True:
            self.arrive()
            self.admit()
            D = len(self.running)
            if D == 0 and not self.prefilling:
                if self.waiting:
                    continue  # rejected requests were dropped; try the next one
                if self.next_arrival >= self.n or not np.isfinite(self.arr[self.next_arrival]):
                    return
                self.t = max(self.t, self.arr[self.next_arrival])
                continue
            if self.can_prefill(budget):
                self.mixed_step(budget if self.mode == "separate" else budget - D)
                continue
            room = not self.waiting and not self.hold
            room = room and D + len(self.prefilling) < self.cfg.max_batch_requests
            self.decode_run(room)


def simulate(
    instance: Instance,
    arrivals: Arrivals,
    prefilled=False,
    progress: Callable[[int, int], None] | None = None,
    clients: int | None = None,
) -> RunRecord:
    """Serve ``arrivals`` on one engine instance. ``prefilled`` (bool or per request) marks
    requests that arrive with their prompt's KV cache and first token (a disaggregated decode
    pool); ``progress(done, total)`` is called as requests finish. With ``clients``, the
    arrival times are ignored: that many closed-loop clients send the requests in order, each
    its next one when its last one finishes (the record holds the times they arrived)."""
    n = len(arrivals)
    if n:  # the longest request against the model's window
        longest = np.max(arrivals.prompt_tokens + arrivals.output_tokens)
        check_context(instance.setting.model, float(longest))
    flags = np.broadcast_to(np.asarray(prefilled, dtype=bool), (n,))
    if clients is not None and (
        isinstance(clients, bool) or int(clients) != clients or clients < 1
    ):
        raise SpecError("argument", "concurrency", f"is {clients!r}", "a whole number >= 1")
    engine = _Engine(instance, arrivals, flags, progress, clients)
    engine.run()
    finished = engine.finish[np.isfinite(engine.finish)]
    if clients is not None:  # the times the clients sent them (NaN: never sent)
        sent = np.asarray(engine.arr, dtype=float)
        arrivals = Arrivals(
            np.where(np.isfinite(sent), sent, np.nan),
            arrivals.prompt_tokens,
            arrivals.output_tokens,
        )
    return RunRecord(
        arrivals=arrivals,
        first_token_s=engine.first,
        finish_s=engine.finish,
        admitted_s=engine.admitted_at,
        preemptions=engine.preempted,
        rejected=engine.rejected,
        busy_s=engine.busy,
        prefill_s=engine.prefill_s,
        flop=engine.flop,
        steps=engine.steps,
        end_s=float(finished.max()) if finished.size else 0.0,
        batch_seconds=engine.batch_s,
        peak_kv_fraction=engine.peak,
    )
