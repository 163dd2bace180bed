"""Write each MLPerf row's issued request count (the ``requests`` column) from its run's own
LoadGen log: ``generated_query_count`` x ``generated_samples_per_query`` in the
``mlperf_log_detail.txt`` beside the ``mlperf_log_summary.txt`` the row's ``source`` names,
read from the results repository's local copy with ``git show <commit>:<path>``.

    PYTHONPATH=. python benchmarks/mlperf_issued.py tests/data/benchmarks_test_mlperf_newer.csv \
        --mirror mlcommons/inference_results_v5.1=/path/to/git/dir \
        --mirror gbeezybez/inference_results_v6.0=/path/to/git/dir \
        --counts tests/data/mlperf_v61_issued.csv [--write]

A row's source reads ``.../mlperf_log_summary.txt (read from mirror OWNER/NAME@COMMIT; ...)``.
v6.1's rows, read from its results table, name their run's folder instead
(``mlcommons/inference_results_v6.1/<folder> (value: ...)``); ``--counts`` gives those runs'
counts as read from a copy of the results repository that no mirror here holds (a CSV of
``folder``, ``repository``, ``commit``, ``generated_query_count``,
``generated_samples_per_query``: ``tests/data/mlperf_v61_issued.csv``), and the row's notes
say where its count is from. Rows whose detail log is in neither keep their ``requests``
cell (empty: the replay issues what LoadGen's rule gives at its own rate, model-part-f.md §F5). Why it matters: LoadGen issues at least
``min_query_count`` samples whatever the run's rate (a submitter's configuration sets it,
DeepSeek-R1's for eight GPUs to 26,328-105,312 where its performance sample count is 4,388),
so a run lasts hours and its throughput over the whole run, the drain of its longest outputs
included, is nearly the saturated rate. Without ``--write`` the counts are printed, the file untouched.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # measured_files, beside this script

from measured_files import fail  # noqa: E402

#: A v6.1 row's source: its run's folder in the results repository, read from the results table.
FOLDER = re.compile(r"^mlcommons/inference_results_v6\.1/(?P<folder>\S+/performance/run_1) ")
SOURCE = re.compile(
    r"^mlcommons/inference_results_v[\d.]+/(?P<path>\S+)/mlperf_log_summary\.txt "
    r"\(read from mirror (?P<mirror>[^@\s]+)@(?P<commit>[0-9a-f]+)"
)
KEY = r'"key": "{}", "value": (\d+)'


def issued(git_dir: str, commit: str, folder: str) -> int | None:
    """The run's issued samples from its detail log (None: the log is not in the copy)."""
    ref = f"{commit}:{folder}/mlperf_log_detail.txt"
    done = subprocess.run(["git", "-C", git_dir, "show", ref], capture_output=True, text=True)
    if done.returncode != 0:
        return None
    queries = re.search(KEY.format("generated_query_count"), done.stdout)
    per_query = re.search(KEY.format("generated_samples_per_query"), done.stdout)
    if queries is None or per_query is None:
        return None
    return int(queries.group(1)) * int(per_query.group(1))


def _counts(path: Path) -> dict[str, tuple[int, str]]:
    """``--counts``: each run folder's issued samples and where they were read."""
    try:
        counts = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as exc:
        fail(f"{path}: cannot be read as a CSV ({' '.join(str(exc).split())})")
    need = ["folder", "repository", "commit"]
    need += ["generated_query_count", "generated_samples_per_query"]
    lacking = [c for c in need if c not in counts]
    if lacking:
        fail(f"{path}: has no {lacking[0]} column: give {', '.join(need)}")
    out = {}
    for r in counts.itertuples():
        try:
            n = int(r.generated_query_count) * int(r.generated_samples_per_query)
        except ValueError:
            fail(f"{path}: {r.folder}: generated counts {r.generated_query_count!r} x "
                 f"{r.generated_samples_per_query!r} are not whole numbers")  # fmt: skip
        log = getattr(r, "path", "") or r.folder  # where the log is, if not at the folder
        where = (f"generated_query_count x generated_samples_per_query of "
                 f"{r.repository}@{r.commit[:12]} {log}/mlperf_log_detail.txt")  # fmt: skip
        out[r.folder] = (n, where)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--mirror", action="append", default=[], help="OWNER/NAME=GIT_DIR")
    parser.add_argument(
        "--counts", type=Path, help="CSV of v6.1 runs' counts (folder, repository, commit, ...)"
    )
    parser.add_argument("--write", action="store_true", help="rewrite FILE's requests column")
    args = parser.parse_args(argv)
    bad = [m for m in args.mirror if "=" not in m]
    if bad:
        fail(f"--mirror {bad[0]!r}: give OWNER/NAME=GIT_DIR")
    mirrors = dict(m.split("=", 1) for m in args.mirror)
    try:
        table = pd.read_csv(args.file, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as exc:
        why = " ".join(str(exc).split())
        fail(f"{args.file}: cannot be read as a CSV ({why}): give a measured-rows file")
    if "source" not in table:
        fail(f"{args.file}: has no source column: give a measured-rows file of MLPerf runs")
    column = table["requests"] if "requests" in table else pd.Series("", index=table.index)
    found = missing = 0
    cache: dict = {}
    counted = _counts(args.counts) if args.counts else {}
    if counted and "notes" not in table:
        table["notes"] = ""
    for i, source in table["source"].items():
        f = FOLDER.match(source)
        if f is not None and f["folder"] in counted:
            n, where = counted[f["folder"]]
            column.at[i] = str(n)
            note = f"requests: the run's issued samples, {where}"
            if note not in table.at[i, "notes"]:
                table.at[i, "notes"] = f"{table.at[i, 'notes']}; {note}".lstrip("; ")
            found += 1
            continue
        m = SOURCE.match(source)
        if m is None or m["mirror"] not in mirrors:
            continue
        key = (m["mirror"], m["commit"], m["path"])
        if key not in cache:
            cache[key] = issued(mirrors[m["mirror"]], m["commit"], m["path"])
        n = cache[key]
        if n is None:
            missing += 1
            continue
        column.at[i] = str(n)
        found += 1
    print(f"{args.file}: {found:,} rows given their run's issued samples, {missing:,} whose "
          f"detail log is not in the copy, {len(cache):,} runs read")  # fmt: skip
    if args.write:
        table["requests"] = column
        table.to_csv(args.file, index=False, lineterminator="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
