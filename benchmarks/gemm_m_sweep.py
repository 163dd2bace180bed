"""Does a GEMM's efficiency still rise with its token count at 1,000-2,000 tokens? (docs/model.md
§F2 "Against the token count" and §F9 "What would make the run steady").

Reads NVIDIA AIConfigurator's measured GEMM tables (``gemm_perf.parquet``: TensorRT-LLM's own
``Linear`` timed at a grid of ``m``, ``n``, ``k``; github.com/ai-dynamo/aiconfigurator,
``aic-core/src/aiconfigurator_core/systems/data/<system>/gemm/trtllm/<version>/``; download the
files you want, they are not part of this repository) and prints, at Llama 2 70B's
tensor-parallel-1 shapes (hidden 8,192: QKV 8,192→10,240, output 8,192→8,192, gate-up
8,192→57,344, down 28,672→8,192; the grid has no 57,344 or 28,672, so those two are interpolated
linearly in ``n`` or ``k`` between the grid points around them):

* each GEMM's TFLOP/s at M = 1,024, 1,536, 2,048, 4,096 and 8,192 tokens;
* a layer's four GEMMs together: TFLOP/s, over its value at 8,192 tokens, beside the model's
  ``V/(V + V½)`` (§F2) with the engine profile's ``gemm_half_volume``;
* the log-log slope of the layer's GEMM time from 1,024 to 2,048 tokens, and a straight line
  fitted to it over 1,024-4,096 tokens: its intercept in tokens (a fixed cost per layer) and
  its slope from 1,337 to 1,536 tokens (the operating point of one H200 in §F9), measured and
  modelled.

    python benchmarks/gemm_m_sweep.py h200_gemm_perf.parquet [h100_gemm_perf.parquet ...] \\
        [--dtype fp8] [--engine trtllm]

A measured figure, not a model: the tables time one kernel chain per shape (for ``fp8`` the
dynamic activation quantisation is included, per AIConfigurator's collector).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from aic_tables import fail, read_parquet  # noqa: E402

from inference_econ.errors import InferenceEconError  # noqa: E402
from inference_econ.model.efficiency import size_factor  # noqa: E402
from inference_econ.specs.engine import load_engine  # noqa: E402

HIDDEN = 8192
#: (name, n, k) of Llama 2 70B's four GEMMs per layer at tensor parallelism 1.
LAYER = (
    ("qkv", 10240, HIDDEN),
    ("o", HIDDEN, HIDDEN),
    ("gate-up", 57344, HIDDEN),
    ("down", HIDDEN, 28672),
)
TOKENS = (1024, 1536, 2048, 4096, 8192)
FIT_TOKENS = (1024, 1280, 1536, 1792, 2048, 2304, 2560, 2816, 3072, 3328, 3584, 3840, 4096)
OPERATING = (1337, 1536)
COLUMNS = ("gemm_dtype", "m", "n", "k", "latency")


def read_table(path: Path, dtype: str):
    """{(m, n, k): seconds} of one AIConfigurator gemm_perf.parquet at ``dtype``, and its label."""
    frame = read_parquet(path, "an AIConfigurator gemm_perf.parquet", COLUMNS)
    rows = frame[frame["gemm_dtype"] == dtype]
    if rows.empty:
        kinds = ", ".join(sorted(map(str, frame["gemm_dtype"].unique())))
        fail(f"{path}: no rows of gemm_dtype {dtype}; it holds {kinds} (--dtype)")
    label = " ".join(
        str(frame[c].iloc[0]) for c in ("device", "framework", "version") if c in frame.columns
    )
    # latency is in milliseconds (AIConfigurator's collector, ``latency_ms``)
    table = {
        (int(m), int(n), int(k)): float(t) * 1e-3
        for m, n, k, t in rows[["m", "n", "k", "latency"]].itertuples(index=False)
    }
    return table, label


def gemm_seconds(table, m: int, n: int, k: int) -> float:
    """Measured seconds of an ``m × n × k`` GEMM; ``n`` or ``k`` off the grid interpolated
    linearly between the grid points around it; nan where the grid does not hold it."""
    if (m, n, k) in table:
        return table[(m, n, k)]
    for axis, value in ((1, n), (2, k)):
        grid = sorted({key[axis] for key in table if key[0] == m})
        below = [g for g in grid if g < value]
        above = [g for g in grid if g > value]
        if below and above:
            lo, hi = below[-1], above[0]
            shape_lo = (m, lo, k) if axis == 1 else (m, n, lo)
            shape_hi = (m, hi, k) if axis == 1 else (m, n, hi)
            if shape_lo in table and shape_hi in table:
                w = (value - lo) / (hi - lo)
                return (1 - w) * table[shape_lo] + w * table[shape_hi]
    return float("nan")


def layer_seconds(table, m: int) -> float:
    return sum(gemm_seconds(table, m, n, k) for _, n, k in LAYER)


def model_layer_seconds(m, half_volume: float):
    """The model's layer GEMM time up to a constant: each GEMM's work over ``V/(V + V½)``."""
    m = np.asarray(m, dtype=float)
    return sum(m * n * k / size_factor(m * n * k, half_volume) for _, n, k in LAYER)


def line_fit(tokens, seconds):
    """(intercept in tokens, log-log slope from OPERATING[0] to OPERATING[1]) of a straight line."""
    x, y = np.asarray(tokens, float), np.asarray(seconds, float)
    ok = np.isfinite(y)
    slope, intercept = np.polyfit(x[ok], y[ok], 1)
    lo, hi = OPERATING
    return intercept / slope, np.log((intercept + slope * hi) / (intercept + slope * lo)) / np.log(
        hi / lo
    )


def report(path: Path, dtype: str, half_volume: float) -> None:
    table, label = read_table(path, dtype)
    print(f"== {path.name}: {label}, {dtype}")
    print("  TFLOP/s at M = " + ", ".join(f"{m:,}" for m in TOKENS))
    for name, n, k in LAYER:
        tflops = [2 * m * n * k / gemm_seconds(table, m, n, k) / 1e12 for m in TOKENS]
        print(f"  {name:8s} N={n:6d} K={k:6d}: " + " ".join(f"{v:6.0f}" for v in tflops))
    flop = 2 * sum(n * k for _, n, k in LAYER)
    measured = np.array([layer_seconds(table, m) for m in TOKENS])
    modelled = model_layer_seconds(TOKENS, half_volume)
    rate = flop * np.array(TOKENS) / measured / 1e12
    print("  layer   TFLOP/s: " + " ".join(f"{v:6.0f}" for v in rate))
    print("  layer   over M=8,192, measured: " + " ".join(f"{v:5.3f}" for v in rate / rate[-1]))
    model_rate = np.array(TOKENS) / modelled
    print(
        f"  layer   over M=8,192, model (V½ {half_volume:.2g}): "
        + " ".join(f"{v:5.3f}" for v in model_rate / model_rate[-1])
    )
    i1, i2 = TOKENS.index(1024), TOKENS.index(2048)
    print(
        "  log-log slope of the layer's GEMM time, 1,024 -> 2,048 tokens: "
        f"measured {np.log(measured[i2] / measured[i1]) / np.log(2):.3f}, "
        f"model {np.log(modelled[i2] / modelled[i1]) / np.log(2):.3f}"
    )
    fit = np.array([layer_seconds(table, m) for m in FIT_TOKENS])
    if np.isfinite(fit).sum() < 4:
        print("  straight line over 1,024-4,096 tokens: the table holds too few of these shapes")
        return
    tokens, slope = line_fit(FIT_TOKENS, fit)
    model_tokens, model_slope = line_fit(FIT_TOKENS, model_layer_seconds(FIT_TOKENS, half_volume))
    ok = np.isfinite(fit)
    line = np.polyval(np.polyfit(np.array(FIT_TOKENS)[ok], fit[ok], 1), np.array(FIT_TOKENS)[ok])
    residual = np.std(fit[ok] / line - 1)
    print(
        f"  straight line over 1,024-4,096 tokens: intercept {tokens:.0f} tokens (model "
        f"{model_tokens:.0f}), slope {OPERATING[0]:,} -> {OPERATING[1]:,} tokens {slope:.3f} "
        f"(model {model_slope:.3f}); scatter about it {100 * residual:.1f} %"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tables", nargs="+", type=Path, help="AIConfigurator gemm_perf.parquet")
    parser.add_argument("--dtype", default="fp8", help="gemm_dtype to read (fp8, bfloat16, ...)")
    parser.add_argument("--engine", default="trtllm", help="engine profile for V½")
    args = parser.parse_args(argv)
    start = time.process_time()
    try:
        half_volume = float(load_engine(args.engine).gemm_half_volume)
    except InferenceEconError as exc:
        fail(f"--engine: {exc}")
    for path in args.tables:
        if not path.is_file():
            fail(f"{path}: no such file; pass an AIConfigurator gemm_perf.parquet")
        report(path, args.dtype, half_volume)
    print(f"CPU {time.process_time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
