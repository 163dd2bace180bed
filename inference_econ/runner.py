"""Running a scenario: every curve's frontier, its key points, its figures and its tables.

``run_scenario`` is what ``inference-econ run`` and ``reproduce figure-N`` call: it computes
each curve (the toy model for Figure 1, the optimiser otherwise), then writes the figures the
scenario asks for (PNG and SVG) and a table of key points (fastest and preference point of each
curve) as CSV, JSON and Markdown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import plots, toy
from .architecture import load_model
from .errors import SpecError
from .frontier import SUMMARY_COLUMNS, Frontier
from .hardware import load_hardware
from .optimiser import frontier
from .report import render, write_atomic
from .scenario import Scenario, load_scenario
from .schema import check_number
from .tables import columns_for, run_table

KEY_COLUMNS = ["curve", "point", *SUMMARY_COLUMNS]


@dataclass
class RunResult:
    """What a scenario run produced: frontiers, key points, table (for tables) and files."""

    scenario: Scenario
    fronts: dict[str, Frontier] = field(default_factory=dict)
    key_points: pd.DataFrame | None = None
    table: pd.DataFrame | None = None
    figures: dict = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)


def curve_frontier(curve) -> Frontier:
    """The frontier of one curve (toy curves use the Section 2 model)."""
    if curve.toy is not None:
        f = curve.fields
        arch = load_model(f["model"])
        if "weight_bits" in f:
            arch = arch.with_precision(weight_bits=f["weight_bits"])
        params = curve.toy
        return toy.toy_frontier(
            arch,
            load_hardware(f.get("hardware", "H100-paper")),
            context_tokens=float(f.get("context_tokens", 1.0)),
            max_throughput_tokens_per_s=float(f.get("max_throughput_tokens_per_s", math.inf)),
            allreduce_latency_s=float(params.get("allreduce_latency_s", 2e-6)),
            base_latency_s=float(params.get("base_latency_s", 6e-6)),
            label=curve.label,
        )
    return frontier(curve.setting())


def key_points(fronts: dict[str, Frontier], sampling: str | None = None) -> pd.DataFrame:
    """Fastest and preference point of every curve, one row each."""
    rows = []
    for label, front in fronts.items():
        if front.empty:
            rows.append({"curve": label, "point": "none feasible"})
            continue
        for name, point in (
            ("fastest", front.fastest()),
            ("preference", front.preference_point(sampling=sampling)),
        ):
            row = {"curve": label, "point": name, **point.to_dict()}
            rows.append(row)
    df = pd.DataFrame(rows)
    return df[[c for c in KEY_COLUMNS if c in df.columns]]


def load_overlay_points(path, price_usd_per_hour: float | None = None) -> list[dict]:
    """Measured operating points from a CSV: tokens_per_s and either usd_per_mtok or
    tokens_per_s_per_gpu (converted to $ with ``price_usd_per_hour``); optional label."""
    path = Path(path)
    try:
        df = pd.read_csv(path)
    except (OSError, pd.errors.ParserError) as exc:
        raise SpecError(str(path), "", f"cannot read the CSV: {exc}") from None
    if "tokens_per_s" not in df:
        raise SpecError(
            str(path), "tokens_per_s", "column is missing", "give the measured tokens/s per request"
        )
    points = []
    for i, row in df.iterrows():

        def positive(column, i=i, row=row):
            return check_number(
                row[column], str(path), f"row {i + 2}: {column}", minimum=0, exclusive_minimum=True
            )

        speed = positive("tokens_per_s")
        if "usd_per_mtok" in df and pd.notna(row.get("usd_per_mtok")):
            cost = positive("usd_per_mtok")
        elif "tokens_per_s_per_gpu" in df and price_usd_per_hour:
            cost = 1e6 * price_usd_per_hour / 3600.0 / positive("tokens_per_s_per_gpu")
        else:
            raise SpecError(
                str(path),
                "usd_per_mtok",
                "no cost column",
                "give usd_per_mtok, or tokens_per_s_per_gpu and a GPU price",
            )
        points.append(
            {
                "label": str(row.get("label", "measured")),
                "tokens_per_s": speed,
                "usd_per_mtok": cost,
            }
        )
    return points


def run_scenario(
    scenario: Scenario | str,
    out_dir: str | Path | None = None,
    formats=("png", "svg"),
    table_formats=("csv", "json", "markdown"),
    measured_csv: str | Path | None = None,
    progress=None,
) -> RunResult:
    """Compute every curve of a scenario; write its figures and tables into ``out_dir``."""
    if isinstance(scenario, (str, Path)):
        scenario = load_scenario(scenario)
    result = RunResult(scenario)
    stem_name = Path(scenario.name).name
    out = Path(out_dir) if out_dir is not None else None
    if scenario.kind == "table":
        result.table = run_table(scenario, progress=progress)
        if out is not None:
            cols = columns_for(scenario)
            for fmt in table_formats:
                ext = {"markdown": "md"}.get(fmt, fmt)
                text = render(
                    result.table[cols],
                    fmt,
                    title=scenario.title if fmt != "csv" else "",
                    notes=scenario.notes,
                )
                result.files.append(write_atomic(out / f"{stem_name}.{ext}", text))
        return result
    for i, curve in enumerate(scenario.curves):
        if progress:
            progress(f"{scenario.name}: {curve.label} ({i + 1}/{len(scenario.curves)})")
        result.fronts[curve.label] = curve_frontier(curve)
    result.key_points = key_points(result.fronts, scenario.preference_sampling)
    measured = [dict(m) for m in scenario.measured if "tokens_per_s" in m and "usd_per_mtok" in m]
    if measured_csv is not None:
        price = (
            scenario.curves[0].setting().gpu.price_usd_per_hour
            if scenario.curves[0].toy is None
            else None
        )
        measured += load_overlay_points(measured_csv, price)
    colors = {c.label: c.color for c in scenario.curves if c.color}
    styles = {c.label: c.linestyle for c in scenario.curves}
    max_speed = scenario.options.get("max_speed")
    for plot in scenario.plots:
        if plot in ("frontier", "toy-frontier"):
            fig = plots.frontier_figure(
                result.fronts, scenario.title, colors, measured, max_speed, styles
            )
        elif plot == "mfu":
            fig = plots.mfu_figure(result.fronts, scenario.title, colors, styles)
        elif plot == "breakdown":
            fig = plots.breakdown_figure(result.fronts, scenario.title)
        elif plot == "square-root-law":
            points = [m for m in scenario.measured if "params" in m]
            fig = plots.square_root_figure(points, scenario.title)
        else:  # pragma: no cover - validated when the scenario is loaded
            continue
        result.figures[plot] = fig
        if out is not None:
            result.files += plots.save(fig, out / f"{stem_name}-{plot}", formats)
    if out is not None and result.fronts:
        for fmt in table_formats:
            ext = {"markdown": "md"}.get(fmt, fmt)
            text = render(result.key_points, fmt, title=scenario.title if fmt != "csv" else "")
            result.files.append(write_atomic(out / f"{stem_name}-points.{ext}", text))
    return result
