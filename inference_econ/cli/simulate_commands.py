"""One deployment under one load (docs/model.md Part E): ``simulate``, its latency percentiles,
rates and cost, and the simulated schedule as a trace and a figure (§E12)."""

from __future__ import annotations

import math

import click

from .common import (
    FigureFile,
    OutputFile,
    Progress,
    handle_errors,
    one_gpu_option,
    option,
    options,
    quiet_option,
    renamed_flags,
    table_output,
)
from .load_options import (
    ENGINE,
    PROGRESS_EVERY_S,
    TARGETS,
    load_kwargs,
    load_notes,
    odds_notes,
    served_options,
    traffic_options,
)
from .stated import save_figure


@click.command(short_help="One deployment under one load: latency percentiles and cost.")
@click.argument("model")
@one_gpu_option("give one -H; capacity compares several GPUs at a load")
@option("gpus", help="GPUs per instance of the deployment.")
@options("instances", "prefill_gpus", "prefill_instances", "prefill_hardware")
@traffic_options
@options("concurrency")  # a closed loop of clients instead of arrivals
@options("layout")  # the instances' layout fixed (a plan's), not chosen for the load
@options(*TARGETS, *ENGINE)
@served_options
@options("yes")  # a run estimated past ten minutes: run it, not refuse it
@click.option(
    "--timeline",
    type=OutputFile(suffixes=("json",)),
    help="Write the simulated schedule (steps, preemptions, each request's wait, prefill and "
    "decode) as a Perfetto / chrome://tracing trace (.json).",
)
@click.option(
    "--timeline-figure",
    type=FigureFile(),
    help="Draw the simulated schedule: each instance's steps and its batch over time.",
)
@renamed_flags
@table_output
@quiet_option
@handle_errors
def simulate(
    model, hardware, gpus, prefill_gpus, format, quiet, timeline, timeline_figure, **values
):
    """One deployment under one load: TTFT, TPOT and end-to-end latency (mean, p50, p90, p99),
    throughput, goodput, GPU utilisation and $ per million input and output tokens.

    \b
    Examples:  inference-econ simulate "Llama 3.3 70B" -H H100 --weight-bits 8 --gpus 8 \\
                   --rate 20 --prompt-tokens lognormal:1000:0.8 --output-tokens lognormal:300:0.6 \\
                   --slo-ttft-p99 2 --slo-tpot-p99 0.05
               inference-econ simulate "Llama 3.1 8B" -H H100 --gpus 1 --trace examples/trace.csv \\
                   --arrivals poisson --rate 4
               inference-econ simulate "Llama 3.1 8B" -H H100 --gpus 1 --concurrency 16 \\
                   --prompt-tokens 1000 --output-tokens 200 --requests 200
               inference-econ simulate "Llama 3.1 8B" -H H100 --gpus 1 --rate 8 \\
                   --prompt-tokens 1000 --output-tokens 200 --timeline schedule.json
    """
    from .. import api

    say = Progress(quiet, every_s=PROGRESS_EVERY_S)
    result = api.simulate_load(
        model,
        hardware,
        gpus=gpus,
        prefill_gpus=prefill_gpus,
        progress=lambda done, total: say(f"{done}/{total} requests served"),
        timeline=bool(timeline or timeline_figure),
        **load_kwargs(values),
    )
    _write_timeline(result, timeline, timeline_figure)
    from .stated import stated

    row = result.to_dataframe().iloc[0]
    if result.meets_targets is None and format in ("table", "markdown"):
        row["meets_targets"] = "n/a (no targets)"
    rate = f"{result.rate_per_s:g} req/s" if math.isfinite(result.rate_per_s) else "all at once"
    if values.get("concurrency") is not None:  # a closed loop: the rate is the one it reached
        rate = f"{result.traffic.split(';')[0]} ({result.rate_per_s:.4g} req/s reached)"
    title = f"{result.model} on {result.layout} x {result.instances} ({result.hardware}), {rate}"
    notes = load_notes(result) if format in ("table", "markdown") else list(result.notes)
    notes = [*odds_notes(result), *notes]
    click.echo(stated(row, format, title, result.setting, result.metadata(), notes), nl=False)


def _write_timeline(result, trace: str | None, figure: str | None) -> None:
    """Write the run's schedule as a trace file and as a figure, where asked for."""
    if result.timeline is None:
        return
    if trace:
        from ..output.files import write_atomic

        click.echo(f"wrote {write_atomic(trace, result.timeline.to_json())}", err=True)
    if figure:
        from ..output.timeline_plot import timeline_figure

        arrivals = result.traffic.split(";")[0]  # the process and rate, not every length
        title = f"{result.model} on {result.layout} ({result.hardware}): {arrivals}"
        fig = timeline_figure(result.timeline, title)
        save_figure(fig, figure)


COMMANDS = (simulate,)
