"""Measure on a GPU whole steps of a mixture-of-experts decoder, to hold the ideal bound
(``refined``) against real silicon end to end where experts are routed: decode steps of a batch
over a KV cache, prefills of one prompt, and the routed-expert block alone, of a MoE model of the
catalog with random BF16 weights.

    python benchmarks/measure_moe_steps.py --out steps.csv --experts-out experts.csv
        [--model "Qwen3-30B-A3B"] [--quick]

Needs PyTorch (2.8 or later, for its grouped GEMM) and a CUDA GPU; neither is a dependency of the
package, and the machine that measured the shipped table is named in its first line. The decoder
is plain PyTorch, not a tuned engine: per layer an RMSNorm, one fused QKV GEMM, the new key and
value written into the cache, PyTorch's scaled-dot-product attention, the output GEMM and residual
add, an RMSNorm, the router GEMM, softmax and top-k (weights renormalised over the k, as Qwen3 and
Mixtral do), the tokens sorted by expert, PyTorch's grouped GEMM (``torch._grouped_mm``, CUTLASS
on Hopper) for the experts' fused gate-and-up, SiLU times the up half, the grouped down GEMM, and
the weighted sum back onto each token; then the final norm, the last token's logits and greedy
sampling. Rotary embedding and Qwen3's per-head query and key norms are left out (per-token passes
of well under a percent of a step). Each step is captured in a CUDA graph, as engines run decode
steps, and replayed; the latency is the median of the replays, in milliseconds. Every layer has
its own weights and cache, so nothing sits in L2 between layers. Routing comes from the random
router on the step's own hidden states, so experts are hit about as uniform routing hits them.

The routed-expert block alone (``--experts-out``) is timed at 1 to 16,384 tokens with each token
sent to k experts round robin (every expert the same load, as the kernel tables' ``balanced``
rows): the sort, the two grouped GEMMs and the weighted sum, without the router, as the tables'
fused MoE op is timed.

With ``--fp8`` the experts' and the attention projections' weights are FP8 e4m3 with a scale an
output channel and each GEMM's input rows are cast to FP8 with a scale a row
(``torch._scaled_grouped_mm``, ``torch._scaled_mm``; Hopper or later); the router, the output head
and the KV cache stay BF16. Each path is checked against a float product when the script starts.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling scripts, however run

from measure_decoder_steps import REPLAYS, Decoder, timed  # noqa: E402

#: (batch, cached tokens) of the decode steps; a size whose cache takes more than 90 % of the
#: memory left free once the weights are on the GPU is skipped with a line saying so.
DECODE = ((1, 1024), (8, 1024), (32, 1024), (64, 1024), (128, 1024), (256, 1024), (512, 1024),
          (64, 4096), (16, 8192))  # fmt: skip
#: Prompt tokens of the prefills (one prompt a pass).
PREFILL = (256, 1024, 4096, 8192, 16384)
#: Tokens of the routed-expert block timed alone.
EXPERT_TOKENS = (1, 4, 16, 64, 256, 1024, 4096, 16384)


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="CSV file to write the steps to")
    p.add_argument("--experts-out", help="CSV file to write the routed-expert block's times to")
    p.add_argument("--model", default="Qwen3-30B-A3B", help="a MoE GQA model of the catalog")
    p.add_argument("--quick", action="store_true", help="two sizes of each (a check)")
    p.add_argument("--layers", type=int, default=0, help="build only this many layers (a check)")
    p.add_argument("--device", default="cuda", help="torch device (cpu: a check of the code)")
    p.add_argument("--fp8", action="store_true",
                   help="experts and attention projections in FP8 e4m3, scaled a row (Hopper+)")  # fmt: skip
    return p.parse_args()


#: The largest finite FP8 e4m3 value: a row's scale maps its largest magnitude onto it.
FP8_MAX = 448.0


def fp8_rows(torch, x):
    """``x`` in FP8 e4m3 with one float32 scale per row of its last dimension (amax / 448)."""
    scale = x.abs().amax(dim=-1).float().clamp_(min=1e-12) / FP8_MAX
    return (x.float() / scale[..., None]).to(torch.float8_e4m3fn), scale


class GroupedGemm:
    """``torch._grouped_mm`` over tokens sorted by expert, with the weight layout and row
    alignment this PyTorch accepts, chosen once by checking small products against a loop."""

    name = "torch._grouped_mm"
    #: (weights stored transposed, rows of a group padded to a multiple of) in the order tried.
    OPTIONS: tuple = ((True, 1), (True, 16), (False, 1), (False, 16))

    def __init__(self, torch, dev):
        self.t = torch
        for option in self.OPTIONS:
            self.choose(option)
            try:
                if self._agrees(dev):
                    return
            except (RuntimeError, TypeError, ValueError) as e:
                print(f"{self.name} {option}: {e}", file=sys.stderr)
        print(f"{self.name} takes none of the layouts tried: it needs PyTorch 2.8+ on an sm90 GPU"
              " (a CPU runs only the BF16 path)", file=sys.stderr)  # fmt: skip
        raise SystemExit(2)

    def choose(self, option) -> None:
        self.transposed, self.align = option

    def weight(self, experts: int, k: int, n: int, dev, scale: float):
        """Random expert weights multiplying (tokens, k) into (tokens, n), in the layout chosen."""
        t = self.t
        shape = (experts, n, k) if self.transposed else (experts, k, n)
        return t.randn(*shape, device=dev, dtype=t.bfloat16).mul_(scale)

    def reference(self, w, e: int):
        """Expert ``e``'s (k, n) matrix in float32."""
        return (w[e].transpose(0, 1) if self.transposed else w[e]).float()

    def __call__(self, a, w, offs):
        b = w.transpose(-2, -1) if self.transposed else w
        return self.t._grouped_mm(a, b, offs=offs)

    def _agrees(self, dev) -> bool:
        t = self.t
        g = t.Generator(device=dev).manual_seed(1)
        counts = [3, 0, 17, 1, 12]
        k, n = 64, 96
        w = self.weight(len(counts), k, n, dev, 0.1)
        rows = sum(-(-c // self.align) * self.align for c in counts)
        a = t.zeros(rows, k, device=dev, dtype=t.bfloat16)
        want, ends, at = [], [], 0
        for e, c in enumerate(counts):
            x = t.randn(c, k, device=dev, dtype=t.bfloat16, generator=g)
            a[at : at + c] = x
            want.append((at, x.float() @ self.reference(w, e)))
            at += -(-c // self.align) * self.align
            ends.append(at)
        got = self(a, w, t.tensor(ends, device=dev, dtype=t.int32)).float()
        # within a tenth of each group's norm: FP8's rounding passes, a wrong layout does not
        return all(
            float((got[s : s + len(r)] - r).norm()) <= 0.1 * float(r.norm()) + 1e-3 for s, r in want
        )


class Fp8GroupedGemm(GroupedGemm):
    """``torch._scaled_grouped_mm``: each row of tokens in FP8 with its own scale, each expert's
    weights in FP8 with a scale an output channel (rowwise scaling, as DeepSeek's and the
    engines' FP8 MoE kernels scale finer than a tensor)."""

    name = "torch._scaled_grouped_mm"
    #: (rows of a group padded to a multiple of, the rows' scales as a column) in the order tried.
    OPTIONS = ((1, False), (16, False), (1, True), (16, True))

    def choose(self, option) -> None:
        self.align, self.column = option
        self.transposed = True

    def weight(self, experts: int, k: int, n: int, dev, scale: float):
        t = self.t
        return fp8_rows(t, t.randn(experts, n, k, device=dev, dtype=t.bfloat16).mul_(scale))

    def reference(self, w, e: int):
        w8, s = w
        return (w8[e].float() * s[e][:, None]).transpose(0, 1)

    def dense(self, a, w):
        """``torch._scaled_mm`` of ``a``'s rows in FP8 (a scale a row) and ``w`` = (FP8
        (n, k), a scale an output): a dense projection with the experts' scaling."""
        t = self.t
        w8, s = w
        a8, sa = fp8_rows(t, a)
        return t._scaled_mm(a8, w8.t(), sa[:, None], s[None, :], out_dtype=t.bfloat16)

    def _agrees(self, dev) -> bool:
        t = self.t
        a = t.randn(5, 64, device=dev, dtype=t.bfloat16)
        w = fp8_rows(t, t.randn(96, 64, device=dev, dtype=t.bfloat16))
        want = a.float() @ (w[0].float() * w[1][:, None]).t()
        got = self.dense(a, w).float()
        return float((got - want).norm()) <= 0.1 * float(want.norm()) and super()._agrees(dev)

    def __call__(self, a, w, offs):
        t = self.t
        w8, s = w
        a8, sa = fp8_rows(t, a)
        sa = sa[:, None] if self.column else sa
        return t._scaled_grouped_mm(
            a8, w8.transpose(-2, -1), sa, s, offs=offs, out_dtype=t.bfloat16
        )


class MoeDecoder(Decoder):
    """A MoE decoder's weights on the GPU, its KV cache (``cache``) and its routed-expert
    block (``experts``); the attention and the step are the dense decoder's (``Decoder``)."""

    def __init__(self, torch, arch, dev, gmm: GroupedGemm, layers: int = 0):
        a = arch.attention
        ffn = arch.layer_groups[0].ffn
        self.t, self.gmm, self.dev = torch, gmm, dev
        self.hq, self.hkv, self.d = a.query_heads, a.kv_heads, a.head_dim
        self.ff, self.E, self.k = ffn.d_ff, ffn.experts, ffn.active_experts
        self.hidden = hidden = arch.d_model
        self.layers = layers or sum(g.layers for g in arch.layer_groups)
        bf = torch.bfloat16

        def w(*shape):
            return torch.randn(*shape, device=dev, dtype=bf).mul_(0.02)

        self.w = [
            dict(
                self.attention_weights(w, hidden),
                router=w(hidden, self.E),
                up=gmm.weight(self.E, hidden, 2 * self.ff, dev, 0.02),
                down=gmm.weight(self.E, self.ff, hidden, dev, 0.02),
            )  # fmt: skip
            for _ in range(self.layers)
        ]
        self.fp8 = isinstance(gmm, Fp8GroupedGemm)
        self.precision = "fp8" if self.fp8 else "bf16"
        if self.fp8:  # the attention projections in FP8 too, (n, k) with a scale a row
            for L in self.w:
                for name in ("qkv", "o"):
                    L[name] = fp8_rows(torch, L[name].transpose(0, 1))
        self.head = w(hidden, arch.vocab_size)
        self.norm = torch.ones(hidden, device=dev, dtype=bf)
        self.kv = None

    def mm(self, a, w):
        """An attention projection: BF16, or with ``--fp8`` the grouped GEMM's FP8 scaling."""
        return self.gmm.dense(a, w) if self.fp8 else a @ w

    def kv_bytes(self, batch: int, cached: int) -> int:
        return 2 * self.layers * batch * self.hkv * cached * self.d * 2

    def cache(self, batch: int, cached: int) -> None:
        """A fresh KV cache of ``batch`` sequences of ``cached`` tokens (none at 0)."""
        self.kv = None
        if cached:
            shape = (batch, self.hkv, cached, self.d)
            bf = self.t.bfloat16
            self.kv = [(self.t.zeros(shape, device=self.dev, dtype=bf),
                        self.t.zeros(shape, device=self.dev, dtype=bf))
                       for _ in range(self.layers)]  # fmt: skip

    def route(self, h, L):
        """Each token's k experts and their weights from the router."""
        probs = (h @ L["router"]).float().softmax(-1)
        weight, idx = probs.topk(self.k, dim=-1)
        return weight / weight.sum(-1, keepdim=True), idx

    def experts(self, h, weight, idx, L):
        """The routed experts of tokens ``h``: sort by expert, two grouped GEMMs, weighted sum."""
        t, F = self.t, self.t.nn.functional
        n, E, align = h.shape[0], self.E, self.gmm.align
        flat = idx.reshape(-1)
        order = t.argsort(flat, stable=True)
        by_expert = flat[order]
        counts = t.zeros(E, dtype=t.int64, device=h.device).scatter_add_(0, flat, t.ones_like(flat))
        padded = (counts + align - 1) // align * align
        ends = padded.cumsum(0)
        first = ends - padded
        first_unpadded = counts.cumsum(0) - counts
        slot = first[by_expert] + t.arange(n * self.k, device=h.device) - first_unpadded[by_expert]
        token = order // self.k
        rows = h.new_zeros(n * self.k + (align - 1) * E, h.shape[1])
        rows[slot] = h[token]
        offs = ends.to(t.int32)
        g = self.gmm(rows, L["up"], offs)
        y = self.gmm(F.silu(g[:, : self.ff]) * g[:, self.ff :], L["down"], offs)
        scale = weight.reshape(-1)[order].unsqueeze(1).to(h.dtype)
        return t.zeros_like(h).index_add_(0, token, y[slot] * scale)

    def feed_forward(self, h, L: dict):
        weight, idx = self.route(h, L)
        return self.experts(h, weight, idx, L)


def cpu_timed(fn) -> float:
    """Median milliseconds of three plain calls after one (a check of the code on a CPU)."""
    import time

    fn()
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[1]


def graphed(torch, fn, dev) -> tuple[float, bool]:
    """``timed`` on ``dev`` in a CUDA graph, or of plain calls where capture fails (said on
    stderr); on a CPU, ``cpu_timed``. The flag: whether the time is a graph's replay."""
    if dev.type != "cuda":
        return cpu_timed(fn), False
    with torch.cuda.device(dev):
        try:
            return timed(torch, fn, True), True
        except RuntimeError as e:
            print(f"CUDA graph capture failed ({str(e).splitlines()[0]}); timing plain calls",
                  file=sys.stderr)  # fmt: skip
            torch.cuda.synchronize()
            return timed(torch, fn, False), False


class Writer:
    """A CSV written row by row (a run stopped part way keeps what it measured)."""

    def __init__(self, path: str, head: dict, fields: list[str]):
        self.path, self.fields = path, fields
        with open(path, "w", newline="") as f:
            f.write("# " + json.dumps(head) + "\n")
            csv.DictWriter(f, fieldnames=fields).writeheader()

    def row(self, **row) -> None:
        with open(self.path, "a", newline="") as f:
            csv.DictWriter(f, fieldnames=self.fields).writerow(row)
        print(row, flush=True)


def measure_steps(torch, m: MoeDecoder, out: Writer, args, free_bytes: int) -> None:
    decode = DECODE[:2] if args.quick else DECODE
    prefill = PREFILL[:2] if args.quick else PREFILL
    bf = torch.bfloat16
    for batch, cached in decode:
        if m.kv_bytes(batch, cached) > free_bytes:
            print(f"skipped decode batch {batch} at {cached} tokens: cache does not fit")
            continue
        m.cache(batch, cached)
        x = torch.randn(batch, m.hidden, device=m.dev, dtype=bf)
        ms, g = graphed(torch, lambda x=x: m.forward(x, True), m.dev)
        out.row(phase="decode", precision=m.precision, batch=batch, cached_tokens=cached,
                prompt_tokens=0, latency_ms=round(ms, 4), cuda_graph=g)  # fmt: skip
        m.cache(0, 0)
        del x
        if m.dev.type == "cuda":
            torch.cuda.empty_cache()
    for n in prefill:
        x = torch.randn(n, m.hidden, device=m.dev, dtype=bf)
        ms, g = graphed(torch, lambda x=x: m.forward(x, False), m.dev)
        out.row(phase="prefill", precision=m.precision, batch=1, cached_tokens=0,
                prompt_tokens=n, latency_ms=round(ms, 4), cuda_graph=g)  # fmt: skip
        del x
        if m.dev.type == "cuda":
            torch.cuda.empty_cache()


def measure_experts(torch, m: MoeDecoder, out: Writer, args) -> None:
    tokens = EXPERT_TOKENS[:2] if args.quick else EXPERT_TOKENS
    L = m.w[0]
    for n in tokens:
        h = torch.randn(n, m.hidden, device=m.dev, dtype=torch.bfloat16)
        idx = (torch.arange(n * m.k, device=m.dev) % m.E).view(n, m.k)
        weight = torch.full((n, m.k), 1.0 / m.k, device=m.dev)
        ms, g = graphed(torch, lambda h=h, w=weight, i=idx: m.experts(h, w, i, L), m.dev)
        out.row(precision=m.precision, tokens=n, hidden_size=m.hidden, inter_size=m.ff,
                num_experts=m.E, topk=m.k, distribution="balanced", latency_ms=round(ms, 4),
                cuda_graph=g)  # fmt: skip


def main() -> int:
    args = parse()
    import torch

    import inference_econ as ie

    try:
        arch = ie.load_model(args.model)
    except ie.InferenceEconError as e:
        print(f"--model: {e}", file=sys.stderr)
        return 2
    groups = {(g.ffn.d_ff, g.ffn.experts, g.ffn.active_experts, g.ffn.shared_experts)
              for g in arch.layer_groups}  # fmt: skip
    if not arch.is_moe or len(groups) != 1 or arch.attention.kind != "gqa" or groups.pop()[3]:
        print(f"--model: {args.model} is not a MoE GQA decoder with one expert shape and no "
              "shared experts; name one (Qwen3-30B-A3B, Mixtral 8x7B)", file=sys.stderr)  # fmt: skip
        return 2
    try:
        dev = torch.device(args.device)
    except RuntimeError as e:
        print(f"--device: {args.device!r} is not a torch device ({e}); cuda, cuda:1, cpu",
              file=sys.stderr)  # fmt: skip
        return 2
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("--device: no CUDA GPU is visible here; run on one, or --device cpu to check the "
              "code", file=sys.stderr)  # fmt: skip
        return 2
    if args.layers < 0:
        print(f"--layers: {args.layers} is negative; 0 builds every layer", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    name = torch.cuda.get_device_properties(dev).name if dev.type == "cuda" else "cpu"
    gmm = (Fp8GroupedGemm if args.fp8 else GroupedGemm)(torch, dev)
    head = {"device": name, "torch": torch.__version__, "cuda": torch.version.cuda,
            "model": args.model, "replays": REPLAYS, "grouped_gemm_transposed": gmm.transposed,
            "grouped_gemm_row_align": gmm.align}  # fmt: skip
    print(head, flush=True)
    with torch.inference_mode():
        m = MoeDecoder(torch, arch, dev, gmm, args.layers)
        free = int(torch.cuda.mem_get_info(dev)[0] * 0.9) if dev.type == "cuda" else 1 << 40
        fields = ["phase", "precision", "batch", "cached_tokens", "prompt_tokens", "latency_ms",
                  "cuda_graph"]  # fmt: skip
        measure_steps(torch, m, Writer(args.out, head, fields), args, free)
        if args.experts_out:
            fields = ["precision", "tokens", "hidden_size", "inter_size", "num_experts", "topk",
                      "distribution", "latency_ms", "cuda_graph"]  # fmt: skip
            measure_experts(torch, m, Writer(args.experts_out, head, fields), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
