"""Studies: per-cell CPU warm (paired against another checkout), a study at scale, job counts.

    python benchmarks/bench_study.py --warm --against /path/to/main   # CPU per cell, warm, paired
    python benchmarks/bench_study.py --warm --parts --against /path/to/main  # the searches' parts
    python benchmarks/bench_study.py --cells 2000 --dask local --jobs 2  # scale: cells/s, memory
    python benchmarks/bench_study.py --jobs 1,2                         # the worked study, cold
    python benchmarks/bench_study.py --only context_tokens=8000         # a slice: one value of an axis

``--warm`` runs, in a fresh process per checkout (this one, and ``--against``'s, alternately,
``--repeats`` times), a one-cell study first (imports, specs, matplotlib and pyarrow loaded),
then the slice (by default context_tokens=8000, precision=FP8: 50 cells) with ``--jobs 1`` into
an empty folder, and prints its CPU seconds per cell (the whole ``run_study``: searches, cache,
tables, files, figure) and the searches' share of it (its ``compute_cell`` calls).

``--warm --parts`` times the slice's searches alone (``compute_cell``, one thread), cells
without and with a draft apart, and of them describing the frontiers' points.

``--cells N`` runs a study of about N cells: the worked study with N / 150 contexts from 1,000
to 128,000 tokens in place of its four (each a full cell of the worked study's kind), from an
empty folder, on ``--dask`` (an address or ``local``) or ``--jobs`` local processes; prints the
cells per second, CPU seconds per cell (this process and its workers) and the peak memory. The
cached rerun (``--rerun``) must compute nothing.

Without either, the worked study runs from an empty folder for each ``--jobs`` count, then
again (all cached); the key-point tables of every run must be identical.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SLICE = ["context_tokens=8000", "precision=FP8"]
WARMUP = [
    "model=Llama 3.3 70B",
    "hardware=H100-SXM",
    "context_tokens=1000",
    "precision=BF16",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", default="studies/accelerators-models")
    parser.add_argument("--jobs", default=None, help="comma-separated job counts (default 1,2)")
    parser.add_argument("--keep", help="copy the output folder of the last run here")
    parser.add_argument(
        "--only", action="append", default=[], help="AXIS=VALUE: keep one value of an axis"
    )
    parser.add_argument("--warm", action="store_true", help="CPU per cell, warm, in one process")
    parser.add_argument("--against", help="another checkout of inference-econ to pair --warm with")
    parser.add_argument("--repeats", type=int, default=2, help="--warm runs per checkout")
    parser.add_argument("--cells", type=int, help="run a study of about this many cells")
    parser.add_argument("--dask", help="with --cells: a Dask scheduler address, or 'local'")
    parser.add_argument("--rerun", action="store_true", help="with --cells: time a cached rerun")
    parser.add_argument(
        "--machinery",
        action="store_true",
        help="with --cells: the study's own work only (each search replaced by a copy of one "
        "of 10 real cells' payloads), in one process, paired with --against",
    )
    parser.add_argument(
        "--parts",
        action="store_true",
        help="with --warm: the searches alone on one thread, cells without and with a draft, "
        "and of them describing the frontier's points",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--parts-worker", help=argparse.SUPPRESS)
    parser.add_argument("--machinery-worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return _warm_worker(args.study, json.loads(args.worker))
    if args.parts_worker:
        return _parts_worker(args.study, json.loads(args.parts_worker))
    if args.machinery_worker:
        return _machinery_worker(args.study, json.loads(args.machinery_worker))
    if args.warm or args.machinery:
        return _warm(args)
    if args.cells:
        return _scale(args)
    return _job_counts(args)


# --- CPU per cell, warm ------------------------------------------------------------------------


def _warm(args) -> None:
    only = args.only or SLICE
    trees = {"this checkout": Path(__file__).resolve().parents[1]}
    if args.against:
        trees["--against " + args.against] = Path(args.against).resolve()
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(args.repeats):
        for name, tree in trees.items():  # alternately: the machine's load is shared
            env = {**os.environ, "PYTHONPATH": str(tree)}
            env.pop("INFERENCE_ECON_THREADS", None)
            job = ["--worker", json.dumps(only)]
            if args.parts:
                job = ["--parts-worker", json.dumps(only)]
            if args.machinery:
                job = ["--machinery-worker", json.dumps([args.cells or 2000, args.only])]
            out = subprocess.run(
                [sys.executable, __file__, "--study", args.study, *job],
                env=env,
                cwd=tree,
                capture_output=True,
                text=True,
                check=True,
            )
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(name, runs[name][-1], file=sys.stderr)
    if args.machinery:
        print(
            f"the study's own work, {args.cells or 2000} cells asked, searches replaced, --jobs 1"
        )
        print(f"{'checkout':<40} {'cells':>5} {'CPU s/cell':>10} {'peak MB':>8}")
        for name, rs in runs.items():
            per = statistics.median(r["cpu_s"] / r["cells"] for r in rs)
            peak = max(r["peak_mb"] for r in rs)
            print(f"{name:<40} {rs[0]['cells']:>5} {per:>10.4f} {peak:>8.0f}")
        return
    if args.parts:
        print(f"study {args.study}, slice {' '.join(only)}: compute_cell alone, one thread, warm")
        print(f"{'checkout':<40} {'cells':>9} {'CPU s/cell':>10} {'describing':>10}")
        for name, rs in runs.items():
            for kind in ("no draft", "draft"):
                if not rs[0][kind]["cells"]:
                    continue
                per = statistics.median(r[kind]["cpu_s"] / r[kind]["cells"] for r in rs)
                desc = statistics.median(r[kind]["describe_s"] / r[kind]["cells"] for r in rs)
                label = f"{rs[0][kind]['cells']} {kind}"
                print(f"{name:<40} {label:>9} {per:>10.3f} {desc:>10.3f}")
        print(f"medians of {args.repeats} runs each, CPU seconds of the process")
        return
    print(f"study {args.study}, slice {' '.join(only)}, --jobs 1, warm (after a one-cell study)")
    print(f"{'checkout':<40} {'cells':>5} {'CPU s/cell':>10} {'searches':>9} {'the rest':>9}")
    for name, rs in runs.items():
        per = statistics.median(r["cpu_s"] / r["cells"] for r in rs)
        search = statistics.median(r["search_cpu_s"] / r["cells"] for r in rs)
        print(f"{name:<40} {rs[0]['cells']:>5} {per:>10.3f} {search:>9.3f} {per - search:>9.3f}")
    print(f"medians of {args.repeats} runs each, CPU seconds of the process (all its threads)")


def _warm_worker(name: str, only: list[str]) -> None:
    """In a fresh process of one checkout: the warm-up study, then the slice, timed; the CPU
    of its ``compute_cell`` calls (the searches) is summed as they run."""
    from inference_econ.optimise.optimiser import clear_caches
    from inference_econ.runs.study_run import run_study
    from inference_econ.studies import execution

    real, search = execution.compute_cell, [0.0]

    def timed(setting, method):
        cpu0 = time.process_time()
        try:
            return real(setting, method)
        finally:
            search[0] += time.process_time() - cpu0

    with tempfile.TemporaryDirectory() as tmp:
        run_study(_slice(name, WARMUP), Path(tmp) / "warmup", jobs=1, yes=True)
        study = _slice(name, only)
        clear_caches()
        execution.compute_cell = timed
        cpu0 = time.process_time()
        result = run_study(study, Path(tmp) / "run", jobs=1, yes=True)
        cpu = time.process_time() - cpu0
        assert result.computed == len(result.cells) and not result.failed
    print(json.dumps({"cells": len(result.cells), "cpu_s": cpu, "search_cpu_s": search[0]}))


def _parts_worker(name: str, only: list[str]) -> None:
    """In a fresh process of one checkout, on one search thread: the warm-up cell, then each
    cell of the slice by ``compute_cell`` alone, timed apart for cells without and with a
    draft, and the CPU of describing their frontiers' points (``Decoder.describe_columns``)."""
    os.environ["INFERENCE_ECON_THREADS"] = "1"
    from inference_econ.optimise.optimiser import clear_caches
    from inference_econ.serving import decode
    from inference_econ.studies.study import compute_cell, expand

    for cell in expand(_slice(name, WARMUP)):
        compute_cell(cell.setting, cell.method)
    cells = expand(_slice(name, only))
    clear_caches()
    describing, real = [0.0], decode.Decoder.describe_columns

    def timed(self, *args, **kwargs):
        cpu0 = time.process_time()
        try:
            return real(self, *args, **kwargs)
        finally:
            describing[0] += time.process_time() - cpu0

    decode.Decoder.describe_columns = timed
    out = {}
    for kind in ("no draft", "draft"):
        chosen = [c for c in cells if (c.setting.spec is not None) == (kind == "draft")]
        describing[0] = 0.0
        cpu0 = time.process_time()
        for cell in chosen:
            compute_cell(cell.setting, cell.method)
        cpu = time.process_time() - cpu0
        out[kind] = {"cells": len(chosen), "cpu_s": cpu, "describe_s": describing[0]}
    print(json.dumps(out))


def _machinery_worker(name: str, job: list) -> None:
    """In a fresh process of one checkout: a study of about ``cells`` cells whose searches
    return copies of 10 real cells' payloads: what the study itself costs (expanding, the
    cache, key points, tables, files) and its peak memory."""
    from inference_econ.runs.study_run import run_study
    from inference_econ.studies import execution
    from inference_econ.studies.study import compute_cell, expand

    cells, only = job
    study = _scale_study(name, only, cells)
    real = [compute_cell(c.setting, c.method) for c in expand(_slice(name, WARMUP))]
    real += [compute_cell(c.setting, c.method) for c in expand(_slice(name, SLICE))[:8]]
    count = [0]

    def canned(setting, method):
        count[0] += 1
        return dict(real[count[0] % len(real)])  # the study never changes a payload

    execution.compute_cell = canned
    with tempfile.TemporaryDirectory() as tmp:
        cpu0 = time.process_time()
        result = run_study(study, Path(tmp) / "run", jobs=1, yes=True)
        cpu = time.process_time() - cpu0
    assert result.computed == len(result.cells)
    peak = _rss_mb(resource.RUSAGE_SELF)
    print(json.dumps({"cells": len(result.cells), "cpu_s": cpu, "peak_mb": peak}))


# --- a study at scale --------------------------------------------------------------------------


def _scale(args) -> None:
    from inference_econ.runs.study_run import run_study
    from inference_econ.studies.study import expand

    study = _scale_study(args.study, args.only, args.cells)
    contexts = next(a.labels for a in study.axes if a.name == "context_tokens")
    per_context = len(expand(study)) // len(contexts)
    jobs = int(args.jobs or 2)
    folder = Path(tempfile.mkdtemp(prefix="bench-study-scale-"))
    last = [0.0]

    def progress(line: str) -> None:
        if time.perf_counter() - last[0] > 30 or not line.startswith("cell "):
            last[0] = time.perf_counter()
            print(line, file=sys.stderr, flush=True)

    load = os.getloadavg()[0]
    cpu0, start = _cpu(), time.perf_counter()
    result = run_study(study, folder, jobs=jobs, dask=args.dask, progress=progress, yes=True)
    wall, cpu = time.perf_counter() - start, _cpu() - cpu0
    cells = len(result.cells)
    print(
        f"{cells} cells ({len(contexts)} contexts x {per_context}), grid "
        f"{result.cells[0].method.grid_points}, "
        + (f"Dask {args.dask}" if args.dask else f"{jobs} local processes")
        + f", {jobs} workers, load average before {load:.1f}"
    )
    print(f"computed {result.computed}, failed {len(result.failed)}, cached {result.cached}")
    print(f"wall {wall:.0f} s, {cells / wall:.2f} cells/s")
    print(f"CPU {cpu:.0f} s (this process and its workers), {cpu / cells:.3f} s per cell")
    print(
        f"peak memory (max RSS): this process {_rss_mb(resource.RUSAGE_SELF):.0f} MB, "
        f"largest worker {_rss_mb(resource.RUSAGE_CHILDREN):.0f} MB"
    )
    sizes = {p.name: p.stat().st_size / 1e6 for p in folder.iterdir() if p.is_file()}
    print("files (MB):", ", ".join(f"{k} {v:.0f}" for k, v in sorted(sizes.items())))
    if args.rerun:
        cpu0, start = _cpu(), time.perf_counter()
        again = run_study(study, folder, jobs=jobs, dask=args.dask, yes=True)
        assert again.computed == 0 and again.cached == cells, (again.computed, again.cached)
        print(f"cached rerun: wall {time.perf_counter() - start:.0f} s, CPU {_cpu() - cpu0:.0f} s")
    if args.keep:
        shutil.copytree(folder, args.keep)  # fails rather than overwrite an existing folder
    shutil.rmtree(folder)


def _scale_study(name: str, only: list[str], cells: int):
    """The study (or its slice) with about ``cells`` cells: N contexts from 1,000 to 128,000
    tokens in place of its own."""
    from inference_econ.studies.study import expand, study_from_dict

    path, data = _sliced(name, only)
    per_context = len(expand(study_from_dict(data, str(path), path.stem))) // len(
        data["axes"]["context_tokens"]
    )
    count = max(1, math.ceil(cells / per_context))
    contexts = sorted({round(1000 * 128 ** (i / max(count - 1, 1))) for i in range(count)})
    data["axes"]["context_tokens"] = contexts
    return study_from_dict(data, str(path), f"{path.stem}-{len(contexts)}-contexts")


def _rss_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # kB on Linux


# --- job counts on the worked study ---------------------------------------------------------


def _job_counts(args) -> None:
    import pandas as pd

    from inference_econ.runs.study_run import run_study

    study = _slice(args.study, args.only)
    rows, tables = [], []
    job_counts = [int(j) for j in (args.jobs or "1,2").split(",")]
    for jobs in job_counts:
        folder = Path(tempfile.mkdtemp(prefix="bench-study-"))
        load = os.getloadavg()[0]
        start = time.perf_counter()
        cpu0 = _cpu()
        result = run_study(study, folder, jobs=jobs, yes=True)
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
                "cpu_per_cell_s": round(cpu / len(result.cells), 3),
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
    from inference_econ.studies.study import study_from_dict

    path, data = _sliced(name, only)
    return study_from_dict(data, str(path), path.stem)


def _sliced(name: str, only: list[str]):
    """(path, parsed study) of ``_slice``."""
    from inference_econ.specs import catalog
    from inference_econ.specs.yamlfile import load_yaml

    path = catalog.find("scenarios", name)
    data = load_yaml(path)
    for item in only:
        axis, _, value = item.partition("=")
        values = data["axes"][axis]
        kept = [v for v in values if str(v.get("label") if isinstance(v, dict) else v) == value]
        if not kept:
            sys.exit(f"{axis} has no value {value!r}: {values}")
        data["axes"][axis] = kept
    rules = []
    for rule in data.get("exclude") or []:  # a rule's values that the slice left out go
        kept_rule = {}
        for axis, wanted in rule.items():
            wanted = wanted if isinstance(wanted, list) else [wanted]
            labels = [str(v.get("label") if isinstance(v, dict) else v) for v in data["axes"][axis]]
            kept_rule[axis] = [
                w for w in wanted if any(fnmatch.fnmatchcase(x, str(w)) for x in labels)
            ]
        if all(kept_rule.values()):
            rules.append(kept_rule)
    data["exclude"] = rules or None
    # the summary's axes must stay axes with the values left
    data["summary"] = {k: v for k, v in data.get("summary", {}).items() if k in ("metric", "speed")}
    return path, data


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    main()
