"""Studies: a design space in YAML (lists of values per axis) expanded into cells, each a frontier.

A study file lists values per axis - models, GPUs (names or files), contexts, precisions,
speculation, presets, what-if scales - and ``exclude:`` rules. Every combination that no rule
excludes is a **cell**: one serving setting and search method, whose frontier and key points
(fastest, cheapest, preference point, cheapest at given speeds) become rows of tidy tables with
a column per axis. A cell is identified by a hash of what it computes from (the resolved specs'
content, its settings, the method and the package version), so finished cells can be cached
and a rerun computes only what changed. Validation errors name the file, the axis and the field.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import hashlib
import itertools
import json
import math
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import settings as table
from ..errors import SpecError, did_you_mean
from ..optimise.frontier import Frontier
from ..optimise.method import Method
from ..optimise.optimiser import _pass_setting, frontier_columns
from ..serving.decode import DETAIL_COLUMNS
from ..serving.setting import Setting
from ..specs import catalog
from ..specs.architecture import load_model
from ..specs.hardware import load_hardware
from ..specs.schema import Reader
from ..specs.yamlfile import load_yaml
from .scenario import CURVE_KEYS, WHAT_IF_KEYS, Curve

#: Bumped when the cached payload of a cell changes shape or meaning (part of every cell's
#: hash). 2: ``bound`` may be ``mixed``; draft heads' ``draft_tokens`` are depth + 1. 3: the
#: energy columns name their power basis (``_per_kw_it``, ``_per_mw_facility``); a frontier
#: with prompts notes that its price is decode-only.
CACHE_FORMAT = 3
#: Axes named after one field of a curve: their values are that field's values.
FIELD_AXES = tuple(k for k in CURVE_KEYS if k != "label")
#: Names people reach for, and the axis they mean.
AXIS_HINTS = {
    "models": "model",
    "gpu": "hardware",
    "gpus": "hardware",
    "accelerators": "hardware",
    "context": "context_tokens",
    "contexts": "context_tokens",
    "preset": "assumptions",
    "presets": "assumptions",
    "drafts": "draft",
}
SUMMARY_METRICS = ("cost_at_speed", "preference_cost", "cheapest_cost", "fastest_speed")


@dataclass(frozen=True)
class Axis:
    """One axis: its name, the label of each value (a table column) and the fields it sets."""

    name: str
    labels: tuple
    fields: tuple[dict, ...]

    @property
    def keys(self) -> set[str]:
        """Every curve field some value of this axis sets."""
        return {k for f in self.fields for k in f}


@dataclass(frozen=True)
class Cell:
    """One combination of axis values: its setting, method and the hash of its inputs."""

    index: int
    values: dict
    setting: Setting
    method: Method
    key: str

    @property
    def label(self) -> str:
        return self.setting.label


@dataclass(frozen=True)
class Study:
    """A design space: axes, defaults, exclusion rules and the key points to report."""

    name: str
    title: str
    axes: tuple[Axis, ...]
    defaults: dict = field(default_factory=dict)
    exclude: tuple[dict, ...] = ()
    at_speeds: tuple[float, ...] = ()
    preference_k: float = 3.0
    summary: dict = field(default_factory=dict)
    description: str = ""
    source: str = "<dict>"

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)


# --- reading and validating a study file ---------------------------------------------------


def _resolve_path(value: Any, base: Path | None) -> Any:
    """A relative YAML path is read relative to the study file when it exists there."""
    if isinstance(value, str) and value.endswith((".yaml", ".yml")) and base is not None:
        candidate = base / value
        if not Path(value).is_absolute() and candidate.is_file():
            return str(candidate.resolve())
    return value


def _check_field(key: str, value: Any, where: str, at: str, base: Path | None) -> Any:
    """One curve field of an axis value (or of ``defaults``), validated like a scenario's."""
    if key in ("model", "hardware", "draft"):
        if not isinstance(value, str):
            raise SpecError(
                where, at, f"expected a name or a path, got {value!r}", "write it as text"
            )
        value = _resolve_path(value, base)
        try:  # the file's path from here on: names are looked up once per axis value
            path = catalog.find("hardware" if key == "hardware" else "models", value)
            load_hardware(path) if key == "hardware" else load_model(path)
        except SpecError as exc:
            raise SpecError(where, at, exc.problem, exc.fix) from None
        return str(path.resolve())
    if key in WHAT_IF_KEYS or (key == "assumptions" and isinstance(value, Mapping)):
        if not isinstance(value, Mapping):
            raise SpecError(where, at, f"expected a mapping, got {value!r}", "e.g. {field: value}")
        return dict(value)
    return table.option(key).check(value, where, at)


def _check_fields(values: Mapping, where: str, prefix: str, base: Path | None) -> dict:
    """Curve fields of one composite axis value or of ``defaults``."""
    out = {}
    for key, value in values.items():
        if key not in FIELD_AXES:
            hint = did_you_mean(str(key), FIELD_AXES)
            raise SpecError(where, f"{prefix}{key}", "unknown field", hint or _fields_hint())
        if value is not None:
            out[key] = _check_field(key, value, where, f"{prefix}{key}", base)
    return out


def _fields_hint() -> str:
    return f"known fields: {', '.join(FIELD_AXES)}"


def _mapping_label(value: Mapping) -> str:
    """A readable label for a mapping value: ``preset, field=value, ...``."""
    parts = [str(value["preset"])] if "preset" in value else []
    parts += [f"{k}={v}" for k, v in value.items() if k != "preset"]
    return ", ".join(parts) or "none"


def _axis(name: str, raw: Any, where: str, base: Path | None) -> Axis:
    """One axis of the file, every value validated (the error names the axis and the value)."""
    path = f"axes.{name}"
    if not isinstance(raw, list) or not raw:
        raise SpecError(where, path, "expected a non-empty list of values", "e.g. [8, 16]")
    labels, fields = [], []
    for i, value in enumerate(raw):
        at = f"{path}[{i}]"
        if name in FIELD_AXES:
            if value is None and name not in WHAT_IF_KEYS:
                raise SpecError(where, at, "is empty", f"give a value of {name}")
            fields.append(
                {} if value is None else {name: _check_field(name, value, where, at, base)}
            )
            plain = value is not None and not isinstance(value, Mapping)
            labels.append(value if plain else _mapping_label(value or {}))
            continue
        if name in RESERVED:
            raise SpecError(
                where, path, "is the name of a column of the tables", "give the axis another name"
            )
        if value is not None and not isinstance(value, Mapping):
            hint = did_you_mean(name, FIELD_AXES)
            hint = f"did you mean {AXIS_HINTS[name]!r}?" if name in AXIS_HINTS else hint
            raise SpecError(
                where,
                path,
                f"unknown axis with value {value!r}",
                (hint + " " if hint else "")
                + "an axis of your own takes mappings of settings, each with a label, "
                "e.g. precision: [{label: FP8, weight_bits: 8, activation_bits: 8}]",
            )
        value = dict(value or {})
        label = value.pop("label", None)
        fields.append(_check_fields(value, where, f"{at}.", base))
        labels.append(str(label) if label is not None else _mapping_label(value))
    if any(isinstance(x, str) for x in labels):
        labels = [str(x) for x in labels]
    counts = Counter(x if isinstance(x, (str, int, float)) else repr(x) for x in labels)
    dupes = sorted({str(x) for x, n in counts.items() if n > 1})
    if dupes:
        raise SpecError(where, path, f"repeats the values {dupes}", "give each value once")
    return Axis(name, tuple(labels), tuple(fields))


def _exclusions(raw: Any, axes: tuple[Axis, ...], where: str) -> tuple[dict, ...]:
    """``exclude:`` rules: each a mapping of axis -> value(s) (text may use * and ?)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SpecError(
            where, "exclude", "expected a list of rules", "e.g. [{model: X, hardware: Y}]"
        )
    by_name = {a.name: a for a in axes}
    rules = []
    for i, rule in enumerate(raw):
        at = f"exclude[{i}]"
        if not isinstance(rule, Mapping) or not rule:
            raise SpecError(where, at, f"expected a mapping of axis: value, got {rule!r}")
        checked = {}
        for name, wanted in rule.items():
            if name not in by_name:
                hint = did_you_mean(str(name), by_name)
                raise SpecError(
                    where, f"{at}.{name}", "is not an axis", hint or f"axes: {', '.join(by_name)}"
                )
            wanted = list(wanted) if isinstance(wanted, list) else [wanted]
            for w in wanted:
                if not any(_matches(label, w) for label in by_name[name].labels):
                    hint = did_you_mean(str(w), [str(x) for x in by_name[name].labels])
                    raise SpecError(
                        where,
                        f"{at}.{name}",
                        f"{w!r} matches no value of the axis",
                        hint or f"values: {', '.join(map(str, by_name[name].labels))}",
                    )
            checked[name] = tuple(wanted)
        rules.append(checked)
    return tuple(rules)


def _matches(label: Any, wanted: Any) -> bool:
    """An axis value against a rule's value: numbers by value, text exactly or by pattern (a
    number's text as the axis lists it: "8000" and "8*" match a context of 8000)."""
    if isinstance(wanted, str):
        text = label if isinstance(label, str) else str(label)
        return text == wanted or fnmatch.fnmatchcase(text, wanted)
    if isinstance(label, str):
        return False
    if isinstance(wanted, (int, float)) and not isinstance(wanted, bool):
        return not isinstance(label, bool) and float(label) == float(wanted)
    return label == wanted


#: Most cells of a study (its axes' values multiplied): each is a setting built and hashed
#: before anything runs, so a larger product is refused before any value is read.
MAX_CELLS = 10_000


def _check_size(raw_axes: Mapping, source: str) -> None:
    """Refuse a study of more than ``MAX_CELLS`` cells, naming its longest axis, before its
    values are validated (100,000 values of one axis took minutes before any refusal)."""
    sizes = {str(k): len(v) for k, v in raw_axes.items() if isinstance(v, list)}
    cells = math.prod(sizes.values())
    if cells > MAX_CELLS:
        longest = max(sizes, key=sizes.__getitem__)
        raise SpecError(
            source,
            f"axes.{longest}",
            f"has {sizes[longest]:,} values: the axes make {cells:,} cells, more than the "
            f"{MAX_CELLS:,} a study runs",
            "split the study into several files, or give fewer values",
        )


def study_from_dict(data: Mapping[str, Any], source: str = "<dict>", name: str = "") -> Study:
    """Validate a parsed study and build it (every name it mentions is resolved)."""
    r = Reader(data, source)
    base = Path(source).resolve().parent if Path(source).is_file() else None
    title = r.string("title")
    raw_axes = r.mapping("axes")
    if not raw_axes:
        raise SpecError(source, "axes", "is empty", "give at least one axis, e.g. model: [...]")
    _check_size(raw_axes, source)
    axes = tuple(_axis(str(k), v, source, base) for k, v in raw_axes.items())
    seen: dict[str, str] = {}
    for axis in axes:
        for key in sorted(axis.keys):
            if key in seen:
                raise SpecError(
                    source,
                    f"axes.{axis.name}",
                    f"sets {key}, which axis {seen[key]!r} sets too",
                    "let one axis set each field",
                )
            seen[key] = axis.name
    defaults = _check_fields(r.mapping("defaults", {}) or {}, source, "defaults.", base)
    for key in ("model", "hardware"):
        if key not in seen and key not in defaults:
            raise SpecError(
                source, "axes", f"no axis or default sets the {key}", f"add an axis '{key}'"
            )
    speeds = table.option("at_speeds").check(r.raw("at_speeds", None), source, "at_speeds")
    study = Study(
        name=name or Path(source).stem,
        title=title,
        axes=axes,
        defaults=defaults,
        exclude=_exclusions(r.raw("exclude", None), axes, source),
        at_speeds=tuple(speeds or ()),
        preference_k=table.option("preference_k").check(r.raw("preference_k", None), source),
        summary=_summary(r.mapping("summary", {}) or {}, axes, speeds, source),
        description=r.string("description", ""),
        source=source,
    )
    r.finish()
    return study


def _summary(raw: Mapping, axes: tuple[Axis, ...], speeds, source: str) -> dict:
    """How the summary figure is laid out: rows, columns, panels (axes) and the metric."""
    r = Reader(raw, source, "summary")
    names = [a.name for a in axes]
    keys = ("rows", "columns", "panels")
    given = {key: r.raw(key, None) for key in keys}
    given = {key: value for key, value in given.items() if value is not None}
    # an axis the file does not place goes where it is not placed already: rows: hardware
    # leaves the columns to the next varying axis, not to hardware again
    free = [a.name for a in axes if len(a.labels) > 1] or names
    free = iter([name for name in free if name not in given.values()])
    out: dict = {}
    for key in keys:
        value = given[key] if key in given else next(free, None)
        if value is not None and value not in names:
            hint = did_you_mean(str(value), names)
            raise SpecError(
                source,
                f"summary.{key}",
                f"{value!r} is not an axis",
                hint or f"axes: {', '.join(names)}",
            )
        if value is not None and value in out.values():
            first = next(k for k, v in out.items() if v == value)
            raise SpecError(
                source,
                f"summary.{key}",
                f"{value!r} is the summary's {first} already",
                "give each of rows, columns and panels a different axis",
            )
        out[key] = value
    metric = r.string("metric", "cost_at_speed" if speeds else "preference_cost", SUMMARY_METRICS)
    if metric == "cost_at_speed" and not speeds:
        raise SpecError(
            source, "summary.metric", "cost_at_speed needs at_speeds", "add at_speeds: [50]"
        )
    out["metric"] = metric
    if metric != "cost_at_speed" and r.has("speed"):
        raise SpecError(
            source,
            "summary.speed",
            f"is only read by metric cost_at_speed, not {metric}",
            "remove it, or give metric: cost_at_speed",
        )
    speed = r.number("speed", speeds[0] if speeds else None, minimum=0, exclusive_minimum=True)
    if metric == "cost_at_speed" and speed not in speeds:
        raise SpecError(
            source, "summary.speed", f"{speed!r} is not one of at_speeds", "add it to at_speeds"
        )
    out["speed"] = speed
    r.finish()
    return out


def load_study(name_or_path: str | Path) -> Study:
    """Load a study by path or by name (e.g. "studies/accelerators-models")."""
    path = catalog.find("scenarios", name_or_path)
    data = load_yaml(path)
    if "axes" not in data:
        raise SpecError(
            str(path),
            "axes",
            "is missing: this is not a study file",
            "run a scenario with 'inference-econ run'",
        )
    return study_from_dict(data, str(path), path.stem)


# --- expansion -------------------------------------------------------------------------------


def excluded(values: Mapping[str, Any], rules) -> bool:
    """Whether some rule matches every one of its axes in ``values``."""
    return any(
        all(any(_matches(values[a], w) for w in ws) for a, ws in rule.items()) for rule in rules
    )


def expand(study: Study) -> list[Cell]:
    """Every cell of the study's cartesian product that no ``exclude`` rule removes."""
    cells = []
    version = package_version()
    varying = [a for a in study.axes if len(a.labels) > 1] or list(study.axes)
    for combo in itertools.product(*(range(len(a.labels)) for a in study.axes)):
        values = {a.name: a.labels[i] for a, i in zip(study.axes, combo)}
        if excluded(values, study.exclude):
            continue
        fields = dict(study.defaults)
        for a, i in zip(study.axes, combo):
            fields.update(a.fields[i])
        label = " · ".join(str(values[a.name]) for a in varying)
        curve = Curve(label=label, fields=fields, source=f"{study.source}, cell '{label}'")
        setting, method = curve.setting(), curve.method()
        key = cell_key(setting, method, version)
        cells.append(Cell(len(cells), values, setting, method, key))
    if not cells:
        raise SpecError(study.source, "exclude", "excludes every cell", "loosen the exclude rules")
    return cells


# --- the hash of a cell's inputs ---------------------------------------------------------------

#: Fields that describe a spec but do not change what is computed from it.
_METADATA = ("description", "aliases", "source", "source_file", "label")


def package_version() -> str:
    """The installed version of inference-econ (part of every cell's hash)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("inference-econ")
    except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
        return "unknown"


def _content(value: Any) -> Any:
    """A dataclass tree as plain data, without the fields that are only metadata."""
    if dataclasses.is_dataclass(value):
        if value.__hash__ is not None:
            try:
                return _spec_content(value)
            except TypeError:  # a field that cannot be hashed: no memo
                pass
        return _fields_content(value)
    if isinstance(value, (list, tuple)):
        return [_content(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def _fields_content(value: Any) -> dict:
    return {
        f.name: _content(getattr(value, f.name))
        for f in dataclasses.fields(value)
        if f.name not in _METADATA
    }


@functools.lru_cache(maxsize=1024)
def _spec_content(value: Any) -> str:
    """The content of a frozen spec (GPU, model, assumptions) as JSON text, computed once."""
    return json.dumps(_fields_content(value), sort_keys=True, default=repr)


def cell_key(setting: Setting, method: Method, version: str | None = None) -> str:
    """SHA-256 of what a cell's frontier is computed from, and of the package version."""
    payload = {
        "format": CACHE_FORMAT,
        "version": package_version() if version is None else version,
        "setting": _content(setting),
        "method": _content(method),
    }
    text = json.dumps(payload, sort_keys=True, default=repr, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


# --- computing a cell ---------------------------------------------------------------------------


def compute_cell(setting: Setting, method: Method) -> dict:
    """A cell's frontier as a JSON-ready payload (what workers return and the cache stores)."""
    start = time.perf_counter()
    front = frontier_columns(setting, method)  # no DataFrame made and taken apart again
    columns = front.columns
    return {
        "format": CACHE_FORMAT,
        "label": setting.label,
        "notes": list(front.notes),
        "elapsed_s": time.perf_counter() - start,
        "columns": [str(c) for c in columns],
        "data": _column_rows(columns),
    }


def pass_group(setting: Setting) -> Setting:
    """What a cell's pass latencies depend on: cells with the same group (they differ only
    in the acceptance rate, the demand cap or the label) share them when run one after the
    other in one process (the optimiser keeps the last few)."""
    return _pass_setting(setting)


def _column_rows(columns: Mapping[str, np.ndarray]) -> list[list]:
    """The rows of a table of columns (1-D arrays) as lists of Python values, as ``_rows``
    gives those of the same table as a frame; other dtypes than numbers, flags and text go
    through pandas."""
    if not all(np.asarray(v).dtype.kind in "fiubU" for v in columns.values()):
        return _rows(pd.DataFrame(dict(columns)))
    return [list(row) for row in zip(*(np.asarray(v).tolist() for v in columns.values()))]


def _rows(points: pd.DataFrame) -> list[list]:
    """The rows of a frame as lists of Python values, as ``to_dict(orient="split")`` gives
    them, a column at a time (3 times faster); other dtypes go through pandas."""
    if not all(dt.kind in "fiub" or dt == "str" for dt in points.dtypes):
        return points.to_dict(orient="split")["data"]
    return [list(row) for row in zip(*(points[c].tolist() for c in points.columns))]


#: Columns of a payload whose every value is a finite positive number (a frontier point).
PAYLOAD_MEASURES = ("tokens_per_s", "usd_per_mtok", "gpus", "batch")


def payload_problem(payload: Any) -> str:
    """Why ``payload`` is not a cell as ``compute_cell`` writes it ('' when it is one): the
    cache reads files a user may have edited, so a wrong shape, a missing column, text where
    a number goes, or a negative or infinite speed, cost or count makes it count as missing."""
    if not isinstance(payload, Mapping) or payload.get("format") != CACHE_FORMAT:
        return f"not a cell payload of format {CACHE_FORMAT}"
    columns, data = payload.get("columns"), payload.get("data")
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        return "columns is not a list of names"
    if len(set(columns)) != len(columns) or not set(PAYLOAD_MEASURES) <= set(columns):
        return f"columns must name {', '.join(PAYLOAD_MEASURES)} once each"
    if not isinstance(data, list) or not all(
        isinstance(row, list) and len(row) == len(columns) for row in data
    ):
        return f"data is not a list of rows of {len(columns)} values"
    if not isinstance(payload.get("label", ""), str) or not isinstance(
        payload.get("notes", []), list
    ):
        return "label or notes of the wrong type"
    elapsed = payload.get("elapsed_s", 0.0)
    if isinstance(elapsed, bool) or not isinstance(elapsed, (int, float)) or not elapsed >= 0:
        return "elapsed_s is not a time"
    problem = _values_problem(data)
    if problem:
        return problem
    for name in PAYLOAD_MEASURES:
        i = columns.index(name)
        values = [row[i] for row in data]
        if not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < math.inf
            for v in values
        ):
            return f"{name} holds a value that is not a finite positive number"
    return ""


#: The types of a payload's values as JSON gives them (and ``compute_cell``'s rows).
_PLAIN_TYPES = frozenset((bool, int, float, str, type(None)))


def _values_problem(data: list[list]) -> str:
    """A value of ``data`` that is neither a number nor text, or a negative number ('' when
    none): every value's type at once, the numbers' signs in numpy (payloads hold ~10,000
    values; a value at a time took 2 ms a cell)."""
    values = list(itertools.chain.from_iterable(data))
    if not set(map(type, values)) <= _PLAIN_TYPES:
        return "a value that is neither a number nor text"
    numbers = [v for v in values if type(v) is float or type(v) is int]
    try:
        signs = np.asarray(numbers, dtype=float) < 0  # NaN is not negative
    except OverflowError:  # an integer beyond a float: one at a time
        signs = np.array([v < 0 for v in numbers], dtype=bool)
    if signs.any():
        value = numbers[int(np.argmax(signs))]
        text = f"{value:g}" if isinstance(value, float) or value > -1e300 else "below -1e300"
        return f"a negative value ({text})"
    return ""


def payload_frontier(payload: Mapping) -> Frontier:
    """The frontier a payload (or a ``compact_payload``) holds."""
    if "frame" in payload:
        points = payload["frame"]
    else:
        points = pd.DataFrame(payload["data"], columns=payload["columns"])
    return Frontier(payload.get("label", ""), points, notes=list(payload.get("notes", [])))


def compact_payload(payload: Mapping) -> dict:
    """A payload with its rows as a frame instead of lists of Python values (a quarter of the
    memory): what a study keeps of each finished cell until it makes its tables."""
    if "frame" in payload:
        return dict(payload)
    out = {k: v for k, v in payload.items() if k != "data"}
    out["frame"] = pd.DataFrame(payload["data"], columns=payload["columns"])
    return out


def key_points(front: Frontier, at_speeds=(), k: float = 3.0) -> pd.DataFrame:
    """Fastest, cheapest, preference point and cheapest at each speed, one row each."""
    return _key_frame(pd.DataFrame(key_point_rows(front, at_speeds, k)))


def key_point_rows(front: Frontier, at_speeds=(), k: float = 3.0) -> list[dict]:
    """The rows of ``key_points`` as mappings (a study makes one table of all its cells')."""
    if front.empty:
        note = "; ".join(front.notes) or "no configuration is feasible"
        return [{"point": "none feasible", "feasible": False, "note": note}]
    rows = [
        {"point": "fastest", **front.fastest().to_dict()},
        {"point": "cheapest", **front.cheapest().to_dict()},
        {"point": "preference", **front.preference_point(k=k).to_dict()},
    ]
    fastest = front.fastest()["tokens_per_s"]
    for speed in at_speeds:
        found = front.cheapest_at_speed(speed)
        if found is None:
            note = f"the fastest configuration reaches {fastest:.4g} tokens/s per request"
            rows.append(
                {"point": "at_speed", "target_tokens_per_s": speed, "feasible": False, "note": note}
            )
        else:
            rows.append({"point": "at_speed", "target_tokens_per_s": speed, **found.to_dict()})
    return rows


def _note_kv_excess(setting, rows: list[dict]) -> None:
    """Each key point whose whole batch's KV cache and weights exceed its GPUs' HBM (the paper
    preset checks one micro-batch's cache) says so in its note, as ``frontier`` says of its
    points (``whole_batch_kv_note``)."""
    from ..serving.setting import whole_batch_kv_note

    for row in rows:
        if row.get("feasible") is False or "gpus" not in row:
            continue
        note = whole_batch_kv_note(setting, row["gpus"], row["batch"], setting.context_tokens)
        if note:
            row["note"] = note


def _key_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Key-point rows with their target, feasible and note columns filled in."""
    if "target_tokens_per_s" not in df:
        df["target_tokens_per_s"] = np.nan
    df["feasible"] = df["feasible"].fillna(True).astype(bool) if "feasible" in df else True
    df["note"] = df["note"].fillna("") if "note" in df else ""
    return df


#: Columns that describe a cell besides its axes (added when no axis has the name).
RESOLVED_COLUMNS = (
    "model_name",
    "gpu_name",
    "context_tokens",
    "weight_bits",
    "activation_bits",
    "kv_cache_bits",
    "draft_model",
    "assumptions",
    "method",
    "grid_points",
)


def _resolved(cell: Cell) -> dict:
    s, m = cell.setting, cell.method
    p = s.model.precision
    return {
        "model_name": s.model.name,
        "gpu_name": s.gpu.name,
        "context_tokens": s.context_tokens,
        "weight_bits": p.weight_bits,
        "activation_bits": p.activation_bits,
        "kv_cache_bits": p.kv_cache_bits if p.kv_cache_bits is not None else p.activation_bits,
        "draft_model": s.spec.draft.name if s.spec is not None else "",
        "assumptions": s.assumptions.name,
        "method": m.kind,
        "grid_points": m.grid_points,
    }


#: Column names an axis of one's own may not take.
RESERVED = frozenset(
    ("cell", "cell_key", "point", "target_tokens_per_s", "feasible", "note", "frontier_index")
    + RESOLVED_COLUMNS
    + tuple(DETAIL_COLUMNS)
    + ("micro_batch", "throughput_tokens_per_s", "tokens_per_s_per_gpu", "ttft_s")
    + ("memory_time_s", "compute_time_s")
)


def _describe_cell(cell: Cell, study: Study) -> dict:
    """The columns that say which cell a row belongs to: index, hash, axes, resolved fields."""
    out = {"cell": cell.index, "cell_key": cell.key[:16], **cell.values}
    out.update({k: v for k, v in _resolved(cell).items() if k not in study.axis_names})
    return out


def tables(study: Study, cells, payloads: Mapping[str, Mapping], failed=None):
    """The tidy tables: key points (one row per cell x key point) and full frontiers.

    ``payloads`` maps a cell's key to its computed payload; ``failed`` maps keys of cells that
    could not be computed to the reason, which becomes a row with ``point == "failed"``.
    The rows of every cell are gathered first and made into one frame per table (a frame per
    cell cost 8 ms a cell).
    """
    failed = failed or {}
    heads, key_rows, key_counts, fronts, front_counts = [], [], [], [], []
    for cell in cells:
        head = _describe_cell(cell, study)
        heads.append(head)
        if cell.key in payloads:
            front = payload_frontier(payloads[cell.key])
            rows = key_point_rows(front, study.at_speeds, study.preference_k)
            if any("KV cache" in n for n in front.notes):
                _note_kv_excess(cell.setting, rows)
            if len(front.points):
                fronts.append(front.points)
            front_counts.append(len(front.points))
        else:
            why = failed.get(cell.key, "not computed")
            rows = [{"point": "failed", "feasible": False, "note": why}]
            front_counts.append(0)
        key_rows += rows
        key_counts.append(len(rows))
    head_cols = list(heads[0])
    kp_cols = ["point", "target_tokens_per_s", "feasible", "note"]
    keys = _key_frame(pd.DataFrame(key_rows))
    key_table = pd.concat([_heads(heads, key_counts, head_cols), keys], axis=1)
    rest = [c for c in key_table.columns if c not in head_cols and c not in kp_cols]
    # A study where every cell failed has no target column: reindex adds the missing ones.
    key_table = key_table.reindex(columns=head_cols + kp_cols + rest)
    if not fronts:
        return key_table, pd.DataFrame(columns=head_cols)
    points = pd.concat(fronts, ignore_index=True)
    index = np.concatenate([np.arange(n) for n in front_counts if n])
    points.insert(0, "frontier_index", index)
    front_table = pd.concat([_heads(heads, front_counts, head_cols), points], axis=1)
    return key_table, front_table


def _heads(heads: list[dict], counts: list[int], columns: list[str]) -> pd.DataFrame:
    """The head columns of each cell, repeated over its rows."""
    return pd.DataFrame(
        {c: [h[c] for h, n in zip(heads, counts) for _ in range(n)] for c in columns}
    )
