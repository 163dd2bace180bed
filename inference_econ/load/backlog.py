"""Whether a deployment keeps up with its load (docs/model-part-e.md §E4, "Keeping up"): how
the queue in front of the engine and the requests in the system grew over the second half of a
run's arrivals, or of a run of sessions' starts, against the noise of the arrivals
(``Backlog``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .sessions import WARM_ANSWERS

#: How the note on an overloaded run begins.
OVERLOAD = "the load outgrows the deployment"

#: A deployment keeps up with a load when the requests in the system at the last arrival,
#: less ``BACKLOG_SLACK`` and ``BACKLOG_SIGMAS`` standard deviations of a steady count (its
#: square root), are at most this many times the most it held over the second quarter of the
#: arrivals (§E4; the peak, so that a burst's phase at the middle arrival does not read as
#: growth).
BACKLOG_GROWTH = 1.3
BACKLOG_SLACK = 10
BACKLOG_SIGMAS = 3.0
#: ... and the ratio is at least the plain one of the two counts (past ``BACKLOG_GROWTH``
#: wherever that is) where the whole count grew by more than this share of the requests
#: that arrived over the second half, in a run whose second half lasts
#: at least the median service time (``service_s``; a shorter run may still be filling its
#: engine, each request in it for a whole service time at any load): 80 prompts of 120,000
#: tokens at 0.2 req/s on 4 H100, served at 0.037 req/s, stay inside the ratio's slack.
BACKLOG_BEHIND_SHARE = 0.5
#: Stretches of a run its arrivals are counted in to measure how much more they swing than a
#: Poisson stream's (``Counts.dispersion``).
DISPERSION_BINS = 32


@dataclass(frozen=True)
class Backlog:
    """What a run says of keeping up (§E4): its reading (``rate``: the in-system ratio above,
    about 1 when it keeps up and 2 when the load outgrows it; or, where the queue in front of
    the engine grew, how many times as fast requests arrived as they were begun), by how many
    requests the backlog grew over the second half of the arrivals (``grown``), whether the
    deployment falls behind (``behind``), whether the queue told (``queue``), and the least
    overload the queue's reading tells from a steady run's noise (``resolution``: how many
    times what the deployment serves; 1.10 where 1,000 requests of a Poisson stream arrive
    in the second half of the run, 1.03 where 10,000 do)."""

    rate: float = 1.0
    grown: float = 0.0
    behind: bool = False
    queue: bool = False
    resolution: float = 1.0

    @property
    def undecided(self) -> bool:
        """It reads as kept up, but so would an overload of more than ``UNTOLD_LIMIT`` times
        what the deployment serves: the run cannot say that the deployment holds its load (a
        load search does not take it as held)."""
        return not self.behind and self.resolution > UNTOLD_LIMIT


def backlog_of(arrivals, e2e_s: np.ndarray, admitted_s=None, ttft_s=None, pace=None) -> Backlog:
    """Whether a run keeps up with its arrivals (``Counts``): behind where its queue in front
    of the engine grew past the arrivals' noise over their second half, however slowly, or
    its requests in the system past ``BACKLOG_GROWTH``; kept up where a run cannot tell
    (fewer than 20 requests served: any overload, ``CANNOT_TELL``; every request sent at
    once: no rate to keep up with). Runs of sessions: ``sessions_backlog``, with their
    ``pace`` (``session_pace``; computed here where not given)."""
    sharing = getattr(arrivals, "sharing", None)
    sent = np.asarray(arrivals.arrival_s, dtype=float)
    e2e_s = np.asarray(e2e_s, dtype=float)
    ttft_s = np.full(len(sent), np.nan) if ttft_s is None else np.asarray(ttft_s, dtype=float)
    if sharing is not None and sharing.sessions:
        pace = session_pace(arrivals, e2e_s) if pace is None else pace
        return sessions_backlog(sent, pace, e2e_s, ttft_s)
    counts = Counts.of(sent, e2e_s, ttft_s)
    a = counts.sent
    if len(a) < 20:
        return CANNOT_TELL
    t_mid, t_last = a[len(a) // 2], a[-1]
    filled = t_last - t_mid >= service_s(sent, e2e_s, admitted_s)
    return counts.backlog(counts.first_stretch(), t_mid, t_last, filled)


#: A run too short to read (fewer than 20 requests or sessions): kept up, at any overload.
CANNOT_TELL = Backlog(resolution=math.inf)
#: The most overload a run of a load search may be unable to tell from keeping up
#: (``Backlog.resolution``) and still hold its load: one that would read twice the load the
#: deployment serves as kept up cannot say it holds the load it was sent (200 requests of
#: 3-turn sessions read 4,275 req/s of Llama 3.1 8B, 500/100 tokens, as held within p99 TPOT
#: 100 ms on one H100, against 44.7 over 20,000).
UNTOLD_LIMIT = 2.0
#: The share of a run's requests sent at one instant that makes it a batch the first stretch
#: starts after (``Counts.first_stretch``).
BATCH_SHARE = 0.05


@dataclass(frozen=True)
class Counts:
    """A run's served requests as events: sent (sorted), finished, and of those with a first
    token their sending (``sent_begun``) and first-token times (``begun``)."""

    sent: np.ndarray
    finished: np.ndarray
    sent_begun: np.ndarray
    begun: np.ndarray

    @classmethod
    def of(cls, sent, e2e_s, ttft_s) -> Counts:
        done = np.isfinite(e2e_s) & np.isfinite(sent)  # rejected requests never enter
        first = done & np.isfinite(ttft_s)
        return cls(
            np.sort(sent[done]),
            np.sort((sent + e2e_s)[done]),
            np.sort(sent[first]),
            np.sort((sent + ttft_s)[first]),
        )

    def in_system(self, t):
        """Requests sent and not finished at ``t`` (a time or an array of times)."""
        return np.searchsorted(self.sent, t, "right") - np.searchsorted(self.finished, t, "right")

    def first_stretch(self) -> float:
        """Where the stretch the second half is read against starts: the second quarter's
        first arrival, or the first after its instant where more than ``BATCH_SHARE`` of the
        requests share it (a batch sent at once: its queue is no steady run's)."""
        a = self.sent
        t_0 = a[len(a) // 4]
        at_once = np.searchsorted(a, t_0, "right") - np.searchsorted(a, t_0, "left")
        if at_once > BATCH_SHARE * len(a):
            after = a[a > t_0]
            return float(after[0]) if len(after) else float(t_0)
        return float(t_0)

    def dispersion(self, t_0: float, t_last: float) -> float:
        """How much more the arrivals from ``t_0`` to ``t_last`` swing than a Poisson
        stream's: the variance over the mean of their counts in ``DISPERSION_BINS`` equal
        stretches of that span, where that is past a Poisson stream's own swing of it
        (``BACKLOG_SIGMAS`` of √(2 / (bins − 1)) above 1), else 1 (a trace of bursts, or of a
        rate that changes, moves a steady run's counts that much more; a Poisson stream's do
        as the noise terms say)."""
        a = self.sent[(self.sent >= t_0) & (self.sent <= t_last)]
        if len(a) < 2 or not t_last > t_0:
            return 1.0
        counts = np.histogram(a, bins=DISPERSION_BINS, range=(t_0, t_last))[0]
        index = float(counts.var(ddof=1) / max(counts.mean(), 1e-12))
        poisson = 1.0 + BACKLOG_SIGMAS * math.sqrt(2.0 / (DISPERSION_BINS - 1))
        return index if index > poisson else 1.0

    def backlog(self, t_0: float, t_mid: float, t_last: float, filled: bool) -> Backlog:
        """``backlog_of`` the arrivals from ``t_mid`` to ``t_last``: the queue's rise against
        the stretch from ``t_0`` (``_rise``), then the requests in the system at ``t_last``
        against their peak from ``t_0`` to ``t_mid``; ``filled``: the whole count's growth
        tells too (``BACKLOG_BEHIND_SHARE``). Where no arrival is left before the middle one
        (a batch sent at once holds it), the arrivals after its instant are read alone, their
        later half in time against their earlier; where none come after it, nothing is (no
        rate to keep up with)."""
        if not t_0 < t_mid:  # read the arrivals after the middle one's instant alone
            after = self.sent[self.sent > t_mid]
            t_0 = float(after[0]) if len(after) else t_last
            t_mid = (t_0 + t_last) / 2.0
        if not t_0 < t_mid < t_last:
            return Backlog()
        spread = self.dispersion(t_0, t_last)
        arrived = float(np.count_nonzero((self.sent >= t_mid) & (self.sent <= t_last)))
        if not len(self.begun):  # no first token to read the queue by: it cannot tell
            queue, bar = 0.0, math.inf
        else:
            queue, bar = _rise(self.sent_begun, self.begun, t_0, t_mid, t_last, spread)
        resolution = arrived / (arrived - bar) if arrived > bar else math.inf
        if queue > bar:
            rate = arrived / (arrived - queue) if arrived > queue else math.inf
            return Backlog(float(rate), float(queue), True, True, resolution)
        times = self.sent[(self.sent >= t_0) & (self.sent <= t_mid)]
        peak = float(max(self.in_system(times).max(initial=0), 1))
        last = float(self.in_system(t_last))
        ratio = (last - BACKLOG_SLACK - BACKLOG_SIGMAS * math.sqrt(spread * peak)) / peak
        bar = max(BACKLOG_BEHIND_SHARE * arrived, BACKLOG_SIGMAS * math.sqrt(spread * arrived))
        if filled and last - peak > bar:
            ratio = max(ratio, last / peak)
        behind = bool(ratio > BACKLOG_GROWTH)
        return Backlog(max(float(ratio), 0.0), last - peak, behind, False, resolution)


def _mean_count(ins: np.ndarray, outs: np.ndarray, t0: float, t1: float) -> float:
    """The mean over ``t0``..``t1`` of the events of ``ins`` up to each time less those of
    ``outs`` (exact: each event counts for the part of the stretch after it)."""

    def area(events):
        return float(np.clip(t1 - np.maximum(events, t0), 0.0, None).sum())

    return (area(ins) - area(outs)) / (t1 - t0)


def _rise(ins, outs, t_0: float, t_mid: float, t_last: float, spread: float = 1.0):
    """How much the count of ``ins`` less ``outs`` grew from ``t_mid`` to ``t_last``, were it
    growing at a steady pace (the rise of its mean over that stretch above its mean from
    ``t_0`` to ``t_mid``, over ``(t_last − t_0) / 2 / (t_last − t_mid)``: means, so that a
    burst's phase at one instant does not read as growth), and the most a steady run's
    rises: ``BACKLOG_SIGMAS`` of their noise, the arrivals' swing over the second stretch (the
    square root of their count ``n_2``) and the mean count's own, which follows the arrival
    rate of each stretch (the first's mean ``n̄`` over √n of each stretch's arrivals),
    together ``√(n_2 + (s·n̄)²·(1/n_1 + 1/n_2))`` at the same scale ``s``, times the arrivals'
    ``spread`` (``Counts.dispersion``) under the root: (rise, most)."""
    scale = 2.0 * (t_last - t_mid) / (t_last - t_0)
    before = _mean_count(ins, outs, t_0, t_mid)
    rise = (_mean_count(ins, outs, t_mid, t_last) - before) * scale
    n_1 = max(float(np.count_nonzero((ins >= t_0) & (ins < t_mid))), 1.0)
    n_2 = max(float(np.count_nonzero((ins >= t_mid) & (ins <= t_last))), 1.0)
    noise = math.sqrt(spread * (n_2 + (scale * max(before, 0.0)) ** 2 * (1.0 / n_1 + 1.0 / n_2)))
    return rise, BACKLOG_SIGMAS * noise


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
    session starts (s; a warm start's sessions, already under way, are not starts), the
    requests it sent between the middle start and the last, those the offered rate brings
    between them (the starts' rate times the requests a session holds), how long nine
    sessions in ten last at least (s): their thinking between turns, plus for each turn the
    time the run's first sessions took for their first answer, in an engine not yet loaded (an
    overload lengthens sessions; this does not), and how long after the first start the run
    holds the sessions its offered load keeps going (``settle_s``: those sessions' length
    without a warm start; with one, until the requests in service have filled in, or longer
    where the warm start held only part of them, ``warm_share``)."""

    first_s: float
    middle_s: float
    last_s: float
    sent: float
    offered: float
    session_s: float
    settle_s: float = math.nan
    warm_share: float = 0.0
    #: A warm start's requests, and how long its run takes to settle once it holds all of
    #: its sessions (``sessions.WARM_ANSWERS`` answers).
    warm_requests: float = 0.0
    warm_settle_s: float = math.nan

    @property
    def settles_s(self) -> float:
        """Seconds after the first start from which the run holds its steady population."""
        return self.session_s if math.isnan(self.settle_s) else self.settle_s

    @property
    def steady(self) -> bool:
        """The run holds as many sessions as its offered load keeps going from its middle start
        on: the sessions started first had ended by then, all but a tenth, or a warm start
        held them from the start."""
        return self.middle_s - self.first_s >= self.settles_s

    @property
    def short_by(self) -> float:
        """How many times longer the first half of the starts must be for the run to be
        steady (at most 1 where it is)."""
        half = self.middle_s - self.first_s
        return self.settles_s / half if half > 0.0 else math.inf

    @property
    def kept(self) -> bool:
        """Steady, and it sent what the offered rate brings (``SESSIONS_PACE``)."""
        noise = BACKLOG_SIGMAS * math.sqrt(self.offered)
        return self.steady and self.sent >= SESSIONS_PACE * self.offered - noise

    @classmethod
    def of(cls, sent, sharing, e2e_s) -> SessionPace | None:
        """The pace of a run (None with fewer than 20 sessions started or nothing served)."""
        follows = sharing.follows
        warm = np.zeros(len(sent), dtype=bool) if sharing.warm is None else sharing.warm
        first = np.ones(len(sent), dtype=bool)
        first[follows[follows >= 0]] = False
        heads = np.flatnonzero(first & np.isfinite(sent) & ~warm)
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
        own = (done & ~warm).sum()  # the requests a started session holds, served
        rate = (len(starts) - 1) / max(t_last - t0, 1e-12) * own / len(starts)
        s_done = np.sort(sent[done])
        between = np.searchsorted(s_done, t_last, "right") - np.searchsorted(s_done, t_mid, "right")
        session_s = float(np.quantile(think + turns * answer, SESSIONS_ENDED))
        settle, share, warm_settle = math.nan, 0.0, math.nan
        if sharing.warm is not None:
            share = float(sharing.warm_share)
            pauses = sharing.think_s[sharing.think_s > 0.0]
            pause = float(pauses.mean()) if len(pauses) else 0.0
            seeded = float(sharing.turn_s)
            settle = _warm_settle(share, pause, seeded, answer, session_s)
            warm_settle = _warm_settle(1.0, pause, seeded, answer, session_s)
        return cls(
            first_s=t0,
            middle_s=t_mid,
            last_s=t_last,
            sent=float(between),
            offered=float(rate * (t_last - t_mid)),
            session_s=session_s,
            settle_s=settle,
            warm_share=share,
            warm_requests=float(warm.sum()),
            warm_settle_s=warm_settle,
        )


#: The share of a steady load's sessions a run started warm may still lack when it is read
#: (``_warm_settle``).
DEFICIT_LEFT = 0.05


def _warm_settle(
    share: float, pause: float, seeded: float, answer: float, session_s: float
) -> float:
    """Seconds after its first start from which a run started warm holds its steady load. A
    warm start that seeded the sessions being answered as a turn of ``seeded`` seconds has
    them (its instance's estimate at the load, ``run.turn_estimate``) holds ``share`` of a
    steady load's sessions; one that seeded none (no instance to estimate with) lacks those,
    ``answer / (pause + answer)`` of them at its first answers' time (loaded: an overload
    lengthens it and the lack it reads). The sessions it lacks ebb as they would have ended,
    over a session's length, and it is read once they are at most ``DEFICIT_LEFT`` of a
    steady load's, and once the requests in service have filled in
    (``sessions.WARM_ANSWERS`` turns)."""
    cycle = pause + answer
    covered = 1.0 if seeded > 0.0 or cycle <= 0.0 else pause / cycle
    lack = 1.0 - share * covered
    settle = WARM_ANSWERS * (seeded if seeded > 0.0 else answer)
    if lack > DEFICIT_LEFT:
        settle = max(settle, session_s * (1.0 - DEFICIT_LEFT / lack))
    return settle


def sessions_backlog(sent, pace: SessionPace | None, e2e_s, ttft_s) -> Backlog:
    """The backlog reading of a run of sessions, at its sessions' starts (the offered stream: a
    later turn is sent only after the answer before it, so an overloaded run's last arrivals
    come after its backlog drained; read at every arrival, 20 req/s of 4-turn sessions on one
    H100, served at about 11 req/s, read as kept up).

    A steady run (``SessionPace.steady``) that does not keep pace was held back by its
    answers: behind, at its shortfall's rate. One that keeps pace is read as ``backlog_of``
    reads a run, from its middle start to its last. A run that never reaches a steady state is still
    filling its batch with sessions, which grows it with no overload: it is read by the
    requests waiting for their first token (a queue in front of the engine, or prompts it
    cannot begin), and says it cannot tell more (``unsteady_note``): its load never reached
    the offered one, and an overload up to as many times as its starts' first half is short of
    a steady run's (``SessionPace.short_by``) reads as kept up. A warm start's run is read
    from when it has settled (``SessionPace.settles_s``)."""
    if pace is None:
        return CANNOT_TELL
    if pace.steady and not pace.kept:
        short = pace.offered - pace.sent
        return Backlog(float(pace.offered / max(pace.sent, 1.0)), float(short), True)
    counts = Counts.of(sent, e2e_s, ttft_s)
    t_0, t_mid, t_last = (pace.first_s + pace.middle_s) / 2.0, pace.middle_s, pace.last_s
    if pace.steady and not math.isnan(pace.settle_s):  # warm: its first stretch once settled
        t_0 = min(max(t_0, pace.first_s + pace.settle_s), (pace.first_s + 3.0 * t_mid) / 4.0)
    if pace.steady:  # no batch still filling: the whole count tells too
        return counts.backlog(t_0, t_mid, t_last, True)
    if not len(counts.sent):
        return CANNOT_TELL
    read = counts.backlog(t_0, t_mid, t_last, False)  # the queue alone tells
    resolution = max(read.resolution, pace.short_by)
    if read.queue:
        return replace(read, resolution=resolution)
    return Backlog(resolution=resolution)


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


def overload_note(pace: SessionPace | None, backlog: Backlog) -> str:
    """The note of a run that does not keep up (``pace``: a run of sessions'): how its queue or
    its requests in the system grew, or for steady sessions that fell short of their offered
    rate, by how much (``sessions_backlog``)."""
    if pace is not None and pace.steady and not pace.kept:
        return (
            f"{OVERLOAD}: between the middle and the last session start its sessions sent "
            f"{pace.sent / pace.offered:.0%} of the requests the offered rate brings, their "
            "answers holding the next turns back"
        )
    span = "of the arrivals" if pace is None else "of the sessions' starts"
    if backlog.queue:
        pace_text = (
            f"requests arrived {backlog.rate:.3g} times as fast as it began them"
            if math.isfinite(backlog.rate)
            else "it began hardly any of the requests that arrived"
        )
        return (
            f"{OVERLOAD}: over the second half {span} the requests waiting for a first token "
            f"grew by {backlog.grown:,.0f}, past a steady queue's noise ({pace_text})"
        )
    return (
        f"{OVERLOAD}: requests in the system grew {backlog.rate:.2g}-fold over the second half "
        f"{span} (or the run is too short to fill the engine: raise requests)"
    )


def sessions_notes(pace: SessionPace | None, requests: int, instances: int = 1) -> list[str]:
    """The notes of a run of sessions: how many of its requests a warm start added (its
    sessions under way at the start, docs/model-part-e.md §E2), and ``unsteady_note``."""
    if pace is None or not pace.warm_requests:
        return unsteady_note(pace, requests, instances)
    warm = (
        f"{pace.warm_requests:,.0f} of its {requests:,} requests are sessions under way at its "
        "start, as a steady load holds them between turns and being answered (a warm start, "
        "docs/model-part-e.md §E2)"
    )
    return [warm, *unsteady_note(pace, requests, instances)]


def unsteady_note(pace: SessionPace | None, requests: int, instances: int = 1) -> list[str]:
    """A run of sessions too short to reach a steady state says so, and how many requests per
    instance it takes to reach one: its own ``requests`` (a warm start's left out) times how
    far the first half of its starts is short (``SessionPace.short_by``; of a whole warm
    start's settling where it has one), and at least what a whole warm start needs."""
    if pace is None or pace.steady:
        return []
    half = pace.middle_s - pace.first_s
    own = max(requests - pace.warm_requests, 1.0) / max(instances, 1)
    warm = not math.isnan(pace.warm_settle_s)
    if not half > 0.0:  # half the sessions start at once: no span to scale from
        need = "more requests per instance than this run's, over a longer span of starts,"
    else:
        most = own * (pace.warm_settle_s if warm else pace.session_s) / half
        if warm and pace.warm_share < 1.0:
            most = max(most, pace.warm_requests / max(pace.warm_share, 1e-9) / max(instances, 1))
        need = f"more than {most:,.0f} requests per instance"
    if warm:
        held = (
            "the sessions a steady load holds between turns"
            if pace.warm_share >= 1.0
            else f"{_share(pace.warm_share)} of the sessions a steady load holds between turns "
            "(a warm start adds at most as many requests as the run's own)"
        )
        said = (
            f"the run starts with {held} and holds its steady load only {pace.settles_s:,.0f} s "
            f"after its first start, later than the first half of its starts, {half:,.0f} s"
        )
    else:
        said = (
            f"nine sessions in ten last at least {pace.session_s:,.0f} s (their thinking "
            "between turns and the first answers' time), longer than the first half of their "
            f"starts, {half:,.0f} s: the run never holds the sessions its offered load keeps "
            "going"
        )
    return [
        f"{said}, so whether the deployment keeps up is read from the requests waiting for a "
        f"first token only (it takes {need} to reach a steady state: raise requests)"
    ]


def _share(x: float) -> str:
    """A share in per cent, "under 1%" below it (not "0%" of something held)."""
    return f"{x:.0%}" if x >= 0.01 else "under 1%"


#: A run that keeps up says it is short where an overload of more than this many times what
#: the deployment serves would still read as kept up (``Backlog.resolution``), or where its
#: longest request stays in the system longer than this share of its arrivals' span.
SHORT_RUN_RESOLUTION = 1.1
LONGEST_SHARE = 0.5


def short_run_note(requests: int, backlog: Backlog, sent=(), e2e_s=()) -> list[str]:
    """The note of a short run: its p99s rough (under 1,000 requests per instance); the
    overload it cannot tell from keeping up, where that exceeds ``SHORT_RUN_RESOLUTION``; and
    its longest request (``e2e_s`` of the requests ``sent``), where it stays in the system
    longer than ``LONGEST_SHARE`` of the served arrivals' span (the mix of long requests a
    steady run holds at once is not reached: uncapped heavy-tailed outputs, lognormal:500:1.5
    at 6.25 req/s on one H100, keep up over 10,000 requests, whose longest stays 1,045 s of
    their 1,571 s of arrivals, and serve 5.0 req/s over 100,000, p99 TTFT 4,349 s)."""
    short = ["p99 values are rough"] if requests < 1000 else []
    if not backlog.behind and backlog.resolution > SHORT_RUN_RESOLUTION:
        if math.isfinite(backlog.resolution):
            least = f"a load up to {backlog.resolution:.2g} times what the deployment serves"
        else:
            least = "a load of any size"
        short.append(f"{least} reads as kept up in a run this short")
    sent, e2e_s = np.asarray(sent, dtype=float), np.asarray(e2e_s, dtype=float)
    served = np.isfinite(sent) & np.isfinite(e2e_s)
    longest_s = float(e2e_s[served].max()) if served.any() else 0.0
    span_s = float(np.ptp(sent[served])) if served.any() else 0.0
    if longest_s > LONGEST_SHARE * span_s > 0.0:
        short.append(
            f"its longest request stays {longest_s:,.0f} s, over half its arrivals' span "
            f"({span_s:,.0f} s): the long requests a steady run holds at once are not all there"
        )
    if not short:
        return []
    return [f"only {requests} requests per instance: {', and '.join(short)} (more requests tell)"]
