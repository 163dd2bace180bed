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

from ..errors import InfeasibleError, SpecError, expect
from ..measured.overlays import load_overlay_points
from ..optimise.frontier import Frontier
from ..optimise.optimiser import frontier
from ..optimise.toy import toy_frontier
from ..output import plots
from ..output.files import check_folder, check_output, write_atomic
from ..output.render import render
from ..output.style import line_style, speculates
from ..serving.decode import SUMMARY_COLUMNS, continuous_note
from ..serving.intervals import figures_line, interval_columns
from ..serving.toy import square_root_law
from ..specs.architecture import load_model
from ..specs.hardware import load_hardware
from ..specs.inputs import Rows
from ..studies.observations import load_observations, overlay_points
from ..studies.scenario import Scenario, load_scenario
from ..studies.tables import columns_for, run_table, scenario_metadata

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
    #: What every curve was computed with (``studies.tables.scenario_metadata``).
    metadata: dict = field(default_factory=dict)
    #: What the key points' tables say under them (``key_point_notes``).
    notes: list[str] = field(default_factory=list)
    #: The presets the curves were computed under (``key_point_labels``): whether the key
    #: points are expected figures (with intervals) or ideal bounds.
    labels: list[str] = field(default_factory=list)
    #: The measured points and provider offers drawn on its frontier figures.
    measured: list[dict] = field(default_factory=list)

    def plot(self, name: str | None = None, ax=None):
        """Draw one of the scenario's figures (``name``: one of its ``plots``, default the
        first) as ``run`` writes it, on ``ax`` when given; returns the Axes drawn on (the
        first panel of a breakdown, which draws one per curve and takes no ``ax``)."""
        plots_named = self.scenario.plots
        name = plots_named[0] if name is None else name
        if name not in plots_named:
            raise SpecError(
                "argument", "name", f"{name!r} is not one of the scenario's plots",
                f"choose {', '.join(plots_named)}",
            )  # fmt: skip
        if ax is not None and name == "breakdown":
            raise SpecError(
                "argument", "ax", "a breakdown draws one panel per curve on its own figure",
                "drop ax",
            )  # fmt: skip
        fig = _draw(self.scenario, name, self.fronts, self.measured, ax)
        return ax if ax is not None else fig.axes[0]


def key_point_labels(fronts: dict[str, Frontier]) -> list[str]:
    """The preset labels of the curves (``achievable, engine trtllm``, ``refined``, ...),
    once each; none for a Section 2 toy curve, whose frontier states no preset."""
    found = (f.metadata.get("assumptions") for f in fronts.values())
    return list(dict.fromkeys(str(a) for a in found if a))


def key_point_notes(fronts: dict[str, Frontier], key_points: pd.DataFrame) -> list[str]:
    """The notes of a scenario's key points: each curve's frontier notes (a whole-batch KV
    cache beyond the HBM, ``serving.setting.whole_batch_kv_note``) and, when a key point has
    real-valued GPUs, batches or degrees, that they are the continuous model's."""
    notes = [f"{label}: {note}" for label, f in fronts.items() if not f.empty for note in f.notes]
    continuous = continuous_note(key_points) if key_points is not None else None
    return notes + ([continuous] if continuous else [])


def curve_frontier(curve) -> Frontier:
    """The frontier of one curve (toy curves use the Section 2 model)."""
    if curve.toy is not None:
        f = curve.fields
        arch = load_model(f["model"])
        if "weight_bits" in f:
            arch = arch.with_precision(weight_bits=f["weight_bits"])
        params = curve.toy
        return toy_frontier(
            arch,
            load_hardware(f.get("hardware", "H100-paper")),
            context_tokens=float(f.get("context_tokens", 1.0)),
            max_throughput_tokens_per_s=float(f.get("max_throughput_tokens_per_s", math.inf)),
            allreduce_latency_s=float(params.get("allreduce_latency_s", 2e-6)),
            base_latency_s=float(params.get("base_latency_s", 6e-6)),
            label=curve.label,
            all_points=bool(f.get("all_points", False)),
        )
    return frontier(curve.setting(), curve.method())


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
    columns = [c for c in KEY_COLUMNS if c in df.columns]
    # expected figures keep their intervals (§F12; blank on an ideal bound's rows)
    columns += [c for n in columns for c in interval_columns(n) if c in df.columns]
    return df[columns]


def law_points(points: list[dict]) -> pd.DataFrame:
    """Measured best latencies against the square-root law through the first (Eq. 19)."""
    params = [float(p["params"]) for p in points]
    measured_ms = [float(p["latency_ms"]) for p in points]
    law_ms = square_root_law(params, params[0], measured_ms[0])
    return pd.DataFrame(
        {
            "model": [p.get("label", "") for p in points],
            "params": params,
            "measured_latency_ms": measured_ms,
            "law_latency_ms": law_ms,
            "measured_over_law": [m / w for m, w in zip(measured_ms, law_ms)],
        }
    )


def _table_names(stem: Path, formats) -> list[Path]:
    """The files ``_write_tables`` writes a table to (``stem``.csv, .json, .md)."""
    suffixes = [{"markdown": "md"}.get(fmt, fmt) for fmt in formats]
    return [stem.parent / f"{stem.name}.{suffix}" for suffix in suffixes]


def _check_outputs(stem: Path, plots_drawn, formats, table_formats, table: bool) -> None:
    """Every file a run writes, checked once its inputs are read and before any is written:
    none may be one of them (a measured overlay named like the points' CSV), nor a file the
    toolkit did not write (``output.files.check_output``)."""
    if table:
        names = _table_names(stem, table_formats)
    else:
        names = [stem.parent / f"{stem.name}-{p}.{fmt}" for p in plots_drawn for fmt in formats]
        names += _table_names(stem.parent / f"{stem.name}-points", table_formats)
    for name in names:
        check_output(name)


def _write_tables(
    df: pd.DataFrame, stem: Path, title: str, notes=(), formats=(), meta=None
) -> list[Path]:
    """A table as CSV (no title), JSON and Markdown next to each other, each stating what it
    was computed with."""
    written = []
    for fmt, name in zip(formats, _table_names(stem, formats), strict=True):
        text = render(df, fmt, title=title if fmt != "csv" else "", notes=notes, meta=meta)
        written.append(write_atomic(name, text))
    return written


def curve_styles(scenario: Scenario) -> dict[str, str]:
    """Each curve's line style: its own, else dashed when it decodes speculatively (one rule
    for every figure and the report, ``output.style.line_style``)."""
    return {c.label: line_style(speculates(c.fields), c.linestyle) for c in scenario.curves}


def _draw(scenario: Scenario, plot: str, fronts: dict, measured: list, ax=None):
    """One figure of a scenario (on ``ax`` when given: not a breakdown's panels)."""
    colors = {c.label: c.color for c in scenario.curves if c.color}
    styles = curve_styles(scenario)
    if plot in ("frontier", "toy-frontier"):
        max_speed = scenario.options.get("max_speed")
        return plots.frontier_figure(
            fronts,
            scenario.title,
            colors,
            measured,
            max_speed,
            styles,
            preference_sampling=scenario.preference_sampling,
            ax=ax,
        )
    if plot == "mfu":
        return plots.mfu_figure(fronts, scenario.title, colors, styles, ax=ax)
    if plot == "power":
        pue = {f.metadata.get("pue") for f in fronts.values() if not f.empty}
        return plots.power_figure(
            fronts, scenario.title, colors, styles, pue.pop() if len(pue) == 1 else None, ax=ax
        )
    if plot == "breakdown":
        return plots.breakdown_figure(fronts, scenario.title)
    points = [m for m in scenario.measured if "params" in m]  # square-root-law
    return plots.square_root_figure(points, scenario.title, ax=ax)


def _overlay(scenario: Scenario, measured_csv) -> tuple[list[dict], tuple[str, ...]]:
    """Measured operating points of the scenario file and of an overlay CSV, and the note of
    the CSV's rows left out (unreadable); a CSV's tokens_per_s_per_gpu is priced at the
    curves' GPU, or row by row (its ``hardware`` column) when the curves' GPUs differ in
    price."""
    measured = [dict(m) for m in scenario.measured if "tokens_per_s" in m and "usd_per_mtok" in m]
    if measured_csv is not None:
        prices = {c.setting().gpu.price_usd_per_hour for c in scenario.curves if c.toy is None}
        if len(prices) == 1:
            price = prices.pop()
        else:
            price = (lambda name: load_hardware(name).price_usd_per_hour) if prices else None
        points = load_overlay_points(measured_csv, price)
        markers = _label_markers(points)
        measured += [{**p, "marker": markers[p["label"]]} for p in points]
        return measured, points.notes()
    return measured, ()


def _label_markers(points: list[dict]) -> dict[str, str]:
    """One marker shape per label of an overlay, so that two overlays can be told apart."""
    shapes = ("o", "s", "^", "v", "D", "P", "X", "h")
    labels = dict.fromkeys(p["label"] for p in points)
    return {label: shapes[i % len(shapes)] for i, label in enumerate(labels)}


def curve_models(scenario: Scenario) -> list:
    """The architectures a scenario's curves serve (for matching provider observations)."""
    return [
        load_model(c.fields["model"]) if c.toy is not None else c.setting().model
        for c in scenario.curves
    ]


def _observed(
    scenario: Scenario, observations, offer_price: str
) -> tuple[list[dict], tuple[str, ...]]:
    """Provider offers (``studies/observations.py``) of the models the curves serve, each in
    the colour of the first curve that serves its model, and the note of the file's rows left
    out (unreadable)."""
    if observations is None:
        observations = scenario.observations or None
    if observations is None:
        return [], ()
    if isinstance(observations, (str, Path)):
        observations = load_observations(observations)
    notes = observations.notes() if isinstance(observations, Rows) else ()
    labels = [c.label for c in scenario.curves]
    points = overlay_points(observations, offer_price, models=curve_models(scenario))[0]
    return [{**p, "curve": labels[p["model_index"]]} for p in points], notes


def run_scenario(
    scenario: Scenario | str,
    out_dir: str | Path | None = None,
    formats=("png", "svg"),
    table_formats=("csv", "json", "markdown"),
    measured_csv: str | Path | None = None,
    progress=None,
    observations=None,
    offer_price: str = "output",
    assumptions: str | None = None,
) -> RunResult:
    """Compute every curve of a scenario; write its figures and tables into ``out_dir``.

    ``observations`` (a file, a shipped name or ``Observation`` objects) overlays the provider
    offers of the curves' models on frontier figures, priced on ``offer_price``;
    ``assumptions`` computes every curve under that preset instead of the file's own."""
    if isinstance(scenario, (str, Path)):
        scenario = load_scenario(scenario)
    expect(scenario, Scenario, "scenario", "a Scenario or its name", "e.g. 'ttft-limits'")
    if out_dir is not None:
        expect(out_dir, (str, Path), "out_dir", "a folder's path", "give a str or Path")
    if out_dir is None:
        return _run(scenario, None, formats, table_formats, measured_csv, progress, observations,
                    offer_price, assumptions)  # fmt: skip
    check_folder(out_dir)  # before anything is computed
    # write_atomic never replaces a user's own file of an output's name (files.MANIFEST)
    return _run(scenario, out_dir, formats, table_formats, measured_csv, progress,
                observations, offer_price, assumptions)  # fmt: skip


def _run(
    scenario, out_dir, formats, table_formats, measured_csv, progress, observations, offer_price,
    assumptions,
) -> RunResult:  # fmt: skip
    """``run_scenario`` once the scenario is loaded and its folder checked."""
    scenario = scenario.with_assumptions(assumptions)
    result = RunResult(scenario)
    stem = Path(out_dir) / Path(scenario.name).name if out_dir is not None else None
    if scenario.kind == "table":
        result.table = run_table(scenario, progress=progress)
        if stem is not None:
            _check_outputs(stem, (), formats, table_formats, table=True)
            result.files += _write_tables(
                result.table[columns_for(scenario)],
                stem,
                scenario.title,
                result.table.attrs["notes"],
                table_formats,
                result.table.attrs["metadata"],
            )
        return result
    overlay, overlay_notes = _overlay(scenario, measured_csv)  # reported before any work
    offers, offer_notes = _observed(scenario, observations, offer_price)
    if stem is not None:  # its inputs read: none of them is overwritten, nothing half written
        _check_outputs(stem, scenario.plots, formats, table_formats, table=False)
    for i, curve in enumerate(scenario.curves):
        if progress:
            progress(f"{scenario.name}: {curve.label} ({i + 1}/{len(scenario.curves)})")
        try:
            result.fronts[curve.label] = curve_frontier(curve)
        except SpecError as exc:  # e.g. a grid too large for this machine
            raise exc.inside(f"{scenario.source}, curve '{curve.label}'", exc.field) from None
    if result.fronts and all(front.empty for front in result.fronts.values()):
        reasons = "; ".join(f"{k}: {'; '.join(f.notes)}" for k, f in result.fronts.items())
        raise InfeasibleError(f"{scenario.name}: no curve has a feasible configuration ({reasons})")
    result.key_points = key_points(result.fronts, scenario.preference_sampling)
    if "square-root-law" in scenario.plots:
        laws = law_points([m for m in scenario.measured if "params" in m])
        result.key_points = pd.concat([result.key_points, laws]) if result.fronts else laws
    result.metadata = scenario_metadata(
        scenario,
        [{"label": label, **front.metadata} for label, front in result.fronts.items()],
    )
    result.measured = overlay + offers
    for plot in scenario.plots:  # the figures ``RunResult.plot`` draws
        fig = result.plot(plot).figure
        result.figures[plot] = fig
        if stem is not None:
            result.files += plots.save(fig, stem.parent / f"{stem.name}-{plot}", formats)
        else:
            plots.release(fig)
    result.notes = [
        *key_point_notes(result.fronts, result.key_points),
        *overlay_notes,
        *offer_notes,
    ]
    result.labels = key_point_labels(result.fronts)
    if stem is not None and not result.key_points.empty:
        points_stem = stem.parent / f"{stem.name}-points"
        stated = list(dict.fromkeys(figures_line(label) for label in result.labels))
        result.files += _write_tables(
            result.key_points,
            points_stem,
            scenario.title,
            [*stated, *result.notes],
            table_formats,
            result.metadata,
        )
    return result
