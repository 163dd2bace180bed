"""How fast do a part's GEMM kernels stream their weights at decode batch sizes, by format?
(docs/model.md §F2 "Weights at small batches, by format").

Reads NVIDIA AIConfigurator's measured GEMM tables (``gemm_perf.parquet``: TensorRT-LLM's own
``Linear`` timed at a grid of ``m``, ``n``, ``k``, latency in milliseconds;
github.com/ai-dynamo/aiconfigurator, ``aic-core/src/aiconfigurator_core/systems/data/<system>/
gemm/trtllm/<version>/``; download the files you want, they are not part of this repository)
and prints, for each file and format (bfloat16, fp8, nvfp4), the weight bytes a GEMM reads
over its measured time at ``m`` <= 64 tokens (where no format's arithmetic binds), as a share of
the part's HBM bandwidth (the hardware YAML's, given by ``--hbm-tb-s`` or read from the
catalogue with ``--gpu``): median and quartiles over the table's shapes with ``n`` and ``k``
from 4,096 to 16,384 (the tensor-parallel shapes of 8B-405B models), and at two shapes; then
the least-squares line t = fixed + bytes / (share x HBM) through the same times, which the
hardware YAML's ``small_batch_gemm`` entries are (printed in that form at the end). FP8 tables
quantise the activations with a scale computed each call: ``--scale-table`` (the part's
``quantize/.../computescale_perf.parquet``) takes its median time at m <= 64 off the FP8 fixed
time, for checkpoints with static scales (AIConfigurator's ``fp8_static``).

    python benchmarks/gemm_weight_stream.py b200_gemm_perf.parquet --gpu B200 \
        --scale-table b200_computescale_perf.parquet [h200_gemm_perf.parquet --gpu H200 ...]

``--excess`` also prints, by token count from 64 to 8,192, the median over the same shapes of
each kernel's measured time beyond the larger of its weights at the line's rate and its
arithmetic at the table's best-shape rate (its 99th-percentile TFLOP/s), and that time's ratio
to the larger side: whether the line's fixed time stays once the arithmetic binds (docs/model.md
§F2 "Why outside the roofline").

Bytes per weight: bfloat16 2, fp8 1, nvfp4 0.5 + one FP8 scale per 16 (0.5625).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from aic_tables import fail, read_parquet, table_at  # noqa: E402

BYTES = {"bfloat16": 2.0, "fp8": 1.0, "nvfp4": 0.5 + 1.0 / 16.0}
SHAPES = ((16384, 16384), (4096, 16384))  # (n, k): a 405B down/up at TP4-ish, a narrow output
#: Bits of each format as the hardware YAML's ``small_batch_gemm`` keys them.
BITS = {"bfloat16": 16, "fp8": 8, "nvfp4": 4}


def jobs_of(items: list[str]):
    """(table, name, HBM bytes/s, compute-scale table or None) from ``TABLE --gpu NAME
    [--scale-table FILE]`` (or ``--hbm-tb-s X``), repeated."""
    jobs, i = [], 0
    while i < len(items):
        path, name, bw, i = table_at(items, i)
        scale = None
        if i < len(items) and items[i] == "--scale-table":
            if i + 1 >= len(items):
                fail("--scale-table: give an AIConfigurator computescale_perf.parquet after it")
            scale = Path(items[i + 1])
            i += 2
        for given in (path, scale):  # every file checked before a line is printed
            if given is not None and not given.is_file():
                fail(f"{given}: no such file")
        jobs.append((path, name, bw, scale))
    return jobs


def line_fit(part, per: float, bw: float):
    """(fixed seconds, share of HBM, median |relative residual|) of t = fixed + bytes/rate
    fitted by least squares to the fastest time of each shape (``per`` bytes a weight)."""
    fast = part.groupby(["n", "k", "m"]).latency.min().reset_index()
    x = (fast.n * fast.k * per).to_numpy(float)
    t = fast.latency.to_numpy(float) * 1e-3
    A = np.column_stack([np.ones_like(x), x])
    (fixed, slope), *_ = np.linalg.lstsq(A, t, rcond=None)
    residual = np.median(np.abs(A @ np.array([fixed, slope]) / t - 1.0))
    return fixed, 1.0 / (slope * bw), residual


#: Token counts of the ``--excess`` table.
EXCESS_M = (64, 128, 256, 512, 1024, 2048, 4096, 8192)


def excess(frame, fmt: str, per: float, bw: float, share: float) -> list[str]:
    """``--excess``: "m: median excess us / median ratio" at each of ``EXCESS_M``."""
    part = frame[
        (frame.gemm_dtype == fmt) & frame.n.between(4096, 16384) & frame.k.between(4096, 16384)
    ]
    fast = part.groupby(["n", "k", "m"]).latency.min().reset_index()
    t = fast.latency.to_numpy(float) * 1e-3
    flop = 2.0 * fast.m * fast.n * fast.k
    best = float(np.quantile(flop / t, 0.99))
    larger = np.maximum(fast.n * fast.k * per / (share * bw), flop / best).to_numpy(float)
    out = []
    for m in EXCESS_M:
        at = (fast.m == m).to_numpy()
        if at.any():
            over = np.median(t[at] - larger[at]) * 1e6
            out.append(f"{m}: {over:.1f} us / {np.median(t[at] / larger[at]):.2f}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "pairs", nargs="+", help="TABLE --gpu NAME (or --hbm-tb-s X) [--scale-table FILE], repeated"
    )
    parser.add_argument(
        "--excess", action="store_true", help="the kernels' time beyond the roofline by m"
    )
    args, rest = parser.parse_known_args()
    jobs = jobs_of(list(args.pairs) + rest)
    print(
        "table\tformat\tshapes\tmedian\tq25\tq75\t"
        + "\t".join(f"n{n}k{k}" for n, k in SHAPES)
        + "\tfixed_us\tline_share\tline_residual"
    )
    lines, over = [], []
    for path, name, bw, scale_path in jobs:
        frame = read_parquet(
            path, "an AIConfigurator gemm_perf.parquet", ("gemm_dtype", "m", "n", "k", "latency")
        )
        scale_s = None
        if scale_path is not None:
            scales = read_parquet(
                scale_path, "an AIConfigurator computescale_perf.parquet", ("m", "latency")
            )
            scale_s = float(np.median(scales[scales.m <= 64].latency)) * 1e-3
        small = frame[(frame.m <= 64) & frame.n.between(4096, 16384) & frame.k.between(4096, 16384)]
        for fmt, per in BYTES.items():
            part = small[small.gemm_dtype == fmt]
            if part.empty:
                continue
            fast = part.groupby(["n", "k", "m"]).latency.min().reset_index()
            share = fast.n * fast.k * per / (fast.latency * 1e-3) / bw
            by_shape = share.groupby([fast.n, fast.k]).median()
            q25, q50, q75 = np.percentile(by_shape, [25, 50, 75])
            at = [f"{by_shape.get((n, k), float('nan')):.2f}" for n, k in SHAPES]
            fixed, line_share, residual = line_fit(part, per, bw)
            if fmt == "fp8" and scale_s is not None:
                fixed -= scale_s  # static scales: no per-step amax (AIConfigurator's fp8_static)
            print(
                f"{path.name} ({name})\t{fmt}\t{len(by_shape)}\t{q50:.2f}\t{q25:.2f}\t{q75:.2f}\t"
                + "\t".join(at)
                + f"\t{fixed * 1e6:.1f}\t{line_share:.2f}\t{residual:.2f}"
            )
            lines.append((name, BITS[fmt], fixed, line_share, scale_s if fmt == "fp8" else None))
            if args.excess:
                over.append(
                    (f"{path.name} ({name}) {fmt}", excess(frame, fmt, per, bw, line_share))
                )
    print("\n# small_batch_gemm entries for the hardware YAML (a negative fixed time: no entry)")
    for name, bits, fixed, line_share, scale_s in lines:
        note = "" if scale_s is None else f"  # dynamic-scale {scale_s * 1e6:.1f} us taken off"
        print(
            f"{name}:  {bits}: {{fixed_us: {fixed * 1e6:.1f}, stream_share: {line_share:.2f}}}"
            + note
        )

    if over:
        print("\n# beyond the roofline: median excess over max(weights at the line, arithmetic at")
        print("# the best shape) / median ratio to it, by tokens")
        for label, cells in over:
            print(f"{label}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
