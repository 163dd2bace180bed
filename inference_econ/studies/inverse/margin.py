"""Implied margin: an offer's price against our cost at its speed, as a markup range.

Our cost is the GPU rental a frontier point needs (no markup, decode only). The markup of a
variant is price / cost at the observed speed; across the variants tried (GPUs, presets,
precisions, with and without speculation) the markups form a range: the provider's gross
margin over GPU rental if it serves the model that way (docs/model.md §D3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ...errors import plural
from ..observations import Observation
from .feasibility import usd
from .variants import InverseOptions, Variant, speculation_modes


@dataclass(frozen=True)
class MarginRow:
    """One way of serving: our cost at the observed speed and the markup it implies."""

    variant: Variant
    speculation: str
    gpu_usd_per_hour: float
    fastest_tokens_per_s: float
    cost_usd_per_mtok: float
    markup: float | None  # price / cost; None when the speed is not reached

    @property
    def reachable(self) -> bool:
        return self.markup is not None


@dataclass(frozen=True)
class MarginResult:
    """Markups of every variant, their range and the assumptions used."""

    observation: Observation
    model: str
    price_usd_per_mtok: float
    context_tokens: (
        float  # the context the figures were computed at (the offer's, else the option's)
    )
    rows: tuple[MarginRow, ...]
    notes: tuple[str, ...]

    @property
    def markup_range(self) -> tuple[float, float] | None:
        """(lowest, highest) markup over the variants that reach the speed (None if none)."""
        found = [r.markup for r in self.rows if r.reachable]
        return (min(found), max(found)) if found else None

    @property
    def summary(self) -> str:
        reached = [r for r in self.rows if r.reachable]
        missed = len(self.rows) - len(reached)
        tail = (
            f"; {missed} of {len(self.rows)} {plural(len(self.rows), 'setting')} "
            f"{'does' if missed == 1 else 'do'} not reach the speed (no cost or markup: blank)"
            if missed
            else ""
        )
        if not reached:
            return f"no setting tried reaches {self.observation.tokens_per_s:g} tok/s: no markup can be inferred"
        lo, hi = self.markup_range
        cheapest = max(reached, key=lambda r: r.markup)
        dearest = min(reached, key=lambda r: r.markup)

        def how(r):
            spec = (
                "no speculation" if r.speculation == "none" else f"speculation at {r.speculation}"
            )
            return f"{r.variant.label}, {spec}"

        span = f"{lo:.2f}x" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}x–{hi:.2f}x"
        if len(reached) == 1:
            return (
                f"markup over GPU rental {span} in the one setting that reaches "
                f"{self.observation.tokens_per_s:g} tok/s ({how(cheapest)}){tail}"
            )
        return (
            f"markup over GPU rental {span} across {len(reached)} settings that reach "
            f"{self.observation.tokens_per_s:g} tok/s (highest: {how(cheapest)}; lowest: "
            f"{how(dearest)}){tail}"
        )

    def records(self) -> list[dict]:
        """The table's rows as dicts (``to_dataframe``'s), for a table of many offers."""
        return [
            {
                **r.variant.columns(),
                "speculation": r.speculation,
                "gpu_usd_per_hour": r.gpu_usd_per_hour,
                "fastest_tokens_per_s": r.fastest_tokens_per_s,
                "usd_per_mtok": r.cost_usd_per_mtok if r.reachable else math.nan,
                "price_usd_per_mtok": self.price_usd_per_mtok,
                "markup": r.markup,
            }
            for r in self.rows
        ]

    def to_dataframe(self) -> pd.DataFrame:
        return pd.DataFrame(self.records())


def margin(
    observed: Observation, options: InverseOptions | None = None, **settings
) -> MarginResult:
    """The provider's price against our cost at the observed speed, for every variant with
    and without speculation (``draft=None``: without only), as markups (§D3).

    Parameters
    ----------
    observed : Observation
        The offer.
    options : InverseOptions, optional
        The settings tried; keywords (``weight_bits="8"``, ``assumptions="paper,refined"``)
        replace its fields.

    Returns
    -------
    MarginResult
        A row per variant and speculation mode: our cost and the markup over it.

    Examples
    --------
    >>> import inference_econ as ie
    >>> offer = ie.observation(100, 1.0, "Llama 3 70B")
    >>> ie.margin(offer, weight_bits="8", draft=None, grid_points=30).rows[0].markup > 1
    True
    """
    o = InverseOptions.of(options, **settings)
    acceptance, max_draft_tokens = o.acceptance, o.max_draft_tokens
    offer_price, grid_points = o.offer_price, o.grid_points
    r = o.read(observed)
    arch, price, speed, context = r.arch, r.price_usd_per_mtok, r.tokens_per_s, r.context_tokens
    rows = []
    for variant, grid in o.grids(arch, context):
        modes = speculation_modes(acceptance, grid.speculative)
        for alpha, label in modes:
            cost = grid.cost_at_speed(speed, alpha)
            rows.append(
                MarginRow(
                    variant=variant,
                    speculation=label,
                    gpu_usd_per_hour=grid.setting.gpu.price_usd_per_hour,
                    fastest_tokens_per_s=grid.fastest_tokens_per_s(alpha),
                    cost_usd_per_mtok=cost,
                    markup=price / cost if math.isfinite(cost) else None,
                )
            )
    draft_name = o.draft_name
    notes = (
        f"offer: {observed.label}, {speed:g} tok/s per request at {usd(price)} per million tokens "
        f"({offer_price} price); model analysed: {arch.name}",
        "markup = price / our cost at the observed speed; our cost is GPU rental at each GPU "
        "spec's price per hour (the paper's prices are long-term rental rates less a third for "
        "the cloud's own markup), decode only (prefill not charged), context "
        f"{context:g} tokens, {grid_points} grid points per axis",
        (
            f"speculation: draft {draft_name}, acceptance {acceptance:.2f}, up to {max_draft_tokens} draft {plural(max_draft_tokens, 'token')}"
            if draft_name
            else "no speculation tried"
        ),
    )
    return MarginResult(observed, arch.name, price, context, tuple(rows), notes)
