"""Scenario commands: reproduce the paper's tables and figures, run a scenario file."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ..errors import SpecError, did_you_mean, plural
from .common import (
    OutputFolder,
    OutputTarget,
    Progress,
    emit,
    fail,
    format_option,
    given,
    handle_errors,
    option,
    quiet_option,
    resolve_format,
    typed_name,
    wrote_files,
)
from .stated import stated_table


def observations_option(fn):
    """--observations FILE|NAME and --price-basis: provider offers drawn on frontier figures."""
    fn = option("offer_price")(fn)
    return click.option(
        "--observations",
        help="Provider offers to draw on frontier figures: a CSV or a shipped name (paper-2025); "
        "only offers of the curves' models are drawn.",
    )(fn)


PAPER_ITEMS = {
    **{f"table-{i}": f"paper/table-{i}" for i in range(1, 7)},
    **{f"figure-{i}": f"paper/figure-{i}" for i in (1, 2, 3, 6, 7, 8, 9, 10)},
    "figure-context": "paper/figure-context",
}
#: Tables first, then figures, in the paper's order (context length after Figure 8, where
#: the paper turns to long contexts).
PAPER_ORDER = [
    *(f"table-{i}" for i in range(1, 7)),
    *(f"figure-{i}" for i in (1, 2, 3, 6, 7, 8)),
    "figure-context",
    "figure-9",
    "figure-10",
]

TARGETS_TEXT = "table-1 ... table-6, figure-1, figure-2, figure-3, figure-6 ... figure-10, figure-context or all"
#: The paper's figures another target draws: its Figures 3-5 are the Table 2 models, together.
DRAWN_TOGETHER = {"figure-4": "figure-3", "figure-5": "figure-3"}


def _target(ctx, param, value):
    """The TARGET argument: a paper table or figure, or all (one line and exit 2 otherwise)."""
    if value in PAPER_ITEMS or value == "all":
        return value
    hint = did_you_mean(value, [*PAPER_ITEMS, "all"])
    if value in DRAWN_TOGETHER:
        hint = f"the paper's Figures 3-5 (the Table 2 models) are drawn together: {DRAWN_TOGETHER[value]};"
    fail(
        SpecError(
            "command line",
            "TARGET",
            f"unknown target {value!r}",
            f"{hint + ' ' if hint else ''}choose {TARGETS_TEXT}",
        )
    )


@click.command(short_help="Reproduce the paper's tables and figures.")
@click.argument("what", metavar="TARGET", callback=_target)
@option(
    "assumptions",
    default=None,
    help="Compute under this assumption preset instead of the paper's (paper-table-5: the "
    "code that printed the paper's Table 5).",
)
@format_option
@click.option(
    "-o",
    "--out",
    type=OutputTarget(),
    help="Tables: write to this file. Figures and 'all': the folder (default figures/).",
)
@click.option(
    "--detail", is_flag=True, help="Add each row's layout and latency breakdown to tables."
)
@click.option(
    "--html",
    is_flag=True,
    help="Also write an interactive report of the figures (figures: FOLDER/NAME.html; "
    "all: FOLDER/report.html). Needs plotly.",
)
@observations_option
@quiet_option
@handle_errors
def reproduce(what, assumptions, format, out, detail, html, observations, offer_price, quiet):
    """Reproduce a table or figure of the paper (or all of them), beside the paper's numbers.

    TARGET is table-1 ... table-6, a figure or all. Figures carry the paper's numbers:
    figure-1 the toy model; figure-2 the square-root law; figure-3 the Table 2 models (the
    paper's Figures 3-5 in one); figure-6 GPU generations; figure-7 speculative decoding;
    figure-8 quantization; figure-context context length (not a figure of the paper);
    figure-9 Mistral Large 2 and figure-10 DeepSeek-V3 at long context. Tables print ours
    beside the paper's; figures are written as PNG and SVG with a table of their key points;
    'all' regenerates every table and figure into figures/.

    \b
    Examples:  inference-econ reproduce table-1 --format csv
               inference-econ reproduce all
    """
    from ..api import DETAIL_COLUMNS, run_scenario, run_table
    from ..output.files import check_folder, check_output
    from ..output.render import render

    if out is not None and (what == "all" or what.startswith("figure")):
        check_folder(out, "--out")  # before anything is computed
    elif out is not None:
        check_output(out, "--out")
        format = resolve_format(format, out)  # f.json: JSON, unless --format says otherwise
    progress = Progress(quiet)
    if html:
        from ..output.report_figures import require_plotly

        require_plotly()  # fail before the run if plotly is missing
    from ..api import load_scenario

    figure = load_scenario(PAPER_ITEMS[what]) if what.startswith("figure") else None
    _offers_used(figure, observations)
    if assumptions is not None and what != "all":
        _preset_used(figure or load_scenario(PAPER_ITEMS[what]), what)
    if what == "all":
        _reproduce_all(Path(out or "figures"), format, progress, assumptions, html)
        return
    if what.startswith("figure"):
        folder = Path(out or "figures")
        offers = _load_observations(observations)
        result = run_scenario(
            PAPER_ITEMS[what],
            folder,
            progress=progress,
            observations=offers,
            offer_price=offer_price,
            assumptions=assumptions,
        )
        _left_out(result, offers)
        if html:
            result.files.append(_report([result], folder / f"{what}.html", result.scenario.title))
        title, notes, meta = result.scenario.title, result.notes, result.metadata
        if result.labels:  # ideal bound or expected, each figure's interval as a range
            text = stated_table(result.key_points, format, result.labels, title, meta, notes)
        else:  # the Section 2 toy model's curves (or measured law points) state no preset
            text = render(result.key_points, format, title=title, notes=notes, meta=meta)
        click.echo(text, nl=False)
        click.echo(wrote_files(len(result.files), folder), err=True)
        return
    if html:
        raise SpecError("command line", "", "--html draws figures", "use it with figure-N or all")
    table = run_table(PAPER_ITEMS[what], progress=progress, assumptions=assumptions)
    cols = list(table.attrs["columns"])
    if detail:
        cols += [c for c in DETAIL_COLUMNS if c in table and c not in cols]
    title = table.attrs["title"] if format in ("table", "markdown", "json") else ""
    notes = table.attrs.get("notes", ())
    emit(_table_text(table, cols, format, title, notes, table.attrs["metadata"]), out)


def _report(results, path: Path, title: str) -> Path:
    """The interactive report of scenario runs that drew figures (frontiers, or the paper's
    square-root law), one section each; tables have none."""
    from ..output.report import write_report
    from ..output.report_sections import scenario_section

    drew = [r for r in results if r.fronts or any("params" in m for m in r.scenario.measured)]
    sections = [scenario_section(r) for r in drew]
    return write_report(sections, path, title)


def _reproduce_all(
    folder: Path, fmt: str, progress: Progress, assumptions=None, html: bool = False
) -> None:
    """Every table and figure into ``folder``; prints the largest deviation per table."""
    import pandas as pd

    from ..api import paper_deviations, paper_tolerance, run_scenario
    from ..output.render import render

    written, summary, runs = [], [], []
    for name in PAPER_ORDER:
        progress(f"{name}")
        result = run_scenario(PAPER_ITEMS[name], folder, progress=progress, assumptions=assumptions)
        written += result.files
        runs.append(result)
        if result.table is not None:
            worst, matches = paper_deviations(result.table)
            verdict = "yes" if matches else "no"
            summary.append({"table": name, **worst, "within_tolerance": verdict})
    if html:
        title = "Inference economics of language models: the paper's figures, reproduced"
        written.append(_report(runs, folder / "report.html", title))
    title = "Largest relative difference from the paper, per table"
    limits = ", ".join(f"{col} {rel:.0%}" for col, rel in paper_tolerance().items())
    notes = (
        f"within_tolerance: every cell within {limits} of the paper, or within the rounding of "
        "the paper's printed value.",
        "Table 5 is expected to miss: the paper printed it from other code (docs/deviations.md; "
        "reproduce table-5 --assumptions paper-table-5 gives the printed table).",
    )
    summary = pd.DataFrame(summary)
    summary = summary[[c for c in summary if c != "within_tolerance"] + ["within_tolerance"]]
    click.echo(render(summary, fmt, title=title, notes=notes), nl=False)
    click.echo(
        f"{wrote_files(len(written), folder)} in {time.perf_counter() - progress.start:.1f} s",
        err=True,
    )


@click.command(short_help="Run a scenario file: its curves, figures and key points.")
@click.argument("scenario")
@click.option("-o", "--out", type=OutputFolder(), help="Folder for the figures and tables.")
@format_option
@click.option(
    "--measured",
    type=click.Path(exists=True, dir_okay=False),
    help="CSV of measured points to overlay: tokens_per_s, and usd_per_mtok or "
    "tokens_per_s_per_gpu (with a hardware column when the curves' GPUs differ in price).",
)
@click.option(
    "--html", is_flag=True, help="Also write the interactive report OUT/NAME.html (needs plotly)."
)
@observations_option
@quiet_option
@handle_errors
def run(scenario, out, format, measured, html, observations, offer_price, quiet):
    """Run a scenario file: compute every curve, print its key points, write its figures.

    SCENARIO is a YAML file or the name of a shipped scenario (see 'list scenarios'). With
    --out the figures (PNG, SVG) and the key points (CSV, JSON, Markdown) go to that folder.

    \b
    Example:  inference-econ run examples/scenario.yaml --out out/ --html
    """
    from ..api import run_scenario
    from ..output.render import render

    if html and not out:
        raise click.UsageError("--html needs --out (the report goes to OUT/NAME.html)")
    if html:
        from ..output.report_figures import require_plotly

        require_plotly()
    from ..api import load_scenario

    progress = Progress(quiet)
    scenario = load_scenario(scenario)
    _offers_used(scenario, observations)
    offers = _load_observations(observations)
    result = run_scenario(
        scenario,
        out,
        measured_csv=measured,
        progress=progress,
        observations=offers,
        offer_price=offer_price,
    )
    _left_out(result, offers)
    if html and result.fronts:
        name = Path(result.scenario.name).name
        result.files.append(_report([result], Path(out) / f"{name}.html", result.scenario.title))
    if result.table is not None:
        cols = list(result.table.attrs["columns"])
        meta, notes = result.table.attrs["metadata"], result.table.attrs["notes"]
        title = result.scenario.title
        click.echo(_table_text(result.table, cols, format, title, notes, meta), nl=False)
    else:
        title, notes, meta = result.scenario.title, result.notes, result.metadata
        if result.labels:  # ideal bound or expected, each figure's interval as a range
            text = stated_table(result.key_points, format, result.labels, title, meta, notes)
        else:  # the Section 2 toy model's curves (or measured law points) state no preset
            text = render(result.key_points, format, title=title, notes=notes, meta=meta)
        click.echo(text, nl=False)
    if out:
        click.echo(wrote_files(len(result.files), out), err=True)


def _table_text(table, cols: list[str], fmt: str, title: str, notes, meta: dict) -> str:
    """A table scenario's rows as every command states figures: a first line saying whether
    they are an ideal bound or expected (each row's preset), expected ones with their 80 %
    and 90 % intervals (ranges in text; their columns in CSV and JSON) and support."""
    from .. import api

    ends = [c for col in cols for c in api.interval_columns(col) if c in table]
    shown = [*cols, *ends, *(["support"] if ends and "support" in table else [])]
    labels = [c["assumptions"] for c in meta.get("curves", ()) if "assumptions" in c]
    under = labels or [meta.get("assumptions", "paper")]
    return stated_table(table[shown], fmt, under, title, meta, notes)


def _offers_used(scenario, observations) -> None:
    """Refuse --observations or --offer-price where no offer is drawn, so they would be
    ignored: a table scenario (or target), or --offer-price without any offers (neither
    --observations nor the scenario's own ``observations``)."""
    ctx = click.get_current_context()
    names = given(ctx)
    for name in ("observations", "offer_price"):
        if name not in names:
            continue
        flag = typed_name(name, ctx)
        if scenario is None or scenario.kind == "table":
            raise SpecError(
                "command line",
                flag,
                "offers are drawn on frontier figures, and no figure is drawn with offers here "
                "(a table, or 'reproduce all'): it would be ignored",
                f"drop {flag}, or run a figure",
            )
        if name == "offer_price" and "observations" not in names and not scenario.observations:
            raise SpecError(
                "command line",
                flag,
                "prices offers, but none are drawn: it would be ignored",
                f"give --observations FILE (or observations: in the scenario), or drop {flag}",
            )


def _preset_used(scenario, what: str) -> None:
    """Refuse --assumptions for a target none of whose curves it applies to (the toy model of
    Section 2, the square-root law's measured points), where it would be ignored."""
    if any(c.toy is None for c in scenario.curves):
        return
    raise SpecError(
        "command line",
        typed_name("assumptions", click.get_current_context()),
        f"{what} has no curve a preset applies to (the toy model of Section 2, or measured "
        "points): it would be ignored",
        "drop --assumptions",
    )


def _load_observations(name):
    """The offers of an observations file (None when no file is given)."""
    if not name:
        return None
    from ..api import load_observations

    return load_observations(name)


def _left_out(result, offers) -> None:
    """Say which offers were not drawn because no curve serves their model."""
    from ..api import curve_models, load_observations, overlay_points

    if offers is None and result.scenario.observations:
        offers = load_observations(result.scenario.observations)
    if not offers or not result.fronts:
        return

    _, left = overlay_points(offers, models=curve_models(result.scenario))
    if left:
        models = ", ".join(dict.fromkeys(o.model for o in left))
        click.echo(
            f"not drawn ({len(left)} {plural(len(left), 'offer')} of models no curve serves): {models}",
            err=True,
        )


COMMANDS = (reproduce, run)
