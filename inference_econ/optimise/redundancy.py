"""Capacity sized for failures (docs/model.md §E11): the N+1 plan verified by simulation
with one instance of each pool down, and what that redundancy costs."""

from __future__ import annotations

import dataclasses
import math

from ..load.arrivals import Traffic
from ..load.deployment import Deployment, Pool
from ..load.engine import EngineConfig
from ..load.failures import Failures, expected_capacity
from .candidates import MAX_BUMPS
from .capacity_plan import CapacityPlan, Redundancy
from .load_search import run_at


def grow(d: Deployment, pool: Pool, by: int) -> Deployment:
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
        n1 = grow(n1, kind, 1)
    for _ in range(MAX_BUMPS + 1):
        one_down = tuple(
            (
                f"one {kind} instance down" if d.disaggregated else "one instance down",
                run_at("deployment", s, grow(n1, kind, -1), traffic, config).with_targets(targets),
            )
            for kind in kinds
        )
        failing = [k for k, (_, r) in zip(kinds, one_down) if not r.meets_targets]
        if not failing:
            break
        for kind in failing:
            n1 = grow(n1, kind, 1)
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
