"""CPU time of the commands a user waits for, as whole processes, paired against a baseline.

The commands: ``--help``, one ``point``, one plain ``frontier`` and one speculative ``frontier``
(the goals: 0.15 / 0.35 / 0.5 / 1.2 CPU seconds). Each run is a fresh process
(``python -m inference_econ.cli``) so its imports count; its CPU time (user + system) is read
from ``resource.getrusage(RUSAGE_CHILDREN)``, which does not depend on how busy the machine is,
unlike wall time.

Two builds run in alternation, so a change of load on the machine touches both alike: this
checkout ("candidate") and a baseline, the committed tree of ``--baseline-ref`` (default
``main``) extracted with ``git archive`` into a temporary folder. Each build runs in two modes:

* ``source``: ``PYTHONDONTWRITEBYTECODE=1`` and no ``__pycache__`` of the package, as this
  machine runs an editable install: every start recompiles the package (not numpy or pandas,
  whose installed bytecode is read);
* ``compiled``: the package's bytecode written by a first, uncounted run and then read.

Prints the median of ``--repeat`` runs of each (command, build, mode) beside its goal; the goals
are judged on the ``source`` figures, as the README states them. ``__pycache__`` folders this
script writes are removed at the end (never one it did not create). ``--check`` exits 1 if a
candidate's ``source`` figure misses its goal.

    python benchmarks/bench_cli.py [--repeat 5] [--baseline-ref main | --no-baseline]
        [--modes source,compiled] [--only point,frontier] [--check]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "inference_econ"

#: name: (arguments of ``python -m inference_econ.cli``, goal in CPU seconds)
COMMANDS = {
    "help": (["--help"], 0.15),
    "point": (["point", "Llama 3 70B", "-H", "H100-paper", "--gpus", "8", "--batch", "64"], 0.35),
    "frontier": (["frontier", "Llama 3 70B", "-H", "H100-paper", "--weight-bits", "8", "-q"], 0.5),
    "speculative": (
        [
            "frontier",
            "Llama 3 70B",
            "-H",
            "H100-paper",
            "--weight-bits",
            "8",
            "--draft",
            "Llama 3 8B",
            "--acceptance",
            "0.8",
            "-q",
        ],
        1.2,
    ),
}
MODES = ("source", "compiled")


def pycache_dirs(root: Path) -> set[Path]:
    """The ``__pycache__`` folders under the package of ``root``."""
    return set((root / PACKAGE).rglob("__pycache__"))


def environment(mode: str) -> dict[str, str]:
    env = dict(os.environ)
    if mode == "source":
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    return env


def cpu_seconds(root: Path, args: list[str], mode: str) -> float:
    """User + system CPU seconds of one run of the command line in a new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", f"{PACKAGE}.cli", *args],
        check=True,
        cwd=root,
        env=environment(mode),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def extract(ref: str, into: Path) -> Path:
    """The committed tree of ``ref`` (a git revision of this repository) under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def measure(
    builds: dict[str, Path], names: list[str], modes: list[str], repeat: int, keep: set[Path]
) -> dict:
    """{(command, build, mode): median CPU seconds}, builds alternating run by run; the source
    mode removes the ``__pycache__`` folders an earlier compiled mode wrote (not ``keep``)."""
    times: dict[tuple[str, str, str], list[float]] = {}
    for mode in modes:
        for root in builds.values():
            if mode == "source":
                for folder in pycache_dirs(root) - keep:
                    shutil.rmtree(folder)
            cpu_seconds(root, ["--help"], mode)  # compiled mode: writes the bytecode
        for name in names:
            argv = COMMANDS[name][0]
            for root in builds.values():
                cpu_seconds(root, argv, mode)  # warm the file cache (and bytecode); not counted
            for _ in range(repeat):
                for build, root in builds.items():
                    times.setdefault((name, build, mode), []).append(cpu_seconds(root, argv, mode))
    return {key: statistics.median(values) for key, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline-ref", default="main", help="git revision to pair against")
    parser.add_argument("--no-baseline", action="store_true", help="time this checkout only")
    parser.add_argument("--modes", default=",".join(MODES), help="source, compiled or both")
    parser.add_argument("--only", default=",".join(COMMANDS), help="commands to time")
    parser.add_argument("--check", action="store_true", help="exit 1 if a goal is missed")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n]
    modes = [m for m in args.modes.split(",") if m]
    for value, allowed, flag in ((names, COMMANDS, "--only"), (modes, MODES, "--modes")):
        unknown = [v for v in value if v not in allowed]
        if unknown:
            parser.error(f"{flag}: unknown {', '.join(unknown)}; choose from {', '.join(allowed)}")

    created_before = pycache_dirs(ROOT)
    if created_before and "source" in modes:
        print(f"note: {len(created_before)} __pycache__ folders were already here (kept): the")
        print("source mode reads their bytecode; remove them for a true source figure")
    with tempfile.TemporaryDirectory(prefix="bench_cli_") as tmp:
        builds = {"candidate": ROOT}
        if not args.no_baseline:
            builds[f"baseline {args.baseline_ref}"] = extract(args.baseline_ref, Path(tmp))
        try:
            medians = measure(builds, names, modes, args.repeat, created_before)
        finally:
            for folder in pycache_dirs(ROOT) - created_before:
                shutil.rmtree(folder, ignore_errors=True)

    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(
        f"CPU seconds (user + system) of whole processes, median of {args.repeat}; "
        f"candidate = this checkout (HEAD {head}, with any uncommitted changes)"
    )
    columns = [(b, m) for m in modes for b in builds]
    labels = [f"{b} [{m}]" for b, m in columns]
    print(f"{'command':12s} {'goal':>5s}  " + "  ".join(f"{lab:>26s}" for lab in labels))
    missed = []
    for name in names:
        goal = COMMANDS[name][1]
        cells = [f"{medians[(name, b, m)]:26.2f}" for b, m in columns]
        print(f"{name:12s} {goal:5.2f}  " + "  ".join(cells))
        if "source" in modes and medians[(name, "candidate", "source")] > goal:
            missed.append(name)
    print("commands: " + "; ".join(f"{n}: cli {' '.join(COMMANDS[n][0])}" for n in names))
    print("goals are judged on the candidate's [source] figures (bytecode not written, as here)")
    if missed:
        print(f"missed: {', '.join(missed)}")
    if args.check and missed:
        sys.exit(1)


if __name__ == "__main__":
    main()
