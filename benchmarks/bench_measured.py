"""Speed of compare-measured and calibrate: the 590 training rows, and 10,000 rows made from
them with other lengths and concurrencies (so few steps repeat).

    python benchmarks/bench_measured.py

Prints the wall-clock and CPU seconds of each (issue 13's limits: compare-measured <= 10 s for
590 and for 10,000 rows; calibrate <= 60 s on the training rows).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from inference_econ.studies.measured.calibration import calibrate
from inference_econ.studies.measured.predicting import compare

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "benchmarks_train.csv"


def many_rows(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` rows drawn from the training file's numeric-length rows, each with new lengths
    and (closed-loop rows) a new concurrency."""
    rng = np.random.default_rng(seed)
    df = pd.read_csv(DATA, dtype=str, keep_default_na=False)
    numeric = df[pd.to_numeric(df.input_len, errors="coerce").notna() & (df.n_gpus != "n/a")]
    rows = numeric.sample(n, replace=True, random_state=seed).reset_index(drop=True)
    lengths = rng.choice([128, 256, 500, 1000, 2000, 4000, 8000], size=(n, 2))
    rows["input_len"] = lengths[:, 0].astype(str)
    rows["output_len"] = np.where(rows.metric == "TTFT_batch1", "1", lengths[:, 1].astype(str))
    closed = pd.to_numeric(rows.batch_or_concurrency, errors="coerce").notna()
    rows.loc[closed, "batch_or_concurrency"] = rng.integers(1, 512, size=int(closed.sum())).astype(
        str
    )
    return rows


def timed(label: str, fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    print(
        f"{label}: {time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU"
    )
    return out


def main() -> int:
    for preset in ("paper", "achievable"):
        timed(f"compare-measured, 590 training rows, {preset}", lambda p=preset: compare(DATA, p))
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "rows.csv"
        many_rows(10_000).to_csv(big, index=False)
        result = timed(
            "compare-measured, 10,000 rows, achievable", lambda: compare(big, "achievable")
        )
        print(f"  {int((result.table.status == 'ok').sum())} rows with status ok")
    timed("calibrate, 590 training rows (leave-one-source-out)", lambda: calibrate(DATA))
    return 0


if __name__ == "__main__":
    sys.exit(main())
