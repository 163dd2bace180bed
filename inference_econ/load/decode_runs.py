"""Runs of decode-only steps evaluated at once (docs/model.md §E3).

Between two events (an arrival that could be admitted, a completion, a full cache) the batch
does not change and every context grows by the same tokens each step, so the steps' KV
layer-positions, times and FLOP follow from the batch at the run's start: in closed form where
a request's positions are its layers times its context (``DecodeRuns.closed``), one array
element per step for models with sliding windows (``DecodeRuns.arrays``). The engine
(``_Engine.decode_run``) says how long a run may last and applies what it measured.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..model.mixed_step import StepTable, first_reaching, run_reaching_s
from .speculation import DraftEngine


class DecodeRuns:
    """The decode-only runs of one instance: its step table, its draft (§E8; None: it does not
    speculate) and its layers. Each run returns (steps, seconds, Σ positions attended, positions
    after, FLOP); 0 steps when the cache cannot hold the next one."""

    __slots__ = ("table", "draft", "layers", "terms")

    def __init__(self, table: StepTable, draft: DraftEngine | None, layers: float) -> None:
        self.table, self.draft, self.layers = table, draft, layers
        #: ``table.decode_terms`` of a run of ``D`` requests, by ``D``: a run looks them up
        #: once, and runs of the same batch share them (the table does not change in a run)
        self.terms: dict[int, tuple] = {}

    @property
    def _draft(self) -> DraftEngine:
        """The draft engine of a speculating run (a cycle is chosen only with one, §E8)."""
        if self.draft is None:
            raise RuntimeError("a speculative cycle on an instance without a draft")
        return self.draft

    def closed(
        self, D: int, k: int, deadline, c, q0: float, growth: float, cap, held, s0, after=0,
        cycle=None,
    ):  # fmt: skip
        """A run of at most ``k`` steps of ``D`` requests in closed form: the positions start
        at ``q0`` and grow by ``growth`` every step, below the capacity ``cap`` less the
        positions ``held`` outside the decoding contexts; ``deadline``: the seconds by which
        the run ends at the first step to reach them, and ``after`` steps more (None: none),
        then on to the next admitting call of an admission ``cycle`` (``steps_on``); ``s0``:
        the contexts' sum (a draft's positions)."""
        fits = int((cap - held - q0) // growth)
        if fits < k:  # min(k, fits)
            k = fits
        if k <= 0:
            return 0, 0.0, 0.0, q0, 0.0
        tab = self.table
        if c is None:  # (nearly every run)
            terms = self.terms.get(D)
            if terms is None:
                terms = self.terms[D] = tab.decode_terms(D, D)
            span, run = tab.run_time_s(D, q0, growth, k, terms=terms), None
        else:  # the seconds of a run of ``steps`` speculative steps
            gs = D * c.expected_tokens
            run = partial(self._draft.run_s, tab, D, q0, growth, s0, gs, c=c)
            span = run(k)
        if deadline is not None and span > deadline:
            if run is None:  # the first step count whose run reaches the deadline
                lo, span = run_reaching_s(tab, D, q0, growth, k, deadline, span, terms)
                run = partial(tab.run_time_s, D, q0, growth, terms=terms)
            else:
                lo, span = first_reaching(run, deadline, 1, k, span)
            more = steps_on(lo, after, cycle)
            if more and lo < k:  # the steps after the one that reaches the deadline
                lo = min(lo + more, k)
                span = run(lo)
            k = lo
        attended = k * q0 + growth * k * (k - 1) / 2.0
        if c is None:  # ``flop``, inline
            flop = k * tab.flop[D] + tab.attention_flop * attended
        else:
            flop = self.flop(D, k, attended, c)
        return k, span, attended, q0 + growth * k, flop

    def arrays(
        self, D: int, q: np.ndarray, deadline, c, cap, held, sum_base, G, after=0, cycle=None
    ):
        """The same for models with sliding windows, one array element per step: ``q`` the
        decoding requests' positions at the start of each step and after the last, ``sum_base``
        and ``G`` their contexts (each a base plus ``G``)."""
        k = len(q) - 1
        k = min(k, int(np.searchsorted(q[1:] + held, cap, side="right")))
        if k == 0:
            return 0, 0.0, 0.0, float(q[0]), 0.0
        if c is None:
            times = self.table.times_s(D, q[:k])
        else:
            E, v, d = c.expected_tokens, c.verify_tokens, self._draft
            times = self.table.times_s(D * v, q[:k], D, v)
            ctx = sum_base + D * (G + E * np.arange(k))
            qd = d.draft_positions(ctx)
            for tokens, count in c.draft_passes:
                times = times + count * d.table.times_s(D * tokens, qd, D, tokens)
        cum = np.cumsum(times)
        if deadline is not None:
            lo = int(np.searchsorted(cum, deadline)) + 1
            k = min(k, lo + steps_on(lo, after, cycle))
        attended = float(q[:k].sum())
        return k, float(cum[k - 1]), attended, float(q[k]), self.flop(D, k, attended, c)

    def flop(self, D: int, k: int, attended: float, c) -> float:
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


def steps_on(lo: int, after: int, cycle: tuple[int, int] | None) -> int:
    """The steps a run goes on after its ``lo``-th, the first to reach its deadline (an
    arrival): ``after`` (an overlap scheduler's step after next), and then, under an admission
    ``cycle`` (the run's first scheduler call in it, its length), to the next call that admits
    (``EngineConfig.admission_cadence``)."""
    if cycle is None:
        return after
    return after + (-(cycle[0] + lo + after)) % cycle[1]
