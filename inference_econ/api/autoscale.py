"""Autoscaling a demand curve (docs/model-part-e.md §E14): the hourly plan of ``demand_plan``,
then a scaling policy's day with instances that take minutes to come up, its best target and
its cost beside the hourly plan's."""

from __future__ import annotations

import dataclasses
import numbers
from typing import TYPE_CHECKING

from .. import settings as table
from ..errors import SpecError
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
    of ``weights_source`` (or ``startup_s``), scale-downs held for ``scale_down_window_s``; the
    cheapest target within ``miss_budget`` (a share of requests that may miss) is chosen.

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
    from ..optimise.autoscale import autoscale_search

    scaling = _scaling(settings)
    policy = scaling.get("autoscale") or "hpa"
    make_policy(policy)  # an unknown policy is refused before any search
    search = _checked_search(policy, search)
    _no_spot(settings)
    curve = load_demand(demand)
    plan = demand_plan(
        model, hardware, demand=curve, traffic=traffic, targets=targets, config=config,
        sizes=sizes, progress=progress, yes=yes, **settings,
    )  # fmt: skip
    inputs = _peak_inputs(settings, curve.peak_per_s, traffic, targets, config)
    return autoscale_search(
        plan,
        policy,
        _delay(plan, scaling),
        time_in_system_s=_time_in_system(plan, inputs),
        window_s=scaling.get("scale_down_window_s", 300.0),
        miss_budget=scaling.get("miss_budget", 0.01),
        seed=inputs.traffic.seed,
        targets=search,
    )


def _scaling(settings: dict) -> dict:
    """The settings of the scaling itself, taken out of ``settings`` and checked against the
    table (a miss budget in [0, 1], a window of at most a day, ...)."""
    scaling = {k: settings.pop(k) for k in _SCALING if k in settings}
    return {k: v for k, v in table.check_each(scaling).items() if v is not None}


def _checked_search(policy: str, search):
    """The targets tried (None: the policy's grid), refused before any search where they are
    not a non-empty sequence of the policy's shares (``make_policy`` checks each)."""
    from ..load.autoscaling import make_policy

    if search is None:
        return None
    if isinstance(search, (str, bytes)) or not hasattr(search, "__iter__"):
        raise SpecError(
            "argument", "search", f"is {search!r}", "give a list of targets, e.g. [0.8, 0.9]"
        )
    targets = tuple(search)
    if not targets:
        raise SpecError(
            "argument", "search", "is empty", "give at least one target, or leave search out"
        )
    for target in targets:
        if isinstance(target, bool) or not isinstance(target, numbers.Real):
            raise SpecError(
                "argument", "search", f"holds {target!r}", "give numbers, e.g. [0.8, 0.9]"
            )
        make_policy(policy, target)
    return targets


def _no_spot(settings: dict) -> None:
    """Refuse spot capacity: a scaled day prices every instance on the burst basis."""
    if settings.get("spot_interruption_rate") is not None:
        raise SpecError(
            "argument",
            "spot_interruption_rate",
            "does not apply with autoscale: a scaled day prices every instance on the burst "
            "basis and models no spot interruptions",
            "drop it, or plan the hourly mix with spot without autoscale",
        )


def _peak_inputs(settings: dict, peak: float, traffic, targets, config):
    """The load's typed inputs at the curve's peak, as the hourly plan built them."""
    if traffic is not None:
        traffic = dataclasses.replace(traffic, rate_per_s=peak)
    flat = {k: v for k, v in settings.items() if k != "costs"}
    flat = _at_demand_peak(flat, peak, traffic is None)
    return load_inputs(flat, traffic, targets, config, present=("demand",))


def _delay(plan, scaling: dict):
    """A new instance's start-up: stated outright, or from where its weights come from."""
    from ..load.startup import given_delay, startup_delay

    if scaling.get("startup_s") is not None:
        return given_delay(scaling["startup_s"])
    source = scaling.get("weights_source") or "local-ssd"
    return startup_delay(plan.setting, plan.gpus_per_instance, source)


def _time_in_system(plan, inputs) -> float:
    """The mean seconds a request spends in one instance at its knee (the knee search's own
    run, kept: Little's law turns it into the requests outstanding)."""
    from ..load.deployment import Deployment
    from ..optimise.load_search import run_at

    n, per = plan.gpus_per_instance, plan.max_rate_per_instance
    traffic = inputs.traffic.at_rate(per)
    return run_at("deployment", plan.setting, Deployment(n, 1), traffic, inputs.config).e2e_s.mean
