"""The settings an inverse analysis tries: GPUs x assumption presets x weight precisions.

A provider does not say how it serves a model, so each analysis tries every combination the
user lists and reports per combination (docs/model.md §D1). Speculative decoding is not part
of a variant: every variant is evaluated with and without it (``grid.SpeedCostGrid``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import product
from typing import Any

from ... import settings as table
from ...errors import SpecError, did_you_mean
from ...model.assumptions import PRESETS
from ...serving.setting import Setting, make_setting
from ...serving.speculative import SpecDecoding, check_draft
from ...specs.architecture import Architecture, load_model
from ...specs.hardware import GPU, load_hardware
from ..observations import as_observation


@dataclass(frozen=True)
class Variant:
    """One way the provider might serve the model: a GPU, a preset and a weight precision.
    ``gpu`` is the spec itself where it was given as a file or a spec (priced as given, not
    looked up again by its name); None reads ``hardware`` as a name."""

    hardware: str
    assumptions: str
    weight_bits: float
    gpu: Any = dataclasses.field(default=None, repr=False)

    @property
    def label(self) -> str:
        return f"{self.hardware}, {self.weight_bits:g}-bit, {self.assumptions}"

    @property
    def bits(self) -> int | float:
        """The weight precision for a table (16, not 16.0)."""
        return int(self.weight_bits) if float(self.weight_bits).is_integer() else self.weight_bits

    def columns(self) -> dict:
        """The variant as the first columns of an analysis's table."""
        return {
            "hardware": self.hardware,
            "assumptions": self.assumptions,
            "weight_bits": self.bits,
        }


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


def hardware_specs(value) -> tuple:
    """The GPU specs given (names, files or specs; each resolved, so a typo fails before any
    computation), each once."""
    items = [value] if isinstance(value, (str, os.PathLike, GPU)) else list(value)
    if not items:
        raise SpecError(
            "argument", "hardware", "no GPU given", "give at least one, e.g. H100-paper"
        )
    return tuple(dict.fromkeys(load_hardware(h) for h in items))


def variants(
    hardware,
    assumptions: str | Iterable[str] = table.default("candidate_assumptions"),
    weight_bits: str | Iterable[float] = table.default("candidate_weight_bits"),
) -> tuple[Variant, ...]:
    """Every combination of the GPUs, presets and precisions given (validated)."""
    bits = table.option("candidate_weight_bits").check(weight_bits, field="weight_bits")
    return tuple(
        Variant(g.name, a, float(b), g)
        for g, a, b in product(
            hardware_specs(hardware), preset_names(assumptions), dict.fromkeys(bits)
        )
    )


#: What a warning about the draft adds: the draft is every offer's.
EVERY_OFFER = (
    " (the draft applies to every offer: turn speculation off with --no-speculation, "
    "speculation=False, to price this one without it)"
)


def setting_for(
    arch: Architecture,
    variant: Variant,
    draft=None,
    max_draft_tokens: int = table.default("max_draft_tokens"),
    context_tokens: float = table.default("context_tokens"),
) -> Setting:
    """The serving setting of a variant, with a draft model (a name or an ``Architecture``)
    for speculation if one is given; the acceptance rate is chosen later (``grid``)."""
    setting = make_setting(
        arch,
        variant.hardware if variant.gpu is None else variant.gpu,
        weight_bits=variant.weight_bits,
        context_tokens=context_tokens,
        assumptions=variant.assumptions,
    )
    if draft is None:
        return setting
    draft = load_model(draft)
    check_draft(setting.model, draft, EVERY_OFFER)
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
    observed,
    model=None,
    offer_price: str = table.default("offer_price"),
    input_tokens_per_output: float = table.default("input_tokens_per_output"),
    context_tokens=None,
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
    """The observation's context if it states one, else ``context_tokens`` (by default the
    table's)."""
    if observed.context_tokens is not None:
        return observed.context_tokens
    return table.option("context_tokens").check(context_tokens)


#: The grids of the offers analysed together (``shared_grids``); None outside it.
_SHARED: ContextVar[dict | None] = ContextVar("inverse_shared_grids", default=None)


@contextmanager
def shared_grids() -> Iterator[None]:
    """Within it, offers of one model, context and settings share their variants' grids: an
    observations file of thousands of offers builds each setting once, not once an offer (the
    first offer reads the spec files, so the running command still records them)."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def variant_grids(
    arch: Architecture,
    chosen: tuple[Variant, ...],
    draft=None,
    max_draft_tokens: int = table.default("max_draft_tokens"),
    context_tokens: float = table.default("context_tokens"),
    grid_points: int = table.default("grid_points", table.INFER),
):
    """``(variant, SpeedCostGrid)`` for every variant (with the draft's passes if given)."""
    from .grid import GRIDS_KEPT, speed_cost_grid

    grid_points = table.option("grid_points").check(grid_points)
    max_draft_tokens = table.option("max_draft_tokens").check(max_draft_tokens)
    if draft is not None and max_draft_tokens == 1:  # as make_setting refuses it
        raise SpecError(
            "argument",
            "max_draft_tokens",
            "is 1, which means no speculation (a cycle would yield only the target's token)",
            "drop the draft (--no-speculation), or raise max_draft_tokens (--max-draft) to 2",
        )
    shared = _SHARED.get()
    key = (arch, tuple(chosen), draft, max_draft_tokens, float(context_tokens), grid_points)
    try:
        if shared is not None and key in shared:
            for _, grid in shared[key]:  # warned as the offer's own settings would be
                if grid.setting.spec is not None:
                    check_draft(grid.setting.model, grid.setting.spec.draft, EVERY_OFFER)
            return list(shared[key])
    except TypeError:  # a draft given as something unhashable is built afresh
        shared = None
    grids = [
        (
            v,
            speed_cost_grid(
                setting_for(arch, v, draft, max_draft_tokens, context_tokens), grid_points
            ),
        )
        for v in chosen
    ]
    if shared is not None:  # as many grids as a process keeps itself: the oldest go first
        shared[key] = tuple(grids)
        while sum(map(len, shared.values())) > max(GRIDS_KEPT, len(grids)):
            shared.pop(next(iter(shared)))
    return grids


#: The GPU the inverse analyses try unless told: the paper's H100 (§4).
PAPER_HARDWARE = ("H100-paper",)


@dataclass(frozen=True)
class InverseOptions:
    """The settings every inverse analysis tries (docs/model.md Part D), shared by
    ``feasibility``, ``frontiers``, ``margin``, ``fit_preference`` and ``implied_size``.

    Parameters
    ----------
    model : str or Architecture, optional
        The model analysed; by default each offer's own.
    hardware : str or sequence of str
        GPUs tried (default the paper's H100).
    assumptions : str or sequence of str
        Assumption presets tried (comma-separated text or a list).
    weight_bits : str or sequence of float
        Weight precisions tried (``"16,8,4"``).
    draft : str or Architecture or None
        Draft model for speculation (default the paper's, Llama 3 8B); None tries none.
    acceptance : float
        The draft's acceptance rate.
    max_draft_tokens : int
        Longest draft tried.
    offer_price : {"output", "blended"}
        The offer's price compared with our cost.
    input_tokens_per_output : float
        Input tokens per output token of a blended price.
    context_tokens : float, optional
        Context when an offer states none (default the table's).
    grid_points : int
        Points per axis of each variant's grid (the ``infer`` default of the table, 100).

    Every default is the settings table's (``settings.default(name, "infer")``).

    Examples
    --------
    >>> from inference_econ.studies.inverse.variants import InverseOptions
    >>> InverseOptions.of(weight_bits="8", grid_points=60).grid_points
    60
    """

    model: Any = None
    hardware: Any = PAPER_HARDWARE
    assumptions: Any = table.default("candidate_assumptions", table.INFER)
    weight_bits: Any = table.default("candidate_weight_bits", table.INFER)
    draft: Any = table.default("draft", table.INFER)
    acceptance: float = table.default("acceptance", table.INFER)
    max_draft_tokens: int = table.default("max_draft_tokens", table.INFER)
    offer_price: str = table.default("offer_price", table.INFER)
    input_tokens_per_output: float = table.default("input_tokens_per_output", table.INFER)
    context_tokens: float | None = None
    grid_points: int = table.default("grid_points", table.INFER)

    @classmethod
    def of(cls, options: InverseOptions | None = None, **settings) -> InverseOptions:
        """``options`` (default: every default) with ``settings`` in place of its fields,
        each checked against the table; an unknown name is refused with a did-you-mean."""
        base = cls() if options is None else options
        if not isinstance(base, cls):
            raise SpecError(
                "argument",
                "options",
                f"expected InverseOptions, got {type(base).__name__}",
                "pass InverseOptions(...) or the settings as keywords",
            )
        known = [f.name for f in dataclasses.fields(cls)]
        for key in settings:
            if key not in known:
                hint = did_you_mean(str(key), known)
                raise SpecError(
                    "argument", str(key), "unknown setting", hint or f"known: {', '.join(known)}"
                )
        return dataclasses.replace(base, **settings).checked()

    def checked(self) -> InverseOptions:
        """The options with their numbers and choices validated by the table's rows (a draft
        model that is not there named as the draft, not as the model analysed)."""
        if self.draft is not None:
            try:
                load_model(self.draft)
            except SpecError as exc:
                raise exc.inside("argument", "draft") from None
        return dataclasses.replace(
            self,
            acceptance=table.option("acceptance").check(self.acceptance),
            max_draft_tokens=table.option("max_draft_tokens").check(self.max_draft_tokens),
            offer_price=table.option("offer_price").check(self.offer_price),
            input_tokens_per_output=table.option("input_tokens_per_output").check(
                self.input_tokens_per_output
            ),
            grid_points=table.option("grid_points").check(self.grid_points),
        )

    def read(self, observed) -> Reading:
        """What the analyses read off an offer under these options (``read_offer``)."""
        return read_offer(
            observed, self.model, self.offer_price, self.input_tokens_per_output,
            self.context_tokens,
        )  # fmt: skip

    def variants(self) -> tuple[Variant, ...]:
        """Every GPU x preset x precision tried."""
        return variants(self.hardware, self.assumptions, self.weight_bits)

    def grids(self, arch: Architecture, context: float, chosen=None, draft=...):
        """``(variant, SpeedCostGrid)`` of every variant tried (``chosen``: those only; ``draft``:
        another draft than the options', None for none)."""
        return variant_grids(
            arch,
            self.variants() if chosen is None else chosen,
            self.draft if draft is ... else draft,
            self.max_draft_tokens,
            context,
            self.grid_points,
        )

    @property
    def draft_name(self) -> str | None:
        """The draft model's name, None without speculation."""
        return None if self.draft is None else load_model(self.draft).name
