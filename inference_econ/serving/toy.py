"""The paper's Section 2 toy models (docs/model.md §A8): one device, then many with infinite bandwidth.

Single device (Eqs. 1-2): a token takes ``max(wb·P/BW, 2·P·B/F)``; the critical batch
``B* = F·wb/(2·BW)`` balances the two. Many devices (Eqs. 3-19): at the critical batch,
``t(N) = L·A·(c·(√N - 1) + base) + wb·P/(N·BW)`` with ``A`` all-reduces per layer; minimising
gives ``N* = (2·wb·P/(BW·L·A·c))^(2/3)`` and, for large N*, ``t* ≈ 3/2·(L·A·c)^(2/3)·(2·wb·P/BW)^(1/3)``
(Eq. 18), i.e. ``t* ∝ L^(2/3)·P^(1/3)``: the best latency grows as ``√P`` (Eq. 19) when the
layers grow as ``P^(1/4)``, and as ``P^(5/9)`` when they grow as ``P^(1/3)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.assumptions import PAPER, Assumptions
from ..model.machine import flop_rates
from ..model.workload import compile_workload
from ..specs.architecture import Architecture
from ..specs.hardware import GPU


@dataclass(frozen=True)
class ToyResult:
    """The closed-form optimum of the many-device toy model."""

    model: str
    params: float
    layers: int
    optimal_gpus: float
    latency_s: float

    @property
    def tokens_per_s(self) -> float:
        return 1.0 / self.latency_s


def critical_batch(
    bytes_per_weight: float, bandwidth_bytes_per_s: float, flop_per_s: float
) -> float:
    """B* = F·wb/(2·BW): the largest batch that does not slow a token down (Section 2.1)."""
    return flop_per_s * bytes_per_weight / (2.0 * bandwidth_bytes_per_s)


def multi_device_latency_s(
    gpus,
    params: float,
    layers: int,
    bytes_per_weight: float,
    bandwidth_bytes_per_s: float,
    allreduce_latency_s: float = 2e-6,
    allreduces_per_layer: int = 4,
    base_latency_s: float = 0.0,
):
    """Eq. 9: latency at the critical batch on ``gpus`` devices with infinite network bandwidth."""
    gpus = np.asarray(gpus, dtype=float)
    network = (
        layers
        * allreduces_per_layer
        * (allreduce_latency_s * np.maximum(np.sqrt(gpus) - 1.0, 0.0) + base_latency_s)
    )
    return network + bytes_per_weight * params / (gpus * bandwidth_bytes_per_s)


def optimum(
    params: float,
    layers: int,
    bytes_per_weight: float,
    bandwidth_bytes_per_s: float,
    allreduce_latency_s: float = 2e-6,
    allreduces_per_layer: int = 4,
    base_latency_s: float = 0.0,
    name: str = "",
) -> ToyResult:
    """Eqs. 12-14: N* = (2·wb·P/(BW·L·A·c))^(2/3) (1 if smaller) and the latency there."""
    n_star = (
        2.0
        * bytes_per_weight
        * params
        / (bandwidth_bytes_per_s * layers * allreduces_per_layer * allreduce_latency_s)
    ) ** (2.0 / 3.0)
    n_star = max(1.0, n_star)
    latency = float(
        multi_device_latency_s(
            n_star,
            params,
            layers,
            bytes_per_weight,
            bandwidth_bytes_per_s,
            allreduce_latency_s,
            allreduces_per_layer,
            base_latency_s,
        )
    )
    return ToyResult(
        model=name, params=params, layers=layers, optimal_gpus=n_star, latency_s=latency
    )


def model_optimum(
    arch: Architecture,
    bandwidth_bytes_per_s: float,
    allreduce_latency_s: float = 2e-6,
    allreduces_per_layer: int | None = 4,
    base_latency_s: float = 0.0,
    assumptions: Assumptions = PAPER,
) -> ToyResult:
    """The toy optimum for an architecture: total parameters P, its layers and weight precision.

    ``allreduces_per_layer=None`` uses 2 for parallel-attention models and 4 otherwise (the
    paper's Table 1 uses 4 for every model).
    """
    work = compile_workload(arch, assumptions)
    a = (
        allreduces_per_layer
        if allreduces_per_layer is not None
        else (2 if arch.parallel_attention else 4)
    )
    return optimum(
        work.total_params,
        work.layers,
        work.bytes_per_weight,
        bandwidth_bytes_per_s,
        allreduce_latency_s,
        a,
        base_latency_s,
        arch.name,
    )


def grid_latency_s(
    arch: Architecture,
    gpu: GPU,
    gpus,
    batch,
    context_tokens: float = 1.0,
    allreduce_latency_s: float = 2e-6,
    base_latency_s: float = 6e-6,
    assumptions: Assumptions = PAPER,
):
    """The toy model on a (GPUs, batch) grid, as Figure 1 uses it (§A8).

    All-reduces cost ``c·max(√N - 1, 0) + base`` each, 2 per layer with parallel attention and 4
    otherwise; all weights (P) are read at the sustained HBM bandwidth and the FLOP of the
    active parameters (2·P_act per token; P_act = P for a dense model) run at the sustained
    rate; a configuration whose weights plus KV cache fill or exceed HBM is infinitely slow.
    """
    work = compile_workload(arch, assumptions)
    gpus = np.asarray(gpus, dtype=float)
    batch = np.asarray(batch, dtype=float)
    a = 2 if arch.parallel_attention else 4
    bw = gpu.sustained_hbm_bandwidth_bytes_per_s
    flops = flop_rates(gpu, work.weight_bits, assumptions)[1]
    params = work.total_params
    network = (
        work.layers
        * a
        * (allreduce_latency_s * np.maximum(np.sqrt(gpus) - 1.0, 0.0) + base_latency_s)
    )
    latency = network + np.maximum(
        work.bytes_per_weight * params / (gpus * bw),
        2.0 * work.active_params * batch / (gpus * flops),
    )
    need = work.kv_cache_bytes(context_tokens, batch) + work.bytes_per_weight * params
    return np.where(gpus * gpu.hbm_capacity_bytes <= need, np.inf, latency)


def square_root_law(params, reference_params: float, reference_latency_s: float):
    """Eq. 19: best latency scales as √P (Eq. 18 gives this when layers grow as P^(1/4))."""
    return reference_latency_s * np.sqrt(np.asarray(params, dtype=float) / reference_params)
