"""Add each MLPerf row's step token budget and GEMM/all-reduce fusion, read from the
configuration its batch cap cites.

A row of ``tests/data/benchmarks_test_mlperf_newer.csv`` whose ``batch_or_concurrency`` cites
the submission's configuration ("max batch 256 (per engine instance; closed/NVIDIA/configs/
B200-SXM-180GBx8/Server/llama3_1-405b.py)") gets that configuration's runtime budget beside
its cap: TensorRT-LLM's ``max_num_tokens`` from ``trtllm_runtime_flags`` (the harness's
executor limit; the build flag where no runtime one is set), vLLM's
``max_num_batched_tokens`` from the harness's YAML ("max batch 256; max_num_tokens 2048
(...)"). A TensorRT-LLM configuration that builds its engine with ``gemm_allreduce_plugin``
set to a type (each row-parallel GEMM fused with its all-reduce, docs/model.md §F6) adds that
flag too ("max batch 256; max_num_tokens 2048; gemm_allreduce_plugin float16 (...)"), and
the share of free memory its runtime gives the KV cache (``kvcache_free_gpu_mem_frac``,
docs/model.md §F8) where it sets one. Only that
cell changes; every other byte of the file is kept. The configurations are read from local git
mirrors of the results repositories (``git show HEAD:PATH``).

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
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling scripts, however run

from measured_files import fail  # noqa: E402

CITED = re.compile(r"(closed/[^)]*?\.(?:py|yaml|json))")
ROUND = re.compile(r"results_(v[0-9.]+)")
CAP = re.compile(r"^(max batch [\d,]+)")


#: A configuration's ``max_num_tokens`` setting: its whole value, a number or the arithmetic a
#: Python configuration writes it as ("4638 * 3"), up to the comma, brace or comment after it.
TRTLLM_BUDGET = re.compile(r"'max_num_tokens':\s*([\d\s*+()-]+?)\s*(?:[,}#\n]|$)")


def whole_number(expression: str) -> int | None:
    """The value of a configuration's integer arithmetic ("4638 * 3": 13914), or None where it
    is not whole numbers joined by +, - and * alone."""
    import ast
    import operator

    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}

    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            a, b = value(node.left), value(node.right)
            return None if a is None or b is None else ops[type(node.op)](a, b)
        return None

    try:
        return value(ast.parse(expression.strip(), mode="eval").body)
    except SyntaxError:
        return None


def runtime_budget(text: str | None) -> tuple[int | None, str]:
    """(budget, its key) of a configuration's text: (None, "") where it sets none. TensorRT-LLM's
    is its runtime flags' ``max_num_tokens`` (the build flag's where none is set), evaluated where
    the configuration writes it as arithmetic."""
    if not text:
        return None, ""
    if "trtllm_runtime_flags" in text:
        m = TRTLLM_BUDGET.search(text.split("trtllm_runtime_flags", 1)[1])
        m = m or TRTLLM_BUDGET.search(text)
        n = whole_number(m.group(1)) if m else None
        return (n, "max_num_tokens") if n is not None else (None, "")
    m = re.search(r"max_num_batched_tokens\W+(\d+)", text)
    if m:
        return int(m.group(1)), "max_num_batched_tokens"
    m = TRTLLM_BUDGET.search(text)
    n = whole_number(m.group(1)) if m else None
    return (n, "max_num_tokens") if n is not None else (None, "")


def live_lines(text: str | None) -> str:
    """A configuration's text without its commented-out lines."""
    return "\n".join(
        line for line in (text or "").splitlines() if not line.lstrip().startswith("#")
    )


def fused_allreduce(text: str | None) -> str | None:
    """The type a configuration builds ``gemm_allreduce_plugin`` with ("float16"), or None
    where it sets none (or None); commented-out lines are not read, and the first setting
    that names it is the one taken (the custom harness's, listed first, as for the budget)."""
    live = live_lines(text)
    m = re.search(r"'gemm_allreduce_plugin':\s*'?(\w+)'?", live)
    return m.group(1) if m and m.group(1) not in ("None", "disable") else None


def kv_fraction(text: str | None) -> str | None:
    """TensorRT-LLM's ``kvcache_free_gpu_mem_frac`` a configuration runs with (its runtime
    flags, the first setting that names it; commented-out lines not read), or None."""
    live = live_lines(text)
    if "trtllm_runtime_flags" not in live:
        return None
    m = re.search(r"'kvcache_free_gpu_mem_frac':\s*([\d.]+)", live)
    return m.group(1) if m else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--mirror", action="append", default=[], help="ROUND=GIT_DIR")
    parser.add_argument("--write", action="store_true", help="rewrite FILE in place")
    args = parser.parse_args()
    if not args.file.is_file():
        fail(f"{args.file}: no such file; give a measured-rows CSV")
    if not args.mirror:
        fail("--mirror: give at least one ROUND=GIT_DIR (a local mirror of a results repository)")
    mirrors = {}
    for m in args.mirror:
        rnd, sep, git = m.partition("=")
        if not sep or not re.fullmatch(r"v[0-9.]+", rnd):
            fail(f"--mirror {m!r}: write ROUND=GIT_DIR, e.g. v5.1=/path/to/inference_results_v5.1")
        probe = subprocess.run(["git", "-C", git, "rev-parse", "HEAD"], capture_output=True)
        if probe.returncode != 0:
            fail(f"--mirror {m!r}: {git} is not a git repository with a commit")
        mirrors[rnd] = git
    try:
        raw = args.file.open(newline="").read()
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{args.file}: cannot be read ({exc})")
    lines = raw.split("\n")
    rows = list(csv.reader(io.StringIO(raw, newline="")))
    if not rows or "batch_or_concurrency" not in rows[0]:
        fail(f"{args.file}: no batch_or_concurrency column; give a measured-rows CSV")
    col = rows[0].index("batch_or_concurrency")
    shown: dict = {}
    counts: Counter = Counter()
    for i, row in enumerate(rows[1:], start=1):
        cell, cited, rnd = row[col], CITED.search(row[col]), ROUND.search(row[0])
        head = CAP.match(cell)
        if not cited or not rnd or not head:
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
            text = out.stdout if out and out.returncode == 0 else None
            shown[key] = (
                runtime_budget(text),
                fused_allreduce(text),
                kv_fraction(text),
                text is not None,
            )
        (budget, name), fused, kv, read = shown[key]
        if not read:
            counts[("configuration not read", key[0])] += 1
            continue
        stated = cell[: cell.index(" (")] if " (" in cell else cell
        added = []
        if budget is not None and "max_num" not in cell:
            added.append(f"{name} {budget}")
        said = re.search(rf"{name} ([\d,]+)", stated) if budget is not None else None
        if said is not None and int(said.group(1).replace(",", "")) != budget:
            # a budget read before the configuration's arithmetic was: its evaluated value
            fixed = stated.replace(said.group(0), f"{name} {budget}")
            assert lines[i].count(cell) == 1, f"line {i + 1}: the cell is not unique on its line"
            lines[i] = lines[i].replace(cell, fixed + cell[len(stated) :])
            counts[(row[1].split(" (")[0], row[3], f"{name} {said.group(1)} -> {budget}")] += 1
            cell, stated = fixed + cell[len(stated) :], fixed
        if fused is not None and "gemm_allreduce_plugin" not in cell:
            added.append(f"gemm_allreduce_plugin {fused}")
        if kv is not None and "kvcache_free_gpu_mem_frac" not in cell:
            added.append(f"kvcache_free_gpu_mem_frac {kv}")
        if not added:
            continue
        new = "; ".join([stated, *added]) + cell[len(stated) :]
        assert lines[i].count(cell) == 1, f"line {i + 1}: the cell is not unique on its line"
        lines[i] = lines[i].replace(cell, new)
        for what in added:
            counts[(row[1].split(" (")[0], row[3], what)] += 1
    for key, n in sorted(counts.items(), key=str):
        print(*key, n, sep="\t")
    given = sum(n for k, n in counts.items() if k[0] != "configuration not read")
    print(f"{given} statements added")
    if args.write:
        with args.file.open("w", newline="") as out:
            out.write("\n".join(lines))


if __name__ == "__main__":
    main()
