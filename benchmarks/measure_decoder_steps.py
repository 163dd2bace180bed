"""Measure on a GPU whole steps of a dense decoder, to hold the ideal bound (``refined``)
against real silicon end to end: decode steps of a batch over a KV cache, and prefills of one
prompt, of a model of the catalog with random BF16 weights.

    python benchmarks/measure_decoder_steps.py --out steps.csv [--model "Llama 3.1 8B"] [--quick]

Needs PyTorch and a CUDA GPU (neither is a dependency of the package; the machine that measured
the shipped table is named in its first line). The decoder is plain PyTorch as a reference
implementation writes it, not a tuned engine: per layer an RMSNorm, one fused QKV GEMM, the new
key and value written into the cache, PyTorch's scaled-dot-product attention (FlashAttention
where it takes the shapes, grouped-query heads), the output GEMM and residual add, an RMSNorm, a
fused gate-and-up GEMM, SiLU times the up half, the down GEMM and residual add; then the final
norm, the logits of the last token and greedy sampling. Rotary embedding is left out (a
per-token pass of well under a percent of a step). Each step is captured in a CUDA graph, as
engines run decode steps, and replayed; the latency is the median of the replays, in
milliseconds. Every layer has its own weights and cache, so nothing sits in L2 between layers.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

#: (batch, cached tokens) of the decode steps, within 80 GB beside an 8B model's weights.
DECODE = ((1, 1024), (1, 8192), (8, 1024), (32, 1024), (64, 1024), (128, 1024), (256, 1024),
          (16, 4096), (64, 4096))  # fmt: skip
#: Prompt tokens of the prefills (one prompt a pass).
PREFILL = (256, 1024, 4096, 8192, 16384)
REPLAYS = 20


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="CSV file to write the measurements to")
    p.add_argument("--model", default="Llama 3.1 8B", help="a dense model of the catalog")
    p.add_argument("--quick", action="store_true", help="two sizes of each (a check)")
    return p.parse_args()


class Decoder:
    """A dense decoder's weights and KV cache on the GPU, and its step (``forward``)."""

    def __init__(self, torch, arch, batch: int, cache_tokens: int, dev):
        a = arch.attention
        group = arch.layer_groups[0]
        self.t, self.layers, self.dev = torch, group.layers, dev
        self.hq, self.hkv, self.d = a.query_heads, a.kv_heads, a.head_dim
        self.ff, hidden = group.ffn.d_ff, arch.d_model
        bf = torch.bfloat16

        def w(*shape):
            return torch.randn(*shape, device=dev, dtype=bf) * 0.02

        self.w = [
            dict(
                self.attention_weights(w, hidden),
                up=w(hidden, 2 * self.ff),
                down=w(self.ff, hidden),
            )  # fmt: skip
            for _ in range(self.layers)
        ]
        self.head = w(hidden, arch.vocab_size)
        self.norm = torch.ones(hidden, device=dev, dtype=bf)
        shape = (batch, self.hkv, max(cache_tokens, 1), self.d)
        self.kv = [(w(*shape), w(*shape)) for _ in range(self.layers)] if cache_tokens else None

    def attention_weights(self, w, hidden: int) -> dict:
        """One layer's attention weights from ``w`` (fused QKV, output projection) and its
        two norms' scales."""
        t = self.t
        qkv = (self.hq + 2 * self.hkv) * self.d
        return dict(qkv=w(hidden, qkv), o=w(self.hq * self.d, hidden),
                    n1=t.ones(hidden, device=self.dev, dtype=t.bfloat16),
                    n2=t.ones(hidden, device=self.dev, dtype=t.bfloat16))  # fmt: skip

    def mm(self, a, w):
        """``a @ w``: an attention projection's GEMM (another decoder may run it otherwise)."""
        return a @ w

    def attention(self, q, k, v, causal: bool):
        F = self.t.nn.functional
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)

    def attend(self, x, i: int, L: dict, decode: bool):
        """Layer ``i``'s attention block on ``x``: what its output projection adds to ``x``
        (a decode step's new key and value written into the cache first)."""
        F = self.t.nn.functional
        n = x.shape[0]
        h = F.rms_norm(x, (x.shape[-1],), L["n1"])
        qkv = self.mm(h, L["qkv"])
        q, k, v = qkv.split([self.hq * self.d, self.hkv * self.d, self.hkv * self.d], -1)
        if decode:
            kc, vc = self.kv[i]
            kc[:, :, -1] = k.view(n, self.hkv, self.d)
            vc[:, :, -1] = v.view(n, self.hkv, self.d)
            o = self.attention(q.view(n, self.hq, 1, self.d), kc, vc, False)
        else:
            q = q.view(1, n, self.hq, self.d).transpose(1, 2)
            k = k.view(1, n, self.hkv, self.d).transpose(1, 2)
            v = v.view(1, n, self.hkv, self.d).transpose(1, 2)
            o = self.attention(q, k, v, True).transpose(1, 2)
        return self.mm(o.reshape(n, self.hq * self.d), L["o"])

    def feed_forward(self, h, L: dict):
        """The layer's fused gate-and-up GEMM, SiLU times the up half, the down GEMM."""
        F = self.t.nn.functional
        g = h @ L["up"]
        return (F.silu(g[:, : self.ff]) * g[:, self.ff :]) @ L["down"]

    def forward(self, x, decode: bool):
        """One step: ``x`` is (batch, hidden) in a decode step, (tokens, hidden) in a prefill."""
        F, t = self.t.nn.functional, self.t
        for i, L in enumerate(self.w):
            x = x + self.attend(x, i, L, decode)
            x = x + self.feed_forward(F.rms_norm(x, (x.shape[-1],), L["n2"]), L)
        last = x if decode else x[-1:]
        logits = (F.rms_norm(last, (last.shape[-1],), self.norm) @ self.head).float()
        return t.argmax(logits, dim=-1)


def timed(torch, fn, graph: bool = True) -> float:
    """Median milliseconds of a CUDA-graph replay of ``fn`` after warm-up runs (``graph``
    False: of plain calls, timed by CUDA events as the replays are)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    run = fn
    if graph:
        cuda_graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(cuda_graph):
            fn()
        run = cuda_graph.replay
    for _ in range(3):
        run()
    times = []
    for _ in range(REPLAYS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main() -> int:
    args = parse()
    import torch

    import inference_econ as ie

    arch = ie.load_model(args.model)
    if arch.is_moe or len(arch.layer_groups) != 1 or arch.attention.kind != "gqa":
        print(f"--model: {args.model} is not a plain dense GQA decoder; name one", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(dev)
    head = {"device": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
            "model": args.model, "replays": REPLAYS}  # fmt: skip
    rows = []
    decode = DECODE[:2] if args.quick else DECODE
    prefill = PREFILL[:2] if args.quick else PREFILL
    with torch.inference_mode():
        for batch, cached in decode:
            m = Decoder(torch, arch, batch, cached, dev)
            x = torch.randn(batch, arch.d_model, device=dev, dtype=torch.bfloat16)
            ms = timed(torch, lambda m=m, x=x: m.forward(x, True))
            rows.append(dict(phase="decode", batch=batch, cached_tokens=cached, prompt_tokens=0,
                             latency_ms=round(ms, 4)))  # fmt: skip
            print(rows[-1], flush=True)
            del m, x
            torch.cuda.empty_cache()
        m = Decoder(torch, arch, 1, 0, dev)
        for n in prefill:
            x = torch.randn(n, arch.d_model, device=dev, dtype=torch.bfloat16)
            ms = timed(torch, lambda x=x: m.forward(x, False))
            rows.append(dict(phase="prefill", batch=1, cached_tokens=0, prompt_tokens=n,
                             latency_ms=round(ms, 4)))  # fmt: skip
            print(rows[-1], flush=True)
    with open(args.out, "w", newline="") as f:
        f.write("# " + json.dumps(head) + "\n")
        out = csv.DictWriter(f, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
