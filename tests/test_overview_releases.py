"""TensorRT-LLM's performance overview as two versions of the page: the figures the 1.2 page
repeats from the version before it were measured on an earlier release
(`tests/data/trtllm_perf_overview_earlier.csv`, `benchmarks/overview_intervals.py --by-release`)."""

from __future__ import annotations

import csv
from pathlib import Path

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


def test_figures_on_both_pages_are_the_same_measurement_or_a_rerun_near_it():
    """Every figure of the earlier page at a layout the 1.2 page keeps is on it, within 20 % (a
    rerun; a typo in either file would not be), except the dense H200 row, which moved from TP1
    to TP2."""
    now, before = _figures()
    missing = [k for k in before if k not in now]
    assert {(k[0], k[1], k[2]) for k in missing} == {("Llama-3.3-70B-Instruct", "H200", "TP1")}
    ratios = [now[k] / v for k, v in before.items() if k in now]
    assert len(ratios) == 98
    assert min(ratios) > 0.8 and max(ratios) < 1.2


def test_the_hopper_figures_of_the_1_2_page_repeat_the_earlier_page():
    """29 of the 1.2 page's MoE figures are on Hopper; 26 repeat the earlier page digit for
    digit (every attention-DP one), the 3 others gpt-oss-20b's on H200. Of B200's 29, 26 were
    measured again."""
    now, before = _figures()
    moe = [tuple(r[k] for k in KEY) for p in ("moe", "moe_rest") for r in _rows(p)]

    def counts(gpus):
        keys = [k for k in moe if k[1] in gpus]
        return len(keys), sum(before.get(k) == now[k] for k in keys)

    assert counts(("H100 SXM", "H200")) == (29, 26)
    assert counts(("B200",)) == (29, 3)
    assert counts(("GB200",)) == (28, 25)
    hopper_dep = [k for k in moe if k[1] in ("H100 SXM", "H200") and k[2].startswith("DEP")]
    assert len(hopper_dep) == 17 and all(before.get(k) == now[k] for k in hopper_dep)
    changed = {k[0] for k in moe if k[1] in ("H100 SXM", "H200") and before.get(k) != now[k]}
    assert changed == {"gpt-oss-20b"}
