"""Figures that state what they are, each where the number is made: the power bases in the
energy columns' names, the help's default preset of export, the decode-only price of a frontier
with prompts said, a study's key point beyond its GPUs' memory noted, and the interactive
report's missing library named as the option the user typed."""

import re

import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.errors import SpecError
from inference_econ.optimise.frontier import Frontier
from inference_econ.studies.study import _note_kv_excess, key_point_rows


def cli(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_the_energy_columns_name_their_power_basis():
    """tokens/s per kW is of IT power and per MW of facility power (IT times the PUE): 972.7
    per kW read as 972,700 per MW where the tool printed 748,237. The names say so, and the
    two differ by exactly the PUE."""
    code, out, _ = cli("point", "Llama 3 70B", "-H", "H100-paper", "--gpus", 8, "--batch", 64)
    assert code == 0
    kw = float(re.search(r"^output_tokens_per_s_per_kw_it +([\d.,]+)$", out, re.M)[1])
    mw = float(
        re.search(r"^output_tokens_per_s_per_mw_facility +([\d.,]+)$", out, re.M)[1].replace(
            ",", ""
        )
    )
    assert mw == pytest.approx(1000 * kw / 1.3, rel=1e-3)  # the default PUE, 1.3
    assert "output_tokens_per_s_per_kw " not in out and "output_tokens_per_s_per_mw " not in out


def test_export_help_states_the_preset_an_export_uses():
    """export's figures are its engine's (achievable) unless --assumptions says otherwise; its
    help said [default: paper]."""
    code, out, _ = cli("export", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert re.search(r"--assumptions TEXT .*? \[default: achievable\]", text)
    assert "--assumptions defaults to achievable there" in " ".join(
        cli("frontier", "--help")[1].split()
    )


def test_a_frontier_with_prompts_says_its_price_is_decode_only():
    """frontier --prompt-tokens sets the TTFT limit and the layouts that meet it, but $/Mtok
    stays the decode steps' (the paper's cost per token): 30.96 GPUs x 2.1 USD/h over 93.85
    tok/s x 46.81 requests is the preference point's 4.11 with no prefill charged. A note says
    so and where prompts are priced."""
    front = ie.frontier(
        "Llama 3 8B", "H100-paper", context_tokens=2000, prompt_tokens=2000, grid_points=30
    )
    note = next(n for n in front.notes if n.startswith("$/Mtok is decode-only"))
    assert "2,000 prompt tokens is not charged" in note and "'request'" in note
    p = front.points.iloc[len(front.points) // 2]
    by_hand = 1e6 * p.gpus * 2.1 / 3600 / (p.tokens_per_s * p.batch)
    assert p.usd_per_mtok == pytest.approx(by_hand, rel=1e-9)
    plain = ie.frontier("Llama 3 8B", "H100-paper", context_tokens=2000, grid_points=30)
    assert not any(n.startswith("$/Mtok is decode-only") for n in plain.notes)


def test_a_study_key_point_beyond_its_gpus_memory_says_so():
    """Under the paper preset (one micro-batch's cache checked, as the paper does) a cheapest
    point can hold a whole batch whose KV cache is many times the GPUs' HBM; frontier notes it,
    and now so does the study's key point, with the numbers: Llama 3 70B at 1,000 tokens,
    batch 82,427 on 18.88 H100s needs 82,427 x 1,000 x 327,680 B = 27,010 GB of KV cache."""
    setting = ie.make_setting("Llama 3 70B", "H100-paper", weight_bits=8)
    rows = [
        {"point": "cheapest", "gpus": 18.88, "batch": 82427.0},
        {"point": "preference", "gpus": 12.92, "batch": 99.15},
        {"point": "at_speed", "feasible": False, "note": "too fast"},
    ]
    _note_kv_excess(setting, rows)
    assert "27,010 GB" in rows[0]["note"] and "18.88 x H100-paper" in rows[0]["note"]
    assert "note" not in rows[1] and rows[2]["note"] == "too fast"
    front = Frontier("x", ie.frontier("Llama 3 8B", "H100-paper", grid_points=20).points)
    assert all("note" not in r for r in key_point_rows(front))  # a plain frontier: no notes


def test_the_report_names_the_option_that_needs_plotly(monkeypatch):
    import builtins

    from inference_econ.output import report_figures

    real = builtins.__import__

    def no_plotly(name, *args, **kwargs):
        if name.startswith("plotly"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_plotly)
    with pytest.raises(SpecError) as e:
        report_figures.require_plotly()
    assert "--html, report" in str(e.value) and "inference-econ[html]" in str(e.value)


def test_a_study_states_the_context_and_price_basis_every_cell_used(tmp_path, help_example_runs):
    """The worked example's summary listed its axes and 8-bit weights but not the 1,000-token
    context its cells took by default, nor the price basis or that $/Mtok is decode-only (the
    study the --help example wrote once per session, read back from its cache)."""
    import shutil

    from inference_econ.runs.study_run import study_metadata

    folder, _ = help_example_runs
    shutil.copytree(folder / "out" / "study", tmp_path / "out")
    result = ie.study("examples/study.yaml", tmp_path / "out")
    assert result.computed == 0  # every cell from the cache
    meta = study_metadata(result)
    assert meta["context_tokens"] == 1000 and meta["price_basis"] == "paper"
    assert meta["prices"].startswith("usd_per_mtok is decode-only")


def test_a_prefill_names_its_speed_in_input_tokens():
    """prefill printed tokens_per_s 25,913, the name of a request's output speed elsewhere
    (point: 102.3); it is the pass's prompt tokens per second: 8,000 / 308.7 ms."""
    code, out, _ = cli(
        "prefill", "Llama 3 70B", "-H", "H100-paper", "--gpus", 8, "--prompt-tokens", 8000
    )
    assert code == 0 and not re.search(r"^tokens_per_s ", out, re.M)
    latency = float(re.search(r"^latency_ms +([\d.]+)$", out, re.M)[1])
    speed = float(re.search(r"^input_tokens_per_s +([\d,]+)$", out, re.M)[1].replace(",", ""))
    assert speed == pytest.approx(8000 / (latency / 1e3), rel=1e-3)


LOAD = dict(
    weight_bits=8,
    gpus=8,
    arrival_rate_per_s=18.7,
    input_lengths="lognormal:1000:0.8",
    output_lengths="lognormal:300:0.6",
    slo_ttft_p99_s=2.0,
    slo_tpot_p99_s=0.05,
    requests=2000,
)


def test_simulate_runs_a_plans_layout_when_given_one():
    """Llama 3.3 70B FP8 fits on fewer than 8 H100s, so the engine model does not pipeline an
    instance of 8 (§E7: copies of a smaller instance would): simulate chooses TP8 for it. A
    layout given by name still runs as given: --layout runs a plan's or a benchmark's, as a
    benchmark result states it (TP2 PP4 here, p99 TPOT the lower at this load); what it names
    must be one of the engine's layouts of the instance's GPUs."""
    chosen = ie.simulate_load("Llama 3.3 70B", "H100", **LOAD)
    fixed = ie.simulate_load("Llama 3.3 70B", "H100", **LOAD, layout="TP2PP4")
    assert fixed.layout == "8 GPUs: TP2 (attention TP2), PP4, 1-D" != chosen.layout
    assert fixed.tpot_s.p99 < chosen.tpot_s.p99
    assert ie.simulate_load("Llama 3.3 70B", "H100", **LOAD, layout="TP8").layout == (
        chosen.layout
    )  # the same run as the engine model's own choice
    for bad, says in (
        ("TP3", "uses 3 GPUs but an instance has 8"),
        ("TP2xPP2 x2", "is not one instance's layout of 8 GPUs"),
        (
            "TP8 attention-DP",
            "the engine does not run Llama 3.3 70B as 8 GPUs: TP8 (attention TP1)",
        ),
    ):
        with pytest.raises(SpecError, match="layout") as e:
            ie.simulate_load("Llama 3.3 70B", "H100", **LOAD, layout=bad)
        assert says in str(e.value)
    with pytest.raises(SpecError, match="only simulate_load runs"):
        ie.capacity(
            "Llama 3.3 70B", "H100", **{k: v for k, v in LOAD.items() if k != "gpus"}, layout="TP8"
        )


def test_layout_states_partial_attention_data_parallelism():
    """'TP8 DP2 attn-DP' (SGLang's --tp 8 --dp 2 --enable-dp-attention) attends on two ranks of
    TP4; 'TP8 attn-DP' on eight of TP1; the first had run as the second. TensorRT-LLM runs the
    second only (its export refuses the first, and so does its load engine)."""
    load = dict(weight_bits=8, gpus=8, arrival_rate_per_s=2.0, engine="sglang")
    load |= dict(input_lengths="500", output_lengths="20", requests=40)
    runs = {
        text: ie.simulate_load("DeepSeek-V3", "H200", **load, layout=text).layout
        for text in ("TP8 DP2 attn-DP", "TP8 attn-DP")
    }
    rule = "experts EP8 from a micro-batch of 64, tensor-split below"  # §A5's
    assert runs == {
        "TP8 DP2 attn-DP": f"8 GPUs: TP8 (attention TP4), PP1, 1-D, {rule}",
        "TP8 attn-DP": f"8 GPUs: TP8 (attention TP1), PP1, 1-D, {rule}",
    }
    # a stated expert degree places the experts so at every batch, and the layout says so
    for text, experts in (
        ("TP8 EP8 attn-DP", "experts EP8"),
        ("TP8 EP1", "experts tensor-split (EP1)"),
    ):
        layout = ie.simulate_load("DeepSeek-V3", "H200", **load, layout=text).layout
        assert layout.endswith(f"PP1, 1-D, {experts}"), (text, layout)
    # TensorRT-LLM's enable_attention_dp is every GPU attending alone or none: not two ranks
    load["engine"] = "trtllm"
    with pytest.raises(
        SpecError, match=r"does not run DeepSeek-V3 as 8 GPUs: TP8 \(attention TP4\)"
    ):
        ie.simulate_load("DeepSeek-V3", "H200", **load, layout="TP8 DP2 attn-DP")
    assert ie.simulate_load("DeepSeek-V3", "H200", **load, layout="TP8 attn-DP").layout == (
        f"8 GPUs: TP8 (attention TP1), PP1, 1-D, {rule}"
    )


def test_an_exports_figures_are_the_engine_it_launches():
    """A point plan's figures come from the engine its files launch: with a draft the request
    view did not choose, no speculation (the same figures as without the draft); one output
    token has no time per output token (not a NaN in plan.json); a worker that does not fit is
    refused by the memory check, with its numbers, before any run."""
    import json

    from inference_econ import api
    from inference_econ.errors import InfeasibleError
    from inference_econ.export.bundle import render

    common = dict(engine="vllm", gpus=8, batch=64, prompt_tokens=1000, output_tokens=300)
    plain = api.export("Llama 3.3 70B", "H100", weight_bits=8, **common)
    drafted = api.export("Llama 3.3 70B", "H100", weight_bits=8, draft="Llama 3.1 8B", **common)
    assert drafted.speculation is None and drafted.expected == plain.expected
    one = api.export(
        "Llama 3.1 8B", "H100", engine="vllm", gpus=1, batch=8, prompt_tokens=100, output_tokens=1
    )
    assert "tpot_s" not in one.expected and one.expected["output_tokens_per_s"] > 0
    json.loads(json.dumps(render(one), allow_nan=False))  # valid JSON: no NaN
    with pytest.raises(InfeasibleError, match="memory check failed: instance on 1 GPU"):
        api.export(
            "Llama 3 70B",
            "H100",
            engine="vllm",
            gpus=1,
            batch=8,
            prompt_tokens=100,
            output_tokens=100,
        )


def test_the_mean_batchs_interval_stays_within_what_an_instance_holds():
    """32 closed-loop clients on one instance: the mean batch's interval (the closed-loop TPOT
    class's band, x0.51-x1.09 at 90 %, about 29.6 requests) ends at 32 requests, not more than
    there are clients, and within the engine's batch cap when that is lower."""
    from inference_econ.serving.intervals import load_intervals

    load = dict(gpus=1, layout="TP1", input_lengths="1000", output_lengths="200", requests=320)
    for cap, limit in ((None, 32.0), (24, 24.0)):
        r = ie.simulate_load(
            "Llama 3.1 8B",
            "H100",
            **load,
            concurrency=32,
            engine="vllm@0.13.0",
            max_batch_requests=cap,
        )
        ends = load_intervals(r)
        assert r.batch_limit == limit and r.mean_batch <= limit
        assert ends["mean_batch_high90"] <= limit and ends["mean_batch_low90"] < r.mean_batch
        assert ends["mean_batch_high80"] < ends["mean_batch_high90"]
        if cap is None:  # the band's high end, 29.6 x 1.09, stops at the clients
            assert r.mean_batch * 1.05 < limit == ends["mean_batch_high90"], ends


def test_a_stated_expert_degree_is_the_one_simulated():
    """'TP8 EP8' splits the experts over the tensor group at every batch, as an engine launched
    with --ep-size 8 runs them, 'TP8 EP1' never; both had run as 'TP8' (the micro-batch rule of
    §A5), so a plan that launches EP8 at batch 32 was simulated without it. A partial split
    (EP2 of TP8) is not modelled and is refused."""
    load = dict(weight_bits=8, gpus=8, concurrency=32, engine="sglang", requests=64)
    load |= dict(input_lengths="1000", output_lengths="50")
    runs = {
        text: ie.simulate_load("DeepSeek-V3", "H200", **load, layout=text)
        for text in ("TP8 EP8", "TP8 EP1", "TP8")
    }
    speed = {text: r.output_tokens_per_s for text, r in runs.items()}
    assert len({round(v, 6) for v in speed.values()}) == 3, speed
    # the split is simulated, not ignored: EP8's experts cost otherwise than EP1's in the
    # decoding steps (at this batch the busiest EP rank's routing, docs/model-part-f.md §F7,
    # weighs against EP8; SGLang's prompts run in steps of their own)
    tpot = {text: r.tpot_s.mean for text, r in runs.items()}
    assert tpot["TP8 EP8"] / tpot["TP8 EP1"] - 1.0 > 0.01, tpot
    with pytest.raises(SpecError, match="EP2 splits the experts over part of the tensor group"):
        ie.simulate_load("DeepSeek-V3", "H200", **load, layout="TP8 EP2")


def test_no_latency_of_a_run_under_load_is_shorter_than_one_ideal_step():
    """One request at a time on one H100: the time per token's band reached down to 4.1 ms
    at 90 % (x0.49 of 8.3 ms), below what the ideal bound takes to read Llama 3.1 8B's
    weights once (5.0 ms, the refined preset's one token of one request): every latency's end
    stops there."""
    from inference_econ.serving.intervals import LOAD_LATENCIES, ideal, load_intervals
    from inference_econ.serving.step_floor import one_step_floor_s

    r = ie.simulate_load(
        "Llama 3.1 8B", "H100", gpus=1, arrival_rate_per_s=0.2, input_lengths="100",
        output_lengths="200", requests=200,
    )  # fmt: skip
    floor = one_step_floor_s(ideal(r.setting), (1,))
    weights_s = 16.06e9 / r.setting.gpu.hbm_bandwidth_bytes_per_s  # 8.03B parameters, BF16
    assert 0.9 * weights_s < floor < 1.2 * weights_s  # one read of the 16-bit weights
    ends = load_intervals(r)
    low = [ends[f"{n}_low90"] for n in LOAD_LATENCIES if f"{n}_low90" in ends]
    assert len(low) == len(LOAD_LATENCIES) and min(low) >= floor
    assert ends["tpot_mean_s_low90"] == pytest.approx(floor)  # the band's end was below it
    spec = r.setting.replace(spec=ie.SpecDecoding(ie.load_model("Llama 3 8B"), 0.8))
    assert one_step_floor_s(ideal(spec), (1,)) == 0.0  # a verified token can take under one step


def test_a_confident_plan_says_when_its_latencies_own_ends_pass_a_target():
    """The guide's plan (Llama 3.3 70B, 5 x 2 H100 at 20 req/s) is its own 90 % plan, yet its
    p99 TPOT's 90 % interval reaches 55.97 ms against a 50 ms target: the output says the two
    are sized on different bands, and says nothing where every end is within its target."""
    from types import SimpleNamespace

    from inference_econ.cli.capacity_commands import _latency_ends_note
    from inference_econ.load.deployment import Deployment
    from inference_econ.load.targets import Targets

    row = {"ttft_p99_s_high90": 2.559, "tpot_p99_s_high90": 0.05597, "e2e_p99_s_high90": 40.0}
    result = SimpleNamespace(row=lambda: row, hardware="H100-SXM")
    five = Deployment(2, 5)
    confident = SimpleNamespace(deployment=five, hardware=None, level=90)
    plan = SimpleNamespace(
        confident=confident, deployment=five, result=result, targets=Targets(2.0, 0.05)
    )
    (line,) = _latency_ends_note(plan)
    assert "p99 TTFT 2.559 s against 2 s; p99 TPOT 55.97 ms against 50 ms" in line
    assert "E2E" not in line
    assert _latency_ends_note(replaced(plan, targets=Targets(3.0, 0.06))) == []
    assert _latency_ends_note(replaced(plan, deployment=Deployment(2, 4))) == []


def replaced(ns, **changes):
    from types import SimpleNamespace

    return SimpleNamespace(**{**vars(ns), **changes})


def test_the_ideal_step_floor_leaves_prices_and_other_pools_prompts_alone():
    """A session's price is not a latency (it had been raised to 0.00498, the floor's seconds,
    from 5.8e-7 $); a prompt prefilled by a pool on other GPUs (B200) may be faster than one
    step of the decode pool's (L40S, 18.6 ms): its TTFT keeps its band."""
    from inference_econ.serving.intervals import load_intervals

    short = dict(gpus=1, input_lengths="100", output_lengths="200")
    busy = ie.simulate_load(
        "Llama 3.1 8B", "H100", **short, arrival_rate_per_s=3000, session_turns=3, requests=600
    )
    ends = load_intervals(busy)
    assert ends["usd_per_session_low90"] < busy.usd_per_session < ends["usd_per_session_high90"]
    split = ie.simulate_load(
        "Llama 3.1 8B", "L40S", **short, prefill_gpus=1, prefill_instances=1,
        prefill_hardware="B200", arrival_rate_per_s=0.2, requests=200,
    )  # fmt: skip
    ends = load_intervals(split)
    assert ends["ttft_mean_s_low90"] < split.ttft_s.mean < ends["ttft_mean_s_high90"]
    assert ends["tpot_mean_s_low90"] > 0.018  # the decode pool's own step stays its floor


def test_tables_inverse_analyses_and_derived_figures_say_first_whether_bound_or_expected(tmp_path):
    """A table scenario under achievable printed expected figures with no first line and no
    interval; infer and show printed figures of a preset without saying which."""
    scenario = tmp_path / "tab.yaml"
    scenario.write_text(
        "title: Two GPUs\nkind: table\n"
        "defaults: {model: Llama 3.1 8B, assumptions: achievable, weight_bits: 8, "
        "context_tokens: 2000, grid_points: 40}\n"
        "curves:\n  - {label: H100, hardware: H100-SXM}\n  - {label: H200, hardware: H200-SXM}\n"
    )
    code, out, _ = cli("run", scenario, "-q")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("Expected figures: achievable preset, engine profile")
    assert "tok/s 90 %" in lines[2] and "support" in lines[2]
    code, out, _ = cli("run", scenario, "-q", "--format", "csv")
    assert code == 0 and "tokens_per_s_low90" in out and "# Expected figures:" in out
    code, out, _ = cli("reproduce", "table-1", "-q")
    assert code == 0 and out.startswith("Ideal bound: paper preset")
    code, out, _ = cli("infer", "margin", "--model", "Llama 3 70B", "--speed", 158, "--price", 0.9,
                       "--weight-bits", 8, "--assumptions", "achievable", "--grid-points", 40)  # fmt: skip
    assert code == 0 and out.startswith(
        "Expected figures: achievable preset, engine profile trtllm; this table leaves out"
    )
    code, out, _ = cli("show", "Llama 3 70B", "-H", "H100")
    assert code == 0 and out.startswith("Ideal bound: paper preset")
    code, out, _ = cli("show", "H100")  # a GPU's own figures: computed under no preset
    assert code == 0 and not out.startswith(("Ideal bound", "Expected"))
