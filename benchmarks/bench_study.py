"""Wall time of a study with --jobs 1 and --jobs 2 (cold cache), per-cell cost, the scaling.

    python benchmarks/bench_study.py                          # the worked study, jobs 1 and 2
    python benchmarks/bench_study.py --jobs 2 --keep out/s    # keep the last run's folder
    python benchmarks/bench_study.py --only context_tokens=8000  # a slice: one value of an axis

Each run starts from an empty folder (nothing cached), then the same study is run again to time
a fully cached rerun. The key-point tables of every run must be identical.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from inference_econ.output.study_run import run_study
from inference_econ.specs import catalog
from inference_econ.specs.yamlfile import load_yaml
from inference_econ.studies.study import study_from_dict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", default="studies/accelerators-models")
    parser.add_argument("--jobs", default="1,2", help="comma-separated job counts")
    parser.add_argument("--keep", help="copy the output folder of the last run here")
    parser.add_argument(
        "--only", action="append", default=[], help="AXIS=VALUE: keep one value of an axis"
    )
    args = parser.parse_args()
    study = _slice(args.study, args.only)
    rows, tables = [], []
    job_counts = [int(j) for j in args.jobs.split(",")]
    for jobs in job_counts:
        folder = Path(tempfile.mkdtemp(prefix="bench-study-"))
        load = os.getloadavg()[0]
        start = time.perf_counter()
        cpu0 = _cpu()
        result = run_study(study, folder, jobs=jobs)
        wall = time.perf_counter() - start
        cpu = _cpu() - cpu0
        assert result.cached == 0, "a benchmark run must start cold"
        start = time.perf_counter()
        again = run_study(study, folder, jobs=jobs)
        rerun = time.perf_counter() - start
        cells = list(result.elapsed_s.values())
        rows.append(
            {
                "jobs": jobs,
                "cells": len(result.cells),
                "wall_s": round(wall, 1),
                "cells_per_s": round(len(result.cells) / wall, 2),
                "cpu_s (all processes)": round(cpu, 1),
                "cell_mean_s": round(statistics.mean(cells), 3),
                "cell_median_s": round(statistics.median(cells), 3),
                "cell_max_s": round(max(cells), 2),
                "cached_rerun_s": round(rerun, 1),
                "load_before": round(load, 2),
            }
        )
        assert again.computed == 0 and again.cached == len({c.key for c in result.cells})
        tables.append(result.key_points)
        print(pd.DataFrame(rows[-1:]).to_string(index=False), file=sys.stderr)
        if args.keep and jobs == job_counts[-1]:
            shutil.copytree(folder, args.keep)  # fails rather than overwrite an existing folder
        shutil.rmtree(folder)
    df = pd.DataFrame(rows)
    df["speedup"] = (df["wall_s"].iloc[0] / df["wall_s"]).round(2)
    print(df.to_string(index=False))
    for other in tables[1:]:
        pd.testing.assert_frame_equal(tables[0], other)
    print("key-point tables identical across job counts:", len(tables) > 1)


def _slice(name: str, only: list[str]):
    """The study, or the slice of it where each AXIS=VALUE of ``only`` keeps one value."""
    path = catalog.find("scenarios", name)
    data = load_yaml(path)
    for item in only:
        axis, _, value = item.partition("=")
        values = data["axes"][axis]
        kept = [v for v in values if str(v.get("label") if isinstance(v, dict) else v) == value]
        if not kept:
            sys.exit(f"{axis} has no value {value!r}: {values}")
        data["axes"][axis] = kept
    return study_from_dict(data, str(path), path.stem)


def _cpu() -> float:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    main()
