"""Capacity planning against latency targets (docs/model.md Part E): the cheapest deployment, or
the most load a given one holds, and a frontier's deployments under load; the options and notes
of serving under load it shares with `simulate` are in cli/load_options.py."""

from __future__ import annotations

import click

from ..errors import SpecError, plural
from .autoscale_commands import autoscale_demand
from .common import (
    FigureFile,
    Progress,
    emit,
    format_option,
    handle_errors,
    option,
    options,
    out_option,
    quiet_option,
    renamed_flags,
)
from .fleet_commands import (
    beside_fleet,
    check_model,
    fleet_command,
    fleet_option,
    optional_hardware,
    power_cap_option,
    power_command,
)
from .load_options import (
    DEMAND,
    ENGINE,
    PLAN,
    SERVED,
    SPECULATION,
    TARGETS,
    load_kwargs,
    load_notes,
    odds_notes,
    preset_text,
    served_options,
    traffic_options,
)
from .stated import emit_tables, save_figure
from .typed import given, searched, sole, typed_name

figure_option = click.option(
    "--figure",
    # an output (checked before the search, and replaced if it exists), not an input
    type=FigureFile(),
    help="Draw latency percentiles against load, targets and knee marked (.png, .svg, .pdf, ...).",
)


def _gpus(hardware) -> list[str]:
    names = [h.strip() for item in hardware for h in item.split(",") if h.strip()]
    if not names:
        raise SpecError("command line", "--hardware", "is empty", "give a GPU name")
    return names


def _draw(figure: str | None, maxload, offered=None) -> None:
    if not figure:
        return
    from ..output.load_plots import latency_load_figure

    save_figure(latency_load_figure(maxload, offered_rate_per_s=offered), figure)


def _first_line(setting) -> str:
    """Whether the figures are expected (an engine profile, with intervals) or a bound."""
    from ..api import figures_line

    return figures_line(setting)


@click.command(short_help="The cheapest deployment that meets latency targets at a load.")
@click.argument("model", required=False)
@optional_hardware
@fleet_option
@power_cap_option
@option(
    "gpus",
    default=None,
    help="GPUs per instance of a given deployment: report the most load it holds.",
)
@options("instances", "prefill_gpus", "prefill_instances", "disaggregated", "max_gpus")
@traffic_options
@options(*TARGETS, *ENGINE)
@served_options
@options(*DEMAND, *PLAN, "confidence")
@options("yes")
@renamed_flags
@figure_option
@format_option
@out_option
@quiet_option
@sole("fleet", beside_fleet)  # --fleet FILE sets every model's settings
@searched("arrival_rate_per_s", by="gpus")  # --gpus: the most load a deployment holds
@searched("arrival_rate_per_s", by="demand")  # --demand: a rate for every hour
@handle_errors
def capacity(model, hardware, gpus, prefill_gpus, figure, format, out, quiet, **values):
    """The cheapest deployment (GPU, GPUs per instance, instances; with --disaggregated also
    prefill/decode pools) that serves --rate within the latency targets: its $ per million
    tokens, GPUs, p99s and headroom (--tune-engine: also at 2,048-16,384 tokens a step and,
    under TensorRT-LLM with a MoE model, with attention-DP balancing, the cheapest kept). With
    --gpus: the most load that deployment holds. With --demand FILE (requests/s by hour): the cheapest mix of reserved capacity (--reserved-basis,
    default owned) and capacity bought by the hour (--burst-basis, default on-demand; spot with
    --spot-interruption) that meets the targets at every hour. With --power-cap-mw X: the
    cheapest plan within X MW of facility power, or the most tokens under it. With --fleet FILE
    (no MODEL): the cheapest fleet serving every model of the file within its own targets.

    \b
    Example:  inference-econ capacity "Llama 3.1 8B" -H H100,H200 --rate 10 \\
                  --prompt-tokens lognormal:1000:0.8 --output-tokens lognormal:300:0.6 \\
                  --slo-ttft-p99 2 --slo-tpot-p99 0.05 --max-gpus 2 --requests 500
    """
    from .. import api

    say = Progress(quiet)
    ctx = click.get_current_context()
    if values.pop("fleet") is not None:
        fleet_command(ctx, _gpus(hardware) if hardware else [], format, out, say, figure)
        return
    check_model(model, hardware)
    cap = values.pop("power_cap_mw")
    kwargs = load_kwargs(values)
    names = _gpus(hardware)
    if cap is not None:
        for name in (*DEMAND[1:], "confidence", "instances", "prefill_instances"):
            kwargs.pop(name, None)
        power_command(ctx, model, names, {**kwargs, "power_cap_mw": cap}, format, out, say, figure)
        return
    if "confidence" in given(ctx) and (gpus is not None or kwargs.get("demand") is not None):
        raise SpecError(
            "command line",
            "--confidence",
            "sizes a searched plan; with --gpus or --demand there is none to size",
            "drop --confidence",
        )
    if kwargs.get("demand") is not None:
        _demand(model, names, gpus, kwargs, figure, format, out, say)
        return
    for name in DEMAND[1:]:
        kwargs.pop(name, None)
    confidence = kwargs.pop("confidence", None)  # the default is the API's: passed only given,
    confidence = confidence if "confidence" in given(ctx) else None  # as it fits only expected
    if gpus is not None:
        if len(names) > 1:
            raise SpecError(
                "command line", "--hardware", "a given deployment runs on one GPU", "give one -H"
            )
        if kwargs.pop("disaggregated", False):
            raise SpecError(
                "command line",
                "--disaggregated",
                "searches the prefill pools; with --gpus the deployment is given",
                "give the prefill pool with --prefill-gpus (and --prefill-instances), "
                "or drop --gpus to search",
            )
        result = api.max_load(
            model, names[0], gpus=gpus, prefill_gpus=prefill_gpus, progress=say, **kwargs
        )
        emit(_max_load_text(result, format), out)
        _draw(figure, result)
        return
    for name in ("instances", "prefill_instances"):  # without --gpus: at their defaults
        kwargs.pop(name, None)  # (given, they need --gpus: the table's ``needs``)
    plan = api.capacity(model, names, progress=say, confidence=confidence, **kwargs)
    emit(_plan_text(plan, format), out)
    if figure:
        _draw(figure, _chosen_curve(model, plan, kwargs, say), plan.rate_per_s)


def _demand(model, names, gpus, kwargs, figure, fmt, out, say) -> None:
    """capacity --demand: the plan, its candidates and (with --figure) its hourly layers."""
    from .. import api
    from ..output.ranges import ranged, ranged_columns
    from ..output.render import render
    from .stated import vertical

    for flag, given_value in (
        ("--gpus", gpus),
        ("--disaggregated", kwargs.pop("disaggregated", False)),
    ):
        if given_value:
            raise SpecError(
                "command line",
                flag,
                "does not apply to a demand plan (it searches instance sizes, co-located)",
                f"drop {flag}",
            )
    for name in ("instances", "prefill_instances", "confidence"):
        kwargs.pop(name, None)
    if kwargs.get("autoscale"):  # instances that scale, priced with their start-up (§E13)
        return autoscale_demand(model, names, kwargs, figure, fmt, out, say)
    plan = api.demand_plan(model, names, progress=say, **kwargs)
    summary = plan.summary()
    from ..api import requests_metadata

    meta = {**requests_metadata(plan.setting), "demand": plan.demand.source}
    for key in ("price_basis", "price_usd_per_gpu_hour", "price_date"):
        meta.pop(key, None)  # the plan prices on its own two bases
    title = (
        f"Cheapest capacity for {plan.demand.describe()} within {plan.targets.describe()}: "
        f"{plan.reserved_instances} x {plan.gpus_per_instance} {plan.setting.gpu.name} reserved "
        f"({plan.prices.reserved_basis}), the rest {plan.prices.burst_basis}"
    )
    notes = _demand_notes(plan)
    line = _first_line(plan.setting)
    hourly = plan.hourly()
    candidates = "Every candidate: its most load per instance and the cheapest plan with it"
    hours = "Each hour: its load, the instances it needs, and those reserved, on demand or spot"
    if fmt in ("csv", "json"):  # the hours, with the summary and candidates the text prints
        tables = {"candidates": (candidates, plan.candidates)}
        notes = [line, *notes]
        emit(render(hourly, fmt, title, notes, meta, summary=summary, tables=tables), out)
    else:
        head = line + "\n" + vertical(ranged(summary), fmt, title)
        gap = "\n" if fmt == "markdown" else ""
        body = (gap + "\n").join(
            [
                render(ranged_columns(plan.candidates), fmt, title=candidates),
                render(ranged_columns(hourly), fmt, title=hours),
            ]
        )
        emit_tables(head, body, notes, meta, fmt, out)
    if figure:
        from ..output.load_plots import demand_figure

        save_figure(demand_figure(plan), figure)


def _demand_notes(plan) -> list[str]:
    """What a demand plan is priced and sized with, and what it is compared against."""
    return [
        f"Prices per GPU-hour: reserved ({plan.prices.reserved_basis}) ${plan.prices.reserved_usd:.3g}, "
        f"by the hour ({plan.prices.burst_basis}) ${plan.prices.burst_usd:.3g}"
        + (
            f", spot ${plan.prices.spot_usd:.3g} losing {plan.interruption:.0%} an hour"
            if plan.prices.spot_usd is not None
            else ""
        )
        + ".",
        f"One instance holds {plan.max_rate_per_instance:.4g} req/s within the targets"
        + _held_range(plan.held)
        + " (capacity's knee search, once per GPU and size); each hour needs ceil(rate / that) "
        "instances"
        + (
            "; the instances' and the cost's intervals are the plans for the ends of the held "
            "load's (instances_low80 ... columns)."
            if plan.held
            else "."
        ),
        f"Compare: every hour on {plan.prices.burst_basis} ${plan.all_on_demand_usd:,.0f}; the "
        f"reserved price for exactly the instances each hour uses ${plan.all_reserved_used_usd:,.0f}"
        f" (a floor); reserving the peak ${plan.reserve_peak_usd:,.0f}.",
        *plan.notes,
    ]


def _held_range(held: dict) -> str:
    """`` (80 %: a-b; 90 %: c-d)`` of a held load's interval columns, or "" for a bound."""
    from ..api import interval_columns

    ends = [held.get(c) for c in interval_columns("max_rate_per_instance")]
    if any(e is None for e in ends):
        return ""
    return f" (80 %: {ends[0]:.4g}-{ends[1]:.4g}; 90 %: {ends[2]:.4g}-{ends[3]:.4g})"


def _chosen_curve(model, plan, kwargs, say):
    """The latency-against-load sweep of the chosen deployment (for --figure)."""
    from .. import api

    d = plan.deployment
    left = ("disaggregated", "max_gpus", "tune_engine")  # the plan's, not the curve's
    given = {k: v for k, v in kwargs.items() if k not in left}
    tuned = plan.config  # the engine's settings a tuned plan chose, the curve's too
    if tuned is not None and "step_token_budget" not in tuned.engine_own:
        given["step_token_budget"] = tuned.step_token_budget
    if tuned is not None and tuned.adp_balancing is not None:
        given["adp_balance"] = "{},{}".format(*tuned.adp_balancing)
    if d.disaggregated:
        given.update(
            prefill_gpus=d.prefill_gpus_per_instance, prefill_instances=d.prefill_instances
        )
    given["instances"] = d.instances
    return api.max_load(model, plan.setting.gpu, gpus=d.gpus_per_instance, progress=say, **given)


#: The title of a confident plan's table of the plans beside each other.
SIDE_BY_SIDE = "The plans side by side (all-in $ per million output tokens at the offered load)"


def _plan_text(plan, fmt: str) -> str:
    from ..output.render import render
    from .stated import vertical

    r = plan.result
    # pools on different GPUs: the deployment names the prefill pool's, the decode pool's here
    mixed = plan.deployment.prefill_setting is not None
    hardware = plan.setting.gpu.name if mixed else r.hardware
    title = (
        f"Cheapest deployment of {r.model} for {plan.rate_per_s:g} req/s within "
        f"{plan.targets.describe()}: {plan.deployment.describe()} {hardware}"
    )
    first = _plan_line(plan)
    note = plan.layout_note  # a property that reads the candidates table: once
    layout = [note] if note else []
    held = (
        f"Headroom: the deployment holds {plan.max_rate_per_s:.4g} req/s within the targets "
        f"({plan.load_headroom:+.0%} over the load)."
    )
    if fmt in ("csv", "json"):  # the candidates, the chosen rows with the plan's; the plans
        extra = [held, *_redundancy_notes(plan), *_confident_notes(plan), *plan.notes]
        notes = [first, *odds_notes(r), *layout, *load_notes(r, extra)]
        tables = None
        if plan.confident is not None:
            tables = {"plans": (SIDE_BY_SIDE, plan.plans())}
        return render(
            plan.to_dataframe(), fmt, title=title, notes=notes, meta=r.metadata(), tables=tables
        )
    shown = plan.candidates.drop(columns=["note"]) if fmt == "table" else plan.candidates
    from ..output.ranges import ranged, ranged_columns
    from ..output.render import meta_lines

    head = first + "\n" + vertical(ranged(plan.summary()), fmt, title)
    if plan.confident is not None:
        head += "\n" + render(plan.plans(), fmt, title=SIDE_BY_SIDE)
    why = [
        f"{row.hardware} x{row.gpus_per_instance} ({row.pool}): "
        + ("excluded, " if row.excluded else "")
        + row.note
        for row in plan.candidates.itertuples()
        if row.note
    ]
    body = render(
        ranged_columns(shown),
        fmt,
        title="Every candidate: the most load one instance holds within the targets, and the instances the load needs",
    )
    notes = load_notes(
        r,
        [held] + layout + _redundancy_notes(plan) + _confident_notes(plan) + why + list(plan.notes),
    )
    from ..api import load_coverage_note

    cover = load_coverage_note(plan.result)
    if cover and any(cover in n for n in notes):  # the confident plan's line says it
        cover = None
    notes = [*filter(None, [cover]), *odds_notes(r), *notes]
    gap = "\n" if fmt == "markdown" else ""
    lines = notes + meta_lines(r.metadata())
    return head + "\n" + body + gap + "".join(f"{n}\n" for n in lines)


def _redundancy_notes(plan) -> list[str]:
    """capacity --failures: what failures cost the plan and what N+1 costs (expected figures
    of the failure model of docs/model.md §E11 and of the simulations)."""
    red = plan.redundancy
    if red is None:
        return []
    base = plan.deployment.describe()
    down = "; ".join(
        f"{label}: p99 TTFT {r.ttft_s.p99:.3g} s, p99 TPOT {r.tpot_s.p99 * 1e3:.3g} ms, "
        + ("meets the targets" if r.meets_targets else "misses a target")
        for label, r in red.one_down
    )
    u = max(x for *_, x in red.pools)
    return [
        f"Failures (expected figures): {red.failures.describe()}: each instance is down "
        f"{u:.3%} of the time; {base} holds {red.expected_max_rate_per_s:.4g} req/s on average "
        f"(against {plan.max_rate_per_s:.4g} with every instance up) and has an instance down "
        f"{red.degraded_probability:.2%} of the time.",
        f"N+1: {red.deployment.describe()} {red.setting.gpu.name} for "
        f"${red.result.usd_per_hour:,.4g}/h, ${red.result.monthly_usd:,.0f} a month "
        f"(${red.extra_usd_per_hour:,.4g}/h more, "
        f"{red.extra_usd_per_hour / red.base_usd_per_hour:+.0%}; ${red.result.usd_per_m_output_tokens_all_in:.3g} "
        f"all-in per million output tokens at this load); simulated at the full load with {down}; more "
        f"instances down than it covers {red.shortfall_probability:.2g} of the time.",
    ]


def _plan_line(plan) -> str:
    """The first line of a capacity plan: which plan is the headline, and what is beside it."""
    if plan.confident is None:
        return _first_line(plan.setting)
    c = plan.confident
    return (
        f"Headline: the expected deployment ({plan.result.assumptions}), with 80 % and 90 % "
        f"intervals; beside it the plan for the targets to hold at the {c.level} % interval's "
        f"pessimistic end (--confidence {c.level / 100:g}) and the ideal bound "
        f"({plan.setting_bound()} preset, what a perfect engine would reach)."
    )


def _confident_notes(plan) -> list[str]:
    if (c := plan.confident) is None:
        return []
    text = (
        f"At {c.level} % confidence: one instance may hold as little as {c.factor:.2f} x the "
        f"expected load (the low end of the {c.level} % interval of the load it holds), so the "
        f"targets hold at {plan.rate_per_s:g} req/s with {c.deployment.describe()}"
        f"{' ' + c.hardware if c.hardware else ''} "
        f"(${c.usd_per_hour:,.2f} an hour, ${c.monthly_usd:,.0f} a month, "
        f"${c.usd_per_m_output_tokens_all_in:.3g} all-in per "
        "million output tokens)."
    )
    text += f" ({c.note})" if c.note else ""
    return [text, *([c.extrapolates] if c.extrapolates else []), *_latency_ends_note(plan)]


def _latency_ends_note(plan) -> list[str]:
    """A line where the confident plan is the expected one and a p99's own interval passes."""
    _duration = lambda s: f"{s * 1e3:.4g} ms" if s < 1 else f"{s:,.4g} s"  # noqa: E731
    c, r = plan.confident, plan.result
    if c.deployment != plan.deployment or c.hardware not in (None, r.hardware):
        return []
    ends, t = r.row(), plan.targets
    over = [
        f"p99 {n.upper()} {_duration(ends[f'{n}_p99_s_high{c.level}'])} against "
        f"{_duration(getattr(t, f'{n}_p99_s'))}"
        for n in ("ttft", "tpot", "e2e")
        if getattr(t, f"{n}_p99_s") is not None
        and ends.get(f"{n}_p99_s_high{c.level}", 0.0) > getattr(t, f"{n}_p99_s")
    ]
    return [
        f"The {c.level} % plan is sized on the load one instance holds within the targets (the "
        f"low end of its interval); the p99 latencies' own {c.level} % intervals at the offered "
        f"load pass a target at their far end ({'; '.join(over)}): each is calibrated on its "
        "own kind of measured result, the held load on throughputs at maximum load, so the two "
        "need not agree (docs/model-part-f.md §F12)."
    ][: bool(over)]


def _max_load_text(result, fmt: str) -> str:
    from ..api import figures_line, held_intervals, interval_columns, load_coverage_note
    from ..output.ranges import ranged_columns
    from ..output.render import render

    df = result.to_dataframe()
    first = result.at_max or result.curve[0]
    line = figures_line(first.setting if first.setting is not None else first.assumptions)
    cols = [
        "rate_per_s",
        "ttft_p50_s",
        "ttft_p99_s",
        "tpot_p50_s",
        "tpot_p99_s",
        "e2e_p99_s",
        "output_tokens_per_s",
        "goodput_fraction",
        "mfu",
        "usd_per_m_output_tokens_all_in",
        "meets_targets",
        "knee",
    ]
    cols += [c for n in cols for c in interval_columns(n) if c in df]
    if fmt in ("csv", "json"):
        return render(df, fmt, title="Latency against load", meta=first.metadata(), notes=[line])
    at = result.at_max
    if at is None:
        title = f"No load meets {result.targets.describe()} on {result.deployment.describe()}: {result.knee.reason}"
        table = ranged_columns(df[cols])
        notes = _behind_note(result)
        return (
            line
            + "\n"
            + render(table, fmt, title=title, notes=notes, meta=result.curve[0].metadata())
        )
    held = held_intervals(at, result.max_rate_per_s)
    span = (
        f" (90 %: {held['max_rate_per_s_low90']:.4g}-{held['max_rate_per_s_high90']:.4g})"
        if held
        else ""
    )
    title = (
        f"{at.model} on {result.deployment.describe()} {at.hardware} ({at.layout}) holds "
        f"{result.max_rate_per_s:.4g} req/s{span} = {at.output_tokens_per_s:,.0f} output tokens/s within {result.targets.describe()}"
    )
    notes = load_notes(
        at,
        [
            f"At that load: ${at.usd_per_m_input_tokens:.3g} per million input tokens, ${at.usd_per_m_output_tokens:.3g} per million output tokens, ${at.usd_per_m_output_tokens_all_in:.3g} all-in per million output tokens (at {at.input_tokens_per_output_token:.3g} input tokens per output token); MFU {at.mfu:.1%}."
        ],
    )
    notes = [
        *filter(None, [load_coverage_note(at)] if at.setting else []),
        *_behind_note(result),
        *notes,
    ]
    table = ranged_columns(df[cols])
    return line + "\n" + render(table, fmt, title=title, notes=notes, meta=at.metadata())


def _behind_note(result) -> list[str]:
    """A line naming the loads whose runs miss the targets by falling behind (their backlog
    grows, ``LoadResult.stable`` false) while every p99 is within its limit: the table's
    p99s alone do not say why such a row reads "no"."""
    runs = {r.rate_per_s: r for r in (*result.knee.evaluated, *result.curve)}
    behind = [
        r.rate_per_s
        for r in runs.values()
        if r.meets_targets is False and not r.stable and r.rejected == 0
        and result.targets.met(r.p99)
    ]  # fmt: skip
    if not behind:
        return []
    return [
        f"At {', '.join(f'{x:.3g}' for x in sorted(behind))} req/s the runs miss the targets "
        "by falling behind the load (the deployment serves less than is offered, its queue "
        "grows; `stable` false in --format csv), though each p99 is within its limit."
    ]


def slo_frontier(model, hardware, values: dict, load: dict, fmt: str, quiet: bool = False) -> str:
    """The frontier of deployments serving a load within targets, as the frontier command
    prints it (``frontier --rate R --slo-ttft-p99 T --slo-tpot-p99 P``); ``quiet``: no
    progress lines."""
    from .. import api

    served = _served_under_load(values, load)
    front = api.load_frontier(
        model, _gpus(hardware), progress=Progress(quiet), **served, **load_kwargs(load)
    )
    return _load_frontier_text(front, fmt)


def _served_under_load(values: dict, load: dict) -> dict:
    """The settings of what is served that a frontier under load reads (refused: those it
    does not; the prompt length given becomes the load's input lengths)."""
    named = given(click.get_current_context())
    if "context_tokens" in named:  # given: the default is a decode context, unread under load
        raise SpecError(
            "command line",
            "--context",
            "under load, contexts come from the request lengths",
            "drop --context; give --prompt-tokens",
        )
    read = {*SERVED, "max_gpus", "prompt_tokens"}
    ignored = sorted(n for n in named & set(values) if n not in read)
    if ignored:
        flag = typed_name(ignored[0])
        raise SpecError(
            "command line",
            flag,
            "does not apply to deployments under a load (--rate)",
            f"drop {flag}, or drop --rate",
        )
    if load.get("input_lengths") is None and values.get("prompt_tokens") is not None:
        load["input_lengths"] = f"{values['prompt_tokens']:g}"
    served = {
        k: v
        for k, v in values.items()
        if k in (*SERVED, "max_gpus") and v is not None and (k not in SPECULATION or k in named)
    }
    if "assumptions" not in named:
        served.pop("assumptions", None)  # serving under load's own default (expected figures)
    return served


def _load_frontier_text(front, fmt: str) -> str:
    """A frontier of deployments under load as a table, its figures' first line above."""
    from ..api import figures_line, interval_columns
    from ..output.ranges import ranged_columns
    from ..output.render import render

    cols = [
        "tokens_per_s",
        "usd_per_m_output_tokens_all_in",
        "gpus",
        "gpus_per_instance",
        "instances",
        "layout",
        "ttft_p99_s",
        "tpot_p99_s",
        "e2e_p99_s",
        "usd_per_m_input_tokens",
        "usd_per_m_output_tokens",
        "input_tokens_per_output_token",
        "mfu",
    ]
    meta = front.metadata()
    if "," in str(meta.get("hardware", "")):  # several GPUs searched: say each row's
        cols.insert(cols.index("layout"), "hardware")
    cols += [c for n in cols for c in interval_columns(n) if c in front.points]
    df = front.points[cols]
    first = front.points.iloc[0]
    line = figures_line(first["assumptions"])
    odds = (
        [
            "Intervals: where a measured run lands, 80 % and 90 % of the time (out-of-sample "
            "error of the engine profiles, docs/validation.md); prices, the input:output ratio "
            "and MFU are the offered load's, which every deployment here serves within the "
            "targets (whether it still would at the intervals' pessimistic end is what "
            "capacity --confidence answers)."
        ]
        if any(c.endswith("_low80") for c in df.columns)
        else []
    )
    if fmt in ("csv", "json"):
        return render(df, fmt, meta=meta, notes=[line, *odds])
    df = ranged_columns(df)
    title = (
        f"{len(df)} {plural(len(df), 'deployment')} on the frontier for {front.rate_per_s:g} req/s within {front.targets.describe()} "
        f"({len(front.evaluated)} of the deployments simulated meet them); tok/s = 1 / mean TPOT, all-in $ per million output tokens"
    )
    notes = [
        *odds,
        f"Assumptions: {preset_text(first['assumptions'])}; traffic: {first['traffic']}.",
    ]
    return line + "\n" + render(df, fmt, title=title, notes=notes, meta=meta)


COMMANDS = (capacity,)
