"""Autoscaling a demand curve (docs/model-part-e.md §E13): the hourly plan of ``demand_plan``,
then a scaling policy's day with instances that take minutes to come up, its best target and
its cost beside the hourly plan's."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from .. import settings as table
from .load import _at_demand_peak, demand_plan
from .load_setup import load_inputs

if TYPE_CHECKING:
    from ..load.arrivals import Traffic
    from ..load.engine import EngineConfig
    from ..load.targets import Targets
    from ..optimise.autoscale import AutoscalePlan

#: The settings of the scaling itself, taken out before the hourly plan is made.
_SCALING = ("autoscale", "weights_source", "startup_s", "scale_down_window_s", "miss_budget")


@table.takes(table.PROBLEM, table.LOAD, command="capacity")
def autoscale_plan(
    model,
    hardware=None,
    *,
    demand,
    traffic: Traffic | None = None,
    targets: Targets | None = None,
    config: EngineConfig | None = None,
    sizes=None,
    search=None,
    progress=None,
    yes=False,
    **settings,
) -> AutoscalePlan:
    """A demand curve served by instances that scale, priced with their start-up delays.

    The hourly plan first (``demand_plan``: the instance size and the load one instance holds
    within the ``slo_*`` targets), then the day of the curve as a non-homogeneous Poisson
    stream under the ``autoscale`` policy (``hpa``, ``keda`` or ``planner``) at each target of
    a small grid: instances paid from when they are asked for, serving after the start-up delay
    of ``weights_source`` (or ``startup_s``), scale-downs held for ``scale_down_window_s``. The
    cheapest target whose requests missing their targets stay within ``miss_budget`` is chosen.

    Parameters
    ----------
    model : str, Architecture or Setting
        The model served.
    hardware : str, GPU or list of them, optional
        The GPUs the hourly plan searches.
    demand : str or DemandCurve
        The hourly demand (a CSV path or a ``DemandCurve``).
    traffic, targets, config : Traffic, Targets, EngineConfig, optional
        The load's lengths, the latency targets and the scheduler's limits, typed.
    sizes : list of int, optional
        Instance sizes (GPUs) searched.
    search : sequence of float, optional
        The policy's targets tried (default ``load.autoscaling.SEARCH_GRID``'s).
    progress : callable, optional
        Called with a line of text as the work goes.
    yes : bool
        Run work estimated at more than ten minutes.
    **settings
        Settings of what is served, flat load settings, and ``autoscale`` (default ``hpa``),
        ``weights_source``, ``startup_s``, ``scale_down_window_s``, ``miss_budget``.

    Returns
    -------
    AutoscalePlan
        The chosen target's day, every target's, and the hourly plan's day beside them.

    Raises
    ------
    InfeasibleError
        No target keeps the missed requests within the budget (one line naming what to change).
    """
    from ..load.autoscaling import make_policy
    from ..load.demand import load_demand
    from ..load.deployment import Deployment
    from ..load.startup import given_delay, startup_delay
    from ..optimise.autoscale import autoscale_search
    from ..optimise.load_search import run_at

    scaling = {k: settings.pop(k) for k in _SCALING if k in settings}
    policy = scaling.get("autoscale") or "hpa"
    make_policy(policy)  # an unknown policy is refused before any search
    curve = load_demand(demand)
    plan = demand_plan(
        model, hardware, demand=curve, traffic=traffic, targets=targets, config=config,
        sizes=sizes, progress=progress, yes=yes, **settings,
    )  # fmt: skip
    flat = _at_demand_peak(
        {k: v for k, v in settings.items() if k != "costs"}, curve.peak_per_s, traffic is None
    )
    if traffic is not None:
        traffic = dataclasses.replace(traffic, rate_per_s=curve.peak_per_s)
    inputs = load_inputs(flat, traffic, targets, config)
    n, per = plan.gpus_per_instance, plan.max_rate_per_instance
    knee = run_at(
        "deployment", plan.setting, Deployment(n, 1), inputs.traffic.at_rate(per), inputs.config
    )
    seconds = scaling.get("startup_s")
    source = scaling.get("weights_source") or "local-ssd"
    delay = given_delay(seconds) if seconds is not None else startup_delay(plan.setting, n, source)
    return autoscale_search(
        plan,
        policy,
        delay,
        time_in_system_s=knee.e2e_s.mean,
        window_s=scaling.get("scale_down_window_s", 300.0),
        miss_budget=scaling.get("miss_budget", 0.01),
        seed=inputs.traffic.seed,
        targets=search,
    )
