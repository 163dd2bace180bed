"""TensorRT-LLM's performance overview as two versions of the page: the figures the 1.2 page
repeats from the version before it were measured on an earlier release
(`tests/data/trtllm_perf_overview_earlier.csv`, `benchmarks/overview_intervals.py --by-release`)."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

from conftest import benchmark_script

DATA = Path(__file__).parent / "data"
KEY = ("model", "hardware", "parallelism", "input_len", "output_len")
PAGES = ("moe", "moe_rest", "dense")


def _rows(name: str) -> list[dict]:
    with open(DATA / f"trtllm_perf_overview_{name}.csv", newline="") as f:
        return list(csv.DictReader(f))


def _figures() -> tuple[dict, dict]:
    """(the 1.2 page's figures, the earlier page's) by model, GPU, layout and lengths."""
    now = {tuple(r[k] for k in KEY): int(r["value"]) for p in PAGES for r in _rows(p)}
    before = {tuple(r[k] for k in KEY): int(r["value"]) for r in _rows("earlier")}
    return now, before


def test_the_earlier_page_names_each_figure_once_with_its_source():
    rows = _rows("earlier")
    keys = [tuple(r[k] for k in KEY) for r in rows]
    assert len(keys) == len(set(keys)) == 101
    assert all(r["unit"] == "output tok/s per GPU" and r["licence"] == "Apache-2.0" for r in rows)
    assert all("perf-overview.md" in r["source"] for r in rows)
    assert sum(int(r["value"]) for r in rows) == 693_761  # the page's figures as typed in


def test_figures_on_both_pages_are_the_same_measurement_or_a_rerun_above_it():
    """Every figure of the earlier page at a layout the 1.2 page keeps is on it, the same or
    up to 15 % faster (a rerun on a newer release; a typo in either file would not be), except
    the dense H200 ones, which moved from TP1 to TP2."""
    now, before = _figures()
    missing = [k for k in before if k not in now]
    assert {(k[0], k[1], k[2]) for k in missing} == {("Llama-3.3-70B-Instruct", "H200", "TP1")}
    ratios = [now[k] / v for k, v in before.items() if k in now]
    assert len(ratios) == 98
    assert min(ratios) == 1.0 and max(ratios) < 1.15


def test_the_hopper_figures_of_the_1_2_page_repeat_the_earlier_page():
    """Of the 1.2 page's 103 figures, 63 repeat the earlier page digit for digit: 26 of its 29
    Hopper MoE figures (every attention-DP one; the others gpt-oss-20b's on H200), 25 of 28
    on GB200 and 3 of 29 on B200, and 9 of the 17 dense ones."""
    now, before = _figures()
    changed = Counter((k[0], k[1]) for k in now if before.get(k) != now[k])
    assert changed == {
        **dict.fromkeys([("gpt-oss-120b", "B200"), ("gpt-oss-20b", "B200")], 5),
        ("Llama-3.3-70B-Instruct", "H200"): 5,
        **dict.fromkeys([("DeepSeek-R1", "B200"), ("Llama-4-Maverick", "B200")], 4),
        **dict.fromkeys([("Qwen3-235B-A22B", "B200"), ("Qwen3-30B-A3B", "B200")], 4),
        ("DeepSeek-R1", "GB200"): 3,
        ("Llama-3.3-70B-Instruct", "B200"): 3,
        ("gpt-oss-20b", "H200"): 3,
    }
    assert sum(changed.values()) == 40
    hopper_dep = [k for k in now if k[1] in ("H100 SXM", "H200") and k[2].startswith("DEP")]
    assert len(hopper_dep) == 17 and all(before.get(k) == now[k] for k in hopper_dep)


def test_the_script_reads_each_figure_at_the_line_compare_measured_names():
    """``overview_intervals.py`` finds a figure by its line (``compare-measured``'s ``row``) and
    labels it by release: DeepSeek-R1's H200 DEP8 1024/1024 (line 10) repeats the earlier page,
    gpt-oss-20b's H200 TP1 1024/1024 (line 15 of the second file) was measured again."""
    from inference_econ.measured.reading import load_measured

    script = benchmark_script("overview_intervals")
    for name in PAGES:
        by_line = script._records_by_line(name)
        lines = [r.row for r in load_measured(DATA / f"trtllm_perf_overview_{name}.csv")]
        assert sorted(by_line) == sorted(lines)
    cases = (
        ("moe", 10, ("DeepSeek-R1", "H200", "1620"), "earlier page"),
        ("moe_rest", 15, ("gpt-oss-20b", "H200", "13890"), "re-measured"),
    )
    for name, line, figure, release in cases:
        record = script._records_by_line(name)[line]
        assert (record["model"], record["hardware"], record["value"]) == figure
        assert script.release(record) == release
