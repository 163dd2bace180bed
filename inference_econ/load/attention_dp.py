"""Data-parallel attention ranks that schedule their own requests (docs/model.md §F9,
"Attention DP"), as TensorRT-LLM's attention-DP executor does.

Each admitted request goes to one rank (``Ranks.assign``); each rank takes its own prompts
into its share of the step's token budget (``Ranks.plan``), which the balancing may hold back
a few steps so that every rank prefills at once (``Ranks.balance``); a step lasts as long as
its busiest rank's (``Ranks.work`` per rank; the step itself is the scheduler's,
``simulate._Engine.rank_step``). An engine whose ranks are pooled (the ideal engine), that
speculates (not modelled per rank) or that has one attention group has no ``Ranks``.
"""

from __future__ import annotations


class Ranks:
    """The ranks of one engine: each request's rank, and per rank its active requests
    (prefilling and decoding), their prompt tokens and its decoding requests."""

    __slots__ = (
        "count",
        "n_in",
        "active",
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

    def __init__(
        self, count: int, n_in: list, budget: int, limit: int, balancing: tuple[int, int] | None
    ) -> None:
        self.count, self.n_in = count, n_in
        self.rank_of = [-1] * len(n_in)  # -1: none
        self.act_n, self.act_tok, self.gen_n = [0] * count, [0] * count, [0] * count
        self.active = 0  # sum(act_n)
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
        most = max(n)
        expected = -(-(self.active + 1) // ranks)
        if expected > most:  # every rank is below it: the first of the least (tokens, requests)
            r = min(zip(tok, n, range(ranks)))[2]
        else:
            # min((tok[k], n[k], k) for the ranks below ``most``), written out
            r, best_tok, best_n = -1, 0, 0
            for k in range(ranks):
                nk = n[k]
                if nk < most:
                    tk = tok[k]
                    if r < 0 or tk < best_tok or (tk == best_tok and nk < best_n):
                        r, best_tok, best_n = k, tk, nk
        self.active += 1
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
        self.active -= 1
        self.act_n[r] -= 1
        self.act_tok[r] -= self.n_in[i]
        if decoding:
            self.gen_n[r] -= 1

    def finished(self, done: list) -> None:
        """The decoding requests ``done`` finished: ``leave`` of each, in one call."""
        rank_of, act_n, act_tok, gen_n, n_in = (
            self.rank_of,
            self.act_n,
            self.act_tok,
            self.gen_n,
            self.n_in,
        )
        for i in done:
            r = rank_of[i]
            if r < 0:
                continue
            rank_of[i] = -1
            self.active -= 1
            act_n[r] -= 1
            act_tok[r] -= n_in[i]
            gen_n[r] -= 1

    def plan(self, prefilling: list, separate: bool, part) -> tuple[list, list]:
        """([(prefilling entry, tokens it takes)], prompt tokens per rank) of the next step:
        each rank's scheduler takes its own prompts first come, first served into its share of
        the token budget beside its decoding requests (``budget``; its ``max_num_tokens``),
        whole while they fit and else as the prefill policy's ``part`` says, as the pooled step
        takes them into the whole budget (``_Engine.mixed_step``)."""
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
            take = left if left <= room else part(left, room, not taken[r], budget)
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

    def holds(self, all_ctx: bool, all_gen: bool) -> bool:
        """Whether ``balance`` of this step would hold the prompts back (asked without
        counting the step)."""
        wait, timeout = self.balancing  # type: ignore[misc]
        if all_ctx and max(self.gen_n) < self.limit:
            return all_gen and self.adp_batch < wait
        return all_gen and self.adp_wait + 1 < timeout

    def balance_idle(self, steps: int, all_gen: bool) -> None:
        """The balancing's count over ``steps`` more decode-only steps without prompts
        (``balance`` of each: its count wraps at the timeout, or restarts while some rank has
        nothing to decode)."""
        if steps <= 0:
            return
        timeout = self.balancing[1]  # type: ignore[index]
        self.adp_wait = (self.adp_wait + steps) % timeout if all_gen else 0

    def work(self, plan: list, layers: float, pos) -> tuple:
        """The prompt work of a step with the chunks of ``plan``, per rank: (cache reads,
        attention, chunks), and in all: (attention, the largest chunk (at least 1), tokens);
        each prompt's progress is written at once. ``pos``: a context's layer-positions (None:
        ``layers`` times it)."""
        ranks, rank_of = self.count, self.rank_of
        kv, att, chunks = [0.0] * ranks, [0.0] * ranks, [0] * ranks
        attended, largest, total = 0.0, 1, 0
        for entry, take in plan:
            done, r = entry[1], rank_of[entry[0]]
            if pos is not None:
                kv[r] += pos(done)
                a = take * pos(done + (take - 1) / 2.0)
            elif done:
                kv[r] += layers * done
                a = take * (layers * (done + (take - 1) / 2.0))
            else:  # a prompt's first chunk: the same floats (kv is never -0.0, and 0 + x is x)
                a = take * (layers * ((take - 1) / 2.0))
            att[r] += a
            attended += a
            chunks[r] += 1
            entry[1] = done + take
            total += take
            if take > largest:
                largest = take
        return kv, att, chunks, attended, largest, total
