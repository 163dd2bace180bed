"""TensorRT-LLM's attention-DP balancing as a load setting: what it does to a run, how a plan
exports it, and the values and engines it is refused with."""

import warnings

import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ import api
from inference_econ.cli import main
from inference_econ.errors import SpecError
from inference_econ.export import bundle
from inference_econ.load.deployment import fixed_layout
from inference_econ.model.mixed_step import EngineLayout

# DeepSeek-R1 on 8 H200 as DEP8 at 9 req/s of 1,000 / 1,000 tokens: without balancing every
# rank's prompt stalls the other seven's decoding in turn
RUN = dict(engine="trtllm", arrival_rate_per_s=9, prompt_tokens=1000, output_tokens=1000,
           requests=1000, slo_tpot_p99_s=0.2, slo_ttft_p99_s=10)  # fmt: skip


def test_balanced_ranks_prefill_together_and_hold_the_targets():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unbalanced run falls behind, and says so
        plain = ie.simulate_load("DeepSeek-R1", "H200", gpus=8, layout="TP8 attention-DP", **RUN)
    held = ie.simulate_load(
        "DeepSeek-R1", "H200", gpus=8, layout="TP8 attention-DP", adp_balance="0,60", **RUN
    )
    assert not plain.meets_targets and held.meets_targets
    # prompts held for the other ranks' lengthen the first token and shorten every later one
    assert held.tpot_s.p99 < 0.6 * plain.tpot_s.p99
    assert held.ttft_s.p99 > plain.ttft_s.p99
    assert held.metadata()["adp_balance"] == "0,60" and "adp_balance" not in plain.metadata()


def test_a_capacity_export_writes_the_balancing_where_a_worker_runs_attention_dp():
    load = dict(engine="trtllm", weight_bits=8, arrival_rate_per_s=20.0, input_lengths="1000",
                output_lengths="1000", slo_ttft_p99_s=5.0, slo_tpot_p99_s=0.1, requests=100,
                sizes=[8], adp_balance="2,6")  # fmt: skip
    with fixed_layout(8, EngineLayout(8, 1, 8.0)):
        plan = api.export("DeepSeek-R1", "H200", plan="capacity", **load)
    assert plan.adp_balancing == (2, 6) and plan.workers[0].attention_dp == 8
    text = bundle.render(plan)["trtllm-server.yaml"]
    assert "attention_dp_config:\n  enable_balance: true\n  batching_wait_iters: 2\n" in text
    assert "  timeout_iters: 6\n" in text
    with fixed_layout(8, EngineLayout(8, 8, 1.0)):  # attention over the tensor group
        plan = api.export("DeepSeek-R1", "H200", plan="capacity", **load)
    assert "attention_dp_config" not in bundle.render(plan)["trtllm-server.yaml"]
    assert any(n.startswith("attention_dp_config is not written") for n in plan.notes)


@pytest.mark.parametrize(
    "text",
    ["60", "0,0", "a,60", "-1,60", "0,60,1", "\u00b2,60", "0,100001", "1" + "0" * 30 + ",60",
     "0," + "9" * 5000],
    ids=lambda text: text if len(text) < 20 else f"{len(text)} characters",
)  # fmt: skip
def test_a_balancing_that_is_not_two_step_counts_is_refused(text):
    """Each count is a whole number of steps up to 100,000: a longer one (a number of 5,000
    digits, which int() refuses to read) is refused in one line, not a traceback."""
    with pytest.raises(SpecError, match=r"adp_balance.*WAIT,TIMEOUT.*at most 100,000"):
        ie.simulate_load("DeepSeek-R1", "H200", gpus=8, adp_balance=text, **RUN)


def test_a_balancing_given_as_a_config_is_held_to_the_same_counts():
    assert ie.EngineConfig(adp_balancing=(100_000, 100_000)).adp_balancing == (100_000, 100_000)
    with pytest.raises(SpecError, match=r"adp_balancing.*at most 100,000"):
        ie.EngineConfig(adp_balancing=(0, 10**30))


def test_a_balancing_is_refused_off_tensorrt_llm_in_one_line():
    with pytest.raises(SpecError, match=r"adp_balance.*TensorRT-LLM's.*engine is vllm"):
        ie.simulate_load("DeepSeek-R1", "H200", gpus=8, **dict(RUN, engine="vllm"),
                         adp_balance="0,60")  # fmt: skip
    result = CliRunner().invoke(
        main,
        ["simulate", "DeepSeek-R1", "-H", "H200", "--gpus", "8", "--rate", "2",
         "--prompt-tokens", "500", "--output-tokens", "50", "--assumptions", "refined",
         "--adp-balance", "0,60"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "--adp-balance" in result.output and "ideal" in result.output


def test_a_run_says_where_its_balancing_is_not_run():
    """Where the layout has one attention group there is nothing to balance, and where the
    engine speculates its ranks are pooled (§F9): each run says so in a note, beside the
    balancing its metadata states (the figures are the unbalanced run's)."""
    run = dict(RUN, arrival_rate_per_s=4, requests=200, adp_balance="0,60")
    tp = ie.simulate_load("DeepSeek-R1", "H200", gpus=8, layout="TP8", **run)
    (note,) = [n for n in tp.notes if n.startswith("attention-DP balancing")]
    assert note.startswith("attention-DP balancing 0,60 balances nothing here: the layout (8 GPUs:")
    assert "no attention_dp_config" in note and tp.metadata()["adp_balance"] == "0,60"
    dep = ie.simulate_load("DeepSeek-R1", "H200", gpus=8, layout="TP8 attention-DP", **run)
    assert not [n for n in dep.notes if n.startswith("attention-DP balancing")]
    mtp = dict(run, draft_heads="mtp", max_draft_tokens=2)
    spec = ie.simulate_load("DeepSeek-R1", "H200", gpus=8, layout="TP8 attention-DP", **mtp)
    (note,) = [n for n in spec.notes if n.startswith("attention-DP balancing")]
    assert "0,60 is not simulated: an engine that speculates pools its attention ranks" in note
    del mtp["adp_balance"]
    plain = ie.simulate_load("DeepSeek-R1", "H200", gpus=8, layout="TP8 attention-DP", **mtp)
    assert spec.tpot_s.p99 == plain.tpot_s.p99 and spec.ttft_s.p99 == plain.ttft_s.p99


def test_a_load_frontier_names_the_layouts_whose_runs_do_not_balance():
    load = dict(engine="trtllm", arrival_rate_per_s=5, prompt_tokens=1000, output_tokens=200,
                requests=200, slo_tpot_p99_s=0.1, adp_balance="0,60", sizes=[8])  # fmt: skip
    meta = ie.load_frontier("DeepSeek-R1", "H200", **load).metadata()
    assert meta["adp_balance"] == "0,60"
    assert meta["adp_balance_not_run_on"] == (
        "8 GPUs: TP8 (attention TP8), PP1, 1-D, experts EP8 from a micro-batch of 64, "
        "tensor-split below"
    )


def test_a_fleet_file_names_where_it_gives_a_balancing_its_engine_lacks():
    """A fleet file's model under vLLM given adp_balance is refused naming the file and its
    field, with the fix a file takes, when the file is read (not as the command line's
    --adp-balance once the search reaches it)."""
    from inference_econ.api.fleet import read_fleet

    model = dict(model="DeepSeek-R1", arrival_rate_per_s=2, input_lengths="1000",
                 output_lengths="200", adp_balance="0,60")  # fmt: skip
    fleet = dict(hardware="H200", defaults=dict(engine="vllm", slo_tpot_p99_s=0.1),
                 models=[model])  # fmt: skip
    with pytest.raises(SpecError) as refused:
        read_fleet(fleet)
    assert str(refused.value) == (
        "fleet: field 'models[0].adp_balance': is TensorRT-LLM's attention-DP balancing, and the "
        "engine is vllm (drop adp_balance, or give 'engine: trtllm' to models[0])"
    )
    fleet["defaults"]["engine"] = "trtllm"
    (planned,) = read_fleet(fleet)
    assert planned.config.adp_balancing == (0, 60)


ROWS = """source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,output_len,metric,value,unit,notes,licence
run a,DeepSeek-R1,FP8,H200,8,TP8 EP8 attn-DP,concurrency 64,1000,1000,mean_TPOT,60,ms,"TensorRT-LLM 1.2.1; {a}",CC0
run b,DeepSeek-R1,FP8,H200,8,TP8 EP8 attn-DP,concurrency 64,1000,1000,mean_TPOT,60,ms,TensorRT-LLM 1.2.1,CC0
run c,DeepSeek-R1,FP8,H200,8,TP8 EP8 attn-DP,concurrency 64,1000,1000,mean_TPOT,60,ms,"vLLM 0.11.0; {a}",CC0
run d,DeepSeek-R1,FP8,H200,8,TP8 EP8 attn-DP,concurrency 64,1000,1000,mean_TPOT,60,ms,TensorRT-LLM 1.2.1; attention-DP balancing 0/0,CC0
"""


def test_a_result_that_states_the_balancing_is_replayed_with_it(tmp_path):
    """An export's benchmark states the balancing its plan ran ("attention-DP balancing
    2,6"), and compare-measured replays a row stating it so (a config's words too); under
    another engine it says the balancing is not run, and a timeout of 0 leaves that row out
    with its reason while the others are predicted."""
    from inference_econ.export import benchmark_commands as bc
    from inference_econ.measured.comparison import compare

    load = dict(engine="trtllm", weight_bits=8, arrival_rate_per_s=20.0, input_lengths="1000",
                output_lengths="1000", slo_ttft_p99_s=5.0, slo_tpot_p99_s=0.1, requests=100,
                sizes=[8], adp_balance="2,6")  # fmt: skip
    with fixed_layout(8, EngineLayout(8, 1, 8.0)):
        plan = api.export("DeepSeek-R1", "H200", plan="capacity", **load)
    assert bc.metadata(plan)["ie_stated"] == "attention-DP balancing 2,6"
    for said in (
        bc.stated(plan),
        "attention_dp_config: {enable_balance: true, batching_wait_iters: 2, timeout_iters: 6}",
    ):
        path = tmp_path / "rows.csv"
        path.write_text(ROWS.format(a=said))
        t = compare(path, "achievable").table
        assert list(t.status[:3]) == ["ok"] * 3, t[["status", "engine"]]
        assert "attention-DP balancing 2/6 steps as stated" in t.engine[0]
        assert "balancing" not in t.engine[1]
        assert "attention-DP balancing as stated is TensorRT-LLM's: not run by vllm" in t.engine[2]
        assert "attention-DP balancing '0', '0' is not read" in t.status[3]


def test_a_row_states_the_balancing_as_an_export_or_a_config_writes_it():
    """The words an export writes, a config that switches it on (TensorRT-LLM's or MLPerf's
    harness's) with both counts in either order, one count (the other at AttentionDpConfig's
    default, batching_wait_iters 10 and timeout_iters 50, llm_args.py) or none; counts without
    the switch, or with it off, are no balancing (the engine's default is off)."""
    from inference_econ.measured.semantics import balancing_of

    said = {
        "attention-DP balancing 0,60": (0, 60),
        "attention-DP balancing 2/6 steps": (2, 6),
        "attention_dp_config: {batching_wait_iters: 0, enable_balance: true, timeout_iters: 60}": (
            0,
            60,
        ),
        "attention_dp_config: {enable_balance: true}": (10, 50),
        "'enable_balance': True, 'timeout_iters': 30": (10, 30),
        "enable_balance: false, batching_wait_iters: 0, timeout_iters: 60": None,
        "max_num_tokens 8192": None,
    }
    for text, pair in said.items():
        assert balancing_of("", "server", text, "f.csv:2") == pair, text
    assert balancing_of("Server: attention-DP balancing 3,9; Offline: x", "server") == (3, 9)
    with pytest.raises(SpecError, match=r"f.csv:2.*notes.*'10', '0' is not read"):
        balancing_of("", "server", "enable_balance: true, timeout_iters: 0", "f.csv:2")


def test_a_point_export_refuses_a_load_setting_naming_the_plan_that_reads_it():
    """A point export is given its GPUs and batch: a load setting (the balancing, a step
    budget, a tuned search) is refused naming plan='capacity', not as an unknown setting."""
    point = dict(engine="trtllm", gpus=1, batch=8, prompt_tokens=100, output_tokens=10)
    for name, value in (
        ("adp_balance", "0,60"),
        ("step_token_budget", 2048),
        ("tune_engine", True),
    ):
        with pytest.raises(
            SpecError, match=rf"'{name}': is a load setting, read by plan='capacity'"
        ):
            api.export("Llama 3.1 8B", "H100", **point, **{name: value})


def test_on_is_the_engines_own_counts():
    """'on' runs the balancing at TensorRT-LLM's own counts (AttentionDpConfig's
    batching_wait_iters 10 and timeout_iters 50), as a config's enable_balance alone does."""
    from inference_econ.api.load_setup import load_inputs

    ONE = dict(arrival_rate_per_s=1, input_lengths="100", output_lengths="10")
    for text in ("on", " ON "):
        config = load_inputs({"adp_balance": text, **ONE}).config
        assert config.adp_balancing == (10, 50)
    assert load_inputs({"adp_balance": "2,6", **ONE}).config.adp_balancing == (
        2,
        6,
    )
