"""Several models on one fleet (docs/model.md §G6): the cheapest set of instances serving every
model's load within its own targets, with the saving against planning each model alone.

Each model gets capacity's candidates (GPU x instance size, one knee search each,
``instance_options``) and, where its engine takes a share of a GPU (``gpu_share``), instances
on a share of one GPU. A model's part of the fleet is either dedicated (whole-GPU instances,
its cheapest candidate) or ``k`` instances on shares of a GPU; the shares of every model on
one GPU type are packed into whole GPUs (first-fit decreasing; with shares of quarters it
leaves no GPU that two of its bins could have filled), and each GPU is paid in full. The fleet
is the cheapest choice of parts over every combination (a coordinate search past
``MAX_COMBINATIONS``), never dearer than each model planned alone (its parts packed on their
own GPUs): that plan is one of the combinations, and it is kept where packing it with the
other models' shares would cost more. Where no model can share a GPU, the fleet is exactly
the sum of the plans alone.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from ..errors import InfeasibleError
from ..load.arrivals import Traffic
from ..load.engine import EngineConfig
from ..load.targets import Targets
from ..serving.derived_intervals import renamed_intervals
from ..serving.setting import Setting
from .gpu_share import SHARES, why_not_shared
from .instance_options import InstanceOption, instance_options
from .power_cap import _ranked

#: Combinations of parts searched in full; past it, a coordinate search from the plans alone.
MAX_COMBINATIONS = 200_000


@dataclass(frozen=True)
class FleetModel:
    """One model of a fleet: its name, the settings it may run (one per GPU) and its load."""

    name: str
    settings: tuple[Setting, ...]
    traffic: Traffic
    targets: Targets
    config: EngineConfig


@dataclass(frozen=True)
class Part:
    """One model's part of a fleet: ``instances`` instances of ``option`` for its load."""

    model: str
    option: InstanceOption
    instances: int
    rate_per_s: float

    @property
    def shared(self) -> bool:
        return self.option.shared

    def describe(self) -> str:
        """``"2 x 1 GPU H100-SXM"`` or ``"3 x 1/2 of H100-SXM"``."""
        return self.option.describe(self.instances)

    def held(self, name: str) -> dict[str, float]:
        """The interval columns of the load its instances hold, under ``name`` ({} for a
        bound): each instance's held load's ends (§F12) times the instances."""
        ends = renamed_intervals(self.option.held, "max_rate_per_s", name)
        return {k: v * self.instances for k, v in ends.items()}


#: One GPU of a shared pool: its type and the (model, share) instances on it.
Bin = tuple[str, tuple[tuple[str, float], ...]]


@dataclass(frozen=True)
class FleetPlan:
    """The cheapest fleet found (module docstring), each model alone beside it."""

    parts: tuple[Part, ...]
    #: The GPUs of the shared pools, each with the instances on it.
    bins: tuple[Bin, ...]
    #: Each model planned alone, and the GPUs its shares take alone.
    alone: tuple[Part, ...]
    alone_bins: tuple[Bin, ...]
    #: Per model, why it cannot take a share of a GPU ("" where it can).
    sharing: tuple[tuple[str, str], ...]
    pue: float
    candidates: pd.DataFrame
    #: The site budget in MW of facility power it was planned within (None: none).
    power_cap_mw: float | None = None
    #: Per model, what its part was computed with (``metadata``).
    computed_with: tuple[dict, ...] = ()

    @property
    def usd_per_hour(self) -> float:
        return _cost(self.parts, self.bins)

    @property
    def alone_usd_per_hour(self) -> float:
        return _cost(self.alone, self.alone_bins)

    @property
    def saving_usd_per_hour(self) -> float:
        """What the fleet saves an hour against planning each model alone (>= 0)."""
        return self.alone_usd_per_hour - self.usd_per_hour

    @property
    def gpus(self) -> int:
        return _gpus(self.parts, self.bins)

    @property
    def it_power_kw(self) -> float:
        """IT kW of the fleet, each instance at its most load within its targets and the
        unused share of a shared GPU idle (``instance_options``: power by GPU state)."""
        return _power_kw(self.parts, self.bins)

    @property
    def facility_mw(self) -> float:
        return self.it_power_kw * self.pue / 1e3

    def summary(self) -> pd.Series:
        """The answer in one column: cost and GPUs of the fleet and of the models alone."""
        cap = {} if self.power_cap_mw is None else {"power_cap_mw": self.power_cap_mw}
        return pd.Series(
            {
                "models": len(self.parts),
                "gpus": self.gpus,
                "shared_gpus": len(self.bins),
                "usd_per_hour": self.usd_per_hour,
                "alone_gpus": _gpus(self.alone, self.alone_bins),
                "alone_usd_per_hour": self.alone_usd_per_hour,
                "saving_usd_per_hour": self.saving_usd_per_hour,
                "saving_fraction": self.saving_usd_per_hour / self.alone_usd_per_hour,
                "it_power_kw": self.it_power_kw,
                "facility_mw": self.facility_mw,
                **cap,  # the budget it was planned within, where one was given
            }
        )

    def metadata(self) -> dict:
        """What each model's part was computed with (its knee's run: model and GPU files,
        preset, precisions, targets, requests, seed; the model's own load and a whole GPU's
        price), one curve per model."""
        return {"curves": [dict(c) for c in self.computed_with]}

    def to_dataframe(self) -> pd.DataFrame:
        """One row per model: its part of the fleet (the load it holds with its interval; its
        cost, a shared GPU's split by the shares on it) and its plan alone."""
        why = dict(self.sharing)
        shared_usd = _shared_costs(self.parts, self.bins)
        rows = []
        for part, alone in zip(self.parts, self.alone):
            o = part.option
            rows.append(
                {
                    "model": part.model,
                    "rate_per_s": part.rate_per_s,
                    "deployment": part.describe(),
                    "shared": part.shared,
                    "max_rate_per_s": part.instances * o.max_rate_per_instance,
                    **part.held("max_rate_per_s"),
                    "usd_per_hour": (
                        shared_usd[part.model] if o.shared else o.usd_per_hour(part.instances)
                    ),
                    "alone_deployment": alone.describe(),
                    "alone_usd_per_hour": _cost([alone], _pack([alone])),
                    "sharing": why[part.model] or "can share a GPU",
                }
            )
        return pd.DataFrame(rows)

    def gpu_table(self) -> pd.DataFrame:
        """One row per shared GPU: its type and the instances on it."""
        return pd.DataFrame(
            [
                {
                    "gpu": i + 1,
                    "hardware": hardware,
                    "instances": ", ".join(f"{m} ({_share_text(x)})" for m, x in held),
                    "used_share": sum(x for _, x in held),
                }
                for i, (hardware, held) in enumerate(self.bins)
            ],
            columns=["gpu", "hardware", "instances", "used_share"],  # none shared: no rows
        )


def _share_text(share: float) -> str:
    return f"{share:.0%}"


def fleet_plan(
    models: Sequence[FleetModel],
    pue: float,
    sizes: list[int] | None = None,
    max_gpus: int | None = None,
    progress: Callable[[str], None] | None = None,
    power_cap_mw: float | None = None,
) -> FleetPlan:
    """The cheapest fleet serving every model of ``models`` (module docstring), within
    ``power_cap_mw`` of facility power where given (each instance at its load, an unused share
    idle, times ``pue``); raises ``InfeasibleError`` naming the model when one has no
    candidate that meets its targets, or the cap to reach when no fleet fits it. ``max_gpus``
    None: each model's instances within its own setting's."""
    choices, alone, table, sharing = [], [], [], []
    for m in models:
        most = m.settings[0].max_gpus if max_gpus is None else max_gpus  # the model's own
        options = instance_options(
            m.settings, m.traffic, m.targets, m.config, sizes, most, SHARES, progress
        )
        parts = _parts(m, options)
        choices.append(parts)
        alone.append(min(parts, key=lambda p: _alone_key(p)))
        sharing.append((m.name, why_not_shared(m.settings[0]) or ""))
        table += [_row(m.name, o, m.traffic.offered_rate_per_s) for o in options]
    budget = None if power_cap_mw is None else power_cap_mw * 1e3 / pue
    best = _cheapest(choices, alone, budget)
    bins = _pack(best)
    if budget is not None and _power_kw(best, bins) > budget * (1 + 1e-9):
        least = min(_power_kw(best, bins), _least_power_kw(choices)) * pue / 1e3
        raise InfeasibleError(
            f"no fleet of these models fits a power cap of {power_cap_mw:g} MW (each on its "
            f"least-drawing instances, they draw {least:.4g} MW at PUE {pue:g}): raise "
            f"the power cap (--power-cap-mw; power_cap_mw in Python) to {least:.4g}, or plan fewer "
            "models"
        )
    alone_bins = tuple(b for p in alone for b in _pack([p]))
    frame = pd.DataFrame(table)
    frame["chosen"] = [
        any(r.model == p.model and r.option == p.option.label() for p in best)
        for r in frame.itertuples()
    ]
    return FleetPlan(
        parts=tuple(best),
        bins=bins,
        alone=tuple(alone),
        alone_bins=alone_bins,
        sharing=tuple(sharing),
        pue=pue,
        candidates=frame,
        power_cap_mw=power_cap_mw,
        computed_with=tuple(_computed_with(m, p) for m, p in zip(models, best)),
    )


def _computed_with(model: FleetModel, part: Part) -> dict:
    """What a model's part was computed with: its knee's run's metadata at the model's own
    load (not the knee's rate), a whole GPU's price and the share an instance takes."""
    o = part.option
    meta = {"label": model.name, **o.computed_with, "traffic": model.traffic.describe()}
    meta["price_usd_per_gpu_hour"] = o.gpu_usd_per_hour
    if o.shared:
        meta["gpu_share"] = o.label().split(" of ")[0]
    return meta


def _parts(model: FleetModel, options: list[InstanceOption]) -> list[Part]:
    """The parts a model may take: its cheapest dedicated candidate (capacity's rank) and
    every share of a GPU that holds some load; refused where none meets its targets."""
    rate = model.traffic.offered_rate_per_s
    held = [o for o in options if o.feasible]
    whole = [o for o in held if not o.shared]
    if not held:
        reasons = "; ".join(sorted({f"{o.label()}: {o.note}" for o in options if o.note}))
        raise InfeasibleError(
            f"fleet model {model.name!r}: no deployment meets {model.targets.describe()} at "
            f"{rate:g} req/s ({reasons or 'no instance size fits'}); relax its targets, "
            "shorten its requests or give it other GPUs"
        )
    out = []
    if whole:
        best = min(whole, key=lambda o: _ranked(o, o.instances_for(rate)))
        out.append(Part(model.name, best, best.instances_for(rate), rate))
    out += [Part(model.name, o, o.instances_for(rate), rate) for o in held if o.shared]
    return out


def _row(model: str, o: InstanceOption, rate: float) -> dict:
    """One candidate of the table: a model's instance on a GPU, a size or a share."""
    return {
        "model": model,
        "option": o.label(),
        "shared": o.shared,
        "max_rate_per_instance": o.max_rate_per_instance if o.feasible else math.nan,
        **renamed_intervals(o.held, "max_rate_per_s", "max_rate_per_instance"),
        "instances": o.instances_for(rate) if o.feasible else None,
        "kw_per_instance": o.load_kw_per_instance,
        "note": o.note,
    }


def _alone_key(part: Part) -> tuple:
    """How a model's plans alone rank: cost (its shares on GPUs of its own), then dedicated."""
    return (round(_cost([part], _pack([part])), 9), part.shared)


def _key(parts: Sequence[Part], budget_kw: float | None = None) -> tuple:
    """How fleets rank: those within the IT power budget first, then the cheapest, then the
    fewest shared parts, then the fewest GPUs."""
    bins = _pack(parts)
    over = budget_kw is not None and _power_kw(parts, bins) > budget_kw * (1 + 1e-9)
    cost = round(_cost(parts, bins), 9)
    return (over, cost, sum(p.shared for p in parts), _gpus(parts, bins))


def _cheapest(
    choices: list[list[Part]], alone: list[Part], budget_kw: float | None = None
) -> list[Part]:
    """The cheapest combination of one part per model (``_key``) within ``budget_kw`` of IT
    power (None: no budget), never dearer than the plans alone packed on their own GPUs."""
    if math.prod(len(c) for c in choices) <= MAX_COMBINATIONS:
        best = list(min(itertools.product(*choices), key=lambda c: _key(list(c), budget_kw)))
    else:  # a coordinate search: change one model's part while that makes the fleet cheaper
        best, better = list(alone), True
        while better:
            better = False
            for i, parts in enumerate(choices):
                for p in parts:
                    trial = best[:i] + [p] + best[i + 1 :]
                    if _key(trial, budget_kw) < _key(best, budget_kw):
                        best, better = trial, True
    alone_bins = [b for p in alone for b in _pack([p])]
    alone_key = (
        budget_kw is not None and _power_kw(alone, alone_bins) > budget_kw * (1 + 1e-9),
        round(_cost(alone, alone_bins), 9),
    )
    return list(alone) if alone_key < _key(best, budget_kw)[:2] else best


def _least_power_kw(choices: list[list[Part]]) -> float:
    """The least IT kW any fleet draws: each model's least-drawing part, packed together."""
    parts = [min(c, key=lambda p: p.instances * p.option.kw_per_instance("load")) for c in choices]
    return _power_kw(parts, _pack(parts))


def _pack(parts: Sequence[Part]) -> tuple[Bin, ...]:
    """The shared instances of ``parts`` packed into GPUs of their type (first-fit
    decreasing by share)."""
    items = sorted(
        ((p.option.hardware, p.option.share, p.model) for p in parts if p.shared
         for _ in range(p.instances)),
        key=lambda t: (t[0], -t[1]),
    )  # fmt: skip
    bins: list[tuple[str, list[tuple[str, float]]]] = []
    for hardware, share, model in items:
        for kind, held in bins:
            if kind == hardware and sum(x for _, x in held) + share <= 1.0 + 1e-9:
                held.append((model, share))
                break
        else:
            bins.append((hardware, [(model, share)]))
    return tuple((kind, tuple(held)) for kind, held in bins)


def _price(parts: Sequence[Part], hardware: str) -> float:
    """A whole GPU of ``hardware``'s price an hour (from a part on it)."""
    return next(p.option.gpu_usd_per_hour for p in parts if p.option.hardware == hardware)


def _cost(parts: Sequence[Part], bins: Sequence[Bin]) -> float:
    """$ an hour: the dedicated instances and every shared GPU, each paid in full."""
    dedicated = sum(p.option.usd_per_hour(p.instances) for p in parts if not p.shared)
    return dedicated + sum(_price(parts, hardware) for hardware, _ in bins)


def _shared_costs(parts: Sequence[Part], bins: Sequence[Bin]) -> dict[str, float]:
    """$ an hour of each model's shares: every shared GPU's price split between the models
    on it in proportion to their shares (so the parts add up to the fleet's cost)."""
    out: dict[str, float] = {}
    for hardware, held in bins:
        used = sum(x for _, x in held)
        for model, x in held:
            out[model] = out.get(model, 0.0) + _price(parts, hardware) * x / used
    return out


def _gpus(parts: Sequence[Part], bins: Sequence[Bin]) -> int:
    whole = sum(p.instances * p.option.gpus_per_instance for p in parts if not p.shared)
    return whole + len(bins)


def _power_kw(parts: Sequence[Part], bins: Sequence[Bin]) -> float:
    """IT kW: every instance at its load state, and the unused share of each shared GPU idle."""
    kw = sum(p.instances * p.option.kw_per_instance("load") for p in parts)
    for hardware, held in bins:
        unused = 1.0 - sum(x for _, x in held)
        o = next(p.option for p in parts if p.shared and p.option.hardware == hardware)
        kw += unused * o.kw_per_instance("idle") / o.share
    return kw
