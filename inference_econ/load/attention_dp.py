"""Data-parallel attention ranks that schedule their own requests (docs/model.md §F9,
"Attention DP"), as TensorRT-LLM's attention-DP executor does.

Each admitted request goes to one rank (``Ranks.assign``); each rank takes its own prompts
into its share of the step's token budget (``Ranks.plan``), which the balancing may hold back
a few steps so that every rank prefills at once (``Ranks.balance``); a step lasts as long as
its busiest rank's (``Ranks.step``). An engine whose ranks are pooled (the ideal engine), that
speculates (not modelled per rank) or that has one attention group has no ``Ranks``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .simulate import _Engine


class Ranks:
    """The ranks of one engine: each request's rank, and per rank its active requests
    (prefilling and decoding), their prompt tokens and its decoding requests."""

    __slots__ = (
        "count",
        "n_in",
        "rank_of",
        "act_n",
        "act_tok",
        "gen_n",
        "budget",
        "limit",
        "balancing",
        "adp_wait",
        "adp_batch",
    )

    def __init__(self, count: int, n_in: list, budget: int, limit: int, balancing) -> None:
        self.count, self.n_in = count, n_in
        self.rank_of = [-1] * len(n_in)  # -1: none
        self.act_n, self.act_tok, self.gen_n = [0] * count, [0] * count, [0] * count
        #: a rank's share of the instance's limits (each rank's own, ``per_instance``)
        self.budget = max(1, budget // count)
        self.limit = max(1, limit // count)
        #: TensorRT-LLM's balancing (wait, timeout steps; None: off) and its two counters
        self.balancing = balancing
        self.adp_wait = self.adp_batch = 0

    def assign(self, i: int) -> None:
        """Put admitted request ``i`` on a data-parallel attention rank as TensorRT-LLM's
        executor request queue does (``_schedule_attention_dp_requests``,
        ``_balance_requests_across_ranks``): among the ranks holding fewer active requests than
        ``max(ceil((active + 1) / ranks), most on a rank)``, the one whose active requests have
        the fewest prompt tokens (then the fewest requests, then the lowest rank)."""
        n, tok, ranks = self.act_n, self.act_tok, self.count
        expected = max(-(-(sum(n) + 1) // ranks), max(n))
        r = min((tok[k], n[k], k) for k in range(ranks) if n[k] < expected)[2]
        self.rank_of[i] = r
        n[r] += 1
        tok[r] += self.n_in[i]

    def decoding(self, i: int) -> None:
        """Request ``i`` decodes on its rank."""
        self.gen_n[self.rank_of[i]] += 1

    def leave(self, i: int, decoding: bool) -> None:
        """Request ``i`` leaves its rank (finished or preempted); ``decoding``: it was decoding."""
        r = self.rank_of[i]
        if r < 0:
            return
        self.rank_of[i] = -1
        self.act_n[r] -= 1
        self.act_tok[r] -= self.n_in[i]
        if decoding:
            self.gen_n[r] -= 1

    def turn(self, e: _Engine, D: int, horizon: float) -> bool:
        """``_Engine.iterate``'s step where the ranks schedule their own requests: the prompt
        chunks each rank takes (``plan``), released or held by the balancing (``balance``); a
        step with them (``step``), else decode-only steps (one at a time while prompts are
        held: the balancing decides again every step)."""
        plan, taken = self.plan(e.prefilling, e.prefill.separate, e.prefill.take)
        release = True
        all_gen = min(self.gen_n) > 0
        if self.balancing is not None:
            release = self.balance(min(taken) > 0, all_gen)
        if plan and release:
            self.step(e, plan, taken)
            return True
        room = not e.waiting and not e.hold and D + len(e.prefilling) < e.limit
        before = e.steps
        e.decode_run(room, horizon, 1 if plan else 0)
        if self.balancing is not None and not plan:
            self.balance_idle(e.steps - before - 1, all_gen)
        return True

    def plan(self, prefilling: list, separate: bool, take_of) -> tuple[list, list]:
        """([(prefilling entry, tokens it takes)], prompt tokens per rank) of the next step:
        each rank's scheduler takes its own prompts first come, first served into its share of
        the token budget beside its decoding requests (``budget``; its ``max_num_tokens``), by
        the prefill policy's ``take_of``, as the pooled step takes them into the whole budget
        (``_Engine.mixed_step``)."""
        ranks, budget = self.count, self.budget
        taken = [0] * ranks
        plan: list = []
        if not prefilling:
            return plan, taken
        closed = [False] * ranks
        shut = 0  # ranks closed: when every one is, no later prompt can go
        rank_of, gen = self.rank_of, self.gen_n
        for entry in prefilling:
            r = rank_of[entry[0]]
            if closed[r]:
                continue
            left = entry[2] - entry[1]
            room = budget - taken[r] - (0 if separate else gen[r])
            take = take_of(left, room, not taken[r], budget)
            if take <= 0:
                closed[r] = True  # the rank's step is full: its later prompts wait
                shut += 1
                if shut == ranks:
                    break
                continue
            plan.append((entry, take))
            taken[r] += take
        return plan, taken

    def balance(self, all_ctx: bool, all_gen: bool) -> bool:
        """One step of TensorRT-LLM's attention-DP balancing (py_executor
        ``_balance_adp_requests``): whether the prompts the ranks scheduled go into this step.
        When every rank has a prompt and room for it (fewer decoding requests than its batch),
        they go, after ``wait`` steps held if every rank also decodes; otherwise they are held
        until ``timeout`` steps have been counted (the count runs on decode-only steps too) or
        some rank has nothing to decode."""
        wait, timeout = self.balancing  # type: ignore[misc]
        if all_ctx and max(self.gen_n) < self.limit:
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

    def balance_idle(self, steps: int, all_gen: bool) -> None:
        """The balancing's count over ``steps`` more decode-only steps without prompts
        (``balance`` of each: its count wraps at the timeout, or restarts while some rank has
        nothing to decode)."""
        if steps <= 0:
            return
        timeout = self.balancing[1]  # type: ignore[index]
        self.adp_wait = (self.adp_wait + steps) % timeout if all_gen else 0

    def step(self, e: _Engine, plan: list, taken: list) -> bool:
        """One step of ``e`` with the prompt chunks of ``plan`` (``plan``). Every step is
        synchronous across the ranks (the expert layers exchange tokens in every layer), so it
        lasts as long as its busiest rank's: the pooled step (``_Engine.mixed_step``) with the
        decoding requests as they are and the prompt work of the rank with the most prompt
        tokens on every rank (its tokens, chunks, cache reads and attention times the ranks).
        Its FLOP are the work done. False if the cache had to make room first."""
        separate = e.prefill.separate
        prefilling = e.prefilling
        D = 0 if separate else len(e.running)
        plain = not e.windowed
        layers, pos = e.layers, e.pos
        decode_q = e.room_for_prompts(separate, D, 1.0)
        if decode_q is None:
            return False
        ranks, rank_of = self.count, self.rank_of
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
        table = e.table
        dt = table.time_s(
            D + ranks * taken[b],
            decode_q + ranks * kv[b],
            decode_q + ranks * att[b],
            D + ranks * chunks[b],
            largest,
        )
        alone = table.time_s(D, decode_q, decode_q, D, 1) if D else 0.0
        flop = table.flop[D + total] + table.attention_flop * (decode_q + attended)
        # each rank's prompts prefilled to their end (a rank's may finish behind another's)
        prefilled = [x for x in prefilling if x[1] >= x[2]]
        if prefilled:
            prefilling[:] = [x for x in prefilling if x[1] < x[2]]
        e.close_prompt_step(dt, alone, D, flop, 1.0 if D else 0.0, None, separate, prefilled)
        return True
