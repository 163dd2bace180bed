"""Feasibility of an observed offer: which settings put it on or inside the frontier.

For each variant (GPU, preset, weight precision) the offer's speed is looked up on the frontier
without speculation and with the draft model at the given acceptance rate; the smallest
acceptance rate that reaches the speed, and the one that reaches it within the price, are found
by bisection; and how far the offer is outside is one factor (docs/model.md §D2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ... import settings as table
from ...errors import plural
from ..observations import Observation
from .variants import InverseOptions, Variant, context_of, resolve_model


@dataclass(frozen=True)
class FeasibilityRow:
    """One variant: the offer against its frontier with and without speculation.

    Costs are $ per million output tokens at the observed speed (inf: the speed is not
    reached). ``acceptance_for_*`` is the smallest α that reaches the speed, or the speed
    within the price: 0 when speculation is not needed, None when not even α = 1 suffices
    or no draft was given. ``outside_factor`` > 1 is how far outside the offer is (§D2).
    """

    variant: Variant
    fastest_tokens_per_s: float
    cost_usd_per_mtok: float
    speculative_fastest_tokens_per_s: float | None
    speculative_cost_usd_per_mtok: float | None
    acceptance_for_speed: float | None
    acceptance_for_price: float | None
    outside_factor: float
    feasible: bool
    verdict: str


@dataclass(frozen=True)
class FeasibilityResult:
    """Every variant's row, one verdict per GPU and the assumptions used."""

    observation: Observation
    model: str
    price_usd_per_mtok: float
    criterion: str
    draft: str | None
    acceptance: float
    context_tokens: (
        float  # the context the figures were computed at (the offer's, else the option's)
    )
    rows: tuple[FeasibilityRow, ...]
    summary: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def feasible(self) -> bool:
        """Whether any variant puts the offer on or inside its frontier (at ``acceptance``)."""
        return any(r.feasible for r in self.rows)

    def row(self, hardware: str, weight_bits: float, assumptions: str = "paper") -> FeasibilityRow:
        for r in self.rows:
            v = r.variant
            if (v.hardware, v.weight_bits, v.assumptions) == (hardware, weight_bits, assumptions):
                return r
        raise KeyError((hardware, weight_bits, assumptions))

    def records(self) -> list[dict]:
        """The table's rows as dicts (``to_dataframe``'s), for a table of many offers."""
        return [
            {
                **r.variant.columns(),
                "fastest_tokens_per_s": r.fastest_tokens_per_s,
                "usd_per_mtok": _reached(r.cost_usd_per_mtok),
                "spec_fastest_tokens_per_s": r.speculative_fastest_tokens_per_s,
                "spec_usd_per_mtok": _reached(r.speculative_cost_usd_per_mtok),
                "acceptance_for_speed": r.acceptance_for_speed,
                "acceptance_for_price": r.acceptance_for_price,
                "outside_factor": r.outside_factor,
                "feasible": r.feasible,
                "verdict": r.verdict,
            }
            for r in self.rows
        ]

    def to_dataframe(self) -> pd.DataFrame:
        return pd.DataFrame(self.records())


def _reached(cost: float | None) -> float:
    """A cost for the table: NaN (a blank cell) when the speed is not reached or not tried."""
    return cost if cost is not None and math.isfinite(cost) else math.nan


def feasibility(
    observed: Observation,
    options: InverseOptions | None = None,
    *,
    criterion: str = table.default("criterion", table.INFER),
    **settings,
) -> FeasibilityResult:
    """Which settings put an observed offer on or inside the model's frontier (§D2).

    Parameters
    ----------
    observed : Observation
        The offer (``ie.observation`` or a row of ``ie.load_observations``).
    options : InverseOptions, optional
        The settings tried (GPUs, presets, precisions, draft, grid...); ``settings`` given as
        keywords (``weight_bits="8"``, ``draft=None``) replace its fields.
    criterion : {"price", "speed"}
        ``"price"``: feasible when our cost at the offer's speed is within its price;
        ``"speed"``: when its speed is reached at all (the paper's reading, §4).

    Returns
    -------
    FeasibilityResult
        A row per variant, the verdicts and their summary.

    Examples
    --------
    >>> import inference_econ as ie
    >>> offer = ie.observation(100, 1.0, "Llama 3 70B")
    >>> ie.feasibility(offer, weight_bits="8", draft=None, grid_points=30).rows[0].feasible
    True
    """
    o = InverseOptions.of(options, **settings)
    criterion = table.option("criterion").check(criterion)
    r = o.read(observed)
    arch, price, speed, context = r.arch, r.price_usd_per_mtok, r.tokens_per_s, r.context_tokens
    rows = tuple(
        _row(variant, grid, speed, price, o.acceptance, criterion)
        for variant, grid in o.grids(arch, context)
    )
    draft_name = o.draft_name
    return FeasibilityResult(
        observation=observed,
        model=arch.name,
        price_usd_per_mtok=price,
        criterion=criterion,
        draft=draft_name,
        acceptance=o.acceptance,
        context_tokens=context,
        rows=rows,
        summary=_summary(rows, o.acceptance, draft_name is not None, criterion),
        notes=_notes(
            observed,
            arch.name,
            price,
            o.offer_price,
            context,
            draft_name,
            o.max_draft_tokens,
            rows,
            criterion,
            o.grid_points,
        ),
    )


def _row(variant, grid, speed, price, acceptance, criterion) -> FeasibilityRow:
    plain_fast = grid.fastest_tokens_per_s()
    plain_cost = grid.cost_at_speed(speed)
    spec = grid.speculative
    spec_fast = grid.fastest_tokens_per_s(acceptance) if spec else None
    spec_cost = grid.cost_at_speed(speed, acceptance) if spec else None
    for_speed = grid.minimum_acceptance(speed) if spec else None
    for_price = grid.minimum_acceptance(speed, price) if spec else None
    outside = grid.outside_factor(speed, price, acceptance if spec else None)

    def ok(cost):
        return cost is not None and cost < float("inf") and (criterion == "speed" or cost <= price)

    feasible = ok(plain_cost) or ok(spec_cost)
    need = for_price if criterion == "price" else for_speed
    return FeasibilityRow(
        variant=variant,
        fastest_tokens_per_s=plain_fast,
        cost_usd_per_mtok=plain_cost,
        speculative_fastest_tokens_per_s=spec_fast,
        speculative_cost_usd_per_mtok=spec_cost,
        acceptance_for_speed=for_speed,
        acceptance_for_price=for_price,
        outside_factor=outside,
        feasible=feasible,
        verdict=_verdict(
            speed,
            price,
            acceptance,
            criterion,
            spec,
            ok(plain_cost),
            plain_fast,
            plain_cost,
            need,
            grid,
        ),
    )


def usd(value: float) -> str:
    """Dollars for a sentence: $0.90, $14.11, $0.045."""
    return f"${value:.2f}" if value >= 0.1 else f"${value:.2g}"


def _gap(speed, price, fastest, cost, criterion) -> str:
    """Why a point misses: too slow, or (price criterion) too expensive at that speed."""
    if cost == float("inf"):
        return (
            f"the fastest is {fastest:.0f} tok/s, {speed / fastest - 1:.0%} short"
            if fastest
            else "nothing fits"
        )
    ratio = cost / price  # as many decimals as tell it from the price (1.00008x, not 1.00x)
    digits = next((d for d in range(2, 16) if float(f"{ratio:.{d}f}") > 1.0), 15)
    return f"costs {usd(cost)}, {ratio:.{digits}f}x the price"


def _verdict(
    speed, price, acceptance, criterion, spec, plain_ok, plain_fast, plain_cost, need, grid
) -> str:
    if plain_ok:
        if criterion == "speed":
            return f"feasible without speculation (fastest {plain_fast:.0f} tok/s)"
        return f"feasible without speculation: costs {usd(plain_cost)}, {plain_cost / price:.0%} of the price"
    plain = _gap(speed, price, plain_fast, plain_cost, criterion)
    if not spec:
        return f"infeasible without speculation ({plain}); no draft model tried"
    if need is None:
        worst = _gap(
            speed, price, grid.fastest_tokens_per_s(1.0), grid.cost_at_speed(speed, 1.0), criterion
        )
        return f"infeasible at any acceptance: even at α = 1 {worst}"
    if need <= acceptance:
        return f"needs speculation with α ≥ {need:.2f} (met at α = {acceptance:.2f})"
    at = _gap(
        speed,
        price,
        grid.fastest_tokens_per_s(acceptance),
        grid.cost_at_speed(speed, acceptance),
        criterion,
    )
    return f"needs speculation with α ≥ {need:.2f} (at α = {acceptance:.2f} {at})"


def _summary(rows, acceptance, speculation, criterion) -> tuple[str, ...]:
    """One line per GPU: feasible where, or infeasible at any setting tried."""
    lines = []
    for gpu in dict.fromkeys(r.variant.hardware for r in rows):
        mine = [r for r in rows if r.variant.hardware == gpu]
        ok = [r for r in mine if r.feasible]
        best = min(mine, key=lambda r: r.outside_factor)
        tried = (
            f"{'/'.join(f'{b:g}' for b in dict.fromkeys(r.variant.weight_bits for r in mine))}-bit weights, "
            f"{', '.join(dict.fromkeys(r.variant.assumptions for r in mine))} preset"
            + (", speculation up to α = 1" if speculation else ", no speculation")
        )
        reachable = [r for r in mine if _need(r, criterion) is not None]
        if ok and criterion == "speed":
            top = max(
                ok, key=lambda r: r.speculative_fastest_tokens_per_s or r.fastest_tokens_per_s
            )
            lines.append(
                f"{gpu}: feasible in {len(ok)} of {len(mine)} {plural(len(mine), 'setting')} at α = {acceptance:.2f}; "
                f"fastest: {top.variant.weight_bits:g}-bit, {top.variant.assumptions} "
                f"({top.speculative_fastest_tokens_per_s or top.fastest_tokens_per_s:.0f} tok/s)"
            )
        elif ok:
            lines.append(
                f"{gpu}: feasible in {len(ok)} of {len(mine)} {plural(len(mine), 'setting')} at α = {acceptance:.2f}; "
                f"most room: {best.variant.weight_bits:g}-bit, {best.variant.assumptions} "
                f"(outside factor {best.outside_factor:.2f})"
            )
        elif reachable:
            easiest = min(reachable, key=lambda r: _need(r, criterion))
            lines.append(
                f"{gpu}: infeasible at α = {acceptance:.2f}; the lowest acceptance that works is "
                f"α ≥ {_need(easiest, criterion):.2f} ({easiest.variant.weight_bits:g}-bit, {easiest.variant.assumptions})"
            )
        else:
            lines.append(
                f"{gpu}: infeasible at any setting tried ({tried}); closest"
                + (f" at α = {acceptance:.2f}" if speculation else "")
                + f": {best.variant.weight_bits:g}-bit, {best.variant.assumptions}, outside by "
                f"{best.outside_factor - 1:.0%}"
            )
    return tuple(lines)


def _need(row: FeasibilityRow, criterion: str):
    """The smallest acceptance that satisfies the criterion (0: no speculation needed)."""
    return row.acceptance_for_price if criterion == "price" else row.acceptance_for_speed


def _notes(observed, model, price, basis, context, draft, max_draft, rows, criterion, grid_points):
    gpus = {r.variant.hardware for r in rows}
    return (
        f"offer: {observed.label}, {observed.tokens_per_s:g} tok/s per request at {usd(price)} per "
        f"million tokens ({basis} price); model analysed: {model}",
        f"feasible means: {'our cost at that speed is within the price' if criterion == 'price' else 'the speed is reached at any cost'}; "
        "outside factor: the smallest f such that a configuration is at least 1/f as fast and at most f times as expensive (docs/model.md §D2); "
        "acceptance_for_speed/price: the smallest α that reaches the speed / the speed within the price (0: no speculation needed; empty: not even α = 1); "
        "usd_per_mtok, spec_usd_per_mtok: our cost at the offer's speed (empty: that setting does not reach the speed)",
        "cost: GPU rental at each GPU spec's price per hour, no markup, decode only (prefill not charged), "
        f"context {context:g} tokens, the paper's continuous grid with {grid_points} points per axis",
        (
            f"speculation: draft {draft}, up to {max_draft} draft {plural(max_draft, 'token')}, i.i.d. acceptance (§A6); "
            "required α found by bisection to 0.001"
            if draft
            else "no speculation tried"
        )
        + f"; GPUs: {', '.join(sorted(gpus))}",
    )


def frontiers(observed: Observation, options: InverseOptions | None = None, **settings) -> dict:
    """The frontier of every variant, without speculation and (with a draft) at its
    acceptance, labelled for a figure: what ``feasibility`` compares the offer with.

    Parameters
    ----------
    observed : Observation
        The offer whose model (and context) the frontiers are of.
    options : InverseOptions, optional
        The settings tried; keywords replace its fields, as in ``feasibility``.

    Returns
    -------
    dict
        ``{label: Frontier}``, one per variant and speculation mode.
    """

    from ...optimise.method import Method
    from ...optimise.optimiser import frontier
    from .variants import setting_for

    o = InverseOptions.of(options, **settings)
    arch = resolve_model(observed, o.model)
    context = context_of(observed, o.context_tokens)
    method = Method(grid_points=o.grid_points)
    out = {}
    for variant in o.variants():
        plain = setting_for(arch, variant, None, o.max_draft_tokens, context)
        out[f"{variant.label}, no speculation"] = frontier(plain, method)
        if o.draft is not None:
            spec = setting_for(arch, variant, o.draft, o.max_draft_tokens, context)
            spec = spec.replace(spec=spec.spec.with_acceptance(o.acceptance))
            out[f"{variant.label}, α = {o.acceptance:.2f}"] = frontier(spec, method)
    return out
