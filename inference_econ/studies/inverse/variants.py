"""The settings an inverse analysis tries: GPUs x assumption presets x weight precisions.

A provider does not say how it serves a model, so each analysis tries every combination the
user lists and reports per combination (docs/model.md §D1). Speculative decoding is not part
of a variant: every variant is evaluated with and without it (``grid.SpeedCostGrid``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import product

from ... import settings as table
from ...errors import SpecError, did_you_mean
from ...model.assumptions import PRESETS
from ...serving.setting import Setting, make_setting
from ...serving.speculative import SpecDecoding, check_draft
from ...specs.architecture import Architecture, load_model
from ...specs.hardware import load_hardware
from ..observations import as_observation


@dataclass(frozen=True)
class Variant:
    """One way the provider might serve the model: a GPU, a preset and a weight precision."""

    hardware: str
    assumptions: str
    weight_bits: float

    @property
    def label(self) -> str:
        return f"{self.hardware}, {self.weight_bits:g}-bit, {self.assumptions}"

    @property
    def bits(self) -> int | float:
        """The weight precision for a table (16, not 16.0)."""
        return int(self.weight_bits) if float(self.weight_bits).is_integer() else self.weight_bits


def preset_names(value: str | Iterable[str], field: str = "assumptions") -> tuple[str, ...]:
    """Preset names from a comma-separated text or a list, each checked."""
    items = value.split(",") if isinstance(value, str) else list(value)
    names = tuple(str(x).strip() for x in items if str(x).strip())
    if not names:
        raise SpecError("argument", field, "is empty", f"give presets such as {', '.join(PRESETS)}")
    for name in names:
        if name not in PRESETS:
            hint = did_you_mean(name, PRESETS)
            raise SpecError(
                "argument",
                field,
                f"unknown preset {name!r}",
                f"{hint + ' ' if hint else ''}choose from {', '.join(PRESETS)}",
            )
    return tuple(dict.fromkeys(names))


def hardware_names(value: str | Iterable[str]) -> tuple[str, ...]:
    """GPU names (each resolved, so a typo fails before any computation)."""
    items = [value] if isinstance(value, str) else list(value)
    if not items:
        raise SpecError(
            "argument", "hardware", "no GPU given", "give at least one, e.g. H100-paper"
        )
    return tuple(dict.fromkeys(load_hardware(h).name for h in items))


def variants(hardware, assumptions="paper", weight_bits="16,8,4") -> tuple[Variant, ...]:
    """Every combination of the GPUs, presets and precisions given (validated)."""
    bits = table.option("candidate_weight_bits").check(weight_bits, field="weight_bits")
    return tuple(
        Variant(h, a, float(b))
        for h, a, b in product(
            hardware_names(hardware), preset_names(assumptions), dict.fromkeys(bits)
        )
    )


def setting_for(
    arch: Architecture,
    variant: Variant,
    draft=None,
    max_draft_tokens: int = 5,
    context_tokens: float = 0.0,
) -> Setting:
    """The serving setting of a variant, with a draft model (a name or an ``Architecture``)
    for speculation if one is given; the acceptance rate is chosen later (``grid``)."""
    setting = make_setting(
        arch,
        variant.hardware,
        weight_bits=variant.weight_bits,
        context_tokens=context_tokens,
        assumptions=variant.assumptions,
    )
    if draft is None:
        return setting
    draft = load_model(draft)
    check_draft(
        setting.model,
        draft,
        " (the draft applies to every offer: turn speculation off with --no-speculation, "
        "speculation=False, to price this one without it)",
    )
    spec = SpecDecoding(draft, 1.0, max_draft_tokens)
    return setting.replace(spec=spec)


@dataclass(frozen=True)
class Reading:
    """What every analysis reads off one offer: the architecture analysed, the price on the
    chosen basis, the speed per request and the context."""

    arch: Architecture
    price_usd_per_mtok: float
    tokens_per_s: float
    context_tokens: float


def read_offer(
    observed, model=None, offer_price="output", input_tokens_per_output=3.0, context_tokens=None
) -> Reading:
    """The ``Reading`` of an offer (``model`` overrides the observation's own)."""
    observed = as_observation(observed)
    return Reading(
        resolve_model(observed, model),
        observed.price(offer_price, input_tokens_per_output),
        observed.tokens_per_s,
        context_of(observed, context_tokens),
    )


def speculation_modes(acceptance: float, speculative: bool) -> list:
    """(acceptance or None, label) of each way a variant is priced: without speculation,
    and at ``acceptance`` when a draft is tried."""
    return [(None, "none")] + ([(acceptance, f"α = {acceptance:.2f}")] if speculative else [])


def resolve_model(observed, model=None) -> Architecture:
    """The architecture to analyse: ``model`` if given, else the observation's own."""
    return observed.architecture() if model is None else load_model(model)


def context_of(observed, context_tokens=None) -> float:
    """The observation's context if it states one, else ``context_tokens`` (default 0)."""
    if observed.context_tokens is not None:
        return observed.context_tokens
    return table.option("context_tokens").check(context_tokens)


def variant_grids(
    arch: Architecture,
    chosen: tuple[Variant, ...],
    draft=None,
    max_draft_tokens: int = 5,
    context_tokens: float = 0.0,
    grid_points: int = 100,
):
    """``(variant, SpeedCostGrid)`` for every variant (with the draft's passes if given)."""
    from .grid import speed_cost_grid

    grid_points = table.option("grid_points").check(grid_points)
    max_draft_tokens = table.option("max_draft_tokens").check(max_draft_tokens)
    if draft is not None and max_draft_tokens == 1:  # as make_setting refuses it
        raise SpecError(
            "argument",
            "max_draft_tokens",
            "is 1, which means no speculation (a cycle would yield only the target's token)",
            "drop the draft (--no-speculation), or raise max_draft_tokens (--max-draft) to 2",
        )
    return [
        (
            v,
            speed_cost_grid(
                setting_for(arch, v, draft, max_draft_tokens, context_tokens), grid_points
            ),
        )
        for v in chosen
    ]
