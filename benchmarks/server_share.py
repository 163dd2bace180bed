"""The share of the most load held at which Server and Interactive rows are read
(``replay.SUBMITTED_LOAD_SHARE``, docs/model.md §F9): median and p90 |error| of those rows of
measured files under ``achievable`` at each share, as the share was chosen (on the training
file and MLPerf v5.0) and judged (on the newer rounds).

    python benchmarks/server_share.py tests/data/benchmarks_train.csv \\
        tests/data/benchmarks_train_mlperf_v50.csv [--shares 1,0.995,0.99,0.98]

Each share runs every file's rows again (each Server row's load search included); prints one
line per share over the files' Server and Interactive rows together, and the CPU seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from inference_econ.cli import main  # noqa: E402
from inference_econ.measured import replay  # noqa: E402


def predicted(path: str) -> pd.DataFrame:
    """``compare-measured PATH --assumptions achievable`` as a table (its CSV output)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(
            ["compare-measured", path, "--assumptions", "achievable", "--format", "csv"],
            standalone_mode=False,
        )
    return pd.read_csv(io.StringIO(out.getvalue()), comment="#")


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--shares", default="1,0.995,0.99,0.98")
    args = parser.parse_args()
    start = time.process_time()
    for share in (float(s) for s in args.shares.split(",")):
        replay.SUBMITTED_LOAD_SHARE = share  # read when a row's case is built
        replay.clear()
        rows = pd.concat([predicted(f) for f in args.files])
        rows = rows[(rows.status == "ok") & rows.scenario.isin(["server", "interactive"])]
        err = rows.error.abs()
        print(
            f"share {share:g}: {len(rows)} rows, median |error| {err.median():.4f}, "
            f"p90 {err.quantile(0.9):.4f}",
            flush=True,
        )
    print(
        f"CPU: {time.process_time() - start:.0f} s (no compiled bytecode: "
        f"{bool(sys.flags.dont_write_bytecode)})"
    )


if __name__ == "__main__":
    main_()
