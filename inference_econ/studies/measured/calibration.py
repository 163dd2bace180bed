"""Calibrating a GPU's achievable efficiencies to measured points (scipy least squares on log
speed), with standard errors and an out-of-sample error."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from ...errors import SpecError
from ...specs.hardware import GPU, derive
from .predicting import predict
from .reading import load_measured

PARAMETERS = (
    "sustained_flop_fraction",
    "sustained_hbm_bandwidth_fraction",
    "collective_latency_scale",
)
BOUNDS = ((0.05, 1.0), (0.05, 1.0), (0.0, 5.0))


def _residuals(theta, points, base: GPU, assumptions):
    gpu = derive(
        base, name=f"{base.name} (fit)", **dict(zip(PARAMETERS, (float(x) for x in theta)))
    )
    return np.array(
        [
            math.log(p.tokens_per_s / predict(p, gpu, assumptions)["predicted_tokens_per_s"])
            for p in points
        ]
    )


@dataclass(frozen=True)
class Calibration:
    """The fitted efficiencies of one GPU, their standard errors and the fit's errors."""

    hardware: str
    points: int
    held_out: int
    values: dict[str, float]
    errors: dict[str, float]
    #: Parameters the points do not move (kept at their prior value, no error bar).
    unconstrained: tuple[str, ...]
    rms_log_error_before: float
    rms_log_error_fit: float
    rms_log_error_held_out: float
    source: str


def calibrate(path: str | Path, assumptions="paper", holdout_every: int = 3) -> Calibration:
    """Fit the GPU's sustained FLOP and HBM fractions and its collective-latency scale to the
    measured speeds (least squares on log speed, scipy.optimize), excluding queueing points.

    Every ``holdout_every``-th point is held out of a first fit to report the out-of-sample
    error; the reported values come from a fit on all points, with standard errors from the
    Jacobian. Returns the values, their errors, the errors in and out of sample and the points.
    """
    from scipy.optimize import least_squares

    points = [p for p in load_measured(path) if not p.saturated]
    gpus = {p.gpu.name for p in points}
    if len(gpus) != 1:
        raise SpecError(
            str(path),
            "hardware",
            f"calibration needs one GPU type, found {sorted(gpus)}",
            "filter the file first",
        )
    if len(points) < len(PARAMETERS) + 1:
        raise SpecError(
            str(path),
            "",
            f"{len(points)} usable points",
            f"need at least {len(PARAMETERS) + 1} without queueing",
        )
    base = points[0].gpu
    x0 = np.array(
        [
            base.sustained_flop_fraction,
            base.sustained_hbm_bandwidth_fraction,
            base.collective_latency_scale,
        ]
    )
    lo, hi = np.array(BOUNDS).T

    def fit(subset):
        return least_squares(_residuals, x0, bounds=(lo, hi), args=(subset, base, assumptions))

    held = [
        p for i, p in enumerate(points) if holdout_every and i % holdout_every == holdout_every - 1
    ]
    train = [p for p in points if p not in held]
    out_of_sample = math.nan
    if held and len(train) >= 2:
        partial = fit(train)
        out_of_sample = float(np.sqrt(np.mean(_residuals(partial.x, held, base, assumptions) ** 2)))
    full = fit(points)
    dof = max(len(points) - len(PARAMETERS), 1)
    s2 = float(np.sum(full.fun**2)) / dof
    try:
        cov = np.linalg.pinv(full.jac.T @ full.jac) * s2
        errors = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        errors = np.full(len(PARAMETERS), math.nan)
    # a parameter the points do not move (e.g. FLOP/s when every point is memory-bound) is
    # not constrained: no error bar rather than a misleading zero
    unconstrained = np.linalg.norm(full.jac, axis=0) < 1e-9
    errors = np.where(unconstrained, math.nan, errors)
    before = _residuals(x0, points, base, assumptions)
    return Calibration(
        hardware=base.name,
        points=len(points),
        held_out=len(held),
        values=dict(zip(PARAMETERS, full.x.tolist())),
        errors=dict(zip(PARAMETERS, errors.tolist())),
        unconstrained=tuple(p for p, u in zip(PARAMETERS, unconstrained) if u),
        rms_log_error_before=float(np.sqrt(np.mean(before**2))),
        rms_log_error_fit=float(np.sqrt(np.mean(full.fun**2))),
        rms_log_error_held_out=out_of_sample,
        source=str(path),
    )


def calibrated_yaml(result: Calibration, name: str | None = None) -> str:
    """A hardware override file (``derive_from`` the datasheet spec) with the fitted values."""
    name = name or f"{result.hardware} (calibrated)"
    lines = [
        f"# Calibrated by 'inference-econ calibrate' on {Path(result.source).name}: {result.points} points,",
        f"# RMS log-speed error {result.rms_log_error_before:.3f} before, {result.rms_log_error_fit:.3f} after,"
        f" {result.rms_log_error_held_out:.3f} on {result.held_out} held-out points.",
        yaml.safe_dump({"name": name, "derive_from": result.hardware}, sort_keys=False).strip(),
    ]
    for key in PARAMETERS:
        err = result.errors[key]
        note = (
            "not constrained by these points (kept)"
            if key in result.unconstrained
            else f"fitted, standard error {err:.2g}"
        )
        lines.append(f"{key}: {result.values[key]:.4g}  # {note}")
    return "\n".join(lines) + "\n"
