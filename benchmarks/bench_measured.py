"""Speed of compare-measured: the 590 training rows, the 306 MLPerf v5.0 rows, and a benchmark
log of 100,000 rows.

    python benchmarks/bench_measured.py

A log of a fleet repeats its configurations: its 100,000 rows are drawn (with replacement, the
values jittered) from the MLPerf Inference v5.0 results of one submitter (HPE: 35 rows, Offline
and Server on H100, H200 and GH200 systems). Rows that ask the same question are read and
predicted once, so the time is what the distinct configurations cost (a Server configuration's
load search: a fraction of a second to a few seconds) plus a few microseconds per row; the
script prints both. Limits: the training file <= 60 s CPU; 100,000 rows
<= 10 s CPU and under 1 GB of memory.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from inference_econ.measured.comparison import _question, compare  # noqa: E402
from inference_econ.measured.reading import load_measured  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
TRAIN = DATA / "benchmarks_train.csv"
V50 = DATA / "benchmarks_train_mlperf_v50.csv"


def fleet_log(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` rows drawn from one submitter's v5.0 rows, each value scaled by 0.9-1.1."""
    rng = np.random.default_rng(seed)
    df = pd.read_csv(V50, dtype=str, keep_default_na=False)
    fleet = df[df.source.str.contains("closed/HPE/")]
    rows = fleet.sample(n, replace=True, random_state=seed).reset_index(drop=True)
    value = pd.to_numeric(rows.value, errors="coerce") * rng.uniform(0.9, 1.1, n)
    rows["value"] = value.map(lambda v: f"{v:.6g}")
    # a log's lines are short: the system, the engine and the limits, not the provenance
    rows["source"] = rows.source.str.extract(r"results/([^/]+)/")[0]
    rows["precision"] = rows.precision.str.split().str[0]
    engine = rows.notes.str.extract(r"^(TensorRT-LLM|vLLM)")[0].fillna("")
    limits = rows.notes.str.extract(r"(constraints p99 TTFT<=\d+ms, p99 TPOT<=\d+ms)")[0]
    rows["notes"] = engine + "; " + limits.fillna("")
    return rows


def timed(label: str, fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    print(
        f"{label}: {time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU"
    )
    return out


def main() -> int:
    print("PYTHONDONTWRITEBYTECODE=1 on this machine: timings without compiled bytecode")
    with tempfile.TemporaryDirectory() as tmp:  # first: nothing simulated yet in this process
        big = Path(tmp) / "fleet.csv"
        fleet_log(100_000).to_csv(big, index=False)
        result = timed(
            "compare-measured, 100,000 rows, achievable", lambda: compare(big, "achievable")
        )
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        distinct = len({_question(r) for r in load_measured(big)})
        ok = int((result.table.status == "ok").sum())
        print(
            f"  {distinct} distinct configurations and metrics; {ok} rows with status ok; "
            f"peak memory of the process {peak:.0f} MB"
        )
        one = Path(tmp) / "one.csv"
        fleet_log(1_000, seed=1).to_csv(one, index=False)
        timed(
            "compare-measured, 1,000 rows of the same fleet again (simulations cached)",
            lambda: compare(one, "achievable"),
        )
    if "--fleet-only" in sys.argv:
        return 0
    for path in (TRAIN, V50):
        n = len(pd.read_csv(path, dtype=str))
        for preset in ("achievable", "paper"):
            timed(
                f"compare-measured, {n} rows of {path.name}, {preset}",
                lambda p=preset, f=path: compare(f, p),
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
