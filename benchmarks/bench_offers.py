"""CPU seconds of the inverse analyses on files of many offers: ``infer feasibility``,
``infer margin`` and ``infer preference`` as whole processes on 300 and 3,000 offers of three
models (paper preset, the paper's H100, 16/8/4-bit weights, speculation with Llama 3 8B: every
offer's bisections run; the fit at each model's own precision),
and, with ``--before DIR``, the same commands from another checkout, their outputs compared
byte for byte.

    PYTHONPATH=. python benchmarks/bench_offers.py [--offers 300,3000] [--before DIR]
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("Llama 3 70B", "Llama 3 8B", "Mixtral 8x22B")


def offers_file(path: Path, n: int) -> Path:
    """``n`` offers: three models in turn, speeds 20-400 tok/s, prices $0.10-3.00 (seeded)."""
    rng = np.random.default_rng(1)
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(
            ["provider", "model", "date", "tokens_per_s", "usd_per_mtok_input",
             "usd_per_mtok_output"]
        )  # fmt: skip
        for i in range(n):
            speed, price_in, price_out = rng.uniform((20, 0.1, 0.1), (400, 3, 3))
            out.writerow(
                [f"P{i % 50}", MODELS[i % 3], "2024-08", f"{speed:.1f}", f"{price_in:.2f}",
                 f"{price_out:.2f}"]
            )  # fmt: skip
    return path


def timed(checkout: Path, args: list[str], out: Path) -> float:
    """CPU seconds (user + sys) of one command run by ``checkout``'s package (run from its
    folder: ``python -m`` puts the working directory first on the path), output to ``out``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    subprocess.run(
        [sys.executable, "-m", "inference_econ.cli", *args, "--format", "csv", "-o", str(out)],
        env=env, cwd=checkout, check=True, capture_output=True,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offers", default="300,3000", help="offer counts, comma-separated")
    parser.add_argument("--before", type=Path, help="another checkout to run the same commands")
    a = parser.parse_args(argv)
    counts = [int(n) for n in a.offers.split(",")]
    print(f"bytecode: {'not written' if sys.dont_write_bytecode else 'may be compiled'}")
    print(
        "command      offers  CPU s  ms/offer" + ("  before CPU s  same output" if a.before else "")
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for n in counts:
            path = offers_file(folder / f"offers{n}.csv", n)
            for command in ("feasibility", "margin", "preference"):
                args = ["infer", command, str(path)]
                now = folder / f"{command}{n}.csv"
                cpu = timed(ROOT, args, now)
                line = f"{command:<12} {n:>6} {cpu:>6.1f} {1000 * cpu / n:>9.2f}"
                if a.before:
                    then = folder / f"{command}{n}-before.csv"
                    old = timed(a.before, args, then)
                    line += f"  {old:>12.1f}  {now.read_bytes() == then.read_bytes()}"
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
