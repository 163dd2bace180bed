"""Synthetic sessions (docs/model-part-e.md §E2, §E9): sessions that start from time zero as a
Poisson process, and, where their turns are apart, the sessions a steady state holds at time
zero (a warm start).

A steady load of sessions starting at ``λ/K`` a second, each ``K`` turns an exponential think
time of mean ``S`` apart and each turn ``T`` seconds in answer, holds ``λ/K · (K - 1) · (S + T)``
sessions waiting for a later turn at any instant (Little's law). Each waits for its turn ``g``
with equal chance for ``g = 1 .. K - 1`` (every pause has the same mean): in a pause with
chance ``S / (S + T)``, sending it an exponential time of mean ``S`` later (the pause's rest,
memoryless), else being answered, sending it the rest of that answer and a pause later (the
answer's own work left out). ``T`` is the instance's estimate at the load
(``run.turn_estimate``; without one, none are seeded being answered). Without them a run
starts empty and takes the sessions' whole length, ``(K - 1) · S`` and more, to hold what its
load keeps going: for sessions of minutes, tens of thousands of requests. With them it is at
that population from the start, and its caches hold their histories as a steady run's would
(``warm_caches``). Warm sessions come in addition to the run's requests, at most as many
requests again (``warm_share``: the part of the population a run could start with); how long
a run takes to settle is ``backlog.SessionPace``'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..specs.collector import gc_paused
from .routing import mix64

#: Turns' times (the estimated turn, or without one the median first answer of the run's first
#: sessions) after the first start before a warm run is read: the requests in service, none at
#: the start, have filled in.
WARM_ANSWERS = 3.0


@dataclass(frozen=True)
class SessionRows:
    """The requests of a run of synthetic sessions, heads (first turns, or a warm session's
    first turn in the run) by arrival time first, then the turns sent after an answer (NaN
    arrival). Per request: its prompt's segments (``((key, tokens), ...)``), its answer's cache
    key, the request that follows it (-1: none) with its think time, its session (the route
    key) and whether it belongs to a warm session; ``warm_share`` is the part of the warm
    population the run holds (1: all, or none needed)."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    segments: tuple
    answers: tuple
    follows: np.ndarray
    think_s: np.ndarray
    route_keys: np.ndarray
    warm: np.ndarray
    warm_share: float
    #: The seconds a turn was estimated to spend being answered (``turn_s``; 0: not seeded).
    turn_s: float = 0.0


def warm_sessions(rate: float, turns: int, think_s: float, turn_s: float = 0.0) -> float:
    """Sessions a steady load of ``rate`` requests a second holds between turns or being
    answered before one (Little's law): ``rate / turns`` starts a second, each ``turns - 1``
    pauses of mean ``think_s`` and as many turns of ``turn_s`` before them."""
    return rate / turns * (turns - 1) * (think_s + turn_s) if turns > 1 else 0.0


def _generators(seed: int) -> list[np.random.Generator]:
    """Eight streams of the warm sessions' draws (first turn in the run, its pause's rest,
    shared prefix, pauses, new messages, answers, whether it is being answered, what is left of
    that answer), each read in session order so that the first sessions are the same whatever
    the rate: a search's runs differ only by the sessions the higher rate adds. Independent of
    the fresh sessions' streams (``arrivals._generators``)."""
    child = np.random.SeedSequence(seed).spawn(5)[4]
    return [np.random.default_rng(s) for s in child.spawn(8)]


def session_rows(
    rate: float,
    count: int,
    turns: int,
    think_s: float,
    sys_tokens: int,
    prefixes: int,
    seed: int,
    fresh: Callable,
    draw: Callable,
    turn_s: Callable | None = None,
) -> SessionRows:
    """The sessions of ``count`` requests at ``rate`` (module docstring) and the warm ones.
    ``fresh(n_sessions)`` returns the fresh sessions' (starts, new messages and answers
    turn-major as ``(turns, sessions)``, shared prefix of each, think times) from the traffic's
    own streams; ``draw(column, rng, n)`` draws ``n`` lengths of ``column`` (prompt_tokens,
    output_tokens); ``turn_s(prompt, output, context)`` estimates the seconds a turn (its new
    message to prefill, its answer, its context) spends being answered at this load (None:
    none are seeded)."""
    sessions = max(1, math.ceil(count / turns))
    starts, new, out, prefix, think = fresh(sessions)
    heads = [(starts, new, out, prefix, np.zeros(sessions, dtype=np.int64), think)]
    served = 0.0
    if turn_s is not None and think_s > 0:  # a turn prefills its new message, its history cached
        context = float(np.mean(sys_tokens + np.cumsum(new + out, axis=0) - out))
        message, answer = float(np.mean(new)), float(np.mean(out))
        served = max(float(turn_s(message, answer, context + answer / 2.0)), 0.0)
    need = warm_sessions(rate, turns, think_s, served)
    share = 1.0
    if think_s > 0 and round(need) >= 1:
        warm, share = _warm(rate, count, turns, think_s, served, prefixes, seed, draw, need)
        heads.append(warm)
    return _rows(heads, turns, sys_tokens, share, served)


def _warm(rate, count, turns, think_s, served, prefixes, seed, draw, need) -> tuple:
    """The warm sessions (module docstring) whose requests fit in ``count``: (arrivals, new
    messages and answers as ``(turns, sessions)``, prefixes, first turn in the run, think
    times turn-major), and the share of the ``need`` sessions (rounded) they are."""
    k_rng, t_rng, p_rng, w_rng, n_rng, o_rng, a_rng, r_rng = _generators(seed)
    most = int(min(round(need), count))
    first = k_rng.integers(1, turns, most)
    fit = int(np.searchsorted(np.cumsum(turns - first), count, side="right"))
    first = first[:fit]  # each stream read in session order: the first ``fit`` sessions' draws
    # between turns, or (a share served / (pause + served)) being answered before one: sent
    # the rest of that answer (its turn's work left out, the run's first answers' time) later
    answering = a_rng.random(fit) < served / (think_s + served)
    arrival = t_rng.exponential(think_s, fit) + np.where(answering, r_rng.random(fit) * served, 0.0)
    prefix = p_rng.integers(0, max(prefixes, 1), fit)
    pauses = w_rng.exponential(think_s, fit * turns)
    new = draw("prompt_tokens", n_rng, fit * turns).reshape(fit, turns).T
    out = draw("output_tokens", o_rng, fit * turns).reshape(fit, turns).T
    share = fit / round(need)
    return (arrival, new, out, prefix, first, pauses.reshape(fit, turns).T), share


def _rows(groups: list, turns: int, sys_tokens: int, share: float, served: float) -> SessionRows:
    """Every group's sessions as requests (``SessionRows``); with one group of sessions all
    starting at their first turn, in the order the runs before warm starts had (request
    ``(s, k)`` at row ``s + k · sessions``). The cyclic collector is paused meanwhile: the rows'
    many small tuples hold no cycles, and its passes over them cost about as much as building
    them."""
    with gc_paused():
        return _built_rows(groups, turns, sys_tokens, share, served)


def _built_rows(groups, turns, sys_tokens, share, served) -> SessionRows:
    """``_rows``, with the collector as the caller left it."""
    arrival, prompt, output, segments, answers = [], [], [], [], []
    follows, think, keys, warm, heads = [], [], [], [], []
    base = 0
    for g, (times, new, out, prefix, first, pauses) in enumerate(groups):
        n_sessions = len(times)
        history = np.cumsum(new + out, axis=0) - out  # the prompt after the prefix, by turn
        # Python numbers read once (``tolist``: the values ``int``/``float`` of each element)
        new_l, out_l, hist_l = new.tolist(), out.tolist(), history.tolist()
        times_l, prefix_l, first_l = times.tolist(), prefix.tolist(), first.tolist()
        pauses_l = pauses.tolist()
        # each session's prompt so far as segments, grown turn by turn: its prefix, then its
        # earlier turns' (message, answer); a turn's prompt is that and its new message
        past: list[tuple] = [((("p", int(p)), sys_tokens),) if sys_tokens else () for p in prefix_l]
        warm_g = g > 0
        for k in range(turns):
            new_k, out_k, hist_k, pause_k = new_l[k], out_l[k], hist_l[k], pauses_l[k]
            more = k + 1 < turns
            for s in range(n_sessions):
                sid = base + s
                message = (("u", sid, k), int(new_k[s]))
                f = first_l[s]
                if k >= f:
                    head = k == f
                    arrival.append(float(times_l[s]) if head else math.nan)
                    prompt.append(sys_tokens + int(hist_k[s]))
                    output.append(int(out_k[s]))
                    segments.append(past[s] + (message,))
                    answers.append(("a", sid, k) if more else None)
                    think.append(0.0 if head else float(pause_k[s]))
                    keys.append(sid if turns > 1 else int(prefix_l[s]))
                    warm.append(warm_g)
                    heads.append(head)
                    follows.append((sid, k))
                past[s] += (message, (("a", sid, k), int(out_k[s])))
        base += n_sessions
    return _ordered(
        arrival, prompt, output, segments, answers, follows, think, keys, warm, heads, share,
        served,
    )  # fmt: skip


def _ordered(arrival, prompt, output, segments, answers, turn_of, think, keys, warm, heads,
             share, served) -> SessionRows:  # fmt: skip
    """The requests in the order ``Arrivals`` keeps (heads by arrival, then the rest as built),
    each linked to its session's next turn."""
    arrival_a = np.asarray(arrival, dtype=float)
    head = np.asarray(heads, dtype=bool)
    order = np.concatenate(
        [np.flatnonzero(head)[np.argsort(arrival_a[head], kind="stable")], np.flatnonzero(~head)]
    )
    row_of = {turn_of[i]: r for r, i in enumerate(order)}
    nxt = np.array([row_of.get((turn_of[i][0], turn_of[i][1] + 1), -1) for i in order])
    return SessionRows(
        arrival_a[order],
        np.asarray(prompt, dtype=np.int64)[order],
        np.asarray(output, dtype=np.int64)[order],
        tuple(segments[i] for i in order),
        tuple(answers[i] for i in order),
        nxt.astype(np.int64),
        np.asarray(think, dtype=float)[order],
        np.asarray(keys, dtype=np.int64)[order],
        np.asarray(warm, dtype=bool)[order],
        share,
        served,
    )


def warm_caches(engines, sharing, home) -> None:
    """Put each warm session's history (its first prompt in the run but its new message) in
    the prefix cache of the engine ``home(request)`` names, as a steady run's cache holds it
    between turns, then evict what the engine's memory cannot hold (to its tiers where it has
    them): least recently used first, in an order that looks drawn at random and is the same
    for a session at any rate (``routing.mix64`` of its key; in a steady run the time a pause has lasted says
    nothing of what is left of it). Engines without a cache are left."""
    if sharing is None or sharing.warm is None:
        return
    heads = np.flatnonzero(sharing.warm & (sharing.think_s == 0.0))
    order = np.array([mix64(int(k)) for k in sharing.route_keys[heads]], dtype=np.uint64)
    heads = heads[np.argsort(order, kind="stable")]
    for i in heads:
        cache = engines[home(int(i))].cache
        history = sharing.segments[i][:-1]
        if cache is not None and history:
            cache.release(cache.insert(history, None, 0.0), 0.0)
    for e in engines:
        e.trim()
