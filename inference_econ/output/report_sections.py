"""The report's sections: what one study or scenario shows (``Section``: its curves, key-point
table, assumptions and notes), built from a study's output folder (one curve per cell, a
selector over the axes, a slice of the cells with ``where``) or from a scenario run (its
curves in the colours and line styles of its PNG figures, or its square-root law).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..errors import SpecError
from ..serving.decode import continuous_note
from ..serving.figure_labels import figures_line, interval_columns
from ..specs.catalog import display_path
from ..specs.hardware import facts_by_column
from .render import HEADERS
from .study_folder import check_cells, read_manifest, read_table
from .style import colours, line_style, speculates


@dataclass
class Curve:
    """One frontier to draw: its legend name, its selector group and its points, in the colour
    and line style the PNG figures give it (``style``; None: the palette's, by name)."""

    name: str
    points: pd.DataFrame
    group: str = ""
    #: key point name -> its tokens/s per request (marked on the curve)
    marks: dict = field(default_factory=dict)
    color: str | None = None
    dash: str = "solid"


@dataclass
class Section:
    """One study or scenario of a report."""

    title: str
    curves: list[Curve]
    key_table: pd.DataFrame
    assumptions: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    description: str = ""
    notes: list[str] = field(default_factory=list)
    #: A square-root-law section (the paper's Figure 2): measured best latencies, no frontiers.
    law: list[dict] = field(default_factory=list)
    #: Whether its figures are an ideal bound or expected (``figures_line``), first under its
    #: title as every command's output says it first.
    figures: str = ""


def _varying(manifest: dict) -> list[str]:
    axes = manifest["axes"]
    return [a for a, values in axes.items() if len(values) > 1] or list(axes)


def study_section(folder, compare: str | None = None, where: dict | None = None) -> Section:
    """The section of a study's output folder (``study.json``, the key-point and frontier
    tables): one curve per cell, the selector over every axis but ``compare``. ``where``
    (axis -> values, as text) keeps only the cells with those values: a slice of the study."""
    folder = Path(folder)
    manifest = read_manifest(folder / "study.json")
    keys, fronts = read_table(folder, "key_points"), read_table(folder, "frontiers")
    varying = _varying(manifest)
    if compare is None:
        compare = "hardware" if "hardware" in varying else varying[-1]
    if compare not in manifest["axes"]:
        raise SpecError(
            "command line",
            "--compare",
            f"{compare!r} is not an axis",
            f"axes: {', '.join(manifest['axes'])}",
        )
    check_cells(manifest, keys, fronts)
    cells = _slice(manifest, where or {})
    keys = keys[keys["cell"].isin([c["cell"] for c in cells])]
    varying = [a for a in varying if len({str(c["values"][a]) for c in cells}) > 1] or varying
    grouping = [a for a in varying if a != compare]
    curves = []
    by_cell = dict(tuple(fronts.groupby("cell", sort=False))) if len(fronts) else {}
    for cell in cells:
        values = cell["values"]
        pts = by_cell.get(cell["cell"], pd.DataFrame(columns=["tokens_per_s", "usd_per_mtok"]))
        marks = keys[(keys["cell"] == cell["cell"]) & keys["feasible"]]
        marks = {
            p: s
            for p, s in zip(marks["point"], marks["tokens_per_s"])
            if p in ("fastest", "preference", "cheapest")
        }
        name = str(values[compare]) if len(varying) > 1 else cell["label"]
        group = " · ".join(f"{a}: {values[a]}" for a in grouping)
        rows = keys[keys["cell"] == cell["cell"]]
        spec = speculates(rows.iloc[0].to_dict()) if len(rows) else False
        curves.append(
            Curve(name, pts.sort_values("tokens_per_s"), group, marks, dash=line_style(spec))
        )
    # the axes whose value varies among the cells shown (a slice's fixed ones are in its title)
    axes = [a for a in manifest["axes"] if len({str(c["values"][a]) for c in cells}) > 1]
    table = _key_summary(keys, axes or list(manifest["axes"]), manifest.get("at_speeds", []))
    real = continuous_note(keys[keys["feasible"].astype(bool)]) if len(keys) else None
    sliced = "; ".join(f"{a} = {', '.join(v)}" for a, v in (where or {}).items())
    presets = keys["assumptions"].dropna() if "assumptions" in keys else manifest["assumptions"]
    return Section(
        figures=figures_line([str(p) for p in presets]),
        title=manifest["title"] + (f" (the slice {sliced})" if sliced else ""),
        description=manifest.get("description", ""),
        curves=curves,
        key_table=table,
        assumptions=_study_assumptions(manifest),
        notes=[
            f"{len(manifest['cells'])} cells from {manifest['source']} "
            f"(inference-econ {manifest['package_version']}); "
            + (
                "complete."
                if manifest.get("complete", True)
                else "INCOMPLETE: some cells failed, see study.json."
            )
        ]
        + ([real] if real else []),
    )


def _slice(manifest: dict, where: dict) -> list[dict]:
    """The cells whose axis values are among ``where``'s (unknown axes and values are errors)."""
    cells = manifest["cells"]
    for axis, wanted in where.items():
        if axis not in manifest["axes"]:
            raise SpecError(
                "command line",
                "--where",
                f"{axis!r} is not an axis",
                f"axes: {', '.join(manifest['axes'])}",
            )
        known = [str(v) for v in manifest["axes"][axis]]
        for value in wanted:
            if value not in known:
                raise SpecError(
                    "command line",
                    "--where",
                    f"{axis} has no value {value!r}",
                    f"values: {', '.join(known)}",
                )
        cells = [c for c in cells if str(c["values"][axis]) in wanted]
    return cells


def _key_summary(keys: pd.DataFrame, axes: list[str], speeds) -> pd.DataFrame:
    """One row per cell: the axes, then the fastest, preference and cheapest points and the
    cost at each speed."""
    head = keys.drop_duplicates("cell").set_index("cell")[axes]
    out = head.copy()
    pick = {  # the fastest point's batch is about 1 and its GPUs say its size
        "fastest": ("tokens_per_s", "usd_per_mtok", "gpus"),
        "preference": ("tokens_per_s", "usd_per_mtok", "gpus", "batch"),
        "cheapest": ("usd_per_mtok",),
    }
    if "assumptions" in keys:  # which cells are ideal bounds and which expected figures
        presets = keys.drop_duplicates("cell").set_index("cell")["assumptions"].astype(str)
        out["figures"] = [_kind_of(p) for p in presets.reindex(out.index)]
    for point, cols in pick.items():
        sel = keys[keys["point"] == point].set_index("cell")
        for col in cols:  # short headers, as the text tables print them
            name = f"{point} {HEADERS.get(col, col)}"
            out[name] = sel[col]
            _ends(out, name, sel, col)
    for speed in speeds:
        sel = keys[
            (keys["point"] == "at_speed") & (keys["target_tokens_per_s"] == speed)
        ].set_index("cell")
        out[f"$/Mtok at {speed:g} tok/s"] = sel["usd_per_mtok"]
        _ends(out, f"$/Mtok at {speed:g} tok/s", sel, "usd_per_mtok")
    status = keys.groupby("cell")["note"].first()
    blank = status.isna() | status.astype(str).str.strip().eq("")
    if not blank.all():  # a column of blanks would only widen
        out["note"] = status.where(~blank, "")  # a cell with no note blank, never "nan"
    from .ranges import ranged_columns

    return ranged_columns(out.reset_index())


def _kind_of(preset) -> str:
    """A cell's figures in a word: an ideal bound (an ideal preset) or expected (``preset``: a
    preset label or a setting)."""
    return "expected" if figures_line(preset).startswith("Expected") else "ideal bound"


def _ends(out: pd.DataFrame, name: str, sel: pd.DataFrame, col: str) -> None:
    """A key figure's interval columns beside it where its cells have them (expected)."""
    ends = interval_columns(col)
    if all(c in sel for c in ends) and sel[ends].notna().any().any():
        for mine, theirs in zip(interval_columns(name), ends):
            out[mine] = sel[theirs]


def _study_assumptions(manifest: dict) -> list[tuple[str, pd.DataFrame]]:
    out = []
    study = {
        "source": manifest["source"],
        "package version": manifest["package_version"],
        "axes": "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in manifest["axes"].items()),
        "exclude": json.dumps(manifest.get("exclude", [])),
        "defaults": json.dumps(manifest.get("defaults", {})),
        "preference point k": manifest.get("preference_k"),
        "cost at speeds (tokens/s per request)": ", ".join(map(str, manifest.get("at_speeds", []))),
    }
    out.append(
        (
            "The study",
            pd.DataFrame({"field": list(study), "value": [str(v) for v in study.values()]}),
        )
    )
    presets = manifest.get("assumptions", {})
    if presets:
        out.append(("Modelling assumptions (docs/model.md), per preset", _by_field(presets)))
    if manifest.get("hardware"):
        gpus = {
            k: {**v, "source_file": _shown(v.get("source_file"))}
            for k, v in manifest["hardware"].items()
        }
        out.append(("Hardware figures", _by_field(gpus)))
    if manifest.get("models"):
        out.append(("Models", _by_field(manifest["models"])))
    return out


def _shown(path) -> str:
    """A spec file as outputs name it: a shipped one by its place in the package."""
    return display_path(path) if path else ""


def _by_field(items: dict) -> pd.DataFrame:
    """Objects side by side: one row per field, one column per object."""
    fields = list(dict.fromkeys(k for v in items.values() for k in v))
    return pd.DataFrame(
        {"field": fields, **{name: [_short(v.get(f)) for f in fields] for name, v in items.items()}}
    )


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else repr(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(_short(v) for v in value)
    return "" if value is None else str(value)


def scenario_section(result) -> Section:
    """The section of a scenario run (``runs.runner.RunResult``): its frontiers in the
    colours and line styles of its PNG figures, or its square-root law (paper Figure 2)."""
    import dataclasses

    scenario = result.scenario
    palette = colours(list(result.fronts), {c.label: c.color for c in scenario.curves})
    dashes = {c.label: line_style(speculates(c.fields), c.linestyle) for c in scenario.curves}
    curves = []
    for label, front in result.fronts.items():
        marks = {}
        if not front.empty:
            marks = {
                "fastest": front.fastest()["tokens_per_s"],
                "preference": front.preference_point(sampling=scenario.preference_sampling)[
                    "tokens_per_s"
                ],
            }
        points = front.points.sort_values("tokens_per_s")
        curves.append(Curve(label, points, "", marks, palette[label], dashes.get(label, "solid")))
    presets, gpus, models, labels, kinds = {}, [], {}, [], {}
    for curve in scenario.curves:
        if curve.toy is not None:
            continue
        s = curve.setting()
        labels.append(s)
        kinds[curve.label] = _kind_of(s)
        presets.setdefault(s.assumptions.name, dataclasses.asdict(s.assumptions))
        gpus.append(s.gpu)
        models.setdefault(
            s.model.name,
            {
                "name": s.model.name,
                "precision": s.model.precision.label(),
                "source": s.model.source,
            },
        )
    curve_fields = pd.DataFrame(
        [
            {
                "curve": c.label,
                **{
                    k: _short(v) if not isinstance(v, dict) else json.dumps(v)
                    for k, v in c.fields.items()
                },
            }
            for c in scenario.curves
        ]
    )
    assumptions = [("Curves (as the scenario file sets them)", curve_fields)]
    if presets:
        assumptions.append(
            ("Modelling assumptions (docs/model.md), per preset", _by_field(presets))
        )
    if gpus:  # a shipped file by its place in the package, as outputs name it
        facts = {
            k: {**v, "source_file": _shown(v.get("source_file"))}
            for k, v in facts_by_column(gpus).items()
        }
        assumptions.append(("Hardware figures", _by_field(facts)))
    if models:
        assumptions.append(("Models", _by_field(models)))
    return Section(
        figures=figures_line(labels),
        title=scenario.title,
        description=scenario.description,
        curves=curves,
        key_table=_scenario_keys(result.key_points, kinds),
        assumptions=assumptions,
        notes=[f"Scenario {scenario.name} ({display_path(scenario.source)})."]
        + list(scenario.notes)
        + list(result.notes),
        law=[m for m in scenario.measured if "params" in m],
    )


def _scenario_keys(keys: pd.DataFrame | None, kinds: dict[str, str]) -> pd.DataFrame:
    """A scenario's key points as ``run`` prints them: each expected figure's 90 % interval
    as a range beside it; where curves mix ideal bounds and expected figures, a ``figures``
    column says which each row's are (as a study's report does)."""
    from .ranges import ranged_columns

    if keys is None or keys.empty:
        return pd.DataFrame()
    out = keys.copy()
    if len(set(kinds.values())) > 1 and "curve" in out:
        out.insert(out.columns.get_loc("curve") + 1, "figures", out["curve"].map(kinds))
    return ranged_columns(out)
