"""One engine step with and without each row-parallel GEMM fused with its all-reduce
(docs/model.md §F6, "A GEMM fused with its all-reduce").

Prints, for a model on a tensor-parallel instance under the TensorRT-LLM profile, the step's
milliseconds at each token count (decode rows at a short context: the all-reduces and GEMMs the
fusion trades), its collective bandwidth and the row-parallel all-reduces' part of it, the
GEMMs' compute side, the row-parallel GEMMs' share of the GEMM work, and the step with the
fusion (``gemm_allreduce_overlap`` 1).

    PYTHONPATH=. python benchmarks/fused_allreduce.py [--model "Llama 3.1 405B"] [--gpu B200]
        [--bits 4] [--tensor 4] [--tokens 1,64,256,1024,2048]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import inference_econ as ie  # noqa: E402
from inference_econ.model.assumptions import ACHIEVABLE  # noqa: E402
from inference_econ.model.latency import StepModel  # noqa: E402
from inference_econ.model.workload import compile_workload  # noqa: E402
from inference_econ.specs.engine import load_engine  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="Llama 3.1 405B")
    parser.add_argument("--gpu", default="B200")
    parser.add_argument("--bits", type=int, default=4, help="weight bits")
    parser.add_argument("--tensor", type=int, default=4, help="GPUs of the instance (TP)")
    parser.add_argument("--tokens", default="1,64,256,1024,2048", help="tokens of each step")
    args = parser.parse_args(argv)

    def fail(message: str) -> int:
        print(f"fused_allreduce.py: {message}", file=sys.stderr)
        return 2

    try:
        tokens = np.array([float(t) for t in args.tokens.split(",")])
    except ValueError:
        return fail(f"--tokens {args.tokens!r}: give whole token counts >= 1, e.g. 1,64,2048")
    if not (np.all(tokens >= 1) and np.all(tokens == np.round(tokens))):
        return fail(f"--tokens {args.tokens!r}: give whole token counts >= 1, e.g. 1,64,2048")
    try:
        setting = ie.make_setting(args.model, args.gpu, weight_bits=args.bits, kv_cache_bits=8)
    except ie.InferenceEconError as exc:
        return fail(str(exc))
    heads = setting.model.attention.query_heads
    if args.tensor < 1 or heads % args.tensor:
        return fail(
            f"--tensor {args.tensor}: give a tensor degree >= 1 that divides the model's "
            f"{heads} query heads"
        )
    work = compile_workload(setting.model, ACHIEVABLE)
    apart = load_engine("trtllm")
    fused = dataclasses.replace(apart, gemm_allreduce_overlap=1.0)
    n = np.full(tokens.shape, float(args.tensor))
    ones = np.ones(tokens.shape)
    rows = {}
    for name, prof in (("apart", apart), ("fused", fused)):
        model = StepModel(work, setting.gpu, ACHIEVABLE.replace(engine=prof), True)
        bd = model.breakdown(n, tokens, 1, 128.0, ones, ones, False)
        part = model.pipeline_part(n, tokens, 1, 128.0, ones)
        reads = model.attention_reads(part, ones)
        w = model.engine.step_work(part, ones, 0.0, 0.0, reads)
        share = w.row_parallel_gemm_s / (w.dense_gemm_s + w.projection_gemm_s + w.head_gemm_s)
        fusable = model.fusable_bandwidth_s(part, ones, False) if name == "fused" else 0.0
        rows[name] = (
            bd,
            np.broadcast_to(share, tokens.shape),
            np.broadcast_to(fusable, tokens.shape),
        )
    bd = rows["apart"][0]
    if not np.all(np.isfinite(bd.latency_s)):
        return fail(
            f"{setting.model.name} at {args.bits}-bit weights does not fit on {args.tensor} x "
            f"{setting.gpu.name} (or its KV cache at these tokens): give --tensor more GPUs"
        )
    fbd, share, fusable = rows["fused"]  # the shares the fusing engine counts
    print(
        f"{setting.model.name}, {args.bits}-bit weights, TP{args.tensor} x {setting.gpu.name}, "
        "TensorRT-LLM profile, decode rows at 128 tokens of context (ms)"
    )
    print(
        "tokens  step  collective_bw  of_it_allreduces  gemm_compute  row_parallel_share"
        "  fused_step  fused_bw"
    )
    for k, t in enumerate(tokens):
        print(
            f"{int(t):6d}  {bd.latency_s[k] * 1e3:6.2f}  {bd.collective_bandwidth_s[k] * 1e3:13.2f}"
            f"  {fusable[k] * 1e3:16.2f}  {bd.compute_time_s[k] * 1e3:12.2f}  {share[k]:18.3f}"
            f"  {fbd.latency_s[k] * 1e3:10.2f}  {fbd.collective_bandwidth_s[k] * 1e3:8.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
