"""Fit the shipped engine profiles (engines/trtllm.yaml, engines/vllm.yaml) to the project's
training data and write their fitted sections (docs/model.md Part F, §F10).

    python benchmarks/fit_engines.py            # refit and rewrite the fitted sections
    python benchmarks/fit_engines.py --check    # print the fit, change nothing

The priors of the fit are fixed in inference_econ/studies/measured/calibration.py (PRIORS):
the values written here never feed a later fit. Each profile file keeps its hand-written
part (engine limits with their sources) above the marker line; everything below it is
rewritten.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from inference_econ.studies.measured.calibration import calibrate

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "benchmarks_train.csv"
MARKER = "# --- fitted by benchmarks/fit_engines.py (everything below is rewritten) ---"


def fitted_section(result, engine: str) -> str:
    """The YAML lines of the terms fitted for ``engine``: shared terms for the reference
    engine, the engine's own terms otherwise; then their standard errors and the fit."""
    lines = [MARKER]
    terms = {}
    for key, (value, err) in result.micro:
        if engine == "trtllm":
            terms[key] = (value, err, "micro-benchmarks")
    for t in result.terms:
        if not t.fitted:
            continue
        own = t.prior.engine == engine
        shared = t.prior.engine is None and engine == "trtllm"
        if own or shared:
            terms[t.prior.term] = (t.value, t.standard_error, "end-to-end rows")
    for key, (value, err, how) in terms.items():
        lines.append(f"{key}: {value:.5g}   # fitted to {how}, standard error {err:.2g}")
    lines.append("standard_errors:")
    for key, (_, err, _) in terms.items():
        lines.append(f"  {key}: {err:.3g}")
    h, s = result.held_out, result.in_sample
    lines += [
        "fit:",
        f'  data: "{DATA.relative_to(ROOT)}: {result.rows} end-to-end rows with status ok, {len(result.sources)} sources"',
        f'  leave_one_source_out: "median |error| {h["median"]:.3f}, p90 {h["p90"]:.3f}"',
        f'  in_sample: "median |error| {s["median"]:.3f}, p90 {s["p90"]:.3f}"',
        '  command: "python benchmarks/fit_engines.py"',
    ]
    micro = {k for k, _ in result.micro}
    untouched = [
        t.key
        for t in result.terms
        if not t.fitted
        and t.key not in micro
        and (t.prior.engine == engine or (t.prior.engine is None and engine == "trtllm"))
    ]
    if untouched:
        lines.append(
            f"# not fitted (kept from the hand-written part or the defaults): {', '.join(untouched)}"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="print the fit, write nothing")
    args = parser.parse_args()
    result = calibrate(DATA, "trtllm", progress=lambda m: print(m, file=sys.stderr))
    for engine in ("trtllm", "vllm"):
        section = fitted_section(result, engine)
        path = ROOT / "engines" / f"{engine}.yaml"
        text = path.read_text()
        head = text.split(MARKER)[0].rstrip("\n") + "\n"
        print(f"== {path.name}\n{section}")
        if not args.check:
            path.write_text(head + section)
    print(
        f"held out by source: median {result.held_out['median']:.3f}, p90 {result.held_out['p90']:.3f}; "
        f"{result.seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
