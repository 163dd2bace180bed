"""Scenario commands: reproduce the paper's tables and figures, run a scenario file."""

from __future__ import annotations

import time
from pathlib import Path

import click

from .common import Progress, emit, format_option, handle_errors, quiet_option

PAPER_ITEMS = {
    **{f"table-{i}": f"paper/table-{i}" for i in range(1, 7)},
    **{f"figure-{i}": f"paper/figure-{i}" for i in range(1, 10)},
}
#: Tables first, then figures, in number order.
PAPER_ORDER = sorted(PAPER_ITEMS, key=lambda k: (k.split("-")[0] != "table", int(k.split("-")[1])))


@click.command()
@click.argument(
    "what",
    type=click.Choice(
        sorted(PAPER_ITEMS, key=lambda k: (k.split("-")[0], int(k.split("-")[1]))) + ["all"]
    ),
)
@format_option
@click.option(
    "--out",
    type=click.Path(),
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
@quiet_option
@handle_errors
def reproduce(what, format, out, detail, html, quiet):
    """Reproduce a table or figure of the paper (or all of them), beside the paper's numbers.

    Tables print ours beside the paper's; figures are written as PNG and SVG with a table of
    their key points; 'all' regenerates every table and figure into figures/.

    \b
    Examples:  inference-econ reproduce table-3 --format csv
               inference-econ reproduce figure-9 --out /tmp/fig9
               inference-econ reproduce all
    """
    from ..output.render import render
    from ..output.runner import run_scenario
    from ..serving.decode import DETAIL_COLUMNS
    from ..studies.tables import run_table

    progress = Progress(quiet)
    if html:
        from ..output.report import require_plotly

        require_plotly()  # fail before the run if plotly is missing
    if what == "all":
        _reproduce_all(Path(out or "figures"), format, progress, html)
        return
    if what.startswith("figure"):
        folder = Path(out or "figures")
        result = run_scenario(PAPER_ITEMS[what], folder, progress=progress)
        if html:
            result.files.append(_report([result], folder / f"{what}.html", result.scenario.title))
        click.echo(render(result.key_points, format, title=result.scenario.title), nl=False)
        click.echo(f"wrote {len(result.files)} files to {folder}/", err=True)
        return
    if html:
        raise click.UsageError("--html draws figures: use it with figure-N or all")
    table = run_table(PAPER_ITEMS[what], progress=progress)
    cols = list(table.attrs["columns"])
    if detail:
        cols += [c for c in DETAIL_COLUMNS if c in table and c not in cols]
    title = table.attrs["title"] if format in ("table", "markdown", "json") else ""
    emit(render(table[cols], format, title=title, notes=table.attrs.get("notes", ())), out)


def _report(results, path: Path, title: str) -> Path:
    """The interactive report of scenario runs that drew frontiers, one section each."""
    from ..output.report import scenario_section, write_report

    sections = [scenario_section(r) for r in results if r.fronts]
    return write_report(sections, path, title)


def _reproduce_all(folder: Path, fmt: str, progress: Progress, html: bool = False) -> None:
    """Every table and figure into ``folder``; prints the largest deviation per table."""
    import pandas as pd

    from ..output.render import render
    from ..output.runner import run_scenario
    from ..studies.tables import deviations

    written, summary, runs = [], [], []
    for name in PAPER_ORDER:
        progress(f"{name}")
        result = run_scenario(PAPER_ITEMS[name], folder, progress=progress)
        written += result.files
        runs.append(result)
        if result.table is not None:
            worst = deviations(result.table).drop(columns="label").abs().max().to_dict()
            summary.append({"table": name, **worst})
    if html:
        title = "Inference economics of language models: the paper's figures, reproduced"
        written.append(_report(runs, folder / "report.html", title))
    title = (
        "Largest relative difference from the paper, per table (Table 5: see docs/deviations.md)"
    )
    click.echo(render(pd.DataFrame(summary), fmt, title=title), nl=False)
    click.echo(
        f"wrote {len(written)} files to {folder}/ in {time.perf_counter() - progress.start:.1f} s",
        err=True,
    )


@click.command()
@click.argument("scenario")
@click.option("--out", type=click.Path(file_okay=False), help="Folder for the figures and tables.")
@format_option
@click.option(
    "--measured",
    type=click.Path(exists=True, dir_okay=False),
    help="CSV of measured points to overlay (tokens_per_s, usd_per_mtok or tokens_per_s_per_gpu).",
)
@click.option(
    "--html", is_flag=True, help="Also write the interactive report OUT/NAME.html (needs plotly)."
)
@quiet_option
@handle_errors
def run(scenario, out, format, measured, html, quiet):
    """Run a scenario file: compute every curve, print its key points, write its figures.

    SCENARIO is a YAML file or the name of a shipped scenario (see 'list scenarios'). With
    --out the figures (PNG, SVG) and the key points (CSV, JSON, Markdown) go to that folder.

    \b
    Example:  inference-econ run scenarios/hardware-generations.yaml --out out/ --html
    """
    from ..output.render import render
    from ..output.runner import run_scenario

    if html and not out:
        raise click.UsageError("--html needs --out (the report goes to OUT/NAME.html)")
    if html:
        from ..output.report import require_plotly

        require_plotly()
    progress = Progress(quiet)
    result = run_scenario(scenario, out, measured_csv=measured, progress=progress)
    if html and result.fronts:
        name = Path(result.scenario.name).name
        result.files.append(_report([result], Path(out) / f"{name}.html", result.scenario.title))
    if result.table is not None:
        cols = list(result.table.attrs["columns"])
        click.echo(render(result.table[cols], format, title=result.scenario.title), nl=False)
    else:
        click.echo(render(result.key_points, format, title=result.scenario.title), nl=False)
    if out:
        click.echo(f"wrote {len(result.files)} files to {out}/", err=True)


COMMANDS = (reproduce, run)
