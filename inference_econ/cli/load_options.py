"""The options of serving under load (docs/model.md Part E) and the notes under its tables:
what is served, the traffic, the targets and the engine, and what a run was computed with,
shared by `capacity` (cli/capacity_commands.py), `simulate` (cli/simulate_commands.py) and
`export` (cli/export_commands.py)."""

from __future__ import annotations

import click

from .. import settings as table
from .common import PREFILL_SETTING_NAMES, SPECULATION_SETTING_NAMES, option, options

#: What is served (no fixed context: lengths come from the traffic): the settings of a
#: prefill, prices and power included, and speculative decoding (docs/model.md §E8).
SPECULATION = SPECULATION_SETTING_NAMES
SERVED = PREFILL_SETTING_NAMES + SPECULATION
TRAFFIC = table.group("traffic")
#: The request lengths: a load needs both unless a trace gives them, and help says so.
LENGTHS = ("input_lengths", "output_lengths")


def traffic_options(fn):
    """The traffic of a load (``TRAFFIC``), the lengths marked required without --trace."""
    from .. import settings as table

    for name in reversed(TRAFFIC):
        if name in LENGTHS:
            row = table.option(name)
            fn = option(name, help=f"{row.help}  [required unless --trace gives them]")(fn)
        else:
            fn = options(name)(fn)
    return fn


TARGETS = table.group("target")
#: A demand curve and how its capacity is priced (docs/model.md §G5).
DEMAND = table.group("demand")
ENGINE = table.group("engine")
#: A capacity plan's pools on other GPUs, and sizing it for failures (docs/model.md §E11).
PLAN = table.group("plan")
#: A simulation reports progress only when it is slow: at most one line per this many seconds.
PROGRESS_EVERY_S = 2.0


def served_options(fn):
    """The settings of what is served, the preset defaulting to serving under load's
    (``settings.LOAD_ASSUMPTIONS``: expected figures under an engine profile)."""
    from ..settings import LOAD_ASSUMPTIONS

    for name in reversed(SERVED):
        changes = {"default": LOAD_ASSUMPTIONS} if name == "assumptions" else {}
        fn = option(name, **changes)(fn)
    return fn


hardware_list = click.option(
    "--hardware",
    "-H",
    "hardware",
    multiple=True,
    required=True,
    help="GPU name, alias or YAML file; repeat -H (or separate with commas) to compare several.",
)


def load_kwargs(values: dict) -> dict:
    """The options of a command as keyword arguments of the API (None: not given). The
    speculation options, and options that mean something only beside another one, are passed
    only when given: the API refuses them alone (``--acceptance`` without ``--draft``)."""
    from .. import settings as table

    ctx = click.get_current_context(silent=True)
    default = click.core.ParameterSource.DEFAULT

    def at_default(name: str) -> bool:
        if ctx is None or ctx.get_parameter_source(name) != default:
            return False
        row = table.BY_NAME.get(name)
        return name in SPECULATION or (row is not None and bool(row.needs))

    return {k: v for k, v in values.items() if v is not None and not at_default(k)}


def load_notes(result, extra=()) -> list[str]:
    """What the numbers were computed with, printed under every table."""
    window = "" if result.window is None else (
        " Rates and prices are the offered load's, which the deployment keeps up with"
        if result.offered_rates
        else f" Rates and prices are measured over the run's service window of {result.window.seconds:.4g} s"
    ) + " (docs/model.md §E4)."  # fmt: skip
    simulated = (
        f"Requests simulated: {result.requests} on {result.instances_simulated} instances together"
        if result.instances_simulated > 1
        else f"Requests simulated per instance: {result.requests}"
    )
    lines = [
        f"Assumptions: {preset_text(result.assumptions)}; traffic: {result.traffic}.",
        f"{simulated}; {_sharing(result)}.{window}",
        *_realism_notes(result),
        *extra,
        *result.notes,
    ]
    return list(dict.fromkeys(lines))  # a plan's notes repeat its result's


def _realism_notes(result) -> list[str]:
    """What speculation and the prefix cache did in the run (expected figures of the
    simulation, like its latencies: docs/model.md §E8, §E9)."""
    out = []
    s = result.setting
    if s is not None and s.spec is not None:
        share = result.speculative_step_fraction
        when = f"; it speculated in {share:.0%} of the decode steps" if share is not None else ""
        engine = result.engine
        off = (
            f", off above {engine.speculation_max_batch} running requests"
            if engine is not None and engine.speculation_max_batch
            else ""
        )
        schedule = engine.speculation_schedule if engine is not None else "fixed"
        out.append(
            f"Speculation (simulated, expected figure): {s.spec.describe()}; {schedule} "
            f"draft length{off}{when} (docs/model.md §E8)."
        )
    if result.prefix_hit_rate is not None:
        out.append(
            f"Prefix cache (simulated, expected figure): {result.prefix_hit_rate:.1%} of the "
            "prompt tokens admitted in the service window were found cached and not prefilled "
            "(docs/model.md §E9)."
        )
    return out


def _sharing(result) -> str:
    """How the load reaches the instances, worded for the deployment at hand."""
    trace = result.traffic.startswith("arrivals of trace")
    pools = result.prefill_instances > 0
    if result.instances == 1 and not pools:
        return "one instance serves every request"
    if result.closed_loop:
        return "the clients are spread evenly over them"
    if result.instances_simulated > 1:
        router = result.router.replace("_", " ")
        stray = result.requests_per_session is not None and result.router != "prefix_aware"
        return (
            f"a {router} router sends each request to one of them (docs/model.md §E10)"
            + (
                f"; they stand for all {result.instances}, each group of "
                f"{result.instances_simulated} seeing its share of the load"
                if result.instances > result.instances_simulated
                else ""
            )
            + (
                "; a session's next turn lands on any of them, its history cached where its last "
                "was served (--router prefix_aware keeps a session where its history is)"
                if stray
                else ""
            )
        )
    if result.router == "round_robin" and not pools:
        of = "the trace's rows" if trace else "the Poisson stream's requests"
        return (
            f"a round robin router sends the instances their turns: each sees one in "
            f"{result.instances} of {of}, one simulated for all (docs/model.md §E10)"
        )
    if trace:
        each = "each sees every trace row with probability 1 / instances, at its time"
    else:
        each = "each sees a Poisson stream of the rate over the instances"
    return f"the instances share the load at random ({each})"


def odds_notes(result) -> list[str]:
    """Under an engine profile: what the intervals cover, and a line when the case is
    outside what the data covers."""
    from ..api import expected_figures

    setting = result.setting
    if setting is None or not expected_figures(setting):
        return []
    lines = [
        "Intervals: where a measured run lands, 80 % and 90 % of the time (out-of-sample error "
        "of the engine profiles, docs/validation.md); "
        + (
            "rates and prices are the ones the clients reach."
            if result.closed_loop
            else "rates, prices and MFU are the offered load's (capacity --confidence sizes for it); "
            "energy and power carry the throughput's band and the power model's (§F12); "
            + (
                "counts and shares of the simulated schedule (preemptions, rejections, goodput share, prefix hit rate, speculative steps) "
                "are those of runs whose every step takes the time per output token's ends "
                "(§F12)."
                if result.count_ends
                else "counts and shares of the simulated schedule (preemptions, rejections, goodput share, prefix hit rate, speculative steps) "
                + (
                    "none: the run stopped once it missed its targets."
                    if result.stopped_for is not None
                    else "none: the run has no time per output token whose band the runs at "
                    "its ends would take (one-token outputs)."
                )
            )
            if result.stable
            else "the deployment does not keep up: its rates and prices are its capacity."
        )
    ]
    return lines


def preset_text(label: str) -> str:
    """ "paper" -> "paper preset"; "achievable, engine vllm" -> "achievable preset, engine vllm"."""
    name, _, engine = label.partition(", ")
    return f"{name} preset" + (f", {engine}" if engine else "")
