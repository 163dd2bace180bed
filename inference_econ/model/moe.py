"""Mixture-of-experts terms of the engine step that depend on the expert kernel TensorRT-LLM runs
for a checkpoint's format (docs/model-part-f.md §F7 "The fused MoE by format").

The engine's fused-MoE plateau (``moe_gemm_efficiency`` times the part's ``moe_plateau_share``)
is fitted on BF16 and per-tensor FP8 experts, which every part runs on CUTLASS's grouped GEMMs.
Four-bit experts run on other kernels: NVFP4 on Blackwell's CUTLASS FP4 path; MXFP4 (gpt-oss)
as W4A8 MXFP4 x MXFP8 on Blackwell and as W4A16 (weights dequantised to BF16) on Hopper, both
through ``moe_torch_flow`` ("Default quantization for MXFP4 checkpoints on Hopper is
W4A16_MXFP4", W4A8_MXFP4_MXFP8 on Blackwell for the CUTLASS and TRTLLM backends:
github.com/NVIDIA/TensorRT-LLM/blob/04a2a26/docs/source/blogs/tech_blog/blog9_Deploying_GPT_OSS_on_TRTLLM.md).
Their speed relative to the reference formats changes with the expert-parallel degree and the
tokens of the step, which one plateau cannot hold, so the engine step multiplies such a group's
charge by a measured factor by expert shape (``moe_format_factor``, kernels/moe_formats.yaml).
Per-tensor FP8 has one on Blackwell, whose plateau share is read from the tables: without it
its grouped GEMMs were charged 0.74 of their measured time at 257-2,048 tokens on EP 8, where
BF16's were 1.03. On Hopper the engine's MoE terms are fitted to FP8 experts' measured runs.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..errors import SpecError
from ..specs.architecture import EXPERT_ROUTINGS
from ..specs.hardware import GPU
from ..specs.kernel_tables import moe_format_table, moe_routing_table
from .kernel_prices import LOW_LATENCY_VARIANT, MOE_LOW_LATENCY_MAX_TOKENS
from .workload import hit_share

#: Expert-parallel degrees and tokens of a MoE layer (the whole EP group's) the factors are
#: given at; between them the factor is interpolated in log2 of both, beyond them held.
EP_GRID = (1, 2, 4, 8, 16, 32, 64)
TOKEN_GRID = (1, 4, 16, 64, 256, 1024, 4096, 16384)

#: The parts whose fused MoE each family's tables time, and the parts of the same die: the
#: tables are AIConfigurator's ``moe_perf.parquet`` (TensorRT-LLM 1.3.0rc20) for h100_sxm and
#: h200_sxm (hopper) and b200_sxm and gb200 (blackwell), shipped as
#: kernels/<gpu>/trtllm-1.3.0rc20/moe.csv.gz (github.com/ai-dynamo/aiconfigurator @095f58a,
#: Apache-2.0). Other parts (RTX PRO, AMD, Intel, TPUs) have no factor: 1.
FAMILIES = {
    "hopper": (
        "H100-SXM", "H100-NVL", "H100-PCIe", "H200-SXM", "H200-NVL", "H800-SXM", "H20",
        "GH200-144GB", "GH200-96GB",
    ),
    "blackwell": ("B200-HGX", "B300-HGX", "GB200-NVL72", "GB300-NVL72"),
}  # fmt: skip

#: The routing of real tokens, as AIConfigurator reads its fused-MoE tables
#: (github.com/ai-dynamo/aiconfigurator @095f58a, aic-core/src/aiconfigurator_core/sdk/config.py:
#: ``workload_distribution = "power_law"``; sdk/models/deepseek.py ``_power_law_alpha = 1.01``
#: for DeepSeek's MLA family, sdk/models/moe.py 1.2 for its plain MoE family: Mixtral, Qwen3,
#: gpt-oss): a step's tokens pick some experts more than others. The tables time each call under
#: these routings and under ``balanced`` (every expert the same count). A model file states its
#: own where AIConfigurator reads another (Llama 4: ``expert_routing``).
ROUTINGS = EXPERT_ROUTINGS[1:]
MLA_ROUTING, MOE_ROUTING = ROUTINGS


def routing_of(model_class: str, stated: str | None = None) -> str:
    """The routing a model's experts see: the one its model file states (``stated``: Llama 4's,
    AIConfigurator's ``HYBRIDMOE`` family at 1.01), else DeepSeek's (MLA models) or the other
    MoE models'."""
    if stated is not None:
        return stated
    return MLA_ROUTING if model_class == "mla" else MOE_ROUTING


#: The busiest expert-parallel rank's routed tokens over the mean rank's when the engine's load
#: balancer (EPLB) spreads copies of the hottest experts: DeepSeek-R1 over 32 GB200 on a
#: machine-translation set, the mean over MoE layers and steps of (max - mean)/mean, 0.109 with
#: 288 slots over EP 32 and 0.115 over EP 36, against 1.564 with none (TensorRT-LLM's tech blog
#: "Scaling Expert Parallelism in TensorRT-LLM (Part 1)", Table 1:
#: github.com/NVIDIA/TensorRT-LLM/blob/1d263f1/docs/source/blogs/tech_blog/blog4_Scaling_Expert_Parallelism_in_TensorRT-LLM.md).
EPLB_RANK_LOAD = 1.11


def fewest_copies(experts: int, ep: int) -> int:
    """The fewest redundant experts that split ``experts`` and their copies evenly over ``ep``
    ranks (EP72 of DeepSeek's 256 experts: 32, 288 slots); 0 where ``ep`` divides them."""
    if experts <= 1 or ep <= 1 or experts % ep == 0:
        return 0
    return -(-experts // ep) * ep - experts


def balanced_slots(experts, copies, ep):
    """Where ``copies`` redundant experts beside ``experts`` balance a layout's load: the
    experts parallel (``ep`` > 1) and the slots split evenly over its ranks, as every engine's
    balancer requires (SGLang's and vLLM's num_physical_experts % ep_size, TensorRT-LLM's
    num_slots % ep_size; the export refuses other counts). Elsewhere the copies take memory
    only. Arrays broadcast."""
    e = np.asarray(ep, dtype=float)
    slots = np.asarray(experts, dtype=float) + float(copies)
    return (e > 1.0) & (np.mod(slots, np.maximum(e, 1.0)) == 0.0)


def slots_read_share(experts, active, slots, tokens):
    """Routed-expert weights ``tokens`` tokens read from ``slots`` slots holding ``experts``
    experts and their copies, over those they read from the experts alone: the slots they are
    expected to hit over the experts (uniform picks of ``active`` each, §A2's rule). 1 without
    copies or at one token; ``slots / experts`` once every slot is hit. Arrays broadcast."""
    t = np.maximum(np.asarray(tokens, dtype=float), 0.0)
    e, s = float(experts), float(slots)
    k = min(float(active), e)
    hit, held = e * hit_share(k / e, t), s * hit_share(k / s, t)
    return np.where(hit > 0.0, held / np.maximum(hit, 1e-300), 1.0)


def eplb_routing_factor(factor, spread):
    """The routing factor on a balanced fused-MoE charge under EPLB: the busiest rank at
    ``EPLB_RANK_LOAD`` times the mean, over the ``spread`` the charge already holds
    (``efficiency.expert_imbalance``; at least 1), and never above the unbalanced ``factor``
    (a few tokens hit fewer experts than balanced routing reads, < 1, which copies keep)."""
    cap = np.maximum(EPLB_RANK_LOAD / np.maximum(np.asarray(spread, dtype=float), 1e-300), 1.0)
    return np.minimum(factor, cap)


#: The tables' format of block-scaled FP8 (128 x 128 weight blocks: DeepSeek-V3's checkpoint).
BLOCK_FP8 = "fp8_block"
#: The tables' format of per-tensor FP8 (one scale a tensor: ModelOpt's FP8 checkpoints).
TENSOR_FP8 = "fp8"


def expert_kernel_format(
    gpu: GPU, weight_bits: float, gemm_bits: float | None, block_scaled: bool = False
) -> str | None:
    """The format name of the moe tables TensorRT-LLM runs a checkpoint's experts at on ``gpu``
    (None: BF16, the unquantised path, or a format without a factor). MX weights (a fractional
    width below 8: MXFP4's 4.25 bits) take the W4A8 kernel on a part with 4-bit tensor cores
    and 8-bit GEMM activations, else the W4A16 one; 4-bit weights on such a part are NVFP4;
    8-bit weights with block scales (``block_scaled``) the block-scaled FP8 one, without them
    and with 8-bit GEMM activations the per-tensor FP8 one."""
    fp4 = gpu.peak_flop_per_s(4) > gpu.peak_flop_per_s(8) * (1 + 1e-9)
    bits = float(weight_bits)
    if block_scaled and np.floor(bits) == 8:
        return BLOCK_FP8
    if bits == 8 and gemm_bits == 8:
        return TENSOR_FP8
    if bits < 8 and bits != np.floor(bits):
        return "w4a8_mxfp4_mxfp8" if fp4 and gemm_bits == 8 else "w4a16_mxfp4"
    if bits == 4 and fp4:
        return "nvfp4"
    return None


def family_of(gpu: GPU) -> str | None:
    """The family of tables a part's fused MoE is measured by (``FAMILIES``), or None. A part
    derived from another (``derive_from``) runs its base's kernels: its base's family."""
    parts = (gpu.name, *gpu.derived_from)
    return next((f for p in parts for f, names in FAMILIES.items() if p in names), None)


def moe_format_factor(gpu: GPU, fmt: str | None, shape, ep, tokens):
    """The factor on the engine step's charge for a routed-expert group of format ``fmt``
    (``expert_kernel_format``) and expert ``shape`` (hidden, intermediate, experts, top-k) over
    ``ep`` expert-parallel ranks at ``tokens`` tokens of the layer (the EP group's): the grid
    of kernels/moe_formats.yaml measured at the shape nearest ``shape`` (``nearest_shape``),
    interpolated in log2 of the EP degree and the tokens, held beyond the grid; 1 for a
    reference format or a part without tables. Up to ``MOE_LOW_LATENCY_MAX_TOKENS`` a call the
    grid of the format's low-latency kernel where that shape has one (NVFP4: the kernel
    TensorRT-LLM runs there, as the kernel clock reads it on B200 and GB200; B300's and GB300's
    tables lack it, so there the kernel clock reads the CUTLASS kernel, kernels/README.md).
    Arrays broadcast."""
    family = family_of(gpu) or ""
    grids = format_grids(family, fmt or "")
    if not grids:
        return _on_grid(None, ep, tokens)
    near = nearest_shape(shape, tuple(grids))
    factor = _on_grid(grids[near], ep, tokens)
    low = format_grids(family, f"{fmt}{LOW_LATENCY_VARIANT}").get(near)
    if low is None:
        return factor
    few = np.asarray(tokens, dtype=float) <= MOE_LOW_LATENCY_MAX_TOKENS
    out = np.where(few, _on_grid(low, ep, tokens), factor)
    return float(out) if np.ndim(out) == 0 else out


def nearest_shape(shape, measured):
    """The expert shape of ``measured`` nearest ``shape`` (hidden, intermediate, experts,
    top-k): the least sum of absolute log2 ratios of the four, so a model's own shape is
    itself where the tables measure it."""
    want = np.log2(np.maximum(np.asarray(shape, dtype=float), 1.0))
    return min(measured, key=lambda s: float(np.abs(np.log2(np.asarray(s, float)) - want).sum()))


@lru_cache(maxsize=16)
def format_grids(family: str, fmt: str):
    """{expert shape: grid} of one family and format in kernels/moe_formats.yaml ({}: none),
    checked against ``EP_GRID`` and ``TOKEN_GRID``."""
    data = _checked(moe_format_table(), "moe_formats.yaml", "--factors")
    by_shape = data["factors"].get(family, {}).get(fmt) or {}
    return {
        tuple(int(x) for x in str(key).split("x")): tuple(map(tuple, rows))
        for key, rows in by_shape.items()
    }


def moe_routing_factor(gpu: GPU, routing: str, experts, ep, tokens):
    """The factor on the engine step's fused-MoE charge (calibrated on balanced routing) for
    the routing real tokens take (``routing_of``) through ``experts`` experts over ``ep``
    expert-parallel ranks at ``tokens`` tokens of the layer (the EP group's): the measured
    time so routed over the time balanced (kernels/moe_routing.yaml; fewer experts are hit at
    a few tokens, < 1; the busiest rank holds more rows at many, > 1), interpolated in log2 of
    the experts, the EP degree and the tokens, held beyond the counts measured; 1 on a part
    without tables. Arrays broadcast."""
    grids = _routing_grids(family_of(gpu) or "", routing)
    if grids is None:
        return _on_grid(None, ep, tokens)
    counts, tables = grids
    x = np.interp(np.log2(max(float(experts), 1.0)), np.log2(counts), np.arange(len(counts)))
    i = min(int(np.floor(x)), len(counts) - 2) if len(counts) > 1 else 0
    u = x - i
    low = _on_grid(tables[i], ep, tokens)
    if len(counts) == 1 or u == 0.0:
        return low
    return low * (1.0 - u) + _on_grid(tables[i + 1], ep, tokens) * u


@lru_cache(maxsize=8)
def _routing_grids(family: str, routing: str):
    """(counts of experts, their grids) of one family and routing in kernels/moe_routing.yaml
    (None: none), checked against ``EP_GRID`` and ``TOKEN_GRID``."""
    data = _checked(moe_routing_table(), "moe_routing.yaml", "--routing")
    by_count = data["factors"].get(family, {}).get(routing)
    if not by_count:
        return None
    counts = sorted(int(c) for c in by_count)
    return np.asarray(counts, dtype=float), [tuple(map(tuple, by_count[c])) for c in counts]


def _checked(data, name, option):
    """A factors file's data, refused (SpecError) where its grid is not ``EP_GRID`` by
    ``TOKEN_GRID``."""
    if tuple(data["ep_grid"]) != EP_GRID or tuple(data["token_grid"]) != TOKEN_GRID:
        raise SpecError(
            f"kernels/{name}",
            "ep_grid",
            "is not the grid model/moe.py interpolates on",
            f"regenerate it with benchmarks/moe_clocks.py {option} --write",
        )
    return data


def _on_grid(table, ep, tokens):
    """A factor table (rows ``EP_GRID``, columns ``TOKEN_GRID``) interpolated in log2 of both
    at ``ep`` and ``tokens``, held beyond the grid; 1 where there is no table."""
    shape = np.broadcast(np.asarray(ep, dtype=float), np.asarray(tokens, dtype=float)).shape
    if table is None:
        return np.ones(shape) if shape else 1.0
    grid = np.asarray(table)
    x = _position(ep, EP_GRID)
    y = _position(tokens, TOKEN_GRID)
    x, y = np.broadcast_arrays(x, y)
    i, j = (
        np.minimum(np.floor(x).astype(int), len(EP_GRID) - 2),
        np.minimum(np.floor(y).astype(int), len(TOKEN_GRID) - 2),
    )
    u, v = x - i, y - j
    out = (
        grid[i, j] * (1 - u) * (1 - v)
        + grid[i + 1, j] * u * (1 - v)
        + grid[i, j + 1] * (1 - u) * v
        + grid[i + 1, j + 1] * u * v
    )
    return out if shape else float(out)


def _position(values, grid):
    """Fractional index of ``values`` on a grid of powers of two (log2 spacing), clipped to it."""
    v = np.log2(np.maximum(np.asarray(values, dtype=float), 1.0))
    g = np.log2(np.asarray(grid, dtype=float))
    return np.interp(v, g, np.arange(len(g), dtype=float))


def redundant_note(experts: int, copies: int, expert_degrees) -> str | None:
    """The line saying where ``copies`` redundant experts beside ``experts`` routed experts take
    memory only (``balanced_slots``): on layouts whose expert degree once batches are large
    (``expert_degrees``: ``step_calls.whole_expert_degrees``') is 1 or does not divide the
    slots; with the nearest counts that do. None without copies, or where every layout
    balances them."""
    if copies <= 0 or experts <= 1:
        return None
    degrees = sorted({int(e) for e in expert_degrees})
    idle = [e for e in degrees if not balanced_slots(experts, copies, e)]
    if not idle:
        return None
    e = max(idle)
    where = "" if len(degrees) == 1 else " on layouts of " + ", ".join(f"EP{d}" for d in idle)
    if e <= 1:
        return (
            f"{copies} redundant experts take memory only{where}: no expert parallelism, and "
            "balancers move experts between expert-parallel ranks"
        )
    over = (experts + copies) % e
    near = [c for c in (copies - over, copies + e - over) if c > 0]
    return (
        f"{copies} redundant experts take memory only{where}: {experts + copies} expert slots "
        f"do not split evenly over EP{e}, as every engine's balancer needs; give "
        + " or ".join(map(str, near))
    )
