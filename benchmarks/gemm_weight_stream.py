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
from 4,096 to 16,384 (the tensor-parallel shapes of 8B-405B models), and at two shapes.

The engine step reads weights at the profile's ``hbm_efficiency`` of the bandwidth (0.86,
fitted to stream micro-benchmarks) whatever their format; a share well below it means the
format's kernels, not the memory, set a small batch's weight time.

    python benchmarks/gemm_weight_stream.py b200_gemm_perf.parquet --gpu B200 \\
        [h200_gemm_perf.parquet --gpu H200 ...]

Bytes per weight: bfloat16 2, fp8 1, nvfp4 0.5 + one FP8 scale per 16 (0.5625).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from aic_tables import fail, read_parquet  # noqa: E402

from inference_econ.errors import InferenceEconError  # noqa: E402
from inference_econ.specs.hardware import load_hardware  # noqa: E402

BYTES = {"bfloat16": 2.0, "fp8": 1.0, "nvfp4": 0.5 + 1.0 / 16.0}
SHAPES = ((16384, 16384), (4096, 16384))  # (n, k): a 405B down/up at TP4-ish, a narrow output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pairs", nargs="+", help="TABLE --gpu NAME (or --hbm-tb-s X), repeated")
    args, rest = parser.parse_known_args()
    items = list(args.pairs) + rest
    jobs, i = [], 0
    while i < len(items):
        path = Path(items[i])
        if i + 2 >= len(items) or items[i + 1] not in ("--gpu", "--hbm-tb-s"):
            fail(f"{path}: give --gpu NAME or --hbm-tb-s X after it")
        flag, value = items[i + 1], items[i + 2]
        if flag == "--gpu":
            try:
                bw = load_hardware(value).hbm_bandwidth_bytes_per_s
            except InferenceEconError as exc:
                fail(f"--gpu {value}: {exc}")
        else:
            try:
                bw = float(value) * 1e12
            except ValueError:
                fail(f"--hbm-tb-s {value}: not a number (TB/s, e.g. 8)")
        jobs.append((path, value, bw))
        i += 3
    print("table\tformat\tshapes\tmedian\tq25\tq75\t" + "\t".join(f"n{n}k{k}" for n, k in SHAPES))
    for path, name, bw in jobs:
        frame = read_parquet(
            path, "an AIConfigurator gemm_perf.parquet", ("gemm_dtype", "m", "n", "k", "latency")
        )
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
            print(
                f"{path.name} ({name})\t{fmt}\t{len(by_shape)}\t{q50:.2f}\t{q25:.2f}\t{q75:.2f}\t"
                + "\t".join(at)
            )


if __name__ == "__main__":
    main()
