"""CPU time of ``capacity`` on the user guide's examples, paired against a baseline
(the walk-through's goal is <= 3 s with the same plans as the full search).

Each run is a whole process (``python -m inference_econ.cli``), its CPU time (user + system)
read from ``resource.getrusage(RUSAGE_CHILDREN)``. The baseline is the code at ``--baseline``
(a git ref, default ``main``), exported with ``git archive`` to a temporary folder; this tree's
tracked files are copied to another, and each runs from its folder. Both are measured twice: as
this machine runs them (``PYTHONDONTWRITEBYTECODE=1``: the package is compiled on every start)
and with compiled bytecode (``compileall`` first, in the temporary folder; the installed
libraries have theirs). The plans (the "plans side by side" table) are compared line by line,
and the whole printed text too.

``--breakdown`` prints where this tree's walk-through spends its CPU instead (one in-process
run): the simulations by requests simulated (runs, of them stopped once they certainly missed
a target, CPU seconds), and within them the choice of each instance's layout.

    python benchmarks/bench_capacity.py [--baseline main] [--repeat 1] [--breakdown]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The guide's traffic and TTFT target, shared by its examples.
TRAFFIC = [
    "--weight-bits",
    "8",
    "--rate",
    "20",
    "--prompt-tokens",
    "lognormal:1000:0.8",
    "--output-tokens",
    "lognormal:300:0.6",
    "--slo-ttft-p99",
    "2",
]
WALK_THROUGH = ["capacity", "Llama 3.3 70B", "-H", "H100,H200", *TRAFFIC, "--slo-tpot-p99", "0.05"]
SPECULATION = ["capacity", "Llama 3.3 70B", "-H", "H100", *TRAFFIC, "--slo-tpot-p99", "0.02"]
SPECULATION += ["--draft-heads", "eagle", "--acceptance", "0.7", "--max-draft", "4"]
SPECULATION += ["--spec-max-batch", "32", "--requests", "2000"]
COMMANDS = {
    "the walk-through (goal <= 3 s)": WALK_THROUGH,
    "the speculation example (2,000 requests)": SPECULATION,
}


def environment(tree: Path, compiled: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("PYTHONPYCACHEPREFIX", None)
    if compiled:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run(tree: Path, args: list[str], compiled: bool) -> tuple[float, str]:
    """(CPU seconds, stdout) of one run of the command line in a new process from ``tree``."""
    env = environment(tree, compiled)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, "-m", "inference_econ.cli", *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=tree,
        env=env,
    ).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out


def plans(text: str) -> list[str]:
    """The lines of the "plans side by side" table."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("The plans side by side"))
    end = next(i for i in range(start, len(lines)) if not lines[i].strip())
    return lines[start:end]


#: Run in a new process from the tree (``python -c``): the walk-through with its simulations and
#: layout choices timed (``--breakdown``); a JSON line on stderr.
BREAKDOWN = """
import json, sys, time
from collections import defaultdict
from inference_econ.optimise import load_search
from inference_econ.load import deployment
from inference_econ.cli import main
runs = defaultdict(lambda: [0, 0, 0.0])
layout = [0, 0.0]
simulate, instance_for = load_search.simulate_deployment, deployment.instance_for
def timed(setting, d, traffic, *args, **kwargs):
    start = time.process_time()
    result = simulate(setting, d, traffic, *args, **kwargs)
    row = runs[traffic.simulated_requests]
    row[0] += 1
    row[1] += result.stopped_for is not None
    row[2] += time.process_time() - start
    return result
def chosen(*args, **kwargs):
    start = time.process_time()
    try:
        return instance_for(*args, **kwargs)
    finally:
        layout[0] += 1
        layout[1] += time.process_time() - start
load_search.simulate_deployment = timed
deployment.instance_for = chosen
start = time.process_time()
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    total = time.process_time() - start
    print(json.dumps({"runs": runs, "layout": layout, "total": total}), file=sys.stderr)
"""


def breakdown(tree: Path) -> None:
    """Where the walk-through spends its CPU, in this tree (``--breakdown``)."""
    err = subprocess.run(
        [sys.executable, "-c", BREAKDOWN, *WALK_THROUGH],
        check=True,
        capture_output=True,
        text=True,
        cwd=tree,
        env=environment(tree, False),
    ).stderr
    got = json.loads(err.strip().splitlines()[-1])
    print("the walk-through in this tree, one run in process, CPU seconds")
    print(f"{'requests simulated':>18s} {'runs':>5s} {'stopped':>8s} {'CPU s':>7s}")
    for n, (count, stopped, seconds) in sorted(got["runs"].items(), key=lambda kv: int(kv[0])):
        print(f"{int(n):>18,d} {count:>5d} {stopped:>8d} {seconds:7.2f}")
    count, seconds = got["layout"]
    print(
        f"choosing instances' layouts ({count} choices, in these runs and the lattices' starts): {seconds:.2f}"
    )
    print(f"the command after the imports of the CLI: {got['total']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main", help="git ref of the code compared")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--breakdown", action="store_true", help="where this tree's walk-through spends its CPU"
    )
    args = parser.parse_args()
    if args.breakdown:
        breakdown(ROOT)
        return
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        base.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.baseline], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        here = Path(tmp) / "here"
        files = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-z"], check=True, capture_output=True
        ).stdout.split(b"\0")
        for name in filter(None, files):
            target = here / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            if (ROOT / name.decode()).is_file():
                shutil.copy2(ROOT / name.decode(), target)
        trees = {f"baseline ({args.baseline})": base, "this tree": here}
        print("capacity on the user guide's examples, CPU seconds of the whole process")
        print(f"{'command':42s} {'code':20s} {'bytecode':>22s} {'CPU s':>7s}")
        for what, argv in COMMANDS.items():
            outputs = {}
            for name, tree in trees.items():
                for compiled in (False, True):
                    if compiled:  # compile once; not counted
                        subprocess.run(
                            [
                                sys.executable,
                                "-m",
                                "compileall",
                                "-q",
                                str(tree / "inference_econ"),
                            ],
                            check=True,
                            env=environment(tree, True),
                        )
                    times = []
                    for _ in range(args.repeat):
                        seconds, out = run(tree, argv, compiled)
                        times.append(seconds)
                    outputs[name] = out
                    mode = "compiled" if compiled else "not written (machine)"
                    print(f"{what:42s} {name:20s} {mode:>22s} {statistics.median(times):7.2f}")
            a, b = (plans(out) for out in outputs.values())
            print(f"{what:42s} same plans: {'yes' if a == b else 'NO'}")
            if a != b:
                print("\n".join(["baseline:", *a, "this tree:", *b]))
            same = len(set(outputs.values())) == 1
            print(f"{what:42s} the same text, every line: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
