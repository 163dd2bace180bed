"""disagg, sweep, prices, study and capacity --demand print every expected figure with
its 80 % and 90 % intervals under an engine profile (CSV columns, ranges in text), and none
under the paper preset (an ideal bound). Searches are kept small (a coarse grid, one instance
size): the intervals do not depend on the search's resolution."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from inference_econ.cli import main
from inference_econ.serving.decode import LAYOUT_COLUMNS
from inference_econ.serving.intervals import interval_columns

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = "Expected figures: achievable preset, engine profile trtllm; 80 % and 90 % intervals"
#: Figures whose intervals are plans for the ends of a held load (whole instances): they may
#: coincide at both ends; every other figure's interval is a band of positive width.
STEPPED = {"instances", "total_usd", "usd_per_m_output_tokens_all_in"}


def _commands(tmp_path, assumptions: str) -> dict[str, list]:
    study = tmp_path / f"study-{assumptions}.yaml"
    study.write_text(
        "title: t\naxes:\n  model: [Llama 3 8B]\n  hardware: [H100]\n"
        f"defaults: {{grid_points: 8, weight_bits: 8, assumptions: {assumptions}}}\n"
        "at_speeds: [50]\n",
        encoding="utf-8",
    )
    demand = tmp_path / "day.csv"  # one 1-GPU instance holds ~56 req/s: 1, then 2 instances
    demand.write_text("hour,requests_per_s\n0,2\n1,30\n2,90\n", encoding="utf-8")
    given = ["--assumptions", assumptions]
    model = ["Llama 3 8B", "-H", "H100"]
    return {
        "disagg": ["disagg", *model, "--gpus", 1, "--batch", 8, "--prompt-tokens", 500]
        + ["--output-tokens", 100, *given],
        "prices": ["prices", *model, "--contexts", 1000, *given],
        "sweep": ["sweep", *model, "--grid-points", 8, "--param", "hbm_bandwidth", "--values", 2]
        + ["-q", *given],
        "study": ["study", study, "-q"],
        "capacity --demand": ["capacity", *model, "--weight-bits", 8, "--demand", demand]
        + ["--slo-tpot-p99", 0.05, "--prompt-tokens", 500, "--output-tokens", 100]
        + ["--requests", 100, "-q", *given],
    }


#: Figures each command must give intervals (CSV columns) under an engine profile.
FIGURES = {
    "disagg": ["ttft_s", "decode_latency_s", "tokens_per_s", "gpu_s_per_request"]
    + ["usd_per_request", "usd_per_m_output_tokens_all_in", "usd_per_request_idle_charged"],
    "prices": ["decode_tokens_per_s", "usd_per_m_output_tokens", "usd_per_m_input_tokens"],
    "sweep": ["fastest_tokens_per_s", "fastest_latency_s", "usd_per_mtok_at_speed"]
    + ["cheapest_usd_per_mtok"],
    "study": ["cheapest_usd_per_mtok_at_50_tokens_per_s"],
    "capacity --demand": ["instances"],
}


@pytest.fixture
def small(monkeypatch):
    """Coarse searches: prices' frontier on an 8 x 8 grid, demand plans of 1-GPU instances."""
    from inference_econ.optimise import candidates
    from inference_econ.optimise.method import make_method
    from inference_econ.studies import prices

    coarse = make_method(grid_points=8)
    real = prices.frontier
    monkeypatch.setattr(prices, "frontier", lambda setting, method: real(setting, coarse))
    monkeypatch.setattr(candidates, "instance_sizes", lambda setting, max_gpus: [1])


def _run(args) -> tuple[str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def _table(csv: str) -> tuple[list[str], pd.DataFrame]:
    notes = [x[2:] for x in csv.splitlines() if x.startswith("# ")]
    body = "\n".join(x for x in csv.splitlines() if not x.startswith("#"))
    return notes, pd.read_csv(io.StringIO(body))


def test_every_expected_figure_has_its_interval_and_a_bound_none(tmp_path, small):
    achievable, paper = _commands(tmp_path, "achievable"), _commands(tmp_path, "paper")
    for name, args in achievable.items():
        notes, df = _table(_run([*args, "--format", "csv"])[0])
        assert EXPECTED in "\n".join(notes), (name, notes[:3])
        assert not any("leaves out" in n for n in notes), name
        for figure in FIGURES[name]:
            ends = interval_columns(figure)
            assert set(ends) <= set(df.columns), (name, figure)
            values = df[[figure, *ends]].dropna().to_numpy(dtype=float)
            assert len(values), (name, figure)
            v, low80, high80, low90, high90 = values.T
            assert (v > 0).all() and (low90 > 0).all(), (name, figure)
            assert (low90 <= low80).all() and (high80 <= high90).all(), (name, figure)
            narrow = (low80 <= high80) if figure in STEPPED else (low80 < high80)
            assert narrow.all(), (name, figure)
            if figure in STEPPED:  # a plan at the pessimistic end needs at least as much
                assert (low90 <= v).all() and (v <= high90).all(), (name, figure)
    for name, args in paper.items():
        notes, df = _table(_run([*args, "--format", "csv"])[0])
        assert notes[1].startswith("Ideal bound: paper preset"), (name, notes[:2])
        assert not [c for c in df.columns if c.endswith(("_low80", "_high90"))], name


def test_text_tables_show_the_ranges_and_the_plan_its_odds(tmp_path, small):
    commands = _commands(tmp_path, "achievable")
    out, _ = _run(commands["disagg"])
    assert out.startswith(EXPECTED) and "ttft_ms 90 %" in out and "tok/s 90 %" in out
    out, _ = _run(commands["capacity --demand"])
    lines = out.splitlines()
    assert lines[0].startswith(EXPECTED)
    held = next(x for x in lines if x.startswith("max_rate_per_instance "))
    cost = next(x for x in lines if x.startswith("total_usd "))
    assert "(80 %: " in held and "; 90 %: " in held and "(80 %: " in cost
    assert "max_rate_per_instance 90 %" in out  # the candidates' column of ranges
    # the held load's 90 % range as printed brackets its 80 % range
    lo80, hi80, lo90, hi90 = (
        float(x) for x in held.split("(80 %: ")[1].rstrip(")").replace("; 90 %: ", "-").split("-")
    )
    assert lo90 <= lo80 < hi80 <= hi90


def test_context_parallel_states_its_figures_and_gives_ttft_intervals():
    """context-parallel's times are times to first token: under an engine profile each carries
    the TTFT stratum's interval (a 1,000-token prefill is compute-bound on an H100), its fast
    ends no faster than the same time under the refined preset, the speed-ups their times'
    paired ends; its first line (CSV: first note) says expected or ideal bound."""
    from inference_econ import api
    from inference_econ.serving.intervals import bands
    from inference_econ.serving.setting import make_setting

    args = ["context-parallel", "Llama 3 8B", "-H", "H100", "--devices", 2]
    args += ["--prompt-tokens", 1000]
    notes, df = _table(_run([*args, "--assumptions", "achievable", "--format", "csv"])[0])
    assert notes[1].startswith(EXPECTED), notes[:2]
    setting = make_setting("Llama 3 8B", "H100", assumptions="achievable")
    bound = api.compare_context_parallel(api.ideal_setting(setting), [1000], 2).iloc[0]
    (band,) = bands(setting, "TTFT", [2], ["compute"])
    clipped = 0
    for figure in ("single_device_s", "ring_attention_s", "kv_runahead_balanced_s"):
        v, low80, high80, low90, high90 = df[[figure, *interval_columns(figure)]].iloc[0]
        assert low90 <= low80 < v < high80 < high90, figure
        assert high80 / v == pytest.approx(math.exp(band.q90), rel=1e-9), figure
        fastest = max(v * math.exp(band.q05), bound[figure])
        assert low90 == pytest.approx(fastest, rel=1e-6), figure
        clipped += bool(bound[figure] > v * math.exp(band.q05))
    assert clipped >= 1  # the bound holds at least one band's fast end here
    # a speed-up's interval pairs its two times' same ends (§F12): in one stratum the engine's
    # error cancels, and the interval is the speed-up itself
    row = df.iloc[0]
    for speedup, chained in (
        ("speedup_ring_attention", "ring_attention_s"),
        ("speedup_kv_runahead", "kv_runahead_balanced_s"),
    ):
        low80, high80, low90, high90 = (float(row[c]) for c in interval_columns(speedup))
        assert low90 <= low80 <= row[speedup] <= high80 <= high90
        ends = [
            row[c] / row[t]
            for c, t in zip(interval_columns("single_device_s"), interval_columns(chained))
        ]
        assert low90 == pytest.approx(min(*ends, row[speedup]), rel=1e-8)
        assert high90 == pytest.approx(max(*ends, row[speedup]), rel=1e-8)
    out = _run([*args, "--assumptions", "achievable"])[0]
    assert out.startswith(EXPECTED) and "single_device_ms 90 %" in out
    out = _run(args)[0]
    assert out.startswith("Ideal bound: paper preset") and "90 %" not in out.splitlines()[2]


#: Numeric columns that are not predictions: the configuration asked for or chosen (GPUs,
#: batch, the layout's degrees, lengths, instances) and inputs (prices per hour, the
#: input:output ratio of the offered load); for a run that keeps up, ``OFFERED`` below.
NOT_PREDICTED = {
    "gpus",
    "batch",
    *LAYOUT_COLUMNS,
    "prefill_expert_degree",
    "micro_batch",
    "prompt_tokens",
    "output_tokens",
    "cached_fraction",
    "cached_tokens",
    "computed_tokens",
    "chunks",
    "prefill_batch",
    "gpus_per_instance",
    "instances",
    "prefill_gpus_per_instance",
    "prefill_instances",
    "rate_per_s",
    "requests",
    "usd_per_hour",
    "monthly_usd",
    "input_tokens_per_output_token",
}
#: A run that keeps up serves the offered load: its rates, prices and MFU are that load's.
OFFERED = {
    "throughput_requests_per_s",
    "input_tokens_per_s",
    "output_tokens_per_s",
    "goodput_requests_per_s",
    "usd_per_m_input_tokens",
    "usd_per_m_output_tokens",
    "usd_per_m_output_tokens_all_in",
    "mfu",
    "usd_per_request",
    "usd_per_session",
}


@pytest.mark.parametrize(
    "args",
    [
        ["point", "Llama 3 8B", "-H", "H100", "--gpus", 1, "--batch", 16],
        ["prefill", "Llama 3 8B", "-H", "H100", "--gpus", 1, "--prompt-tokens", 2000],
        ["request", "Llama 3 8B", "-H", "H100", "--gpus", 1, "--batch", 16]
        + ["--prompt-tokens", 2000, "--output-tokens", 200],
        ["simulate", "Llama 3 8B", "-H", "H100", "--gpus", 1, "--rate", 2, "--requests", 100]
        + ["--prompt-tokens", 500, "--output-tokens", 100],
        # a closed loop's rates and prices are the ones the engine reaches: expected figures
        ["simulate", "Llama 3 8B", "-H", "H100", "--gpus", 1, "--concurrency", 8]
        + ["--requests", 100, "--prompt-tokens", 500, "--output-tokens", 100],
        # sessions: the prompt cache's hit rate is the simulated schedule's, rerun at the ends
        ["simulate", "Llama 3 8B", "-H", "H100", "--gpus", 1, "--rate", 4, "--requests", 100]
        + ["--prompt-tokens", 500, "--output-tokens", 100, "--turns", 3],
    ],
    ids=lambda a: (
        a[0] + ("-closed-loop" if "--concurrency" in a else "-sessions" if "--turns" in a else "")
    ),
)
def test_no_expected_figure_of_one_result_is_bare(args):
    """Every numeric figure point, prefill, request and simulate print under an engine profile
    carries its four interval columns, MFU, the breakdown's parts, energy, power and the price
    ratio among them, each ordered and around its figure where the figure is
    positive; nothing but the configuration, the inputs and the offered load's rates is bare."""
    notes, df = _table(_run([*args, "--assumptions", "achievable", "--format", "csv"])[0])
    assert EXPECTED in "\n".join(notes)
    row = df.iloc[0]
    ends = {c for c in df.columns if c.rsplit("_", 1)[-1] in ("low80", "high80", "low90", "high90")}
    figures = [
        c
        for c in df.columns
        if c not in ends
        and pd.api.types.is_numeric_dtype(df[c])
        and not pd.api.types.is_bool_dtype(df[c])
        and pd.notna(row[c])
    ]
    offered = args[0] == "simulate" and "--concurrency" not in args
    if "--turns" in args:
        assert "prefix_hit_rate" in df
    excused = NOT_PREDICTED | (OFFERED if offered else set())
    bare = [c for c in figures if c not in excused and interval_columns(c)[0] not in df]
    assert not bare, bare
    for c in figures:
        if interval_columns(c)[0] in df and row[c] > 0:
            low80, high80, low90, high90 = (float(row[e]) for e in interval_columns(c))
            assert low90 <= low80 <= high80 <= high90, c
            assert low90 <= row[c] <= high90, c
    for c in [c for c in figures if c.endswith(("mfu", "_fraction"))]:
        assert all(float(row[e]) <= 1.0 for e in interval_columns(c) if e in df), c


def test_simulated_counts_carry_the_runs_at_the_step_times_ends():
    """Preemptions, rejections and the share within the targets (§F12): an engine whose every
    step takes twice as long serves Poisson arrivals at rate r on exactly the schedule this
    engine serves at 2r, on a clock twice as slow (a power of two: the same floats, halved):
    ``Instance.slowed`` scales every time term of the step table. The vLLM run below
    preempts, and its counts' intervals hold the run's own count."""
    import numpy as np

    from inference_econ.load.arrivals import Traffic
    from inference_econ.load.deployment import instance_for, offered_load, reference_context
    from inference_econ.load.engine import ENGINE_OWN, EngineConfig, engine_config
    from inference_econ.load.lengths import parse_lengths
    from inference_econ.load.simulate import simulate
    from inference_econ.serving.setting import make_setting

    setting = make_setting(
        "Llama 3.3 70B", "H100", weight_bits=8, assumptions="achievable", engine="vllm"
    )
    config = engine_config(EngineConfig(engine_own=ENGINE_OWN), setting)
    traffic = Traffic(
        3.0, parse_lengths("lognormal:2000:0.8"), parse_lengths("lognormal:800:0.6"), requests=400
    )
    inst = instance_for(setting, 2, config, reference_context(traffic), offered_load(traffic, 1))
    slowed = simulate(inst.slowed(2.0), traffic.stream())  # every step twice as long
    faster = simulate(inst, traffic.at_rate(6.0).stream())
    assert slowed.preemptions.sum() > 0
    assert np.array_equal(slowed.preemptions, faster.preemptions)
    assert np.array_equal(slowed.finish_s, 2.0 * faster.finish_s, equal_nan=True)

    args = ["simulate", "Llama 3.3 70B", "-H", "H100", "--gpus", 2, "--weight-bits", 8]
    args += ["--rate", 3, "--requests", 400, "--prompt-tokens", "lognormal:2000:0.8"]
    args += ["--output-tokens", "lognormal:800:0.6", "--engine", "vllm", "--format", "csv"]
    _, df = _table(_run([*args, "--slo-ttft-p99", 2, "--slo-tpot-p99", 0.08])[0])
    row = df.iloc[0]
    assert row["preemptions"] > 0
    for name in ("preemptions", "rejected", "goodput_fraction"):
        low80, high80, low90, high90 = (float(row[c]) for c in interval_columns(name))
        assert low90 <= low80 <= row[name] <= high80 <= high90, name
    assert float(row["preemptions_low90"]) < float(row["preemptions_high90"])


def test_elasticities_carry_their_runs_paired_ends():
    """An elasticity under an engine profile takes each run's figure at the same end of its
    own interval (§F12): the price's elasticity of speed is exactly 0 with a zero-width
    interval, the price's elasticity of cost exactly 1, and every interval holds its value.
    (Independent ends gave the first one +-1.6.)"""
    import inference_econ as ie
    from inference_econ.studies import sensitivity

    setting = ie.make_setting("Llama 3 8B", "H100", assumptions="achievable")
    coarse = ie.Method(grid_points=60)
    df = sensitivity.elasticities(setting, ["price", "hbm_bandwidth"], method=coarse)
    price = df.set_index("parameter").loc["price"]
    for end in interval_columns("fastest_speed_elasticity"):
        assert price[end] == 0.0
    for end in interval_columns("cost_at_speed_elasticity"):
        assert price[end] == pytest.approx(1.0, abs=1e-12)
    for _, row in df.iterrows():
        for name in ("fastest_speed_elasticity", "cost_at_speed_elasticity"):
            low80, high80, low90, high90 = (row[c] for c in interval_columns(name))
            assert low90 <= low80 <= row[name] <= high80 <= high90, (row.parameter, name)
    bound = sensitivity.elasticities(
        ie.make_setting("Llama 3 8B", "H100", assumptions="refined"), ["price"], method=coarse
    )
    assert not [c for c in bound.columns if c.endswith("_low80")]  # an ideal bound: none


def test_a_scenarios_key_points_carry_their_intervals(tmp_path):
    """``run`` under an engine profile: the key points' speed, price and MFU carry
    their intervals (ordered, around the figure; MFU at most 1), and the first line says the
    figures are expected; under an ideal-bound preset the line says bound and no interval
    column appears."""
    text = (ROOT / "examples" / "scenario.yaml").read_text()
    for preset, want in (("achievable", EXPECTED), ("refined", "Ideal bound: refined preset")):
        scenario = tmp_path / f"{preset}.yaml"
        scenario.write_text(
            text.replace("assumptions: refined", f"assumptions: {preset}").replace(
                "grid_points: 60", "grid_points: 20"
            )
        )
        notes, df = _table(_run(["run", str(scenario), "--format", "csv"])[0])
        assert want in "\n".join(notes)
        shown = ["tokens_per_s", "usd_per_mtok", "mfu"]
        if preset == "refined":
            assert not [c for c in df.columns if c.endswith("_low80")]
            continue
        for name in shown:
            low80, high80, low90, high90 = (df[c] for c in interval_columns(name))
            assert (low90 <= low80).all() and (low80 <= high80).all() and (high80 <= high90).all()
            assert (low90 <= df[name]).all() and (df[name] <= high90).all(), name
        assert (df["mfu_high90"] <= 1.0).all()


def test_disaggregated_pools_busy_fractions_carry_intervals_and_the_transfer_is_a_bound():
    """``disagg`` under an engine profile: each pool's busy fraction carries ordered
    ends around it, at most 1; the KV transfer (a NIC at its datasheet bandwidth, no engine
    step) has no interval and a note labels it an ideal bound."""
    args = ["disagg", "Llama 3 70B", "-H", "H100", "--weight-bits", 8, "--gpus", 8]
    args += ["--batch", 64, "--prompt-tokens", 4000, "--output-tokens", 500]
    notes, df = _table(_run([*args, "--assumptions", "achievable", "--format", "csv"])[0])
    assert any("kv_transfer_s is an ideal bound" in n for n in notes)
    assert "kv_transfer_s_low80" not in df
    row = df[df["serving"] == "disaggregated"].iloc[0]
    for name in ("prefill_pool_busy_fraction", "decode_pool_busy_fraction"):
        low80, high80, low90, high90 = (float(row[c]) for c in interval_columns(name))
        assert low90 <= low80 <= row[name] <= high80 <= high90 <= 1.0, name
        assert low90 < row[name]  # a real interval, not the figure restated
