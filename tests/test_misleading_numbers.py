"""Numbers that could mislead a decision, each fixed at its root:
one rule for a KV cache beyond the GPUs' memory, whole degrees on request and real-valued ones
said to be the continuous model's, and capacity's ties and machine-readable plan."""

import io
import math
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.optimise.candidates import _options
from inference_econ.serving.setting import whole_batch_kv_excess, whole_batch_kv_note


def cli(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def comments(csv_text: str) -> str:
    return "".join(line for line in csv_text.splitlines(keepends=True) if line.startswith("#"))


# --- 1. a whole batch's KV cache beyond the HBM: one rule, every path ------------------------


def test_one_rule_decides_and_its_numbers_are_the_hand_computed_ones():
    # Mixtral 8x22B: 56 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 229,376 B per token;
    # 77,430 requests at 8,000 tokens hold 142.1 TB, against 125 x 80 GB = 10 TB of HBM
    setting = ie.make_setting("Mixtral 8x22B", "H100-paper", context_tokens=8000)
    kv = 77430 * 8000 * 56 * 8 * 128 * 2 * 2
    excess = whole_batch_kv_excess(setting, [125.0, 8.0], [77430.0, 1.0], 8000.0)
    weights = excess[1] * 8 * 80e9 - 8000 * 56 * 8 * 128 * 2 * 2
    assert excess[0] == pytest.approx((kv + weights) / (125 * 80e9), rel=1e-9)
    assert excess[0] == pytest.approx(14.2, abs=0.05) and excess[1] < 1
    note = whole_batch_kv_note(setting, [125.0, 8.0], [77430.0, 1.0], 8000.0, "points")
    assert note.startswith("note: at 1 of 2 points the whole batch's KV cache plus the weights")
    assert "up to 14.2 times" in note and "142,085 GB of KV cache" in note
    refined = ie.make_setting(
        "Mixtral 8x22B", "H100-paper", context_tokens=8000, assumptions="refined"
    )
    assert whole_batch_kv_excess(refined, 125.0, 77430.0, 8000.0) is None  # it checks the batch


@pytest.mark.parametrize("discrete", [False, True])
def test_frontiers_note_it_as_point_and_request_do(discrete):
    kw = dict(context_tokens=8000, grid_points=40, discrete=discrete)
    front = ie.frontier("Mixtral 8x22B", "H100-paper", **kw)
    (note,) = [n for n in front.notes if "whole batch's KV cache" in n]
    assert "frontier points" in note and "--assumptions refined checks the whole batch" in note
    pts = front.points
    s = ie.make_setting("Mixtral 8x22B", "H100-paper", context_tokens=8000)
    over = whole_batch_kv_excess(s, pts["gpus"], pts["batch"], 8000.0) > 1
    assert f"at {over.sum()} of {len(pts)} frontier points" in note and over.sum() > 0
    args = ["frontier", "Mixtral 8x22B", "-H", "H100-paper", "--context", 8000, "--grid-points"]
    code, out, _ = cli(*args, 40, *(["--discrete"] if discrete else []), "--format", "csv", "-q")
    assert code == 0 and note in comments(out)  # the CSV says what the table says
    code, out, _ = cli(*args, 40, *(["--discrete"] if discrete else []), "-q")
    assert code == 0 and note in out


def test_disagg_notes_its_decode_instance_and_a_short_context_has_no_note():
    args = ["disagg", "Llama 3.3 70B", "-H", "H100", "--gpus", 8, "--batch", 64]
    code, out, _ = cli(*args, "--prompt-tokens", 60000, "--output-tokens", 1000, "--format", "csv")
    assert code == 0 and "(64 x 60,500 tokens, 1,269 GB)" in comments(out)
    code, out, _ = cli(*args, "--prompt-tokens", 1000, "--output-tokens", 100)
    assert code == 0 and "whole batch's KV cache" not in out


# --- 5. whole degrees for a given GPU count, or said to be the continuous model's ------------


def test_point_says_its_degrees_are_continuous_or_lays_out_whole_ones():
    args = ["point", "Mixtral 8x22B", "-H", "H100", "--gpus", 8, "--batch", 64, "--weight-bits", 8]
    code, out, _ = cli(*args)
    assert code == 0 and re.search(
        r"^attention_degree +5.278$", out, re.M
    )  # 8^(4/5), §A5's divisor
    assert "real-valued GPUs, batches and degrees are the paper's continuous model" in out
    assert "layouts continuous (§A5)" in out.splitlines()[-1]
    code, out, _ = cli(*args, "--discrete", "--format", "csv")
    row = pd.read_csv(io.StringIO(out), comment="#").iloc[0]
    degrees = row[["pipeline_degree", "tensor_degree", "attention_degree", "expert_degree"]]
    assert code == 0 and list(degrees) == [1, 8, 4, 8]  # attention on 4 of the 8 KV heads' GPUs
    assert "continuous model" not in out and "layouts whole (discrete, §B7)" in out
    # the API: whole layouts for every given count, and a count no layout splits is said so
    df = ie.points("Llama 3 8B", "H100", gpus=[1, 2, 4, 8], batch=[64], discrete=True)
    cols = ["pipeline_degree", "tensor_degree", "attention_degree", "expert_degree"]
    assert np.all(df[cols].to_numpy() == np.round(df[cols].to_numpy()))
    code, _, err = cli(
        "point", "Llama 3 70B", "-H", "H100", "--gpus", 3, "--batch", 4, "--discrete"
    )
    assert code == 1 and "no whole layout of 3 GPUs splits Llama 3 70B evenly" in err
    assert "1, 2, 4, 5 or 7 GPUs do" in err  # 28,672 = 2^12 x 7: tensor degrees of 3 do not
    code, _, err = cli(
        "point", "Llama 3 8B", "-H", "H100", "--gpus", 2.5, "--batch", 4, "--discrete"
    )
    assert code == 2 and err.startswith("error: --gpus: is 2.5; whole layouts")
    # a batch of 8.5 requests was laid out and printed as "batch 8.5" under "whole layouts"
    lengths = {"point": (), "prefill": ("--prompt-tokens", 100)}
    for command in ("point", "request", "disagg", "prefill"):
        code, _, err = cli(command, "Llama 3 8B", "-H", "H100", "--gpus", 2, "--batch", 8.5,
                           "--discrete", *lengths.get(command, ("--prompt-tokens", 100,
                                                               "--output-tokens", 10)))  # fmt: skip
        assert code == 2 and err.startswith(
            "error: --batch: is 8.5; whole layouts (discrete) lay out whole requests"
        ), (command, err)


def test_request_prefill_and_disagg_take_discrete_too():
    base = ["-H", "H100-paper", "--gpus", 8]
    code, out, _ = cli("request", "Llama 3 8B", *base, "--batch", 64, "--prompt-tokens", 2000,
                       "--output-tokens", 500, "--discrete", "--format", "csv")  # fmt: skip
    row = pd.read_csv(io.StringIO(out), comment="#").iloc[0]
    assert code == 0 and row["attention_degree"] == round(row["attention_degree"])
    code, out, _ = cli("request", "Llama 3 8B", *base, "--batch", 64, "--prompt-tokens", 2000,
                       "--output-tokens", 500)  # fmt: skip
    assert (
        code == 0 and "attention_degree                 5.278" in out and "continuous model" in out
    )
    code, out, _ = cli("prefill", "Llama 3 70B", *base, "--prompt-tokens", 8000, "--discrete")
    assert code == 0 and "layouts whole (discrete, §B7)" in out


# --- 6. capacity: more headroom on a price tie; its CSV and JSON carry the plan -----------------


def _row(hardware, size, per_instance, instances, price):
    return {
        "hardware": hardware,
        "pool": "deployment",
        "gpus_per_instance": size,
        "max_rate_per_instance": per_instance,
        "instances": instances,
        "gpus": size * instances,
        "usd_per_hour": size * instances * price,
        "excluded": False,
        "setting": hardware,
    }


def test_a_price_tie_goes_to_the_plan_with_more_headroom():
    # the user guide's case: 2 x 4 H100s hold 2 x 13.24 = 26.5 req/s, 1 x 8 H100s 32.5 req/s,
    # both 8 GPUs at $16.80/h; the 8-GPU instance holds 23 % more load for the same price
    rows = [_row("H100", 4, 13.24, 2, 2.1), _row("H100", 8, 32.49, 1, 2.1)]
    (cost, gpus, _, first), (_, _, _, second) = _options(rows)
    assert cost == pytest.approx(16.8) and gpus == 8
    assert (first.gpus_per_instance, first.instances) == (8, 1)
    assert (second.gpus_per_instance, second.instances) == (4, 2)
    # a cheaper plan still wins whatever its headroom
    rows.append(_row("H100", 2, 7.73, 3, 2.1))
    assert _options(rows)[0][3].gpus_per_instance == 2


def test_a_price_tie_between_pools_goes_to_the_pool_with_more_headroom():
    # the user guide's disaggregated example: decode on 1 x 4 H200s holds 11.05 req/s and on
    # 2 x 2 H200s 2 x 5.13 = 10.26, both $11.76/h; the pool that holds more is paired, as a
    # co-located tie is decided (it used to be whichever row came first)
    def pool(kind, size, per_instance, instances, price):
        return dict(
            _row("H200", size, per_instance, instances, price), pool=kind, speculation="none"
        )

    prefill = pool("prefill", 2, 4.13, 3, 2.1)
    for decode in (
        [pool("decode", 2, 5.13, 2, 2.94), pool("decode", 4, 11.05, 1, 2.94)],
        [pool("decode", 4, 11.05, 1, 2.94), pool("decode", 2, 5.13, 2, 2.94)],
    ):
        cost, gpus, _, d = _options([prefill, *decode])[0]
        assert cost == pytest.approx(6 * 2.1 + 4 * 2.94) and gpus == 10
        assert (d.gpus_per_instance, d.instances) == (4, 1)
    # a cheaper pool is paired whatever it holds
    cheaper = [*decode, pool("decode", 1, 2.0, 1, 2.94)]
    assert _options([prefill, *cheaper])[0][3].gpus_per_instance == 1


def test_a_plan_says_which_layout_it_runs_where_its_row_names_another():
    """An instance takes the layout that serves its load fastest (§E6): a candidate's row names
    the one it holds its most load with, the deployment runs the one for its share of the
    offered load. Llama 3 70B on 8 H100s at 30 req/s: three instances at 10 req/s each run
    TP8, and so does the row (its weights fit on fewer GPUs: no pipeline, §E7); where the row
    names another (TP4 x PP2, as it did when pipelines were chosen) the plan says both, and its
    CSV's ``plan_layout`` is the one it runs. Where they agree it says nothing."""
    import dataclasses

    from inference_econ.load.arrivals import make_traffic
    from inference_econ.load.targets import Targets
    from inference_econ.optimise import capacity

    traffic = make_traffic(30, "lognormal:1000:0.8", "lognormal:200:0.6", requests=300, seed=1)
    targets = Targets(2.0, 0.05)
    setting = ie.make_setting("Llama 3 70B", "H100", assumptions="achievable")
    ran = capacity.cheapest_deployment([setting], traffic, targets, sizes=[8])
    assert ran.deployment.instances == 3 and "TP8" in ran.result.layout
    assert ran.candidates.loc[ran.candidates["chosen"], "layout"].tolist() == [ran.result.layout]
    assert ran.layout_note is None
    other = ran.candidates.copy()
    other.loc[other["chosen"], "layout"] = "8 GPUs: TP4 (attention TP4), PP2, 1-D"
    plan = dataclasses.replace(ran, candidates=other)
    row = plan.candidates[plan.candidates["chosen"]].iloc[0]
    note = plan.layout_note
    assert note is not None and plan.result.layout in note and row["layout"] in note
    assert "(10 req/s)" in note and f"{row['max_rate_per_instance']:.4g} req/s" in note
    table = plan.to_dataframe()
    assert table.loc[table["chosen"], "plan_layout"].tolist() == [plan.result.layout]
    assert table.loc[table["chosen"], "layout"].tolist() == [row["layout"]]
    small = ie.make_setting("Llama 3 8B", "H100", assumptions="achievable")
    agree = capacity.cheapest_deployment([small], traffic, targets, sizes=[2])
    assert agree.candidates[agree.candidates["chosen"]].iloc[0]["layout"] == agree.result.layout
    assert agree.layout_note is None


def test_capacity_csv_and_json_carry_the_chosen_plan():
    args = ["capacity", "Llama 3 8B", "-H", "H100", "--rate", 5, "--prompt-tokens", 200,
            "--output-tokens", 50, "--requests", 100, "--max-gpus", 1, "--slo-tpot-p99", 0.05, "-q"]  # fmt: skip
    code, out, _ = cli(*args, "--format", "csv")
    table = pd.read_csv(io.StringIO(out), comment="#")
    chosen = table[table["chosen"]].iloc[0]
    code2, text, _ = cli(*args)
    assert code == code2 == 0
    for name in (
        "usd_per_m_input_tokens",
        "usd_per_m_output_tokens",
        "usd_per_m_output_tokens_all_in",
    ):
        shown = float(text.split(f"\n{name} ")[1].split()[0].replace(",", ""))
        assert chosen[name] == pytest.approx(shown, rel=1e-3), name  # the text table's figure
    for name in ("ttft_p99_s", "tpot_p99_s", "e2e_p99_s", "load_headroom", "deployment"):
        assert name in table and not pd.isna(chosen[name]), name
    assert (
        math.isnan(table[~table["chosen"]]["usd_per_m_output_tokens_all_in"].iloc[0])
        if (~table["chosen"]).any()
        else True
    )


def test_a_prefill_pool_too_small_is_named_not_the_whole_mix():
    """Llama 3 70B fits co-located on 8 H100s, but not a one-GPU prefill pool: the refusal
    named the 8 GPUs ("does not fit ... co-located or disaggregated"), which serve it; it names
    the prefill pool and its fix."""
    args = ["disagg", "Llama 3 70B", "-H", "H100", "--gpus", "8", "--batch", "64",
            "--prompt-tokens", "4000", "--output-tokens", "500"]  # fmt: skip
    r = CliRunner().invoke(main, [*args, "--prefill-gpus", "1"])
    assert r.exit_code == 1 and "the prefill pool of 1 x H100-SXM does not hold" in r.output
    assert "give --prefill-gpus more GPUs" in r.output
    assert CliRunner().invoke(main, args).exit_code == 0
