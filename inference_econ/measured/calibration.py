"""Calibrating an engine profile's efficiency terms to measured rows (docs/model.md §F10).

The achievable preset's terms (§F1-§F9) are fitted by weighted least squares on log(predicted /
measured) with a robust loss (scipy ``least_squares``, soft L1), each source weighing √n in
total, and a weak Gaussian prior on every term from physics or micro-benchmarks (``PRIORS``,
never from the rows being fitted; ``priors/calibration.yaml``). Collective terms are fitted first to all-reduce
micro-benchmarks when the file has them. Only terms the rows constrain are fitted: a term on
which fewer than ``MIN_ROWS_PER_TERM`` rows depend, or whose standard error the data do not
bring below most of its prior's spread, keeps the base profile's value; too few rows for the
terms left is refused. Every fold of leave-one-source-out validation refits on the other
sources, without rows that duplicate a held-out one, and predicts the held-out source.

The fit uses the rows whose prediction is a closed form of step times (offline runs whose
steady state is exact, static batches, batch-1 TTFT, closed-loop rows as their steady state):
their steps are built once (``closed_forms.Plan``), each trial of the terms only re-times them
(``efficiency.combine``), and a Jacobian's trials are evaluated together. Rows that run under
load (Server, Interactive, closed loop) are predicted by the load engine with the fitted
profiles and enter the reported errors - in sample, priors only and left out - but not the
fit: their latencies come out of the simulated schedule, never from fitted scheduling terms.
Rows whose engine is not known are left out (they would borrow another engine's profile).
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from .. import settings as table
from ..errors import InfeasibleError, SpecError, expect, plural, short
from ..model.assumptions import ACHIEVABLE
from ..specs.engine import EngineProfile, load_engine
from . import comparison
from . import predicting as pr
from .calibration_report import (
    Calibration,
    TermFit,
    report_left_out,
)
from .fit_problem import ENGINE_TERMS, Problem, build_problem, fit, residuals
from .priors import (
    MICRO_PRIORS,
    MICRO_ROWS_PER_TERM,
    PRIOR_WEIGHT,
    PRIORS,
    engine_priors,
    engine_specific,
    prior_means,
    with_run_terms,
)
from .reading import load_measured
from .semantics import publication

#: A term needs this many rows that depend on it to be fitted.
MIN_ROWS_PER_TERM = 3
#: A row depends on a term when d log(prediction) / d log(term) exceeds this.
SENSITIVITY = 0.02
# --- calibrate --------------------------------------------------------------------------------


#: How rows are grouped for leave-one-out validation: by source (one MLPerf submitter, one
#: vendor table...) or by publication (MLPerf Inference v4.1 as one).
SPLITS = ("source", "publication")


def calibrate(
    path,
    engine: str | None = None,
    holdout: bool = True,
    progress=None,
    split: str = "source",
    stated: dict | None = None,
) -> Calibration:
    """Fit the achievable preset's terms to the measured rows of ``path`` (§F10): those of
    ``engine``'s profile (default trtllm's), rows naming no engine taken as ``engine``'s where
    it is given and left out where it is not. ``stated``: columns for the rows that state
    none (``load_measured``: a benchmark tool's plain result)."""
    if split not in SPLITS:
        raise SpecError(
            "argument", "split", f"unknown split {short(split)}", f"choose {' or '.join(SPLITS)}"
        )
    if progress is not None and not callable(progress):
        raise SpecError(
            "argument", "progress", f"expected a function, got {short(progress)}", "e.g. print"
        )
    expect(holdout, bool, "holdout", "true or false", "holdout=False fits without leaving out")
    t0 = time.perf_counter()
    say = progress or (lambda message: None)
    notes: list = []
    problem, micro = prepare(path, engine, say, notes, unnamed=engine is not None, stated=stated)
    fixed = {k: v for k, v in micro.items() if "." not in k}
    priors, values, errors = fit_terms(problem, notes, say, exclude=set(fixed))
    keys = [p.key for p in priors]
    means = np.array([p.mean for p in priors])
    say("predicting every row with the fitted terms and with the priors")
    everything = np.arange(len(problem.all_rows))
    fitted = predict_with(problem, everything, keys, values)
    prior_pred = predict_with(problem, everything, keys, means)
    groups = problem.all_groups
    if split == "publication":
        groups = np.array([publication(g) for g in groups])
    held, by_source, dropped = np.full(len(groups), np.nan), [], 0
    if holdout and len(set(groups)) > 1:
        held, by_source, dropped = leave_one_out(problem, priors, values, groups, say)
    import pandas as pd

    fit_set = set(problem.rows)
    pred_table = pd.DataFrame(
        {
            "row": [r.row for r in problem.all_rows],
            "source": problem.all_groups,
            "scenario": [r.scenario for r in problem.all_rows],
            "quantity": [r.metric.quantity for r in problem.all_rows],
            "fitted_row": [k in fit_set for k in range(len(problem.all_rows))],
            "measured": problem.all_measured,
            "prior": prior_pred,
            "fitted": fitted,
            "held_out": held,
        }
    )
    m = problem.all_measured
    return Calibration(
        engine=problem.base_name,
        terms=_term_table(
            priors, values, errors, keys, notes, fixed, problem.step_engine, problem.base_name
        ),
        rows=len(problem.all_rows),
        sources=tuple(sorted(set(groups))),
        in_sample=_errors(fitted / m - 1.0),
        prior_only=_errors(prior_pred / m - 1.0),
        held_out=_errors(held / m - 1.0),
        by_source=tuple(by_source),
        predictions=pred_table,
        dropped_duplicates=dropped,
        source=str(path),
        seconds=time.perf_counter() - t0,
        notes=tuple(notes),
        micro=tuple((k, (v, micro[f"se.{k}"])) for k, v in fixed.items()),
        stated=tuple((k, v) for k, v in (stated or {}).items() if v not in (None, "")),
        split=split,
    )


def select_terms(problem, priors, older, newer, notes: list, say=lambda m: None) -> tuple:
    """The terms kept by the time rule (docs/validation.md): fitted on the ``older`` fitted
    rows, a term whose reset to its prior lowers the error on the ``newer`` fitted rows
    (median plus 90th-percentile |predicted/measured - 1|) is not used. Terms are dropped one
    at a time, the one whose reset helps most first, refitting the others on ``older`` after
    each, until no reset helps. Returns the priors kept."""
    older, newer = np.asarray(older, bool), np.asarray(newer, bool)
    kept = list(priors)

    def score(values) -> float:
        pred = problem.predict(values, [p.key for p in kept])[0][newer]
        e = np.abs(pred / problem.measured[newer] - 1.0)
        e = np.where(np.isfinite(e), e, 10.0)
        return float(np.median(e) + np.quantile(e, 0.9)) if len(e) else 0.0

    values, _ = fit(problem, tuple(kept), subset=older)
    current = score(values)
    while kept:
        trials = []
        for k, p in enumerate(kept):
            reset = np.array(values, dtype=float)
            reset[k] = p.mean
            trials.append(score(reset))
        k = int(np.argmin(trials))
        if not trials[k] < current - 1e-6:
            break
        p = kept.pop(k)
        notes.append(
            f"{p.key}: not used, the time rule: fitted on the older rows it makes the newer "
            f"ones worse than its prior ({current:.3f} against {trials[k]:.3f}, median + p90)"
        )
        say(f"time rule: {p.key} left at its prior {p.mean:g}")
        if not kept:
            break
        values, _ = fit(problem, tuple(kept), subset=older)
        current = score(values)
    return tuple(kept)


def fit_terms(problem, notes: list, say, exclude=frozenset(), subset=None):
    """(priors, values, standard errors) of the terms the rows (``subset`` of the fitted rows:
    all by default) constrain: those enough rows depend on, fitted, then refitted without the
    ones the rows do not pin down (§F10)."""
    priors = _usable_priors(problem, notes, say, exclude=exclude, subset=subset)
    say(f"fitting {len(priors)} terms to {len(problem.rows)} rows")
    values, errors = fit(problem, priors, subset=subset)
    return _drop_unconstrained(problem, priors, values, errors, notes, say, subset=subset)


def prepare(
    path, engine: str | None, say, notes: list, unnamed: bool = False, stated: dict | None = None
):
    """(the rows' ``Problem`` with the micro-benchmark terms set, those terms) of a file;
    ``unnamed``: rows naming no engine are ``engine``'s (else left out). Every row the fit
    cannot use is reported (``report_left_out``); a file with no row it can use is one error
    naming the file (``nothing_usable``)."""
    say(f"reading {path}")
    rows = load_measured(path, stated)
    base = load_engine(engine or table.default("engine", "calibrate"))
    micro = _fit_micro(rows, base, notes, say)
    collective = {k: v for k, v in micro.items() if "." not in k}
    say("building the steps of every row")
    problem = build_problem(  # ``unnamed``: rows naming no engine are ``engine``'s
        rows, base, collective, notes, source=str(path), unnamed=base if unnamed else None
    )
    report_left_out(str(path), rows, problem.engine_left_out, collective)
    if len(problem.rows) == 0:
        raise InfeasibleError(
            f"{path}: no end-to-end row with status ok to fit (run compare-measured to see why)"
        )
    return problem, micro


def leave_one_out(problem, priors, values, groups, say=lambda m: None):
    """(held-out predictions of every usable row, per-group errors, fitted rows dropped as
    duplicates): each group of ``groups`` (one per usable row) predicted by a fit on the fitted
    rows of the other groups, without rows that repeat one of the group's rows."""
    keys = [p.key for p in priors]
    held = np.full(len(groups), np.nan)
    fit_groups = groups[problem.rows] if len(problem.rows) else np.array([])
    by_group, dropped = [], 0
    names = sorted(set(groups))
    for k, name in enumerate(names, 1):
        test = groups == name
        train = (fit_groups != name) & ~_duplicates(problem, test)
        dropped += int((fit_groups != name).sum() - train.sum())
        say(f"leaving out {k}/{len(names)}: {name} ({int(test.sum())} rows)")
        v, _ = fit(problem, priors, subset=train, x0=values)
        index = np.flatnonzero(test)
        held[index] = predict_with(problem, index, keys, v)
        m = problem.all_measured[index]
        by_group.append((name, len(index), *_errors(held[index] / m - 1.0).values()))
    return held, by_group, dropped


def profiles_with(problem, keys, values) -> dict:
    """Every engine profile of the problem with fitted terms ``values`` (by ``keys``): the
    shared terms, except those a profile has its own value of, and its own terms."""
    out = {}
    for name, base in problem.base.items():
        out[name] = apply_terms(base, keys, values, problem.base_name)
    return out


def apply_terms(profile: EngineProfile, keys, values, base_name: str) -> EngineProfile:
    """``profile`` with the fitted terms that apply to it (shared ones unless it has its own
    value of the term; its own ones, keyed "name.term")."""
    changes = {}
    for key, value in zip(keys, np.asarray(values, float)):
        engine, _, term = key.rpartition(".")
        if engine == profile.name or (
            not engine and not engine_specific(term, profile.name, base_name)
        ):
            changes[term] = float(value)
    return profile.replace(**changes) if changes else profile


def predict_file(problem, rows, keys, values):
    """(predictions in SI units, layouts, statuses, engines) of any measured rows (another
    file's: a held-out round) under the problem's fit: each row's engine profile with every
    fitted term at its prior, the micro-benchmark terms, then ``values`` where they apply
    (``apply_terms``). Rows whose engine is unknown keep their unresolved status."""
    micro = {
        k: v
        for k, v in problem.base[problem.base_name].terms().items()
        if k in {p.term for ps in MICRO_PRIORS.values() for p in ps}
    }
    engines = {}
    for i, e in pr.resolve_engines(rows, ENGINE_TERMS).items():
        if isinstance(e, pr.RowEngine):
            prof = e.profile.replace(**{**prior_means(), **micro})
            e = dataclasses.replace(e, profile=apply_terms(prof, keys, values, problem.base_name))
        engines[i] = e
    return comparison.predict_rows(rows, ACHIEVABLE, engines=engines)


def predict_with(problem, index, keys, values) -> np.ndarray:
    """Predictions (SI) of the usable rows at ``index`` with every profile's terms set to
    ``values``: steady rows as closed forms, rows under load simulated."""
    index = np.asarray(index, dtype=int)
    if not len(index):
        return np.zeros(0)
    profiles = profiles_with(problem, keys, values)
    rows = [problem.all_rows[k] for k in index]
    engines = {}
    for n, k in enumerate(index):
        e = problem.all_engines[k]
        engines[n] = dataclasses.replace(
            e, profile=with_run_terms(profiles[e.profile.name], e.profile)
        )
    predicted, *_ = comparison.predict_rows(rows, ACHIEVABLE, engines=engines)
    return predicted


def _errors(e) -> dict:
    a = np.abs(np.asarray(e, float))
    a = a[np.isfinite(a)]
    if len(a) == 0:
        return {"median": math.nan, "p90": math.nan, "bias": math.nan}
    signed = np.asarray(e, float)
    return {
        "median": float(np.median(a)),
        "p90": float(np.quantile(a, 0.9)),
        "bias": float(np.median(signed[np.isfinite(signed)])),
    }


def _usable_priors(problem: Problem, notes: list, say, exclude=frozenset(), subset=None):
    """The priors of terms at least ``MIN_ROWS_PER_TERM`` rows (of ``subset``) depend on (an
    engine's own terms for each profile in the data but the reference); refuses when too few
    rows are left for them."""
    mask = np.ones(len(problem.rows), bool) if subset is None else np.asarray(subset, bool)
    engines = set(problem.step_engine)
    cands = [p for p in PRIORS + engine_priors(engines, problem.base_name) if p.term not in exclude]
    keys = [p.key for p in cands]
    x = np.array([p.mean for p in cands])
    h = 0.05
    trials = np.vstack([x, x * (1 + h) + (x == 0) * np.array([p.sd for p in cands]) * h])
    trials = np.vstack(
        [x] + [np.where(np.arange(len(x)) == k, trials[1], x) for k in range(len(x))]
    )
    pred = np.log(problem.predict(trials, keys))[:, mask]
    steps = np.log(trials[1:][np.arange(len(x)), np.arange(len(x))] / np.where(x == 0, 1.0, x))
    steps = np.where(x == 0, h, steps)
    sens = np.abs((pred[1:] - pred[0]) / steps[:, None])
    sens = np.where(np.isfinite(sens), sens, 0.0)
    usable = []
    for k, p in enumerate(cands):
        n = int((sens[k] > SENSITIVITY).sum())
        if n >= MIN_ROWS_PER_TERM:
            usable.append(p)
        else:
            notes.append(
                f"{p.key}: not fitted, {n} row(s) depend on it (needs {MIN_ROWS_PER_TERM}: {p.rows})"
            )
    need = len(usable) + 2
    have = int(mask.sum())
    if not usable:  # nothing to fit: an empty fit has no predictions to index
        kinds = "; ".join(sorted({p.rows for p in cands}))
        raise InfeasibleError(
            f"the {have} usable {plural(have, 'row')} {'pins' if have == 1 else 'pin'} down "
            f"none of the {len(cands)} "
            f"terms: calibrate needs rows that depend on them ({kinds})"
        )
    if have < need:
        kinds = "; ".join(sorted({p.rows for p in usable}))
        raise InfeasibleError(
            f"{have} usable {plural(have, 'row')} cannot fit {len(usable)} "
            f"{plural(len(usable), 'term')}: calibrate needs "
            f"at least {need}, {need - have} more ({kinds})"
        )
    return tuple(usable)


def _drop_unconstrained(problem, priors, values, errors, notes, say, subset=None):
    """Refit without the terms the rows do not pin down: a term whose standard error is as
    large as its value, or whose information comes mostly from its prior (§F10), until every
    term left is pinned down (a refit can push another term onto its bound of zero)."""
    while True:
        kept = _drop_unconstrained_once(problem, priors, values, errors, notes, say, subset)
        if len(kept[0]) == len(priors):
            return kept
        priors, values, errors = kept


def _drop_unconstrained_once(problem, priors, values, errors, notes, say, subset=None):
    """One pass of ``_drop_unconstrained``: the same terms back when none is weak."""
    share = _data_share(problem, priors, values, subset)
    weak = [
        k
        for k, p in enumerate(priors)
        if errors[k] >= abs(values[k]) or share[k] < 0.5 or not np.isfinite(errors[k])
    ]
    if not weak:
        return priors, values, errors
    for k in weak:
        p = priors[k]
        notes.append(
            f"{p.key}: not fitted, the rows leave it at {values[k]:.3g} +- {errors[k]:.2g} with "
            f"{share[k]:.0%} of its information from the data; needs more {p.rows}"
        )
    keep = [p for k, p in enumerate(priors) if k not in weak]
    have = len(problem.rows) if subset is None else int(np.sum(subset))
    if have < len(keep) + 2 or not keep:
        kinds = "; ".join(sorted({priors[k].rows for k in weak}))
        raise InfeasibleError(
            f"{_unpinned(priors, keep, have)}; calibrate needs more varied rows ({kinds})"
        )
    dropped = ", ".join(priors[k].key for k in weak)
    say(
        f"dropping {dropped} (the rows do not pin {'it' if len(weak) == 1 else 'them'} down); "
        f"refitting the {len(keep)} {plural(len(keep), 'term')} left"
    )
    x0 = np.array([values[k] for k, _ in enumerate(priors) if k not in weak])
    values, errors = fit(problem, tuple(keep), subset=subset, x0=x0)
    return tuple(keep), values, errors


def _unpinned(priors, keep, have: int) -> str:
    """What a fit's rows leave: no term of the fit pinned down, or too few rows for the
    terms they pin down."""
    n = len(priors)
    if not keep:
        if n == 1:
            return f"the rows do not pin down the one term left ({priors[0].key})"
        return f"the rows pin down none of the {n} terms of the fit"
    k = len(keep)
    return f"{have} rows cannot fit the {k} {plural(k, 'term')} they pin down (needs {k + 2})"


def _data_share(problem, priors, values, subset=None) -> np.ndarray:
    """Per term, the share of its information (the diagonal of JᵀJ in prior-SD units) that
    comes from the rows rather than from its prior."""
    keys = [p.key for p in priors]
    sd = np.array([p.sd for p in priors])
    h = 1e-3 * np.maximum(np.abs(values / sd), 1.0) * sd
    trials = np.vstack([values, values + np.diag(h)])
    r = residuals(problem, trials, keys, priors)[:, : len(problem.rows)]
    if subset is not None:
        r = r[:, np.asarray(subset, bool)]
    J = (r[1:] - r[0]) / (h / sd)[:, None]
    data = np.sum(np.where(np.isfinite(J), J, 0.0) ** 2, axis=1)
    return data / (data + problem.prior_weight**2)


def _duplicates(problem: Problem, test: np.ndarray) -> np.ndarray:
    """Fitted rows that repeat a held-out row (``test``: a mask over the usable rows) - the
    same system, metric and value."""

    def key(r):
        return (r.arch.name, r.gpu.name, r.gpus, r.metric.quantity, r.scenario, round(r.value, 6))

    held = {key(r) for r, t in zip(problem.all_rows, test) if t}
    return np.array([key(problem.all_rows[i]) in held for i in problem.rows], dtype=bool)


def _term_table(priors, values, errors, keys, notes, micro=(), engines=(), base_name="") -> tuple:
    """Fitted terms, then the others with why not (terms set by micro-benchmarks left out:
    ``Calibration.micro`` holds them)."""
    out = [TermFit(p.key, float(v), float(e), p, True) for p, v, e in zip(priors, values, errors)]
    fitted = {p.key for p in priors} | set(micro)
    micro_terms = [p for ps in MICRO_PRIORS.values() for p in ps]
    own = tuple(
        p for p in engine_priors(engines, base_name) if p.key not in {q.key for q in priors}
    )
    for p in PRIORS + tuple(q for q in micro_terms if q not in PRIORS) + own:
        if p.key not in fitted:
            note = next((n for n in notes if n.startswith(p.key + ":")), "")
            if not note and p.engine:
                note = f"{p.key}: not fitted, no rows served by this engine"
            out.append(TermFit(p.key, math.nan, None, p, False, note))
    return tuple(out)


def _fit_micro(rows, base: EngineProfile, notes: list, say) -> dict:
    """Terms fitted to micro-benchmark rows first (§F6: all-reduce bus bandwidth; §F1:
    streaming bandwidth), each set when there are enough rows; {term: value}."""
    from scipy.optimize import least_squares

    out: dict = {}
    for quantity, priors in MICRO_PRIORS.items():
        data = [r for r in rows if r.ok and r.kind == "micro" and r.metric.quantity == quantity]
        if len(data) < MICRO_ROWS_PER_TERM * len(priors):
            if data:
                notes.append(
                    f"{quantity} micro-benchmarks: {len(data)} row(s), too few to fit "
                    f"{', '.join(p.term for p in priors)} (needs {MICRO_ROWS_PER_TERM * len(priors)})"
                )
            continue
        say(f"fitting {', '.join(p.term for p in priors)} to {len(data)} {quantity} rows")
        measured = np.array([r.value for r in data])

        def fun(x, priors=priors, data=data, measured=measured):
            prof = base.replace(**{p.term: v for p, v in zip(priors, x)})
            pred = np.array([comparison.predict_micro(r, ACHIEVABLE, prof) for r in data])
            prior = [(x[k] - p.mean) / p.sd for k, p in enumerate(priors)]
            return np.concatenate([np.log(pred / measured), PRIOR_WEIGHT * np.array(prior)])

        lo, hi = [p.lower for p in priors], [p.upper for p in priors]
        res = least_squares(fun, [p.mean for p in priors], bounds=(lo, hi))
        n = len(data)
        s2 = max(float(np.sum(res.fun[:n] ** 2)) / max(1, n - len(priors)), 1e-12)
        se = np.sqrt(np.clip(np.diag(np.linalg.pinv(res.jac.T @ res.jac) * s2), 0, None))
        for p, v, e in zip(priors, res.x, se):
            out[p.term] = float(v)
            notes.append(f"{p.term}: {v:.4g} +- {e:.2g} from {n} {quantity} micro-benchmark rows")
            out[f"se.{p.term}"] = float(e)
    return out
