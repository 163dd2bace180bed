"""Comparing a measured file with the model: every row's prediction in the row's unit, its
error and whether it beats an ideal bound (``Comparison``), rows that ask the same question
predicted once, micro-benchmarks predicted from the collective, GEMM and memory models, and
the summary of errors by source, GPU and model (docs/model.md §F9).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from ..model.assumptions import Assumptions, preset
from ..specs.engine import load_engine, split_engine
from .closed_forms import (
    DERIVED,
    offline_latency,
    output_rate_twin,
    predictable,
    steady_pairs,
    ttft_of,
)
from .metric_names import SECONDS, time_unit
from .predicting import (
    _DASK,
    _JOBS,
    _PROGRESS,
    TOOL_LIMITS,
    WORKER_FAILED,
    RowEngine,
    _load_pairs,
    build_plan,
    engine_name,
    prefill_pool,
    resolve_engines,
    tool_limits_text,
)
from .reading import SHARED, MeasuredRow
from .replay import CLOSED_LOOP_QUANTITIES

if TYPE_CHECKING:
    import pandas as pd

#: Metrics where a larger prediction is better (throughputs, speeds); the rest are times.
HIGHER = ("throughput", "user_speed", "streams", *DERIVED)
#: Micro-benchmark quantities where larger is better (bus bandwidth, GEMM and stream rates).
HIGHER_MICRO = ("busbw", "gemm_flops", "stream")


def larger_is_better(quantity: str) -> bool:
    """Whether a larger value of a measured quantity is the better one (a rate, not a time)."""
    return quantity in HIGHER + HIGHER_MICRO


#: Quantities measured in time (the row's unit is ms, s or us).
TIMES = ("tpot", "tpot_p99", "itl", "ttft", "ttft_p99", "ttft_single", *CLOSED_LOOP_QUANTITIES)


# --- predicting a file ------------------------------------------------------------------------

#: A closed-loop layout whose KV cache holds fewer requests than the loop has clients says so
#: in its label: the rest queue, and its per-token latencies depend on how many it holds, which
#: an ideal engine (all its memory for the cache) may exceed - only its throughput is a bound.
QUEUED = " (the cache holds "
#: Scenarios whose output rate the ideal presets bound, and so the rates derived from it.
_RATE_SCENARIOS = ("offline", "server", "interactive", "closed_loop", "static")
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
    *(f"{scenario}|{rate}" for scenario in _RATE_SCENARIOS for rate in DERIVED),
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

    def to_dataframe(self) -> pd.DataFrame:
        """The comparison row by row, as the other results convert.

        Returns
        -------
        pandas.DataFrame
            A copy of ``table``: one row per input row, with its measured and predicted values,
            error and status (``summary`` holds the errors by source, GPU and model).

        Examples
        --------
        >>> import inference_econ as ie  # doctest: +SKIP
        >>> c = ie.compare_measured("examples/measured-rows.csv")  # doctest: +SKIP
        >>> c.to_dataframe().equals(c.table)  # doctest: +SKIP
        True
        """
        return self.table.copy()  # type: ignore[attr-defined]


def _output_rate_twins(rows) -> tuple[list, np.ndarray]:
    """The rows with each requests, input or total rate asked as its run's output rate, and
    the factors that turn those rates back into the rows' (``output_rate_twin``): the model
    predicts the output rate; the lengths the row states convert it."""
    twins, factors = list(rows), np.ones(len(rows))
    for i, r in enumerate(rows):
        found = output_rate_twin(r)
        if found is not None:
            twins[i], factors[i] = found
    return twins, factors


def predict_rows(rows, assumptions="paper", engine=None, engines=None):
    """(predicted value, layout label, status, engine label) of every row, in SI units
    (seconds, tokens/s). ``engines`` gives rows their ``RowEngine`` (by index) instead of
    resolving them (calibration's fitted profiles). Rows that ask the same question (the same
    configuration and metric, whatever their value or source) are predicted once; a requests,
    input or total rate as its run's output rate times its lengths' ratio."""
    rows, factors = _output_rate_twins(rows)
    predicted, labels, status, engines_text = _predict_rows(rows, assumptions, engine, engines)
    return predicted * factors, labels, status, engines_text


def _predict_rows(rows, assumptions, engine, engines):
    """``predict_rows`` of rows as asked."""
    groups: dict = {}
    asked: dict = {}  # question -> its number
    shared: dict = {}  # id of a shared resolution's token -> its question's number
    for i, r in enumerate(rows):
        given = None if engines is None else id(engines.get(i))
        token = r.__dict__.get(SHARED)  # alive while ``rows`` is: its id is its own
        number = None if token is None else shared.get(id(token))
        if number is None:  # hashing a question's specs is the slow part: once per token
            number = asked.setdefault(_question(r), len(asked))
            if token is not None:
                shared[id(token)] = number
        groups.setdefault((number, given), []).append(i)
    if len(groups) < len(rows):
        first = [members[0] for members in groups.values()]
        sub = (
            None
            if engines is None
            else {k: engines[i] for k, i in enumerate(first) if i in engines}
        )
        once = _predict_distinct([rows[i] for i in first], assumptions, engine, sub)
        out = (np.full(len(rows), np.nan), [""] * len(rows), [""] * len(rows), [""] * len(rows))
        for k, members in enumerate(groups.values()):
            for i in members:
                out[0][i] = once[0][k]
                for n in (1, 2, 3):
                    out[n][i] = once[n][k]
        return out
    return _predict_distinct(rows, assumptions, engine, engines)


def _question(r: MeasuredRow) -> tuple:
    """What a row's prediction depends on (not its value, line, source or wording)."""
    micro = (r.model_text, r.unit, r.message_bytes, r.gemm_shape) if r.kind == "micro" else ()
    return (
        r.kind,
        r.status,
        r.arch,
        r.gpu,
        r.bits,
        r.gpus,
        r.metric,
        r.scenario,
        r.layout,
        r.lengths,
        r.concurrency,
        r.batch_cap,
        r.token_budget,
        r.fused_allreduce,
        r.kv_cache_fraction,
        r.scheduler_steps,
        r.chunked_prefill,
        r.mixed_chunk,
        r.admission_cadence,
        r.adp_balancing,
        r.async_scheduling,
        r.two_batch_overlap,
        r.expert_exchange,
        r.rank_blocks,
        r.limits,
        r.engine,
        getattr(r, "engine_version", None),
        getattr(r, "engine_branch", None),  # the label names it
        r.precision_as_released,  # the label names it
        getattr(r, "platform", None),
        r.disaggregated,
        r.decode_gpus,
        r.prefill_layout,
        r.per,
        r.per_count,
        micro,
    )


def _predict_distinct(rows, assumptions, engine, engines):
    """``predict_rows`` of rows that each ask their own question."""
    base = preset(assumptions)
    found = resolve_engines(rows, base, engine) if engines is None else engines
    plan = build_plan(rows, assumptions, engines=found)
    n = len(plan.rows)
    predicted = np.full(n, np.nan)
    labels = [""] * n
    status = [r.status for r in plan.rows]
    labels_engine = [""] * n
    for i, e in found.items():
        if isinstance(e, RowEngine):
            labels_engine[i] = e.label if base.engine is not None else ""
        elif plan.rows[i].ok or plan.rows[i].status.startswith("derived"):
            status[i] = e
    best: dict = {}  # row -> (score, value, candidate index, note)
    for (i, j), (value, score) in steady_pairs(plan).items():
        _keep(best, i, j, value, score)
    lost: dict = {}  # row -> why its replay's worker failed: no prediction, whatever else held
    for (i, j), (value, score, note) in _load_pairs(plan).items():
        _keep(best, i, j, value, score, note)
        if note.startswith(WORKER_FAILED):
            lost[i] = note
    for i, (_, value, j, note) in best.items():
        predicted[i] = value
        if np.isfinite(value):
            cand = plan.candidates[(i, j)]
            labels[i] = cand.label()
            tool = tool_limits_text(plan.engines[i], cand, plan.rows[i])
            if tool:  # the figures of the limits the engine label names, on this layout
                labels_engine[i] = labels_engine[i].replace(TOOL_LIMITS, f"{TOOL_LIMITS} ({tool})")
            if (i, j) in plan.queued:
                held = plan.queued[(i, j)]
                labels[i] += f"{QUEUED}{held:.0f} of {plan.rows[i].concurrency:g} clients at once)"
        elif plan.rows[i].ok:
            status[i] = note or "infeasible: no layout serves the row"
    for i, why in plan.infeasible.items():
        if not np.isfinite(predicted[i]) and plan.rows[i].ok:
            status[i] = why if why.startswith("infeasible") else f"infeasible: {why}"
    for i, why in lost.items():  # its best layout may be the one not replayed
        predicted[i], labels[i], status[i] = np.nan, "", why
    for i, row in enumerate(plan.rows):
        if row.kind == "end-to-end" and row.resolved and not predictable(row):
            status[i] = (
                f"out of scope: the model does not predict {row.metric_text} "
                f"in the {row.scenario} scenario"
            )
        elif (
            row.kind == "end-to-end"
            and row.resolved
            and row.disaggregated
            and ttft_of(row)
            and prefill_pool(row) is None
        ):
            predicted[i] = np.nan  # the decode pool's replay hands each first token over
            status[i] = (
                "out of scope: the TTFT of a disaggregated row (and so its end-to-end latency) is "
                "its prefill pool's, which the replay does not run here (its decode GPUs are "
                "replayed alone)"
            )
        elif (
            row.kind == "end-to-end"
            and status[i] == "ok"
            and i not in best
            and not np.isfinite(predicted[i])
        ):  # no case was built for it
            status[i] = _no_case(row, base)
        if row.kind == "micro" and row.resolved:
            predicted[i] = predict_micro(row, base, engine)
            nvls_row = row.metric.quantity == "busbw" and "nvls" in row.model_text.lower()
            if base.engine is None and nvls_row and not base.nvls:
                status[i] = f"out of scope: uses NVLS, which the {base.name} preset does not"
    return predicted, labels, status, labels_engine


def _no_case(row: MeasuredRow, base: Assumptions) -> str:
    """Why a row with a metric the model predicts has no run: the ideal engine's steady state
    has no queue; an offline run's latencies are its whole dataset's, which the row must size."""
    sized = "where the row states its requests (a requests column)"
    if offline_latency(row) and base.engine is not None:
        return (
            f"out of scope: {row.metric_text} of an offline run is its whole dataset's, which "
            f"the row does not size: the replay runs it {sized}"
        )
    simulates = f"replays it {sized}" if offline_latency(row) else "simulates it"
    return (
        f"out of scope: the {base.name} preset's bound (a steady state, no queue) does not "
        f"give {row.metric_text} in the {row.scenario} scenario; the achievable preset " + simulates
    )


def _keep(best: dict, i, j, value, score, note="") -> None:
    old = best.get(i)
    finite = np.isfinite(value) and np.isfinite(score)
    if old is None or (finite and (not np.isfinite(old[1]) or score > old[0])):
        best[i] = (score if finite else -np.inf, value if finite else np.nan, j, note)


def predict_micro(row: MeasuredRow, base: Assumptions, engine=None) -> float:
    """A micro-benchmark under the assumptions: all-reduce bus bandwidth from the collective
    model (NCCL's own protocols: no engine kernels), GEMM TFLOPS and streaming TB/s. The
    ideal presets' bound is the datasheet (their sustained fractions are assumptions about
    whole models, not kernel limits); the achievable preset uses §F1-§F2 and §F6."""
    from ..model.collectives import ALLREDUCE, CollectiveCost, measured_protocols, protocols_for
    from ..model.efficiency import size_factor
    from ..model.machine import Machine

    gpu, q = row.gpu, row.metric.quantity
    # micro-benchmarks measure kernels and libraries, not a scheduler: the terms of the profile
    # given (or the preset's) whatever the platform
    name = split_engine(engine)[0] if isinstance(engine, str) else engine
    prof = None if base.engine is None else load_engine(name or base.engine)
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
    return _scale_of(row.unit, row.metric.quantity if row.metric is not None else "")


def _clocked(assumptions, clock):
    """``assumptions`` (a preset's name or ``Assumptions``) with every step on ``clock``."""
    from ..serving.setting import with_clock
    from ..settings import table

    if not isinstance(assumptions, Assumptions):
        assumptions = preset(table.option("assumptions").check(assumptions))
    return with_clock(assumptions, table.option("clock").check(clock))


def compare(
    path,
    assumptions="paper",
    engine=None,
    progress=None,
    hardware=None,
    gpus=None,
    precision=None,
    jobs: int = 1,
    clock: str = "auto",
    dask: str | None = None,
    model=None,
):
    """Every row of a measured CSV with the model's prediction: ``Comparison``.
    ``progress(message)``: called as the rows the load engine simulates are predicted (a
    whole MLPerf file takes tens of minutes). ``hardware``, ``gpus``, ``precision``: those
    of the rows that state none (a benchmark tool's plain result), as is ``model``. ``jobs``: worker processes
    replaying the rows under load (the same table as one process's); ``dask``: a Dask
    scheduler's address, or ``local`` for a local cluster of ``jobs`` workers, that replays
    them instead (the same table). ``clock``: ``engine`` or
    ``kernel`` prices every row's step by that clock; ``auto`` by the rule (docs/model.md,
    "Which clock prices a measured row"), or as ``assumptions`` given in Python set it."""
    from ..specs.collector import gc_frozen
    from .reading import load_measured

    jobs = _workers(jobs, dask)
    stated = stated_columns(hardware, gpus, precision, model)
    if clock != "auto":
        assumptions = _clocked(assumptions, clock)
    rows = load_measured(path, stated)
    token, workers, cluster = _PROGRESS.set(progress), _JOBS.set(jobs), _DASK.set(dask)
    try:
        with gc_frozen():  # the rows live to the end: the collector need not walk them again
            return _compared(path, rows, assumptions, engine)
    finally:
        _PROGRESS.reset(token)
        _JOBS.reset(workers)
        _DASK.reset(cluster)


def stated_columns(hardware=None, gpus=None, precision=None, model=None) -> dict:
    """The columns the command line states for the rows that state none (``load_measured``);
    ``gpus`` a whole number of GPUs (one line naming it otherwise: a row's ``n_gpus`` is)."""
    from .. import settings as table

    if gpus is not None:  # the bounds of max_gpus, the same quantity
        gpus = int(table.option("max_gpus").check(gpus, "argument", "gpus"))
    return {
        "model": model,
        "hardware": hardware,
        "n_gpus": None if gpus is None else str(gpus),
        "precision": precision,
    }


def _workers(jobs, dask) -> int:
    """``jobs`` as a process count (None: 1), refused before any row is read where it is not
    one, or where a running scheduler's workers would ignore it; and a ``dask`` that names no
    scheduler refused."""
    from .. import settings as table
    from ..studies.execution import check_dask, refuse_jobs_beside

    count = table.check_each({"jobs": jobs})["jobs"]
    count = 1 if count is None else int(count)
    check_dask(dask)
    if count != 1:  # a running scheduler's workers replay the rows
        refuse_jobs_beside(dask, str(count), "replay the rows")
    return count


def _compared(path, rows, assumptions, engine):
    """``compare`` of the rows read from ``path``."""

    from .intervals import add_intervals

    base = preset(assumptions)
    if engine is not None and base.engine is None:
        from ..errors import SpecError

        raise SpecError(
            "argument",
            "engine",
            f"an engine profile does not apply to the {base.name!r} preset (an ideal bound)",
            "use --assumptions achievable with --engine",
        )
    if engine is not None:
        load_engine(engine)  # a bad name, version or file fails before any work
    predicted, labels, status, engines = predict_rows(rows, base, engine)
    table = _table(rows, predicted, labels, status, base, engines)
    label = base.name
    if base.engine is not None:
        label += f", engine {engine_name(engine)}" if engine else ", each row's engine"
        if base.kernel_tables is not None:  # forced: every row on one clock
            label += f", every row on the {'kernel' if base.kernel_tables else 'engine'} clock"
        table = add_intervals(table, rows)  # expected figures' intervals (§F12)
    better = np.array([r.metric is not None and larger_is_better(r.metric.quantity) for r in rows])
    summary = summarise(table, better)
    return Comparison(table, summary, label, engine_name(engine) if engine else "", str(path))


def _table(rows, predicted, labels, status, base, engines):
    """The output table: per row its prediction in the row's unit, the error and whether it
    beats the bound (an ideal preset; a row out of scope - a technique the model does not
    predict, e.g. speculative decoding - is predicted without it and is no test of the
    bound). Built column by column: a 100,000-row log's records as dicts cost more than its
    reading."""
    import pandas as pd

    n = len(rows)
    if n == 0:
        return pd.DataFrame.from_records([])
    scale = np.array([_scale_of(r.unit, r.metric.quantity if r.metric else "") for r in rows])
    values = np.asarray(predicted, dtype=float)
    finite = np.isfinite(values)
    pred = np.where(finite, values / np.where(finite, scale, 1.0), math.nan)
    measured = np.array([r.value if r.value is not None else math.nan for r in rows], dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        error = np.where(np.isfinite(pred) & (measured > 0), pred / measured - 1.0, math.nan)
    tol = BOUND_TOLERANCE
    beats = np.zeros(n, dtype=bool)
    if base.engine is None:
        over = np.isfinite(error) & (error > tol)
        under = np.isfinite(error) & (error < -tol / (1 + tol))
        first_tokens = _closed_loop_ttfts(rows, measured * scale)
        for i, r in enumerate(rows):
            if r.metric is None or not (over[i] or under[i]):
                continue
            q = r.metric.quantity
            traded = q in ("tpot", "itl") and _traded_for_ttft(
                r, measured[i] * scale[i], values[i], first_tokens
            )
            if traded:
                continue
            queued = (
                r.scenario == "closed_loop"
                and q not in ("throughput", *DERIVED)
                and QUEUED in labels[i]
            )
            if (
                f"{r.scenario}|{q}" in BOUNDED
                and not status[i].startswith("out of scope")
                and not queued
            ):
                beats[i] = under[i] if larger_is_better(q) else over[i]
    columns = {
        "row": [r.row for r in rows],
        "source": [r.source for r in rows],
        "source_group": [r.group for r in rows],
        "model": [r.arch.name if r.arch is not None else r.model_text for r in rows],
        "hardware": [r.gpu.name if r.gpu is not None else r.hardware_text for r in rows],
        "n_gpus": [r.gpus for r in rows],
        "metric": [r.metric_text for r in rows],
        "scenario": [r.scenario or ("micro" if r.kind == "micro" else "") for r in rows],
        "lengths": [_lengths_label(r.lengths) for r in rows],
        "unit": [r.unit for r in rows],
        "measured": measured,
        "predicted": pred,
        "error": error,
        "status": list(status),
        "kind": [r.kind for r in rows],
        "layout": list(labels),
        "engine": list(engines),
        # checked under an ideal preset only: empty (NA) for an expected figure
        "beats_bound": pd.array(beats if base.engine is None else [None] * n, dtype="boolean"),
    }
    return pd.DataFrame(columns)


def _closed_loop_key(r: MeasuredRow) -> tuple:
    """What a closed-loop run's rows share: its source, configuration, clients and lengths."""
    lengths = _lengths_label(r.lengths)
    return (r.source, r.model_text, r.hardware_text, r.gpus, r.layout, r.concurrency, lengths)


def _closed_loop_ttfts(rows, seconds) -> dict:
    """{run: its measured mean TTFT in seconds} of the closed-loop rows that give one."""
    return {
        _closed_loop_key(r): float(seconds[i])
        for i, r in enumerate(rows)
        if r.scenario == "closed_loop" and r.metric is not None and r.metric.quantity == "ttft"
        if np.isfinite(seconds[i]) and seconds[i] > 0
    }


def _traded_for_ttft(r: MeasuredRow, tpot_s: float, bound_s: float, ttfts: dict) -> bool:
    """Whether a closed loop's mean TPOT (or inter-token latency) under the bound's is a
    trade, not a faster engine: the bound's closed-loop figure is a steady state with every
    client decoding at once; a run whose first tokens wait decodes fewer at once and so each
    faster, while its throughput, clients / (TTFT + (output - 1) x TPOT) from its own TTFT
    row, stays within the most that steady state allows (every client decoding at the bound's
    TPOT, no prefill time). False where the run gives no TTFT (then the TPOT alone is held)."""
    ttft = ttfts.get(_closed_loop_key(r)) if r.scenario == "closed_loop" else None
    if ttft is None or r.concurrency is None or r.lengths is None:
        return False
    steps = r.lengths.output_mean - 1.0
    if not (steps > 0 and tpot_s > 0 and bound_s > 0):
        return False
    run = r.concurrency / (ttft + steps * tpot_s)
    return run <= (1.0 + BOUND_TOLERANCE) * r.concurrency / (steps * bound_s)


def _lengths_label(lengths) -> str:
    """A row's mean prompt and output tokens as its table shows them ("1024/8192"); "" where
    it has none read (a micro-benchmark, an unresolved row)."""
    if lengths is None:
        return ""
    return f"{lengths.input_mean:.6g}/{lengths.output_mean:.6g}"


@lru_cache(maxsize=1024)
def _scale_of(unit: str, quantity: str) -> float:
    """``_unit_scale`` of a unit and a metric's quantity."""
    if quantity in TIMES:
        return SECONDS[time_unit(unit) or "s"]
    return 1.0


#: The columns the summary groups the rows by (``source_group`` is printed as ``source``).
SUMMARY_GROUPS = ("source_group", "hardware", "model")


def summarise(table, larger_better=None):
    """Median and 90th-percentile absolute error of the rows with status ok, end-to-end and
    micro-benchmarks apart, by source, GPU and model, and the median optimism: the signed
    error with the sign of times turned (``larger_better`` per row: whether a larger value is
    the better one; all, when not given), so that above 0 the model promised more than was
    measured (more throughput, less latency) whatever the rows mix."""
    import pandas as pd

    sign = np.ones(len(table)) if larger_better is None else np.where(larger_better, 1.0, -1.0)
    optimism = sign * table["error"].to_numpy(float)
    keep = (table["status"] == "ok") & table["error"].notna()
    # the columns read, of the rows kept: not two copies of a long table's every column
    ok = table.loc[keep, ["kind", *SUMMARY_GROUPS, "error"]]
    ok = ok.assign(optimism=optimism[keep.to_numpy(dtype=bool)])
    out = []
    for kind in ("end-to-end", "micro"):
        part = ok[ok["kind"] == kind]
        if part.empty:
            continue
        out.append(_stats(part, kind, "all", "all rows"))
        for by in SUMMARY_GROUPS:
            for name, g in part.groupby(by, sort=True):
                out.append(_stats(g, kind, by.replace("source_group", "source"), name))
    return pd.DataFrame(
        out,
        columns=[
            "kind", "by", "name", "rows", "median_abs_error", "p90_abs_error", "median_optimism"
        ],
    )  # fmt: skip


def _stats(part, kind, by, name) -> dict:
    e = part["error"].to_numpy(float)
    return {
        "kind": kind,
        "by": by,
        "name": name,
        "rows": len(e),
        "median_abs_error": float(np.median(np.abs(e))),
        "p90_abs_error": float(np.quantile(np.abs(e), 0.9)),
        "median_optimism": float(np.median(part["optimism"].to_numpy(float))),
    }
