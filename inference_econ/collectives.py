"""Time of NCCL collectives: latency plus bandwidth, best protocol per call (MODEL.md A4).

The latency constants follow NCCL's tuning model (``src/graph/tuning.cc``) as the paper reads
it: for ``R`` ranks on ``M`` nodes an all-reduce costs ``2((R/M - 1) a + log2(M) b) + base``
per protocol; other collectives use a factor 1 instead of 2. The bandwidth term moves
``X`` bytes at the intra- and inter-node bus bandwidths scaled by the protocol's efficiency.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import SpecError
from .hardware import GPU


@dataclass(frozen=True)
class Protocol:
    """One NCCL protocol: bandwidth efficiency and latency constants (seconds)."""

    name: str
    bandwidth_factor: float
    intra_hop_latency_s: float  # per (R/M - 1)
    inter_hop_latency_s: float  # per log2(M)
    base_latency_s: float


#: MODEL.md A4, the paper's reading of NCCL's tree latencies.
PAPER_PROTOCOLS = (
    Protocol("LL", 0.5, 0.6e-6, 5e-6, 6.8e-6),
    Protocol("LL128", 0.95, 1.25e-6, 8.5e-6, 14e-6),
    Protocol("Simple", 1.0, 28e-6, 28e-6, 0.0),
)

LATENCY_MODELS: dict[str, tuple[Protocol, ...]] = {"paper": PAPER_PROTOCOLS}

ALLREDUCE = "allreduce"
ALLTOALL = "alltoall"
P2P = "p2p"
KINDS = (ALLREDUCE, ALLTOALL, P2P)


def protocols_for(model: str) -> tuple[Protocol, ...]:
    try:
        return LATENCY_MODELS[model]
    except KeyError:
        raise SpecError(
            "assumptions",
            "nccl_latency_model",
            f"unknown NCCL latency model {model!r}",
            f"choose one of {', '.join(LATENCY_MODELS)}",
        ) from None


class CollectiveCost:
    """Collectives over one array of (ranks, nodes): evaluate many message sizes cheaply.

    The latency of each protocol and the bytes-to-seconds factor depend only on the ranks and
    nodes, so they are computed once; ``time(nbytes)`` then costs a few array operations.
    """

    def __init__(
        self,
        ranks,
        nodes,
        gpu: GPU,
        kind: str = ALLREDUCE,
        protocols: tuple[Protocol, ...] = PAPER_PROTOCOLS,
        latency_scale: float = 1.0,
    ) -> None:
        ranks = np.asarray(ranks)
        nodes = np.asarray(nodes)
        hops = 2.0 if kind == ALLREDUCE else 1.0
        per_node = ranks / nodes - 1.0
        log_nodes = np.log2(np.maximum(nodes, 1.0))
        self.active = ranks > 1.0
        # seconds per byte before the protocol's bandwidth factor (A4)
        intra = (
            nodes
            * np.maximum(0.0, per_node)
            / (ranks * gpu.intra_node_allreduce_bandwidth_bytes_per_s)
        )
        inter = (nodes - 1.0) / (ranks * gpu.inter_node_allreduce_bandwidth_bytes_per_s)
        seconds_per_byte = np.maximum(intra, inter)
        if kind != ALLREDUCE:
            seconds_per_byte = seconds_per_byte / 2.0
        # one rank (or a fraction of one GPU) communicates with nobody: zero cost
        self.latency = [
            np.where(
                self.active,
                latency_scale
                * (
                    hops * (per_node * p.intra_hop_latency_s + log_nodes * p.inter_hop_latency_s)
                    + p.base_latency_s
                ),
                0.0,
            )
            for p in protocols
        ]
        self.per_byte = [
            np.where(self.active, seconds_per_byte / p.bandwidth_factor, 0.0) for p in protocols
        ]
        self.protocols = protocols

    def time(self, nbytes):
        """Total seconds of one call moving ``nbytes`` (best protocol, 0 for one rank)."""
        best = None
        for lat, per_byte in zip(self.latency, self.per_byte):
            t = lat + per_byte * nbytes
            best = t if best is None else np.minimum(best, t)
        return best

    def time_linear(self, bytes_per_token, tokens, calls=1.0):
        """``calls * time(bytes_per_token * tokens)``, with the factors that do not depend on
        ``tokens`` folded first (fewer operations on the whole grid)."""
        best = None
        for lat, per_byte in zip(self.latency, self.per_byte):
            t = calls * lat + (calls * per_byte * bytes_per_token) * tokens
            best = t if best is None else np.minimum(best, t)
        return best

    def terms(self, nbytes):
        """(latency seconds, bandwidth seconds, protocol index) of the best protocol."""
        totals = np.stack(
            np.broadcast_arrays(
                *[lat + pb * nbytes for lat, pb in zip(self.latency, self.per_byte)]
            )
        )
        choice = np.argmin(totals, axis=0)
        lat = np.choose(choice, np.broadcast_arrays(*self.latency, totals[0])[:-1])
        bw = np.choose(
            choice, [np.broadcast_to(pb * nbytes, totals.shape[1:]) for pb in self.per_byte]
        )
        return lat, bw, choice


def collective_time(
    ranks, nodes, nbytes, gpu: GPU, kind: str = ALLREDUCE, protocols=PAPER_PROTOCOLS
):
    """Seconds of one collective of ``nbytes`` bytes over ``ranks`` ranks on ``nodes`` nodes."""
    return CollectiveCost(ranks, nodes, gpu, kind, protocols).time(nbytes)
