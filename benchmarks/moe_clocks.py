"""The engine step's charge for one fused MoE layer against TensorRT-LLM's measured kernel, by
part, format and token band (docs/model-part-f.md §F7 "The fused MoE by format").

Reads the shipped MoE tables (``kernels/<gpu>/trtllm-1.3.0rc20/moe.csv.gz``, AIConfigurator
095f58a: TensorRT-LLM 1.3.0rc20's fused MoE, routing permutation, gated grouped GEMMs and
un-permutation timed together; kernels/README.md) and, for the expert shapes of four models
(DeepSeek-V3/R1 7,168 x 2,048, 256 experts, top 8; gpt-oss-120b 2,880 x 2,880, 128, top 4;
Qwen3-235B 4,096 x 1,536, 128, top 8; Mixtral 8x7B 4,096 x 14,336, 8, top 2), balanced
routing, TP 1, the kernel path TensorRT-LLM runs for the format (CUTLASS for BF16, FP8, block
FP8 and NVFP4, NVFP4's low-latency kernel up to 128 tokens where timed; ``moe_torch_flow`` for
MXFP4), every EP degree, prints the median of the
model's charge over the measured time at <= 16, 17-256, 257-2,048 and > 2,048 tokens.

The model's charge is what ``EngineStep.part`` gives one MoE layer of that shape on one rank
(the grouped GEMM's binomially padded rows at the format's rate, the expert imbalance over
the EP ranks, the experts' size factor and the part's plateau share, the weights of the
experts hit), summed by ``efficiency.combine``'s GEMM roofline: the larger of memory and
arithmetic, plus the fixed cost.

    PYTHONPATH=. python benchmarks/moe_clocks.py [--before]

``--before`` charges every format at the engine profile's one plateau (no per-format
factor), as the engine step did before ``moe_format_factor``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import inference_econ as ie  # noqa: E402
from inference_econ.model.efficiency import (  # noqa: E402
    StepWork,
    combine,
    expected_expert_rows,
    expert_imbalance,
    expert_size_factor,
)
from inference_econ.model.kernel_prices import (  # noqa: E402
    LOW_LATENCY_VARIANT,
    MOE_LOW_LATENCY,
    MOE_LOW_LATENCY_MAX_TOKENS,
    moe_table,
)
from inference_econ.model.machine import Machine  # noqa: E402
from inference_econ.model.moe import EP_GRID, ROUTINGS, TOKEN_GRID, moe_format_factor  # noqa: E402

GPUS = {"h100_sxm": "H100-SXM", "h200_sxm": "H200", "b200_sxm": "B200", "gb200": "GB200"}
#: dtype -> (bits the model charges the grouped GEMM at on a part with FP4 tensor cores, on
#: one without, stored bits a weight).
FORMATS = {
    "bfloat16": (16, 16, 16.0),
    "fp8": (8, 8, 8.0),
    "fp8_block": (8, 8, 8.0 + 32.0 / 128 / 128),
    "nvfp4": (4, 4, 4.5),
    "nvfp4" + LOW_LATENCY_VARIANT: (4, 4, 4.5),
    "w4a8_mxfp4_mxfp8": (8, 16, 4.25),
    "w4a16_mxfp4": (16, 16, 4.25),
}
#: name: (hidden, intermediate, experts, top-k)
SHAPES = {
    "DeepSeek": (7168, 2048, 256, 8),
    "gpt-oss": (2880, 2880, 128, 4),
    "Qwen3": (4096, 1536, 128, 8),
    "Mixtral": (4096, 14336, 8, 2),
}
BANDS = ((1, 16), (17, 256), (257, 2048), (2049, 1 << 30))
#: The tables of each family of parts (kernels/ folder, catalogue name).
TABLES = {
    "hopper": (("h100_sxm", "H100-SXM"), ("h200_sxm", "H200")),
    "blackwell": (("b200_sxm", "B200"), ("gb200", "GB200")),
}
#: The formats the plateau is fitted on, and the formats given a factor on each family. On
#: Blackwell per-tensor FP8 has one too: the part's plateau share is read from these tables,
#: and FP8's median stands apart from BF16's. On Hopper the engine's MoE terms are fitted to
#: measured runs of FP8 experts (MLPerf's Mixtral), which a factor on top would undo.
REFERENCE = ("bfloat16", "fp8")
FAMILY_FORMATS = {
    "hopper": ("fp8_block", "w4a16_mxfp4"),
    "blackwell": (
        "fp8",
        "fp8_block",
        "nvfp4",
        "nvfp4" + LOW_LATENCY_VARIANT,
        "w4a8_mxfp4_mxfp8",
        "w4a16_mxfp4",
    ),
}


def charge(gpu, dtype, tokens, shape, ep, before=False):
    """The engine step's seconds for one fused MoE layer of ``shape`` on one of ``ep`` ranks."""
    h, i, experts, k = shape
    fp4 = gpu.peak_flop_per_s(4) > gpu.peak_flop_per_s(8) * (1 + 1e-9)
    bits, hopper_bits, stored = FORMATS[dtype]
    engine = ie.preset("achievable")
    prof = engine.profile()
    m = Machine.build(gpu, bits if fp4 else hopper_bits, engine)
    rows = expected_expert_rows(tokens, k, experts, float(prof.gemm_tile_tokens))
    gemm_s = 6.0 * h * i * rows / (ep * m.gemm_rate)
    hit = experts * (1.0 - (1.0 - k / experts) ** tokens)
    weights = hit * 3.0 * h * i * stored / 8.0 / (ep * m.gpu.hbm_bandwidth_bytes_per_s)
    # the format's factor on the GEMM and the weight reads, as ``EngineStep.part`` applies it
    fmt = 1.0 if before else moe_format_factor(m.gpu, dtype, shape, ep, tokens)
    values = dict.fromkeys((f.name for f in dataclasses.fields(StepWork)), 0.0)
    values.update(
        weight_read_s=fmt * weights,
        expert_weight_read_s=fmt * weights,
        expert_gemm_s=fmt * gemm_s,
        expert_volume=rows / ep * h * i,
        expert_imbalance=expert_imbalance(tokens, k, experts, ep, prof.expert_routing_skew),
        expert_size=expert_size_factor(h * i, prof.moe_expert_half_params),
        power_derating=m.gemm_power_derating,
        moe_share=m.moe_plateau_share,
    )
    t = combine(StepWork(**values), prof)
    return np.maximum(t.gemm_memory_s, t.gemm_compute_s) + t.gemm_fixed_s


def balanced_tp1(t, dtype, gated=False):
    """The rows of a part's MoE table at ``dtype`` on a kernel path TensorRT-LLM runs for it
    (the MXFP4 formats through ``moe_torch_flow``, the others through CUTLASS; a format
    ending in ``LOW_LATENCY_VARIANT``, its low-latency kernel up to
    ``MOE_LOW_LATENCY_MAX_TOKENS``), balanced routing, TP 1. ``gated``: NVFP4's rows as the
    engine runs them, the low-latency kernel's up to that many tokens where the table times
    the call, CUTLASS's otherwise (as the kernel clock reads them)."""
    name = dtype.removesuffix(LOW_LATENCY_VARIANT)
    source = "moe_torch_flow" if "mxfp4" in dtype else "moe_torch_flow_cutlass"
    base = (t["moe_dtype"] == name) & (t["distribution"] == "balanced") & (t["moe_tp_size"] == 1)
    low = base & (t["kernel_source"] == MOE_LOW_LATENCY)
    low &= t["num_tokens"] <= MOE_LOW_LATENCY_MAX_TOKENS
    if dtype != name:
        return low
    at = base & (t["kernel_source"] == source)
    if dtype != "nvfp4" or not gated:
        return at
    keys = np.stack([np.asarray(t[c]) for c in CALL[2:]], axis=1)
    timed_low = {tuple(k) for k in keys[low].tolist()}
    (rows,) = np.nonzero(at)
    replaced = np.zeros(len(at), dtype=bool)
    replaced[rows] = [tuple(k) in timed_low for k in keys[rows].tolist()]
    return (at & ~replaced) | low


def rows_of(folder, gpu, before):
    """(shape, dtype, ep, band, median charge / measured, rows) of one part's table."""
    t = moe_table(folder)
    for name, shape in SHAPES.items():
        h, i, experts, k = shape
        for dtype in (d for d in FORMATS if not d.endswith(LOW_LATENCY_VARIANT)):
            at = (
                balanced_tp1(t, dtype, gated=True)
                & (t["hidden_size"] == h)
                & (t["inter_size"] == i)
                & (t["num_experts"] == experts)
                & (t["topk"] == k)
            )
            for ep in np.unique(t["moe_ep_size"][at]):
                sel = at & (t["moe_ep_size"] == ep)
                tokens = t["num_tokens"][sel].astype(float)
                ratio = charge(gpu, dtype, tokens, shape, float(ep), before) / (
                    t["latency_ms"][sel] * 1e-3
                )
                for lo, hi in BANDS:
                    keep = (tokens >= lo) & (tokens <= hi)
                    if keep.any():
                        band = f"{lo}-{hi}" if hi < 1 << 30 else f">{lo - 1}"
                        yield name, dtype, int(ep), band, float(np.median(ratio[keep])), keep.sum()


def factors():
    """kernels/moe_formats.yaml: for each family's tables, format and expert shape the format
    is measured at (experts, hidden, intermediate, top-k), at each EP degree of ``EP_GRID`` and
    token count of ``TOKEN_GRID``, the median over every shape of charge / measured of BF16 and
    per-tensor FP8 (the formats the engine's plateau is fitted on) over the shape's own median
    of the format, every row of the family's parts with tokens within a factor 2 of the grid
    point; gaps filled as ``_filled`` says."""
    out: dict = {}
    for family, parts in TABLES.items():
        pooled: dict = {}
        for folder, name in parts:
            gpu = ie.load_hardware(name)
            dtypes = tuple(dict.fromkeys(REFERENCE + FAMILY_FORMATS[family]))
            for key, r in ratios(folder, gpu, dtypes).items():
                pooled.setdefault(key, []).extend(r)

        def near(dtypes, ep, n, shape=None, pooled=pooled):
            return [
                x
                for (d, s, e, m), r in pooled.items()
                if d in dtypes and (shape is None or s == shape) and e == ep and n / 2 <= m <= 2 * n
                for x in r
            ]

        for fmt in FAMILY_FORMATS[family]:
            for shape in sorted({s for (d, s, _, _) in pooled if d == fmt}):
                rows = []
                for ep in EP_GRID:
                    row = []
                    for n in TOKEN_GRID:
                        ref, own = near(REFERENCE, ep, n), near((fmt,), ep, n, shape)
                        row.append(np.median(ref) / np.median(own) if ref and own else np.nan)
                    rows.append(row)
                out[(family, fmt, shape)] = _filled(rows, 3)
    return out


#: The columns that name one measured MoE call apart from its routing.
CALL = (
    "kernel_source",
    "moe_dtype",
    "num_tokens",
    "hidden_size",
    "inter_size",
    "topk",
    "num_experts",
    "moe_ep_size",
)


def routing_factors():
    """``kernels/moe_routing.yaml``: for each family's tables, routing of ``ROUTINGS`` and count
    of experts the tables measure, at each EP degree of ``EP_GRID`` and token count of
    ``TOKEN_GRID``, the median of a call's measured time under that routing over its time under
    ``balanced`` routing (the same kernel, format, shape, EP degree and tokens; TP 1), every
    call of the family's parts with that many experts and tokens within a factor 2 of the grid
    point. An EP degree above what a count's calls reach holds the largest measured one's row;
    a token count none reach, the nearest measured one's."""
    out: dict = {}
    for family, parts in TABLES.items():
        pooled: dict = {}
        for folder, _ in parts:
            t = moe_table(folder)
            tp1 = np.asarray(t["moe_tp_size"]) == 1
            calls = list(zip(*(np.asarray(t[c]).tolist() for c in CALL)))
            latency = np.asarray(t["latency_ms"], dtype=float)
            routing = np.asarray(t["distribution"])
            balanced = {calls[i]: latency[i] for i in np.flatnonzero(tp1 & (routing == "balanced"))}
            for name in ROUTINGS:
                for i in np.flatnonzero(tp1 & (routing == name)):
                    base = balanced.get(calls[i])
                    if base:
                        key = (name, int(calls[i][6]), int(calls[i][7]), int(calls[i][2]))
                        pooled.setdefault(key, []).append(latency[i] / base)
        for name in ROUTINGS:
            for experts in sorted({k[1] for k in pooled if k[0] == name}):
                out[(family, name, experts)] = _grid(pooled, name, experts)
    return out


def _grid(pooled, name, experts):
    """One count's grid of ``routing_factors``, its gaps filled as ``_filled`` says."""
    rows = []
    for ep in EP_GRID:
        row = []
        for n in TOKEN_GRID:
            near = [
                x
                for (r, x_experts, e, m), v in pooled.items()
                if r == name and x_experts == experts and e == ep and n / 2 <= m <= 2 * n
                for x in v
            ]
            row.append(float(np.median(near)) if near else np.nan)
        rows.append(row)
    return _filled(rows, 3)


def _filled(rows, digits):
    """A grid (rows ``EP_GRID``) with its gaps filled and rounded to ``digits``: an EP degree
    beyond those measured holds the nearest measured one's row; a token count none reach, the
    nearest measured one's."""
    grid = np.asarray(rows, dtype=float)
    have = np.flatnonzero(~np.isnan(grid).all(axis=1))
    for i in np.flatnonzero(np.isnan(grid).all(axis=1)):
        grid[i] = grid[have[np.argmin(np.abs(have - i))]]
    for r in grid:
        have = np.flatnonzero(~np.isnan(r))
        for j in np.flatnonzero(np.isnan(r)):
            r[j] = r[have[np.argmin(np.abs(have - j))]]
    return tuple(tuple(round(float(x), digits) for x in r) for r in grid)


SOURCE = [
    "# Source: NVIDIA AIConfigurator's fused-MoE tables (TensorRT-LLM 1.3.0rc20; github.com/",
    "# ai-dynamo/aiconfigurator at 095f58a51c4ca8e61b66ec108d86f223f8d559ce, aic-core/src/",
    "# aiconfigurator_core/systems/data/<gpu>/moe/trtllm/1.3.0rc20/moe_perf.parquet; Apache-2.0,",
    "# kernels/LICENSE-aiconfigurator), as shipped in kernels/<gpu>/trtllm-1.3.0rc20/moe.csv.gz.",
]
ROUTING_HEADER = [
    "# The fused MoE's measured time under the routing real tokens take over its time under",
    "# balanced routing (every expert the same count), by family of parts, routing and",
    "# count of experts: rows ep_grid (expert-parallel degree), columns token_grid (tokens",
    "# of the layer, the EP group's). Each cell is the median over the calls of the family's",
    "# parts' tables with that many experts (every kernel path, format and expert shape; TP 1)",
    "# with tokens within a factor 2 of the cell's; an EP degree none of a count's calls reach",
    "# holds the nearest measured one's row, a token count none reach the nearest one's.",
]
FORMAT_HEADER = [
    "# The factor on the engine step's fused-MoE charge for a format with its own kernel (and",
    "# per-tensor FP8 on Blackwell), by family of parts, format and expert shape (hidden x",
    "# intermediate x experts x top-k):",
    "# rows ep_grid (expert-parallel degree), columns token_grid (tokens of the layer, the EP",
    "# group's). Each cell is the median of the engine step's charge over the measured time of",
    "# the reference formats (BF16 and per-tensor FP8, every shape) over the same median of the",
    "# format at that shape: balanced routing, TP 1, the kernel path TensorRT-LLM runs for the",
    "# format, the family's parts' calls with tokens within a factor 2 of the cell's; an EP",
    "# degree none of the shape's calls reach holds the nearest measured one's row, a token",
    "# count none reach the nearest one's.",
]


def write_factors(path: Path, header, factors_by_key) -> None:
    """Write factors keyed (family, name, key) as the YAML file the engine step reads."""
    script = "--routing --write" if header is ROUTING_HEADER else "--factors --write"
    lines = (
        header
        + SOURCE
        + [
            f"# Written by 'PYTHONPATH=. python benchmarks/moe_clocks.py {script}",
            f"# kernels/{path.name}': rerun it rather than edit. Factors are dimensionless.",
            f"ep_grid: [{', '.join(str(e) for e in EP_GRID)}]",
            f"token_grid: [{', '.join(str(n) for n in TOKEN_GRID)}]",
            "factors:",
        ]
    )
    last = (None, None)
    for (family, name, key), grid in factors_by_key.items():
        if family != last[0]:
            lines.append(f"  {family}:")
        if (family, name) != last:
            lines.append(f"    {name}:")
        last = (family, name)
        label = "x".join(str(x) for x in key) if isinstance(key, tuple) else str(key)
        lines.append(f"      {label}:" if isinstance(key, int) else f'      "{label}":')
        lines += ["        - [" + ", ".join(f"{x:.3f}" for x in row) + "]" for row in grid]
    path.write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", action="store_true", help="one plateau for every format")
    parser.add_argument("--factors", action="store_true", help="the format factors by shape")
    parser.add_argument("--routing", action="store_true", help="the routing factors by count")
    parser.add_argument("--write", type=Path, help="with --routing or --factors: to this file")
    args = parser.parse_args()
    start = time.process_time()
    if args.routing or args.factors:
        found = routing_factors() if args.routing else factors()
        if args.write:
            write_factors(args.write, ROUTING_HEADER if args.routing else FORMAT_HEADER, found)
            print(f"wrote {args.write}")
        else:
            for (family, name, key), rows in found.items():
                print(f"{family} {name} {key}")
                for row in rows:
                    print("  " + " ".join(f"{x:5.2f}" for x in row))
        print(f"CPU {time.process_time() - start:.1f} s")
        return 0
    print(f"{'gpu':9s} {'shape':9s} {'dtype':17s} {'ep':>3s}  charge/measured by tokens")
    for folder, name in GPUS.items():
        gpu = ie.load_hardware(name)
        line = {}
        for shape, dtype, ep, band, r, _ in rows_of(folder, gpu, args.before):
            line.setdefault((shape, dtype, ep), []).append(f"{band}: {r:4.2f}")
        for (shape, dtype, ep), cells in line.items():
            print(f"{folder:9s} {shape:9s} {dtype:17s} {ep:3d}  " + "  ".join(cells))
    print(f"CPU {time.process_time() - start:.1f} s")
    return 0


def ratios(folder, gpu, dtypes):
    """{(dtype, shape, ep, tokens): [charge / measured]} of every balanced TP-1 row of
    ``dtypes`` on the part's table, on the kernel path TensorRT-LLM runs for each format."""
    t = moe_table(folder)
    out: dict = {}
    for dtype in dtypes:
        at = balanced_tp1(t, dtype) & (t["moe_ep_size"] <= t["num_experts"])
        keys = np.stack(
            [t[c][at] for c in ("hidden_size", "inter_size", "num_experts", "topk", "moe_ep_size")],
            1,
        )
        for key in np.unique(keys, axis=0):
            sel = np.flatnonzero(at)[np.all(keys == key, axis=1)]
            h, i, experts, k, ep = (int(x) for x in key)
            tokens = t["num_tokens"][sel].astype(float)
            r = charge(gpu, dtype, tokens, (h, i, experts, k), float(ep), before=True)
            r = r / (t["latency_ms"][sel] * 1e-3)
            for n, x in zip(tokens, r):
                out.setdefault((dtype, (h, i, experts, k), ep, int(n)), []).append(float(x))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
