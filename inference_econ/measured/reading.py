"""Reading measured benchmark CSVs: one row per published figure, resolved to our specs.

The format (docs/user-guide.md, "Measured results: the CSV format") has the columns
``model, hardware, n_gpus, metric, value, unit`` and optionally ``source, precision,
parallelism, batch_or_concurrency, input_len, output_len, notes, engine, scenario,
disaggregated, source_group``. ``load_measured`` validates the file (a file that cannot be
read, has no rows or misses a column is one clear error, exit 2) and resolves every row to a
``MeasuredRow`` with a status: ``ok``, ``derived: ...`` (a duplicate of another row, read with
its parent's engine, layout and limits), ``unresolved: ...`` (a name or a field the toolkit
cannot read, an impossible number: the reason, and the other rows go on) or ``out of scope:
...`` (a feature the model lacks). Which row a derived row is derived from is ``derived``'s;
names resolved to specs ``resolving``'s; the operating-point files overlaid on figures are
``overlays``'.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import SpecError
from ..model.machine import mx_kv_cache_bits
from ..settings import MAX_GPUS, option
from ..specs.architecture import Architecture
from ..specs.collector import gc_paused
from ..specs.hardware import GPU
from ..specs.inputs import (
    csv_rows,
    file_path,
    left_out,
    too_many_cells,
)
from ..specs.schema import check_number
from . import engine_words, layouts, mlperf
from . import metric_names as mn
from . import semantics as sem
from .bench_limits import overview_graphs, runs_own_limits
from .derived import context_of, is_derived, parents_of
from .expert_slots import check_stated_slots, needed_copies, redundant_experts_of
from .overlap_words import exchange_of, overlap_of, rank_blocks_of
from .resolving import (
    as_released,
    basis_of,
    engine_profile,
    gemm_shape_of,
    hardware_of,
    harness_unmodelled,
    released_instead,
    resolve_model,
    scenario_problem,
)

REQUIRED = ("model", "hardware", "n_gpus", "metric", "value", "unit")
OPTIONAL = (
    "source", "precision", "parallelism", "batch_or_concurrency", "input_len", "output_len",
    "notes", "engine", "scenario", "disaggregated", "decode_gpus", "source_group", "requests",
    "distinct_prompts",
)  # fmt: skip
OK = "ok"


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
    metric: mn.Metric | None = None
    scenario: str | None = None
    layout: layouts.Layout | None = None
    lengths: mlperf.Lengths | None = None
    concurrency: float | None = None
    batch_cap: float | None = None
    #: The engine's token budget per step the row states (``max_num_tokens``); None: default.
    token_budget: float | None = None
    #: Run by ``trtllm-bench`` with the limits it picks itself (``bench_limits``).
    bench_limits: bool = False
    #: The CUDA graph batch sizes its decode steps were padded to (``overview_graphs``).
    graph_batch_sizes: tuple[int, ...] = ()
    #: The row states its engine fuses each row-parallel GEMM with its all-reduce (§F6).
    fused_allreduce: bool = False
    #: The share of the memory left after the weights its engine gives the KV cache, as stated
    #: (TensorRT-LLM's ``kv_cache_free_gpu_mem_fraction``, §F8); None: the engine's default.
    kv_cache_fraction: float | None = None
    #: Decode steps per schedule, chunked prefill and mixed chunks as the row states (vLLM's
    #: ``num_scheduler_steps``, ``enable_chunked_prefill``, SGLang's ``enable_mixed_chunk``, §F9).
    scheduler_steps: int | None = None
    chunked_prefill: bool | None = None
    mixed_chunk: bool | None = None
    #: The prefill-admission cadence the row states its engine ran with (AMD's vLLM patch,
    #: ``semantics.cadence_of``, ``EngineConfig.admission_cadence``); None: none stated.
    admission_cadence: tuple[int, int] | None = None
    #: TensorRT-LLM's attention-DP balancing the row states (wait, timeout steps; §F9).
    adp_balancing: tuple[int, int] | None = None
    #: Whether the row states its vLLM engine ran with async scheduling (``semantics.async_of``:
    #: host work overlapped, an arrival joining the step after next, §F5); None: not stated.
    async_scheduling: bool | None = None
    #: Whether the row states its engine ran two-batch overlap (``overlap_words.overlap_of``,
    #: §F7); None: not stated (one batch a step).
    two_batch_overlap: bool | None = None
    #: The redundant experts were not stated: the fewest its layout's expert degree needs
    #: (``expert_slots.needed_copies``).
    copies_needed: bool = False
    #: How the row states its engine exchanged a MoE's tokens (``overlap_words.exchange_of``:
    #: gather, deepep or all_to_all, §F7); None: not stated (the engine's default backend).
    expert_exchange: str | None = None
    #: SGLang's blocks the row states ran on each attention rank (``overlap_words.rank_blocks_of``).
    rank_blocks: tuple[str, ...] = ()
    limits: tuple[float, float] | None = None
    #: The precision cell as written where it names wider weights than a model released in
    #: one format only, and the row is read as that release (``resolving.as_released``).
    precision_as_released: str | None = None
    #: Engine profile name ("trtllm", "vllm", "sglang", or the ``engine`` column as given);
    #: None: the row names no engine the toolkit knows.
    engine: str | None = None
    #: The engine's version as the row writes it ("0.6", "0.17", "1.0.0rc4"; ".x" dropped;
    #: None: not stated or a placeholder such as "0.0.0.dev1").
    engine_version: str | None = None
    #: The source branch the row names where it states no version ("feat/1.2-mlpinf").
    engine_branch: str | None = None
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
    #: The MLPerf Inference round that published it ("5.1"; None: not named): its harness's.
    benchmark_round: str | None = None
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


#: The command line's options that state a column for every row that leaves it blank or out
#: (``compare-measured``'s).
STATED_BY = {
    "model": "--model",
    "hardware": "--hardware",
    "n_gpus": "--gpus",
    "precision": "--precision",
}


#: Cells apart by other characters than commas, as spreadsheets export them in some locales.
SEPARATORS = ((";", "semicolons"), ("\t", "tabs"), ("|", "bars"))


def _read_columns(
    path: Path, given: tuple[str, ...] = (), statable: tuple[str, ...] = ()
) -> tuple[list[str], list[list[str]], dict[int, SpecError], list[int]]:
    """A measured CSV's column names and columns (as text; a short row's missing cells ""),
    its rows that cannot be matched to the columns (row index -> the problem; their first
    cells kept, for the row's text): more cells than the header, or a row that runs over
    several lines (a quote left open swallows the lines after it), each unresolved, never the
    file's end, and the line each row starts on. ``given``: columns the command line states
    for every row (``--hardware``), which the file may leave out; ``statable``: those it could
    (named in the fix when the file leaves them out)."""
    header, lines = csv_rows(path)
    if not header:
        raise SpecError(str(path), "", "the file is empty", "give a header and rows")
    missing = [c for c in REQUIRED if c not in header and c not in given]
    if missing:
        options = [STATED_BY[c] for c in missing if c in STATED_BY and c in statable]
        also = (
            f"; or give {' and '.join(options)}, which states it for every row" if options else ""
        )
        fix = f"the columns are {', '.join(REQUIRED)} (and optionally {', '.join(OPTIONAL)})"
        apart = next((n for s, n in SEPARATORS if len(header) == 1 and s in header[0]), "")
        if apart:  # a spreadsheet's export in another locale: one column of every name
            fix, also = f"its names are apart by {apart}: save the file comma-separated", ""
        raise SpecError(str(path), missing[0], f"columns missing: {', '.join(missing)}", fix + also)
    twice = next((c for c in (*REQUIRED, *OPTIONAL) if header.count(c) > 1), None)
    if twice:  # which of the two holds the row's figure is not for the reader to guess
        raise SpecError(str(path), twice, "column given twice", "keep one")
    if not lines:
        raise SpecError(str(path), "", "the file has a header but no rows", "add measured rows")
    width, ragged = len(header), {}
    rows = []
    nexts = [line for line, _ in lines[1:]] + [0]  # a gap before the next row: a row may span it
    for i, ((line, cells), after) in enumerate(zip(lines, nexts)):
        if len(cells) > width:
            ragged[i] = too_many_cells(f"{path}: line {line}", len(cells), width)
        if len(cells) != width:
            cells = (cells + [""] * width)[:width]
        breaks = _line_breaks(cells) if after != line + 1 else 0
        if breaks:
            ragged[i] = _runs_over(line, breaks)
        rows.append(cells)
    names, seen = [], {}
    for name in header:  # a column it does not read given twice: told apart ("extra.1")
        count = seen.get(name, 0)
        seen[name] = count + 1
        names.append(name if not count else f"{name}.{count}")
    return names, [list(c) for c in zip(*rows)], ragged, [line for line, _ in lines]


def _line_breaks(cells: list[str]) -> int:
    """The line breaks inside a row's cells (a quoted cell that runs over lines)."""
    return sum(
        c.count("\n") + c.count("\r") - c.count("\r\n") for c in cells if "\n" in c or "\r" in c
    )


def _runs_over(line: int, breaks: int) -> SpecError:
    """The reason of a row that runs over lines ``line`` to ``line + breaks``: a measured row
    is one line, so a quote left open read the lines after it into one of its cells."""
    return SpecError(
        "",
        "",
        f"runs over lines {line}-{line + breaks}: a quote left open on line {line} read "
        "the lines after it into one cell",
        "close the quote on its own line (a measured row is one line)",
    )


def load_measured(path: str | Path, stated: dict | None = None) -> list[MeasuredRow]:
    """Read, validate and resolve a measured CSV (one ``MeasuredRow`` per line). A file that
    cannot be read, has no rows or misses a column is an error; a row that cannot be read
    (a bad number, a layout that does not fit its GPUs) gets an ``unresolved`` status with the
    field and the reason, and every other row goes on. ``stated``: columns (``hardware``,
    ``n_gpus``) given on the command line, for the rows that do not state them."""
    path = Path(file_path(path))
    from .tool_results import json_but_no_result, tool_frame  # tools' results, by content

    df = tool_frame(path)
    if df is None and json_but_no_result(path):
        raise SpecError(  # JSON, but no tool's result: not "columns missing" of a CSV
            str(path),
            "",
            "is JSON, but not a result of vllm bench serve, aiperf or InferenceX",
            "give a measured CSV (docs/user-guide.md, 'Measured results') or one of those "
            "tools' result files",
        )
    if df is None:
        with gc_paused():  # a log's cells: a million strings the collector need not walk
            given = tuple(k for k, v in (stated or {}).items() if v is not None)
            names, columns, ragged, starts = _read_columns(path, given, tuple(stated or ()))
    else:  # columns as Python lists, then rows: DataFrame.to_dict boxes every cell of an
        # Arrow string column one by one (a third of the time of a 100,000-row log)
        names, ragged = list(df.columns), {}  # once: iterating an Arrow index is slow
        columns = [df[c].tolist() for c in df.columns]
        starts = list(range(2, len(df) + 2))
    given_precision = None  # rows whose precision is the option's, which is read as given
    for name, value in (stated or {}).items():
        if value is None:
            continue
        if name not in names:  # an optional column the file leaves out: the option's, every row
            names, columns = [*names, name], [*columns, [""] * len(starts)]
        i = names.index(name)
        if name == "precision":
            given_precision = [sem.is_missing(c) for c in columns[i]]
        columns[i] = [value if sem.is_missing(c) else c for c in columns[i]]
    if given_precision is not None:
        names, columns = [*names, "_precision_given"], [*columns, given_precision]
    records = [dict(zip(names, cells)) for cells in zip(*columns)]
    if ragged and len(ragged) == len(records):  # no row can be read: one error, not a table
        left_out(str(path), "row", len(records), [(starts[i], e) for i, e in ragged.items()])
    # each row's cells but its value, zipped at C speed: with its parent's they say which
    # resolution it shares (a derived row's context is its own cells and its parent's)
    others = list(zip(*(c for name, c in zip(names, columns) if name != "value")))
    parents = parents_of(records)
    rows = []
    resolved: dict = {}  # rows that differ only in their value are resolved once
    with gc_paused():
        for i, rec in enumerate(records):
            parent = parents.get(i)
            key = (others[i], None if parent is None else others[parent])
            if i in ragged:  # cells that cannot be matched to the columns: its own reason
                rows.append(_unresolved(starts[i], context_of(rec, None), None, ragged[i]))
                continue
            parent_line = None if parent is None else starts[parent]
            rows.append(
                _resolved_once(resolved, path, starts[i], rec, records, parent, parent_line, key)
            )
    return rows


#: Attribute of the rows ``_resolved_once`` made from one resolution: a token they share.
SHARED = "_shared_resolution"


def _resolved_once(
    resolved: dict,
    path: Path,
    line: int,
    rec: dict,
    records: list,
    parent,
    inherited,
    key: tuple,
) -> MeasuredRow:
    """``_row_or_reason``, shared by the rows that differ only in their value (a benchmark
    log repeats its configurations): every value is still read on its own line, and every
    derived row names its own parent's line. ``parent``: the index of the row ``rec`` is
    derived from in ``records`` (None: none), ``inherited`` its line; ``key``: its cells but
    the value and its parent's cells but the value, which decide the rest of its reading."""

    def read() -> MeasuredRow:  # the row's context (its parent's columns) only when read
        context = context_of(rec, records[parent] if parent is not None else None)
        return _row_or_reason(path, line, context, inherited)

    try:  # the value and the metric are the row's own (not inherited)
        value = _value(rec, mn.row_metric(rec["metric"], rec["unit"])[0], f"{path}, row {line}")
        known = resolved.get(key) if value is not None else None
    except (SpecError, TypeError):  # a bad value (its own reason) or an unhashable cell
        return read()
    if value is None:  # no value read: its reason names this row's own cell
        return read()
    if known is None:
        known = resolved[key] = read()
        # a token the rows of this resolution share: everything but their line and value
        # is the same, so what is derived from the rest (``comparison._question``) is too
        known.__dict__[SHARED] = object()
    if known.value is None and value is not None:  # unresolved before its value was read
        return read()
    row = object.__new__(MeasuredRow)  # the same resolution, this line's number and value
    row.__dict__.update(known.__dict__, row=line, value=value, parent=inherited)
    return row


def _row_or_reason(path: Path, line: int, rec: dict, parent: int | None) -> MeasuredRow:
    """One record resolved, or its reason: an error in one row never stops the file."""
    try:
        return _row(path, line, rec, parent)
    except SpecError as exc:
        try:  # its value as read, where the cell is a number (the table shows it)
            value = _value(rec, None, f"{path}, row {line}")
        except (SpecError, TypeError, ValueError):
            value = None
        return _unresolved(line, rec, parent, exc, value)


def _unresolved(
    line: int, rec: dict, parent: int | None, exc: SpecError, value: float | None = None
) -> MeasuredRow:
    """A row that cannot be read, with the field, the reason and the fix as its status (and
    its ``value`` where the value cell was read as a number)."""
    at = f"{exc.field}: " if exc.field else ""
    fix = f" ({exc.fix})" if exc.fix else ""
    status = f"unresolved: {at}{exc.problem}{fix}"
    return MeasuredRow(status=status, value=value, kind="end-to-end", **_texts(line, rec, parent))


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


def _how_to_state(rec: dict) -> str:
    """How to give what a row leaves out: the options that fill the GPU and its count in."""
    missing = ["--gpus N"]
    if sem.is_missing(rec["hardware"]):
        missing.insert(0, "--hardware NAME")
        return f" and hardware is not either: give {' '.join(missing)}"
    return f": give {missing[0]}"


#: The most digits a number in a cell is read with: no count or measurement a row states runs
#: longer, and a longer one ("TP" and 5,000 nines) is past what Python turns into a number.
MOST_DIGITS = 100
_LONG_NUMBER = re.compile(rf"\d{{{MOST_DIGITS + 1},}}")


def _check_digits(rec: dict, where: str) -> None:
    """Refuse a cell holding a run of more than ``MOST_DIGITS`` digits, which no reader of
    its degrees, counts or settings takes."""
    for name, cell in rec.items():
        m = _LONG_NUMBER.search(cell) if isinstance(cell, str) else None
        if m:
            raise SpecError(
                where,
                name.lstrip("_"),
                f"holds a number of {len(m.group()):,} digits",
                f"give numbers of at most {MOST_DIGITS} digits, as the source states them",
            )


def _row(path: Path, line: int, rec: dict, parent: int | None) -> MeasuredRow:
    """One record resolved; names or fields the toolkit cannot read give a status."""
    where = f"{path}, row {line}"
    _check_digits(rec, where)
    metric, unit = mn.row_metric(rec["metric"], rec["unit"])
    rec = {**rec, "unit": unit}  # a blank unit cell: the unit the metric's name writes
    base = _texts(line, rec, parent)
    value = _value(rec, metric, where)
    gpus = _gpus(rec["n_gpus"], where)
    kind = "micro" if (metric is not None and metric.micro) else "end-to-end"
    base.update(value=value, kind=kind, metric=metric, gpus=gpus)
    problem = _problem(rec, metric, value)
    if problem:
        return MeasuredRow(status=f"unresolved: {problem}", **base)
    gpu, count, why = hardware_of(str(rec["hardware"]))
    blank = gpus is None and count is None and sem.is_missing(rec["n_gpus"])
    spanned = layouts.stated_gpus(rec.get("parallelism")) if blank else None
    if spanned is not None:  # no count stated: the one instance its layout spans ("DEP8": 8)
        limits = {"minimum": 1, "maximum": MAX_GPUS, "integer": True, "unit": "GPUs"}
        base["gpus"] = gpus = int(check_number(spanned, where, "parallelism", **limits))
    if gpus is None:
        if count is None:
            said = "is not stated" if sem.is_missing(rec["n_gpus"]) else "is not a number"
            return MeasuredRow(
                status=f"unresolved: n_gpus {str(rec['n_gpus'])!r} {said}{_how_to_state(rec)}",
                **base,
            )
        base["gpus"] = gpus = int(
            check_number(
                count, where, "hardware", minimum=1, maximum=MAX_GPUS, integer=True, unit="GPUs"
            )
        )
    if gpu is None:
        give = ": give --hardware NAME" if sem.is_missing(rec["hardware"]) else ""
        return MeasuredRow(status=f"unresolved: {why}{give}", **base)
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
    """The measured value: a positive number ("2.2k": 2,200, as blog posts round rates; "~6430"
    and "≈6.4k" as the figure they approximate), or None (text: unresolved). Several values
    separated by "/" (BabelStream's copy / triad / dot) give the middle one (triad)."""
    raw = str(rec["value"]).strip()
    raw = re.sub(r"^(?:~|≈|about\s|approx(?:\.|imately\s|\s))\s*", "", raw, flags=re.I)
    if "/" not in raw:  # most rows: one plain number, which ``check_number`` passes as it is
        try:
            plain = float(raw)
        except ValueError:
            pass
        else:
            if VALUE_BOUNDS[0] <= plain <= VALUE_BOUNDS[1]:
                return plain
    thousands = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*k\s*", raw, re.IGNORECASE)  # "2.2k" tok/s
    if thousands and "/" not in raw:
        raw = str(float(thousands.group(1)) * 1000.0)
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
    from .result_fields import UNUSABLE

    raw = str(rec["value"])
    if value is None and raw.startswith(UNUSABLE):  # a result file's row: its reader's reason
        return raw[len(UNUSABLE) :]
    if metric is None:
        return mn.why_not_read(rec["metric"])
    if value is None:
        return f"value {raw!r} is not a number"
    unit = str(rec["unit"]).lower()
    if "unclear" in unit or unit.endswith("?"):
        return f"unit {rec['unit']!r} is ambiguous"
    time = mn.time_unit(unit)
    if mn.is_time(metric.quantity) and time is None:
        return f"unit {rec['unit']!r} of a latency is not ms, s or us"
    named = mn.named_time_unit(rec["metric"])
    if named and time and named != time:
        return f"unit {rec['unit']!r} but metric {rec['metric']!r} says {named}"
    if not mn.is_time(metric.quantity) and not metric.micro and time is not None:
        return f"unit {rec['unit']!r} is a time but {rec['metric']!r} is not a latency"
    if not mn.is_time(metric.quantity) and not metric.micro:
        return mn.count_problem(metric, rec["unit"], rec["metric"]) or mn.rate_unit_problem(
            rec["unit"], rec["metric"]
        )
    return ""


def _end_to_end(rec, base, metric, gpus, count, where) -> MeasuredRow:
    """An end-to-end row resolved: its model, its MLPerf benchmark, the setting it ran
    (``_read_setting``), its lengths and its latency limits; the first that cannot be read
    gives its status."""
    if sem.is_missing(base["model_text"]):  # (SGLang's bench_serving result names none)
        return MeasuredRow(status="unresolved: model is not stated: give --model NAME", **base)
    try:
        base["arch"] = resolve_model(base["model_text"])
    except SpecError as exc:
        return MeasuredRow(
            status=f"unresolved: model {base['model_text']!r}: {exc.problem}", **base
        )
    context = rec["_context"]
    text = " ".join(str(rec.get(k, "")) for k in ("model", "source", "input_len")) + context
    benchmark = mlperf.benchmark_of(base["arch"].name, text)
    engine = _read_setting(rec, base, metric, gpus, count, where, benchmark)
    scenario, concurrency = base["scenario"], base["concurrency"]
    # the bounds of the settings the engine runs them as (--concurrency, --max-batch,
    # --step-tokens): a cap of 1e12 would size the step table and exhaust memory
    for given, name in ((concurrency, "concurrency"), (base["batch_cap"], "max_batch_requests")):
        if given is not None:
            check_number(given, where, "batch_or_concurrency", **_bounds(name))
    if base["token_budget"] is not None:
        check_number(
            base["token_budget"], where, "batch_or_concurrency", **_bounds("step_token_budget")
        )
    lengths = _lengths(rec, benchmark, where)
    if not isinstance(lengths, mlperf.Lengths):
        return MeasuredRow(status=f"unresolved: {lengths}", **base)
    base["lengths"] = lengths
    problem = scenario_problem(scenario, metric, concurrency, base["bits"], rec)
    if not problem and base["disaggregated"] and base["decode_gpus"] is None:
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
    return MeasuredRow(status=_status(rec, base, engine, benchmark), **base)


def _bits(rec, base):
    """The (weight, activation, KV) bits a row's precision cell states, as its model's
    checkpoint runs them (block-scaled FP8, its release, an MX checkpoint's KV cache); the
    block-scaled architecture and a bare label read as the release go into ``base``."""
    said = str(rec.get("precision") or "").strip()
    bits = engine_words.precision_of(said)
    if bits is not None and bits[0] == 8 and engine_words.states_block_scaled(said):
        base["arch"] = base["arch"].with_block_scaled_fp8()  # its checkpoint's own format
    instead = released_instead(bits, base["arch"], said)
    if not (instead and rec.get("_precision_given")):  # ``--precision`` is read as given
        if instead:
            base["precision_as_released"] = said
        bits = as_released(bits, base["arch"], said)
    if bits is not None and not engine_words.states_kv_format(said):
        bits = (bits[0], bits[1], mx_kv_cache_bits(base["gpu"], bits[0], bits[2]))
    return bits


def _clients_per_gpu(rec, metric, gpus, where) -> tuple[dict, str | None]:
    """(the record, its scenario) with a concurrency given per GPU as the run's total ("64 per
    GPU" on 8 GPUs: 512), unless the total reads as an MLPerf scenario's cap per GPU."""
    context, cell = rec["_context"], rec.get("batch_or_concurrency")
    scenario = sem.scenario_of(rec, metric, context)
    try:
        total = sem.total_concurrency(cell, gpus, where)
    except SpecError:
        if scenario not in sem.MLPERF_SCENARIOS:
            raise
        total = cell  # an MLPerf scenario's number is the engine's cap, whatever it restates
    if total == cell:  # no count per GPU: the scenario as read
        return rec, scenario
    read = sem.scenario_of({**rec, "batch_or_concurrency": total}, metric, context)
    if read not in sem.MLPERF_SCENARIOS:
        return {**rec, "batch_or_concurrency": total}, read
    return rec, scenario


def _read_setting(rec, base, metric, gpus, count, where, benchmark):
    """Read the setting an end-to-end row ran into ``base`` (precision, scenario, concurrency,
    engine and what the row states of it, disaggregation, layout, what the value is per);
    returns the engine the row names (``engine_words.EngineText``)."""
    bits = _bits(rec, base)
    rec, scenario = _clients_per_gpu(rec, metric, gpus, where)
    context, cell = rec["_context"], rec.get("batch_or_concurrency")
    experts = base["arch"].routed_experts
    copies = redundant_experts_of(cell, scenario, context, where, experts)
    if copies and not base["arch"].is_moe:
        raise SpecError(where, "notes", "states redundant experts (EPLB) of a dense model")
    if copies:  # the engine's load balancer held copies of routed experts (EPLB, §F7)
        base["arch"] = base["arch"].with_redundant_experts(copies)
    concurrency, cap = sem.batch_of(cell, scenario, context)
    engine = engine_words.engine_of(rec, context, base["gpu"].description)
    if engine.name is not None:
        engine_profile(engine.name)
    disaggregated, decode_gpus, decode_text = layouts.disaggregation_of(
        rec, context, rec["unit"], gpus, where, scenario
    )
    serving = decode_gpus if disaggregated and decode_gpus else gpus
    prefill_layout = layouts.prefill_pool_of(rec, context, where) if disaggregated else None
    cap, budget, kv_fraction, fused = _stated_engine(rec, scenario, cap, decode_text, where)
    steps, chunked, mixed = sem.scheduler_of(cell, scenario, context, where)
    cadence, balancing = sem.admission_of(cell, scenario, context, where)
    overlapped = sem.async_of(cell, scenario, context, where)
    two_batches = overlap_of(cell, scenario, context, where)
    exchange = exchange_of(cell, scenario, context, where)
    layout = (
        layouts.layout_of(decode_text, serving, where)
        if decode_text
        else layouts.row_layout(rec.get("parallelism"), context, scenario, serving, where)
    )
    per, per_count = basis_of(rec, metric, gpus, count, base["gpu"], decode_gpus)
    if copies is not None:
        check_stated_slots(experts, copies, layout, engine.name, where)
    needed = 0 if copies is not None else needed_copies(experts, layout, engine.name, where)
    if needed:  # an expert degree that does not divide the experts runs on balanced slots
        base["arch"] = base["arch"].with_redundant_experts(needed)
    base.update(
        copies_needed=bool(needed),
        bits=bits,
        scenario=scenario,
        layout=layout,
        concurrency=concurrency,
        batch_cap=cap,
        token_budget=budget,
        bench_limits=runs_own_limits(
            rec.get("source", ""), context, rec.get("batch_or_concurrency", ""), budget
        ),
        graph_batch_sizes=overview_graphs(rec.get("source", ""), cell or ""),
        fused_allreduce=fused,
        kv_cache_fraction=kv_fraction,
        scheduler_steps=steps,
        chunked_prefill=chunked,
        mixed_chunk=mixed,
        admission_cadence=cadence,
        adp_balancing=balancing,
        async_scheduling=overlapped,
        two_batch_overlap=two_batches,
        expert_exchange=exchange,
        rank_blocks=rank_blocks_of(cell, scenario, context, where),
        engine=engine.name,
        engine_version=engine.version,
        engine_branch=engine.branch,
        platform=engine.platform,
        disaggregated=disaggregated,
        decode_gpus=decode_gpus,
        prefill_layout=prefill_layout,
        per=per,
        per_count=per_count,
        benchmark=benchmark.name if benchmark is not None else None,
        benchmark_round=(
            mlperf.round_of(f"{rec.get('model', '')} {rec.get('source', '')} {context}")
            if benchmark is not None
            else None
        ),
    )
    return engine


def _stated_engine(rec, scenario, cap, decode_text, where):
    """(batch cap, token budget, KV-cache share, GEMM/all-reduce fused) a row states its
    engine ran with: a disaggregated row's decode workers' own ("max_batch_size 64"), else
    the row's (the ``batch_or_concurrency`` cell first, then the notes); ``cap``: the row's."""
    context = rec["_context"]
    cell = rec.get("batch_or_concurrency")
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
    return cap, budget, kv_fraction, fused


def _lengths(rec, benchmark, where):
    """The lengths of a row (``mlperf.lengths_of``; the reason as text where they cannot be
    read), issuing the run's own count of requests where a ``requests`` column gives it."""
    lengths = mlperf.lengths_of(rec.get("input_len", ""), rec.get("output_len", ""), benchmark)
    if not isinstance(lengths, mlperf.Lengths):
        return lengths
    given = str(rec.get("requests") or "").strip()
    if given and not sem.is_missing(given):  # the run's own count (a closed loop replays it)
        # up to a billion: an MLPerf Offline run on 72 GPUs issues 11.4 million samples (the
        # replay simulates at most its cap of them and extends the run's steady middle)
        n = check_number(given, where, "requests", minimum=1, maximum=1e9, integer=True)
        # an MLPerf run issues at least its performance sample count (LoadGen's equal issue)
        lengths = dataclasses.replace(lengths, issued=max(int(n), lengths.issued))
    pool = str(rec.get("distinct_prompts") or "").strip()
    if pool and not sem.is_missing(pool):  # a synthetic dataset the run sent again and again
        n = check_number(pool, where, "distinct_prompts", minimum=1, maximum=1e9, integer=True)
        lengths = dataclasses.replace(lengths, distinct_prompts=int(n))
    return lengths


def _status(rec, base, engine, benchmark) -> str:
    """The status of a row read in full: out of scope where it (or its MLPerf harness) uses a
    feature the model lacks, derived where it repeats another row's run, else ok."""
    lacking = engine_words.unmodelled_of(rec, rec["_context"])
    own = rec["_notes"].strip()
    scenario = base["scenario"]
    harness = harness_unmodelled(
        engine, base["gpu"], base["arch"].name, scenario, benchmark, base["benchmark_round"]
    )
    if lacking:
        return engine_words.out_of_scope(lacking)
    if harness:
        return harness
    if is_derived(rec):
        return f"derived: {own} (predicted, left out of summaries and fits)"
    return OK


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
        shape = gemm_shape_of(rec.get("input_len"))
        if shape == "?":
            return MeasuredRow(
                status=f"unresolved: GEMM shape {str(rec.get('input_len'))!r} not readable", **base
            )
        base["gemm_shape"] = shape
    return MeasuredRow(status=OK, **base)
