"""The benchmark path's speed: compare-measured's CPU seconds and peak memory on the training
file (both presets), on a sample of the newer MLPerf file's Server and Interactive rows, and on
1,000 to 100,000 rows; whether its Server searches answer every row as the full search does.

    PYTHONPATH=. python benchmarks/benchmark_path_speed.py [--before DIR] [--parts ...]

Each command runs as a whole process (``inference-econ compare-measured ... --format csv -q``),
its CPU seconds (the process and its workers, user + sys) and peak resident memory read from
``getrusage``. ``--before DIR``: a checkout of the code before a change (``git archive HEAD |
tar -x -C DIR``), run on the same files, its output compared with this checkout's (the
first line, which names the file's path, left out); without it the figures printed beside each
line are those measured before the Server searches galloped from a guess (2-core development
machine, 2026-11): the training file 40.6 s and 808 MB (achievable), 90.5 s and 1.6 GB
(refined); the newer MLPerf file 1,666 s (achievable) and 2,393 s (refined), about 3 s a
Server row (every 5th row of the sample below: 2.8 s a row, 2.7 after, the same output).

Parts (``--parts``, default all):

* ``train``: the training file under both presets, and ``--jobs 2`` and ``--dask local --jobs
  2`` (where dask.distributed is installed; a local cluster's two worker processes) under
  refined, with their wall seconds beside one process's, each output equal to one process's.
* ``same``: the training file's rows predicted with the module's Server search and with the
  full walk-and-bisect search from 0.8 x the estimate (``find_knee``), and with every candidate
  layout of an Offline row replayed (not only those ``_worth_replaying`` keeps), in this
  process: the count of rows whose prediction, layout or status differ (must be 0), and the
  simulations each ran.
* ``mlperf``: 100 Server and Interactive rows of the newer MLPerf file, evenly spaced: CPU
  seconds per row (goal <= 0.1 s).
* ``rows``: the training file repeated to 1,000, 10,000 and 100,000 rows (its configurations
  predicted once): CPU seconds and peak memory, and the seconds per row added.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
TRAIN = DATA / "benchmarks_train.csv"
NEWER = DATA / "benchmarks_test_mlperf_newer.csv"
#: The figures before the change (see the module docstring), by part and preset.
BEFORE = {
    ("train", "achievable"): "40.6 s, 808 MB",
    ("train", "refined"): "90.5 s, 1,588 MB",
    ("mlperf", "achievable"): "2.8 s a row (20 of these rows, paired on one machine: 2.7 after)",
}
#: A child process that reports its CPU seconds (with its workers') and peak memory at exit.
RUNNER = (
    "import atexit, resource, runpy, sys\n"
    "def _report():\n"
    "    s = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    c = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "    cpu = s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime\n"
    "    sys.stderr.write(f'\\nRUSAGE {cpu} {max(s.ru_maxrss, c.ru_maxrss)}\\n')\n"
    "atexit.register(_report)\n"
    "sys.argv = ['inference-econ', *sys.argv[1:]]\n"
    "runpy.run_module('inference_econ.cli', run_name='__main__')\n"
)


def run(code: Path, path: Path, preset: str, *extra: str) -> tuple[float, float, str]:
    """(CPU seconds, peak MB, CSV output without its first line) of compare-measured."""
    env = dict(os.environ, PYTHONPATH=str(code))
    args = [sys.executable, "-c", RUNNER, "compare-measured", str(path), "--assumptions"]
    done = subprocess.run(
        [*args, preset, "--format", "csv", "-q", *extra],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    usage = [ln for ln in done.stderr.splitlines() if ln.startswith("RUSAGE ")]
    if done.returncode != 0 or not usage:
        raise SystemExit(f"compare-measured failed on {path}:\n{done.stderr[-2000:]}")
    _, cpu, kb = usage[-1].split()
    return float(cpu), float(kb) / 1024.0, done.stdout.split("\n", 1)[1]


def paired(label: str, part: str, preset: str, before: Path | None, path: Path, *extra: str):
    """One line: this checkout's CPU and peak, and the code before's (or its figures)."""
    cpu, mb, out = run(ROOT, path, preset, *extra)
    line = f"{label}: {cpu:.1f} s CPU, {mb:,.0f} MB peak"
    if before is not None:
        cpu0, mb0, out0 = run(before, path, preset, *extra)
        line += f"   before: {cpu0:.1f} s, {mb0:,.0f} MB; output identical: {out == out0}"
    elif (part, preset) in BEFORE:
        line += f"   before: {BEFORE[(part, preset)]}"
    print(line, flush=True)
    return cpu, out


def part_train(before: Path | None) -> None:
    for preset in ("achievable", "refined"):
        start = time.perf_counter()
        _, one = paired(f"training file, {preset}", "train", preset, before, TRAIN)
        wall = time.perf_counter() - start  # the refined one's, this checkout's and before's
    ways = [("--jobs 2", ("--jobs", "2"))]
    try:
        import distributed  # noqa: F401
    except ImportError:
        print("training file, refined, --dask local: dask.distributed is not installed")
    else:
        ways.append(("--dask local --jobs 2", ("--dask", "local", "--jobs", "2")))
    alone = "" if before is not None else f" (one process: {wall:.1f} s wall)"
    for label, extra in ways:
        start = time.perf_counter()
        cpu, _, out = run(ROOT, TRAIN, "refined", *extra)
        print(
            f"training file, refined, {label}: {cpu:.1f} s CPU, "
            f"{time.perf_counter() - start:.1f} s wall{alone}; output identical: {one == out}"
        )


def part_same() -> None:
    """Every row of the training file: the module's search against the full one."""
    from inference_econ.load import run as load_run
    from inference_econ.measured import predicting as pr
    from inference_econ.measured import replay as rp
    from inference_econ.measured.comparison import predict_rows
    from inference_econ.measured.reading import load_measured
    from inference_econ.optimise import load_search

    def full(probe, targets, start, guess, early=None, held=None, refine=True):
        steps = load_search.REFINE_STEPS if refine else 0
        return load_search.find_knee(probe, targets, start, early=early, refine=steps)

    runs = [0]
    simulate = load_run.simulate_run
    rp.simulate_run = lambda *a: runs.__setitem__(0, runs[0] + 1) or simulate(*a)
    rows = load_measured(TRAIN)
    for preset in ("achievable", "refined"):
        answers = []
        for search in (rp.find_knee_from, full):
            rp.clear()
            runs[0] = 0
            saved, rp.find_knee_from = rp.find_knee_from, search
            try:
                answers.append((predict_rows(rows, preset), runs[0]))
            finally:
                rp.find_knee_from = saved
        (fast, n_fast), (slow, n_slow) = answers
        differ = _differing(fast, slow)
        print(
            f"training file, {preset}: {differ} of {len(rows)} rows differ from the full "
            f"search's; {n_fast} simulations against {n_slow}",
            flush=True,
        )
        rp.clear()
        runs[0] = 0
        saved_worth, pr._worth_replaying = pr._worth_replaying, lambda cases: cases
        try:
            every = predict_rows(rows, preset)
        finally:
            pr._worth_replaying = saved_worth
        differ = _differing(fast, every)
        print(
            f"training file, {preset}: {differ} of {len(rows)} rows differ from replaying every "
            f"layout of an Offline row; {n_fast} simulations against {runs[0]}",
            flush=True,
        )


def _differing(one, other) -> int:
    """Rows whose prediction (NaN equal to NaN), layout or status differ between two
    ``predict_rows`` answers."""
    return sum(
        not (a == b or (a != a and b != b)) or one[1][i] != other[1][i] or one[2][i] != other[2][i]
        for i, (a, b) in enumerate(zip(one[0], other[0]))
    )


def part_mlperf(before: Path | None, with_before: bool) -> None:
    import pandas as pd

    df = pd.read_csv(NEWER, dtype=str, keep_default_na=False)
    loaded = df[df.source.str.contains("/(?:Server|Interactive)/", regex=True)]
    sample = loaded.iloc[[round(k * (len(loaded) - 1) / 99) for k in range(100)]]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sample.csv"
        sample.to_csv(path, index=False)
        cpu, _, _ = run(ROOT, path, "achievable")
        line = (
            f"newer MLPerf file, 100 Server/Interactive rows, achievable: {cpu / 100:.3f} s a row"
        )
        if before is not None and with_before:
            cpu0, _, _ = run(before, path, "achievable")
            line += f"   before: {cpu0 / 100:.3f} s a row"
        else:
            line += f"   before: {BEFORE[('mlperf', 'achievable')]}"
        print(line + " (goal <= 0.1 s)", flush=True)


def part_rows(before: Path | None) -> None:
    lines = TRAIN.read_text().splitlines()
    head, body = lines[0], lines[1:]
    with tempfile.TemporaryDirectory() as folder:
        last = None
        for n in (1000, 10_000, 100_000):
            path = Path(folder) / f"rows_{n}.csv"
            path.write_text("\n".join([head, *(body[i % len(body)] for i in range(n))]) + "\n")
            cpu, mb, _ = run(ROOT, path, "achievable")
            line = f"{n:>7,} rows, achievable: {cpu:.1f} s CPU, {mb:,.0f} MB peak"
            if last is not None:
                line += f"; {1e6 * (cpu - last[1]) / (n - last[0]):.0f} us a row added"
            if before is not None:
                cpu0, mb0, _ = run(before, path, "achievable")
                line += f"   before: {cpu0:.1f} s, {mb0:,.0f} MB"
            print(line + " (goal: linear, <= 1 GiB)", flush=True)
            last = (n, cpu)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="a checkout of the code before a change")
    parser.add_argument(
        "--parts", nargs="+", default=["train", "same", "mlperf", "rows"], help="what to run"
    )
    parser.add_argument(
        "--mlperf-before",
        action="store_true",
        help="also run the MLPerf sample on --before (minutes)",
    )
    args = parser.parse_args(argv)
    if "train" in args.parts:
        part_train(args.before)
    if "same" in args.parts:
        part_same()
    if "mlperf" in args.parts:
        part_mlperf(args.before, args.mlperf_before)
    if "rows" in args.parts:
        part_rows(args.before)


if __name__ == "__main__":
    main()
