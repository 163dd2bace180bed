"""The per-request state every engine of a simulation shares, and the record a run becomes
(docs/model.md §E3).

``Requests`` holds what the scheduler reads and writes of each request as it serves it (when
it was sent, admitted and finished, its first token, the tokens it has generated, whether its
prompt is to be prefilled, its preemptions); the engines (``engine_state.EngineState``) change
it, one request at a time. ``record`` turns it, with the engines' counters, into the
``RunRecord`` every result is read from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .arrivals import Arrivals, Sharing

if TYPE_CHECKING:
    from .watch import Watch


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
    #: Of ``cached_tokens``, those loaded back from each tier below the GPU (§E13; None: none).
    tier_cached_tokens: tuple[np.ndarray, ...] | None = None
    spec_steps: int = 0  # decode steps that speculated (§E8)
    decode_steps: int = 0  # steps with decoding requests
    instances: int = 1  # instances simulated (busy, prefill, FLOP and batch are per instance)
    #: The run stopped once it certainly missed its targets (``simulate``'s ``stop``): the
    #: requests not finished by then have no finish time.
    stopped: bool = False
    #: The most requests an engine held at once, decoding and prefilling: the batch limit
    #: (``max_batch_requests``) is compared with no more, so a run under any limit above it,
    #: all else the same, is this run.
    peak_batch: int = 0


def prompts_sharing(requests) -> Sharing:
    """The prompts' sharing of requests a prefix cache serves (a cache is made only for them)."""
    if requests.sharing is None:
        raise RuntimeError("a prefix cache serving requests without shared prefixes")
    return requests.sharing


class Requests:
    """Per-request state shared by every engine of a simulation (each request is served by
    one engine: a group of instances writes into the same arrays). The scheduler reads and
    writes one request at a time, so the state is held in Python lists (a list's element is
    read several times faster than a numpy array's; the values are the same floats and
    integers) and turned into arrays for the record (``record``)."""

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
        #: The progress (its engine's ``G``) at which each decoding request has all its tokens.
        self.end_of = [0.0] * n
        self.sharing = arrivals.sharing
        self.done = 0
        self.watch: Watch | None = None
        #: Prompt tokens each request's first admission loaded from each tier below the GPU
        #: (§E13; None: no cache has tiers).
        self.tier_cached: list[list] | None = None


def record(engines, req: Requests, arrivals: Arrivals, stopped: bool = False) -> RunRecord:
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
        tier_cached_tokens=None
        if req.tier_cached is None
        else tuple(np.fromiter(c, float, n) for c in req.tier_cached),
        spec_steps=sum(e.spec_steps for e in engines),
        decode_steps=sum(e.decode_steps for e in engines),
        instances=g,
        stopped=stopped,
        peak_batch=max(e.peak_batch for e in engines),
    )
