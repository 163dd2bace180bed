"""The notebook-facing API: a few functions that take names and return DataFrames.

>>> import inference_econ as ie
>>> ie.point("Llama 3 70B", "H100-paper", gpus=8, batch=64, weight_bits=8)   # one configuration
>>> f = ie.frontier("Llama 3 70B", "H100-paper", weight_bits=8)               # its Pareto frontier
>>> f.to_dataframe(); f.fastest(); f.preference_point(); f.cheapest_at_speed(100)
"""

from __future__ import annotations

import pandas as pd

from . import settings as table
from .errors import SpecError
from .model.assumptions import Assumptions, preset
from .model.economics import flop_rates
from .model.workload import compile_workload
from .optimise.frontier import Frontier
from .optimise.method import Method, make_method
from .optimise.optimiser import frontier as _frontier
from .output.study_run import StudyResult, run_study
from .serving.decode import evaluate
from .serving.setting import Setting, make_setting
from .specs import catalog
from .specs.architecture import Architecture, load_model
from .specs.hardware import GPU, load_hardware


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
        if kwargs:
            raise SpecError(
                "argument",
                next(iter(kwargs)),
                "given together with a Setting",
                "change the setting with setting.replace(...) instead",
            )
        return model
    return make_setting(model, hardware, **kwargs)


def point(model, hardware=None, *, gpus, batch, **kwargs) -> pd.Series:
    """One configuration (GPUs, batch) of a model on a GPU: latency, tokens/s per request,
    $ per million tokens, MFU, the best layout and the latency breakdown.

    Keyword arguments are the settings of ``make_setting`` (context_tokens, weight_bits,
    draft, ...; the table in ``inference_econ/settings.py``).
    """
    return evaluate(_setting(model, hardware, **kwargs), gpus, batch).iloc[0]


def points(model, hardware=None, *, gpus, batch, **kwargs) -> pd.DataFrame:
    """Many configurations at once (``gpus`` and ``batch`` broadcast against each other)."""
    return evaluate(_setting(model, hardware, **kwargs), gpus, batch)


def frontier(model, hardware=None, **kwargs) -> Frontier:
    """The Pareto frontier of tokens/s per request vs $ per million tokens.

    Keyword arguments are settings (as ``point``) and the search method: ``method`` ("grid",
    "discrete", "exhaustive" or a ``Method``), ``discrete=True``, ``grid_points``.
    """
    problem, method, options = _split(kwargs)
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
) -> StudyResult:
    """Every cell of a study: ``.key_points`` (one row per cell x key point) and ``.frontiers``
    (one row per cell x frontier point), tidy DataFrames with a column per axis.

    ``spec`` is a study file (a path, or a name such as "studies/accelerators-models"), its
    parsed mapping or a ``Study``. With ``out`` the tables, ``study.json`` and the summary
    figure are written there and finished cells are cached in ``out/cache`` (or ``cache_dir``),
    so a rerun computes only what changed. ``jobs`` local processes (default: the cores) or a
    Dask cluster (``dask="local"`` or a scheduler address) compute the cells; ``recompute``
    ignores the cache (after changing the model's code without changing the version).
    """
    values = table.check_each({"jobs": jobs, "dask": dask})
    return run_study(spec, out, values["jobs"], values["dask"], progress, cache_dir, recompute)


def model_summary(model, hardware="H100-paper", assumptions: str | Assumptions = "refined") -> dict:
    """Derived figures of a model: parameters, KV cache per token, memory, critical batch."""
    arch: Architecture = load_model(model)
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
        "file": arch.source_file,
        "assumptions": a.name,
        "precision": arch.precision.label(),
        "layers": arch.layers,
        "layer_groups": ", ".join(f"{g.name}: {g.layers}" for g in arch.layer_groups),
        "d_model": arch.d_model,
        "attention": arch.attention.kind,
        "query_heads": arch.attention.query_heads,
        "kv_heads": arch.attention.kv_heads,
        "total_params": work.total_params,
        "active_params": work.active_params,
        "published_total_params": arch.published_total_params,
        "published_active_params": arch.published_active_params,
        "weights_total_bytes": work.weights_total_bytes,
        "kv_bytes_per_token": work.kv_bytes_per_token,
        "sparsity": sparsity,
        "hardware": gpu.name,
        "min_gpus_for_weights": work.weights_total_bytes / gpu.hbm_capacity_bytes,
        # Eq. 2's B* = F·wb/(2·BW), times the sparsity for MoE (each expert sees B/s tokens)
        "critical_batch": flop * work.bytes_per_weight / (2.0 * bw) * sparsity,
        "max_context_tokens_one_request_one_gpu": max(
            0.0, gpu.hbm_capacity_bytes - work.weights_total_bytes
        )
        / work.kv_bytes_per_token,
    }


def hardware_summary(hardware) -> dict:
    """A GPU's figures and the derived ones the model uses (caps, all-reduce bandwidths)."""
    gpu: GPU = load_hardware(hardware)
    out = gpu.to_dict()
    out.update(
        {
            "sustained_hbm_bandwidth_bytes_per_s": gpu.sustained_hbm_bandwidth_bytes_per_s,
            "intra_node_allreduce_bandwidth_bytes_per_s": gpu.intra_node_allreduce_bandwidth_bytes_per_s,
            "inter_node_allreduce_bandwidth_bytes_per_s": gpu.inter_node_allreduce_bandwidth_bytes_per_s,
        }
    )
    return out


def list_specs(kind: str) -> pd.DataFrame:
    """The models, hardware or scenarios shipped (and on INFERENCE_ECON_PATH)."""
    kind = {"model": "models", "gpu": "hardware", "gpus": "hardware", "scenario": "scenarios"}.get(
        kind, kind
    )
    rows = [
        {
            "name": e.name,
            "aliases": ", ".join(e.aliases),
            "description": e.description,
            "file": str(e.path),
        }
        for e in catalog.entries(kind)
    ]
    return pd.DataFrame(rows, columns=["name", "aliases", "description", "file"])
