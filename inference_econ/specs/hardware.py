"""GPU specs: datasheet figures with units in their names, loaded from ``hardware/*.yaml``.

A spec can be derived from another one with overrides (``derive``), in Python or in YAML with
``derive_from:`` plus the fields to change and ``scale:`` factors. The paper's hardware figures
(``hardware/paper/``) are expressed that way on top of the datasheet files.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, get_args

from ..columns import SECONDS_PER_HOUR
from ..errors import SpecError, did_you_mean, short
from . import catalog
from .bases import DEFAULT_PRICE_BASIS, LISTED_BASES
from .fitted import inherited_fits
from .inputs import record
from .measured_rates import (
    MIN_FRACTION,
    KernelCeilings,
    fraction_table,
    kernel_ceilings,
    small_batch_table,
)
from .schema import Reader, check_number
from .yamlfile import load_yaml

#: How the GPUs of one scale-up domain are wired, which decides the collective model
#: (docs/model.md §C1): ``switch`` (NVSwitch, every GPU one hop from every other; NCCL, NVLS
#: where the spec allows it), ``full_mesh`` (one point-to-point link per GPU pair, AMD xGMI;
#: RCCL), ``pcie`` (cards on PCIe switches, optionally NVLink-bridged in small groups; NCCL
#: over PCI) and ``torus`` (TPU ICI, 2-D or 3-D; ring per dimension).
#: How a scale-up domain is wired (docs/model.md §C1).
Interconnect = Literal["switch", "full_mesh", "pcie", "torus"]
INTERCONNECTS: tuple[Interconnect, ...] = get_args(Interconnect)

#: Share of the dynamic power range (TDP - idle) a GPU draws while its HBM streams at the
#: sustained bandwidth and its tensor cores rest (docs/model.md §G2): H200 decode steps, which
#: saturate HBM, draw at most 300 W of the board's 700 W (Ma et al., "The Illusion of Power
#: Capping in LLM Decode", arXiv 2605.11999, 2026) over an 80 W idle (Serial Alice GPU energy
#: benchmark, H200 SXM, 2026): (300 - 80) / (700 - 80) = 0.35.
MEMORY_ACTIVITY = 0.35


@dataclass(frozen=True)
class Price:
    """One GPU-hour price on one basis, with when and where it was read."""

    basis: str
    usd_per_hour: float
    date: str = ""
    source: str = ""


@dataclass(frozen=True)
class Power:
    """What one accelerator draws (docs/model.md §G2): the board between ``idle_w`` (clocks up,
    nothing running) and ``board_w`` (its power limit, TDP), and the rest of its server (CPUs,
    memory, NICs, switches, fans) per GPU, ``host_w``, drawn whatever the GPU does.
    ``memory_activity`` is the share of the board's dynamic range that streaming HBM at the
    sustained bandwidth draws (tensor cores at the sustained rate draw all of it)."""

    board_w: float
    idle_w: float
    host_w: float = 0.0
    memory_activity: float = MEMORY_ACTIVITY

    @property
    def it_max_w(self) -> float:
        """IT power of one GPU and its share of the server at full load (watts)."""
        return self.board_w + self.host_w


@dataclass(frozen=True)
class GPU:
    """One accelerator and the interconnect around it (docs/model.md §A3)."""

    name: str
    #: Dense tensor-core peak per weight precision, as ``((bits, flop_per_s), ...)``.
    flop_per_s: tuple[tuple[int, float], ...]
    hbm_bandwidth_bytes_per_s: float
    hbm_capacity_bytes: float
    #: Scale-up bandwidth per GPU, both directions added, as datasheets quote it: NVLink on
    #: NVIDIA parts; for a full mesh or a torus all its links together (links x per link);
    #: for PCIe cards the NVLink bridge (0 without one).
    nvlink_bandwidth_bytes_per_s: float
    #: Scale-out (InfiniBand/Ethernet) bandwidth per GPU, one direction.
    nic_bandwidth_bytes_per_s: float
    #: GPUs in one NVLink domain ("node": 8 for HGX, 72 for GB200 NVL72).
    scale_up_domain_gpus: int
    price_usd_per_hour: float
    #: Fractions of peak that can be sustained (paper §4: 70 % FLOP/s, 75 % HBM on H100).
    sustained_flop_fraction: float = 1.0
    sustained_hbm_bandwidth_fraction: float = 1.0
    #: Measured read bandwidth of a streaming kernel (STREAM's dot: two arrays read, nothing
    #: written) as a fraction of ``hbm_bandwidth_bytes_per_s``; 0: not measured. Read by the
    #: ``measured_hbm_bandwidth`` refinement (docs/model.md §B14).
    stream_bandwidth_fraction: float = 0.0
    kernel_launch_latency_s: float = 4e-6
    #: NVLink SHARP (in-switch reductions): lower all-reduce latency and traffic (Part B).
    nvls: bool = False
    #: Multiplier on NCCL latencies for this system (1: the tuning model; fitted by calibration).
    collective_latency_scale: float = 1.0
    #: How the scale-up domain is wired (``INTERCONNECTS``; docs/model.md §C1).
    interconnect: Interconnect = "switch"
    #: Point-to-point links per GPU (full mesh, torus); their bandwidths add up to
    #: ``nvlink_bandwidth_bytes_per_s``.
    links_per_gpu: int = 0
    #: Torus: chips along each dimension of the largest slice (2 or 3 numbers).
    torus_dimensions: tuple[int, ...] = ()
    #: Torus: whether every dimension closes into a ring (wrap-around links).
    torus_wraparound: bool = True
    #: Torus: latency of one hop of a ring step.
    link_latency_s: float = 0.0
    #: PCIe link per GPU, both directions added (the GPU-to-GPU path of PCIe cards).
    pcie_bandwidth_bytes_per_s: float = 0.0
    #: PCIe cards: GPUs joined by NVLink bridges (1: none; 2: pairs; 4: four-way bridges).
    nvlink_bridge_gpus: int = 1
    #: The host's memory per GPU of its server (DRAM or a Grace CPU's LPDDR5X), a tier the
    #: KV cache can be offloaded to (docs/model.md §E13; 0: not stated).
    host_memory_bytes_per_gpu: float = 0.0
    #: Host-to-GPU bandwidth of one GPU, one direction: PCIe, or NVLink-C2C on Grace parts
    #: (the KV cache's way back from host memory, §E13; 0: not stated).
    host_link_bytes_per_s: float = 0.0
    #: GPUs of one server, the unit a launch runs one process tree on: a compute tray of 4 on
    #: the NVL72 racks, whose NVLink domain spans 18 of them (0: the smaller of
    #: ``scale_up_domain_gpus`` and 8, an HGX board or an 8-card server).
    host_gpus: int = 0
    #: Measured best-shape dense GEMM throughput as a fraction of ``flop_per_s``, per weight
    #: precision, as ``((bits, fraction), ...)`` (micro-benchmarks such as MAMF). Read only by
    #: the ``achievable`` preset (docs/model.md §F2); empty: not measured.
    gemm_efficiency: tuple[tuple[int, float], ...] = ()
    #: The share of its datasheet tensor rate a power-limited part (a PCIe card at 300-600 W)
    #: sustains in long GEMM-bound runs, measured on that part's own results (docs/model.md
    #: §F2; 1: no derating, every part without its own measurement). Read only by the
    #: ``achievable`` preset.
    gemm_power_derating: float = 1.0
    #: A GEMM kernel's time at decode batches (<= 64 tokens) by engine and weight format, as
    #: ``((engine, bits, fixed_s, stream_share), ...)``: a line t = fixed + weight bytes /
    #: (share x HBM bandwidth) through that engine's own kernels timed at such shapes
    #: (docs/model.md §F2 "Weights at small batches, by format"): the engine (an engine
    #: profile's family: trtllm, vllm, sglang) picks its kernels, so the line is its own;
    #: empty: not measured. Read only by the ``achievable`` preset.
    small_batch_gemm: tuple[tuple[str, int, float, float], ...] = ()
    #: The fused MoE's plateau on this part (its grouped expert GEMMs' useful rate over the
    #: part's best-shape dense rate at the same format) as a share of Hopper's (H100 and
    #: H200), measured on TensorRT-LLM's kernel tables (docs/model.md §F7; 1: not measured,
    #: Hopper's). Read only by the ``achievable`` preset: the engine's fitted MoE term is
    #: Hopper's, and a part whose fused MoE reaches less of its dense rate scales it.
    moe_plateau_share: float = 1.0
    #: The last-level (L2) cache, bytes (0: not given); a working set this small stays in it
    #: across back-to-back calls of one kernel (docs/model.md §B15).
    l2_cache_bytes: float = 0.0
    #: The best each kernel class reached on this part in the measured kernel tables
    #: (docs/model.md §B15); None: no tables. Read only by ``measured_kernel_rates``.
    kernel_ceilings: KernelCeilings | None = None
    #: The basis of ``price_usd_per_hour`` (``PRICE_BASES``) and the date it was read.
    price_basis: str = DEFAULT_PRICE_BASIS
    price_date: str = ""
    #: The same GPU-hour on the file's other bases (docs/model.md §G1).
    prices: tuple[Price, ...] = ()
    #: Board and server power (docs/model.md §G2); None: the file gives none.
    power: Power | None = None
    description: str = ""
    aliases: tuple[str, ...] = ()
    source_file: str = ""
    #: Fitted figures (``fitted.FITTED_FIELDS``) a derived spec keeps from its base, as
    #: ``((field, part measured on), ...)``; empty for a part with its own file.
    inherited_fits: tuple[tuple[str, str], ...] = ()
    #: The parts a derived spec comes from, its base first (empty for a part with its own
    #: file): tables measured on a die (the fused MoE's, docs/model.md §F7) are its base's.
    derived_from: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """A GPU built in Python is checked like one read from YAML (finite, in range)."""
        source = self.source_file or self.name or "GPU"
        for key, bounds in _NUMERIC.items():
            check_number(getattr(self, key), source, key, **bounds)
        if _flop_table(self.flop_per_s, source) != tuple(sorted(self.flop_per_s)):
            object.__setattr__(self, "flop_per_s", _flop_table(self.flop_per_s, source))

    # --- derived figures -------------------------------------------------------------------
    def peak_flop_per_s(self, weight_bits: float, native_fp4: bool = True) -> float:
        """Dense peak for matmuls with ``weight_bits`` weights.

        A precision the chip lacks runs at the next wider one it has (4-bit weights on Hopper
        run at the FP8 rate, paper §4.2). ``native_fp4=False`` applies that rule even on chips
        with FP4 tensor cores, as the paper's model does.
        """
        return self.flop_entry(weight_bits, native_fp4)[1]

    def flop_entry(self, weight_bits: float, native_fp4: bool = True) -> tuple[int, float]:
        """(bits, dense peak) of the ``flop_per_s`` entry ``peak_flop_per_s`` reads."""
        wanted = max(float(weight_bits), 8.0) if not native_fp4 else float(weight_bits)
        for bits, rate in sorted(self.flop_per_s):
            if bits >= wanted - 1e-9:
                return bits, rate
        widest = max(b for b, _ in self.flop_per_s)
        raise SpecError(
            self.source_file or self.name,
            "flop_per_s",
            f"no FLOP/s figure for {weight_bits:g}-bit weights (widest listed: {widest}-bit)",
            f"add 'flop_per_s: {{{int(weight_bits)}: ...}}'",
        )

    def best_gemm_efficiency(self, weight_bits: float) -> float | None:
        """Measured best-shape GEMM fraction of peak for ``weight_bits`` weights: the entry of
        that precision, else of the next wider one listed (4-bit without a figure takes the
        8-bit one), else of the widest; None when the part has no measurement (§F2)."""
        if not self.gemm_efficiency:
            return None
        for bits, fraction in sorted(self.gemm_efficiency):
            if bits >= float(weight_bits) - 1e-9:
                return fraction
        return max(self.gemm_efficiency)[1]

    def small_batch_line(self, weight_bits: float, engine: str) -> tuple[float, float] | None:
        """(fixed seconds per GEMM kernel, weight stream share of HBM bandwidth) of ``engine``'s
        kernels on this part at decode batches for ``weight_bits`` weights (§F2): the entry of
        that width (4.25-bit NVFP4 and 4.5-bit MXFP4 take the 4-bit one); None where the part
        has none for that engine."""
        width = math.floor(float(weight_bits) + 1e-9)
        for name, bits, fixed, share in self.small_batch_gemm:
            if name == engine and bits == width:
                return fixed, share
        return None

    @property
    def sustained_hbm_bandwidth_bytes_per_s(self) -> float:
        return self.hbm_bandwidth_bytes_per_s * self.sustained_hbm_bandwidth_fraction

    @property
    def intra_node_allreduce_bandwidth_bytes_per_s(self) -> float:
        """All-reduce bus bandwidth over the whole scale-up domain: its one-way bandwidth / 2
        (§A3; NVLink for a switch, all links for a mesh or torus, the PCIe link for PCIe
        cards whose domain is larger than an NVLink bridge group, §C1)."""
        if self.interconnect == "pcie" and self.scale_up_domain_gpus > self.nvlink_bridge_gpus:
            return self.pcie_bandwidth_bytes_per_s / 4.0
        return self.nvlink_bandwidth_bytes_per_s / 4.0

    @property
    def link_bandwidth_bytes_per_s(self) -> float:
        """One point-to-point link (full mesh, torus), both directions added."""
        return self.nvlink_bandwidth_bytes_per_s / self.links_per_gpu if self.links_per_gpu else 0.0

    @property
    def inter_node_allreduce_bandwidth_bytes_per_s(self) -> float:
        """All-reduce bus bandwidth across domains: NIC / 2 (§A3)."""
        return self.nic_bandwidth_bytes_per_s / 2.0

    @property
    def gpus_per_host(self) -> int:
        """GPUs of one server (``host_gpus``, or the smaller of the NVLink domain and 8)."""
        return int(self.host_gpus) or min(int(self.scale_up_domain_gpus), 8)

    @property
    def price_usd_per_s(self) -> float:
        return self.price_usd_per_hour / SECONDS_PER_HOUR

    @property
    def price(self) -> Price:
        """The price in use, with its basis and date."""
        return Price(self.price_basis, self.price_usd_per_hour, self.price_date)

    def price_on(self, basis: str) -> Price | None:
        """This GPU's price on ``basis`` (None: the file lists none)."""
        if basis == self.price_basis:
            return self.price
        return next((p for p in self.prices if p.basis == basis), None)

    @property
    def listed_bases(self) -> tuple[str, ...]:
        """The bases this GPU has a price on, the one in use first."""
        return (self.price_basis, *(p.basis for p in self.prices if p.basis != self.price_basis))

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["prices"] = {p.basis: p.usd_per_hour for p in self.prices}  # USD per hour
        power = out.pop("power")
        for key, value in (power or {}).items():
            out[f"power_{key}"] = value
        out["flop_per_s"] = {bits: rate for bits, rate in self.flop_per_s}
        out["aliases"] = list(self.aliases)
        out["host_gpus"] = self.gpus_per_host  # the default filled in
        out["torus_dimensions"] = list(self.torus_dimensions)
        out["gemm_efficiency"] = {bits: f for bits, f in self.gemm_efficiency}
        lines: dict[str, dict] = {}
        for engine, bits, fixed, share in self.small_batch_gemm:
            lines.setdefault(engine, {})[bits] = {"fixed_us": fixed * 1e6, "stream_share": share}
        out["small_batch_gemm"] = lines
        out["kernel_ceilings"] = self.kernel_ceilings.to_dict() if self.kernel_ceilings else {}
        fits = ", ".join(f"{name} (from {part})" for name, part in self.inherited_fits)
        out["inherited_fits"] = fits or "none"  # fitted figures kept from a base spec
        out["derived_from"] = ", ".join(self.derived_from) or "none"
        return out


def facts_by_column(gpus: Iterable[GPU]) -> dict[str, dict[str, Any]]:
    """Each distinct GPU's ``to_dict()``, keyed by the column a table of them shows it under:
    its name, or, for a GPU also used on another price basis (an ``owned`` curve beside a
    ``paper`` one), its name and basis, so every price the table shows is one a figure used."""
    out: dict[str, dict[str, Any]] = {}
    for gpu in gpus:
        facts, column = gpu.to_dict(), gpu.name
        if column in out and out[column] != facts:
            column = f"{gpu.name} ({gpu.price_basis}, {gpu.price_usd_per_hour:.4g} USD/hour)"
        out.setdefault(column, facts)
    return out


#: Bounds of the numeric fields: positive, finite and below figures no part comes near, so
#: no product or quotient of them overflows (docs/errors.md).
_NUMERIC = {
    "hbm_bandwidth_bytes_per_s": dict(minimum=1e6, maximum=1e18, unit="bytes/s"),
    "hbm_capacity_bytes": dict(minimum=1e6, maximum=1e18, unit="bytes"),
    "nvlink_bandwidth_bytes_per_s": dict(minimum=0, maximum=1e18, unit="bytes/s"),
    "nic_bandwidth_bytes_per_s": dict(minimum=1e6, maximum=1e18, unit="bytes/s"),
    "scale_up_domain_gpus": dict(minimum=1, maximum=2**20, integer=True, unit="GPUs"),
    "links_per_gpu": dict(minimum=0, maximum=1024, integer=True, unit="links"),  # 0: not given
    "link_latency_s": dict(minimum=0, maximum=1, unit="seconds"),
    "pcie_bandwidth_bytes_per_s": dict(minimum=0, maximum=1e18, unit="bytes/s"),
    "nvlink_bridge_gpus": dict(minimum=1, maximum=2**20, integer=True, unit="GPUs"),
    "host_memory_bytes_per_gpu": dict(minimum=0, maximum=1e18, unit="bytes"),  # 0: not stated
    "host_link_bytes_per_s": dict(minimum=0, maximum=1e18, unit="bytes/s"),  # 0: not stated
    "host_gpus": dict(minimum=0, maximum=2**20, integer=True, unit="GPUs"),  # 0: the default
    "price_usd_per_hour": dict(minimum=1e-6, maximum=1e9, unit="USD/hour"),
    # fractions of a datasheet figure: at least 5 %, the floor of an engine profile's
    # efficiencies (specs/engine.py), so no cost or latency is scaled towards infinity
    "sustained_flop_fraction": dict(minimum=MIN_FRACTION, maximum=1),
    "sustained_hbm_bandwidth_fraction": dict(minimum=MIN_FRACTION, maximum=1),
    "stream_bandwidth_fraction": dict(minimum=0, maximum=1),  # 0: not measured
    "kernel_launch_latency_s": dict(minimum=0, maximum=1, unit="seconds"),
    "collective_latency_scale": dict(minimum=0, maximum=1e6),
    "gemm_power_derating": dict(minimum=0.05, maximum=1),
    "moe_plateau_share": dict(minimum=0.05, maximum=4),
    "l2_cache_bytes": dict(minimum=0, maximum=1e15, unit="bytes"),  # 0: not given
}
#: Fields ``scale:`` may multiply (whole counts such as GPUs or links cannot be scaled).
_SCALABLE = {k for k, v in _NUMERIC.items() if not v.get("integer")}
_FLOP = dict(minimum=1e6, maximum=1e21, unit="FLOP/s")
_BITS = dict(minimum=1, maximum=64, integer=True, unit="bits")
#: Longest chain of ``derive_from`` files (catalog.deriving checks it).
MAX_DERIVE_DEPTH = catalog.MAX_DERIVE_DEPTH
_REQUIRED = (
    "flop_per_s",
    "hbm_bandwidth_bytes_per_s",
    "hbm_capacity_bytes",
    "nic_bandwidth_bytes_per_s",
    "scale_up_domain_gpus",
    "price_usd_per_hour",
)


def _flop_table(value: Any, source: str) -> tuple[tuple[int, float], ...]:
    if isinstance(value, (tuple, list)) and all(
        isinstance(x, (tuple, list)) and len(x) == 2 for x in value
    ):
        value = dict(value)  # a GPU's own table, ((bits, rate), ...)
    if not isinstance(value, Mapping) or not value:
        raise SpecError(
            source,
            "flop_per_s",
            f"expected a mapping from weight bits to FLOP/s, got {short(value)}",
            "e.g. 'flop_per_s: {16: 9.89e14, 8: 1.979e15}'",
        )
    table = {}
    for bits, rate in value.items():
        b = check_number(bits, source, "flop_per_s", **_BITS)
        if b in table:
            raise SpecError(source, f"flop_per_s.{b}", "is given twice", "give each precision once")
        table[b] = float(check_number(rate, source, f"flop_per_s.{b}", **_FLOP))
    return tuple(sorted(table.items()))


def _check_known(values: Mapping[str, Any], source: str) -> None:
    """Every field is a GPU field: a misspelt one is named with a did-you-mean (before any
    "is missing" for the field it was meant to be). ``link_bandwidth_bytes_per_s`` (one link)
    is accepted as input too."""
    known = {f.name for f in dataclasses.fields(GPU)} - {"inherited_fits", "derived_from"} | {
        "derive_from",
        "scale",
        "link_bandwidth_bytes_per_s",
    }
    for key in values:
        if key not in known:
            hint = did_you_mean(str(key), sorted(known))
            raise SpecError(
                source,
                str(key),
                "unknown field",
                hint or f"known fields: {', '.join(sorted(known))}",
            )


def _validated(values: Mapping[str, Any], source: str, base: GPU | None = None) -> dict[str, Any]:
    """Check and normalise a full or partial set of GPU fields.

    ``link_bandwidth_bytes_per_s`` (one link, as datasheets of meshes and tori quote it) is
    accepted as input and turned into the total, ``links_per_gpu`` x per link.
    """
    _check_known(values, source)
    out: dict[str, Any] = {}
    reader = Reader(values, source)
    for key, value in values.items():
        if key == "flop_per_s":
            out[key] = _flop_table(reader.raw(key), source)
        elif key == "gemm_efficiency":
            out[key] = fraction_table(value, source)
        elif key == "small_batch_gemm":
            out[key] = small_batch_table(value, source)
        elif key == "kernel_ceilings":
            out[key] = kernel_ceilings(value, source)
        elif key in _NUMERIC:
            out[key] = reader.number(key, **_NUMERIC[key])
        elif key in ("nvls", "torus_wraparound"):
            out[key] = reader.boolean(key)
        elif key == "interconnect":
            out[key] = reader.string(key, choices=INTERCONNECTS)
        elif key == "torus_dimensions":
            out[key] = _torus_dimensions(value, source)
        elif key == "aliases":
            out[key] = reader.text_list(key)
        elif key in ("name", "description", "source_file"):
            out[key] = reader.string(key)
        elif key == "price_basis":
            out[key] = reader.string(key, choices=LISTED_BASES)
        elif key == "price_date":
            out[key] = _date(value, source, key)
        elif key == "prices":
            out[key] = _prices(value, source)
        elif key == "power":
            out[key] = _power(value, source)
    if "link_bandwidth_bytes_per_s" in values:
        per_link = check_number(
            values["link_bandwidth_bytes_per_s"],
            source,
            "link_bandwidth_bytes_per_s",
            minimum=0,
            exclusive_minimum=True,
            unit="bytes/s",
        )
        links = out.get("links_per_gpu", base.links_per_gpu if base is not None else 0)
        if not links:
            raise SpecError(
                source,
                "link_bandwidth_bytes_per_s",
                "needs links_per_gpu",
                "give the number of links per GPU; the total is links x per-link bandwidth",
            )
        total = links * per_link
        given = out.get("nvlink_bandwidth_bytes_per_s")
        if given is not None and abs(given - total) > 1e-6 * total:
            raise SpecError(
                source,
                "nvlink_bandwidth_bytes_per_s",
                f"is {given:g} but links_per_gpu x link_bandwidth_bytes_per_s is {total:g}",
                "give one of them (the total is derived from the links)",
            )
        out["nvlink_bandwidth_bytes_per_s"] = float(total)
    return out


def _date(value: Any, source: str, field: str) -> str:
    """A date as YYYY, YYYY-MM or YYYY-MM-DD (YAML reads the last as a date)."""
    import datetime
    import re

    if isinstance(value, datetime.date):
        return value.isoformat()[:10]
    if isinstance(value, int) and not isinstance(value, bool) and 1900 <= value <= 2200:
        return str(value)  # a year
    if isinstance(value, str) and re.fullmatch(r"\d{4}(-\d{2}(-\d{2})?)?", value.strip()):
        return value.strip()
    raise SpecError(
        source, field, f"expected a date, got {short(value)}", "write YYYY, YYYY-MM or YYYY-MM-DD"
    )


def _prices(value: Any, source: str) -> tuple[Price, ...]:
    """``prices``: basis -> {usd_per_hour, date, source} (docs/model.md §G1)."""
    if isinstance(value, (tuple, list)) and all(isinstance(p, Price) for p in value):
        return tuple(value)  # a GPU's own prices (derive in Python)
    if not isinstance(value, Mapping) or not value:
        raise SpecError(
            source,
            "prices",
            f"expected a mapping from price basis to a price, got {short(value)}",
            "e.g. 'prices: {on-demand: {usd_per_hour: 3.99, date: 2026-01, source: ...}}'",
        )
    out = []
    for basis, entry in value.items():
        field = f"prices.{basis}"
        if basis not in LISTED_BASES:
            hint = did_you_mean(str(basis), LISTED_BASES)
            raise SpecError(
                source,
                field,
                "unknown price basis"
                + (" (owned prices are computed from a cost file)" if basis == "owned" else ""),
                f"{hint + ' ' if hint else ''}choose one of {', '.join(LISTED_BASES)}",
            )
        reader = Reader(entry, source, field)
        price = reader.number("usd_per_hour", **_NUMERIC["price_usd_per_hour"])
        date = _date(reader.raw("date"), source, f"{field}.date")
        cite = reader.string("source")
        reader.finish()
        out.append(Price(str(basis), float(price), date, cite))
    return tuple(out)


def _power(value: Any, source: str) -> Power:
    """``power``: board (TDP), idle and host watts per GPU (docs/model.md §G2)."""
    if isinstance(value, Power):
        value = dataclasses.asdict(value)
    reader = Reader(value, source, "power")
    watts = dict(minimum=0, exclusive_minimum=True, maximum=1e6, unit="W")
    board = reader.number("board_w", **watts)
    idle = reader.number("idle_w", minimum=0, maximum=1e6, unit="W")
    host = reader.number("host_w", 0.0, minimum=0, maximum=1e6, unit="W")
    activity = reader.number(
        "memory_activity", MEMORY_ACTIVITY, minimum=0, exclusive_minimum=True, maximum=1
    )
    reader.finish()
    if idle >= board:
        raise SpecError(
            source,
            "power.idle_w",
            f"is {idle:g} W, not below the board power {board:g} W",
            "idle_w is the draw with nothing running, below board_w (TDP)",
        )
    return Power(float(board), float(idle), float(host), float(activity))


def priced(gpu: GPU, basis: str, owned: Price | None = None) -> GPU:
    """``gpu`` priced on ``basis`` (``PRICE_BASES``): its listed price there, or ``owned``
    (computed by ``model.economics.owned_price`` from a cost file) for ``owned``. A GPU with
    no price on the basis is refused, naming the bases it has (docs/model.md §G1)."""
    if basis == gpu.price_basis and owned is None:
        return gpu
    price = owned if basis == "owned" else gpu.price_on(basis)
    if price is None:
        raise SpecError(
            catalog.display_path(gpu.source_file) or gpu.name,
            f"prices.{basis}",
            f"{gpu.name} has no {basis} price (it lists {', '.join(gpu.listed_bases)})",
            f"choose --price-basis {' or '.join(gpu.listed_bases)}, or add "
            f"'prices: {{{basis}: {{usd_per_hour: ..., date: ..., source: ...}}}}' to its file",
        )
    others = tuple(p for p in (gpu.price, *gpu.prices) if p.basis != basis)
    return dataclasses.replace(
        gpu,
        price_usd_per_hour=price.usd_per_hour,
        price_basis=basis,
        price_date=price.date,
        prices=others,
    )


def _torus_dimensions(value: Any, source: str) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)) or len(value) not in (2, 3):
        raise SpecError(
            source,
            "torus_dimensions",
            f"expected 2 or 3 chip counts, got {short(value)}",
            "e.g. 'torus_dimensions: [16, 16]' for a 2-D torus",
        )
    return tuple(
        check_number(v, source, "torus_dimensions", minimum=1, integer=True, unit="chips")
        for v in value
    )


def check_interconnect(gpu: GPU) -> GPU:
    """The interconnect fields agree with each other (docs/model.md §C1); returns ``gpu``."""
    src, kind = gpu.source_file or gpu.name, gpu.interconnect

    def bad(field, problem, fix):
        raise SpecError(src, field, problem, fix)

    if gpu.nvls and kind != "switch":
        bad("nvls", f"is true for a {kind} interconnect", "NVLS needs an NVLink switch")
    if kind != "pcie" and gpu.nvlink_bridge_gpus != 1:
        bad(
            "nvlink_bridge_gpus",
            f"is set for a {kind} interconnect",
            "only PCIe cards have bridges",
        )
    if kind != "torus" and gpu.torus_dimensions:
        bad("torus_dimensions", f"is set for a {kind} interconnect", "set interconnect: torus")
    if kind in ("switch", "full_mesh", "torus") and gpu.nvlink_bandwidth_bytes_per_s <= 0:
        bad(
            "nvlink_bandwidth_bytes_per_s",
            f"is missing or 0 for a {kind} interconnect",
            "give the scale-up bandwidth (or links_per_gpu and link_bandwidth_bytes_per_s)",
        )
    domain = gpu.scale_up_domain_gpus
    if kind == "full_mesh":
        if domain < 2:
            bad("scale_up_domain_gpus", "is 1 for a full mesh", "a mesh joins at least 2 GPUs")
        if gpu.links_per_gpu and gpu.links_per_gpu % (domain - 1):
            bad(
                "links_per_gpu",
                f"{gpu.links_per_gpu} links cannot join each of {domain - 1} peers equally",
                f"a full mesh of {domain} GPUs has a multiple of {domain - 1} links per GPU",
            )
    if kind == "torus":
        dims = gpu.torus_dimensions
        if not dims:
            bad("torus_dimensions", "is missing", "give the slice shape, e.g. [16, 16]")
        if math.prod(dims) != domain:
            bad(
                "torus_dimensions",
                f"{' x '.join(map(str, dims))} = {math.prod(dims)} chips, "
                f"not scale_up_domain_gpus = {domain}",
                "the scale-up domain of a torus is its largest slice",
            )
        if gpu.links_per_gpu not in (0, 2 * len(dims)):
            bad(
                "links_per_gpu",
                f"is {gpu.links_per_gpu}",
                f"a {len(dims)}-D torus has {2 * len(dims)} links per chip",
            )
        if gpu.link_latency_s <= 0:
            bad("link_latency_s", "is missing or 0", "give the latency of one ICI hop")
    if kind == "pcie":
        if gpu.pcie_bandwidth_bytes_per_s <= 0:
            bad(
                "pcie_bandwidth_bytes_per_s",
                "is missing or 0 for a PCIe interconnect",
                "give the card's PCIe bandwidth, both directions (Gen5 x16: 128e9)",
            )
        if gpu.nvlink_bridge_gpus > 1 and gpu.nvlink_bandwidth_bytes_per_s <= 0:
            bad(
                "nvlink_bandwidth_bytes_per_s",
                "is 0 but nvlink_bridge_gpus > 1",
                "give the NVLink bridge bandwidth per GPU",
            )
        if gpu.nvlink_bridge_gpus > domain:
            bad(
                "nvlink_bridge_gpus",
                f"{gpu.nvlink_bridge_gpus} > scale_up_domain_gpus = {domain}",
                "a bridge group lies inside one server",
            )
    if kind == "torus" and not gpu.links_per_gpu:
        gpu = dataclasses.replace(gpu, links_per_gpu=2 * len(gpu.torus_dimensions))
    return gpu


def derive(
    base: GPU, name: str | None = None, scale: Mapping[str, float] | None = None, **overrides
) -> GPU:
    """A new spec from ``base``: ``overrides`` replace fields, ``scale`` multiplies them.

    >>> import inference_econ as ie
    >>> h100 = ie.load_hardware("H100-SXM")
    >>> fast = ie.derive(h100, name="H100 2x HBM", scale={"hbm_bandwidth_bytes_per_s": 2})
    >>> fast.hbm_bandwidth_bytes_per_s / h100.hbm_bandwidth_bytes_per_s
    2.0

    ``base`` may also be a GPU's name or file, as everywhere else.
    """
    if isinstance(base, (str, os.PathLike)):
        base = load_hardware(base)
    elif not isinstance(base, GPU):
        raise SpecError(
            "argument", "base", f"expected a GPU or its name, got {short(base)}", "e.g. 'H100'"
        )
    source = overrides.pop("source_file", None) or f"derived from {base.name}"
    if name is not None and not isinstance(name, str):
        raise SpecError(source, "name", f"expected text, got {short(name)}", "write a string")
    if scale is not None and not isinstance(scale, Mapping):
        raise SpecError(
            source,
            "scale",
            f"expected a mapping of field: factor, got {short(scale)}",
            "e.g. scale={'hbm_bandwidth_bytes_per_s': 2}",
        )
    values = _validated(overrides, source, base)
    if scale:
        for key, factor in scale.items():
            field = f"scale.{key}"
            factor = check_number(factor, source, field, minimum=0, exclusive_minimum=True)
            if key not in _NUMERIC and key != "flop_per_s":
                hint = did_you_mean(str(key), [*_NUMERIC, "flop_per_s"])
                raise SpecError(
                    source,
                    field,
                    "cannot be scaled",
                    hint or "scale a numeric field such as hbm_bandwidth_bytes_per_s",
                )
            if key not in _SCALABLE and key != "flop_per_s":
                raise SpecError(
                    source,
                    field,
                    "cannot be scaled",
                    "scale a numeric field such as hbm_bandwidth_bytes_per_s",
                )
            try:
                if key == "flop_per_s":
                    current = values.get(key, base.flop_per_s)
                    values[key] = _flop_table({b: r * factor for b, r in current}, source)
                else:
                    current = values.get(key, getattr(base, key))
                    values[key] = _validated({key: current * factor}, source)[key]
            except SpecError as exc:  # named by the factor that takes it out of bounds
                raise SpecError(
                    source, field, f"scaled by {short(factor)}, {exc.field} {exc.problem}", exc.fix
                ) from None
    values["inherited_fits"] = inherited_fits(base, values)
    values["derived_from"] = (base.name, *base.derived_from)
    values["name"] = name or values.get("name") or f"{base.name} (modified)"
    values.setdefault("aliases", ())
    values["source_file"] = source
    return check_interconnect(dataclasses.replace(base, **values))


def gpu_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> GPU:
    """Build a GPU from a parsed YAML mapping (``derive_from`` resolved by name)."""
    data = dict(data)
    _check_known(data, source)
    base_name = data.pop("derive_from", None)
    scale = data.pop("scale", None)
    if scale is not None and not isinstance(scale, Mapping):
        raise SpecError(
            source, "scale", f"expected a mapping of field: factor, got {short(scale)}", ""
        )
    if base_name is not None:
        if not isinstance(base_name, str):
            raise SpecError(
                source, "derive_from", f"expected a GPU name, got {short(base_name)}", ""
            )
        try:
            base = load_hardware(base_name)
        except catalog.DeriveChainError:
            raise  # names the files of the chain itself
        except SpecError as exc:
            raise exc.inside(source, "derive_from") from None
        data["source_file"] = source
        name = Reader(data, source).string("name", None)
        data.pop("name", None)
        return derive(base, name=name, scale=scale, **data)
    if scale:
        raise SpecError(
            source, "scale", "needs 'derive_from'", "scale factors apply to a base spec"
        )
    if "name" not in data:
        raise SpecError(source, "name", "is missing", "give the GPU a name")
    for key in _REQUIRED:
        if key not in data or data[key] is None:
            raise SpecError(
                source,
                key,
                "is missing",
                "this field is required (docs/user-guide.md, 'Adding a GPU')",
            )
    if (
        data.get("interconnect", "switch") == "switch"
        and "nvlink_bandwidth_bytes_per_s" not in data
        and "link_bandwidth_bytes_per_s" not in data
    ):
        raise SpecError(
            source,
            "nvlink_bandwidth_bytes_per_s",
            "is missing",
            "this field is required for a switch interconnect (docs/user-guide.md, 'Adding a GPU')",
        )
    values = _validated(data, source)
    values.setdefault("nvlink_bandwidth_bytes_per_s", 0.0)
    values["source_file"] = source
    return check_interconnect(GPU(**values))


@lru_cache(maxsize=256)
def _load_path(path: Path) -> GPU:
    return gpu_from_dict(load_yaml(path), str(path))


def load_hardware(name_or_path: str | Path) -> GPU:
    """Load a GPU spec by name, alias (case-insensitive) or path to a YAML file."""
    if isinstance(name_or_path, GPU):
        return name_or_path
    path = catalog.resolved(catalog.find("hardware", name_or_path))
    record(path)
    with catalog.deriving("hardware", path):  # a cycle or too long a chain: one line
        return _load_path(path)
