"""The notebook-facing API: a few functions that take names and return DataFrames.

>>> import inference_econ as ie
>>> ie.point("Llama 3 70B", "H100-paper", gpus=8, batch=64, weight_bits=8)   # one configuration
>>> f = ie.frontier("Llama 3 70B", "H100-paper", weight_bits=8)               # its Pareto frontier
>>> f.to_dataframe(); f.fastest(); f.preference_point(); f.cheapest_at_speed(100)
"""

from __future__ import annotations

import pandas as pd

from . import catalog
from .architecture import Architecture, load_model
from .assumptions import Assumptions, preset
from .frontier import Frontier
from .hardware import GPU, load_hardware
from .optimiser import Setting, evaluate, make_setting
from .optimiser import frontier as _frontier
from .workload import compile_workload


def _setting(model, hardware, **kwargs) -> Setting:
    if isinstance(model, Setting):
        return model
    return make_setting(model, hardware, **kwargs)


def point(model, hardware=None, *, gpus, batch, **kwargs) -> pd.Series:
    """One configuration (GPUs, batch) of a model on a GPU: latency, tokens/s per request,
    $ per million tokens, MFU, the best layout and the latency breakdown.

    Keyword arguments are those of ``make_setting`` (context_tokens, weight_bits, draft, …).
    """
    return evaluate(_setting(model, hardware, **kwargs), gpus, batch).iloc[0]


def points(model, hardware=None, *, gpus, batch, **kwargs) -> pd.DataFrame:
    """Many configurations at once (``gpus`` and ``batch`` broadcast against each other)."""
    return evaluate(_setting(model, hardware, **kwargs), gpus, batch)


def frontier(model, hardware=None, **kwargs) -> Frontier:
    """The Pareto frontier of tokens/s per request vs $ per million tokens."""
    exhaustive = kwargs.pop("exhaustive", False)
    return _frontier(_setting(model, hardware, **kwargs), exhaustive=exhaustive)


def model_summary(model, hardware="H100-paper", assumptions: str | Assumptions = "refined") -> dict:
    """Derived figures of a model: parameters, KV cache per token, memory, critical batch."""
    arch: Architecture = load_model(model)
    gpu: GPU = load_hardware(hardware)
    a = preset(assumptions)
    work = compile_workload(arch, arch.precision, a)
    flop = gpu.sustained_flop_per_s(work.weight_bits, a.native_fp4)
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
        "weight_bytes": work.total_params * work.weight_bytes,
        "kv_bytes_per_token": work.kv_bytes_per_token,
        "sparsity": sparsity,
        "hardware": gpu.name,
        "min_gpus_for_weights": work.total_params * work.weight_bytes / gpu.hbm_capacity_bytes,
        # Eq. 2's B* = F·wb/(2·BW), times the sparsity for MoE (each expert sees B/s tokens)
        "critical_batch": flop * work.weight_bytes / (2.0 * bw) * sparsity,
        "max_context_tokens_one_request_one_gpu": max(
            0.0, gpu.hbm_capacity_bytes - work.total_params * work.weight_bytes
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
