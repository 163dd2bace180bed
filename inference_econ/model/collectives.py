"""Time of NCCL collectives: latency plus bandwidth, best protocol per call (docs/model.md §A4).

The latency constants follow NCCL's tuning model (``src/graph/tuning.cc``) as the paper reads
it: for ``R`` ranks on ``M`` nodes an all-reduce costs ``2((R/M - 1) a + log2(M) b) + base``
per protocol; other collectives use a factor 1 instead of 2. The bandwidth term moves
``X`` bytes at the intra- and inter-node bus bandwidths scaled by the protocol's efficiency.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from ..specs.hardware import GPU


@dataclass(frozen=True)
class Protocol:
    """One NCCL protocol: bandwidth efficiency and latency constants (seconds).

    ``switch`` marks NVLink SHARP (NVLS): the reduction happens in the NVSwitch, so it only
    applies inside one NVLink domain, has a flat latency and moves each byte once each way.
    """

    name: str
    bandwidth_factor: float
    intra_hop_latency_s: float  # per (R/M - 1)
    inter_hop_latency_s: float  # per log2(M)
    base_latency_s: float
    switch: bool = False


#: docs/model.md §A4, the paper's reading of NCCL's tree latencies. They are the tree rows of the
#: baseLat/hwLat tables of src/graph/tuning.cc in the NCCL releases with MNNVL but without
#: PAT (2.20-2.22): baseLat {6.8, 14, 0}, NVLink {0.6, 1.25, 28}, network {5.0, 8.5, 28}.
PAPER_PROTOCOLS = (
    Protocol("LL", 0.5, 0.6e-6, 5e-6, 6.8e-6),
    Protocol("LL128", 0.95, 1.25e-6, 8.5e-6, 14e-6),
    Protocol("Simple", 1.0, 28e-6, 28e-6, 0.0),
)

#: NCCL 2.23 onwards (PAT, Blackwell tables): tree/Simple gets a base latency of 8.4 us but
#: only 4 us per NVLink hop and 14 us per network hop, so mid-size all-reduces use it.
NCCL_2_23_PROTOCOLS = (
    Protocol("LL", 0.5, 0.6e-6, 5e-6, 6.8e-6),
    Protocol("LL128", 0.95, 1.25e-6, 8.5e-6, 14e-6),
    Protocol("Simple", 1.0, 4.0e-6, 14e-6, 8.4e-6),
)

LATENCY_MODELS: dict[str, tuple[Protocol, ...]] = {
    "paper": PAPER_PROTOCOLS,
    "nccl-2.20": PAPER_PROTOCOLS,
    "nccl-2.23": NCCL_2_23_PROTOCOLS,
}

#: NVLS latency inside one NVLink domain (hwLat[NVLINK][NVLS][Simple]): 23 us in 2.20, 25 us
#: in 2.23; busBw ratio 5/6 of the link. Bandwidth: each byte crosses NVLink once each way.
NVLS_LATENCY_S = {"paper": 23e-6, "nccl-2.20": 23e-6, "nccl-2.23": 25e-6}
NVLS_BANDWIDTH_FACTOR = 5.0 / 6.0

ALLREDUCE = "allreduce"
ALLTOALL = "alltoall"
P2P = "p2p"
KINDS = (ALLREDUCE, ALLTOALL, P2P)


def protocols_for(model: str, nvls: bool = False) -> tuple[Protocol, ...]:
    """The protocols of a latency model, plus NVLS when the GPUs and assumptions allow it."""
    try:
        protocols = LATENCY_MODELS[model]
    except KeyError:
        raise SpecError(
            "assumptions",
            "nccl_latency_model",
            f"unknown NCCL latency model {model!r}",
            f"choose one of {', '.join(LATENCY_MODELS)}",
        ) from None
    if nvls:
        protocols = protocols + (
            Protocol("NVLS", NVLS_BANDWIDTH_FACTOR, 0.0, 0.0, NVLS_LATENCY_S[model], switch=True),
        )
    return protocols


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
        # seconds per byte before the protocol's bandwidth factor (§A4)
        intra = (
            nodes
            * np.maximum(0.0, per_node)
            / (ranks * gpu.intra_node_allreduce_bandwidth_bytes_per_s)
        )
        inter = (nodes - 1.0) / (ranks * gpu.inter_node_allreduce_bandwidth_bytes_per_s)
        seconds_per_byte = np.maximum(intra, inter)
        if kind != ALLREDUCE:
            seconds_per_byte = seconds_per_byte / 2.0
        # NVLS: an all-reduce inside one NVLink domain only; each byte once each way at the
        # one-way NVLink rate (twice the paper's all-reduce bus bandwidth)
        protocols = tuple(p for p in protocols if not p.switch or kind == ALLREDUCE)
        switch_ok = nodes <= 1.0
        switch_per_byte = (
            (ranks - 1.0) / ranks / (2.0 * gpu.intra_node_allreduce_bandwidth_bytes_per_s)
        )
        # one rank (or a fraction of one GPU) communicates with nobody: zero cost
        self.latency = []
        self.per_byte = []
        for p in protocols:
            if p.switch:
                lat = np.where(switch_ok, latency_scale * p.base_latency_s, np.inf)
                per_byte = switch_per_byte / p.bandwidth_factor
            else:
                hop = per_node * p.intra_hop_latency_s + log_nodes * p.inter_hop_latency_s
                lat = latency_scale * (hops * hop + p.base_latency_s)
                per_byte = seconds_per_byte / p.bandwidth_factor
            self.latency.append(np.where(self.active, lat, 0.0))
            self.per_byte.append(np.where(self.active, per_byte, 0.0))
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
