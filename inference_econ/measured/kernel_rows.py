"""The measured kernel tables' rows as the roofline clock sees them (docs/model.md §B15): the
FLOP and bytes each row's operation must do, the rate it runs at in the model, its roofline
charge from the model's own ``Machine`` and collective code, and the best figures per part
(``KernelCeilings``) that the hardware files' ``kernel_ceilings`` hold.

The work of a row is the least its operation must do: a GEMM's 2·m·n·k FLOP and its weights,
activations in and output; attention's 4·heads·head_dim FLOP a position attended to and its
KV cache (and, in prefill, Q and the output); a fused MoE's expert FLOP and its tokens'
activations (``moe_rows``: why not its weights); a pass's bytes as measured. AIConfigurator's
tables time each kernel back to back on the same buffers, so a row whose working set fits in
L2 reads it from there (``machine.l2_resident``): its bytes are charged at the best rate such
rows reached, the others' at the best HBM rate. ``passes.csv`` rotates its inputs past L2.
"""

from __future__ import annotations

import csv
import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..model.assumptions import Assumptions
from ..model.collectives import ALLREDUCE, ALLTOALL, CollectiveKind
from ..model.machine import Machine, l2_resident
from ..specs.catalog import data_roots
from ..specs.hardware import GPU
from ..specs.kernel_tables import kernel_table
from ..specs.measured_rates import CollectiveCeiling, KernelCeilings

#: The NCCL tables' folder.
NCCL = "nccl-2.29.2"
#: GEMM format -> (bits of the tensor-core rate it runs at, bytes a weight: NVFP4 with an FP8
#: scale a 16).
GEMM_FORMATS = {
    "bfloat16": (16, 2.0),
    "fp8": (8, 1.0),
    "fp8_block": (8, 1.0),
    "nvfp4": (4, 0.5 + 1.0 / 16.0),
}
#: Fused-MoE format -> bits of the rate it runs at: MXFP4 weights with 16-bit activations run
#: BF16 GEMMs, with MXFP8 ones FP4 tensor cores (§B5).
MOE_BITS = {
    **{fmt: bits for fmt, (bits, _) in GEMM_FORMATS.items()},
    "w4a16_mxfp4": 16,
    "w4a8_mxfp4_mxfp8": 4,
}
#: A KV cache or attention format -> (bits, bytes an element).
ATTENTION_FORMATS = {"bfloat16": (16, 2.0), "fp8": (8, 1.0)}
#: NCCL's element types -> bytes an element.
NCCL_BYTES = {"half": 2.0, "int8": 1.0}


@dataclass(frozen=True)
class KernelRows:
    """Rows of one op class and format on one part: each row's work and measured seconds.
    ``bits``: the rate the model charges the arithmetic at (a GEMM's tensor-core bits, the
    KV cache's for attention); ``repeated``: timed back to back on the same buffers;
    ``size``: the column a class is split by (a GEMM's ``m``; else the bytes)."""

    op: str
    fmt: str
    bits: int
    flop: np.ndarray
    nbytes: np.ndarray
    seconds: np.ndarray
    size: np.ndarray
    attention: bool = False
    repeated: bool = True


@dataclass(frozen=True)
class CollectiveRows:
    """Collectives of one op and element type: ranks inside one domain, bytes, seconds."""

    op: str
    fmt: str
    kind: CollectiveKind
    ranks: np.ndarray
    nbytes: np.ndarray
    seconds: np.ndarray

    @property
    def bus_bytes(self) -> np.ndarray:
        """nccl-tests' bus bytes: an all-reduce's 2(R-1)/R of its bytes, others' (R-1)/R."""
        share = (self.ranks - 1.0) / self.ranks
        return self.nbytes * share * (2.0 if self.kind == ALLREDUCE else 1.0)


def gemm_rows(folder: str) -> list[KernelRows]:
    """TensorRT-LLM's GEMMs: 2·m·n·k FLOP; weights, BF16 activations in and out."""
    t = kernel_table(folder, "gemm")
    out = []
    for fmt, (bits, per_weight) in GEMM_FORMATS.items():
        at = t["gemm_dtype"] == fmt
        if at.any():
            m, n, k = (t[c][at] * 1.0 for c in ("m", "n", "k"))
            flop, nbytes = 2.0 * m * n * k, n * k * per_weight + 2.0 * m * (k + n)
            out.append(KernelRows("gemm", fmt, bits, flop, nbytes, _seconds(t, at), m))
    return out


def generation_rows(folder: str) -> list[KernelRows]:
    """One decode step of ``batch_size`` caches of ``isl + step`` positions (capped at the
    window): K and V at the cache's format, 4·heads·head_dim FLOP a position."""
    t = kernel_table(folder, "generation_attention")
    positions = (t["isl"] + t["step"]) * 1.0
    positions = np.where(t["window_size"] > 0, np.minimum(positions, t["window_size"]), positions)
    b, h, d = t["batch_size"] * 1.0, t["num_heads"] * 1.0, t["head_dim"] * 1.0
    out = []
    for fmt, (bits, width) in ATTENTION_FORMATS.items():
        at = t["kv_cache_dtype"] == fmt
        nbytes = (b * positions * 2.0 * t["num_key_value_heads"] * d * width)[at]
        flop = (4.0 * b * h * d * positions)[at]
        out.append(
            KernelRows(
                "generation_attention", fmt, bits, flop, nbytes, _seconds(t, at), nbytes, True
            )
        )
    return out


def context_rows(folder: str) -> list[KernelRows]:
    """A causal prompt of ``isl`` tokens: 4·heads·head_dim FLOP a position a token attends
    to (the mean over the prompt, each capped at the window); Q in the attention format, K
    and V in the cache's, the output in BF16. Charged at the KV cache's format (§B5)."""
    t = kernel_table(folder, "context_attention")
    n = t["isl"] * 1.0
    w = np.where(t["window_size"] > 0, t["window_size"], t["isl"]) * 1.0
    attended = np.where(n <= w, (n + 1.0) / 2.0, (w * (w + 1.0) / 2.0 + (n - w) * w) / n)
    b, h, d = t["batch_size"] * 1.0, t["num_heads"] * 1.0, t["head_dim"] * 1.0
    q_bytes = np.where(t["attn_dtype"] == "fp8", 1.0, 2.0)
    flop = 4.0 * b * h * d * n * attended
    out = []
    for fmt, (bits, width) in ATTENTION_FORMATS.items():
        at = t["kv_cache_dtype"] == fmt
        nbytes = b * n * d * (h * (q_bytes + 2.0) + 2.0 * t["num_key_value_heads"] * width)
        out.append(
            KernelRows(
                "context_attention", fmt, bits, flop[at], nbytes[at], _seconds(t, at), n[at], True
            )
        )
    return out


def moe_rows(folder: str) -> list[KernelRows]:
    """TensorRT-LLM's fused MoE on one rank of ``moe_tp_size`` x ``moe_ep_size``: its share
    of 6·tokens·topk·hidden·inter FLOP (gate, up and down) and the tokens' hidden states in
    and out (BF16). Not the experts' weights: under the routing the rows state, their
    weights would stream at up to 1.4 times the H100's datasheet bandwidth (16 tokens, top
    22 of 512 experts, balanced: 22 GB in 4.7 ms), so the harness's kernels reach fewer
    experts than the labels say, and how many the table does not tell."""
    t = kernel_table(folder, "moe")
    tokens, hidden = t["num_tokens"] * 1.0, t["hidden_size"] * 1.0
    ranks = t["moe_tp_size"] * t["moe_ep_size"] * 1.0
    flop = 6.0 * tokens * t["topk"] * hidden * t["inter_size"] / ranks
    nbytes = 4.0 * tokens * hidden
    out = []
    for fmt, bits in MOE_BITS.items():
        at = t["moe_dtype"] == fmt
        if at.any():
            out.append(
                KernelRows("moe", fmt, bits, flop[at], nbytes[at], _seconds(t, at), tokens[at])
            )
    return out


def pass_rows(folder: str) -> list[KernelRows]:
    """``passes.csv``'s passes (the fewest bytes each must move; inputs rotated past L2):
    none where the part has no such file."""
    paths = (r / "kernels" / folder / "passes.csv" for r in data_roots())
    path = next((p for p in paths if p.is_file()), None)
    if path is None:
        return []
    lines = path.read_text(encoding="utf-8").splitlines()[1:]  # the source line first
    rows = list(csv.DictReader(lines))
    nbytes = np.array([float(r["bytes"]) for r in rows])
    seconds = np.array([float(r["latency_us"]) * 1e-6 for r in rows])
    zero = np.zeros_like(nbytes)
    return [KernelRows("passes", "", 16, zero, nbytes, seconds, nbytes, repeated=False)]


def custom_allreduce_rows(folder: str) -> list[CollectiveRows]:
    """TensorRT-LLM's own all-reduce of BF16 elements on 2-8 GPUs of one domain."""
    t = kernel_table(folder, "custom_allreduce")
    nbytes = t["message_elements"] * 2.0
    return [
        CollectiveRows(
            "custom_allreduce", "bfloat16", ALLREDUCE, t["num_gpus"] * 1.0, nbytes, _seconds(t)
        )
    ]


def nccl_rows(folder: str) -> list[CollectiveRows]:
    """NCCL's all-reduce, all-gather, reduce-scatter and all-to-all (``half`` and ``int8``);
    all but the all-reduce are the model's other collectives (``ALLTOALL``: (R-1)/R of the
    bytes over half the all-reduce's seconds per byte)."""
    t = kernel_table(folder, "nccl", NCCL)
    out = []
    for op in ("all_reduce", "all_gather", "reduce_scatter", "alltoall"):
        kind = ALLREDUCE if op == "all_reduce" else ALLTOALL
        for fmt, width in NCCL_BYTES.items():
            at = (t["op_name"] == op) & (t["nccl_dtype"] == fmt)
            if at.any():
                ranks, nbytes = t["num_gpus"][at] * 1.0, t["message_elements"][at] * width
                out.append(CollectiveRows(op, fmt, kind, ranks, nbytes, _seconds(t, at)))
    return out


@lru_cache(maxsize=8)
def part_rows(folder: str) -> tuple[tuple[KernelRows, ...], tuple[CollectiveRows, ...]]:
    """Every kernel and collective row of one part's tables (read once)."""
    kernels = [
        *gemm_rows(folder),
        *generation_rows(folder),
        *context_rows(folder),
        *moe_rows(folder),
        *pass_rows(folder),
    ]
    return tuple(kernels), tuple(custom_allreduce_rows(folder) + nccl_rows(folder))


def kernel_roofline_s(gpu: GPU, rows: KernelRows, assumptions: Assumptions) -> np.ndarray:
    """The roofline clock's seconds of each row: ``Machine.kernel_s`` on the machine of the
    rows' rate (GEMMs at their bits; attention at 16-bit GEMMs and its KV cache's bits)."""
    if rows.attention:
        machine = Machine.build(gpu, 16, assumptions, attention_bits=rows.bits)
    else:
        machine = Machine.build(gpu, rows.bits, assumptions)
    return machine.kernel_s(rows.flop, rows.nbytes, rows.attention, rows.repeated)


def collective_roofline_s(
    machine: Machine, rows: CollectiveRows, protocols: tuple | None = None
) -> np.ndarray:
    """The seconds ``machine.collective`` charges each row, inside one domain; ``protocols``:
    those alone (None: the machine's)."""
    if protocols is not None:
        machine = dataclasses.replace(machine, protocols=protocols)
    out = np.empty_like(rows.nbytes)
    for r in np.unique(rows.ranks):
        at = rows.ranks == r
        out[at] = machine.collective(float(r), 1.0, rows.kind).time(rows.nbytes[at])
    return out


def collective_ceiling(bus_bytes: np.ndarray, seconds: np.ndarray) -> CollectiveCeiling:
    """The fastest flat-latency line under every measured call: the bus bandwidth the calls
    reach above the fastest call's time, then the latency that bandwidth leaves (the
    fastest call's, less its few bytes at that rate)."""
    floor = seconds.min()
    above = seconds > floor
    bandwidth = float(np.max(bus_bytes[above] / (seconds[above] - floor)))
    return CollectiveCeiling(float(np.min(seconds - bus_bytes / bandwidth)), bandwidth)


def best_figures(gpu: GPU, folder: str) -> dict[str, tuple[Any, str]]:
    """{figure: (its best value, the rows it came from)} of a part's tables, before
    rounding: ``gemm_flop_per_s.<bits>`` (GEMM and fused-MoE rows, by the bits of their
    rate), ``attention_flop_per_s.<bits>`` (by the KV cache's bits), ``hbm_bytes_per_s`` and
    ``l2_bytes_per_s`` (rows timed back to back whose working set fits in L2,
    ``l2_resident``, against the rest) and each collective library's ``CollectiveCeiling``."""
    kernels, collectives = part_rows(folder)
    best: dict[str, tuple[Any, str]] = {}

    def offer(key: str, rates: np.ndarray, where: str) -> None:
        if rates.size and float(rates.max()) > best.get(key, (0.0, ""))[0]:
            best[key] = (float(rates.max()), where)

    for rows in kernels:
        where = f"{rows.op} {rows.fmt}".strip()
        if rows.flop.any():
            kind = "attention" if rows.attention else "gemm"
            offer(f"{kind}_flop_per_s.{rows.bits}", rows.flop / rows.seconds, where)
        rate = rows.nbytes / rows.seconds
        resident = l2_resident(gpu, rows.nbytes) & rows.repeated
        offer("hbm_bytes_per_s", rate[~resident], where)
        offer("l2_bytes_per_s", rate[resident], where)
    for name, keep in (("custom_allreduce", True), ("nccl", False)):
        chosen = [c for c in collectives if (c.op == "custom_allreduce") == keep]
        if chosen:
            bus = np.concatenate([c.bus_bytes for c in chosen])
            ceiling = collective_ceiling(bus, np.concatenate([c.seconds for c in chosen]))
            best[name] = (ceiling, ", ".join(sorted({c.op for c in chosen})))
    return best


def measured_ceilings(gpu: GPU, folder: str) -> KernelCeilings:
    """``best_figures`` as the part's ``KernelCeilings`` (before rounding)."""
    best = best_figures(gpu, folder)
    rates: dict[str, dict[int, float]] = {"gemm_flop_per_s": {}, "attention_flop_per_s": {}}
    for key, (value, _) in best.items():
        kind, _, bits = key.partition(".")
        if bits:
            rates[kind][int(bits)] = value
    return KernelCeilings(
        gemm_flop_per_s=tuple(sorted(rates["gemm_flop_per_s"].items())),
        attention_flop_per_s=tuple(sorted(rates["attention_flop_per_s"].items())),
        hbm_bytes_per_s=best.get("hbm_bytes_per_s", (0.0,))[0],
        l2_bytes_per_s=best.get("l2_bytes_per_s", (0.0,))[0],
        custom_allreduce=best.get("custom_allreduce", (CollectiveCeiling(),))[0],
        nccl=best.get("nccl", (CollectiveCeiling(),))[0],
    )


def _seconds(table, at=None) -> np.ndarray:
    """A table's latencies in seconds (of the rows ``at``)."""
    ms = table["latency_ms"] if at is None else table["latency_ms"][at]
    return ms * 1e-3
