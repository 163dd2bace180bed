"""Implied model size: which sizes of an architecture family put an offer on the frontier.

A closed model's architecture is unknown, but its offer (speed, price) bounds it: scale a
family's dimensions until our cost at the observed speed equals the price divided by an assumed
markup (docs/model.md §D5). The family is a template architecture (dense Llama-like, or a
mixture of experts with a given number of experts and active experts); a size is reached by
growing depth as (parameters)^a and widths (model width, feed-forward width, query heads) with
the rest, keeping the head dimension and the number of KV heads fixed, as the Llama 3 family
does. The range of sizes follows from the settings left free: GPU, preset, precision,
speculation.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import pandas as pd

from ... import settings as table
from ...errors import SpecError
from ...model.assumptions import preset
from ...model.workload import compile_workload
from ...specs.architecture import Architecture, load_model
from ...specs.schema import check_number
from ..observations import Observation, as_observation
from .feasibility import usd
from .variants import InverseOptions, Variant, context_of, speculation_modes

#: The architecture family scaled unless told (the settings table's default).
FAMILY = table.default("family")

#: Sizes searched, in parameters.
SIZE_BOUNDS = (1e8, 1e15)
#: The root in ln(parameters) is found to this tolerance (0.3 %).
LOG_SIZE_TOLERANCE = 3e-3


def _template(family, experts, active_experts) -> Architecture:
    """The family's template, checked to be scalable, made a mixture of experts if asked."""
    arch = load_model(family)
    where = f"family {arch.name!r}"
    if len(arch.layer_groups) != 1:
        raise SpecError(
            "argument",
            "family",
            f"{where} has {len(arch.layer_groups)} layer groups",
            "size inference scales single-group models: use e.g. 'Llama 3 70B' with --experts",
        )
    if arch.attention.kind == "mla":
        raise SpecError(
            "argument",
            "family",
            f"{where} uses MLA, whose latent ranks have no agreed scaling rule",
            "use a GQA family such as 'Llama 3 70B' or 'Mixtral 8x22B'",
        )
    if experts is None and active_experts is None:
        return arch
    ffn = arch.layer_groups[0].ffn
    experts = table.option("experts").check(experts if experts is not None else ffn.experts)
    active = table.option("active_experts").check(
        active_experts if active_experts is not None else min(ffn.active_experts, experts)
    )
    if active > experts:
        raise SpecError(
            "argument",
            "active_experts",
            f"{active} active of {experts} experts",
            "give at most as many active experts as experts",
        )
    group = dataclasses.replace(
        arch.layer_groups[0],
        ffn=dataclasses.replace(ffn, experts=experts, active_experts=active),
    )
    label = f"{arch.name}, {experts} experts ({active} active)" if experts > 1 else arch.name
    return dataclasses.replace(arch, name=label, layer_groups=(group,))


def _shape(template: Architecture, layers: int, width: float) -> Architecture:
    """The template with ``layers`` layers and every width multiplied by ``width``."""
    att, group = template.attention, template.layer_groups[0]
    heads = att.query_heads * width
    ffn = group.ffn
    ffn = dataclasses.replace(
        ffn, d_ff=ffn.d_ff * width, shared_d_ff=ffn.shared_d_ff * width if ffn.shared_d_ff else 0
    )
    return dataclasses.replace(
        template,
        d_model=template.d_model * width,
        attention=dataclasses.replace(
            att, query_heads=heads, kv_heads=max(1, min(att.kv_heads, math.floor(heads)))
        ),
        layer_groups=(dataclasses.replace(group, layers=layers, ffn=ffn),),
        published_total_params=None,
        published_active_params=None,
        aliases=(),
    )


def scaled_architecture(
    family: str | Architecture = FAMILY,
    total_params: float = 70e9,
    depth_exponent: float = table.default("depth_exponent"),
    experts: int | None = None,
    active_experts: int | None = None,
    assumptions: str = table.default("assumptions"),
) -> Architecture:
    """The family's template scaled to ``total_params`` parameters (§D5).

    Layers: round(L0·(P/P0)^a) (at least 1); then one width factor w multiplies the model
    width, the feed-forward width and the query heads, chosen so the parameter count (§A1,
    under ``assumptions``) is exactly ``total_params``; head dimension, KV heads (at most the
    query heads), vocabulary and experts stay.
    """
    from scipy.optimize import brentq

    total_params = float(
        check_number(total_params, "argument", "total_params", minimum=0, exclusive_minimum=True)
    )
    a = table.option("depth_exponent").check(depth_exponent)
    base = preset(assumptions)
    template = _template(family, experts, active_experts)

    def params(arch):
        return compile_workload(arch, base).total_params

    p0 = params(template)
    layers = max(1, round(template.layers * (total_params / p0) ** a))
    # the narrowest member keeps at least one query head
    narrowest = 1.0 / template.attention.query_heads
    if params(_shape(template, layers, narrowest)) >= total_params:
        raise SpecError(
            "argument",
            "total_params",
            f"{total_params:.3g} is below what {layers} layers of the family hold",
            "give a larger size",
        )
    hi = 1.0
    while params(_shape(template, layers, hi)) < total_params:
        hi *= 2.0
    width = brentq(
        lambda w: params(_shape(template, layers, w)) - total_params, narrowest, hi, xtol=1e-9
    )
    arch = _shape(template, layers, width)
    return dataclasses.replace(
        arch,
        name=f"{template.name} scaled to {billions(total_params)}",
        description=f"{template.name} scaled by width x{width:.3f} and {layers} layers (§D5)",
        source=f"scaled from {template.source_file or template.name}",
    )


def billions(params: float) -> str:
    """A parameter count for a sentence: 8.03B, 211B, 1,800B."""
    b = params / 1e9
    return f"{b:.3g}B" if b < 100 else f"{b:,.0f}B"


@dataclass(frozen=True)
class SizeRow:
    """The size that puts the offer on one variant's frontier (None when none does)."""

    variant: Variant
    speculation: str
    total_params: float | None
    active_params: float | None
    architecture: Architecture | None
    verdict: str


@dataclass(frozen=True)
class SizeResult:
    """The sizes of every variant, their range and the assumptions used."""

    observation: Observation
    family: str
    price_usd_per_mtok: float
    markup: float
    depth_exponent: float
    context_tokens: (
        float  # the context the figures were computed at (the offer's, else the option's)
    )
    rows: tuple[SizeRow, ...]
    notes: tuple[str, ...]

    def _range(self, attr):
        found = [getattr(r, attr) for r in self.rows if getattr(r, attr) is not None]
        return (min(found), max(found)) if found else None

    @property
    def total_range(self) -> tuple[float, float] | None:
        return self._range("total_params")

    @property
    def active_range(self) -> tuple[float, float] | None:
        return self._range("active_params")

    @property
    def summary(self) -> str:
        total, active = self.total_range, self.active_range
        if total is None:
            return f"no size of {self.family} between {SIZE_BOUNDS[0]:.0e} and {SIZE_BOUNDS[1]:.0e} parameters fits this offer in any setting tried"
        solved = sum(r.total_params is not None for r in self.rows)
        text = f"{billions(total[0])}–{billions(total[1])} parameters in total"
        if active != total:
            text += f", {billions(active[0])}–{billions(active[1])} active"
        return (
            f"{self.observation.label}: {text} ({self.family}; {solved} of {len(self.rows)} "
            f"settings; price = {self.markup:g} x our cost)"
        )

    def records(self) -> list[dict]:
        """The table's rows as dicts (``to_dataframe``'s), for a table of many offers."""
        rows = []
        for r in self.rows:
            arch = r.architecture
            rows.append(
                {
                    **r.variant.columns(),
                    "speculation": r.speculation,
                    "total_params": r.total_params,
                    "active_params": r.active_params,
                    "layers": arch.layers if arch else None,
                    "d_model": arch.d_model if arch else None,
                    "d_ff": arch.layer_groups[0].ffn.d_ff if arch else None,
                    "query_heads": arch.attention.query_heads if arch else None,
                    "verdict": r.verdict,
                }
            )
        return rows

    def to_dataframe(self) -> pd.DataFrame:
        return pd.DataFrame(self.records())


def implied_size(
    observed: Observation,
    options: InverseOptions | None = None,
    *,
    family: str | Architecture = FAMILY,
    experts: int | None = None,
    active_experts: int | None = None,
    depth_exponent: float = table.default("depth_exponent"),
    markup: float = table.default("markup"),
    **settings,
) -> SizeResult:
    """The total and active parameter counts of a family that put an offer on the frontier,
    for every variant with and without speculation (§D5).

    Parameters
    ----------
    observed : Observation
        The offer (typically a closed model's: its name need not be a model file).
    options : InverseOptions, optional
        The settings tried; keywords (``weight_bits="8"``, ``draft=None``) replace its fields.
    family : str or Architecture
        The architecture template scaled (default Llama 3 70B).
    experts, active_experts : int, optional
        Make the template a mixture of experts.
    depth_exponent : float
        Layers grow as parameters to this power; widths take the rest.
    markup : float
        The assumed price / cost (1: sold at our cost, so the sizes are upper bounds).

    Returns
    -------
    SizeResult
        A row per variant and speculation mode: the implied size and its shape.

    Examples
    --------
    >>> import inference_econ as ie
    >>> offer = ie.observation(110, 8, "GPT-4.1")
    >>> r = ie.implied_size(offer, weight_bits="8", draft=None, grid_points=30)
    >>> r.rows[0].total_params > 1e9
    True
    """
    opts = InverseOptions.of(options, **settings)
    draft, acceptance, context_tokens = opts.draft, opts.acceptance, opts.context_tokens
    offer_price, input_tokens_per_output = opts.offer_price, opts.input_tokens_per_output
    grid_points = opts.grid_points
    observed = as_observation(observed)
    markup = table.option("markup").check(markup)
    template = _template(family, experts, active_experts)
    target_cost = observed.price(offer_price, input_tokens_per_output) / markup
    speed = observed.tokens_per_s
    context = context_of(observed, context_tokens)
    modes = speculation_modes(acceptance, bool(draft))
    rows = []
    for variant in opts.variants():
        for alpha, label in modes:
            gap = _CostGap(
                opts, template, depth_exponent, context, speed, target_cost, variant, alpha
            )
            rows.append(_solve(variant, label, gap, template, depth_exponent))
    price = observed.price(offer_price, input_tokens_per_output)
    notes = _notes(
        observed,
        template,
        price,
        offer_price,
        markup,
        depth_exponent,
        draft,
        acceptance,
        context,
        grid_points,
    )
    return SizeResult(
        observed, template.name, price, markup, depth_exponent, context, tuple(rows), notes
    )


@dataclass(frozen=True)
class _CostGap:
    """ln(our cost / the offer's target cost) at the offer's speed, as a function of ln(total
    parameters) of the scaled template in one variant and speculation mode (``alpha``: the
    draft's acceptance; None: no draft): the implied size is its root."""

    opts: InverseOptions
    template: Architecture
    depth_exponent: float
    context: float
    speed: float
    target_cost: float
    variant: Variant
    alpha: float | None

    def __call__(self, log_p: float) -> float:
        arch = scaled_architecture(
            self.template,
            math.exp(log_p),
            self.depth_exponent,
            None,
            None,
            self.variant.assumptions,
        )
        use_draft = self.opts.draft if self.alpha is not None else None
        ((_, grid),) = self.opts.grids(arch, self.context, (self.variant,), use_draft)
        cost = grid.cost_at_speed(self.speed, self.alpha)
        if not math.isfinite(cost):  # too slow: larger than any finite gap, still ordered
            return 50.0 + math.log(self.speed / max(grid.fastest_tokens_per_s(self.alpha), 1e-9))
        return math.log(cost / self.target_cost)


def _solve(variant, label, log_gap, template, depth_exponent) -> SizeRow:
    """The size where our cost at the observed speed meets the price / markup: bracketed from
    the template's own size outwards (steps doubling in ln size), then Brent's method."""
    from scipy.optimize import brentq

    gap = functools.lru_cache(maxsize=None)(log_gap)  # brentq re-evaluates the bracket's ends
    lo_limit, hi_limit = (math.log(b) for b in SIZE_BOUNDS)
    base = preset(variant.assumptions)
    x0 = min(max(math.log(compile_workload(template, base).total_params), lo_limit), hi_limit)
    g0 = gap(x0)
    step = -math.log(4.0) if g0 > 0 else math.log(4.0)
    while True:
        x1 = min(max(x0 + step, lo_limit), hi_limit)
        g1 = gap(x1)
        if (g0 > 0) != (g1 > 0):
            break
        if x1 in (lo_limit, hi_limit):
            why = (
                f"even {SIZE_BOUNDS[0]:.0e} parameters cost more at this speed"
                if g1 > 0
                else f"any size up to {SIZE_BOUNDS[1]:.0e} parameters fits"
            )
            return SizeRow(variant, label, None, None, None, why)
        x0, g0, step = x1, g1, 2 * step
    log_p = brentq(gap, min(x0, x1), max(x0, x1), xtol=LOG_SIZE_TOLERANCE)
    arch = scaled_architecture(
        template, math.exp(log_p), depth_exponent, None, None, variant.assumptions
    )
    work = compile_workload(arch, base)
    return SizeRow(variant, label, work.total_params, work.active_params, arch, "on the frontier")


def _notes(observed, template, price, basis, markup, a, draft, acceptance, context, grid_points):
    return (
        f"offer: {observed.label}, {observed.tokens_per_s:g} tok/s per request at {usd(price)} per "
        f"million tokens ({basis} price); assumed markup {markup:g}: our cost at that speed is "
        f"{usd(price / markup)} (a markup above 1 means a smaller model)",
        f"family: {template.name}; layers grow as (parameters)^{a:.3g} (rounded), the model width, "
        "feed-forward width and query heads by one common factor for the rest; head dimension, "
        "KV heads, vocabulary and experts stay (docs/model.md §D5); dimensions are real numbers, "
        "not rounded to hardware-friendly sizes",
        (
            f"speculation: draft {load_model(draft).name} at α = {acceptance:.2f}"
            if draft
            else "no speculation tried"
        )
        + f"; cost: GPU rental, decode only, context {context:g} tokens, {grid_points} grid points per axis",
    )
