"""Capacity under a site power budget (docs/model.md §G6): the cheapest deployment that serves
the load within the targets and draws no more than the budget, or, where none does, the one
that serves the most tokens within it.

The budget is facility power: the IT power of the instances (their GPUs and server shares, in
the power state it is counted at, ``instance_options.POWER_STATES``; by default ``load``, the
draw at the most load each holds within the targets, the most an instance draws while it
meets them) times the PUE (``serving.setting.facility_pue``: ``--pue``, else the cost file's).
An instance size of ``w`` facility MW fits ``⌊cap / w⌋`` instances under a cap. Every
candidate of capacity's search (GPU x instance size) is ranked as capacity ranks them
(cheapest, then the most load held, then the fewest GPUs); the plan is the first whose
instances for the load fit, so a cap that does not bind gives exactly the uncapped plan. When
none fits, the plan is the candidate whose instances under the cap hold the most load (each at
its most load within the targets), which serves no more than the uncapped plan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from ..columns import ALL_IN, SECONDS_PER_HOUR
from ..errors import InfeasibleError
from ..load.deployment import Deployment
from ..load.targets import Targets
from ..serving.derived_intervals import renamed_intervals
from ..specs.schema import check_number
from .candidates import _rank
from .instance_options import InstanceOption, need_power


def checked_cap(value, source: str = "argument", field: str = "power_cap_mw") -> float | None:
    """A site power budget checked: a finite number of MW above 0, text read as its number
    (None: no cap); ``source`` and ``field`` say where it was given, for the error."""
    if value is None:
        return None
    return float(
        check_number(
            value, source, field, minimum=0, exclusive_minimum=True, maximum=1e5, unit="MW"
        )
    )


@dataclass(frozen=True)
class PowerPlan:
    """The plan under a power cap (module docstring), and the uncapped plan beside it."""

    #: The site budget in facility MW (None: no cap).
    cap_mw: float | None
    #: The power state the budget counts (``instance_options.POWER_STATES``).
    power_at: str
    pue: float
    rate_per_s: float
    targets: Targets
    option: InstanceOption
    instances: int
    uncapped: InstanceOption
    uncapped_instances: int
    output_tokens_per_request: float
    candidates: pd.DataFrame
    #: Every candidate searched (GPU x instance size), to plan at another cap (``at_cap``).
    options: tuple[InstanceOption, ...] = field(default=())
    #: The load planned for, as its runs state traffic (``Traffic.describe``).
    traffic: str = ""

    def metadata(self) -> dict:
        """What the chosen instance's knee was computed with, at the plan's own load."""
        return {**self.option.computed_with, "traffic": self.traffic}

    def at_cap(self, cap_mw: float | None) -> PowerPlan:
        """The same search's plan under another cap (no simulation runs again)."""
        return power_capped_plan(
            self.options, self.rate_per_s, self.targets, self.output_tokens_per_request,
            self.pue, checked_cap(cap_mw, field="cap_mw"), self.power_at, self.traffic,
        )  # fmt: skip

    @property
    def gpus(self) -> int:
        return self.instances * self.option.gpus_per_instance

    @property
    def served_rate_per_s(self) -> float:
        """Requests/s served within the targets: the load, or what the instances hold."""
        return min(self.rate_per_s, self.instances * self.option.max_rate_per_instance)

    @property
    def meets_demand(self) -> bool:
        return self.instances >= self.option.instances_for(self.rate_per_s)

    @property
    def binds(self) -> bool:
        """Whether the cap changed the plan from the uncapped one."""
        return (self.option, self.instances) != (self.uncapped, self.uncapped_instances)

    @property
    def usd_per_hour(self) -> float:
        return self.option.usd_per_hour(self.instances)

    @property
    def it_power_kw(self) -> float:
        return self.instances * self.option.kw_per_instance(self.power_at)

    @property
    def facility_mw(self) -> float:
        return self.it_power_kw * self.pue / 1e3

    @property
    def output_tokens_per_s(self) -> float:
        return self.served_rate_per_s * self.output_tokens_per_request

    def summary(self) -> pd.Series:
        """The answer in one column: the deployment, what it serves, draws and costs."""
        tokens = self.output_tokens_per_s
        return pd.Series(
            {
                "power_cap_mw": self.cap_mw if self.cap_mw is not None else math.nan,
                "hardware": self.option.hardware,
                "deployment": Deployment(self.option.gpus_per_instance, self.instances).describe(),
                "gpus": self.gpus,
                "rate_per_s": self.rate_per_s,
                "served_rate_per_s": self.served_rate_per_s,
                "meets_demand": self.meets_demand,
                "cap_binds": self.binds,
                "output_tokens_per_s": tokens,
                "it_power_kw": self.it_power_kw,
                "pue": self.pue,
                "facility_mw": self.facility_mw,
                "output_tokens_per_s_per_mw": tokens / self.facility_mw,
                "usd_per_hour": self.usd_per_hour,
                ALL_IN: self.usd_per_hour / (tokens * SECONDS_PER_HOUR) * 1e6,
                "uncapped_deployment": self.uncapped.describe(self.uncapped_instances),
                "uncapped_output_tokens_per_s": self.rate_per_s * self.output_tokens_per_request,
            }
        )


def instances_under(option: InstanceOption, cap_mw: float, pue: float, power_at: str) -> int:
    """How many instances of ``option`` a cap of ``cap_mw`` facility MW holds."""
    mw = option.kw_per_instance(power_at) * pue / 1e3
    return math.floor(cap_mw / mw + 1e-9)


def power_capped_plan(
    options: Sequence[InstanceOption],
    rate_per_s: float,
    targets: Targets,
    output_tokens_per_request: float,
    pue: float,
    cap_mw: float | None,
    power_at: str = "load",
    traffic: str = "",
) -> PowerPlan:
    """The plan under ``cap_mw`` (module docstring) over whole-GPU ``options``; raises
    ``InfeasibleError`` with what to change where no candidate meets the targets or the cap
    is below one instance of every candidate."""
    held = [o for o in options if o.feasible and not o.shared]
    if not held:
        reasons = "; ".join(sorted({f"{o.label()}: {o.note}" for o in options if o.note}))
        raise InfeasibleError(
            f"no deployment meets {targets.describe()} ({reasons or 'no instance size fits'}): "
            "relax the targets, shorten the requests or give other GPUs"
        )
    ranked = sorted(held, key=lambda o: _ranked(o, o.instances_for(rate_per_s)))
    uncapped = ranked[0]
    chosen, count = uncapped, uncapped.instances_for(rate_per_s)
    if cap_mw is not None:
        chosen, count = _under_cap(ranked, rate_per_s, pue, cap_mw, power_at)
    table = _table(ranked, rate_per_s, pue, cap_mw, power_at)
    table["chosen"] = [o is chosen for o in ranked]
    return PowerPlan(
        cap_mw=cap_mw,
        power_at=power_at,
        pue=pue,
        rate_per_s=rate_per_s,
        targets=targets,
        option=chosen,
        instances=count,
        uncapped=uncapped,
        uncapped_instances=uncapped.instances_for(rate_per_s),
        output_tokens_per_request=output_tokens_per_request,
        candidates=table,
        options=tuple(options),
        traffic=traffic,
    )


def _under_cap(ranked, rate_per_s: float, pue: float, cap_mw: float, power_at: str):
    """(option, instances) under the cap: the first ranked candidate whose instances for the
    load fit, else the one whose instances under the cap hold the most load."""
    for o in ranked:
        need_power(o)
    limits = [instances_under(o, cap_mw, pue, power_at) for o in ranked]
    for o, limit in zip(ranked, limits):
        if o.instances_for(rate_per_s) <= limit:
            return o, o.instances_for(rate_per_s)
    if max(limits) < 1:
        raise InfeasibleError(_below_one(ranked, cap_mw, pue, power_at))
    best = max(range(len(ranked)), key=lambda i: limits[i] * ranked[i].max_rate_per_instance)
    return ranked[best], limits[best]


def _ranked(option: InstanceOption, count: int) -> tuple:
    """Capacity's rank of ``count`` instances of ``option`` (``candidates._rank``)."""
    return _rank(
        option.usd_per_hour(count),
        count * option.max_rate_per_instance,
        count * option.gpus_per_instance,
    )


def _below_one(options, cap_mw: float, pue: float, power_at: str) -> str:
    """The line for a cap below one instance of every candidate: the smallest draw to reach."""
    least = min(options, key=lambda o: o.kw_per_instance(power_at))
    kw = least.kw_per_instance(power_at)
    mw = kw * pue / 1e3
    return (
        f"a power cap of {cap_mw:g} MW is below one instance: the smallest, {least.label()}, "
        f"draws {mw:.4g} MW ({kw:.4g} kW IT at {power_at} x PUE {pue:g}); raise "
        f"--power-cap-mw to at least {mw:.4g}"
    )


def _table(options, rate_per_s: float, pue: float, cap_mw, power_at: str) -> pd.DataFrame:
    """Every candidate: what the load needs of it, what it draws, and what the cap holds."""
    rows = []
    for o in options:
        count = o.instances_for(rate_per_s)
        kw = o.kw_per_instance(power_at)
        row = {
            "hardware": o.hardware,
            "gpus_per_instance": o.gpus_per_instance,
            "max_rate_per_instance": o.max_rate_per_instance,
            **renamed_intervals(o.held, "max_rate_per_s", "max_rate_per_instance"),
            "instances": count,
            "usd_per_hour": o.usd_per_hour(count),
            "kw_per_instance": kw,
            "facility_mw": count * kw * pue / 1e3,
        }
        if cap_mw is not None:
            under = instances_under(o, cap_mw, pue, power_at)
            row["instances_under_cap"] = under
            row["rate_under_cap_per_s"] = min(rate_per_s, under * o.max_rate_per_instance)
        rows.append(row)
    return pd.DataFrame(rows)
