"""Serving under load (docs/model.md Part E): one deployment simulated, the most load it
serves, and the cheapest deployments, plans and frontiers within latency targets. Each takes
the load as ``Traffic``, ``Targets`` and ``EngineConfig`` objects, or as flat settings
(``arrival_rate_per_s=...``, ``slo_ttft_p99_s=...``) that ``load_inputs`` turns into them."""

from __future__ import annotations

import dataclasses
from contextlib import nullcontext
from typing import TYPE_CHECKING

from .. import settings as table
from ..errors import InfeasibleError, SpecError, warn
from ..serving.setting import Setting
from ..specs.schema import check_number
from .load_setup import (
    LoadInputs,
    checked_progress,
    checked_yes,
    given_deployment,
    load_inputs,
    need_targets,
    on_gpu,
    settings_per_gpu,
)

if TYPE_CHECKING:  # imported on first use: the command line starts without them
    from ..load.arrivals import Traffic
    from ..load.deployment import Deployment
    from ..load.engine import EngineConfig
    from ..load.results import LoadResult
    from ..load.targets import Targets
    from ..model.mixed_step import EngineLayout
    from ..optimise.capacity_plan import CapacityPlan
    from ..optimise.demand import DemandPlan
    from ..optimise.load_frontier import LoadFrontier
    from ..optimise.load_search import MaxLoad


@table.takes(table.PROBLEM, table.LOAD, command="simulate")
def simulate_load(
    model,
    hardware=None,
    *,
    gpus,
    prefill_gpus=None,
    traffic: Traffic | None = None,
    targets: Targets | None = None,
    config: EngineConfig | None = None,
    progress=None,
    yes=False,
    timeline: bool = False,
    **settings,
) -> LoadResult:
    """One deployment under one load (docs/model.md Part E).

    ``instances`` instances of ``gpus`` GPUs (with ``prefill_gpus`` x ``prefill_instances`` a
    separate prefill pool) serving ``arrival_rate_per_s`` requests/s of ``input_lengths`` /
    ``output_lengths`` (or a ``trace``; or a closed loop of ``concurrency`` clients, each
    sending its next request when its last one finishes).

    Parameters
    ----------
    model : str, Architecture or Setting
        The model served (a Setting: no other setting of what is served).
    hardware : str or GPU, optional
        The GPU.
    gpus, prefill_gpus : float, optional
        GPUs per instance, and per prefill instance of a separate prefill pool.
    traffic, targets, config : Traffic, Targets, EngineConfig, optional
        The load, the latency targets and the scheduler's limits, typed (``load_inputs``
        builds those not given from the flat settings).
    progress : callable, optional
        Called with a line of text as the work goes.
    yes : bool
        Run work estimated at more than ten minutes.
    timeline : bool
        Record the simulated schedule step by step: the result's ``timeline``
        (``Timeline.to_json()`` is a Perfetto / chrome://tracing file, docs/model.md §E12).
    **settings
        Settings of what is served and flat load settings (``inference_econ/settings/``);
        ``prompt_tokens`` / ``output_tokens`` are every request's lengths here (the load's
        ``input_lengths`` / ``output_lengths``, refused beside them, a trace or a traffic).

    Returns
    -------
    LoadResult
        TTFT, TPOT and end-to-end distributions, throughput, goodput against the ``slo_*``
        targets, utilisation and $ per million tokens.
    """
    from ..load.deployment import fixed_layout
    from ..optimise.load_search import check_budget
    from ..serving.intervals import expected, interval_keys

    checked_progress(progress)
    own = ("gpus",) if prefill_gpus is None else ("gpus", "prefill_gpus")
    inputs = load_inputs(settings, traffic, targets, config, closed_loop=True, present=own)
    problem, traffic, targets, config, v = inputs
    setting = settings_per_gpu(model, hardware, problem)[0]
    d = given_deployment(
        setting, gpus, v["instances"], prefill_gpus, v["prefill_instances"], v, model, problem
    )
    runs = 2 if d.disaggregated else 1
    runs += len(interval_keys()) if expected(setting) else 0  # the counts' interval ends
    layout, setting = _fixed_layout(setting, d, v["layout"])
    check_budget(traffic, runs, "simulate", checked_yes(yes))
    if not isinstance(timeline, bool):
        raise SpecError("argument", "timeline", f"is {timeline!r}", "True or False")
    with fixed_layout(d.gpus_per_instance, layout):
        result = _simulated(setting, d, traffic, targets, config, progress, timeline)
    if result.requests and result.rejected >= result.requests:
        raise InfeasibleError(
            f"no request fits in one instance's KV cache: all {result.requests} requests "
            f"({traffic.describe(with_rate=False)}) were rejected on {d.describe()} "
            f"{setting.gpu.name}; give more GPUs per instance (--gpus), shorter requests or "
            "fewer KV-cache bits (--kv-bits)"
        )
    if result.overloaded_note:
        warn(result.overloaded_note)
    return result


def _simulated(setting, d, traffic, targets, config, progress, timeline: bool) -> LoadResult:
    """The deployment's run with the interval ends of its counts (``counted_ends``) and,
    with ``timeline``, the schedule of its own run (not of the interval ends' runs)."""
    from ..load.deployment import counted_ends, simulate_deployment
    from ..load.timeline import recording

    with recording() if timeline else nullcontext() as recorded:
        result = simulate_deployment(setting, d, traffic, targets, config, progress)
    ends = counted_ends(setting, d, traffic, targets, config, result)
    if ends is not None:
        result = dataclasses.replace(result, count_ends=ends)
    if recorded is not None:
        simulated, whole = result.instances_simulated, result.instances
        if d.disaggregated:
            recorded.name_pools(d.prefill_instances, d.instances)
        elif simulated < whole:  # a router that needs no others: one
            recorded.stands_for = (
                f"{simulated} simulated for the deployment's {whole} instances, each serving "
                "its share alike (docs/model.md §E10)"
            )
        result = dataclasses.replace(result, timeline=recorded)
    return result


def _fixed_layout(
    setting: Setting, deployment: Deployment, text: str | None
) -> tuple[EngineLayout | None, Setting]:
    """The ``EngineLayout`` a ``layout`` text states for the deployment's instances (as
    measured rows state theirs: ``measured.layouts.layout_of``), one the engine runs
    on that many GPUs, and the setting with the experts placed as the text states them
    (``stated_experts``: "EP8" split over the tensor group at every batch, "EP1" never, no EP
    degree §A5's rule); (None, the setting) where not given."""
    if text is None:
        return None, setting
    from ..load.deployment import instance_layouts
    from ..measured.layouts import layout_of
    from ..model.latency import stated_experts
    from ..model.mixed_step import EngineLayout

    gpus = deployment.gpus_per_instance
    if deployment.disaggregated:
        raise SpecError(
            "argument",
            "layout",
            "fixes the instances' layout of a co-located deployment",
            "drop layout with a prefill pool (its pools choose theirs)",
        )
    lay = layout_of(text, gpus, "argument", "layout", whole="an instance")
    if lay is None or lay.replicas != 1:
        raise SpecError(
            "argument",
            "layout",
            f"{text!r} is not one instance's layout of {gpus} GPUs",
            f"give its degrees, e.g. TP{gpus} or TP{max(gpus // 2, 1)}PP{min(gpus, 2)}; "
            "several instances: --instances with one instance's layout",
        )
    split = None
    if lay.expert is not None and setting.model.is_moe:
        if lay.expert not in (1, lay.tensor):
            raise SpecError(
                "argument",
                "layout",
                f"{text!r}: EP{lay.expert} splits the experts over part of the tensor group "
                f"of {lay.tensor}, which the model does not run",
                f"state EP{lay.tensor} (experts split over the tensor group) or EP1 (none)",
            )
        split = lay.expert > 1
    # attention data parallelism over the stated ranks ("TP8 DP2 attn-DP": attention TP4), or
    # over the whole tensor group where no DP degree is stated
    chosen = EngineLayout(gpus, lay.pipeline, float(lay.attention_ranks))
    runs = instance_layouts(setting, gpus)
    if chosen not in runs:
        raise SpecError(
            "argument",
            "layout",
            f"{text!r}: the engine does not run {setting.model.name} as {chosen.describe()}",
            "choose one of " + "; ".join(r.describe() for r in runs),
        )
    if split is not None:
        setting = setting.replace(assumptions=stated_experts(setting.assumptions, split))
    return chosen, setting


@table.takes(table.PROBLEM, table.LOAD, command="simulate")
def max_load(
    model,
    hardware=None,
    *,
    gpus,
    prefill_gpus=None,
    traffic: Traffic | None = None,
    targets: Targets | None = None,
    config: EngineConfig | None = None,
    curve_points=8,
    progress=None,
    yes=False,
    **settings,
) -> MaxLoad:
    """The most requests/s a given deployment serves within the ``slo_*`` targets, with the
    latency percentiles along a sweep of load.

    Parameters
    ----------
    model : str, Architecture or Setting
        The model served (a Setting: no other setting of what is served).
    hardware : str or GPU, optional
        The GPU.
    gpus, prefill_gpus : float, optional
        GPUs per instance, and per prefill instance of a separate prefill pool.
    traffic, targets, config : Traffic, Targets, EngineConfig, optional
        The load (its rate a placeholder: the search sets it), the latency targets and the
        scheduler's limits, typed (``load_inputs`` builds those not given).
    curve_points : int
        Loads of the latency sweep.
    progress : callable, optional
        Called with a line of text as the work goes.
    yes : bool
        Run work estimated at more than ten minutes.
    **settings
        Settings of what is served and flat load settings (``inference_econ/settings/``);
        ``prompt_tokens`` / ``output_tokens`` are every request's lengths here (the load's
        ``input_lengths`` / ``output_lengths``, refused beside them, a trace or a traffic).

    Returns
    -------
    MaxLoad
        The most load held and the sweep (``to_dataframe()`` for the curve).
    """
    from ..optimise.load_search import SIMULATIONS_PER_SEARCH, check_budget
    from ..optimise.load_search import max_load as search

    checked_progress(progress)
    curve_points = check_number(
        curve_points, "argument", "curve_points", minimum=0, maximum=100, integer=True
    )  # text that reads as a number is read as it
    own = ("gpus", "arrival_rate_per_s")  # the rate is searched
    own += () if prefill_gpus is None else ("prefill_gpus",)
    inputs = load_inputs(settings, traffic, targets, config, need_rate=False, present=own)
    problem, v = inputs.problem, inputs.other
    need_targets(inputs.targets)
    setting = settings_per_gpu(model, hardware, problem)[0]
    d = given_deployment(
        setting, gpus, v["instances"], prefill_gpus, v["prefill_instances"], v, model, problem
    )
    pools = 2 if d.disaggregated else 1
    check_budget(
        inputs.traffic,
        pools * SIMULATIONS_PER_SEARCH + curve_points,
        "the load search",
        checked_yes(yes),
    )
    return search(setting, d, inputs.traffic, inputs.targets, inputs.config, curve_points, progress)


@table.takes(table.PROBLEM, table.LOAD, command="capacity")
def capacity(
    model,
    hardware=None,
    *,
    traffic: Traffic | None = None,
    targets: Targets | None = None,
    config: EngineConfig | None = None,
    sizes=None,
    progress=None,
    yes=False,
    **settings,
) -> CapacityPlan:
    """The cheapest deployment serving ``arrival_rate_per_s`` within the ``slo_*`` targets.

    The deployment is a GPU, an instance size and a count of instances; with
    ``disaggregated=True`` also separate prefill and decode pools, on ``prefill_hardware`` and
    ``decode_hardware`` when given. ``hardware`` may be a list of GPUs; with a draft (or draft
    heads) every GPU is searched with and without speculation; with ``failures=True`` the plan
    also holds the targets with one instance down (``plan.redundancy``). Under an engine
    profile (the default, ``settings.LOAD_ASSUMPTIONS``) the plan is the expected one, with
    ``confident`` (the plan for the targets to hold at the pessimistic end of the
    ``confidence`` interval) and ``bound`` (the ideal bound's plan) beside it (docs/model.md
    §F12).

    Parameters
    ----------
    model : str, Architecture or Setting
        The model served (a Setting: no other setting of what is served).
    hardware : str, GPU or list of them, optional
        The GPUs searched.
    traffic, targets, config : Traffic, Targets, EngineConfig, optional
        The load, the latency targets and the scheduler's limits, typed (``load_inputs``
        builds those not given from the flat settings).
    sizes : list of int, optional
        Instance sizes (GPUs) searched (default: every size the model fits).
    progress : callable, optional
        Called with a line of text as the work goes.
    yes : bool
        Run work estimated at more than ten minutes (refused otherwise).
    **settings
        Settings of what is served and flat load settings (``inference_econ/settings/``);
        ``prompt_tokens`` / ``output_tokens`` are every request's lengths here (the load's
        ``input_lengths`` / ``output_lengths``, refused beside them, a trace or a traffic).

    Returns
    -------
    CapacityPlan
        The plan, its candidates and the reasons for the choice.
    """
    from ..load.engine import bound_config
    from ..optimise.candidates import sizes_tried
    from ..optimise.confident import confident_plan
    from ..serving.intervals import ideal

    checked_progress(progress)
    inputs = load_inputs(settings, traffic, targets, config, sized=True)
    need_targets(inputs.targets)
    v = inputs.other
    candidates, pools = _capacity_candidates(model, hardware, inputs.problem, v)
    expected = candidates[0].assumptions.achievable
    _no_confidence_beside_a_bound(candidates[0], settings.get("confidence"))
    searched = [*candidates, *(s for pool in pools or () for s in pool)]
    budgets = _budgets_searched(inputs.config, searched, v["tune_engine"])
    _check_capacity_work(candidates, pools, inputs, sizes, len(budgets) + expected, yes)
    plan, chosen = _at_budgets(budgets, candidates, pools, inputs, sizes, progress)
    if not expected:
        return plan
    bounds = [ideal(s) for s in candidates]
    if progress:
        progress(f"the ideal bound beside it ({bounds[0].assumptions.label} preset)")
    try:  # the same search under the ideal preset (no failures: a bound)
        ideal_pools = None if pools is None else tuple([ideal(s) for s in p] for p in pools)
        largest = max(sizes_tried(candidates[0], sizes, candidates[0].max_gpus))
        limits = bound_config(inputs.config, candidates[0], largest)  # the caller's limits
        bound = _cheapest(bounds, ideal_pools, inputs._replace(config=limits), sizes, progress)
    except InfeasibleError as exc:
        bound = str(exc)
    return confident_plan(
        plan, v["confidence"], bound, candidates, inputs.traffic, chosen, progress
    )


def _budgets_searched(config, settings: list[Setting], search: bool) -> list:
    """(label, config, tokens) of the engine settings a capacity search plans with: ``config``
    alone, or with ``search`` each of ``STEP_TOKEN_SEARCH`` beside the engine's own on each GPU
    of ``settings`` (the candidates' and the pools'; ``optimise.capacity.budget_configs``), and
    where every setting's engine balances attention-DP ranks and runs attention DP for its
    model (``_balances``) and no balancing is given, each with that balancing too."""
    from ..load.engine import engine_config
    from ..optimise.capacity import budget_configs

    if not search:
        return [("", config, None)]
    own = {s.gpu.name: engine_config(config, s).step_token_budget for s in settings}
    balance = config.adp_balancing is None and all(_balances(s) for s in settings)
    return budget_configs(config, own, balance)


def _balances(setting: Setting) -> bool:
    """Whether the setting's engine balances attention-DP ranks and runs attention DP for its
    model's class (the profile's layout features)."""
    from ..load.engine import balances_attention_dp
    from ..specs.features import ATTENTION_DP_FEATURES

    prof = setting.assumptions.profile()
    if not balances_attention_dp(prof):
        return False
    return bool(set(prof.layout_features(setting.model.model_class)) & set(ATTENTION_DP_FEATURES))


def _at_budgets(budgets, candidates, pools, inputs: LoadInputs, sizes, progress):
    """(plan, scheduler config) of the cheapest plan over the engine settings ``budgets``
    (``_budgets_searched``): the one setting's, or the cheapest one's with its config in the
    plan too; sized for failures where the inputs ask (``failures``)."""
    from ..load.failures import Failures
    from ..optimise.capacity import cheapest_of_budgets

    v = inputs.other
    failures = Failures(v["gpu_mtbf_hours"], v["repair_hours"]) if v["failures"] else None
    if len(budgets) == 1:
        return _cheapest(candidates, pools, inputs, sizes, progress, failures), inputs.config
    plan, chosen = cheapest_of_budgets(
        lambda c: _cheapest(candidates, pools, inputs._replace(config=c), sizes, progress,
                            failures),
        budgets, progress,
    )  # fmt: skip
    return dataclasses.replace(plan, config=chosen), chosen


def _no_confidence_beside_a_bound(setting: Setting, confidence) -> None:
    """Refuse a ``confidence`` given beside an ideal preset: it sizes a plan at an interval's
    end, and an ideal bound has no interval (it had been dropped without a word)."""
    if confidence is not None and not setting.assumptions.achievable:
        raise SpecError(
            "argument",
            "confidence",
            f"sizes the plan at an interval's end, and the "
            f"'{setting.assumptions.label}' preset is an ideal bound, with no interval",
            "drop it, or use the achievable preset: --assumptions achievable",
        )


def _capacity_candidates(model, hardware, problem: dict, v: dict) -> tuple[list, tuple | None]:
    """The settings a capacity search tries (each GPU, with and without speculation) and its
    pools' own (None: the deployment's GPUs serve both)."""
    candidates = settings_per_gpu(model, hardware, problem)
    if candidates[0].spec is not None:  # with and without speculation
        candidates = candidates + [dataclasses.replace(s, spec=None) for s in candidates]
    if v["prefill_hardware"] is None and v["decode_hardware"] is None:
        return candidates, None
    if not v["disaggregated"]:
        raise SpecError(
            "argument",
            "prefill_hardware" if v["prefill_hardware"] else "decode_hardware",
            "sets the GPUs of a disaggregated deployment's pools",
            "give disaggregated=True (--disaggregated)",
        )
    bare = [dataclasses.replace(s, spec=None) for s in settings_per_gpu(model, hardware, problem)]
    pools = (
        _pool_settings(model, v["prefill_hardware"], problem, bare, prefill=True),
        _pool_settings(model, v["decode_hardware"], problem, candidates, prefill=False),
    )
    return candidates, pools


def _check_capacity_work(candidates, pools, inputs: LoadInputs, sizes, runs: int, yes) -> None:
    """Refuse a capacity search estimated at more than ten minutes unless ``yes``: ``runs``
    searches (the expected plan at each engine setting tried, and the ideal bound once, at the
    chosen one) of every candidate's instance sizes."""
    from ..optimise.candidates import sizes_tried
    from ..optimise.load_search import SIMULATIONS_PER_SEARCH, check_budget

    v, cap = inputs.other, candidates[0].max_gpus
    searches = sum(len(sizes_tried(s, sizes, cap)) for s in candidates)
    if pools is None:
        searches *= 3 if v["disaggregated"] else 1  # co-located, prefill and decode pools
    else:
        searches += sum(len(sizes_tried(s, sizes, cap)) for s in pools[0] + pools[1])
    work = runs * (searches * SIMULATIONS_PER_SEARCH + 1) + (4 if v["failures"] else 0)
    check_budget(inputs.traffic, work, "the capacity search", checked_yes(yes))


def _cheapest(candidates, pools, inputs: LoadInputs, sizes, progress, failures=None):
    """``optimise.capacity.cheapest_deployment`` of the candidates under the inputs' load."""
    from ..optimise.capacity import cheapest_deployment

    return cheapest_deployment(
        candidates, inputs.traffic, inputs.targets, inputs.config,
        inputs.other["disaggregated"], sizes, candidates[0].max_gpus, progress,
        pools=pools, failures=failures,
    )  # fmt: skip


def _pool_settings(model, names, problem: dict, default: list, prefill: bool) -> list:
    """The settings of one pool's GPUs (``names``: comma-separated text or a list; None: the
    deployment's own); a prefill pool does not speculate (it emits one token)."""
    if names is None:
        return default
    items = names.split(",") if isinstance(names, str) else list(names)
    items = [n.strip() if isinstance(n, str) else n for n in items if n != ""]
    if isinstance(model, Setting):
        out = [
            dataclasses.replace(on_gpu(model, model, n, problem), spec=model.spec) for n in items
        ]
    else:
        out = settings_per_gpu(model, items, problem)
    if prefill:
        out = [dataclasses.replace(s, spec=None) for s in out]
    elif out[0].spec is not None:
        out = out + [dataclasses.replace(s, spec=None) for s in out]
    return out


@table.takes(table.PROBLEM, table.LOAD, command="capacity")
def demand_plan(
    model,
    hardware=None,
    *,
    demand,
    traffic: Traffic | None = None,
    targets: Targets | None = None,
    config: EngineConfig | None = None,
    sizes=None,
    progress=None,
    yes=False,
    **settings,
) -> DemandPlan:
    """The cheapest mix of reserved and on-demand (or spot) capacity serving every hour of a
    demand curve within the ``slo_*`` targets (docs/model.md §G5).

    One knee search per GPU and instance size, then the reserved base that minimises the
    period's cost. ``reserved_basis`` (default owned) and ``burst_basis`` (default on-demand)
    price the two; ``spot_interruption_rate`` adds spot capacity.

    Parameters
    ----------
    model : str, Architecture or Setting
        The model served (a Setting: no other setting of what is served).
    hardware : str, GPU or list of them, optional
        The GPUs searched.
    demand : str or DemandCurve
        The hourly demand (a CSV path or a ``DemandCurve``); its peak sets the rate.
    traffic, targets, config : Traffic, Targets, EngineConfig, optional
        The load (its rate the curve's), the latency targets and the scheduler's limits,
        typed (``load_inputs`` builds those not given from the flat settings).
    sizes : list of int, optional
        Instance sizes (GPUs) searched (default: every size the model fits).
    progress : callable, optional
        Called with a line of text as the work goes.
    yes : bool
        Run work estimated at more than ten minutes.
    **settings
        Settings of what is served and flat load settings (``inference_econ/settings/``);
        ``prompt_tokens`` / ``output_tokens`` are every request's lengths here (the load's
        ``input_lengths`` / ``output_lengths``, refused beside them, a trace or a traffic).

    Returns
    -------
    DemandPlan
        The reserved base, the burst capacity and the period's cost.
    """
    from ..load.demand import load_demand
    from ..optimise.candidates import sizes_tried
    from ..optimise.demand import demand_plan as plan
    from ..optimise.load_search import SIMULATIONS_PER_SEARCH, check_budget

    curve = load_demand(demand)
    settings = _at_demand_peak(settings, curve.peak_per_s, traffic is None)
    if traffic is not None:
        if traffic.rate_per_s is not None or traffic.trace is not None:
            _refuse_demand_rate("arrival_rate_per_s" if traffic.trace is None else "trace")
        traffic = dataclasses.replace(traffic, rate_per_s=curve.peak_per_s)
    costs, pue = settings.pop("costs", None), settings.get("pue")
    checked_progress(progress)
    inputs = load_inputs(settings, traffic, targets, config, present=("demand",))
    need_targets(inputs.targets)
    v = inputs.other
    candidates = settings_per_gpu(model, hardware, inputs.problem)
    cap = candidates[0].max_gpus
    searches = sum(len(sizes_tried(s, sizes, cap)) for s in candidates)
    work = searches * SIMULATIONS_PER_SEARCH
    check_budget(inputs.traffic, work, "the demand plan", checked_yes(yes))
    return plan(
        candidates, inputs.traffic, inputs.targets, curve, inputs.config, v["reserved_basis"],
        v["burst_basis"], v["spot_interruption_rate"], costs, pue, sizes, cap, progress,
    )  # fmt: skip


def _at_demand_peak(settings: dict, peak_per_s: float, flat: bool) -> dict:
    """The settings of a demand plan, at the curve's peak rate where the traffic is flat;
    refused where they set a rate of their own or what a demand plan does not search."""
    settings = dict(settings)
    for name in ("arrival_rate_per_s", "trace"):
        if settings.get(name) is not None:
            _refuse_demand_rate(name)
    if flat:
        settings["arrival_rate_per_s"] = peak_per_s
    if settings.get("autoscale") is not None:
        raise SpecError(
            "argument",
            "autoscale",
            "is read by autoscale_plan (demand_plan plans the hourly mix of reserved and "
            "bought capacity)",
            "call ie.autoscale_plan(..., autoscale=...), or drop autoscale",
        )
    for name in ("failures", "prefill_hardware", "decode_hardware", "router"):
        if settings.get(name) not in (None, False, "random"):
            raise SpecError(
                "argument",
                name,
                "does not apply to a demand plan (one instance size searched per hour, co-located)",
                f"drop {name}",
            )
    return settings


def _refuse_demand_rate(name: str) -> None:
    """A demand curve sets the rate of every hour: a rate or trace given beside it is refused."""
    raise SpecError(
        "argument",
        name,
        "is given with a demand curve, which sets the rate of every hour",
        f"drop {name}",
    )


@table.takes(table.PROBLEM, table.LOAD, command="simulate")
def load_frontier(
    model,
    hardware=None,
    *,
    traffic: Traffic | None = None,
    targets: Targets | None = None,
    config: EngineConfig | None = None,
    sizes=None,
    progress=None,
    yes=False,
    **settings,
) -> LoadFrontier:
    """The deployments that serve ``arrival_rate_per_s`` within the ``slo_*`` targets: their
    Pareto frontier of speed per request against $ per million output tokens.

    Parameters
    ----------
    model : str, Architecture or Setting
        The model served (a Setting: no other setting of what is served).
    hardware : str, GPU or list of them, optional
        The GPUs searched.
    traffic, targets, config : Traffic, Targets, EngineConfig, optional
        The load, the latency targets and the scheduler's limits, typed (``load_inputs``
        builds those not given from the flat settings).
    sizes : list of int, optional
        Instance sizes (GPUs) searched (default: every size the model fits).
    progress : callable, optional
        Called with a line of text as the work goes.
    yes : bool
        Run work estimated at more than ten minutes.
    **settings
        Settings of what is served and flat load settings (``inference_econ/settings/``);
        ``prompt_tokens`` / ``output_tokens`` are every request's lengths here (the load's
        ``input_lengths`` / ``output_lengths``, refused beside them, a trace or a traffic).

    Returns
    -------
    LoadFrontier
        The frontier's deployments (``points``).
    """
    from ..optimise.candidates import sizes_tried
    from ..optimise.load_frontier import COUNT_MULTIPLES
    from ..optimise.load_frontier import load_frontier as search
    from ..optimise.load_search import SIMULATIONS_PER_SEARCH, check_budget

    checked_progress(progress)
    inputs = load_inputs(settings, traffic, targets, config)
    need_targets(inputs.targets)
    candidates = settings_per_gpu(model, hardware, inputs.problem)
    cap = candidates[0].max_gpus
    searches = sum(len(sizes_tried(s, sizes, cap)) for s in candidates)
    per_size = SIMULATIONS_PER_SEARCH + len(COUNT_MULTIPLES)
    check_budget(inputs.traffic, searches * per_size, "the load frontier", checked_yes(yes))
    return search(candidates, inputs.traffic, inputs.targets, inputs.config, sizes, cap, progress)
