"""Serving a demand curve with instances that scale (docs/model-part-e.md §E14): a scaling
policy's day simulated at each of a few targets (``load.autoscaling.SEARCH_GRID``), the
cheapest whose requests missing their targets stay within a budget chosen, and the hourly plan
of ``capacity --demand`` (§G5) simulated the same way beside it: its instances asked for the
start-up delay before each hour, so that they serve when the hour begins.

Every instance is paid from when it is asked for to when it is let go, at the price the hourly
plan pays for capacity bought by the hour (its burst basis); the same day above the hourly
plan's reserved base is priced too (the reserved instances all day at the reserved price, the
rest at the burst price).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..columns import SECONDS_PER_HOUR
from ..errors import InfeasibleError, SpecError, plural
from ..load.autoscaling import SEARCH_GRID, Scheduled, make_policy
from ..load.scaled_pool import BIN_S, ScaledPool, ScaledRun, arrival_counts, simulate_scaled_day
from ..load.startup import StartupDelay
from ..serving.figure_labels import LEVELS, interval_columns, interval_keys
from .demand import DemandPlan


@dataclass(frozen=True, eq=False)
class AutoscalePlan:
    """A policy's best target for a demand curve, every target tried, and the hourly plan's
    day beside it."""

    plan: DemandPlan
    policy: str
    startup: StartupDelay
    pool: ScaledPool
    miss_budget: float
    best: ScaledRun
    tried: tuple[ScaledRun, ...]
    hourly: ScaledRun

    def gpu_hours(self, run: ScaledRun) -> float:
        return run.instance_hours * self.plan.gpus_per_instance

    def usd(self, run: ScaledRun) -> float:
        """The day's instances at the burst price, from when each was asked for."""
        return self.gpu_hours(run) * self.plan.prices.burst_usd

    def usd_with_reserved(self, run: ScaledRun) -> float:
        """The day with the hourly plan's reserved base paid all day at the reserved price and
        the instances above it at the burst price."""
        n, prices, base = (
            self.plan.gpus_per_instance,
            self.plan.prices,
            self.plan.reserved_instances,
        )
        above = np.maximum(run.asked - base, 0.0).sum() * run.bin_s / SECONDS_PER_HOUR
        hours = len(run.asked) * run.bin_s / SECONDS_PER_HOUR
        return n * (base * hours * prices.reserved_usd + above * prices.burst_usd)

    def row(self, run: ScaledRun) -> dict:
        """One day's figures: target, GPU-hours, cost, and the requests that missed."""
        return {
            "policy": run.policy.name,
            "target": run.policy.target,
            "gpu_hours": self.gpu_hours(run),
            "usd": self.usd(run),
            "usd_with_reserved": self.usd_with_reserved(run),
            "peak_instances": int(run.asked.max()),
            "missed_requests": run.missed_requests,
            "missed_share": run.missed_share,
            "within_budget": run.missed_share <= self.miss_budget,
        }

    def ends(self) -> dict[str, ScaledRun]:
        """The chosen target's day again where an instance holds each end of the held load's
        interval (``plan.held``: low80, high80, low90, high90) while the policy scales by the
        expected one, as it is configured; {} for an ideal bound."""
        out = {}
        best = self.best
        for key, column in zip(interval_keys(), interval_columns("max_rate_per_instance")):
            held = self.plan.held.get(column)
            if held is not None and held > 0:
                pool = replace(self.pool, serving_per_instance=float(held))
                out[key] = simulate_scaled_day(best.arrivals, pool, best.policy, best.bin_s)
        return out

    def _day_intervals(self) -> dict:
        """The interval columns of the chosen day's figures: at each level, the lesser and the
        greater of its value at the two ends of the held load and its expected value."""
        ends = self.ends()
        out: dict = {}
        if not ends:
            return out
        expected = self.row(self.best)
        for name in ("gpu_hours", "usd", "usd_with_reserved", "missed_share"):
            for level in LEVELS:
                values = [
                    expected[name],
                    *(self.row(ends[f"{e}{level}"])[name] for e in ("low", "high")),
                ]
                out[f"{name}_low{level}"] = min(values)
                out[f"{name}_high{level}"] = max(values)
        return out

    def candidates(self) -> pd.DataFrame:
        """Every target tried (the chosen one marked), then the hourly plan's day."""
        rows = [{**self.row(r), "chosen": r is self.best} for r in self.tried]
        rows.append({**self.row(self.hourly), "chosen": False})
        return pd.DataFrame(rows)

    def summary(self) -> pd.Series:
        """The chosen target's day beside the hourly plan's."""
        best, hourly = self.row(self.best), self.row(self.hourly)
        return pd.Series(
            {
                "hardware": self.plan.setting.gpu.name,
                "gpus_per_instance": self.plan.gpus_per_instance,
                "max_rate_per_instance": self.plan.max_rate_per_instance,
                "policy": self.best.policy.describe(),
                "startup_s": self.startup.total_s,
                "scale_down_window_s": self.pool.window_s,
                "requests": self.best.requests,
                "gpu_hours": best["gpu_hours"],
                "usd": best["usd"],
                "usd_with_reserved": best["usd_with_reserved"],
                "missed_requests": best["missed_requests"],
                "missed_share": best["missed_share"],
                **self.plan.held,
                **self._day_intervals(),
                "hourly_plan_gpu_hours": hourly["gpu_hours"],
                "hourly_plan_usd": hourly["usd"],
                "hourly_plan_usd_with_reserved": hourly["usd_with_reserved"],
                "hourly_plan_missed_requests": hourly["missed_requests"],
                "burst_usd_per_gpu_hour": self.plan.prices.burst_usd,
            }
        )

    def timeline(self) -> pd.DataFrame:
        """Minute by minute: requests, those that missed, instances paid and serving (the chosen
        target and the hourly plan), and the cumulative cost of each."""
        out: dict[str, np.ndarray] = {}
        for label, run in (("autoscaled", self.best), ("hourly_plan", self.hourly)):
            minutes = run.per_minute(run.asked) * run.bin_s / 60.0
            out[f"{label}_instances_paid"] = minutes
            out[f"{label}_instances_serving"] = run.per_minute(run.ready) * run.bin_s / 60.0
            out[f"{label}_missed"] = run.per_minute(run.missed)
            cost = minutes / 60.0 * self.plan.gpus_per_instance * self.plan.prices.burst_usd
            out[f"{label}_usd"] = np.cumsum(cost)
        requests = self.best.per_minute(self.best.arrivals)
        return pd.DataFrame({"minute": np.arange(len(requests)), "requests": requests, **out})


def autoscale_search(
    plan: DemandPlan,
    policy: str,
    startup: StartupDelay,
    *,
    time_in_system_s: float,
    window_s: float = 300.0,
    miss_budget: float = 0.01,
    seed: int = 0,
    targets=None,
    arrivals: np.ndarray | None = None,
) -> AutoscalePlan:
    """``policy`` at each target of ``targets`` (None: ``SEARCH_GRID``) over the day of
    ``plan``'s curve (a Poisson stream; or ``arrivals``, requests per one-second bin of its
    hours, e.g. a trace's ``load.scaled_pool.trace_counts``), the cheapest within ``miss_budget``
    chosen (the fewer misses on a tie); the requests' wait allowance is the TTFT target (else
    the end-to-end one, else 1 s)."""
    per = plan.max_rate_per_instance
    pool = ScaledPool(
        per_instance=per,
        startup_s=startup.total_s,
        window_s=window_s,
        allowance_s=_allowance(plan),
        time_in_system_s=time_in_system_s,
        max_instances=_max_instances(plan),
    )
    if arrivals is None:
        arrivals = arrival_counts(plan.demand.requests_per_s, seed, BIN_S)
    elif len(arrivals) != plan.hours * SECONDS_PER_HOUR / BIN_S:
        raise SpecError(
            "argument",
            "arrivals",
            f"has {len(arrivals)} bins for {plan.hours} {plural(plan.hours, 'hour')} of demand",
            f"give one count per second of the curve's hours ({plan.hours * 3600:,})",
        )
    grid = SEARCH_GRID[policy] if targets is None else tuple(targets)
    lead = startup.total_s
    tried = tuple(simulate_scaled_day(arrivals, pool, make_policy(policy, t, lead)) for t in grid)
    on_time = Scheduled(tuple(int(k) for k in plan.needed), lead_s=lead)
    hourly = simulate_scaled_day(
        arrivals,
        # the hourly plan's own counts, none at an hour it needs none (a reactive policy keeps
        # one instance up, as an HPA's minReplicas does)
        ScaledPool(per, startup.total_s, 0.0, pool.allowance_s, min_instances=0),
        on_time,
        initial=int(plan.needed[0]),
    )
    fits = [r for r in tried if r.missed_share <= miss_budget]
    if not fits:
        raise InfeasibleError(_unmet(policy, tried, miss_budget, startup))
    best = min(fits, key=lambda r: (r.instance_hours, r.missed_requests))
    return AutoscalePlan(plan, policy, startup, pool, miss_budget, best, tried, hourly)


def _allowance(plan: DemandPlan) -> float:
    """Seconds a request may wait for capacity before it has missed its targets."""
    t = plan.targets
    return float(t.ttft_p99_s or t.e2e_p99_s or 1.0)


def _max_instances(plan: DemandPlan) -> int | None:
    """The instances ``--max-gpus`` allows (None: no cap)."""
    cap = plan.setting.max_gpus
    return None if cap is None else max(1, cap // plan.gpus_per_instance)


def _unmet(policy: str, tried, budget: float, startup: StartupDelay) -> str:
    """One line: the budget no target met, the best one's share, and what to change."""
    best = min(tried, key=lambda r: r.missed_share)
    p = best.policy
    return (
        f"no {p.knob} of --autoscale {policy} keeps the requests that miss their targets within "
        f"--miss-budget {budget:g}: the best ({p.knob} {p.target:g}) misses "
        f"{best.missed_share:.2%} with a {startup.total_s:.0f} s start-up; raise --miss-budget, "
        "load the weights faster (--weights-from peer-gpu) or try another --autoscale policy"
    )
