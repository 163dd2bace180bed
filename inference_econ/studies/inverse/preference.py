"""The preference exponent k: which speed^k/price optimum explains where providers sit.

The paper (§4, Eq. 45) assumes customers value a token at speed^k and providers therefore serve
at the frontier point maximising speed^k/price; it picks k = 3 to match observed offers. Here
k is fitted: each observed offer is assumed to be its model's optimum, so its speed is predicted
by the frontier's elasticity d ln(cost)/d ln(speed) = k (a constant markup changes no optimum,
so only the speeds carry information about k). The fit is least squares on ln(speed) and its
interval a profile likelihood (docs/model.md §D4).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ... import settings as table
from ...errors import InfeasibleError, SpecError, plural
from ..observations import Observation, as_observation
from .grid import speed_cost_grid
from .variants import (
    InverseOptions,
    Variant,
    context_of,
    hardware_specs,
    preset_names,
    setting_for,
)

#: Confidence level of the interval.
CONFIDENCE = 0.95
#: Values of k searched (log-spaced), and how many.
K_BOUNDS = (0.1, 20.0)
K_COUNT = 2000


@dataclass(frozen=True)
class PreferenceCurve:
    """A frontier reduced to its elasticity: the speed that maximises speed^k/cost for any k,
    and back (§D4). Built from the lower convex hull of (ln speed, ln cost); the elasticity is
    0 at the cheapest point, the hull's segment slopes at their midpoints, linear in between,
    and grows without bound towards the fastest point."""

    x: np.ndarray  # ln speed of the hull's vertices, cheapest (slowest) first
    knots_x: np.ndarray  # x_0, then the segments' midpoints
    knots_k: np.ndarray  # 0, then the segments' slopes (strictly increasing)

    @classmethod
    def from_points(cls, tokens_per_s, usd_per_mtok) -> PreferenceCurve:
        """From a frontier's points (speed ascending, cost ascending)."""
        x, y = _lower_hull(np.log(tokens_per_s), np.log(usd_per_mtok))
        slopes = np.diff(y) / np.diff(x)
        keep = slopes > 0  # past the cheapest point cost only rises with speed
        start = int(np.argmax(keep)) if keep.any() else len(x) - 1
        x, y = x[start:], y[start:]
        slopes = np.diff(y) / np.diff(x)
        mid = 0.5 * (x[:-1] + x[1:])
        return cls(
            x=x, knots_x=np.concatenate([[x[0]], mid]), knots_k=np.concatenate([[0.0], slopes])
        )

    def log_speed_at(self, k) -> np.ndarray:
        """ln of the speed that maximises speed^k/cost (vectorised over k)."""
        k = np.asarray(k, dtype=float)
        if len(self.x) == 1:
            return np.full(k.shape, self.x[0])
        s_last, m_last = self.knots_k[-1], self.knots_x[-1]
        inside = np.interp(k, self.knots_k, self.knots_x)
        with np.errstate(divide="ignore"):
            beyond = self.x[-1] - (self.x[-1] - m_last) * s_last / np.maximum(k, s_last)
        return np.where(k <= s_last, inside, beyond)

    def k_at(self, tokens_per_s: float) -> float | None:
        """The k whose optimum is this speed (0 below the cheapest point, inf above the
        fastest; None for a one-point frontier)."""
        if len(self.x) == 1:
            return None
        x = math.log(tokens_per_s)
        s_last, m_last = self.knots_k[-1], self.knots_x[-1]
        if x <= self.x[0]:
            return 0.0
        if x <= m_last:
            return float(np.interp(x, self.knots_x, self.knots_k))
        if x < self.x[-1]:
            return float(s_last * (self.x[-1] - m_last) / (self.x[-1] - x))
        return math.inf


def _lower_hull(x: np.ndarray, y: np.ndarray):
    """Vertices of the lower convex hull of points sorted by x (monotone chain)."""
    hull: list[int] = []
    for i in range(len(x)):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # drop b if it lies on or above the line from a to i
            if (y[b] - y[a]) * (x[i] - x[a]) >= (y[i] - y[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        if hull and x[i] == x[hull[-1]]:
            continue  # same speed: the cheaper (earlier) one stays
        hull.append(i)
    idx = np.array(hull, dtype=int)
    return x[idx], y[idx]


@dataclass(frozen=True)
class PreferencePoint:
    """One observed offer in the fit: the k it implies alone and the speed fitted at k̂."""

    observation: Observation
    model: str
    weight_bits: float
    implied_k: float | None
    fitted_tokens_per_s: float
    residual_log_speed: float
    speed_at_k3_tokens_per_s: float
    cost_usd_per_mtok: float
    markup: float | None
    context_tokens: (
        float  # the context its frontier was computed at (the offer's, else the option's)
    )


@dataclass(frozen=True, eq=False)
class PreferenceFit:
    """The fitted exponent, its interval, the points and the profile it came from."""

    k: float
    interval: tuple[float, float] | None
    confidence: float
    sigma_log_speed: float | None
    sigma_estimated: bool
    method: str
    points: tuple[PreferencePoint, ...]
    profile: pd.DataFrame  # k, rss, log_likelihood (profile over σ when it is estimated)
    notes: tuple[str, ...]

    @property
    def summary(self) -> str:
        if self.interval is None:
            span = "no interval (see the notes)"
        else:
            lo, hi = self.interval
            span = f"{self.confidence:.0%} interval {lo:.2f}–{_upper(hi)}"
        return f"k = {self.k:.2f} ({span}) from {len(self.points)} observations"

    def to_dataframe(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "provider": p.observation.provider,
                    "model": p.model,
                    "weight_bits": int(p.weight_bits)
                    if float(p.weight_bits).is_integer()
                    else p.weight_bits,
                    "tokens_per_s": p.observation.tokens_per_s,
                    "implied_k": p.implied_k,
                    "fitted_tokens_per_s": p.fitted_tokens_per_s,
                    "residual_log_speed": p.residual_log_speed,
                    "k3_tokens_per_s": p.speed_at_k3_tokens_per_s,
                    "usd_per_mtok": p.cost_usd_per_mtok,
                    "markup": p.markup,
                }
                for p in self.points
            ]
        )


def _upper(hi: float) -> str:
    return f"{hi:.2f}" if hi < K_BOUNDS[1] else f"≥ {K_BOUNDS[1]:g} (not bounded)"


def fit_preference(
    observations,
    options: InverseOptions | None = None,
    *,
    weight_bits: float | None = None,
    log_speed_sd: float | None = None,
    **settings,
) -> PreferenceFit:
    """Fit k of speed^k/price to observed offers of one or more models (§D4).

    Parameters
    ----------
    observations : Observation or sequence of Observation
        The offers, of one model or several.
    options : InverseOptions, optional
        The settings (keywords replace its fields): one GPU (``hardware``) and one preset
        (``assumptions``); the draft model at ``acceptance`` (``draft=None``: no speculation).
    weight_bits : float, optional
        The precision of an offer whose row gives none (else the model file's).
    log_speed_sd : float, optional
        The noise of an observed ln(speed); by default estimated from the residuals.

    Returns
    -------
    PreferenceFit
        ``k``, its 95 % profile-likelihood interval and each offer's point.

    Examples
    --------
    >>> import inference_econ as ie
    >>> fit = ie.fit_preference(ie.load_observations("paper-2025"), grid_points=60)
    >>> 1 < fit.k < 5
    True
    """
    opts = InverseOptions.of(options, **settings)
    observations = _observations(observations)
    gpu = _one(hardware_specs(opts.hardware), "hardware")
    preset = _one(preset_names(opts.assumptions), "assumptions")
    if weight_bits is not None:
        weight_bits = table.option("weight_bits").check(weight_bits)
    if log_speed_sd is not None:
        log_speed_sd = table.option("log_speed_sd").check(log_speed_sd)
    alpha = opts.acceptance if opts.draft is not None else None
    shared: dict = {}  # the offers of one model, precision and context share its frontier
    frontiers = [_frontier(o, opts, gpu, preset, weight_bits, alpha, shared) for o in observations]
    curves = [curve for curve, _, _, _ in frontiers]
    x_obs = np.log([o.tokens_per_s for o in observations])
    ks = np.geomspace(*K_BOUNDS, K_COUNT)
    predicted = np.stack(_each_curve(curves, ks))  # (points, k)
    rss = ((x_obs[:, None] - predicted) ** 2).sum(axis=0)
    k_hat = _refine_minimum(curves, x_obs, ks, rss)
    rss_hat = _rss(curves, x_obs, k_hat)
    interval, sigma, estimated, how, extra = _interval(
        curves, x_obs, ks, rss, k_hat, rss_hat, log_speed_sd
    )
    n = len(observations)
    loglik = -0.5 * n * np.log(np.maximum(rss, 1e-300) / n) if estimated else -0.5 * rss / sigma**2
    points = _points(observations, frontiers, k_hat, alpha, opts)
    _refuse_all_outside(points)
    draft, acceptance, max_draft_tokens = opts.draft, opts.acceptance, opts.max_draft_tokens
    notes = (
        _notes(points, gpu.name, preset, draft, acceptance, max_draft_tokens, opts.grid_points, how)
        + extra
    )
    return PreferenceFit(
        k=k_hat,
        interval=interval,
        confidence=CONFIDENCE,
        sigma_log_speed=sigma,
        sigma_estimated=estimated,
        method=how,
        points=points,
        profile=pd.DataFrame({"k": ks, "rss": rss, "log_likelihood": loglik}),
        notes=notes,
    )


def _observations(observations) -> tuple[Observation, ...]:
    """The offers fitted, as observations (one offer alone is one); none at all is refused."""
    if isinstance(observations, Observation):
        observations = (observations,)
    if isinstance(observations, (str, bytes)) or not isinstance(observations, Iterable):
        observations = (observations,)  # refused, as anything else, by as_observation
    observations = tuple(as_observation(o, "observations") for o in observations)
    if not observations:
        raise SpecError(
            "argument", "observations", "none given", "give at least one observed offer"
        )
    return observations


def _frontier(obs: Observation, opts: InverseOptions, gpu, preset: str, weight_bits, alpha, shared):
    """An offer's model's frontier in the fit's setting, at the offer's precision (else
    ``weight_bits``, else the model file's) and context: (its ``PreferenceCurve``, its grid,
    the architecture, the weight bits), taken from ``shared`` where an earlier offer built it;
    a model with no feasible configuration is refused."""
    arch = obs.architecture()
    b = obs.weight_bits or weight_bits or arch.precision.weight_bits
    context = context_of(obs, opts.context_tokens)
    key = (arch, float(b), context)
    if key in shared:
        return shared[key]
    setting = setting_for(
        arch, Variant(gpu.name, preset, float(b), gpu), opts.draft, opts.max_draft_tokens, context
    )
    grid = speed_cost_grid(setting, opts.grid_points)
    speed, cost = grid.pareto(alpha)
    if speed.size == 0:
        raise InfeasibleError(f"{obs.origin}: {setting.name} has no feasible configuration")
    shared[key] = PreferenceCurve.from_points(speed, cost), grid, arch, float(b)
    return shared[key]


def _points(observations, frontiers, k_hat: float, alpha, opts: InverseOptions) -> tuple:
    """Each offer in the fit (``PreferencePoint``): the k it implies alone, its speed at k̂,
    our cost at its speed and its price's markup over that cost."""
    return tuple(
        _point(
            o,
            arch,
            bits,
            curve,
            grid.cost_at_speed(o.tokens_per_s, alpha),
            k_hat,
            o.price(opts.offer_price, opts.input_tokens_per_output),
            grid.setting.context_tokens,
        )
        for o, (curve, grid, arch, bits) in zip(observations, frontiers)
    )


def _refuse_all_outside(points) -> None:
    """Refuse a fit where every offer lies beyond its frontier: k̂ would only be a bound."""
    outside = [p for p in points if p.implied_k is not None and p.implied_k in (0.0, math.inf)]
    if len(outside) == len(points):
        said = "; ".join(
            f"{p.observation.label} is "
            + ("faster than its frontier's fastest" if p.implied_k else "slower than its cheapest")
            + " point"
            for p in outside
        )
        raise InfeasibleError(
            f"no k explains the offers ({said}): each lies outside its frontier in this setting "
            "(try speculation, another precision or GPU)"
        )


def _one(values: tuple, field: str):
    if len(values) != 1:
        raise SpecError(
            "argument", field, f"{len(values)} given", "the fit uses one setting: give one"
        )
    return values[0]


def _each_curve(curves, k) -> list:
    """Each offer's ln(speed) at ``k``, computed once per distinct curve (offers share them)."""
    at: dict[int, np.ndarray] = {}
    for c in curves:
        if id(c) not in at:
            at[id(c)] = c.log_speed_at(k)
    return [at[id(c)] for c in curves]


def _rss(curves, x_obs, k: float) -> float:
    return float(sum((x - s) ** 2 for x, s in zip(x_obs, _each_curve(curves, k))))


def _refine_minimum(curves, x_obs, ks, rss) -> float:
    """k̂: the best grid value, polished by a bounded scalar search between its neighbours."""
    from scipy.optimize import minimize_scalar

    i = int(np.argmin(rss))
    lo, hi = ks[max(i - 1, 0)], ks[min(i + 1, len(ks) - 1)]
    flat = np.flatnonzero(rss <= rss[i] * (1 + 1e-12) + 1e-15)
    if len(flat) > 1:  # a flat minimum (e.g. one point past the end): its middle, in log k
        return float(np.exp(np.log(ks[flat]).mean()))
    res = minimize_scalar(lambda k: _rss(curves, x_obs, k), bounds=(lo, hi), method="bounded")
    return float(res.x) if res.fun <= rss[i] else float(ks[i])


def _interval(curves, x_obs, ks, rss, k_hat, rss_hat, sd):
    """The profile-likelihood interval {k : RSS(k) <= threshold} and how it was set."""
    from scipy.special import chdtri, fdtri  # quantiles, without importing scipy.stats

    n = len(x_obs)
    extra: tuple[str, ...] = ()
    if sd is not None:
        threshold = rss_hat + chdtri(1, 1 - CONFIDENCE) * sd**2
        sigma, estimated = sd, False
        how = (
            f"profile likelihood, known noise σ(ln speed) = {sd:g}: RSS(k) − RSS(k̂) ≤ χ²₁(0.95)·σ²"
        )
    elif n < 2:
        how = "one observation determines k exactly; no interval without a noise level"
        extra = ("give log_speed_sd (--log-speed-sd) for an interval",)
        return None, None, True, how, extra
    else:
        sigma, estimated = math.sqrt(rss_hat / (n - 1)), True
        threshold = rss_hat * (1 + fdtri(1, n - 1, CONFIDENCE) / (n - 1))
        how = (
            "profile likelihood, noise estimated from the residuals: "
            f"RSS(k) ≤ RSS(k̂)·(1 + F₁,{n - 1}(0.95)/{n - 1})"
        )
        if rss_hat <= 1e-12:
            extra = ("the observations fit exactly: the interval only reflects the grid",)
    inside = rss <= threshold
    inside[np.argmin(np.abs(ks - k_hat))] = True
    lo_i, hi_i = _contiguous(inside, int(np.argmin(np.abs(ks - k_hat))))
    lo = _edge(curves, x_obs, ks, lo_i, lo_i - 1, threshold) if lo_i > 0 else ks[0]
    hi = _edge(curves, x_obs, ks, hi_i, hi_i + 1, threshold) if hi_i < len(ks) - 1 else ks[-1]
    if hi_i == len(ks) - 1:
        extra += (f"the data do not bound k from above within k ≤ {K_BOUNDS[1]:g}",)
    if lo_i == 0:
        extra += (f"the data do not bound k from below within k ≥ {K_BOUNDS[0]:g}",)
    return (float(min(lo, k_hat)), float(max(hi, k_hat))), sigma, estimated, how, extra


def _contiguous(inside: np.ndarray, i: int) -> tuple[int, int]:
    lo = hi = i
    while lo > 0 and inside[lo - 1]:
        lo -= 1
    while hi < len(inside) - 1 and inside[hi + 1]:
        hi += 1
    return lo, hi


def _edge(curves, x_obs, ks, inside_i, outside_i, threshold) -> float:
    """Where RSS crosses the threshold between a grid value inside and one outside."""
    from scipy.optimize import brentq

    a, b = ks[inside_i], ks[outside_i]
    g = lambda k: _rss(curves, x_obs, k) - threshold  # noqa: E731
    if g(a) > 0 or g(b) <= 0:
        return float(a)
    return float(brentq(g, a, b, xtol=1e-6))


def _point(obs, arch, bits, curve, cost, k_hat, price, context) -> PreferencePoint:
    fitted = math.exp(float(curve.log_speed_at(k_hat)))
    return PreferencePoint(
        observation=obs,
        model=arch.name,
        weight_bits=bits,
        implied_k=curve.k_at(obs.tokens_per_s),
        fitted_tokens_per_s=fitted,
        residual_log_speed=math.log(obs.tokens_per_s) - math.log(fitted),
        speed_at_k3_tokens_per_s=math.exp(float(curve.log_speed_at(3.0))),
        cost_usd_per_mtok=cost,
        markup=price / cost if math.isfinite(cost) else None,
        context_tokens=context,
    )


def _notes(points, gpu, preset, draft, acceptance, max_draft, grid_points, how) -> tuple[str, ...]:
    past = [p for p in points if p.implied_k == math.inf]
    notes = [
        f"method: {how}; k searched from {K_BOUNDS[0]:g} to {K_BOUNDS[1]:g}",
        "each offer is assumed to be the speed^k/price optimum of its model's frontier; a constant "
        "markup moves no optimum, so prices do not enter the fit (markup = price / our cost at the "
        "observed speed)",
        f"frontiers: {gpu}, {preset} preset, "
        + (
            f"speculation with {draft} at α = {acceptance:.2f} (up to {max_draft} draft {plural(max_draft, 'token')})"
            if draft
            else "no speculation"
        )
        + f", {grid_points} grid points per axis; elasticity from the lower convex hull of ln cost "
        "against ln speed (docs/model.md §D4)",
    ]
    for p in past:
        notes.append(
            f"{p.observation.label} is faster than its frontier's fastest point: no k explains it "
            "in this setting (try speculation, another precision or GPU)"
        )
    return tuple(notes)
