"""Hostile input to ``calibrate`` and ``report``: a measured row calibration cannot use is a
warning naming its line and reason and the fit goes on with the others; a file with no usable
row, and a study folder whose tables are corrupt, are one error line naming the file and the
field, exit 2 - never a traceback, a silently dropped row or a nan/inf/negative figure."""

import csv
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import EXAMPLE_WHOLE_RUNS

from inference_econ.cli import main
from inference_econ.specs.catalog import display_path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MEASURED = EXAMPLES / "measured-rows.csv"
#: The GEMM TFLOPS micro-benchmark rows of the shipped file, which calibration does not fit.
MICRO_LINES = "65-76"
#: Requests of an instance's whole run where the calibrations below replay one
#: (``conftest.short_offline_runs``), as the --help examples do: which rows are used is
#: checked, not the fitted values.
WHOLE_RUN_REQUESTS = EXAMPLE_WHOLE_RUNS


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_error(result, path, field=None) -> str:
    """The single ``error:`` line of a refused command (progress lines aside), exit 2."""
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2, result.output
    assert len(errors) == 1, result.stderr
    other = [
        line
        for line in result.stderr.splitlines()
        if line.strip() and not line.startswith(("error:", "["))  # "[ 0.3s] reading ..."
    ]
    assert not other, other  # no warning, no Python warning, nothing else
    assert str(path) in errors[0], errors[0]
    if field is not None:
        assert f"field '{field}'" in errors[0], errors[0]
    return errors[0]


def warnings_of(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("warning:")]


# --- calibrate -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def short_runs(help_example_runs, short_offline_runs):
    """The calibrations of this file replay the shipped rows' trtllm-bench datasets in runs of
    at most ``WHOLE_RUN_REQUESTS`` requests (``short_offline_runs``; what they check is which
    rows are used and how the others are named, not the fitted values), once the --help
    examples have run theirs as written (``help_example_runs``, set up first): the replays of
    the rows they share are read from the examples' (``conftest.whole_runs_of``)."""


def measured_copy(tmp_path, change=None, rows=None, name="rows.csv") -> Path:
    """The shipped measured rows (or ``rows`` of them) with ``change(rows)`` applied."""
    with open(MEASURED, newline="") as f:
        records = list(csv.DictReader(f))
    if rows is not None:
        records = [records[i] for i in rows]
    if change is not None:
        change(records)
    fields = list(records[0])
    path = tmp_path / name
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(records)
    return path


@pytest.mark.parametrize(
    "column, value, reason",
    [
        ("value", "nan", "value: is nan"),
        ("value", "abc", "value 'abc' is not a number"),
        ("value", "-5", "value: is -5"),
        ("value", "0", "value: is 0"),
        ("n_gpus", "0", "n_gpus: is 0"),
        ("model", "NoSuchModel", "model 'NoSuchModel'"),
        ("parallelism", "TP3", "parallelism: 'TP3' uses 3 GPUs but the row has 1"),
    ],
)
def test_calibrate_warns_of_a_row_it_leaves_out_and_fits_the_others(
    tmp_path, column, value, reason, short_runs
):
    path = measured_copy(tmp_path, lambda r: r[2].update({column: value}))  # line 4
    result = run("calibrate", path, "--no-holdout")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    warned = warnings_of(result)
    assert len(warned) == 2, warned
    row, micro = warned
    assert row.startswith(f"warning: {path}: line 4: {reason}")
    assert row.endswith("the row is left out of the calibration")
    assert f"12 rows not used (lines {MICRO_LINES}): micro-benchmarks of GEMM throughput" in micro
    # the fit still runs, on the 62 good end-to-end rows
    assert "trtllm: 62 rows, 2 sources" in result.stdout
    assert "gemm_efficiency_scale" in result.stdout and "nan" not in result.stdout


def test_calibrate_says_which_rows_of_the_shipped_example_it_does_not_use(short_runs):
    result = run("calibrate", MEASURED, "--no-holdout")
    assert result.exit_code == 0, result.output
    assert warnings_of(result) == [
        f"warning: {display_path(MEASURED)}: 12 rows not used (lines {MICRO_LINES}): micro-benchmarks of "
        "GEMM throughput, which calibration does not fit (it fits end-to-end rows and "
        "all-reduce and streaming bandwidth micro-benchmarks)"
    ]
    assert "trtllm: 63 rows, 2 sources" in result.stdout


def test_calibrate_counts_one_source_in_the_singular(tmp_path, short_runs):
    """Rows of one source: "1 source", as the held-out summary words it (it had said "1
    sources")."""

    def one_source(records):
        for r in records:
            r["source"] = "one lab"
            if "source_group" in r:
                r["source_group"] = ""

    result = run("calibrate", measured_copy(tmp_path, one_source), "--no-holdout")
    assert result.exit_code == 0, result.output
    assert "trtllm: 56 rows, 1 source (" in result.stdout


def test_calibrate_warns_of_a_row_whose_engine_has_no_profile(tmp_path, short_runs):
    def kv_fraction_on_vllm(records):
        for r in records:
            r["engine"] = ""
        # line 8 states TensorRT-LLM's kv_cache_free_gpu_mem_fraction, on a vLLM that sizes its
        # KV cache from all memory: no profile of that engine can run it
        records[6]["engine"] = "vllm@0.0.1"

    path = measured_copy(tmp_path, kv_fraction_on_vllm)
    result = run("calibrate", path, "--no-holdout")
    assert result.exit_code == 0, result.output
    row = [w for w in warnings_of(result) if ": line " in w]
    assert len(row) == 1 and row[0].startswith(f"warning: {path}: line 8: engine 'vllm")
    assert "left out of the calibration" in row[0]
    assert "trtllm: 62 rows" in result.stdout


def test_calibrate_counts_the_rows_past_the_first_warnings(tmp_path, short_runs):
    def six_bad(records):
        for r in records[2:8]:  # lines 4-9
            r["value"] = "abc"

    path = measured_copy(tmp_path, six_bad)
    result = run("calibrate", path, "--no-holdout")
    assert result.exit_code == 0, result.output
    warned = warnings_of(result)
    rows = [w for w in warned if ": line " in w]
    assert [w.split(": line ")[1].split(":")[0] for w in rows] == ["4", "5", "6", "7", "8"]
    assert f"warning: {path}: 1 more row left out of the calibration (lines 9;" in warned[5]
    assert "trtllm: 57 rows" in result.stdout


def test_calibrate_of_a_file_of_unreadable_rows_is_one_line(tmp_path):
    def unreadable(records):
        for r in records:
            r["value"] = "abc"

    path = measured_copy(tmp_path, unreadable)
    line = one_error(run("calibrate", path, "--no-holdout"), path)
    assert (
        "no row calibration can use: 63 rows left out (line 2: value 'abc' is not a number" in line
    )
    assert "and 60 more" in line and "12 rows are micro-benchmarks of GEMM throughput" in line
    assert "compare-measured" in line


def test_calibrate_of_micro_benchmarks_only_is_one_line(tmp_path):
    path = measured_copy(tmp_path, rows=range(63, 75))  # the 12 MAMF TFLOPS rows
    line = one_error(run("calibrate", path), path)
    assert "no row calibration can use: 12 rows are micro-benchmarks of GEMM throughput" in line
    assert "need at least one array" not in line


# --- report --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def study_folder(help_example_runs):
    """examples/study.yaml's output folder (6 cells), as the study example of --help wrote it
    once per session (conftest.help_example_runs; the copies below are what the tests change)."""
    pytest.importorskip("plotly")
    folder, _ = help_example_runs
    out = folder / "out" / "study"
    assert (out / "study.json").is_file()
    return out


def copy_of(study_folder, tmp_path, parquet=False) -> Path:
    """A copy of the study folder; the CSV tables only (the report reads them when there is
    no Parquet file) unless ``parquet``."""
    folder = tmp_path / "study"
    shutil.copytree(study_folder, folder, ignore=shutil.ignore_patterns("cache"))
    if not parquet:
        for table in folder.glob("*.parquet"):
            table.unlink()
    return folder


def set_cell(path: Path, line: int, column: str, value: str) -> None:
    """Line ``line`` (1-based, '#' lines counted) of a study CSV with ``column`` set to
    ``value`` (the tables' cells hold no commas in these columns)."""
    lines = path.read_text().split("\n")
    header = next(t for t in lines if not t.startswith("#")).split(",")
    cells = lines[line - 1].split(",")
    cells[header.index(column)] = value
    lines[line - 1] = ",".join(cells)
    path.write_text("\n".join(lines))


def report(folder, tmp_path):
    return run("report", folder, "--out", tmp_path / "r.html")


@pytest.mark.parametrize("value", ["x", "nan", "inf", "-1", "0", ""])
@pytest.mark.parametrize("column", ["tokens_per_s", "usd_per_mtok"])
def test_report_refuses_a_frontier_figure_that_is_not_finite_and_positive(
    study_folder, tmp_path, column, value
):
    folder = copy_of(study_folder, tmp_path)
    set_cell(folder / "frontiers.csv", 6, column, value)
    result = report(folder, tmp_path)
    line = one_error(result, folder / "frontiers.csv", column)
    assert "line 6:" in line and "rerun the study" in line
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    "change, field, says",
    [
        (lambda p: set_cell(p, 101, "cell", "17"), "cell", "17 is not a cell of study.json"),
        (lambda p: set_cell(p, 101, "gpus", "abc"), "gpus", "'abc' is not a number"),
        (lambda p: set_cell(p, 101, "latency_s", "-2"), "latency_s", "is -2"),
        (lambda p: p.write_text(p.read_text()[:-300]), None, "the file is cut short"),
        (
            lambda p: p.write_text("\n".join(p.read_text().split("\n")[:2]) + "\n"),
            "cell",
            "has no row of cell 0, whose key points are feasible",
        ),
    ],
    ids=["stray cell", "text on hover", "negative latency", "cut short", "no rows"],
)
def test_report_refuses_a_corrupt_frontier_csv(study_folder, tmp_path, change, field, says):
    folder = copy_of(study_folder, tmp_path)
    change(folder / "frontiers.csv")
    line = one_error(report(folder, tmp_path), folder / "frontiers.csv", field)
    assert says in line


def test_report_refuses_a_parquet_column_of_text(study_folder, tmp_path):
    folder = copy_of(study_folder, tmp_path, parquet=True)
    path = folder / "frontiers.parquet"
    df = pd.read_parquet(path)
    df["usd_per_mtok"] = df["usd_per_mtok"].astype(str)
    df.to_parquet(path)
    line = one_error(report(folder, tmp_path), path, "usd_per_mtok")
    assert "row 1:" in line and "is text, not a number" in line


@pytest.mark.parametrize(
    "change, field, says",
    [
        (lambda df: df.assign(cell=df["cell"].where(df.index != 5, 40)), "cell", "40 is not"),
        (lambda df: df[df["cell"] != 3], "cell", "has no row of cell 3"),
        (lambda df: df.assign(usd_per_mtok=df["usd_per_mtok"] * -1), "usd_per_mtok", "is -"),
        (lambda df: df.assign(batch=float("inf")), "batch", "is inf"),
    ],
    ids=["stray cell", "missing cell", "negative cost", "infinite batch"],
)
def test_report_refuses_corrupt_key_points(study_folder, tmp_path, change, field, says):
    folder = copy_of(study_folder, tmp_path, parquet=True)
    path = folder / "key_points.parquet"
    change(pd.read_parquet(path)).to_parquet(path)
    line = one_error(report(folder, tmp_path), path, field)
    assert says in line


def test_report_refuses_a_feasible_flag_that_is_not_true_or_false(study_folder, tmp_path):
    folder = copy_of(study_folder, tmp_path)
    set_cell(folder / "key_points.csv", 3, "feasible", "maybe")
    line = one_error(report(folder, tmp_path), folder / "key_points.csv", "feasible")
    assert "line 3: 'maybe' is not true or false" in line


def test_report_of_the_intact_csv_tables_is_written(study_folder, tmp_path):
    folder = copy_of(study_folder, tmp_path)
    result = report(folder, tmp_path)
    assert result.exit_code == 0, result.output
    assert "RuntimeWarning" not in result.stderr and not warnings_of(result)
    assert (tmp_path / "r.html").stat().st_size > 100_000


def test_calibrate_warns_when_its_fit_errs_more_on_left_out_sources_than_the_priors(
    tmp_path, monkeypatch
):
    """examples/measured-rows.csv calibrated in full: 0.064 median on the sources left out
    against 0.037 for the priors on every row. The fit's numbers are stood in for here (the
    whole calibration is the --help example's); the warning is given, with the file named,
    and not where the fit does better."""
    from types import SimpleNamespace

    import inference_econ.api as api

    def fitted(held):
        return SimpleNamespace(
            terms=[], micro=[], engine="trtllm", rows=63, sources=["a", "b"], seconds=1.0,
            by_source=[("a", 56, held, 0.15, 0.06), ("b", 7, 0.02, 0.05, 0.01)],
            prior_only={"median": 0.037, "p90": 0.110}, in_sample={"median": 0.034, "p90": 0.093},
            held_out={"median": held, "p90": 0.145}, dropped_duplicates=0,
        )  # fmt: skip

    monkeypatch.setattr(api, "calibrate", lambda *a, **k: fitted(0.064))
    result = run("calibrate", MEASURED)
    (line,) = warnings_of(result)
    assert result.exit_code == 0 and "err more on the sources left out (0.064 median)" in line
    assert "than the priors alone on every row (0.037)" in line
    monkeypatch.setattr(api, "calibrate", lambda *a, **k: fitted(0.030))
    assert warnings_of(run("calibrate", MEASURED)) == []
