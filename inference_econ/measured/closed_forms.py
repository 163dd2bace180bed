"""The steady rows of a measured file as closed forms of step times (docs/model.md §F9): the
``Plan`` of every row's candidate steps, grouped by step model and layout and evaluated as
arrays; the batch a saturated engine settles at; and each metric (throughput, latency, speed)
from a point's step times, reduced to the best layout of each row. Calibration re-times the
same steps under other efficiency terms without rebuilding them. A candidate layout (``cand``)
and a row's engine on it (``found``) are ``predicting``'s ``Candidate`` and ``RowEngine``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ..load.layout_choice import busiest_rank_tokens
from ..load.prefix_cache import skipped_tokens
from ..load.scheduling import PREFILL
from ..model.efficiency import StepWork, concatenate
from ..model.latency import StepModel
from ..model.mixed_step import EngineLayout, graph_batch, mixed_step_s, mixed_step_work
from .metric_names import Metric
from .reading import MeasuredRow
from .replay import CLOSED_LOOP_QUANTITIES

if TYPE_CHECKING:
    from ..model.assumptions import Assumptions


#: Scenarios simulated on the load engine; the others are steady states.
LOADED = ("server", "interactive", "closed_loop")


@dataclass
class StepGroup:
    """Steps of one step model and layout, evaluated together."""

    model: StepModel
    prefill: object
    layout: EngineLayout
    D: list = field(default_factory=list)
    n: list = field(default_factory=list)
    P: list = field(default_factory=list)
    c: list = field(default_factory=list)
    R: list = field(default_factory=list)
    index: int = 0
    offset: int = 0

    seen: dict = field(default_factory=dict)

    def add(self, D, n, P, c, R) -> tuple[int, int]:
        """The step (group index, index in the group), each distinct step once."""
        key = (float(D), float(n), float(P), float(c), float(R))
        if key not in self.seen:
            self.seen[key] = len(self.D)
            self.D.append(D)
            self.n.append(n)
            self.P.append(P)
            self.c.append(c)
            self.R.append(R)
        return (self.index, self.seen[key])

    def arrays(self):
        return tuple(np.asarray(x, dtype=float) for x in (self.D, self.n, self.P, self.c, self.R))


@dataclass
class Plan:
    """Every predictable row's candidate steps (steady rows) or simulated cases (rows under
    load), and how its metric follows from them."""

    rows: list
    assumptions: Assumptions
    groups: list = field(default_factory=list)
    #: Per point: (row index, candidate index, batch, replicas, step a, weight a, step b,
    #: weight b, grid position); steps as (group index, index in the group).
    points: list = field(default_factory=list)
    candidates: dict = field(default_factory=dict)  # (row index, candidate index) -> Candidate
    engines: dict = field(default_factory=dict)  # row index -> RowEngine
    #: (row index, candidate index) -> replay.LoadCase: the pairs simulated on the load engine.
    load: dict = field(default_factory=dict)
    infeasible: dict = field(default_factory=dict)  # row index -> reason
    #: (row index, candidate index) -> requests the cache holds at once, of a closed loop's
    #: more clients: its per-token latencies depend on that count (``QUEUED``).
    queued: dict = field(default_factory=dict)
    #: (row index, candidate index) -> an MLPerf Offline row's steady state's factor in the fit
    #: (``replay.drain_factor``: LoadGen's whole run over the saturated rate, simulated once).
    drain: dict = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        return sum(len(g.D) for g in self.groups)

    def step_seconds(self) -> np.ndarray:
        """Seconds of every step under the plan's assumptions."""
        out = np.empty(self.n_steps)
        for g in self.groups:
            D, n, P, c, R = g.arrays()
            out[g.offset : g.offset + len(D)] = mixed_step_s(
                g.model, g.prefill, g.layout, D, n, P, c, R
            )
        return out

    def step_work(self) -> StepWork:
        """Every step's ``StepWork`` (achievable assumptions), concatenated in step order."""
        works = []
        for g in self.groups:
            D, n, P, c, R = g.arrays()
            works.append(mixed_step_work(g.model, g.prefill, g.layout, D, n, P, c, R))
        return concatenate(works)

    def step_profiles(self) -> list:
        """The engine profile of every step (None: the ideal engine)."""
        out = []
        for g in self.groups:
            out += [g.model.profile] * len(g.D)
        return out

    def step_engines(self) -> list:
        """The engine profile name of every step (for per-engine terms in calibration)."""
        out = []
        for g in self.groups:
            name = g.model.profile.name if g.model.profile is not None else ""
            out += [name] * len(g.D)
        return out


def requests_held(model: StepModel, row: MeasuredRow, cand, context=None) -> float:
    """Requests one instance holds at a context (default: the row's mean decode context, the
    time-weighted context of a running request; §F8)."""
    ctx = row.lengths.decode_context if context is None else context
    per_request = float(model.work.kv_held_bytes(ctx, 1.0))
    room = float(
        model.kv_capacity_bytes(float(cand.gpus), float(cand.attention_ranks), cand.pipeline)
    )
    return room / per_request if per_request > 0 else math.inf


def split_heads(row: MeasuredRow, cand) -> str:
    """Why a layout cannot run a row: its attention's tensor degree is past the model's query
    heads (each GPU would hold less than one; vLLM, SGLang and TensorRT-LLM refuse it)."""
    degree, heads = cand.tensor // cand.attention_ranks, row.arch.attention.query_heads
    return (
        f"infeasible: {cand.label()} splits {row.arch.name}'s {heads} attention heads over "
        f"{degree:,} GPUs, less than one each"
    )


def no_room(row: MeasuredRow, model: StepModel, cand) -> str:
    """Why a layout holds not one of a row's requests: a request past the model's context
    window (what the engines refuse first), else the weights leaving too little memory."""
    L, window = row.lengths, row.arch.max_context_tokens
    tokens = L.input_mean + L.output_mean
    if window is not None and tokens > window:
        return (
            f"infeasible: a request of {tokens:,.0f} tokens (prompt and output) is past "
            f"{row.arch.name}'s context window of {window:,} tokens"
        )
    gb = model.weights_total_bytes / 1e9
    return f"infeasible: {gb:.0f} GB of weights leave no room for the KV cache on {cand.label()}"


def _steady_batch(model, row, cand, found) -> float:
    """The batch a saturated engine settles at: its batch limit, or what the KV cache holds -
    at the time-weighted decode context (recompute admission, and the ideal engine), or of
    whole requests, prompt and output, weighted by their time in the batch (no_evict
    admission: E[(n_in + n_out)·n_out]/E[n_out] = 2·decode_context − n_in) - or what the
    step token budget sustains (``budget_batch``)."""
    L = row.lengths
    n_in = prefilled(row, found).input_mean
    if found.config.admission == "no_evict":
        held = requests_held(model, row, cand, 2.0 * L.decode_context - L.input_mean)
    else:
        held = requests_held(model, row, cand)
    budget = budget_batch(
        float(found.config.step_token_budget),
        n_in,
        L.output_mean,
        not PREFILL[found.config.prefill].separate and not row.disaggregated,
    )
    return min(held, float(found.config.max_batch_requests), budget)


def prefilled(row: MeasuredRow, found):
    """The lengths whose prompt part a steady run prefills: the row's own, or where its
    prompts repeat (``distinct_prompts``) on an engine that caches prefixes, what the cache
    cannot serve: a prompt's last block (whole blocks hit, never the last token, §E9), those
    tokens attending to the whole prompt before them, and each prompt whole the first time
    it is sent - a share ``distinct_prompts / requests`` of the run's requests where the row
    gives its count, as the replay sends them; none under the ideal engine (the bound takes the
    cache warm, as a warm-up leaves it). The decode context and the KV cache stay the whole
    prompt's."""
    L = row.lengths
    if not L.distinct_prompts or found is None or not found.config.prefix_caching:
        return L
    n = float(L.input_mean)
    rest = n - skipped_tokens(n, n)
    first = min(1.0, L.distinct_prompts / L.issued) if found.profile and L.issued else 0.0
    tokens = first * n + (1.0 - first) * rest
    attended = first * n * L.prefill_context + (1.0 - first) * rest * max(n - rest / 2.0, 0.5)
    return replace(L, input_mean=tokens, prefill_context=attended / tokens)


def budget_batch(budget: float, n_in: float, n_out: float, mixed: bool) -> float:
    """The most requests a saturated engine keeps decoding when every step holds at most
    ``budget`` tokens (docs/model.md §F9). A step's budget counts its decoding requests' tokens
    as well as its prompt tokens (TensorRT-LLM's ``max_num_tokens``, vLLM's
    ``max_num_batched_tokens``), so where prompts share the steps (``mixed``: whole or chunked
    prefill) ``D`` decoding requests, finishing D/n_out a step, need D·n_in/n_out prompt tokens a
    step beside their own D: D·(n_out + n_in)/n_out <= budget, the load engine's steady bound
    (``load/engine.py``, ``steady_step_s``). Prompts in steps of their own (or
    prefilled elsewhere): D <= budget."""
    if not mixed:
        return budget
    return budget * max(n_out, 1.0) / (max(n_out, 1.0) + n_in)


def exact_steady_state(model, row, cand, found) -> bool:
    """Whether an offline row's steady state is exact: nothing is ever preempted (the ideal
    engine's fluid bound, no_evict admission, or a batch limit the KV cache never reaches)."""
    if found.profile is None or found.config.admission == "no_evict":
        return True
    return requests_held(model, row, cand) >= found.config.max_batch_requests


def add_points(plan: Plan, g: StepGroup, i: int, j: int, row, cand, model, found) -> bool:
    """The points of one steady row and candidate layout (``found``: the row's engine on it);
    False if it cannot serve it."""
    config = found.config
    budget = float(config.step_token_budget)
    L = row.lengths
    s = row.scenario
    q = row.metric.quantity
    if s == "single":
        a = g.add(0.0, 0.0, L.input_mean, 0.0, 1.0)
        plan.points.append((i, j, 1.0, 1, a, 1.0, a, 0.0, 0))
        return True
    if s == "static":
        B = row.concurrency / cand.replicas
        if B * model.work.kv_bytes_per_token * (L.input_mean + L.output_mean) > float(
            model.kv_capacity_bytes(float(cand.gpus), float(cand.attention_ranks), cand.pipeline)
        ):
            plan.infeasible.setdefault(
                i, f"infeasible: a static batch of {B:g} does not fit {cand.label()}"
            )
            return False
        a = g.add(0.0, 0.0, B * L.input_mean, 0.0, B)
        b = _decode_only(g, B, L.input_mean + L.output_mean / 2.0, cand, found)
        plan.points.append((i, j, B, cand.replicas, a, 1.0, b, max(L.output_mean - 1.0, 0.0), 0))
        return True
    top = _steady_batch(model, row, cand, found)
    if s == "closed_loop":
        clients = row.concurrency / cand.replicas
        B = min(clients, top)
        if top < clients:  # the rest wait: latencies depend on how many the cache holds
            plan.queued[(i, j)] = B * cand.replicas
        users = B if q == "throughput" else max(B - 1.0, 0.0)
        _mean_step(plan, g, i, j, row, cand, B, users, budget, found)
        return True
    _mean_step(plan, g, i, j, row, cand, top, top, budget, found)  # offline
    return True


def _mean_step(plan, g: StepGroup, i, j, row, cand, B, users, budget, found) -> None:
    """A point whose time is the mean step of ``B`` decoding requests while the prompts of
    ``users`` arriving requests are prefilled (§F9): prompts per step users/n_out, in chunks
    of min(n_in, budget - B) tokens, what the budget leaves beside the decoding requests
    (whole prompts under ``whole``); fewer than one chunk a step is a mixture of decode-only
    steps and steps with one chunk. Under ``separate`` prefill the prompts run in steps of
    their own, as many whole prompts as the budget holds, while decoding waits
    (``chunked_separate``: their chunks fill the budget; with attention ranks that schedule
    their own requests, the ranks' steps below, each rank's requests waiting out its own).
    Disaggregated rows prefill elsewhere. ``found``: the row's engine on the layout (its
    prompt scheduling, and whether its attention ranks schedule their own)."""
    mode = found.config.prefill
    L = prefilled(row, found)
    if row.disaggregated:
        users = 0.0
    n = L.decode_context
    prompts = users / L.output_mean  # prompts arriving per decode step
    ranks = _scheduling_ranks(cand, found)
    if PREFILL[mode].separate and ranks == 1:
        k = budget / L.input_mean  # prompts per prefill step (whole, or chunks of a longer one)
        if mode == "separate":  # whole prompts: as many as the budget holds
            k = max(1.0, math.floor(k)) if k >= 1.0 else k
            pieces = max(k, 1.0)
        else:  # chunks filling the budget: a prompt boundary in every 1/k of a step, one more
            pieces = k + 1.0
        a = _decode_only(g, B, n, cand, found)
        chunk = min(L.input_mean, budget)
        prefix = max(0.0, L.prefill_context - (chunk - 1.0) / 2.0)
        b = g.add(0.0, 0.0, k * L.input_mean, prefix, pieces)
        plan.points.append((i, j, B, cand.replicas, a, 1.0, b, prompts / k, 0))
        return
    # whole prompts, or chunks of what the budget leaves beside the decoding requests; ranks
    # that schedule their own requests each take chunks within their own share of it
    room = budget - B if mode == "chunked" and not row.disaggregated else budget
    chunk = min(L.input_mean, max(room / ranks, 1.0))
    prefix = max(0.0, L.prefill_context - (chunk - 1.0) / 2.0)
    tokens = prompts * L.input_mean  # prompt tokens per step on average
    if ranks > 1:  # §F9 "Attention DP": the busiest rank's prompt work, on every rank
        # where prompts run first, a rank's requests wait out its own prompt steps (the other
        # ranks decode in them), each its share of the budget filled: 1 + q steps a token
        waits = 1.0 + tokens / room if PREFILL[mode].separate else 1.0
        tokens = float(busiest_rank_tokens(np.array([prompts]), L.input_mean, chunk, ranks)[0])
        if tokens < ranks * chunk:  # a share of the steps has one chunk on every rank
            a = _decode_only(g, B, n, cand, found)
            b = g.add(B, n, ranks * chunk, prefix, float(ranks))
            share = tokens / (ranks * chunk)
            plan.points.append(
                (i, j, B, cand.replicas, a, waits * (1 - share), b, waits * share, 0)
            )
            return
        chunks = tokens / chunk
        a = g.add(B, n, tokens, prefix, chunks)
        plan.points.append((i, j, B, cand.replicas, a, waits, a, 0.0, 0))
        return
    chunks = tokens / chunk
    if chunks >= 1.0:
        a = g.add(B, n, tokens, prefix, chunks)
        plan.points.append((i, j, B, cand.replicas, a, 1.0, a, 0.0, 0))
        return
    a = _decode_only(g, B, n, cand, found)
    b = g.add(B, n, chunk, prefix, 1.0)
    plan.points.append((i, j, B, cand.replicas, a, 1.0 - chunks, b, chunks, 0))


def _decode_only(g: StepGroup, B: float, n: float, cand, found) -> tuple[int, int]:
    """The decode-only step of ``B`` requests at mean context ``n``: as its CUDA graph runs it
    where the engine pads to captured graphs (§F5 "CUDA-graph padding", ``graph_batch``), the
    padded requests' tokens and per-request work with the ``B`` requests' KV reads."""
    if found is not None and found.config.graph_batch_sizes:  # only an engine profile's
        ranks = int(cand.attention_ranks) if cand.attention_dp else 1
        padded = graph_batch(B, found.config.captured_graphs(ranks), ranks)
        if padded > B:
            return g.add(padded, n * B / padded, 0.0, 0.0, 0.0)
    return g.add(B, n, 0.0, 0.0, 0.0)


def _scheduling_ranks(cand, found) -> int:
    """The attention ranks of a candidate that schedule their own requests under its engine
    (§F9 "Attention DP": an engine profile, data-parallel attention, ``rank_scheduling``); 1
    where the instance pools them (the ideal engine of the bound presets)."""
    if found is None or found.profile is None or not cand.attention_dp:
        return 1
    return int(cand.attention_ranks) if found.config.rank_scheduling else 1


# --- from step times to metrics ---------------------------------------------------------------


@dataclass(frozen=True)
class Points:
    """The plan's points as arrays, with the (row, layout) pairs and rows they belong to
    (consecutive), so metrics are array arithmetic with an optional leading trial axis."""

    row: np.ndarray
    cand: np.ndarray
    batch: np.ndarray
    replicas: np.ndarray
    a: np.ndarray
    wa: np.ndarray
    b: np.ndarray
    wb: np.ndarray
    grid: np.ndarray
    pair_start: np.ndarray  # first point of every (row, layout) pair
    pair_row: np.ndarray
    pair_cand: np.ndarray
    row_start: np.ndarray  # first pair of every row with pairs
    rows: np.ndarray  # the row index of every entry of row_start
    #: Each point's throughput factor for its run's drain (``Plan.drain``; 1: none).
    drain: np.ndarray | None = None

    @classmethod
    def of(cls, plan: Plan) -> Points:
        offsets = [g.offset for g in plan.groups]
        cols = list(zip(*plan.points)) if plan.points else [()] * 9
        row, cand, batch, reps, a, wa, b, wb, grid = cols
        glob = lambda steps: np.array([offsets[gi] + k for gi, k in steps], dtype=int)  # noqa: E731
        row = np.asarray(row, dtype=int)
        cand = np.asarray(cand, dtype=int)
        new_pair = np.ones(len(row), dtype=bool)
        new_pair[1:] = (row[1:] != row[:-1]) | (cand[1:] != cand[:-1])
        pair_start = np.flatnonzero(new_pair)
        pair_row = row[pair_start]
        new_row = np.ones(len(pair_row), dtype=bool)
        new_row[1:] = pair_row[1:] != pair_row[:-1]
        row_start = np.flatnonzero(new_row)
        return cls(
            row,
            cand,
            np.asarray(batch, float),
            np.asarray(reps, float),
            glob(a),
            np.asarray(wa, float),
            glob(b),
            np.asarray(wb, float),
            np.asarray(grid, int),
            pair_start,
            pair_row,
            cand[pair_start],
            row_start,
            pair_row[row_start],
            np.array([plan.drain.get((i, j), 1.0) for i, j in zip(row, cand)], dtype=float),
        )


def row_arrays(plan: Plan, pts: Points):
    """Per point: the per-GPU divisor and the output length of its row."""
    rows = [plan.rows[i] for i in pts.row]
    per_gpu = np.array([r.per_count for r in rows], float)
    n_out = np.array([r.lengths.output_mean for r in rows], float)
    return per_gpu, n_out


def metrics(plan: Plan, pts: Points, seconds):
    """(value, score) per (row, layout) pair of the steady rows: the row's predicted metric
    and what the operator maximises (throughput, or minus the latency). ``seconds``: step
    times, 1-D or trials x steps."""
    S = np.asarray(seconds, dtype=float)
    t = pts.wa * S[..., pts.a] + pts.wb * S[..., pts.b]
    per_gpu, n_out = _cached_rows(plan, pts)
    value = np.full(t.shape, np.nan)
    score = np.full(t.shape, -np.inf)
    for code, idx in _code_points(plan, pts).items():
        ti = t[..., idx]
        thr = pts.replicas[idx] * pts.batch[idx] / ti
        kind = STEADY_KINDS.get(code)
        if kind is None:
            continue
        if kind == "throughput":
            val, sc = thr, thr
            if pts.drain is not None:
                val = thr * pts.drain[idx]
        elif kind == "streams":
            val, sc = pts.replicas[idx] * pts.batch[idx] + 0.0 * ti, thr
        elif kind == "time":
            val, sc = ti, -ti
        elif kind == "speed":
            val, sc = 1.0 / ti, 1.0 / ti
        else:  # static batch: B·n_out tokens per pass of prefill and decode
            val = thr * n_out[idx]
            sc = val
        value[..., idx] = val
        score[..., idx] = sc
    value = value / per_gpu
    return _reduce_pairs(pts, value, score)


#: How each steady (scenario, quantity) follows from a point's time.
STEADY_KINDS = {
    "offline|throughput": "throughput",
    "offline|streams": "streams",
    "closed_loop|throughput": "throughput",
    "closed_loop|itl": "time",
    "closed_loop|tpot": "time",
    "closed_loop|user_speed": "speed",
    "static|throughput": "static",
    "single|ttft_single": "time",
    "single|ttft": "time",
}


def _code_points(plan: Plan, pts: Points) -> dict:
    key = ("code_points", id(pts))
    memo = plan.__dict__.setdefault("_memo", {})
    if key not in memo:
        codes = np.array(
            [f"{plan.rows[i].scenario}|{plan.rows[i].metric.quantity}" for i in pts.row]
        )
        memo[key] = {c: np.flatnonzero(codes == c) for c in np.unique(codes)}
    return memo[key]


#: What the load engine's runs measure, by quantity (``replay.Outcome.value``).
LOAD_QUANTITIES = (
    "throughput",
    "tpot",
    "tpot_p99",
    "itl",
    "ttft",
    "ttft_p99",
    "user_speed",
    "streams",
)


def ttft_of(row: MeasuredRow) -> bool:
    """Whether the row measures a time to first token (mean or a percentile), alone or within
    an end-to-end latency."""
    return row.metric.quantity in ("ttft", "ttft_p99", *CLOSED_LOOP_QUANTITIES)


#: Rates the model gives from a run's output rate and its mean lengths: requests, input
#: tokens, and input and output tokens a second, each per output token of one request.
DERIVED = ("request_throughput", "input_throughput", "total_throughput")
DERIVED_RATES = dict(
    zip(
        DERIVED,
        (
            lambda n_in, n_out: 1.0 / n_out,
            lambda n_in, n_out: n_in / n_out,
            lambda n_in, n_out: (n_in + n_out) / n_out,
        ),
    )
)


def output_rate_twin(row: MeasuredRow) -> tuple[MeasuredRow, float] | None:
    """A requests, input or total rate's row asked as its run's output rate (the same row,
    metric "throughput") and the factor that turns that rate back into the row's, from the mean
    lengths it states; None for any other row, a rate whose output rate is not predicted
    either, or lengths under one token (a ratio of them is no run's)."""
    rate = DERIVED_RATES.get(row.metric.quantity) if row.metric is not None else None
    lengths = row.lengths
    if rate is None or row.kind != "end-to-end" or not row.resolved or lengths is None:
        return None
    n_in, n_out = lengths.input_mean, lengths.output_mean
    if not (math.isfinite(n_in) and math.isfinite(n_out) and n_out >= 1.0):
        return None
    if row.metric.quantity != "request_throughput" and n_in < 1.0:
        return None
    twin = replace(row, metric=Metric("throughput", row.metric.per))
    if not predictable(twin) or predictable(row):
        return None
    return twin, rate(n_in, n_out)


def offline_latency(row: MeasuredRow) -> bool:
    """Whether the row gives a latency or one request's speed of an offline run (trtllm-bench
    reports them at maximum load): its whole dataset's replay gives them, no steady state."""
    q = row.metric.quantity
    return row.scenario == "offline" and q in LOAD_QUANTITIES and q not in ("throughput", "streams")


def predictable(row: MeasuredRow) -> bool:
    """Whether the model predicts the row's metric in its scenario: a steady state's closed
    form (``STEADY_KINDS``), or a run of the load engine (a row may read a metric, such as a p90
    TTFT, that neither predicts: it is out of scope, not guessed); an offline run's latencies
    where its whole dataset is replayed (``offline_latency``)."""
    code = f"{row.scenario}|{row.metric.quantity}"
    return (
        code in STEADY_KINDS
        or (row.scenario in LOADED and row.metric.quantity in LOAD_QUANTITIES)
        or (row.scenario == "closed_loop" and row.metric.quantity in CLOSED_LOOP_QUANTITIES)
        or offline_latency(row)
    )


def _cached_rows(plan: Plan, pts: Points):
    key = ("rows", id(pts))
    if key not in plan.__dict__.setdefault("_memo", {}):
        plan._memo[key] = row_arrays(plan, pts)
    return plan._memo[key]


def _reduce_pairs(pts: Points, value, score):
    """(value, score) at each pair's chosen point: points not chosen carry -inf scores."""
    best = np.maximum.reduceat(
        np.where(np.isfinite(score), score, -np.inf), pts.pair_start, axis=-1
    )
    hit = score >= np.take(best, _pair_index(pts), axis=-1)
    val = np.where(hit & np.isfinite(value), value, -np.inf)
    v = np.maximum.reduceat(val, pts.pair_start, axis=-1)
    return np.where(np.isfinite(v), v, np.nan), best


def _pair_index(pts: Points) -> np.ndarray:
    sizes = np.diff(np.append(pts.pair_start, len(pts.row)))
    return np.repeat(np.arange(len(pts.pair_start)), sizes)


def best_per_row(pts: Points, pair_value, pair_score):
    """(value, candidate index) of every row with pairs: the layout of the best score."""
    best = np.maximum.reduceat(pair_score, pts.row_start, axis=-1)
    sizes = np.diff(np.append(pts.row_start, len(pts.pair_start)))
    hit = pair_score >= np.repeat(best, sizes, axis=-1)
    val = np.where(hit & np.isfinite(pair_value), pair_value, -np.inf)
    v = np.maximum.reduceat(val, pts.row_start, axis=-1)
    return np.where(np.isfinite(v), v, np.nan), hit


def steady_pairs(plan: Plan) -> dict:
    """(row, candidate) -> (value, score) of the steady rows."""
    if not plan.points:
        return {}
    pts = Points.of(plan)
    value, score = metrics(plan, pts, plan.step_seconds())
    return {
        (int(i), int(j)): (float(v), float(s))
        for i, j, v, s in zip(pts.pair_row, pts.pair_cand, value, score)
    }
