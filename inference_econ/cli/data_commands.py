"""Commands that hold the model against data and move its inputs: compare-measured, calibrate,
sweep."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import SpecError
from .common import (
    FigureFile,
    OutputFile,
    Progress,
    emit,
    format_option,
    handle_errors,
    make_setting,
    options,
    out_option,
    quiet_option,
    setting_options,
)


def _figure_target(figure: str) -> tuple[str, tuple[str, ...]]:
    """(stem, formats) of a --figure path."""
    return str(Path(figure).with_suffix("")), (Path(figure).suffix.lstrip(".") or "png",)


@click.command("compare-measured", short_help="Hold the model against measured benchmarks.")
@click.argument("csv", type=click.Path(exists=True, dir_okay=False))
@options("assumptions")
@click.option(
    "--figure",
    type=FigureFile(),
    help="Also draw the measured points over the predicted frontier (PNG/SVG).",
)
@format_option
@out_option
@handle_errors
def compare_measured(csv, assumptions, figure, format, out):
    """Hold the model against measured serving benchmarks: prediction and measured/predicted
    for every row; any point that beats the roofline is reported loudly.

    \b
    Example:  inference-econ compare-measured tests/data/measured_public_sample.csv --figure nim.png
    """
    from ..output.render import render
    from ..studies.measured import predicting as ms

    result = ms.compare(csv, assumptions)
    for _, row in result[result.beats_roofline].iterrows():
        click.echo(
            f"WARNING: row {row.row}: measured {row.measured_tokens_per_s:.1f} tok/s beats the model's "
            f"{row.predicted_tokens_per_s:.1f} by {row.speed_ratio - 1:.0%}: the roofline is not a bound here"
            + (" (requests were queueing)" if row.queueing else ""),
            err=True,
        )
    emit(render(result, format, title="Measured against predicted" if format != "csv" else ""), out)
    if figure:
        from ..output.plots import measured_figure, save

        stem, fmts = _figure_target(figure)
        save(measured_figure(csv, assumptions), stem, fmts)
        click.echo(f"wrote {figure}", err=True)


@click.command(short_help="Fit a GPU's sustained fractions to measured points.")
@click.argument("csv", type=click.Path(exists=True, dir_okay=False))
@options("assumptions")
@click.option("-o", "--out", type=OutputFile(), help="Write the calibrated hardware YAML here.")
@format_option
@click.option(
    "--holdout-every",
    type=int,
    default=3,
    show_default=True,
    help="Hold out every n-th point for the out-of-sample error.",
)
@handle_errors
def calibrate(csv, assumptions, out, format, holdout_every):
    """Fit a GPU's sustained FLOP and HBM fractions and collective-latency scale to measured
    points; save them as a hardware file scenarios can use ("achievable" frontiers).

    \b
    Example:  inference-econ calibrate tests/data/measured_public_sample.csv -o h100_calibrated.yaml
    """
    import pandas as pd

    from ..output.render import render
    from ..studies.measured.calibration import calibrate as fit
    from ..studies.measured.calibration import calibrated_yaml

    result = fit(csv, assumptions, holdout_every)
    rows = [
        {"parameter": k, "value": v, "standard_error": result.errors[k]}
        for k, v in result.values.items()
    ]
    title = f"{result.hardware}: {result.points} points"
    click.echo(render(pd.DataFrame(rows), format, title=title), nl=False)
    click.echo(
        f"RMS log-speed error: {result.rms_log_error_before:.3f} before, {result.rms_log_error_fit:.3f} fitted, "
        f"{result.rms_log_error_held_out:.3f} on {result.held_out} held-out points"
    )
    if out:
        emit(calibrated_yaml(result), out)


@click.command(short_help="What-if sweeps, and a tornado chart of elasticities.")
@click.argument("model")
@setting_options
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
@format_option
@quiet_option
@handle_errors
def sweep(
    model, hardware, parameter, values, at_speed, grid_points, tornado, format, quiet, **settings
):
    """What-if: vary one parameter and report the fastest speed and the cost at a fixed speed.

    The cost is compared at --at-speed tokens/s per request, by default half the base
    setting's fastest speed (printed in every row). --tornado gives the elasticity of the
    fastest speed and of that cost to every factor, between x0.5 and x2.

    \b
    Examples:  inference-econ sweep "Llama 3 70B" -H H100-paper --param hbm_bandwidth --values 0.5,1,2,4
               inference-econ sweep "Llama 3 70B" -H H100-paper --weight-bits 8 --tornado tornado.png
    """
    from ..optimise.method import make_method
    from ..output.render import render
    from ..studies import sensitivity as sens

    setting = make_setting(model, hardware, **settings)
    method = make_method(grid_points=grid_points)
    progress = Progress(quiet)
    meta = {**setting.metadata(), "method": method.label}
    if tornado:
        from ..output.plots import save, tornado_figure, tornado_title

        progress(f"base frontier of {setting.name}")
        speed = at_speed if at_speed is not None else sens.default_speed(setting, method)
        result = sens.elasticities(setting, at_speed=speed, progress=progress, method=method)
        meta["at_speed_tokens_per_s"] = speed
        title = tornado_title(setting, speed, at_speed is None)
        click.echo(render(result, format, title=title, meta=meta), nl=False)
        stem, fmts = _figure_target(tornado)
        save(tornado_figure(result, title), stem, fmts)
        click.echo(f"wrote {tornado}", err=True)
        return
    if not parameter:
        raise SpecError(
            "argument", "--param", "is missing", "name a parameter, or ask for --tornado"
        )
    progress(f"base frontier of {setting.name}")
    result = sens.sweep(setting, parameter, list(values), at_speed, progress, method)
    click.echo(render(result, format, title=f"{parameter}: {setting.name}", meta=meta), nl=False)


COMMANDS = (compare_measured, calibrate, sweep)
