"""Add each MLPerf row's step token budget, read from the configuration its batch cap cites.

A row of ``tests/data/benchmarks_test_mlperf_newer.csv`` whose ``batch_or_concurrency`` cites
the submission's configuration ("max batch 256 (per engine instance; closed/NVIDIA/configs/
B200-SXM-180GBx8/Server/llama3_1-405b.py)") gets that configuration's runtime budget beside
its cap: TensorRT-LLM's ``max_num_tokens`` from ``trtllm_runtime_flags`` (the harness's
executor limit; the build flag where no runtime one is set), vLLM's
``max_num_batched_tokens`` from the harness's YAML ("max batch 256; max_num_tokens 2048
(...)"). Only that cell changes; every other byte of the file is kept. The configurations
are read from local git mirrors of the results repositories (``git show HEAD:PATH``).

    python benchmarks/mlperf_budgets.py FILE --mirror v5.1=/path/to/inference_results_v5.1 \\
        --mirror v6.0=/path/to/inference_results_v6.0 [--write]

Without ``--write`` it prints what it would add, by model, GPU and budget.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import subprocess
from collections import Counter
from pathlib import Path

CITED = re.compile(r"(closed/[^)]*?\.(?:py|yaml|json))")
ROUND = re.compile(r"results_(v[0-9.]+)")
CAP = re.compile(r"^(max batch [\d,]+)")


def runtime_budget(text: str | None) -> tuple[int | None, str]:
    """(budget, its key) of a configuration's text: (None, "") where it sets none."""
    if not text:
        return None, ""
    if "trtllm_runtime_flags" in text:
        m = re.search(r"'max_num_tokens':\s*(\d+)", text.split("trtllm_runtime_flags", 1)[1])
        m = m or re.search(r"'max_num_tokens':\s*(\d+)", text)
        return (int(m.group(1)), "max_num_tokens") if m else (None, "")
    m = re.search(r"max_num_batched_tokens\W+(\d+)", text)
    if m:
        return int(m.group(1)), "max_num_batched_tokens"
    m = re.search(r"'max_num_tokens':\s*(\d+)", text)
    return (int(m.group(1)), "max_num_tokens") if m else (None, "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--mirror", action="append", default=[], help="ROUND=GIT_DIR")
    parser.add_argument("--write", action="store_true", help="rewrite FILE in place")
    args = parser.parse_args()
    mirrors = dict(m.split("=", 1) for m in args.mirror)
    raw = args.file.open(newline="").read()
    lines = raw.split("\n")
    rows = list(csv.reader(io.StringIO(raw, newline="")))
    col = rows[0].index("batch_or_concurrency")
    shown: dict = {}
    counts: Counter = Counter()
    for i, row in enumerate(rows[1:], start=1):
        cell, cited, rnd = row[col], CITED.search(row[col]), ROUND.search(row[0])
        head = CAP.match(cell)
        if not cited or not rnd or "max_num" in cell or not head:
            continue
        key = (rnd.group(1), cited.group(1))
        if key not in shown:
            git = mirrors.get(key[0])
            out = (
                subprocess.run(
                    ["git", "-C", git, "show", f"HEAD:{key[1]}"], capture_output=True, text=True
                )
                if git
                else None
            )
            shown[key] = runtime_budget(out.stdout if out and out.returncode == 0 else None)
        budget, name = shown[key]
        if budget is None:
            counts[("no budget read", key[0])] += 1
            continue
        cap = head.group(1)
        new = f"{cap}; {name} {budget}" + cell[len(cap) :]
        assert lines[i].count(cell) == 1, f"line {i + 1}: the cell is not unique on its line"
        lines[i] = lines[i].replace(cell, new)
        counts[(row[1].split(" (")[0], row[3], budget)] += 1
    for key, n in sorted(counts.items(), key=str):
        print(*key, n, sep="\t")
    print(f"{sum(n for k, n in counts.items() if k[0] != 'no budget read')} rows given a budget")
    if args.write:
        with args.file.open("w", newline="") as out:
            out.write("\n".join(lines))


if __name__ == "__main__":
    main()
