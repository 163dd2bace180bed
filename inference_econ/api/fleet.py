"""Fleet economics (docs/model.md §G6): several models planned on one fleet from a fleet file
(``fleet_plan``), and one model's capacity under a site power budget (``power_plan``).

A fleet file (YAML; ``examples/fleet.yaml``) names the GPUs searched (``hardware``), settings
every model shares (``defaults``) and the models: each a ``model`` with an optional ``name``,
its own ``hardware``, and the flat settings of the API (``arrival_rate_per_s``,
``input_lengths``, ``output_lengths``, ``slo_ttft_p99_s``, ``slo_tpot_p99_s``, ``engine``,
``weight_bits``, ...). A field that is wrong is refused in one line naming the file, the field
(``models[1].slo_tpot_p99_s``) and the fix.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import settings as table
from ..errors import SpecError, did_you_mean, short
from .load_setup import (
    CONFIG_SETTINGS,
    REQUEST_LENGTHS,
    TARGET_SETTINGS,
    TRAFFIC_SETTINGS,
    checked_yes,
    load_inputs,
    need_targets,
    settings_per_gpu,
)

if TYPE_CHECKING:
    from ..load.arrivals import Traffic
    from ..load.engine import EngineConfig
    from ..load.targets import Targets
    from ..optimise.fleet import FleetModel, FleetPlan
    from ..optimise.power_cap import PowerPlan

#: Settings of what is served that a fleet's model takes (its context and speed come from
#: its load; a label is its ``name``).
_SERVED = tuple(
    n
    for n in table.names(table.PROBLEM)
    if n
    not in ("context_tokens", "prompt_tokens", "ttft_max_s", "label", "max_throughput_tokens_per_s")
)
#: Load settings a fleet's model takes: its traffic (open loop), targets and scheduler limits.
_LOAD = tuple(
    n
    for n in (*TRAFFIC_SETTINGS, *TARGET_SETTINGS, *CONFIG_SETTINGS)
    if n not in ("concurrency", "router")
)
#: A model entry's own fields beside the settings.
_OWN = ("name", "model", "hardware", "adapters")
#: Every setting a fleet file's model (or its ``defaults``) takes.
FLEET_SETTINGS = frozenset(_SERVED + _LOAD)


def read_fleet(fleet, hardware=None) -> list[FleetModel]:
    """The models of a fleet file (module docstring), each checked.

    Parameters
    ----------
    fleet : str, Path or mapping
        The fleet file, or its parsed mapping.
    hardware : str or list of str, optional
        GPUs searched for every model that names none (replaces the file's ``hardware``).

    Returns
    -------
    list of FleetModel
        One per model: its settings per GPU, traffic, targets and scheduler limits.
    """
    from ..specs.schema import Reader
    from ..specs.yamlfile import load_yaml

    source = str(fleet) if isinstance(fleet, (str, Path)) else "fleet"
    try:
        data = load_yaml(Path(fleet)) if isinstance(fleet, (str, Path)) else fleet
    except SpecError as exc:
        if not exc.problem.startswith("expected a mapping"):
            raise
        raise SpecError(
            source, "", exc.problem,
            "put the models under 'models:', beside 'hardware:' and 'defaults:' (examples/fleet.yaml)",
        ) from None  # fmt: skip
    r = Reader(data, source)
    in_file = r.text_list("hardware")  # read either way: ``hardware`` replaces it
    if hardware and not isinstance(hardware, (str, list, tuple)):
        raise SpecError(
            "argument", "hardware", f"expected a GPU name or a list of them, got {short(hardware)}",
            "e.g. 'H100' or ['H100', 'H200']",
        )  # fmt: skip
    gpus = hardware if hardware else in_file
    defaults = r.mapping("defaults", {}) or {}
    entries = r.raw("models", None)
    r.finish()
    if not isinstance(entries, list) or not entries:
        raise SpecError(
            source, "models", f"expected a list of models, got {short(entries)}",
            "write 'models:' with one '- model: <name>' entry per model",
        )  # fmt: skip
    _check_settings(defaults, source, "defaults.")
    shared_from = "argument" if hardware else source  # who named the GPUs models share
    models = [_model(source, i, e, defaults, gpus, shared_from) for i, e in enumerate(entries)]
    names = [m.name for m in models]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise SpecError(
                source, f"models[{i}].name", f"{name!r} names two models",
                "give each model its own 'name'",
            )  # fmt: skip
    _one_pue(models, entries, source)
    _one_price(models, entries, source)
    return models


def _one_pue(models: list, entries: list, source: str) -> None:
    """Refuse models at different PUEs: a fleet is one site, whose facility power is its IT
    power times one PUE (the first model's had been taken for every model's)."""
    from ..serving.setting import facility_pue

    pues = [facility_pue(m.settings[0]) for m in models]
    for i, pue in enumerate(pues):
        if not math.isclose(pue, pues[0]):
            at = i if "pue" in entries[i] else 0
            raise SpecError(
                source, f"models[{at}].pue",
                f"{models[i].name} runs at PUE {pue:g} and {models[0].name} at {pues[0]:g}, "
                "and a fleet is one site with one PUE",
                "give pue once, under 'defaults'",
            )  # fmt: skip


def _one_price(models: list, entries: list, source: str) -> None:
    """Refuse models that may share a GPU and pay different prices for one GPU type: a shared
    GPU has one price (the first model's had been taken, so the fleet's cost hung on the
    models' order)."""
    from ..optimise.gpu_share import why_not_shared

    first: dict[str, tuple[int, float]] = {}
    for i, m in enumerate(models):
        if why_not_shared(m.settings[0]) is not None:
            continue
        for s in m.settings:
            j, price = first.setdefault(s.gpu.name, (i, s.gpu.price_usd_per_hour))
            if math.isclose(price, s.gpu.price_usd_per_hour):
                continue
            at = next(
                (f"models[{k}].{f}" for k in (i, j) for f in ("price_basis", "costs")
                 if f in entries[k]), f"models[{i}].price_basis",
            )  # fmt: skip
            raise SpecError(
                source, at,
                f"{m.name} pays {s.gpu.price_usd_per_hour:.4g} USD an hour for each {s.gpu.name} "
                f"and {models[j].name} {price:.4g}, and a GPU they share has one price",
                "give price_basis (and costs) once, under 'defaults'",
            )  # fmt: skip


def _model(source: str, i: int, entry: Any, defaults: dict, gpus, shared_from: str) -> FleetModel:
    """One model entry of a fleet file, checked, as a ``FleetModel``; a GPU of ``gpus`` (the
    file's top ``hardware``, or the argument: ``shared_from``) it cannot take names them."""
    from ..load.engine import NO_BALANCING, engine_config
    from ..optimise.fleet import FleetModel
    from ..specs.schema import Reader

    where = f"models[{i}]"
    r = Reader(entry, source, where)
    model = r.string("model")
    name = r.string("name", model)
    own = r.text_list("hardware")
    own_gpus = own or gpus
    if r.has("adapters"):
        raise SpecError(
            source, f"{where}.adapters",
            "LoRA adapters are not modelled (no engine's adapter limits nor a per-step cost "
            "of adapters in the load engine)",
            "drop adapters; plan a fine-tune merged into its base as a model entry of its own",
        )  # fmt: skip
    settings = {k: v for k, v in entry.items() if k not in _OWN}
    _check_settings(settings, source, f"{where}.")
    if not own_gpus:
        raise SpecError(
            source, f"{where}.hardware", "is missing",
            "give 'hardware: H100' at the top of the file or in the model, or -H",
        )  # fmt: skip
    try:
        inputs = load_inputs({**defaults, **settings})
        need_targets(inputs.targets)
        chosen = settings_per_gpu(model, _names(own_gpus), inputs.problem)
        for s in chosen:  # each GPU's scheduler: refuses what its engine has not (adp_balance)
            engine_config(inputs.config, s)
    except SpecError as exc:
        if exc.source not in ("argument", ""):
            raise exc.inside(source, where) from None
        field = _setting_named(exc.field)
        if field == "hardware" and not own:
            raise SpecError(shared_from, "hardware", f"{where}: {exc.problem}", exc.fix) from None
        at = (
            f"defaults.{field}"
            if field in defaults and field not in settings
            else f"{where}.{field}"
        )
        fix = exc.fix
        if exc.problem == "is missing":  # the API's fix names a flag: say where the file sets it
            fix = f"give '{field}' to {where} or under 'defaults' (examples/fleet.yaml)"
        elif field == "adp_balance" and exc.problem.startswith(NO_BALANCING):  # the engine's
            fix = f"drop adp_balance, or give 'engine: trtllm' to {where}"
        elif exc.problem == "no latency target given":  # its fix names flags --fleet refuses
            fix = (
                f"give slo_ttft_p99_s, slo_tpot_p99_s or slo_e2e_p99_s to {where} or under "
                "'defaults' (examples/fleet.yaml)"
            )
        raise SpecError(source, at, exc.problem, fix) from None
    return FleetModel(name, tuple(chosen), inputs.traffic, inputs.targets, inputs.config)


def _setting_named(field: str) -> str:
    """The setting an error's field names: ``engine`` for the catalog's kind ``engines``."""
    base = field.split(" ")[0]
    if base == "models":  # the catalog's kind; a fleet's entry names it ``model``
        return "model" + field[len(base) :]
    if base not in table.BY_NAME and base.endswith("s") and base[:-1] in table.BY_NAME:
        return base[:-1] + field[len(base) :]
    return field


def _names(gpus) -> list:
    """GPU names from text ("H100,H200") or a list (of such text, or of GPUs)."""
    items = [gpus] if isinstance(gpus, str) else list(gpus)
    split = [g for item in items for g in (item.split(",") if isinstance(item, str) else [item])]
    return [g.strip() if isinstance(g, str) else g for g in split if g != ""]


def _check_settings(values: dict, source: str, prefix: str) -> None:
    """Refuse a setting that is not one a fleet's model takes, naming the file and field."""
    for key, value in values.items():
        if key in _SERVED or key in _LOAD:
            table.check({key: value}, [table.PROBLEM, table.LOAD], source, prefix, False)
            continue
        known = key in table.BY_NAME
        fix = f"drop {key}"
        if key in REQUEST_LENGTHS:  # one request's length: a fleet's model serves a load
            fix = f"give the load's lengths as {REQUEST_LENGTHS[key]} instead"
        raise SpecError(
            source, f"{prefix}{key}",
            "does not apply to a fleet plan" if known else "unknown setting",
            fix if known else (did_you_mean(str(key), _SERVED + _LOAD + _OWN)
                               or "see examples/fleet.yaml"),
        )  # fmt: skip


def fleet_plan(
    fleet, hardware=None, *, power_cap_mw=None, sizes=None, progress=None, yes=False
) -> FleetPlan:
    """The cheapest fleet serving several models within each one's targets (docs/model.md §G6).

    Each model may run dedicated instances (its cheapest capacity plan) or, where its engine
    sizes its memory as a share of the whole GPU (vLLM, SGLang), instances on a share of one
    GPU beside other models; the shares are packed into whole GPUs.

    Parameters
    ----------
    fleet : str, Path or mapping
        The fleet file (YAML, module docstring) or its parsed mapping.
    hardware : str or list of str, optional
        GPUs searched for every model that names none (replaces the file's ``hardware``).
    power_cap_mw : float, optional
        A site budget in MW of facility power the fleet must fit (each instance at its draw at
        the most load it holds within its targets, an unused share of a GPU idle, times the
        PUE); None: no cap.
    sizes : list of int, optional
        Instance sizes (GPUs) searched (default: every size each model fits).
    progress : callable, optional
        Called with a line of text as the work goes.
    yes : bool
        Run work estimated at more than ten minutes.

    Returns
    -------
    FleetPlan
        The fleet's parts per model, its shared GPUs, its cost and the plans alone beside it.
    """
    from ..optimise.candidates import sizes_tried
    from ..optimise.fleet import fleet_plan as plan
    from ..optimise.gpu_share import SHARES
    from ..optimise.load_search import SIMULATIONS_PER_SEARCH, check_budget
    from ..serving.setting import facility_pue

    cap = checked_power_cap(power_cap_mw)
    models = read_fleet(fleet, hardware)
    for m in models:
        most = m.settings[0].max_gpus
        runs = sum(len(sizes_tried(s, sizes, most)) + len(SHARES) for s in m.settings)
        check_budget(m.traffic, runs * SIMULATIONS_PER_SEARCH, "the fleet plan", checked_yes(yes))
    pue = facility_pue(models[0].settings[0])
    return plan(models, pue, sizes, None, progress, cap)  # each model at its own max_gpus


def _power_plan_only(settings: dict, power_at) -> None:
    """Refuse a power state that is none of ``POWER_STATES``, and settings a power-capped plan
    (one load, co-located) does not read."""
    from ..optimise.instance_options import POWER_STATES

    if power_at not in POWER_STATES:
        raise SpecError(
            "argument",
            "power_at",
            f"is {short(power_at)}",
            f"choose one of {', '.join(POWER_STATES)}",
        )
    for name in ("disaggregated", "failures", "demand", "prefill_hardware", "decode_hardware"):
        if settings.get(name) not in (None, False):
            raise SpecError(
                "argument", name, "does not apply to a power-capped plan (co-located, one load)",
                f"drop {name}",
            )  # fmt: skip


def checked_power_cap(value, source: str = "argument", field: str = "power_cap_mw"):
    """A site power budget checked: a finite number of MW above 0 (None: no cap).

    Parameters
    ----------
    value : float, str or None
        As given.
    source, field : str
        Where it was given, for the error (``"command line"``, ``"--power-cap-mw"``).

    Returns
    -------
    float or None
        The budget in MW of facility power.
    """
    from ..optimise.power_cap import checked_cap

    return checked_cap(value, source, field)


@table.takes(table.PROBLEM, table.LOAD, command="capacity")
def power_plan(
    model,
    hardware=None,
    *,
    power_cap_mw,
    power_at="load",
    traffic: Traffic | None = None,
    targets: Targets | None = None,
    config: EngineConfig | None = None,
    sizes=None,
    progress=None,
    yes=False,
    **settings,
) -> PowerPlan:
    """The cheapest deployment within a site power budget, or the one serving the most tokens
    under it (docs/model.md §G6), on one or two candidates (GPU x instance size).

    The budget is facility power: the instances' IT power (power model, docs/model.md §G2)
    times the PUE (``pue``, else the cost file's). The plan is capacity's where it fits and no
    pair is cheaper; else the cheapest pair of candidates in whole instances that holds the
    load within the budget, or, where none does, the pair holding the most.

    Parameters
    ----------
    model : str, Architecture or Setting
        The model served.
    hardware : str, GPU or list of them, optional
        The GPUs searched.
    power_cap_mw : float or None
        The site budget in MW of facility power (None: no cap, the plan capacity would make).
    power_at : {"load", "peak", "idle"}
        The GPUs' power state the budget counts: at the most load each instance holds within
        the targets (default), or at their power limit.
    traffic, targets, config : Traffic, Targets, EngineConfig, optional
        The load, the latency targets and the scheduler's limits, typed.
    sizes : list of int, optional
        Instance sizes (GPUs) searched (default: every size the model fits).
    progress : callable, optional
        Called with a line of text as the work goes.
    yes : bool
        Run work estimated at more than ten minutes.
    **settings
        Settings of what is served and flat load settings (``inference_econ/settings/``).

    Returns
    -------
    PowerPlan
        ``parts``: one or two ``PlanPart`` (a candidate and its instances, the one holding
        the most load first; ``option`` reads it, ``instances`` counts all); what the plan
        serves, draws and costs over every part (``served_rate_per_s``, ``facility_mw``,
        ``usd_per_hour``); every candidate (``candidates``, chosen ones marked), the uncapped
        plan (``uncapped``, ``uncapped_instances``) and ``at_cap(mw)``, another cap.
    """
    import numpy as np

    from ..optimise.candidates import sizes_tried
    from ..optimise.instance_options import instance_options
    from ..optimise.load_search import SIMULATIONS_PER_SEARCH, check_budget
    from ..optimise.power_cap import power_capped_plan
    from ..serving.setting import facility_pue

    cap = checked_power_cap(power_cap_mw)
    _power_plan_only(settings, power_at)
    inputs = load_inputs(settings, traffic, targets, config)
    need_targets(inputs.targets)
    candidates = settings_per_gpu(model, hardware, inputs.problem)
    limit = candidates[0].max_gpus
    runs = sum(len(sizes_tried(s, sizes, limit)) for s in candidates)
    check_budget(inputs.traffic, runs * SIMULATIONS_PER_SEARCH, "the power plan", checked_yes(yes))
    options = instance_options(
        candidates, inputs.traffic, inputs.targets, inputs.config, sizes, limit, (), progress
    )
    tokens = float(np.mean(inputs.traffic.stream().output_tokens))
    rate = inputs.traffic.offered_rate_per_s
    if not math.isfinite(rate):
        raise SpecError("argument", "arrival_rate_per_s", "is missing", "give the load's rate")
    pue = facility_pue(candidates[0])
    return power_capped_plan(
        options, rate, inputs.targets, tokens, pue, cap, power_at, inputs.traffic.describe()
    )
