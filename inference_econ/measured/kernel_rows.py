"""The measured kernel tables' rows as the roofline clock sees them (docs/model.md §B15): the
FLOP and bytes each row's operation must do, the rate it runs at in the model, its roofline
charge from the model's own ``Machine`` and collective code, and the best figures per part
(``KernelCeilings``) that the hardware files' ``kernel_ceilings`` hold.

The work of a row is the least its operation must do: a GEMM's 2·m·n·k FLOP and its weights,
activations in and output; attention's 4·heads·head_dim FLOP a position attended to and its
KV cache (and, in prefill, Q and the output); a fused MoE's expert FLOP on the one GPU
timed, with the weights of the experts it reaches and its tokens' activations (``moe_rows``,
``rank_zero_routing``); a pass's bytes as measured. Each class's FLOP are charged at its
own rate (``Machine.flop_rate``): dense GEMMs, the fused MoE's experts and attention. AIConfigurator's
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

from ..errors import SpecError
from ..model.assumptions import Assumptions
from ..model.collectives import ALLREDUCE, ALLTOALL, CollectiveKind
from ..model.machine import FlopClass, Machine, l2_resident
from ..specs.catalog import data_roots
from ..specs.hardware import GPU
from ..specs.kernel_tables import EVERY_ENGINE, kernel_table, table_path
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
#: Fused-MoE format -> (bits of the rate it runs at, bytes a weight): MXFP4 weights (an 8-bit
#: scale a 32) with 16-bit activations run BF16 GEMMs, with MXFP8 ones FP4 tensor cores (§B5).
MOE_FORMATS = {
    **GEMM_FORMATS,
    "w4a16_mxfp4": (16, 0.5 + 1.0 / 32.0),
    "w4a8_mxfp4_mxfp8": (4, 0.5 + 1.0 / 32.0),
}
#: GEMMs an expert does a routed row: gate, up and down (SwiGLU). The collector's non-gated
#: models (ReLU², two GEMMs: up and down) are the rows of ``NON_GATED_SOURCE``
#: (collector/trtllm/collect_moe.py lines 42 and 367-377, 783-784 at the tables' commit), as
#: AIConfigurator's own MoE roofline counts them (aic-core/rust/aiconfigurator-core/src/
#: operators/moe.rs lines 756-759 and 806: tokens·topk·H·I·gemms·2 / ep / tp FLOP).
GATED_GEMMS = 3.0
NON_GATED_SOURCE = "moe_torch_flow_nongated"
#: The fused MoE's min-latency rows, routed by DeepSeek-V3's grouped gate (``rank_zero_routing``).
GROUPED_GATE_SOURCE = "moe_torch_flow_min_latency"
#: A KV cache or attention format -> (bits, bytes an element).
ATTENTION_FORMATS = {"bfloat16": (16, 2.0), "fp8": (8, 1.0)}
#: A row's arithmetic class -> the ``KernelCeilings`` figure of its best FLOP/s.
CEILINGS = {
    "gemm": "gemm_flop_per_s",
    "attention": "attention_flop_per_s",
    "expert": "moe_flop_per_s",
}
#: NCCL's element types -> bytes an element.
NCCL_BYTES = {"half": 2.0, "int8": 1.0}


@dataclass(frozen=True)
class KernelRows:
    """Rows of one op class and format on one part: each row's work and measured seconds.
    ``bits``: the rate the model charges the arithmetic at (a GEMM's tensor-core bits, the
    KV cache's for attention); ``arithmetic``: the rate class ``Machine.kernel_s`` charges
    its FLOP at (a GEMM's, attention's or the routed experts'); ``repeated``: timed back to
    back on the same buffers; ``size``: the column a class is split by (a GEMM's ``m``; else
    the bytes); ``source``: the engine and version of rows from the every-engine file ("":
    the part's own tables)."""

    op: str
    fmt: str
    bits: int
    flop: np.ndarray
    nbytes: np.ndarray
    seconds: np.ndarray
    size: np.ndarray
    arithmetic: FlopClass = "gemm"
    repeated: bool = True
    source: str = ""


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


def gemm_work(m, n, k, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """(FLOP, bytes) of GEMMs of ``m`` tokens, ``n`` outputs and ``k`` inputs in ``fmt``: 2·m·n·k
    FLOP; the weights at the format's bytes, BF16 activations in and out."""
    m, n, k = (np.asarray(x, dtype=float) for x in (m, n, k))
    return 2.0 * m * n * k, n * k * GEMM_FORMATS[fmt][1] + 2.0 * m * (k + n)


def gemm_rows(folder: str) -> list[KernelRows]:
    """TensorRT-LLM's GEMMs (``gemm_work``)."""
    return table_gemm_rows(kernel_table(folder, "gemm"))


def every_engine_gemm_rows(folder: str) -> list[KernelRows]:
    """The fastest GEMM rows of every engine and version AIConfigurator timed on the part
    (``kernels/<part>/every-engine/gemm.csv.gz``), one class per engine, version and format;
    none for a part without that file."""
    try:
        table_path(folder, "gemm", EVERY_ENGINE)
    except SpecError:  # not shipped for this part (a file that is there but bad still raises)
        return []
    return table_gemm_rows(kernel_table(folder, "gemm", EVERY_ENGINE))


def table_gemm_rows(t) -> list[KernelRows]:
    """One ``KernelRows`` per format of a GEMM table, and per engine and version where the
    table has ``framework`` and ``version`` columns (its ``source``). Rows of no tokens
    (``m`` 0: the kernel returns at once) are no GEMM and left out."""
    sources = [""]
    if "framework" in t.columns:
        named = np.char.add(np.char.add(t["framework"].astype(str), " "), t["version"].astype(str))
        sources = sorted(set(named.tolist()))
    out = []
    for source in sources:
        mine = t["m"] > 0 if not source else (named == source) & (t["m"] > 0)
        for fmt, (bits, _) in GEMM_FORMATS.items():
            at = mine & (t["gemm_dtype"] == fmt)
            if at.any():
                flop, nbytes = gemm_work(t["m"][at], t["n"][at], t["k"][at], fmt)
                seconds, m = _seconds(t, at), t["m"][at] * 1.0
                out.append(KernelRows("gemm", fmt, bits, flop, nbytes, seconds, m, source=source))
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
                "generation_attention",
                fmt,
                bits,
                flop,
                nbytes,
                _seconds(t, at),
                nbytes,
                "attention",
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
                "context_attention",
                fmt,
                bits,
                flop[at],
                nbytes[at],
                _seconds(t, at),
                n[at],
                "attention",
            )
        )
    return out


def moe_rows(folder: str) -> list[KernelRows]:
    """TensorRT-LLM's fused MoE as one GPU of ``moe_tp_size`` x ``moe_ep_size`` runs it: the
    rows routed to its experts (``rank_zero_routing``), each 2·H·I/tp FLOP a GEMM, three GEMMs
    a row for SwiGLU and two for the non-gated ReLU² experts (``GATED_GEMMS``); its bytes are
    the routed tokens' hidden states in and out (BF16) and, under ``balanced`` routing (one
    routing timed back to back, as the other tables' rows), the weights of the experts its rows
    reach. A ``power_law`` row's time is the mean of five calls under five routings
    (collect_moe.py lines 711-717, 729-733 and 754), whose hot experts repeat, so a call may
    find the weights the last one read in L2 (the GB200's min-latency rows of one token would
    stream 1.04 times its datasheet bandwidth): its weights are left out."""
    t = kernel_table(folder, "moe")
    tokens, hidden = t["num_tokens"] * 1.0, t["hidden_size"] * 1.0
    inter = t["inter_size"] * 1.0 / t["moe_tp_size"]
    rows, experts = rank_zero_routing(t)
    gemms = np.where(t["kernel_source"] == NON_GATED_SOURCE, 2.0, GATED_GEMMS)
    flop = 2.0 * gemms * rows * hidden * inter
    # each routed token brings at most min(topk, local experts) rows
    local = np.minimum(t["topk"], t["num_experts"] // t["moe_ep_size"]) * 1.0
    activations = 4.0 * hidden * rows / local
    weights = np.where(t["distribution"] == "balanced", experts * gemms * hidden * inter, 0.0)
    out = []
    for fmt, (bits, per_weight) in MOE_FORMATS.items():
        at = t["moe_dtype"] == fmt
        if at.any():
            nbytes = (weights * per_weight + activations)[at]
            seconds = _seconds(t, at)
            out.append(
                KernelRows("moe", fmt, bits, flop[at], nbytes, seconds, tokens[at], "expert")
            )
    return out


def rank_zero_routing(t) -> tuple[np.ndarray, np.ndarray]:
    """(rows, experts) of the MoE table's rows that the timed GPU computes at least: the token x
    expert pairs routed to its experts and how many of its experts they reach.

    AIConfigurator times one GPU holding expert-parallel rank 0's experts, ids [0, E/ep)
    (collector/trtllm/collect_moe.py at the tables' commit, lines 343-345: ``Mapping()`` with
    ``moe_ep_size``/``moe_tp_size`` set, rank 0), fed all ``num_tokens`` tokens and router
    logits over all E experts (lines 710-722), so it computes only the pairs routed to its
    experts. ``balanced`` routing (collector/helper.py lines 1051-1067) is deterministic and
    counted here exactly (``balanced_counts``). ``power_law_<alpha>`` routing is random, but
    the generator swaps the most loaded rank into rank 0 (helper.py lines 1422-1433), so rank
    0 has at least the mean, tokens·topk/ep pairs, and since no expert takes a token twice
    (the clamp at lines 1373-1377) its pairs reach at least pairs/tokens experts. The
    min-latency rows (``GROUPED_GATE_SOURCE``) route those logits through DeepSeek-V3's
    grouped gate instead (collect_moe.py lines 483-499): each token still takes topk
    distinct experts, but which is the gate's, so only a single rank (ep = 1) is known to
    compute them all; under expert parallelism nothing is counted."""
    n, e, k, ep = (t[c] for c in ("num_tokens", "num_experts", "topk", "moe_ep_size"))
    local = e // ep
    rows = np.ceil(n * k / ep) * 1.0
    experts = np.ceil(rows / n)
    grouped = t["kernel_source"] == GROUPED_GATE_SOURCE
    rows[grouped & (ep > 1)] = 0.0
    experts[grouped] = np.where(ep[grouped] > 1, 0.0, k[grouped])
    balanced = np.flatnonzero((t["distribution"] == "balanced") & ~grouped)
    shapes, which = np.unique(np.stack([n, e, k], axis=1)[balanced], axis=0, return_inverse=True)
    order = np.argsort(which.ravel(), kind="stable")
    for shape, at in zip(
        shapes, np.split(balanced[order], np.cumsum(np.bincount(which.ravel()))[:-1])
    ):
        counts = balanced_counts(*(int(v) for v in shape))
        rows[at] = np.cumsum(counts)[local[at] - 1]
        experts[at] = np.cumsum(counts > 0)[local[at] - 1]
    return rows, experts


def balanced_counts(tokens: int, experts: int, topk: int) -> np.ndarray:
    """Tokens each expert receives under AIConfigurator's ``balanced_logits`` (collector/
    helper.py lines 1051-1067): token t picks (t + j·s) mod E, j < topk, s = ceil(E/topk); with
    fewer tokens than s, floor((t·s/tokens + j·s) mod E), the division in float32 as torch's."""
    stride = -(-experts // topk)
    j = np.arange(topk)[:, None] * stride
    if tokens >= stride:  # each j's run of tokens wraps round the experts tokens // E times
        partial = (j + np.arange(tokens % experts)[None, :]) % experts
        return tokens // experts * topk + np.bincount(partial.ravel(), minlength=experts)
    share = (np.arange(tokens) * stride).astype(np.float32) / np.float32(tokens)
    chosen = np.remainder(share[None, :] + j.astype(np.float32), np.float32(experts))
    return np.bincount(chosen.astype(np.int64).ravel(), minlength=experts)


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
        *every_engine_gemm_rows(folder),
        *generation_rows(folder),
        *context_rows(folder),
        *moe_rows(folder),
        *pass_rows(folder),
    ]
    return tuple(kernels), tuple(custom_allreduce_rows(folder) + nccl_rows(folder))


def kernel_roofline_s(gpu: GPU, rows: KernelRows, assumptions: Assumptions) -> np.ndarray:
    """The roofline clock's seconds of each row: ``Machine.kernel_s`` on the machine of the
    rows' rate (GEMMs and experts at their bits; attention at 16-bit GEMMs and its KV cache's
    bits), its FLOP at the rate of its class."""
    if rows.arithmetic == "attention":
        machine = Machine.build(gpu, 16, assumptions, attention_bits=rows.bits)
    else:
        machine = Machine.build(gpu, rows.bits, assumptions)
    return machine.kernel_s(rows.flop, rows.nbytes, rows.arithmetic, rows.repeated)


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


def collective_ceiling(
    bus_bytes: np.ndarray, seconds: np.ndarray, ranks: np.ndarray
) -> CollectiveCeiling:
    """The fastest flat-latency line under every measured call: the bus bandwidth the calls
    reach above the fastest call's time, then the latency that bandwidth leaves (the
    fastest call's, less its few bytes at that rate); valid up to the most ranks measured."""
    floor = seconds.min()
    above = seconds > floor
    bandwidth = float(np.max(bus_bytes[above] / (seconds[above] - floor)))
    latency = float(np.min(seconds - bus_bytes / bandwidth))
    return CollectiveCeiling(latency, bandwidth, int(np.max(ranks)))


def best_figures(gpu: GPU, folder: str) -> dict[str, tuple[Any, str]]:
    """{figure: (its best value, the rows it came from)} of a part's tables, before
    rounding: ``gemm_flop_per_s.<bits>`` and ``moe_flop_per_s.<bits>`` (the GEMM rows and
    the fused-MoE rows apart, by the bits of their rate), ``attention_flop_per_s.<bits>``
    (by the KV cache's bits), ``hbm_bytes_per_s`` and
    ``l2_bytes_per_s`` (rows timed back to back whose working set fits in L2,
    ``l2_resident``, against the rest) and each collective library's ``CollectiveCeiling``."""
    kernels, collectives = part_rows(folder)
    best: dict[str, tuple[Any, str]] = {}

    def offer(key: str, rates: np.ndarray, where: str) -> None:
        if rates.size and float(rates.max()) > best.get(key, (0.0, ""))[0]:
            best[key] = (float(rates.max()), where)

    for rows in kernels:
        where = f"{rows.op} {rows.fmt}".strip() + (f" ({rows.source})" if rows.source else "")
        if rows.flop.any():
            key = f"{CEILINGS[rows.arithmetic]}.{rows.bits}"
            offer(key, rows.flop / rows.seconds, where)
        rate = rows.nbytes / rows.seconds
        resident = l2_resident(gpu, rows.nbytes) & rows.repeated
        offer("hbm_bytes_per_s", rate[~resident], where)
        offer("l2_bytes_per_s", rate[resident], where)
    for name, keep in (("custom_allreduce", True), ("nccl", False)):
        chosen = [c for c in collectives if (c.op == "custom_allreduce") == keep]
        if chosen:
            bus = np.concatenate([c.bus_bytes for c in chosen])
            seconds = np.concatenate([c.seconds for c in chosen])
            ceiling = collective_ceiling(bus, seconds, np.concatenate([c.ranks for c in chosen]))
            best[name] = (ceiling, ", ".join(sorted({c.op for c in chosen})))
    return best


def measured_ceilings(gpu: GPU, folder: str) -> KernelCeilings:
    """``best_figures`` as the part's ``KernelCeilings`` (before rounding)."""
    best = best_figures(gpu, folder)
    rates: dict[str, dict[int, float]] = {name: {} for name in CEILINGS.values()}
    for key, (value, _) in best.items():
        kind, _, bits = key.partition(".")
        if bits:
            rates[kind][int(bits)] = value
    return KernelCeilings(
        **{name: tuple(sorted(by_bits.items())) for name, by_bits in rates.items()},
        hbm_bytes_per_s=best.get("hbm_bytes_per_s", (0.0,))[0],
        l2_bytes_per_s=best.get("l2_bytes_per_s", (0.0,))[0],
        custom_allreduce=best.get("custom_allreduce", (CollectiveCeiling(),))[0],
        nccl=best.get("nccl", (CollectiveCeiling(),))[0],
    )


def _seconds(table, at=None) -> np.ndarray:
    """A table's latencies in seconds (of the rows ``at``)."""
    ms = table["latency_ms"] if at is None else table["latency_ms"][at]
    return ms * 1e-3
