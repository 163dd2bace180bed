"""Who arrives when, with how many tokens: a Poisson process or a trace file, and the requests
one engine instance of a deployment receives (docs/model.md §E2).

A trace is a CSV file with a header and one row per request:

    arrival_time_s,prompt_tokens,output_tokens
    0.000,812,240
    0.173,95,61

Rows may come in any order (they are sorted by arrival); other columns are ignored, but three
optional ones describe what prompts share (§E9): ``session_id`` (the rows of one conversation:
a row's prompt continues the previous row's prompt and answer when it is at least that long),
``prefix_id`` and ``prefix_tokens`` (a shared system prompt the prompt starts with); an id is
any text or whole number (``load.trace_file`` reads the file). A
deployment of ``K`` instances behind a load balancer that sends each request to a random
instance gives every instance a thinned stream: a Poisson process of rate ``rate / K``, or each
trace row with probability ``1 / K``. One instance is simulated; the others see statistically
the same load. Other routers, and sessions, are simulated on a group of instances at once
(``routing``).

Synthetic traffic may share prefixes too: every prompt starts with one of ``shared_prefixes``
system prompts of ``shared_prefix_tokens`` tokens, and with ``session_turns`` turns a session's
next request is sent a think time (exponential, mean ``think_time_s``) after its previous answer
and its prompt holds every earlier turn, prompts and answers; ``--prompt-tokens`` is then the
new message of each turn.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Literal, get_args

import numpy as np

from ..errors import SpecError, plural, short
from ..settings import check_each
from .lengths import Lengths, parse_lengths
from .sessions import session_rows
from .trace_file import Trace, load_trace

#: How requests arrive: a Poisson stream, or a trace file's times.
ArrivalProcess = Literal["poisson", "trace"]
PROCESSES: tuple[ArrivalProcess, ...] = get_args(ArrivalProcess)


@dataclass(frozen=True, eq=False)
class Sharing:
    """What the prompts of a stream share (§E9), one entry per request: the segments its
    prompt is made of (``((key, tokens), ...)``, the reusable ones first: a prefix the cache
    may hold), the key its answer is cached under (None: never reused), the request that
    follows it in its session (-1: none) with the think time before it is sent, and the key a
    prefix-aware router hashes (the session, else the shared prefix; -1: none). A warm start
    (``sessions.session_rows``) marks its sessions' requests (``warm``; None: none), the
    share of the steady population it holds and the seconds a turn was taken to spend being
    answered (``turn_s``: the sessions in answer it seeded)."""

    segments: tuple
    answer_keys: tuple
    follows: np.ndarray
    think_s: np.ndarray
    route_keys: np.ndarray
    warm: np.ndarray | None = None
    warm_share: float = 1.0
    turn_s: float = 0.0

    @property
    def sessions(self) -> bool:
        """Some request is sent only when an earlier one finishes."""
        return bool((self.follows >= 0).any())

    def take(self, rows: np.ndarray) -> Sharing:
        """The entries of ``rows`` (whole sessions), followers renumbered."""
        rows = np.asarray(rows, dtype=np.int64)
        where = np.full(len(self.follows), -1, dtype=np.int64)
        where[rows] = np.arange(len(rows))
        nxt = self.follows[rows]
        return Sharing(
            tuple(self.segments[r] for r in rows),
            tuple(self.answer_keys[r] for r in rows),
            np.where(nxt >= 0, where[np.maximum(nxt, 0)], -1),
            self.think_s[rows],
            self.route_keys[rows],
            None if self.warm is None else self.warm[rows],
            self.warm_share,
            self.turn_s,
        )


@dataclass(frozen=True)
class Arrivals:
    """The requests of one engine instance (or of a group of them), sorted by arrival time
    (seconds, tokens); requests sent only when an earlier one of their session finishes come
    last, with NaN arrival times (``sharing.follows``)."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    sharing: Sharing | None = None

    def __len__(self) -> int:
        return len(self.arrival_s)


#: How a closed loop's traffic is described (``Traffic.describe``; ``LoadResult.closed_loop``).
CLOSED_LOOP = "closed loop"


@dataclass(frozen=True)
class Traffic:
    """The offered load: an arrival process at a total rate, prompt and output lengths, how
    many requests to simulate and the seed. Seeded streams are reproducible, and a different
    rate scales the same arrival times (common random numbers: lengths do not change)."""

    rate_per_s: float | None = None
    input_lengths: Lengths | None = None
    output_lengths: Lengths | None = None
    trace: Trace | None = None
    process: ArrivalProcess = "poisson"
    requests: int = 10_000
    seed: int = 0
    #: Shared prefixes and sessions of synthetic traffic (module docstring, §E9).
    shared_prefix_tokens: int = 0
    shared_prefixes: int = 1
    session_turns: int = 1
    think_time_s: float = 0.0
    #: The prompts are this many distinct ones, each with its own drawn lengths, sent again in
    #: shuffled rounds (a benchmark tool's synthetic dataset: aiperf's 100 entries unless told);
    #: 0: every prompt its own. An engine's prefix cache serves a repeat without prefilling it.
    prompt_pool: int = 0
    #: A closed loop (``simulate --concurrency``): this many clients over the deployment, each
    #: sending its next request when its last one finishes; no arrival rate is offered.
    clients: int | None = None

    def __post_init__(self) -> None:
        if self.clients is not None:
            if self.rate_per_s is not None or self.trace is not None:
                raise SpecError(
                    "argument",
                    "concurrency",
                    "sets a closed loop of clients, whose requests are sent as earlier ones "
                    "finish: an arrival rate or a trace's arrival times would be ignored",
                    "give concurrency, or arrival_rate_per_s / trace",
                )
            if not _whole(self.clients, 10**9):
                raise SpecError(
                    "argument", "concurrency", f"is {short(self.clients)}", "a whole number >= 1"
                )
        if self.rate_per_s is not None and (
            isinstance(self.rate_per_s, bool) or not isinstance(self.rate_per_s, numbers.Real)
        ):
            raise SpecError(
                "argument",
                "arrival_rate_per_s",
                f"expected requests per second, got {short(self.rate_per_s)}",
                "give a number > 0",
            )
        if not isinstance(self.process, str) or self.process not in PROCESSES:
            raise SpecError(
                "argument", "arrival_process", f"unknown {self.process!r}", "poisson or trace"
            )
        if self.process == "trace" and self.trace is None:
            raise SpecError(
                "argument", "arrival_process", "'trace' needs a trace file", "give --trace"
            )
        if (
            self.process == "poisson"
            and self.clients is None
            and not (self.rate_per_s and self.rate_per_s > 0)
        ):
            raise SpecError(
                "argument", "arrival_rate_per_s", "is missing", "give --rate (requests/s)"
            )
        for name in ("input_lengths", "output_lengths"):
            lengths = getattr(self, name)
            if lengths is None and self.trace is None:
                raise SpecError(
                    "argument", name, "is missing", "give a length such as 1000 or a trace file"
                )
            if lengths is not None and lengths.kind == "trace" and self.trace is None:
                raise SpecError("argument", name, "'trace' needs a trace file", "give --trace")
        if self.prompt_pool and (
            not _whole(self.prompt_pool, 10**9) or self.process == "trace" or self.trace
        ):
            raise SpecError(
                "argument",
                "prompt_pool",
                f"is {short(self.prompt_pool)}"
                if not _whole(self.prompt_pool, 10**9)
                else "describes synthetic prompts; a trace's rows are its prompts",
                "give a whole number >= 1 of distinct prompts, or drop the trace",
            )
        if self.prompt_pool and (self.shared_prefix_tokens > 0 or self.session_turns > 1):
            raise SpecError(
                "argument",
                "prompt_pool",
                "repeats whole prompts; shared prefixes and sessions describe prompts that differ",
                "give prompt_pool alone, or the shared prefixes and sessions alone",
            )
        synthetic = self.shared_prefix_tokens > 0 or self.session_turns > 1
        if synthetic and self.process == "trace":
            raise SpecError(
                "argument",
                "shared_prefix_tokens" if self.shared_prefix_tokens else "session_turns",
                "describes synthetic traffic; a trace's rows give their own sharing",
                "add session_id, prefix_id and prefix_tokens columns to the trace, or drop it",
            )

    @property
    def _trace(self) -> Trace:
        """The trace of the "trace" process (its presence is checked when the traffic is
        made)."""
        if self.trace is None:
            raise SpecError("argument", "trace", "no trace file given", "give --trace")
        return self.trace

    @property
    def shares(self) -> bool:
        """Prompts share prefixes or belong to sessions (§E9)."""
        if self.process == "trace":
            return self._trace.shares
        return self.shared_prefix_tokens > 0 or self.session_turns > 1 or self.prompt_pool > 0

    @property
    def sessions(self) -> bool:
        """Some requests are sent only after an earlier answer (synthetic multi-turn)."""
        return self.process != "trace" and self.session_turns > 1

    @property
    def simulated_requests(self) -> int:
        """Requests one simulation serves at most: every trace row, or ``requests``."""
        return len(self._trace.arrival_s) if self.process == "trace" else int(self.requests)

    @property
    def most_simulated_requests(self) -> int:
        """Requests one simulation serves at most, a warm start's included (``sessions``: at
        most as many again, where turns are apart)."""
        warm = self.sessions and self.think_time_s > 0
        return self.simulated_requests * (2 if warm else 1)

    @property
    def offered_rate_per_s(self) -> float:
        """Total requests per second offered to the deployment (NaN for a closed loop: its
        clients send as fast as they are served)."""
        if self.rate_per_s:
            return float(self.rate_per_s)
        if self.clients is not None:
            return math.nan
        return self._trace.rate_per_s

    def at_rate(self, rate_per_s: float) -> Traffic:
        """The same traffic at another total rate (a trace's times are rescaled)."""
        return replace(self, rate_per_s=float(rate_per_s))

    def stream(
        self, instances: int = 1, group: int = 1, in_turn: bool = False, turn_s=None
    ) -> Arrivals:
        """The requests ``group`` of ``instances`` instances receive together under random
        load balancing: a Poisson stream of ``group / instances`` of the rate and ``group``
        times ``requests`` requests (whole sessions), or each trace row (each trace session)
        with that probability. ``in_turn``: one instance (``group`` 1) of ``instances`` that a
        round-robin router serves in turn receives every ``instances``-th request instead (a
        Poisson stream's gaps summed ``instances`` at a time: Erlang gaps, §E10; a trace's
        every ``instances``-th row) where no prompts share prefixes or sessions (``shares``:
        those go whole, at random, and a router needs the instances simulated together).
        ``turn_s(rate, prompt, output, context)``: an instance's seconds answering a turn at
        ``rate`` requests a second, for a warm start's sessions being answered (``sessions``)."""
        # a closed loop's clients send the requests in order: their arrival times are unused
        rate = 1.0 if self.clients is not None else self.offered_rate_per_s
        share = group / instances
        count = int(self.requests) * group
        every = instances if in_turn and group == 1 and instances > 1 and not self.shares else 1
        if (
            self.process != "trace"
            and self.trace is None
            and not (self.sessions or self.shared_prefix_tokens > 0 or self.prompt_pool)
        ):  # the draws at unit rate and the lengths: kept across rates
            unit, prompt, output = _poisson_draws(
                self.seed, count, self.input_lengths, self.output_lengths, every
            )
            return Arrivals(unit / (rate * share), prompt, output, None)
        gaps_rng, pick_rng, in_rng, out_rng = _generators(self.seed)
        if self.prompt_pool:
            return self._pooled(rate * share, count, (gaps_rng, pick_rng, in_rng, out_rng))
        if self.sessions or self.shared_prefix_tokens > 0:
            served = None  # one instance's turn time at its share of the load (``turn_s``)
            if turn_s is not None:
                served = lambda p, o, c: turn_s(rate / instances, p, o, c)  # noqa: E731
            return self._synthetic(
                rate * share,
                int(self.requests) * group,
                (gaps_rng, pick_rng, in_rng, out_rng),
                served,
            )
        rows = None
        if self.process == "trace":
            trace = self._trace
            times = trace.arrival_s - trace.arrival_s[0]
            if math.isfinite(trace.rate_per_s):
                times = times * (trace.rate_per_s / rate)
            rows = np.arange(len(times))
            if every > 1:  # every ``every``-th row, in turn
                rows = rows[::every]
            elif share < 1:  # whole sessions to a group (its router keeps them there)
                unit = trace.session_id if group > 1 else None
                rows = rows[_thin(pick_rng, len(times), share, unit)]
            times = times[rows]
        else:  # Poisson arrivals, lengths of random trace rows
            times = np.cumsum(_unit_gaps(gaps_rng, count, every)) / (rate * share)
            rows = pick_rng.integers(0, len(self._trace.arrival_s), count)
        prompt = self._lengths(self.input_lengths, "prompt_tokens", rows, in_rng, len(times))
        output = self._lengths(self.output_lengths, "output_tokens", rows, out_rng, len(times))
        sharing = None
        if self.process == "trace" and self._trace.shares:
            sharing = _trace_sharing(self._trace, rows, prompt, output)
        return Arrivals(np.asarray(times, dtype=float), prompt, output, sharing)

    def _pooled(self, rate: float, count: int, rngs) -> Arrivals:
        """Requests whose prompts (and output lengths) are the pool's entries, in shuffled
        rounds as aiperf samples its synthetic dataset; each prompt is one segment keyed by its
        entry, so the prefix cache serves its repeats (but the last token, §E9), and a
        prefix-aware router sends them where it was cached."""
        gaps_rng, pick_rng, in_rng, out_rng = rngs
        pool = min(int(self.prompt_pool), count)  # a larger pool's extra prompts are never sent
        prompts = self._lengths(self.input_lengths, "prompt_tokens", None, in_rng, pool)
        outputs = self._lengths(self.output_lengths, "output_tokens", None, out_rng, pool)
        rounds = -(-count // pool)
        entry = np.concatenate([pick_rng.permutation(pool) for _ in range(rounds)])[:count]
        times = np.cumsum(_unit_gaps(gaps_rng, count, 1)) / rate
        prompt, output = prompts[entry], outputs[entry]
        sharing = Sharing(
            tuple(((("d", k), n),) for k, n in zip(entry.tolist(), prompt.tolist())),
            (None,) * count,
            np.full(count, -1, dtype=np.int64),
            np.zeros(count),
            entry.astype(np.int64),
        )
        return Arrivals(times, prompt, output, sharing)

    def _synthetic(self, rate: float, count: int, rngs, turn_s=None) -> Arrivals:
        """Synthetic shared prefixes and sessions (module docstring, ``sessions``): sessions
        start as a Poisson process of ``rate / session_turns``, with the sessions a steady
        state holds between turns at time zero where turns are apart; the first turns come
        first in the stream, by arrival, the later turns after them (sent when the turn before
        finishes)."""
        gaps_rng, pick_rng, in_rng, out_rng = rngs
        turns = int(self.session_turns)

        def fresh(sessions: int) -> tuple:
            n = sessions * turns
            starts = np.cumsum(gaps_rng.exponential(1.0, sessions)) / (rate / turns)
            rows = (
                None if self.trace is None else pick_rng.integers(0, len(self.trace.arrival_s), n)
            )
            new = self._lengths(self.input_lengths, "prompt_tokens", rows, in_rng, n)
            out = self._lengths(self.output_lengths, "output_tokens", rows, out_rng, n)
            prefix = pick_rng.integers(0, max(int(self.shared_prefixes), 1), sessions)
            think = gaps_rng.exponential(1.0, n) * float(self.think_time_s)
            shape = (turns, sessions)
            return starts, new.reshape(shape), out.reshape(shape), prefix, think.reshape(shape)

        def draw(column: str, rng, n: int) -> np.ndarray:
            # trace rows of one stream for both columns: a turn's prompt and answer stay paired
            pick = np.random.default_rng(np.random.SeedSequence(self.seed).spawn(6)[5])
            rows = None if self.trace is None else pick.integers(0, len(self.trace.arrival_s), n)
            lengths = self.input_lengths if column == "prompt_tokens" else self.output_lengths
            return self._lengths(lengths, column, rows, rng, n)

        made = session_rows(
            rate, count, turns, float(self.think_time_s), int(self.shared_prefix_tokens),
            int(self.shared_prefixes), int(self.seed), fresh, draw, turn_s,
        )  # fmt: skip
        sharing = Sharing(
            made.segments,
            made.answers,
            made.follows,
            made.think_s,
            made.route_keys,
            made.warm if made.warm.any() else None,
            made.warm_share,
            made.turn_s,
        )
        return Arrivals(made.arrival_s, made.prompt_tokens, made.output_tokens, sharing)

    def _lengths(self, lengths: Lengths | None, column: str, rows, rng, count: int):
        """The trace rows' own lengths (no distribution, or ``trace``: prompt and output of a
        request stay paired), else lengths drawn from the distribution."""
        if lengths is None or lengths.kind == "trace":
            return np.asarray(getattr(self.trace, column)[rows], dtype=np.int64)
        return lengths.draw(rng, count)

    @property
    def input_notes(self) -> tuple[str, ...]:
        """What a result of this traffic must say about its input: the trace rows left out
        (unreadable), which change the load."""
        skipped = self.trace.left_out if self.trace is not None else None
        return (skipped.note(),) if skipped else ()

    def describe(self, with_rate: bool = True) -> str:
        """The traffic in words (arrivals, prompt and output lengths)."""
        if self.process == "trace":
            name = Path(self._trace.path).name
            offered = self.offered_rate_per_s
            rate = (
                ""
                if not with_rate
                else f", {offered:.4g} req/s"
                if math.isfinite(offered)
                else ", all at once"
            )
            arrivals = f"arrivals of trace {name}{rate}"
        elif self.clients is not None:
            arrivals = f"{CLOSED_LOOP} of {self.clients} {plural(self.clients, 'client')}"
        else:
            arrivals = (
                f"Poisson arrivals, {self.rate_per_s:.4g} req/s"
                if with_rate
                else "Poisson arrivals"
            )
        prompt = self.input_lengths.describe() if self.input_lengths else "from the trace"
        output = self.output_lengths.describe() if self.output_lengths else "from the trace"
        shared = ""
        if self.shared_prefix_tokens:
            which = (
                f"one of {self.shared_prefixes} system prompts"
                if self.shared_prefixes > 1
                else "a system prompt"
            )
            shared = f"; every prompt starts with {which} of {self.shared_prefix_tokens} tokens"
        if self.session_turns > 1:
            think = (
                f", each sent {self.think_time_s:g} s (mean, exponential) after the answer before it"
                if self.think_time_s
                else ", each sent as the answer before it ends"
            )
            shared += (
                f"; sessions of {self.session_turns} turns whose prompts hold every earlier "
                f"turn{think}; prompt lengths are each turn's new message"
            )
        if self.prompt_pool:
            shared = f"; prompts drawn from {self.prompt_pool} distinct ones, each sent again"
        if self.process == "trace" and self._trace.shares:
            shared = "; sessions and shared prefixes from the trace's columns"
        return f"{arrivals}; prompts {prompt}; outputs {output}{shared}"


def make_traffic(
    rate_per_s=None,
    input_lengths=None,
    output_lengths=None,
    trace=None,
    process=None,
    requests: int = 10_000,
    seed: int = 0,
    shared_prefix_tokens=None,
    shared_prefixes=None,
    session_turns=None,
    think_time_s=None,
    concurrency=None,
) -> Traffic:
    """A ``Traffic`` from plain values: lengths as text (``lengths.parse_lengths``), a trace as a
    path; the arrival process defaults to the trace's when a trace is given, else Poisson.

    Parameters
    ----------
    rate_per_s : float or None
        Total requests per second (a trace's own rate when None).
    input_lengths, output_lengths : str or None
        Prompt and output lengths: "1000", "uniform:500:1500", "lognormal:1000:0.8[:cap]" or
        "trace" (the trace's own).
    trace : str or path or None
        A trace CSV (``load_trace``).
    process : {"poisson", "trace"} or None
        How requests arrive (None: the trace's times when a trace is given, else Poisson).
    requests : int
        Requests one simulation serves (synthetic arrivals).
    seed : int
        Seed of every random draw.
    shared_prefix_tokens, shared_prefixes : int or None
        A system prompt of that many tokens, one of that many distinct ones (§E9).
    session_turns : int or None
        Turns per session: each prompt holds the earlier turns (§E9).
    think_time_s : float or None
        Mean seconds between an answer and the next turn.
    concurrency : int or None
        A closed loop of that many clients instead of arrivals: each sends its next request
        when its last one finishes.

    Returns
    -------
    Traffic
        The checked traffic.

    Raises
    ------
    SpecError
        A length that does not parse, an unreadable trace, or options that contradict.

    Examples
    --------
    >>> import inference_econ as ie
    >>> t = ie.make_traffic(rate_per_s=2, input_lengths="lognormal:1000:0.8", output_lengths="256")
    >>> t.describe()
    'Poisson arrivals, 2 req/s; prompts log-normal (mean 1000 tokens, sigma 0.8); outputs 256 tokens'
    """
    requests, seed = _checked(requests, seed, rate_per_s, concurrency, think_time_s, process)
    _sessions(shared_prefix_tokens, shared_prefixes, session_turns)
    tr = load_trace(trace) if trace is not None else None
    return Traffic(
        rate_per_s=None if rate_per_s is None else float(rate_per_s),
        input_lengths=_parsed(input_lengths, "input_lengths"),
        output_lengths=_parsed(output_lengths, "output_lengths"),
        trace=tr,
        process=process or ("trace" if tr is not None else "poisson"),
        requests=int(requests),
        seed=int(seed),
        shared_prefix_tokens=int(shared_prefix_tokens or 0),
        shared_prefixes=int(shared_prefixes or 1),
        session_turns=int(session_turns or 1),
        think_time_s=float(think_time_s or 0.0),
        clients=None if concurrency is None else int(concurrency),
    )


def _sessions(shared_prefix_tokens, shared_prefixes, session_turns) -> None:
    """The shared prompts and session turns, checked by their settings' rows where given."""
    given = {
        "shared_prefix_tokens": shared_prefix_tokens,
        "shared_prefixes": shared_prefixes,
        "session_turns": session_turns,
    }
    check_each({k: v for k, v in given.items() if v is not None})


def _checked(requests, seed, rate_per_s, concurrency, think_time_s, process) -> tuple:
    """The requests and seed, once a closed loop is checked to name no arrival process and
    every number given is checked by its setting's row (a Python caller's seed 'x' or
    requests -5 is refused as the command line refuses it)."""
    if concurrency is not None and process is not None:
        raise SpecError(
            "argument",
            "arrival_process",
            "sets arrival times; a closed loop's clients send as earlier requests finish",
            "drop arrival_process, or concurrency",
        )
    for name, value in (("requests", requests), ("seed", seed)):
        if value is None:
            raise SpecError("argument", name, "is None", "give a whole number, or leave it out")
    given = {"requests": requests, "seed": seed, "arrival_rate_per_s": rate_per_s}
    given |= {"concurrency": concurrency, "think_time_s": think_time_s}
    checked = check_each({k: v for k, v in given.items() if v is not None})
    return checked.get("requests", requests), checked.get("seed", seed)


def _whole(value, most: int) -> bool:
    """Whether ``value`` is a whole number from 1 to ``most`` (4 and 4.0; not True, NaN or
    10**400, whose float would overflow)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    if not isinstance(value, numbers.Integral) and not math.isfinite(float(value)):
        return False
    number = float(value) if not isinstance(value, numbers.Integral) else int(value)
    return 1 <= number <= most and int(number) == number


def _parsed(text, name: str) -> Lengths | None:
    """The lengths a text gives (``lengths.parse_lengths``); None where none is given."""
    return None if text is None else parse_lengths(text, "argument", name)


def _generators(seed: int) -> tuple[np.random.Generator, ...]:
    """The four independent streams of a traffic's draws: arrival gaps, picks (trace rows,
    shared prefixes), prompt lengths and output lengths."""
    return tuple(np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4))


@lru_cache(maxsize=64)
def _poisson_draws(
    seed: int, count: int, input_lengths: Lengths, output_lengths: Lengths, every: int = 1
):
    """(arrival times at a total rate of one request per second, prompt and output lengths) of
    ``Traffic.stream``'s Poisson requests without a trace, the same draws whatever the rate:
    a load search simulates one traffic at many rates, and drawing its lengths (a truncated
    log-normal's inverse CDF) cost more than a short run. ``every``: every ``every``-th request
    of a Poisson stream (``_unit_gaps``). The arrays are read-only."""
    gaps_rng, _, in_rng, out_rng = _generators(seed)
    unit = np.cumsum(_unit_gaps(gaps_rng, count, every))
    prompt = input_lengths.draw(in_rng, count)
    output = output_lengths.draw(out_rng, count)
    for a in (unit, prompt, output):
        a.flags.writeable = False
    return unit, prompt, output


def _unit_gaps(rng: np.random.Generator, count: int, every: int) -> np.ndarray:
    """``count`` gaps of mean one between a Poisson stream's requests, or between its every
    ``every``-th requests (a round-robin router's instance): the sum of ``every`` exponential
    gaps of mean ``1 / every``, an Erlang (gamma) gap of shape ``every``."""
    if every == 1:
        return rng.exponential(1.0, count)
    return rng.gamma(float(every), 1.0 / every, count)


def _thin(rng: np.random.Generator, n: int, share: float, unit=None) -> np.ndarray:
    """Rows kept with probability ``share``: each row alone, or whole sessions (``unit``:
    each row's session, -1 for a row of none)."""
    if unit is None:
        return rng.random(n) < share
    units = np.where(unit >= 0, unit, -1 - np.arange(n))
    _, inverse = np.unique(units, return_inverse=True)
    return (rng.random(int(inverse.max()) + 1) < share)[inverse]


def _trace_sharing(trace: Trace, rows, prompt, output) -> Sharing:
    """The segments of a trace's rows (module docstring): a row of a session continues the
    session's previous row, its prompt and its answer, when its prompt holds both and at
    least one token more; otherwise it starts again from its shared prefix."""
    n = len(rows)
    sid = trace.session_id[rows] if trace.session_id is not None else np.full(n, -1)
    pid = trace.prefix_id[rows] if trace.prefix_id is not None else np.full(n, -1)
    ptok = trace.prefix_tokens[rows] if trace.prefix_tokens is not None else np.zeros(n)
    last: dict = {}
    segments, answers = [], []
    for k in range(n):
        p, o, s = int(prompt[k]), int(output[k]), int(sid[k])
        head = int(min(ptok[k], p)) if pid[k] >= 0 else 0
        base = [(("p", int(pid[k])), head)] if head else []
        prev = last.get(s) if s >= 0 else None
        if prev is not None and p - prev[1] - prev[2] >= 1:
            chain, pp, po, turn = prev
            turn += 1
            segs = chain + [(("a", s, turn - 1), po), (("u", s, turn), p - pp - po)]
        else:
            turn = 0 if prev is None else prev[3] + 1
            segs = base + ([(("u", s, turn), p - head)] if s >= 0 and p > head else [])
        if s >= 0:
            last[s] = (segs, p, o, turn)
        segments.append(tuple(segs))
        answers.append(("a", s, turn) if s >= 0 else None)
    keys = np.where(sid >= 0, sid, pid)
    return Sharing(
        tuple(segments),
        tuple(answers),
        np.full(n, -1, dtype=np.int64),
        np.zeros(n),
        np.asarray(keys, dtype=np.int64),
    )
