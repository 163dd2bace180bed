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


def backlog_growth(arrivals, e2e_s: np.ndarray, admitted_s=None, ttft_s=None, pace=None) -> float:
    """(requests in the system at the last arrival − ``BACKLOG_SLACK`` − ``BACKLOG_SIGMAS``
    √(those at the middle arrival)) / (those at the middle arrival): about 1 when the deployment
    keeps up, about 2 when the load outgrows it; at least their plain ratio where the run fell
    far behind (``BACKLOG_BEHIND_SHARE``). A run too short to fill the engine by its middle
    arrival also looks like growth (conservative). Runs of sessions: ``sessions_growth``, with
    their ``pace`` (``session_pace``; computed here where not given)."""
    sharing = getattr(arrivals, "sharing", None)
    sent = np.asarray(arrivals.arrival_s, dtype=float)
    e2e_s = np.asarray(e2e_s, dtype=float)
    ttft_s = np.full(len(sent), np.nan) if ttft_s is None else np.asarray(ttft_s, dtype=float)
    if sharing is not None and sharing.sessions:
        pace = session_pace(arrivals, e2e_s) if pace is None else pace
        return sessions_growth(sent, pace, e2e_s, ttft_s)
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
SESSIONS_PACE = 0.95
#: The share of sessions a steady run's middle start must outlast from its first: those
#: started first have ended, all but a tenth (``SessionPace.steady``).
SESSIONS_ENDED = 0.9


@dataclass(frozen=True)
class SessionPace:
    """How far a run of sessions got toward its offered load: its first, middle and last
    session starts (s), the requests it sent between the middle start and the last, those the
    offered rate brings between them (the starts' rate times the requests a session holds),
    and how long nine sessions in ten last at least (s): their thinking between turns, plus
    for each turn the time the run's first sessions took for their first answer, in an engine
    not yet loaded (an overload lengthens sessions; this does not)."""

    first_s: float
    middle_s: float
    last_s: float
    sent: float
    offered: float
    session_s: float

    @property
    def steady(self) -> bool:
        """The sessions started first had ended by the middle start, all but a tenth: from there
        the run holds as many as its offered load keeps going."""
        return self.middle_s - self.first_s >= self.session_s

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
        heads = heads[np.argsort(sent[heads], kind="stable")]
        at, think = heads.copy(), np.zeros(len(heads))  # down each session's chain of turns
        turns = np.ones(len(heads))
        while (follows[at] >= 0).any():
            nxt = follows[at]
            think += np.where(nxt >= 0, sharing.think_s[np.maximum(nxt, 0)], 0.0)
            turns += nxt >= 0
            at = np.where(nxt >= 0, nxt, at)
        early = e2e_s[heads[: max(len(heads) // 10, 1)]]
        answer = float(np.median(early[np.isfinite(early)])) if np.isfinite(early).any() else 0.0
        starts = sent[heads]
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
            session_s=float(np.quantile(think + turns * answer, SESSIONS_ENDED)),
        )


def sessions_growth(sent, pace: SessionPace | None, e2e_s, ttft_s) -> float:
    """The backlog reading of a run of sessions, at its sessions' starts (the offered stream: a
    later turn is sent only after the answer before it, so an overloaded run's last arrivals
    come after its backlog drained; read at every arrival, 20 req/s of 4-turn sessions on one
    H100, served at about 11 req/s, read as kept up).

    A steady run (``SessionPace.steady``) that does not keep pace was held back by its
    answers: it reads past ``BACKLOG_GROWTH``, by its plain in-system ratio or its shortfall
    where larger. One that keeps pace is read as ``backlog_growth`` reads a run, by the
    requests in the system at the middle start and the last. A run that never reaches a steady
    state is still filling its batch with sessions, which grows it with no overload: it is read
    by the requests in the system at the middle start plus the growth of those still waiting
    for their first token (a queue in front of the engine, or prompts it cannot begin), and
    says it cannot tell more (``unsteady_note``): its load never reached the offered one."""
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
    last = middle + unbegun_last - unbegun_mid
    if pace.steady:  # no batch still filling: the whole count tells (a backlog decoding too)
        last = max(last, count(s_done, t_last) - count(finish, t_last))
    return float((last - BACKLOG_SLACK - noise) / middle)


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


def session_pace(arrivals, e2e_s) -> SessionPace | None:
    """A run of sessions' pace (None: no sessions, or too few)."""
    if arrivals.sharing is None or not arrivals.sharing.sessions:
        return None
    sent = np.asarray(arrivals.arrival_s, dtype=float)
    return SessionPace.of(sent, arrivals.sharing, np.asarray(e2e_s, dtype=float))


def overload_note(pace: SessionPace | None, growth: float) -> str:
    """The note of a run that does not keep up (``pace``: a run of sessions'): how its backlog
    grew, or for steady sessions that fell short of their offered rate, by how much
    (``sessions_growth``)."""
    if pace is not None and pace.steady and not pace.kept:
        return (
            f"{OVERLOAD}: between the middle and the last session start its sessions sent "
            f"{pace.sent / pace.offered:.0%} of the requests the offered rate brings, their "
            "answers holding the next turns back"
        )
    span = "of the arrivals"
    if pace is not None:
        span = "of the sessions' starts"
        if not pace.steady:
            span += ", by the requests waiting for a first token"
    return (
        f"{OVERLOAD}: requests in the system grew {growth:.2g}-fold over the second half "
        f"{span} (or the run is too short to fill the engine: raise requests)"
    )


def unsteady_note(pace: SessionPace | None, requests: int, instances: int = 1) -> list[str]:
    """A run of sessions too short to reach a steady state says so, and how many requests per
    instance it takes to reach one (its sessions' length over the first half of their starts'
    span, times its own ``requests``)."""
    if pace is None or pace.steady:
        return []
    half = pace.middle_s - pace.first_s
    need = requests / max(instances, 1) * pace.session_s / max(half, 1e-9)
    return [
        f"nine sessions in ten last at least {pace.session_s:,.0f} s (their thinking between "
        "turns and the first answers' time), longer than the first half of their starts, "
        f"{half:,.0f} s: the run never holds the sessions its offered load keeps going, so "
        "whether the deployment keeps up is read from the requests waiting for a first token "
        f"only (it takes more than {need:,.0f} requests per instance to reach a steady state: "
        "raise requests)"
    ]
