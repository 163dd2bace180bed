"""Buying capacity for a demand curve (docs/model.md §G5): the cheapest mix of reserved capacity
(owned or committed, paid every hour) and on-demand or spot capacity (paid by the hour it is
used) that serves every hour of a demand curve within the latency targets.

Each GPU and instance size gets its most load per instance from capacity's knee search
(``candidates.knee_rows``: one search per size, not one per hour); hour ``h`` needs
``k_h = ⌈rate_h / knee⌉`` instances. With ``R`` instances reserved at ``r`` per instance-hour and
the rest bought at ``b`` per instance-hour, the period costs ``T·R·r + Σ_h b·max(0, k_h − R)``,
a convex function of ``R``, minimised over every ``R`` from 0 to the peak. Spot capacity loses
a share ``q`` of its instances to interruptions each hour, so covering ``e`` instances takes
``⌈e / (1 − q)⌉`` of them: it is used for the excess when that is cheaper than on-demand.

The plan never costs more than buying every hour on demand (``R = 0``) nor less than paying
the reserved price for exactly the instances each hour uses (``Σ_h k_h·min(r, b)``).

Under an engine profile the load one instance holds is an expected figure with its 80 % and
90 % intervals (docs/model.md §F12); the instances each hour needs and the plan's cost at each
end of them are the same plan made for that end's load (the pessimistic end of the load is the
high end of the instances and the cost).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..columns import SECONDS_PER_HOUR
from ..errors import InfeasibleError, SpecError, plural
from ..load.arrivals import Traffic
from ..load.demand import DemandCurve
from ..load.engine import DEFAULT_ENGINE, EngineConfig
from ..load.targets import Targets
from ..serving.derived_intervals import renamed_intervals
from ..serving.intervals import interval_columns, interval_keys
from ..serving.setting import Setting, price_gpu
from ..serving.support import Support, plan_line
from ..specs.bases import PriceBasis
from .candidates import candidate_support, knee_rows


@dataclass(frozen=True)
class Prices:
    """What one GPU-hour costs reserved, on demand and on spot (None: no spot), with bases."""

    reserved_usd: float
    burst_usd: float
    spot_usd: float | None
    reserved_basis: PriceBasis
    burst_basis: PriceBasis


def hourly_plan(needed, gpus_per_instance: int, prices: Prices, interruption: float | None):
    """The cheapest reserved base for ``needed`` instances per hour (module docstring): a dict
    of the reserved count, the on-demand and spot instances bought each hour and the cost."""
    k = np.asarray(needed, dtype=np.int64)
    hours = len(k)
    r = prices.reserved_usd * gpus_per_instance
    b = prices.burst_usd * gpus_per_instance
    use_spot = (
        prices.spot_usd is not None
        and interruption is not None
        and prices.spot_usd * gpus_per_instance / (1.0 - interruption) < b
    )
    spot_usd = prices.spot_usd if prices.spot_usd is not None else math.inf
    keep = 1.0 - interruption if interruption is not None else 0.0  # used only with use_spot
    best: dict[str, Any] | None = None
    for base in _reserved_counts(k, use_spot):
        excess = np.maximum(k - base, 0)
        if use_spot:
            spot = np.ceil(excess / keep - 1e-9).astype(np.int64)
            demand = np.zeros_like(excess)
        else:
            spot, demand = np.zeros_like(excess), excess
        cost = hours * base * r + b * demand.sum()
        if use_spot:
            cost += spot_usd * gpus_per_instance * spot.sum()
        if best is None or cost < best["total_usd"] - 1e-9:
            best = {"reserved": base, "on_demand": demand, "spot": spot, "total_usd": float(cost)}
    return best


#: Most reserved counts the search with spot capacity tries one by one (its cost is not
#: linear between the hours' counts): a peak needing more instances is refused before it starts.
MAX_SPOT_SEARCH = 100_000


def _reserved_counts(needed: np.ndarray, use_spot: bool):
    """The reserved counts the cheapest base is among. Without spot the cost is linear in the
    base between the hours' counts (each hour's excess ``max(k - base, 0)``), so its least is
    at 0 or one of them (the least of a flat stretch too: its left end); with spot, each
    count from 0 to the peak, refused beyond ``MAX_SPOT_SEARCH``."""
    peak = int(needed.max())
    if not use_spot:
        return sorted({0, *np.unique(needed).tolist()})
    if peak > MAX_SPOT_SEARCH:
        raise SpecError(
            "argument",
            "spot_interruption_rate",
            f"the demand's peak needs {peak:,} instances: the search with spot capacity "
            f"tries every reserved count up to it, at most {MAX_SPOT_SEARCH:,}",
            "lower the demand, give larger instances, or drop --spot-interruption",
        )
    return range(peak + 1)


def instances_needed(requests_per_s, max_rate_per_instance: float) -> np.ndarray:
    """The instances each hour needs: ``⌈rate_h / knee⌉``."""
    return np.ceil(np.asarray(requests_per_s) / max_rate_per_instance - 1e-9).astype(np.int64)


#: An end of an interval of the held load -> the end of the instances and costs it gives.
_OPPOSITE = {"low80": "high80", "high80": "low80", "low90": "high90", "high90": "low90"}


@dataclass(frozen=True)
class DemandPlan:
    """The cheapest capacity found for a demand curve, and every candidate."""

    demand: DemandCurve
    targets: Targets
    setting: Setting
    gpus_per_instance: int
    max_rate_per_instance: float
    needed: np.ndarray  # instances each hour
    reserved_instances: int
    on_demand: np.ndarray  # instances bought on demand each hour
    spot: np.ndarray  # spot instances each hour
    prices: Prices
    interruption: float | None
    total_usd: float
    all_on_demand_usd: float
    all_reserved_used_usd: float
    reserve_peak_usd: float
    output_tokens_per_request: float
    candidates: pd.DataFrame
    notes: tuple[str, ...] = field(default=())
    #: The interval columns of ``max_rate_per_instance`` (§F12; {} for an ideal bound).
    held: dict = field(default_factory=dict)

    def ends(self) -> dict[str, tuple[np.ndarray, float]]:
        """At each end of the instances' interval (low80, high80, low90, high90): the
        instances each hour needs and the cheapest plan's cost, made for the held load at the
        opposite end; {} for an ideal bound."""
        out = {}
        for key, column in zip(interval_keys(), interval_columns("max_rate_per_instance")):
            if column in self.held and self.held[column] > 0:
                needed = instances_needed(self.demand.requests_per_s, self.held[column])
                plan = hourly_plan(needed, self.gpus_per_instance, self.prices, self.interruption)
                out[_OPPOSITE[key]] = (needed, float(plan["total_usd"]))
        return out

    @property
    def hours(self) -> int:
        return len(self.needed)

    @property
    def output_tokens(self) -> float:
        return float(
            np.sum(self.demand.requests_per_s) * SECONDS_PER_HOUR * self.output_tokens_per_request
        )

    def summary(self) -> pd.Series:
        """The answer in one column."""
        n = self.gpus_per_instance
        return pd.Series(
            {
                "hardware": self.setting.gpu.name,
                "gpus_per_instance": n,
                "max_rate_per_instance": self.max_rate_per_instance,
                "hours": self.hours,
                "peak_instances": int(self.needed.max()),
                "reserved_instances": self.reserved_instances,
                "reserved_gpus": self.reserved_instances * n,
                "on_demand_hours": int(np.count_nonzero(self.on_demand)),
                "on_demand_instance_hours": int(self.on_demand.sum()),
                "spot_instance_hours": int(self.spot.sum()),
                "reserved_usd_per_gpu_hour": self.prices.reserved_usd,
                "burst_usd_per_gpu_hour": self.prices.burst_usd,
                "total_usd": self.total_usd,
                "all_on_demand_usd": self.all_on_demand_usd,
                "all_reserved_used_usd": self.all_reserved_used_usd,
                "reserve_peak_usd": self.reserve_peak_usd,
                "usd_per_m_output_tokens_all_in": self.total_usd / self.output_tokens * 1e6,
                "reserved_basis": self.prices.reserved_basis,
                "burst_basis": self.prices.burst_basis,
                **self.held,
                **self._cost_intervals(),
            }
        )

    def _cost_intervals(self) -> dict:
        ends = self.ends()
        out = {}
        for name, scale in (
            ("total_usd", 1.0),
            ("usd_per_m_output_tokens_all_in", 1e6 / self.output_tokens),
        ):
            for key, column in zip(interval_keys(), interval_columns(name)):
                if key in ends:
                    out[column] = ends[key][1] * scale
        return out

    def hourly(self) -> pd.DataFrame:
        """Hour by hour: demand, instances needed, reserved in use, on demand, spot."""
        ends = self.ends()
        return pd.DataFrame(
            {
                "hour": self.demand.hours,
                "requests_per_s": self.demand.requests_per_s,
                "instances": self.needed,
                "reserved_in_use": np.minimum(self.needed, self.reserved_instances),
                "on_demand": self.on_demand,
                "spot": self.spot,
                **{
                    column: ends[key][0]
                    for key, column in zip(interval_keys(), interval_columns("instances"))
                    if key in ends
                },
            }
        )


def plan_prices(
    setting: Setting, reserved: PriceBasis, burst: PriceBasis, spot: bool, costs=None, pue=None
) -> Prices:
    """A setting's GPU-hour on the reserved and burst bases (and spot when asked for)."""
    gpu = setting.gpu
    r, _ = price_gpu(gpu, reserved, costs if reserved == "owned" else None, pue)
    b, _ = price_gpu(gpu, burst, costs if burst == "owned" else None, pue)
    s = price_gpu(gpu, "spot")[0].price_usd_per_hour if spot else None
    return Prices(r.price_usd_per_hour, b.price_usd_per_hour, s, reserved, burst)


def demand_plan(
    settings: list[Setting],
    traffic: Traffic,
    targets: Targets,
    demand: DemandCurve,
    config: EngineConfig = DEFAULT_ENGINE,
    reserved_basis: PriceBasis = "owned",
    burst_basis: PriceBasis = "on-demand",
    interruption: float | None = None,
    costs=None,
    pue: float | None = None,
    sizes: list[int] | None = None,
    max_gpus: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> DemandPlan:
    """The cheapest plan (module docstring) over every GPU of ``settings`` and instance size;
    ``traffic`` gives the request lengths (its rate is the demand's peak). Where no GPU has
    a price on the bases the plan needs, that is bad input, refused before any simulation."""
    _check_some_priced(settings, reserved_basis, burst_basis, interruption is not None, costs, pue)
    rows = knee_rows(settings, traffic, targets, config, sizes, None, False, progress)
    output_tokens = float(np.mean(traffic.stream().output_tokens))
    table, plans = [], []
    notes = [demand.left_out.note()] if demand.left_out else []
    supports: dict[tuple, Support | None] = {}  # (GPU, size) -> its held load's class support
    run_notes: dict[tuple, tuple] = {}  # (GPU, size) -> what its knee's run could not judge
    unpriced: list[SpecError] = []  # candidates that hold a load but have no price to plan at
    for row in rows:
        setting, n, per = row["setting"], row["gpus_per_instance"], row["max_rate_per_instance"]
        entry, held, supports[(setting.gpu.name, n)] = _entry(row)
        run_notes[(setting.gpu.name, n)] = row["run_notes"]
        if not per > 0:
            table.append({**entry, "excluded": True, "note": row["note"]})
            continue
        try:
            prices = plan_prices(
                setting, reserved_basis, burst_basis, interruption is not None, costs, pue
            )
        except SpecError as exc:
            table.append({**entry, "excluded": True, "note": exc.problem})
            unpriced.append(exc)
            continue
        needed = instances_needed(demand.requests_per_s, per)
        if max_gpus is not None and needed.max() * n > max_gpus:
            note = f"the peak needs {needed.max() * n} GPUs > --max-gpus {max_gpus}"
            table.append({**entry, "excluded": True, "note": note})
            continue
        plan = _size_plan(
            demand, targets, setting, n, per, needed, prices, interruption, output_tokens, held
        )
        plans.append(plan)
        table.append(
            {
                **entry,
                "reserved_instances": plan.reserved_instances,
                "peak_instances": int(needed.max()),
                "total_usd": plan.total_usd,
                "all_on_demand_usd": plan.all_on_demand_usd,
                "excluded": False,
                "note": "",
            }
        )
    if not plans:
        raise _unpriced(unpriced[0]) if unpriced else _no_plan(table, targets, demand)
    best_plan = min(plans, key=lambda p: (p.total_usd, p.gpus_per_instance))
    frame = pd.DataFrame(table).sort_values(["excluded", "total_usd"], kind="stable")
    frame["chosen"] = [
        r.hardware == best_plan.setting.gpu.name
        and r.gpus_per_instance == best_plan.gpus_per_instance
        for r in frame.itertuples()
    ]
    if interruption is not None and not best_plan.spot.any():
        notes.append(_unused_spot(best_plan))
    key = (best_plan.setting.gpu.name, best_plan.gpus_per_instance)
    notes += list(run_notes.get(key, ()))
    chosen = supports.get(key)
    if chosen is not None and chosen.status != "in support":
        notes.append(plan_line(chosen))
    return _with(best_plan, frame.reset_index(drop=True), tuple(notes))


def _unused_spot(plan: DemandPlan) -> str:
    """Why a plan offered spot capacity buys none: no hour needs more than the reserved
    instances, or spot costs more than on-demand once its losses are made up."""
    if not plan.on_demand.any():
        return (
            "spot capacity was offered but no hour needs more than the "
            f"{plan.reserved_instances} reserved {plural(plan.reserved_instances, 'instance')}"
        )
    return "spot capacity was offered but on-demand was cheaper per effective instance"


def _entry(row: dict) -> tuple[dict, dict, Support | None]:
    """A knee row's entry in the candidates table (its GPU, size, layout and held load, with
    that load's intervals, §F12, and the support of the class they are sized on), those
    intervals, and that support (None under an ideal bound)."""
    setting = row["setting"]
    entry = {
        "hardware": setting.gpu.name,
        "gpus_per_instance": row["gpus_per_instance"],
        "layout": row["layout"],
        "max_rate_per_instance": row["max_rate_per_instance"],
    }
    held = renamed_intervals(row["held"], "max_rate_per_s", "max_rate_per_instance")
    entry.update(held)
    support = candidate_support(row) if held else None
    if support is not None:
        entry["support"] = support.label()
    return entry, held, support


def _unpriced(exc: SpecError) -> SpecError:
    """A candidate held a load but its GPU has no price on a basis the plan needs: bad input
    (no plan failed its targets), with the options that choose the bases."""
    return SpecError(
        exc.source, exc.field, exc.problem,
        "choose another --reserved-basis or --burst-basis (or drop --spot-interruption), "
        "or add the price to the GPU's file",
    )  # fmt: skip


def _check_some_priced(settings, reserved, burst, spot: bool, costs, pue) -> None:
    """Raise ``_unpriced``'s error where no setting's GPU has a price on every basis the plan
    needs (a GPU without one is left out of the plan, with the others planned)."""
    first = None
    for setting in settings:
        try:
            plan_prices(setting, reserved, burst, spot, costs, pue)
            return
        except SpecError as exc:
            first = first or exc
    if first is not None:
        raise _unpriced(first)


def _no_plan(table: list[dict], targets: Targets, demand: DemandCurve) -> InfeasibleError:
    """The error when no candidate makes a plan, naming each one's reason."""
    reasons = "; ".join(
        sorted(
            {f"{r['hardware']} x{r['gpus_per_instance']}: {r['note']}" for r in table if r["note"]}
        )
    )
    return InfeasibleError(
        f"no capacity plan meets {targets.describe()} for {demand.describe()} ({reasons})"
    )


def _size_plan(
    demand: DemandCurve,
    targets: Targets,
    setting: Setting,
    n: int,
    per: float,
    needed: np.ndarray,
    prices: Prices,
    interruption: float | None,
    output_tokens: float,
    held: dict,
) -> DemandPlan:
    """The cheapest plan of instances of ``n`` GPUs holding ``per`` requests/s each (``needed``
    of them each hour of the demand) at ``prices``, with what every instance-hour on demand, at
    the cheapest basis, or the peak reserved all day would cost beside it."""
    best = hourly_plan(needed, n, prices, interruption)
    used = needed.sum() * n
    cheapest = min(prices.reserved_usd, prices.burst_usd)
    if interruption is not None and prices.spot_usd is not None:
        cheapest = min(cheapest, prices.spot_usd / (1.0 - interruption))
    return DemandPlan(
        demand=demand,
        targets=targets,
        setting=setting,
        gpus_per_instance=n,
        max_rate_per_instance=per,
        needed=needed,
        reserved_instances=best["reserved"],
        on_demand=best["on_demand"],
        spot=best["spot"],
        prices=prices,
        interruption=interruption,
        total_usd=best["total_usd"],
        all_on_demand_usd=float(used * prices.burst_usd),
        all_reserved_used_usd=float(used * cheapest),
        reserve_peak_usd=float(len(needed) * needed.max() * n * prices.reserved_usd),
        output_tokens_per_request=output_tokens,
        candidates=pd.DataFrame(),
        held=held,
    )


def _with(plan: DemandPlan, candidates: pd.DataFrame, notes) -> DemandPlan:
    import dataclasses

    return dataclasses.replace(plan, candidates=candidates, notes=notes)
