"""Capacity sized for failures (docs/model.md §E11): the N+1 plan verified by simulation
with one instance of each pool down, and what that redundancy costs."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..load.arrivals import Traffic
from ..load.deployment import Deployment, Pool
from ..load.engine import EngineConfig
from ..load.failures import Failures, expected_capacity
from ..load.results import LoadResult
from ..serving.setting import Setting
from .candidates import MAX_BUMPS
from .load_search import run_at

if TYPE_CHECKING:
    from .capacity import CapacityPlan


@dataclass(frozen=True)
class Redundancy:
    """A capacity plan sized for failures (docs/model.md §E11): the expected capacity the
    cheapest plan loses, the plan with one more instance per pool (N+1) verified by
    simulation with one instance down, and what that redundancy costs."""

    #: The N+1 plan's setting (its GPU may differ from the cheapest plan's).
    setting: Setting
    failures: Failures
    #: (pool, instances, GPUs per instance, share of time each instance is down) of the plan.
    pools: tuple[tuple[str, int, int, float], ...]
    #: Expected requests/s the cheapest plan holds over time, and the share of time it has
    #: an instance down (below the capacity it was verified at).
    expected_max_rate_per_s: float
    degraded_probability: float
    deployment: Deployment
    #: The N+1 plan at the full load, and with one instance of each pool down.
    result: LoadResult
    one_down: tuple[tuple[str, LoadResult], ...]
    #: The probability that more instances are down than the N+1 plan was verified without.
    shortfall_probability: float
    extra_usd_per_hour: float
    base_usd_per_hour: float

    @property
    def holds(self) -> bool:
        """Every one-instance-down simulation meets the targets."""
        return all(r.meets_targets for _, r in self.one_down)

    def summary(self) -> dict:
        """The failure figures of the plan, for its summary column (expected figures)."""
        return {
            "gpu_mtbf_hours": self.failures.gpu_mtbf_hours,
            "repair_hours": self.failures.repair_hours,
            "instance_unavailability": max(u for *_, u in self.pools),
            "expected_max_rate_per_s": self.expected_max_rate_per_s,
            "degraded_probability": self.degraded_probability,
            "n_plus_one_deployment": f"{self.deployment.describe()} {self.setting.gpu.name}",
            "n_plus_one_usd_per_hour": self.result.usd_per_hour,
            "n_plus_one_usd_per_m_output_tokens_all_in": self.result.usd_per_m_output_tokens_all_in,
            "redundancy_usd_per_hour": self.extra_usd_per_hour,
            "redundancy_cost_fraction": self.extra_usd_per_hour / self.base_usd_per_hour,
            "n_plus_one_holds_one_down": self.holds,
            "n_plus_one_shortfall_probability": self.shortfall_probability,
        }


def _grow(d: Deployment, pool: Pool, by: int) -> Deployment:
    """The deployment with ``by`` more instances in ``pool`` ("decode": the main pool)."""
    if pool == "prefill":
        return dataclasses.replace(d, prefill_instances=d.prefill_instances + by)
    return dataclasses.replace(d, instances=d.instances + by)


def n_plus_one(
    plan: CapacityPlan,
    traffic: Traffic,
    config: EngineConfig,
    failures: Failures,
    progress=None,
    rows: list[dict] | None = None,
) -> Redundancy:
    """Size ``plan`` for failures (§E11): one more instance in each pool, then more while a
    simulation at the full load with one instance of a pool down misses a target. A
    co-located plan takes the candidate (``rows``: GPU and instance size) whose instances plus
    one cost least: smaller instances make cheaper spares."""
    d, s, targets = plan.deployment, plan.setting, plan.targets
    if not d.disaggregated and rows:
        best = min(
            (r for r in rows if r["pool"] == "deployment" and not r["excluded"] and r["instances"]),
            key=lambda r: (
                (r["instances"] + 1) * r["gpus_per_instance"] * r["setting"].gpu.price_usd_per_hour,
                r["setting"] is not s or r["gpus_per_instance"] != d.gpus_per_instance,
            ),
        )
        s = best["setting"]
        d = Deployment(best["gpus_per_instance"], max(best["instances"], 1))
        if (s, d.gpus_per_instance) == (plan.setting, plan.deployment.gpus_per_instance):
            d = plan.deployment  # the plan's own, as verified
    kinds: tuple[Pool, ...] = ("prefill", "decode") if d.disaggregated else ("decode",)
    n1 = d
    for kind in kinds:
        n1 = _grow(n1, kind, 1)
    for _ in range(MAX_BUMPS + 1):
        one_down = tuple(
            (
                f"one {kind} instance down" if d.disaggregated else "one instance down",
                run_at("deployment", s, _grow(n1, kind, -1), traffic, config).with_targets(targets),
            )
            for kind in kinds
        )
        failing = [k for k, (_, r) in zip(kinds, one_down) if not r.meets_targets]
        if not failing:
            break
        for kind in failing:
            n1 = _grow(n1, kind, 1)
    if progress:
        progress(f"N+1: {n1.describe()} {s.gpu.name}, checked with one instance down")
    full = run_at("deployment", s, n1, traffic, config).with_targets(targets)
    n1_setting = s
    # what the cheapest plan holds over time: each pool's instances at what one holds
    d = plan.deployment
    kinds = ("prefill", "decode") if d.disaggregated else ("decode",)
    chosen = plan.candidates[plan.candidates["chosen"]]
    each = {r.pool: r.max_rate_per_instance for r in chosen.itertuples()}
    sizes = {
        "decode": (d.instances, d.gpus_per_instance, each.get("decode", each.get("deployment"))),
        "prefill": (d.prefill_instances, d.prefill_gpus_per_instance, each.get("prefill")),
    }
    pools = tuple(
        (kind if d.disaggregated else "deployment", n, g, failures.unavailability(g))
        for kind, (n, g, _) in ((k, sizes[k]) for k in kinds)
    )
    mean, _, _ = expected_capacity([sizes[k] for k in kinds], failures)
    up = math.prod(float(failures.down(n, g)[0]) for n, g, _ in (sizes[k] for k in kinds))
    extra = {
        "decode": (n1.instances, n1.gpus_per_instance),
        "prefill": (n1.prefill_instances, n1.prefill_gpus_per_instance),
    }
    # verified with one instance of a pool down: more than one down at once is not covered
    covered = math.prod(1.0 - failures.more_down_than(1, *extra[k]) for k in kinds)
    return Redundancy(
        setting=n1_setting,
        failures=failures,
        pools=pools,
        expected_max_rate_per_s=mean,
        degraded_probability=1.0 - up,
        deployment=n1,
        result=full,
        one_down=one_down,
        shortfall_probability=1.0 - covered,
        extra_usd_per_hour=full.usd_per_hour - plan.result.usd_per_hour,
        base_usd_per_hour=plan.result.usd_per_hour,
    )
