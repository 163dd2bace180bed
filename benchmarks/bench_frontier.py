"""Time the optimiser on this machine at the paper's grid resolution (400 x 400).

Prints: one plain frontier, one speculative frontier, each paper table, all of Tables 1-6
together, and the process's peak memory. ``--check`` also compares the fast search with the
brute-force loop over every layout at every point of the full 400 x 400 grid.

    python benchmarks/bench_frontier.py [--repeat 3] [--check]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import inference_econ as ie
from inference_econ.optimise import optimiser
from inference_econ.optimise.frontier import domination_factor
from inference_econ.studies.tables import PAPER_TABLES, run_table


def timed(fn, repeat: int) -> tuple[float, object]:
    """Median wall time of ``repeat`` cold runs (the frontier cache is cleared each time)."""
    times, result = [], None
    for _ in range(repeat):
        optimiser.clear_caches()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--check", action="store_true", help="compare with brute force on the full grid"
    )
    args = parser.parse_args()

    plain = ie.make_setting("Llama 3 70B", "H100-paper", weight_bits=8)
    spec = ie.make_setting(
        "Llama 3 70B", "H100-paper", weight_bits=8, draft="Llama 3 8B", acceptance=0.8
    )
    ie.frontier(plain)  # warm-up: imports, first allocations

    rows = []
    t, f = timed(lambda: ie.frontier(plain), args.repeat)
    rows.append(("plain frontier (Llama 3 70B 8-bit, H100)", t, f"{len(f)} points"))
    t, f = timed(lambda: ie.frontier(spec), args.repeat)
    rows.append(("speculative frontier (+ Llama 3 8B draft, a = 0.8)", t, f"{len(f)} points"))
    for name in sorted(PAPER_TABLES):
        t, _ = timed(lambda name=name: run_table(name), args.repeat)
        rows.append((f"reproduce {name}", t, ""))
    t, _ = timed(lambda: [run_table(name) for name in sorted(PAPER_TABLES)], args.repeat)
    rows.append(("all of Tables 1-6 together", t, "shared settings computed once"))

    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{width}}  {'median s':>9}  note")
    for name, seconds, note in rows:
        print(f"{name:<{width}}  {seconds:9.3f}  {note}")
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
