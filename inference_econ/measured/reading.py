"""Reading measured benchmark CSVs: one row per published figure, resolved to our specs.

The format (docs/user-guide.md, "Measured results: the CSV format") has the columns
``model, hardware, n_gpus, metric, value, unit`` and optionally ``source, precision,
parallelism, batch_or_concurrency, input_len, output_len, notes, engine, scenario,
disaggregated, source_group``. ``load_measured`` validates the file (a file that cannot be
read, has no rows or misses a column is one clear error, exit 2) and resolves every row to a
``MeasuredRow`` with a status: ``ok``, ``derived: ...`` (a duplicate of another row, read with
its parent's engine, layout and limits), ``unresolved: ...`` (a name or a field the toolkit
cannot read, an impossible number: the reason, and the other rows go on) or ``out of scope:
...`` (a feature the model lacks). ``load_overlay_points`` reads the simpler
operating-point files overlaid on figures.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import SpecError
from ..model.economics import usd_per_mtok_at_throughput
from ..settings import MAX_GPUS, option
from ..specs.architecture import Architecture, load_model
from ..specs.catalog import find, is_host_part, resolve_system_name
from ..specs.collector import gc_paused
from ..specs.engine import select_engine
from ..specs.hardware import GPU, load_hardware
from ..specs.inputs import (
    Rows,
    csv_rows,
    file_path,
    left_out,
    read_text,
    row_cells,
    too_many_cells,
)
from ..specs.schema import check_number
from . import engine_words, layouts, mlperf
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
    "scenario",
    "disaggregated",
    "decode_gpus",
    "source_group",
    "requests",
)
#: Words a model name may carry that name no different model.
SUFFIXES = ("instruct", "chat", "it", "hf", "base", "fp8", "bf16")
OK = "ok"
#: Columns a derived row takes from the row it is derived from when it does not state them.
INHERITED = (
    "parallelism",
    "batch_or_concurrency",
    "engine",
    "scenario",
    "disaggregated",
    "decode_gpus",
    "precision",
    "requests",
)
#: Columns that must agree between a derived row and its parent.
_SAME_RUN = ("model", "hardware", "n_gpus", "input_len", "output_len")


def _bounds(name: str) -> dict:
    """``check_number``'s bounds of a cell read as the setting ``name`` (the settings table's)."""
    row = option(name)
    return {"minimum": row.minimum, "maximum": row.maximum, "unit": row.unit}


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
    layout: layouts.Layout | None = None
    lengths: mlperf.Lengths | None = None
    concurrency: float | None = None
    batch_cap: float | None = None
    #: The engine's token budget per step the row states (``max_num_tokens``); None: the
    #: engine's default.
    token_budget: float | None = None
    #: The row states its engine fuses each row-parallel GEMM with its all-reduce (§F6).
    fused_allreduce: bool = False
    #: The share of the memory left after the weights its engine gives the KV cache, as the
    #: row states it (TensorRT-LLM's ``kv_cache_free_gpu_mem_fraction``, §F8); None: the
    #: engine's default.
    kv_cache_fraction: float | None = None
    limits: tuple[float, float] | None = None
    #: Engine profile name ("trtllm", "vllm", "sglang", or the ``engine`` column as given);
    #: None: the row names no engine the toolkit knows.
    engine: str | None = None
    #: The engine's version as the row writes it ("0.6", "0.17", "1.0.0rc4"; ".x" dropped;
    #: None: not stated or a placeholder such as "0.0.0.dev1").
    engine_version: str | None = None
    #: The software platform: "cuda", "rocm" or "tpu" (from the text, else the GPU's vendor).
    platform: str | None = None
    disaggregated: bool = False
    #: Disaggregated rows: the GPUs of the row that decode (the rest prefill).
    decode_gpus: int | None = None
    #: Disaggregated rows: the prefill instances, where the row states them.
    prefill_layout: layouts.Layout | None = None
    #: What the value is per: "system", "gpu", "node" or "decode_gpu"; ``per_count`` is the
    #: number of those the system has (the system's figure = value x per_count).
    per: str = "system"
    per_count: int = 1
    #: A derived row: the line of the row it is derived from (its engine, layout and limits).
    parent: int | None = None
    #: The MLPerf benchmark the row belongs to (its dataset lengths and latency limits).
    benchmark: str | None = None
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
    def serving_gpus(self) -> int | None:
        """The GPUs that produce the row's output tokens: the decode GPUs of a disaggregated
        row, else all of them."""
        return self.decode_gpus if self.disaggregated and self.decode_gpus else self.gpus


def _read_columns(path: Path) -> tuple[list[str], list[list[str]], dict[int, SpecError]]:
    """A measured CSV's column names and columns (as text; a short row's missing cells ""),
    and its rows of more cells than the header (row index -> the problem; their first cells
    kept, for the row's text): each of those is unresolved, never the file's end."""
    header, lines = csv_rows(path)
    if not header:
        raise SpecError(str(path), "", "the file is empty", "give a header and rows")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise SpecError(
            str(path),
            missing[0],
            f"columns missing: {', '.join(missing)}",
            f"the columns are {', '.join(REQUIRED)} (and optionally {', '.join(OPTIONAL)})",
        )
    if not lines:
        raise SpecError(str(path), "", "the file has a header but no rows", "add measured rows")
    width, ragged = len(header), {}
    rows = []
    for i, (_, cells) in enumerate(lines):
        if len(cells) != width:
            if len(cells) > width:
                ragged[i] = too_many_cells(f"{path}: line {i + 2}", len(cells), width)
            cells = (cells + [""] * width)[:width]
        rows.append(cells)
    names, seen = [], {}
    for name in header:  # a name given twice is told apart as pandas does ("notes.1")
        count = seen.get(name, 0)
        seen[name] = count + 1
        names.append(name if not count else f"{name}.{count}")
    return names, [list(c) for c in zip(*rows)], ragged


def load_measured(path: str | Path) -> list[MeasuredRow]:
    """Read, validate and resolve a measured CSV (one ``MeasuredRow`` per line). A file that
    cannot be read, has no rows or misses a column is an error; a row that cannot be read
    (a bad number, a layout that does not fit its GPUs) gets an ``unresolved`` status with the
    field and the reason, and every other row goes on."""
    path = Path(file_path(path))
    from .tool_results import tool_frame  # benchmark tools' JSON results, by their content

    df = tool_frame(path)
    if df is None and read_text(path).lstrip()[:1] in ("{", "["):
        raise SpecError(  # JSON, but no tool's result: not "columns missing" of a CSV
            str(path),
            "",
            "is JSON, but not a result of vllm bench serve or aiperf",
            "give a measured CSV (docs/user-guide.md, 'Measured results') or one of those "
            "tools' result files",
        )
    if df is None:
        with gc_paused():  # a log's cells: a million strings the collector need not walk
            names, columns, ragged = _read_columns(path)
    else:  # columns as Python lists, then rows: DataFrame.to_dict boxes every cell of an
        # Arrow string column one by one (a third of the time of a 100,000-row log)
        names, ragged = list(df.columns), {}  # once: iterating an Arrow index is slow
        columns = [df[c].tolist() for c in df.columns]
    records = [dict(zip(names, cells)) for cells in zip(*columns)]
    if ragged and len(ragged) == len(records):  # no row can be read: one error, not a table
        left_out(str(path), "row", len(records), [(i + 2, e) for i, e in ragged.items()])
    # each row's cells but its value, zipped at C speed: with its parent's line they say
    # which resolution it shares (a derived row's context is its own cells and its parent's)
    others = list(zip(*(c for name, c in zip(names, columns) if name != "value")))
    parents = _parents(records)
    rows = []
    resolved: dict = {}  # rows that differ only in their value are resolved once
    with gc_paused():
        for i, rec in enumerate(records):
            parent = parents.get(i)
            line = None if parent is None else parent + 2
            key = (others[i], line)
            if i in ragged:  # cells that cannot be matched to the columns: its own reason
                rows.append(_unresolved(i + 2, _context(rec, None), None, ragged[i]))
                continue
            rows.append(_resolved_once(resolved, path, i + 2, rec, records, parent, key))
    return rows


#: Attribute of the rows ``_resolved_once`` made from one resolution: a token they share.
SHARED = "_shared_resolution"


def _resolved_once(
    resolved: dict, path: Path, line: int, rec: dict, records: list, parent, key: tuple
) -> MeasuredRow:
    """``_row_or_reason``, shared by the rows that differ only in their value (a benchmark
    log repeats its configurations): every value is still read on its own line. ``parent``:
    the index of the row ``rec`` is derived from in ``records`` (None: none); ``key``: its
    cells but the value and its parent's line, which decide the rest of its reading."""
    inherited = None if parent is None else parent + 2

    def read() -> MeasuredRow:  # the row's context (its parent's columns) only when read
        context = _context(rec, records[parent] if parent is not None else None)
        return _row_or_reason(path, line, context, inherited)

    try:  # the value and the metric are the row's own (not inherited)
        value = _value(rec, sem.metric_of(rec["metric"]), f"{path}, row {line}")
        key = (key, value is None)
        known = resolved.get(key)
    except (SpecError, TypeError):  # a bad value (its own reason) or an unhashable cell
        return read()
    if known is None:
        known = resolved[key] = read()
        # a token the rows of this resolution share: everything but their line and value
        # is the same, so what is derived from the rest (``predicting._question``) is too
        known.__dict__[SHARED] = object()
    if known.value is None and value is not None:  # unresolved before its value was read
        return read()
    row = object.__new__(MeasuredRow)  # the same resolution, this line's number and value
    row.__dict__.update(known.__dict__, row=line, value=value)
    return row


def _derived(rec: dict) -> bool:
    notes = str(rec.get("notes", "")).strip().lower()
    return notes.startswith("derived") or "derived from" in notes


def _parents(records: list[dict]) -> dict[int, int]:
    """The row each derived row is derived from (index -> index): the row its notes name
    ("derived from row 12"), else a row of the same source, model, hardware, GPUs and lengths
    that is not derived and agrees with what the derived row states of ``INHERITED``: one whose
    metric the notes name ("= 1000/mean_TPOT"), else the nearest."""
    derived = [_derived(rec) for rec in records]
    if not any(derived):  # a log of measured rows only (a fleet's): nothing to look up
        return {}
    by_run: dict[tuple, list[int]] = {}
    for i, rec in enumerate(records):
        if not derived[i]:
            by_run.setdefault(_run_key(rec), []).append(i)
    out = {}
    for i, rec in enumerate(records):
        if not derived[i]:
            continue
        named = re.search(r"\b(?:row|line)\s*#?\s*(\d+)", str(rec.get("notes", "")), re.I)
        if named and 0 <= int(named.group(1)) - 2 < len(records):
            j = int(named.group(1)) - 2
            if j != i and not _derived(records[j]):
                out[i] = j
                continue
        stated = {c: str(rec[c]).strip() for c in INHERITED if not sem.is_missing(rec.get(c))}
        fits = [
            j
            for j in by_run.get(_run_key(rec), ())
            if all(str(records[j].get(c, "")).strip() == v for c, v in stated.items())
        ]
        if fits:
            notes = str(rec.get("notes", "")).lower()
            out[i] = min(
                fits,
                key=lambda j: (str(records[j]["metric"]).lower() not in notes, abs(j - i), j),
            )
    return out


def _run_key(rec: dict) -> tuple:
    return (sem.source_group(rec),) + tuple(str(rec.get(c, "")).strip() for c in _SAME_RUN)


def _context(rec: dict, parent: dict | None) -> dict:
    """The record a row is read from: a derived row takes the ``INHERITED`` columns it does
    not state from its parent, and reads its notes followed by its parent's (engine, limits,
    layout); ``_notes`` keeps its own."""
    out = dict(rec)
    out["_notes"] = str(rec.get("notes", ""))
    out["_context"] = out["_notes"]
    if parent is not None:
        for column in INHERITED:
            if sem.is_missing(out.get(column)) and not sem.is_missing(parent.get(column)):
                out[column] = parent[column]
        out["_context"] = f"{out['_notes']} ; {parent.get('notes', '')}"
    return out


def _row_or_reason(path: Path, line: int, rec: dict, parent: int | None) -> MeasuredRow:
    """One record resolved, or its reason: an error in one row never stops the file."""
    try:
        return _row(path, line, rec, parent)
    except SpecError as exc:
        return _unresolved(line, rec, parent, exc)


def _unresolved(line: int, rec: dict, parent: int | None, exc: SpecError) -> MeasuredRow:
    """A row that cannot be read, with the field, the reason and the fix as its status."""
    at = f"{exc.field}: " if exc.field else ""
    fix = f" ({exc.fix})" if exc.fix else ""
    status = f"unresolved: {at}{exc.problem}{fix}"
    return MeasuredRow(status=status, value=None, kind="end-to-end", **_texts(line, rec, parent))


def _texts(line: int, rec: dict, parent: int | None) -> dict:
    """The fields of a row that are its text as written."""
    return dict(
        row=line,
        source=str(rec.get("source", "")),
        group=sem.source_group(rec),
        model_text=str(rec["model"]),
        hardware_text=str(rec["hardware"]),
        metric_text=str(rec["metric"]),
        unit=str(rec["unit"]),
        notes=rec["_notes"],
        parent=parent,
    )


def _row(path: Path, line: int, rec: dict, parent: int | None) -> MeasuredRow:
    """One record resolved; names or fields the toolkit cannot read give a status."""
    where = f"{path}, row {line}"
    metric = sem.metric_of(rec["metric"])
    base = _texts(line, rec, parent)
    value = _value(rec, metric, where)
    gpus = _gpus(rec["n_gpus"], where)
    kind = "micro" if (metric is not None and metric.micro) else "end-to-end"
    base.update(value=value, kind=kind, metric=metric, gpus=gpus)
    problem = _problem(rec, metric, value)
    if problem:
        return MeasuredRow(status=f"unresolved: {problem}", **base)
    gpu, count, why = _hardware(str(rec["hardware"]))
    if gpus is None:
        if count is None:
            return MeasuredRow(
                status=f"unresolved: n_gpus {str(rec['n_gpus'])!r} is not stated", **base
            )
        base["gpus"] = gpus = int(
            check_number(
                count, where, "hardware", minimum=1, maximum=MAX_GPUS, integer=True, unit="GPUs"
            )
        )
    if gpu is None:
        return MeasuredRow(status=f"unresolved: {why}", **base)
    base["gpu"] = gpu
    if kind == "micro":
        return _micro(rec, base, metric, where)
    return _end_to_end(rec, base, metric, gpus, count, where)


#: A measured value, in its row's unit, is at least 1e-9 and at most 1e18: beyond any
#: measurement in any unit the rows use (a GPU's 2e15 FLOP/s written out in full is inside), so
#: that its ratio to a prediction stays finite (1e308 had printed an error of -1.00 as "ok",
#: 1e-300 a p90 error of 6e30).
VALUE_BOUNDS = (1e-9, 1e18)


def _value(rec: dict, metric, where: str) -> float | None:
    """The measured value: a positive number, or None (text: unresolved). Several values
    separated by "/" (BabelStream's copy / triad / dot) give the middle one (triad)."""
    raw = str(rec["value"]).strip()
    if "/" not in raw:  # most rows: one plain number, which ``check_number`` passes as it is
        try:
            plain = float(raw)
        except ValueError:
            pass
        else:
            if VALUE_BOUNDS[0] <= plain <= VALUE_BOUNDS[1]:
                return plain
    parts = [sem.number(p) for p in raw.split("/")] if "/" in raw else [sem.number(raw)]
    if None in parts:
        return None
    value = parts[len(parts) // 2]
    low, high = VALUE_BOUNDS
    return check_number(value, where, "value", minimum=low, maximum=high, unit=rec["unit"])


def _gpus(raw, where: str) -> int | None:
    value = sem.number(raw)
    if value is None:
        return None
    return int(
        check_number(value, where, "n_gpus", minimum=1, maximum=MAX_GPUS, integer=True, unit="GPUs")
    )


def _problem(rec: dict, metric, value) -> str:
    """Why a row cannot be resolved before names are looked up ("" if nothing)."""
    if metric is None:
        return f"metric {rec['metric']!r} is not one the toolkit reads (see docs/user-guide.md)"
    if value is None:
        from .tool_results import UNUSABLE

        raw = str(rec["value"])
        if raw.startswith(UNUSABLE):  # a benchmark tool's result row: its reader's own reason
            return raw[len(UNUSABLE) :]
        return f"value {raw!r} is not a number"
    unit = str(rec["unit"]).lower()
    if "unclear" in unit or unit.endswith("?"):
        return f"unit {rec['unit']!r} is ambiguous"
    first = unit.split()[0] if unit.split() else ""
    if sem.is_time(metric.quantity) and first not in ("ms", "s", "us"):
        return f"unit {rec['unit']!r} of a latency is not ms, s or us"
    if not sem.is_time(metric.quantity) and not metric.micro and first in ("ms", "s", "us"):
        return f"unit {rec['unit']!r} is a time but {rec['metric']!r} is not a latency"
    return ""


#: Separators between the parts of a mixed system ("8xH100 + 8xH200", "H100, A100").
_PARTS = re.compile(r"\s*(?:\+|&|;|,|\band\b|\swith\s|\s/\s)\s*", re.IGNORECASE)


@lru_cache(maxsize=1024)
def _hardware(text: str) -> tuple[GPU | None, int | None, str]:
    """(GPU, accelerator count the name gives, reason if no GPU). A system of more than one
    kind of accelerator is ``heterogeneous``: the model has one GPU per row."""
    raw = str(text).strip()
    if sem.is_missing(text) or re.search(r"undisclosed|not stated", raw, re.I):
        return None, None, f"hardware {raw!r} is not disclosed"
    if re.search(r"heterogeneous|\bmixed\b", raw, re.I):
        return None, None, f"heterogeneous: hardware {raw!r} mixes accelerators"
    parts = [p.strip() for p in _PARTS.split(re.sub(r"\([^)]*\)", " ", raw)) if p.strip()]
    kinds: dict[str, tuple[GPU, int | None]] = {}
    unknown, others = [], []
    for part in parts if len(parts) > 1 else ():
        try:
            gpu, count = _load_gpu(part)
            kinds.setdefault(gpu.name, (gpu, count))
        except SpecError:
            others.append(part)
            if not is_host_part(part) and _ACCELERATOR_WORD.search(part):
                unknown.append(part)
    if len(kinds) + len(unknown) > 1:
        names = " and ".join([*sorted(kinds), *unknown])
        return None, None, f"heterogeneous: hardware {raw!r} mixes {names}"
    try:
        gpu, count = _load_gpu(raw)
        return gpu, count, ""
    except SpecError as exc:
        if len(kinds) == 1 and all(is_host_part(p) for p in others):
            gpu, count = next(iter(kinds.values()))  # one accelerator and its host CPUs
            return gpu, count, ""
        return None, None, f"hardware {raw!r}: {exc.problem}"


#: Words that make an unknown part of a system name an accelerator (not a host or a count).
_ACCELERATOR_WORD = re.compile(r"nvidia|\bamd\b|instinct|intel|gaudi|\barc\b|\btpu", re.I)


@lru_cache(maxsize=512)
def _load_gpu(text: str) -> tuple[GPU, int | None]:
    system = resolve_system_name(text)
    return load_hardware(system.path), system.accelerators


@lru_cache(maxsize=256)  # once per (engine, GPU, model, scenario, benchmark): not per row
def _harness_unmodelled(engine, gpu, model: str, scenario, benchmark) -> str | None:
    """The out-of-scope status of an MLPerf row whose harness runs its model, in its scenario,
    with speculative decoding (its engine profile's ``speculative`` harness field, docs/model.md
    §F9): the run speculated whether or not the row says so. None: it does not, or the row's
    engine has no profile for its version (the prediction says so)."""
    if benchmark is None or engine.name is None:
        return None
    try:
        prof = select_engine(
            engine.name, engine.version, engine.platform or engine_words.platform_of(gpu)
        )
    except SpecError:
        return None
    if not prof.harness_applies("mlperf", engine.version, model, scenario):
        return None
    method = prof.harness_speculative("mlperf", engine.version, model, scenario)
    if method is None:
        return None
    return engine_words.out_of_scope(
        engine_words.SPECULATIVE,
        f"MLPerf's harness runs {model} {scenario} with {method}: every published "
        f"configuration of it does, engine profile {prof.name!r}",
    )


@lru_cache(maxsize=256)
def _engine_profile(name: str):
    """The profile file an ``engine`` cell names; an unknown one is the row's error."""
    try:
        return find("engines", name)
    except SpecError as exc:
        raise SpecError("", "engine", exc.problem, exc.fix) from None


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


def _basis(rec, metric, gpus, count, gpu, decode_gpus) -> tuple[str, int]:
    """(what the value is per, how many of those the system has). The metric name and the unit
    say it ("throughput_per_gpu", "output tok/s/GPU": the user guide's "/GPU" rule); they
    must not disagree. A node is the accelerators the hardware name gives ("8xH200"), else the
    GPU's scale-up domain of at most 8."""
    if metric.quantity not in sem.DIVISIBLE:
        return "system", 1
    named, unit = metric.per, sem.basis_of_unit(rec["unit"])
    if named and unit and named != unit:
        raise SpecError(
            "",
            "unit",
            f"{rec['unit']!r} says per {unit.replace('_', ' ')} but metric {rec['metric']!r} "
            f"is per {named.replace('_', ' ')}",
            "make the metric name and the unit agree",
        )
    per = named or unit or "system"
    if per == "gpu":
        return per, gpus
    if per == "decode_gpu":
        if decode_gpus is None:
            raise SpecError(
                "", "unit", "per decode GPU, but the row does not say which GPUs decode"
            )
        return per, decode_gpus
    if per == "node":
        node = count or (gpu.scale_up_domain_gpus if gpu.scale_up_domain_gpus <= 8 else None)
        if node is None or gpus % node:
            raise SpecError(
                "",
                "unit",
                f"per node: a node of {gpu.name} has {node or 'an unstated number of'} GPUs "
                f"and the row has {gpus}",
                "name the count in the hardware ('8xH200') or give the figure per GPU",
            )
        return per, gpus // node
    return per, 1


def _end_to_end(rec, base, metric, gpus, count, where) -> MeasuredRow:
    try:
        base["arch"] = resolve_model(base["model_text"])
    except SpecError as exc:
        return MeasuredRow(
            status=f"unresolved: model {base['model_text']!r}: {exc.problem}", **base
        )
    context = rec["_context"]
    text = " ".join(str(rec.get(k, "")) for k in ("model", "source", "input_len")) + context
    benchmark = mlperf.benchmark_of(base["arch"].name, text)
    bits = _as_released(engine_words.precision_of(rec.get("precision")), base["arch"])
    scenario = sem.scenario_of(rec, metric, context)
    concurrency, cap = sem.batch_of(rec.get("batch_or_concurrency"), scenario, context)
    cell = rec.get("batch_or_concurrency")
    engine = engine_words.engine_of(rec, context, base["gpu"].description)
    if engine.name is not None:
        _engine_profile(engine.name)
    disaggregated, decode_gpus, decode_text = layouts.disaggregation_of(
        rec, context, rec["unit"], gpus, where, scenario
    )
    serving = decode_gpus if disaggregated and decode_gpus else gpus
    prefill_layout = layouts.prefill_pool_of(rec, context, where) if disaggregated else None
    budget = kv_fraction = None
    if decode_text:  # the decode instances' own cap, budget and cache ("max_batch_size 64")
        cap = sem.batch_of("", scenario, decode_text)[1] or cap
        budget = sem.budget_of("", scenario, decode_text, where)
        kv_fraction = sem.kv_fraction_of("", scenario, decode_text, where)
    # the row's own where the decode workers state none (the cell first, then the notes)
    if budget is None:
        budget = sem.budget_of(cell, scenario, context, where)
    if kv_fraction is None:
        kv_fraction = sem.kv_fraction_of(cell, scenario, context, where)
    fused = sem.fused_allreduce_of(cell, scenario, context, where)
    layout = (
        layouts.layout_of(decode_text, serving, where)
        if decode_text
        else layouts.row_layout(rec.get("parallelism"), context, scenario, serving, where)
    )
    per, per_count = _basis(rec, metric, gpus, count, base["gpu"], decode_gpus)
    base.update(
        bits=bits,
        scenario=scenario,
        layout=layout,
        concurrency=concurrency,
        batch_cap=cap,
        token_budget=budget,
        fused_allreduce=fused,
        kv_cache_fraction=kv_fraction,
        engine=engine.name,
        engine_version=engine.version,
        platform=engine.platform,
        disaggregated=disaggregated,
        decode_gpus=decode_gpus,
        prefill_layout=prefill_layout,
        per=per,
        per_count=per_count,
        benchmark=benchmark.name if benchmark is not None else None,
    )
    # the bounds of the settings the engine runs them as (--concurrency, --max-batch,
    # --step-tokens): a cap of 1e12 would size the step table and exhaust memory
    for given, name in ((concurrency, "concurrency"), (cap, "max_batch_requests")):
        if given is not None:
            check_number(given, where, "batch_or_concurrency", **_bounds(name))
    if budget is not None:
        check_number(budget, where, "batch_or_concurrency", **_bounds("step_token_budget"))
    lengths = mlperf.lengths_of(rec.get("input_len", ""), rec.get("output_len", ""), benchmark)
    if not isinstance(lengths, mlperf.Lengths):
        return MeasuredRow(status=f"unresolved: {lengths}", **base)
    given = str(rec.get("requests") or "").strip()
    if given and not sem.is_missing(given):  # the run's own count (a closed loop replays it)
        n = check_number(given, where, "requests", minimum=1, maximum=1e7, integer=True)
        # an MLPerf run issues at least its performance sample count (LoadGen's equal issue)
        lengths = dataclasses.replace(lengths, issued=max(int(n), lengths.issued))
    base["lengths"] = lengths
    problem = _scenario_problem(scenario, metric, concurrency, bits, rec)
    if not problem and disaggregated and decode_gpus is None:
        problem = (
            "a disaggregated row must say which GPUs decode (a decode_gpus column, "
            "'prefill: ...; decode: ...' in parallelism, or 'per decode GPU' when n_gpus "
            "counts the decode GPUs only)"
        )
    if problem:
        return MeasuredRow(status=f"unresolved: {problem}", **base)
    if scenario in ("server", "interactive"):
        base["limits"] = mlperf.limits_of(context, scenario, benchmark)
        if base["limits"] is None:
            return MeasuredRow(
                status=f"unresolved: a {scenario} row needs its latency limits (notes "
                "'p99 TTFT<=2000ms, p99 TPOT<=200ms', or an MLPerf benchmark's)",
                **base,
            )
    status = OK
    lacking = engine_words.unmodelled_of(rec, context)
    own = rec["_notes"].strip()
    harness = _harness_unmodelled(engine, base["gpu"], base["arch"].name, scenario, benchmark)
    if lacking:
        status = engine_words.out_of_scope(lacking)
    elif harness:
        status = harness
    elif _derived(rec):
        status = f"derived: {own} (predicted, left out of summaries and fits)"
    return MeasuredRow(status=status, **base)


#: What each scenario can measure besides latencies (a metric outside it is unresolved).
MEASURABLE = {
    "offline": (*sem.RATES, "streams"),
    "server": (*sem.RATES, "streams", "user_speed"),
    "interactive": (*sem.RATES, "streams", "user_speed"),
    "closed_loop": (*sem.RATES, "user_speed"),
    "static": ("throughput",),
    "single": ("ttft_single", "ttft"),
    "prefill": ("input_throughput",),
}
#: Scenarios of many requests whose latencies (any statistic) a row may give.
WITH_LATENCIES = ("server", "interactive", "closed_loop")


def _scenario_problem(scenario, metric, concurrency, bits, rec) -> str:
    if bits is None:
        return f"precision {str(rec.get('precision', ''))!r} is not stated"
    if scenario is None:
        return "scenario not stated (give a scenario column, or a concurrency)"
    if scenario not in MEASURABLE:
        return f"scenario {scenario!r} is not one of {', '.join(MEASURABLE)}"
    if scenario in ("closed_loop", "static") and concurrency is None:
        return f"a {scenario.replace('_', ' ')} row needs its concurrency (batch_or_concurrency)"
    q = metric.quantity
    latency = scenario in WITH_LATENCIES and sem.is_time(q) and q != "ttft_single"
    if q not in MEASURABLE[scenario] and not latency:
        return f"metric {rec['metric']!r} is not read for the {scenario} scenario"
    return ""


def _as_released(bits, arch):
    """A row's precision (weight, activation, KV bits) on a model whose checkpoint stores its
    weights in a format of the same element width keeps that format's exact width: "FP4" on
    gpt-oss is its released MXFP4 (4.25 bits; its BF16 non-expert weights and MXFP8 GEMM
    operand are the model file's and stay, ``Architecture.with_precision``)."""
    if bits is None:
        return None
    released = arch.precision.weight_bits
    if released != bits[0] and math.floor(released + 1e-9) == math.floor(bits[0] + 1e-9):
        return (released, *bits[1:])
    return bits


def _micro(rec, base, metric, where) -> MeasuredRow:
    """Micro-benchmarks: NCCL all-reduce bus bandwidth, GEMM TFLOPS, HBM streaming."""
    q = metric.quantity
    if q == "busbw":
        size = sem.number(rec.get("input_len"))
        if size is None:
            return MeasuredRow(status="unresolved: message bytes (input_len) not given", **base)
        base["message_bytes"] = check_number(size, where, "input_len", minimum=1, unit="bytes")
    if q == "gemm_flops":
        bits = engine_words.precision_of(rec.get("precision"))
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


class _Where:
    """Where each row of a file is ("file: line N"), made only for the rows asked about."""

    def __init__(self, source: str, lines: list) -> None:
        self.source, self.lines = source, lines

    def __getitem__(self, i: int) -> str:
        return f"{self.source}: line {self.lines[i][0]}"


def _overlay_column(texts: list[str], column: str, where: _Where, problems: dict) -> np.ndarray:
    """One numeric column, every value checked at once; each bad value is its row's problem
    (``problems``: row index -> SpecError, the first of each row kept), told by the one
    checker of numbers (``check_number``) with the row's ``where``."""
    values = pd.to_numeric(pd.Series(texts, dtype=object), errors="coerce").to_numpy(dtype=float)
    bounds = OVERLAY_NUMBERS[column]
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values) | (values <= bounds["minimum"]) | (values > bounds["maximum"])
    for i in np.flatnonzero(bad).tolist():
        if i in problems:
            continue
        raw = texts[i]
        try:
            check_number(raw, where[i], column, **bounds)
            problems[i] = SpecError(where[i], column, f"is {raw!r}", "write a positive number")
        except SpecError as exc:
            problems[i] = exc
    return values


def _row_prices(names: list[str], price, where: _Where, problems: dict) -> np.ndarray:
    """The $/GPU-hour of each row: the one price, or each row's ``hardware`` column priced by
    ``price`` (a function of a GPU name); a GPU it cannot price is its rows' problem."""
    if not callable(price):
        return np.full(len(names), float(price))
    prices: dict[str, float | SpecError] = {}
    out = np.full(len(names), np.nan)
    for i, name in enumerate(names):
        if name not in prices:
            try:
                prices[name] = float(price(name))
            except SpecError as exc:
                prices[name] = exc
        known = prices[name]
        if isinstance(known, SpecError):
            problems.setdefault(i, SpecError(where[i], "hardware", known.problem, known.fix))
        else:
            out[i] = known
    return out


def load_overlay_points(path, price_usd_per_hour=None) -> Rows:
    """Measured operating points from a CSV: tokens_per_s and either usd_per_mtok or
    tokens_per_s_per_gpu, converted to $ at ``price_usd_per_hour`` (one price, or a function
    of a GPU name for files with a ``hardware`` column: each row at its own GPU's price).

    Read and checked column by column (10,000 points in well under a second). A row that
    cannot be read (text or a non-positive number, more cells than the header, a GPU without
    a price) is reported with its line, field and fix, and left out (the result's
    ``left_out``, ``specs.inputs.Rows``); an empty file, a missing column or no readable row
    is an error naming the file.
    """
    source = str(path)
    header, lines = csv_rows(path, skipinitialspace=True)
    if not header:
        raise SpecError(source, "", "is empty", "give a header and one row per point")
    if "tokens_per_s" not in header:
        raise SpecError(
            source, "tokens_per_s", "column is missing", "give the measured tokens/s per request"
        )
    if not lines:
        raise SpecError(source, "", "has a header but no rows", "give one row per point")
    if "usd_per_mtok" in header:
        cost_column = "usd_per_mtok"
    elif "tokens_per_s_per_gpu" in header and price_usd_per_hour:
        cost_column = "tokens_per_s_per_gpu"
        if callable(price_usd_per_hour) and "hardware" not in header:
            raise SpecError(
                source,
                "tokens_per_s_per_gpu",
                "cannot be priced: the curves run on GPUs of different prices",
                "add a hardware column (the GPU of each row) or give usd_per_mtok",
            )
    else:
        raise SpecError(
            source,
            "usd_per_mtok",
            "no cost column",
            "give usd_per_mtok, or tokens_per_s_per_gpu and a GPU price",
        )
    wanted = ["tokens_per_s", cost_column, *(c for c in ("label", "hardware") if c in header)]
    at = [header.index(c) for c in wanted]
    problems: dict[int, SpecError] = {}
    width = len(header)
    for i, (line, row) in enumerate(lines):  # (a row's cells past the header: its problem)
        if len(row) > width:
            try:
                row_cells(source, line, row, width, at)
            except SpecError as exc:
                problems[i] = exc
    # columns at C speed (zip), not cell by cell: 100,000 points in a few hundredths of a second
    table = list(
        zip(*(row if len(row) == width else (row + [""] * width)[:width] for _, row in lines))
    )
    columns = {c: list(table[i]) for c, i in zip(wanted, at)}
    for c in ("label", "hardware"):
        if c in columns:
            columns[c] = [text.strip() for text in columns[c]]
    where = _Where(source, lines)
    speed = _overlay_column(columns["tokens_per_s"], "tokens_per_s", where, problems)
    cost = _overlay_column(columns[cost_column], cost_column, where, problems)
    if cost_column == "tokens_per_s_per_gpu":
        names = columns.get("hardware", [""] * len(lines))
        prices = _row_prices(names, price_usd_per_hour, where, problems)
        with np.errstate(divide="ignore", invalid="ignore"):  # rows left out: 0 or NaN
            cost = usd_per_mtok_at_throughput(cost, prices)
    labels = columns.get("label", [""] * len(lines))
    skipped = left_out(
        source,
        "point row",
        len(lines),
        [(lines[i][0], problems[i]) for i in sorted(problems)],
    )
    return Rows(
        (
            {"label": label or "measured", "tokens_per_s": v, "usd_per_mtok": c}
            for i, (label, v, c) in enumerate(
                zip(labels, speed.tolist(), np.asarray(cost, dtype=float).tolist())
            )
            if i not in problems
        ),
        skipped,
    )
