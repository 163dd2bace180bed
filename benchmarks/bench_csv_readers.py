"""Speed of the CSV readers of many rows: a trace, offers, overlay points and a measured
log (``bench_measured.fleet_log``) of 100,000 rows each, read and checked row by row (docs/errors.md, "Files of many rows").

    PYTHONPATH=. python benchmarks/bench_csv_readers.py [--rows 100000]

Each file is read three times in this process; the script prints the least CPU time (reading
only: a measured log's rows are not resolved here, ``bench_measured.py`` times that), with
every row good, then with one row in a hundred unreadable (each left out with its reason: a
warning line each for the first five, one line counting the rest).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from bench_measured import fleet_log  # noqa: E402

from inference_econ.load.arrivals import load_trace  # noqa: E402
from inference_econ.measured.overlays import load_overlay_points  # noqa: E402
from inference_econ.measured.reading import _read_columns  # noqa: E402
from inference_econ.specs.collector import gc_paused  # noqa: E402
from inference_econ.studies.observations import load_observations  # noqa: E402


def files(folder: Path, n: int, bad_every: int | None) -> dict[str, Path]:
    """A trace, offers, overlay points and a measured log of ``n`` rows; with ``bad_every``,
    every that many rows one cell is text (or, in the measured log, a cell too many)."""
    rng = np.random.default_rng(0)
    trace = pd.DataFrame(
        {
            "arrival_time_s": np.round(np.sort(rng.uniform(0, 10_000, n)), 4),
            "prompt_tokens": rng.integers(10, 4000, n),
            "output_tokens": rng.integers(1, 1000, n),
        }
    )
    offers = pd.DataFrame(
        {
            "provider": [f"P{i % 7}" for i in range(n)],
            "model": "Llama 3 70B",
            "date": "2024-08",
            "tokens_per_s": 50 + np.arange(n) % 100,
            "usd_per_mtok_input": 0.9,
            "usd_per_mtok_output": 0.9,
        }
    )
    overlay = pd.DataFrame(
        {
            "label": rng.choice(list("abc"), n),
            "tokens_per_s": rng.uniform(5, 200, n).round(3),
            "usd_per_mtok": rng.uniform(0.1, 20, n).round(3),
        }
    )
    measured = fleet_log(n)  # bench_measured.py's log of one fleet (short lines)
    if bad_every:
        bad = np.arange(0, n, bad_every)
        trace["prompt_tokens"] = trace["prompt_tokens"].astype(object)
        trace.loc[bad, "prompt_tokens"] = "abc"
        offers["tokens_per_s"] = offers["tokens_per_s"].astype(object)
        offers.loc[bad, "tokens_per_s"] = "fast"
        overlay["usd_per_mtok"] = overlay["usd_per_mtok"].astype(object)
        overlay.loc[bad, "usd_per_mtok"] = "n/a"
    out = {}
    for name, frame in (("trace", trace), ("offers", offers), ("overlay", overlay)):
        out[name] = folder / f"{name}.csv"
        frame.to_csv(out[name], index=False)
    out["measured"] = folder / "measured.csv"
    measured.to_csv(out["measured"], index=False)
    if bad_every:  # an unquoted comma: one cell too many
        lines = out["measured"].read_text().splitlines()
        for i in range(1, len(lines), bad_every):
            lines[i] += ",extra"
        out["measured"].write_text("\n".join(lines) + "\n")
    return out


def measured_columns(path: Path):
    with gc_paused():
        return _read_columns(path)


READERS = {
    "trace": load_trace,
    "offers": load_observations,
    "overlay": load_overlay_points,
    "measured": measured_columns,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    print("PYTHONDONTWRITEBYTECODE=1 on this machine: timings without compiled bytecode")
    with tempfile.TemporaryDirectory() as tmp:
        for bad_every, label in ((None, "every row good"), (100, "1 row in 100 unreadable")):
            paths = files(Path(tmp), args.rows, bad_every)
            for name, read in READERS.items():
                best = np.inf
                for _ in range(3):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        start = time.process_time()
                        read(paths[name])
                        best = min(best, time.process_time() - start)
                print(f"{name:9s} {args.rows:,} rows, {label}: {best:.3f} s CPU")


if __name__ == "__main__":
    main()
