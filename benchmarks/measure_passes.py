"""Measure on a GPU the per-token passes of an engine step that the published kernel tables
lack: the residual add with RMSNorm, the SwiGLU activation, rotary embedding and greedy sampling
over the vocabulary, with the floor of one kernel in a CUDA graph and the device's copy
bandwidth.

    python benchmarks/measure_passes.py --out passes.csv [--quick]

Needs PyTorch, Triton and a CUDA GPU (none is a dependency of the package; the machine that
measured the shipped table is named in its file). The norm, the activation and rotary embedding
are one Triton kernel each, laid out as the engines' own CUDA kernels are (one program a token
for the norm and for rotary embedding, contiguous blocks of a row for the activation), and are
checked against PyTorch in float32 before anything is timed. Greedy sampling is PyTorch's
argmax over float32 logits. Each pass runs as an engine runs a decode step: inside a captured
CUDA graph, calls back to back, inputs rotated so that larger sizes do not sit in L2. Latencies
are the median of five replays, in microseconds per call; ``bytes`` is the fewest bytes the pass
must move (each input read once, each output written once), so ``bytes / latency`` is its
achieved bandwidth.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time

TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
HIDDEN = (2048, 4096, 5120, 7168, 8192, 12288, 16384)
INTERMEDIATE = (1536, 3584, 7168, 14336, 28672)
HEADS = (8, 32, 64, 128)  # query heads of 128 dimensions, a quarter as many KV heads
BATCH = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
VOCAB = (32000, 128256, 151936, 201088)
ROTATE_BYTES = 256 << 20  # inputs rotated until this many bytes: past every L2 (50-126 MB)


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="CSV file to write the measurements to")
    p.add_argument("--quick", action="store_true", help="a few sizes only (a check of the script)")
    return p.parse_args()


def greedy(logits):
    """Greedy sampling: the most likely token of each row."""
    import torch

    return torch.argmax(logits, dim=-1)


def measure_floor_and_copy(torch, dev, timed, rows, when):
    """The floor of one kernel in a graph (a one-element add) and the device's copy bandwidth
    (bytes read plus written), at the start and at the end (the clocks may rise between)."""
    one = torch.randn(1, device=dev)
    us = timed(lambda: (one,), lambda x: x.add_(1.0), calls=200)
    rows.append(
        dict(
            op=f"kernel_floor_{when}",
            impl="torch",
            dtype="float32",
            tokens=1,
            width=1,
            bytes=8,
            latency_us=round(us, 4),
        )
    )
    big = torch.empty(1 << 30, dtype=torch.uint8, device=dev).random_(0, 255)
    dst = torch.empty_like(big)
    us = timed(lambda big=big, dst=dst: (big, dst), lambda a, b: b.copy_(a), calls=8)
    rows.append(
        dict(
            op=f"copy_{when}",
            impl="torch",
            dtype="uint8",
            tokens=1,
            width=big.numel(),
            bytes=2 * big.numel(),
            latency_us=round(us, 4),
        )
    )


def triton_kernels():
    """One kernel a pass, written as the engines' own CUDA kernels are laid out: a program
    a token for the norm, contiguous blocks of a row for the activation, a program a token
    looping over its heads for rotary embedding (in place)."""
    import types

    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, y_ptr, H, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        mask = cols < H
        x = tl.load(x_ptr + row * H + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row * H + cols, mask=mask, other=0.0).to(tl.float32)
        h = x + r
        tl.store(r_ptr + row * H + cols, h.to(tl.bfloat16), mask=mask)
        var = tl.sum(h * h, axis=0) / H
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * H + cols, (h * tl.rsqrt(var + eps) * w).to(tl.bfloat16), mask=mask)

    @triton.jit
    def silu_mul_kernel(x_ptr, y_ptr, width, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = cols < width
        g = tl.load(x_ptr + row * 2 * width + cols, mask=mask, other=0.0).to(tl.float32)
        u = tl.load(x_ptr + row * 2 * width + width + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(
            y_ptr + row * width + cols, (g / (1.0 + tl.exp(-g)) * u).to(tl.bfloat16), mask=mask
        )

    @triton.jit
    def rope_kernel(q_ptr, k_ptr, cos_ptr, sin_ptr, HQ, HK, HALF: tl.constexpr):
        t = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, HALF)
        c = tl.load(cos_ptr + t * HALF + offs).to(tl.float32)
        s = tl.load(sin_ptr + t * HALF + offs).to(tl.float32)
        for h in range(0, HQ):
            base = q_ptr + (t * HQ + h) * 2 * HALF
            x1 = tl.load(base + offs).to(tl.float32)
            x2 = tl.load(base + HALF + offs).to(tl.float32)
            tl.store(base + offs, (x1 * c - x2 * s).to(tl.bfloat16))
            tl.store(base + HALF + offs, (x2 * c + x1 * s).to(tl.bfloat16))
        for h in range(0, HK):
            base = k_ptr + (t * HK + h) * 2 * HALF
            x1 = tl.load(base + offs).to(tl.float32)
            x2 = tl.load(base + HALF + offs).to(tl.float32)
            tl.store(base + offs, (x1 * c - x2 * s).to(tl.bfloat16))
            tl.store(base + HALF + offs, (x2 * c + x1 * s).to(tl.bfloat16))

    def add_rmsnorm(x, residual, weight):
        t, h = x.shape
        y = torch.empty_like(x)
        block = triton.next_power_of_2(h)
        warps = min(max(block // 512, 1), 16)
        add_rmsnorm_kernel[(t,)](x, residual, weight, y, h, 1e-6, BLOCK=block, num_warps=warps)
        return y

    def silu_mul(x):
        t, two_i = x.shape
        i = two_i // 2
        y = torch.empty(t, i, device=x.device, dtype=x.dtype)
        silu_mul_kernel[(t, triton.cdiv(i, 1024))](x, y, i, BLOCK=1024, num_warps=4)
        return y

    def rope(q, k, cos, sin):
        t, hq, d = q.shape
        rope_kernel[(t,)](q, k, cos, sin, hq, k.shape[1], HALF=d // 2, num_warps=2)
        return q, k

    return types.SimpleNamespace(add_rmsnorm=add_rmsnorm, silu_mul=silu_mul, rope=rope)


def check_kernels(torch, kernels, dev) -> None:
    """Each kernel against PyTorch in float32 on fresh random inputs (bf16 operands: a
    relative error under 1e-2); exits 1 if one is wrong, before anything is timed."""
    f32, bf16 = torch.float32, torch.bfloat16
    x = torch.randn(37, 5120, device=dev, dtype=bf16)
    r = torch.randn(37, 5120, device=dev, dtype=bf16)
    w = torch.randn(5120, device=dev, dtype=bf16)
    h = x.to(f32) + r.to(f32)
    ref = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * w.to(f32)
    got = kernels.add_rmsnorm(x, r, w).to(f32)
    errors = {"add_rmsnorm": (got - ref).norm() / ref.norm()}
    errors["residual"] = (r.to(f32) - h).norm() / h.norm()
    a = torch.randn(37, 2 * 3584, device=dev, dtype=bf16)
    g, u = a.to(f32).chunk(2, dim=-1)
    ref = torch.nn.functional.silu(g) * u
    errors["silu_mul"] = (kernels.silu_mul(a).to(f32) - ref).norm() / ref.norm()
    q = torch.randn(37, 32, 128, device=dev, dtype=bf16)
    k = torch.randn(37, 8, 128, device=dev, dtype=bf16)
    angle = torch.rand(37, 64, device=dev) * 6.2832
    cos, sin = angle.cos(), angle.sin()

    def rotate(v):
        v1, v2 = v.to(f32).chunk(2, dim=-1)
        c, s = cos[:, None, :], sin[:, None, :]
        return torch.cat((v1 * c - v2 * s, v2 * c + v1 * s), dim=-1)

    rq, rk = rotate(q), rotate(k)
    kernels.rope(q, k, cos.to(bf16), sin.to(bf16))
    errors["rope_q"] = (q.to(f32) - rq).norm() / rq.norm()
    errors["rope_k"] = (k.to(f32) - rk).norm() / rk.norm()
    bad = {name: float(e) for name, e in errors.items() if not float(e) < 1e-2}
    print("checked:", {name: f"{float(e):.1e}" for name, e in errors.items()})
    if bad:
        print(f"error: kernels disagree with PyTorch: {bad}", file=sys.stderr)
        raise SystemExit(1)


def main() -> int:
    args = parse()
    try:
        import torch
    except ImportError:
        print("error: measure_passes.py needs PyTorch with CUDA", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("error: measure_passes.py needs a CUDA GPU; none is visible", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    torch.manual_seed(0)
    meta = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "date": time.strftime("%Y-%m-%d"),
    }
    rows: list[dict] = []
    quick = args.quick
    sizes = (lambda xs: xs[::4]) if quick else (lambda xs: xs)

    def timed(make_inputs, fn, calls: int = 16) -> float:
        """Median microseconds per call of ``fn`` over rotated input sets, in a CUDA graph."""
        first = make_inputs()
        per_set = sum(t.numel() * t.element_size() for t in first if torch.is_tensor(t))
        sets = [first] + [make_inputs() for _ in range(min(7, ROTATE_BYTES // max(per_set, 1)))]
        for s in sets:  # warm up: compile, autotune, allocate
            fn(*s)
        torch.cuda.synchronize()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for s in sets:
                fn(*s)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for i in range(calls):
                fn(*sets[i % len(sets)])
        times = []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000.0 / calls)
        del graph
        return sorted(times)[2]

    def record(op, impl, dtype, tokens, width, nbytes, fn, inputs):
        try:
            us = timed(inputs, fn)
        except Exception as exc:  # noqa: BLE001 - one size failing leaves the others
            print(f"failed: {op} {tokens}x{width}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return
        rows.append(
            dict(
                op=op,
                impl=impl,
                dtype=dtype,
                tokens=tokens,
                width=width,
                bytes=int(nbytes),
                latency_us=round(us, 4),
            )
        )

    kernels = triton_kernels()
    check_kernels(torch, kernels, dev)
    bf16 = torch.bfloat16
    measure_floor_and_copy(torch, dev, timed, rows, "start")

    for t in sizes(TOKENS):
        for h in sizes(HIDDEN):

            def inputs(t=t, h=h):
                return (
                    torch.randn(t, h, device=dev, dtype=bf16),
                    torch.randn(t, h, device=dev, dtype=bf16),
                    torch.randn(h, device=dev, dtype=bf16),
                )

            nbytes = 2 * (4 * t * h + h)
            record("add_rmsnorm", "triton", "bfloat16", t, h, nbytes, kernels.add_rmsnorm, inputs)

    for t in sizes(TOKENS):
        for i in sizes(INTERMEDIATE):

            def inputs(t=t, i=i):
                return (torch.randn(t, 2 * i, device=dev, dtype=bf16),)

            nbytes = 2 * 3 * t * i
            record("silu_mul", "triton", "bfloat16", t, i, nbytes, kernels.silu_mul, inputs)

    for t in sizes(TOKENS):
        for heads in sizes(HEADS):
            kv = max(heads // 4, 1)

            def inputs(t=t, heads=heads, kv=kv):
                angle = torch.rand(t, 64, device=dev) * 6.2832
                return (
                    torch.randn(t, heads, 128, device=dev, dtype=bf16),
                    torch.randn(t, kv, 128, device=dev, dtype=bf16),
                    angle.cos().to(bf16),
                    angle.sin().to(bf16),
                )

            nbytes = 2 * (2 * t * (heads + kv) * 128 + 2 * t * 64)
            record("rope", "triton", "bfloat16", t, heads, nbytes, kernels.rope, inputs)

    for b in sizes(BATCH):
        for v in sizes(VOCAB):

            def inputs(b=b, v=v):
                return (torch.randn(b, v, device=dev, dtype=torch.float32),)

            nbytes = 4 * b * v + 8 * b
            record("sample_greedy", "torch.argmax", "float32", b, v, nbytes, greedy, inputs)

    measure_floor_and_copy(torch, dev, timed, rows, "end")

    with open(args.out, "w", newline="") as fh:
        fh.write("# " + json.dumps(meta) + "\n")
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(json.dumps(meta))
    print(f"{'op':14} {'impl':14} {'tokens':>6} {'width':>6} {'us':>9} {'GB/s':>7}")
    for r in rows:
        if r["tokens"] in (1, 64, 1024, 16384) or r["op"].startswith(("kernel_floor", "copy")):
            gbs = r["bytes"] / r["latency_us"] / 1e3
            print(
                f"{r['op']:14} {r['impl']:14} {r['tokens']:6d} {r['width']:6d} "
                f"{r['latency_us']:9.2f} {gbs:7.0f}"
            )
    print(f"{len(rows)} measurements written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
