"""Speculative decoding (docs/model.md §A6, paper §4.1).

A draft model on the same GPUs and batch proposes ``γ`` tokens (γ draft passes with S = 1);
the target verifies them in one pass with S = γ. With i.i.d. acceptance probability ``α`` a
cycle yields ``(1 - α^γ)/(1 - α)`` tokens on average (docs/model.md §A6). The draft length is
chosen per configuration; γ = 1 stands for "no speculation", always a candidate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import settings as table
from ..specs.architecture import Architecture


@dataclass(frozen=True)
class SpecDecoding:
    """A draft model, its per-token acceptance probability and the longest draft."""

    draft: Architecture
    acceptance: float
    max_draft_tokens: int = 5

    def __post_init__(self) -> None:
        table.option("acceptance").check(self.acceptance)
        table.option("max_draft_tokens").check(self.max_draft_tokens)

    @property
    def draft_lengths(self) -> range:
        """The draft lengths γ tried besides no speculation (paper: 2 … γ_max)."""
        return range(2, int(self.max_draft_tokens) + 1)


def expected_tokens(acceptance: float, draft_tokens: int) -> float:
    """Tokens produced per verification cycle: (1 - α^γ)/(1 - α) (γ when α = 1)."""
    if acceptance >= 1.0:
        return float(draft_tokens)
    return (1.0 - acceptance**draft_tokens) / (1.0 - acceptance)


def per_token_latency(target_pass_s, draft_pass_s, acceptance: float, draft_tokens: int):
    """Seconds per generated token of one cycle: (T_γ + γ·D) / E[tokens] (paper Eq. 46)."""
    return (target_pass_s + draft_tokens * draft_pass_s) / expected_tokens(acceptance, draft_tokens)


def combine(target_passes: dict, draft_pass_s, spec: SpecDecoding | None):
    """Best per-token latency and draft length from target passes {γ: T_γ} and the draft's D.

    Returns (latency, γ) arrays; γ = 1 means no speculation.
    """
    best = np.asarray(target_passes[1], dtype=float)
    gamma = np.ones(best.shape, dtype=np.int64)
    if spec is None:
        return best, gamma
    for g in spec.draft_lengths:
        cand = per_token_latency(target_passes[g], draft_pass_s, spec.acceptance, g)
        better = cand < best
        best = np.where(better, cand, best)
        gamma = np.where(better, g, gamma)
    return best, gamma
