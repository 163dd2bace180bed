"""GPU specs: datasheet figures with units in their names, loaded from ``hardware/*.yaml``.

A spec can be derived from another one with overrides (``derive``), in Python or in YAML with
``derive_from:`` plus the fields to change and ``scale:`` factors. The paper's hardware figures
(``hardware/paper/``) are expressed that way on top of the datasheet files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import SpecError, did_you_mean
from . import catalog
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


_NUMERIC = {
    "hbm_bandwidth_bytes_per_s": dict(minimum=0, exclusive_minimum=True, unit="bytes/s"),
    "hbm_capacity_bytes": dict(minimum=0, exclusive_minimum=True, unit="bytes"),
    "nvlink_bandwidth_bytes_per_s": dict(minimum=0, exclusive_minimum=True, unit="bytes/s"),
    "nic_bandwidth_bytes_per_s": dict(minimum=0, exclusive_minimum=True, unit="bytes/s"),
    "scale_up_domain_gpus": dict(minimum=1, integer=True, unit="GPUs"),
    "price_usd_per_hour": dict(minimum=0, exclusive_minimum=True, unit="USD/hour"),
    "sustained_flop_fraction": dict(minimum=0, exclusive_minimum=True, maximum=1),
    "sustained_hbm_bandwidth_fraction": dict(minimum=0, exclusive_minimum=True, maximum=1),
    "kernel_launch_latency_s": dict(minimum=0, unit="seconds"),
    "collective_latency_scale": dict(minimum=0),
}
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
    if not isinstance(value, Mapping) or not value:
        raise SpecError(
            source,
            "flop_per_s",
            f"expected a mapping from weight bits to FLOP/s, got {value!r}",
            "e.g. 'flop_per_s: {16: 9.89e14, 8: 1.979e15}'",
        )
    table = []
    for bits, rate in value.items():
        b = check_number(bits, source, "flop_per_s", minimum=1, integer=True, unit="bits")
        r = check_number(
            rate, source, f"flop_per_s.{b}", minimum=0, exclusive_minimum=True, unit="FLOP/s"
        )
        table.append((b, float(r)))
    return tuple(sorted(table))


def _check_known(values: Mapping[str, Any], source: str) -> None:
    """Every field is a GPU field: a misspelt one is named with a did-you-mean (before any
    "is missing" for the field it was meant to be)."""
    known = {f.name for f in dataclasses.fields(GPU)} | {"derive_from", "scale"}
    for key in values:
        if key not in known:
            hint = did_you_mean(str(key), sorted(known))
            raise SpecError(
                source,
                str(key),
                "unknown field",
                hint or f"known fields: {', '.join(sorted(known))}",
            )


def _validated(values: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Check and normalise a full or partial set of GPU fields."""
    _check_known(values, source)
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key == "flop_per_s":
            out[key] = _flop_table(value, source)
        elif key in _NUMERIC:
            out[key] = check_number(value, source, key, **_NUMERIC[key])
        elif key == "nvls":
            out[key] = Reader(values, source).boolean(key)
        elif key == "aliases":
            out[key] = tuple(str(a) for a in ([value] if isinstance(value, str) else value or ()))
        elif key in ("name", "description", "source_file"):
            out[key] = str(value)
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
            if key == "flop_per_s":
                current = values.get(key, base.flop_per_s)
                values[key] = tuple((b, r * factor) for b, r in current)
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
    _check_known(data, source)
    base_name = data.pop("derive_from", None)
    scale = data.pop("scale", None)
    if scale is not None and not isinstance(scale, Mapping):
        raise SpecError(source, "scale", f"expected a mapping of field: factor, got {scale!r}")
    if base_name is not None:
        base = load_hardware(str(base_name))
        data["source_file"] = source
        return derive(base, name=data.pop("name", None), scale=scale, **data)
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


def load_hardware(name_or_path: str | Path) -> GPU:
    """Load a GPU spec by name, alias (case-insensitive) or path to a YAML file."""
    if isinstance(name_or_path, GPU):
        return name_or_path
    return _load_path(catalog.find("hardware", name_or_path).resolve())
