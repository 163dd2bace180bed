"""Fit the engine clock's physics forms to the measured kernel tables and write them to
kernels/engine_clock.yaml (``inference_econ.model.kernel_fit``; the forms are
``model/kernel_physics.py``'s, the tables kernels/README.md's).

Every op class and variant is fitted over the parts of ``FIT_FOLDERS`` whose tables measure it
(B300 and GB300 are left out, to test the fits); pricing reads
the file on a part without tables, and never fits. ``--check`` refits and compares with the
file instead of writing it (exit 1 when a parameter differs).

    PYTHONPATH=. python benchmarks/fit_kernel_prices.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from inference_econ.model.kernel_fit import (  # noqa: E402
    F_SCALE,
    FIT_DISTRIBUTION,
    FIT_FOLDERS,
    ROWS_PER_PART,
    fit_all,
)
from inference_econ.model.kernel_physics import PASSES  # noqa: E402
from inference_econ.model.kernel_prices import table_variants  # noqa: E402
from inference_econ.specs.kernel_tables import (  # noqa: E402
    DEFAULT_TABLES,
    ENGINE_CLOCK_FITS,
    NCCL_TABLES,
    engine_clock_fits,
)

OUT = Path(__file__).resolve().parent.parent / "kernels" / ENGINE_CLOCK_FITS
#: Op class -> its variants, in the order written.
VARIANTS = {
    "gemm": ("bfloat16", "fp8", "fp8_block", "nvfp4"),
    "generation_attention": ("bfloat16", "fp8"),
    "context_attention": ("bfloat16", "fp8"),
    "allreduce": ("custom",),
    "collective": ("all_reduce", "all_gather", "reduce_scatter", "alltoall"),
    "moe": ("bfloat16", "fp8", "fp8_block", "nvfp4", "w4a16_mxfp4", "w4a8_mxfp4_mxfp8"),
    "pass": tuple(PASSES),
}
HEADER = f"""\
# The engine clock's physics parameters (inference_econ/model/kernel_physics.py), fitted per op
# class and variant to the measured kernel tables of kernels/ by
# benchmarks/fit_kernel_prices.py (inference_econ/model/kernel_fit.py): soft-L1 least squares
# on log(modelled / measured), at most {ROWS_PER_PART} rows a part, loss scale {F_SCALE}, MoE
# rows routed {FIT_DISTRIBUTION}. Sources: NVIDIA AIConfigurator's tables (TensorRT-LLM
# {DEFAULT_TABLES.split("-", 1)[1]} and NCCL {NCCL_TABLES.split("-", 1)[1]}; github.com/ai-dynamo/aiconfigurator at
# 095f58a51c4ca8e61b66ec108d86f223f8d559ce, Apache-2.0, kernels/LICENSE-aiconfigurator) and
# the project's kernels/<gpu>/passes.csv (MIT). Shares and efficiencies are fractions of the
# datasheet (dense peak FLOP/s at the format's bits, HBM bandwidth, all-reduce bus bandwidth);
# times are microseconds. `parts` names the kernels/ folders each entry was fitted to.
# Written by the script: rerun it rather than edit.
"""


def fits() -> dict[str, dict[str, dict]]:
    """{op: {variant: parameters and the parts fitted to}} of every class and variant."""
    out: dict[str, dict[str, dict]] = {}
    for op, variants in VARIANTS.items():
        for variant in variants:
            params = fit_all(op, variant)
            if params is None:
                continue
            out.setdefault(op, {})[variant] = {**params, "parts": _parts(op, variant)}
    return out


def _parts(op: str, variant: str) -> list[str]:
    """The kernels/ folders measuring ``op`` at ``variant``."""
    return [f for f in FIT_FOLDERS if variant in table_variants(f, op)]


def render(table: dict[str, dict[str, dict]]) -> str:
    """The YAML text of ``table``, one line a variant, under HEADER."""
    lines = [HEADER.rstrip("\n")]
    for op, variants in table.items():
        lines.append(f"{op}:")
        for variant, entry in variants.items():
            fields = ", ".join(
                f"{k}: [{', '.join(v)}]" if k == "parts" else f"{k}: {v:g}"
                for k, v in entry.items()
            )
            lines.append(f"  {variant}: {{{fields}}}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the file, write nothing")
    args = parser.parse_args(argv)
    table = fits()
    if not args.check:
        OUT.write_text(render(table), encoding="utf-8")
        print(f"wrote {OUT}")
        return 0
    stored = engine_clock_fits()
    bad = [
        f"{op}.{v}.{k}: {stored.get(op, {}).get(v, {}).get(k)} != {x}"
        for op, variants in table.items()
        for v, entry in variants.items()
        for k, x in entry.items()
        if stored.get(op, {}).get(v, {}).get(k) != x
    ]
    print("\n".join(bad) or "every parameter reproduced")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
