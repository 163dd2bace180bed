"""Intervals of expected figures (docs/model.md §F12): the shipped table, pooling and the
outside-coverage rule, the interval columns of every command, and capacity's plans."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import EXAMPLE_WHOLE_RUNS, benchmark_script, whole_runs_of

import inference_econ as ie
from inference_econ.api.labels import prefill_intervals
from inference_econ.api.views import prefill
from inference_econ.output.ranges import ranged, ranged_columns
from inference_econ.serving import interval_table as ivt
from inference_econ.serving import intervals as iv
from inference_econ.serving.setting import make_setting

#: A small table: two levels of one kind, an unseen stratum, a widening of 1.5 (quantiles
#: of log(measured / predicted)).
SMALL = {
    "min_rows": 30,
    "unseen_widening": 1.5,
    "fitted_gpus": ["H100-SXM"],
    "fitted_models": ["Llama 3 8B"],
    "strata": [
        {"kind": "throughput", "q05": -0.4, "q10": -0.3, "q90": 0.1, "q95": 0.2, "rows": 300},
        {
            "kind": "throughput",
            "architecture": "dense",
            "bound": "compute",
            "seen": True,
            **{"q05": -0.2, "q10": -0.1, "q90": 0.05, "q95": 0.1, "rows": 80},
        },
        {
            "kind": "throughput",
            "architecture": "dense",
            "seen": False,
            **{"q05": -0.5, "q10": -0.2, "q90": 0.0, "q95": 0.1, "rows": 40},
        },
    ],
}


def test_a_sparse_stratum_pools_upward_and_outside_coverage_widens():
    t = ivt.parse_table(SMALL, "small")
    # the compute-bound dense stratum is in the table (nodes pooled: '*')
    b = t.band(ivt.Stratum("throughput", "dense", "compute", "many nodes", True))
    assert (b.q05, b.q95) == (-0.2, 0.1) and b.rows == 80
    # memory-bound is not: pooled up to the kind alone (no dense-seen entry without a bound)
    b = t.band(ivt.Stratum("throughput", "dense", "memory", "one node", True))
    assert (b.q05, b.q10, b.q90, b.q95) == (-0.4, -0.3, 0.1, 0.2)
    # unseen: the seen interval 1.5 x as wide about the middle of its 90 % interval (-0.05),
    # or the unseen stratum's where wider: -0.275, -0.125, 0.1, 0.175 against -0.5, -0.2, 0, 0.1
    b = t.band(ivt.Stratum("throughput", "dense", "compute", "one node", False))
    assert (b.q05, b.q10, b.q90, b.q95) == pytest.approx((-0.5, -0.2, 0.1, 0.175))
    with pytest.raises(ie.SpecError, match="no entry for TTFT"):
        t.band(ivt.Stratum("TTFT"))


def test_software_drift_raises_the_high_end_by_rounds_and_a_bad_drift_is_refused():
    drifting = {**SMALL, "drift": {"throughput": {"log_per_round": 0.08, "rounds": 3}}}
    t = ivt.parse_table(drifting, "small")
    s = ivt.Stratum("throughput", "dense", "compute", "one node", True)
    # the table's own rounds (3): high end 0.05 + 0.24, 0.1 + 0.24; the low end stays
    b = t.band(s)
    assert (b.q05, b.q10, b.q90, b.q95) == pytest.approx((-0.2, -0.1, 0.29, 0.34))
    assert t.band(s, rounds=1).q95 == pytest.approx(0.18)  # a figure one round later
    assert t.band(s, rounds=0) == ivt.parse_table(SMALL, "small").band(s)
    with pytest.raises(ie.SpecError, match=r"drift.throughput.log_per_round"):
        ivt.parse_table({**SMALL, "drift": {"throughput": {"log_per_round": 9, "rounds": 1}}}, "x")


def test_the_shipped_table_covers_every_kind_with_ordered_quantiles():
    t = ivt.table()
    assert t.provenance["command"].startswith("python benchmarks/measured_validation.py")
    assert "benchmarks_train_mlperf_v50.csv" in t.provenance["calibration"]
    for kind in ivt.KINDS:
        b = t.band(ivt.Stratum(kind, "MoE", "memory", "many nodes", True))  # pools to the kind
        assert b.q05 <= b.q10 < 0.0 < b.q90 <= b.q95 and b.rows >= t.min_rows
    assert "H100-SXM" in t.fitted_gpus and t.unseen_widening > 1.0


def test_expected_points_carry_intervals_and_bounds_none():
    expected = make_setting("Llama 3.3 70B", "H100", assumptions="achievable", weight_bits=8)
    df = ie.points(expected, gpus=8, batch=np.array([1.0, 64.0]))
    for name in ("tokens_per_s", "usd_per_mtok", "latency_s"):
        low80, high80, low90, high90 = (df[c].to_numpy() for c in iv.interval_columns(name))
        assert (low90 <= low80).all() and (low80 < high80).all() and (high80 <= high90).all()
    # a speed per request is 1 / the time per token: its interval is the inverse one
    assert np.allclose(df["tokens_per_s_low90"] * df["latency_s_high90"], 1.0)
    assert np.allclose(df["tokens_per_s_high80"] * df["latency_s_low80"], 1.0)
    bound = ie.points("Llama 3.3 70B", "H100", gpus=8, batch=64.0, weight_bits=8)
    assert not any(c.endswith("_low90") for c in bound.columns)  # a bound has no interval
    assert iv.figures_line(expected).startswith("Expected figures: achievable preset, engine")
    assert iv.figures_line("paper").startswith("Ideal bound: paper preset")


def test_text_tables_show_ranges():
    row = pd.Series(
        {"ttft_s": 0.5, **dict(zip(iv.interval_columns("ttft_s"), [0.4, 0.6, 0.3, 0.9]))}
    )
    assert ranged(row).to_dict() == {"ttft_ms": "500 (80 %: 400-600; 90 %: 300-900)"}
    df = pd.DataFrame([row.to_dict()])
    assert list(ranged_columns(df).iloc[0]) == [0.5, "300-900"]
    # a negative end (a headroom) is not written with a hyphen that reads as a minus sign:
    # "-0.05018-0.7373" had been printed
    ends = dict(zip(iv.interval_columns("load_headroom"), [-0.05018, 0.7373, -0.1, 0.8]))
    text = ranged({"load_headroom": 0.05487, **ends})["load_headroom"]
    assert text == "0.05487 (80 %: -0.05018 to 0.7373; 90 %: -0.1 to 0.8)", text


@pytest.fixture(scope="module")
def plan():
    """A small expected capacity plan (Llama 3 8B on one H100 per instance)."""
    return ie.capacity(
        "Llama 3 8B",
        "H100",
        sizes=[1],
        arrival_rate_per_s=12,
        input_lengths="500",
        output_lengths="50",
        requests=300,
        slo_tpot_p99_s=0.05,
    )


def test_capacity_answers_expected_confident_and_bound(plan):
    s = plan.summary()
    assert s["assumptions"] == "achievable, engine trtllm" and s["bound_assumptions"] == "refined"
    c, b = plan.confident, plan.bound
    assert c.level == 90 and 0 < c.factor <= 1.0
    assert c.deployment.instances >= plan.deployment.instances
    # the targets hold at the pessimistic end: what the instances hold there covers the load
    assert c.max_rate_per_s >= plan.rate_per_s
    assert s["max_rate_per_s_low90"] == pytest.approx(plan.max_rate_per_s * c.factor)
    assert b.result.assumptions == "refined" and b.max_rate_per_s >= plan.rate_per_s
    rows = plan.plans()
    assert list(rows["plan"].str.split(" ").str[0]) == ["expected", "90", "ideal"]
    # each plan's cost a month beside its cost an hour: 730 hours of it
    assert list(rows["monthly_usd"]) == pytest.approx(list(730.0 * rows["usd_per_hour"]))
    assert s["monthly_usd"] == pytest.approx(730.0 * s["usd_per_hour"], rel=1e-12)
    assert s["monthly_usd"] == pytest.approx(1533.0)  # one H100 at $2.10 an hour


def test_every_candidate_and_count_of_a_plan_carries_its_interval(plan):
    """Each candidate's most load one instance holds is an expected figure (a
    throughput read from its own run at that load): its interval columns are its held load's
    (``held_intervals``), the chosen row's equal to the plan's; the summary shows each
    simulated count beside its ends (never the ends alone), low <= count <= high."""
    table = plan.to_dataframe()
    ends = iv.interval_columns("max_rate_per_instance")
    assert all(c in table for c in ends)
    kept = table[~table["excluded"].astype(bool)]
    assert not kept.empty
    for row in kept.itertuples():
        low80, high80, low90, high90 = (getattr(row, c) for c in ends)
        assert low90 <= low80 <= row.max_rate_per_instance <= high80 <= high90
    chosen = table[table["chosen"]].iloc[0]
    s = plan.summary()
    assert [chosen[c] for c in ends] == pytest.approx(
        [s[c] for c in iv.interval_columns("max_rate_per_s")]
    )
    for count in ("preemptions", "rejected"):
        low80, high80, low90, high90 = (s[c] for c in iv.interval_columns(count))
        assert count in s and low90 <= low80 <= high80 <= high90
        assert low90 <= s[count] <= high90


@pytest.mark.parametrize("low", [-0.9, -0.3, -0.01, 0.2])
def test_the_confident_plan_is_never_smaller_than_the_expected_one(plan, low, monkeypatch):
    """Whatever the interval says (even a low end above the figure), the plan sized for
    confidence has at least the expected plan's instances, GPUs and price."""
    from inference_econ.optimise.confident import with_odds
    from inference_econ.serving import support as sp

    band = {"q05": low, "q10": low, "q90": max(low, 0.3), "q95": max(low, 0.3), "rows": 50}
    table = {"widening": 1.0, "pooled": {k: band for k in ivt.KINDS}}  # every class: this band
    monkeypatch.setattr(sp, "classes", lambda: sp.parse_classes(table, "test"))
    for level in (0.8, 0.9):
        odds = with_odds(plan, level).confident
        assert odds.deployment.gpus >= plan.deployment.gpus
        assert odds.usd_per_hour >= plan.result.usd_per_hour
        assert odds.max_rate_per_s >= plan.rate_per_s * min(1.0, math.exp(low)) - 1e-9
        if low < 0:
            want = math.ceil(plan.rate_per_s / (plan.max_rate_per_s * math.exp(low)) - 1e-9)
            assert odds.deployment.instances == max(plan.deployment.instances, want)
    with pytest.raises(ie.SpecError, match="confidence"):
        with_odds(plan, 0.95)


@pytest.mark.parametrize("level", [0.85, 0.5, 1.0, 90])
def test_capacity_refuses_a_confidence_between_the_levels_before_any_search(level):
    """Only the intervals' own levels size a plan; any other is refused as it is read, before a
    single candidate is simulated (it had been refused after the whole expected search)."""
    said = []
    with pytest.raises(ie.SpecError, match=r"field 'confidence': is .* \(choose 0.8 or 0.9\)"):
        ie.capacity("Llama 3.1 8B", "H100", arrival_rate_per_s=5, input_lengths="1000",
                    output_lengths="200", requests=300, slo_tpot_p99_s=0.03,
                    confidence=level, progress=said.append)  # fmt: skip
    assert said == []


@pytest.mark.parametrize("assumptions", ["refined", "paper"])
def test_capacity_refuses_a_confidence_under_an_ideal_bound_before_any_search(assumptions):
    """An ideal bound has no interval to size a plan at: a confidence given beside it is
    refused before a candidate is simulated (it had been dropped, the plan printed without it);
    left at its default, the same search runs."""
    load = dict(arrival_rate_per_s=5, input_lengths="1000", output_lengths="200", requests=300,
                slo_tpot_p99_s=0.03, assumptions=assumptions)  # fmt: skip
    said = []
    with pytest.raises(ie.SpecError, match=rf"'confidence'.*'{assumptions}' preset is an ideal"):
        ie.capacity("Llama 3.1 8B", "H100", confidence=0.8, progress=said.append, **load)
    assert said == []
    plan = ie.capacity("Llama 3.1 8B", "H100", **load)
    assert plan.confident is None and plan.deployment.gpus >= 1


def test_the_confidence_setting_takes_the_levels_the_intervals_have():
    from inference_econ.serving.figure_labels import LEVELS
    from inference_econ.settings import table

    confidence = table.BY_NAME["confidence"]
    assert LEVELS == (80, 90)
    assert confidence.levels == (0.8, 0.9)
    assert "(0.8 or 0.9;" in confidence.help


def test_the_confident_plan_states_its_support_and_says_when_it_extrapolates(plan, monkeypatch):
    """One H100 per instance, dense, tensor-parallel, TensorRT-LLM, served under load: a class
    in support as shipped; with no class in support (every kind pooled) the plan says it
    extrapolates, naming its class and what its interval was sized on."""
    from inference_econ.optimise.confident import with_odds
    from inference_econ.serving import support as sp

    c = with_odds(plan, 0.9).confident
    n = sp.classes().counts[sp.figure_class(plan.setting, "TTFT", "TP", "server").key()]
    assert c.support.startswith("in support (") and c.extrapolates == ""
    assert plan.summary()["support_at_90"] == c.support and n >= 20
    band = {"q05": -0.3, "q10": -0.2, "q90": 0.2, "q95": 0.3, "rows": 50}
    pooled = sp.parse_classes({"widening": 1.5, "pooled": dict.fromkeys(ivt.KINDS, band)}, "t")
    monkeypatch.setattr(sp, "classes", lambda: pooled)
    c = with_odds(plan, 0.9).confident
    assert c.support == "extrapolating"
    assert c.extrapolates.startswith(
        "The confident plan extrapolates. Extrapolating: the class throughput: dense / TP / "
        "Hopper / trtllm / server has no measured residual"
    )
    assert c.factor == pytest.approx(math.exp(-0.45))  # 1.5 x as wide about the middle, 0


def test_the_confident_plan_may_take_another_size_when_it_needs_fewer_spares(plan):
    """The confident plan is the cheapest at every candidate's own low end, not only the
    expected plan scaled up: a 2-GPU instance that holds 2.4 x the load needs no spare at
    90 %, where the 1-GPU plan near its limit needs a second instance (the capacity
    walk-through: 2 x 8 H100s at $33.60 where 5 x 2 cost $21.00)."""
    import dataclasses

    import pandas as pd

    from inference_econ.optimise.confident import with_odds

    near = dataclasses.replace(plan, rate_per_s=0.99 * plan.max_rate_per_s)  # at its limit
    setting = near.setting
    base = with_odds(near, 0.9).confident
    assert base.deployment.instances == 2  # scaled: one spare
    price = setting.gpu.price_usd_per_hour
    row = {c: None for c in near.candidates.columns}
    row.update(
        hardware=setting.gpu.name, pool="deployment", gpus_per_instance=2, instances=1, gpus=2,
        max_rate_per_instance=2.4 * near.rate_per_s, usd_per_hour=2 * price, excluded=False,
        chosen=False,
    )  # fmt: skip
    if "probe_requests" in row:
        row["probe_requests"] = near.candidates["probe_requests"].max()
    table = pd.concat([near.candidates, pd.DataFrame([row])], ignore_index=True)
    wider = dataclasses.replace(near, candidates=table)
    c = with_odds(wider, 0.9, None, [setting]).confident
    # the same price (two GPUs either way), more load held at the low end: one 2-GPU instance
    assert c.deployment.gpus_per_instance == 2 and c.deployment.instances == 1
    assert c.usd_per_hour == pytest.approx(base.usd_per_hour)
    assert c.max_rate_per_s > base.max_rate_per_s >= near.rate_per_s
    assert with_odds(wider, 0.9).confident == base  # without the settings: scaled as before


def test_every_command_says_bound_or_expected_first_and_shows_ranges():
    from click.testing import CliRunner

    from inference_econ.cli import main

    def run(*args):
        result = CliRunner().invoke(main, [str(a) for a in args])
        return result.exit_code, result.stdout, result.stderr

    point = ("point", "Llama 3 8B", "-H", "H100", "--gpus", 1, "--batch", 16)
    code, out, _ = run(*point)
    assert code == 0 and out.startswith("Ideal bound: paper preset") and "80 %:" not in out
    code, out, _ = run(*point, "--assumptions", "achievable")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("Expected figures: achievable preset, engine")
    speed = next(x for x in lines if x.startswith("tokens_per_s "))
    assert "(80 %: " in speed and "; 90 %: " in speed  # the figure with its ranges
    code, out, _ = run(*point, "--assumptions", "achievable", "--format", "csv")
    header = next(x for x in out.splitlines() if not x.startswith("#"))
    assert code == 0 and "tokens_per_s_low80,tokens_per_s_high80" in header
    prefill = ("prefill", "Llama 3 8B", "-H", "H100", "--gpus", 1, "--prompt-tokens", 2000)
    code, out, _ = run(*prefill, "--assumptions", "achievable", "--format", "json")
    assert code == 0 and "latency_s_high90" in out and "Expected figures" in out
    capacity = ("capacity", "Llama 3 8B", "-H", "H100", "--gpus", 1, "--prompt-tokens", 100)
    code, _, err = run(*capacity, "--slo-tpot-p99", 0.05, "--confidence", 0.8)
    assert code == 2 and "--confidence" in err and "drop --confidence" in err
    with pytest.raises(ie.SpecError, match="confidence"):
        ie.simulate_load("Llama 3 8B", "H100", gpus=1, arrival_rate_per_s=1, confidence=0.9)


_bench = benchmark_script


def _compare_measured(rows, preset, out):
    """``compare-measured ROWS --assumptions PRESET -o OUT``, run in this process (the scripts
    read its output file; the command's own tests run it as a user does), its whole runs those
    the --help examples replay (``conftest.whole_runs_of``): the scripts read the rows'
    predictions and statuses, whatever the runs' length."""
    from click.testing import CliRunner

    from inference_econ.cli import main

    args = ["compare-measured", str(rows), "--assumptions", preset, "-o", str(out)]
    with whole_runs_of(EXAMPLE_WHOLE_RUNS):
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output


def test_residuals_from_compare_measured_are_its_predictions_in_si(tmp_path):
    """compare_residuals.py (what the interval table is calibrated from) writes one residual per
    end-to-end row compare-measured predicted with status ok: log(predicted / measured) of that
    output, the figures in SI units (a TTFT in ms as seconds), the row's stratum beside it; an
    output paired with another file is refused with exit 2."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    rows, out = root / "examples" / "measured-rows.csv", tmp_path / "compare.csv"
    _compare_measured(rows, "achievable", out)
    m = _bench("compare_residuals")
    m.main([str(rows), str(out), "-o", str(tmp_path / "res.csv")])
    res = pd.read_csv(tmp_path / "res.csv")
    c = pd.read_csv(out, comment="#")
    ok = c[(c.status == "ok") & (c.kind == "end-to-end")].set_index("row")
    assert len(res) == len(ok) > 20
    out_cols = ok[["predicted", "measured", "unit"]].add_suffix("_out")
    joined = res.join(out_cols, on="row")
    assert np.allclose(res.log_residual, np.log(joined.predicted_out / joined.measured_out))
    ms = joined.unit_out == "ms"
    assert ms.any() and np.allclose(joined.measured[ms], joined.measured_out[ms] / 1e3)
    assert set(res.bound) <= {"memory", "compute"} and set(res.kind) <= set(ivt.KINDS)
    with pytest.raises(SystemExit) as e:
        m.main([str(root / "tests" / "data" / "benchmarks_train_mlperf_v50.csv"), str(out),
                "-o", str(tmp_path / "x.csv")])  # fmt: skip
    assert e.value.code == 2


def test_acceptance_reads_both_presets_outputs_of_a_whole_file(tmp_path, capsys):
    """acceptance.py (the newer rounds' accuracy figures, docs/validation.md): its median and p90 |error| are
    those of the achievable output's end-to-end rows with status ok, computed here by hand; an
    unreadable row counts against the rows resolved; a row the refined output says beats the
    bound is counted. Outputs swapped or of another engine, a line twice, a row's measured value
    not the file's, the files out of order, a folder, an unknown option, or a file without
    end-to-end rows: one line and exit 2."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    rows = pd.read_csv(root / "examples" / "measured-rows.csv").iloc[:9].copy()
    rows.loc[8, "metric"] = "goodput_of_nothing"  # a metric no reader knows: unresolved
    src = tmp_path / "rows.csv"
    rows.to_csv(src, index=False)
    outs = {}
    for preset in ("achievable", "refined"):
        outs[preset] = tmp_path / f"{preset}.csv"
        _compare_measured(src, preset, outs[preset])
    m = _bench("acceptance")
    args = [str(src), str(outs["achievable"]), str(outs["refined"]), "--format", "table"]
    assert m.main(args) == 0
    text = capsys.readouterr().out
    c = pd.read_csv(outs["achievable"], comment="#")
    ok = c[(c.status == "ok") & (c.kind == "end-to-end")]
    assert len(ok) == 8 and c.status.iloc[8].startswith("unresolved")
    e = np.abs(ok.predicted / ok.measured - 1.0)
    line = next(x for x in text.splitlines() if x.startswith("Acceptance on"))
    assert f"median abs. error {np.median(e):.4f}" in line
    assert f"p90 {np.quantile(e, 0.9):.4f}" in line
    assert "rows resolved 88.9% of 9" in line  # 8 of 9
    assert "beating the refined bound by more than 5 %: 0 of 8" in line
    r = pd.read_csv(outs["refined"], comment="#")
    with open(outs["refined"]) as f:
        head = f.readline()
    r.loc[0, "beats_bound"] = True
    bound = tmp_path / "bound.csv"
    bound.write_text(head + r.to_csv(index=False))
    m.main([str(src), str(outs["achievable"]), str(bound)])
    assert "by more than 5 %: 1 of 8" in capsys.readouterr().out

    def refused(*files) -> str:
        with pytest.raises(SystemExit) as exc:
            m.main([str(f) for f in files])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: "), err
        return err[0]

    assert "not refined" in refused(src, outs["achievable"], outs["achievable"])
    assert "not achievable" in refused(src, outs["refined"], outs["refined"])
    twice = tmp_path / "twice.csv"
    with open(outs["achievable"]) as f:
        head = f.readline()
    twice.write_text(head + pd.concat([c, c.iloc[[0]]]).to_csv(index=False))
    assert "once each" in refused(src, twice, outs["refined"])
    other = c.copy()
    other["measured"] = other.measured.astype(float)
    other.loc[2, "measured"] *= 1.5  # another file's rows with the same numbers
    changed = tmp_path / "other.csv"
    changed.write_text(head + other.to_csv(index=False))
    assert f"row {other.row[2]} measured" in refused(src, changed, outs["refined"])
    vllm = tmp_path / "vllm.csv"  # compare-measured --engine vllm: not the shipped profiles
    vllm.write_text(head.replace("engine each row's engine", "engine vllm") + c.to_csv(index=False))
    assert "not the shipped profiles" in refused(src, vllm, outs["refined"])
    assert "starts with the measured-rows CSV" in refused(outs["achievable"], src, outs["refined"])
    assert "is a folder" in refused(tmp_path, outs["achievable"], outs["refined"])
    assert "see --help" in refused(src, outs["achievable"], outs["refined"], "-o")
    micro = tmp_path / "micro.csv"  # the examples' GEMM micro-benchmarks alone
    every = pd.read_csv(root / "examples" / "measured-rows.csv")
    every[every.metric == "TFLOPS"].to_csv(micro, index=False)
    assert "no end-to-end row" in refused(micro, outs["achievable"], outs["refined"])
    refused(src, outs["achievable"])  # not threes


@pytest.mark.parametrize(
    "script", ["acceptance", "at_measured_load", "compare_residuals", "config_scatter"]
)
def test_the_measured_results_scripts_refuse_a_file_they_cannot_read(script, tmp_path, capsys):
    """A file that is not a measured-rows CSV (the README), or not a compare-measured output, is
    one line naming it and exit 2, never a traceback; so is an output path that is a folder."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    readme, rows = str(root / "README.md"), str(root / "examples" / "measured-rows.csv")
    m = _bench(script)
    out = str(tmp_path / "r.csv")
    cases = {  # (arguments, the file the line names)
        "acceptance": [([rows, readme, rows], readme), ([readme, rows, rows], readme)],
        "at_measured_load": [([readme], readme)],
        "compare_residuals": [
            ([rows, readme, "-o", out], readme),
            ([readme, rows, "-o", out], rows),
        ],
        "config_scatter": [([readme], readme), ([rows, "--compare", readme], readme)],
    }[script]
    for args, named in cases:
        with pytest.raises(SystemExit) as e:
            m.main(args)
        assert e.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and Path(named).name in err[0], err
    files = _bench("measured_files")
    with pytest.raises(SystemExit) as e:
        files.write_csv(pd.DataFrame({"a": [1]}), tmp_path)  # a folder
    assert e.value.code == 2 and str(tmp_path) in capsys.readouterr().err


def test_at_measured_load_moves_the_load_as_asked(tmp_path, capsys):
    """``at_measured_load.py --factors``: one MLPerf v5.1 run (Llama 2 70B Interactive on 8
    B200, NVIDIA's rows of the newer file) at 0.9, 1 and 1.1 x the load it measured. More load
    is never a faster mean TPOT or a shorter p99 TTFT; each ratio is the model's figure over the
    measured one; factors that are not positive finite numbers are one line and exit 2."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    rows = pd.read_csv(root / "tests" / "data" / "benchmarks_test_mlperf_newer.csv")
    run = rows.iloc[559:564]  # its throughput row and four latency rows
    assert run.source.nunique() == 1 and (run.metric == "throughput_total").sum() == 1
    src, out = tmp_path / "run.csv", tmp_path / "out.csv"
    run.to_csv(src, index=False)
    m = _bench("at_measured_load")
    assert m.main([str(src), "--factors", "1.1,0.9", "-o", str(out)]) == 0
    t = pd.read_csv(out)
    assert sorted(t.load_factor.unique()) == [0.9, 1.0, 1.1] and len(t) == 12
    assert np.allclose(t.ratio, t.at_measured_load / t.measured)
    for q in ("tpot", "ttft_p99"):
        got = t[t.quantity == q].sort_values("load_factor").at_measured_load.to_numpy()
        assert np.all(np.diff(got) > 0), (q, got)
    assert "x1.1 load" in capsys.readouterr().out
    for bad in ("0,1", "nan", "1,x", "-1"):
        with pytest.raises(SystemExit) as e:
            m.main([str(src), "--factors", bad])
        assert e.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--factors" in err[0], err


def test_step_breakdown_of_one_engine_step(tmp_path, capsys):
    """``step_breakdown.py --step``: steps of the engine NVIDIA's Llama 2 70B Interactive run on
    8 B200 (newer file, line 561, here alone on line 2) runs on. A step's parts add up to it; a
    prompt chunk and more decoding requests never make it shorter; the printed step is the
    computed one; a malformed step is one line, exit 2."""
    import re
    from pathlib import Path

    m = _bench("step_breakdown")
    data = Path(__file__).resolve().parent / "data" / "benchmarks_test_mlperf_newer.csv"
    path = str(tmp_path / "run.csv")
    pd.read_csv(data).iloc[[559]].to_csv(path, index=False)  # line 561: the run's throughput row
    shapes = [(202, 359, 222), (202, 359, 0), (300, 359, 222)]
    row, inst, (step, decode_only, more) = m.engine_step_parts(path, 2, shapes)
    assert row.gpu.name == "B200-HGX" and inst.layout.gpus == 1
    adding = ("layer", "host", "gemm fixed", "collectives", "elementwise", "logits", "gemm")
    assert np.isclose(sum(step[k] for k in adding) + step["kv/attention"], step["total"])
    assert step["(weights)"] <= step["gemm"] and step["(kv requests)"] <= step["kv/attention"]
    assert 0.020 < step["total"] < 0.040  # the measured steps of this run average 34.2 ms
    assert decode_only["total"] < step["total"] < more["total"]
    for bad in ("x", "2:1:2", "2:-1:3:4", "2:0:0:0", "2:nan:1:1"):
        with pytest.raises(SystemExit) as e:
            m.parse_step(bad)
        assert e.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--step" in err[0], err
    with pytest.raises(SystemExit) as e:
        m.engine_step_parts(path, 3, shapes)  # no line 3
    assert e.value.code == 2 and "no line 3" in capsys.readouterr().err
    assert m.one_engine_step(path, "2:202:359:222") == 0
    printed = re.search(r": ([\d.]+) ms\n", capsys.readouterr().out).group(1)
    assert float(printed) == pytest.approx(1e3 * step["total"], abs=0.005)


def test_the_other_submitters_oracle_by_hand():
    """config_scatter.py's floor: a row is predicted by the median of the other submitters'
    rows of its configuration; a configuration one submitter alone measured is left out."""
    m = _bench("config_scatter")
    t = pd.DataFrame(
        {
            "config": ["a", "a", "a", "b", "b"],
            "submitter": ["S1", "S1", "S2", "S1", "S1"],
            "measured": [100.0, 110.0, 120.0, 5.0, 6.0],
        }
    )
    o = m.oracle(t).set_index("measured").oracle_error
    # S1's rows: S2's 120; S2's row: the median of S1's 100 and 110
    assert o.to_dict() == pytest.approx({100.0: 0.2, 110.0: 120 / 110 - 1, 120.0: 105 / 120 - 1})


def test_misses_at_the_other_submitters_rate_by_hand():
    """config_scatter.py --compare: the model's misses (|error| > 0.35) on the rows it predicted,
    against the other submitters' rate of missing by scenario and kind applied to those rows,
    and the tenth of them the p90 goal allows."""
    m = _bench("config_scatter")
    o = pd.DataFrame(  # shared rows: server TTFT misses 1 of 2, offline throughput 0 of 2
        {
            "scenario": ["server", "server", "offline", "offline"],
            "kind": ["TTFT", "TTFT", "throughput", "throughput"],
            "oracle_error": [0.5, -0.1, 0.01, 0.02],
        }
    )
    t = pd.DataFrame(  # 10 predicted rows: 4 server TTFTs (2 missed), 6 offline throughputs
        {
            "scenario": ["server"] * 4 + ["offline"] * 6 + ["server"],
            "kind": ["TTFT"] * 4 + ["throughput"] * 6 + ["TTFT"],
            "model_error": [0.4, -0.5, 0.1, 0.0, 0.2, 0.0, 0.0, 0.0, 0.36, 0.0, np.nan],
        }
    )
    model, expected, allowed = m.misses_at_the_oracles_rate(t, o)
    assert (model, expected, allowed) == (3, pytest.approx(2.0), 1)


def test_a_prefill_interval_never_implies_more_than_the_peak():
    """Llama 3 70B, 8-bit weights, an 8,000-token prompt on one H100 (achievable): MFU 0.521.
    Its 90 % band reaches a time 0.46 x the prediction, past the peak (MFU 1.14): with no
    ideal bound given, every figure moving with the MFU stops where it reaches 1, the speed at
    6,803 / 0.5211 = 13,054 input tokens/s and the time at 0.5211 x 1,176 = 612.8 ms
    (unclipped: 14,943 and 535.4 ms)."""
    setting = make_setting("Llama 3 70B", "H100", assumptions="achievable", weight_bits=8)
    pre = prefill(setting, 1, 8000)
    row = iv.series_intervals(pre, setting, 1, pre["bound"], iv.PREFILL_FIGURES,
                              iv.PREFILL_COMPOSED)  # fmt: skip
    mfu, speed, time = row["mfu"], row["input_tokens_per_s"], row["latency_s"]
    assert mfu == pytest.approx(0.5211, abs=1e-4)
    assert row["mfu_high90"] == pytest.approx(1.0, rel=1e-12)
    assert row["input_tokens_per_s_high90"] == pytest.approx(speed / mfu, rel=1e-9)
    assert row["input_tokens_per_s_high90"] == pytest.approx(13054, rel=1e-4)
    assert row["latency_s_low90"] == pytest.approx(time * mfu, rel=1e-9)
    assert row["usd_per_m_input_tokens_low90"] == pytest.approx(
        row["usd_per_m_input_tokens"] * mfu, rel=1e-9
    )
    # every end within the peak: the speed's ends over the speed are the MFU's over the MFU
    for end in ("low80", "high80", "low90", "high90"):
        assert row[f"input_tokens_per_s_{end}"] / speed == pytest.approx(
            row[f"mfu_{end}"] / mfu, rel=1e-9
        )
    # the 80 % ends stay within the peak unclipped: 11,562 tokens/s (MFU 0.886)
    assert row["input_tokens_per_s_high80"] == pytest.approx(11562, rel=1e-4)


def test_a_prefill_interval_never_passes_its_ideal_bound():
    """The same prefill (6,803 input tokens/s, 1,176 ms, MFU 0.521) takes 813 ms under the
    refined preset (9,838 tokens/s, MFU 0.754): both fast ends (80 % and 90 %, unclipped
    11,562 and 13,054 tokens/s) stop there, the time's and the price's at its time and the
    MFU's at its MFU; the slow ends are the band's. The CLI prints the same ends."""
    setting = make_setting("Llama 3 70B", "H100", assumptions="achievable", weight_bits=8)
    row = prefill_intervals(prefill(setting, 1, 8000), setting, 1)
    bound = prefill(iv.ideal(setting), 1, 8000)
    assert bound["latency_s"] == pytest.approx(0.8131, rel=1e-3)
    for level in ("80", "90"):
        assert row[f"input_tokens_per_s_high{level}"] == pytest.approx(
            bound["input_tokens_per_s"], rel=1e-9
        )
        assert row[f"latency_s_low{level}"] == pytest.approx(bound["latency_s"], rel=1e-9)
        assert row[f"mfu_high{level}"] == pytest.approx(bound["mfu"], rel=1e-9)
        assert row[f"usd_per_m_input_tokens_low{level}"] == pytest.approx(
            bound["usd_per_m_input_tokens"], rel=1e-9
        )
    assert row["latency_s_high90"] == pytest.approx(3.963, rel=1e-3)  # the band's slow end
    import json

    from click.testing import CliRunner

    from inference_econ.cli import main

    out = CliRunner().invoke(
        main, ["prefill", "Llama 3 70B", "-H", "H100", "--weight-bits", "8", "--gpus", "1",
               "--prompt-tokens", "8000", "--assumptions", "achievable", "--format", "json"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    printed = json.loads(out.output)
    assert printed["rows"][0]["latency_s_low90"] == pytest.approx(bound["latency_s"], rel=1e-6)


def test_a_steps_interval_never_passes_its_ideal_bound():
    """Llama 3.1 8B on one H100 under vLLM 0.13's profile: 87.35 tok/s at batch 32, 106.5 at batch
    1. The step's 90 % band reaches a time 0.51 x the prediction (169.8 and 207.1 tok/s), past
    the refined bound of the same configuration (157.6 and 199.2 tok/s): the speed's fast end
    stops at the bound, and so do the time's, the throughput's and the price's; the 80 % ends
    (122.0 and 148.8 tok/s) are within it and stay."""
    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable", engine="vllm@0.13.0")
    batch = np.array([32.0, 1.0])
    got = ie.points(setting, gpus=1, batch=batch)
    bound = ie.points(iv.ideal(setting), gpus=1, batch=batch)
    assert got["tokens_per_s"].to_numpy() == pytest.approx([87.35, 106.53], rel=1e-3)
    assert bound["tokens_per_s"].to_numpy() == pytest.approx([157.63, 199.21], rel=1e-3)
    speed = got["tokens_per_s"].to_numpy()
    band = iv.step_bands(setting, ["TP", "TP"])[0]
    assert speed * np.exp(-band.q05) == pytest.approx([169.83, 207.12], rel=1e-3)  # unclipped
    top = bound["tokens_per_s"].to_numpy()
    assert got["tokens_per_s_high90"].to_numpy() == pytest.approx(top, rel=1e-9)
    assert got["latency_s_low90"].to_numpy() == pytest.approx(bound["latency_s"], rel=1e-9)
    assert got["throughput_tokens_per_s_high90"].to_numpy() == pytest.approx(top * batch)
    price = got["usd_per_mtok"].to_numpy()
    assert got["usd_per_mtok_low90"].to_numpy() == pytest.approx(price * speed / top, rel=1e-9)
    assert got["tokens_per_s_high80"].to_numpy() == pytest.approx(
        speed * np.exp(-band.q10), rel=1e-9
    )
    assert (got["tokens_per_s_high80"].to_numpy() < top).all()
    # with a prompt, its time to first token stops at the refined one of its layout: 23.8 ms
    # against 40.3 at batch 32 (its 90 % band would reach 8.0)
    prompted = setting.replace(prompt_tokens=1000)
    first = ie.points(prompted, gpus=1, batch=batch)
    ideal_first = ie.points(iv.ideal(prompted), gpus=1, batch=batch)["ttft_s"].to_numpy()
    assert ideal_first[0] == pytest.approx(0.02378, rel=1e-3)
    assert first["ttft_s_low90"].to_numpy() == pytest.approx(ideal_first, rel=1e-9)
    assert (first["ttft_s_high90"].to_numpy() > first["ttft_s"].to_numpy()).all()


def test_a_requests_and_disaggregations_intervals_stop_at_their_ideal_bound():
    """Llama 3.1 8B on one H100 under vLLM's profile, 32 requests of 1,000 in and 200 out: the
    request's decode step takes its configuration's band and stops at the refined step of its
    layout (6.476 ms; its 90 % band would reach 5.97), and so do its first step (6.344 ms),
    output price and MFU; its time to first token, end-to-end latency and price per request
    stop at the refined request's. ``disagg``'s two rows stop at the refined rows' (the
    co-located step with the prompts' chunks in it: 8.32 ms)."""
    from inference_econ.api.views import compare_disaggregation, request

    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable", engine="vllm")
    bound = iv.ideal(setting)
    args = dict(gpus=1, batch=32, prompt_tokens=1000, output_tokens=200)
    got, top = request(setting, **args), request(bound, **args)
    assert top["decode_latency_s"] == pytest.approx(6.476e-3, rel=1e-3)
    for name in ("decode_latency_s", "first_step_s", "ttft_s", "e2e_latency_s",
                 "usd_per_m_output_tokens", "usd_per_request"):  # fmt: skip
        assert got[f"{name}_low90"] >= top[name] * (1 - 1e-9), name
        assert got[f"{name}_low90"] <= got[name] <= got[f"{name}_high90"], name
    assert got["decode_latency_s_low90"] == pytest.approx(top["decode_latency_s"], rel=1e-9)
    assert got["first_step_s_low90"] == pytest.approx(top["first_step_s"], rel=1e-9)
    assert got["decode_mfu_high90"] == pytest.approx(top["decode_mfu"], rel=1e-9)
    # the decode step's band is its point's (same class, same bound)
    point = ie.points(setting.replace(context_tokens=1100), gpus=1, batch=np.array([32.0]))
    for end in ("low80", "high80", "low90", "high90"):
        assert got[f"decode_latency_s_{end}"] == pytest.approx(point[f"latency_s_{end}"][0])
    disagg = dict(prompt_tokens=1000, output_tokens=200, decode_gpus=1, decode_batch=32)
    rows, ideal_rows = (
        compare_disaggregation(setting, **disagg),
        compare_disaggregation(bound, **disagg),
    )
    assert ideal_rows["decode_latency_s"].tolist() == pytest.approx([8.32e-3, 6.476e-3], rel=1e-3)
    for name in ("decode_latency_s", "gpu_s_per_request", "usd_per_request", "ttft_s"):
        assert (rows[f"{name}_low90"] >= ideal_rows[name] * (1 - 1e-9)).all(), name
    assert (rows["tokens_per_s_high90"] <= ideal_rows["tokens_per_s"] * (1 + 1e-9)).all()


def _quantiles(band) -> tuple[float, ...]:
    return (band.q05, band.q10, band.q90, band.q95)


def test_a_class_is_in_support_on_configurations_not_on_the_points_of_one_sweep(monkeypatch):
    """interval_coverage.class_mapping: a class whose 40 residuals are two configurations'
    concurrency sweeps takes no band of its own (near, sized on the nearest class in support,
    widened by the table's factor one dimension away and centred); one of 20 configurations'
    residuals is in support."""
    from inference_econ.serving import support as sp

    m = _bench("interval_coverage")
    # the conformal quantiles' values are not what is judged here: plain ones, without crepes
    monkeypatch.setattr(m, "percentiles", lambda r, lo, hi: np.percentile(r, [*lo, *hi]))
    sweep = {"kind": "TPOT", "architecture": "MoE", "layout": "TP", "generation": "Hopper"}
    sweep.update(engine="sglang", scenario="closed_loop", round="silicon fit", dataset="silicon")
    res = pd.DataFrame(
        [
            {**sweep, "r": 0.01 * k, "configuration": f"run {k % 2}", "model": k % 3}
            for k in range(40)
        ]
        + [
            {**sweep, "engine": "trtllm", "r": 0.01 * k, "configuration": k, "model": k % 3}
            for k in range(20)
        ]
    )
    mapping = m.class_mapping(res, (0.0, 0), 0)
    got = {c["engine"]: c for c in mapping["classes"]}
    assert got["sglang"]["rows"] == 40 and got["sglang"]["configurations"] == 2
    assert "q05" not in got["sglang"] and "q05" in got["trtllm"]
    table = sp.parse_classes(mapping, "two sweeps")
    near = table.support(sp.CalibrationClass(*(sweep[k] for k in m.CLASS_KEYS)))
    own = table.bands[("TPOT", "MoE", "TP", "Hopper", "trtllm", "closed_loop")]
    assert near.status == "near" and near.rows == 40
    factor = table.multiplier("TPOT", 1)
    want = own.widened(factor).centred()
    assert _quantiles(near.band) == pytest.approx(_quantiles(want))
    assert near.band.q95 - near.band.q05 == pytest.approx(factor * (own.q95 - own.q05))


def test_a_class_of_few_models_is_in_support_for_those_models_alone(monkeypatch):
    """interval_coverage.class_mapping writes each class's models; 20 configurations of two
    models size a figure of either (in support) but not one of a third model, which takes the
    nearest class of three models, widened once and centred (near); the line under a table says
    so."""
    from inference_econ.serving import support as sp

    m = _bench("interval_coverage")
    monkeypatch.setattr(m, "percentiles", lambda r, lo, hi: np.percentile(r, [*lo, *hi]))
    base = {"kind": "throughput", "architecture": "MoE", "layout": "DP+EP"}
    base.update(generation="Blackwell", scenario="offline", round="v5.1", dataset="MLPerf")
    names = ["A", "B", "C"]
    res = pd.DataFrame(
        [{**base, "engine": "trtllm", "r": 0.01 * k, "configuration": k, "model": names[k % 2]}
         for k in range(20)]
        + [{**base, "engine": "vllm", "r": 0.02 * k, "configuration": k, "model": names[k % 3]}
           for k in range(20)]
        + [{**base, "engine": "sglang", "r": 0.1 * k, "configuration": k, "model": names[k % 2]}
           for k in range(20)]
    )  # fmt: skip
    mapping = m.class_mapping(res, (0.0, 0), 0)
    assert mapping["min_models"] == 3
    got = {c["engine"]: c for c in mapping["classes"]}
    assert got["trtllm"]["models"] == ["A", "B"] and "q05" in got["trtllm"]
    assert got["vllm"]["models"] == ["A", "B", "C"]
    table = sp.parse_classes(mapping, "two and three models")
    key = [got["trtllm"][k] for k in m.CLASS_KEYS]
    own = table.bands[tuple(key)]
    assert table.support(sp.CalibrationClass(*key, "A")).band == own
    third = table.support(sp.CalibrationClass(*key, "C"))
    assert third.status == "near" and third.rows == 20
    # sglang's class, one dimension away too and wider, is of A and B alone: not C's neighbour
    sglang = table.bands[tuple(got["sglang"][k] for k in m.CLASS_KEYS)]
    vllm = table.bands[tuple(got["vllm"][k] for k in m.CLASS_KEYS)]
    assert sglang.q95 - sglang.q05 > vllm.q95 - vllm.q05
    factor = table.multiplier("throughput", 1)
    assert _quantiles(third.band) == pytest.approx(_quantiles(vllm.widened(factor).centred()))
    monkeypatch.setattr(sp, "classes", lambda: table)
    line = sp.support_line(third)
    assert "has 20 measured residuals of 2 models" in line
    assert "in support from 20 configurations of 3 models or of the figure's own" in line
    # the rolling-origin coverage reads each residual's model the same way
    rows = res[res.engine == "trtllm"].head(2).assign(model=["A", "C"], r=[0.0, 0.0])
    statuses = m.class_coverage(rows, table, None)["status"].tolist()
    assert statuses == ["in support", "near"]


def test_engine_table_figures_are_each_predicted_without_their_models_residuals(monkeypatch):
    """interval_coverage: the overview's residuals are the dataset ``engine tables`` (their
    class read off each row: DeepSeek-R1 on 4 B200 as DEP4 is MoE / DP+EP / Blackwell / trtllm /
    offline), and the rolling origin predicts each model's from a table of every other residual:
    model A's figures, all 0.5 above the others' (-0.1 .. 0.1), fall outside the band of B, C
    and D, where a table holding A's own would hold them (a quarter of its residuals at 0.5)."""
    from pathlib import Path

    from inference_econ.serving import support as sp

    m = _bench("interval_coverage")
    monkeypatch.setattr(m, "percentiles", lambda r, lo, hi: np.percentile(r, [*lo, *hi]))
    tables = pd.read_csv(Path(__file__).parent.parent / "docs" / "validation_residuals_tables.csv")
    read = m.with_classes(tables.head(1))
    first = read.iloc[0]
    assert first.dataset == first["round"] == "engine tables" and first.model == "DeepSeek-R1"
    want = ["MoE", "DP+EP", "Blackwell", "trtllm", "offline"]
    assert [first[k] for k in m.CLASS_KEYS[1:]] == want
    base = {"kind": "throughput", "architecture": "MoE", "layout": "DP+EP", "generation": "Hopper"}
    base.update(engine="trtllm", scenario="offline", round="engine tables", dataset="engine tables")
    res = pd.DataFrame(
        [{**base, "r": 0.5, "configuration": f"A{k}", "model": "A"} for k in range(20)]
        + [{**base, "r": -0.1 + 0.2 * k / 59, "configuration": k, "model": "BCD"[k % 3]}
           for k in range(60)]
    )  # fmt: skip
    roll = m.rolling_origin(res, (0.0, 0))
    assert len(roll) == 80 and set(roll.status) == {"in support"}
    own = roll.loc[res.model == "A"]
    assert not own.in90.any() and not own.in80.any()
    # the others' tables hold A's residuals, which widen their bands
    assert roll.loc[res.model != "A"].width90.min() > 2 * own.width90.max()
    table = sp.parse_classes(m.class_mapping(res, (0.0, 0), 0), "every residual")
    assert m.class_coverage(res[res.model == "A"], table, None).in90.all()


def test_the_widening_is_fitted_by_leaving_each_class_out(monkeypatch):
    """class_widening, through class_mapping: two throughput classes one dimension apart, in
    support, residuals evenly spread over +-0.1 (41) and +-0.2 (41). Left out, the narrow class
    sits inside the wide one's band; the wide one, sized by the narrow band (80 %: +-0.08 f,
    90 %: +-0.09 f), has 2 floor(8 f) + 1 and 2 floor(9 f) + 1 of its 41 inside. The shares over
    all 82 nearest 80 and 90 % at f = 1.7 (68/82 = 0.829 and 72/82 = 0.878; 1.6 gives 0.805 and
    0.854, 1.8 0.854 and 0.902), for the nearest classes one dimension away (held at the
    distances beyond, which no residual reaches) and the pooled band alike (one class left, the
    other's band). TTFT, one thin class: no band to borrow, the prior 1.5 per dimension."""
    m = _bench("interval_coverage")
    monkeypatch.setattr(m, "percentiles", lambda r, lo, hi: np.percentile(r, [*lo, *hi]))
    base = {"kind": "throughput", "architecture": "dense", "layout": "TP", "scenario": "offline"}
    base.update(engine="trtllm", round="v5.1", dataset="MLPerf")
    names = ["A", "B", "C"]

    def spread(half: float, **kw) -> list[dict]:
        r = np.linspace(-half, half, 41)
        return [
            {**base, **kw, "r": v, "configuration": f"{kw} {k}", "model": names[k % 3]}
            for k, v in enumerate(r)
        ]

    res = pd.DataFrame(
        spread(0.1, generation="Hopper")
        + spread(0.2, generation="Blackwell")
        + [
            {
                **base,
                "kind": "TTFT",
                "generation": "Ada",
                "r": 0.1,
                "configuration": 0,
                "model": "A",
            }
        ]
    )
    mapping = m.class_mapping(res, (0.0, 0), 0)
    assert mapping["widening"] == {"TTFT": [1.5, 2.25, 3.375], "throughput": [1.7, 1.7, 1.7]}
    assert mapping["pooled"]["throughput"]["widening"] == 1.7
    assert mapping["pooled"]["TTFT"]["widening"] == 1.5


def _runtime_factor(m, sp, table, res, kind: str, pooled: bool):
    """What a brute force through the runtime rule (``ClassTable.support``) fits: each residual
    of ``kind`` sized as the rule sizes its figure at each multiplier of ``m.cw.GRID`` (an
    in-support class's with that class left out), each configuration weighing one; the best
    multiplier at each distance, none below the nearer one's, held where no residual is (for
    ``pooled``: every class left out of its kind's pooled band in turn, one factor)."""
    import dataclasses

    from inference_econ.serving.interval_table import Band

    part = res[res.kind == kind].assign(
        w=lambda d: 1.0 / d.groupby("configuration")["r"].transform("size")
    )
    groups = []  # (distance, class table without the class, the class with the model, r, w)
    for (key, model), g in part.groupby([part[m.CLASS_KEYS].apply(tuple, axis=1), "model"]):
        bands = {k: b for k, b in table.bands.items() if k != key}
        t = dataclasses.replace(table, bands=bands)
        got = sp.nearest_bands(bands, key, table._few_models(key, model))
        if not pooled and got is None:
            continue  # its figure takes the pooled band: no nearest multiplier sizes it
        if pooled:
            rest = part[part[m.CLASS_KEYS].apply(tuple, axis=1) != key]
            if rest.configuration.nunique() < m.CLASS_MIN_ROWS:
                continue
            q = np.percentile(rest.r, [5, 10, 90, 95])
            others = {k: b for k, b in bands.items() if k[0] != kind}
            t = dataclasses.replace(t, bands=others, pooled={kind: Band(*q, "rest", len(rest))})
        d = 1 if pooled else min(got[0], m.cw.DISTANCES)
        groups.append((d, t, sp.CalibrationClass(*key, model), g.r.to_numpy(), g.w.to_numpy()))
    best = []
    for d in range(1, (1 if pooled else m.cw.DISTANCES) + 1):
        losses = []
        for f in m.cw.GRID:
            hits, n = np.zeros(2), 0.0
            for dg, t, cls, r, w in groups:
                if dg != d:
                    continue
                if pooled:
                    t_f = dataclasses.replace(t, pooled_widening={kind: f})
                else:
                    t_f = dataclasses.replace(t, widening={**t.widening, kind: (f,) * 5})
                b = t_f.support(cls).band
                hits += [w @ ((b.q10 <= r) & (r <= b.q90)), w @ ((b.q05 <= r) & (r <= b.q95))]
                n += w.sum()
            losses.append(((hits / n - np.array([0.8, 0.9])) ** 2).sum() if n else math.nan)
        at = int(np.nanargmin(losses)) if not np.isnan(losses).all() else None
        pick = m.cw.GRID[at] if at is not None else (best[-1] if best else None)
        best.append(float(max(pick, best[-1]) if best else pick))
    return best[0] if pooled else best


def test_the_fitted_widening_is_the_runtime_rules_best(monkeypatch):
    """The multipliers class_mapping fits (class_widening) are those a brute force through the
    runtime rule finds: on skewed residuals (a borrowed band's 80 % and 90 % middles differ
    from 0 and from each other), thin classes two dimensions from the nearest class in support,
    one whose nearest class is of too few models for it (passed over), a sweep that weighs as
    one configuration, and (TPOT) two-away figures that want less than the nearer distance's
    multiplier (held at it). A fit that did not centre, fitted every distance as one, let a
    width shrink with distance, weighed points rather than configurations, borrowed the
    few-model class, centred on the 90 % middle or centred the pooled band would fit others."""
    m = _bench("interval_coverage")
    monkeypatch.setattr(m, "percentiles", lambda r, lo, hi: np.percentile(r, [*lo, *hi]))
    from inference_econ.serving import support as sp

    base = {"kind": "throughput", "architecture": "dense", "layout": "TP", "generation": "Hopper"}
    base.update(engine="trtllm", scenario="offline", round="v5.1", dataset="MLPerf")
    rows = []

    def add(values, models, sweep=None, **kw):
        for k, v in enumerate(values):
            conf = sweep if sweep is not None and k < 5 else f"{kw} {k}"
            rows.append(
                {**base, **kw, "r": v, "configuration": conf, "model": models[k % len(models)]}
            )

    u = np.linspace(0.0, 1.0, 26)
    add(0.35 * u**2 - 0.05, ["A", "B", "C"], sweep="one sweep")  # skewed high
    add(-0.3 * u**3 + 0.08, ["A", "B", "C"], generation="Blackwell")  # skewed low
    add(0.9 * u - 0.45, ["X", "Y"], architecture="MoE")  # wide, of two models
    add(1.1 * u[::2] ** 2 - 0.5, ["A"], engine="vllm", scenario="server")  # 13, two away, wide
    add(1.2 * u[1::2] - 0.6, ["Z"], architecture="MoE", engine="sglang")  # 13, F passed over
    # TPOT: a sweep of twenty points far off (one configuration), and two-away figures the
    # nearest band holds as it is (a multiplier held at the nearer distance's)
    tpot = {"kind": "TPOT", "scenario": "closed_loop"}
    add(0.35 * u**2 - 0.05, ["A", "B", "C"], **tpot)
    add([0.9] * 20, ["A"], sweep="far sweep", generation="Ada", **tpot)
    add(0.3 * u**2 - 0.02, ["A", "B", "C"], generation="Ada", **tpot)
    add(-0.3 * u**3 + 0.08, ["A", "B", "C"], generation="Blackwell", **tpot)
    add(0.02 * u[::2] - 0.01, ["A"], engine="vllm", **{**tpot, "scenario": "server"})
    res = pd.DataFrame(rows)
    mapping = m.class_mapping(res, (0.0, 0), 0)
    table = sp.parse_classes(mapping, "skewed")
    assert table.models[("throughput", "MoE", "TP", "Hopper", "trtllm", "offline")] == {"X", "Y"}
    got = mapping["widening"]["throughput"], mapping["pooled"]["throughput"]["widening"]
    want = tuple(_runtime_factor(m, sp, table, res, "throughput", p) for p in (False, True))
    assert got == want
    assert 1.0 < got[0][0] <= got[0][1] <= got[0][2] < 4.0 and 1.0 < got[1] < 4.0  # a fit
    assert mapping["widening"]["TPOT"] == _runtime_factor(m, sp, table, res, "TPOT", False)


def test_a_runs_derived_throughput_is_its_output_rate_per_gpu():
    """silicon_runs_judge.derived_throughput: 4 requests x 1,024 output tokens over
    TTFT + 1,023 x TPOT on 8 GPUs, of the predicted and of the measured latencies alike."""
    m = _bench("silicon_runs_judge")
    part = pd.DataFrame(
        {"source": ["run"] * 2, "batch_or_concurrency": [4] * 2, "output_len": [1024] * 2}
    ).assign(n_gpus=8)
    res = pd.DataFrame(
        [
            {"row": 2, "quantity": "tpot", "kind": "TPOT", "predicted": 0.011, "measured": 0.010},
            {"row": 3, "quantity": "ttft", "kind": "TTFT", "predicted": 0.2, "measured": 0.26},
        ]
    )
    (got,) = m.derived_throughput(res, part).to_dict("records")
    measured = 4 * 1024 / (0.26 + 1023 * 0.010) / 8  # 48.81 tokens/s per GPU
    predicted = 4 * 1024 / (0.2 + 1023 * 0.011) / 8
    assert got["kind"] == "throughput" and got["row"] == 2
    assert got["measured"] == pytest.approx(measured) and got["predicted"] == pytest.approx(
        predicted
    )
    assert got["log_residual"] == pytest.approx(math.log(predicted / measured))


def test_a_disaggregated_plan_that_holds_at_its_low_end_is_its_own_confident_plan():
    """Llama 3.1 8B on H100 at 20 req/s, prefill and decode pools: the expected plan holds
    30.75 req/s, 24.61 at its 90 % interval's low end, so the targets hold there as it
    stands; each pool had been scaled by 1 / factor whatever the load, and a dearer
    co-located plan (5 x 1 GPU) taken."""
    plan = ie.capacity(
        "Llama 3.1 8B", "H100", arrival_rate_per_s=20, input_lengths="lognormal:2000:0.8",
        output_lengths="lognormal:500:0.6", slo_ttft_p99_s=1, slo_tpot_p99_s=0.03,
        disaggregated=True, requests=400,
    )  # fmt: skip
    c = plan.confident
    assert plan.deployment.disaggregated and c.deployment == plan.deployment
    assert c.usd_per_hour == pytest.approx(plan.result.usd_per_hour)
    assert 20 <= c.max_rate_per_s < plan.max_rate_per_s
