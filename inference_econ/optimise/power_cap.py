"""Capacity under a site power budget (docs/model.md §G6): the cheapest deployment that serves
the load within the targets and draws no more than the budget, or, where none does, the one
that serves the most requests within it.

The budget is facility power: the IT power of the instances (their GPUs and server shares, in
the power state it is counted at, ``instance_options.POWER_STATES``; by default ``load``, the
draw at the most load each holds within the targets, the most an instance draws while it
meets them) times the PUE (``serving.setting.facility_pue``: ``--pue``, else the cost file's).
An instance size of ``w`` facility MW fits ``⌊cap / w⌋`` instances under a cap.

Every candidate of capacity's search (GPU x instance size) is ranked as capacity ranks them
(cheapest, then the most load held, then the fewest GPUs); the first's instances for the load
are the uncapped plan. Two constraints, the load served and the power drawn, make a linear
programme whose optimum takes at most two candidates; with whole instances, the plan is found
by enumerating the count of one candidate of a pair, the other's count following from it. The
plan under a cap is the cheapest combination of at most two candidates whose instances hold the
load and fit the cap (the uncapped plan where it fits and no combination is cheaper; a pair
undercuts it only through whole instances, and is then the plan at every cap that holds it);
where none holds the load, the combination whose
instances under the cap hold the most load, then the cheapest. Ties go to the most load held,
the fewest GPUs, one candidate before two, then the better-ranked candidate with more
instances. A looser cap therefore never costs more for the whole load, nor serves less.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
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
class PlanPart:
    """``instances`` instances of one candidate: one of a power-capped plan's one or two parts."""

    option: InstanceOption
    instances: int

    @property
    def gpus(self) -> int:
        return self.instances * self.option.gpus_per_instance

    @property
    def held_rate_per_s(self) -> float:
        """Requests/s its instances hold within the targets."""
        return self.instances * self.option.max_rate_per_instance

    @property
    def usd_per_hour(self) -> float:
        return self.option.usd_per_hour(self.instances)

    def it_power_kw(self, power_at: str = "load") -> float:
        return self.instances * self.option.kw_per_instance(power_at)

    def describe(self) -> str:
        """``"161 x 1 GPU B200-HGX"``."""
        return self.option.describe(self.instances)


@dataclass(frozen=True)
class PowerPlan:
    """The plan under a power cap (module docstring): one or two parts, and the uncapped plan
    beside it. ``option`` and ``instances`` read its first part (the one holding the most
    load) and its instances in all; totals (GPUs, rate, power, cost) are over every part."""

    #: The site budget in facility MW (None: no cap).
    cap_mw: float | None
    #: The power state the budget counts (``instance_options.POWER_STATES``).
    power_at: str
    pue: float
    rate_per_s: float
    targets: Targets
    #: The plan's instances: one candidate, or two (the one holding the most load first).
    parts: tuple[PlanPart, ...]
    uncapped: InstanceOption
    uncapped_instances: int
    output_tokens_per_request: float
    candidates: pd.DataFrame
    #: Every candidate searched (GPU x instance size), to plan at another cap (``at_cap``).
    options: tuple[InstanceOption, ...] = field(default=())
    #: The load planned for, as its runs state traffic (``Traffic.describe``).
    traffic: str = ""

    def metadata(self) -> dict:
        """What the first part's knee was computed with, at the plan's own load."""
        return {**self.option.computed_with, "traffic": self.traffic}

    def at_cap(self, cap_mw: float | None) -> PowerPlan:
        """The same search's plan under another cap (no simulation runs again)."""
        return power_capped_plan(
            self.options, self.rate_per_s, self.targets, self.output_tokens_per_request,
            self.pue, checked_cap(cap_mw, field="cap_mw"), self.power_at, self.traffic,
        )  # fmt: skip

    @property
    def option(self) -> InstanceOption:
        """The first part's candidate (the only one where the plan has one part)."""
        return self.parts[0].option

    @property
    def instances(self) -> int:
        """Instances in all parts."""
        return sum(p.instances for p in self.parts)

    def describe(self) -> str:
        """``"161 x 1 GPU B200-HGX + 12 x 2 GPUs H100-SXM"``."""
        return " + ".join(p.describe() for p in self.parts)

    @property
    def gpus(self) -> int:
        return sum(p.gpus for p in self.parts)

    @property
    def held_rate_per_s(self) -> float:
        """Requests/s the plan's instances hold within the targets."""
        return sum(p.held_rate_per_s for p in self.parts)

    @property
    def meets_demand(self) -> bool:
        """Whether the instances hold the load (met to the last bits of its float counts)."""
        slack = 1e-9 * max(p.option.max_rate_per_instance for p in self.parts)
        return self.rate_per_s <= self.held_rate_per_s + slack

    @property
    def served_rate_per_s(self) -> float:
        """Requests/s served within the targets: the load, or what the instances hold."""
        return self.rate_per_s if self.meets_demand else min(self.rate_per_s, self.held_rate_per_s)

    @property
    def binds(self) -> bool:
        """Whether the cap binds: the uncapped plan draws more than it holds."""
        return self.cap_mw is not None and self.uncapped_instances > instances_under(
            self.uncapped, self.cap_mw, self.pue, self.power_at
        )

    @property
    def is_uncapped(self) -> bool:
        """Whether the plan is the uncapped one."""
        return self.parts == (PlanPart(self.uncapped, self.uncapped_instances),)

    @property
    def usd_per_hour(self) -> float:
        return sum(p.usd_per_hour for p in self.parts)

    @property
    def it_power_kw(self) -> float:
        return sum(p.it_power_kw(self.power_at) for p in self.parts)

    @property
    def facility_mw(self) -> float:
        return self.it_power_kw * self.pue / 1e3

    @property
    def output_tokens_per_s(self) -> float:
        return self.served_rate_per_s * self.output_tokens_per_request

    def parts_table(self) -> pd.DataFrame:
        """Each part: its candidate, instances, GPUs, the load it holds, its draw and cost."""
        return pd.DataFrame(
            [
                {
                    "hardware": p.option.hardware,
                    "gpus_per_instance": p.option.gpus_per_instance,
                    "instances": p.instances,
                    "gpus": p.gpus,
                    "max_rate_per_instance": p.option.max_rate_per_instance,
                    "held_rate_per_s": p.held_rate_per_s,
                    "it_power_kw": p.it_power_kw(self.power_at),
                    "facility_mw": p.it_power_kw(self.power_at) * self.pue / 1e3,
                    "usd_per_hour": p.usd_per_hour,
                }
                for p in self.parts
            ]
        )

    def summary(self) -> pd.Series:
        """The answer in one column: the deployment, what it serves, draws and costs."""
        tokens = self.output_tokens_per_s
        deployments = [Deployment(p.option.gpus_per_instance, p.instances) for p in self.parts]
        return pd.Series(
            {
                "power_cap_mw": self.cap_mw if self.cap_mw is not None else math.nan,
                "hardware": " + ".join(p.option.hardware for p in self.parts),
                "deployment": " + ".join(d.describe() for d in deployments),
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
    parts = (PlanPart(uncapped, uncapped.instances_for(rate_per_s)),)
    if cap_mw is not None:
        parts = _under_cap(ranked, rate_per_s, pue, cap_mw, power_at)
    table = _table(ranked, rate_per_s, pue, cap_mw, power_at)
    table["chosen"] = [any(o is p.option for p in parts) for o in ranked]
    return PowerPlan(
        cap_mw=cap_mw,
        power_at=power_at,
        pue=pue,
        rate_per_s=rate_per_s,
        targets=targets,
        parts=parts,
        uncapped=uncapped,
        uncapped_instances=uncapped.instances_for(rate_per_s),
        output_tokens_per_request=output_tokens_per_request,
        candidates=table,
        options=tuple(options),
        traffic=traffic,
    )


def _under_cap(ranked, rate_per_s: float, pue: float, cap_mw: float, power_at: str):
    """The parts under the cap: the uncapped plan where it fits and no combination of two is
    cheaper, else the cheapest combination holding the load, else the one holding the most."""
    for o in ranked:
        need_power(o)
    if max(instances_under(o, cap_mw, pue, power_at) for o in ranked) < 1:
        raise InfeasibleError(_below_one(ranked, cap_mw, pue, power_at))
    best = _best_mix(ranked, rate_per_s, pue, cap_mw, power_at, serve=True)
    first = PlanPart(ranked[0], ranked[0].instances_for(rate_per_s))
    fits = first.instances <= instances_under(first.option, cap_mw, pue, power_at)
    cost = round(first.instances * first.option.usd_per_hour(1), 9)  # as ``_best_of`` counts
    if fits and (best is None or best[0][0] >= cost):
        return (first,)
    if best is None:
        best = _best_mix(ranked, rate_per_s, pue, cap_mw, power_at, serve=False)
    assert best is not None  # one instance of some candidate fits (above)
    parts = [PlanPart(ranked[i], n) for i, n in best[1]]
    return tuple(sorted(parts, key=lambda p: -p.held_rate_per_s))


#: Counts of one candidate a pair is enumerated over at once (bounds the arrays' memory).
_CHUNK = 4096


def _best_mix(ranked, rate_per_s: float, pue: float, cap_mw: float, power_at: str, serve: bool):
    """The best combination of at most two ranked candidates under the cap, as (key, ((index,
    instances), ...)): with ``serve``, the cheapest whose instances hold the load (None where
    none does); else the one whose instances hold the most load, then the cheapest. For each
    candidate ``i`` and count ``n`` of it, every candidate ``j`` takes the fewest instances
    that hold the rest of the load (``serve``) or the most the power left holds."""
    rate = np.array([o.max_rate_per_instance for o in ranked])
    usd = np.array([o.usd_per_hour(1) for o in ranked])
    mw = np.array([o.kw_per_instance(power_at) * pue / 1e3 for o in ranked])
    gpus = np.array([o.gpus_per_instance for o in ranked])
    best = None
    for i, o in enumerate(ranked):
        top = instances_under(o, cap_mw, pue, power_at)
        if serve:
            top = min(top, o.instances_for(rate_per_s))
        for start in range(0, top + 1, _CHUNK):
            n = np.arange(start, min(top, start + _CHUNK - 1) + 1, dtype=float)[:, None]
            room = np.floor((cap_mw - n * mw[i]) / mw + 1e-9)
            if serve:
                rest = np.maximum(rate_per_s - n * rate[i], 0.0)
                other = np.maximum(np.ceil(rest / rate - 1e-9), 0.0)
                ok = other <= room
            else:
                other = np.maximum(room, 0.0)
                ok = np.ones_like(other, dtype=bool)
            found = _best_of(i, n, other, ok, rate, usd, gpus, rate_per_s, serve)
            if found is not None and (best is None or found < best):
                best = found
    return best


def _best_of(i, n, other, ok, rate, usd, gpus, rate_per_s: float, serve: bool):
    """The best entry of one chunk (``n`` instances of candidate ``i``, ``other`` of each
    candidate ``j``, where ``ok``) as ``_best_mix`` ranks them, or None where none is ``ok``."""
    rows, cols = np.nonzero(ok)
    if rows.size == 0:
        return None
    a, b = n[rows, 0], other[rows, cols]
    cost = np.round(a * usd[i] + b * usd[cols], 9)
    held = a * rate[i] + b * rate[cols]
    if not serve:  # what they serve: no more than the load
        held = np.minimum(held, rate_per_s)
    gpu = a * gpus[i] + b * gpus[cols]
    parts = (a > 0).astype(int) + ((b > 0) & ((cols != i) | (a == 0))).astype(int)
    primary = (cost, -held) if serve else (-held, cost)
    keys = np.stack([*primary, gpu, parts])
    order = np.lexsort(keys[::-1])
    tied = order[np.all(keys[:, order] == keys[:, order[:1]], axis=0)]
    return min(_entry(keys[:, k], i, int(a[k]), int(cols[k]), int(b[k])) for k in tied)


def _entry(key, i: int, a: int, j: int, b: int) -> tuple:
    """(key, ((index, instances), ...)): ``a`` of candidate ``i`` and ``b`` of ``j`` merged,
    none left out; the key ends with the better-ranked candidate with more instances first."""
    counts: dict[int, int] = {}
    for index, count in ((i, a), (j, b)):
        if count:
            counts[index] = counts.get(index, 0) + count
    combo = tuple(sorted(counts.items()))
    return (*(float(k) for k in key), tuple((x, -c) for x, c in combo)), combo


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
        f"the power cap (--power-cap-mw; power_cap_mw in Python) to at least {mw:.4g}"
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
