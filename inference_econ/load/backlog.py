"""Whether a deployment keeps up with its load (docs/model-part-e.md §E4, "Keeping up"): the
growth of the requests in the system over the second half of a run's arrivals, or of a run of
sessions' starts, against ``BACKLOG_GROWTH``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: How the note on an overloaded run begins.
OVERLOAD = "the load outgrows the deployment"

#: A deployment keeps up with a load when the requests in the system at the last arrival are at
#: most this many times those at the middle arrival, plus ``BACKLOG_SLACK`` (§E4).
BACKLOG_GROWTH = 1.3
BACKLOG_SLACK = 10
#: ... plus this many standard deviations of a steady count (its square root): a 200-request
#: run at a quarter of the knee otherwise reads a chance swing from 17 to 34 as growth.
BACKLOG_SIGMAS = 3.0
#: ... and, whatever the counts, it falls behind when over the second half of the arrivals the
#: requests still waiting for their first token grew by more than this share of those that
#: arrived in it (and by more than ``BACKLOG_SIGMAS`` of that count's own noise): under half of
#: what arrived was even begun. The slack above exceeds what a short run of long requests can
#: show (80 prompts of 120,000 tokens at 0.2 req/s on 4 H100, served at 0.037 req/s, read as
#: kept up). So does the whole in-system count, where the second half of the arrivals lasts at
#: least the median service time (``service_s``; a shorter run may still be filling its
#: engine, each request in it for a whole service time at any load).
BACKLOG_BEHIND_SHARE = 0.5


def backlog_growth(arrivals, e2e_s: np.ndarray, admitted_s=None, ttft_s=None) -> float:
    """(requests in the system at the last arrival − ``BACKLOG_SLACK`` − ``BACKLOG_SIGMAS``
    √(those at the middle arrival)) / (those at the middle arrival): about 1 when the deployment
    keeps up, about 2 when the load outgrows it; at least their plain ratio where the run fell
    far behind (``BACKLOG_BEHIND_SHARE``). A run too short to fill the engine by its middle
    arrival also looks like growth (conservative). Runs of sessions: ``sessions_growth``."""
    sharing = getattr(arrivals, "sharing", None)
    sent = np.asarray(arrivals.arrival_s, dtype=float)
    e2e_s = np.asarray(e2e_s, dtype=float)
    ttft_s = np.full(len(sent), np.nan) if ttft_s is None else np.asarray(ttft_s, dtype=float)
    if sharing is not None and sharing.sessions:
        return sessions_growth(sent, sharing, e2e_s, ttft_s)
    a = np.sort(sent)
    done = np.isfinite(e2e_s)  # rejected requests never enter the system
    if len(a) < 20 or not done.any():
        return 1.0
    finish = np.sort((sent + e2e_s)[done])
    begun = np.sort((sent + ttft_s)[done & np.isfinite(ttft_s)])

    def in_system(t):
        arrived = np.searchsorted(a, t, side="right") * done.mean()
        return arrived - np.searchsorted(finish, t, side="right")

    def unbegun(t):  # arrived, no first token yet
        return np.searchsorted(a, t, side="right") * done.mean() - np.searchsorted(begun, t)

    t_mid = a[len(a) // 2]
    at_mid, at_last = in_system(t_mid), in_system(a[-1])
    middle = max(at_mid, 1.0)
    # a steady count fluctuates about its mean like a Poisson count: allow three of its sigmas
    noise = BACKLOG_SIGMAS * math.sqrt(middle)
    growth = (at_last - BACKLOG_SLACK - noise) / middle
    arrived = (len(a) - np.searchsorted(a, t_mid, side="right")) * done.mean()
    bar = max(BACKLOG_BEHIND_SHARE * arrived, BACKLOG_SIGMAS * math.sqrt(arrived))
    queued = len(begun) and unbegun(a[-1]) - unbegun(t_mid) > bar
    filled = a[-1] - t_mid >= service_s(sent, e2e_s, admitted_s)
    if queued or (filled and at_last - at_mid > bar):
        growth = max(growth, at_last / middle)
    return float(growth)


#: A run of sessions keeps pace with its offered rate when, between its middle session start
#: and its last, it sent at least this share of the requests that rate brings, less
#: ``BACKLOG_SIGMAS`` of their count's noise (``SessionPace``).
SESSIONS_PACE = 0.9


@dataclass(frozen=True)
class SessionPace:
    """How far a run of sessions got toward its offered load: its first, middle and last
    session starts (s), the requests it sent between the middle start and the last, those the
    offered rate brings between them (the starts' rate times the requests a session holds),
    and the median time its sessions think between turns (s): the least a session lasts,
    whatever the engine does (an overload lengthens them)."""

    first_s: float
    middle_s: float
    last_s: float
    sent: float
    offered: float
    think_s: float

    @property
    def steady(self) -> bool:
        """The sessions of the first half of the starts had ended by the middle one: from there
        the run holds as many as the offered load keeps going."""
        return self.middle_s - self.first_s >= self.think_s

    @property
    def kept(self) -> bool:
        """Steady, and it sent what the offered rate brings (``SESSIONS_PACE``)."""
        noise = BACKLOG_SIGMAS * math.sqrt(self.offered)
        return self.steady and self.sent >= SESSIONS_PACE * self.offered - noise

    @classmethod
    def of(cls, sent, sharing, e2e_s) -> SessionPace | None:
        """The pace of a run (None with fewer than 20 sessions or nothing served)."""
        follows = sharing.follows
        first = np.ones(len(sent), dtype=bool)
        first[follows[follows >= 0]] = False
        heads = np.flatnonzero(first & np.isfinite(sent))
        done = np.isfinite(e2e_s) & np.isfinite(sent)
        if len(heads) < 20 or not done.any():
            return None
        at, think = heads.copy(), np.zeros(len(heads))  # down each session's chain of turns
        while (follows[at] >= 0).any():
            nxt = follows[at]
            think += np.where(nxt >= 0, sharing.think_s[np.maximum(nxt, 0)], 0.0)
            at = np.where(nxt >= 0, nxt, at)
        starts = np.sort(sent[heads])
        t0, t_mid, t_last = float(starts[0]), float(starts[len(starts) // 2]), float(starts[-1])
        rate = (len(starts) - 1) / max(t_last - t0, 1e-12) * done.sum() / len(starts)
        s_done = np.sort(sent[done])
        between = np.searchsorted(s_done, t_last, "right") - np.searchsorted(s_done, t_mid, "right")
        return cls(
            first_s=t0,
            middle_s=t_mid,
            last_s=t_last,
            sent=float(between),
            offered=float(rate * (t_last - t_mid)),
            think_s=float(np.median(think)),
        )


def sessions_growth(sent, sharing, e2e_s, ttft_s) -> float:
    """The backlog reading of a run of sessions, at its sessions' starts (the offered stream: a
    later turn is sent only after the answer before it, so an overloaded run's last arrivals
    come after its backlog drained; read at every arrival, 20 req/s of 4-turn sessions on one
    H100, served at 8 req/s, read as kept up).

    A steady run that does not keep pace (``SessionPace.kept``) was held back by its answers:
    it reads past ``BACKLOG_GROWTH``, by its plain in-system ratio or its shortfall where
    larger. Any other is read by the requests in the system at the middle start plus the
    growth of those still waiting for their first token, as ``backlog_growth`` reads a run (a
    batch still filling with sessions grows with no overload; a queue in front of the engine,
    or prompts it cannot begin, does not). A run that never reaches a steady state (sessions
    thinking longer than the first half of their starts' span) is read so too, and says it
    cannot tell more (``unsteady_note``): its load never reached the offered one."""
    pace = SessionPace.of(sent, sharing, e2e_s)
    if pace is None:
        return 1.0
    done = np.isfinite(e2e_s) & np.isfinite(sent)
    s_done = np.sort(sent[done])
    finish = np.sort((sent + e2e_s)[done])
    begun = np.sort((sent + ttft_s)[done & np.isfinite(ttft_s)])

    def count(times, t):
        return float(np.searchsorted(times, t, side="right"))

    t_mid, t_last = pace.middle_s, pace.last_s
    middle = max(count(s_done, t_mid) - count(finish, t_mid), 1.0)
    if pace.steady and not pace.kept:
        last = count(s_done, t_last) - count(finish, t_last)
        past = math.nextafter(BACKLOG_GROWTH, math.inf)
        return float(max(last / middle, pace.offered / max(pace.sent, 1.0), past))
    unbegun_mid = count(s_done, t_mid) - count(begun, t_mid)
    unbegun_last = count(s_done, t_last) - count(begun, t_last)
    noise = BACKLOG_SIGMAS * math.sqrt(middle)
    return float((middle + unbegun_last - unbegun_mid - BACKLOG_SLACK - noise) / middle)


def service_s(sent: np.ndarray, e2e_s: np.ndarray, admitted_s) -> float:
    """The median time from admission to the last token (what a queue in front of the engine
    does not lengthen); infinite without admission times. A run whose second half of arrivals
    is shorter than that may end before a deployment that keeps up has served what arrived in
    it (a run still filling its engine, no queue, grows by over half of what arrived once it is
    shorter than 2/3 of it)."""
    if admitted_s is None:
        return math.inf
    service = sent + e2e_s - np.asarray(admitted_s, dtype=float)
    service = service[np.isfinite(service)]
    return float(np.median(service)) if len(service) else math.inf


def _pace(arrivals, e2e_s) -> SessionPace | None:
    """A run of sessions' pace (None: no sessions, or too few)."""
    if arrivals.sharing is None or not arrivals.sharing.sessions:
        return None
    sent = np.asarray(arrivals.arrival_s, dtype=float)
    return SessionPace.of(sent, arrivals.sharing, np.asarray(e2e_s, dtype=float))


def overload_note(arrivals, e2e_s, growth: float) -> str:
    """The note of a run that does not keep up: how its backlog grew, or for steady sessions
    that fell short of their offered rate, by how much (``sessions_growth``)."""
    pace = _pace(arrivals, e2e_s)
    if pace is not None and pace.steady and not pace.kept:
        return (
            f"{OVERLOAD}: between the middle and the last session start its sessions sent "
            f"{pace.sent / pace.offered:.0%} of the requests the offered rate brings, their "
            "answers holding the next turns back"
        )
    span = "of the arrivals"
    if pace is not None:
        span = "of the sessions' starts, by the requests waiting for a first token"
    return (
        f"{OVERLOAD}: requests in the system grew {growth:.2g}-fold over the second half "
        f"{span} (or the run is too short to fill the engine: raise requests)"
    )


def unsteady_note(arrivals, e2e_s) -> list[str]:
    """A run of sessions too short to reach a steady state says so, and about how many
    requests would (its sessions' thinking over the first half of their starts' span, times
    its own)."""
    pace = _pace(arrivals, e2e_s)
    if pace is None or pace.steady:
        return []
    half = pace.middle_s - pace.first_s
    need = len(arrivals.arrival_s) * pace.think_s / max(half, 1e-9)
    return [
        f"its sessions think {pace.think_s:.3g} s between turns (median), longer than the "
        f"first half of their starts, {half:.3g} s: the run never holds the "
        "sessions its offered load keeps going, so whether the deployment keeps up is read "
        f"from the requests waiting for a first token only (it takes more than {need:,.0f} "
        "requests to reach one: raise requests)"
    ]
