"""The figures a hardware file gives from measurements on its own part, parsed and checked:
the best-shape GEMM fractions (``gemm_efficiency``), the engines' small-batch GEMM lines
(``small_batch_gemm``) and the best each kernel class reached in the measured kernel tables
(``kernel_ceilings``, docs/model.md §B15), which the roofline clock never runs slower than.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError, did_you_mean, short
from .schema import check_number

#: The smallest fraction of a datasheet figure a GPU may sustain.
MIN_FRACTION = 0.05
_RATE = dict(minimum=0, maximum=1e21)
_CEILING_EXAMPLE = (
    "e.g. 'kernel_ceilings: {gemm_flop_per_s: {16: 8.5e14}, hbm_bytes_per_s: 3.1e12, "
    "custom_allreduce: {latency_s: 2.6e-6, bus_bytes_per_s: 4.7e11}}'"
)


@dataclass(frozen=True)
class CollectiveCeiling:
    """The fastest collective of one library measured inside one scale-up domain, as a latency
    and a bus bandwidth (nccl-tests' busbw: an all-reduce's bytes times 2(R-1)/R, any other
    collective's times (R-1)/R, over the time) such that latency + bus bytes / bandwidth is
    at or below every measured call (0: not measured), over as many ranks as the table
    measured (``max_ranks``; 0: not stated), which the bound reads as a floor beyond them: a
    collective over more ranks of the domain is no faster than over fewer."""

    latency_s: float = 0.0
    bus_bytes_per_s: float = 0.0
    max_ranks: int = 0


@dataclass(frozen=True)
class KernelCeilings:
    """The best each kernel class reached on the part in the measured kernel tables
    (kernels/README.md; ``benchmarks/kernel_ceilings.py`` writes them from the tables): GEMM
    FLOP/s and the fused MoE's (its routed experts' grouped GEMMs) by the bits of the
    tensor-core rate they run at, attention FLOP/s by the KV cache's bits, the bytes/s of kernels whose bytes come from HBM and of those whose working set
    stays in L2 across back-to-back calls, and the fastest in-domain all-reduce (the engine's
    own kernel) and NCCL collective. 0 or an absent entry: not measured."""

    gemm_flop_per_s: tuple[tuple[int, float], ...] = ()
    moe_flop_per_s: tuple[tuple[int, float], ...] = ()
    attention_flop_per_s: tuple[tuple[int, float], ...] = ()
    hbm_bytes_per_s: float = 0.0
    l2_bytes_per_s: float = 0.0
    custom_allreduce: CollectiveCeiling = CollectiveCeiling()
    nccl: CollectiveCeiling = CollectiveCeiling()

    def gemm(self, bits: int) -> float:
        """The best GEMM FLOP/s measured at the tensor-core rate of ``bits`` (0: none)."""
        return dict(self.gemm_flop_per_s).get(bits, 0.0)

    def moe(self, bits: int) -> float:
        """The best fused-MoE FLOP/s measured at the tensor-core rate of ``bits`` (0: none)."""
        return dict(self.moe_flop_per_s).get(bits, 0.0)

    def attention(self, bits: int) -> float:
        """The best attention FLOP/s measured with a ``bits``-bit KV cache (0: none)."""
        return dict(self.attention_flop_per_s).get(bits, 0.0)

    def to_dict(self) -> dict[str, Any]:
        """The figures as the hardware file writes them."""
        return {
            "gemm_flop_per_s": dict(self.gemm_flop_per_s),
            "moe_flop_per_s": dict(self.moe_flop_per_s),
            "attention_flop_per_s": dict(self.attention_flop_per_s),
            "hbm_bytes_per_s": self.hbm_bytes_per_s,
            "l2_bytes_per_s": self.l2_bytes_per_s,
            "custom_allreduce": vars(self.custom_allreduce).copy(),
            "nccl": vars(self.nccl).copy(),
        }


def _rates_by_bits(value: Any, source: str, field: str) -> tuple[tuple[int, float], ...]:
    """bits -> FLOP/s, each bits once."""
    if not isinstance(value, Mapping) or not value:
        raise SpecError(
            source, field, f"expected a mapping from bits to FLOP/s, got {short(value)}",
            "e.g. '{16: 8.5e14, 8: 1.5e15}'",
        )  # fmt: skip
    table = {}
    for bits, rate in value.items():
        b = check_number(bits, source, field, minimum=1, maximum=64, integer=True, unit="bits")
        table[int(b)] = float(check_number(rate, source, f"{field}.{b}", unit="FLOP/s", **_RATE))
    return tuple(sorted(table.items()))


def _collective(value: Any, source: str, field: str) -> CollectiveCeiling:
    """{latency_s, bus_bytes_per_s[, max_ranks]} of one collective library."""
    keys = {"latency_s", "bus_bytes_per_s"}
    if not isinstance(value, Mapping) or not keys <= set(value) <= keys | {"max_ranks"}:
        raise SpecError(
            source, field, f"expected {{latency_s, bus_bytes_per_s, max_ranks}}, got {short(value)}",
            _CEILING_EXAMPLE,
        )  # fmt: skip
    latency = check_number(
        value["latency_s"], source, f"{field}.latency_s", minimum=0, maximum=1, unit="seconds"
    )
    bandwidth = check_number(
        value["bus_bytes_per_s"], source, f"{field}.bus_bytes_per_s", unit="bytes/s", **_RATE
    )
    most = value.get("max_ranks", 0)
    most = check_number(
        most, source, f"{field}.max_ranks", minimum=0, maximum=2**20, integer=True, unit="GPUs"
    )
    return CollectiveCeiling(float(latency), float(bandwidth), int(most))


def kernel_ceilings(value: Any, source: str) -> KernelCeilings:
    """``kernel_ceilings``: the measured kernel tables' best figures (``KernelCeilings``)."""
    if isinstance(value, KernelCeilings):
        return value
    if not isinstance(value, Mapping):
        raise SpecError(
            source, "kernel_ceilings", f"expected a mapping, got {short(value)}", _CEILING_EXAMPLE
        )
    out: dict[str, Any] = {}
    for key, entry in value.items():
        field = f"kernel_ceilings.{key}"
        if key in ("gemm_flop_per_s", "moe_flop_per_s", "attention_flop_per_s"):
            out[key] = _rates_by_bits(entry, source, field)
        elif key in ("hbm_bytes_per_s", "l2_bytes_per_s"):
            out[key] = float(check_number(entry, source, field, unit="bytes/s", **_RATE))
        elif key in ("custom_allreduce", "nccl"):
            out[key] = _collective(entry, source, field)
        else:
            known = [f for f in KernelCeilings.__dataclass_fields__]
            raise SpecError(
                source, field, "unknown field",
                did_you_mean(str(key), known) or f"known fields: {', '.join(known)}",
            )  # fmt: skip
    return KernelCeilings(**out)


def fraction_table(value: Any, source: str) -> tuple[tuple[int, float], ...]:
    """``gemm_efficiency``: weight bits -> measured fraction of the dense peak, in [0.05, 1]."""
    if not isinstance(value, Mapping) or not value:
        raise SpecError(
            source,
            "gemm_efficiency",
            f"expected a mapping from weight bits to a fraction of peak, got {short(value)}",
            "e.g. 'gemm_efficiency: {16: 0.80, 8: 0.71}'",
        )
    table = []
    for bits, fraction in value.items():
        b = check_number(bits, source, "gemm_efficiency", minimum=1, integer=True, unit="bits")
        f = check_number(fraction, source, f"gemm_efficiency.{b}", minimum=MIN_FRACTION, maximum=1)
        table.append((b, float(f)))
    return tuple(sorted(table))


def small_batch_table(value: Any, source: str) -> tuple[tuple[str, int, float, float], ...]:
    """``small_batch_gemm``: engine -> weight bits -> {fixed_us: microseconds per kernel,
    stream_share: the weights' share of HBM bandwidth in [0.05, 1]}."""
    example = "e.g. 'small_batch_gemm: {trtllm: {8: {fixed_us: 7.5, stream_share: 0.75}}}'"
    if not isinstance(value, Mapping) or not value:
        raise SpecError(
            source,
            "small_batch_gemm",
            f"expected a mapping from an engine to its lines by weight bits, got {short(value)}",
            example,
        )
    table = []
    for engine, lines in value.items():
        where = f"small_batch_gemm.{engine}"
        if not isinstance(engine, str) or not isinstance(lines, Mapping) or not lines:
            raise SpecError(
                source,
                where,
                f"expected an engine's name and a mapping from weight bits, got {short(lines)}",
                example,
            )
        for bits, entry in lines.items():
            b = check_number(bits, source, where, minimum=1, integer=True, unit="bits")
            key = f"{where}.{b}"
            if not isinstance(entry, Mapping) or set(entry) != {"fixed_us", "stream_share"}:
                raise SpecError(
                    source, key, f"expected {{fixed_us, stream_share}}, got {short(entry)}", example
                )
            fixed = check_number(
                entry["fixed_us"], source, f"{key}.fixed_us", minimum=0, maximum=1e4, unit="us"
            )
            share = check_number(
                entry["stream_share"],
                source,
                f"{key}.stream_share",
                minimum=MIN_FRACTION,
                maximum=1,
            )
            table.append((engine, b, float(fixed) * 1e-6, float(share)))
    return tuple(sorted(table))
