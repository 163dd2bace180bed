"""DeepSeek-R1's engine step on 8 B200 with attention DP, kernel class by kernel class, against
NVIDIA AIConfigurator's measured TensorRT-LLM kernels (docs/model.md §F9 "DeepSeek-R1's step
against measured kernels").

Builds the model's step (``mixed_step_work`` under the ``trtllm`` profile, achievable
assumptions) of DeepSeek-R1 at FP4 (weights 4 bits, KV cache 8) on 8 B200, TP8 with EP8 and
attention DP (TensorRT-LLM's MLPerf layout): ``--decode`` requests decoding per rank at
``--context`` tokens of context, plus ``--prompt`` prompt tokens per rank (one whole prompt a
rank, as in MLPerf's runs without chunked prefill). Then the same step from AIConfigurator's
tables, per rank and per step (61 layers: 3 dense, 58 MoE), op by op as AIConfigurator composes
a DeepSeek step for TensorRT-LLM (``sdk/models/deepseek.py``, its TP1-attention, attention-DP
branch):

* projections: fused q_a+kv_a (7,168 -> 2,112), q_b (1,536 -> 24,576) and o_proj
  (16,384 -> 7,168) GEMMs at the rank's tokens; the absorbed kv_b BMMs of the decoding tokens
  (``mla_bmm_perf``, FP8) and the prompt's kv_b GEMM (512 -> 32,768);
* attention: the MLA generation kernel at the rank's decode batch and context
  (``generation_mla_perf``, 128 heads, FP8 KV) and the MLA context kernel of the prompt
  (``context_mla_perf``);
* dense GEMMs: the shared expert (7,168 -> 4,096 -> 7,168, NVFP4) of the 58 MoE layers and the
  three dense layers' MLP (7,168 -> 36,864 -> 7,168, data parallel under attention DP);
* routed experts: TensorRT-LLM's fused MoE (``moe_perf``, NVFP4 CUTLASS; 256 experts, top 8,
  EP8) at the step's tokens over all ranks, uniform (``balanced``) and AIConfigurator's
  default skew (``power_law_1.01``); and, given ``wideep_moe_perf`` (optional), the WIDEEP
  backend's compute that MLPerf's DeepSeek-R1 Server configurations select;
* collectives: the MoE's all-gather of the NVFP4 tokens and reduce-scatter of the BF16 outputs
  (``nccl_perf``, 8 GPUs; AIConfigurator's dispatch on an 8-GPU B200 node);
* output head (BF16, 129,280 wide: the table's widest is 65,536, scaled by the width) and the
  router GEMM (BF16, 256 wide), which the model does not charge apart.

Elementwise passes (norms, RoPE, activation, residual adds), the per-layer overhead and the
sampling have no measured table: shown for the model only. Also printed: AIConfigurator's
whole MLA module (``mla_generation_module_perf``/``mla_context_module_perf``: the attention
block's projections, norms, BMMs and kernel timed together) against the model's projections,
attention and elementwise share.

    PYTHONPATH=. python benchmarks/mla_step_audit.py TABLE.parquet ...

The tables (github.com/ai-dynamo/aiconfigurator, ``aic-core/src/aiconfigurator_core/systems/
data/b200_sxm/``: ``gemm/trtllm/1.3.0rc20/gemm_perf.parquet``, ``mla/trtllm/1.3.0rc20/
{generation_mla_perf,context_mla_perf,mla_generation_module_perf,mla_context_module_perf}
.parquet``, ``mla_bmm/trtllm/1.3.0rc20/mla_bmm_perf.parquet``, ``moe/trtllm/1.3.0rc20/
moe_perf.parquet``, ``comm/nccl/2.28.9/nccl_perf.parquet``; optionally
``moe/trtllm/1.3.0rc10/wideep_moe_perf.parquet``) are not part of this repository:
pass the files, in any order (each is recognised by its ``op_name``). Latencies in the tables
are milliseconds. A measured figure beside a model figure, not a fit.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from aic_tables import fail, read_parquet  # noqa: E402

from inference_econ.measured.predicting import _assumptions_for, _models  # noqa: E402
from inference_econ.model.assumptions import preset  # noqa: E402
from inference_econ.model.efficiency import StepWork, combine  # noqa: E402
from inference_econ.model.mixed_step import (  # noqa: E402
    EngineLayout,
    _mixed_part,
    mixed_step_work,
)
from inference_econ.model.step_calls import total_terms_s  # noqa: E402
from inference_econ.specs.architecture import load_model  # noqa: E402
from inference_econ.specs.engine import load_engine  # noqa: E402
from inference_econ.specs.hardware import load_hardware  # noqa: E402

RANKS = 8
HIDDEN = 7168
LAYERS, DENSE_LAYERS, MOE_LAYERS = 61, 3, 58
VOCAB = 129280
#: The tables each kind of file holds: op_name -> key.
KINDS = {
    "gemm": "gemm",
    "mla_generation": "mla_gen",
    "mla_context": "mla_ctx",
    "mla_generation_module": "module_gen",
    "mla_context_module": "module_ctx",
    "mla_gen_pre": "bmm",
    "moe": "moe",
    "all_gather": "nccl",
    "wideep_moe": "wideep",
}
NEEDED = ("gemm", "mla_gen", "mla_ctx", "module_gen", "module_ctx", "bmm", "moe", "nccl")
#: NVFP4 dispatch: 4-bit elements and one 8-bit scale per 16, in 16-bit words
#: (AIConfigurator operators/moe_dispatch.rs: x_factor 0.25 + sf_factor 0.25/8).
NVFP4_WORDS = 0.25 + 0.25 / 8


def read_tables(paths) -> tuple[dict, dict]:
    """({key: DataFrame}, {key: file name}) of the AIConfigurator tables passed."""
    tables, names = {}, {}
    for path in paths:
        frame = read_parquet(path, "AIConfigurator perf tables (*.parquet)")
        if "op_name" not in frame.columns or frame.empty:
            fail(f"{path}: no op_name column; pass AIConfigurator perf tables")
        ops = set(map(str, frame["op_name"].unique()))
        key = next((KINDS[o] for o in KINDS if o in ops), None)
        if key is None:
            continue  # a table this audit does not read
        tables[key], names[key] = frame, path.name
    missing = [k for k in NEEDED if k not in tables]
    if missing:
        fail(
            "missing AIConfigurator tables: "
            + ", ".join(missing)
            + " (see the docstring for the files)"
        )
    return tables, names


def _line(x, xs, ys) -> float:
    """ys at x, linear between the grid points around it (nan outside the grid)."""
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    order = np.argsort(xs)
    xs, ys = xs[order], ys[order]
    if xs.size == 0 or x < xs[0] - 1e-9 or x > xs[-1] + 1e-9:
        return float("nan")
    return float(np.interp(x, xs, ys))


def gemm_ms(t, dtype: str, m: int, n: int, k: int) -> float:
    """An ``m × n × k`` GEMM (ms): ``n`` and ``k`` linear between grid points; ``n`` past the
    grid's widest scaled in proportion (a wide GEMM's time grows as its width)."""
    rows = t[(t.gemm_dtype == dtype) & (t.m == m)]
    if rows.empty:
        return float("nan")
    widest = int(rows.n.max())
    if n > widest:
        return gemm_ms(t, dtype, m, widest, k) * n / widest
    at_k = {}
    for kk in sorted(rows.k.unique()):
        r = rows[rows.k == kk]
        at_k[int(kk)] = _line(n, r.n, r.latency)
    ks = [kk for kk in at_k if np.isfinite(at_k[kk])]
    return _line(k, ks, [at_k[kk] for kk in ks])


def mla_gen_ms(t, batch: int, context: float) -> float:
    """The MLA generation kernel (128 heads, FP8 KV) at ``batch`` requests of ``context``."""
    r = t[(t.num_heads == 128) & (t.tp_size == 1) & (t.kv_cache_dtype == "fp8")]
    r = r[r.batch_size == batch]
    return _line(context, r.step, r.latency)


def mla_ctx_ms(t, tokens: int) -> float:
    """The MLA context kernel of one prompt of ``tokens`` tokens (128 heads, FP8 KV)."""
    if tokens <= 0:
        return 0.0
    r = t[(t.num_heads == 128) & (t.tp_size == 1) & (t.kv_cache_dtype == "fp8")]
    r = r[(r.batch_size == 1) & (r.step == 0)]
    return _line(tokens, r.isl, r.latency)


def module_ms(t, gemm: str, batch: int, context: float, prompt: bool) -> float:
    """AIConfigurator's whole MLA module (DeepSeek-V3 layer, 128 heads, FP8 KV)."""
    r = t[(t.num_heads == 128) & (t.kv_cache_dtype == "fp8") & (t.gemm_type == gemm)]
    if prompt:
        if batch <= 0:
            return 0.0
        r = r[(r.batch_size == 1) & (r.step == 0)]
        return _line(batch, r.isl, r.latency)
    r = r[r.batch_size == batch]
    return _line(context, r.step, r.latency)


def bmm_ms(t, op: str, tokens: int) -> float:
    r = t[(t.op_name == op) & (t.num_heads == 128) & (t.bmm_dtype == "fp8")]
    return _line(tokens, r.num_tokens, r.latency)


def moe_ms(t, tokens: int, distribution: str) -> float:
    """TensorRT-LLM's fused MoE (NVFP4, CUTLASS) of DeepSeek's shape on one EP8 rank, at
    ``tokens`` tokens over all ranks."""
    r = t[
        (t.hidden_size == HIDDEN)
        & (t.inter_size == 2048)
        & (t.topk == 8)
        & (t.num_experts == 256)
        & (t.moe_tp_size == 1)
        & (t.moe_ep_size == RANKS)
        & (t.moe_dtype == "nvfp4")
        & (t.kernel_source == "moe_torch_flow_cutlass")
        & (t.distribution == distribution)
    ]
    return _line(tokens, r.num_tokens, r.latency)


def wideep_ms(t, tokens: int) -> float:
    """TensorRT-LLM's WIDEEP MoE compute (NVFP4 CUTLASS, the backend of MLPerf's DeepSeek-R1
    Server configurations) on EP rank 0 at ``tokens`` tokens over all ranks, routed with
    AIConfigurator's skew (``power_law_1.01``, no load balancer)."""
    r = t[
        (t.op_name == "wideep_moe")
        & (t.hidden_size == HIDDEN)
        & (t.inter_size == 2048)
        & (t.num_experts == 256)
        & (t.num_slots == 256)
        & (t.moe_ep_size == RANKS)
        & (t.distribution == "power_law_1.01")
    ]
    return _line(tokens, r.num_tokens, r.latency)


def nccl_ms(t, op: str, elements: float) -> float:
    """An NCCL collective over 8 GPUs of ``elements`` 16-bit words, log-log between sizes."""
    r = t[(t.op_name == op) & (t.num_gpus == RANKS) & (t.nccl_dtype == "half")]
    r = r.sort_values("message_size")
    return float(np.exp(np.interp(np.log(elements), np.log(r.message_size), np.log(r.latency))))


def measured(tables, decode: int, context: float, prompt: int, attention_gemm: str) -> dict:
    """AIConfigurator's milliseconds per step per rank, by kernel class."""
    g = tables["gemm"]
    tokens = decode + prompt
    heads = decode + (1 if prompt else 0)
    proj = (
        gemm_ms(g, attention_gemm, tokens, 2112, HIDDEN)
        + gemm_ms(g, attention_gemm, tokens, 24576, 1536)
        + gemm_ms(g, attention_gemm, tokens, HIDDEN, 16384)
        + bmm_ms(tables["bmm"], "mla_gen_pre", decode)
        + bmm_ms(tables["bmm"], "mla_gen_post", decode)
        + (gemm_ms(g, attention_gemm, prompt, 32768, 512) if prompt else 0.0)
    )
    attention = mla_gen_ms(tables["mla_gen"], decode, context) + mla_ctx_ms(
        tables["mla_ctx"], prompt
    )
    shared = gemm_ms(g, "nvfp4", tokens, 4096, HIDDEN) + gemm_ms(g, "nvfp4", tokens, HIDDEN, 2048)
    dense_mlp = gemm_ms(g, "nvfp4", tokens, 36864, HIDDEN) + gemm_ms(
        g, "nvfp4", tokens, HIDDEN, 18432
    )
    all_tokens = RANKS * tokens
    collectives = nccl_ms(tables["nccl"], "all_gather", all_tokens * HIDDEN * NVFP4_WORDS)
    collectives += nccl_ms(tables["nccl"], "reduce_scatter", all_tokens * HIDDEN)
    module = module_ms(tables["module_gen"], attention_gemm, decode, context, False)
    module += module_ms(tables["module_ctx"], attention_gemm, prompt, 0.0, True)
    return {
        "projections": LAYERS * proj,
        "attention": LAYERS * attention,
        "dense GEMMs": MOE_LAYERS * shared + DENSE_LAYERS * dense_mlp,
        "head": gemm_ms(g, "bfloat16", heads, VOCAB, HIDDEN),
        "experts (uniform)": MOE_LAYERS * moe_ms(tables["moe"], all_tokens, "balanced"),
        "experts (skewed)": MOE_LAYERS * moe_ms(tables["moe"], all_tokens, "power_law_1.01"),
        "experts (WIDEEP, skewed)": MOE_LAYERS * wideep_ms(tables["wideep"], all_tokens)
        if "wideep" in tables
        else float("nan"),
        "collectives": MOE_LAYERS * collectives,
        "router": MOE_LAYERS * gemm_ms(g, "bfloat16", tokens, 256, HIDDEN),
        "MLA module": LAYERS * module,
    }


def gemm_classes_ms(work: StepWork, prof, expert_volume=None) -> dict:
    """The model's GEMM time by class (ms, §F2): each class's arithmetic at its efficiency and
    its fixed cost; where the step's GEMM roofline is memory-bound the memory side is shared
    among the classes in proportion to their arithmetic. They add up to the step's GEMM part
    with its fixed cost. ``expert_volume``: the routed experts' volume M·N·K in place of the
    step's (the size factor taken at another shape)."""
    t = combine(work, prof)
    v_half = prof.gemm_half_volume
    base = prof.gemm_efficiency_scale * work.power_derating
    classes = {
        "dense GEMMs": (work.dense_gemm_s, work.dense_volume, 1.0),
        "projections": (work.projection_gemm_s, work.projection_volume, 1.0),
        "head": (work.head_gemm_s, work.head_volume, 1.0),
        "experts": (
            work.expert_gemm_s * work.expert_imbalance,
            work.expert_volume if expert_volume is None else expert_volume,
            prof.moe_gemm_efficiency * float(work.expert_size),
        ),
    }
    arith = {k: float(s) / (base * e) if s > 0 else 0.0 for k, (s, v, e) in classes.items()}
    fixed = {k: arith[k] * v_half / float(classes[k][1]) if arith[k] else 0.0 for k in classes}
    total_arith = sum(arith.values())
    memory = float(t.gemm_memory_s) / prof.step_time_scale
    scale = prof.step_time_scale * max(memory, total_arith) / total_arith
    return {k: 1e3 * (scale * arith[k] + prof.step_time_scale * fixed[k]) for k in classes}


def model_step(decode: int, context: float, prompt: int):
    """(StepWork, profile, collective ms by kind) of the model's step."""
    arch = load_model("DeepSeek-R1")
    gpu = load_hardware("B200")
    prof = load_engine("trtllm")
    a = _assumptions_for(preset("achievable"), prof, True)
    model, prefill = _models(arch, gpu, (4, 16, 8), a)
    layout = EngineLayout(RANKS, 1, float(RANKS))
    args = (RANKS * decode, context, RANKS * prompt, 0.0, RANKS if prompt else 0)
    work = mixed_step_work(model, prefill, layout, *args)
    part, _ = _mixed_part(model, prefill, layout, *args)
    kinds = {
        "attention DP redistribution": model.attention_calls(part, layout.attention_divisor, False),
        "MoE dispatch and combine": part.shared_calls,
        "feed-forward reductions": part.ff_calls(False),
    }
    coll = {k: 1e3 * prof.step_time_scale * sum(total_terms_s(c)) for k, c in kinds.items()}
    return work, prof, coll


def report(tables, decode: int, context: float, prompt: int, attention_gemm: str) -> None:
    work, prof, coll = model_step(decode, context, prompt)
    t = combine(work, prof)
    scale = prof.step_time_scale
    gemm = gemm_classes_ms(work, prof)
    kv_ms = 1e3 * float(np.maximum(t.kv_s, t.attention_compute_s))
    layer_ms = 1e3 * scale * float(work.layers) * prof.layer_overhead_s
    passes = scale * prof.elementwise_passes * float(work.elementwise_read_s) / prof.hbm_efficiency
    elementwise_ms = 1e3 * float(t.elementwise_s)
    host_ms = 1e3 * (float(t.overhead_s) - float(t.gemm_fixed_s)) - layer_ms
    model = {
        "projections": gemm["projections"],
        "attention": kv_ms,
        "dense GEMMs": gemm["dense GEMMs"],
        "head": gemm["head"],
        "experts": gemm["experts"],
        "collectives": 1e3 * float(t.collective_latency_s + t.collective_bandwidth_s),
        "router": 0.0,
        "elementwise and logits": elementwise_ms,
        "layer overhead": layer_ms,
        "host (hidden)": host_ms,
    }
    total = 1e3 * float(t.total_s)
    if abs(sum(model.values()) - total) > 1e-6 * total:
        raise RuntimeError("the classes no longer add up to the model's step; update the audit")
    aic = measured(tables, decode, context, prompt, attention_gemm)
    off = [k for k, v in aic.items() if not np.isfinite(v) and "WIDEEP" not in k]
    if off:
        fail(
            f"the tables hold no shape for {', '.join(off)} at {decode} decoding requests, "
            f"{context:g} tokens of context and a {prompt}-token prompt per rank: take "
            "--decode a power of 2 up to 1,024 and --decode + --prompt a GEMM row count of the "
            "table (e.g. 512 and 0 or 512)"
        )
    print(
        f"== per rank: {decode} decoding requests at {context:g} tokens of context"
        + (f", one {prompt}-token prompt" if prompt else "")
        + f" (step of {RANKS * (decode + prompt)} tokens on {RANKS} B200, TP8 EP8 attention DP)"
    )
    print(f"   {'class':28s} {'model ms':>9s} {'measured ms':>12s} {'model/measured':>15s}")
    rows = [
        ("projections", "projections"),
        ("attention", "attention"),
        ("dense GEMMs", "dense GEMMs"),
        ("head", "head"),
        ("experts", "experts (uniform)"),
        ("experts", "experts (skewed)"),
        ("experts", "experts (WIDEEP, skewed)"),
        ("collectives", "collectives"),
        ("router", "router"),
    ]
    measured_total = {"uniform": 0.0, "skewed": 0.0}
    for mkey, akey in rows:
        if not np.isfinite(aic[akey]):
            continue  # the optional WIDEEP table not passed
        label = akey if akey.startswith("experts") else mkey
        ratio = model[mkey] / aic[akey] if aic[akey] > 0 else float("nan")
        print(f"   {label:28s} {model[mkey]:9.2f} {aic[akey]:12.2f} {ratio:15.2f}")
        for case in measured_total:
            if not akey.startswith("experts") or (case in akey and "WIDEEP" not in akey):
                measured_total[case] += aic[akey]
    for key in ("elementwise and logits", "layer overhead", "host (hidden)"):
        print(f"   {key:28s} {model[key]:9.2f} {'(no table)':>12s}")
    print(f"   {'step':28s} {total:9.2f}")
    print(
        "   measured kernels summed (no overlap, no elementwise): "
        f"{measured_total['uniform']:.2f} ms uniform routing, "
        f"{measured_total['skewed']:.2f} ms skewed; the model's same classes "
        f"{total - model['elementwise and logits'] - model['layer overhead'] - host_ms:.2f} ms"
    )
    attn_block = model["projections"] + model["attention"] + passes * 1e3 / 2
    print(
        f"   MLA module ({attention_gemm} projections), measured {aic['MLA module']:.2f} ms; "
        f"model's projections + attention {model['projections'] + model['attention']:.2f} ms "
        f"(+ half its elementwise passes: {attn_block:.2f} ms)"
    )
    # §F7 charges the grouped GEMM's size factor at the whole group's volume on a GPU; one
    # expert's GEMM is 1/(E/e) of it (E/e experts a rank)
    per_expert = float(work.expert_volume) / (256 / RANKS)
    alone = gemm_classes_ms(work, prof, per_expert)["experts"]
    print(
        f"   model's experts with the size factor at one expert's volume ({per_expert:.2g} "
        f"against the group's {float(work.expert_volume):.2g}): {alone:.2f} ms"
    )
    text = ", ".join(f"{k} {v:.2f}" for k, v in coll.items() if v > 0)
    print(f"   model's collectives by kind (ms): {text}")


POINTS = ((512, 2048.0, 0), (512, 4096.0, 0), (512, 2048.0, 512))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tables", nargs="+", type=Path, help="AIConfigurator perf tables")
    parser.add_argument("--decode", type=int, help="decoding requests per rank (grid: 2^k)")
    parser.add_argument("--context", type=float, help="their mean context, tokens")
    parser.add_argument("--prompt", type=int, default=0, help="prompt tokens per rank (one)")
    parser.add_argument(
        "--attention-gemm",
        default="nvfp4",
        choices=("nvfp4", "fp8_block", "bfloat16"),
        help="the attention projections' format (the model charges FP4; NVIDIA's DeepSeek-R1 "
        "FP4 checkpoints keep attention in BF16)",
    )
    args = parser.parse_args(argv)
    start = time.process_time()
    tables, names = read_tables(args.tables)
    print("tables: " + ", ".join(names[k] for k in (*NEEDED, "wideep") if k in names))
    if (args.decode is None) != (args.context is None):
        fail("--decode and --context go together")
    if args.decode is None and args.prompt:
        fail("--prompt needs --decode and --context")
    points = POINTS if args.decode is None else ((args.decode, args.context, args.prompt),)
    for decode, context, prompt in points:
        if decode <= 0 or context <= 0 or prompt < 0:
            fail("--decode and --context must be positive, --prompt not negative")
        report(tables, decode, context, prompt, args.attention_gemm)
    print(f"CPU {time.process_time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
