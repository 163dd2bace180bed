"""GPU specs: datasheet figures with units in their names, loaded from ``hardware/*.yaml``.

A spec can be derived from another one with overrides (``derive``), in Python or in YAML with
``derive_from:`` plus the fields to change and ``scale:`` factors. The paper's hardware figures
(``hardware/paper/``) are expressed that way on top of the datasheet files.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import SpecError, did_you_mean, short
from . import catalog
from .inputs import record
from .schema import Reader, check_number
from .yamlfile import load_yaml


@dataclass(frozen=True)
class GPU:
    """One accelerator and the interconnect around it (docs/model.md §A3)."""

    name: str
    #: Dense tensor-core peak per weight precision, as ``((bits, flop_per_s), ...)``.
    flop_per_s: tuple[tuple[int, float], ...]
    hbm_bandwidth_bytes_per_s: float
    hbm_capacity_bytes: float
    #: NVLink bandwidth per GPU, both directions added, as datasheets quote it.
    nvlink_bandwidth_bytes_per_s: float
    #: Scale-out (InfiniBand/Ethernet) bandwidth per GPU, one direction.
    nic_bandwidth_bytes_per_s: float
    #: GPUs in one NVLink domain ("node": 8 for HGX, 72 for GB200 NVL72).
    scale_up_domain_gpus: int
    price_usd_per_hour: float
    #: Fractions of peak that can be sustained (paper §4: 70 % FLOP/s, 75 % HBM on H100).
    sustained_flop_fraction: float = 1.0
    sustained_hbm_bandwidth_fraction: float = 1.0
    kernel_launch_latency_s: float = 4e-6
    #: NVLink SHARP (in-switch reductions): lower all-reduce latency and traffic (Part B).
    nvls: bool = False
    #: Multiplier on NCCL latencies for this system (1: the tuning model; fitted by calibration).
    collective_latency_scale: float = 1.0
    description: str = ""
    aliases: tuple[str, ...] = ()
    source_file: str = ""

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
        wanted = max(float(weight_bits), 8.0) if not native_fp4 else float(weight_bits)
        for bits, rate in sorted(self.flop_per_s):
            if bits >= wanted - 1e-9:
                return rate
        widest = max(b for b, _ in self.flop_per_s)
        raise SpecError(
            self.source_file or self.name,
            "flop_per_s",
            f"no FLOP/s figure for {weight_bits:g}-bit weights (widest listed: {widest}-bit)",
            f"add 'flop_per_s: {{{int(weight_bits)}: ...}}'",
        )

    @property
    def sustained_hbm_bandwidth_bytes_per_s(self) -> float:
        return self.hbm_bandwidth_bytes_per_s * self.sustained_hbm_bandwidth_fraction

    @property
    def intra_node_allreduce_bandwidth_bytes_per_s(self) -> float:
        """All-reduce bus bandwidth inside the NVLink domain: NVLink one-way / 2 (§A3)."""
        return self.nvlink_bandwidth_bytes_per_s / 4.0

    @property
    def inter_node_allreduce_bandwidth_bytes_per_s(self) -> float:
        """All-reduce bus bandwidth across domains: NIC / 2 (§A3)."""
        return self.nic_bandwidth_bytes_per_s / 2.0

    @property
    def price_usd_per_s(self) -> float:
        return self.price_usd_per_hour / 3600.0

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["flop_per_s"] = {bits: rate for bits, rate in self.flop_per_s}
        out["aliases"] = list(self.aliases)
        return out


#: Bounds of the numeric fields: positive, finite and below figures no part comes near, so
#: no product or quotient of them overflows (docs/errors.md).
_NUMERIC = {
    "hbm_bandwidth_bytes_per_s": dict(minimum=1e6, maximum=1e18, unit="bytes/s"),
    "hbm_capacity_bytes": dict(minimum=1e6, maximum=1e18, unit="bytes"),
    "nvlink_bandwidth_bytes_per_s": dict(minimum=1e6, maximum=1e18, unit="bytes/s"),
    "nic_bandwidth_bytes_per_s": dict(minimum=1e6, maximum=1e18, unit="bytes/s"),
    "scale_up_domain_gpus": dict(minimum=1, maximum=2**20, integer=True, unit="GPUs"),
    "price_usd_per_hour": dict(minimum=1e-6, maximum=1e9, unit="USD/hour"),
    "sustained_flop_fraction": dict(minimum=0, exclusive_minimum=True, maximum=1),
    "sustained_hbm_bandwidth_fraction": dict(minimum=0, exclusive_minimum=True, maximum=1),
    "kernel_launch_latency_s": dict(minimum=0, maximum=1, unit="seconds"),
    "collective_latency_scale": dict(minimum=0, maximum=1e6),
}
_FLOP = dict(minimum=1e6, maximum=1e21, unit="FLOP/s")
_BITS = dict(minimum=1, maximum=64, integer=True, unit="bits")
#: Longest chain of ``derive_from`` files.
MAX_DERIVE_DEPTH = 16
_REQUIRED = (
    "flop_per_s",
    "hbm_bandwidth_bytes_per_s",
    "hbm_capacity_bytes",
    "nvlink_bandwidth_bytes_per_s",
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


def _validated(values: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Check and normalise a full or partial set of GPU fields."""
    known = {f.name for f in dataclasses.fields(GPU)} | {"derive_from", "scale"}
    r = Reader(values, source)
    out: dict[str, Any] = {}
    for key in values:
        if key == "flop_per_s":
            out[key] = _flop_table(r.raw(key), source)
        elif key in _NUMERIC:
            out[key] = r.number(key, **_NUMERIC[key])
        elif key == "nvls":
            out[key] = r.boolean(key)
        elif key == "aliases":
            out[key] = r.text_list(key)
        elif key in ("name", "description", "source_file"):
            out[key] = r.string(key)
    r.finish(allowed_extra=tuple(known))
    return out


def derive(
    base: GPU, name: str | None = None, scale: Mapping[str, float] | None = None, **overrides
) -> GPU:
    """A new spec from ``base``: ``overrides`` replace fields, ``scale`` multiplies them.

    >>> h100 = load_hardware("H100-SXM")
    >>> fast = derive(h100, name="H100 2x HBM", scale={"hbm_bandwidth_bytes_per_s": 2})
    """
    source = overrides.pop("source_file", None) or f"derived from {base.name}"
    values = _validated(overrides, source)
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
            if key == "flop_per_s":
                current = values.get(key, base.flop_per_s)
                values[key] = _flop_table({b: r * factor for b, r in current}, source)
            elif key in _NUMERIC and key != "scale_up_domain_gpus":
                current = values.get(key, getattr(base, key))
                values[key] = _validated({key: current * factor}, source)[key]
            else:
                raise SpecError(
                    source,
                    field,
                    "cannot be scaled",
                    "scale a numeric field such as hbm_bandwidth_bytes_per_s",
                )
    values["name"] = name or values.get("name") or f"{base.name} (modified)"
    values.setdefault("aliases", ())
    values["source_file"] = source
    return dataclasses.replace(base, **values)


def gpu_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> GPU:
    """Build a GPU from a parsed YAML mapping (``derive_from`` resolved by name)."""
    data = dict(data)
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
        except SpecError as exc:
            if exc.source == source:  # the cycle through this file, reported as it is
                raise
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
    values = _validated(data, source)
    values["source_file"] = source
    return GPU(**values)


@lru_cache(maxsize=256)
def _load_path(path: Path) -> GPU:
    return gpu_from_dict(load_yaml(path), str(path))


_LOADING = threading.local()


def load_hardware(name_or_path: str | Path) -> GPU:
    """Load a GPU spec by name, alias (case-insensitive) or path to a YAML file."""
    if isinstance(name_or_path, GPU):
        return name_or_path
    path = catalog.find("hardware", name_or_path).resolve()
    record(path)
    chain = _LOADING.__dict__.setdefault("chain", [])
    if path in chain or len(chain) >= MAX_DERIVE_DEPTH:
        cycle = " -> ".join(
            p.name for p in [*chain[chain.index(path) if path in chain else 0 :], path]
        )
        raise SpecError(
            str(chain[-1]),
            "derive_from",
            f"{'derives from itself' if path in chain else 'too long a chain'}: {cycle}",
            f"a spec may derive from another one, at most {MAX_DERIVE_DEPTH} deep, without a cycle",
        )
    chain.append(path)
    try:
        return _load_path(path)
    finally:
        chain.pop()
