"""Time of collectives: latency plus bandwidth, best protocol per call (docs/model.md §A4, §C1).

The latency constants follow NCCL's tuning model (``src/graph/tuning.cc``) as the paper reads
it: for ``R`` ranks on ``M`` nodes an all-reduce costs ``2((R/M - 1) a + log2(M) b) + base``
per protocol; other collectives use a factor 1 instead of 2. The bandwidth term moves
``X`` bytes at the intra- and inter-node bus bandwidths scaled by the protocol's efficiency.

How bytes move inside one scale-up domain depends on how it is wired, not on the GPU's name
(``GPU.interconnect``, §C1): an NVLink switch (the paper's model), a full mesh of point-to-point
links (AMD xGMI, RCCL), PCIe cards (NCCL over PCI, NVLink bridges in small groups) or a TPU
torus (a ring per dimension). Across domains every kind uses the NICs as in §A4.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from ..errors import SpecError
from ..specs.hardware import GPU
from .assumptions import NcclLatencyModel
from .values import (
    add_into,
    affine_minimum,
    divide_into,
    maximum_into,
    multiply_into,
    zero_where,
)


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
    #: An engine's own all-reduce kernel (§F6): inside one scale-up domain only, over the
    #: domain's links; ``one_shot`` pulls every peer's whole buffer (R/2 times the bytes of a
    #: two-shot reduce-scatter plus all-gather).
    custom: bool = False
    one_shot: bool = False
    #: Not inside one scale-up domain, where a measured line of the engine's own kernel
    #: prices the collective instead (``exchange_protocols``).
    network_only: bool = False


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

LATENCY_MODELS: dict[NcclLatencyModel, tuple[Protocol, ...]] = {
    "paper": PAPER_PROTOCOLS,
    "nccl-2.20": PAPER_PROTOCOLS,
    "nccl-2.23": NCCL_2_23_PROTOCOLS,
}

#: §C1, PCIe cards: NCCL's PCI hop latencies (tree rows of ``hwLat[PCI]``: LL 1.0 µs, Simple
#: 28 µs in 2.20-2.22 and 4.0 µs from 2.23); LL128 is only enabled over NVLink, so it is absent.
PCIE_LATENCY_MODELS: dict[NcclLatencyModel, tuple[Protocol, ...]] = {
    "paper": (
        Protocol("LL", 0.5, 1.0e-6, 5e-6, 6.8e-6),
        Protocol("Simple", 1.0, 28e-6, 28e-6, 0.0),
    ),
    "nccl-2.20": (
        Protocol("LL", 0.5, 1.0e-6, 5e-6, 6.8e-6),
        Protocol("Simple", 1.0, 28e-6, 28e-6, 0.0),
    ),
    "nccl-2.23": (
        Protocol("LL", 0.5, 1.0e-6, 5e-6, 6.8e-6),
        Protocol("Simple", 1.0, 4.0e-6, 14e-6, 8.4e-6),
    ),
}

#: §C1, a full xGMI mesh (AMD Instinct, 8 GPUs): RCCL's tuning model 5 (``src/graph/tuning.cc``,
#: the model RCCL assigns to 8-GPU fully connected MI300-class nodes): base latency 12 µs (LL)
#: and 17 µs (Simple); per ring step inside the node 0.8 µs (LL) and 2.1 µs (Simple); per network
#: level 10.5 µs and 25 µs (tree rows); LL runs at 8 % of the bus bandwidth (its ``bwRatio``);
#: LL128 is disabled. RCCL has one table for every NCCL version the assumptions name.
RCCL_MESH_PROTOCOLS = (
    Protocol("LL", 0.08, 0.8e-6, 10.5e-6, 12e-6),
    Protocol("Simple", 1.0, 2.1e-6, 25e-6, 17e-6),
)

#: §C1, a TPU torus across slices: no published data-centre-network latency per level, so the
#: network hop of NCCL's Simple protocol (28 µs) is assumed.
TORUS_NETWORK_HOP_S = 28e-6

#: NVLS latency inside one NVLink domain (hwLat[NVLINK][NVLS][Simple]): 23 us in 2.20, 25 us
#: in 2.23; busBw ratio 5/6 of the link. Bandwidth: each byte crosses NVLink once each way.
NVLS_LATENCY_S: dict[NcclLatencyModel, float] = {
    "paper": 23e-6,
    "nccl-2.20": 23e-6,
    "nccl-2.23": 25e-6,
}
NVLS_BANDWIDTH_FACTOR = 5.0 / 6.0

#: The network hop of a protocol measured inside one domain only (§B15): far above any
#: collective, so never the fastest across domains, and finite, so that zero calls of it
#: cost zero (0 x inf is NaN).
OUTSIDE_DOMAIN_S = 1e9

#: The collectives a step runs; "expert_alltoall" is the expert dispatch or combine of §B11:
#: every rank sends straight to every other (one network hop, all sends at once); the bytes
#: bound for the ranks of its own domain cross its links, the rest leave through its own NIC.
CollectiveKind = Literal["allreduce", "alltoall", "p2p", "expert_alltoall"]
ALLREDUCE: CollectiveKind = "allreduce"
ALLTOALL: CollectiveKind = "alltoall"
P2P: CollectiveKind = "p2p"
EXPERT_ALLTOALL: CollectiveKind = "expert_alltoall"
KINDS: tuple[CollectiveKind, ...] = get_args(CollectiveKind)


def one_sided(protocols: tuple[Protocol, ...]) -> Protocol:
    """The ideal expert exchange (§B11): the kernels that move a MoE layer's tokens (DeepEP's,
    TensorRT-LLM's one-sided all-to-all) write each token into its destination's buffer and
    raise one flag, so no word carries a flag of its own: the least latencies of the library's
    ``protocols`` at the full link rate. AIConfigurator's DeepEP tables time the low-latency
    kernels below NCCL's LL and Simple lines across nodes (H200, 16-96 tokens a rank)."""
    library = [p for p in protocols if not (p.switch or p.custom)]
    return Protocol(
        "one-sided",
        1.0,
        min(p.intra_hop_latency_s for p in library),
        min(p.inter_hop_latency_s for p in library),
        min(p.base_latency_s for p in library),
    )


def exchange_protocols(
    library: tuple[Protocol, ...], latency_s: float, efficiency: float
) -> tuple[Protocol, ...]:
    """An engine's expert dispatch or combine where its own kernel was measured (§F7, DeepEP's:
    kernels/deepep_exchange.yaml): inside one scale-up domain that kernel's line, ``latency_s``
    a call plus the domain's bytes at ``efficiency`` of the links' rate; across domains the
    ``library``'s protocols, which its measured calls there follow."""
    line = Protocol("exchange kernel (measured)", efficiency, 0.0, OUTSIDE_DOMAIN_S, latency_s)
    return (line, *(dataclasses.replace(p, network_only=True) for p in library))


def measured_protocols(gpu: GPU, nvls: bool, profile) -> tuple[Protocol, ...]:
    """Collectives as a serving engine sees them (docs/model.md §F6): the library's protocols
    for the interconnect (NCCL 2.23 tables, NVLS where the GPU has it; RCCL or NCCL's PCI
    latencies), their latencies times the measured ``collective_latency_scale`` and bandwidths
    times ``collective_bandwidth_efficiency``; plus, when the engine has them, its own one-shot
    and two-shot all-reduce kernels inside a switch or mesh domain (latency
    ``custom_allreduce_latency_s``, link bandwidth times
    ``custom_allreduce_bandwidth_efficiency``)."""
    scale = profile.collective_latency_scale
    eff = profile.collective_bandwidth_efficiency
    library = tuple(
        Protocol(
            p.name,
            p.bandwidth_factor * eff,
            p.intra_hop_latency_s * scale,
            p.inter_hop_latency_s * scale,
            p.base_latency_s * scale,
            p.switch,
        )
        for p in protocols_for("nccl-2.23", nvls and gpu.nvls, gpu)
    )
    custom_eff = profile.custom_allreduce_bandwidth_efficiency
    if custom_eff <= 0 or gpu.interconnect not in ("switch", "full_mesh"):
        return library
    alpha = profile.custom_allreduce_latency_s
    return library + (
        Protocol("custom one-shot", custom_eff, 0.0, 0.0, alpha, custom=True, one_shot=True),
        Protocol("custom two-shot", custom_eff, 0.0, 0.0, 2.0 * alpha, custom=True),
    )


def ceiling_protocols(gpu: GPU, ceilings) -> tuple[Protocol, ...]:
    """The fastest collectives measured inside one domain of the part (§B15; a
    ``specs.measured_rates.KernelCeilings``), as flat-latency protocols over the domain's
    links: the engine's own all-reduce kernel (its one-shot and two-shot protocols at their
    best; ``custom``) and NCCL's every collective (a library protocol whose network hop,
    ``OUTSIDE_DOMAIN_S``, keeps it inside one domain). A bus bandwidth B is a bandwidth
    factor of B / (2 x the all-reduce bus bandwidth): an all-reduce's 2(R-1)/R bytes, or
    another collective's (R-1)/R, over B. None on a PCIe or torus part. A line stands over
    more ranks than its table measured too (GB200's tables stop at 4 GPUs, B200's on the same
    NVLink generation measure 8 at 4.6 µs): a collective over more ranks is no faster, so the
    line stays under it, where the NCCL model's latency would not (15 µs at 8)."""
    if gpu.interconnect not in ("switch", "full_mesh"):
        return ()
    link = 2.0 * gpu.intra_node_allreduce_bandwidth_bytes_per_s
    out = []
    custom, nccl = ceilings.custom_allreduce, ceilings.nccl
    if custom.bus_bytes_per_s > 0:
        factor = custom.bus_bytes_per_s / link
        out.append(
            Protocol(
                "custom all-reduce (measured)",
                factor,
                0.0,
                0.0,
                custom.latency_s,
                custom=True,
            )  # fmt: skip
        )
    if nccl.bus_bytes_per_s > 0:
        factor = nccl.bus_bytes_per_s / link
        out.append(Protocol("NCCL (measured)", factor, 0.0, OUTSIDE_DOMAIN_S, nccl.latency_s))
    return tuple(out)


def protocols_for(
    model: NcclLatencyModel, nvls: bool = False, gpu: GPU | None = None
) -> tuple[Protocol, ...]:
    """The protocols of a latency model, plus NVLS when the GPUs and assumptions allow it.

    With ``gpu``, its interconnect chooses the library's table (§C1): NCCL's (switch), NCCL's
    PCI latencies (pcie), RCCL's (full mesh) or one ring protocol over the ICI links (torus).
    """
    try:
        protocols = LATENCY_MODELS[model]
    except KeyError:
        raise SpecError(
            "assumptions",
            "nccl_latency_model",
            f"unknown NCCL latency model {model!r}",
            f"choose one of {', '.join(LATENCY_MODELS)}",
        ) from None
    kind = gpu.interconnect if gpu is not None else "switch"
    if kind == "pcie":
        return PCIE_LATENCY_MODELS[model]
    if kind == "full_mesh":
        return RCCL_MESH_PROTOCOLS
    if kind == "torus" and gpu is not None:
        return (Protocol("ICI ring", 1.0, gpu.link_latency_s, TORUS_NETWORK_HOP_S, 0.0),)
    if nvls:
        protocols = protocols + (
            Protocol("NVLS", NVLS_BANDWIDTH_FACTOR, 0.0, 0.0, NVLS_LATENCY_S[model], switch=True),
        )
    return protocols


def _link_terms(gpu: GPU, ranks, nodes, kind: CollectiveKind, inter_share):
    """(hop steps inside a domain, log2 of the nodes (or the one network hop of §B11), seconds
    per byte before a protocol's bandwidth factor: §A4, §C1) of a collective of ``ranks`` on
    ``nodes``; ``inter_share`` is the share of an expert all-to-all's bytes that leaves its
    domain (§B11)."""
    per_node = add_into(ranks / nodes, -1.0)  # in place on new arrays: the same numbers
    log_nodes = np.maximum(nodes, 1.0)
    log_nodes = np.log2(log_nodes, out=log_nodes if type(log_nodes) is np.ndarray else None)
    # seconds per byte before the protocol's bandwidth factor (§A4, §C1)
    direct = kind == EXPERT_ALLTOALL
    steps, intra = _inside_domains(gpu, ranks, nodes, per_node, ALLTOALL if direct else kind)
    if direct:
        # §B11: a rank's bytes go to every rank alike, (G - 1)/R of them to the other ranks
        # of its domain, over its links; ``inter_share`` of them (by default the (M - 1)/M
        # bound for other domains) leave through its own NIC, at the NIC's one-way rate
        intra = intra / np.maximum(nodes, 1.0)
        share = (nodes - 1.0) / np.maximum(nodes, 1.0) if inter_share is None else inter_share
        inter = share / gpu.nic_bandwidth_bytes_per_s
        # every rank writes to all its peers at once: the latency of the flags of R/M
        # peers gathered in log2(R/M) steps, and one network hop, not a ring's R/M - 1
        steps = np.log2(np.maximum(ranks / np.maximum(nodes, 1.0), 1.0))
        log_nodes = np.where(nodes > 1.0, 1.0, 0.0).astype(np.result_type(nodes, 1.0))
    else:
        inter = divide_into(nodes - 1.0, ranks * gpu.inter_node_allreduce_bandwidth_bytes_per_s)
    if kind not in (ALLREDUCE, EXPERT_ALLTOALL):
        inter = divide_into(inter, 2.0)
    seconds_per_byte = maximum_into(intra, inter)
    return steps, log_nodes, seconds_per_byte


def _protocol_terms(
    p: Protocol,
    gpu: GPU,
    ranks,
    steps,
    log_nodes,
    seconds_per_byte,
    switch_ok,
    flat,
    hops: float,
    arrays: bool,
    latency_scale: float,
):
    """(latency seconds, seconds per byte) of one call under protocol ``p``: NVLS (``switch``)
    and an engine's custom kernel only inside one domain (``switch_ok``), else the hops' and
    the base latency over the links' rate (``_link_terms``); ``flat`` is the precision a flat
    latency keeps, ``arrays`` whether the grid search's arrays are costed."""
    if p.switch:
        lat = np.where(switch_ok, latency_scale * p.base_latency_s, np.inf).astype(flat)
        per_byte = (
            (ranks - 1.0) / ranks / (2.0 * gpu.intra_node_allreduce_bandwidth_bytes_per_s)
        ) / p.bandwidth_factor
    elif p.custom:  # §F6: the engine's kernel, over the domain's own links
        lat = np.where(switch_ok, latency_scale * p.base_latency_s, np.inf).astype(flat)
        per_byte = seconds_per_byte / p.bandwidth_factor
        if p.one_shot:
            per_byte = per_byte * ranks / 2.0
    else:
        # each operation in place on the new array it made (the same numbers); on
        # arrays the all-reduce's 2 hops scale the constants: (s·2a + l·2b) is
        # 2·(s·a + l·b) bit for bit, a power of two scaling exactly (docs/model.md
        # "The search"), one operation less on the array per protocol
        doubled = arrays and hops == 2.0
        factor = 2.0 if doubled else 1.0
        lat = add_into(
            steps * (factor * p.intra_hop_latency_s),
            log_nodes * (factor * p.inter_hop_latency_s),
        )
        if not doubled and (hops != 1.0 or not arrays):
            lat = multiply_into(lat, hops)
        lat = add_into(lat, p.base_latency_s)
        if latency_scale != 1.0 or not arrays:
            lat = multiply_into(lat, latency_scale)
        per_byte = (
            seconds_per_byte / p.bandwidth_factor
            if p.bandwidth_factor != 1.0 or not arrays
            else seconds_per_byte
        )
    return lat, per_byte


def counted(calls, x):
    """``calls · x``, 0 where an array of counts is 0 whatever ``x`` is there (a call a layout
    does not make costs nothing, even where its cost is infinite)."""
    kind = type(calls)
    if kind is float or kind is int or np.ndim(calls) == 0:  # a number: no mask to take
        return calls * x
    with np.errstate(invalid="ignore"):
        return np.where(calls != 0, calls * x, 0.0)


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
        kind: CollectiveKind = ALLREDUCE,
        protocols: tuple[Protocol, ...] = PAPER_PROTOCOLS,
        latency_scale: float = 1.0,
        inter_share=None,
        where=None,
    ) -> None:
        """``where``: the points whose costs matter, when the caller gives every other point
        an infinite latency whatever its collectives cost (the grid search's feasible
        points): single ranks elsewhere need not be given their zero cost."""
        ranks = np.asarray(ranks)
        nodes = np.asarray(nodes)
        hops = 2.0 if kind == ALLREDUCE else 1.0
        self.active = ranks > 1.0
        steps, log_nodes, seconds_per_byte = _link_terms(gpu, ranks, nodes, kind, inter_share)
        # NVLS: an all-reduce inside one NVLink domain only; each byte once each way at the
        # one-way NVLink rate (twice the paper's all-reduce bus bandwidth)
        protocols = tuple(p for p in protocols if not (p.switch or p.custom) or kind == ALLREDUCE)
        switch_ok = nodes <= 1.0
        # one rank (or a fraction of one GPU) communicates with nobody: zero cost. On arrays
        # (the grid search) the operations that cannot change a value are skipped (a factor
        # of exactly 1, a mask that keeps every point): the same numbers, less work.
        arrays = np.ndim(self.active) > 0
        inactive = not arrays or not bool(self.active.all())
        if inactive and arrays and where is not None:
            inactive = bool(np.any(where & ~self.active))
        idle = ~self.active if inactive else None
        self.latency = []
        self.per_byte = []
        # a flat latency keeps the precision of the ranks (single in the grid search)
        flat = np.result_type(ranks, nodes, 1.0)
        for p in protocols:
            lat, per_byte = _protocol_terms(
                p, gpu, ranks, steps, log_nodes, seconds_per_byte, switch_ok, flat, hops, arrays,
                latency_scale,
            )  # fmt: skip
            if p.network_only:  # inside one domain the measured line prices it
                lat = np.where(switch_ok, OUTSIDE_DOMAIN_S, lat).astype(flat)
            if inactive:  # lat is a new array; per_byte may be ``seconds_per_byte`` itself
                lat = zero_where(lat, idle)
                per_byte = (
                    np.where(self.active, per_byte, 0.0)
                    if per_byte is seconds_per_byte
                    else zero_where(per_byte, idle)
                )
            if not arrays:  # Python floats: they leave a single-precision search single
                lat, per_byte = float(lat), float(per_byte)
            self.latency.append(lat)
            self.per_byte.append(per_byte)
        self.protocols = protocols

    def time(self, nbytes):
        """Total seconds of one call moving ``nbytes`` (best protocol, 0 for one rank)."""
        best = None
        for lat, per_byte in zip(self.latency, self.per_byte):
            t = lat + per_byte * nbytes
            best = t if best is None else np.minimum(best, t)
        return best

    def time_linear(self, bytes_per_token, tokens, calls=1.0, scaled=None):
        """``calls * time(bytes_per_token * tokens)``, with the factors that do not depend on
        ``tokens`` folded first (fewer operations on the whole grid). ``scaled``: this cost's
        ``scaled(calls)``, when the caller has it from a call with the same count."""
        lat, per_byte = scaled or self.scaled(calls)
        return affine_minimum(zip(lat, [pb * bytes_per_token for pb in per_byte]), tokens)

    def scaled(self, calls) -> tuple[list, list]:
        """([calls · latency], [calls · per_byte]) per protocol (``time_linear``'s first
        operations: 2-D tensor parallelism reduces two tensors with the same calls)."""
        return (
            [counted(calls, lat) for lat in self.latency],
            [counted(calls, per_byte) for per_byte in self.per_byte],
        )

    def folded(self, bytes_per_token, calls=1.0) -> tuple:
        """The factors of ``time_linear`` that do not depend on the tokens, per protocol:
        ``(calls * latency, calls * per_byte * bytes_per_token)`` (a search over several tokens
        per pass computes them once; ``time_folded`` finishes the sum)."""
        return tuple(
            (counted(calls, lat), counted(calls, per_byte) * bytes_per_token)
            for lat, per_byte in zip(self.latency, self.per_byte)
        )

    @staticmethod
    def time_folded(folded: tuple, tokens):
        """``time_linear`` from its ``folded`` factors: the same operations, so the same
        numbers."""
        return affine_minimum(folded, tokens)

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


# --- inside one scale-up domain, by interconnect (docs/model.md §C1) --------------------------


def _inside_domains(gpu: GPU, ranks, nodes, per_node, kind: CollectiveKind):
    """(latency steps, seconds per byte) of one collective inside the scale-up domains.

    ``per_node = R/M - 1``: the other ranks of a domain. The steps multiply each protocol's
    per-rank latency (§A4); the seconds per byte are before the protocol's efficiency, and
    already halved for collectives other than the all-reduce.
    """
    fabric = gpu.interconnect
    if fabric == "torus":
        return _torus(gpu, ranks / nodes, kind)
    if fabric == "switch":
        # §A4 as the paper writes it (kept operation for operation)
        intra = divide_into(
            multiply_into(np.maximum(per_node, 0.0), nodes),  # nodes · max(0, R/M - 1)
            ranks * gpu.intra_node_allreduce_bandwidth_bytes_per_s,
        )
    else:
        intra = nodes * np.maximum(0.0, per_node) / (ranks * _bus_bandwidth(gpu, per_node))
    if kind != ALLREDUCE:
        intra = divide_into(intra, 2.0)
    return per_node, intra


def _bus_bandwidth(gpu: GPU, peers):
    """All-reduce bus bandwidth per GPU (one-way / 2, as §A3) of a ring over ``peers + 1``
    GPUs of one domain: a full mesh uses only the links to the group's members; PCIe cards
    use their bridge inside a bridge group and their PCIe link beyond it (§C1)."""
    if gpu.interconnect == "full_mesh":
        others = gpu.scale_up_domain_gpus - 1.0
        per_peer = gpu.nvlink_bandwidth_bytes_per_s / others
        return np.clip(peers, 1.0, others) * per_peer / 4.0
    pcie = gpu.pcie_bandwidth_bytes_per_s / 4.0
    if gpu.nvlink_bridge_gpus <= 1:
        return pcie + 0.0 * peers
    return np.where(
        peers + 1.0 <= gpu.nvlink_bridge_gpus, gpu.nvlink_bandwidth_bytes_per_s / 4.0, pcie
    )


def torus_group_shape(chips, dimensions: tuple[int, ...]):
    """Sides of the sub-torus holding a group of ``chips`` chips, largest first (§C1).

    The group spans ``k = clip(floor(log2 chips), 1, D)`` of the torus's ``D`` dimensions (each
    at least 2 chips long), split as evenly as the slice allows: equal sides ``chips^(1/k)``
    on the ``k`` longest dimensions, each capped at its length. Returns (sides, k) with
    ``sides`` of shape (D, ...) (inactive sides are 1).
    """
    r = np.maximum(np.asarray(chips, dtype=float), 1.0)
    d = len(dimensions)
    k = np.clip(np.floor(np.log2(r)), 1.0, float(d))
    sides = np.ones((d,) + r.shape)
    for used in range(1, d + 1):
        sel = k == used
        if not np.any(sel):
            continue
        caps = sorted(sorted(dimensions, reverse=True)[:used])  # the longest, shortest first
        rest = r
        for i, cap in enumerate(caps):
            side = np.minimum(rest ** (1.0 / (used - i)), float(cap))
            sides[i] = np.where(sel, side, sides[i])
            rest = rest / side
    return -np.sort(-sides, axis=0), k


def _torus(gpu: GPU, chips, kind: CollectiveKind):
    """(latency steps, seconds per byte) on a torus: a bidirectional ring per dimension.

    All-reduce: the data is split over the ``k`` active dimensions and each share goes
    through them in a rotated order, so every link is busy in every phase; a ring over ``s``
    chips moves ``2(s - 1)/s`` of what it holds at ``β`` (one link both ways, halved without
    wrap-around), and each phase holds ``1/s`` of the previous. All-to-all: every byte
    crosses the average distance (``s/4`` per wrapped dimension) over ``k·b`` of links.
    """
    sides, k = torus_group_shape(chips, gpu.torus_dimensions)
    link = gpu.link_bandwidth_bytes_per_s
    beta = link if gpu.torus_wraparound else link / 2.0
    held = np.ones_like(sides[0])
    seconds = np.zeros_like(sides[0])
    for s in sides:
        seconds = seconds + 2.0 * (s - 1.0) / s / held / beta
        held = held * s
    seconds = seconds / k
    steps = np.sum(sides - 1.0, axis=0)
    if kind == ALLREDUCE:
        return steps, seconds
    if gpu.torus_wraparound:
        distance = np.sum(np.where(sides > 1.0, sides / 4.0, 0.0), axis=0)
    else:
        distance = np.sum((sides**2 - 1.0) / (3.0 * sides), axis=0)
    return steps, np.maximum(seconds / 2.0, distance / (k * link))
