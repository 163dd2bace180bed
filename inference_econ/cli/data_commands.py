"""Commands that hold the model against data and move its inputs: compare-measured, calibrate,
sweep."""

from __future__ import annotations

from pathlib import Path

import click

from .. import settings as table
from ..errors import SpecError, plural
from .common import (
    SETTING_NAMES,
    FigureFile,
    OutputFile,
    Progress,
    RawValue,
    checked,
    emit,
    format_option,
    handle_errors,
    hardware_option,
    make_setting,
    one_gpu_option,
    option,
    options,
    out_option,
    quiet_option,
    table_output,
)
from .stated import stated_table
from .typed import excludes


def _figure_target(figure: str) -> tuple[str, tuple[str, ...]]:
    """(stem, formats) of a --figure path."""
    return str(Path(figure).with_suffix("")), (Path(figure).suffix.lstrip(".") or "png",)


def stated_options(command):
    """-H, --gpus, --precision and --model: what a benchmark tool's plain result leaves out
    (compare-measured and calibrate, for the rows that state none)."""
    command = click.option(
        "--model",
        metavar="NAME",
        help="The model of the rows that name none (SGLang's bench_serving result names"
        " none); rows that name one keep it.",
    )(command)
    command = click.option(
        "--precision",
        metavar="WORD",
        help="The precision of the rows that state none: FP8, BF16 or FP4 (weights and"
        " activations); rows that state one keep it.",
    )(command)
    command = click.option(
        "--gpus",
        type=RawValue("N"),
        # a whole number of GPUs, checked as max_gpus is (one line naming --gpus, exit 2)
        callback=lambda ctx, param, value: checked(value, "max_gpus", "--gpus"),
        help="The GPU count of the rows that state none; rows that state one keep it.",
    )(command)
    return one_gpu_option(
        "give one -H: the GPU of the rows that name none",
        required=False,
        metavar="NAME",
        help="The GPU of the rows that name none (a vllm bench serve or aiperf result run"
        " without an export's metadata or plan.json beside it); rows that name one keep it.",
    )(command)


@click.command("compare-measured", short_help="Hold the model against measured benchmarks.")
@click.argument("csv", type=click.Path())
@options("assumptions", "engine", "clock")
@stated_options
@click.option(
    "--figure",
    type=FigureFile(),
    help="Also draw measured against predicted (log-log, a colour per source; PNG/SVG).",
)
@option(
    "jobs",
    "compare-measured",
    help="Local processes replaying the rows under load at once (the same table as one);"
    " with --dask local, the local cluster's workers.",
)
@option(
    "dask",
    help="Replay the rows under load on a Dask cluster: a scheduler's address"
    " (tcp://HOST:8786), or 'local' for a local cluster of --jobs workers (the same table).",
)
@format_option
@out_option
@quiet_option
@handle_errors
def compare_measured(
    csv, assumptions, engine, clock, hardware, gpus, precision, model, figure, jobs, dask,
    format, out, quiet,
):  # fmt: skip
    """Hold the model against measured benchmark rows (docs/user-guide.md, the CSV format,
    or a vllm bench serve, aiperf or InferenceX result file as the tool wrote it): one row per
    input row with measured, predicted, error = predicted/measured - 1 and a status (ok,
    derived, unresolved: ..., out of scope: ..., infeasible: ...), then the median and
    90th-percentile absolute errors by source, GPU and model. With an ideal preset (paper,
    refined) a row that beats the prediction by more than 5 % is reported.

    \b
    Example:  inference-econ compare-measured examples/measured-rows.csv --assumptions achievable
    """
    from ..api import compare_measured, display_path, figures_line
    from ..output.ranges import ranged_columns
    from ..output.render import csv_text_chunks, render

    # a line every ten seconds once a run has taken that long (a whole MLPerf file: minutes)
    result = compare_measured(
        csv, assumptions, engine, Progress(quiet, every_s=10.0), hardware, gpus, precision, jobs,
        clock, dask, model,
    )  # fmt: skip
    table = result.table
    for _, row in table[table.beats_bound.fillna(False)].iterrows():
        click.echo(
            f"WARNING: row {row.row}: measured {row.measured:.4g} {row.unit} beats the "
            f"{result.assumptions} bound {row.predicted:.4g} by more than 5 %: the ideal is not a bound here",
            err=True,
        )
    click.echo(_status_line(table), err=True)
    shown = table  # CSV and JSON: every column of the Python table (docs/user-guide.md)
    if format in ("table", "markdown"):  # the columns a reader scans
        shown = ranged_columns(table.drop(columns=["source_group", "kind", "beats_bound"]))
    if format == "table":
        shown = shown.drop(columns=["source"])
    label = result.assumptions
    line = figures_line(label)
    click.echo(line, err=format in ("csv", "json") or bool(out))
    meta = {
        "measured_rows": display_path(csv),
        "assumptions": assumptions,
        "engine": result.engine or ("each row's engine" if "achievable" in label else "none"),
    }
    title = f"Measured against predicted ({label})"
    if format == "csv":  # a block of rows at a time: a long log's table is never one text
        _emit_pieces(csv_text_chunks(shown, meta), out)
    else:
        emit(render(shown, format, title=title, meta=meta), out)
    _refuse_unread(csv, table)
    summary = render(
        result.summary,
        "table" if format in ("csv", "json") else format,
        title=f"Median and 90th-percentile |predicted/measured - 1|, rows with status ok ({label})",
    )
    click.echo(summary, nl=False, err=format in ("csv", "json") or bool(out))
    if figure:
        from ..output.plots import measured_figure, save

        stem, fmts = _figure_target(figure)
        save(measured_figure(result), stem, fmts)
        click.echo(f"wrote {figure}", err=True)


def _emit_pieces(pieces, out: str | None) -> None:
    """``emit`` of a text given a piece at a time (a long table's CSV, a block of rows each):
    the same output, never all of it in memory."""
    if out:
        from ..output.files import write_atomic

        write_atomic(out, (piece.encode("utf-8") for piece in pieces))
        click.echo(f"wrote {out}", err=True)
    else:
        for piece in pieces:
            click.echo(piece, nl=False)


def _refuse_unread(csv: str, table) -> None:
    """A file no row of which could be read (every row unresolved: a value of -5 or inf in
    each) is bad input, exit 2, after the table has given each row's reason; a file with a
    row compared, or a row read and out of scope or infeasible, is a result (exit 0)."""
    kinds = table.status.astype(str).str.split(":").str[0]
    if len(table) and bool((kinds == "unresolved").all()):
        first = str(table.status.iloc[0]).partition(":")[2].strip()
        rows = f"all {len(table)} rows are" if len(table) != 1 else "its one row is"
        raise SpecError(
            csv,
            "",
            f"no row could be read: {rows} unresolved, row {table.row.iloc[0]} as {first}",
            "fix the cells each row's status names; docs/user-guide.md gives the CSV format",
        )


def _status_line(table) -> str:
    """ "590 rows: 363 ok (read and predicted), 204 derived, 23 unresolved (hardware ...: 16,
    ...)": ok says a row was predicted, not how well (its error and interval do)."""
    # split once a distinct status (a long log repeats a few), each row then a reference
    status = table.status.astype(str).astype("category")
    kind_of = {c: c.split(":")[0] for c in status.cat.categories}
    reason_of = {c: c.partition(":")[2].strip() for c in status.cat.categories}  # "": none
    kinds = status.map(kind_of).astype(str)
    counts = kinds.value_counts()
    parts = [f"{n} {k}" + (" (read and predicted)" if k == "ok" else "") for k, n in counts.items()]
    reasons = status.map(reason_of).astype(str)
    every = reasons[(kinds != "ok") & (kinds != "derived") & (reasons != "")].value_counts()
    top = every.head(4)
    detail = "; ".join(f"{r} ({n})" for r, n in top.items())
    if len(every) > len(top):  # the rest counted, not dropped: the table has each row's
        rest = int(every.iloc[len(top) :].sum())
        detail += f"; {rest} more row{'s' if rest != 1 else ''} of other reasons (the table)"
    return f"{len(table)} {plural(len(table), 'row')}: {', '.join(parts)}" + (
        f". Not ok: {detail}" if detail else ""
    )


@click.command(short_help="Fit the achievable preset's efficiencies to measured rows.")
@click.argument("csv", type=click.Path())
@click.option(
    "--engine",
    default=table.default("engine", "calibrate"),
    show_default=True,
    help="Profile whose terms are fitted: rows naming no engine are this engine's where it is "
    "given (left out without it); the file written derives from it (a name or a profile YAML).",
)
@click.option(
    "--split",
    type=click.Choice(["source", "publication"]),
    default="source",
    show_default=True,
    help="Leave-one-out groups: a source (one MLPerf submitter, one vendor table) or a "
    "publication (MLPerf Inference v4.1 as one).",
)
@click.option("--no-holdout", is_flag=True, help="Skip the leave-one-source-out validation.")
@stated_options
@click.option(
    "--name",
    default=None,
    help="Name of the calibrated profile (default: '<engine> (calibrated)').",
)
@click.option(
    "-o",
    "--out",
    type=OutputFile(("yaml", "yml")),
    help="Write the calibrated engine profile YAML here.",
)
@format_option
@quiet_option
@handle_errors
def calibrate(
    csv, engine, split, no_holdout, hardware, gpus, precision, model, name, out, format, quiet
):
    """Fit the achievable preset's efficiency terms (docs/model.md Part F) to measured rows,
    with standard errors and leave-one-source-out errors; write an engine profile that every
    command takes as --engine FILE. Refuses (exit 1) when the rows cannot pin the terms.

    \b
    Example:  inference-econ calibrate examples/measured-rows.csv -o my-engine.yaml
    """
    import json

    import pandas as pd

    from ..api import calibrate as fit
    from ..api import calibrated_yaml, display_path
    from ..output.render import render

    progress = Progress(quiet)
    # rows naming no engine are the given --engine's; without one, left out (the default
    # profile's fit is TensorRT-LLM's rows')
    given = click.get_current_context().get_parameter_source("engine")
    named = engine if given is not click.core.ParameterSource.DEFAULT else None
    result = fit(csv, named, not no_holdout, progress, split, hardware, gpus, precision, model)
    rows = [
        {
            "term": t.key,
            "value": t.value,
            "standard_error": t.standard_error,
            "prior": f"{t.prior.mean:.3g} +- {t.prior.sd:.2g}",
            "fitted": t.fitted,
            "note": t.note.split(": ", 1)[-1] if t.note else "",
        }
        for t in result.terms
    ]
    rows += [
        {
            "term": k,
            "value": v,
            "standard_error": e,
            "prior": "",
            "fitted": True,
            "note": "micro-benchmarks",
        }
        for k, (v, e) in result.micro
    ]
    title = _calibration_title(result)
    meta = {"measured_rows": display_path(csv), "engine": engine, "split": split}
    held = None
    if result.by_source:
        held = pd.DataFrame(
            result.by_source,
            columns=["source", "rows", "median_abs_error", "p90_abs_error", "median_error"],
        )
    line = _calibration_errors(result, split)
    if format == "json":  # one object: the held-out table and the error line inside it
        payload = json.loads(render(pd.DataFrame(rows), format, title, notes=[line], meta=meta))
        if held is not None:
            payload["held_out"] = json.loads(render(held, format, f"Left out one {split}"))
        click.echo(json.dumps(payload, indent=2))
    else:
        click.echo(render(pd.DataFrame(rows), format, title=title, meta=meta), nl=False)
        if held is not None:
            click.echo(render(held, format, title=f"Left out one {split} at a time"), nl=False)
        click.echo(line, err=format == "csv")  # a CSV on stdout stays a table
    if result.by_source and result.held_out["median"] > result.prior_only["median"]:
        from ..errors import warn

        warn(
            f"the fitted terms err more on the {split}s left out "
            f"({result.held_out['median']:.3f} median) than the priors alone on every row "
            f"({result.prior_only['median']:.3f}): the fit does not carry beyond the rows it saw"
            + (f", and {out} holds it" if out else "")
            + "; keep the profile it started from, or add rows from more sources"
        )
    if out:
        emit(calibrated_yaml(result, engine, name), out)


def _calibration_title(result) -> str:
    """The fit's engine, rows, sources ("1 source") and seconds."""
    n = len(result.sources)
    return (
        f"{result.engine}: {result.rows} rows, {n} {plural(n, 'source')} ({result.seconds:.0f} s)"
    )


def _calibration_errors(e, split: str) -> str:
    """The line comparing the priors', the fit's and the held-out errors."""
    return (
        f"median / p90 |predicted/measured - 1|: priors only {e.prior_only['median']:.3f} / "
        f"{e.prior_only['p90']:.3f}; fitted, in sample {e.in_sample['median']:.3f} / "
        f"{e.in_sample['p90']:.3f}; "
        + (
            f"left out by {split} {e.held_out['median']:.3f} / {e.held_out['p90']:.3f}"
            if e.by_source
            else "left out: not run"
        )
        + (
            f" ({e.dropped_duplicates} training rows dropped as duplicates of held-out ones)"
            if e.dropped_duplicates
            else ""
        )
    )


#: sweep's frontiers are the continuous grid's, which the kernel clock does not price: no --clock.
SWEEP_SETTINGS = tuple(n for n in SETTING_NAMES if n != "clock")


@click.command(short_help="What-if sweeps, and a tornado chart of elasticities.")
@click.argument("model")
@hardware_option
@options(*SWEEP_SETTINGS)
@click.option(
    "--param",
    "parameter",
    default=None,
    help="Parameter to vary (hbm_bandwidth, flops, interconnect_bandwidth, nccl_latency, launch_latency, price, hbm_capacity, context, acceptance).",
)
@options("values", "at_speed", "grid_points")
@click.option(
    "--tornado",
    type=FigureFile(),
    help="Instead: elasticities of every factor, drawn as a tornado chart here.",
)
@table_output
@quiet_option
@excludes(
    "tornado",
    "parameter",
    "values",
    why="the tornado varies every factor between x0.5 and x2 itself",
)
@handle_errors
def sweep(
    model, hardware, parameter, values, at_speed, grid_points, tornado, format, quiet, **settings
):
    """What-if: vary one parameter and report the fastest speed and the cost at a fixed speed.

    The cost is compared at --at-speed tokens/s per request, by default half the base
    setting's fastest speed (printed in every row). --tornado gives the elasticity of the
    fastest speed and of that cost to every factor, between x0.5 and x2 (it takes no --param
    or --values). Each value's frontier spans the paper's range, from 1/100 of its own fastest
    speed, so its cheapest point can rise as the fastest does (more bandwidth cuts off the
    slow, cheap tail): compare costs at --at-speed.

    \b
    Examples:  inference-econ sweep "Llama 3 8B" -H H100-paper --grid-points 60 --param hbm_bandwidth \\
                   --values 0.5,2
               inference-econ sweep "Llama 3 8B" -H H100-paper --grid-points 60 --tornado tornado.png
    """
    from .. import api

    setting = make_setting(model, hardware, **settings)
    method = api.search_method(grid_points=grid_points)
    progress = Progress(quiet)
    meta = {**setting.metadata(), "method": method.label}
    if tornado:
        from ..output.plots import save, tornado_figure, tornado_title

        result = _tornado_elasticities(setting, at_speed, progress, method)
        speed = float(result["at_speed_tokens_per_s"].iloc[0])
        meta["at_speed_tokens_per_s"] = speed
        title = tornado_title(setting, speed, at_speed is None)
        notes = (
            [
                "Elasticities' intervals: each run's figure at the same end of its own interval "
                "(one engine's error at the same quantile in both runs): where both runs fall in "
                "one stratum of the interval table the error cancels and the elasticity is exact "
                "(docs/model.md §F12). The figures with their intervals: sweep --param."
            ]
            if setting.assumptions.achievable
            else []
        )
        table = stated_table(result, format, setting, title, meta, notes)
        click.echo(table, nl=False)
        stem, fmts = FigureFile.target(tornado)
        save(tornado_figure(result, title), stem, fmts)
        click.echo(f"wrote {tornado}", err=True)
        return
    if not parameter:
        raise SpecError(
            "argument", "--param", "is missing", "name a parameter, or ask for --tornado"
        )
    result = api.sweep(setting, parameter, list(values), at_speed, progress, method)
    swept = {"context": "context_tokens", "acceptance": "acceptance"}.get(parameter)
    if swept in meta:  # a value each row states, not the base setting's
        meta[swept] = "each row's value (swept)"
    if parameter == "acceptance" and "speculation" in meta:  # draft heads' own line
        meta["speculation"] += "; the acceptance each row's value (swept)"
    title = f"{parameter}: {setting.name}"
    notes = _out_of_reach(result, given=at_speed is not None)
    click.echo(stated_table(result, format, setting, title, meta, notes), nl=False)


def _tornado_elasticities(setting, at_speed, progress, method):
    """``api.elasticities`` of every factor, a factor the setting cannot take (x2 of a GPU's
    price past its bound) refused as the tornado's: --tornado chose the factors, not an option
    named ``parameters``."""
    from .. import api

    try:
        return api.elasticities(setting, at_speed, progress, method)
    except SpecError as exc:
        if not exc.field.startswith("parameters"):
            raise
        which = exc.field.removeprefix("parameters")
        fix = exc.fix or "choose a GPU whose figures can be halved and doubled"
        raise SpecError("argument", f"tornado{which}", exc.problem, fix) from None


def _out_of_reach(result, given: bool) -> list[str]:
    """A line for each value of a sweep whose fastest speed is below the speed costs are read
    at: its ``usd_per_mtok_at_speed`` is blank because no point of its frontier is that fast;
    and for each value with no feasible configuration at all, why (every figure blank)."""
    import math

    lines = [
        f"{result['parameter'].iloc[0]} = {value:g}: no feasible configuration ({why}), so "
        "its figures are blank."
        for value, why in result.attrs.get("infeasible", ())
    ]
    for row in result.itertuples(index=False):
        fastest, speed = row.fastest_tokens_per_s, row.at_speed_tokens_per_s
        if not math.isnan(row.usd_per_mtok_at_speed) or not fastest < speed:
            continue  # a cost, or no frontier at all (then every figure is blank)
        asked = (
            f"--at-speed {speed:.4g},"
            if given
            else f"{speed:.4g}, the speed costs are compared at (half the base setting's "
            "fastest; --at-speed sets another),"
        )
        lines.append(
            f"{row.parameter} = {row.value:g}: the fastest speed reached, {fastest:.4g} tokens/s "
            f"per request, is below {asked} so it has no cost at that speed "
            "(usd_per_mtok_at_speed blank)."
        )
    return lines


COMMANDS = (compare_measured, calibrate, sweep)
