"""Holding the model against measured systems: predictions at measured operating points, and
calibration of a GPU's achievable efficiencies.

A measured point (``../shared/data/measured_public_sample.csv`` format) names a model, a
precision, a GPU, a GPU count and parallelism, a concurrency, input/output lengths and a metric.
We evaluate the model at exactly that layout and batch (tensor parallelism 1-D, as serving
engines implement it; context = input + output/2) and report measured / predicted. A roofline
should never be beaten by a real system by more than a few per cent; where it is, we say so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from .architecture import load_model
from .errors import SpecError, UnknownNameError
from .hardware import GPU, derive, load_hardware
from .latency import StepModel
from .optimiser import make_setting
from .workload import compile_workload

#: A system beating the roofline by more than this is reported (measured / predicted speed).
BEAT_TOLERANCE = 1.03

PRECISIONS = {
    "bf16": (16, 16, 16),
    "fp16": (16, 16, 16),
    "fp8": (8, 16, 8),
    "int8": (8, 16, 16),
    "fp4": (4, 16, 8),
    "nvfp4": (4, 16, 8),
    "mxfp4": (4, 16, 8),
    "int4": (4, 16, 16),
    "awq": (4, 16, 16),
}
REQUIRED = (
    "model",
    "precision",
    "hardware",
    "n_gpus",
    "parallelism",
    "batch_or_concurrency",
    "input_len",
    "output_len",
    "metric",
    "value",
    "unit",
)
SUFFIXES = ("instruct", "chat", "it", "hf", "base", "fp8", "bf16")


def resolve_model(name: str):
    """A measured file's model name to a model spec (drops -Instruct, -Chat and such)."""
    tokens = re.split(r"[-_ ]+", str(name).strip())
    while tokens:
        try:
            return load_model(" ".join(tokens))
        except UnknownNameError:
            if tokens[-1].lower() in SUFFIXES:
                tokens = tokens[:-1]
                continue
            break
    return load_model(name)  # raises with a did-you-mean hint


def resolve_hardware(name: str) -> GPU:
    """A measured file's GPU name ("H100 80GB") to a datasheet spec."""
    text = str(name).strip()
    for candidate in (text, text.split()[0], re.sub(r"\s*\d+\s*GB$", "", text, flags=re.I)):
        try:
            return load_hardware(candidate)
        except UnknownNameError:
            continue
    return load_hardware(text)


def parse_parallelism(text: str, gpus: int, source: str) -> dict:
    """'TP2', 'TP4PP2', 'EP8TP2' -> degrees; whatever is not given fills the GPUs with TP."""
    found = {k.lower(): int(v) for k, v in re.findall(r"(TP|PP|EP|DP)(\d+)", str(text).upper())}
    if not found:
        raise SpecError(
            source, "parallelism", f"cannot read {text!r}", "write degrees such as TP2, TP4PP2"
        )
    pp = found.get("pp", 1)
    dp = found.get("dp", 1)
    if gpus % (pp * dp):
        raise SpecError(
            source,
            "parallelism",
            f"{text} does not divide {gpus} GPUs",
            "degrees must multiply to the GPU count",
        )
    return {"pipeline": pp, "replicas": dp, "tensor": gpus // (pp * dp)}


def _speed(metric: str, value: float, unit: str, source: str) -> float:
    m, u = metric.lower(), unit.lower()
    if m in ("itl_mean", "itl", "tpot", "tpot_mean", "itl_median") and u in ("ms", "s"):
        return (1000.0 if u == "ms" else 1.0) / value
    if m in ("tokens_per_s_per_user", "output_tokens_per_s_per_request"):
        return value
    raise SpecError(
        source,
        "metric",
        f"cannot read a per-request speed from {metric!r} in {unit!r}",
        "use ITL_mean in ms, TPOT in ms or tokens_per_s_per_user",
    )


@dataclass(frozen=True)
class MeasuredPoint:
    """One measured operating point, resolved to our specs."""

    row: int
    source: str
    arch: object
    gpu: GPU
    weight_bits: float
    activation_bits: float
    kv_bits: float
    gpus: int
    pipeline: int
    replicas: int
    concurrency: float
    input_len: float
    output_len: float
    tokens_per_s: float
    throughput_per_gpu: float | None
    saturated: bool
    notes: str

    @property
    def batch_per_replica(self) -> float:
        return self.concurrency / self.replicas

    @property
    def context_tokens(self) -> float:
        return self.input_len + self.output_len / 2.0


def load_measured(path: str | Path) -> list[MeasuredPoint]:
    """Read and resolve a measured CSV; errors name the file, the row and the column."""
    path = Path(path)
    try:
        df = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise SpecError(str(path), "", f"cannot read the CSV: {exc}") from None
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise SpecError(
            str(path),
            missing[0],
            f"columns missing: {', '.join(missing)}",
            f"the columns are {', '.join(REQUIRED)}",
        )
    points = []
    for i, r in df.iterrows():
        where = f"{path}, row {i + 2}"
        try:
            arch = resolve_model(r["model"])
            gpu = resolve_hardware(r["hardware"])
        except SpecError as exc:
            raise SpecError(where, exc.field, exc.problem, exc.fix) from None
        bits = PRECISIONS.get(str(r["precision"]).strip().lower())
        if bits is None:
            raise SpecError(
                where,
                "precision",
                f"unknown precision {r['precision']!r}",
                f"one of {', '.join(PRECISIONS)}",
            )
        gpus = int(r["n_gpus"])
        layout = parse_parallelism(r["parallelism"], gpus, where)
        notes = str(r.get("notes", "") if pd.notna(r.get("notes", "")) else "")
        system = re.search(r"throughput\s+([\d.]+)\s*tok/s", notes)
        points.append(
            MeasuredPoint(
                row=i + 2,
                source=str(r.get("source", "")),
                arch=arch,
                gpu=gpu,
                weight_bits=bits[0],
                activation_bits=bits[1],
                kv_bits=bits[2],
                gpus=gpus,
                pipeline=layout["pipeline"],
                replicas=layout["replicas"],
                concurrency=float(r["batch_or_concurrency"]),
                input_len=float(r["input_len"]),
                output_len=float(r["output_len"]),
                tokens_per_s=_speed(str(r["metric"]), float(r["value"]), str(r["unit"]), where),
                throughput_per_gpu=float(system.group(1)) / gpus if system else None,
                saturated="saturated" in notes.lower() and float(r["batch_or_concurrency"]) >= 100,
                notes=notes,
            )
        )
    return points


def predict(
    point: MeasuredPoint,
    gpu: GPU | None = None,
    assumptions="paper",
    prefill_interference: bool = True,
) -> dict:
    """The model's latency at the measured layout and batch (1-D tensor parallelism).

    Benchmarks such as AIPerf keep the concurrency constant, so new prompts are prefilled on
    the same GPUs while others decode: with ``prefill_interference`` each decode step also
    carries the prefills of the B / n_out requests that arrive per step (as in
    ``disagg.compare``'s co-located case).
    """
    from .prefill import prefill

    gpu = gpu or point.gpu
    setting = make_setting(
        point.arch,
        gpu,
        weight_bits=point.weight_bits,
        activation_bits=point.activation_bits,
        kv_cache_bits=point.kv_bits,
        assumptions=assumptions,
    )
    work = compile_workload(setting.model, setting.model.precision, setting.assumptions)
    model = StepModel(work, gpu, setting.assumptions)
    n = float(point.gpus / point.replicas)
    # requests beyond what HBM holds queue: the engine runs the largest batch that fits
    kv_per_request = work.kv_cache_bytes(point.context_tokens + point.output_len / 2.0, 1.0)
    room = n * model.machine.usable_hbm_bytes - model.weights_bytes
    running = (
        min(point.batch_per_replica, max(1.0, math.floor(room / kv_per_request)))
        if kv_per_request > 0
        else point.batch_per_replica
    )
    N, B = np.array([n]), np.array([running])
    bd = model.breakdown(
        N, B, 1, point.context_tokens, np.array([float(point.pipeline)]), np.array([1.0]), False
    )
    latency = float(bd.latency_s[0])
    stall = 0.0
    if prefill_interference and math.isfinite(latency):
        pre = prefill(setting, n, point.input_len, batch=1.0)
        stall = running / point.output_len * float(pre.latency_s)
    latency += stall
    return {
        "running_batch": running,
        "prefill_stall_s": stall,
        "predicted_tokens_per_s": 1.0 / latency if 0 < latency < math.inf else 0.0,
        "predicted_throughput_per_gpu": running / latency / n,
        "predicted_bound": "memory" if bd.memory_time_s[0] >= bd.compute_time_s[0] else "compute",
        "predicted_latency_s": latency,
    }


def compare(path: str | Path, assumptions="paper") -> pd.DataFrame:
    """Every measured point with the model's prediction and measured / predicted ratios."""
    rows = []
    for p in load_measured(path):
        pred = predict(p, assumptions=assumptions)
        ratio = (
            p.tokens_per_s / pred["predicted_tokens_per_s"]
            if pred["predicted_tokens_per_s"] > 0
            else math.inf
        )
        rows.append(
            {
                "row": p.row,
                "model": p.arch.name,
                "hardware": p.gpu.name,
                "precision": f"w{p.weight_bits:g}a{p.activation_bits:g}kv{p.kv_bits:g}",
                "gpus": p.gpus,
                "pipeline": p.pipeline,
                "concurrency": p.concurrency,
                "input_len": p.input_len,
                "output_len": p.output_len,
                "measured_tokens_per_s": p.tokens_per_s,
                **pred,
                "speed_ratio": ratio,
                "measured_throughput_per_gpu": p.throughput_per_gpu,
                "throughput_ratio": (p.throughput_per_gpu / pred["predicted_throughput_per_gpu"])
                if p.throughput_per_gpu
                else math.nan,
                "queueing": p.saturated or pred["running_batch"] < p.batch_per_replica,
                "beats_roofline": ratio > BEAT_TOLERANCE,
            }
        )
    return pd.DataFrame(rows)


# --- calibration -------------------------------------------------------------------------------

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


def calibrate(path: str | Path, assumptions="paper", holdout_every: int = 3) -> dict:
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
    return {
        "hardware": base.name,
        "points": len(points),
        "held_out": len(held),
        "values": dict(zip(PARAMETERS, full.x.tolist())),
        "unconstrained": [p for p, u in zip(PARAMETERS, unconstrained) if u],
        "errors": dict(zip(PARAMETERS, errors.tolist())),
        "rms_log_error_before": float(np.sqrt(np.mean(before**2))),
        "rms_log_error_fit": float(np.sqrt(np.mean(full.fun**2))),
        "rms_log_error_held_out": out_of_sample,
        "source": str(path),
    }


def calibrated_yaml(result: dict, name: str | None = None) -> str:
    """A hardware override file (``derive_from`` the datasheet spec) with the fitted values."""
    name = name or f"{result['hardware']} (calibrated)"
    lines = [
        f"# Calibrated by 'inference-econ calibrate' on {Path(result['source']).name}: {result['points']} points,",
        f"# RMS log-speed error {result['rms_log_error_before']:.3f} before, {result['rms_log_error_fit']:.3f} after,"
        f" {result['rms_log_error_held_out']:.3f} on {result['held_out']} held-out points.",
        yaml.safe_dump({"name": name, "derive_from": result["hardware"]}, sort_keys=False).strip(),
    ]
    for key in PARAMETERS:
        err = result["errors"][key]
        note = (
            "not constrained by these points (kept)"
            if key in result.get("unconstrained", [])
            else f"fitted, standard error {err:.2g}"
        )
        lines.append(f"{key}: {result['values'][key]:.4g}  # {note}")
    return "\n".join(lines) + "\n"


def measured_figure(table: pd.DataFrame, path: str | Path, assumptions="paper"):
    """Measured points over the predicted frontier of their model and GPU, and over the
    predicted curve of their own layout (the batch swept). Uses the first row's setting."""
    from . import plots
    from .frontier import Frontier
    from .optimiser import frontier

    points = load_measured(path)
    first = points[0]
    same = [
        p
        for p in points
        if (p.arch.name, p.gpu.name, p.gpus, p.input_len, p.output_len)
        == (first.arch.name, first.gpu.name, first.gpus, first.input_len, first.output_len)
    ]
    price = first.gpu.price_usd_per_hour
    setting = make_setting(
        first.arch,
        first.gpu,
        weight_bits=first.weight_bits,
        activation_bits=first.activation_bits,
        kv_cache_bits=first.kv_bits,
        context_tokens=first.context_tokens,
        assumptions=assumptions,
    )
    curve = []
    for batch in np.unique(
        np.round(np.logspace(0, np.log10(max(p.concurrency for p in same) * 2), 30))
    ):
        probe = MeasuredPoint(**{**first.__dict__, "concurrency": float(batch)})
        pred = predict(probe, assumptions=assumptions)
        if pred["predicted_tokens_per_s"] > 0:
            curve.append(
                {
                    "tokens_per_s": pred["predicted_tokens_per_s"],
                    "usd_per_mtok": 1e6 * price / 3600 / pred["predicted_throughput_per_gpu"],
                    "batch": float(batch),
                }
            )
    layout = Frontier(label="layout", points=pd.DataFrame(curve).sort_values("tokens_per_s"))
    fronts = {
        f"predicted frontier, any layout, decode only ({setting.model.name}, {setting.gpu.name})": frontier(
            setting
        ),
        f"predicted, {first.gpus} GPUs as measured (batch swept, prefills interleaved)": layout,
    }
    measured = []
    for p in same:
        if p.throughput_per_gpu:
            cost = 1e6 * price / 3600 / p.throughput_per_gpu
            measured.append(
                {
                    "tokens_per_s": p.tokens_per_s,
                    "usd_per_mtok": cost,
                    "label": f"measured (c={p.concurrency:g})",
                    "color": "black",
                }
            )
    title = f"Measured vs predicted: {first.arch.name}, {first.gpus} x {first.gpu.name}, {first.input_len:g} in / {first.output_len:g} out"
    fig = plots.frontier_figure(fronts, title, measured=measured)
    # one legend entry for all measured points
    ax = fig.axes[0]
    handles, labels = ax.get_legend_handles_labels()
    keep = {}
    for h, lab in zip(handles, labels):
        keep.setdefault("measured" if lab.startswith("measured") else lab, h)
    ax.legend(
        keep.values(),
        keep.keys(),
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        fontsize=8,
        frameon=False,
    )
    return fig
