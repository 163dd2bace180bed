"""The notebook-facing API: functions that take names and return DataFrames and results, and
the one door of the command line to the package (``cli/`` imports nothing else of it).

Decode points and frontiers, spec summaries and studies are here; serving under load in
``load`` (its inputs typed by ``load_setup.load_inputs``), ``export``, and what the commands
read in ``labels``, ``views``, ``offers``, ``studies`` and ``spec_files``.

>>> import inference_econ as ie
>>> ie.point("Llama 3 70B", "H100-paper", gpus=8, batch=64, weight_bits=8)   # one configuration
>>> f = ie.frontier("Llama 3 70B", "H100-paper", weight_bits=8)               # its Pareto frontier
>>> f.to_dataframe(); f.fastest(); f.preference_point(); f.cheapest_at_speed(100)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import settings as table
from ..errors import SpecError, short
from ..model.assumptions import Assumptions, preset
from ..model.latency import StepModel
from ..model.machine import min_gpus
from ..model.workload import compile_workload
from ..serving.decode import evaluate, evaluate_columns
from ..serving.setting import Setting
from ..serving.toy import critical_batch
from ..specs import catalog
from ..specs.architecture import Architecture, load_model
from ..specs.hardware import GPU, load_hardware
from .autoscale import autoscale_plan
from .export import (
    EXPORT_PLANS,
    FRONTIER_PICKS,
    LAUNCH_OPTIONS,
    export,
    launch_files,
    plan_record,
    write_launch_files,
)
from .fleet import FLEET_SETTINGS, checked_power_cap, fleet_plan, power_plan, read_fleet
from .labels import (
    DETAIL_COLUMNS,
    SUMMARY_COLUMNS,
    context_parallel_intervals,
    continuous_note,
    coverage_note,
    expected_figures,
    figures_line,
    held_intervals,
    ideal_setting,
    interval_columns,
    load_coverage_note,
    memory_reason,
    prefill_intervals,
    redundant_note,
    requests_metadata,
    rows_coverage_note,
    uneven_note,
    whole_batch_kv_note,
)
from .load import capacity, demand_plan, load_frontier, max_load, simulate_load
from .load_setup import LoadInputs, load_inputs
from .offers import (
    check_blend,
    feasibility,
    feasibility_frontiers,
    find_observations,
    fit_preference,
    implied_size,
    load_observations,
    margin,
    observation,
    overlay_points,
    select_offers,
    shared_grids,
)
from .problem import setting_of
from .spec_files import (
    display_path,
    extra_data_roots,
    file_identity,
    import_hf_config,
    import_hf_repo,
    package_version,
    record_input,
    skipped_specs,
    tracking_inputs,
    unread_user_roots,
)
from .studies import (
    calibrate,
    calibrated_yaml,
    compare_measured,
    curve_models,
    default_speed,
    elasticities,
    load_scenario,
    paper_deviations,
    paper_tolerance,
    run_scenario,
    run_table,
    study_metadata,
    sweep,
)
from .views import (
    cache_note,
    cached_prompt_tokens,
    compare_context_parallel,
    compare_disaggregation,
    frontier_columns,
    operations,
    point_operations,
    prefill,
    price_ratio,
    request,
    search_method,
)

if TYPE_CHECKING:  # imported on first use: a point is computed and printed without them
    import pandas as pd
    from matplotlib.figure import Figure

    from ..optimise.frontier import Frontier
    from ..optimise.method import Method
    from ..runs.study_run import StudyResult


def _split(kwargs: dict) -> tuple[dict, Method | str | None, dict]:
    """Keyword arguments into (problem settings, method, method options)."""
    kwargs = dict(kwargs)
    method = kwargs.pop("method", None)
    if kwargs.pop("exhaustive", False):
        method = "exhaustive"
    method_options = {k: kwargs.pop(k) for k in table.names(table.METHOD) if k in kwargs}
    return kwargs, method, method_options


def _frontier(setting: Setting, method: Method) -> Frontier:
    """``optimise.optimiser.frontier``, imported on first use: ``point`` needs none of
    ``optimise/``."""
    from ..optimise.optimiser import frontier
    from .results import Frontier

    return Frontier.of(frontier(setting, method))


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
    """One configuration (GPUs, batch) of a model on a GPU.

    The layout is the best of the paper's continuous ones (real-valued degrees, docs/model.md
    §A5), or with ``discrete=True`` the best whole one, as an engine launches it (§B7; whole
    GPUs).

    Parameters
    ----------
    model : str, Architecture or Setting
        A model name, alias or YAML file, a loaded ``Architecture``, or a whole ``Setting``
        (then no other setting may be given).
    hardware : str or GPU, optional
        A GPU name, alias or YAML file; not with a Setting.
    gpus, batch : float
        One number each (``points`` takes many).
    discrete : bool
        Whole layouts.
    **kwargs
        The settings of ``make_setting`` (context_tokens, weight_bits, draft, ...; the table
        in ``inference_econ/settings/``).

    Returns
    -------
    pandas.Series
        Latency, tokens/s per request, $ per million tokens, MFU, the best layout and the
        latency breakdown.
    """
    _one_configuration(gpus, batch)
    return points(model, hardware, gpus=gpus, batch=batch, discrete=discrete, **kwargs).iloc[0]


@table.takes(table.PROBLEM)
def points(model, hardware=None, *, gpus, batch, discrete: bool = False, **kwargs) -> pd.DataFrame:
    """Many configurations at once, as ``point``.

    Parameters
    ----------
    model : str, Architecture or Setting
        A model name, alias or YAML file, a loaded ``Architecture``, or a whole ``Setting``
        (then no other setting may be given).
    hardware : str or GPU, optional
        A GPU name, alias or YAML file; not with a Setting.
    gpus, batch : float or array
        Broadcast against each other.
    discrete : bool
        Whole layouts.
    **kwargs
        The settings of ``make_setting``.

    Returns
    -------
    pandas.DataFrame
        One row per configuration, ``point``'s fields as columns.
    """
    discrete = table.option("discrete").check(discrete, "argument", "discrete")
    return evaluate(setting_of(model, hardware, **kwargs), gpus, batch, discrete)


@table.takes(table.PROBLEM)
def point_fields(model, hardware=None, *, gpus, batch, discrete: bool = False, **kwargs) -> dict:
    """``point`` computed without pandas: what the ``point`` command prints (it starts in a
    third of a second).

    Parameters
    ----------
    model : str, Architecture or Setting
        A model name, alias or YAML file, a loaded ``Architecture``, or a whole ``Setting``
        (then no other setting may be given).
    hardware : str or GPU, optional
        A GPU name, alias or YAML file; not with a Setting.
    gpus, batch : float
        One number each.
    discrete : bool
        Whole layouts.
    **kwargs
        The settings of ``make_setting``.

    Returns
    -------
    dict
        {column: value} (numpy scalars; text as ``str``).
    """
    _one_configuration(gpus, batch)
    discrete = table.option("discrete").check(discrete, "argument", "discrete")
    columns = evaluate_columns(setting_of(model, hardware, **kwargs), gpus, batch, discrete)
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
    >>> bool(f.fastest()["tokens_per_s"] > f.cheapest()["tokens_per_s"])
    True
    """
    problem, method, options = _split({"method": method, **kwargs})
    from ..optimise.method import make_method

    return _frontier(setting_of(model, hardware, **problem), make_method(method, **options))


def frontier_plot(
    model, hardware=None, *, method=None, front: Frontier | None = None, **kwargs
) -> Figure:
    """The figure ``frontier --figure`` draws: cost against speed per request.

    Under an engine profile the expected frontier is drawn with its 80 % and 90 % bands and
    the ideal bound's frontier (the same setting without the engine) dashed beside it; under
    an ideal preset, the frontier alone.

    Parameters
    ----------
    model, hardware, method, **settings
        As ``frontier``.
    front : Frontier, optional
        The setting's frontier when it is already computed (searched again when not given).

    Returns
    -------
    matplotlib.figure.Figure
        The figure (``fig.savefig("f.png")`` writes it).

    Examples
    --------
    >>> import inference_econ as ie
    >>> fig = ie.frontier_plot("Llama 3 8B", "H100-paper", grid_points=40)
    >>> fig.axes[0].get_ylabel()
    'cost per million output tokens'
    """
    from ..optimise.method import make_method
    from .results import Frontier

    problem, method, options = _split({"method": method, **kwargs})
    setting = setting_of(model, hardware, **problem)
    method = make_method(method, **options)
    label = setting.assumptions.label
    expected = expected_figures(setting)
    name = f"expected ({label})" if expected else f"ideal bound ({label})"
    drawn = Frontier.of(front if front is not None else _frontier(setting, method))
    others = {}
    if expected:
        bound = ideal_setting(setting)
        others[f"ideal bound ({bound.assumptions.label})"] = _frontier(bound, method)
    title = f"{setting.name}: cost against speed per request"
    return drawn.plot(name=name, others=others, title=title).figure


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
    """Every cell of a study.

    Parameters
    ----------
    spec : str, Path, mapping or Study
        A study file (a path, or a name such as "studies/accelerators-models"), its parsed
        mapping or a ``Study``.
    out : str or Path, optional
        Where the tables, ``study.json`` and the summary figure are written; finished cells
        are cached in ``out/cache``, so a rerun computes only what changed.
    jobs : int, optional
        Local processes computing the cells (default: the cores).
    dask : str, optional
        A Dask cluster instead: ``"local"`` or a scheduler address.
    progress : callable, optional
        Called with a line of text as the work goes.
    cache_dir : str or Path, optional
        The cache's folder (default ``out/cache``).
    recompute : bool
        Ignore the cache (after changing the model's code without changing the version).
    yes : bool
        Run cells estimated to take more than ten minutes (``settings.CONFIRM_SECONDS``),
        refused with the estimate otherwise.

    Returns
    -------
    StudyResult
        ``.key_points`` (one row per cell x key point) and ``.frontiers`` (one row per cell x
        frontier point), tidy DataFrames with a column per axis.
    """
    from ..studies.execution import refuse_jobs_beside

    values = table.check_each({"jobs": jobs, "dask": dask, "recompute": recompute, "yes": yes})
    if values["jobs"] is not None:  # a running scheduler's workers compute the cells
        refuse_jobs_beside(values["dask"], "given", "compute the cells")
    if values["recompute"] and out is None and cache_dir is None:
        raise SpecError(  # nothing is cached without a folder: recompute would be ignored
            "argument",
            "recompute",
            "is given, but nothing is cached without an output folder: it would be ignored",
            "give out or cache_dir too, or drop recompute=True",
        )
    from ..runs.study_run import run_study

    return run_study(
        spec, out, values["jobs"], values["dask"], progress, cache_dir, recompute, values["yes"]
    )


def _roofline_rates(work, gpu: GPU, a: Assumptions, step: StepModel, sparsity: float):
    """(FLOP/s, HBM bytes/s) of the preset's roofline step: under an engine profile its ideal
    bound's (§B14-§B15), the routed experts' FLOP/s for a MoE."""
    from ..serving.intervals import ideal_assumptions

    bound = ideal_assumptions(a)
    machine = step.machine if bound is a else StepModel(work, gpu, bound).machine
    flop = machine.expert_flop_per_s if sparsity > 1 else machine.flop_per_s
    return flop, machine.hbm_bandwidth_bytes_per_s


def model_summary(
    model,
    hardware="H100-paper",
    assumptions: str | Assumptions = "paper",
    weight_bits=None,
    activation_bits=None,
    kv_cache_bits=None,
) -> dict:
    """Derived figures of a model at a precision, under an assumption preset.

    Parameters
    ----------
    model : str or Architecture
        A model name, alias or YAML file, or a loaded ``Architecture``.
    hardware : str or GPU
        The GPU the memory and critical batch are figured on.
    assumptions : str or Assumptions
        The preset (default ``paper``, as everywhere).
    weight_bits, activation_bits, kv_cache_bits : float, optional
        The precision (default: the model file's).

    Returns
    -------
    dict
        Parameters, KV cache per token, memory, critical batch and the tokens of KV cache one
        GPU holds beside the weights.
    """
    from ..model.moe import routing_of

    arch: Architecture = load_model(model).with_precision(
        weight_bits, activation_bits, kv_cache_bits
    )
    gpu: GPU = load_hardware(hardware)
    a = preset(assumptions)
    work = compile_workload(arch, a)
    step = StepModel(work, gpu, a)
    sparsity = max(g.sparsity for g in work.groups)
    flop, bw = _roofline_rates(work, gpu, a, step, sparsity)
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
        # how unevenly tokens pick its experts, as the kernel tables are read (blank: dense)
        "expert_routing": routing_of(work.model_class, arch.expert_routing)
        if arch.is_moe
        else None,
        "hardware": gpu.name,
        "hardware_file": display_path(gpu.source_file),
        "min_gpus_for_weights": min_gpus(work.weights_total_bytes, gpu),
        # Eq. 2's B* = F·wb/(2·BW), times the sparsity for MoE (each expert sees B/s tokens)
        "critical_batch": critical_batch(work.bytes_per_weight, bw, flop) * sparsity,
        # tokens of KV cache one GPU holds beside the weights, as the step model sizes the
        # cache (§A5's reserve; under an engine §F8's share of the memory its workspace and a
        # step's activations leave; not the model's window)
        "kv_tokens_beside_weights_one_gpu": max(0.0, float(step.kv_capacity_bytes(1)))
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
    """A GPU's figures and the derived ones the model uses.

    Parameters
    ----------
    hardware : str or GPU
        A GPU name, alias or YAML file.

    Returns
    -------
    dict
        Its fields (interconnect fields for the kinds they describe), the sustained HBM
        bandwidth and the all-reduce bandwidths.
    """
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
    for name in (
        "pcie_bandwidth_bytes_per_s",
        "host_memory_bytes_per_gpu",
        "host_link_bytes_per_s",
    ):
        if not getattr(gpu, name):  # 0: not stated (or no PCIe fabric)
            out.pop(name)
    out.update(
        {
            "sustained_hbm_bandwidth_bytes_per_s": gpu.sustained_hbm_bandwidth_bytes_per_s,
            "intra_node_allreduce_bandwidth_bytes_per_s": gpu.intra_node_allreduce_bandwidth_bytes_per_s,
            "inter_node_allreduce_bandwidth_bytes_per_s": gpu.inter_node_allreduce_bandwidth_bytes_per_s,
        }
    )
    return out


def engine_summary(engine) -> dict:
    """An engine profile's terms (docs/model.md Part F).

    Parameters
    ----------
    engine : str or Path
        An engine profile's name or YAML file.

    Returns
    -------
    dict
        Its terms, the standard errors of the fitted ones, the profile it derives from, the
        versions it describes and the terms some of them run with instead.
    """
    from ..specs.engine import load_engine

    prof = load_engine(engine)
    out = {
        "name": prof.name,
        "description": prof.description,
        "file": display_path(prof.source_file),
        "derived_from": prof.derived_from,
        "versions": prof.versions,
        **prof.terms(),
        "kv_cache_fraction_of": prof.kv_cache_fraction_of,
    }
    for term, error in prof.standard_errors:
        out[f"{term}_standard_error"] = error
    for where, terms in prof.version_terms:  # the terms some versions run with instead
        out[f"at versions {where}"] = ", ".join(f"{k} {v:g}" for k, v in terms)
    return out


def spec_kind(name_or_path) -> str:
    """What a name or a YAML file names.

    Parameters
    ----------
    name_or_path : str or Path
        A name (by the catalog, models first; "family@version" an engine's) or a file (by its
        folder, its ``derive_from`` or its fields).

    Returns
    -------
    str
        ``models``, ``hardware`` or ``engines``.
    """
    from ..errors import UnknownNameError, did_you_mean, short
    from ..specs.kinds import FILE_KINDS, spec_kind

    text = str(name_or_path)
    path = catalog._existing_file(text)
    if path is not None and (text.endswith((".yaml", ".yml")) or "/" in text):
        return spec_kind(path)
    if "@" in text and path is None:  # an engine at a version ("trtllm@1.1")
        return "engines"
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
    """The spec files of one kind, shipped and on INFERENCE_ECON_PATH.

    Parameters
    ----------
    kind : str
        ``models``, ``hardware``, ``scenarios``, ``engines`` or ``costs`` (singulars too).

    Returns
    -------
    pandas.DataFrame
        One row per file: name, aliases, description and file.
    """
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


__all__ = [
    "DETAIL_COLUMNS",
    "EXPORT_PLANS",
    "FLEET_SETTINGS",
    "FRONTIER_PICKS",
    "LAUNCH_OPTIONS",
    "LoadInputs",
    "SUMMARY_COLUMNS",
    "Setting",
    "autoscale_plan",
    "cache_note",
    "cached_prompt_tokens",
    "calibrate",
    "calibrated_yaml",
    "capacity",
    "check_blend",
    "checked_power_cap",
    "compare_context_parallel",
    "compare_disaggregation",
    "compare_measured",
    "context_parallel_intervals",
    "continuous_note",
    "coverage_note",
    "curve_models",
    "default_speed",
    "demand_plan",
    "display_path",
    "elasticities",
    "engine_summary",
    "expected_figures",
    "export",
    "extra_data_roots",
    "feasibility",
    "feasibility_frontiers",
    "figures_line",
    "file_identity",
    "find_observations",
    "fit_preference",
    "fleet_plan",
    "frontier",
    "frontier_columns",
    "frontier_plot",
    "hardware_summary",
    "held_intervals",
    "ideal_setting",
    "implied_size",
    "import_hf_config",
    "import_hf_repo",
    "interval_columns",
    "launch_files",
    "list_specs",
    "load_coverage_note",
    "rows_coverage_note",
    "load_frontier",
    "load_inputs",
    "load_observations",
    "load_scenario",
    "margin",
    "max_load",
    "model_summary",
    "observation",
    "operations",
    "overlay_points",
    "package_version",
    "paper_deviations",
    "paper_tolerance",
    "plan_record",
    "point",
    "point_fields",
    "point_operations",
    "points",
    "power_plan",
    "prefill",
    "prefill_intervals",
    "price_ratio",
    "read_fleet",
    "record_input",
    "request",
    "requests_metadata",
    "run_scenario",
    "run_table",
    "search_method",
    "select_offers",
    "shared_grids",
    "setting_of",
    "simulate_load",
    "skipped_specs",
    "spec_kind",
    "study",
    "study_metadata",
    "sweep",
    "tracking_inputs",
    "memory_reason",
    "redundant_note",
    "uneven_note",
    "unread_user_roots",
    "whole_batch_kv_note",
    "write_launch_files",
]
