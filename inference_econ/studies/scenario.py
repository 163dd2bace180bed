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
from ..errors import InferenceEconError, SpecError, did_you_mean
from ..model.assumptions import Assumptions, preset
from ..optimise.method import Method, make_method
from ..serving.setting import Setting, make_setting
from ..specs import catalog
from ..specs.architecture import architecture_from_dict, load_model
from ..specs.hardware import derive, load_hardware
from ..specs.schema import Reader, check_number
from ..specs.yamlfile import load_yaml

REPORTS = ("fastest", "preference", "toy-optimum", "frontier")
PLOTS = ("frontier", "mfu", "breakdown", "toy-frontier", "square-root-law")
PAPER_FIELDS = ("tokens_per_s", "usd_per_mtok", "gpus", "batch")
LINESTYLES = ("solid", "dashed", "dotted", "dashdot")


@dataclass(frozen=True)
class Curve:
    """One line of a scenario: how to build its setting, and the paper's values if any."""

    label: str
    fields: dict
    paper: dict = field(default_factory=dict)
    color: str | None = None
    linestyle: str = "solid"
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
        raise SpecError(where, "hardware", exc.problem, exc.fix) from None
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
        except SpecError as exc:
            raise SpecError(
                where, f"hardware_overrides.{exc.field}".rstrip("."), exc.problem, exc.fix
            ) from None
    try:
        arch = load_model(f["model"])
    except SpecError as exc:
        raise SpecError(where, "model", exc.problem, exc.fix) from None
    if f.get("model_overrides"):
        arch = _override_model(arch, f["model_overrides"], where)
    assumptions = _assumptions(f.get("assumptions", "paper"), where)
    problem = {k: f[k] for k in table.names(table.PROBLEM) if k in f and k != "assumptions"}
    problem.setdefault("label", label)
    try:
        return make_setting(arch, gpu, assumptions=assumptions, **problem)
    except SpecError as exc:
        raise SpecError(where, exc.field, exc.problem, exc.fix) from None


def _assumptions(value: Any, where: str) -> Assumptions:
    if isinstance(value, str):
        return preset(value) if value else preset("paper")
    if isinstance(value, Mapping):
        r = Reader(value, where, "assumptions")
        base = preset(r.string("preset", "paper"))
        changes = {k: v for k, v in value.items() if k != "preset"}
        known = {f.name for f in dataclasses.fields(Assumptions)}
        for key in changes:
            if key not in known:
                r.finish()
        return base.replace(**changes)
    raise SpecError(
        where,
        "assumptions",
        f"expected a preset name or a mapping, got {value!r}",
        "e.g. 'refined'",
    )


def _override_model(arch, overrides: Mapping[str, Any], where: str):
    """Re-validate the model's YAML with dotted-path overrides (e.g. ``attention.kv_heads``)."""
    if not isinstance(overrides, Mapping):
        raise SpecError(
            where, "model_overrides", f"expected a mapping of field: value, got {overrides!r}"
        )
    path = Path(arch.source_file) if arch.source_file else None
    if path is None or not path.is_file():
        raise SpecError(
            where, "model_overrides", "the model has no YAML file to override", "name a model file"
        )
    data = copy.deepcopy(load_yaml(path))
    for dotted, value in overrides.items():
        node = data
        parts = str(dotted).split(".")
        for part in parts[:-1]:
            if part.isdigit() and isinstance(node, list):
                node = node[int(part)]
            else:
                node = node.setdefault(part, {})
        node[parts[-1]] = value
    data["name"] = f"{data.get('name', arch.name)} (what-if)"
    return architecture_from_dict(data, f"{where}: model_overrides on {path}")


def _curve(item: Any, defaults: Mapping[str, Any], source: str, index: int) -> Curve:
    if not isinstance(item, Mapping):
        raise SpecError(source, f"curves[{index}]", f"expected a mapping, got {item!r}")
    label = str(item.get("label") or item.get("model") or f"curve {index + 1}")
    where = _where(source, label)
    merged = {**defaults, **item}
    r = Reader(merged, where)
    for key in CURVE_KEYS:
        r.raw(key, None)
    settings = {
        k: merged[k]
        for k in table.names(table.PROBLEM, table.METHOD)
        if k in merged and merged[k] is not None and not isinstance(merged[k], Mapping)
    }
    table.check(settings, [table.PROBLEM, table.METHOD], where, fill_defaults=False)
    for key in ("model", "hardware", "draft"):
        if r.has(key) and not isinstance(merged[key], str):
            raise SpecError(
                where,
                key,
                f"expected a name or a path, got {merged[key]!r}",
                "write the name as text",
            )
    paper = r.mapping("paper", {}) or {}
    for key, value in paper.items():
        if key not in PAPER_FIELDS:
            raise SpecError(
                where, f"paper.{key}", "unknown field", f"known: {', '.join(PAPER_FIELDS)}"
            )
        check_number(value, where, f"paper.{key}", minimum=0)
    toy = r.mapping("toy", None)
    color = r.string("color", None)
    linestyle = r.string("linestyle", "solid", choices=LINESTYLES)
    r.string("label", "")
    r.finish()
    fields = {k: merged[k] for k in CURVE_KEYS if k in merged and merged[k] is not None}
    curve = Curve(
        label=label,
        fields=fields,
        paper=dict(paper),
        color=color,
        linestyle=linestyle,
        toy=dict(toy) if toy else None,
        source=source,
    )
    if toy is None:
        curve.setting()  # resolve names now: an unknown model or GPU is reported at load time
    return curve


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
    curves = tuple(_curve(item, defaults, source, i) for i, item in enumerate(raw_curves))
    labels = [c.label for c in curves]
    dupes = {lab for lab in labels if labels.count(lab) > 1}
    if dupes:
        raise SpecError(
            source, "curves", f"duplicate labels {sorted(dupes)}", "give each curve its own label"
        )
    measured = r.raw("measured", [])
    if not isinstance(measured, list):
        raise SpecError(
            source,
            "measured",
            "expected a list of points",
            "e.g. [{label: API, tokens_per_s: 100, usd_per_mtok: 0.9}]",
        )
    notes = r.raw("notes", [])
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
        measured=tuple(measured),
        notes=tuple(str(n) for n in (notes if isinstance(notes, list) else [notes])),
        source=source,
        options=dict(r.mapping("options", {}) or {}),
    )
    r.finish()
    return scenario


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
