"""The step-level simulation of one engine instance under load (docs/model.md §E3).

The engine works in steps. Before each step its scheduler admits waiting requests first come,
first served, while the batch has room (``max_batch_requests``) and the KV cache can hold the
prompt (``recompute`` admission) or the whole request, prompt and output, on top of what every
running request will reach (``no_evict``: TensorRT-LLM's guaranteed no-evict policy). A step
decodes one token for every running request and spends what is left of the step's token budget
on prompts: chunks of them (``chunked``), whole prompts while they fit (``whole``), or, with
``separate`` prefill, whole prompts in steps of their own while decoding waits (chunks of them
filling those steps with ``chunked_separate``; attention ranks that schedule their own requests
pause only the ranks that prefill); first come first served (a prompt longer than the whole
budget goes in chunks of it under every mode), and a prompt's last token emits its first
output token. When the cache cannot hold the
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

Where each part lives:

* this module: ``simulate`` and ``simulate_group`` (the entry points; a group's engines run in
  time order behind a router) and ``_Engine``, the scheduler: its turn (``iterate``: arrivals,
  admission, then one step with prompt tokens, ``mixed_step``, or a run of decode steps,
  ``decode_run``) and the steps of attention-DP ranks (``rank_turn``, ``rank_step``);
* ``engine_state``: what an engine holds between steps (the queue, the prompts being prefilled,
  the decoding batch by the progress it ends at, the KV cache's positions, the counters) and
  how a request moves through it (joins, leaves, finishes);
* ``scheduling``: the policies chosen once per engine (admission and preemption; prefill);
* ``decode_runs``: a run of decode steps in closed form or arrays;
* ``attention_dp``: each request's rank, the ranks' plans and their balancing;
* ``records``: the per-request state every engine shares and the ``RunRecord`` it becomes;
  ``watch``: the latency limits that stop a run early.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Callable

import numpy as np

from ..errors import SpecError
from ..model.mixed_step import StepTable
from ..serving.setting import check_context
from ..specs.collector import gc_paused
from .arrivals import Arrivals
from .decode_runs import DecodeRuns
from .engine import Instance
from .engine_state import (
    EPS,
    EngineState,
    admissible_by,
    admits_now,
    cadence_cut,
    decode_beside,
)
from .records import Requests, RunRecord, record
from .scheduling import PREFILL, admission
from .sessions import warm_caches
from .timeline import RECORDING
from .watch import Watch

#: Longest run of decode steps evaluated at once (bounds the arrays).
RUN_STEPS = 4096


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
        table.serial_prompts,
    )


class _Engine(EngineState):
    """The scheduler of one engine instance: its turn (``iterate``), admission then one step
    with prompt tokens (``mixed_step``) or a run of decode steps (``decode_run``), over the
    state it extends (``EngineState``), with the policies its configuration chose."""

    __slots__ = ("admission", "prefill", "separate", "runs", "bubbles", "pipeline", "terms", "host")

    def __init__(
        self,
        inst: Instance,
        req: Requests,
        progress,
        clients=None,
        order=None,
        on_finish=None,
    ) -> None:
        super().__init__(inst, req, progress, clients, order, on_finish)
        self.admission = admission(self, self.cfg.admission)
        self.release_promised = self.admission.release if self.admission.promises else None
        self.prefill = PREFILL[self.cfg.prefill]
        #: the policy's ``separate``, read every step (kept in the engine's slot, not looked up
        #: through the policy)
        self.separate = self.prefill.separate
        self.runs = DecodeRuns(self.table, self.draft, self.layers)
        #: A step's time is ``table.time_s``, written out in ``mixed_step`` where the table
        #: has no pipeline bubbles (§B12): the terms it reads, fetched once (``_step_terms``).
        self.bubbles, self.pipeline = inst.table.bubbles, inst.table.pipeline
        self.terms = _step_terms(inst.table)
        #: the floor the host's overlapped work sets a step, ``time_s``'s (seconds, a request)
        self.host = (inst.table.host_floor_s, inst.table.host_sequence_s)

    def close(self) -> None:
        """``EngineState.close``, and the admission policy, which refers to the engine."""
        super().close()
        del self.admission

    # --- the event loop ------------------------------------------------------------------
    def run(self) -> bool:
        """Serve every request; False when a watch (``Watch``) stopped the run first."""
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

    def iterate(self, horizon: float = np.inf) -> bool:
        """One turn of the scheduler: admit, then one step with prompt tokens or a run of
        decode steps. False when there is nothing to do before ``horizon``."""
        late, t = self.late, self.t
        running, prefilling, waiting = self.running, self.prefilling, self.waiting
        arr, j = self.arr, self.next_arrival
        if late:
            if arr[j] <= t or late[0][0] <= t:  # something has arrived
                due = admissible_by(self)
                if arr[j] <= due or late[0][0] <= due:
                    self.arrive(due)
        elif arr[j] <= t:  # only requests at known times (nearly every run): those due, in order
            due, order = admissible_by(self), self.order
            while arr[j] <= due:  # ``arr`` ends with an inf
                waiting.append(order[j])
                j += 1
            self.next_arrival = j
        if self.phase and not running and not prefilling:
            self.phase = 0  # an idle engine schedules at once
        if self.tick and not running and not prefilling:
            self.tick = 0  # an idle engine's empty calls reach its admitting one at once
        if self.phase:
            pass  # inside a window of decode steps: nothing is scheduled until it ends
        elif self.hold and (running or prefilling):
            # a preemption holds admission until a request finishes (``Admission.preempt``)
            if self.cache is not None:
                self.trim()
        else:
            if self.hold:
                self.hold = False  # every request was preempted: start again
            held_back = self.cadence and waiting and not admits_now(self)
            if (waiting or self.cache is not None) and not held_back:
                self.admission.admit()
        D = len(running)
        if D == 0 and not prefilling:
            if waiting:
                return True  # rejected requests were dropped; try the next one
            nxt = self.next_time()
            if not math.isfinite(nxt) or nxt > horizon:
                return False
            if nxt > self.t:  # max(self.t, nxt)
                self.t = nxt
            return True
        if self.ranks is not None:
            return self.rank_turn(D, horizon)
        if prefilling:  # a step with prompt tokens: the first fits, or the policy says so
            budget, prefill, head = self.budget, self.prefill, prefilling[0]
            decode = D if self.draft is None else self.decode_tokens()
            left = head[2] - head[1]
            if decode + left <= budget or prefill.goes(decode, budget, left):
                self.mixed_step(budget if self.separate else budget - decode)
                return True
        room = not waiting and not self.hold and D + len(prefilling) < self.limit
        self.decode_run(room, horizon)
        return True

    # --- a step with prompt tokens ---------------------------------------------------------
    def room_for_prompts(self, separate: bool, D: int, E: float) -> float | None:
        """Before a step with prompt tokens: the decoding requests' layer-positions read by it
        (``decode_positions``; 0 without decoding requests in the step), or None if the cache
        had to make room first (a request preempted) for their ``E`` tokens each."""
        n_running = len(self.running)
        if not self.windowed:  # a context's layer-positions: layers x the context
            layers = self.layers
            q = layers * (self.sum_base + n_running * self.G)  # decode_positions()
            held = self.reserved if self.cache is None else self.held()  # held(), no cache
            if not separate and q + held + layers * n_running * E > self.cap:
                self.admission.preempt()
                return None
            return q if D else 0.0  # a float: ``layers`` is
        if not separate and self.used() + self.growth(E) > self.cap:
            self.admission.preempt()
            return None
        return float(self.decode_positions()) if D else 0.0

    def mixed_step(self, budget: int) -> bool:
        """One step with prompt tokens (all of ``budget`` for them: the decoding requests' tokens
        taken out, except with separate prefill); False if the cache had to make room first."""
        prefill, separate = self.prefill, self.separate
        D = 0 if separate else len(self.running)
        c = self.cycle(D) if self.draft is not None else None
        E, v = (1.0, 1) if c is None else (c.expected_tokens, c.verify_tokens)
        decode_q = self.room_for_prompts(separate, D, E)
        if decode_q is None:
            return False
        # the prompts' chunks from the queue's head, whole while they fit, else as the policy says
        # (``part``); each prompt's progress is written at once (read at the step's end)
        whole, layers = self.budget, self.layers
        pos = self.pos if self.windowed else None  # None: a context's positions are layers x it
        kv, att, room, chunks, drafted = decode_q, v * decode_q, budget, [], self.draft is not None
        n_chunks, n_done, largest = 0, 0, 1
        for entry in self.prefilling:
            done = entry[1]
            left = entry[2] - done
            take = left if left <= room else prefill.part(left, room, not n_chunks, whole)
            if take <= 0:
                break
            if pos is not None:
                kv += pos(done)
                att += take * pos(done + (take - 1) / 2.0)
            elif done:
                kv += layers * done
                att += take * (layers * (done + (take - 1) / 2.0))
            else:  # a prompt's first chunk: the same floats (kv is never -0.0, and 0 + x is x)
                att += take * (layers * ((take - 1) / 2.0))
            entry[1] = done + take
            if drafted:
                chunks.append((done, take))
            if take == left and n_done == n_chunks:  # prefilled to its end, as all before it
                n_done += 1
            n_chunks += 1
            room -= take
            if take > largest:
                largest = take
        taken = budget - room
        T = D * v + taken
        if D and v > largest:
            largest = v
        R = D + n_chunks  # the step's sequences: decoding requests and prompt chunks
        # ``table.time_s`` of the step and of its decoding requests alone, written out where its
        # own tokens are its row (§B12) and its prompts share the lines: the same floats
        fixed, memory, compute, seq_s, req_s, kv_s, att_s, flops, att_flop, serial = self.terms
        own = not self.bubbles
        host0, host_s = self.host
        if c is None and T and (own or self.pipeline <= R) and not serial:
            u, w = memory[T] + kv_s * kv + req_s * R, compute[T] + att_s * att
            dt = fixed[T] + seq_s * R + (w if w > u else u)  # max(u, w)
            floor = host0 + host_s * R  # no shorter than the host's work (0: none)
            dt = floor if floor > dt else dt  # max(dt, floor)
        else:
            dt = self.table.time_s(T, kv, att, R, largest, kv - decode_q, att - v * decode_q)
        if not D:
            alone = 0.0
        elif c is None and (own or self.pipeline <= D):
            u, w = memory[D] + kv_s * decode_q + req_s * D, compute[D] + att_s * decode_q
            alone = fixed[D] + seq_s * D + (w if w > u else u)
            floor = host0 + host_s * D
            alone = floor if floor > alone else alone  # max(alone, floor)
        else:
            alone = self.table.time_s(D * v, decode_q, v * decode_q, D, v)
        flop = flops[T] + att_flop * att
        if self.draft is not None:
            contexts = self.sum_base + D * self.G
            extra, extra_flop, decode_extra = self.draft.step_work(D, c, contexts, chunks, taken)
            dt, alone, flop = dt + extra, alone + decode_extra, flop + extra_flop
        advance = E if (T and not separate and D) else 0.0
        # the prompts prefilled to their end, from the head of the queue: each decodes now (the
        # chunks counted them; the test goes on past them as the scheduler's rule is written)
        prefilling, n = self.prefilling, n_done
        while n < len(prefilling) and prefilling[n][1] >= prefilling[n][2]:
            n += 1
        prefilled = prefilling if n == len(prefilling) else prefilling[:n]  # (often all of it)
        self.prefilling = [] if prefilled is prefilling else prefilling[n:]
        self.end_prompt_step(dt, alone, D, flop, advance, c, separate, prefilled, taken, n_chunks)
        return True

    # --- a step of ranks that schedule their own requests (§F9, "Attention DP") -------------
    def rank_turn(self, D: int, horizon: float) -> bool:
        """``iterate``'s step where the attention ranks schedule their own requests: the prompt
        chunks each rank takes (``Ranks.plan``), released or held by the balancing
        (``Ranks.balance``); a step with them (``rank_step``), else decode-only steps (one at a
        time while prompts are held: the balancing decides again every step)."""
        ranks = self.ranks
        assert ranks is not None
        plan, taken = ranks.plan(self.prefilling, self.separate, self.prefill.part)
        release = True
        all_gen = min(ranks.gen_n) > 0
        if ranks.balancing is not None:
            release = ranks.balance(min(taken) > 0, all_gen)
        if plan and release:
            self.rank_step(plan, taken)
            return True
        room = not self.waiting and not self.hold and D + len(self.prefilling) < self.limit
        before, changes, queued = self.steps, self.changes, len(self.prefilling)
        self.decode_run(room, horizon, 1 if plan else 0)
        if ranks.balancing is not None and not plan:
            ranks.balance_idle(self.steps - before - 1, all_gen)
        elif (
            plan
            and self.steps > before
            and horizon == math.inf
            and self.changes == changes
            and len(self.prefilling) == queued
        ):  # held one step, and nothing changed: hold on while nothing does
            self.held_steps(min(taken) > 0, all_gen, room)
        return True

    def held_steps(self, all_ctx: bool, all_gen: bool, room: bool) -> None:
        """After a decode step while the balancing held the ranks' prompts back, the steps
        ``iterate`` would take turn after turn while nothing changes - no arrival due, no
        request joining or leaving the batch, no latency limit's time passing (``Watch``) -
        each one decode step and one count of the balancing, without planning the same
        prompts again; the first change is left to ``iterate``."""
        ranks = self.ranks
        assert ranks is not None
        if self.window > 1 or self.cache is not None:
            return
        w, changes, queued = self.req.watch, self.changes, len(self.prefilling)
        arr = self.arr
        while ranks.holds(all_ctx, all_gen):
            t = self.t
            if self.late or arr[self.next_arrival] <= t:
                return  # an arrival is due: admission may change the plan
            if w is not None and (w.certain or t - w.next_sent > w.ttft):
                return  # ``run`` counts the overdue first tokens before the next turn
            ranks.balance(all_ctx, all_gen)
            steps = self.steps
            self.decode_run(room, math.inf, 1)
            if self.steps == steps or self.changes != changes or len(self.prefilling) != queued:
                return  # a request finished or was preempted

    def rank_step(self, plan: list, taken: list) -> bool:
        """One step with the prompt chunks of ``plan`` (``Ranks.plan``) on an instance whose
        ranks schedule their own requests. Every step is synchronous across the ranks (the
        expert layers exchange tokens in every layer), so it lasts as long as its busiest
        rank's: the pooled step (``mixed_step``) with the decoding requests as they are and the
        prompt work of the rank with the most prompt tokens on every rank (its tokens, chunks,
        cache reads and attention times the ranks). Where prompts run first (``separate``) only
        the ranks that prefill nothing decode in it, as each rank's scheduler runs its own
        batch (SGLang's ``prepare_mlp_sync_batch``). Its FLOP are the work done. False if the
        cache had to make room first."""
        ranks = self.ranks
        assert ranks is not None
        separate = self.separate
        moving: list = []  # under prompts first: the requests of the ranks without prompts
        if separate:
            rank_of, running, G = ranks.rank_of, self.running, self.G
            busy = {rank_of[x[0]] for x, _ in plan}
            moving = [i for i in running if rank_of[i] not in busy]
            layers, grow = self.layers, self.layers * len(moving)  # what their next tokens add
            if self.windowed:  # their layer-positions, read by the step
                contexts = [running[i] + G for i in moving]
                decode_q = sum(map(self.pos, contexts))
                grow = sum(self.pos(c + 1) for c in contexts) - decode_q
            else:  # ``pos`` inline: the same products, summed in the same order
                decode_q = sum([layers * (running[i] + G) for i in moving])
            if moving and self.used() + grow > self.cap:
                moving, decode_q = [], 0.0  # no room for their tokens: they wait as the rest
            D = len(moving)
        else:
            D = len(self.running)
            decode_q = self.room_for_prompts(separate, D, 1.0)
            if decode_q is None:
                return False
        pos = None if not self.windowed else self.pos
        kv, att, chunks, attended, largest, total = ranks.work(plan, self.layers, pos)
        b = max(range(ranks.count), key=taken.__getitem__)  # the busiest rank (the first)
        n, table = ranks.count, self.table
        pkv, patt = n * kv[b], n * att[b]  # the busiest rank's prompts, on every rank
        dt = table.time_s(
            D + n * taken[b], decode_q + pkv, decode_q + patt, D + n * chunks[b], largest, pkv, patt
        )
        alone = table.time_s(D, decode_q, decode_q, D, 1) if D else 0.0
        flop = table.flop[D + total] + table.attention_flop * (decode_q + attended)
        # each rank's prompts prefilled to their end (a rank's may finish behind another's):
        # of the plan's alone (no other prompt moved, and none waits prefilled), in the queue's
        # order; they leave the queue up to the last of them, the rest of it untouched
        prefilling = self.prefilling
        prefilled = [x for x, _ in plan if x[1] >= x[2]]
        if prefilled:
            end = prefilling.index(prefilled[-1]) + 1
            prefilling[:end] = [x for x in prefilling[:end] if x[1] < x[2]]
        advance = 0.0 if separate or not D else 1.0
        if moving:
            advance = decode_beside(self, moving, rank_of, busy)
        self.end_prompt_step(
            dt, alone, D, flop, advance, None, separate and not D, prefilled, total, sum(chunks)
        )
        return True

    # --- a run of decode steps -------------------------------------------------------------
    def decode_run(self, admit_more: bool, horizon: float = np.inf, most: int = 0) -> None:
        """Decode-only steps until the next event: an arrival that could be admitted, a
        completion, or a full cache (and no later than ``horizon`` when requests may be
        admitted: a router's next arrival), at most ``most`` of them (0: no limit). With
        multi-step scheduling (``window`` > 1) the run ends at its window's end or a
        completion instead: nothing is admitted before. The run itself is ``runs``'s."""
        D = len(self.running)
        c = self.cycle(D) if self.draft is not None else None
        E = 1.0 if c is None else c.expected_tokens
        ends, by_end = self.ends, self.by_end
        while ends[0] not in by_end:  # the next end: stale ends off the heap
            heapq.heappop(ends)
        k = math.ceil((ends[0] - self.G) / E - EPS)
        if k < 1:  # max(1, k)
            k = 1
        if most and most < k:  # min(k, most)
            k = most
        window, late_by = self.window, 0
        if window > 1:  # multi-step: the run goes on to the window's end whatever arrives
            k = min(k, window - self.phase)
            deadline = None
        elif admit_more:
            # ``next_time``, inline: arrivals at known times only (nearly every run)
            nxt = self.arr[self.next_arrival] if not self.late else self.next_time()
            deadline = (horizon if horizon < nxt else nxt) - self.t  # min(nxt, horizon)
            if not math.isfinite(deadline):
                deadline = None
            elif self.ahead and deadline > 0 and nxt <= horizon:
                # an overlap scheduler's arrival joins the step after next: the run takes the
                # step after the one it arrives in (a router's next arrival is routed at its time)
                late_by = 1
        else:
            deadline = None
        cycle = None  # an admission cadence's (the run's first call in it, its length)
        if self.cadence and window <= 1:
            k, cycle = cadence_cut(self, k, deadline)
        held = self.reserved if self.cache is None else self.held()  # held(), without a cache
        sum_base, G = self.sum_base, self.G
        if self.windowed:
            q = self.decode_positions(E * np.arange(min(k, RUN_STEPS) + 1))
            run = self.runs.arrays(D, q, deadline, c, self.cap, held, sum_base, G, late_by, cycle)
        else:
            q0 = self.layers * (sum_base + D * G)
            growth = self.layers * D * E
            s0 = sum_base + D * G
            run = self.runs.closed(
                D, k, deadline, c, q0, growth, self.cap, held, s0, late_by, cycle
            )
        k, span, _, after, flop = run
        if k == 0:
            self.admission.preempt()
            return
        if self.trace is not None:
            self.trace.append(("decode", self.t, span, D, k, 0))
        if self.ahead:  # when the run's last step started (``admissible_by``)
            if c is None and not self.windowed:  # its own time before the run's end, if asked
                last = (self.t + span, D, q0 + growth * (k - 1), growth, self.runs.terms.get(D))
                self.prepared, self.last_run = math.nan, last
            else:  # a speculative or windowed run's steps: taken at their mean
                self.prepared = self.t + span - span / k
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
        if self.cadence:
            self.tick = (self.tick + k) % self.cadence
        peak = (after + held) / self.cap
        if peak > self.peak:  # max(self.peak, peak)
            self.peak = peak
        if ends and ends[0] <= self.G + EPS:  # ``complete``'s first test
            self.complete()
        if self.cache is not None:
            self.trim()


def cache_counted_in_reads(instance: Instance, arrivals: Arrivals) -> Instance:
    """``instance`` with its KV capacity counted as the run counts a request's cache, in the
    layer-positions it reads (§E3). Where a sliding-window layer keeps the whole context
    (``Workload.cache_windows`` False) a request holds more than it reads: the capacity times
    the requests' read over held positions at their peak contexts, so the engine admits as
    many of them (exactly so where they are of one length, whose reservations no-evict
    admission counts at that peak); ``instance`` itself where the two are the same."""
    if instance.work.cache_windows or not instance.windowed or not len(arrivals):
        return instance
    peak = arrivals.prompt_tokens.astype(np.int64) + arrivals.output_tokens - 1
    read = float(np.sum(instance.positions(peak)))
    held = float(np.sum(instance.held(peak)))
    if not held > 0.0:
        return instance
    return dataclasses.replace(instance, kv_capacity=instance.kv_capacity * read / held)


def _checked(instance: Instance, arrivals: Arrivals, prefilled) -> Requests:
    n = len(arrivals)
    if n:  # the longest request against the model's window
        longest = np.max(arrivals.prompt_tokens + arrivals.output_tokens)
        check_context(instance.setting.model, float(longest))
    flags = np.broadcast_to(np.asarray(prefilled, dtype=bool), (n,))
    peak = arrivals.prompt_tokens.astype(np.int64) + arrivals.output_tokens - 1
    return Requests(arrivals, flags, instance.positions(peak), instance.kv_capacity)


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
    misses one of them (``Watch``; the record says ``stopped``): a load search's verdict
    without the rest of a failing run. It applies to open-loop arrivals without sessions (the
    others run in full)."""
    if clients is not None and (
        isinstance(clients, bool) or int(clients) != clients or clients < 1
    ):
        raise SpecError("argument", "concurrency", f"is {clients!r}", "a whole number >= 1")
    instance = cache_counted_in_reads(instance, arrivals)
    req = _checked(instance, arrivals, prefilled)
    if clients is not None:
        order = np.arange(req.n)
    else:
        order = np.flatnonzero(np.isfinite(req.sent))
    sessions = arrivals.sharing is not None and bool(np.any(arrivals.sharing.follows >= 0))
    if stop is not None and clients is None and not sessions:
        req.watch = Watch(stop, req.sent, ~req.rejected_mask, req.output_tokens, prefilled)
    engine = _Engine(instance, req, progress, clients, order)
    # its per-request lists and tuples make no cycles; the prefix cache's nodes live to its end
    with gc_paused():
        warm_caches([engine], arrivals.sharing, lambda i: 0)
        finished = engine.run()
        rec = record([engine], req, arrivals, stopped=not finished)
        timeline = RECORDING.get()
        if timeline is not None:
            pool = "decode pool" if np.any(np.asarray(prefilled)) else ""
            timeline.add_run([engine], rec, pool)
        # freed here, before the collector runs again: it has nothing of the run to walk
        engine.close()
        del engine, req
    return rec


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
    instances = [cache_counted_in_reads(inst, arrivals) for inst in instances]
    req = _checked(instances[0], arrivals, False)
    pending: list[tuple[float, int]] = []

    def follow(i: int, at: float) -> None:
        heapq.heappush(pending, (at, i))

    engines = [_Engine(inst, req, None, on_finish=follow) for inst in instances]
    home = getattr(route, "home", None)
    with gc_paused():  # as ``simulate``'s run
        warm_caches(engines, arrivals.sharing, home or (lambda i: i % len(engines)))
        pending += [(float(req.sent[i]), int(i)) for i in np.flatnonzero(np.isfinite(req.sent))]
        heapq.heapify(pending)
        active = [False] * len(engines)
        # the active engines by (time, index): the one furthest behind first, the first of equals
        # (an engine's time moves only in its own turns, each taken off the heap and put back)
        behind: list[tuple[float, int]] = []
        step = max(1, req.n // 10)
        report = step
        while True:
            a = pending[0][0] if pending else np.inf
            if behind and behind[0][0] < a:
                k = heapq.heappop(behind)[1]
                e = engines[k]
                active[k] = e.iterate(a)
                if active[k]:
                    heapq.heappush(behind, (e.t, k))
                if progress is not None and req.done >= report:
                    progress(req.done, req.n)
                    report += step
                continue
            if not pending:
                if not behind:
                    break
                k = heapq.heappop(behind)[1]
                e = engines[k]
                active[k] = e.iterate(np.inf)
                if active[k]:
                    heapq.heappush(behind, (e.t, k))
                continue
            at, i = heapq.heappop(pending)
            j = route(engines, i, at)
            engines[j].push(i, at)
            if not active[j]:
                engines[j].t = max(engines[j].t, at)
                active[j] = True
                heapq.heappush(behind, (engines[j].t, j))
        rec = record(engines, req, arrivals)
    timeline = RECORDING.get()
    if timeline is not None:
        timeline.add_run(engines, rec)
    for e in engines:
        e.close()
    return rec
