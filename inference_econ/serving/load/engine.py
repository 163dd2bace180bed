"""One engine instance: a model on whole GPUs with a fixed layout, its KV-cache capacity, its
scheduler's limits and the table of its step times (docs/model.md §E1, §E3).

The layout is chosen once, as a deployment does: among the whole layouts of the instance
(pipeline degrees dividing the layers and the GPUs, attention tensor degrees dividing the
heads, 1-D or 2-D tensor parallelism), the one with the fastest decode step at a reference
batch (as many requests as the KV cache holds at the reference context, at most the
scheduler's batch limit) and context (mean prompt plus half the mean output).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import InfeasibleError, SpecError
from ...model.latency import StepModel, prefill_step_model
from ...model.mixed_step import EngineLayout, StepTable, layer_positions, mixed_step_s
from ...model.workload import Workload, compile_workload
from ..setting import Setting


@dataclass(frozen=True)
class EngineConfig:
    """The scheduler's limits: concurrent requests (vLLM's ``max_num_seqs``) and tokens per
    step, decode tokens plus prompt chunks (``max_num_batched_tokens``)."""

    max_batch_requests: int = 256
    step_token_budget: int = 2048

    def __post_init__(self) -> None:
        for name in ("max_batch_requests", "step_token_budget"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise SpecError("argument", name, f"is {value!r}", "expected a whole number >= 1")


#: vLLM-like defaults: 256 requests, 2,048 tokens per step.
DEFAULT_ENGINE = EngineConfig()


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def candidate_layouts(work: Workload, gpus: int, pipeline: bool = True) -> list[EngineLayout]:
    """Every whole layout of an instance of ``gpus`` GPUs (§B7's rules)."""
    out = []
    for p in _divisors(work.layers) if pipeline else [1]:
        if gpus % p:
            continue
        t = gpus // p
        for t_at in (d for d in _divisors(t) if work.tp_heads % d == 0):
            for two_d in (False, True) if t > 1 else (False,):
                out.append(EngineLayout(gpus, p, t / t_at, two_d))
    return out


@dataclass(frozen=True, eq=False)
class Instance:
    """An engine instance compiled for the simulator."""

    setting: Setting
    layout: EngineLayout
    config: EngineConfig
    table: StepTable
    work: Workload
    #: KV-cache capacity in layer-positions (one cached token in one layer).
    kv_capacity: float

    @property
    def gpus(self) -> int:
        return self.layout.gpus

    @property
    def usd_per_hour(self) -> float:
        return self.gpus * self.setting.gpu.price_usd_per_hour

    @property
    def windowed(self) -> bool:
        """Some layer group attends to a sliding window (its positions stop growing)."""
        return any(math.isfinite(g.window) for g in self.work.groups)

    def positions(self, context):
        return layer_positions(self.work, context)

    def max_requests_at(self, context: float) -> int:
        """How many requests of this context the KV cache holds (at least 1)."""
        return max(1, int(self.kv_capacity // max(float(self.positions(context)), 1.0)))


def build_instance(
    setting: Setting,
    gpus: int,
    config: EngineConfig = DEFAULT_ENGINE,
    reference_context: float = 1024.0,
    layout: EngineLayout | None = None,
) -> Instance:
    """An instance of ``gpus`` GPUs with the best whole layout at the reference context (or the
    given ``layout``); refuses what it cannot model and instances the weights do not fit."""
    if setting.spec is not None:
        raise SpecError(
            "argument",
            "draft",
            "serving under load does not model speculative decoding",
            "drop --draft",
        )
    if isinstance(gpus, bool) or int(gpus) != gpus or gpus < 1:
        raise SpecError(
            "argument", "gpus", f"is {gpus!r}", "an instance has a whole number of GPUs >= 1"
        )
    gpus = int(gpus)
    a = setting.assumptions
    model = StepModel(compile_workload(setting.model, a), setting.gpu, a, integer_layouts=True)
    work = model.work
    free = model.kv_capacity_bytes(gpus)
    if free <= 0 or work.kv_bytes_per_position_per_layer <= 0:
        raise InfeasibleError(
            f"{setting.model.name} ({model.weights_total_bytes / 1e9:.1f} GB of weights) leaves no room for a KV "
            f"cache on {gpus} x {setting.gpu.name} ({model.machine.usable_hbm_bytes / 1e9:.1f} GB usable each)"
        )
    capacity = free / work.kv_bytes_per_position_per_layer
    prefill_work = prefill_step_model(setting.model, setting.gpu, a, True).work
    if layout is None:
        per_request = max(float(layer_positions(work, reference_context)), 1.0)
        batch = int(np.clip(capacity // per_request, 1, config.max_batch_requests))
        options = candidate_layouts(work, gpus, setting.pipeline)
        times = [
            float(mixed_step_s(model, prefill_work, lay, batch, reference_context, 0.0))
            for lay in options
        ]
        layout = options[int(np.argmin(times))]
    table = StepTable(model, layout, max(config.step_token_budget, config.max_batch_requests))
    return Instance(setting, layout, config, table, work, capacity)
