"""Best-shape GEMM rates by format, measured, against the hardware files' ``gemm_efficiency``
(docs/model.md §F2 "Best-shape rates measured by format").

Reads NVIDIA AIConfigurator's measured GEMM tables (``gemm_perf.parquet``: TensorRT-LLM
1.3.0rc20's GEMMs timed over m, n, k and dtype; github.com/ai-dynamo/aiconfigurator at 095f58a,
``aic-core/src/aiconfigurator_core/systems/data/<system>/gemm/trtllm/1.3.0rc20/gemm_perf.parquet``;
not part of this repository) and prints, for each table and dtype (bfloat16 16 bits, fp8 and
fp8_block 8, nvfp4 4):

* the best-shape rate, TFLOP/s (2·m·n·k over the time of the fastest shape), and the 99th
  percentile over shapes (one lucky timing does not make the figure);
* the catalogue part's dense peak at those bits and the fraction it is;
* the figure the model uses (``best_gemm_efficiency``: the part's listed figure, or the
  narrow-format rule), so a listed figure that disagrees with the table shows.

``--share`` adds each part's NVFP4 over FP8 best shape (both from its one table), whose median
is ``NARROW_GEMM_SHARE``.

    PYTHONPATH=. python benchmarks/gemm_table_fit.py /tmp/aic/*/gemm/*.parquet [--share]

A measured figure beside the model's: neither is a prediction of a benchmark row.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from aic_tables import fail, read_parquet  # noqa: E402

from inference_econ.errors import InferenceEconError  # noqa: E402
from inference_econ.model.efficiency import NARROW_GEMM_SHARE, best_gemm_efficiency  # noqa: E402
from inference_econ.specs.hardware import load_hardware  # noqa: E402

COLUMNS = ("device", "gemm_dtype", "m", "n", "k", "latency")
BITS = {"bfloat16": 16, "fp8": 8, "fp8_block": 8, "nvfp4": 4}
#: AIConfigurator's device strings -> the catalogue's part
DEVICES = {
    "NVIDIA H100 80GB HBM3": "H100-SXM",
    "NVIDIA H200": "H200",
    "NVIDIA B200": "B200",
    "NVIDIA GB200": "GB200",
    "NVIDIA B300 SXM6 AC": "B300",
    "NVIDIA GB300": "GB300",
    "NVIDIA L40S": "L40S",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "RTX PRO 6000 BSE",
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tables", nargs="+", type=Path, help="AIConfigurator gemm_perf.parquet")
    parser.add_argument("--share", action="store_true", help="NVFP4 over FP8 best shape")
    args = parser.parse_args(argv)
    what = "an AIConfigurator gemm_perf.parquet"
    frames = []
    for path in args.tables:
        frame = read_parquet(path, what, COLUMNS)
        devices = frame["device"].unique()
        if len(devices) != 1 or devices[0] not in DEVICES:
            fail(f"{path}: device {list(devices)!r}; expected one of {', '.join(DEVICES)}")
        try:
            gpu = load_hardware(DEVICES[devices[0]])
        except InferenceEconError as exc:
            fail(str(exc))
        if (frame["latency"] <= 0).any():
            fail(f"{path}: a latency at or below 0 ms; pass {what}")
        frames.append((gpu, frame))
    print(
        f"{'part':18s} {'dtype':10s} {'bits':>4s} {'best TF/s':>10s} {'p99 TF/s':>9s} "
        f"{'peak TF/s':>10s} {'best/peak':>9s} {'model':>6s}"
    )
    shares = []
    for gpu, frame in frames:
        tflops = 2.0 * frame["m"] * frame["n"] * frame["k"] / (frame["latency"] * 1e-3) / 1e12
        best = {}
        for dtype, rates in tflops.groupby(frame["gemm_dtype"]):
            if dtype not in BITS:
                continue
            bits = BITS[dtype]
            peak = gpu.peak_flop_per_s(bits) / 1e12
            best[dtype] = rates.max()
            print(
                f"{gpu.name[:18]:18s} {dtype:10s} {bits:4d} {rates.max():10,.0f} "
                f"{rates.quantile(0.99):9,.0f} {peak:10,.0f} {rates.max() / peak:9.3f} "
                f"{best_gemm_efficiency(gpu, bits):6.3f}"
            )
        if "nvfp4" in best and "fp8" in best:
            shares.append((gpu.name, best["nvfp4"] / best["fp8"] * (
                gpu.peak_flop_per_s(8) / gpu.peak_flop_per_s(4)
            )))  # fmt: skip
    if args.share and shares:
        print("\nNVFP4 best-shape fraction over FP8's, one table each:")
        for name, share in shares:
            print(f"  {name:18s} {share:.3f}")
        median = statistics.median(s for _, s in shares)
        print(f"  median {median:.3f} (NARROW_GEMM_SHARE {NARROW_GEMM_SHARE})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
