"""Time the optimiser on this machine at the paper's grid resolution (400 x 400).

Prints: one plain frontier, one speculative frontier, each paper table, all of Tables 1-6
together (wall and CPU seconds of this process, imports excluded), and the process's peak
memory; with ``--baseline-ref REF`` (e.g. ``main``) the same run of that git revision beside
it (its committed tree extracted with ``git archive``, run in a second process). The whole-
process goals (plain frontier <= 0.5 s, speculative <= 1.2 s CPU, imports and
output included) are measured by ``bench_cli.py``. ``--check`` also compares the fast search
with the brute-force loop over every layout at every point of the full 400 x 400 grid.

    python benchmarks/bench_frontier.py [--repeat 3] [--baseline-ref main] [--tables] [--check]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if "--root" in sys.argv:  # the checkout to time (the baseline's extracted tree)
    ROOT = Path(sys.argv[sys.argv.index("--root") + 1]).resolve()
sys.path.insert(0, str(ROOT))  # this checkout's package, not an installed one

import inference_econ as ie  # noqa: E402
from inference_econ.optimise import optimiser  # noqa: E402
from inference_econ.optimise.frontier import domination_factor  # noqa: E402
from inference_econ.studies.tables import PAPER_TABLES, run_table  # noqa: E402


def timed(fn, repeat: int) -> tuple[float, float, object]:
    """Median wall and CPU seconds of ``repeat`` cold runs (the caches are cleared each time)."""
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        optimiser.clear_caches()
        start, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def baseline(ref: str, argv: list[str]) -> dict:
    """{benchmark: (wall s, CPU s)} of the same run on the committed tree of ``ref``."""
    with tempfile.TemporaryDirectory(prefix="bench_frontier_") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", ref],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        out = subprocess.run(
            [sys.executable, __file__, "--root", tmp, "--json", *argv],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    return {name: tuple(v) for name, v in json.loads(out.splitlines()[-1]).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--check", action="store_true", help="compare with brute force on the full grid"
    )
    parser.add_argument("--tables", action="store_true", help="time the paper's tables too")
    parser.add_argument("--baseline-ref", help="git revision to time beside this checkout")
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    plain = ie.make_setting("Llama 3 70B", "H100-paper", weight_bits=8)
    spec = ie.make_setting(
        "Llama 3 70B", "H100-paper", weight_bits=8, draft="Llama 3 8B", acceptance=0.8
    )
    ie.frontier(plain)  # warm-up: imports, first allocations

    rows = []
    t, c, f = timed(lambda: ie.frontier(plain), args.repeat)
    rows.append(("plain frontier (Llama 3 70B 8-bit, H100)", t, c, f"{len(f)} points"))
    t, c, f = timed(lambda: ie.frontier(spec), args.repeat)
    rows.append(("speculative frontier (+ Llama 3 8B draft, a = 0.8)", t, c, f"{len(f)} points"))
    if args.tables:
        for name in sorted(PAPER_TABLES):
            t, c, _ = timed(lambda name=name: run_table(name), args.repeat)
            rows.append((f"reproduce {name}", t, c, ""))
        t, c, _ = timed(lambda: [run_table(name) for name in sorted(PAPER_TABLES)], args.repeat)
        rows.append(("all of Tables 1-6 together", t, c, "shared settings computed once"))
    if args.json:
        print(json.dumps({name: [t, c] for name, t, c, _ in rows}))
        return
    base = {}
    if args.baseline_ref:
        passed = ["--repeat", str(args.repeat)] + (["--tables"] if args.tables else [])
        base = baseline(args.baseline_ref, passed)

    width = max(len(r[0]) for r in rows)
    label = f"{args.baseline_ref} wall / CPU s" if base else ""
    print(f"{'benchmark':<{width}}  {'wall s':>7}  {'CPU s':>7}  {label:>20}  note")
    for name, seconds, cpu, note in rows:
        other = base.get(name)
        paired = f"{other[0]:9.3f} / {other[1]:7.3f}" if other else ""
        print(f"{name:<{width}}  {seconds:7.3f}  {cpu:7.3f}  {paired:>20}  {note}")
    print(f"(median of {args.repeat} cold runs in one process, imports excluded; package {ROOT})")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max RSS): {peak_mb:.0f} MB")

    if args.check:
        for label, setting in (("plain", plain), ("speculative", spec)):
            start = time.perf_counter()
            brute = ie.frontier(setting, method="exhaustive")
            elapsed = time.perf_counter() - start
            fast = ie.frontier(setting)
            print(
                f"brute force 400 x 400, {label}: {elapsed:.1f} s; fast search is at worst "
                f"{domination_factor(brute, fast) - 1:.2e} worse and {domination_factor(fast, brute) - 1:.2e} better"
            )


if __name__ == "__main__":
    main()
