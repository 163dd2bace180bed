"""Benchmark tools' result files beyond ``vllm bench serve`` and aiperf's own tests: SGLang's
``bench_serving`` JSON lines (vLLM's keys, its own end-to-end latencies, no model name),
genai-perf's ``profile_export_genai_perf.json`` (its load and model in ``input_config``), the
server a run's ``backend`` names, a file cut short, and the columns ``calibrate`` takes from
the command line for a result that states none."""

from __future__ import annotations

import json
import shlex
import warnings
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.errors import SpecError
from inference_econ.measured.reading import load_measured

RESULTS = Path(__file__).parent / "data" / "benchmark_results"
VLLM_CONCURRENCY = json.loads((RESULTS / "vllm-bench-concurrency.json").read_text())

#: One run as SGLang's bench_serving writes it (``--output-file``): vLLM's keys, its own names
#: of the end-to-end latencies, Infinity for a run at maximum rate, and no model.
SGLANG_RUN = {
    "backend": "sglang",
    "dataset_name": "random",
    "request_rate": float("inf"),
    "max_concurrency": 64,
    "random_input_len": 1000,
    "random_output_len": 1000,
    "random_range_ratio": 1.0,
    "duration": 120.5,
    "completed": 640,
    "total_input_tokens": 640000,
    "total_output_tokens": 640000,
    "total_output_tokens_retokenized": 639800,
    "request_throughput": 5.31,
    "input_throughput": 5311.2,
    "output_throughput": 5311.2,
    "mean_e2e_latency_ms": 11900.0,
    "median_e2e_latency_ms": 11800.0,
    "p99_e2e_latency_ms": 12900.0,
    "mean_ttft_ms": 410.0,
    "median_ttft_ms": 300.0,
    "p99_ttft_ms": 1500.0,
    "mean_tpot_ms": 11.5,
    "median_tpot_ms": 11.4,
    "p99_tpot_ms": 13.0,
    "mean_itl_ms": 11.5,
    "median_itl_ms": 10.9,
    "p99_itl_ms": 30.0,
    "concurrency": 63.2,
}


def _stat(unit: str, avg: float) -> dict:
    return {"unit": unit, "avg": avg, "p50": avg, "p90": avg * 1.1, "p99": avg * 1.3}


#: genai-perf's export: aiperf's metric sections, its load and model in ``input_config``.
GENAI_PERF = {
    "request_throughput": {"unit": "requests/sec", "avg": 2.9},
    "request_latency": _stat("ms", 21800.0),
    "time_to_first_token": _stat("ms", 480.0),
    "inter_token_latency": _stat("ms", 20.8),
    "output_token_throughput": {"unit": "tokens/sec", "avg": 2980.0},
    "output_sequence_length": _stat("tokens", 1024.0),
    "input_sequence_length": _stat("tokens", 1024.0),
    "input_config": {
        "model": ["openai/gpt-oss-120b"],
        "backend": "tensorrtllm",
        "service_kind": "openai",
        "endpoint_type": "chat",
        "concurrency": 64,
        "request_rate": None,
        "num_prompts": 640,
    },
}


def _lines(tmp_path, runs, name="sglang.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    return path


def test_sglang_bench_serving_rows_name_sglang_and_read_its_latencies(tmp_path):
    runs = [SGLANG_RUN, {**SGLANG_RUN, "max_concurrency": 256, "output_throughput": 11200.0}]
    rows = load_measured(_lines(tmp_path, runs), {"model": "DeepSeek-R1", "hardware": "H200",
                                                  "n_gpus": "8", "precision": "FP8"})  # fmt: skip
    assert len(rows) == 14  # seven figures a run, its end-to-end latencies among them
    assert {r.engine for r in rows} == {"sglang"}  # not the vLLM profile the keys look like
    assert all(r.source.startswith("sglang bench_serving result") for r in rows)
    e2e = [r for r in rows if r.metric_text == "mean_e2el"]
    assert [r.value for r in e2e] == [11900.0, 11900.0]
    assert [r.concurrency for r in rows if r.metric_text == "throughput"] == [64.0, 256.0]
    assert rows[0].arch.name == "DeepSeek-R1"
    assert rows[0].status == "ok"


def test_sglang_rate_run_reads_little_law_from_its_own_latency_key(tmp_path):
    run = {**SGLANG_RUN, "request_rate": 4.0, "max_concurrency": None}
    rows = load_measured(_lines(tmp_path, [run]), {"model": "DeepSeek-R1", "hardware": "H200",
                                                   "n_gpus": "8", "precision": "FP8"})  # fmt: skip
    # 5.31 completed req/s x 11.9 s mean end-to-end: 63.19 requests in flight
    assert rows[0].concurrency == 63.19


def test_run_sending_every_request_at_once_is_a_run_at_maximum_load(tmp_path):
    """Both tools' default run (request rate inf, no --max-concurrency: vLLM writes "inf" and
    null, SGLang Infinity and null) sends every request at once: read as a maximum-load
    (offline) run of the requests it completed, as a measured CSV's "--request-rate inf" is. Every
    row had been unresolved, "a closed loop row needs its concurrency (batch_or_concurrency)",
    a column a result file does not have."""
    stated = {"model": "Llama 3.3 70B", "hardware": "H100", "n_gpus": "8", "precision": "FP8"}
    vllm = {**VLLM_CONCURRENCY, "request_rate": "inf", "max_concurrency": None}
    sglang = {**SGLANG_RUN, "max_concurrency": None}
    for path, runs, done in (
        (tmp_path / "vllm.json", vllm, 60),
        (tmp_path / "sg.jsonl", sglang, 640),
    ):
        path.write_text(json.dumps(runs, allow_nan=True))
        rows = load_measured(path, stated)
        assert {r.scenario for r in rows} == {"offline"}
        assert {r.lengths.issued for r in rows} == {done}
        assert {r.status for r in rows} == {"ok"}
        assert f"maximum load of its {done} requests" in rows[0].notes
    got = CliRunner().invoke(main, ["compare-measured", str(tmp_path / "vllm.json"), "-H",
        "H100", "--gpus", "8", "--precision", "FP8", "--assumptions", "achievable",
        "--format", "csv", "-q"])  # fmt: skip
    assert got.exit_code == 0, got.output
    table = [line.split(",") for line in got.stdout.splitlines() if line[:1].isdigit()]
    assert [(r[6], r[7], r[18]) for r in table][:2] == [
        ("throughput", "offline", "ok"),
        ("mean_TPOT", "offline", "ok"),
    ]
    assert float(table[0][11]) > 0  # predicted
    # a concurrency beside the infinite rate is still that closed loop
    capped = load_measured(_lines(tmp_path, [SGLANG_RUN], "capped.jsonl"), stated)
    assert {(r.scenario, r.concurrency) for r in capped} == {("closed_loop", 64.0)}


def test_result_naming_no_model_is_unresolved_with_the_option_that_gives_it(tmp_path):
    path = _lines(tmp_path, [SGLANG_RUN])
    rows = load_measured(path, {"hardware": "H200", "n_gpus": "8", "precision": "FP8"})
    assert {r.status for r in rows} == {"unresolved: model is not stated: give --model NAME"}
    got = CliRunner().invoke(main, ["compare-measured", str(path), "--assumptions",
        "achievable", "-H", "H200", "--gpus", "8", "--precision", "FP8", "--model",
        "DeepSeek-R1", "-q", "--format", "csv"])  # fmt: skip
    assert got.exit_code == 0, got.output
    assert got.output.count(",DeepSeek-R1,H200-SXM,8,") == 7


def test_vllm_run_against_an_sglang_server_is_sglang_rows(tmp_path):
    run = {**VLLM_CONCURRENCY, "backend": "sglang-oai-chat"}
    del run["ie_engine"]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    assert {r.engine for r in load_measured(path)} == {"sglang"}
    openai = {**run, "backend": "openai-chat"}  # names no server: the tool's own engine
    path.write_text(json.dumps(openai))
    assert {r.engine for r in load_measured(path)} == {"vllm"}


def test_genai_perf_export_reads_its_model_and_concurrency(tmp_path):
    path = tmp_path / "profile_export_genai_perf.json"
    path.write_text(json.dumps(GENAI_PERF))
    rows = load_measured(path, {"hardware": "B200", "n_gpus": "4", "precision": "FP4"})
    assert [r.metric_text for r in rows] == [
        "throughput", "mean_TPOT", "mean_TTFT", "p99_TTFT", "mean_e2el", "p99_e2el",
    ]  # fmt: skip
    assert {r.arch.name for r in rows} == {"gpt-oss-120b"}
    assert {r.concurrency for r in rows} == {64.0}
    assert rows[0].value == 2980.0 and rows[1].value == 20.8
    assert rows[0].source == "genai-perf result profile_export_genai_perf.json"


def test_result_file_cut_short_is_one_line_saying_so(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(VLLM_CONCURRENCY)[:700])
    got = CliRunner().invoke(main, ["compare-measured", str(path)])
    assert got.exit_code == 2
    line = got.output.strip().splitlines()[-1]
    assert line.startswith(f"error: {path}: not valid JSON at line 1: ")
    assert "cut short or damaged" in got.output
    assert "not a result of" not in got.output


def test_calibrate_takes_the_gpu_count_and_precision_a_result_leaves_out(tmp_path):
    run = {k: v for k, v in VLLM_CONCURRENCY.items() if not k.startswith("ie_")}
    run["model_id"] = "meta-llama/Llama-3.3-70B-Instruct"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    bare = CliRunner().invoke(main, ["calibrate", str(path), "--engine", "vllm"])
    assert bare.exit_code == 2 and "give --hardware NAME --gpus N" in bare.output
    got = CliRunner().invoke(main, ["calibrate", str(path), "--engine", "vllm", "-H", "H100",
                                    "--gpus", "8", "--precision", "FP8"])  # fmt: skip
    # read now: too few rows to fit, which is the fit's refusal (exit 1), not the reading's
    assert got.exit_code == 1, got.output
    assert "usable rows cannot fit" in got.output


#: The columns the command line states for a result that names no GPU, count, precision or model.
STATED_H200 = {"model": "Llama 3.3 70B", "hardware": "H200", "n_gpus": "8", "precision": "FP8"}
#: Four closed loops of SGLang against one server, its speed per request falling with load.
SGLANG_SWEEP = [
    {**SGLANG_RUN, "max_concurrency": c, "output_throughput": 90 * c / (1 + c / 40),
     "mean_tpot_ms": 1000 * (1 + c / 40) / 90}
    for c in (1, 4, 16, 64)
]  # fmt: skip


def test_calibration_counts_only_the_rows_the_model_predicts(tmp_path):
    """A calibration counts the rows compare-measured predicts: a closed loop's end-to-end
    latencies (mean and p99 e2el) among them, which its replay times request by request (they
    had been out of scope, left out of the calibration with a warning naming their lines)."""
    path = _lines(tmp_path, SGLANG_SWEEP, "sweep.jsonl")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", ".*rows not used")
        fit = ie.calibrate(path, "sglang", holdout=False, stated=STATED_H200)
    assert fit.rows == 28
    assert set(fit.predictions["quantity"]) == {
        "throughput", "tpot", "itl", "ttft", "ttft_p99", "e2e_latency", "e2e_latency_p99"
    }  # fmt: skip
    assert fit.fit_summary()["data"] == f"{path}: 28 end-to-end rows with status ok, 1 source"
    compared = CliRunner().invoke(main, ["compare-measured", str(path), "-H", "H200", "--gpus",
        "8", "--precision", "FP8", "--model", "Llama 3.3 70B", "--assumptions", "achievable"])  # fmt: skip
    assert compared.output.startswith("28 rows: 28 ok (read and predicted)")


def test_calibrated_profile_records_the_command_that_fits_it_again(tmp_path, monkeypatch):
    """A profile fitted to a result that names no GPU records the options that stated them:
    its ``fit.command`` run again fits the same terms (it had recorded only the file and the
    engine, a command whose every row is unresolved)."""
    path = _lines(tmp_path, SGLANG_SWEEP, "sweep.jsonl")
    monkeypatch.chdir(tmp_path)
    first = tmp_path / "first.yaml"
    args = ["calibrate", "sweep.jsonl", "--engine", "sglang", "--hardware", "H200", "--gpus",
            "8", "--precision", "FP8", "--model", "Llama 3.3 70B", "--no-holdout"]  # fmt: skip
    got = CliRunner().invoke(main, [*args, "-o", str(first)])
    assert got.exit_code == 0, got.output
    profile = yaml.safe_load(first.read_text())
    command = profile["fit"]["command"]
    assert command == (
        "inference-econ calibrate sweep.jsonl --engine sglang --model 'Llama 3.3 70B' "
        "--hardware H200 --gpus 8 --precision FP8"
    )
    again = tmp_path / "again.yaml"
    words = shlex.split(command)[1:] + ["--no-holdout", "-o", str(again)]
    rerun = CliRunner().invoke(main, words)
    assert rerun.exit_code == 0, rerun.output
    assert (
        path.is_file()
        and yaml.safe_load(again.read_text())["gemm_efficiency_scale"]
        == (profile["gemm_efficiency_scale"])
    )


def test_aiperf_latencies_read_in_the_unit_their_metric_states(tmp_path):
    """A genai-perf export whose latencies are in seconds reads as the same export in ms (a
    unit it does not know is its field's refusal, never a figure read a thousand times off)."""
    seconds = {
        **GENAI_PERF,
        **{k: _stat("s", GENAI_PERF[k]["avg"] / 1e3)
           for k in ("request_latency", "time_to_first_token", "inter_token_latency")},
    }  # fmt: skip
    given = {"hardware": "H200", "n_gpus": "8", "precision": "MXFP4"}
    ms_rows, s_rows = (
        load_measured(_lines(tmp_path, [run], f"{name}.json"), given)
        for name, run in (("ms", GENAI_PERF), ("s", seconds))
    )
    read = {r.metric_text: r.value for r in s_rows}
    assert read == pytest.approx({r.metric_text: r.value for r in ms_rows}, rel=1e-12)
    assert read["mean_TTFT"] == pytest.approx(480.0) and read["mean_TPOT"] == pytest.approx(20.8)
    bad = {**GENAI_PERF, "time_to_first_token": _stat("furlongs", 0.5)}
    with pytest.raises(SpecError, match=r"time_to_first_token\.unit.*'furlongs'"):
        load_measured(_lines(tmp_path, [bad], "bad.json"), given)
