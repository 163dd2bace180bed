"""The newer MLPerf rounds' rows (tests/data/benchmarks_test_mlperf_newer.csv) name the
submitter's configuration file their engine settings were read from: that file must be one of
the row's own benchmark and scenario (a partner's copy of AMD's harness holds every benchmark's
files side by side, and a Mixtral row once named a Llama 2 70B file there)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

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
