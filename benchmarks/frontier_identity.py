"""Whether this checkout's frontiers are another revision's bit for bit, every column.

A change to the search that claims to change no number is checked here on ten
settings (dense, a draft, MoE with and without a draft, MLA with MTP heads, sliding windows with
GPU and demand caps, the achievable and refined presets, a TTFT limit, a demand cap), each at
the given grid sizes. The other revision's committed tree is extracted with ``git archive``;
each tree computes its frontiers in its own process (one search thread), and every column is
compared with ``np.array_equal`` (NaN equal to NaN). Prints one line per setting and grid, and
exits 1 if any differs.

    python benchmarks/frontier_identity.py [--ref main] [--grids 400,60] [--only dense,...]
"""

from __future__ import annotations

import argparse
import os
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The exactness tests' settings (tests/search_settings.py) and three more: name: (model,
#: hardware, make_setting keywords).
SETTINGS = {
    **runpy.run_path(str(ROOT / "tests" / "search_settings.py"))["SETTINGS"],
    "refined-cell": (
        "Llama 3.3 70B",
        "H100-SXM",
        dict(assumptions="refined", context_tokens=8000, weight_bits=8),
    ),
    "dense-capped": (
        "Llama 3 70B",
        "H100-paper",
        dict(weight_bits=8, max_throughput_tokens_per_s=30000.0),
    ),
    "moe-refined": ("DeepSeek-V3", "H200-SXM", dict(assumptions="refined", context_tokens=4000)),
}


def dump(root: Path, out: Path, grids: list[int], names: list[str]) -> None:
    """Compute the frontiers with the package under ``root`` and save their columns."""
    sys.path.insert(0, str(root))
    import numpy as np

    import inference_econ as ie
    from inference_econ.optimise import optimiser

    columns = {}
    for grid in grids:
        for name in names:
            model, hardware, kwargs = SETTINGS[name]
            setting = ie.make_setting(model, hardware, **kwargs)
            front = optimiser.frontier_columns(setting, ie.Method(grid_points=grid))
            for column, values in front.columns.items():
                columns[f"{grid}|{name}|{column}"] = np.asarray(values)
    np.savez(out, **columns)


def compare(ours: Path, theirs: Path) -> list[str]:
    """Lines of the comparison; a line starting with 'DIFFER' for each setting that differs."""
    import numpy as np

    a, b = np.load(ours, allow_pickle=True), np.load(theirs, allow_pickle=True)  # its own files
    lines = []
    keys = sorted({k.rsplit("|", 1)[0] for k in (*a.files, *b.files)})
    for key in keys:
        cols_a = {k for k in a.files if k.startswith(key + "|")}
        cols_b = {k for k in b.files if k.startswith(key + "|")}
        bad = sorted(k.rsplit("|", 1)[1] for k in cols_a ^ cols_b)
        for k in sorted(cols_a & cols_b):
            x, y = a[k], b[k]
            nan = x.dtype.kind == "f" and y.dtype.kind == "f"
            if x.shape != y.shape or not np.array_equal(x, y, equal_nan=nan):
                bad.append(k.rsplit("|", 1)[1])
        grid, name = key.split("|")
        points = len(a[f"{key}|latency_s"]) if f"{key}|latency_s" in a.files else 0
        verdict = "identical" if not bad else "DIFFER in " + ", ".join(bad[:6])
        lines.append(f"{'DIFFER' if bad else 'same  '} {grid:>4} x {grid:<4} {name:24s} "
                     f"{points:5d} points: {verdict}")  # fmt: skip
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main", help="git revision to compare with")
    parser.add_argument("--grids", default="400,60", help="grid sizes, comma-separated")
    parser.add_argument("--only", default=",".join(SETTINGS), help="settings to compare")
    parser.add_argument("--dump", nargs=2, help=argparse.SUPPRESS)  # ROOT OUT: one tree's run
    args = parser.parse_args()
    grids = [int(g) for g in args.grids.split(",") if g]
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in SETTINGS]
    if unknown:
        parser.error(f"--only: unknown {', '.join(unknown)}; choose from {', '.join(SETTINGS)}")
    if args.dump:
        dump(Path(args.dump[0]), Path(args.dump[1]), grids, names)
        return
    env = dict(os.environ, INFERENCE_ECON_THREADS="1")
    with tempfile.TemporaryDirectory(prefix="frontier_identity_") as tmp:
        base = Path(tmp) / "tree"
        base.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", args.ref],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        outs = {}
        for label, root in (("this checkout", ROOT), (args.ref, base)):
            outs[label] = Path(tmp) / f"{len(outs)}.npz"
            subprocess.run(
                [sys.executable, __file__, "--grids", args.grids, "--only", ",".join(names),
                 "--dump", str(root), str(outs[label])],
                check=True,
                env=env,
            )  # fmt: skip
        lines = compare(*outs.values())
    print(f"frontiers of this checkout against {args.ref}, every column (np.array_equal):")
    print("\n".join(lines))
    if any(line.startswith("DIFFER") for line in lines):
        sys.exit(1)


if __name__ == "__main__":
    main()
