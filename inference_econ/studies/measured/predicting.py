"""Predicting measured rows: every row's benchmark replayed on the model (docs/model.md §F9).

A row becomes a set of engine steps: continuous batching at the largest batch the KV cache
(and the engine's cap) allows for an offline run; the largest batch whose predicted latencies
meet the limits for a Server run; the running users of a closed-loop sweep; a static batch
(one prefill, then decode); one prompt for a batch-1 time to first token. Prompts are
prefilled in chunks that share a step's one weight read with the decoding requests (§E1).
Where the row does not state its layout, every tensor-parallel split of its GPUs is tried and
the best kept (the operator tunes it). Steps are grouped by model, GPU, precision and layout
and evaluated as arrays, so a file of many rows costs a few hundred array evaluations.

``Plan`` holds the steps and how each row's metric follows from their times, so calibration
can re-time the same steps under other efficiency terms without rebuilding them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ...model.assumptions import Assumptions, preset
from ...model.efficiency import StepWork, concatenate
from ...model.latency import StepModel, prefill_step_model
from ...model.mixed_step import EngineLayout, mixed_step_s, mixed_step_work
from ...model.workload import compile_workload
from ...specs.engine import load_engine
from .reading import MeasuredRow

#: Batch sizes tried per layout for a Server row (log-spaced up to the capacity).
SERVER_GRID = 20
#: Metrics where a larger prediction is better (throughputs, speeds); the rest are times.
HIGHER = ("throughput", "user_speed", "streams")
#: Ideal engines (paper, refined): no scheduling losses.
IDEAL_POLICY = (1.0, 1.0, 1.0)


@dataclass(frozen=True)
class Candidate:
    """One layout tried for a row: instances of ``gpus`` GPUs (tensor x pipeline),
    ``replicas`` of them, attention data parallel or not, expert parallel or not."""

    tensor: int
    pipeline: int
    replicas: int
    attention_dp: bool
    expert_parallel: bool

    @property
    def gpus(self) -> int:
        return self.tensor * self.pipeline

    def label(self) -> str:
        text = f"TP{self.tensor}" + (f"PP{self.pipeline}" if self.pipeline > 1 else "")
        if self.expert_parallel:
            text += " EP"
        if self.attention_dp:
            text += " attn-DP"
        return f"{self.replicas} x {text}" if self.replicas > 1 else text


@dataclass
class _Group:
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
    """Every predictable row's candidate steps and how its metric follows from them."""

    rows: list
    assumptions: Assumptions
    groups: list = field(default_factory=list)
    #: Per point: (row index, candidate index, batch, replicas, step a, weight a, step b,
    #: weight b, grid position); steps as (group index, index in the group).
    points: list = field(default_factory=list)
    candidates: dict = field(default_factory=dict)  # (row index, candidate index) -> Candidate
    policies: dict = field(default_factory=dict)  # row index -> (rho, r99, ttft steps)
    engines: dict = field(default_factory=dict)  # row index -> profile name ("" ideal)
    infeasible: dict = field(default_factory=dict)  # row index -> reason

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

    def step_engines(self) -> list:
        """The engine profile name of every step (for per-engine terms in calibration)."""
        out = []
        for g in self.groups:
            name = g.model.profile.name if g.model.profile is not None else ""
            out += [name] * len(g.D)
        return out


# --- building the plan ------------------------------------------------------------------------

#: A micro-batch per sparsity no step reaches (the field's largest value): no expert parallelism.
NEVER_EXPERT_PARALLEL = 1e6


def _assumptions_for(base: Assumptions, row: MeasuredRow, engine, expert_parallel: bool, profiles):
    a = base
    if base.engine is not None:
        name = engine or row.engine or base.engine
        a = a.replace(engine=profiles(name) if isinstance(name, str) else name)
    if not expert_parallel:  # experts stay whole on every GPU: never split them (§A5)
        a = a.replace(expert_parallel_min_batch_per_sparsity=NEVER_EXPERT_PARALLEL)
    return a


@lru_cache(maxsize=256)
def _models(arch, gpu, bits, a: Assumptions):
    """(decode step model, prefill workload) of a model at a precision on a GPU."""
    arch = arch.with_precision(*bits)
    model = StepModel(compile_workload(arch, a), gpu, a, integer_layouts=True)
    return model, prefill_step_model(arch, gpu, a, True).work


def candidates(row: MeasuredRow) -> list[Candidate]:
    """The layouts a row may have run: the one it states, else every tensor-parallel split of
    its GPUs within a scale-up domain (MoE models with and without expert parallelism, and
    with and without data-parallel attention, which shards an MLA or few-KV-head cache that
    tensor-parallel attention copies, docs/model.md §B13)."""
    moe = any(g.ffn.experts > 1 for g in row.arch.layer_groups)
    lay = row.layout
    if lay is not None:
        ep = lay.expert is not None and lay.expert > 1
        options = (ep,) if (lay.expert is not None or not moe) else (False, True)
        return [
            Candidate(lay.tensor, lay.pipeline, lay.replicas, lay.attention_dp, e) for e in options
        ]
    domain = max(1, row.gpu.scale_up_domain_gpus)
    gpus = row.serving_gpus
    out = []
    for tp in (1, 2, 4, 8, 16, 32, 64, 72):
        if tp > gpus or gpus % tp or (tp > domain and tp > 1):
            continue
        for ep in (False, True) if moe and tp > 1 else (False,):
            for dp in (False, True) if moe and tp > 1 else (False,):
                out.append(Candidate(tp, 1, gpus // tp, dp, ep))
    return out or [Candidate(gpus, 1, 1, False, False)]


def build_plan(rows, assumptions="paper", engine=None, profiles=load_engine) -> Plan:
    """The steps of every resolved end-to-end row (status ok, derived or out of scope).
    ``engine`` overrides the rows' engines; ``profiles`` loads a profile by name."""
    base = preset(assumptions)
    plan = Plan(rows=list(rows), assumptions=base)
    groups: dict = {}
    for i, row in enumerate(plan.rows):
        if row.kind != "end-to-end" or not row.resolved or not predictable(row):
            continue
        profile = None
        for j, cand in enumerate(candidates(row)):
            a = _assumptions_for(base, row, engine, cand.expert_parallel, profiles)
            model, prefill = _models(row.arch, row.gpu, row.bits, a)
            profile = model.profile
            layout = EngineLayout(
                cand.gpus, cand.pipeline, cand.tensor if cand.attention_dp else 1.0
            )
            key = (id(model), layout)
            if key not in groups:
                groups[key] = _Group(model, prefill, layout, index=len(groups))
            if _add_points(plan, groups[key], i, j, row, cand, model):
                plan.candidates[(i, j)] = cand
        plan.policies[i] = (
            IDEAL_POLICY
            if profile is None
            else (profile.server_throughput_fraction, profile.p99_tpot_ratio, profile.ttft_steps)
        )
        plan.engines[i] = profile.name if profile is not None else ""
        if not any(k[0] == i for k in plan.candidates):
            plan.infeasible.setdefault(i, "no layout of its GPUs holds the weights and a KV cache")
    offset = 0
    for g in groups.values():
        g.offset = offset
        offset += len(g.D)
    plan.groups = list(groups.values())
    return plan


def _capacity(model: StepModel, row: MeasuredRow, cand: Candidate) -> float:
    """Requests one instance holds at the row's mean decode context (§F8)."""
    per_request = float(model.work.kv_cache_bytes(row.lengths.decode_context, 1.0))
    room = float(model.kv_capacity_bytes(float(cand.gpus)))
    return room / per_request if per_request > 0 else math.inf


def _add_points(plan: Plan, g: _Group, i: int, j: int, row, cand, model) -> bool:
    """The points of one row and candidate layout; False if the layout cannot serve it."""
    cap = _capacity(model, row, cand)
    prof = model.profile
    engine_cap = row.batch_cap or (prof.max_batch_requests if prof is not None else math.inf)
    budget = float(prof.step_token_budget) if prof is not None else math.inf
    L = row.lengths
    if cap < 1.0:
        gb = model.weights_total_bytes / 1e9
        plan.infeasible.setdefault(
            i,
            f"infeasible: {gb:.0f} GB of weights leave no room for the KV cache on {cand.label()}",
        )
        return False
    s = row.scenario
    q = row.metric.quantity
    if s == "single":
        a = g.add(0.0, 0.0, L.input_mean, 0.0, 1.0)
        plan.points.append((i, j, 1.0, 1, a, 1.0, a, 0.0, 0))
        return True
    if s == "static":
        B = row.concurrency / cand.replicas
        if B * model.work.kv_bytes_per_token * (L.input_mean + L.output_mean) > float(
            model.kv_capacity_bytes(float(cand.gpus))
        ):
            plan.infeasible.setdefault(
                i, f"infeasible: a static batch of {B:g} does not fit {cand.label()}"
            )
            return False
        a = g.add(0.0, 0.0, B * L.input_mean, 0.0, B)
        b = g.add(B, L.input_mean + L.output_mean / 2.0, 0.0, 0.0, 0.0)
        plan.points.append((i, j, B, cand.replicas, a, 1.0, b, max(L.output_mean - 1.0, 0.0), 0))
        return True
    top = min(cap, engine_cap)
    if s == "closed_loop":
        B = min(row.concurrency / cand.replicas, top)
        users = B if q == "throughput" else max(B - 1.0, 0.0)
        _mean_step(plan, g, i, j, row, cand, B, users, budget, 0)
        return True
    if s == "offline":
        _mean_step(plan, g, i, j, row, cand, top, top, budget, 0)
        return True
    for k, B in enumerate(np.geomspace(1.0, max(top, 1.0), SERVER_GRID)):
        _mean_step(plan, g, i, j, row, cand, float(B), float(B), budget, k)
    return True


def _mean_step(plan, g: _Group, i, j, row, cand, B, users, budget, k) -> None:
    """A point whose time is the mean step of ``B`` decoding requests while the prompts of
    ``users`` arriving requests are prefilled (§F9): prompts per step users/n_out, in chunks
    of min(n_in, budget) tokens; fewer than one chunk a step is a mixture of decode-only
    steps and steps with one chunk. Disaggregated rows prefill elsewhere."""
    L = row.lengths
    if row.disaggregated:
        users = 0.0
    n = L.decode_context
    chunk = min(L.input_mean, budget)
    prefix = max(0.0, L.prefill_context - (chunk - 1.0) / 2.0)
    tokens = users * L.input_mean / L.output_mean  # prompt tokens per step on average
    chunks = tokens / chunk
    if chunks >= 1.0:
        a = g.add(B, n, tokens, prefix, chunks)
        plan.points.append((i, j, B, cand.replicas, a, 1.0, a, 0.0, k))
        return
    a = g.add(B, n, 0.0, 0.0, 0.0)
    b = g.add(B, n, chunk, prefix, 1.0)
    plan.points.append((i, j, B, cand.replicas, a, 1.0 - chunks, b, chunks, k))


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
        )


def row_arrays(plan: Plan, pts: Points):
    """Per point: (scenario code, quantity, per-GPU divisor, output length, TPOT and TTFT
    limits) of its row, and the policy (rho, r99, ttft steps) of its row."""
    rows = [plan.rows[i] for i in pts.row]
    per_gpu = np.array([r.per_count for r in rows], float)
    n_out = np.array([r.lengths.output_mean for r in rows], float)
    lim = np.array([r.limits if r.limits else (np.inf, np.inf) for r in rows], float).reshape(-1, 2)
    pol = np.array([plan.policies[i] for i in pts.row], float).reshape(-1, 3)
    return per_gpu, n_out, lim, pol


def metrics(plan: Plan, pts: Points, seconds, policy=None):
    """(value, score) per (row, layout) pair: the row's predicted metric and what the operator
    maximises (throughput, or minus the latency). ``seconds``: step times, 1-D or trials x
    steps; ``policy``: (rho, r99, ttft steps) arrays per point (trials x points) overriding
    the rows' engines' values. Server pairs without an admissible batch get NaN."""
    S = np.asarray(seconds, dtype=float)
    t = pts.wa * S[..., pts.a] + pts.wb * S[..., pts.b]
    per_gpu, n_out, lim, pol = _cached_rows(plan, pts)
    rho, r99, kt = policy if policy is not None else (pol[:, 0], pol[:, 1], pol[:, 2])
    value = np.full(t.shape, np.nan)
    score = np.full(t.shape, -np.inf)
    for code, idx in _code_points(plan, pts).items():
        if code in _SERVER_CODES:
            continue
        ti = t[..., idx]
        thr = pts.replicas[idx] * pts.batch[idx] / ti
        kind = _KINDS.get(code)
        if kind is None:
            continue
        if kind == "throughput":
            val, sc = thr, thr
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
    server = np.isin(_codes(plan, pts), _SERVER_CODES)
    if server.any():
        value, score = _server(plan, pts, t, value, score, server, rho, r99, kt, lim)
    value = value / per_gpu
    return _reduce_pairs(pts, value, score)


#: How each non-server (scenario, quantity) follows from a point's time.
_KINDS = {
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
        codes = _codes(plan, pts)
        memo[key] = {c: np.flatnonzero(codes == c) for c in np.unique(codes)}
    return memo[key]


_SERVER_CODES = [
    f"{s}|{q}"
    for s in ("server", "interactive")
    for q in ("throughput", "tpot", "tpot_p99", "ttft", "user_speed", "streams")
]


def predictable(row: MeasuredRow) -> bool:
    """Whether the model predicts the row's metric in its scenario (a row may read a metric,
    such as a p99 TTFT, that no code below predicts yet: it is out of scope, not guessed)."""
    code = f"{row.scenario}|{row.metric.quantity}"
    return code in _KINDS or code in _SERVER_CODES


def _codes(plan: Plan, pts: Points) -> np.ndarray:
    key = ("codes", id(pts))
    if key not in plan.__dict__.setdefault("_memo", {}):
        plan._memo[key] = np.array(
            [f"{plan.rows[i].scenario}|{plan.rows[i].metric.quantity}" for i in pts.row]
        )
    return plan._memo[key]


def _cached_rows(plan: Plan, pts: Points):
    key = ("rows", id(pts))
    if key not in plan.__dict__.setdefault("_memo", {}):
        plan._memo[key] = row_arrays(plan, pts)
    return plan._memo[key]


def _server(plan, pts, t, value, score, server, rho, r99, kt, lim):
    """Server rows (§F9). Along each layout's grid of batches (B rising, step time t(B)
    rising), the engine runs the largest batch whose p99 TPOT (r99·t/rho) and mean TTFT
    (k·t/rho) meet the limits, at most the capacity, found by interpolating between grid
    points; it serves rho·replicas·B/t, and a request sees a mean TPOT of t/rho (Little's
    law at that batch: rho is the share of the batch's rate a Poisson-loaded server keeps)."""
    idx = np.flatnonzero(server).reshape(-1, SERVER_GRID)
    first = idx[:, 0]
    T = t[..., idx]
    B = np.broadcast_to(pts.batch[idx], T.shape)
    r = _at(rho, first)
    p99 = _at(r99, first)
    k = _at(kt, first)
    t_max = np.minimum(lim[first, 1] * r / p99, lim[first, 0] * r / k)  # step-time limit
    ok = t_max[..., None] >= T
    last = SERVER_GRID - 1 - np.argmax(ok[..., ::-1], axis=-1)  # last admissible point
    none = ~ok.any(axis=-1)
    nxt = np.minimum(last + 1, SERVER_GRID - 1)
    t0, t1 = (np.take_along_axis(T, i[..., None], -1)[..., 0] for i in (last, nxt))
    b0, b1 = (np.take_along_axis(B, i[..., None], -1)[..., 0] for i in (last, nxt))
    frac = np.where(t1 > t0, np.clip((t_max - t0) / np.where(t1 > t0, t1 - t0, 1.0), 0, 1), 0.0)
    t_op = np.where(last == SERVER_GRID - 1, t0, t0 + frac * (t1 - t0))
    b_op = np.where(last == SERVER_GRID - 1, b0, b0 + frac * (b1 - b0))
    thr = r * pts.replicas[first] * b_op / t_op
    tpot = t_op / r
    q = np.array([plan.rows[i].metric.quantity for i in pts.row[first]])
    val = np.select(
        [q == "throughput", q == "tpot", q == "tpot_p99", q == "ttft", q == "user_speed"],
        [thr, tpot, p99 * tpot, k * tpot, 1.0 / tpot],
        default=thr * tpot,
    )
    value = np.where(server, np.nan, value)
    score = np.where(server, -np.inf, score)
    value[..., first] = np.where(none, np.nan, val)
    score[..., first] = np.where(none, -np.inf, thr)
    return value, score


def _at(x, positions):
    """``x`` (a scalar, per point or trials x points) at some points."""
    x = np.asarray(x, dtype=float)
    return x if (x.ndim == 0 or x.shape[-1] == 1) else x[..., positions]


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


# --- predicting a file ------------------------------------------------------------------------

#: Metrics of a scenario that the ideal presets bound (a real system can only be slower).
BOUNDED = (
    "offline|throughput",
    "server|throughput",
    "interactive|throughput",
    "closed_loop|throughput",
    "closed_loop|itl",
    "closed_loop|tpot",
    "closed_loop|user_speed",
    "static|throughput",
    "single|ttft_single",
    "single|ttft",
    "micro|busbw",
    "micro|gemm_flops",
    "micro|stream",
)
#: A measured row beating an ideal prediction by more than this is reported (5 %).
BOUND_TOLERANCE = 0.05


@dataclass(frozen=True)
class Comparison:
    """Every row of a measured file with its prediction (``table``) and the median and 90th
    percentile absolute errors of the rows with status ok (``summary``)."""

    table: object  # pandas DataFrame, one row per input row
    summary: object  # pandas DataFrame
    assumptions: str
    engine: str
    source: str


def predict_rows(rows, assumptions="paper", engine=None) -> tuple[np.ndarray, list, list]:
    """(predicted value, layout label, status) of every row, in the rows' units."""
    plan = build_plan(rows, assumptions, engine)
    predicted = np.full(len(plan.rows), np.nan)
    labels = [""] * len(plan.rows)
    status = [r.status for r in plan.rows]
    if plan.points:
        pts = Points.of(plan)
        pair_value, pair_score = metrics(plan, pts, plan.step_seconds())
        value, hit = best_per_row(pts, pair_value, pair_score)
        for k, i in enumerate(pts.rows):
            predicted[i] = value[k]
            lo = pts.row_start[k]
            hi = pts.row_start[k + 1] if k + 1 < len(pts.row_start) else len(pts.pair_start)
            chosen = [p for p in range(lo, hi) if hit[p]]
            if chosen:
                labels[i] = plan.candidates[(i, int(pts.pair_cand[chosen[0]]))].label()
            if not np.isfinite(value[k]) and plan.rows[i].ok:
                status[i] = "infeasible: no batch meets the row's latency limits on any layout"
    for i, why in plan.infeasible.items():
        if not np.isfinite(predicted[i]) and plan.rows[i].ok:
            status[i] = why if why.startswith("infeasible") else f"infeasible: {why}"
    base = preset(assumptions)
    for i, row in enumerate(plan.rows):
        if row.kind == "end-to-end" and row.resolved and not predictable(row):
            status[i] = (
                f"out of scope: the model does not predict {row.metric_text} "
                f"in the {row.scenario} scenario"
            )
        if row.kind == "micro" and row.resolved:
            predicted[i] = predict_micro(row, base, engine)
            nvls_row = row.metric.quantity == "busbw" and "nvls" in row.model_text.lower()
            if base.engine is None and nvls_row and not base.nvls:
                status[i] = f"out of scope: uses NVLS, which the {base.name} preset does not"
    return predicted, labels, status


def predict_micro(row: MeasuredRow, base: Assumptions, engine=None) -> float:
    """A micro-benchmark under the assumptions: all-reduce bus bandwidth from the collective
    model (NCCL's own protocols: no engine kernels), GEMM TFLOPS and streaming TB/s. The
    ideal presets' bound is the datasheet (their sustained fractions are assumptions about
    whole models, not kernel limits); the achievable preset uses §F1-§F2 and §F6."""
    from ...model.collectives import ALLREDUCE, CollectiveCost, measured_protocols, protocols_for
    from ...model.efficiency import size_factor
    from ...model.machine import Machine

    gpu, q = row.gpu, row.metric.quantity
    prof = load_engine(engine or base.engine) if base.engine is not None else None
    if q == "busbw":
        R = float(row.gpus)
        nodes = math.ceil(R / gpu.scale_up_domain_gpus)
        if prof is None:
            protocols = protocols_for(base.nccl_latency_model, base.nvls and gpu.nvls, gpu)
        else:
            protocols = tuple(p for p in measured_protocols(gpu, base.nvls, prof) if not p.custom)
        cost = CollectiveCost(np.array(R), np.array(float(nodes)), gpu, ALLREDUCE, protocols)
        seconds = float(cost.time(row.message_bytes))
        return row.message_bytes * 2.0 * (R - 1.0) / R / seconds / _scale(row.unit, "busbw")
    if q == "gemm_flops":  # the chip's own rate at the precision (a kernel, not a model)
        machine = Machine.build(gpu, row.bits[0], base.replace(native_fp4=True))
        if prof is None:
            return machine.peak_flop_per_s / _scale(row.unit, q)
        rate = machine.gemm_rate
        if row.gemm_shape is not None:
            M, N, K = row.gemm_shape
            rate = rate * float(size_factor(M * N * K, prof.gemm_half_volume))
        return rate / _scale(row.unit, q)
    bw = gpu.hbm_bandwidth_bytes_per_s * (1.0 if prof is None else prof.hbm_efficiency)
    return bw / _scale(row.unit, q)


def _scale(unit: str, quantity: str) -> float:
    """SI value of one unit of a micro-benchmark row."""
    u = unit.strip().lower()
    return {"gb/s": 1e9, "tb/s": 1e12, "tflops": 1e12, "gflops": 1e9, "pflops": 1e15}.get(u, 1.0)


def _unit_scale(row: MeasuredRow) -> float:
    """The row's unit in the model's (seconds, tokens/s): 1e-3 for ms."""
    u = row.unit.strip().lower().split()[0] if row.unit.strip() else ""
    if row.metric is not None and row.metric.quantity in (
        "tpot",
        "tpot_p99",
        "itl",
        "ttft",
        "ttft_single",
    ):
        return {"ms": 1e-3, "us": 1e-6, "s": 1.0}.get(u, 1.0)
    return 1.0


def compare(path, assumptions="paper", engine=None):
    """Every row of a measured CSV with the model's prediction: ``Comparison``."""
    import pandas as pd

    from .reading import load_measured

    rows = load_measured(path)
    base = preset(assumptions)
    if engine is not None and base.engine is None:
        from ...errors import SpecError

        raise SpecError(
            "argument",
            "engine",
            f"an engine profile does not apply to the {base.name!r} preset (an ideal bound)",
            "use --assumptions achievable with --engine",
        )
    if engine is not None:
        load_engine(engine)  # a bad name or file fails before any work
    predicted, labels, status = predict_rows(rows, base, engine)
    table = pd.DataFrame.from_records(
        [_record(r, predicted[i], labels[i], status[i], base, engine) for i, r in enumerate(rows)]
    )
    label = base.name
    if base.engine is not None:
        label += f", engine {_name(engine)}" if engine else ", each row's engine"
    return Comparison(table, summarise(table), label, _name(engine) if engine else "", str(path))


def _record(r: MeasuredRow, predicted, layout, status, base, engine) -> dict:
    """One output row: the prediction in the row's unit, the error and the bound check."""
    pred = predicted / _unit_scale(r) if np.isfinite(predicted) else math.nan
    measured = r.value if r.value is not None else math.nan
    error = pred / measured - 1.0 if np.isfinite(pred) and measured > 0 else math.nan
    code = f"{r.scenario}|{r.metric.quantity}" if r.metric is not None else ""
    higher = r.metric is not None and r.metric.quantity in HIGHER + (
        "busbw",
        "gemm_flops",
        "stream",
    )
    tol = BOUND_TOLERANCE
    beats = (
        base.engine is None
        and code in BOUNDED
        and np.isfinite(error)
        and (error < -tol / (1 + tol) if higher else error > tol)
    )
    achievable_row = base.engine is not None and r.kind == "end-to-end"
    return {
        "row": r.row,
        "source": r.source,
        "source_group": r.group,
        "model": r.arch.name if r.arch is not None else r.model_text,
        "hardware": r.gpu.name if r.gpu is not None else r.hardware_text,
        "n_gpus": r.gpus,
        "metric": r.metric_text,
        "scenario": r.scenario or ("micro" if r.kind == "micro" else ""),
        "unit": r.unit,
        "measured": measured,
        "predicted": pred,
        "error": error,
        "status": status,
        "kind": r.kind,
        "layout": layout,
        "engine": _name(engine or r.engine or base.engine) if achievable_row else "",
        "beats_bound": bool(beats),
    }


def _name(engine) -> str:
    return engine if isinstance(engine, str) else getattr(engine, "name", str(engine))


def summarise(table):
    """Median and 90th-percentile absolute error (and median signed error) of the rows with
    status ok, end-to-end and micro-benchmarks apart, by source, GPU and model."""
    import pandas as pd

    ok = table[(table["status"] == "ok") & table["error"].notna()]
    out = []
    for kind in ("end-to-end", "micro"):
        part = ok[ok["kind"] == kind]
        if part.empty:
            continue
        out.append(_stats(part, kind, "all", "all rows"))
        for by in ("source_group", "hardware", "model"):
            for name, g in part.groupby(by, sort=True):
                out.append(_stats(g, kind, by.replace("source_group", "source"), name))
    return pd.DataFrame(
        out,
        columns=["kind", "by", "name", "rows", "median_abs_error", "p90_abs_error", "median_error"],
    )


def _stats(part, kind, by, name) -> dict:
    e = part["error"].to_numpy(float)
    return {
        "kind": kind,
        "by": by,
        "name": name,
        "rows": len(e),
        "median_abs_error": float(np.median(np.abs(e))),
        "p90_abs_error": float(np.quantile(np.abs(e), 0.9)),
        "median_error": float(np.median(e)),
    }
