"""Whether a deployment keeps up with its load (docs/model-part-e.md §E4, "Keeping up"): the
growth of the requests in the system over the second half of a run's arrivals, or of a run of
sessions' starts, against ``BACKLOG_GROWTH``."""

from __future__ import annotations

import math

import numpy as np

#: A deployment keeps up with a load when the requests in the system at the last arrival are at
#: most this many times those at the middle arrival, plus ``BACKLOG_SLACK`` (§E4).
BACKLOG_GROWTH = 1.3
BACKLOG_SLACK = 10
#: ... plus this many standard deviations of a steady count (its square root): a 200-request
#: run at a quarter of the knee otherwise reads a chance swing from 17 to 34 as growth.
BACKLOG_SIGMAS = 3.0
#: ... or, whatever the counts, when they grew over the second half of the arrivals by more than
#: this share of the requests that arrived in it (and by more than ``BACKLOG_SIGMAS`` of that
#: count's own noise): the deployment served under half of what arrived. The slack above
#: exceeds what a short run of long requests can show (80 prompts of 120,000 tokens at 0.2
#: req/s on 4 H100, served at 0.037 req/s, read as kept up); this test cannot mistake a
#: chance swing for an overload. It reads only runs whose second half of arrivals lasts at
#: least the median service time (``_service_s``): a shorter one may still be filling its engine.
BACKLOG_BEHIND_SHARE = 0.5


def backlog_growth(arrivals, e2e_s: np.ndarray, admitted_s=None) -> float:
    """(requests in the system at the last arrival − ``BACKLOG_SLACK`` − ``BACKLOG_SIGMAS``
    √(those at the middle arrival)) / (those at the middle arrival): about 1 when the deployment
    keeps up, about 2 when the load outgrows it; at least their plain ratio where the count grew
    by more than ``BACKLOG_BEHIND_SHARE`` of what arrived over the second half. A run too short
    to fill the engine by its middle arrival also looks like growth (conservative). Runs of
    sessions are read by ``_sessions_growth``."""
    sharing = getattr(arrivals, "sharing", None)
    if sharing is not None and sharing.sessions and admitted_s is not None:
        return _sessions_growth(arrivals, e2e_s, np.asarray(admitted_s, dtype=float))
    a = np.sort(arrivals.arrival_s)
    done = np.isfinite(e2e_s)  # rejected requests never enter the system
    if len(a) < 20 or not done.any():
        return 1.0
    finish = np.sort((arrivals.arrival_s + e2e_s)[done])

    def in_system(t):
        arrived = np.searchsorted(a, t, side="right") * done.mean()
        return arrived - np.searchsorted(finish, t, side="right")

    t_mid = a[len(a) // 2]
    at_mid, at_last = in_system(t_mid), in_system(a[-1])
    middle = max(at_mid, 1.0)
    # a steady count fluctuates about its mean like a Poisson count: allow three of its sigmas
    noise = BACKLOG_SIGMAS * math.sqrt(middle)
    growth = (at_last - BACKLOG_SLACK - noise) / middle
    arrived = (len(a) - np.searchsorted(a, t_mid, side="right")) * done.mean()
    behind = at_last - at_mid
    gross = behind > max(BACKLOG_BEHIND_SHARE * arrived, BACKLOG_SIGMAS * math.sqrt(arrived))
    if gross and a[-1] - t_mid >= _service_s(arrivals.arrival_s, e2e_s, admitted_s):
        growth = max(growth, at_last / middle)
    return float(growth)


def _sessions_growth(arrivals, e2e_s: np.ndarray, admitted_s: np.ndarray) -> float:
    """The backlog reading of a run of sessions: (requests in the system at the middle session
    start, plus the growth of those waiting to enter the engine from then to the last session
    start, − the slack and noise of ``backlog_growth``) / (those at the middle start).

    A session's later turn is sent only after the answer before it, so an overloaded run's
    last arrivals come after its backlog drained (read at every arrival, 20 req/s of 4-turn
    sessions served 5.7 req/s on one H100 and read as kept up); the offered stream is the
    sessions' starts. And while sessions are still starting faster than they end (sessions
    longer than the span of their starts) the engine's batch grows without any overload, so
    what is read is the queue in front of it, which grows only when the engine cannot take
    what is sent."""
    follows = arrivals.sharing.follows
    sent = np.asarray(arrivals.arrival_s, dtype=float)
    first = np.ones(len(sent), dtype=bool)
    first[follows[follows >= 0]] = False
    starts = np.sort(sent[first & np.isfinite(sent)])
    done = np.isfinite(e2e_s) & np.isfinite(sent) & np.isfinite(admitted_s)
    if len(starts) < 20 or not done.any():
        return 1.0
    s_done = np.sort(sent[done])
    entered = np.sort(admitted_s[done])
    finish = np.sort((sent + e2e_s)[done])

    def count(times, t):
        return float(np.searchsorted(times, t, side="right"))

    t_mid, t_last = starts[len(starts) // 2], starts[-1]
    middle = max(count(s_done, t_mid) - count(finish, t_mid), 1.0)
    waiting_mid = count(s_done, t_mid) - count(entered, t_mid)
    waiting_last = count(s_done, t_last) - count(entered, t_last)
    noise = BACKLOG_SIGMAS * math.sqrt(middle)
    return float((middle + waiting_last - waiting_mid - BACKLOG_SLACK - noise) / middle)


def _service_s(arrival_s: np.ndarray, e2e_s: np.ndarray, admitted_s) -> float:
    """The median time from admission to the last token (what a queue in front of the engine
    does not lengthen). A run whose second half of arrivals is shorter than that may end before
    a deployment that keeps up has served what arrived in it (a run still filling its engine,
    no queue, grows by over half of what arrived once it is shorter than 2/3 of it), so its
    growth says nothing of an overload. Infinite without admission times."""
    if admitted_s is None:
        return math.inf
    service = np.asarray(arrival_s, dtype=float) + e2e_s - np.asarray(admitted_s, dtype=float)
    service = service[np.isfinite(service)]
    return float(np.median(service)) if len(service) else math.inf
