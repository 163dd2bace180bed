"""The calibration problem (docs/model.md §F10): the usable rows of a measured file with their
engines' profiles, the steps of the rows the fit uses built once (``predicting.build_plan``),
how a vector of trial terms becomes predictions (each trial only re-times the steps,
``efficiency.combine``; a Jacobian's trials together) and weighted log residuals with the
priors as pseudo-rows, and the robust least-squares fit of the terms on a subset of the rows.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..model.assumptions import ACHIEVABLE
from ..model.efficiency import StepWork, combine
from ..specs.engine import EngineProfile
from ..specs.engine_terms import BY_TERM
from . import closed_forms, comparison
from . import predicting as pr
from .calibration_report import nothing_usable
from .priors import PRIOR_WEIGHT, RUN_TERMS, engine_specific, prior_means, with_run_terms
from .reading import MeasuredRow

#: The fit is of the engine profiles' terms: every row priced by them (the engine clock),
#: none from the kernel tables.
ENGINE_TERMS = ACHIEVABLE.replace(kernel_tables=False)

#: Residual of a row the trial terms cannot serve (no admissible batch).
FAIL = math.log(3.0)


@dataclass
class Problem:
    """The rows, their steps and how a vector of terms becomes predictions."""

    plan: closed_forms.Plan
    points: closed_forms.Points
    work: StepWork
    rows: list  # indices into plan.rows of the rows fitted (ok, end-to-end, with pairs)
    measured: np.ndarray
    groups: np.ndarray
    weights: np.ndarray
    base: dict  # engine name -> EngineProfile
    step_engine: np.ndarray
    point_engine: np.ndarray
    row_pos: dict = field(default_factory=dict)  # plan row index -> position in pts.rows
    base_name: str = "trtllm"
    #: Every usable row (end-to-end, ok, its engine known), fitted or not, with its engine and
    #: measured value (SI): what the reported errors cover.
    all_rows: list = field(default_factory=list)
    all_engines: list = field(default_factory=list)
    all_measured: np.ndarray = field(default_factory=lambda: np.zeros(0))
    all_groups: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: The profile of every step and every point, where a run sets ``RUN_TERMS`` on its own.
    step_profiles: tuple = ()
    point_profiles: tuple = ()
    #: Weight of one prior against one row (``PRIOR_WEIGHT``; nested cross-validation varies it).
    prior_weight: float = PRIOR_WEIGHT
    #: End-to-end rows with status ok left out because no profile of their engine is known:
    #: (line, reason).
    engine_left_out: tuple = ()
    _memo: dict = field(default_factory=dict)

    def term_arrays(self, term: str, level: str, keys: tuple):
        """(base values, [(key index, mask)]) of a term over the steps or the points."""
        memo = (term, level, keys)
        if memo not in self._memo:
            engines = self.step_engine if level == "step" else self.point_engine
            if term in RUN_TERMS:  # set by each run (its runtime): the value of its own profile
                runs = self.step_profiles if level == "step" else self.point_profiles
                base = np.array([p.value(term) for p in runs], float)
            else:
                values = {e: self.base[e].value(term) for e in set(engines)}
                base = np.array([values[e] for e in engines], float)
            own = [e for e in self.base if engine_specific(term, e, self.base_name)]
            masks = []
            for k, key in enumerate(keys):
                engine, _, name = key.rpartition(".")
                if name != term:
                    continue
                mask = engines == engine if engine else ~np.isin(engines, own)
                masks.append((k, mask))
            self._memo[memo] = (base, masks)
        return self._memo[memo]

    def predict(self, theta: np.ndarray, keys: list) -> np.ndarray:
        """Predictions (trials x fitted rows) for term vectors ``theta`` (trials x keys)."""
        theta = np.atleast_2d(theta)
        terms = _Terms(self, theta, keys)
        seconds = combine(self.work, terms).total_s
        value, score = closed_forms.metrics(self.plan, self.points, seconds)
        best, _ = closed_forms.best_per_row(self.points, value, score)
        return best[:, [self.row_pos[i] for i in self.rows]]


class _Terms:
    """Profile terms as arrays over (trials, steps): the base profiles' values, replaced by the
    trial's where a fitted key applies (a shared key to every engine without its own prior
    for the term, an engine's key to its steps)."""

    def __init__(self, problem: Problem, theta, keys) -> None:
        self.p, self.theta, self.keys = problem, theta, keys

    def _per(self, term: str, level: str):
        base, masks = self.p.term_arrays(term, level, tuple(self.keys))
        if not masks:  # not fitted: the base profiles' value (one number when they agree)
            return base[0] if np.all(base == base[0]) else base
        if len(masks) == 1 and masks[0][1].all():  # one shared key for every step
            return self.theta[:, masks[0][0] : masks[0][0] + 1]
        out = np.broadcast_to(base, (self.theta.shape[0], len(base)))
        for k, mask in masks:
            out = np.where(mask, self.theta[:, k : k + 1], out)
        return out

    def __getattr__(self, term: str):
        if term not in BY_TERM:
            raise AttributeError(term)
        return self._per(term, "step")


def residuals(problem: Problem, theta, keys, priors) -> np.ndarray:
    """Weighted log residuals of the rows, then the priors' pseudo-rows (trials x all)."""
    pred = problem.predict(theta, keys)
    r = np.log(pred / problem.measured)
    r = np.where(np.isfinite(r), r, FAIL)
    prior = np.array([(np.atleast_2d(theta)[:, k] - p.mean) / p.sd for k, p in enumerate(priors)]).T
    return np.concatenate([problem.weights * r, problem.prior_weight * prior], axis=1)


def fit(problem: Problem, priors, subset=None, x0=None):
    """(terms, standard errors, residuals) of a fit on ``subset`` of the rows."""
    from scipy.optimize import least_squares

    keys = [p.key for p in priors]
    scale = np.array([p.sd for p in priors])
    lo = np.array([p.lower for p in priors]) / scale
    hi = np.array([p.upper for p in priors]) / scale
    mask = np.ones(len(problem.rows), bool) if subset is None else subset
    n = int(mask.sum())
    keep = np.concatenate([mask, np.ones(len(priors), bool)])

    def fun(z):
        return residuals(problem, z * scale, keys, priors)[0][keep]

    def jac(z):
        h = 1e-3 * np.maximum(np.abs(z), 1.0)
        trials = np.vstack([z, z + np.diag(h)])
        trials = np.minimum(trials, hi)
        res = residuals(problem, trials * scale, keys, priors)[:, keep]
        return (
            (res[1:] - res[0]) / (trials[1:] - z)[np.arange(len(z)), np.arange(len(z))][:, None]
        ).T

    start = np.array([p.mean for p in priors]) if x0 is None else np.asarray(x0)
    z0 = np.clip(start / scale, lo, hi)
    res = least_squares(
        fun, z0, jac=jac, bounds=(lo, hi), loss="soft_l1", f_scale=0.1, max_nfev=60, x_scale=1.0
    )
    J = res.jac
    s2 = float(np.sum(res.fun[:n] ** 2)) / max(1, n - len(priors))
    cov = np.linalg.pinv(J.T @ J) * max(s2, 1e-12)
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None)) * scale
    return res.x * scale, se


def build_problem(
    rows: list[MeasuredRow],
    base: EngineProfile,
    collective: dict,
    notes: list | None = None,
    source: str = "measured rows",
    unnamed: EngineProfile | None = None,
) -> Problem:
    """The usable rows (end-to-end, status ok, engine known; ``unnamed``: the engine of rows
    naming none, else they are left out) with their engines' profiles (with
    the fitted collective terms), and the steps of the ones the fit uses, built once.
    ``base`` is the reference profile: every other profile gets its own kernel factor. The
    rows left out for their engine are the problem's ``engine_left_out`` (line, reason); no
    usable row is one error naming ``source`` (the file) and why each kind of row is not used."""
    profiles: dict = {}

    def adjusted(p: EngineProfile) -> EngineProfile:
        if p.name not in profiles:  # every fitted term at its prior: no earlier fit leaks in
            profiles[p.name] = p.replace(**{**prior_means(), **collective})
        return with_run_terms(profiles[p.name], p)

    usable, engines, unknown = [], [], []
    for r in rows:
        if r.kind != "end-to-end" or not r.ok or not closed_forms.predictable(r):
            continue  # (a figure the model does not predict: compare-measured's out of scope)
        e = pr.row_engine(r, ENGINE_TERMS, unnamed if r.engine is None else None)
        if not isinstance(e, pr.RowEngine):
            unknown.append((r.row, e))
            continue
        twin = closed_forms.output_rate_twin(r)  # a requests or token rate: its output rate
        usable.append(r if twin is None else dataclasses.replace(twin[0], value=r.value / twin[1]))
        engines.append(dataclasses.replace(e, profile=adjusted(e.profile)))
    if unknown and notes is not None:
        notes.append(
            f"{len(unknown)} row(s) left out: no profile of the engine they name (or none named)"
        )
    if not usable:  # nothing to build steps of: one line saying why, not a traceback
        raise nothing_usable(source, rows, unknown, collective)
    adjusted(base)
    plan = pr.build_plan(usable, ACHIEVABLE, engines=dict(enumerate(engines)), for_fit=True)
    if not plan.groups:  # no row has a step the fit can time (each too long for its GPUs...)
        why = [(usable[i].row, reason) for i, reason in sorted(plan.infeasible.items())]
        raise nothing_usable(source, rows, (*unknown, *why), collective)
    pts = closed_forms.Points.of(plan)
    work = plan.step_work()
    fit_rows = [int(i) for i in pts.rows]
    row_pos = {int(i): k for k, i in enumerate(pts.rows)}
    all_measured = np.array([si_value(r) for r in usable])
    all_groups = np.array([r.group for r in usable])
    measured = all_measured[fit_rows] if fit_rows else np.zeros(0)
    groups = all_groups[fit_rows] if fit_rows else np.array([])
    counts = {g: int((groups == g).sum()) for g in set(groups)}
    w = np.array([1.0 / math.sqrt(counts[g]) for g in groups])
    w = w / math.sqrt(np.mean(w**2)) if len(w) else w
    step_engine = np.array(plan.step_engines())
    point_engine = np.array([plan.engines[i].profile.name for i in pts.row])
    step_profiles = tuple(plan.step_profiles())
    point_profiles = tuple(plan.engines[i].profile for i in pts.row)
    by_name = dict(profiles)
    return Problem(
        plan,
        pts,
        work,
        fit_rows,
        measured,
        groups,
        w,
        by_name,
        step_engine,
        point_engine,
        row_pos=row_pos,
        base_name=base.name,
        all_rows=usable,
        all_engines=engines,
        all_measured=all_measured,
        all_groups=all_groups,
        step_profiles=step_profiles,
        point_profiles=point_profiles,
        engine_left_out=tuple(unknown),
    )


def si_value(row: MeasuredRow) -> float:
    """A row's measured value in SI units (seconds, tokens/s)."""
    return row.value * comparison._unit_scale(row)
