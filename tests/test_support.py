"""Calibration classes and their support (serving/support.py, docs/model.md §F12 "Support"):
the rule on a small table by hand, the shipped table's labels, and the outputs that carry them."""

from __future__ import annotations

import math

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.serving import interval_table as ivt
from inference_econ.serving import intervals as iv
from inference_econ.serving import support as sp
from inference_econ.serving.setting import make_setting


def _cls(**kw):
    base = dict(architecture="dense", layout="TP", generation="Hopper", engine="trtllm")
    return sp.CalibrationClass("throughput", **{**base, "scenario": "offline", **kw})


#: Two classes in support (40 and 25 residuals), one thin (5), a pooled TTFT band.
SMALL = {
    "min_rows": 20,
    "widening": 1.5,
    "pooled": {"TTFT": {"q05": -0.5, "q10": -0.3, "q90": 0.6, "q95": 0.9, "rows": 100}},
    "classes": [
        {**_cls().__dict__, "q05": -0.2, "q10": -0.1, "q90": 0.1, "q95": 0.2, "rows": 40},
        {
            **_cls(generation="Blackwell").__dict__,
            **{"q05": -0.3, "q10": -0.2, "q90": 0.2, "q95": 0.4, "rows": 25},
        },
        {**_cls(engine="vllm").__dict__, "rows": 5},
    ],
}


def _ends(band):
    return (band.q05, band.q10, band.q90, band.q95)


def test_the_class_rule_by_hand():
    t = sp.parse_classes(SMALL, "small")
    # in support: its own conformal band, untouched
    s = t.support(_cls())
    assert s.status == "in support" and s.label() == "in support (40 residuals)"
    assert _ends(s.band) == (-0.2, -0.1, 0.1, 0.2)
    # thin (5 residuals): the nearest class in support is one dimension away (the engine),
    # 1.5 x as wide about the middle of its 90 % interval (0)
    s = t.support(_cls(engine="vllm"))
    assert s.status == "near" and s.rows == 5 and s.label() == "near (5 residuals)"
    assert _ends(s.band) == pytest.approx((-0.3, -0.15, 0.15, 0.3))
    # empty, one dimension from Blackwell/trtllm (two from Hopper/trtllm): 1.5 x as wide about
    # its 90 % middle 0.05 (-0.475, -0.325, 0.275, 0.575), then moved up 0.025 so that its
    # 80 % interval is centred on the expected figure
    s = t.support(_cls(generation="Blackwell", engine="vllm"))
    assert s.status == "extrapolating" and s.rows == 0
    assert _ends(s.band) == pytest.approx((-0.45, -0.3, 0.3, 0.6))
    # empty, two dimensions from both: the wider (Blackwell's 0.7), 1.5 ** 2 as wide
    # (-0.7375, -0.5125, 0.3875, 0.8375), centred: up 0.0625
    s = t.support(_cls(architecture="MoE", generation="Ada"))
    assert _ends(s.band) == pytest.approx((-0.675, -0.45, 0.45, 0.9))
    assert s.label() == "extrapolating"
    assert s.band.source.endswith("2 dimensions away, 2.25 x as wide, centred")
    # no class of the kind in support: its pooled band, widened once (middle 0.2), not moved
    # (all the kind's residuals: the model's bias over every class of it)
    s = sp.CalibrationClass("TTFT", scenario="server")
    assert _ends(t.support(s).band) == pytest.approx((-0.85, -0.55, 0.8, 1.25))
    # each kind its own factor, and the pooled band one of its own
    per_kind = {**SMALL, "widening": {"throughput": 2.0, "TTFT": 1.0}}
    per_kind["pooled"] = {"TTFT": {**SMALL["pooled"]["TTFT"], "widening": 1.2}}
    t2 = sp.parse_classes(per_kind, "per kind")
    assert _ends(t2.support(_cls(engine="vllm")).band) == pytest.approx((-0.4, -0.2, 0.2, 0.4))
    assert _ends(t2.support(s).band) == pytest.approx((-0.64, -0.4, 0.68, 1.04))
    with pytest.raises(ie.SpecError, match="no band of TPOT"):
        t.support(sp.CalibrationClass("TPOT"))


def test_drift_raises_every_class_high_end():
    drifting = {**SMALL, "drift": {"throughput": {"log_per_round": 0.1, "rounds": 2}}}
    t = sp.parse_classes(drifting, "small")
    assert _ends(t.band(_cls())) == pytest.approx((-0.2, -0.1, 0.3, 0.4))
    assert _ends(t.band(_cls(), rounds=1)) == pytest.approx((-0.2, -0.1, 0.2, 0.3))


def test_a_bad_class_table_is_refused_naming_the_field():
    bad = {**SMALL, "classes": [{**SMALL["classes"][0], "q10": 0.5}]}
    with pytest.raises(ie.SpecError, match="quantiles out of order"):
        sp.parse_classes(bad, "bad")
    with pytest.raises(ie.SpecError, match=r"classes\[0\].kind"):
        sp.parse_classes({"classes": [{"kind": "speed", "rows": 3}]}, "bad")
    with pytest.raises(ie.SpecError, match=r"classes\[0\].models.*a list of model names"):
        sp.parse_classes({**SMALL, "classes": [{**SMALL["classes"][0], "models": "A"}]}, "bad")
    with pytest.raises(ie.SpecError, match="min_models.*whole number >= 1"):
        sp.parse_classes({**SMALL, "min_models": 0}, "bad")
    # a borrowed band is never narrower than the band it borrows; every kind sized has a factor
    with pytest.raises(ie.SpecError, match=r"'widening'.*0.9"):
        sp.parse_classes({**SMALL, "widening": 0.9}, "bad")
    with pytest.raises(ie.SpecError, match=r"'widening.TTFT': is missing"):
        sp.parse_classes({**SMALL, "widening": {"throughput": 1.5}}, "bad")
    with pytest.raises(ie.SpecError, match=r"'widening.speed': is not a kind"):
        sp.parse_classes({**SMALL, "widening": {"speed": 1.5}}, "bad")
    with pytest.raises(ie.SpecError, match=r"'pooled.TTFT.widening'"):
        bad = {"TTFT": {**SMALL["pooled"]["TTFT"], "widening": "wide"}}
        sp.parse_classes({**SMALL, "pooled": bad}, "bad")


def test_layout_and_engine_classes():
    assert sp.layout_class(True, spread=True) == "DP+EP"
    assert sp.layout_class(False, spread=True) == "TP"
    assert sp.layout_class(True, pipeline=2, spread=True) == "PP"
    assert sp.layout_class(True, 4, True, disaggregated=True) == "disaggregated"
    assert [sp.engine_family(e) for e in ("vllm@0.10", "engines/sglang.yaml", None)] == [
        "vllm",
        "sglang",
        "unstated",
    ]
    assert sp.generation("H20") == "Hopper" and sp.generation("Some-New-GPU") == "Some-New-GPU"


def test_shipped_classes_in_support_keep_their_band_and_empty_ones_extrapolate():
    """Llama 3.3 70B on H100s (TensorRT-LLM, dense, tensor-parallel) is in support and takes
    its class's own quantiles as shipped; on A100s no residual is of its class (Ampere):
    extrapolating, on the wider rule, and its outputs say so."""
    t = sp.classes()
    assert t.min_rows == 20 and set(t.widening) == set(ivt.KINDS)
    grows = [w for w in t.widening.values()]
    assert all(1.0 <= a <= b <= 4.0 for w in grows for a, b in zip(w, w[1:]))
    assert all(1.0 <= f <= 4.0 for f in t.pooled_widening.values())
    assert "docs/validation_residuals.csv" in t.provenance["residuals"]
    assert t.provenance["command"].startswith("python benchmarks/interval_coverage.py")
    h100 = make_setting("Llama 3.3 70B", "H100", assumptions="achievable", weight_bits=8)
    a100 = make_setting("Llama 3.3 70B", "A100-SXM-80GB", assumptions="achievable", weight_bits=8)
    cls = sp.figure_class(h100, "throughput")
    assert cls.label() == "dense / TP / Hopper / trtllm / offline"
    s = t.support(cls)
    assert s.status == "in support" and s.rows == t.counts[cls.key()] >= 20
    assert iv.bands(h100, "throughput", [8], ["compute"])[0] == t.bands[cls.key()]  # no drift
    far = t.support(sp.figure_class(a100, "throughput"))
    assert far.status == "extrapolating" and far.rows == 0
    width = far.band.q95 - far.band.q05
    nearest = sp.nearest_bands(t.bands, far.cls.key())
    factor = t.multiplier("throughput", nearest[0]) if nearest else math.nan
    assert nearest is not None and width == pytest.approx(
        factor * (nearest[1].q95 - nearest[1].q05)
    )
    assert far.band.q10 + far.band.q90 == pytest.approx(0.0)  # centred on the expected figure
    assert width >= s.band.q95 - s.band.q05  # at least its nearest class's, wider further off
    assert t.multiplier("throughput", 3) > t.multiplier("throughput", 1) >= 1.0
    df = ie.points(a100, gpus=8, batch=np.array([1.0]))
    assert df["support"].iloc[0] == "extrapolating"
    note = iv.coverage_note(a100)
    assert note.startswith("Extrapolating: the class throughput: dense / TP / Ampere / trtllm")
    assert "\n" not in note and iv.coverage_note(h100) is None
    assert (
        ie.points(h100, gpus=8, batch=np.array([1.0]))["support"].iloc[0].startswith("in support (")
    )


def test_a_fixed_batchs_step_takes_its_closed_loop_and_offline_classes():
    """DeepSeek-R1 on 8 B200 at batch 1 (tensor-parallel, TensorRT-LLM): its speed is a fixed
    batch's step, which the residuals see two ways: as a time per token at a concurrency (the
    closed-loop class, in support: AIConfigurator's runs of three MoE models; 90 %: x0.60-x1.25
    of TPOT as shipped) and as an offline throughput (x0.78-x1.13 of the rate). Its band is the
    envelope of both: 113-242 tok/s at 145, and its throughput and price take the same band,
    so a batch of one's throughput has its speed's interval exactly. The server class has no
    TPOT band of its own for it: the nearest, a dense one, centred, is about twice as wide.
    Its time to first token and throughput keep the server and offline classes."""
    t = sp.classes()
    r1 = make_setting("DeepSeek-R1", "B200", assumptions="achievable")
    tpot = sp.figure_class(r1, "TPOT")
    assert tpot.label() == "MoE / TP / Blackwell / trtllm / closed_loop"
    own = t.support(tpot)
    assert own.status == "in support" and own.band == t.bands[tpot.key()]
    assert len(t.models[tpot.key()]) >= 3
    server = t.support(sp.figure_class(r1, "TPOT", scenario="server"))
    assert server.status == "near" and "dense / TP / Blackwell" in server.band.source
    assert server.band.q95 - server.band.q05 > 1.9 * (own.band.q95 - own.band.q05)
    assert server.band.q10 + server.band.q90 == pytest.approx(0.0)
    assert sp.figure_class(r1, "TTFT").scenario == "server"
    rate_class = sp.figure_class(r1, "throughput")
    assert rate_class.scenario == "offline"
    df = ie.points(r1, gpus=8, batch=np.array([1.0]))
    row = df.iloc[0]
    speed, low, high = row[["tokens_per_s", "tokens_per_s_low90", "tokens_per_s_high90"]]
    per_round, as_of = t.drift.get("TPOT", (0.0, 0.0))
    time = own.band.drifted(per_round * as_of)
    rate = t.band(rate_class)
    # a time's slow end is the later of the TPOT's and the inverted rate's: the speed's low end
    assert low == pytest.approx(speed * np.exp(-max(time.q95, -rate.q05)))
    assert high == pytest.approx(speed * np.exp(-min(time.q05, -rate.q95)))
    assert low == pytest.approx(113.16, rel=1e-3) and high == pytest.approx(242.10, rel=1e-3)
    for end in ("low90", "high90", "low80", "high80"):  # one step: one band
        assert row[f"throughput_tokens_per_s_{end}"] == pytest.approx(row[f"tokens_per_s_{end}"])
    assert row["usd_per_mtok_low90"] == pytest.approx(row["usd_per_mtok"] * speed / high)


def test_a_closed_loop_run_is_classed_as_one():
    """32 clients in a closed loop are read in the closed-loop class (the scenario of
    AIConfigurator's measured runs), a Poisson load in the server class."""
    load = dict(gpus=1, layout="TP1", input_lengths="1000", output_lengths="200", requests=200)
    closed = ie.simulate_load("Llama 3.1 8B", "H100", **load, concurrency=32, engine="vllm")
    assert iv.load_where(closed) == (["TP"], "closed_loop")
    poisson = ie.simulate_load(
        "Llama 3.1 8B", "H100", **load, arrival_rate_per_s=2.0, engine="vllm"
    )
    assert iv.load_where(poisson) == (["TP"], "server")
    assert iv.load_support(closed).cls.scenario == "closed_loop"


def test_a_run_under_load_is_classed_by_the_layout_it_describes():
    """``described_layout`` reads ``EngineLayout.describe``'s text: pipeline stages, attention
    narrower than the tensor group (an MoE model's), a prefill pool."""
    assert iv.described_layout("8 GPUs: TP2 (attention TP2), PP4, 1-D", False) == "PP"
    assert iv.described_layout("8 GPUs: TP8 (attention TP1), PP1, 1-D", True) == "DP+EP"
    assert iv.described_layout("8 GPUs: TP8 (attention TP1), PP1, 1-D", False) == "TP"
    assert iv.described_layout("", True, disaggregated=True) == "disaggregated"
    assert iv.described_layout(None, False) == "TP"


def test_a_tables_rows_are_classed_by_the_degrees_they_state():
    moe = make_setting("Mixtral 8x7B", "H100", assumptions="achievable")
    columns = {
        "pipeline_degree": np.array([1.0, 2.0, 1.0, 1.0]),
        "tensor_degree": np.array([8.0, 4.0, 8.0, 8.0]),
        "attention_degree": np.array([8.0, 4.0, 2.0, 8.0]),
        "expert_degree": np.array([1.0, 1.0, 1.0, 8.0]),
    }
    assert list(sp.row_layouts(columns, 4, moe)) == ["TP", "PP", "DP+EP", "DP+EP"]
    dense = make_setting("Llama 3 8B", "H100", assumptions="achievable")
    assert list(sp.row_layouts(columns, 4, dense)) == ["TP", "PP", "TP", "TP"]


def test_a_shipped_class_of_one_model_sizes_that_models_figures_alone():
    """MoE attention-DP + EP throughput on Blackwell under TensorRT-LLM, Server, has residuals
    of DeepSeek-R1 alone (MLPerf): a DeepSeek-R1 figure is in support on its band, a
    Qwen3-235B-A22B figure of the same class is near, on the widest nearest band of classes it
    may take (never a class of fewer than three other models), centred on the expected figure
    and widened by the shipped factor a dimension away."""
    t = sp.classes()
    assert t.min_models == 3
    r1 = make_setting("DeepSeek-R1", "B200", assumptions="achievable")
    qwen = make_setting("Qwen3-235B-A22B", "B200", assumptions="achievable")
    cls = sp.figure_class(r1, "throughput", "DP+EP", "server")
    assert cls.label() == "MoE / DP+EP / Blackwell / trtllm / server"
    assert t.models[cls.key()] == {"DeepSeek-R1"}
    own = t.support(cls)
    assert own.status == "in support" and own.band == t.bands[cls.key()]
    other = t.support(sp.figure_class(qwen, "throughput", "DP+EP", "server"))
    assert other.status == "near" and other.rows == own.rows
    skip = {k for k, of in t.models.items() if len(of) < 3 and "Qwen3-235B-A22B" not in of}
    assert cls.key() in skip
    d, widest = sp.nearest_bands(t.bands, cls.key(), skip)
    assert other.band != own.band
    middle = (widest.q05 + widest.q95) / 2
    factor = t.multiplier("throughput", d)
    assert other.band.q95 - other.band.q05 == pytest.approx(factor * (widest.q95 - widest.q05))
    assert other.band.q10 + other.band.q90 == pytest.approx(0.0)  # centred
    shift = middle + factor * ((widest.q10 + widest.q90) / 2 - middle)
    assert other.band.q95 == pytest.approx(middle + factor * (widest.q95 - middle) - shift)
    assert "of 1 model (in support from 20 configurations of 3 models" in sp.support_line(other)


def test_a_measured_rows_class_carries_its_model():
    """A measured row's calibration class carries its model's name, as the class table lists
    models: TensorRT-LLM 1.2's MoE figures on 4 B200 as DEP4 are in support on a class of
    four models' residuals (the page's own and MLPerf's), and the same figures as Server ones
    (a class of DeepSeek-R1's MLPerf residuals alone) in support for DeepSeek-R1, near for
    Qwen3-235B-A22B."""
    from dataclasses import replace
    from pathlib import Path

    from inference_econ.measured.intervals import row_class
    from inference_econ.measured.reading import load_measured

    data = Path(__file__).parent / "data" / "trtllm_perf_overview_moe.csv"
    rows = [r for r in load_measured(data) if r.gpu.name == "B200-HGX"]
    offline, server = {}, {}
    for r in rows:
        cls = row_class(r, "throughput")
        if cls.layout == "DP+EP":
            assert cls.model == r.arch.name
            offline[cls.model] = sp.classes().support(cls).status
            server[cls.model] = sp.classes().support(replace(cls, scenario="server")).status
    assert set(offline.values()) == {"in support"} and len(offline) >= 3
    assert server["DeepSeek-R1"] == "in support" and server["Qwen3-235B-A22B"] == "near"


def test_a_decode_points_note_names_a_class_of_the_figures_it_shows():
    """A decode point shows speeds, latencies and prices (TPOT and throughput bands), no time
    to first token: its "Near:" line names the class its support row counts, which had been
    the TTFT class (4 residuals) beside a support of 14."""
    from click.testing import CliRunner

    from inference_econ.cli import main

    args = ["point", "gpt-oss-120b", "-H", "H200", "--gpus", "4", "--batch", "1"]
    out = CliRunner().invoke(main, [*args, "--assumptions", "achievable", "--discrete"]).output
    support = next(line for line in out.splitlines() if line.startswith("support "))
    near = next(line for line in out.splitlines() if line.startswith("Near: the class "))
    assert "TTFT" not in near and "near (14 residuals)" in support, (support, near)
    assert near.startswith(
        "Near: the class throughput: MoE / TP / Hopper / trtllm / offline has 14"
    )
    # a prefill's line still weighs every kind (its time is a time to first token)
    setting = make_setting("gpt-oss-120b", "H200", assumptions="achievable")
    assert "TTFT" in iv.coverage_note(setting)


def test_a_frontiers_note_names_a_class_of_its_rows_and_figures():
    """A decode frontier shows speeds and prices of many layouts, no time to first token: its
    "Near:" line names the least supported class among its rows' own (their layouts, the
    kinds of the figures shown), as their support column counts them. It had named the TTFT
    class of a tensor-parallel layout (4 residuals) beside rows near on 14 and 17."""
    import io

    import pandas as pd
    from click.testing import CliRunner

    from inference_econ.cli import main

    args = ["frontier", "DeepSeek-R1", "-H", "H200", "--weight-bits", "8", "--discrete", "-q"]
    out = CliRunner().invoke(main, [*args, "--assumptions", "achievable", "--format", "csv"])
    rows = pd.read_csv(io.StringIO(out.output), comment="#")
    assert set(rows.support) == {"near (14 residuals)", "near (17 residuals)"}
    near = [line for line in out.output.splitlines() if "Near: the class " in line]
    assert len(near) == 1 and "TTFT" not in near[0], near
    assert "Near: the class throughput: MoE / TP / Hopper / trtllm / offline has 14" in near[0]


def test_an_attention_dp_points_note_names_its_own_layouts_class():
    """DeepSeek-R1 on 8 H200 at batch 2,048 attends on every GPU alone with its experts EP8
    (the DP+EP class, near on 17 residuals): its "Near:" line names that class, where it had
    named the tensor-parallel one (14) beside a support row of 17."""
    from click.testing import CliRunner

    from inference_econ.cli import main

    args = ["point", "DeepSeek-R1", "-H", "H200", "--gpus", "8", "--batch", "2048"]
    args += ["--weight-bits", "8", "--discrete", "--assumptions", "achievable"]
    out = CliRunner().invoke(main, args).output
    lines = out.splitlines()
    assert next(line for line in lines if line.startswith("attention_degree")).split()[1] == "1"
    support = next(line for line in lines if line.startswith("support "))
    near = next(line for line in lines if line.startswith("Near: the class "))
    assert "near (17 residuals)" in support, support
    assert near.startswith("Near: the class throughput: MoE / DP+EP / Hopper / trtllm / offline")
    assert " has 17 measured residuals" in near, near


def test_a_profile_of_ones_own_is_no_shipped_class_and_its_first_line_names_it(tmp_path):
    """A profile calibrate wrote (``trtllm (calibrated)``, a file outside the catalog) had been
    read as TensorRT-LLM's class: "in support (86 residuals)" and the shipped profile's band,
    which no residual of it measures, and a first line naming "trtllm". It is an engine of
    its own: its figures borrow a neighbour's band, widened, and say they extrapolate."""
    import inference_econ as ie
    from inference_econ.serving.figure_labels import figures_line
    from inference_econ.serving.support import figure_class, support_of

    path = tmp_path / "mine.yaml"
    path.write_text("name: trtllm (calibrated)\nderive_from: trtllm\nstep_overhead_s: 0.001\n")
    own = ie.make_setting("Llama 3.1 8B", "H100", assumptions="achievable", engine=str(path))
    shipped = ie.make_setting("Llama 3.1 8B", "H100", assumptions="achievable")
    assert figure_class(own, "TPOT").engine == "trtllm (calibrated)"
    assert figure_class(shipped, "TPOT").engine == "trtllm"
    assert support_of(own, ["TPOT"]).label() == "extrapolating"
    assert support_of(shipped, ["TPOT"]).label().startswith("in support")
    assert figures_line(own).startswith(
        "Expected figures: achievable preset, engine profile trtllm (calibrated);"
    )
