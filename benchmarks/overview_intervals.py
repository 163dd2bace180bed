"""How often the expected figures' intervals hold TensorRT-LLM 1.2's performance-overview results
(`tests/data/trtllm_perf_overview_{moe,moe_rest,dense}.csv`), with the median errors of the
expected figures by group (docs/validation.md, "Intervals"). The shipped class table is
calibrated on these figures' own residuals too (`docs/validation_residuals_tables.csv`), so the
coverage printed here is in-sample; `benchmarks/interval_coverage.py` predicts each model's
figures from a table without them (its rolling-origin tables, "engine tables").

Each file is predicted as ``compare-measured FILE --assumptions achievable`` predicts it; a figure
is held at 80 % (90 %) when its measured value lies within ``predicted_low80 .. predicted_high80``
(``_low90 .. _high90``). Printed by group (MoE attention-DP + EP on Blackwell and on Hopper, MoE
tensor-parallel, dense) with the median 80 % width over the prediction, the median and 90th
percentile of |predicted/measured - 1| and the median signed error, and by support status (in
support, near, extrapolating). ``--clock engine`` predicts every figure on the engine clock
(``kernel_tables`` False) instead of the clock ``compare-measured`` prices it by.
``--by-release`` also splits each group by the figure's release: ``earlier page`` where the 1.2
page repeats digit for digit the figure its earlier version gives
(``tests/data/trtllm_perf_overview_earlier.csv``), so it was measured on an earlier release,
else ``re-measured``. ``--rows GROUP`` (a group's name as printed, or ``all``) also lists that
group's figures one by one: the file and line, model, GPU, layout, input and output tokens,
release, measured, predicted and signed error (what a row-by-row look at a group's lean starts
from; ``operating_point.py`` takes the row's index, its line less 2).

    PYTHONPATH=. python benchmarks/overview_intervals.py [--files moe,moe_rest,dense] [--clock engine]
        (``--files rtx``: the page's RTX PRO 6000 tables, kept out of the default set, whose
        residuals do not size the class table; ``--files as_written``: the page's B200, GB200,
        H200 and H100 tables copied cell for cell, the default set's figures in the page's own
        words, with its 1,000/1,000 rows)
        [--by-release] [--rows "MoE DP+EP Hopper"]
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

ROOT = Path(__file__).resolve().parent.parent
HOPPER = ("H100", "H200", "H20", "H800", "GH200")


def figures(name: str, clock: str = "rows"):
    """The overview file ``name``'s predicted rows with status ok, as a DataFrame (``clock``
    ``engine``: every row on the engine clock)."""
    from inference_econ.api import compare_measured
    from inference_econ.model.assumptions import preset

    path = ROOT / "tests" / "data" / f"trtllm_perf_overview_{name}.csv"
    assumptions = preset("achievable")
    if clock == "engine":
        assumptions = assumptions.replace(kernel_tables=False)
    table = compare_measured(path, assumptions).table
    return table[table["status"] == "ok"].copy()


def group(row) -> str:
    """A figure's group: dense, or MoE by layout (attention-DP + EP or tensor-parallel) and
    GPU generation."""
    if row["architecture"] != "MoE":
        return "dense"
    gen = "Hopper" if str(row["hardware"]).startswith(HOPPER) else "Blackwell"
    return f"MoE DP+EP {gen}" if "attn-DP" in str(row["layout"]) else f"MoE TP {gen}"


#: Every group ``group`` names.
GROUPS = ("MoE DP+EP Blackwell", "MoE DP+EP Hopper", "MoE TP Blackwell", "MoE TP Hopper", "dense")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", default="moe,moe_rest,dense", help="overview files, by suffix")
    parser.add_argument(
        "--clock", choices=("rows", "engine"), default="rows", help="as priced, or the engine clock"
    )
    parser.add_argument("--rows", metavar="GROUP", help="list a group's figures (or all)")
    parser.add_argument(
        "--by-release",
        action="store_true",
        help="also split each group by whether its figure repeats the page's earlier version",
    )
    args = parser.parse_args(argv)
    if args.rows is not None and args.rows not in (*GROUPS, "all"):
        print(
            f"--rows: no group {args.rows!r}; give one of {', '.join(GROUPS)}, or all",
            file=sys.stderr,
        )
        return 2
    import pandas as pd

    start = time.process_time()
    frames = []
    for name in args.files.split(","):
        part = figures(name.strip(), args.clock)
        part["file"] = name.strip()
        frames.append(part)
    d = pd.concat(frames, ignore_index=True)
    d["architecture"] = d["model"].map(lambda m: "MoE" if _is_moe(m) else "dense")
    d["group"] = d.apply(group, axis=1)
    d["in80"] = (d.measured >= d.predicted_low80) & (d.measured <= d.predicted_high80)
    d["in90"] = (d.measured >= d.predicted_low90) & (d.measured <= d.predicted_high90)
    d["width80"] = (d.predicted_high80 - d.predicted_low80) / d.predicted
    d["status"] = d["support"].astype(str).str.split(" (", regex=False).str[0]
    records = {f: _records_by_line(f) for f in d["file"].unique()}
    raw = [records[f][r] for f, r in zip(d.file, d.row)]
    d["input"] = [r["input_len"] for r in raw]
    d["output"] = [r["output_len"] for r in raw]
    d["release"] = [release(r) for r in raw]

    def summary(by: str) -> pd.DataFrame:
        rows = [(n, g) for n, g in d.groupby(by)] + [("all", d)]
        return pd.DataFrame(
            {
                by: [n for n, _ in rows],
                "figures": [len(g) for _, g in rows],
                "in 80 %": [f"{g.in80.mean():.1%}" for _, g in rows],
                "in 90 %": [f"{g.in90.mean():.1%}" for _, g in rows],
                "median width 80 %": [f"{g.width80.median():.2f}" for _, g in rows],
                "median |error|": [f"{g.error.abs().median():.3f}" for _, g in rows],
                "p90 |error|": [f"{g.error.abs().quantile(0.9):.3f}" for _, g in rows],
                "median signed error": [f"{g.error.median():+.3f}" for _, g in rows],
            }
        )

    print(summary("group").to_string(index=False))
    print()
    print(summary("status").to_string(index=False))
    if args.by_release:
        d["group, release"] = d["group"] + ", " + d["release"]
        print()
        print(summary("group, release").to_string(index=False))
    if args.rows:
        listed = listing(d, args.rows)
        print()
        print(listed.to_string(index=False) if listed is not None else f"no figure of {args.rows}")
    print(
        "\nIntervals: the shipped class table, calibrated on these figures' residuals too "
        "(in-sample); benchmarks/interval_coverage.py predicts each model's with its own left out"
    )
    print(f"\nCPU: {time.process_time() - start:.0f} s (this process)")
    return 0


def listing(d, name: str):
    """The figures of group ``name`` (``all``: every group) with their rows' lengths and release
    (``release``), sorted by group, file and line; None where no figure is of that group."""
    import pandas as pd

    part = d if name == "all" else d[d["group"] == name]
    if part.empty:
        return None
    rows = part.sort_values(["group", "file", "row"])
    return pd.DataFrame(
        {
            "group": rows["group"],
            "file": rows["file"],
            "line": rows["row"],
            "model": rows["model"],
            "hardware": rows["hardware"],
            "layout": rows["layout"],
            "input": rows["input"],
            "output": rows["output"],
            "release": rows["release"],
            "measured": rows["measured"].map(lambda v: f"{v:,.0f}"),
            "predicted": rows["predicted"].map(lambda v: f"{v:,.0f}"),
            "error": rows["error"].map(lambda v: f"{v:+.3f}"),
        }
    )


def _records_by_line(name: str) -> dict[int, dict]:
    """Each data row of overview file ``name`` as the CSV gives it, by its line in the file (the
    header is line 1), the line ``compare-measured``'s ``row`` column names."""
    return _read_by_line(ROOT / "tests" / "data" / f"trtllm_perf_overview_{name}.csv")


def _read_by_line(path) -> dict[int, dict]:
    """A CSV file's rows as dicts by the line each starts on, by the rules ``compare-measured``
    reads them with (``specs.inputs.csv_rows``: blank rows left out, the header line 1)."""
    from inference_econ.specs.inputs import csv_rows

    header, rows = csv_rows(path)
    return {line: dict(zip(header, cells)) for line, cells in rows}


#: The key of a figure on the page: its model, GPU, layout and lengths as the CSVs write them.
KEY = ("model", "hardware", "parallelism", "input_len", "output_len")


def release(record: dict) -> str:
    """``earlier page`` where the figure repeats, digit for digit, the one the page's earlier
    version gives for the same model, GPU, layout and lengths
    (``tests/data/trtllm_perf_overview_earlier.csv``): carried over, measured on an earlier
    release than the page's; else ``re-measured`` (changed, or new: not on the earlier page at
    that layout)."""
    earlier = _earlier_figures().get(tuple(record[k] for k in KEY))
    same = earlier is not None and float(earlier) == float(record["value"])
    return "earlier page" if same else "re-measured"


@lru_cache(maxsize=1)
def _earlier_figures() -> dict:
    """The earlier version's figures by ``KEY`` (read once)."""
    path = ROOT / "tests" / "data" / "trtllm_perf_overview_earlier.csv"
    return {tuple(r[k] for k in KEY): r["value"] for r in _read_by_line(path).values()}


def _is_moe(model: str) -> bool:
    from inference_econ.specs.architecture import load_model

    return load_model(model).is_moe


if __name__ == "__main__":
    sys.exit(main())
