"""The search over layouts for each (GPUs, batch) point (MODEL.md A5).

For each point the latency is the minimum over pipeline degrees ``p`` (1 and log-spaced
values up to min(B, L)), attention divisors ``a`` (log-spaced from 1 to N/p) and 1-D or 2-D
tensor parallelism.
"""

from __future__ import annotations

import numpy as np

from .latency import StepModel


def pipeline_degrees(B, layers: int, count: int, allowed: bool):
    """The pipeline degrees of A5 for batch ``B``: [1] + logspace(0, log2 min(B, L), count)."""
    if not allowed or count <= 0:
        return [1.0]
    top = np.minimum(np.asarray(B, dtype=float), layers)
    if count == 1:
        return [1.0]
    # i = 0 repeats p = 1, which is already the first candidate
    return [1.0] + [top ** (i / (count - 1)) for i in range(1, count)]


def attention_divisors(t, count: int):
    """The attention divisors of A5 for tensor degree ``t``: logspace(0, log2 max(t, 1), count)."""
    if count <= 1:
        return [1.0]
    base = np.maximum(np.asarray(t, dtype=float), 1.0)
    return [base ** (j / (count - 1)) for j in range(count)]


def best_latency(model: StepModel, N, B, S=1, context=0.0, pipeline=True, return_layout=False):
    """Minimum token latency over the layouts of A5 at every (N, B); inf where nothing fits.

    With ``return_layout`` also returns (p, a, two_d) arrays of the best layout.
    """
    a = model.assumptions
    N, B = np.broadcast_arrays(np.asarray(N, dtype=float), np.asarray(B, dtype=float))
    best = np.full(N.shape, np.inf)
    if return_layout:
        best_p = np.ones(N.shape)
        best_a = np.ones(N.shape)
        best_2d = np.ones(N.shape, dtype=bool)
    for p in pipeline_degrees(B, model.work.layers, a.pipeline_degree_count, pipeline):
        ok = model.fits(N, B, p, context)
        if not np.any(ok):
            continue
        part = model.pipeline_part(N, B, S, context, p)
        for adiv in attention_divisors(N / p, a.attention_divisor_count):
            lat = np.where(ok, model.latency_from_part(part, N, p, adiv), np.inf)
            if return_layout:
                better = lat < best
                best = np.where(better, lat, best)
                best_p = np.where(better, p, best_p)
                best_a = np.where(better, adiv, best_a)
                att2, _ = model.attention_part(part, adiv, True)
                att1, _ = model.attention_part(part, adiv, False)
                two = (att2 + part["coll"][True]) <= (att1 + part["coll"][False])
                best_2d = np.where(better, two, best_2d)
            else:
                np.minimum(best, lat, out=best)
    if return_layout:
        return best, best_p, best_a, best_2d
    return best
