"""Reading measured benchmark CSVs: one row per published figure, resolved to our specs.

The format (docs/user-guide.md, "Measured results: the CSV format") has the columns
``model, hardware, n_gpus, metric, value, unit`` and optionally ``source, precision,
parallelism, batch_or_concurrency, input_len, output_len, notes, engine, scenario,
disaggregated, source_group``. ``load_measured`` validates the file (a file that cannot be
read, has no rows, misses a column or holds an impossible number is one clear error, exit 2)
and resolves every row to a ``MeasuredRow`` with a status: ``ok``, ``derived: ...`` (a
duplicate of another row), ``unresolved: ...`` (a name or a field the toolkit cannot read) or
``out of scope: ...`` (a feature the model lacks). ``load_overlay_points`` reads the simpler
operating-point files overlaid on figures.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import SpecError
from ...model.economics import usd_per_mtok_at_throughput
from ...specs.architecture import Architecture, load_model
from ...specs.catalog import resolve_system_name
from ...specs.hardware import GPU, load_hardware
from ...specs.inputs import read_text
from ...specs.schema import check_number
from . import semantics as sem

REQUIRED = ("model", "hardware", "n_gpus", "metric", "value", "unit")
OPTIONAL = (
    "source",
    "precision",
    "parallelism",
    "batch_or_concurrency",
    "input_len",
    "output_len",
    "notes",
    "engine",
    "engine_version",
    "platform",
    "scenario",
    "disaggregated",
    "source_group",
)
#: Words a model name may carry that name no different model.
SUFFIXES = ("instruct", "chat", "it", "hf", "base", "fp8", "bf16")
OK = "ok"


@dataclass(frozen=True)
class MeasuredRow:
    """One row of a measured CSV, resolved (or with the reason it is not)."""

    row: int  # line in the file (the header is line 1)
    source: str
    group: str  # the source it belongs to (leave-one-source-out)
    model_text: str
    hardware_text: str
    metric_text: str
    unit: str
    value: float | None
    status: str
    kind: str  # "end-to-end" or "micro"
    arch: Architecture | None = None
    gpu: GPU | None = None
    bits: tuple[float, float, float] | None = None
    gpus: int | None = None
    metric: sem.Metric | None = None
    scenario: str | None = None
    layout: sem.Layout | None = None
    lengths: sem.Lengths | None = None
    concurrency: float | None = None
    batch_cap: float | None = None
    limits: tuple[float, float] | None = None
    engine: str | None = None
    #: The engine's version and the software platform (cuda, rocm) where the row says them.
    engine_version: str | None = None
    platform: str | None = None
    disaggregated: bool = False
    #: Micro-benchmarks: message bytes (all-reduce) or GEMM shape (M, N, K; None: best shape).
    message_bytes: float | None = None
    gemm_shape: tuple[float, float, float] | None = None
    notes: str = ""

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def resolved(self) -> bool:
        return not self.status.startswith("unresolved")

    @property
    def setting_key(self) -> tuple:
        return (self.arch.name, self.gpu.name, self.bits)


def _read_frame(path: Path) -> pd.DataFrame:
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise SpecError(str(path), "", "the file is empty", "give a header and rows") from None
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise SpecError(str(path), "", f"cannot read the CSV: {exc}") from None
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise SpecError(
            str(path),
            missing[0],
            f"columns missing: {', '.join(missing)}",
            f"the columns are {', '.join(REQUIRED)} (and optionally {', '.join(OPTIONAL)})",
        )
    if df.empty:
        raise SpecError(str(path), "", "the file has a header but no rows", "add measured rows")
    return df


def load_measured(path: str | Path) -> list[MeasuredRow]:
    """Read, validate and resolve a measured CSV (one ``MeasuredRow`` per line). Rows that
    differ only in their value are resolved once (a benchmark log repeats its
    configurations): every value is still checked on its own line."""
    path = Path(path)
    df = _read_frame(path)
    columns = list(df.columns)
    at = columns.index("value")
    unit, metric = columns.index("unit"), columns.index("metric")
    resolved: dict = {}
    values: dict = {}  # (value, unit, metric) texts -> the checked value
    out = []
    for i, cells in enumerate(df.to_numpy(dtype=object).tolist()):
        line = i + 2
        texts = (cells[at], cells[unit], cells[metric])
        if texts not in values:  # a bad value raises here, naming its own line
            rec = dict(zip(columns, cells))
            values[texts] = _value(rec, sem.metric_of(rec["metric"]), f"{path}, row {line}")
        value = values[texts]
        key = (tuple(cells[:at]), tuple(cells[at + 1 :]), value is None)
        known = resolved.get(key)
        if known is None:
            known = resolved[key] = _row(path, line, dict(zip(columns, cells)))
        row = object.__new__(MeasuredRow)  # the same resolution, this line's number and value
        row.__dict__.update(known.__dict__, row=line, value=value)
        out.append(row)
    return out


def _row(path: Path, line: int, rec: dict) -> MeasuredRow:
    """One record resolved; impossible numbers raise (exit 2), unknown names give a status."""
    where = f"{path}, row {line}"
    metric = sem.metric_of(rec["metric"])
    base = dict(
        row=line,
        source=str(rec.get("source", "")),
        group=sem.source_group(rec),
        model_text=str(rec["model"]),
        hardware_text=str(rec["hardware"]),
        metric_text=str(rec["metric"]),
        unit=str(rec["unit"]),
        notes=str(rec.get("notes", "")),
    )
    value = _value(rec, metric, where)
    gpus = _gpus(rec["n_gpus"], where)
    kind = "micro" if (metric is not None and metric.micro) else "end-to-end"
    base.update(value=value, kind=kind, metric=metric, gpus=gpus)
    problem = _problem(rec, metric, value, gpus)
    if problem:
        return MeasuredRow(status=f"unresolved: {problem}", **base)
    gpu, why = _hardware(rec["hardware"])
    if gpu is None:
        return MeasuredRow(status=f"unresolved: {why}", **base)
    base["gpu"] = gpu
    if kind == "micro":
        return _micro(rec, base, metric, where)
    return _end_to_end(rec, base, metric, gpus, where)


def _value(rec: dict, metric, where: str) -> float | None:
    """The measured value: a positive number, or None (text: unresolved). Several values
    separated by "/" (BabelStream's copy / triad / dot) give the middle one (triad)."""
    raw = str(rec["value"]).strip()
    parts = [sem.number(p) for p in raw.split("/")] if "/" in raw else [sem.number(raw)]
    if any(p is None for p in parts):
        return None
    value = parts[len(parts) // 2]
    return check_number(value, where, "value", minimum=0, exclusive_minimum=True, unit=rec["unit"])


def _gpus(raw, where: str) -> int | None:
    value = sem.number(raw)
    if value is None:
        return None
    return int(check_number(value, where, "n_gpus", minimum=1, integer=True, unit="GPUs"))


def _problem(rec: dict, metric, value, gpus) -> str:
    """Why a row cannot be resolved before names are looked up ("" if nothing)."""
    if metric is None:
        return f"metric {rec['metric']!r} is not one the toolkit reads (see docs/user-guide.md)"
    if value is None:
        return f"value {str(rec['value'])!r} is not a number"
    if gpus is None:
        return f"n_gpus {str(rec['n_gpus'])!r} is not stated"
    unit = str(rec["unit"]).lower()
    if "unclear" in unit or unit.endswith("?"):
        return f"unit {rec['unit']!r} is ambiguous"
    if metric.quantity in sem.TIMES and unit.split()[0] not in ("ms", "s", "us"):
        return f"unit {rec['unit']!r} of a latency is not ms, s or us"
    return ""


def _hardware(text) -> tuple[GPU | None, str]:
    if sem.is_missing(text) or re.search(r"undisclosed|not stated", str(text), re.I):
        return None, f"hardware {str(text)!r} is not disclosed"
    try:
        return _load_gpu(str(text).strip()), ""
    except SpecError as exc:
        return None, f"hardware {str(text)!r}: {exc.problem}"


@lru_cache(maxsize=512)
def _load_gpu(text: str) -> GPU:
    return load_hardware(resolve_system_name(text).path)


@lru_cache(maxsize=512)
def resolve_model(name: str) -> Architecture:
    """A benchmark's model name to a model spec: parenthesised notes ("(MLPerf v4.1
    Server)") and suffixes (-Instruct, -Chat) dropped, "Llama-3.1-70B" read as "Llama 3.1 70B"."""
    text = re.sub(r"\([^)]*\)|\"[^\"]*\"", " ", str(name)).strip()
    tokens = [t for t in re.split(r"[-_ ]+", text) if t]
    while tokens:
        try:
            return load_model(" ".join(tokens))
        except SpecError:
            if tokens[-1].lower() in SUFFIXES:
                tokens = tokens[:-1]
                continue
            break
    return load_model(str(name).strip())


def _end_to_end(rec, base, metric, gpus, where) -> MeasuredRow:
    try:
        base["arch"] = resolve_model(base["model_text"])
    except SpecError as exc:
        return MeasuredRow(
            status=f"unresolved: model {base['model_text']!r}: {exc.problem}", **base
        )
    bits = sem.precision_of(rec.get("precision"))
    scenario = sem.scenario_of(rec, metric)
    concurrency, caps = sem.batch_of(rec.get("batch_or_concurrency"))
    lengths = sem.lengths_of(rec.get("input_len", ""), rec.get("output_len", ""))
    layout = sem.layout_of(rec.get("parallelism"), gpus, where)
    base.update(
        bits=bits,
        scenario=scenario,
        layout=layout,
        concurrency=concurrency,
        batch_cap=caps.get("server" if scenario in ("server", "interactive") else "offline"),
        engine=sem.engine_of(rec),
        engine_version=sem.engine_version_of(rec),
        platform=sem.platform_of_row(rec),
        disaggregated=_flag(rec.get("disaggregated")) or "disaggregat" in base["notes"].lower(),
    )
    if concurrency is not None:
        check_number(concurrency, where, "batch_or_concurrency", minimum=1, unit="requests")
    if not isinstance(lengths, sem.Lengths):
        return MeasuredRow(status=f"unresolved: {lengths}", **base)
    base["lengths"] = lengths
    problem = _scenario_problem(scenario, metric, concurrency, bits, rec)
    if problem:
        return MeasuredRow(status=f"unresolved: {problem}", **base)
    if scenario in ("server", "interactive"):
        base["limits"] = sem.limits_of(base["notes"], scenario)
    status = OK
    lacking = sem.unmodelled_of(rec)
    if lacking:
        status = f"out of scope: uses {lacking}, which the model does not"
    elif base["notes"].strip().lower().startswith("derived"):
        status = f"derived: {base['notes'].strip()} (predicted, left out of summaries and fits)"
    return MeasuredRow(status=status, **base)


def _scenario_problem(scenario, metric, concurrency, bits, rec) -> str:
    if bits is None:
        return f"precision {str(rec.get('precision', ''))!r} is not stated"
    if scenario is None:
        return "scenario not stated (give a scenario column, or a concurrency)"
    if scenario not in sem.SCENARIOS or scenario == "micro":
        return f"scenario {scenario!r} is not one of {', '.join(sem.SCENARIOS[:-1])}"
    if scenario in ("closed_loop", "static") and concurrency is None:
        return f"a {scenario.replace('_', ' ')} row needs its concurrency (batch_or_concurrency)"
    q = metric.quantity
    allowed = {
        "offline": ("throughput", "streams"),
        "server": ("throughput", "tpot", "tpot_p99", "ttft", "user_speed", "streams"),
        "closed_loop": ("throughput", "tpot", "itl", "user_speed"),
        "static": ("throughput",),
        "single": ("ttft_single", "ttft"),
    }
    allowed["interactive"] = allowed["server"]
    if q not in allowed[scenario]:
        return f"metric {rec['metric']!r} is not modelled for the {scenario} scenario"
    return ""


def _flag(text) -> bool:
    return str(text or "").strip().lower() in ("1", "true", "yes", "y")


def _micro(rec, base, metric, where) -> MeasuredRow:
    """Micro-benchmarks: NCCL all-reduce bus bandwidth, GEMM TFLOPS, HBM streaming."""
    q = metric.quantity
    if q == "busbw":
        size = sem.number(rec.get("input_len"))
        if size is None:
            return MeasuredRow(status="unresolved: message bytes (input_len) not given", **base)
        base["message_bytes"] = check_number(size, where, "input_len", minimum=1, unit="bytes")
    if q == "gemm_flops":
        bits = sem.precision_of(rec.get("precision"))
        if bits is None:
            return MeasuredRow(status="unresolved: GEMM precision not stated", **base)
        base["bits"] = bits
        shape = _gemm_shape(rec.get("input_len"))
        if shape == "?":
            return MeasuredRow(
                status=f"unresolved: GEMM shape {str(rec.get('input_len'))!r} not readable", **base
            )
        base["gemm_shape"] = shape
    return MeasuredRow(status=OK, **base)


def _gemm_shape(text):
    """(M, N, K) of "8192^3" or "6144x12288x12288"; None for "best shape"; "?" otherwise."""
    raw = str(text or "").strip().lower()
    if "best" in raw:
        return None
    m = re.match(r"^(\d+)\s*\^\s*3$", raw)
    if m:
        n = float(m.group(1))
        return (n, n, n)
    m = re.match(r"^(\d+)\s*x\s*(\d+)\s*x\s*(\d+)$", raw)
    if m:
        return tuple(float(g) for g in m.groups())
    return "?"


#: Bounds of the numbers of an overlay CSV (as the ``measured`` points of a scenario file).
OVERLAY_NUMBERS = {
    "tokens_per_s": dict(minimum=0, exclusive_minimum=True, maximum=1e12, unit="tokens/s"),
    "usd_per_mtok": dict(minimum=0, exclusive_minimum=True, maximum=1e12, unit="USD"),
    "tokens_per_s_per_gpu": dict(minimum=0, exclusive_minimum=True, maximum=1e12, unit="tokens/s"),
}


def _row_prices(df: pd.DataFrame, price, source: str):
    """The $/GPU-hour of each row: the one price, or each row's ``hardware`` column priced by
    ``price`` (a function of a GPU name); a function without that column is an error."""
    if not callable(price):
        return price
    if "hardware" not in df:
        raise SpecError(
            source,
            "tokens_per_s_per_gpu",
            "cannot be priced: the curves run on GPUs of different prices",
            "add a hardware column (the GPU of each row) or give usd_per_mtok",
        )
    names = df["hardware"].astype(str).str.strip()
    prices = {}
    for i, name in enumerate(names):
        if name not in prices:
            try:
                prices[name] = price(name)
            except SpecError as exc:
                raise SpecError(source, f"row {i + 2}: hardware", exc.problem, exc.fix) from None
    return names.map(prices).to_numpy(dtype=float)


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


def load_overlay_points(path, price_usd_per_hour=None) -> list[dict]:
    """Measured operating points from a CSV: tokens_per_s and either usd_per_mtok or
    tokens_per_s_per_gpu, converted to $ at ``price_usd_per_hour`` (one price, or a function
    of a GPU name for files with a ``hardware`` column: each row at its own GPU's price).

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
        cost = usd_per_mtok_at_throughput(per_gpu, _row_prices(df, price_usd_per_hour, source))
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
