"""The hardware as the latency model sees it: figures after sustained caps, and the shape of a
tensor-parallel group on it (docs/model.md §A3, §A5)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..specs.hardware import GPU
from .assumptions import Assumptions
from .collectives import (
    ALLREDUCE,
    EXPERT_ALLTOALL,
    CollectiveCost,
    Protocol,
    ceiling_protocols,
    exchange_protocols,
    measured_protocols,
    one_sided,
    protocols_for,
)
from .efficiency import best_gemm_efficiency
from .overlap import runs_deepep

#: A class of arithmetic with a rate of its own (§B15): dense GEMMs, the routed experts'
#: grouped GEMMs, attention.
FlopClass = Literal["gemm", "expert", "attention"]


def flop_rates(gpu: GPU, weight_bits: float, assumptions: Assumptions) -> tuple[float, float]:
    """(peak, sustained) dense FLOP/s of matmuls with ``weight_bits`` weights (§A3).

    A precision the chip lacks runs at the next wider one; without ``native_fp4`` 4-bit
    weights run at the 8-bit rate even on chips with FP4 tensor cores (the paper's rule).
    """
    peak = gpu.peak_flop_per_s(weight_bits, assumptions.native_fp4)
    return peak, peak * gpu.sustained_flop_fraction


#: HBM read bandwidth as a fraction of the datasheet for a part without a streaming
#: measurement under ``measured_hbm_bandwidth``: the best the catalog's parts measured (H100
#: SXM, STREAM dot 3.18 of 3.35 TB/s; H200 4.48 of 4.8), since an ideal bound takes the best.
DEFAULT_STREAM_BANDWIDTH_FRACTION = 0.95


def roofline_hbm_fraction(gpu: GPU, assumptions: Assumptions) -> float:
    """The share of its datasheet HBM bandwidth the roofline step streams at (§A3, §B14): the
    part's sustained fraction (the paper's 75 %), or under ``measured_hbm_bandwidth`` what a
    streaming kernel measured on it (``DEFAULT_STREAM_BANDWIDTH_FRACTION`` where nothing
    was), never below the sustained fraction."""
    if not assumptions.measured_hbm_bandwidth:
        return gpu.sustained_hbm_bandwidth_fraction
    measured = gpu.stream_bandwidth_fraction or DEFAULT_STREAM_BANDWIDTH_FRACTION
    return max(measured, gpu.sustained_hbm_bandwidth_fraction)


def roofline_rates(
    gpu: GPU, weight_bits: float, attention_bits: float | None, assumptions: Assumptions
) -> tuple[float, float, float, float, float]:
    """(GEMM FLOP/s, routed experts' FLOP/s, attention FLOP/s, HBM bytes/s, L2 bytes/s) of
    the roofline step (§A3, §B14, §B15): the preset's sustained figures (the experts and, where
    ``attention_bits`` is None, attention at the GEMMs' rate), each raised under
    ``measured_kernel_rates`` to the best the part's measured kernels of its class reached at
    that rate (GEMMs and the fused MoE by the bits of the tensor-core rate, attention by the KV
    cache's); the L2 rate is the HBM one without a measurement."""
    native = assumptions.native_fp4
    gemm = flop_rates(gpu, weight_bits, assumptions)[1]
    attention = gemm
    if attention_bits is not None:
        attention = flop_rates(gpu, attention_bits, assumptions)[1]
    bandwidth = gpu.hbm_bandwidth_bytes_per_s * roofline_hbm_fraction(gpu, assumptions)
    ceilings = gpu.kernel_ceilings if assumptions.measured_kernel_rates else None
    if ceilings is None:
        return gemm, gemm, attention, bandwidth, bandwidth
    bits = gpu.flop_entry(weight_bits, native)[0]
    experts = max(gemm, ceilings.moe(bits))
    gemm = max(gemm, ceilings.gemm(bits))
    if attention_bits is None:
        attention = gemm
    else:
        attention = max(attention, ceilings.attention(gpu.flop_entry(attention_bits, native)[0]))
    bandwidth = max(bandwidth, ceilings.hbm_bytes_per_s)
    return gemm, experts, attention, bandwidth, max(bandwidth, ceilings.l2_bytes_per_s)


def l2_resident(gpu: GPU, nbytes):
    """Whether a kernel's working set of ``nbytes`` fits in the part's L2 cache, so that
    called back to back on the same buffers it reads them from L2, not HBM (§B15); False
    where the spec gives no L2 size."""
    return (np.asarray(nbytes) <= gpu.l2_cache_bytes) & (gpu.l2_cache_bytes > 0)


def is_mx_width(weight_bits: float) -> bool:
    """Whether a weight width is an MX format's: fractional and below 8 bits, its block scales
    counted in (MXFP4's 4.25 bits, gpt-oss's release)."""
    return weight_bits != math.floor(weight_bits) and weight_bits < 8


def mx_gemm_bits(gpu: GPU, weight_bits: float, gemm_bits: float) -> float:
    """The format a GEMM of MX-format weights runs at (§B5): a fractional width (MXFP4's 4.25
    bits, with its scales) taking an 8-bit activation operand multiplies MXFP8 x MXFP4 on
    tensor cores with 4-bit operands (Blackwell, CDNA4); a chip without them has no such
    instruction, and the engines dequantise the weights into BF16 GEMMs (TensorRT-LLM's
    TRITON MoE backend on Hopper, its gpt_oss README). Any other format: ``gemm_bits``."""
    mx = is_mx_width(weight_bits) and gemm_bits == 8
    if mx and not gpu.peak_flop_per_s(4) > gpu.peak_flop_per_s(8) * (1 + 1e-9):
        return 16.0
    return gemm_bits


def mx_kv_cache_bits(gpu: GPU, weight_bits: float, kv_bits: float) -> float:
    """The KV cache of an MX-format checkpoint (fractional width: MXFP4's 4.25 bits) on a chip
    without 4-bit tensor cores is the checkpoint's own BF16, not FP8: TensorRT-LLM's
    performance overview runs gpt-oss with ``kv_cache_config: dtype: fp8`` on Blackwell and
    ``auto`` on Hopper (github.com/NVIDIA/TensorRT-LLM/blob/585c756/docs/source/developer-guide/
    perf-overview.md, its gpt-oss options).
    Any other format, or chip: ``kv_bits``."""
    mx = is_mx_width(weight_bits)
    if mx and kv_bits < 16 and not gpu.peak_flop_per_s(4) > gpu.peak_flop_per_s(8) * (1 + 1e-9):
        return 16.0
    return kv_bits


def usable_hbm_bytes(gpu: GPU, assumptions: Assumptions) -> float:
    """HBM per GPU that weights and KV cache may fill: all of it less the preset's reserve
    fraction (§A5, Part B), or under an engine profile all of it less the engine's workspace
    (§F8)."""
    profile = assumptions.profile()
    if profile is not None:
        return gpu.hbm_capacity_bytes - profile.activation_workspace_bytes_per_gpu
    return gpu.hbm_capacity_bytes * (1.0 - assumptions.memory_reserve_fraction)


def min_gpus(weights_bytes: float, gpu: GPU, assumptions: Assumptions | None = None) -> float:
    """The fewest GPUs whose datasheet HBM holds ``weights_bytes`` (§A7: the grid's start,
    P·wb/HBM; a fraction of a GPU is allowed); with ``assumptions``, whose usable HBM
    (``usable_hbm_bytes``) does."""
    hbm = gpu.hbm_capacity_bytes if assumptions is None else usable_hbm_bytes(gpu, assumptions)
    return weights_bytes / hbm


@dataclass(frozen=True)
class Machine:
    """One GPU type at one weight precision under some assumptions (§A3, §F2): every FLOP
    and GEMM rate of the precision is computed here, once."""

    gpu: GPU
    flop_per_s: float  # sustained, at the weight precision
    peak_flop_per_s: float  # uncapped, for MFU
    #: The best-shape GEMM rate at the weight precision (peak times the measured best-shape
    #: fraction, §F2): the ideal seconds of the engine step's GEMM classes are FLOP over it.
    gemm_rate: float
    #: The best-shape rate of the GEMMs outside the routed experts (attention projections,
    #: output head, dense and shared feed-forward), at their own weights' format where a
    #: checkpoint quantises only its experts (§B5); else ``gemm_rate``. The engine step's
    #: classes use it; the roofline step's one compute rate is the experts' (a bound).
    dense_gemm_rate: float
    #: The roofline step's rate of the routed experts' FLOP (§B15): the fused MoE's measured
    #: best under ``measured_kernel_rates``, else (and in the engine step) ``flop_per_s``.
    expert_flop_per_s: float
    #: The rate of attention arithmetic: sustained in the roofline step (the GEMMs' rate in
    #: the paper, the KV cache format's under ``precision_formats``, §B5), peak in the engine
    #: step (§F3, whose efficiency applies per class).
    attention_flop_per_s: float
    #: The part's own power derating of its GEMM rate (§F2; 1: none).
    gemm_power_derating: float
    #: The part's fused-MoE plateau as a share of Hopper's (§F7; 1: Hopper's).
    moe_plateau_share: float
    hbm_bandwidth_bytes_per_s: float  # sustained
    usable_hbm_bytes: float
    node_gpus: float
    launch_s: float
    protocols: tuple[Protocol, ...]
    latency_scale: float
    #: Discrete layouts: 2-D splits into whole ranks (R divides the degree).
    integer_layouts: bool = False
    #: The protocols of the expert dispatch and combine (§B11): an engine's expert-parallel
    #: kernels (DeepEP, TensorRT-LLM's all-to-all) are its own, not the NCCL calls its profile
    #: measures, so they keep the library's table unscaled; None: ``protocols``.
    expert_protocols: tuple[Protocol, ...] | None = None
    #: Those of a prefill pass where they differ (DeepEP's normal kernels, §F7); None: the same.
    expert_prefill_protocols: tuple[Protocol, ...] | None = None
    #: The engine's GEMM kernels on the part at decode batches in the format of the weights
    #: outside the routed experts (§F2 "Weights at small batches, by format"): the fixed
    #: seconds of one kernel and the share of HBM bandwidth its weights stream at (0, 0: not
    #: measured for that engine). Read by the engine step only.
    small_batch_fixed_s: float = 0.0
    small_batch_stream_share: float = 0.0
    #: The roofline's rate for bytes a kernel called back to back re-reads from L2 (§B15;
    #: 0: the HBM bandwidth's). Read only by ``kernel_s``.
    l2_bytes_per_s: float = 0.0
    #: ``collective``'s costs over one (ranks, nodes) pair, kept: a load search chooses an
    #: instance's layout at every rate it simulates, each time over the same few groups.
    _collectives: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def build(
        cls,
        gpu: GPU,
        weight_bits: float,
        assumptions: Assumptions,
        integer_layouts: bool = False,
        attention_bits: float | None = None,
        dense_bits: float | None = None,
    ) -> Machine:
        """The machine for GEMMs at ``weight_bits`` (the weights' format, or the format of
        both operands under ``precision_formats``, §B5) and attention at ``attention_bits``
        (None: the GEMMs' rate in the roofline step, the 16-bit peak in the engine step);
        ``dense_bits``: the format of the GEMMs outside the routed experts where it differs
        (``Workload.dense_gemm_bits``; None: ``weight_bits``)."""
        peak = flop_rates(gpu, weight_bits, assumptions)[0]
        engine_attention = gpu.peak_flop_per_s(16 if attention_bits is None else attention_bits)
        native = assumptions.native_fp4
        gemm_rate = peak * best_gemm_efficiency(gpu, weight_bits, native)
        if dense_bits is None:
            dense_rate = gemm_rate
        else:
            dense_peak = flop_rates(gpu, dense_bits, assumptions)[0]
            dense_rate = dense_peak * best_gemm_efficiency(gpu, dense_bits, native)
        rates: dict[str, Any] = dict(
            peak_flop_per_s=peak,
            gemm_rate=gemm_rate,
            dense_gemm_rate=dense_rate,
            gemm_power_derating=gpu.gemm_power_derating,
            moe_plateau_share=gpu.moe_plateau_share,
            usable_hbm_bytes=usable_hbm_bytes(gpu, assumptions),
            node_gpus=float(gpu.scale_up_domain_gpus),
            latency_scale=assumptions.collective_latency_scale * gpu.collective_latency_scale,
            integer_layouts=integer_layouts,
        )
        profile = assumptions.profile()
        if profile is not None:
            rates["attention_flop_per_s"] = engine_attention
            line = gpu.small_batch_line(
                weight_bits if dense_bits is None else dense_bits, profile.family
            )
            if line is not None:
                rates["small_batch_fixed_s"], rates["small_batch_stream_share"] = line
            return cls._achievable(gpu, weight_bits, assumptions, profile, rates)
        gemm, experts, attention, bandwidth, l2 = roofline_rates(
            gpu, weight_bits, attention_bits, assumptions
        )
        protocols = protocols_for(
            assumptions.nccl_latency_model, assumptions.nvls and gpu.nvls, gpu
        )
        exchange = protocols + (one_sided(protocols),)  # the ideal expert kernels (§B11)
        if assumptions.measured_kernel_rates and gpu.kernel_ceilings is not None:
            ceilings = ceiling_protocols(gpu, gpu.kernel_ceilings)
            protocols, exchange = protocols + ceilings, exchange + ceilings
        return cls(
            gpu=gpu,
            flop_per_s=gemm,
            expert_flop_per_s=experts,
            attention_flop_per_s=attention,
            hbm_bandwidth_bytes_per_s=bandwidth,
            l2_bytes_per_s=l2,
            launch_s=gpu.kernel_launch_latency_s * assumptions.launch_latency_scale,
            protocols=protocols,
            expert_protocols=exchange,
            **rates,
        )

    @classmethod
    def _achievable(cls, gpu, weight_bits, assumptions, profile, rates) -> Machine:
        """The GPU under an engine profile (docs/model.md §F1): datasheet bandwidth (the
        profile's efficiencies apply per kernel class), the best-shape GEMM rate, the memory
        the engine leaves for weights and KV cache, no separate launch latency (the profile's
        overheads), and the measured collective curves (§F6)."""
        gemm = (
            best_gemm_efficiency(gpu, weight_bits, assumptions.native_fp4)
            * profile.gemm_efficiency_scale
        )
        flop = rates["peak_flop_per_s"] * min(gemm, 1.0)
        return cls(
            gpu=gpu,
            flop_per_s=flop,
            expert_flop_per_s=flop,
            hbm_bandwidth_bytes_per_s=gpu.hbm_bandwidth_bytes_per_s,
            launch_s=0.0,
            protocols=measured_protocols(gpu, assumptions.nvls, profile),
            **_expert_kernels(gpu, assumptions, profile),
            **rates,
        )

    def kernel_s(self, flop, nbytes, arithmetic: FlopClass = "gemm", repeated: bool = False):
        """Roofline seconds of one kernel doing ``flop`` and moving ``nbytes`` (§B15): the
        larger of its arithmetic at the rate of its class (``flop_rate``) and its bytes at the
        HBM bandwidth; ``repeated``: called back to back on the same buffers (a kernel
        benchmark's loop), a working set that fits in L2 (``l2_resident``) is read from it at
        ``l2_bytes_per_s``."""
        rate = self.flop_rate(arithmetic)
        bandwidth = self.hbm_bandwidth_bytes_per_s
        if repeated and self.l2_bytes_per_s > 0:
            bandwidth = np.where(l2_resident(self.gpu, nbytes), self.l2_bytes_per_s, bandwidth)
        return np.maximum(np.asarray(flop) / rate, np.asarray(nbytes) / bandwidth)

    def flop_rate(self, arithmetic: FlopClass) -> float:
        """The FLOP/s of one class of arithmetic: dense GEMMs (``flop_per_s``), the routed
        experts' grouped GEMMs (``expert_flop_per_s``) or attention's."""
        if arithmetic == "attention":
            return self.attention_flop_per_s
        return self.expert_flop_per_s if arithmetic == "expert" else self.flop_per_s

    def tensor_group(self, degree, two_d: bool, spanned=None):
        """(ranks R, nodes M) of a tensor-parallel group of ``degree`` GPUs (§A5).

        2-D: R = √degree ranks on √⌈degree/node⌉ nodes (degree/R parallel reductions); with
        whole ranks (discrete layouts) R is the larger side of the most nearly square split,
        never below √degree, and the nodes scale with it. 1-D: R = degree on ⌈degree/node⌉.
        ``spanned``: ``nodes_spanned(degree)`` of an array of degrees when the caller has it
        (the 2-D and 1-D groups of one degree share it; it is only read).
        """
        if np.ndim(degree):
            return self._tensor_group(degree, two_d, spanned)
        key = (type(degree), degree, bool(two_d))  # one layout's: kept, as ``collective``'s
        group = self._collectives.get(key)
        if group is None:
            group = self._collectives[key] = self._tensor_group(degree, two_d)
        return group

    def nodes_spanned(self, degree):
        """Nodes a group of ``degree`` GPUs spans, ⌈degree / node⌉, with a degree that is a
        whole number of nodes up to rounding (t / (t / 16) = 16.000000000000004) taken as
        that number, not one node more."""
        return np.ceil(np.asarray(degree) / self.node_gpus - 1e-9)

    def _tensor_group(self, degree, two_d: bool, spanned=None):
        if spanned is None:
            spanned = self.nodes_spanned(degree)
        if two_d and self.integer_layouts:
            ranks = square_split(degree)
            nodes = np.clip(
                np.sqrt(spanned) * ranks / np.sqrt(degree),
                1.0,
                np.maximum(ranks, 1.0),
            )
        elif two_d:
            ranks = np.sqrt(degree)
            nodes = np.sqrt(spanned)
        else:
            ranks = degree
            nodes = spanned
        return ranks, nodes

    def collective(
        self, ranks, nodes, kind=ALLREDUCE, inter_share=None, where=None, prefill=False
    ) -> CollectiveCost:
        """The cost structure of one kind of collective over (ranks, nodes) arrays (§A4;
        ``inter_share`` for the expert all-to-all of §B11, ``prefill`` for a prefill pass's;
        ``where``: the points whose costs matter, as ``CollectiveCost`` takes it, for arrays)."""
        protocols = self.protocols
        if kind == EXPERT_ALLTOALL and self.expert_protocols is not None:
            protocols = self.expert_protocols
            if prefill and self.expert_prefill_protocols is not None:
                protocols = self.expert_prefill_protocols
        if np.ndim(ranks) or np.ndim(nodes) or (inter_share is not None and np.ndim(inter_share)):
            return CollectiveCost(
                ranks, nodes, self.gpu, kind, protocols, self.latency_scale, inter_share, where
            )
        # one pair: the same cost every time it is asked for (its arrays are only read)
        key = (
            float(ranks),
            float(nodes),
            kind,
            None if inter_share is None else float(inter_share),
            bool(prefill) and protocols is self.expert_prefill_protocols,
        )
        cost = self._collectives.get(key)
        if cost is None:
            cost = CollectiveCost(
                float(ranks), float(nodes), self.gpu, kind, protocols, self.latency_scale,
                None if inter_share is None else float(inter_share),
            )  # fmt: skip
            self._collectives[key] = cost
        return cost


def square_split(n):
    """For whole numbers n, the smallest divisor of n that is at least sqrt(n): the larger
    side of the most nearly square R x (n / R) split (n itself for a prime)."""
    n_arr = np.asarray(np.rint(n), dtype=np.int64)
    out = np.ones(n_arr.shape)
    for value in np.unique(n_arr):
        if value <= 1:
            continue
        root = int(np.ceil(np.sqrt(value) - 1e-9))
        out[n_arr == value] = next(d for d in range(root, value + 1) if value % d == 0)
    return out if out.ndim else float(out)


def _expert_kernels(gpu: GPU, assumptions: Assumptions, profile) -> dict:
    """The expert dispatch and combine's protocols under an engine (§B11, §F7): NCCL 2.23's
    table unscaled; where the engine runs DeepEP's kernels (``deepep_exchange``, or two
    micro-batches a step, which run over them) on a part whose tables time them
    (kernels/deepep_exchange.yaml), their measured line inside one domain, the low-latency
    kernels' for decode steps and the normal kernels' for prefill passes."""
    from ..specs.kernel_tables import deepep_exchange_lines, kernel_folder

    library = protocols_for("nccl-2.23", False, gpu)
    out: dict = {"expert_protocols": library}
    folder = kernel_folder(gpu.name) if runs_deepep(profile, assumptions) else None
    lines = deepep_exchange_lines().get(folder, {}) if folder else {}
    if "low_latency" in lines:
        out["expert_protocols"] = exchange_protocols(library, *lines["low_latency"])
    if "normal" in lines:
        out["expert_prefill_protocols"] = exchange_protocols(library, *lines["normal"])
    return out
