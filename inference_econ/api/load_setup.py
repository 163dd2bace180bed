"""What a load function serves, typed: the one converter from the flat load settings (the
command line's, ``arrival_rate_per_s=...``) to ``Traffic``, ``Targets`` and ``EngineConfig``,
and the settings and deployments the load functions share (docs/model.md Part E)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import settings as table
from ..errors import SpecError, expect, short, warn
from ..serving.setting import Setting
from .problem import setting_of

if TYPE_CHECKING:  # imported on first use: the command line starts without them
    from ..load.arrivals import Traffic
    from ..load.deployment import Deployment
    from ..load.engine import EngineConfig
    from ..load.targets import Targets

#: The flat load settings each typed object is built from (the rest stay ``LoadInputs.other``).
TRAFFIC_SETTINGS = (
    "arrival_rate_per_s",
    "input_lengths",
    "output_lengths",
    "trace",
    "arrival_process",
    "requests",
    "seed",
    "shared_prefix_tokens",
    "shared_prefixes",
    "session_turns",
    "think_time_s",
    "concurrency",
)
TARGET_SETTINGS = ("slo_ttft_p99_s", "slo_tpot_p99_s", "slo_e2e_p99_s")
CONFIG_SETTINGS = (
    "max_batch_requests",
    "step_token_budget",
    "adp_balance",
    "scheduler_steps",
    "speculation_max_batch",
    "speculation_schedule",
    "prefix_caching",
    "kv_offload_gb",
    "kv_offload_bandwidth_gb_per_s",
    "kv_offload_overlap",
    "kv_disk_gb",
    "kv_disk_bandwidth_gb_per_s",
    "router",
)
#: Scheduler limits not given are the engine profile's own on each GPU (``engine_config``).
_LIMITS = ("max_batch_requests", "step_token_budget", "scheduler_steps")


class LoadInputs(NamedTuple):
    """A load function's inputs: the problem's settings, the typed load and the other load
    settings (every load setting, checked, defaults filled)."""

    problem: dict[str, Any]
    traffic: Traffic
    targets: Targets
    config: EngineConfig
    other: dict[str, Any]


def load_inputs(
    settings: Mapping[str, Any],
    traffic: Traffic | None = None,
    targets: Targets | None = None,
    config: EngineConfig | None = None,
    *,
    need_rate: bool = True,
    sized: bool = False,
    closed_loop: bool = False,
    present: tuple[str, ...] = (),
) -> LoadInputs:
    """Flat keyword settings into typed load inputs, each checked against the table of settings.

    Parameters
    ----------
    settings : mapping
        Keyword settings: those of what is served (``make_setting``'s) and the flat load
        settings (``arrival_rate_per_s``, ``slo_ttft_p99_s``, ``max_batch_requests``, ...);
        ``prompt_tokens`` and ``output_tokens`` are the load's lengths (``REQUEST_LENGTHS``).
    traffic, targets, config : Traffic, Targets, EngineConfig, optional
        Typed objects given whole; the flat settings they are built from may not be given too.
    need_rate : bool
        Without it (a search sets the rate) a missing rate is a placeholder.
    sized : bool
        Whether the caller sizes a capacity plan (takes ``confidence`` and
        ``tune_engine``).
    closed_loop : bool
        Whether one deployment is simulated (takes ``concurrency`` and ``layout``).
    present : tuple of str
        Settings the caller takes as arguments of its own (``gpus``, ``demand``), or sets
        itself (a searched rate), that another setting may need.

    Returns
    -------
    LoadInputs
        (problem settings, Traffic, Targets, EngineConfig, every load setting checked).
    """
    _typed(settings, traffic, targets, config)
    if not sized and settings.get("confidence") is not None:
        raise SpecError(
            "argument",
            "confidence",
            "sizes a capacity plan; this function plans none",
            "drop confidence, or call capacity",
        )
    if not sized and settings.get("tune_engine"):
        raise SpecError(
            "argument",
            "tune_engine",
            "is read by the search of a capacity plan only (capacity --rate without"
            " --power-cap-mw, export --plan capacity; in Python ie.capacity and"
            " inference_econ.api.export)",
            "drop it, or set the engine yourself: --step-tokens and --adp-balance"
            " (step_token_budget, adp_balance in Python)",
        )
    problem = _request_lengths(settings, traffic)
    given = {k: problem.pop(k) for k in table.names(table.LOAD) if k in problem}
    _known_problem(problem)
    _given_once(given, traffic=traffic, targets=targets, config=config)
    v = table.check(given, [table.LOAD])
    _one_deployment_only(v["layout"] is not None, v["concurrency"] is not None, closed_loop)
    rate = () if traffic is None else ("arrival_rate_per_s",)  # a typed traffic has its own
    if traffic is None:
        traffic = _flat_traffic(v, need_rate, closed_loop)
    else:
        _one_deployment_only(False, traffic.clients is not None, closed_loop)
        _enough_requests(traffic.requests, traffic.trace is not None, closed_loop)
    if targets is None:
        from ..load.targets import Targets

        targets = Targets(*(v[name] for name in TARGET_SETTINGS))
    if targets.implausible():
        warn(targets.implausible())
    config = config or _flat_config(v)
    _combinations(given, problem, (*present, *rate))  # after a missing rate, named as such
    _tier_has_prefixes(config, traffic)
    return LoadInputs(problem, traffic, targets, config, v)


#: A request's lengths, as a point gives them, and the load settings they are under a load
#: (the command line's --prompt-tokens and --output-tokens set both).
REQUEST_LENGTHS = {"prompt_tokens": "input_lengths", "output_tokens": "output_lengths"}


def _request_lengths(settings: Mapping[str, Any], traffic) -> dict[str, Any]:
    """The settings with ``prompt_tokens`` and ``output_tokens`` as the load's lengths, as on
    the command line; refused beside the lengths they set (``input_lengths``, a trace, a
    ``traffic``), which they would silently lose to."""
    out = dict(settings)
    if out.get("ttft_max_s") is not None:  # a point's limit, which no load search reads
        raise SpecError(
            "argument", "ttft_max_s",
            "limits one prompt's time to first token of a frontier or a point; under a load "
            "the target is a percentile of the requests'",
            "give slo_ttft_p99_s instead, the 99th percentile the load must keep",
        )  # fmt: skip
    for name, lengths in REQUEST_LENGTHS.items():
        value = out.pop(name, None)
        if value is None:
            continue
        setter = next(
            (f"{k}={short(out[k])}" for k in (lengths, "trace") if out.get(k) is not None),
            "traffic" if traffic is not None else None,
        )
        if setter is not None:
            raise SpecError(
                "argument", name,
                f"sets the load's {lengths}, and {setter} is given too",
                f"give one of {name} and {setter.split('=')[0]}",
            )  # fmt: skip
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = None
        if isinstance(value, str) and number is None:
            raise SpecError(
                "argument", name, f"{short(value)} is a distribution of lengths",
                f"give it as {lengths}={value!r}, or give one length",
            )  # fmt: skip
        tokens = table.option(name).check(value, "argument", name)
        if not float(tokens).is_integer():  # a load's lengths are whole tokens
            raise SpecError(
                "argument", name, f"is {short(value)}, not a whole number of tokens",
                f"give {name} as a whole number, or {lengths} as a distribution",
            )  # fmt: skip
        out[lengths] = str(int(tokens))
    return out


def _known_problem(problem: Mapping[str, Any]) -> None:
    """Refuse a setting that is neither of what is served nor of the load, the nearest name
    of either suggested (``requets``: ``requests``; ``make_setting`` knows only the first)."""
    served = table.names(table.PROBLEM)
    for key in problem:
        if key not in served:
            hint = table.unknown_hint(key, (*served, *table.names(table.LOAD)))
            raise SpecError(
                "argument",
                str(key),
                "unknown setting",
                hint or "see inference_econ/settings/: what is served and the load",
            )


def _combinations(given: Mapping[str, Any], problem: Mapping[str, Any], present) -> None:
    """Refuse a load setting the function would silently ignore: one given (not at its
    default) without any setting it needs (the table's ``needs``, as ``make_setting`` checks
    those of what is served), one given with a setting it excludes, and a demand curve, which
    only ``demand_plan`` and ``autoscale_plan`` read (as their own argument)."""
    names = [k for k in table.given_names(given) if not _at_default(k, given[k])]
    if "demand" in names:
        raise SpecError(
            "argument",
            "demand",
            "is read by demand_plan and autoscale_plan only (this function plans one load)",
            "call ie.demand_plan(..., demand=...) or ie.autoscale_plan, or drop demand",
        )
    there = {*present, *table.given_names(problem)}
    for row, could in table.unmet_needs(names, None, there):
        needed = " or ".join(could)
        raise SpecError(
            "argument",
            row.name,
            f"is given without {needed}, so it would be ignored",
            f"give {needed} too, or leave {row.name} out",
        )
    for row, other in table.conflicts(names):
        raise SpecError(
            "argument",
            row.name,
            f"is given with {other}, which sets the same thing",
            f"give one of {row.name} and {other}",
        )


def _at_default(name: str, value: Any) -> bool:
    """Whether ``value`` is setting ``name``'s default (the command line passes every option,
    given or not: a default changes nothing)."""
    default = table.BY_NAME[name].default
    try:
        return default is not None and bool(value == default)
    except (TypeError, ValueError):
        return False


def _tier_has_prefixes(config, traffic) -> None:
    """Tiers keep the prefixes the GPU evicts: refused where nothing is cached."""
    if not config.kv_tiers:
        return
    if not config.prefix_caching:
        why, fix = (
            "keeps prefixes the prefix cache evicts, and it is off",
            "drop --no-prefix-caching",
        )
    elif not traffic.shares:
        why = "keeps prefixes the prefix cache evicts, and the prompts share none"
        fix = "give --shared-prefix or --turns (or a trace of sessions), or drop it"
    else:
        return
    raise SpecError("argument", "kv_offload_gb", why, fix)


def _typed(settings, traffic, targets, config) -> None:
    """The arguments of ``load_inputs`` are of their types (a mapping, and the typed objects
    or None): a Python caller's string or number is refused naming the argument."""
    from ..load.arrivals import Traffic
    from ..load.engine import EngineConfig
    from ..load.targets import Targets

    expect(settings, Mapping, "settings", "a mapping of settings", "e.g. {'weight_bits': 8}")
    for name, value, kind, make in (
        ("traffic", traffic, Traffic, "ie.make_traffic(...)"),
        ("targets", targets, Targets, "ie.Targets(ttft_p99_s=...)"),
        ("config", config, EngineConfig, "ie.EngineConfig(...)"),
    ):
        if value is not None:
            expect(value, kind, name, f"a {kind.__name__}", f"give {make}, or None")


def _given_once(given: dict, **objects) -> None:
    """A typed object and the flat settings it is built from are not given together."""
    groups = {"traffic": TRAFFIC_SETTINGS, "targets": TARGET_SETTINGS, "config": CONFIG_SETTINGS}
    for name, value in objects.items():
        flat = [k for k in groups[name] if k in given]
        if value is not None and flat:
            raise SpecError(
                "argument", flat[0], f"is given together with {name}", "give one of the two"
            )


def _one_deployment_only(layout: bool, concurrency: bool, closed_loop: bool) -> None:
    """``layout`` and ``concurrency`` describe one deployment, which only simulate_load runs."""
    if layout and not closed_loop:
        raise SpecError(
            "argument",
            "layout",
            "fixes the layout of one deployment's instances, which only simulate_load runs (a "
            "search or plan chooses each candidate's layout for its load)",
            "drop layout, or call simulate_load",
        )
    if concurrency and not closed_loop:
        raise SpecError(
            "argument",
            "concurrency",
            "sets a closed loop of clients, which only simulate_load runs (a search or plan "
            "finds the most Poisson load)",
            "drop concurrency, or call simulate_load",
        )


def _enough_requests(requests: int, trace: bool, closed_loop: bool) -> None:
    """A search reads p99s: each of its runs serves at least ``SEARCH_MIN_REQUESTS``."""
    if closed_loop or trace:
        return
    from ..optimise.load_search import SEARCH_MIN_REQUESTS

    if requests < SEARCH_MIN_REQUESTS:
        raise SpecError(
            "argument",
            "requests",
            f"is {requests}: a search reads p99s, which need at least "
            f"{SEARCH_MIN_REQUESTS} requests per run",
            f"give at least {SEARCH_MIN_REQUESTS} requests; the default is 10,000",
        )


def _flat_traffic(v: dict, need_rate: bool, closed_loop: bool) -> Traffic:
    """The ``Traffic`` of the flat settings (a placeholder rate where a search sets it)."""
    from ..load.arrivals import make_traffic

    if not need_rate and v["arrival_rate_per_s"] is None and v["trace"] is None:
        v["arrival_rate_per_s"] = 1.0
    _enough_requests(v["requests"], v["trace"] is not None, closed_loop)
    return make_traffic(*(v[name] for name in TRAFFIC_SETTINGS))


def _flat_config(v: dict) -> EngineConfig:
    """The ``EngineConfig`` of the flat settings: limits not given are the engine profile's own
    on each GPU, and so are its admission and prompt scheduling (the ideal engine's are
    DEFAULT_ENGINE's)."""
    from ..load.engine import EngineConfig
    from ..load.kv_tiers import TIER_KINDS, KvTier

    if v["kv_disk_gb"] is not None and v["kv_offload_gb"] is None:
        raise SpecError(
            "argument", "kv_disk_gb", "is a tier below host memory", "give kv_offload_gb too"
        )
    tiers = []
    for kind, (size, speed) in TIER_KINDS.items():  # nearest the GPU first
        if v[size] is not None:
            bw = v[speed]
            gb = 1e9
            tiers.append(
                KvTier(kind, v[size] * gb, None if bw is None else bw * gb, v["kv_offload_overlap"])
            )
    return EngineConfig(
        **{name: v[name] for name in _LIMITS if v[name] is not None},
        engine_own=(
            *(n for n in _LIMITS if v[n] is None),
            "admission",
            "prefill",
            "graph_batch_sizes",
        ),
        speculation_max_batch=v["speculation_max_batch"],
        speculation_schedule=v["speculation_schedule"],
        prefix_caching=v["prefix_caching"],
        router=v["router"],
        kv_tiers=tuple(tiers),
        adp_balancing=_adp_balancing(v["adp_balance"]),
    )


def _adp_balancing(text: str | None) -> tuple[int, int] | None:
    """TensorRT-LLM's attention-DP balancing from ``adp_balance`` ('WAIT,TIMEOUT' steps, each
    at most ``ADP_BALANCING_MOST``; 'on': the engine's own counts, as ``enable_balance: true``
    alone runs it)."""
    from ..load.engine import ADP_BALANCING_DEFAULTS, ADP_BALANCING_MOST, adp_pair

    if text is None:
        return None
    if str(text).strip().lower() == "on":
        return ADP_BALANCING_DEFAULTS
    parts = str(text).split(",")
    pair = adp_pair(*parts) if len(parts) == 2 else None
    if pair is not None:
        return pair
    raise SpecError(
        "argument",
        "adp_balance",
        f"is {short(text)}",
        "give 'WAIT,TIMEOUT': whole numbers of steps, WAIT >= 0 and TIMEOUT >= 1, each at most "
        f"{ADP_BALANCING_MOST:,} (e.g. 0,60), or 'on' for the engine's own",
    )


def settings_per_gpu(model, hardware, problem: dict) -> list[Setting]:
    """One setting per GPU, under the preset of serving under load unless ``assumptions`` is
    given (``settings.LOAD_ASSUMPTIONS``).

    Parameters
    ----------
    model : str, Architecture or Setting
        The model served (a Setting: its own GPU).
    hardware : str, GPU or list of them
        The GPUs.
    problem : dict
        Settings of what is served.

    Returns
    -------
    list of Setting
        One per GPU.
    """
    if isinstance(model, Setting):
        return [setting_of(model, None, **problem)]
    problem = {"assumptions": table.LOAD_ASSUMPTIONS, **problem}
    names = hardware if isinstance(hardware, (list, tuple)) else [hardware]
    if not names:
        raise SpecError("argument", "hardware", "is empty", "give at least one GPU")
    settings = [setting_of(model, h, **problem) for h in names]
    gpus = [s.gpu.name for s in settings]
    twice = next((g for i, g in enumerate(gpus) if g in gpus[:i]), None)
    if twice is not None:  # each candidate would be searched, and listed, twice
        raise SpecError("argument", "hardware", f"names {twice} twice", "give each GPU once")
    return settings


def given_deployment(
    setting,
    gpus,
    instances,
    prefill_gpus=None,
    prefill_instances=None,
    v=None,
    model=None,
    problem=None,
) -> Deployment:
    """The given deployment, within the setting's cap on GPUs (``max_gpus``).

    Parameters
    ----------
    setting : Setting
        The problem.
    gpus, instances : float, int
        GPUs per instance, and instances.
    prefill_gpus, prefill_instances : float, int, optional
        A separate prefill pool's.
    v : dict, optional
        The load settings (a prefill pool on other GPUs: ``prefill_hardware``).
    model : str, Architecture or Setting, optional
        The model as the caller gave it.
    problem : dict, optional
        Settings of what is served.

    Returns
    -------
    Deployment
        The deployment, its GPUs whole.
    """
    from ..load.deployment import Deployment

    v = v or {}
    for name in ("decode_hardware", "failures"):
        if v.get(name):
            raise SpecError(
                "argument",
                name,
                "applies to a capacity search; a given deployment's GPUs are its hardware"
                if name == "decode_hardware"
                else "sizes a searched plan; a given deployment has nothing to size",
                f"drop {name}",
            )
    other = None
    if v.get("prefill_hardware") is not None:
        other = on_gpu(model, setting, v["prefill_hardware"], problem)
        if other.gpu == setting.gpu:
            other = None
    gpus = table.option("gpus").check(gpus)
    if prefill_gpus is not None or prefill_instances is not None:
        prefill_gpus = table.option("prefill_gpus").check(prefill_gpus or gpus)
        d = Deployment(
            _whole_gpus(gpus),
            instances,
            _whole_gpus(prefill_gpus, "prefill_gpus"),
            prefill_instances or 1,
            other,
        )
    else:
        d = Deployment(_whole_gpus(gpus), instances)
    if setting.max_gpus is not None and d.gpus > setting.max_gpus:
        raise SpecError(
            "argument",
            "max_gpus",
            f"is {setting.max_gpus}, but the deployment given has {d.gpus} GPUs",
            "give a smaller deployment, or drop max_gpus",
        )
    return d


def on_gpu(model, setting: Setting, name, problem: dict) -> Setting:
    """A setting on another GPU (a prefill pool's: no speculation), priced on the same basis.

    Parameters
    ----------
    model : str, Architecture or Setting
        The model as the caller gave it.
    setting : Setting
        The deployment's setting.
    name : str or GPU
        The other GPU.
    problem : dict
        Settings of what is served.

    Returns
    -------
    Setting
        The setting on that GPU.
    """
    from ..serving.setting import price_gpu
    from ..specs.hardware import load_hardware

    if isinstance(model, Setting):
        gpu, _ = price_gpu(
            load_hardware(name), setting.gpu.price_basis, setting.costs_file or None, setting.pue
        )
        return dataclasses.replace(setting, gpu=gpu, spec=None)
    return dataclasses.replace(settings_per_gpu(model, [name], problem)[0], spec=None)


def _whole_gpus(value: float, field: str = "gpus") -> int:
    """``value`` (setting ``field``, checked as a number) as a whole number of GPUs."""
    if float(value) != int(value):
        raise SpecError(
            "argument", field, f"is {value:g}", "an instance has a whole number of GPUs"
        )
    return int(value)


def checked_yes(value) -> bool:
    """The ``yes`` setting checked (a flag): run work past the estimate's bound.

    Parameters
    ----------
    value : bool
        As given.

    Returns
    -------
    bool
        Checked.
    """
    return table.option("yes").check(value)


def checked_progress(progress) -> None:
    """A ``progress`` argument is a function of a line of text, or None (a Python caller's
    string or number would fail when the first line is said, after the work began).

    Parameters
    ----------
    progress : callable or None
        As given.
    """
    if progress is not None and not callable(progress):
        raise SpecError(
            "argument", "progress", f"expected a function, got {short(progress)}", "e.g. print"
        )


def need_targets(targets: Targets) -> None:
    """Refuse a search without a latency target to search against.

    Parameters
    ----------
    targets : Targets
        The targets given.

    Returns
    -------
    None
    """
    if targets.empty:
        raise SpecError(
            "argument",
            "slo_ttft_p99_s",
            "no latency target given",
            "give slo_ttft_p99_s, slo_tpot_p99_s or slo_e2e_p99_s: --slo-ttft-p99, --slo-tpot-p99"
            " or --slo-e2e-p99 on the command line",
        )
