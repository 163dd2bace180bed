"""CPU time of the commands a user feels: ``--help``, one ``point`` and one plain ``frontier``.

Each command runs in a fresh process (``python -m inference_econ.cli``) so its imports count;
the CPU time (user + system) is read from ``resource.getrusage(RUSAGE_CHILDREN)``, which does
not depend on how busy the machine is, unlike wall time. Prints the median of ``--repeat``
runs against the goals (--help <= 0.3 s, point <= 0.8 s, frontier <= 0.4 s); ``--check`` exits
1 if one is missed.

    python benchmarks/bench_cli.py [--repeat 5] [--check]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys

COMMANDS = {
    "inference-econ --help": (["--help"], 0.3),
    "inference-econ point (Llama 3 70B, 8 H100s, batch 64)": (
        ["point", "Llama 3 70B", "-H", "H100-paper", "--gpus", "8", "--batch", "64"],
        0.8,
    ),
    "inference-econ frontier (Llama 3 70B 8-bit, H100, 400 x 400)": (
        ["frontier", "Llama 3 70B", "-H", "H100-paper", "--weight-bits", "8", "-q"],
        0.4,
    ),
}


def cpu_seconds(args: list[str]) -> float:
    """User + system CPU seconds of one run of the command line in a new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "inference_econ.cli", *args],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="exit 1 if a goal is missed")
    args = parser.parse_args()
    missed = []
    print(f"{'command':58s} {'CPU s':>7s} {'goal':>6s}")
    for name, (argv, goal) in COMMANDS.items():
        cpu_seconds(argv)  # warm the file cache; not counted
        median = statistics.median(cpu_seconds(argv) for _ in range(args.repeat))
        print(f"{name:58s} {median:7.2f} {goal:6.1f}")
        if median > goal:
            missed.append(name)
    if args.check and missed:
        sys.exit(1)


if __name__ == "__main__":
    main()
