"""Inverse economics: what observed API speeds and prices imply (``infer feasibility|margin|
preference|size``). Each command reads provider offers from an observations CSV (or one offer
given by --speed and --price) and calls one function of ``studies/inverse``."""

from __future__ import annotations

import click

from ..errors import SpecError
from ..settings import INFER
from .common import (
    FigureFile,
    emit,
    format_option,
    given,
    handle_errors,
    option,
    options,
    out_option,
    quiet_accepted,
)


def offer_options(fn):
    """OBSERVATIONS (a CSV or a shipped name), --provider/--model filters, or --speed/--price."""
    fn = options(
        "observed_tokens_per_s", "observed_usd_per_mtok", "offer_price", "input_tokens_per_output"
    )(fn)
    fn = click.option(
        "--model", "model", help="Only offers of this model (with --speed/--price: its model)."
    )(fn)
    fn = click.option("--provider", help="Only offers of this provider.")(fn)
    return click.argument("observations", required=False)(fn)


def variant_options(fn):
    """The settings tried: GPUs, presets, precisions, speculation, context and grid."""
    fn = options("context_tokens", "speculation", "acceptance", "max_draft_tokens")(fn)
    fn = option("draft", INFER)(fn)
    fn = option("grid_points", INFER)(fn)
    fn = options("candidate_weight_bits", "candidate_assumptions")(fn)
    return hardware_list(fn)


hardware_list = click.option(
    "--hardware",
    "-H",
    "hardware",
    multiple=True,
    default=("H100-paper",),
    show_default=True,
    help="GPU to try (repeat for several; see 'list hardware').",
)


#: Where ``offers`` leaves, for ``inputs``, the note of the file's rows left out (unreadable).
LEFT_OUT = "inference_econ.observations_left_out"


def offers(observations, provider, model, values: dict, sized: bool = False):
    """The selected offers: rows of a file, or the one given by --speed and --price (which
    need --model, except for ``sized``: a closed model is sized whatever its name)."""
    from ..api import check_blend, load_observations, observation, select_offers

    ctx = click.get_current_context()
    blend = "input_tokens_per_output" in given(ctx)
    check_blend(values["offer_price"], blend, "command line", "--offer-price blended")
    speed = values.pop("observed_tokens_per_s")
    price = values.pop("observed_usd_per_mtok")
    if observations and (speed is not None or price is not None):
        raise SpecError(
            "command line",
            "--speed/--price",
            "given with an observations file",
            "give one or the other",
        )
    if observations:
        rows = load_observations(observations)
        ctx.meta[LEFT_OUT] = rows.notes()  # stated with the results (``inputs``)
        return select_offers(rows, provider, model)
    if speed is None or price is None:
        raise SpecError(
            "command line",
            "observations",
            "no offer given",
            "name an observations file (e.g. paper-2025) or give --speed and --price",
        )
    if not model and not sized:
        raise SpecError(
            "command line",
            "--model",
            "--speed/--price need the model the offer serves",
            'add --model (e.g. --model "Llama 3 70B")',
        )
    return (observation(speed, price, model or "", provider or "given"),)


def settings_tried(values: dict) -> dict:
    """The command's options as keywords of the studies/inverse functions."""
    renames = {"candidate_assumptions": "assumptions", "candidate_weight_bits": "weight_bits"}
    out = {renames.get(k, k): v for k, v in values.items()}
    if not out.pop("speculation"):
        out["draft"] = None
    return out


def inputs(observations, provider, model, kwargs: dict, used: dict | None = None) -> dict:
    """What an inverse analysis was computed with, for render(meta=...): the offers (the file,
    its filters, or the one given) and every setting tried, lists joined as text. ``used``
    maps each offer's label to the context its figures were computed at (the offer's own, else
    --context): the context stated is that, not the option's value."""
    from ..api import display_path, find_observations

    if observations:
        meta = {"observations": display_path(find_observations(observations))}
        left = click.get_current_context().meta.get(LEFT_OUT)
        if left:
            meta["observations_left_out"] = "; ".join(left)
        meta.update({k: v for k, v in (("provider", provider), ("model", model)) if v})
    else:
        meta = {"observations": "one offer given by --speed and --price"}
        if model:
            meta["model"] = model
    tried = {"hardware": "gpus", "assumptions": "presets", "weight_bits": "weight_bits_tried"}
    for key, value in kwargs.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            value = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
        meta[tried.get(key, key)] = value
    if used is not None:
        meta["context_tokens"] = context_used(used)
    if kwargs.get("draft") is None:
        meta["speculation"] = "off"
        for key in ("acceptance", "max_draft_tokens"):
            meta.pop(key, None)
    else:
        meta["draft_model"] = meta.pop("draft")
    return meta


def context_used(used: dict):
    """The context of the figures: one number when every offer was computed at the same,
    else each offer's (``{label: tokens}``)."""
    from ..output.render import format_number

    values = set(used.values())
    if len(values) == 1:
        return values.pop()
    return "per offer: " + ", ".join(
        f"{format_number(float(v))} tokens ({label})" for label, v in used.items()
    )


def _print(tables, fmt, title, blocks, out, meta=None, drop=()):
    """Tables of several offers, one after another (CSV/JSON: one table with an offer column).
    ``tables`` are ``(offer label, rows as dicts)``; ``drop``: columns left out."""
    import pandas as pd

    from ..output.render import render

    line = _figures_line([r.get("assumptions") for _, rows in tables for r in rows])
    if fmt in ("csv", "json"):
        records = [{"offer": label, **row} for label, rows in tables for row in rows]
        whole = pd.DataFrame(records).drop(columns=list(drop))
        # a whole number beside a missing one (a size's layers where an offer has none) stays
        # whole: one table of every offer would read that column as floats
        whole_numbers = {k for r in records for k, v in r.items() if type(v) is int}
        for name in whole_numbers & set(whole.columns):
            if whole[name].dtype.kind == "f":
                whole[name] = pd.Series([r.get(name) for r in records], dtype=object)
        emit(render(whole, fmt, title=title, meta=meta, notes=line), out)
        return
    text = "".join(f"{n}\n" for n in line)
    for i, ((label, rows), block) in enumerate(zip(tables, blocks)):
        last = meta if i == len(tables) - 1 else None  # the inputs once, after the last table
        df = pd.DataFrame(rows).drop(columns=list(drop))
        text += render(df, fmt, title=f"{title}: {label}", notes=block, meta=last) + "\n"
    emit(text, out)


def _figures_line(presets) -> list[str]:
    """The first line of an inverse analysis: whether the figures of the presets its settings
    tried are ideal bounds or expected (whose intervals its tables leave out)."""
    from .. import api

    labels = [str(p) for p in presets if p]
    line = api.figures_line(labels, intervals=False, parts="Settings")
    return [line] if line else []


def _each(chosen, analyse, kwargs, lines):
    """Run an analysis on every offer (sharing their settings' grids): its ``(label, rows)``,
    its text lines, and the context its figures were computed at (``{label: tokens}``, for
    ``inputs``)."""
    from ..api import shared_grids

    tables, blocks, used = [], [], {}
    with shared_grids():
        for obs in chosen:
            result = analyse(obs, **kwargs)
            tables.append((obs.label, result.records()))
            blocks.append(lines(result))
            used[obs.label] = result.context_tokens
    return tables, blocks, used


@click.group(short_help="What observed API speeds and prices imply.")
def infer():
    """What observed API speeds and prices imply: feasibility, margin, preference, model size.

    Offers come from an observations CSV (columns provider, model, date, tokens_per_s,
    usd_per_mtok_input, usd_per_mtok_output; optional context_tokens, weight_bits, source,
    notes), a shipped name such as paper-2025, or --speed and --price.

    \b
    Example:  inference-econ infer feasibility paper-2025 --model "Llama 3 70B"
    """


@infer.command(short_help="Which settings put an offer on or inside its frontier.")
@offer_options
@variant_options
@options("criterion")
@click.option(
    "--figure",
    type=FigureFile(),
    help="Also draw every setting's frontier with the offers (PNG or SVG; one model's offers).",
)
@format_option
@out_option
@quiet_accepted
@handle_errors
def feasibility(observations, provider, model, figure, format, out, **values):
    """Which settings put an offer on or inside its model's frontier, and by how much it is
    outside otherwise (the acceptance rate speculation needs, or 'infeasible at any setting').

    \b
    Example:  inference-econ infer feasibility paper-2025 --model "Llama 3 70B" --criterion speed
    """
    from ..api import feasibility as analyse

    chosen = offers(observations, provider, model, values)
    kwargs = settings_tried(values)

    def lines(result):
        verdicts = [f"{r.variant.label}: {r.verdict}" for r in result.rows]
        return ["", *verdicts, "", *result.summary, "", *result.notes]

    drop = ("verdict",) if format in ("table", "markdown") else ()
    if figure:  # refused before any offer is analysed, not after their tables are printed
        _figure_model(chosen)
    tables, blocks, used = _each(chosen, analyse, kwargs, lines)
    meta = inputs(observations, provider, model, kwargs, used)
    _print(tables, format, "Feasibility", blocks, out, meta, drop)
    if figure:
        _feasibility_figure(figure, chosen, kwargs)


def _figure_model(chosen) -> str:
    """The one model whose offers a feasibility figure draws (offers of several refused)."""
    models = {o.architecture().name for o in chosen}
    if len(models) > 1:
        raise SpecError(
            "command line",
            "--figure",
            f"the offers are of {len(models)} models",
            "select one with --model",
        )
    return models.pop()


def _feasibility_figure(path, chosen, kwargs) -> None:
    from pathlib import Path

    from ..api import feasibility_frontiers, overlay_points
    from ..output.plots import frontier_figure, save
    from ..output.style import PALETTE, line_style

    model = _figure_model(chosen)
    keys = ("hardware", "assumptions", "weight_bits", "draft", "acceptance", "max_draft_tokens")
    fronts = feasibility_frontiers(
        chosen[0],
        context_tokens=kwargs["context_tokens"],
        grid_points=kwargs["grid_points"],
        **{k: kwargs[k] for k in keys},
    )
    points, _ = overlay_points(chosen, kwargs["offer_price"], kwargs["input_tokens_per_output"])
    # one colour per setting; speculation dashed, as in every figure (output/style.py)
    styles = {label: line_style(not label.endswith("no speculation")) for label in fronts}
    settings = list(dict.fromkeys(label.rsplit(", ", 1)[0] for label in fronts))
    colors = {
        label: PALETTE[settings.index(label.rsplit(", ", 1)[0]) % len(PALETTE)] for label in fronts
    }
    title = f"{model}: frontiers of the settings tried and the observed offers"
    target = Path(path)
    fig = frontier_figure(fronts, title, colors, measured=points, styles=styles)
    save(fig, str(target.with_suffix("")), (target.suffix.lstrip(".") or "png",))
    click.echo(f"wrote {path}", err=True)


@infer.command(short_help="The provider's price against our cost at its speed.")
@offer_options
@variant_options
@format_option
@out_option
@quiet_accepted
@handle_errors
def margin(observations, provider, model, format, out, **values):
    """The provider's price against our cost at its speed: the markup over GPU rental in every
    setting tried, and their range.

    \b
    Example:  inference-econ infer margin paper-2025 --model "Llama 3 70B" --weight-bits 8,4
    """
    from ..api import margin as analyse

    chosen = offers(observations, provider, model, values)
    kwargs = settings_tried(values)
    tables, blocks, used = _each(chosen, analyse, kwargs, lambda r: ["", r.summary, "", *r.notes])
    meta = inputs(observations, provider, model, kwargs, used)
    _print(tables, format, "Markup over GPU rental", blocks, out, meta)


@infer.command(short_help="Fit the k of speed^k/price that explains the offers.")
@offer_options
@hardware_list
@options(
    "assumptions", "weight_bits", "context_tokens", "speculation", "acceptance", "max_draft_tokens"
)
@option("draft", INFER)
@option("grid_points", INFER)
@options("log_speed_sd")
@format_option
@out_option
@quiet_accepted
@handle_errors
def preference(observations, provider, model, hardware, format, out, **values):
    """Fit the exponent k of speed^k/price that puts every offer at its model's optimum, with
    a 95 % profile-likelihood interval (the paper uses k = 3).

    \b
    Example:  inference-econ infer preference paper-2025
    """
    import pandas as pd

    from ..api import fit_preference
    from ..output.render import render

    if len(hardware) != 1:
        raise SpecError(
            "command line", "--hardware", f"{len(hardware)} given", "the fit uses one GPU"
        )
    chosen = offers(observations, provider, model, values)
    kwargs = settings_tried(values)
    fit = fit_preference(chosen, hardware=hardware[0], **kwargs)
    df = fit.to_dataframe()
    used = {p.observation.label: p.context_tokens for p in fit.points}
    meta = inputs(observations, provider, model, {"hardware": hardware[0], **kwargs}, used)
    title = f"Preference exponent: {fit.summary}"
    line = _figures_line([kwargs.get("assumptions")])
    if format in ("csv", "json"):
        lo, hi = fit.interval if fit.interval else (None, None)
        summary = {"provider": "fit", "implied_k": fit.k, "k_low": lo, "k_high": hi}
        both = pd.concat([df, pd.DataFrame([summary])], ignore_index=True)
        emit(render(both, format, title=title, meta=meta, notes=line), out)
        return
    notes = ["", fit.summary, *fit.notes]
    head = "".join(f"{n}\n" for n in line)
    emit(head + render(df, format, title=title, notes=notes, meta=meta), out)


@infer.command(short_help="The model size that puts a closed model's offer on the frontier.")
@offer_options
@variant_options
@options("family", "experts", "active_experts", "depth_exponent", "markup")
@format_option
@out_option
@quiet_accepted
@handle_errors
def size(observations, provider, model, format, out, **values):
    """The total and active parameter counts of an architecture family that put an offer (a
    closed model's, typically) on the frontier, in every setting tried.

    \b
    Example:  inference-econ infer size --model GPT-4.1 --speed 110 --price 8 --weight-bits 8 \\
                  --no-speculation
    """
    from ..api import implied_size

    chosen = offers(observations, provider, model, values, sized=True)
    kwargs = settings_tried(values)
    tables, blocks, used = _each(
        chosen, implied_size, kwargs, lambda r: ["", r.summary, "", *r.notes]
    )
    meta = inputs(observations, provider, model, kwargs, used)
    _print(tables, format, "Implied model size", blocks, out, meta)


COMMANDS = (infer,)
