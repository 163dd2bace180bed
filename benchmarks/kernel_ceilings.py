"""Write each hardware file's ``kernel_ceilings`` (docs/model.md §B15) from the measured
kernel tables (kernels/README.md): the best GEMM (of every engine and version AIConfigurator
timed: ``kernels/<part>/every-engine/``), fused-MoE and attention FLOP/s (each table
apart, by the bits of its rate), the best bytes/s from
HBM and from L2, and the fastest in-domain all-reduce and NCCL collective of each part, as
``inference_econ.measured.kernel_rows.best_figures`` finds them, each with the table and
rows it came from. Rates are rounded up and latencies down to five significant digits, so the
roofline clock stays at or below every row (tests/test_roofline_bound.py checks both).

    PYTHONPATH=. python benchmarks/kernel_ceilings.py           # rewrite the six files
    PYTHONPATH=. python benchmarks/kernel_ceilings.py --check   # exit 1 if one would change
    PYTHONPATH=. python benchmarks/kernel_ceilings.py --every-gemm MIRROR

``--every-gemm`` reads every GEMM table of each part from a git clone or mirror of
aiconfigurator at the tables' commit (not only the rows kernels/ keeps) and prints how many
rows take less than the refined roofline's time (0 expected) and the closest row's ratio.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import inference_econ as ie  # noqa: E402
from inference_econ.measured.kernel_rows import NCCL, best_figures  # noqa: E402
from inference_econ.specs.kernel_tables import (  # noqa: E402
    DEFAULT_TABLES,
    EVERY_ENGINE,
    kernel_table,
)

ROOT = Path(__file__).resolve().parent.parent
#: kernels/ folder -> the hardware file of that part.
PARTS = {
    "h100_sxm": "hardware/h100_sxm.yaml",
    "h200_sxm": "hardware/h200_sxm.yaml",
    "b200_sxm": "hardware/b200.yaml",
    "gb200": "hardware/gb200_nvl72.yaml",
    "b300_sxm": "hardware/b300.yaml",
    "gb300": "hardware/gb300_nvl72.yaml",
}
DIGITS = 5
#: Where the block goes in a file that has none yet.
BEFORE = "# --- price basis"


def rounded(value: float, up: bool) -> str:
    """``value`` to ``DIGITS`` significant digits, up or down, as YAML reads a float."""
    exponent = math.floor(math.log10(value))
    mantissa = (math.ceil if up else math.floor)(value / 10.0 ** (exponent - DIGITS + 1))
    while True:
        if mantissa >= 10**DIGITS:  # 99999.5 up: one digit more
            mantissa, exponent = -(-mantissa // 10), exponent + 1
        digits = str(mantissa)
        text = f"{digits[0]}.{digits[1:]}e{exponent:+03d}"
        if (float(text) >= value) if up else (float(text) <= value):
            return text
        mantissa += 1 if up else -1  # the quotient's rounding fell on the wrong side


def table_of(folder: str, where: str) -> str:
    """The file a figure's rows come from (``where``: the op and format)."""
    op = where.split()[0].rstrip(",")
    if "(" in where:  # a row of another engine or version: the every-engine file
        return f"kernels/{folder}/{EVERY_ENGINE}/{op}.csv.gz"
    if op == "passes":
        return f"kernels/{folder}/passes.csv"
    if op in ("all_reduce", "all_gather", "reduce_scatter", "alltoall"):
        return f"kernels/{folder}/{NCCL}/nccl.csv.gz"
    return f"kernels/{folder}/{DEFAULT_TABLES}/{op}.csv.gz"


def block(folder: str, gpu) -> str:
    """The ``kernel_ceilings`` mapping of one part, a comment on each figure."""
    commit = kernel_table(folder, "gemm").header["commit"]
    best = best_figures(gpu, folder)
    lines = [
        "kernel_ceilings:   # the best each kernel class reached in the measured tables "
        f"(kernels/README.md: github.com/ai-dynamo/aiconfigurator {commit}, TensorRT-LLM "
        "1.3.0rc20 and NCCL 2.29.2, the GEMMs of every engine and version, Apache-2.0; "
        "kernels/<part>/passes.csv, this project's); "
        "written by benchmarks/kernel_ceilings.py, rates rounded up and latencies down; read "
        "by measured_kernel_rates (docs/model.md §B15)"
    ]
    for kind in ("gemm_flop_per_s", "moe_flop_per_s", "attention_flop_per_s"):
        keys = sorted(
            (k for k in best if k.startswith(kind + ".")), key=lambda k: -int(k.split(".")[1])
        )
        by = "KV cache" if kind.startswith("attention") else "tensor-core rate"
        lines.append(f"  {kind}:   # FLOP/s by the bits of the {by}")
        for key in keys:
            value, where = best[key]
            source = table_of(folder, where)
            lines.append(f"    {key.split('.')[1]}: {rounded(value, True)}   # {where}: {source}")
    for key in ("hbm_bytes_per_s", "l2_bytes_per_s"):
        if key in best:
            value, where = best[key]
            lines.append(f"  {key}: {rounded(value, True)}   # {where}: {table_of(folder, where)}")
    for key in ("custom_allreduce", "nccl"):
        if key in best:
            ceiling, where = best[key]
            latency = rounded(ceiling.latency_s, False)
            bandwidth = rounded(ceiling.bus_bytes_per_s, True)
            source = table_of(folder, where)
            lines.append(
                f"  {key}: {{latency_s: {latency}, bus_bytes_per_s: {bandwidth}, "
                f"max_ranks: {ceiling.max_ranks}}}"
                f"   # {where}: {source}, the fastest line under every call, measured on up "
                f"to {ceiling.max_ranks} GPUs"
            )
    return "\n".join(lines) + "\n"


def rewritten(text: str, new: str) -> str:
    """``text`` with its ``kernel_ceilings`` block (the line and those indented under it)
    replaced by ``new``, or ``new`` put before the price basis section."""
    found = re.search(r"^kernel_ceilings:.*\n(?:[ ].*\n)*", text, flags=re.M)
    if found:
        return text[: found.start()] + new + text[found.end() :]
    at = text.index(BEFORE)
    return text[:at] + new + text[at:]


def every_gemm(repo: Path) -> int:
    """Hold every row of every GEMM table of each part (``--every-gemm``) to the refined
    roofline; 1 if a row beats it."""
    import io

    import pandas as pd
    from import_kernel_tables import gemm_tables, git_blob

    from inference_econ.measured.kernel_rows import kernel_roofline_s, table_gemm_rows
    from inference_econ.specs.kernel_tables import KernelTable

    refined, rows, beaten, closest = ie.preset("refined"), 0, 0, 0.0
    for folder, relative in PARTS.items():
        gpu = ie.load_hardware(ROOT / relative)
        commit = kernel_table(folder, "gemm").header["commit"]
        for path in gemm_tables(repo, commit, folder):
            frame = pd.read_parquet(io.BytesIO(git_blob(repo, commit, path)))
            columns = {c: frame[c].to_numpy() for c in ("m", "n", "k")}
            columns["gemm_dtype"] = frame["gemm_dtype"].to_numpy(object)
            columns["latency_ms"] = frame["latency"].to_numpy(float)
            for kind in table_gemm_rows(KernelTable(path, {}, columns)):
                ratio = kernel_roofline_s(gpu, kind, refined) / kind.seconds
                rows, beaten = rows + ratio.size, beaten + int((ratio > 1 + 1e-9).sum())
                closest = max(closest, float(ratio.max()))
    print(f"{rows:,} GEMM rows (m > 0) of every table: {beaten} faster than the refined "
          f"roofline; the closest is charged {closest:.6f} of its measured time")  # fmt: skip
    return 1 if beaten else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a file would change")
    parser.add_argument(
        "--every-gemm", type=Path, metavar="MIRROR", help="hold every GEMM row of a mirror"
    )
    args = parser.parse_args(argv)
    if args.every_gemm:
        return every_gemm(args.every_gemm)
    stale = []
    for folder, relative in PARTS.items():
        path = ROOT / relative
        gpu = ie.load_hardware(path)
        text = path.read_text(encoding="utf-8")
        new = rewritten(text, block(folder, gpu))
        if new != text:
            stale.append(relative)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    verb = "would change" if args.check else "rewritten"
    print(f"{verb}: {', '.join(stale)}" if stale else "every file up to date")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    raise SystemExit(main())
