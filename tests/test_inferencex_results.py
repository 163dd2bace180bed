"""InferenceX's run summaries read as measured rows: the harness's ``agg_*.json`` (one, or a
JSON list of them as its collector writes), and the results site's rows with their figures
under ``metrics`` (measured/inferencex.py). The summaries here are written by hand in the
harness's keys (utils/process_result.py, SemiAnalysisAI/InferenceX at 843c6254); their
figures are made up for the reading, not measurements."""

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from inference_econ.cli import main
from inference_econ.errors import SpecError
from inference_econ.measured.comparison import compare
from inference_econ.measured.reading import load_measured

#: A single-node SGLang run as process_result.py writes it: DeepSeek-R1 on 8 H200 with
#: attention DP over the 8 and experts over 8, 64 clients, 1K/1K.
SGLANG = {
    "hw": "h200-cw_01",
    "conc": 64,
    "image": "lmsysorg/sglang:v0.5.5-cu129",
    "model": "deepseek-ai/DeepSeek-R1-0528",
    "infmax_model_prefix": "dsr1",
    "framework": "sglang",
    "precision": "fp8",
    "spec_decoding": "none",
    "disagg": False,
    "isl": 1024,
    "osl": 1024,
    "is_multinode": False,
    "tp": 8,
    "pp": 1,
    "dcp_size": 1,
    "pcp_size": 1,
    "ep": 8,
    "dp_attention": "true",
    "tput_per_gpu": 400.0,
    "output_tput_per_gpu": 200.0,
    "input_tput_per_gpu": 200.0,
    "mean_ttft": 0.9,
    "median_ttft": 0.8,
    "std_ttft": 0.3,
    "p99_ttft": 2.5,
    "mean_tpot": 0.04,
    "median_tpot": 0.039,
    "p99_tpot": 0.05,
    "mean_intvty": 25.0,
    "p99_intvty": 20.0,
    "mean_e2el": 42.0,
}
#: A TensorRT-LLM run (its image names the release; "#" for "/" as artifact names write it).
TRT = {
    **SGLANG,
    "hw": "cluster:b200-dgxc",
    "image": "nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc6",
    "model": "nvidia/DeepSeek-R1-0528-FP4-V2",
    "framework": "trt",
    "precision": "fp4",
    "tp": 4,
    "ep": 4,
    "isl": 8192,
    "conc": 128,
}
#: A vLLM run of gpt-oss-120b on two H100 without attention DP.
VLLM = {
    **SGLANG,
    "hw": "h100",
    "image": "vllm/vllm-openai:v0.11.0",
    "model": "openai/gpt-oss-120b",
    "infmax_model_prefix": "gptoss",
    "framework": "vllm",
    "precision": "fp4",
    "tp": 2,
    "ep": 1,
    "dp_attention": "false",
    "conc": 16,
}
#: A disaggregated run through NVIDIA Dynamo on GB200: one prefill worker of 4 GPUs and one
#: decode worker of 8, both with attention DP.
DYNAMO = {
    key: value
    for key, value in SGLANG.items()
    if key not in ("tp", "ep", "pp", "dp_attention", "dcp_size", "pcp_size")
} | {
    "hw": "gb200",
    "image": "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post1",
    "framework": "dynamo-trt",
    "precision": "fp4",
    "disagg": True,
    "is_multinode": True,
    "prefill_tp": 4,
    "prefill_ep": 4,
    "prefill_dp_attention": "true",
    "prefill_num_workers": 1,
    "decode_tp": 8,
    "decode_ep": 8,
    "decode_dp_attention": "true",
    "decode_num_workers": 1,
    "num_prefill_gpu": 4,
    "num_decode_gpu": 8,
}
#: A row of the results site's API: its GPU key as ``hardware``, its model key, a single-node
#: layout in ``decode_*`` and the figures under ``metrics``.
SITE = {
    "hardware": "h200",
    "framework": "vllm",
    "model": "gptoss120b",
    "precision": "fp4",
    "spec_method": "none",
    "disagg": False,
    "is_multinode": False,
    "prefill_tp": 4,
    "prefill_ep": 1,
    "prefill_dp_attention": False,
    "prefill_num_workers": 0,
    "decode_tp": 4,
    "decode_ep": 1,
    "decode_dp_attention": False,
    "decode_num_workers": 0,
    "num_prefill_gpu": 4,
    "num_decode_gpu": 4,
    "isl": 1024,
    "osl": 8192,
    "conc": 32,
    "image": "vllm/vllm-openai:v0.10.2",
    "metrics": {"tput_per_gpu": 900.0, "output_tput_per_gpu": 800.0, "median_tpot": 0.02},
    "date": "2026-01-15",
}


#: The harness's own files: InferenceX's utils/process_result.py and collect_results.py (at
#: 843c6254) run on a vllm bench serve result (tests/data/benchmark_results/README.md).
HARNESS = Path(__file__).parent / "data" / "benchmark_results" / "inferencex" / "agg_bmk.json"


def test_the_harnesss_own_summaries_read_as_it_ran_them():
    rows = load_measured(HARNESS)
    single = by_metric(r for r in rows if "[0]" in r.source)
    # p50_* restates median_*; std_* and *_intvty are left out
    assert set(single) == {
        "output_tput_per_gpu", "input_tput_per_gpu", "tput_per_gpu",
        *(f"{s}_{q}" for s in ("mean", "median", "p90", "p99")
          for q in ("ttft", "tpot", "itl", "e2el")),
    }  # fmt: skip
    one = single["output_tput_per_gpu"]
    # the prefix names the model where the served name is the server's own ("mock")
    assert (one.arch.name, one.gpu.name, one.gpus, one.layout.tensor) == (
        "Llama 3.3 70B",
        "H100-SXM",
        8,
        8,
    )
    # isl 200 / osl 40 drawn from int(0.8 L) to L: means 180 and 36
    assert (one.lengths.input_mean, one.lengths.output_mean) == (180.0, 36.0)
    assert (one.engine, one.engine_version, one.concurrency) == ("vllm", "0.11.0", 8)
    assert one.value == pytest.approx(117.03679362034048, rel=1e-5) and one.per_count == 8
    pools = by_metric(r for r in rows if "[1]" in r.source)
    out = pools["output_tput_per_decode_gpu"]
    assert out.disaggregated and (out.gpus, out.decode_gpus) == (16, 8)
    assert (out.prefill_layout.tensor, out.prefill_layout.replicas) == (4, 2)
    assert (out.engine, out.engine_version) == ("vllm", None)  # Dynamo's tag, not vLLM's
    assert pools["tput_per_gpu"].per_count == 16


def write(tmp_path, data, name="agg_bmk.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def by_metric(rows):
    return {r.metric_text: r for r in rows}


def test_a_single_node_summary_reads_its_gpu_layout_lengths_load_and_engine(tmp_path):
    rows = by_metric(load_measured(write(tmp_path, SGLANG, "agg_dsr1.json")))
    # std_* is no statistic the model gives; *_intvty restates TPOT (its "p99" is 1 / p99 TPOT)
    assert set(rows) == {
        "tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu", "mean_ttft",
        "median_ttft", "p99_ttft", "mean_tpot", "median_tpot", "p99_tpot", "mean_e2el",
    }  # fmt: skip
    row = rows["output_tput_per_gpu"]
    assert row.model_text == row.arch.name == "DeepSeek-R1"  # its prefix, "dsr1"
    assert row.gpu.name == "H200-SXM" and row.gpus == 8  # "h200-cw_01": the runner's site
    lay = row.layout
    assert (lay.tensor, lay.expert, lay.attention_ranks, lay.replicas) == (8, 8, 8, 1)
    # lengths uniform from int(0.8 x 1024) = 819 to 1024: 206 values, mean 921.5,
    # sd sqrt((206^2 - 1) / 12) = 59.47
    assert row.lengths.input_mean == pytest.approx(921.5)
    assert row.lengths.output_mean == pytest.approx(921.5)
    e_in2 = row.lengths.prefill_context * 2.0 * 921.5  # uniform_lengths: E[n^2] / (2 E[n])
    assert math.sqrt(e_in2 - 921.5**2) == pytest.approx(math.sqrt((206**2 - 1) / 12), rel=1e-3)
    assert row.concurrency == 64 and row.scenario == "closed_loop"
    assert (row.engine, row.engine_version) == ("sglang", "0.5.5")
    assert row.per == "gpu" and row.per_count == 8
    assert rows["mean_ttft"].value == 0.9 and rows["mean_ttft"].unit == "s"


def test_a_summary_is_predicted_with_the_harnesss_request_count(tmp_path):
    table = compare(write(tmp_path, SGLANG, "agg_dsr1.json"), "achievable").table
    ok = table[table["status"] == "ok"].set_index("metric")
    # 10 prompts per client (--num-prompts $((CONC * 10))): 640 requests replayed
    assert "640 requests" in ok.loc["output_tput_per_gpu", "engine"]
    out, total = ok.loc["output_tput_per_gpu", "predicted"], ok.loc["tput_per_gpu", "predicted"]
    # total tokens/s is the output rate times (input + output) / output: 921.5 + 921.5 over 921.5
    assert total / out == pytest.approx(2.0, rel=1e-9)
    assert ok.loc["input_tput_per_gpu", "predicted"] == pytest.approx(out, rel=1e-9)
    for metric in ("mean_tpot", "p99_ttft"):
        assert 0 < ok.loc[metric, "predicted"] < math.inf


def test_a_collected_list_and_the_sites_rows_read_one_summary_each(tmp_path):
    rows = load_measured(write(tmp_path, [SGLANG, TRT, VLLM, SITE]))
    trt = [r for r in rows if "[1]" in r.source]
    assert {r.gpu.name for r in trt} == {"B200-HGX"} and {r.gpus for r in trt} == {4}
    assert {(r.engine, r.engine_version) for r in trt} == {("trtllm", "1.2.0rc6")}
    assert all(r.lengths.input_mean == pytest.approx((6553 + 8192) / 2) for r in trt)
    assert all(r.bits[0] == 4 for r in trt)  # an NVFP4 checkpoint run as "fp4"
    vllm = [r for r in rows if "[2]" in r.source][0]
    assert (vllm.arch.name, vllm.gpus, vllm.layout.tensor) == ("gpt-oss-120b", 2, 2)
    assert vllm.layout.attention_ranks == 1 and (vllm.engine, vllm.engine_version) == (
        "vllm",
        "0.11.0",
    )
    site = [r for r in rows if "[3]" in r.source]
    assert {r.metric_text for r in site} == {"tput_per_gpu", "output_tput_per_gpu", "median_tpot"}
    one = site[0]  # its single-node layout is its decode_* fields; not num_*_gpu (tp x ep)
    assert (one.arch.name, one.gpu.name, one.gpus, one.layout.tensor) == (
        "gpt-oss-120b",
        "H200-SXM",
        4,
        4,
    )
    assert one.lengths.output_mean == pytest.approx((6553 + 8192) / 2)
    assert all(r.ok for r in rows), [r.status for r in rows if not r.ok]
    assert len(rows) == 3 * 10 + 3


def test_a_disaggregated_summary_is_per_decode_gpu_and_dynamos_tag_names_no_engine_release(
    tmp_path,
):
    rows = by_metric(load_measured(write(tmp_path, DYNAMO, "agg_dynamo.json")))
    assert "output_tput_per_gpu" not in rows and "input_tput_per_gpu" not in rows
    out = rows["output_tput_per_decode_gpu"]
    assert out.disaggregated and out.gpus == 12 and out.decode_gpus == 8
    assert out.per == "decode_gpu" and out.per_count == 8
    assert out.layout.attention_ranks == 8 and out.prefill_layout.tensor == 4
    # the Dynamo runtime's tag is Dynamo's release (0.8.1), not TensorRT-LLM's
    assert (out.engine, out.engine_version) == ("trtllm", None)
    assert rows["tput_per_gpu"].per_count == 12  # is_multinode: over all 12
    older = {k: v for k, v in DYNAMO.items() if k != "is_multinode"}
    rows = by_metric(load_measured(write(tmp_path, older, "agg_older.json")))
    assert "tput_per_gpu" not in rows  # divided by a count the summary does not state


def test_runs_the_model_cannot_read_say_why_and_the_others_go_on(tmp_path):
    agentic = {**SITE, "benchmark_type": "agentic_traces", "isl": None, "osl": None}
    runs = [
        SGLANG,
        {**SGLANG, "spec_decoding": "mtp"},
        {**SGLANG, "dcp_size": 2},
        agentic,
        {**SGLANG, "isl": 1000.5},
        {**DYNAMO, "prefill_hw": "gb200", "decode_hw": "gb300"},
        {**SGLANG, "tp": 8.5},
        {**SGLANG, "mean_ttft": None, "p99_ttft": None},  # null: not measured, no row
        {k: v for k, v in SGLANG.items() if not k.endswith(("tpot", "ttft", "e2el", "gpu"))},
    ]
    rows = load_measured(write(tmp_path, runs))
    status = {i: {r.status for r in rows if f"[{i}]" in r.source} for i in range(len(runs))}
    assert status[0] == {"ok"}
    assert all("speculative decoding" in s for s in status[1])
    assert all("dcp_size" in s and "context parallelism" in s for s in status[2])
    assert all("agentic_traces" in s for s in status[3])
    assert all("isl" in s and "whole number" in s for s in status[4])
    assert all("two kinds of GPU" in s for s in status[5])
    assert all("tp" in s and "8.5" in s for s in status[6])
    assert {r.metric_text for r in rows if "[7]" in r.source} == {
        "tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu", "median_ttft",
        "mean_tpot", "median_tpot", "p99_tpot", "mean_e2el",
    }  # fmt: skip
    none = [r for r in rows if "[8]" in r.source]  # no figure: one row, with the reason
    assert len(none) == 1 and "the run has no figure" in none[0].status


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"conc": [64]}, "[1].conc"),
        ({"metrics": [1]}, "[1].metrics"),
        ({"hw": {"a": 1}}, "[1].hw"),
        ({"tp": [8]}, "[1].tp"),
        ({"mean_tpot": "fast"}, "[1].mean_tpot"),
    ],
)
def test_a_field_of_the_wrong_type_is_the_files_one_line_error(tmp_path, change, field):
    path = write(tmp_path, [SGLANG, {**SGLANG, **change}])
    with pytest.raises(SpecError) as err:
        load_measured(path)
    assert err.value.field == field
    result = CliRunner().invoke(main, ["compare-measured", str(path)])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert field in result.output and "agg_bmk.json" in result.output


def layout_of(rows, i):
    lay = next(r for r in rows if f"[{i}]" in r.source).layout
    return (lay.tensor, lay.pipeline, lay.expert, lay.attention_ranks, lay.replicas)


def test_layouts_are_read_as_each_engine_ran_them(tmp_path):
    vllm_dep = {**VLLM, "dp_attention": "true", "tp": 8}  # --data-parallel-size 8, experts TP
    dynamo_vllm = {  # decode ranks of TP1 over EP8's GPUs (num_decode_gpu / workers)
        **DYNAMO, "framework": "dynamo-vllm", "decode_tp": 1, "decode_ep": 8,
        "prefill_tp": 1, "prefill_ep": 4,
    }  # fmt: skip
    site_pp = {**SITE, "metrics": {**SITE["metrics"], "pp": 2}}  # the site files pp as a figure
    runs = [vllm_dep, dynamo_vllm, site_pp, {**VLLM, "ep": 1}, {**VLLM, "tp": 4, "ep": 4}]
    rows = load_measured(write(tmp_path, runs))
    assert all(r.ok for r in rows), {r.status for r in rows if not r.ok}
    assert layout_of(rows, 0) == (8, 1, 1, 8, 1)
    assert layout_of(rows, 1) == (8, 1, 8, 8, 1)
    pools = next(r for r in rows if "[1]" in r.source)
    assert (pools.prefill_layout.tensor, pools.prefill_layout.attention_ranks) == (4, 4)
    assert layout_of(rows, 2)[:2] == (4, 2) and {r.gpus for r in rows if "[2]" in r.source} == {8}
    assert layout_of(rows, 3) == (2, 1, 1, 1, 1)  # a stated EP1: experts not split
    assert layout_of(rows, 4) == (4, 1, 4, 1, 1)


def test_summaries_that_do_not_record_their_layout_say_so(tmp_path):
    old_disagg = {  # a raw summary of 2025-11: tp over all GPUs, no workers' layouts
        **{k: v for k, v in DYNAMO.items() if not k.startswith(("prefill_", "decode_"))},
        "tp": 12, "mtp": "off",
    }  # fmt: skip
    del old_disagg["is_multinode"]
    site_old = {**SITE, "framework": "dynamo-trt", "disagg": True, "is_multinode": False}
    runs = [
        old_disagg,
        site_old,
        {**SITE, "framework": "trt", "date": "2025-10-20"},
        {**SITE, "metrics": {**SITE["metrics"], "dcp_size": 8}},
        {**DYNAMO, "decode_pcp_size": 2},
        {**DYNAMO, "num_prefill_gpu": 8},  # one prefill worker of TP4 on 8 GPUs
        {**SGLANG, "scenario_type": "agentic-coding"},
        {**SGLANG, "conc": 6.5},
        {**SGLANG, "isl": 1e200},
        {**SGLANG, "mtp": "on", "spec_decoding": None},
        {**DYNAMO, "prefill_hw": "gb200-nv_0", "decode_hw": "gb200-nv_1"},
    ]
    rows = load_measured(write(tmp_path, runs))
    status = {i: {r.status for r in rows if f"[{i}]" in r.source} for i in range(len(runs))}
    expected = {
        0: "older than the workers' layouts",
        1: "placeholders",
        2: "chose expert and attention parallelism",
        3: "dcp_size is 8",
        4: "decode_pcp_size is 2",
        5: "each worker has 8 GPUs",
        6: "agentic-coding",
        7: "conc is 6.5",
        8: "isl is 1e+200",
        9: "speculative decoding",
    }
    for i, words in expected.items():
        assert all(words in s for s in status[i]), (i, status[i])
    assert status[10] == {"ok"}  # two runners of one GPU


@pytest.mark.parametrize(
    ("runs", "field"),
    [
        ([SGLANG, {**SGLANG, "dp_attention": [True]}], "[1].dp_attention"),
        ([SGLANG, None], "[1]"),
        ([SGLANG, {"completed": 1, "output_throughput": 1.0, "backend": "vllm"}], "[1]"),
    ],
)
def test_a_list_item_or_switch_that_is_not_a_summarys_is_the_files_error(tmp_path, runs, field):
    with pytest.raises(SpecError) as err:
        load_measured(write(tmp_path, runs))
    assert err.value.field == field


@pytest.mark.parametrize(
    ("runs", "field"),
    [
        ({k: v for k, v in SGLANG.items() if k != "hw"}, "hw"),
        ([SGLANG, {k: v for k, v in SGLANG.items() if k != "hw"}], "[1].hw"),
        ([{k: v for k, v in SGLANG.items() if k != "hw"}, SGLANG], "[0].hw"),
    ],
)
def test_a_summary_without_its_runner_is_one_line_naming_hw_and_the_fix(tmp_path, runs, field):
    """A summary without ``hw`` had read as "JSON, but not a result of vllm bench serve,
    aiperf or InferenceX" (one summary, or the first of a list), or a later one of a list as
    its whole object printed, "not an InferenceX run summary as the list's first is"."""
    path = write(tmp_path, runs)
    result = CliRunner().invoke(main, ["compare-measured", str(path)])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert result.output.strip() == (
        f"error: {path}: field '{field}': is missing: an InferenceX run summary names the "
        'runner it ran on (add "hw", the runner as the harness writes it: "h200", '
        '"b200-nscale")'
    )


def test_the_harnesss_attention_dp_balancing_is_replayed_where_its_scripts_run_it(tmp_path):
    """The harness's TensorRT-LLM scripts switch on attention-DP balancing wherever they run
    attention DP (DeepSeek-R1: 0 and 60 steps; gpt-oss: TensorRT-LLM's defaults, 10 and 50):
    a DEP run's rows state it and are replayed with it; SGLang's, or attention over the tensor
    group, state none."""
    gptoss = {**TRT, "infmax_model_prefix": "gptoss", "model": "openai/gpt-oss-120b", "tp": 4,
              "ep": 4}  # fmt: skip
    runs = [TRT, gptoss, {**TRT, "dp_attention": "false", "ep": 1}, SGLANG]
    rows = load_measured(write(tmp_path, runs))
    assert all(r.ok for r in rows), {r.status for r in rows if not r.ok}
    said = {i: {r.adp_balancing for r in rows if f"[{i}]" in r.source} for i in range(4)}
    assert said == {0: {(0, 60)}, 1: {(10, 50)}, 2: {None}, 3: {None}}
    t = compare(write(tmp_path, [TRT], "one.json"), "achievable").table
    assert all("attention-DP balancing 0/60 steps as stated" in e for e in t.engine), t.engine
