"""Two-batch overlap (``--two-batch-overlap``): a step as two micro-batches whose MoE token
exchange runs under the other's work, as SGLang and vLLM run it over DeepEP
(docs/model-part-f.md §F7 "Two-batch overlap")."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.model.breakdown import ADDITIVE_PARTS
from inference_econ.model.latency import StepModel
from inference_econ.model.overlap import half_read_share, micro_batches, overlapped_s
from inference_econ.model.step_calls import exchange_terms_s
from inference_econ.model.workload import compile_workload
from inference_econ.serving.setting import make_setting

SGLANG = dict(gpus=16, assumptions="achievable", engine="sglang", discrete=True)


def test_an_overlapped_step_is_the_longer_of_its_work_and_its_exchange():
    # 30 ms of work and an exchange of 2 x 1 ms latency + 10 ms bandwidth: hidden (30 ms);
    # of 2 x 5 ms + 25 ms (35 ms): it shows (35 ms); one micro-batch: in series (41 ms)
    assert overlapped_s(30e-3, 1e-3, 10e-3, 2.0) == pytest.approx(30e-3)
    assert overlapped_s(30e-3, 5e-3, 25e-3, 2.0) == pytest.approx(35e-3)
    assert overlapped_s(30e-3, 1e-3, 10e-3, 1.0) == pytest.approx(41e-3)


def test_engines_split_a_step_from_their_own_token_counts():
    # SGLang needs a sequence in each half; vLLM's --dbo-decode-token-threshold is 32 a rank
    assert micro_batches("sglang", np.array([1.0, 2.0])).tolist() == [1.0, 2.0]
    assert micro_batches("vllm", np.array([31.0, 32.0]), 2.0).tolist() == [1.0, 2.0]
    # vLLM splits only with data parallelism; SGLang (over DeepEP) whatever the attention
    assert micro_batches("vllm", 64.0, np.array([1.0, 4.0])).tolist() == [1.0, 2.0]
    assert micro_batches("sglang", 64.0, 1.0) == 2.0


def test_a_half_batch_reads_the_experts_its_own_tokens_hit():
    # DeepSeek-R1: top 8 of 256 experts. 64 tokens hit 1 - (31/32)^64 = 0.868916 of them,
    # 32 tokens 1 - (31/32)^32 = 0.637945: one half reads 0.734185 of the step's expert bytes;
    # thousands of tokens hit every expert in each half (1)
    setting = make_setting("DeepSeek-R1", "H200-SXM", assumptions="achievable")
    work = compile_workload(setting.model, setting.assumptions)
    share = half_read_share(work, np.array([64.0, 8192.0]))
    assert share[0] == pytest.approx(0.637945 / 0.868916, rel=1e-5)
    assert share[1] == pytest.approx(1.0, abs=1e-9)


def test_large_steps_hide_the_exchange_and_small_ones_pay_a_second_weight_read():
    # DeepSeek-R1 FP8 on 16 H200 under SGLang: at 16,384 sequences the expert exchange
    # (about 27 % of the step) hides under the other micro-batch and the step is faster; at
    # 256 the two halves each read nearly every expert and the step is slower
    for batch, faster in ((16384, True), (256, False)):
        one = ie.point("DeepSeek-R1", "H200-SXM", batch=batch, **SGLANG)
        two = ie.point("DeepSeek-R1", "H200-SXM", batch=batch, two_batch_overlap=True, **SGLANG)
        assert (two.latency_s < one.latency_s) == faster
        # it hides no more than the exchange: what collectives it shows are at most before
        assert two.collective_bandwidth_s <= one.collective_bandwidth_s
        assert sum(two[p] for p in ADDITIVE_PARTS) == pytest.approx(two.latency_s, rel=1e-12)


def test_the_exchange_is_the_dispatch_and_the_combine():
    setting = make_setting(
        "DeepSeek-R1", "H200-SXM", assumptions="achievable", engine="sglang", two_batch_overlap=True
    )
    work = compile_workload(setting.model, setting.assumptions)
    model = StepModel(work, setting.gpu, setting.assumptions, integer_layouts=True)
    part = model.pipeline_part(16, 4096, 1, 1000.0, 1)
    lat, bw = exchange_terms_s(model, part, 16.0)
    names = {c.what for c in part.shared_calls}
    assert {"expert dispatch", "expert combine"} <= names
    exchange = [c for c in part.shared_calls if c.what.startswith("expert ")]
    assert lat + bw == pytest.approx(sum(float(c.time_s()) for c in exchange), rel=1e-9)
    assert lat > 0 and bw > lat


def test_without_the_option_a_step_is_one_batch():
    setting = make_setting("DeepSeek-R1", "H200-SXM", assumptions="achievable", engine="sglang")
    work = compile_workload(setting.model, setting.assumptions)
    model = StepModel(work, setting.gpu, setting.assumptions, integer_layouts=True)
    part = model.pipeline_part(16, 4096, 1, 1000.0, 1)
    assert exchange_terms_s(model, part, 16.0) == (0.0, 0.0)
    assert model.engine is not None and model.engine.micro_batches(part, 16.0) == 1.0


@pytest.mark.parametrize(
    "args, says",
    [
        (["DeepSeek-R1", "-H", "H200-SXM", "--assumptions", "achievable"], "trtllm engine"),
        (["DeepSeek-R1", "-H", "H200-SXM"], "ideal preset"),
        (
            [
                "DeepSeek-R1",
                "-H",
                "H200-SXM",
                "--engine",
                "sglang",
                "--clock",
                "kernel",
                "--assumptions",
                "achievable",
            ],
            "kernel clock",
        ),  # fmt: skip
        (
            ["Llama 3 70B", "-H", "H200-SXM", "--assumptions", "achievable", "--engine", "vllm"],
            "no routed experts",
        ),  # fmt: skip
        (
            ["DeepSeek-R1", "-H", "MI300X", "--assumptions", "achievable", "--engine", "sglang"],
            "NVLink switch",
        ),  # fmt: skip
    ],
)
def test_where_no_engine_overlaps_the_option_is_refused(args, says):
    out = CliRunner().invoke(
        main, ["point", *args, "--gpus", "16", "--batch", "64", "--two-batch-overlap"]
    )
    assert out.exit_code == 2
    lines = out.output.strip().splitlines()
    assert len(lines) == 1 and "--two-batch-overlap" in lines[0] and says in lines[0]


def test_figures_with_overlap_are_outside_every_measured_class():
    two = ie.point("DeepSeek-R1", "H200-SXM", batch=4096, two_batch_overlap=True, **SGLANG)
    assert two.support == "extrapolating"
    assert (
        "two_batch_overlap=True"
        in make_setting(
            "DeepSeek-R1",
            "H200-SXM",
            assumptions="achievable",
            engine="sglang",
            two_batch_overlap=True,
        ).assumptions.label
    )


@pytest.mark.parametrize(
    "notes, said",
    [
        ("SGLang 0.5.3; --enable-two-batch-overlap --tp 8", True),
        ("enable_two_batch_overlap: false", False),
        ("two-batch overlap (TBO)", True),
        ("without two-batch overlap", False),
        ("no TBO", False),
        ("--enable-dbo", True),
        ("enable_dbo=True", True),
        ("--no-enable-dbo", False),
        ("dual-batch overlap", True),
        ("TBOX turbo", None),
    ],
)
def test_a_measured_row_states_two_batch_overlap_on_or_off(notes, said):
    from inference_econ.measured.overlap_words import overlap_of

    assert overlap_of("", None, notes, "a row") is said


def test_a_measured_row_runs_the_overlap_it_states(tmp_path):
    # AIConfigurator's first SGLang DeepSeek run (8 H200, mean TPOT) at 64 clients with
    # attention DP, stated with two-batch overlap, without it, and under TensorRT-LLM (no such
    # mode): 64 sequences over 8 ranks are small steps, which the second expert read slows
    import pandas as pd

    from inference_econ.api import compare_measured
    from inference_econ.model.assumptions import preset

    runs = pd.read_csv("tests/data/aic_silicon_runs.csv.gz")
    first = runs[runs.engine.str.contains("SGLang") & runs.model.str.contains("DeepSeek")]
    rows = first[first.metric == "mean_TPOT"].iloc[[0, 0, 0]].copy()
    rows["parallelism"], rows["batch_or_concurrency"] = "TP8 attn-DP EP", "64"
    rows["notes"] = ["--enable-two-batch-overlap", "", "two-batch overlap"]
    rows["engine"] = ["SGLang 0.5.9", "SGLang 0.5.9", "TensorRT-LLM 1.2"]
    path = tmp_path / "rows.csv"
    rows.to_csv(path, index=False)
    t = compare_measured(path, preset("achievable")).table
    assert t["engine"].iloc[0] == "sglang, two-batch overlap as stated"
    assert t["engine"].iloc[1] == "sglang"
    assert t["predicted"].iloc[0] > 1.2 * t["predicted"].iloc[1]
    assert t["status"].iloc[2].startswith("unresolved: engine 'trtllm': the row states two-batch")
    # under the kernel clock (its tables time TensorRT-LLM) the stated overlap is the row's
    # reason, and the other rows go on
    k = compare_measured(path, preset("achievable").replace(kernel_tables=True)).table
    assert "not priced by the kernel clock" in k["status"].iloc[0]
    assert k["status"].iloc[1] == "ok"


def test_the_ideal_bound_beside_an_overlapped_plan_charges_the_exchange_in_series():
    setting = make_setting(
        "DeepSeek-R1", "H200-SXM", assumptions="achievable", engine="sglang", two_batch_overlap=True
    )
    from inference_econ.api import ideal_setting

    bound = ideal_setting(setting)
    assert bound.assumptions.name == "refined" and not bound.assumptions.two_batch_overlap
    assert bound.assumptions.engine is None


def test_the_operation_list_shows_what_of_the_exchange_the_overlap_leaves():
    # DeepSeek-R1 on 16 H200 at 4,096 sequences: the dispatch and combine hide whole under the
    # other micro-batch's work, the feed-forward all-reduce stays as it is without the
    # overlap, and the operations still add up to the step
    from inference_econ.api import operations

    kw = dict(assumptions="achievable", engine="sglang")
    one = make_setting("DeepSeek-R1", "H200-SXM", deepep=True, **kw)
    two = make_setting("DeepSeek-R1", "H200-SXM", two_batch_overlap=True, **kw)
    a = operations(one, 16, 4096, discrete=True).set_index("operation")
    b = operations(two, 16, 4096, discrete=True).set_index("operation")
    for name in ("expert dispatch", "expert combine"):
        assert a.loc[name, "time_s"] > 0.005 and b.loc[name, "time_s"] == 0.0
    ffn = "all-reduce (feed-forward)"
    assert b.loc[ffn, "time_s"] == pytest.approx(a.loc[ffn, "time_s"], rel=1e-9)
    step = ie.point("DeepSeek-R1", "H200-SXM", batch=4096, two_batch_overlap=True, **SGLANG)
    assert b["time_s"].sum() == pytest.approx(step.latency_s, rel=1e-9)


def test_the_user_guide_prints_the_steps_it_states():
    """The guide's example of two-batch overlap (DeepSeek-R1 on 16 H200 under SGLang): its
    step at 4,096 and 256 sequences overlapped, over DeepEP in one batch and with SGLang's
    default all-gather, each as ``point`` prints it (to the 0.1 ms the guide gives)."""
    import re
    from pathlib import Path

    guide = (Path(__file__).parents[1] / "docs" / "user-guide.md").read_text()
    said = re.search(
        r"prints a step of ([\d.]+) ms against ([\d.]+) ms over DeepEP in one batch "
        r"\(`--deepep`\) and ([\d.]+) ms\nwith SGLang's default all-gather \(at a batch of "
        r"256: ([\d.]+) against ([\d.]+) and ([\d.]+) ms\)",
        guide,
    )
    assert said is not None
    runs = [dict(two_batch_overlap=True), dict(deepep=True), {}]
    steps = [
        round(ie.point("DeepSeek-R1", "H200-SXM", batch=b, **SGLANG, **kw).latency_s * 1e3, 1)
        for b in (4096, 256)
        for kw in runs
    ]
    assert steps == [float(x) for x in said.groups()]
