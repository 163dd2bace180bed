"""Does an engine worker fit its GPUs? Weights, the KV cache of the planned batch at the planned
context, and the engine's reserve (activations, CUDA graphs, runtime, and the memory outside its
memory fraction), against HBM — for an exported launch configuration (docs/model.md §F8).

Nothing here is a second memory model: the figures are the step model's own accounting
(``StepModel.kv_capacity_bytes``, ``StepModel.fits``, ``Workload.kv_cache_bytes``) under the
engine's profile, only gathered per GPU and per worker so an export can state them or refuse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InfeasibleError, plural
from ..model.assumptions import preset
from ..model.latency import StepModel, replicated_weight_bytes
from ..model.workload import compile_workload
from .setting import Setting, with_engine

GB = 1e9


@dataclass(frozen=True)
class MemoryCheck:
    """One worker's memory, per GPU, under its engine's profile (bytes unless named)."""

    role: str
    engine: str
    gpus: int
    batch: int
    context_tokens: float
    max_model_len: int
    hbm_bytes_per_gpu: float
    weights_bytes_per_gpu: float
    #: The engine's reserve per GPU: its workspace (activations, CUDA graphs, runtime) plus the
    #: memory its fraction leaves out (``gpu_memory_utilization`` and its kin).
    reserve_bytes_per_gpu: float
    kv_capacity_bytes_per_gpu: float
    kv_needed_bytes_per_gpu: float
    #: Requests of the planned context the KV cache holds at once.
    admitted_requests: int
    #: Whether one request of ``max_model_len`` tokens fits the KV cache (engines refuse to
    #: start otherwise).
    longest_fits: bool
    fits: bool

    def describe(self) -> str:
        """The numbers on one line, per GPU."""
        head = f"{self.role} on {self.gpus} {plural(self.gpus, 'GPU')} ({self.engine}), per GPU: "
        hbm, weights = self.hbm_bytes_per_gpu / GB, self.weights_bytes_per_gpu / GB
        if self.kv_capacity_bytes_per_gpu <= 0:
            return (
                f"{head}{weights:.1f} GB of weights and the engine's reserve leave no KV cache in "
                f"{hbm:.1f} GB of HBM; batch {self.batch} at {self.context_tokens:,.0f} tokens "
                f"needs {self.kv_needed_bytes_per_gpu / GB:.1f} GB of KV cache"
            )
        return (
            f"{head}{hbm:.1f} GB HBM = {weights:.1f} GB "
            f"weights + {self.reserve_bytes_per_gpu / GB:.1f} GB engine reserve + "
            f"{self.kv_capacity_bytes_per_gpu / GB:.1f} GB KV cache; batch {self.batch} at "
            f"{self.context_tokens:,.0f} tokens needs {self.kv_needed_bytes_per_gpu / GB:.1f} GB "
            f"of KV cache (holds {self.admitted_requests} such requests)"
        )

    def refusal(self) -> str:
        """Why the worker does not fit (empty when it does)."""
        if self.fits:
            return ""
        if self.kv_capacity_bytes_per_gpu <= 0:
            return f"{self.describe()}: give the worker more GPUs or fewer weight bits"
        if not self.longest_fits:
            return (
                f"{self.describe()}: one request of {self.max_model_len:,} tokens "
                "(max model length) does not fit the KV cache; lower the max model length"
            )
        return (
            f"{self.describe()}: the planned batch does not fit; lower the batch to "
            f"{self.admitted_requests}, give the worker more GPUs or fewer KV-cache bits"
        )


def engine_model(setting: Setting, engine, token_budget: int | None = None) -> StepModel:
    """The step model of the setting under the achievable preset with ``engine``'s profile
    (the setting's own assumptions when they already carry that engine), run with
    ``token_budget`` tokens a step where given (``EngineProfile.at_step_budget``)."""
    a = setting.assumptions
    if a.engine is None or getattr(a.profile(), "name", None) != getattr(engine, "name", engine):
        a = with_engine(preset("achievable"), engine)
    if token_budget is not None:
        a = a.replace(engine=a.profile().at_step_budget(token_budget))
    return StepModel(compile_workload(setting.model, a), setting.gpu, a)


def check_worker(
    setting: Setting,
    engine,
    gpus: int,
    batch: int,
    context_tokens: float,
    max_model_len: int,
    role: str = "server",
    attention_dp: int = 1,
    token_budget: int | None = None,
    pipeline: int = 1,
) -> MemoryCheck:
    """The memory of a worker of ``gpus`` GPUs in ``pipeline`` stages serving ``batch``
    requests at a mean context of ``context_tokens`` (and one request as long as
    ``max_model_len``), under ``engine``, each stage's attention data-parallel over
    ``attention_dp`` replicas, each run with ``token_budget`` tokens a step (default: the
    profile's; it sizes TensorRT-LLM's activations, §F8): an attention tensor group wider than
    the KV heads keeps copies of the KV cache (docs/model.md §B13), a stage's group being its
    ``gpus / pipeline`` GPUs, as the search's feasibility (``StepModel.fits``) counts it."""
    model = engine_model(setting, engine, token_budget)
    prof = model.profile
    work = model.work
    n = float(gpus)
    p = float(pipeline)
    copies = float(model.kv_copies(n / p / attention_dp))

    def kv(context, requests):  # per GPU, the attention layers' cache with its copies
        c, r = float(context), float(requests)
        return float(work.kv_held_bytes(c, r) + work.attention_held_bytes(c, r) * (copies - 1)) / n

    hbm = float(setting.gpu.hbm_capacity_bytes)
    # each attention replica holds all the attention weights (§F8)
    extra = replicated_weight_bytes(model, attention_dp, n / p)
    weights = float(model.weights_total_bytes + extra) / n
    capacity = float(model.kv_capacity_bytes(n, attention_dp, p)) / n
    needed = kv(context_tokens, batch)
    per_request = kv(context_tokens, 1.0)
    longest = kv(max_model_len, 1.0)
    fits = bool(
        model.fits(
            np.array([n]), np.array([float(batch)]), np.array([p]), context_tokens, attention_dp
        )[0]
    )
    admitted = int(capacity // per_request) if per_request > 0 and capacity > 0 else 0
    longest_fits = capacity > 0 and longest <= capacity
    return MemoryCheck(
        role=role,
        engine=prof.name,
        gpus=int(gpus),
        batch=int(batch),
        context_tokens=float(context_tokens),
        max_model_len=int(max_model_len),
        hbm_bytes_per_gpu=hbm,
        weights_bytes_per_gpu=weights,
        reserve_bytes_per_gpu=max(hbm - weights - capacity, 0.0),
        kv_capacity_bytes_per_gpu=capacity,
        kv_needed_bytes_per_gpu=needed,
        admitted_requests=admitted,
        longest_fits=longest_fits,
        fits=fits and longest_fits and math.isfinite(needed),
    )


def require_fit(checks) -> None:
    """Refuse (``InfeasibleError``, exit 1) when any worker does not fit, with its numbers."""
    bad = [c.refusal() for c in checks if not c.fits]
    if bad:
        raise InfeasibleError("memory check failed: " + " | ".join(bad))
