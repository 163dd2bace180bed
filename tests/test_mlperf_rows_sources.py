"""The newer MLPerf rounds' rows (tests/data/benchmarks_test_mlperf_newer.csv) name the
submitter's configuration file their engine settings were read from: that file must be one of
the row's own benchmark and scenario (a partner's copy of AMD's harness holds every benchmark's
files side by side, and a Mixtral row once named a Llama 2 70B file there)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from conftest import benchmark_script

NEWER = Path(__file__).parent / "data" / "benchmarks_test_mlperf_newer.csv"

#: What a configuration file's name or folder says of each benchmark of the rounds.
FAMILY = {
    "llama2-70b-99": "llama2",
    "llama2-70b-99.9": "llama2",
    "llama3.1-8b": "llama31",
    "llama3.1-405b": "llama31",
    "mixtral-8x7b": "mixtral",
    "deepseek-r1": "deepseek",
    "gpt-oss-120b": "gptoss",
}


def test_every_cited_configuration_is_of_the_rows_benchmark_and_scenario():
    with open(NEWER, newline="") as f:
        rows = list(csv.DictReader(f))
    cited = wrong = 0
    for line, row in enumerate(rows, start=2):
        named = re.search(r"\(per engine instance; ([^)]+)\)", row["batch_or_concurrency"])
        run = re.search(r"MLPerf v[\d.]+ (\S+) (\w+)\)", row["model"])
        if not named or not run:
            continue
        cited += 1
        path = named.group(1).lower()
        folder, leaf = path.split("/")[-2:]
        words = re.sub(r"[-_.]", "", f"{folder} {leaf}")
        benchmark, scenario = run.group(1).lower(), run.group(2).lower()
        if FAMILY[benchmark] not in words or scenario not in path:
            wrong += 1
            print(f"line {line}: {row['model']} names {named.group(1)}")
        # the notes name the same file as the cell
        assert named.group(1) in row["notes"] or "layout from" not in row["notes"], line
    assert cited >= 1500, cited  # 1,557 of the 2,238 rows name their file
    assert wrong == 0


ISSUED = Path(__file__).parent / "data" / "mlperf_v61_issued.csv"


def test_v61_rows_state_the_samples_their_runs_logged():
    """Every v6.1 row whose run's LoadGen detail log was read (tests/data/mlperf_v61_issued.csv)
    states that run's issued samples (generated_query_count x generated_samples_per_query) and
    cites the log, and the log's throughput is the row's measured one (the copy the counts were
    read from holds the published runs)."""
    with open(ISSUED, newline="") as f:
        logs = {r["folder"]: r for r in csv.DictReader(f)}
    with open(NEWER, newline="") as f:
        rows = list(csv.DictReader(f))
    stated = 0
    for row in rows:
        run = re.match(r"mlcommons/inference_results_v6\.1/(\S+/performance/run_1) ", row["source"])
        if run is None or run.group(1) not in logs:
            continue
        log = logs[run.group(1)]
        issued = int(log["generated_query_count"]) * int(log["generated_samples_per_query"])
        assert int(row["requests"]) == issued, run.group(1)
        assert f"{log['repository']}@{log['commit'][:12]} {log['path']}" in row["notes"]
        if row["metric"] == "throughput_total":
            assert abs(float(log["logged_tokens_per_second"]) / float(row["value"]) - 1) < 1e-3
        stated += 1
    assert stated >= 300  # 308 runs' logs, each of one row of the file


def test_issued_counts_are_written_from_a_counts_file(tmp_path, capsys):
    """benchmarks/mlperf_issued.py --counts writes a v6.1 row's issued samples and cites the
    log in its notes (once, however often it runs); a count that is not a whole number is one
    line and exit 2."""
    import pytest

    m = benchmark_script("mlperf_issued")
    folder = "closed/X/results/S/deepseek-r1/Offline/performance/run_1"
    rows = tmp_path / "rows.csv"
    rows.write_text(
        "source,notes,requests\n"
        f"mlcommons/inference_results_v6.1/{folder} (value: table),a note,\n"
        "mlcommons/inference_results_v6.1/closed/Y/results/T (value: table),other,\n"
    )
    counts = tmp_path / "counts.csv"
    head = "folder,path,repository,commit,generated_query_count,generated_samples_per_query\n"
    counts.write_text(head + f"{folder},{folder},o/r,{'a' * 40},1,105312\n")
    for _ in range(2):
        assert m.main([str(rows), "--counts", str(counts), "--write"]) == 0
    with open(rows, newline="") as f:
        got = list(csv.DictReader(f))
    assert got[0]["requests"] == "105312" and got[1]["requests"] == ""
    assert got[0]["notes"].count("requests: the run's issued samples") == 1
    assert f"o/r@{'a' * 12} {folder}/mlperf_log_detail.txt" in got[0]["notes"]
    counts.write_text(head + f"{folder},{folder},o/r,{'a' * 40},one,105312\n")
    with pytest.raises(SystemExit) as stop:
        m.main([str(rows), "--counts", str(counts)])
    assert stop.value.code == 2
    assert "are not whole numbers" in capsys.readouterr().err


def test_a_configurations_budget_written_as_arithmetic_is_its_value():
    """NVIDIA's v6.0 gpt-oss-120b configurations write TensorRT-LLM's ``max_num_tokens`` as
    ``4638 * 3``: the budget is 13,914 tokens, not the first number (benchmarks/mlperf_budgets.py);
    anything but whole numbers and + - * is not read. The rows citing NVIDIA's 8 x B300 Server
    configuration state 13,914, and every row of v6.0's NVIDIA-harness configurations states the
    KV cache share its runtime flags set."""
    m = benchmark_script("mlperf_budgets")
    assert m.whole_number("4638 * 3") == 13914 and m.whole_number("15536 + 10240") == 25776
    assert m.whole_number("4638 * 3 / 2") is None and m.whole_number("x") is None
    flags = "trtllm_runtime_flags: {\n    'max_num_tokens': 4638 * 14,  # note\n}"
    assert m.runtime_budget(flags) == (64932, "max_num_tokens")
    assert m.runtime_budget("trtllm_runtime_flags {'max_num_tokens': 35840, #17000\n") == (
        35840,
        "max_num_tokens",
    )
    with open(NEWER, newline="") as f:
        rows = list(csv.DictReader(f))
    cited = [
        r
        for r in rows
        if "closed/NVIDIA/configs/B300-SXM-270GBx8/Server/gpt-oss-120b.py"
        in r["batch_or_concurrency"]
    ]
    assert len(cited) == 5
    assert all("max_num_tokens 13914" in r["batch_or_concurrency"] for r in cited)
    v60 = [
        r
        for r in rows
        if "inference_results_v6.0" in r["source"]
        and "/configs/" in r["batch_or_concurrency"]
        and r["batch_or_concurrency"].startswith("max batch")
    ]
    stating = [r for r in v60 if "kvcache_free_gpu_mem_frac" in r["batch_or_concurrency"]]
    assert len(stating) >= 560  # 562 rows of v6.0 configurations that set it
