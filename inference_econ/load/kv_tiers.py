"""Tiers under an instance's prefix cache (docs/model.md §E13): the KV cache of prefixes the GPU
evicts moves to the host's memory, and from there to local disk (LMCache's CPU and disk
offload, vLLM's and SGLang's hierarchical caches, Dynamo's KV block manager), instead of being
dropped, and a prompt that starts with it loads it back rather than prefilling it again.

``KvTier`` states a tier (what it is, its size per GPU, its bandwidth to the GPU, whether the
load overlaps the step's compute); ``TierSpace`` is what one instance's cache reads of it: room
in layer-positions and seconds a layer-position takes to load. The host tier's figures come from
the hardware file (``host_memory_bytes_per_gpu``, ``host_link_bytes_per_s``) unless stated; a
disk's are stated (no hardware file gives them). Host memory and a server's local NVMe drives
are part of the server a GPU-hour rents (a DGX H100: 2 TB of memory, 30 TB of NVMe), so the
tiers add no price; a host tier larger than the host's memory is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import SpecError

#: The tiers below the GPU, nearest first; the setting that states each one's size and speed.
TIER_KINDS: dict[str, tuple[str, str]] = {
    "host": ("kv_offload_gb", "kv_offload_bandwidth_gb_per_s"),
    "disk": ("kv_disk_gb", "kv_disk_bandwidth_gb_per_s"),
}


@dataclass(frozen=True)
class KvTier:
    """One tier below the GPU: ``kind`` (host memory or local disk), the bytes per GPU of an
    instance the KV cache may use there (inf: every evicted prefix is kept, a what-if), its
    bandwidth to each GPU, one direction (bytes/s; None, host only: the GPU's
    ``host_link_bytes_per_s``; inf: loads take no time), and whether loading overlaps the step
    it is for (layer by layer: the step lasts the longer of the two; else the step waits for the
    load, then runs)."""

    kind: Literal["host", "disk"]
    bytes_per_gpu: float
    bandwidth_bytes_per_s: float | None = None
    overlap: bool = True

    def __post_init__(self) -> None:
        if self.kind not in TIER_KINDS:
            raise SpecError("argument", "kind", f"is {self.kind!r}", "host or disk")
        size_name, bw_name = TIER_KINDS[self.kind]
        size = self.bytes_per_gpu
        if isinstance(size, bool) or not isinstance(size, (int, float)) or not size > 0:
            raise SpecError("argument", size_name, f"is {size!r}", "a size in GB above 0 per GPU")
        bw = self.bandwidth_bytes_per_s
        if bw is None and self.kind == "disk":
            raise SpecError("argument", bw_name, "is missing", "give the disk's GB/s per GPU")
        if bw is not None and (isinstance(bw, bool) or not bw > 0):
            raise SpecError("argument", bw_name, f"is {bw!r}", "GB/s above 0")

    def describe(self) -> str:
        """Such as "host KV tier 256 GB per GPU at 64 GB/s, overlapped"."""
        bw = self.bandwidth_bytes_per_s
        rate = "the host link" if bw is None else f"{bw / 1e9:g} GB/s"
        mode = "overlapped" if self.overlap else "before the step"
        return f"{self.kind} KV tier {self.bytes_per_gpu / 1e9:g} GB per GPU at {rate}, {mode}"


@dataclass(frozen=True)
class TierSpace:
    """A tier as one instance's cache reads it: room (layer-positions), seconds to load one
    layer-position, and whether loading overlaps the step."""

    room: float
    seconds_per_position: float
    overlap: bool


def check_tiers(tiers) -> tuple[KvTier, ...]:
    """Tiers nearest first, at most one of each kind, a disk only below a host tier."""
    tiers = tuple(tiers)
    if not all(isinstance(t, KvTier) for t in tiers):
        raise SpecError("argument", "kv_tiers", f"is {tiers!r}", "a tuple of KvTier")
    kinds = [t.kind for t in tiers]
    if kinds not in ([], ["host"], ["host", "disk"]):
        raise SpecError(
            "argument", "kv_tiers", f"are {kinds}", "a host tier, optionally a disk tier below it"
        )
    return tiers


def tier_space(tier: KvTier, gpu, gpus: int, bytes_per_position: float) -> TierSpace:
    """The ``TierSpace`` of ``tier`` on an instance of ``gpus`` GPUs of ``gpu`` whose KV cache
    holds ``bytes_per_position`` bytes a layer-position: each GPU keeps and loads its own
    shard over its own link, so room and bandwidth scale with the GPUs."""
    bw = tier.bandwidth_bytes_per_s
    if bw is None:
        bw = gpu.host_link_bytes_per_s
        if not bw > 0:
            raise SpecError(
                gpu.name,
                "host_link_bytes_per_s",
                "is not stated: the host tier's bandwidth is unknown",
                "give kv_offload_bandwidth_gb_per_s (--kv-offload-bandwidth)",
            )
    host = gpu.host_memory_bytes_per_gpu
    size = tier.bytes_per_gpu
    if tier.kind == "host" and host > 0 and math.isfinite(size) and size > host:
        raise SpecError(
            "argument",
            "kv_offload_gb",
            f"is {size / 1e9:g} GB per GPU, more than the {host / 1e9:g} GB of "
            f"host memory a {gpu.name} server has per GPU",
            f"at most {host / 1e9:g}",
        )
    per_position = max(float(bytes_per_position), 1e-300)
    return TierSpace(
        room=size * gpus / per_position,
        seconds_per_position=0.0 if math.isinf(bw) else per_position / (bw * gpus),
        overlap=tier.overlap,
    )


def session_figures(sharing, ttft_s) -> dict:
    """A run's sessions (§E9): the p99 time to first token of their later turns (the requests
    sent when an earlier one finished; those that produced one) and the requests per session
    (of the sessions the run started: a warm start's are already under way); {} without
    sessions."""
    if sharing is None or not sharing.sessions:
        return {}
    follows = np.asarray(sharing.follows)
    later = np.zeros(len(follows), dtype=bool)
    later[follows[follows >= 0]] = True
    own = np.ones(len(follows), dtype=bool) if sharing.warm is None else ~sharing.warm
    ttft = np.asarray(ttft_s, dtype=float)[later | ~own]  # a warm session's turns are later ones
    ttft = ttft[np.isfinite(ttft)]
    return {
        "later_turn_ttft_p99_s": float(np.quantile(ttft, 0.99)) if ttft.size else math.nan,
        "requests_per_session": int(own.sum()) / max(int(np.sum(~later & own)), 1),
    }
