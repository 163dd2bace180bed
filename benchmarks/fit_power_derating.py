"""Fit each power-limited part's own GEMM derating (``gemm_power_derating`` in its hardware
file, docs/model.md §F2) to that part's measured rows, and only to them.

A PCIe card runs its silicon at a lower power limit than its SXM sibling, so it sustains less
of its datasheet tensor rate in long GEMM-bound runs; how much depends on the part (H100 PCIe
at 350 W throttles far more than H200 NVL at 600 W). For each part the derating is the value
in [0.30, 1.00] (steps of 0.01) whose achievable-preset predictions of that part's end-to-end
rows (status ok) have the smallest median |log(predicted/measured)|; the engine profiles'
other terms stay as fitted (``benchmarks/fit_engines.py``). The rows are the training file's
only, as for every fitted term: the newer rounds stay out of sample in the time split. A part
without rows of its own there gets no derating (1.0): H200 NVL (600 W against the SXM's 700 W)
was fitted to its MLPerf v5.0 rows before, which put them in sample.

    python benchmarks/fit_power_derating.py            # print the fit
    python benchmarks/fit_power_derating.py --write    # also set the hardware files' values
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from inference_econ.measured.comparison import _unit_scale, predict_rows  # noqa: E402
from inference_econ.measured.reading import load_measured  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: The fitting data: the training file only (the time split's held-out rounds never enter).
DATA = [ROOT / "tests" / "data" / "benchmarks_train.csv"]
#: The power-limited parts of the catalog: hardware file -> GPU name.
PARTS = {
    "h100_nvl.yaml": "H100-NVL",
    "h100_pcie.yaml": "H100-PCIe",
    "h200_nvl.yaml": "H200-NVL",
    "l40s.yaml": "L40S",
    "rtx_pro_6000_bse.yaml": "RTX-PRO-6000-BSE",
}
GRID = np.round(np.arange(0.30, 1.0001, 0.01), 2)


def part_rows(rows, name: str):
    """The part's end-to-end rows with status ok."""
    return [r for r in rows if r.ok and r.kind == "end-to-end" and r.gpu.name == name]


def fit(rows) -> tuple[float, float, float]:
    """(derating, median |log error| at it, median |log error| without derating)."""
    measured = np.array([r.value for r in rows], dtype=float)
    scale = np.array([_unit_scale(r) for r in rows])

    def spread(x: float) -> float:
        moved = [
            dataclasses.replace(r, gpu=dataclasses.replace(r.gpu, gemm_power_derating=x))
            for r in rows
        ]
        pred = predict_rows(moved, "achievable")[0] / scale
        err = np.log(pred / measured)
        return float(np.nanmedian(np.abs(err)))

    scores = [spread(float(x)) for x in GRID]
    best = int(np.argmin(scores))
    return float(GRID[best]), scores[best], scores[-1]


def write(file: str, value: float, rows: int, where: str, before: float, after: float) -> None:
    path = ROOT / "hardware" / file
    text = path.read_text()
    line = (
        f"gemm_power_derating: {value:.2f}              # fitted to this part's own {rows} "
        f"end-to-end rows (tests/data/{where}) by benchmarks/fit_power_derating.py: median "
        f"|log error| {before:.3f} without, {after:.3f} with it"
    )
    if not rows:
        if not re.search(r"^gemm_power_derating:.*$", text, re.M):
            return  # no derating stated: 1.0 already
        line = (
            "gemm_power_derating: 1.00              # no end-to-end rows of its own in "
            f"tests/data/{DATA[0].name}: no derating (benchmarks/fit_power_derating.py)"
        )
    if re.search(r"^gemm_power_derating:.*$", text, re.M):
        text = re.sub(r"^gemm_power_derating:.*$", line, text, flags=re.M)
    else:
        text = text.rstrip("\n") + "\n" + line + "\n"
    path.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="set the hardware files' values")
    args = parser.parse_args()
    files = [(path, load_measured(path)) for path in DATA]
    print("| part | rows (file) | derating | median abs log error, fitted | without derating |")
    print("|---|---|---|---|---|")
    for file, name in PARTS.items():
        where, mine = next(
            ((path.name, part_rows(rows, name)) for path, rows in files if part_rows(rows, name)),
            ("", []),
        )
        if not mine:
            print(f"| {name} | 0 | 1 (no data of its own) | | |")
            if args.write:
                write(file, 1.0, 0, "", 0.0, 0.0)
            continue
        value, after, before = fit(mine)
        print(f"| {name} | {len(mine)} ({where}) | {value:.2f} | {after:.3f} | {before:.3f} |")
        if args.write:
            write(file, value, len(mine), where, before, after)
    return 0


if __name__ == "__main__":
    sys.exit(main())
