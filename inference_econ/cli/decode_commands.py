"""Decoding commands: one configuration (point) and the Pareto frontier."""

from __future__ import annotations

import click

from .. import settings as setting_table
from ..errors import InfeasibleError, SpecError
from .common import (
    SETTING_NAMES,
    FigureFile,
    Progress,
    emit,
    given,
    handle_errors,
    length_option,
    make_setting,
    option,
    options,
    quiet_accepted,
    quiet_option,
    renamed_flags,
    setting_options,
    table_output,
    typed_name,
)
from .stated import save_figure, stated
from .typed import one_gpu

#: Options the frontier command takes for deployments under load (``capacity_commands.
#: slo_frontier``): the load and the latency targets (the same targets as capacity and
#: simulate); given without --rate they are refused (their rows' ``needs``). The prompts'
#: lengths are its --prompt-tokens. Named here, from the table of settings, so that a plain
#: frontier does not load the load commands' module.
FRONTIER_OPTIONS = (
    "arrival_rate_per_s",
    "output_lengths",
    "trace",
    "arrival_process",
    *setting_table.group("target"),
    "requests",
    "seed",
    *setting_table.group("engine"),
)

#: The --discrete of a given configuration (point, request, disagg, prefill).
discrete_option = option(
    "discrete",
    help="Whole layouts: degrees that divide the GPUs, layers, heads and widths, as an engine "
    "launches them (docs/model.md §B7); else the paper's continuous, real-valued degrees.",
)


def layout_notes(rows, discrete: bool, setting=None) -> list[str]:
    """What a given configuration's output says about its layout: under the continuous model
    (the default), that its real-valued figures are the paper's model, when any is real-valued
    (``serving.decode.continuous_note``); with its ``setting``, where redundant experts take
    memory only on its layouts (``api.redundant_note``)."""
    from .. import api

    notes = [None if discrete else api.continuous_note(rows)]
    if setting is not None:
        notes.append(api.redundant_note(setting, rows))
    return [n for n in notes if n]


def layout_meta(meta: dict, discrete: bool) -> dict:
    """A given configuration's metadata, with the layouts it was searched over."""
    return {**meta, "layouts": "whole (discrete, §B7)" if discrete else "continuous (§A5)"}


@click.command(short_help="One configuration: speed, cost, layout and breakdown.")
@click.argument("model")
@setting_options
@options("gpus", "batch")
@discrete_option
@table_output
@quiet_accepted
@handle_errors
def point(model, hardware, gpus, batch, discrete, format, **values):
    """One configuration: latency, tokens/s per request, $/Mtok, MFU, layout and breakdown.

    \b
    Examples: inference-econ point "Llama 3 70B" -H H100 --gpus 8 --batch 64 --context 4096
              inference-econ point "Mixtral 8x22B" -H H100 --gpus 8 --batch 64 --weight-bits 8 --discrete
    """
    import numpy as np

    from .. import api

    setting = make_setting(model, hardware, **values)
    row = api.point_fields(setting, gpus=gpus, batch=batch, discrete=discrete)  # no pandas
    if not np.isfinite(row["latency_s"]):
        raise InfeasibleError(
            (api.uneven_note(setting, gpus) if discrete else None)
            or f"{setting.model.name} does not fit on {gpus:g} x {setting.gpu.name} with batch "
            f"{batch:g} at context {setting.context_tokens:g}: {api.memory_reason(setting, gpus)}"
        )
    title = f"{setting.model.name} on {gpus:g} x {setting.gpu.name}, batch {batch:g}"
    kv = api.whole_batch_kv_note(setting, gpus, batch, setting.context_tokens)
    notes = [n for n in (kv,) if n] + layout_notes(row, discrete, setting)
    meta = layout_meta(setting.metadata(), discrete)
    if format in ("table", "markdown"):  # CSV and JSON keep their one row
        notes += _operations_text(setting, row, discrete, format)
    # a decode point's figures are speeds, latencies and prices: no time to first token
    click.echo(stated(row, format, title, setting, meta, notes, list(row.keys())), nl=False)


def _operations_text(setting, row: dict, discrete: bool, fmt: str) -> list[str]:
    """The point's step as its operations (docs/model.md "A step as operations"): a table
    after a blank line, shown among the notes (the setting's line stays last); none with
    speculation (a cycle is several passes)."""
    from .. import api
    from ..output.render import render_columns

    table = api.point_operations(setting, row, discrete)
    if table is None:
        return []
    text = render_columns(table.columns(), fmt, table.title(setting), [table.note])
    return ["\n" + text.rstrip("\n")]


@click.command(short_help="The Pareto frontier of speed against cost.")
@click.argument("model")
@click.option(
    "--hardware",
    "-H",
    multiple=True,
    required=True,
    help="GPU name, alias or YAML file (see 'list hardware'); with --rate, repeat -H (or "
    "separate with commas) to compare several.",
)
@options(*SETTING_NAMES)
@options("max_throughput_tokens_per_s", "max_gpus", "discrete", "grid_points", "all_points")
@length_option(
    "prompt_tokens",
    "input_lengths",
    help="Prompt length: adds each configuration's time to first token.",
)
@option("ttft_max_s")
@options(*FRONTIER_OPTIONS, "yes")  # deployments under load (docs/model.md §E6)
@renamed_flags
@click.option(
    "--rows",
    type=click.IntRange(min=1, max=1_000_000),
    help="Show this many points, evenly spaced in speed (default: every point, but 20 for "
    "the text table on screen).",
)
@click.option(
    "--figure",
    type=FigureFile(),
    help="Also draw the frontier (.png, .svg, ...): under an engine profile the expected "
    "frontier with its 80 % and 90 % bands and the ideal bound dashed.",
)
@table_output
@quiet_option
@handle_errors
def frontier(
    model, hardware, discrete, grid_points, all_points, rows, figure, format, out, quiet, **values
):
    """The Pareto frontier of tokens/s per request vs $ per million tokens.

    Every point carries its layout (GPUs, batch, PP, TP, attention TP, EP, 1-D/2-D, draft
    length) and where its time goes. CSV and JSON give every column of the API's
    Frontier.to_dataframe(); the frontier spans the paper's range (from 1/100 of the fastest
    speed) unless --all-points; --max-gpus caps the GPUs of an instance. With --rate (Poisson
    arrivals) or --trace (a CSV of requests, rescaled to --rate if given) and
    --slo-ttft-p99/--slo-tpot-p99/--slo-e2e-p99: the frontier of deployments serving that load
    within the targets (see 'capacity --help'), expected figures (--assumptions defaults to
    achievable there, as in capacity); the load options need --rate or --trace.

    \b
    Examples:  inference-econ frontier "Llama 3 70B" -H H100-paper --weight-bits 8 --format csv \\
                   --out llama.csv
               inference-econ frontier "Llama 3 70B" -H H100 --discrete
    """
    from .. import api
    from ..output.render import render

    load = {k: values.pop(k) for k in (*FRONTIER_OPTIONS, "yes")}
    prompt = values["prompt_tokens"]
    if load["arrival_rate_per_s"] is not None or load["trace"] is not None:  # a load is given
        emit(_under_load(model, hardware, values, load, figure, format, quiet), out)
        return
    # one instance's frontier is on one GPU; several are compared under a load
    hardware = one_gpu(hardware, "frontier", "give one -H, or --rate to compare several GPUs")
    if load["yes"]:  # one instance's frontier is bounded by its grid, not by this
        raise SpecError(
            "command line",
            "--yes",
            "applies to a frontier under a load",
            "give --rate or drop --yes",
        )
    if isinstance(prompt, str):
        raise SpecError(
            "command line",
            "--prompt-tokens",
            f"{prompt} is a distribution of prompt lengths, which describes a load",
            "give --rate (or --trace) for deployments under a load, or one prompt length",
        )
    setting = make_setting(model, hardware, **values)
    method = api.search_method(discrete=discrete, grid_points=grid_points, all_points=all_points)
    Progress(quiet, always=True)(f"searching {method.label} for {setting.name}")
    table = api.frontier_columns(setting, method)  # its points as arrays: no pandas yet
    if len(table) == 0:
        raise InfeasibleError(
            f"{setting.name}: no feasible configuration ({'; '.join(table.notes)})"
        )
    if figure:
        _frontier_figure(setting, method, api.frontier(setting, method=method), figure)
    if rows is None and format == "table" and not out:  # a screenful; a file gets every point
        rows = 20
    columns = _thin(table.columns, rows) if rows else table.columns
    line = api.figures_line(setting)
    notes: list[str] = []
    if api.expected_figures(setting):  # the interval table's code only for expected figures
        notes += [n for n in (api.rows_coverage_note(setting, table.columns, len(table)),) if n]
    notes += [*table.notes, *layout_notes(columns, discrete, setting)]
    if format == "table":
        emit(line + "\n" + _frontier_text(setting, table, columns, notes), out)
        return
    import pandas as pd

    df = pd.DataFrame(columns)  # the points shown, as Frontier.to_dataframe() has them
    title = setting.name if format in ("markdown", "json") else ""
    if format == "markdown":  # the line first, as in the text table
        emit(line + "\n\n" + render(df, format, title=title, meta=table.metadata, notes=notes), out)
        return
    emit(render(df, format, title=title, meta=table.metadata, notes=[line, *notes]), out)


def _under_load(model, hardware, values: dict, load: dict, figure, fmt: str, quiet: bool) -> str:
    """frontier --rate/--trace: the frontier of deployments serving the load within the
    targets (``capacity_commands.slo_frontier``), the prompt length its input lengths."""
    prompt = values["prompt_tokens"]
    search = {"discrete", "grid_points", "all_points", "rows"} & given(click.get_current_context())
    if search:
        flag = typed_name(sorted(search)[0])
        raise SpecError(
            "command line",
            flag,
            "applies to the frontier of one instance, not to deployments under a load",
            f"drop {flag}, or drop --rate",
        )
    if figure:
        raise SpecError(
            "command line",
            "--figure",
            "draws the frontier of one instance, not deployments under a load",
            "drop --figure, or drop --rate",
        )
    values.pop("prompt_tokens")  # under a load: the prompts' lengths
    load["input_lengths"] = prompt if prompt is None or isinstance(prompt, str) else f"{prompt:g}"
    from .capacity_commands import slo_frontier  # the load commands' module: only here

    return slo_frontier(model, hardware, values, load, fmt, quiet)


def _frontier_text(setting, table, columns: dict, notes: list[str]) -> str:
    """The text table of a frontier (its key points, then ``columns``, the points shown),
    written without pandas."""
    import numpy as np

    from ..api import DETAIL_COLUMNS, SUMMARY_COLUMNS, interval_columns
    from ..output.ranges import ranged_columns
    from ..output.render import render_columns

    shown = [c for c in (*DETAIL_COLUMNS, "ttft_s") if c in columns]
    shown += [c for n in shown for c in interval_columns(n) if c in columns]
    shown += ["support"] if "support" in columns else []  # the class the intervals are sized on
    key_columns = SUMMARY_COLUMNS + [c for n in SUMMARY_COLUMNS for c in interval_columns(n)]
    key_columns = [c for c in [*key_columns, "support"] if c in columns]
    at = table.key_indices()
    names = {"fastest": "fastest", "preference": "preference (speed^3/price)"}
    names["cheapest"] = "cheapest"
    index = [at[k] for k in names]
    keys = {"point": np.array(list(names.values()))}
    keys.update({c: table.columns[c][index] for c in key_columns})
    head = render_columns(
        ranged_columns(keys),
        "table",
        title=f"{setting.name}: {len(table)} frontier points, assumptions: "
        f"{setting.assumptions.label} ({table.elapsed_s:.2f} s)",
    )
    count = len(columns["tokens_per_s"])
    body = render_columns(
        ranged_columns({c: columns[c] for c in shown}),
        "table",
        title=f"{count} points, slowest first"
        + (" (every point)" if count == len(table) else " (--rows to change)"),
        meta=table.metadata,
        notes=notes,
    )
    return head + "\n" + body


def _frontier_figure(setting, method, front, figure: str) -> None:
    """The frontier drawn (``api.frontier_plot``) and saved."""
    from .. import api

    fig = api.frontier_plot(setting, method=method, front=front)
    save_figure(fig, figure)


def _thin(columns: dict, rows: int) -> dict:
    """About ``rows`` points ({column: array}), evenly spaced in log speed."""
    import numpy as np

    if len(columns["tokens_per_s"]) <= rows:
        return columns
    speeds = np.log(columns["tokens_per_s"])
    targets = np.linspace(speeds.min(), speeds.max(), rows)
    # sorted() of a set, not np.unique: that imports numpy.ma (8 ms of a 0.7 s command)
    idx = np.array(sorted({int(np.argmin(np.abs(speeds - t))) for t in targets}), dtype=int)
    return {name: values[idx] for name, values in columns.items()}


COMMANDS = (point, frontier)
