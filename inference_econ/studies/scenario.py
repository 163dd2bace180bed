"""Scenario files: a comparison described in YAML (a title and a list of curves).

A curve is one setting (model, GPU, context, precisions, demand cap, speculative decoding,
discrete or continuous, assumptions) plus optional what-if overrides of the hardware or the
model. Tables pick one point per curve (the fastest or the preference point) and may carry
the paper's values; figures plot the curves. Validation errors name the file, the curve and
the field.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import settings as table
from ..errors import InferenceEconError, SpecError, did_you_mean, short
from ..model.assumptions import Assumptions, preset
from ..optimise.method import Method, make_method
from ..serving.setting import Setting, make_setting
from ..specs import catalog
from ..specs.architecture import architecture_from_dict, load_model
from ..specs.hardware import derive, load_hardware
from ..specs.schema import Reader, check_number
from ..specs.yamlfile import load_yaml

REPORTS = ("fastest", "preference", "toy-optimum", "frontier")
PLOTS = ("frontier", "mfu", "breakdown", "toy-frontier", "square-root-law", "power")
PAPER_FIELDS = ("tokens_per_s", "usd_per_mtok", "gpus", "batch")
LINESTYLES = ("solid", "dashed", "dotted", "dashdot")


@dataclass(frozen=True)
class Curve:
    """One line of a scenario: how to build its setting, and the paper's values if any."""

    label: str
    fields: dict
    paper: dict = field(default_factory=dict)
    color: str | None = None
    #: The curve's own line style; without one, figures draw speculative decoding dashed
    #: (``output.style.line_style``).
    linestyle: str | None = None
    toy: dict | None = None
    source: str = ""

    def setting(self) -> Setting:
        """The serving setting this curve describes."""
        return _setting(self.fields, self.source, self.label)

    def method(self) -> Method:
        """How this curve's frontier is searched (discrete, grid_points)."""
        options = {k: v for k, v in self.fields.items() if k in table.names(table.METHOD)}
        try:
            return make_method(**options)
        except SpecError as exc:
            raise SpecError(
                _where(self.source, self.label), exc.field, exc.problem, exc.fix
            ) from None


@dataclass(frozen=True)
class Scenario:
    """A comparison: a title, its curves, what to report and what to plot."""

    name: str
    title: str
    curves: tuple[Curve, ...]
    kind: str = "figure"
    report: str = "preference"
    preference_sampling: str | None = None
    paper_ref: str = ""
    description: str = ""
    plots: tuple[str, ...] = ("frontier",)
    measured: tuple[dict, ...] = ()
    notes: tuple[str, ...] = ()
    source: str = ""
    options: dict = field(default_factory=dict)
    #: Provider offers to draw on frontier figures: a CSV path or a shipped name (paper-2025).
    observations: str = ""

    def with_assumptions(self, assumptions: str | None) -> Scenario:
        """The scenario with every curve computed under one assumption preset (None: as the
        file says). Toy curves (Section 2) have no assumptions and are left alone."""
        if assumptions is None:
            return self
        name = table.option("assumptions").check(assumptions, self.source or "argument")
        curves = tuple(
            c
            if c.toy is not None
            else dataclasses.replace(c, fields={**c.fields, "assumptions": name})
            for c in self.curves
        )
        return dataclasses.replace(self, curves=curves)


#: What-if fields of a curve besides the settings of the table.
WHAT_IF_KEYS = ("hardware_overrides", "hardware_scale", "model_overrides")
#: Every field a curve (or ``defaults``) may set.
CURVE_KEYS = (
    "model",
    "hardware",
    *table.names(table.PROBLEM, table.METHOD),
    *WHAT_IF_KEYS,
)


def _where(source: str, label: str) -> str:
    return f"{source}, curve '{label}'" if label else source


def _setting(fields: Mapping[str, Any], source: str, label: str) -> Setting:
    where = _where(source, label)
    f = dict(fields)
    for key in ("model", "hardware"):
        if key not in f:
            raise SpecError(
                where, key, "is missing", f"every curve needs a {key} (here or in 'defaults')"
            )
    try:
        gpu = load_hardware(f["hardware"])
    except SpecError as exc:
        raise exc.inside(where, "hardware") from None
    for key in ("hardware_overrides", "hardware_scale", "model_overrides"):
        if f.get(key) is not None and not isinstance(f[key], Mapping):
            raise SpecError(
                where, key, f"expected a mapping of field: value, got {short(f[key])}", ""
            )
    if f.get("hardware_overrides") or f.get("hardware_scale"):
        overrides = dict(f.get("hardware_overrides") or {})
        try:
            gpu = derive(
                gpu,
                name=overrides.pop("name", None) or f"{gpu.name} (what-if)",
                scale=f.get("hardware_scale"),
                source_file=where,
                **overrides,
            )
        except SpecError as exc:  # named as the curve writes it: a scale factor is hardware_scale's
            scaled = exc.field == "scale" or exc.field.startswith("scale.")
            field = f"hardware_{exc.field}" if scaled else f"hardware_overrides.{exc.field}"
            raise SpecError(where, field.rstrip("."), exc.problem, exc.fix) from None
    try:
        arch = load_model(f["model"])
    except SpecError as exc:
        raise exc.inside(where, "model") from None
    if f.get("model_overrides"):
        arch = _override_model(arch, f["model_overrides"], where)
    assumptions = _assumptions(f.get("assumptions", "paper"), where)
    problem = {k: f[k] for k in table.names(table.PROBLEM) if k in f and k != "assumptions"}
    problem.setdefault("label", label)
    try:
        return make_setting(arch, gpu, assumptions=assumptions, **problem)
    except SpecError as exc:
        raise exc.inside(where, exc.field) from None


def _assumptions(value: Any, where: str) -> Assumptions:
    if isinstance(value, str):
        try:
            return preset(value) if value else preset("paper")
        except SpecError as exc:
            raise exc.inside(where, "assumptions") from None
    if isinstance(value, Mapping):
        r = Reader(value, where, "assumptions")
        base = preset(r.string("preset", "paper"))
        changes = {k: v for k, v in value.items() if k != "preset"}
        known = {f.name for f in dataclasses.fields(Assumptions)}
        for key in changes:
            if key not in known:
                r.finish()
        try:
            return base.replace(**changes)
        except SpecError as exc:
            raise SpecError(where, f"assumptions.{exc.field}", exc.problem, exc.fix) from None
    raise SpecError(
        where,
        "assumptions",
        f"expected a preset name or a mapping, got {short(value)}",
        "e.g. 'refined'",
    )


def _override_model(arch, overrides: Mapping[str, Any], where: str):
    """Re-validate the model's YAML with dotted-path overrides (e.g. ``attention.kv_heads``,
    ``layer_groups.1.layers``)."""
    path = Path(arch.source_file) if arch.source_file else None
    if path is None or not path.is_file():
        raise SpecError(
            where, "model_overrides", "the model has no YAML file to override", "name a model file"
        )
    data = copy.deepcopy(load_yaml(path))
    for dotted, value in overrides.items():
        field = f"model_overrides.{short(dotted)}"
        parts = str(dotted).split(".")
        node = data
        for depth, part in enumerate(parts[:-1]):
            node = _child(node, part, where, field, ".".join(parts[: depth + 1]))
        if isinstance(node, list):
            _child(node, parts[-1], where, field, str(dotted))  # the index must exist
            node[int(parts[-1])] = value
        else:
            node[parts[-1]] = value
    name = data.get("name", arch.name)
    if not isinstance(name, str):
        raise SpecError(where, "model_overrides.name", f"expected text, got {short(name)}", "")
    data["name"] = f"{name} (what-if)"
    return architecture_from_dict(data, f"{where}: model_overrides on {catalog.display_path(path)}")


def _child(node, part: str, where: str, field: str, path: str):
    """One step down a dotted override path: a mapping's field (created if missing) or a
    list's index (which must exist)."""
    if isinstance(node, list):
        if not part.isdigit() or int(part) >= len(node):
            raise SpecError(
                where,
                field,
                f"'{path}' is not an item of a list of {len(node)}",
                f"use an index from 0 to {len(node) - 1}",
            )
        return node[int(part)]
    if isinstance(node, dict):
        child = node.setdefault(part, {})
        if not isinstance(child, (dict, list)):
            raise SpecError(
                where, field, f"'{path}' is a value, not a group of fields", "override it whole"
            )
        return child
    raise SpecError(where, field, f"'{path}' cannot be overridden", "")


def _curve(item: Any, defaults: Mapping[str, Any], source: str, index: int) -> Curve:
    if not isinstance(item, Mapping):
        raise SpecError(
            source, f"curves[{index}]", f"expected a mapping of fields, got {short(item)}", ""
        )
    label = item.get("label") or item.get("model") or f"curve {index + 1}"
    if not isinstance(label, (str, int, float)):
        raise SpecError(source, f"curves[{index}].label", f"expected text, got {short(label)}", "")
    label = str(label)
    where = _where(source, label)
    merged = {**defaults, **item}
    r = Reader(merged, where)
    for key in CURVE_KEYS:
        r.raw(key, None)
    settings = {
        k: merged[k]
        for k in table.names(table.PROBLEM, table.METHOD)
        if k in merged and merged[k] is not None and k != "assumptions"
    }
    table.check(settings, [table.PROBLEM, table.METHOD], where, fill_defaults=False)
    for key in ("model", "hardware", "draft"):
        if r.has(key) and not isinstance(merged[key], str):
            raise SpecError(
                where,
                key,
                f"expected a name or a path, got {short(merged[key])}",
                "write the name as text",
            )
    paper = r.mapping("paper", {}) or {}
    for key, value in paper.items():
        if key not in PAPER_FIELDS:
            raise SpecError(
                where, f"paper.{key}", "unknown field", f"known: {', '.join(PAPER_FIELDS)}"
            )
        check_number(value, where, f"paper.{key}", minimum=0, exclusive_minimum=True)
    toy = _toy(r.mapping("toy", None), where)
    color = _color(r.string("color", None), where, "color")
    linestyle = r.string("linestyle", None, choices=LINESTYLES)
    r.string("label", "")
    r.finish()
    fields = {k: merged[k] for k in CURVE_KEYS if k in merged and merged[k] is not None}
    curve = Curve(
        label=label,
        fields=fields,
        paper=dict(paper),
        color=color,
        linestyle=linestyle,
        toy=toy,
        source=source,
    )
    if toy is None:
        curve.setting()  # resolve names now: an unknown model or GPU is reported at load time
    return curve


#: Most curves of one scenario (each is a frontier of its own).
MAX_CURVES = 100
#: The fields of a toy curve (Figure 1, Table 1) and their bounds.
TOY_FIELDS = {
    "bandwidth_bytes_per_s": dict(minimum=1e6, maximum=1e18, unit="bytes/s"),
    "allreduce_latency_s": dict(minimum=0, maximum=1, unit="seconds"),
    "allreduces_per_layer": dict(minimum=0, maximum=1000),
    "base_latency_s": dict(minimum=0, maximum=1, unit="seconds"),
}
#: The fields of ``options`` and their bounds.
OPTION_FIELDS = {"max_speed": dict(minimum=0, exclusive_minimum=True, maximum=1e9, unit="tokens/s")}
MEASURED_NUMBERS = {
    "tokens_per_s": dict(minimum=0, exclusive_minimum=True, maximum=1e12, unit="tokens/s"),
    "usd_per_mtok": dict(
        minimum=0, exclusive_minimum=True, maximum=1e12, unit="USD per million tokens"
    ),
    "params": dict(minimum=1, maximum=1e16, unit="parameters"),
    "latency_ms": dict(minimum=0, exclusive_minimum=True, maximum=1e9, unit="ms"),
}


def _numbers(value: Mapping | None, where: str, prefix: str, bounds: dict) -> dict | None:
    """A mapping of named numbers, each checked against its bounds; unknown names are errors."""
    if value is None:
        return None
    r = Reader(value, where, prefix)
    out = {key: r.number(key, None, **b) for key, b in bounds.items() if r.has(key)}
    r.finish()
    return out


def _toy(value, where: str) -> dict | None:
    return _numbers(value, where, "toy", TOY_FIELDS)


def _color(value: str | None, where: str, field: str) -> str | None:
    """A colour matplotlib knows (a name, '#rrggbb', 'tab:blue', ...)."""
    if value is None:
        return None
    from matplotlib.colors import is_color_like

    if not is_color_like(value):
        raise SpecError(
            where, field, f"unknown colour {short(value)}", "e.g. darkred, '#1f77b4', tab:blue"
        )
    return value


def _marker(value: str | None, where: str, field: str) -> str | None:
    """A marker matplotlib knows ('o', 's', '^', ...)."""
    if value is None:
        return None
    from matplotlib.markers import MarkerStyle

    try:
        MarkerStyle(value)
    except (ValueError, TypeError):
        raise SpecError(where, field, f"unknown marker {short(value)}", "e.g. o, s, ^, x") from None
    return value


def _measured(raw: Any, source: str, plots) -> tuple[dict, ...]:
    """The measured points of a scenario: operating points (tokens_per_s, usd_per_mtok) or
    square-root-law points (params, latency_ms), each with an optional label and colour."""
    if not isinstance(raw, list):
        raise SpecError(
            source,
            "measured",
            f"expected a list of points, got {short(raw)}",
            "e.g. [{label: API, tokens_per_s: 100, usd_per_mtok: 0.9}]",
        )
    points = []
    for i, item in enumerate(raw):
        r = Reader(item, source, f"measured[{i}]")
        point = {k: r.number(k, None, **b) for k, b in MEASURED_NUMBERS.items() if r.has(k)}
        if not (
            {"tokens_per_s", "usd_per_mtok"} <= set(point) or {"params", "latency_ms"} <= set(point)
        ):
            raise SpecError(
                source,
                f"measured[{i}]",
                "needs tokens_per_s and usd_per_mtok (or params and latency_ms)",
                "give both numbers of the point",
            )
        label = r.raw("label", None)
        if label is not None:
            point["label"] = (
                str(label) if isinstance(label, (str, int, float)) else r.string("label")
            )
        color = _color(r.string("color", None), source, f"measured[{i}].color")
        if color:
            point["color"] = color
        marker = _marker(r.string("marker", None), source, f"measured[{i}].marker")
        if marker:
            point["marker"] = marker
        r.finish()
        points.append(point)
    if "square-root-law" in plots and not any("params" in p for p in points):
        raise SpecError(
            source,
            "measured",
            "the square-root-law plot needs points with params and latency_ms",
            "e.g. [{label: PaLM 8B, params: 8.6e9, latency_ms: 4}]",
        )
    return tuple(points)


def scenario_from_dict(data: Mapping[str, Any], source: str = "<dict>", name: str = "") -> Scenario:
    """Validate a parsed scenario and build it (every curve's names are resolved)."""
    if isinstance(data, Mapping) and "axes" in data:
        raise SpecError(
            source,
            "axes",
            "this is a study file, not a scenario",
            "run it with 'inference-econ study FILE --out DIR'",
        )
    r = Reader(data, source)
    title = r.string("title")
    kind = r.string("kind", "figure", choices=("figure", "table"))
    report = r.string("report", "preference", choices=REPORTS)
    sampling = r.string("preference_sampling", None, choices=("paper", "exact"))
    defaults = r.mapping("defaults", {}) or {}
    plots = r.raw("plots", ["frontier"])
    if isinstance(plots, str):
        plots = [plots]
    if not isinstance(plots, list):
        raise SpecError(
            source,
            "plots",
            f"expected a list of plots, got {plots!r}",
            f"choose from {', '.join(PLOTS)}",
        )
    for plot in plots:
        if plot not in PLOTS:
            hint = did_you_mean(str(plot), PLOTS)
            raise SpecError(
                source, "plots", f"unknown plot {plot!r}", hint or f"choose from {', '.join(PLOTS)}"
            )
    raw_curves = r.raw("curves", [])
    data_only = plots == ["square-root-law"]
    if not isinstance(raw_curves, list) or (not raw_curves and not data_only):
        raise SpecError(
            source,
            "curves",
            "expected a non-empty list of curves",
            "each curve names at least a model and a GPU",
        )
    if len(raw_curves) > MAX_CURVES:
        raise SpecError(
            source,
            "curves",
            f"has {len(raw_curves)} curves",
            f"split it into scenarios of at most {MAX_CURVES} curves",
        )
    curves = tuple(_curve(item, defaults, source, i) for i, item in enumerate(raw_curves))
    labels = [c.label for c in curves]
    dupes = {lab for lab in labels if labels.count(lab) > 1}
    if dupes:
        raise SpecError(
            source, "curves", f"duplicate labels {sorted(dupes)}", "give each curve its own label"
        )
    measured = _measured(r.raw("measured", []), source, plots)
    notes = r.text_list("notes")
    observations = _observations_file(r.string("observations", ""), source)
    scenario = Scenario(
        name=name or Path(source).stem,
        title=title,
        curves=curves,
        kind=kind,
        report=report,
        preference_sampling=None if sampling in (None, "exact") else sampling,
        paper_ref=r.string("paper_ref", ""),
        description=r.string("description", ""),
        plots=tuple(plots),
        measured=measured,
        notes=notes,
        source=source,
        options=_numbers(r.mapping("options", None), source, "options", OPTION_FIELDS) or {},
        observations=observations,
    )
    r.finish()
    return scenario


def _observations_file(name: str, source: str) -> str:
    """An offers file named by a scenario: a path (relative to the scenario) or a shipped name."""
    if not name:
        return ""
    from .observations import find_observations

    beside = Path(source).parent / name
    if beside.is_file():
        return str(beside)
    try:
        return str(find_observations(name))
    except SpecError as exc:
        raise SpecError(source, "observations", exc.problem, exc.fix) from None


def load_scenario(name_or_path: str | Path) -> Scenario:
    """Load a scenario by name (e.g. "paper/table-2") or path."""
    path = catalog.find("scenarios", name_or_path)
    rel = _scenario_name(path)
    return scenario_from_dict(load_yaml(path), str(path), rel)


def _scenario_name(path: Path) -> str:
    for root in catalog.data_roots():
        try:
            return (
                path.resolve()
                .relative_to((root / "scenarios").resolve())
                .with_suffix("")
                .as_posix()
            )
        except ValueError:
            continue
    return path.stem


__all__ = ["Curve", "Scenario", "load_scenario", "scenario_from_dict", "InferenceEconError"]
