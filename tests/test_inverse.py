"""Inverse economics (docs/model.md Part D): observed offers read as data, and what they imply.

Constructed cases have known answers (a point generated from a frontier at k = 2 is fitted back
to k = 2; a size used to generate a point is recovered); the paper's own points reproduce its
qualitative claims (the Llama 3 70B offer needs speculative decoding; k near 3 is consistent
with its Table 3). Grids are 60 points per axis: none of the answers below depends on it.
"""

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.errors import SpecError
from inference_econ.model.assumptions import preset
from inference_econ.model.workload import compile_workload
from inference_econ.studies.inverse.grid import speed_cost_grid
from inference_econ.studies.inverse.variants import Variant, setting_for
from inference_econ.studies.observations import load_observations, overlay_points, select

GRID = 60
DATA = Path(__file__).parent / "data"
HEADER = "provider,model,date,tokens_per_s,usd_per_mtok_input,usd_per_mtok_output\n"


def llama70_grid(bits=8, draft="Llama 3 8B"):
    arch = ie.load_model("Llama 3 70B")
    return speed_cost_grid(setting_for(arch, Variant("H100-paper", "paper", bits), draft), GRID)


# --- observations as data --------------------------------------------------------------------


def test_shipped_paper_observations():
    rows = load_observations("paper-2025")
    llama = select(rows, model="Llama 3 70B")[0]
    assert (llama.provider, llama.tokens_per_s, llama.usd_per_mtok_output) == (
        "Fireworks",
        158,
        0.9,
    )
    assert "the paper" in llama.source and llama.weight_bits == 8
    gpt4 = select(rows, provider="OpenAI")[0]
    assert gpt4.architecture().name == "GPT-4 (reported)"
    # the paper plots GPT-4 at the 3:1 blend of its $30 input and $60 output prices
    assert gpt4.price("blended") == pytest.approx(37.5) and gpt4.price() == 60


def test_the_shipped_offers_name_only_options_the_infer_commands_take():
    """The GPT-4 offer's notes had sent the reader to --price-basis blended, which no infer
    command takes (the blend is --offer-price blended)."""
    import re

    from inference_econ.cli.infer_commands import infer

    taken = {opt for command in infer.commands.values() for p in command.params for opt in p.opts}
    rows = load_observations("paper-2025")
    named = {m for row in rows for m in re.findall(r"--[a-z][a-z-]*", f"{row.source} {row.notes}")}
    assert named and named <= taken, named - taken


@pytest.mark.parametrize(
    "text, where, fix_word",
    [
        ("provider,model,date,tokens_per_s\nA,B,2024,1\n", "usd_per_mtok_input", "required"),
        (HEADER.replace("tokens_per_s", "tokens_per_sec"), "tokens_per_sec", "tokens_per_s"),
        (HEADER + "A,Llama 3 70B,2024-08,fast,0.9,0.9\n", "row 2: field 'tokens_per_s'", "number"),
        (HEADER + "A,Llama 3 70B,2024-08,100,0.9,-1\n", "row 2: field 'usd_per_mtok_output'", ""),
        (HEADER + "A,Llama 3 70B,2024-08,0,0.9,0.9\n", "row 2: field 'tokens_per_s'", ""),
        (HEADER + "A,Llama 3 70B,2024-08,nan,0.9,0.9\n", "row 2: field 'tokens_per_s'", "nan"),
        (HEADER + "A,Llama 3 70B,2024-13,100,0.9,0.9\n", "row 2: field 'date'", "YYYY-MM"),
        (HEADER + "A,,2024,100,0.9,0.9\n", "row 2: field 'model'", "model"),
        # a short row is read with "" in the cells it lacks: the missing field is named
        (HEADER + "A,Llama 3 70B,2024,100,0.9\n", "row 2: field 'usd_per_mtok_output'", "give"),
        (HEADER + "A,Llama 3 70B,2024,100,0.9,0.9,7\n", "row 2: has 7 cells", "quote"),
        (HEADER, "has no rows", "one observation"),
        ("", "is empty", "columns"),
    ],
)
def test_bad_observation_files_name_the_row_column_and_fix(tmp_path, text, where, fix_word):
    path = tmp_path / "offers.csv"
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        load_observations(path)
    message = str(err.value)
    assert str(path) in message and where in message and fix_word in message
    assert "\n" not in message
    result = CliRunner().invoke(main, ["infer", "margin", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_names_are_clear_errors():
    with pytest.raises(SpecError, match="paper-2025"):
        load_observations("paper-2024")
    with pytest.raises(SpecError, match="the file has"):
        select(load_observations("paper-2025"), model="Llama 3.1 405B")
    closed = ie.observation(110, 8, "GPT-4.1")
    with pytest.raises(SpecError, match="infer size"):
        ie.feasibility(closed, grid_points=GRID)


def test_overlay_keeps_the_offers_of_the_curves_models():
    rows = load_observations("paper-2025")
    points, left = overlay_points(rows, models=[ie.load_model("llama3-70b")])
    assert [p["label"] for p in points] == ["Fireworks: Llama 3 70B, 2024-08"]
    assert points[0]["usd_per_mtok"] == 0.9 and len(left) == 3


def test_scenario_figures_draw_the_offers(tmp_path):
    from inference_econ.runs import runner
    from inference_econ.studies.scenario import scenario_from_dict

    curve = {
        "model": "Llama 3 70B",
        "hardware": "H100-paper",
        "weight_bits": 8,
        "grid_points": GRID,
    }
    data = {"title": "Llama 3 70B and its offer", "curves": [curve], "observations": "paper-2025"}
    scenario = scenario_from_dict(data, str(tmp_path / "s.yaml"))
    assert scenario.observations.endswith("paper-2025.csv")
    result = runner.run_scenario(scenario)
    ax = result.figures["frontier"].axes[0]
    # the offers drawn (the frontier's own preference-point marker aside)
    offers = [c for c in ax.collections if not c.get_label().startswith(("_", "preference"))]
    assert [c.get_label() for c in offers] == ["Fireworks: Llama 3 70B, 2024-08"]
    assert offers[0].get_offsets().tolist() == [[158.0, 0.9]]
    # an offers file given to the run replaces the scenario's; blended prices on request
    gpt4 = scenario_from_dict({**data, "curves": [{**curve, "model": "GPT-4"}]}, "s.yaml")
    (point,), notes = runner._observed(gpt4, "paper-2025", "blended")
    assert notes == ()
    assert point["usd_per_mtok"] == pytest.approx(37.5)
    with pytest.raises(SpecError, match="s.yaml: field 'observations'"):
        scenario_from_dict({**data, "observations": "paper-2024"}, "s.yaml")


def test_an_unreadable_offer_row_is_left_out_and_the_results_say_so(tmp_path):
    """One bad row (text for a speed, an unquoted comma) stopped the whole offers file
    (exit 2): now each is one warning line (file, row, field, fix), the other offers are
    analysed, and the output states the rows left out; no readable row is still exit 2."""
    path = tmp_path / "offers.csv"
    path.write_text(
        HEADER
        + "A,Llama 3 70B,2024-08,100,0.9,0.9\n"
        + "B,Llama 3 70B,2024-08,fast,0.9,0.9\n"
        + "C,Llama 3 70B,2024-08,60,0.5,0.5,unquoted\n"
        + "D,Llama 3 70B,2024-08,40,0.3,0.35\n"
    )
    with pytest.warns(ie.InferenceEconWarning, match="row 3: field 'tokens_per_s'"):
        offers = load_observations(path)
    assert [(o.provider, o.tokens_per_s, o.usd_per_mtok_output) for o in offers] == [
        ("A", 100, 0.9),
        ("D", 40, 0.35),
    ]
    assert [line for line, _ in offers.left_out.reasons] == [3, 4]
    result = CliRunner().invoke(main, ["infer", "margin", str(path), "--format", "json"])
    assert result.exit_code == 0
    warned = [x for x in result.stderr.splitlines() if x.endswith("the row is left out")]
    assert warned == [
        f"warning: {path}, row 3: field 'tokens_per_s': expected a number in tokens/s per "
        "request, got 'fast' (expected a number >= 1e-06 and <= 1000000); the row is left out",
        f"warning: {path}, row 4: has 7 cells for the header's 6 columns (quote cells that hold commas); "
        "the row is left out",
    ]
    assert sorted(set(row["offer"][:2] for row in json.loads(result.stdout)["rows"])) == [
        "A:",
        "D:",
    ]
    assert json.loads(result.stdout)["metadata"]["observations_left_out"] == (
        f"2 of 4 observation rows of {path} left out (unreadable): line 3: tokens_per_s: "
        "expected a number in tokens/s per request, got 'fast'; line 4: has 7 cells for the header's 6 columns"
    )
    from inference_econ.runs.runner import _observed
    from inference_econ.studies.scenario import load_scenario

    with pytest.warns(ie.InferenceEconWarning):  # drawn on a figure: the run's notes say so
        points, notes = _observed(load_scenario("paper/figure-3"), path, "output")
    assert [p["label"].split(":")[0] for p in points] == ["A", "D"]
    assert notes == (offers.left_out.note(),) and notes[0].startswith("2 of 4 observation rows")
    path.write_text(HEADER + "A,Llama 3 70B,2024-08,fast,0.9,0.9\nB,,2024,1,1,1\n")
    result = CliRunner().invoke(main, ["infer", "margin", str(path)])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "row 2: field 'tokens_per_s'" in result.stderr
    assert "none of its 2 observation rows can be read" in result.stderr


# --- feasibility -----------------------------------------------------------------------------


def test_paper_llama70b_offer_needs_speculation():
    """The paper (§4): the leading provider's Llama 3 70B speed is beyond the 8-bit frontier
    without speculative decoding, and within reach with Llama 3 8B as the draft at α = 0.8."""
    offer = select(load_observations("paper-2025"), model="Llama 3 70B")[0]
    result = ie.feasibility(offer, weight_bits="16,8", criterion="speed", grid_points=GRID)
    for bits, fastest in ((16, 125), (8, 152)):  # the paper's Table 4: 152 tok/s at 8 bits
        row = result.row("H100-paper", bits)
        assert row.fastest_tokens_per_s == pytest.approx(fastest, rel=0.01)
        assert row.cost_usd_per_mtok == math.inf  # 158 tok/s: not without speculation
        assert row.feasible and row.speculative_fastest_tokens_per_s > 158
        assert 0.6 < row.acceptance_for_speed < 0.8
        assert row.verdict.startswith("needs speculation with α ≥")
    table = result.to_dataframe()  # the speed is not reached: a blank cost, not inf
    assert table["usd_per_mtok"].isna().all() and (table["spec_usd_per_mtok"] > 0).all()
    # within the price too, the 8-bit point needs a little more than α = 0.8 (cost $1.36)
    row = ie.feasibility(offer, weight_bits="8", grid_points=GRID).rows[0]
    assert not row.feasible and row.speculative_cost_usd_per_mtok == pytest.approx(1.36, rel=0.05)
    assert 0.8 < row.acceptance_for_price < 0.9
    assert row.outside_factor == pytest.approx(1.07, abs=0.02)


def test_required_acceptance_is_recovered():
    grid = llama70_grid()
    speed = grid.fastest_tokens_per_s(0.72)  # a point made reachable exactly at α = 0.72
    assert grid.minimum_acceptance(speed) == pytest.approx(0.72, abs=0.002)
    cost = grid.cost_at_speed(120, 0.72)
    assert grid.minimum_acceptance(120, cost) == pytest.approx(0.72, abs=0.002)
    # invariants: a faster point never needs less; a higher price never needs more
    needs = [grid.minimum_acceptance(v, 2.0) for v in (150, 160, 170, 180)]
    assert needs == sorted(needs)
    assert grid.minimum_acceptance(160, 1.0) >= grid.minimum_acceptance(160, 3.0)


def test_constructed_points_inside_and_outside_the_frontier():
    grid = llama70_grid(draft=None)
    fastest = grid.fastest_tokens_per_s()
    speed = 0.8 * fastest
    cost = grid.cost_at_speed(speed)
    inside = ie.observation(speed, 1.25 * cost, "Llama 3 70B")
    res = ie.feasibility(inside, weight_bits="8", draft=None, grid_points=GRID)
    # inside: some point is faster and cheaper by f < 1, but no point beats the price by 1.25
    assert res.feasible and 0.8 <= res.rows[0].outside_factor < 1.0
    below = ie.observation(speed, cost / 1.25, "Llama 3 70B")
    res = ie.feasibility(below, weight_bits="8", draft=None, grid_points=GRID)
    assert not res.feasible and 1.0 < res.rows[0].outside_factor <= 1.25
    assert "infeasible at any setting tried" in res.summary[0]
    too_fast = ie.observation(1.05 * fastest, 100.0, "Llama 3 70B")
    res = ie.feasibility(too_fast, weight_bits="8", draft=None, grid_points=GRID)
    assert res.rows[0].outside_factor == pytest.approx(1.05, rel=1e-6)
    assert "5% short" in res.rows[0].verdict


def test_the_grids_answers_are_every_points():
    """Speed and cost questions are answered from the points no faster point undercuts: each
    answer is the whole grid's, to the last bit (checked by brute force over every point)."""
    import numpy as np

    grid = llama70_grid()
    for alpha in (None, 0.0, 0.37, 0.8, 1.0):
        speed, cost = grid._speed_cost(alpha)
        finite = np.isfinite(cost)
        assert grid.fastest_tokens_per_s(alpha) == speed[finite].max()
        # each point's own speed (the tolerance's edge), a little faster, and a price beside it
        for i in np.flatnonzero(finite.ravel())[::37]:
            s0, c0 = speed.ravel()[i], cost.ravel()[i]
            for v in (s0, s0 * (1 - 2e-6), s0 * 1.01):
                reached = speed >= v * (1 - 1e-6)
                whole = cost[reached].min() if reached.any() else math.inf
                assert grid.cost_at_speed(v, alpha) == whole
                ok = finite & (speed > 0)
                factor = np.maximum(v / speed[ok], cost[ok] / (1.1 * c0)).min()
                assert grid.outside_factor(v, 1.1 * c0, alpha) == factor


def test_offers_of_one_model_share_their_grids_and_their_answers(monkeypatch):
    """Inside ``shared_grids`` the second offer of a model builds no setting; every figure is
    the one an offer analysed alone gets."""
    from inference_econ.api import shared_grids
    from inference_econ.studies.inverse import variants

    offers = [ie.observation(v, p, "Llama 3 70B") for v, p in ((60, 0.5), (158, 0.9), (30, 4))]
    alone = [ie.feasibility(o, weight_bits="16,8", grid_points=GRID).records() for o in offers]
    built = []
    real = variants.setting_for
    monkeypatch.setattr(variants, "setting_for", lambda *a, **k: built.append(a) or real(*a, **k))
    with shared_grids():
        together = [
            ie.feasibility(o, weight_bits="16,8", grid_points=GRID).records() for o in offers
        ]
    assert together == alone
    assert len(built) == 2  # one a precision, for the first offer only
    ie.feasibility(offers[0], weight_bits="16,8", grid_points=GRID)
    assert len(built) == 4  # outside it, every offer builds its own


# --- margin ----------------------------------------------------------------------------------


def test_margin_is_price_over_cost():
    grid = llama70_grid()
    cost = grid.cost_at_speed(100)
    result = ie.margin(ie.observation(100, 2 * cost, "Llama 3 70B"), weight_bits="16,8",
                       grid_points=GRID)  # fmt: skip
    rows = {(r.variant.weight_bits, r.speculation): r for r in result.rows}
    assert rows[(8.0, "none")].markup == pytest.approx(2.0)
    lo, hi = result.markup_range
    assert lo <= 2.0 <= hi and all(r.markup > 0 for r in result.rows if r.reachable)
    # speculation never costs more at a given speed (no speculation stays a candidate)
    for bits in (16.0, 8.0):
        assert rows[(bits, "α = 0.80")].cost_usd_per_mtok <= rows[(bits, "none")].cost_usd_per_mtok
    offer = select(load_observations("paper-2025"), model="Llama 3 70B")[0]
    paper = ie.margin(offer, weight_bits="8", grid_points=GRID)
    none, spec = paper.rows
    assert none.markup is None and spec.markup == pytest.approx(0.9 / 1.36, rel=0.05)
    # one setting reaches the speed: one markup, not a range "0.66x–0.66x across 1 settings"
    assert paper.summary.startswith(f"markup over GPU rental {spec.markup:.2f}x in the one setting")
    assert "1 of 2 settings does not reach the speed" in paper.summary
    table = paper.to_dataframe()  # a cost the speed never reaches is blank, not inf
    assert math.isnan(table["usd_per_mtok"].iloc[0]) and math.isfinite(
        table["usd_per_mtok"].iloc[1]
    )


# --- preference exponent ---------------------------------------------------------------------

MODELS = ("Llama 3 8B", "Llama 3 70B", "Mixtral 8x22B")


@pytest.mark.parametrize("k", [2.0, 4.0])
def test_preference_exponent_is_recovered(k):
    offers = []
    for model in MODELS:
        front = ie.frontier(model, "H100-paper", grid_points=GRID)
        best = front.preference_point(k=k)
        offers.append(ie.observation(best["tokens_per_s"], 3 * best["usd_per_mtok"], model))
    fit = ie.fit_preference(offers, draft=None, grid_points=GRID)
    assert fit.k == pytest.approx(k, abs=0.1)
    lo, hi = fit.interval
    assert lo <= fit.k <= hi
    assert all(p.markup == pytest.approx(3.0, rel=0.02) for p in fit.points)
    # a known noise level gives an interval that contains the true k
    known = ie.fit_preference(offers, draft=None, grid_points=GRID, log_speed_sd=0.05)
    assert known.interval[0] <= k <= known.interval[1]


def test_preference_profile_and_single_point():
    # the paper's empty context: on this coarse grid a 1,000-token context recovers k = 3.35
    # (3.03 at 200 points per axis), the empty one 3.20 (2.92)
    front = ie.frontier("Llama 3 70B", "H100-paper", grid_points=GRID, context_tokens=0)
    speed = front.preference_point(k=3)["tokens_per_s"]
    one = ie.fit_preference([ie.observation(speed, 1.0, "Llama 3 70B")], draft=None,
                            grid_points=GRID, context_tokens=0)  # fmt: skip
    assert one.k == pytest.approx(3, abs=0.3) and one.interval is None
    assert any("log_speed_sd" in n for n in one.notes)
    profile = one.profile
    assert profile["rss"].min() == pytest.approx(0, abs=1e-6)
    assert profile["k"].is_monotonic_increasing


def test_paper_table3_is_consistent_with_k3():
    """Table 3's preference points (k = 3 on speculative frontiers) are fitted back to k ≈ 3."""
    offers = load_observations(DATA / "paper_table3_points.csv")
    fit = ie.fit_preference(offers, grid_points=GRID)
    assert fit.k == pytest.approx(3.0, abs=0.3)
    assert fit.interval[0] <= 3.0 <= fit.interval[1]
    assert all(2.5 < p.implied_k < 3.5 for p in fit.points)


def test_paper_offers_do_not_exclude_k3():
    fit = ie.fit_preference(load_observations("paper-2025"), grid_points=GRID)
    assert fit.interval[0] < 3.0 < fit.interval[1]
    assert len(fit.points) == 4


# --- implied model size ----------------------------------------------------------------------


def test_scaling_rule_keeps_the_template_at_its_own_size():
    llama = ie.load_model("Llama 3 70B")
    same = ie.scaled_architecture(
        "Llama 3 70B", compile_workload(llama, preset("paper")).total_params
    )
    assert same.layers == 80 and same.d_model == pytest.approx(8192, rel=1e-6)
    big = ie.scaled_architecture("Llama 3 70B", 8 * 70.55e9)
    assert big.layers == 160  # depth doubles for 8x the parameters (exponent 1/3)
    assert big.attention.kv_heads == 8 and big.attention.head_dim == 128
    moe = ie.scaled_architecture("Llama 3 70B", 1.8e12, experts=16, active_experts=2)
    work = compile_workload(moe, preset("paper"))
    assert work.total_params == pytest.approx(1.8e12, rel=1e-6)
    assert 0.1 < work.active_params / work.total_params < 0.2
    with pytest.raises(SpecError, match="layer groups"):
        ie.scaled_architecture("DeepSeek-V3", 1e12)
    with pytest.raises(SpecError, match="active"):
        ie.scaled_architecture("Llama 3 70B", 1e12, experts=4, active_experts=8)


@pytest.mark.parametrize("experts", [None, 8])
def test_model_size_is_recovered(experts):
    size = 200e9
    truth = ie.scaled_architecture(
        "Llama 3 70B", size, experts=experts, active_experts=2 if experts else None
    )
    front = ie.frontier(truth, "H100-paper", weight_bits=8, grid_points=GRID)
    speed = 0.6 * front.fastest()["tokens_per_s"]
    offer = ie.observation(speed, float(front.cost_at_speed(speed)), "closed model")
    result = ie.implied_size(offer, experts=experts, active_experts=2 if experts else None,
                             weight_bits="8", draft=None, grid_points=GRID)  # fmt: skip
    (row,) = result.rows
    assert row.total_params == pytest.approx(size, rel=0.1)
    if experts is None:  # a markup of 2: the model costs half the price, so it is smaller
        half = ie.implied_size(offer, weight_bits="8", draft=None, grid_points=GRID, markup=2)
        assert half.rows[0].total_params < row.total_params


# --- the command line ------------------------------------------------------------------------


def run(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_infer_commands():
    common = ("--grid-points", str(GRID))
    code, out, _ = run("infer", "feasibility", "paper-2025", "--model", "Llama 3 70B",
                       "--weight-bits", "8", *common)  # fmt: skip
    assert code == 0 and "needs speculation with α ≥ 0.8" in out and "H100-paper" in out
    code, out, _ = run("infer", "margin", "--model", "Llama 3 70B", "--speed", "158", "--price",
                       "0.9", "--weight-bits", "8", "--format", "csv", *common)  # fmt: skip
    lines = out.splitlines()  # what it was computed with, then whether a bound or expected
    assert code == 0 and lines[1].startswith("# Ideal bound: paper preset")
    assert lines[2].startswith("offer,hardware")
    code, out, _ = run("infer", "preference", "paper-2025", "--format", "json", *common)
    assert code == 0 and '"provider": "fit"' in out
    code, out, _ = run("infer", "size", "--model", "GPT-4.1", "--speed", "110", "--price", "8",
                       "--weight-bits", "8", "--no-speculation", *common)  # fmt: skip
    assert code == 0 and "parameters in total" in out
    for sub in ("feasibility", "margin", "preference", "size"):
        code, out, _ = run("infer", sub, "--help")
        assert code == 0 and "Example" in out


def test_a_table_of_many_offers_keeps_whole_numbers_whole(tmp_path):
    """One table of every offer (CSV, JSON): a size's layer count stays a whole number where
    another offer has no size (its cells blank), as each offer's own table writes it."""
    offers = tmp_path / "offers.csv"
    offers.write_text(
        HEADER + "Q1,GPT-4.1,2025-04,110,2,8\nQ2,GPT-4.1,2025-04,1000000,0.000001,0.000001\n"
    )
    code, out, _ = run("infer", "size", str(offers), "--weight-bits", "8", "--no-speculation",
                       "--grid-points", "30", "--format", "json")  # fmt: skip
    rows = json.loads(out)["rows"]
    assert code == 0 and [r["offer"].split(":")[0] for r in rows] == ["Q1", "Q2"]
    assert isinstance(rows[0]["layers"], int) and rows[0]["layers"] > 0
    assert rows[1]["layers"] is None and rows[1]["total_params"] is None


@pytest.mark.parametrize(
    "args, word",
    [
        (("infer", "margin"), "--speed and --price"),
        (("infer", "margin", "paper-2025", "--speed", "100"), "one or the other"),
        (("infer", "margin", "--speed", "-3", "--price", "1"), "--speed"),
        (("infer", "feasibility", "paper-2025", "--assumptions", "papr"), "did you mean"),
        (
            ("infer", "size", "--speed", "50", "--price", "1", "--family", "DeepSeek-V3"),
            "layer groups",
        ),
        (("infer", "preference", "paper-2025", "-H", "H100-paper", "-H", "A100-paper"), "one GPU"),
        (("infer", "feasibility", "--speed", "158", "--price", "0.9"), "add --model"),
        # the blend ratio weighs input prices: on the output price it was silently ignored
        (("infer", "margin", "paper-2025", "--blend-ratio", "3"), "--offer-price blended"),
        # a draft model that is not there is the draft's error, not the model analysed's
        (("infer", "feasibility", "paper-2025", "--draft", "Llama 3.2 1B"), "--draft: no model"),
    ],
)
def test_infer_bad_input_is_one_line_and_exit_2(args, word):
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 2, result.output
    assert word in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_blend_ratio_is_refused_on_the_output_price():
    """docs/user-guide.md: --blend-ratio weighs input tokens in the blended price; with the
    output price it changed nothing, silently. The API refuses it too."""
    offer = load_observations("paper-2025")[0]
    with pytest.raises(SpecError, match="input_tokens_per_output.*offer_price='blended'"):
        offer.price("output", 2.0)
    blended = (offer.usd_per_mtok_input + offer.usd_per_mtok_output) / 2
    assert offer.price("blended", 1.0) == pytest.approx(blended)
    assert offer.price("output") == offer.usd_per_mtok_output


def test_offers_on_a_figure_take_the_colour_of_their_models_curve():
    from inference_econ.output import plots
    from inference_econ.runs.runner import _observed
    from inference_econ.studies.scenario import load_scenario

    scenario = load_scenario("paper/figure-3")
    points = _observed(scenario, "paper-2025", "output")[0]
    curves = {p["label"].split(":")[0]: p["curve"] for p in points}
    # each offer is drawn with the first curve of its model (figure-3's colours by model)
    assert {p["curve"] for p in points} <= {c.label for c in scenario.curves}
    llama = next(p for p in points if "Llama 3 70B" in p["label"])
    assert llama["curve"] == "Llama 3 70B 8-bit", curves
    fig, ax = plots.plt.subplots()
    plots._scatter_groups(ax, [llama], {"Llama 3 70B 8-bit": "tab:red"})
    colour = ax.collections[0].get_facecolor()[0]
    assert plots.matplotlib.colors.to_hex(colour) == plots.matplotlib.colors.to_hex("tab:red")
    plots.plt.close(fig)


@pytest.mark.parametrize("command", ["feasibility", "margin", "preference", "size"])
def test_infer_outputs_state_what_they_were_computed_with(command):
    """CSV '#' lines and JSON title/metadata name the offers and every setting tried (were
    absent: an empty title and metadata)."""
    import json

    if command == "size":
        offer = ["--model", "GPT-4.1", "--speed", "110", "--price", "8", "--family", "Llama 3 8B"]
    else:
        offer = ["--model", "Llama 3 8B", "--speed", "150", "--price", "0.2"]
    args = ["infer", command, *offer, "--grid-points", "20", "--no-speculation"]
    args += ["--weight-bits", "8"] if command != "preference" else []  # one variant: fast
    csv = CliRunner().invoke(main, [*args, "--format", "csv"])
    assert csv.exit_code == 0, csv.output
    first = csv.stdout.splitlines()[0]
    assert first.startswith("# Computed with:") and "gpus H100-paper" in first, first
    assert "grid_points 20" in first and "speculation off" in first, first
    if command != "margin":
        return  # the JSON's metadata is the same dict: one command is enough
    data = json.loads(CliRunner().invoke(main, [*args, "--format", "json"]).stdout)
    assert data["title"] == "Markup over GPU rental" and data["metadata"]["grid_points"] == 20
    assert data["metadata"]["observations"] == "one offer given by --speed and --price"


def test_max_draft_with_the_default_draft():
    """infer's draft defaults to the paper's: --max-draft needs no --draft there, and 1 (no
    speculation) with a draft is refused as make_setting refuses it."""
    args = ["infer", "margin", "--model", "Llama 3 70B", "--speed", "158", "--price", "0.9"]
    args += ["-H", "H100-paper", "--weight-bits", "8", "--grid-points", "30"]
    ok = CliRunner().invoke(main, [*args, "--max-draft", "3"])
    assert ok.exit_code == 0, ok.output
    one = CliRunner().invoke(main, [*args, "--max-draft", "1"])
    assert one.exit_code == 2 and "means no speculation" in one.stderr


@pytest.mark.parametrize("command", ["feasibility", "margin"])
def test_computed_with_states_the_context_the_figures_used(tmp_path, command):
    """An offer's own context_tokens wins over --context (and the default): the cost note and
    the "Computed with" line state the context the figures used, 0 here, not the option's."""
    path = tmp_path / "offers.csv"
    path.write_text(
        HEADER.strip() + ",context_tokens\nA,Llama 3 70B,2024-08,100,1,1,0\n", encoding="utf-8"
    )
    fast = ["--weight-bits", "8", "--no-speculation", "--grid-points", "8"]
    text = run("infer", command, str(path), *fast)[1]
    cost_note = next(line for line in text.splitlines() if "decode only" in line)
    assert "context 0 tokens" in cost_note
    computed = next(line for line in text.splitlines() if line.startswith("Computed with:"))
    assert "context 0 tokens;" in computed and "1,000" not in computed
    # a second offer stating none is computed at --context: each offer's context is stated
    path.write_text(path.read_text() + "B,Llama 3 70B,2024-08,100,1,1,\n", encoding="utf-8")
    both = run("infer", command, str(path), *fast, "--context", "2000")[1]
    assert "context 2000 tokens" in both
    offers = "0 tokens (A: Llama 3 70B, 2024-08), 2,000 tokens (B: Llama 3 70B, 2024-08)"
    assert f"context per offer: {offers};" in both


def test_a_cost_just_past_the_price_is_not_printed_as_the_price():
    """An offer 0.008 % too cheap for our cost had read "1.00x the price", beside "infeasible":
    as many decimals as tell the cost from the price."""
    from inference_econ.studies.inverse.feasibility import _gap

    assert _gap(50.0, 0.08, 60.0, 0.0800064, "price").endswith("1.0001x the price")
    assert _gap(50.0, 1.0, 60.0, 1.000001, "price").endswith("1.000001x the price")
    assert _gap(50.0, 2.0, 60.0, 2.01, "price").endswith("1.005x the price")  # not 1.00x
    assert _gap(50.0, 1.0, 60.0, 1.513, "price").endswith("1.51x the price")


def test_feasibility_figure_of_several_models_is_refused_before_any_output(tmp_path):
    """A figure draws one model's offers: offers of several were analysed, their tables printed
    and written to --out, and only then refused."""
    out, figure = tmp_path / "feasibility.csv", tmp_path / "all.png"
    args = ["infer", "feasibility", "paper-2025", "--weight-bits", "8", "--grid-points", "60",
            "--figure", str(figure), "-o", str(out)]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and result.stdout == ""
    assert (
        result.stderr == "error: --figure: the offers are of 4 models (select one with --model)\n"
    )
    assert not out.exists() and not figure.exists()
