"""Reading measured benchmark CSVs: one row per published figure, resolved to our specs.

A row (the ``benchmarks.csv`` format of docs/user-guide.md) names a model, a precision, a GPU,
a GPU count and parallelism, a concurrency, input/output lengths and a metric. ``load_measured``
validates the file and resolves every row's names; ``load_overlay_points`` reads the simpler
operating-point files (tokens/s per request and $ per million tokens) overlaid on figures.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import SpecError, UnknownNameError
from ...model.economics import usd_per_mtok_at_throughput
from ...specs.architecture import load_model
from ...specs.hardware import GPU, load_hardware
from ...specs.inputs import read_text
from ...specs.schema import check_number

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


#: Bounds of the numbers of an overlay CSV (as the ``measured`` points of a scenario file).
OVERLAY_NUMBERS = {
    "tokens_per_s": dict(minimum=0, exclusive_minimum=True, maximum=1e12, unit="tokens/s"),
    "usd_per_mtok": dict(minimum=0, exclusive_minimum=True, maximum=1e12, unit="USD"),
    "tokens_per_s_per_gpu": dict(minimum=0, exclusive_minimum=True, maximum=1e12, unit="tokens/s"),
}


def _overlay_column(df: pd.DataFrame, column: str, source: str) -> np.ndarray:
    """One numeric column, every value checked at once; the first bad one is reported with
    its row (the header is row 1) by the one checker of numbers (``check_number``)."""
    values = pd.to_numeric(df[column], errors="coerce").to_numpy(dtype=float)
    bounds = OVERLAY_NUMBERS[column]
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values) | (values <= bounds["minimum"]) | (values > bounds["maximum"])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raw = df[column].iloc[i]
        check_number(None if pd.isna(raw) else raw, source, f"row {i + 2}: {column}", **bounds)
        raise SpecError(source, f"row {i + 2}: {column}", f"is {raw!r}", "write a positive number")
    return values


def load_overlay_points(path, price_usd_per_hour: float | None = None) -> list[dict]:
    """Measured operating points from a CSV: tokens_per_s and either usd_per_mtok or
    tokens_per_s_per_gpu (converted to $ with ``price_usd_per_hour``); optional label.

    Read and checked column by column (10,000 points in well under a second); an empty file,
    text or non-positive numbers are errors naming the file, the row and the column.
    """
    source = str(path)
    try:
        df = pd.read_csv(io.StringIO(read_text(path)), skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise SpecError(source, "", "is empty", "give a header and one row per point") from None
    except pd.errors.ParserError as exc:
        raise SpecError(source, "", f"cannot read the CSV: {str(exc).strip()}") from None
    if "tokens_per_s" not in df:
        raise SpecError(
            source, "tokens_per_s", "column is missing", "give the measured tokens/s per request"
        )
    if df.empty:
        raise SpecError(source, "", "has a header but no rows", "give one row per point")
    speed = _overlay_column(df, "tokens_per_s", source)
    if "usd_per_mtok" in df:
        cost = _overlay_column(df, "usd_per_mtok", source)
    elif "tokens_per_s_per_gpu" in df and price_usd_per_hour:
        per_gpu = _overlay_column(df, "tokens_per_s_per_gpu", source)
        cost = usd_per_mtok_at_throughput(per_gpu, price_usd_per_hour)
    else:
        raise SpecError(
            source,
            "usd_per_mtok",
            "no cost column",
            "give usd_per_mtok, or tokens_per_s_per_gpu and a GPU price",
        )
    if "label" in df:
        labels = df["label"].fillna("measured").astype(str).tolist()
    else:
        labels = ["measured"] * len(df)
    return [
        {"label": label, "tokens_per_s": v, "usd_per_mtok": c}
        for label, v, c in zip(labels, speed.tolist(), np.asarray(cost, dtype=float).tolist())
    ]
