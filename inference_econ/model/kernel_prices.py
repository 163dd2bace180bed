"""The engine clock of single operations: seconds of one GEMM, attention call, all-reduce,
collective, fused MoE or per-token pass, priced from the measured kernel tables (kernels/).

Each function prices one op class over numpy arrays of shapes (broadcast together) on a
catalogue GPU. Where the part has a table of that class and format (kernels/README.md:
TensorRT-LLM 1.3.0rc20 and NCCL 2.29.2 as AIConfigurator measured them on H100, H200, B200,
GB200, B300, GB300; the project's passes on H100 and H200), the price interpolates the table
over shape (``kernel_grid.LogGrid``: log space, never cheaper for more work, the measured floor
below the grid, linear growth above it). The table's categorical fields (heads, head size, window;
ranks; an MoE's widths, experts and split) pick a measured group; a shape between groups takes
the nearest group in log space, scaled by the physics form between the two shapes. Elsewhere
(other parts, formats no table has) the op's physics form prices it, with the parameters
fitted to the tables of the parts that have them (``kernel_physics``; kernels/engine_clock.yaml).
Tables are read once, when first priced.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ..errors import SpecError
from ..specs.architecture import EXPERT_ROUTINGS
from ..specs.kernel_tables import (
    NCCL_TABLES,
    SIBLING_FOLDERS,
    KernelTable,
    kernel_folder,
    kernel_table,
    passes_table,
)
from .kernel_grid import LogGrid
from .kernel_physics import (
    ATTENTION_FORMATS,
    COLLECTIVES,
    FORMAT_ALIASES,
    FORMS,
    GEMM_FORMATS,
    MOE_FORMATS,
    PASSES,
    Sheet,
    physics_s,
)

#: Op class -> (its size axes, interpolated; its group fields, matched to a measured group).
AXES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "gemm": (("m", "n", "k"), ()),
    "generation_attention": (("batch", "positions"), ("heads", "kv_heads", "head_dim", "window")),
    "context_attention": (("batch", "tokens"), ("heads", "kv_heads", "head_dim", "window")),
    "generation_mla": (("batch", "positions"), ("heads",)),
    "context_mla": (("batch", "tokens"), ("heads",)),
    "allreduce": (("nbytes",), ("ranks",)),
    "collective": (("nbytes",), ("ranks",)),
    "moe": (("tokens",), ("hidden", "inter", "topk", "experts", "tp", "ep")),
    "pass": (("tokens", "width"), ()),
}
#: The size axes along which more work is never cheaper (a GEMM's widths are not: a width
#: off the kernel's tiles can run slower than a wider one, and the tables show it).
RISING = frozenset({"m", "batch", "positions", "tokens", "nbytes", "width"})
#: Size axes whose work grows faster than the size, with the largest elasticity the tables are
#: extrapolated with above their grid (``LogGrid``; 1, linear, for every other axis): a causal
#: prompt's attention grows with the square of its tokens (the tables' context attention goes
#: to 16,384 tokens, where B200's last two, 12,288 and 16,384, measure an elasticity of 1.97).
SUPERLINEAR = {("context_attention", "tokens"): 2.0, ("context_mla", "tokens"): 2.0}
#: The custom all-reduce's one variant.
CUSTOM = "custom"


@dataclass(frozen=True)
class Rows:
    """Measured rows of one op class and variant: each shape field's array and the seconds."""

    shape: dict[str, np.ndarray]
    seconds: np.ndarray

    def take(self, keep: np.ndarray) -> Rows:
        """The rows where ``keep`` (a mask or indices)."""
        return Rows({k: v[keep] for k, v in self.shape.items()}, self.seconds[keep])

    def __len__(self) -> int:
        return len(self.seconds)


def _gemm_rows(folder: str, variant: str, _: str):
    """GEMM rows of one format."""
    t = kernel_table(folder, "gemm")
    at = t["gemm_dtype"] == variant
    return t, at, {c: t[c][at] for c in ("m", "n", "k")}


def _attention_rows(op: str):
    """The reader of one attention table: decode steps keyed by cached positions (the prompt
    plus the steps before, as AIConfigurator keys them), prompts by their tokens."""

    def read(folder: str, variant: str, _: str):
        t = kernel_table(folder, op)
        if op == "generation_attention":
            at = (t["kv_cache_dtype"] == variant) & (t["attn_dtype"] == "bfloat16")
            shape = {"batch": t["batch_size"][at], "positions": (t["isl"] + t["step"])[at]}
        else:
            at = (t["attn_dtype"] == variant) & (t["kv_cache_dtype"] == variant)
            shape = {"batch": t["batch_size"][at], "tokens": t["isl"][at]}
        names = {"heads": "num_heads", "kv_heads": "num_key_value_heads", "head_dim": "head_dim"}
        shape.update({k: t[c][at] for k, c in names.items()}, window=t["window_size"][at])
        return t, at, shape

    return read


def _mla_rows(op: str):
    """The reader of one MLA table (TensorRT-LLM's multi-head latent attention kernels, the
    query heads one GPU runs): decode steps keyed by cached positions as the GQA tables are,
    prompts by their tokens; rows of one KV-cache format."""

    def read(folder: str, variant: str, _: str):
        t = kernel_table(folder, op)
        at = t["kv_cache_dtype"] == variant
        if op == "generation_mla":
            shape = {"batch": t["batch_size"][at], "positions": (t["isl"] + t["step"])[at]}
        else:
            shape = {"batch": t["batch_size"][at], "tokens": t["isl"][at]}
        shape["heads"] = t["num_heads"][at]
        return t, at, shape

    return read


def _allreduce_rows(folder: str, variant: str, _: str):
    """The custom all-reduce's rows of BF16 messages."""
    t = kernel_table(folder, "custom_allreduce")
    at = t["allreduce_dtype"] == "bfloat16"
    return t, at, {"ranks": t["num_gpus"][at], "nbytes": t["message_elements"][at] * 2}


def _collective_rows(folder: str, variant: str, _: str):
    """NCCL rows of one operation on half-precision messages."""
    t = kernel_table(folder, "nccl", NCCL_TABLES)
    at = (t["op_name"] == variant) & (t["nccl_dtype"] == "half")
    return t, at, {"ranks": t["num_gpus"][at], "nbytes": t["message_elements"][at] * 2}


#: The fused MoE's low-latency kernel (TensorRT-LLM's NVFP4 min-latency path), the most
#: tokens a call runs it at, and the suffix of the variant its rows are read as: the engine
#: runs it up to that many tokens where the tables time the shape, its default (CUTLASS)
#: kernel otherwise, as AIConfigurator's own gate reads its tables (``operators/moe.rs`` at
#: 095f58a: NVFP4 gated MoE at ``num_tokens <= 128`` from the ``moe_torch_flow_min_latency``
#: grid, else from the default grid). The two differ most at many tokens, where the engine
#: never runs the low-latency kernel (B200's own rows at 1,024-16,384 tokens: the default kernel
#: takes a median 1.45 and a p90 2.5 times as long, and is the faster in about a sixth of them).
MOE_LOW_LATENCY = "moe_torch_flow_min_latency"
MOE_LOW_LATENCY_MAX_TOKENS = 128
LOW_LATENCY_VARIANT = "+low_latency"


#: The fields that name one fused-MoE measurement, and those of its series (all but tokens).
MOE_SERIES = (
    "kernel_source", "moe_dtype", "hidden_size", "inter_size", "topk", "num_experts",
    "moe_tp_size", "moe_ep_size", "distribution",
)  # fmt: skip
#: How much slower than its sibling's (beyond the two parts' usual ratio) a part's fused-MoE
#: series may time before the sibling's is read where faster: above the 95th percentile of
#: every other kernel's series ratio between B200 and GB200 (1.01-1.08) and of their GEMM
#: points' (1.14).
SIBLING_TOLERANCE = 1.2


@cache
def moe_latency_ms(folder: str) -> np.ndarray:
    """The fused-MoE table's ``latency_ms`` of kernels/``folder``, a series (one kernel, format,
    shape, split and routing over its token counts) timed more than ``SIBLING_TOLERANCE`` times
    its sibling part's (``SIBLING_FOLDERS``, over the two tables' median ratio) read at the
    faster of its own and the sibling's at that ratio, point by point. B200 and GB200 time
    every kernel a median 1.04 apart, but TensorRT-LLM's CUTLASS fused MoE in series up to 1.9
    apart either way (DeepSeek-R1's NVFP4 experts at EP 4: 0.49 ms against 0.27 at 384 tokens),
    where the engine tunes its tactic for the shapes it runs: the slower series is the
    measurement's, not the part's."""
    own = kernel_table(folder, "moe")
    try:
        theirs = kernel_table(SIBLING_FOLDERS[folder], "moe")
    except (KeyError, SpecError):  # no sibling, or an installation without its table
        return own["latency_ms"]
    import pandas as pd

    keys = [*MOE_SERIES, "num_tokens"]
    mine = pd.DataFrame({k: own[k] for k in (*keys, "latency_ms")})
    other = pd.DataFrame({k: theirs[k] for k in (*keys, "latency_ms")})
    both = mine.merge(other, on=keys, how="left", suffixes=("", "_sibling"))
    ratio = both["latency_ms"] / both["latency_ms_sibling"]
    usual = float(ratio.median())
    departs = (ratio / usual).groupby([both[k] for k in MOE_SERIES]).transform("median")
    read = (departs > SIBLING_TOLERANCE).to_numpy()
    out = np.array(own["latency_ms"], dtype=float)
    out[read] = np.minimum(out[read], both["latency_ms_sibling"].to_numpy()[read] * usual)
    return out


def moe_table(folder: str) -> KernelTable:
    """kernels/``folder``'s fused-MoE table as the clocks read it: ``moe_latency_ms``'s times."""
    t = kernel_table(folder, "moe")
    return KernelTable(t.path, t.header, dict(t.columns, latency_ms=moe_latency_ms(folder)))


def _moe_rows(folder: str, variant: str, distribution: str):
    """Fused-MoE rows of one format and routing: the default kernel's at every token count,
    or with ``LOW_LATENCY_VARIANT`` after the format the low-latency kernel's up to
    ``MOE_LOW_LATENCY_MAX_TOKENS`` (none in a table without kernel sources)."""
    low_latency = variant.endswith(LOW_LATENCY_VARIANT)
    dtype = variant.removesuffix(LOW_LATENCY_VARIANT)
    t = moe_table(folder)
    at = (t["moe_dtype"] == dtype) & (t["distribution"] == distribution)
    names = {"tokens": "num_tokens", "hidden": "hidden_size", "inter": "inter_size"}
    names.update(topk="topk", experts="num_experts", tp="moe_tp_size", ep="moe_ep_size")
    if "kernel_source" in t.names:
        low = t["kernel_source"] == MOE_LOW_LATENCY
        small = t["num_tokens"] <= MOE_LOW_LATENCY_MAX_TOKENS
        at = at & (low & small if low_latency else ~low)
    elif low_latency:
        at = np.zeros(len(at), dtype=bool)
    return t, at, {k: t[c][at] for k, c in names.items()}


def _pass_rows(folder: str, variant: str, _: str):
    """The rows of one pass."""
    t = passes_table(folder)
    at = t["op"] == variant
    return t, at, {"tokens": t["tokens"][at], "width": t["width"][at]}


#: Op class -> the reader of its table: (the table, the rows of the variant, their shapes).
_READERS = {
    "gemm": _gemm_rows,
    "generation_attention": _attention_rows("generation_attention"),
    "context_attention": _attention_rows("context_attention"),
    "generation_mla": _mla_rows("generation_mla"),
    "context_mla": _mla_rows("context_mla"),
    "allreduce": _allreduce_rows,
    "collective": _collective_rows,
    "moe": _moe_rows,
    "pass": _pass_rows,
}


def table_rows(folder: str, op: str, variant: str, distribution: str = "balanced") -> Rows:
    """The rows of ``op`` at ``variant`` measured on kernels/``folder`` (``variant``: a
    format; ``custom`` for the all-reduce; the operation for ``collective``; the pass for
    ``pass``; ``distribution``: the MoE routing). Message sizes are bytes of BF16 elements. A
    shape timed by several kernels (Blackwell's tables time more than one backend) keeps the
    fastest: the one an engine that picks its kernel by shape runs."""
    table, at, shape = _READERS[op](folder, variant, distribution)
    columns = np.stack([np.asarray(v, dtype=float) for v in shape.values()], axis=1)
    unique, inverse = unique_rows(columns)
    seconds = np.full(len(unique), np.inf)
    np.minimum.at(seconds, inverse.reshape(-1), table["latency_ms"][at] * 1e-3)
    return Rows(dict(zip(shape, unique.T)), seconds)


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` of float rows: the distinct rows in
    order and each row's index among them, by a sort over the columns (the structured sort
    ``np.unique`` runs was most of a table's first read); ``np.unique`` itself where a NaN or
    a negative zero could make the two differ, or there are no columns."""
    rows = np.asarray(rows, dtype=float)
    plain = rows.ndim == 2 and rows.size > 0 and bool(np.isfinite(rows).all())
    if not plain or np.signbit(rows[rows == 0.0]).any():
        unique, inverse = np.unique(rows, axis=0, return_inverse=True)
        return unique, inverse.reshape(-1)
    order = np.lexsort(rows.T[::-1])  # the first column the primary key
    ordered = rows[order]
    new = np.empty(len(rows), dtype=bool)
    new[0] = True
    np.any(ordered[1:] != ordered[:-1], axis=1, out=new[1:])
    inverse = np.empty(len(rows), dtype=np.intp)
    inverse[order] = np.cumsum(new) - 1
    return ordered[new], inverse


@cache
def table_variants(folder: str, op: str) -> frozenset[str]:
    """The variants kernels/``folder`` measured of ``op`` (none where it has no such table)."""
    try:
        if op == "pass":
            return frozenset(str(v) for v in np.unique(passes_table(folder)["op"])) & set(PASSES)
        if op == "allreduce":
            kernel_table(folder, "custom_allreduce")
            return frozenset({CUSTOM})
        if op == "collective":
            return frozenset(
                str(v) for v in set(kernel_table(folder, "nccl", NCCL_TABLES)["op_name"].tolist())
            )
        column = {"gemm": "gemm_dtype", "moe": "moe_dtype", "context_attention": "attn_dtype"}
        column["generation_attention"] = "kv_cache_dtype"
        column["generation_mla"] = column["context_mla"] = "kv_cache_dtype"
        # a set of the column's shared strings: np.unique would sort 100,000 objects
        return frozenset(str(v) for v in set(kernel_table(folder, op)[column[op]].tolist()))
    except SpecError:
        return frozenset()


class Clock:
    """One op class and variant priced from measured rows: a LogGrid a measured group."""

    def __init__(self, op: str, variant: str, sheet: Sheet, rows: Rows) -> None:
        self.op, self.variant, self.sheet = op, variant, sheet
        axes, group = AXES[op]
        self.axes, self.group = axes, group
        self._between: dict[tuple, LogGrid] = {}
        keys = (
            np.stack([rows.shape[g] for g in group], axis=1) if group else np.zeros((len(rows), 0))
        )
        self.keys, inverse = unique_rows(keys)
        self._rows, self._inverse = rows, inverse.reshape(-1)
        # a group's grid is built when first read: a model reads a few of a table's groups
        # (its own GEMM shapes), and building all of them was most of a table's first use
        self._grids: dict[int, LogGrid] = {}

    def grid(self, i: int) -> LogGrid:
        """The LogGrid of measured group ``i`` (``self.keys[i]``), built once."""
        if i not in self._grids:
            at = self._inverse == i
            sizes = np.stack([self._rows.shape[a][at] for a in self.axes], axis=1)
            rising = tuple(a in RISING for a in self.axes)
            physics = self._physics(self.keys[i]) if self.op in FORMS else None
            ceilings = tuple(SUPERLINEAR.get((self.op, a), 1.0) for a in self.axes)
            self._grids[i] = LogGrid.build(sizes, self._rows.seconds[at], physics, rising, ceilings)
        return self._grids[i]

    def _physics(self, key: np.ndarray):
        """The physics form over sizes (rows, axes) with the group fields at ``key``."""

        def seconds(sizes: np.ndarray) -> np.ndarray:
            shape = {a: sizes[:, i] for i, a in enumerate(self.axes)}
            shape.update({g: np.full(len(sizes), key[i]) for i, g in enumerate(self.group)})
            return physics_s(self.op, self.variant, self.sheet, shape)

        return seconds

    def __call__(self, shape: dict[str, np.ndarray]) -> np.ndarray:
        """Seconds of the shapes (one array a field, all of one length)."""
        size = len(shape[self.axes[0]])
        sizes = np.stack([shape[a] for a in self.axes], axis=1)
        if not self.group:
            return self.grid(0)(sizes)
        keys = np.stack([shape[g] for g in self.group], axis=1)
        out = np.empty(size)
        if size and (keys == keys[0]).all():  # one group (a step table's tokens): no sort
            wanted, inverse = keys[:1], np.zeros(size, dtype=np.intp)
        else:
            wanted, inverse = np.unique(keys, axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
        logs = np.log2(1.0 + self.keys)
        for i, key in enumerate(wanted):
            at = inverse == i
            distance = np.abs(logs - np.log2(1.0 + key)).sum(axis=1)
            j = int(np.argmin(distance))
            # an op without a physics form (MLA) takes its nearest measured group as it is
            exact = distance[j] == 0 or self.op not in FORMS
            grid = self.grid(j) if exact else self._rescaled(key, j)
            out[at] = grid(sizes[at])
        return out

    def measured(self, shape: dict[str, np.ndarray]) -> np.ndarray:
        """Whether each shape's group (its fields other than the size axes) is one the rows
        measured exactly."""
        if not self.group:
            return np.ones(len(shape[self.axes[0]]), dtype=bool)
        keys = np.stack([shape[g] for g in self.group], axis=1)
        return (keys[:, None, :] == self.keys[None, :, :]).all(axis=2).any(axis=1)

    def _rescaled(self, key: np.ndarray, j: int) -> LogGrid:
        """Measured group ``j``'s grid scaled cell by cell by the physics from its shape to
        ``key``'s, kept non-decreasing (built once a pair)."""
        pair = (tuple(key.tolist()), j)
        if pair not in self._between:
            ours, theirs = self._physics(key), self._physics(self.keys[j])
            self._between[pair] = self.grid(j).rescaled(lambda s: ours(s) / theirs(s))
        return self._between[pair]


@cache
def _clock(folder: str, op: str, variant: str, distribution: str, sheet: Sheet) -> Clock | None:
    """The Clock of one table's rows, built once; None where the table has none of them (a
    variant read with ``LOW_LATENCY_VARIANT`` takes its format's physics form)."""
    rows = table_rows(folder, op, variant, distribution)
    form = variant.removesuffix(LOW_LATENCY_VARIANT)
    return Clock(op, form, sheet, rows) if len(rows) else None


def _price(gpu: Any, op: str, variant: str, shape: dict[str, Any], distribution="balanced"):
    """Seconds of ``op`` at ``variant`` over the shapes broadcast together: from the part's
    table where it has one of this variant, else from the physics form."""
    arrays = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in shape.values()))
    flat = {k: a.reshape(-1) for k, a in zip(shape, arrays)}
    sheet = Sheet.of(gpu)
    folder = kernel_folder(getattr(gpu, "name", ""))
    clock = None
    if folder and variant in table_variants(folder, op):
        clock = _clock(folder, op, variant, distribution, sheet)
    seconds = clock(flat) if clock is not None else physics_s(op, variant, sheet, flat)
    return seconds.reshape(arrays[0].shape if arrays else ())


def _sizes(minimum: float = 1.0, **values: Any) -> dict[str, np.ndarray]:
    """The named size arrays, each checked finite and at least ``minimum``."""
    out = {}
    for name, value in values.items():
        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise SpecError(
                "argument", name, f"is not a number or array of numbers: {value!r}"
            ) from None
        bad = ~np.isfinite(array) | (array < minimum)
        if bad.any():
            got = array[bad].reshape(-1)[0]
            raise SpecError(
                "argument",
                name,
                f"must be a finite number of at least {minimum:g}, got {got:g}",
                "sizes are counts of tokens, sequences, positions, heads or bytes",
            )
        out[name] = array
    return out


def _choice(name: str, value: Any, known: Any) -> str:
    """``value`` (after FORMAT_ALIASES) if it is one of ``known``; else a SpecError naming it."""
    chosen = FORMAT_ALIASES.get(str(value), str(value))
    if chosen not in known:
        raise SpecError("argument", name, f"unknown value {value!r}", f"one of {', '.join(known)}")
    return chosen


def gemm_s(gpu: Any, dtype: str, m: Any, n: Any, k: Any) -> np.ndarray:
    """Seconds of a GEMM of ``m`` tokens, ``n`` outputs, ``k`` inputs with ``dtype`` weights
    (bfloat16, fp8, fp8_block, nvfp4) on ``gpu``."""
    fmt = _choice("dtype", dtype, GEMM_FORMATS)
    return _price(gpu, "gemm", fmt, _sizes(m=m, n=n, k=k))


def generation_attention_s(
    gpu: Any, kv_dtype: str, batch: Any, positions: Any, heads: Any, kv_heads: Any,
    head_dim: Any, window: Any = 0,
) -> np.ndarray:  # fmt: skip
    """Seconds of one decode step's attention in one layer: ``batch`` sequences each reading
    ``positions`` cached positions (capped at ``window`` where it is above 0) of a ``kv_dtype``
    cache, ``heads`` query and ``kv_heads`` key/value heads of ``head_dim``."""
    fmt = _choice("kv_dtype", kv_dtype, ATTENTION_FORMATS)
    shape = _sizes(
        batch=batch, positions=positions, heads=heads, kv_heads=kv_heads, head_dim=head_dim
    )
    shape.update(_sizes(0.0, window=window))
    return _price(gpu, "generation_attention", fmt, shape)


def context_attention_s(
    gpu: Any, dtype: str, batch: Any, tokens: Any, heads: Any, kv_heads: Any, head_dim: Any,
    window: Any = 0,
) -> np.ndarray:  # fmt: skip
    """Seconds of causal prompt attention in one layer: ``batch`` prompts of ``tokens``
    tokens, no cached prefix, arithmetic and cache in ``dtype`` (bfloat16, fp8)."""
    fmt = _choice("dtype", dtype, ATTENTION_FORMATS)
    shape = _sizes(batch=batch, tokens=tokens, heads=heads, kv_heads=kv_heads, head_dim=head_dim)
    shape.update(_sizes(0.0, window=window))
    return _price(gpu, "context_attention", fmt, shape)


def mla_s(
    gpu: Any, kv_dtype: str, batch: Any, heads: Any, positions: Any = None, tokens: Any = None
) -> np.ndarray | None:
    """Seconds of one layer's multi-head latent attention (DeepSeek's MLA: one latent KV head
    of 512 + 64 rope dimensions that ``heads`` query heads a GPU runs attend to) from
    TensorRT-LLM's MLA kernel tables: a decode step of ``batch`` sequences over ``positions``
    cached positions, or (``tokens`` given) ``batch`` causal prompts of ``tokens`` tokens with
    no cached prefix. None on a part without the tables (the caller prices it as a GQA
    attention of one KV head): their kernel is not the GQA tables' one, whose 128 query heads
    over one 128-wide KV head run many times slower than the MLA kernel's."""
    fmt = _choice("kv_dtype", kv_dtype, ATTENTION_FORMATS)
    op = "generation_mla" if tokens is None else "context_mla"
    folder = kernel_folder(getattr(gpu, "name", ""))
    if not folder or fmt not in table_variants(folder, op):
        return None
    size = _sizes(positions=positions) if tokens is None else _sizes(tokens=tokens)
    return _price(gpu, op, fmt, {**_sizes(batch=batch), **size, **_sizes(heads=heads)})


def allreduce_s(gpu: Any, ranks: Any, nbytes: Any) -> np.ndarray:
    """Seconds of the engine's own all-reduce of ``nbytes`` over ``ranks`` GPUs of one node
    (0 on one rank)."""
    return _collective(gpu, "allreduce", CUSTOM, ranks, nbytes)


def collective_s(gpu: Any, op: str, ranks: Any, nbytes: Any) -> np.ndarray:
    """Seconds of NCCL's ``op`` (all_reduce, all_gather, reduce_scatter, alltoall) of a
    message of ``nbytes`` over ``ranks`` GPUs of one node (0 on one rank)."""
    return _collective(gpu, "collective", _choice("op", op, COLLECTIVES), ranks, nbytes)


def _collective(gpu: Any, op: str, variant: str, ranks: Any, nbytes: Any) -> np.ndarray:
    """A collective's seconds: none on one rank, else priced at no fewer than one byte."""
    shape = _sizes(ranks=ranks)
    shape.update(_sizes(0.0, nbytes=nbytes))
    alone = shape["ranks"] < 2.0
    shape = {"ranks": np.maximum(shape["ranks"], 2.0), "nbytes": np.maximum(shape["nbytes"], 1.0)}
    return np.where(alone, 0.0, _price(gpu, op, variant, shape))


def moe_s(
    gpu: Any, dtype: str, tokens: Any, hidden: Any, inter: Any, topk: Any, experts: Any,
    tp: Any, ep: Any, distribution: str = "balanced",
) -> np.ndarray:  # fmt: skip
    """Seconds of a fused MoE layer over ``tokens`` tokens routed to ``topk`` of ``experts``
    experts of ``hidden`` x ``inter``, split ``tp`` x ``ep``, routed as ``distribution``."""
    fmt = _choice("dtype", dtype, MOE_FORMATS)
    routing = _choice("distribution", distribution, EXPERT_ROUTINGS)
    shape = _sizes(
        tokens=tokens, hidden=hidden, inter=inter, topk=topk, experts=experts, tp=tp, ep=ep
    )
    seconds = np.asarray(_price(gpu, "moe", fmt, shape, routing), dtype=float)
    folder = kernel_folder(getattr(gpu, "name", ""))
    if folder and fmt in table_variants(folder, "moe"):  # the low-latency kernel where it runs
        low = _clock(folder, "moe", fmt + LOW_LATENCY_VARIANT, routing, Sheet.of(gpu))
        if low is not None:
            arrays = np.broadcast_arrays(*shape.values())
            flat = {k: a.reshape(-1) for k, a in zip(shape, arrays)}
            use = (flat["tokens"] <= MOE_LOW_LATENCY_MAX_TOKENS) & low.measured(flat)
            if use.any():
                out = seconds.reshape(-1).copy()
                out[use] = low({k: v[use] for k, v in flat.items()})
                seconds = out.reshape(seconds.shape)
    return seconds


def pass_s(gpu: Any, op: str, tokens: Any, width: Any) -> np.ndarray:
    """Seconds of per-token pass ``op`` (add_rmsnorm, silu_mul, rope, sample_greedy; widths
    as kernels/README.md gives them) over ``tokens`` rows of ``width``."""
    name = _choice("op", op, PASSES)
    return _price(gpu, "pass", name, _sizes(tokens=tokens, width=width))
