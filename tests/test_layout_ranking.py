"""The engine step orders the layouts of one model on one GPU as published measurements do
(tests/data/layout_rankings.csv; docs/validation.md "Layout rankings"): within each group, no
two layouts the measurements set apart by more than ``rankings.TOLERANCE`` (5 %, the spread of
one configuration measured twice) are predicted the other way round by more than it.

The groups: TensorRT-LLM's performance overview on RTX PRO 6000 (Qwen3-30B-A3B TP1 against
DEP2, DEP2 x PP2 and DEP8, and TP1-TP8 in v1.0; Qwen3-235B-A22B DEP2 x PP2 against DEP8) and
AIConfigurator's measured runs at the same batch a rank: DeepSeek-R1 on 8 H200 and 8 B200
(DEP8 against TP8 with or without EP8: 8-32 requests, 64-256 under DEP8's eight attention
ranks), gpt-oss-120b on B200 (DEP4 against TP2, DEP2 against TP2) and Qwen3-235B-A22B on H100
(TEP4 against TEP8). A subset of the file's 21 groups keeps the test cheap;
``benchmarks/layout_ranking.py`` prints them all."""

import re

import pytest

from inference_econ.measured.rankings import TOLERANCE, misordered, ranked_rows

PATH = "tests/data/layout_rankings.csv"
GROUPS = (
    "qwen3-30b-rtx6000-trtllm1.2-1000/1000",
    "qwen3-30b-rtx6000-trtllm1.2-1024/8192",
    "qwen3-30b-rtx6000-trtllm1.2-32768/1024",
    "qwen3-235b-rtx6000-trtllm1.2-1000/1000",
    "qwen3-235b-rtx6000-trtllm1.2-1024/8192",
    "qwen3-30b-rtx6000-trtllm1.0-1000/1000",
    "qwen3-30b-rtx6000-trtllm1.0-128/2048",
    "qwen3-30b-rtx6000-trtllm1.0-2048/128",
    "deepseek-r1-h200-fp8-trtllm1.1.0rc2.post2-8192/1024-c8",
    "deepseek-r1-b200-fp8-trtllm1.2.0rc6.post3-1024/8192-c16",
    "deepseek-r1-b200-fp4-trtllm1.2.0rc6.post3-1024/8192-c32",
    "gpt-oss-120b-b200-mxfp4-trtllm1.2.0rc2.post2-1024/1024-c16",
    "qwen3-235b-h100-fp8-trtllm1.0.0rc3-256/256-c32",
)


@pytest.fixture(scope="module")
def ranked():
    return ranked_rows(PATH, set(GROUPS))


def test_the_groups_cover_four_models_and_two_generations(ranked):
    """The groups tested: 4 models, Hopper and Blackwell, 2 or more layouts each."""
    models = {re.match(r"(.+?)-(rtx|h100|h200|b200)", r.group).group(1) for r in ranked}
    assert models == {"qwen3-30b", "qwen3-235b", "deepseek-r1", "gpt-oss-120b"}
    assert {g for g in GROUPS if "h200" in g or "h100" in g} and {g for g in GROUPS if "b200" in g}
    for g in GROUPS:
        assert len({r.layout for r in ranked if r.group == g}) >= 2, g


@pytest.mark.parametrize("group", GROUPS)
def test_layouts_are_ordered_as_measured(ranked, group):
    """No pair of the group's layouts is predicted the other way round from the measurement
    by more than the tolerance (the measurements' own spread)."""
    rows = [r for r in ranked if r.group == group]
    wrong = [
        (a.layout, b.layout, a.measured, b.measured, a.predicted, b.predicted)
        for a, b in misordered(rows, TOLERANCE)
    ]
    assert not wrong, wrong


def test_long_prompts_run_batched_at_the_limits_the_rows_state():
    """AIConfigurator's DeepSeek-R1 runs on 8 H200 at 8,192/1,024 state the step token budget
    its benchmark generator set (``max_num_tokens`` = ``max_batch_size`` + 8,192 + 1,500 a
    rank, rounded up to 32): prompts join a decoding batch, so the predicted TPOT grows with
    the requests a rank (8, 16, 32) as the measured one does (39.8, 61.2, 101.8 ms). At the
    engines' default 8,192-token step no prompt fits beside a decoding request, and every
    concurrency replays one request at a time at one TPOT."""
    groups = [f"deepseek-r1-h200-fp8-trtllm1.1.0rc2.post2-8192/1024-c{c}" for c in (8, 16, 32)]
    rows = {r.group: r for r in ranked_rows(PATH, set(groups)) if r.layout == "DEP8"}
    tpot = [rows[g].predicted for g in groups]
    assert tpot[0] < tpot[1] < tpot[2]
    assert tpot[2] > 2.0 * tpot[0]  # measured: 2.56 x
    for g in groups:  # within 15 % of the measured TPOT (the kernel clock: 0.86-0.93)
        assert rows[g].predicted == pytest.approx(rows[g].measured, rel=0.15)
