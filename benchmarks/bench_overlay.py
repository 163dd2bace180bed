"""Time ``run --measured`` with 10,000 overlay points (docs/errors.md, "Bounded work").

Writes a CSV of 10,000 measured operating points (three labels), then times, in this process:
reading and checking the overlay (``load_overlay_points``), and the whole command
``inference-econ run paper/figure-8 --measured points.csv --out <tmp>`` (frontiers, the figure
with the points drawn as one scatter per label, PNG and SVG): cold, then with the frontiers
cached without and with the overlay (the difference is what the overlay costs). Prints wall
and CPU seconds.

    python benchmarks/bench_overlay.py [--points 10000] [--labels 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from inference_econ.cli import main as cli  # noqa: E402
from inference_econ.measured.overlays import load_overlay_points  # noqa: E402


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--labels", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "points.csv"
        pd.DataFrame(
            {
                "label": rng.choice([f"engine {i}" for i in range(args.labels)], args.points),
                "tokens_per_s": rng.uniform(5, 200, args.points),
                "usd_per_mtok": rng.uniform(0.1, 20, args.points),
            }
        ).to_csv(csv, index=False)
        wall, cpu, points = timed(lambda: load_overlay_points(csv))
        print(f"read and check {len(points):,} overlay points: {wall:.3f} s wall, {cpu:.3f} s CPU")
        out = Path(tmp) / "out"
        command = ["run", "paper/figure-8", "--measured", str(csv), "--out", str(out), "-q"]
        runs = (
            ("with the overlay, cold (frontiers computed)", command),
            ("without the overlay, frontiers cached", command[:2] + command[4:]),
            ("with the overlay, frontiers cached", command),
        )
        for what, args in runs:
            wall, cpu, result = timed(lambda args=args: CliRunner().invoke(cli, args))
            assert result.exit_code == 0, result.output
            print(f"run paper/figure-8 {what}: {wall:.2f} s wall, {cpu:.2f} s CPU")


if __name__ == "__main__":
    main()
