"""GPU failures and the instances they take down (docs/model.md §E11).

A GPU fails at a constant rate ``1 / MTBF`` and a failure takes its whole instance down — the
tensor-, pipeline- and expert-parallel group cannot run without one of its GPUs — until it is
repaired ``R`` hours later. An instance of ``N`` GPUs then fails at rate ``λ = N / MTBF`` and is
down a share ``u = λR / (1 + λR)`` of the time (an alternating renewal process: up for
``1/λ`` on average, down for ``R``). Instances fail independently, so the instances down at a
moment are binomial: ``P(k of K down) = C(K, k) u^k (1 − u)^(K − k)``.

The default MTBF is Meta's Llama 3 report: 419 unexpected interruptions in a 54-day
pre-training snapshot on 16,384 H100 GPUs ("The Llama 3 Herd of Models", 2024, Table 5), one per
16,384 × 54 × 24 / 419 = 50,677 GPU-hours, rounded to 50,000. Those interruptions include
hosts, network and software (GPUs and their HBM caused about half), which all take an
instance down too. No public figure gives a fleet's repair time: ``repair_hours`` is an
assumption to state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import settings as table


@dataclass(frozen=True)
class Failures:
    """A failure rate per GPU and the time an instance stays down."""

    gpu_mtbf_hours: float = 50_000.0
    repair_hours: float = 24.0

    def __post_init__(self) -> None:
        table.option("gpu_mtbf_hours").check(self.gpu_mtbf_hours)
        table.option("repair_hours").check(self.repair_hours)

    def instance_failures_per_hour(self, gpus: int) -> float:
        """λ = N / MTBF: an instance fails when any of its GPUs does."""
        return float(gpus) / self.gpu_mtbf_hours

    def unavailability(self, gpus: int) -> float:
        """u = λR / (1 + λR): the share of time an instance of ``gpus`` GPUs is down."""
        x = self.instance_failures_per_hour(gpus) * self.repair_hours
        return x / (1.0 + x)

    def down(self, instances: int, gpus: int) -> np.ndarray:
        """P(k instances down), k = 0 … ``instances``."""
        from scipy.stats import binom  # 0.7 s of CPU to import: only where failures are sized

        return binom.pmf(np.arange(int(instances) + 1), int(instances), self.unavailability(gpus))

    def more_down_than(self, spare: int, instances: int, gpus: int) -> float:
        """P(more than ``spare`` of ``instances`` instances down at once)."""
        from scipy.stats import binom

        return float(binom.sf(int(spare), int(instances), self.unavailability(gpus)))

    def describe(self) -> str:
        return (
            f"a GPU fails every {self.gpu_mtbf_hours:,.0f} hours on average and takes its "
            f"instance down for {self.repair_hours:g} hours"
        )


def expected_capacity(pools, failures: Failures) -> tuple[float, np.ndarray, np.ndarray]:
    """(expected capacity, capacities, probabilities) of a deployment whose capacity is the
    least of its pools' (``pools``: ``(instances, GPUs per instance, requests/s each)``), with
    every combination of instances down (pools fail independently)."""
    caps, probs = np.array([math.inf]), np.array([1.0])
    for count, gpus, each in pools:
        p = failures.down(count, gpus)
        c = (count - np.arange(count + 1)) * float(each)
        caps = np.minimum.outer(caps, c).reshape(-1)
        probs = np.multiply.outer(probs, p).reshape(-1)
    return float(np.sum(caps * probs)), caps, probs
