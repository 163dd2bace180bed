"""Fit the shipped engine profiles (engines/*.yaml) to the project's training data and write
their fitted sections (docs/model.md Part F, §F10; docs/validation.md).

    python benchmarks/fit_engines.py            # refit and rewrite the fitted sections
    python benchmarks/fit_engines.py --check    # print the fit, change nothing

The terms are fitted as ``benchmarks/measured_validation.py`` fits them for its time split:
the priors of ``priors/calibration.yaml`` (``priors.PRIORS``: the values written here
never feed a later fit), the micro-benchmark terms first, then the time rule (a term that
makes the newest training source worse than its prior when fitted on the older ones is left at
its prior). The reference profile (trtllm) gets every shared term - fitted, or its prior - so
the shipped profiles are exactly what the validation evaluated; every other profile of an
engine in the data gets its own kernel factor (``step_time_scale``: fitted, or 1). Each file
keeps its hand-written part above the marker line; everything below it is rewritten.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from measured_validation import TRAIN, fit  # noqa: E402

from inference_econ.measured import calibration as cal  # noqa: E402
from inference_econ.measured import priors as pri  # noqa: E402
from inference_econ.specs.catalog import entries  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MARKER = "# --- fitted by benchmarks/fit_engines.py (everything below is rewritten) ---"


def section(terms: dict, errors: dict, notes: list[str], rows: int) -> str:
    """The YAML lines below the marker: ``terms`` {name: (value, how)}, the standard errors
    of the fitted ones, then the fit."""
    lines = [MARKER]
    for key, (value, how) in terms.items():
        lines.append(f"{key}: {value:.5g}   # {how}")
    mine = {k: e for k, e in errors.items() if k in terms}
    if mine:
        lines.append("standard_errors:")
        lines += [f"  {k}: {e:.3g}" for k, e in mine.items()]
    lines += [
        "fit:",
        f'  data: "{TRAIN.relative_to(ROOT)}: {rows} end-to-end rows with status ok"',
        '  rule: "terms fitted to the rows with closed-form predictions; the time rule of '
        'benchmarks/measured_validation.py; errors in docs/validation.md"',
        '  command: "python benchmarks/fit_engines.py"',
    ]
    lines += [f"# {n}" for n in notes]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="print the fit, write nothing")
    args = parser.parse_args()
    say = lambda m: print(m, file=sys.stderr)  # noqa: E731
    notes: list = []
    problem, micro = cal.prepare(TRAIN, "trtllm", say, notes)
    keys, values, se = fit(problem, micro, notes, say)
    fitted = dict(zip(keys, np.asarray(values, float)))
    errors = {k.rpartition(".")[2]: float(e) for k, e in zip(keys, se)}
    micro_terms = {k: v for k, v in micro.items() if "." not in k}
    shared = {}
    for k, v in micro_terms.items():
        shared[k] = (v, "fitted to micro-benchmarks")
        errors[k] = micro["se." + k]
    for p in pri.PRIORS:
        if p.key in micro_terms:
            continue
        if p.key in fitted:
            shared[p.key] = (fitted[p.key], "fitted to the training rows")
        else:
            shared[p.key] = (p.mean, f"prior ({p.source}); not fitted")
    files = {e.name: e.path for e in entries("engines")}
    in_data = set(problem.step_engine) | {e.profile.name for e in problem.all_engines}
    for name, path in sorted(files.items()):
        if name == problem.base_name:
            terms = shared
        else:
            key = f"{name}.{pri.ENGINE_PRIOR.term}"
            how = "fitted to the rows it serves" if key in fitted else "prior: not fitted"
            if name not in in_data:
                how = "prior: no training rows run this profile"
            terms = {pri.ENGINE_PRIOR.term: (fitted.get(key, pri.ENGINE_PRIOR.mean), how)}
        text = path.read_text()
        if MARKER not in text:
            continue
        head = text.split(MARKER)[0].rstrip("\n") + "\n"
        own = {
            k: e
            for k, e in errors.items()
            if k in fitted or f"{name}.{k}" in fitted or k in micro_terms
        }
        if name != problem.base_name:
            key = f"{name}.{pri.ENGINE_PRIOR.term}"
            own = {pri.ENGINE_PRIOR.term: float(se[keys.index(key)])} if key in fitted else {}
        notes_here = notes if name == problem.base_name else []
        body = section(terms, own, notes_here, len(problem.all_rows))
        print(f"== {path.name}\n{body}")
        if not args.check:
            path.write_text(head + body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
