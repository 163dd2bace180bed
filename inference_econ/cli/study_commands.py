"""Study commands: run a design space of many frontiers, and write an interactive report."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import SpecError, plural
from .common import (
    OutputFile,
    OutputFolder,
    Progress,
    fail,
    format_option,
    handle_errors,
    options,
    quiet_option,
    wrote_files,
)
from .stated import stated_table


@click.command(short_help="Run a design space of many frontiers, resumable.")
@click.argument("file")
@click.option(
    "-o",
    "--out",
    type=OutputFolder(),
    help="Folder for the tables, study.json, the summary figure and the cache of finished cells.",
)
@options("jobs", "dask")
@click.option("--html", is_flag=True, help="Also write the interactive report OUT/report.html.")
@options("recompute", "yes")
@format_option
@quiet_option
@handle_errors
def study(file, out, jobs, dask, html, recompute, yes, format, quiet):
    """Run a study: every combination of its axes' values, each cell's frontier and key points.

    FILE is a study YAML (or the name of a shipped one, see 'list scenarios'). With --out the
    tables key_points and frontiers (CSV, and Parquet with pyarrow), study.json and summary.png
    go to that folder, and finished cells are cached in OUT/cache: a rerun (after a change, a
    failure or an interruption) computes only the cells whose inputs changed. Prints the
    summary table (the best value per row and column of the summary figure).

    \b
    Example:  inference-econ study examples/study.yaml --out out/study --jobs 1

    The README's 600-cell study is the shipped study named studies/accelerators-models; --jobs
    N runs cells on N local processes, --dask local or --dask tcp://HOST:8786 on a Dask
    cluster.
    """
    import pandas as pd

    from ..api import study as run
    from ..api import study_metadata
    from ..output.study_plots import infeasible_note, summary_table

    if html and not out:
        raise click.UsageError("--html needs --out (the report goes to OUT/report.html)")
    if recompute and not out:  # the API's refusal names its arguments (out, cache_dir)
        fail(
            SpecError(
                "command line",
                "--recompute",
                "is given, but nothing is cached without --out: it would be ignored",
                "give --out too, or drop --recompute",
            )
        )
    if html:
        from ..output.report_figures import require_plotly

        require_plotly()  # fail before the long run if plotly is missing
    progress = Progress(quiet)
    try:
        result = run(
            file, out, jobs=jobs, dask=dask, progress=progress, recompute=recompute, yes=yes
        )
    except KeyboardInterrupt:
        kept = f"finished cells are cached in {out}/cache: " if out else ""
        click.echo(f"interrupted: {kept}rerun the same command to resume", err=True)
        sys.exit(130)
    best, meaning = summary_table(result.key_points, result.study, intervals=True)
    title = f"{result.study.title}: {meaning}"
    note = infeasible_note(best, result.key_points)
    value = best.attrs["value"]
    if format in ("table", "markdown"):  # CSV and JSON keep the empty value (null)
        best[value] = [("n/a" if pd.isna(v) else v) for v in best[value]]
    notes = [note] if note else []
    if note and format == "csv":
        click.echo(note, err=True)
    under = [c.setting for c in result.cells]
    click.echo(stated_table(best, format, under, title, study_metadata(result), notes), nl=False)
    cells = len(result.cells)
    click.echo(
        f"{cells} {plural(cells, 'cell')}: {result.computed} computed, {result.cached} from the cache"
        + (f", {len(result.failed)} failed" if result.failed else ""),
        err=True,
    )
    if out:
        if html:
            from ..output.report import write_report
            from ..output.report_sections import study_section

            path = write_report([study_section(out)], Path(out) / "report.html", result.study.title)
            result.files.append(path)
        click.echo(wrote_files(len(result.files), out), err=True)
    if result.failed:
        first = next(iter(result.failed.values()))
        click.echo(
            f"error: {len(result.failed)} {plural(len(result.failed), 'cell')} failed (first: {first}); the others are kept, "
            "rerun the same command to retry only the failed ones",
            err=True,
        )
        sys.exit(1)


@click.command(short_help="An interactive, self-contained HTML report.")
@click.argument("source")
@click.option(
    "-o", "--out", type=OutputFile(("html",)), required=True, help="The HTML file to write."
)
@click.option(
    "--compare",
    help="Study axis whose values are the curves of one view (default: hardware); "
    "the menu picks the values of the other axes.",
)
@click.option(
    "--max-points",
    type=click.IntRange(min=10, max=10000),
    default=80,
    show_default=True,
    help="Frontier points drawn per curve at most (evenly spaced along the line).",
)
@click.option(
    "--where",
    multiple=True,
    metavar="AXIS=VALUE[,VALUE]",
    help="Study: keep only the cells with these values of an axis (repeatable).",
)
@quiet_option
@handle_errors
def report(source, out, compare, max_points, where, quiet):
    """Write an interactive HTML report of a study's output folder or of a scenario.

    SOURCE is the --out folder of 'inference-econ study', or a scenario (file or name). The
    report is one self-contained HTML file (plotly.js inline: it opens without a network):
    frontiers on a log-dollar axis, hovering shows a point's layout and where its latency
    goes, a menu and the legend select curves, then the key-point table and the assumptions.
    Needs plotly (pip install 'inference-econ[html]').

    \b
    Examples:  inference-econ report out/study --out study.html
               inference-econ report out/study --out slice.html --where hardware=H100-paper,V100-paper

    (out/study: the folder 'inference-econ study examples/study.yaml --out out/study' writes;
    a scenario works the same: 'report paper/figure-6 --out figure-6.html'.)
    """
    from ..errors import SpecError
    from ..output.report import write_report
    from ..output.report_figures import require_plotly
    from ..output.report_sections import scenario_section, study_section

    folder = Path(source).is_dir()
    if not folder and Path(source).suffix.lower() in TABLE_SUFFIXES and Path(source).is_file():
        raise SpecError(  # a frontier's or compare-measured's table: not read as bad YAML
            source,
            "",
            "is a table a command wrote, not a study's output folder or a scenario",
            "give the folder 'inference-econ study FILE --out DIR' wrote, or a scenario; "
            "a frontier draws its own figure with --figure",
        )
    for flag, value in (("--compare", compare), ("--where", where)):
        if value and not folder:  # a scenario's report has no axes to compare or slice
            raise SpecError(
                "command line",
                flag,
                f"picks a study's axes, and {source} is a scenario",
                f"drop {flag}, or give a study's output folder",
            )
    require_plotly()
    progress = Progress(quiet)
    if folder:
        section = study_section(source, compare, _where(where))
    else:
        from ..api import load_scenario, run_scenario

        scenario = load_scenario(source)
        law = any("params" in m for m in scenario.measured)  # the square-root law's points
        if scenario.kind == "table" or not (scenario.curves or law):
            raise click.UsageError(f"{source} is a table scenario: a report draws figure scenarios")
        section = scenario_section(run_scenario(scenario, progress=progress))
    write_report([section], out, section.title, max_points)
    click.echo(f"wrote {out}", err=True)


#: Files ``report`` is given by mistake: the tables ``frontier --out`` and others write.
TABLE_SUFFIXES = (".csv", ".tsv", ".gz")


def _where(items) -> dict:
    """--where AXIS=VALUE[,VALUE] options as {axis: [values]}."""
    from ..errors import SpecError

    out: dict[str, list[str]] = {}
    for item in items:
        axis, sep, values = item.partition("=")
        if not sep or not axis.strip() or not values.strip():
            raise SpecError(
                "command line",
                "--where",
                f"expected AXIS=VALUE, got {item!r}",
                "e.g. hardware=B200",
            )
        out.setdefault(axis.strip(), []).extend(v.strip() for v in values.split(","))
    return out


COMMANDS = (study, report)
