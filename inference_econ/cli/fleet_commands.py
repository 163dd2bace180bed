"""Fleet economics on the command line (docs/model.md §G6): ``capacity --fleet FILE`` plans
several models on one fleet, ``capacity --power-cap-mw X`` one model under a site power budget.
Both call the API (``api.fleet_plan``, ``api.power_plan``) and print its answer."""

from __future__ import annotations

import click

from ..errors import SpecError, plural
from .common import RawValue, emit, fail
from .stated import save_figure
from .typed import given, typed_name

#: Options of ``capacity`` a fleet plan reads (the file sets every other one).
FLEET_READS = {"hardware", "fleet", "power_cap_mw", "yes", "format", "out", "quiet", "figure"}
#: Options of ``capacity`` a power-capped plan does not read (it plans one load, co-located).
POWER_REFUSES = (
    "gpus", "instances", "prefill_gpus", "prefill_instances", "disaggregated", "demand",
    "failures", "confidence", "prefill_hardware", "decode_hardware",
)  # fmt: skip


def _checked_cap(ctx, param, value):
    """--power-cap-mw as a number of MW (finite, > 0), or one line and exit 2."""
    from .. import api

    try:
        return api.checked_power_cap(value, "command line", "--power-cap-mw")
    except SpecError as exc:
        fail(exc)


optional_hardware = click.option(
    "--hardware",
    "-H",
    "hardware",
    multiple=True,
    help="GPU name, alias or YAML file; repeat -H (or separate with commas) to compare several; "
    "with --fleet, the GPUs of every model that names none.  [required without --fleet]",
)
fleet_option = click.option(
    "--fleet",
    type=RawValue("FILE"),
    default=None,
    help="YAML fleet file (examples/fleet.yaml): the cheapest fleet serving every model in it "
    "within its own targets, and the saving against planning each alone (MODEL not given).",
)
power_cap_option = click.option(
    "--power-cap-mw",
    type=RawValue("NUMBER"),
    default=None,
    callback=_checked_cap,
    help="Site power budget in MW of facility power (IT power x PUE): the cheapest plan "
    "within it, or the one serving the most tokens under it.",
)


def fleet_command(ctx, hardware: list[str], fmt: str, out, say, figure=None) -> None:
    """capacity --fleet: the fleet plan (its options checked by ``beside_fleet``); ``figure``:
    its GPUs by model beside each model alone."""
    from .. import api

    values = ctx.params
    plan = api.fleet_plan(
        values["fleet"], hardware or None, power_cap_mw=values["power_cap_mw"], progress=say,
        yes=values["yes"],
    )  # fmt: skip
    emit(fleet_text(plan, fmt, values["fleet"], hardware), out)
    _draw(figure, "fleet_figure", plan)


def beside_fleet(ctx, names: set[str]) -> None:
    """Refuse an option given with --fleet: a setting the fleet file sets for each model, or
    one a fleet plan does not read, named as typed with the fix."""
    from .. import api

    order = [p.name for p in ctx.command.params]
    for name in sorted(names - FLEET_READS, key=order.index):
        flag = "MODEL" if name == "model" else typed_name(name, ctx)
        if name == "model":
            problem, fix = "is named in the fleet file (--fleet)", "drop MODEL; the file names each"
        elif name in api.FLEET_SETTINGS:
            problem = "is set in the fleet file (--fleet), for each model"
            fix = f"drop {flag}; set '{name}' under 'defaults' or a model in the fleet file"
        else:
            problem, fix = "does not apply to a fleet plan (--fleet)", f"drop {flag}"
        raise SpecError("command line", flag, problem, fix)


def power_command(
    ctx, model, names: list[str], kwargs: dict, fmt: str, out, say, figure=None
) -> None:
    """capacity --power-cap-mw: the plan under the budget; ``figure``: tokens and price against
    the budget."""
    from .. import api

    for name in POWER_REFUSES:
        if name in given(ctx):
            flag = typed_name(name)
            raise SpecError(
                "command line", flag, "does not apply with --power-cap-mw (one load, co-located)",
                f"drop {flag}",
            )  # fmt: skip
    cap = kwargs.pop("power_cap_mw")
    plan = api.power_plan(model, names, power_cap_mw=cap, progress=say, **kwargs)
    emit(power_text(plan, fmt), out)
    _draw(figure, "power_figure", plan)


def _draw(figure: str | None, name: str, plan) -> None:
    """Write ``output.fleet_plots``'s figure ``name`` of ``plan`` to ``figure``, if given."""
    if not figure:
        return
    from ..output import fleet_plots

    save_figure(getattr(fleet_plots, name)(plan), figure)


def fleet_text(plan, fmt: str, source: str, hardware=()) -> str:
    """A fleet plan: whether its figures are expected, its summary, each model's part (the
    load it holds with its interval), the shared GPUs and every candidate."""
    from ..output.ranges import ranged_columns
    from ..output.render import meta_lines, render
    from .stated import first_line, vertical

    s = plan.summary()
    alone = int(s["alone_gpus"])
    title = (
        f"Cheapest fleet for the {len(plan.parts)} {plural(len(plan.parts), 'model')} of "
        f"{source}: {plan.gpus} "
        f"{plural(plan.gpus, 'GPU')}, ${plan.usd_per_hour:,.4g}/h, against {alone} "
        f"{plural(alone, 'GPU')} and ${plan.alone_usd_per_hour:,.4g}/h planned alone "
        f"(saves {s['saving_fraction']:.0%})"
    )
    line, covered = first_line([p.option.setting for p in plan.parts], parts="Models")
    notes = [*covered, *fleet_notes(plan)]
    if hardware:
        notes.append(
            f"GPUs: -H {', '.join(hardware)} for every model that names no 'hardware' of its own, "
            "in place of the fleet file's top-level 'hardware'."
        )
    models = plan.to_dataframe()
    tables = {
        "gpus": ("The shared GPUs and the instances on each", plan.gpu_table()),
        "candidates": (
            "Every candidate: the most load one instance holds within its model's targets",
            plan.candidates,
        ),
    }
    meta = plan.metadata()
    if fmt in ("csv", "json"):
        counts = ("models", "gpus", "shared_gpus", "alone_gpus")  # whole numbers, as the text
        totals = {k: int(v) if k in counts else float(v) for k, v in s.items()}
        return render(
            models, fmt, title=title, notes=[line, *notes], meta=meta, summary=totals,
            tables=tables,
        )  # fmt: skip
    gap = "\n" if fmt == "markdown" else ""
    parts = [
        line + "\n" + vertical(s, fmt, title),
        render(
            ranged_columns(models),
            fmt,
            title="Each model: its part of the fleet and its plan alone",
        ),
    ]
    for name, (caption, table) in tables.items():
        if name == "gpus" and not plan.bins:
            continue  # no GPU shared: no table of them
        if name == "candidates" and fmt == "table":
            table = table.drop(columns=["note"])  # too wide: each note is a line under it
        parts.append(render(ranged_columns(table), fmt, title=caption))
    if fmt == "table":
        notes = [*_candidate_notes(plan.candidates), *notes]
    tail = [*notes, *meta_lines(meta)]
    return (gap + "\n").join(parts) + gap + "".join(f"{n}\n" for n in tail)


def _candidate_notes(candidates) -> list[str]:
    """Why a candidate of the text's table has no figures (its note column, left out there)."""
    return [
        f"{row.model} on {row.option}: {row.note}"
        for row in candidates.itertuples()
        if isinstance(row.note, str) and row.note
    ]


def fleet_notes(plan) -> list[str]:
    """What a fleet plan rests on, printed under it."""
    lines = [
        "Each instance holds the most load its own simulation meets the model's targets at "
        "(capacity's knee search, on a whole GPU, a size or a share); a model's part is "
        "dedicated or on shares of one GPU, shares packed into whole GPUs paid in full "
        "(docs/model.md §G6).",
        "A share x of a GPU: x of its memory (the engine's memory fraction, e.g. vLLM "
        "--gpu-memory-utilization, SGLang --mem-fraction-static), of its tensor rate and "
        "bandwidth (its time shared in proportion) and of its power; a shared GPU's price is "
        "split between the models on it by their shares.",
        "The fleet's GPUs, cost and power are planned at the load each instance is expected to "
        "hold; max_rate_per_s and max_rate_per_instance carry that load's 80 % and 90 % "
        "intervals (§F12), which the plan is not made again for.",
    ]
    lines += [f"{model}: no share of a GPU: {why}." for model, why in plan.sharing if why]
    lines += [f"{part.model}: {note}" for part in plan.parts for note in part.option.run_notes]
    cap = f" (within the {plan.power_cap_mw:g} MW cap)" if plan.power_cap_mw is not None else ""
    lines.append(
        f"Power{cap}: {plan.it_power_kw:,.4g} kW IT at each instance's most load within its targets "
        f"(an unused share idle), {plan.facility_mw * 1e3:,.4g} kW facility at PUE {plan.pue:g}."
    )
    return lines


def power_text(plan, fmt: str) -> str:
    """A power-capped plan: whether its figures are expected, its summary, its parts where it
    has two (CSV and JSON carry them always, as the table ``parts``) and every candidate under
    the cap (the load each instance holds with its interval)."""
    from ..output.ranges import ranged_columns
    from ..output.render import meta_lines, render
    from .stated import first_line, vertical

    s = plan.summary()
    cap = f"a {plan.cap_mw:g} MW power cap" if plan.cap_mw is not None else "no power cap"
    title = (
        f"Under {cap}: {plan.describe()} {'serves' if len(plan.parts) == 1 else 'serve'} "
        f"{plan.served_rate_per_s:.4g} of {plan.rate_per_s:g} req/s within "
        f"{plan.targets.describe()} ({plan.output_tokens_per_s:,.0f} output tokens/s, "
        f"{s['output_tokens_per_s_per_mw']:,.4g} per facility MW)"
    )
    line, covered = first_line([c.setting for c in plan.options], parts="GPUs")
    notes = [
        *covered,
        f"Power: each instance counted at {plan.power_at} "
        + ("(its draw at the most load it holds within the targets, the power model of "
           "docs/model.md §G2)" if plan.power_at == "load" else "(power model, §G2)")
        + f"; facility power = IT power x PUE {plan.pue:g} (--pue, else the cost file's).",
        _cap_note(plan, s["uncapped_deployment"]),
        "Instances are counted at the load each is expected to hold; max_rate_per_instance "
        "carries that load's 80 % and 90 % intervals (§F12), which the plan is not made again for.",
        *dict.fromkeys(n for p in plan.parts for n in p.option.run_notes),
    ]  # fmt: skip
    meta = plan.metadata()
    parts = ("The plan's parts: the instances of each candidate", plan.parts_table())
    if fmt in ("csv", "json"):
        return render(
            plan.candidates, fmt, title=title, notes=[line, *notes], meta=meta, summary=dict(s),
            tables={"parts": parts},
        )  # fmt: skip
    gap = "\n" if fmt == "markdown" else ""
    body = render(
        ranged_columns(plan.candidates),
        fmt,
        title="Every candidate: the instances the load needs, their draw and what the cap holds",
    )
    if len(plan.parts) > 1:
        body = render(parts[1], fmt, title=parts[0]) + gap + "\n" + body
    tail = "".join(f"{n}\n" for n in [*notes, *meta_lines(meta)])
    return line + "\n" + vertical(s, fmt, title) + gap + "\n" + body + gap + tail


def _cap_note(plan, uncapped: str) -> str:
    """Whether the cap binds, and how the plan stands to the uncapped one."""
    if plan.binds:
        return f"The cap binds: the plan differs from the uncapped one ({uncapped})."
    if plan.is_uncapped:
        return "The cap does not bind: the plan is the uncapped one."
    return (
        f"The cap does not bind, but two candidates by whole instances cost less than the "
        f"uncapped plan ({uncapped})."
    )


def check_model(model, hardware) -> None:
    """A plan of one model needs the model and its GPUs (a fleet file names its own)."""
    if model is None:
        raise SpecError(
            "command line", "MODEL", "is missing", "give the model served, or --fleet FILE"
        )
    if not hardware:
        raise SpecError("command line", "--hardware", "is missing", "give a GPU name with -H")
