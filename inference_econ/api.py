"""The notebook-facing API: a few functions that take names and return DataFrames.

>>> import inference_econ as ie
>>> ie.point("Llama 3 70B", "H100-paper", gpus=8, batch=64, weight_bits=8)   # one configuration
>>> f = ie.frontier("Llama 3 70B", "H100-paper", weight_bits=8)               # its Pareto frontier
>>> f.to_dataframe(); f.fastest(); f.preference_point(); f.cheapest_at_speed(100)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from . import settings as table
from .errors import InfeasibleError, SpecError, short, warn
from .model.assumptions import Assumptions, preset
from .model.machine import flop_rates, min_gpus, usable_hbm_bytes
from .model.workload import compile_workload
from .serving.decode import evaluate, evaluate_columns
from .serving.setting import Setting, make_setting
from .serving.toy import critical_batch
from .specs import catalog
from .specs.architecture import Architecture, load_model
from .specs.catalog import display_path
from .specs.hardware import GPU, load_hardware

if TYPE_CHECKING:  # imported on first use: a point is computed and printed without them
    import pandas as pd

    from .optimise.frontier import Frontier
    from .optimise.method import Method
    from .runs.study_run import StudyResult


def _split(kwargs: dict) -> tuple[dict, Method | str | None, dict]:
    """Keyword arguments into (problem settings, method, method options)."""
    kwargs = dict(kwargs)
    method = kwargs.pop("method", None)
    if kwargs.pop("exhaustive", False):
        method = "exhaustive"
    method_options = {k: kwargs.pop(k) for k in table.names(table.METHOD) if k in kwargs}
    return kwargs, method, method_options


def _setting(model, hardware, **kwargs) -> Setting:
    if isinstance(model, Setting):
        if hardware is not None:
            # ie.frontier(setting, method) would otherwise drop the method without a word
            raise SpecError(
                "argument",
                "hardware",
                f"is {short(hardware)}, given together with a Setting (which has its GPU)",
                "pass only the Setting; a search method goes by keyword: method=...",
            )
        if kwargs:
            raise SpecError(
                "argument",
                next(iter(kwargs)),
                "given together with a Setting",
                "change the setting with setting.replace(...) instead",
            )
        return model
    return make_setting(model, hardware, **kwargs)


def _frontier(setting: Setting, method: Method) -> Frontier:
    """``optimise.optimiser.frontier``, imported on first use: ``point`` needs none of
    ``optimise/`` (issue 28)."""
    from .optimise.optimiser import frontier

    return frontier(setting, method)


def _scalar(value):
    """A cell of ``point_fields`` as a row of ``points`` holds it: text as ``str``."""
    return str(value) if isinstance(value, np.str_) else value


def _one_configuration(gpus, batch) -> None:
    """``point`` describes one configuration: one number each of ``gpus`` and ``batch``."""
    for name, value in (("gpus", gpus), ("batch", batch)):
        if np.ndim(value) > 0 and np.size(value) != 1:
            raise SpecError(
                "argument",
                name,
                f"is {short(value)}: point describes one configuration",
                "give one number, or use ie.points for many",
            )


@table.takes(table.PROBLEM)
def point(model, hardware=None, *, gpus, batch, discrete: bool = False, **kwargs) -> pd.Series:
    """One configuration (GPUs, batch) of a model on a GPU: latency, tokens/s per request,
    $ per million tokens, MFU, the best layout and the latency breakdown.

    The layout is the best of the paper's continuous ones (real-valued degrees, docs/model.md
    §A5), or with ``discrete=True`` the best whole one, as an engine launches it (§B7; whole
    GPUs). Keyword arguments are the settings of ``make_setting`` (context_tokens,
    weight_bits, draft, ...; the table in ``inference_econ/settings/``). ``gpus`` and
    ``batch`` are one number each (``points`` takes many).
    """
    _one_configuration(gpus, batch)
    return points(model, hardware, gpus=gpus, batch=batch, discrete=discrete, **kwargs).iloc[0]


@table.takes(table.PROBLEM)
def points(model, hardware=None, *, gpus, batch, discrete: bool = False, **kwargs) -> pd.DataFrame:
    """Many configurations at once (``gpus`` and ``batch`` broadcast against each other), as
    ``point``."""
    discrete = table.option("discrete").check(discrete, "argument", "discrete")
    return evaluate(_setting(model, hardware, **kwargs), gpus, batch, discrete)


@table.takes(table.PROBLEM)
def point_fields(model, hardware=None, *, gpus, batch, discrete: bool = False, **kwargs) -> dict:
    """``point`` as a dict {column: value} (numpy scalars), computed without pandas: what
    the ``point`` command prints (issue 28: it starts in a third of a second). ``gpus`` and
    ``batch`` are one number each."""
    _one_configuration(gpus, batch)
    discrete = table.option("discrete").check(discrete, "argument", "discrete")
    columns = evaluate_columns(_setting(model, hardware, **kwargs), gpus, batch, discrete)
    return {name: _scalar(values[0]) for name, values in columns.items()}


@table.takes(table.PROBLEM, table.METHOD)
def frontier(model, hardware=None, *, method=None, **kwargs) -> Frontier:
    """The Pareto frontier of tokens/s per request against the decode-only price.

    Parameters
    ----------
    model : str, Architecture or Setting
        A model name, alias or YAML file (``ie.list_specs("models")``), a loaded
        ``Architecture``, or a whole ``Setting`` (then no other setting may be given).
    hardware : str or GPU, optional
        A GPU name, alias or YAML file (``ie.list_specs("hardware")``); not with a Setting.
    method : {"grid", "discrete", "exhaustive"} or Method, optional
        How the frontier is searched (default the paper's continuous grid, docs/model.md §A7).
    **settings
        Every setting of what is served and of the search, each a keyword-only parameter of
        this signature with the table's default (``inference_econ/settings/``):
        ``context_tokens``, ``weight_bits``, ``draft``, ``assumptions``, ``grid_points``, ...

    Returns
    -------
    Frontier
        The frontier's points (``to_dataframe()``; ``usd_per_mtok`` is the decode-only price,
        inference_econ/columns.py), with ``fastest()``, ``cheapest()``,
        ``preference_point(k)`` and ``cheapest_at_speed(v)``.

    Examples
    --------
    >>> import inference_econ as ie
    >>> f = ie.frontier("Llama 3 70B", "H100-paper", weight_bits=8, grid_points=60)
    >>> f.fastest()["tokens_per_s"] > f.cheapest()["tokens_per_s"]
    True
    """
    problem, method, options = _split({"method": method, **kwargs})
    from .optimise.method import make_method

    return _frontier(_setting(model, hardware, **problem), make_method(method, **options))


def study(
    spec,
    out=None,
    *,
    jobs: int | None = None,
    dask: str | None = None,
    progress=None,
    cache_dir=None,
    recompute: bool = False,
    yes: bool = False,
) -> StudyResult:
    """Every cell of a study: ``.key_points`` (one row per cell x key point) and ``.frontiers``
    (one row per cell x frontier point), tidy DataFrames with a column per axis.

    ``spec`` is a study file (a path, or a name such as "studies/accelerators-models"), its
    parsed mapping or a ``Study``. With ``out`` the tables, ``study.json`` and the summary
    figure are written there and finished cells are cached in ``out/cache`` (or ``cache_dir``),
    so a rerun computes only what changed. ``jobs`` local processes (default: the cores) or a
    Dask cluster (``dask="local"`` or a scheduler address) compute the cells; ``recompute``
    ignores the cache (after changing the model's code without changing the version). Cells
    estimated to take more than ten minutes (``settings.CONFIRM_SECONDS``) are refused with the
    estimate unless ``yes``.
    """
    values = table.check_each({"jobs": jobs, "dask": dask, "recompute": recompute, "yes": yes})
    if values["recompute"] and out is None and cache_dir is None:
        raise SpecError(  # nothing is cached without a folder: recompute would be ignored
            "argument",
            "recompute",
            "is given, but nothing is cached without an output folder: it would be ignored",
            "give out (--out) or cache_dir too, or drop recompute",
        )
    from .runs.study_run import run_study

    return run_study(
        spec, out, values["jobs"], values["dask"], progress, cache_dir, recompute, values["yes"]
    )


def model_summary(
    model,
    hardware="H100-paper",
    assumptions: str | Assumptions = "paper",
    weight_bits=None,
    activation_bits=None,
    kv_cache_bits=None,
) -> dict:
    """Derived figures of a model at a precision (default: its file's): parameters, KV cache
    per token, memory, critical batch, under an assumption preset (default ``paper``, as
    everywhere)."""
    arch: Architecture = load_model(model).with_precision(
        weight_bits, activation_bits, kv_cache_bits
    )
    gpu: GPU = load_hardware(hardware)
    a = preset(assumptions)
    work = compile_workload(arch, a)
    flop = flop_rates(gpu, work.weight_bits, a)[1]
    bw = gpu.sustained_hbm_bandwidth_bytes_per_s
    sparsity = max(g.sparsity for g in work.groups)
    return {
        "name": arch.name,
        "description": arch.description,
        "source": arch.source,
        "file": display_path(arch.source_file),
        "assumptions": a.label,
        "precision": arch.precision.label(),
        "layers": arch.layers,
        "layer_groups": ", ".join(f"{g.name}: {g.layers}" for g in arch.layer_groups),
        "d_model": arch.d_model,
        "attention": arch.attention.kind,
        "query_heads": arch.attention.query_heads,
        "kv_heads": arch.attention.kv_heads,
        # the model's context window (max_context_tokens in its file; blank: not stated)
        "max_context_tokens": arch.max_context_tokens,
        "total_params": work.total_params,
        "active_params": work.active_params,
        "published_total_params": arch.published_total_params,
        "published_active_params": arch.published_active_params,
        "weights_total_bytes": work.weights_total_bytes,
        "kv_bytes_per_token": work.kv_bytes_per_token,
        "attention_layers": arch.attention_layers,
        "state_bytes_per_request": work.state_bytes_per_sequence,
        "mtp_modules": arch.mtp.modules if arch.mtp else 0,
        "sparsity": sparsity,
        "hardware": gpu.name,
        "hardware_file": display_path(gpu.source_file),
        "min_gpus_for_weights": min_gpus(work.weights_total_bytes, gpu),
        # Eq. 2's B* = F·wb/(2·BW), times the sparsity for MoE (each expert sees B/s tokens)
        "critical_batch": critical_batch(work.bytes_per_weight, bw, flop) * sparsity,
        # tokens of KV cache one GPU holds beside the weights, in the HBM the assumptions
        # let weights and KV fill (§A5's reserve, §F8's workspace; not the model's window)
        "kv_tokens_beside_weights_one_gpu": max(
            0.0, usable_hbm_bytes(gpu, a) - work.weights_total_bytes
        )
        / work.kv_bytes_per_token,
    }


#: Interconnect fields that only mean something for some kinds (docs/model.md §C1).
_FABRIC_FIELDS = {
    "links_per_gpu": ("full_mesh", "torus"),
    "link_bandwidth_bytes_per_s": ("full_mesh", "torus"),
    "torus_dimensions": ("torus",),
    "torus_wraparound": ("torus",),
    "link_latency_s": ("torus",),
    "nvlink_bridge_gpus": ("pcie",),
}


def hardware_summary(hardware) -> dict:
    """A GPU's figures and the derived ones the model uses (caps, all-reduce bandwidths);
    interconnect fields are shown for the kinds they describe."""
    gpu: GPU = load_hardware(hardware)
    # the file as models name theirs: shipped relative to the package data, a user's in full
    out = {
        ("file" if k == "source_file" else k): (display_path(v) if k == "source_file" else v)
        for k, v in gpu.to_dict().items()
    }
    out["link_bandwidth_bytes_per_s"] = gpu.link_bandwidth_bytes_per_s
    for field, kinds in _FABRIC_FIELDS.items():
        if gpu.interconnect not in kinds:
            out.pop(field)
    if not gpu.pcie_bandwidth_bytes_per_s:
        out.pop("pcie_bandwidth_bytes_per_s")
    out.update(
        {
            "sustained_hbm_bandwidth_bytes_per_s": gpu.sustained_hbm_bandwidth_bytes_per_s,
            "intra_node_allreduce_bandwidth_bytes_per_s": gpu.intra_node_allreduce_bandwidth_bytes_per_s,
            "inter_node_allreduce_bandwidth_bytes_per_s": gpu.inter_node_allreduce_bandwidth_bytes_per_s,
        }
    )
    return out


def engine_summary(engine) -> dict:
    """An engine profile's terms (docs/model.md Part F), with the standard errors of the
    fitted ones and the profile it derives from."""
    from .specs.engine import load_engine

    prof = load_engine(engine)
    out = {
        "name": prof.name,
        "description": prof.description,
        "file": display_path(prof.source_file),
        "derived_from": prof.derived_from,
        **prof.terms(),
        "kv_cache_fraction_of": prof.kv_cache_fraction_of,
    }
    for term, error in prof.standard_errors:
        out[f"{term}_standard_error"] = error
    return out


def spec_kind(name_or_path) -> str:
    """``models``, ``hardware`` or ``engines``: what a name or a YAML file names (a file by
    its folder, its ``derive_from`` or its fields; a name by the catalog, models first)."""
    from .errors import UnknownNameError, did_you_mean, short
    from .specs.kinds import FILE_KINDS, spec_kind

    text = str(name_or_path)
    path = catalog._existing_file(text)
    if path is not None and (text.endswith((".yaml", ".yml")) or "/" in text):
        return spec_kind(path)
    for kind in FILE_KINDS:
        try:
            catalog.find(kind, text)
            return kind
        except UnknownNameError:
            continue
    names = [e.name for k in FILE_KINDS for e in catalog.entries(k)]
    raise SpecError(
        "argument",
        "NAME",
        f"no model, GPU or engine profile named {short(text)}",
        did_you_mean(text, names)
        or "see 'inference-econ list models', 'list hardware' and 'list engines'",
    )


def list_specs(kind: str) -> pd.DataFrame:
    """The models, hardware, scenarios, engine profiles or cost files shipped (and on
    INFERENCE_ECON_PATH)."""
    if not isinstance(kind, str):
        raise SpecError(
            "argument", "kind", f"expected a kind's name, got {short(kind)}", "e.g. 'models'"
        )
    kind = {
        "model": "models",
        "gpu": "hardware",
        "gpus": "hardware",
        "scenario": "scenarios",
        "engine": "engines",
    }.get(kind, kind)
    rows = [
        {
            "name": e.name,
            "aliases": ", ".join(e.aliases),
            "description": e.description,
            "file": display_path(e.path),
        }
        for e in catalog.entries(kind)
    ]
    import pandas as pd

    return pd.DataFrame(rows, columns=["name", "aliases", "description", "file"])


# --- serving under load (docs/model.md Part E) -------------------------------------------------
def _load_inputs(
    kwargs: dict, need_rate: bool = True, sized: bool = False, closed_loop: bool = False
):
    """Keyword arguments into (problem settings, Traffic, Targets, EngineConfig, other load
    settings), each checked against the table of settings. Without ``need_rate`` (a search
    sets the rate) a missing rate is a placeholder; ``closed_loop``: ``concurrency`` (clients
    instead of a rate) is taken, which only a simulation of one deployment runs."""
    from .load.arrivals import make_traffic
    from .load.engine import EngineConfig
    from .load.targets import Targets

    if not sized and kwargs.get("confidence") is not None:
        raise SpecError(
            "argument",
            "confidence",
            "sizes a capacity plan; this function plans none",
            "drop confidence, or call capacity",
        )
    kwargs = dict(kwargs)
    given = {k: kwargs.pop(k) for k in table.names(table.LOAD) if k in kwargs}
    v = table.check(given, [table.LOAD])
    if v["layout"] is not None and not closed_loop:
        raise SpecError(
            "argument",
            "layout",
            "fixes the layout of one deployment's instances, which only simulate_load runs (a "
            "search or plan chooses each candidate's layout for its load)",
            "drop layout, or call simulate_load",
        )
    if v["concurrency"] is not None and not closed_loop:
        raise SpecError(
            "argument",
            "concurrency",
            "sets a closed loop of clients, which only simulate_load runs (a search or plan "
            "finds the most Poisson load)",
            "drop concurrency, or call simulate_load",
        )
    if not need_rate and v["arrival_rate_per_s"] is None and v["trace"] is None:
        v["arrival_rate_per_s"] = 1.0
    if not closed_loop and v["trace"] is None:
        from .optimise.load_search import SEARCH_MIN_REQUESTS

        if v["requests"] < SEARCH_MIN_REQUESTS:
            raise SpecError(
                "argument",
                "requests",
                f"is {v['requests']}: a search reads p99s, which need at least "
                f"{SEARCH_MIN_REQUESTS} requests per run",
                f"give at least {SEARCH_MIN_REQUESTS} requests; the default is 10,000",
            )
    traffic = make_traffic(
        v["arrival_rate_per_s"],
        v["input_lengths"],
        v["output_lengths"],
        v["trace"],
        v["arrival_process"],
        v["requests"],
        v["seed"],
        v["shared_prefix_tokens"],
        v["shared_prefixes"],
        v["session_turns"],
        v["think_time_s"],
        v["concurrency"],
    )
    targets = Targets(v["slo_ttft_p99_s"], v["slo_tpot_p99_s"], v["slo_e2e_p99_s"])
    # limits not given are the engine profile's own on each GPU (``engine_config``), and so
    # are its admission and prompt scheduling; the ideal engine's are DEFAULT_ENGINE's
    limits = ("max_batch_requests", "step_token_budget", "scheduler_steps")
    config = EngineConfig(
        **{name: v[name] for name in limits if v[name] is not None},
        engine_own=(*(n for n in limits if v[n] is None), "admission", "prefill"),
        speculation_max_batch=v["speculation_max_batch"],
        speculation_schedule=v["speculation_schedule"],
        prefix_caching=v["prefix_caching"],
        router=v["router"],
    )
    return kwargs, traffic, targets, config, v


def _settings(model, hardware, problem: dict) -> list[Setting]:
    """One setting per GPU (``hardware`` a name, a GPU, or a list of them), under the preset
    of serving under load unless ``assumptions`` is given (``settings.LOAD_ASSUMPTIONS``)."""
    if isinstance(model, Setting):
        return [_setting(model, None, **problem)]
    problem = {"assumptions": table.LOAD_ASSUMPTIONS, **problem}
    names = hardware if isinstance(hardware, (list, tuple)) else [hardware]
    if not names:
        raise SpecError("argument", "hardware", "is empty", "give at least one GPU")
    return [_setting(model, h, **problem) for h in names]


def _deployment(
    setting,
    gpus,
    instances,
    prefill_gpus=None,
    prefill_instances=None,
    v=None,
    model=None,
    problem=None,
):
    """The given deployment, within the setting's cap on GPUs (``max_gpus``); ``v`` the load
    settings (a prefill pool on other GPUs: ``prefill_hardware``)."""
    from .load.deployment import Deployment

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
        other = _on_gpu(model, setting, v["prefill_hardware"], problem)
        if other.gpu == setting.gpu:
            other = None
    gpus = table.option("gpus").check(gpus)
    if prefill_gpus is not None or prefill_instances is not None:
        prefill_gpus = table.option("prefill_gpus").check(prefill_gpus or gpus)
        d = Deployment(
            _whole_gpus(gpus),
            instances,
            _whole_gpus(prefill_gpus),
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


def _on_gpu(model, setting: Setting, name, problem: dict) -> Setting:
    """``setting`` on another GPU (a prefill pool's: no speculation), priced on the same
    basis; ``model`` as the caller gave it (a name, or a Setting)."""
    from .serving.setting import price_gpu
    from .specs.hardware import load_hardware

    if isinstance(model, Setting):
        gpu, _ = price_gpu(
            load_hardware(name), setting.gpu.price_basis, setting.costs_file or None, setting.pue
        )
        return dataclasses.replace(setting, gpu=gpu, spec=None)
    return dataclasses.replace(_settings(model, [name], problem)[0], spec=None)


def _whole_gpus(value: float) -> int:
    if float(value) != int(value):
        raise SpecError(
            "argument", "gpus", f"is {value:g}", "an instance has a whole number of GPUs"
        )
    return int(value)


@table.takes(table.PROBLEM, table.LOAD, command="simulate")
def simulate_load(
    model, hardware=None, *, gpus, prefill_gpus=None, progress=None, yes=False, **kwargs
):
    """One deployment under one load (docs/model.md Part E): ``instances`` instances of
    ``gpus`` GPUs (with ``prefill_gpus`` x ``prefill_instances`` a separate prefill pool)
    serving ``arrival_rate_per_s`` requests/s of ``input_lengths`` / ``output_lengths`` (or a
    ``trace``; or a closed loop of ``concurrency`` clients, each sending its next request when
    its last one finishes). Returns a ``LoadResult``: TTFT, TPOT and end-to-end distributions, throughput,
    goodput against the ``slo_*`` targets, utilisation and $ per million tokens."""
    from .load.deployment import count_intervals, fixed_layout, simulate_deployment
    from .optimise.load_search import check_budget
    from .serving.intervals import expected, interval_keys

    problem, traffic, targets, config, v = _load_inputs(kwargs, closed_loop=True)
    setting = _settings(model, hardware, problem)[0]
    d = _deployment(
        setting, gpus, v["instances"], prefill_gpus, v["prefill_instances"], v, model, problem
    )
    runs = 2 if d.disaggregated else 1
    runs += len(interval_keys()) if expected(setting) else 0  # the counts' interval ends
    layout, setting = _fixed_layout(setting, d, v["layout"])
    check_budget(traffic, runs, "simulate", _yes(yes))
    with fixed_layout(d.gpus_per_instance, layout):
        result = simulate_deployment(setting, d, traffic, targets, config, progress)
        ends = count_intervals(setting, d, traffic, targets, config, result)
    if ends:
        result = dataclasses.replace(result, count_ends=tuple(ends.items()))
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


def _fixed_layout(setting: Setting, deployment, text: str | None):
    """The ``EngineLayout`` a ``layout`` text states for the deployment's instances (as
    measured rows state theirs: ``measured.layouts.layout_of``), one the engine runs
    on that many GPUs, and the setting with the experts placed as the text states them
    (``stated_experts``: "EP8" split over the tensor group at every batch, "EP1" never, no EP
    degree §A5's rule); (None, the setting) where not given."""
    if text is None:
        return None, setting
    from .load.deployment import instance_layouts
    from .measured.layouts import layout_of
    from .model.latency import stated_experts
    from .model.mixed_step import EngineLayout

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
    curve_points=8,
    progress=None,
    yes=False,
    **kwargs,
):
    """The most requests/s a given deployment serves within the ``slo_*`` targets, with the
    latency percentiles along a sweep of load (a ``MaxLoad``; ``to_dataframe()`` for the curve)."""
    from .optimise.load_search import SIMULATIONS_PER_SEARCH, check_budget
    from .optimise.load_search import max_load as search

    problem, traffic, targets, config, v = _load_inputs(kwargs, need_rate=False)
    _need_targets(targets)
    setting = _settings(model, hardware, problem)[0]
    d = _deployment(
        setting, gpus, v["instances"], prefill_gpus, v["prefill_instances"], v, model, problem
    )
    pools = 2 if d.disaggregated else 1
    check_budget(
        traffic, pools * SIMULATIONS_PER_SEARCH + curve_points, "the load search", _yes(yes)
    )
    return search(setting, d, traffic, targets, config, curve_points, progress)


@table.takes(table.PROBLEM, table.LOAD, command="capacity")
def capacity(model, hardware=None, *, sizes=None, progress=None, yes=False, **kwargs):
    """The cheapest deployment (GPU, instance size, instances; with ``disaggregated=True``
    also separate prefill and decode pools, on ``prefill_hardware`` and ``decode_hardware``
    when given) serving ``arrival_rate_per_s`` within the ``slo_*`` targets. ``hardware`` may
    be a list of GPUs; with a draft (or draft heads) every GPU is searched with and without
    speculation; with ``failures=True`` the plan also holds the targets with one instance down
    (``plan.redundancy``). Returns a ``CapacityPlan``: under an engine profile (the default,
    ``settings.LOAD_ASSUMPTIONS``) the expected plan, with ``confident`` (the plan for the
    targets to hold at the pessimistic end of the ``confidence`` interval) and ``bound`` (the
    ideal bound's plan) beside it (docs/model.md §F12). Like every load search, work estimated
    at more than ten minutes is refused unless ``yes``."""
    from .load.failures import Failures
    from .optimise.candidates import instance_sizes
    from .optimise.capacity import cheapest_deployment
    from .optimise.confident import confident_plan
    from .optimise.load_search import SIMULATIONS_PER_SEARCH, check_budget
    from .serving.intervals import ideal

    problem, traffic, targets, config, v = _load_inputs(kwargs, sized=True)
    _need_targets(targets)
    settings = _settings(model, hardware, problem)
    if settings[0].spec is not None:  # with and without speculation
        settings = settings + [dataclasses.replace(s, spec=None) for s in settings]
    pools = None
    if v["prefill_hardware"] is not None or v["decode_hardware"] is not None:
        if not v["disaggregated"]:
            raise SpecError(
                "argument",
                "prefill_hardware" if v["prefill_hardware"] else "decode_hardware",
                "sets the GPUs of a disaggregated deployment's pools",
                "give disaggregated=True (--disaggregated)",
            )
        bare = [dataclasses.replace(s, spec=None) for s in _settings(model, hardware, problem)]
        pools = (
            _pool_settings(model, v["prefill_hardware"], problem, bare, prefill=True),
            _pool_settings(model, v["decode_hardware"], problem, settings, prefill=False),
        )
    cap = settings[0].max_gpus
    searches = sum(len(sizes or instance_sizes(s, cap)) for s in settings)
    if pools is None:
        searches *= 3 if v["disaggregated"] else 1  # co-located, prefill and decode pools
    else:
        searches += sum(len(sizes or instance_sizes(s, cap)) for s in pools[0] + pools[1])
    expected = settings[0].assumptions.achievable
    runs = 2 if expected else 1  # the expected plan and the ideal bound beside it
    work = runs * (searches * SIMULATIONS_PER_SEARCH + 1) + (4 if v["failures"] else 0)
    check_budget(traffic, work, "the capacity search", _yes(yes))
    failures = Failures(v["gpu_mtbf_hours"], v["repair_hours"]) if v["failures"] else None

    def search(candidates, pools, failures=None):
        return cheapest_deployment(
            candidates, traffic, targets, config, v["disaggregated"], sizes, cap, progress,
            pools=pools, failures=failures,
        )  # fmt: skip

    plan = search(settings, pools, failures)
    if not expected:
        return plan
    bounds = [ideal(s) for s in settings]
    if progress:
        progress(f"the ideal bound beside it ({bounds[0].assumptions.label} preset)")
    try:  # the same search under the ideal preset (no failures: a bound)
        bound = search(
            bounds, None if pools is None else tuple([ideal(s) for s in p] for p in pools)
        )
    except InfeasibleError as exc:
        bound = str(exc)
    return confident_plan(plan, v["confidence"], bound, settings, traffic, config, progress)


def _pool_settings(model, names, problem: dict, default: list, prefill: bool) -> list:
    """The settings of one pool's GPUs (``names``: comma-separated text or a list; None: the
    deployment's own); a prefill pool does not speculate (it emits one token)."""
    if names is None:
        return default
    items = names.split(",") if isinstance(names, str) else list(names)
    items = [n.strip() if isinstance(n, str) else n for n in items if n != ""]
    if isinstance(model, Setting):
        out = [
            dataclasses.replace(_on_gpu(model, model, n, problem), spec=model.spec) for n in items
        ]
    else:
        out = _settings(model, items, problem)
    if prefill:
        out = [dataclasses.replace(s, spec=None) for s in out]
    elif out[0].spec is not None:
        out = out + [dataclasses.replace(s, spec=None) for s in out]
    return out


@table.takes(table.PROBLEM, table.LOAD, command="capacity")
def demand_plan(model, hardware=None, *, demand, sizes=None, progress=None, yes=False, **kwargs):
    """The cheapest mix of reserved and on-demand (or spot) capacity serving every hour of a
    ``demand`` curve (a CSV path or a ``DemandCurve``) within the ``slo_*`` targets (docs/model.md
    §G5): one knee search per GPU and instance size, then the reserved base that minimises the
    period's cost. ``reserved_basis`` (default owned) and ``burst_basis`` (default on-demand)
    price the two; ``spot_interruption_rate`` adds spot capacity. Returns a ``DemandPlan``."""
    from .load.demand import load_demand
    from .optimise.candidates import instance_sizes
    from .optimise.demand import demand_plan as plan
    from .optimise.load_search import SIMULATIONS_PER_SEARCH, check_budget

    curve = load_demand(demand)
    kwargs = dict(kwargs)
    for name in ("arrival_rate_per_s", "trace"):
        if kwargs.get(name) is not None:
            raise SpecError(
                "argument",
                name,
                "is given with a demand curve, which sets the rate of every hour",
                f"drop {name}",
            )
    kwargs["arrival_rate_per_s"] = curve.peak_per_s
    for name in ("failures", "prefill_hardware", "decode_hardware", "router"):
        if kwargs.get(name) not in (None, False, "random"):
            raise SpecError(
                "argument",
                name,
                "does not apply to a demand plan (one instance size searched per hour, co-located)",
                f"drop {name}",
            )
    costs, pue = kwargs.pop("costs", None), kwargs.get("pue")
    problem, traffic, targets, config, v = _load_inputs(kwargs)
    _need_targets(targets)
    settings = _settings(model, hardware, problem)
    cap = settings[0].max_gpus
    searches = sum(len(sizes or instance_sizes(s, cap)) for s in settings)
    check_budget(traffic, searches * SIMULATIONS_PER_SEARCH, "the demand plan", _yes(yes))
    return plan(
        settings,
        traffic,
        targets,
        curve,
        config,
        v["reserved_basis"],
        v["burst_basis"],
        v["spot_interruption_rate"],
        costs,
        pue,
        sizes,
        cap,
        progress,
    )


@table.takes(table.PROBLEM, table.LOAD, command="simulate")
def load_frontier(model, hardware=None, *, sizes=None, progress=None, yes=False, **kwargs):
    """The deployments that serve ``arrival_rate_per_s`` within the ``slo_*`` targets: their
    Pareto frontier of speed per request against $ per million output tokens (``LoadFrontier``)."""
    from .optimise.candidates import instance_sizes
    from .optimise.load_frontier import COUNT_MULTIPLES
    from .optimise.load_frontier import load_frontier as search
    from .optimise.load_search import SIMULATIONS_PER_SEARCH, check_budget

    problem, traffic, targets, config, v = _load_inputs(kwargs)
    _need_targets(targets)
    settings = _settings(model, hardware, problem)
    cap = settings[0].max_gpus
    searches = sum(len(sizes or instance_sizes(s, cap)) for s in settings)
    per_size = SIMULATIONS_PER_SEARCH + len(COUNT_MULTIPLES)
    check_budget(traffic, searches * per_size, "the load frontier", _yes(yes))
    return search(settings, traffic, targets, config, sizes, cap, progress)


def _yes(value) -> bool:
    """The ``yes`` setting checked (a flag): run work past the estimate's bound."""
    return table.option("yes").check(value)


def _need_targets(targets) -> None:
    if targets.empty:
        raise SpecError(
            "argument",
            "slo_ttft_p99_s",
            "no latency target given",
            "give slo_ttft_p99_s, slo_tpot_p99_s or slo_e2e_p99_s: --slo-ttft-p99, --slo-tpot-p99"
            " or --slo-e2e-p99 on the command line",
        )


# --- export: launch configurations and the benchmark that checks them -------------------------
#: What an export can start from.
EXPORT_PLANS = ("point", "frontier", "capacity", "disagg")
#: Frontier points an export can pick by name (or ``speed``: the cheapest at that speed).
FRONTIER_PICKS = ("fastest", "cheapest", "preference")


def export(
    model,
    hardware=None,
    *,
    engine: str,
    plan: str = "point",
    gpus=None,
    batch=None,
    prompt_tokens=None,
    output_tokens=None,
    prefill_gpus=None,
    pick: str | None = None,
    speed=None,
    max_model_len=None,
    checkpoint=None,
    progress=None,
    **kwargs,
):
    """A configuration as the engine launches it (``export.launch.LaunchPlan``): a ``point``
    (``gpus``, ``batch``), a ``frontier`` point (``pick`` fastest/cheapest/preference, or the
    cheapest at ``speed`` tokens/s per request; whole layouts), a ``capacity`` plan (the load
    settings and targets, ``disaggregated=True`` for pools) or a ``disagg`` plan (``gpus``,
    ``batch``, ``prefill_gpus``), for ``engine`` (vllm, sglang, trtllm). Requests of
    ``prompt_tokens`` in and ``output_tokens`` out (point, frontier, disagg). Every worker's
    memory is checked under the engine's profile: one that does not fit is refused with its
    numbers (``InfeasibleError``). Unless ``assumptions`` is given the figures are the
    achievable preset's under ``engine``."""
    from .export import launch
    from .export.launch import ENGINES

    if engine not in ENGINES:
        from .errors import did_you_mean

        raise SpecError(
            "argument",
            "engine",
            f"no launch configuration for {engine!r}",
            did_you_mean(str(engine), ENGINES) or f"choose {', '.join(ENGINES)}",
        )
    if plan not in EXPORT_PLANS:
        raise SpecError(
            "argument", "plan", f"unknown {plan!r}", f"choose {', '.join(EXPORT_PLANS)}"
        )
    if kwargs.get("scheduler_steps") not in (None, 1):
        # the engine versions an export targets (export/launch_flags.yaml) have no multi-step
        # scheduling: vLLM removed it with its V0 engine in 0.11
        raise SpecError(
            "argument",
            "scheduler_steps",
            f"is {kwargs['scheduler_steps']}: the engines an export targets (vLLM 0.11, "
            "SGLang, TensorRT-LLM) schedule every step",
            "drop --scheduler-steps to export",
        )
    kwargs.setdefault("assumptions", table.default("assumptions", "export"))
    if kwargs["assumptions"] == "achievable":
        kwargs.setdefault("engine", engine)
    common = {"max_model_len": max_model_len, "checkpoint": checkpoint}
    if plan == "capacity":
        capacity_plan = globals()["capacity"](model, hardware, progress=progress, **kwargs)
        _, traffic, _, config, _ = _load_inputs(
            {k: v for k, v in kwargs.items() if k in table.names(table.LOAD)}, sized=True
        )
        return launch.capacity_plan(capacity_plan, engine, traffic, config, **common)
    for name, value in (("prompt_tokens", prompt_tokens), ("output_tokens", output_tokens)):
        if value is None:
            raise SpecError(
                "argument", name, "is missing", "give the request's prompt and output tokens"
            )
    table.check_each({"prompt_tokens": prompt_tokens, "output_tokens": output_tokens})
    context = float(prompt_tokens) + float(output_tokens) / 2.0  # decode's mean context (§B10)
    setting = _setting(model, hardware, context_tokens=context, **kwargs)
    if plan == "frontier":
        if (pick is None) == (speed is None):
            raise SpecError(
                "argument",
                "pick",
                "give one of pick or speed",
                f"pick {', '.join(FRONTIER_PICKS)}, or speed in tokens/s per request",
            )
        from .optimise.method import make_method

        front = _frontier(
            setting.replace(prompt_tokens=float(prompt_tokens)), make_method("discrete")
        )
        if speed is not None:
            row = front.cheapest_at_speed(float(speed))
            if row is None:
                raise InfeasibleError(
                    f"no configuration reaches {float(speed):g} tokens/s per request"
                )
            label = f"frontier (cheapest at {float(speed):g} tokens/s)"
        elif pick in FRONTIER_PICKS:
            row = {
                "fastest": front.fastest,
                "cheapest": front.cheapest,
                "preference": front.preference_point,
            }[pick]()
            label = f"frontier ({pick})"
        else:
            raise SpecError(
                "argument", "pick", f"unknown {pick!r}", f"choose {', '.join(FRONTIER_PICKS)}"
            )
        gpus, batch = row["gpus"], row["batch"]
        return launch.point_plan(
            setting, engine, gpus, batch, prompt_tokens, output_tokens, source=label, **common
        )
    for name, value in (("gpus", gpus), ("batch", batch)):
        if value is None:
            raise SpecError(
                "argument", name, "is missing", f"a {plan} export needs --gpus and --batch"
            )
    if plan == "disagg":
        return launch.disagg_plan(
            setting, engine, gpus, batch, prompt_tokens, output_tokens, prefill_gpus, **common
        )
    return launch.point_plan(setting, engine, gpus, batch, prompt_tokens, output_tokens, **common)
