"""Hostile benchmark tools' result files (``measured/tool_results.py``): the files of
tests/data/benchmark_results/ (written by ``vllm bench serve`` and ``aiperf profile``) with
one field changed. A field of the wrong JSON type (text, a list, an object where a number or
a section is) is the file's error: one line naming the file and the field, exit 2, never a
traceback. A number of the right type the rows cannot use (NaN, not positive) makes the rows
it feeds ``unresolved`` with the field as the reason, and the file's other rows go on: never
a row left out in silence or read with a wrong number."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from inference_econ.cli import main
from inference_econ.errors import SpecError
from inference_econ.measured.reading import load_measured

RESULTS = Path(__file__).parent / "data" / "benchmark_results"
VLLM_CONCURRENCY = json.loads((RESULTS / "vllm-bench-concurrency.json").read_text())
VLLM_RATE = json.loads((RESULTS / "vllm-bench-rate.json").read_text())
VLLM_SWEEP = [
    json.loads(line)
    for line in (RESULTS / "vllm-bench-sweep.json").read_text().splitlines()
    if line.strip()
]
AIPERF = json.loads((RESULTS / "aiperf-concurrency" / "profile_export_aiperf.json").read_text())


def _vllm(tmp_path, base=VLLM_CONCURRENCY, name="run.json", **changes) -> Path:
    run = {**base, **changes}
    path = tmp_path / name
    path.write_text(json.dumps(run))  # NaN and infinities as Python's json writes them
    return path


def _aiperf(tmp_path, change) -> Path:
    """An aiperf export changed by ``change``, in a folder beside the plan.json it ran from."""
    data = copy.deepcopy(AIPERF)
    change(data)
    shutil.copy(RESULTS / "plan.json", tmp_path / "plan.json")
    (tmp_path / "aiperf").mkdir()
    path = tmp_path / "aiperf" / "profile_export_aiperf.json"
    path.write_text(json.dumps(data))
    return path


def _sweep(tmp_path, k: int, **changes) -> Path:
    runs = [dict(r) for r in VLLM_SWEEP]
    runs[k].update(changes)
    path = tmp_path / "sweep.json"
    path.write_text("\n".join(json.dumps(r) for r in runs) + "\n")
    return path


def _refused(path: Path, field: str) -> str:
    """The command's one line for ``path``: exit 2, no traceback, naming the file and field."""
    result = CliRunner().invoke(
        main, ["compare-measured", str(path), "--assumptions", "achievable", "--engine", "vllm"]
    )
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {path}: field '{field}': "), lines[0]
    return lines[0]


def _statuses(path: Path) -> dict[str, str]:
    return {r.metric_text: r.status for r in load_measured(path)}


#: The rows of one ``vllm bench serve`` run, in order: the end-to-end latencies listed with
#: the model's reason (out of scope in a closed loop).
VLLM_ROWS = [
    "throughput",
    "mean_TPOT",
    "ITL_mean",
    "mean_TTFT",
    "p99_TTFT",
    "mean_e2el",
    "p99_e2el",
]
#: The rows of a run the model predicts.
PREDICTED = VLLM_ROWS[:5]


# --- a field of the wrong type: the file's error ------------------------------------------------
@pytest.mark.parametrize(
    "field, value",
    [
        ("total_input_tokens", "abc"),  # was ValueError: could not convert string to float
        ("completed", [60]),  # the rest were TypeError: float() argument must be ... 'list'
        ("request_throughput", [1]),
        ("mean_e2el_ms", [1]),
        ("output_throughput", [1]),
        ("total_output_tokens", [1]),
        ("mean_tpot_ms", {"avg": 7.8}),
        ("max_concurrency", "eight"),  # was ValueError in _loop
        ("completed", True),  # was read as 1 request: every length 60 times too long
    ],
)
def test_vllm_field_of_the_wrong_type_is_one_line_exit_2(tmp_path, field, value):
    line = _refused(_vllm(tmp_path, **{field: value}), field)
    assert "expected a number, got" in line and "a JSON number" in line


def test_vllm_wrong_type_in_a_rate_run_and_in_a_sweep_names_the_run(tmp_path):
    line = _refused(_vllm(tmp_path, VLLM_RATE, request_rate="fast"), "request_rate")
    assert "got 'fast'" in line
    _refused(_sweep(tmp_path, 2, total_input_tokens="abc"), "run 3.total_input_tokens")


@pytest.mark.parametrize(
    "change, field, said",
    [
        (lambda d: d["request_latency"].update(avg="abc"), "request_latency.avg", "a number"),
        (lambda d: d.update(input_config="abc"), "input_config", "an object"),
        (lambda d: d["input_config"].update(phases="abc"), "input_config.phases", "a list"),
        (lambda d: d["input_config"].update(phases=["abc"]), "input_config.phases[0]", "an object"),
        (lambda d: d["input_config"].update(models="m"), "input_config.models", "an object"),
        (lambda d: d.update(output_token_throughput="fast"), "output_token_throughput", "an object"),
        (lambda d: d["input_sequence_length"].update(avg=[200]), "input_sequence_length.avg", "a number"),
    ],
)  # fmt: skip
def test_aiperf_field_of_the_wrong_type_is_one_line_exit_2(tmp_path, change, field, said):
    line = _refused(_aiperf(tmp_path, change), field)
    assert f"expected {said}, got" in line


def test_a_plan_json_of_the_wrong_shape_is_one_line_naming_the_plan(tmp_path):
    path = _aiperf(tmp_path, lambda d: None)
    plan = json.loads((tmp_path / "plan.json").read_text())
    plan["workers"][0]["count"] = "two"  # was ValueError: invalid literal for int()
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    with pytest.raises(SpecError, match=r"plan.json: field 'workers\[0\].count': expected a num"):
        load_measured(path)
    plan["workers"] = ["server"]  # was AttributeError: 'str' object has no attribute 'get'
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    with pytest.raises(SpecError, match=r"field 'workers\[0\]': expected an object, got 'server'"):
        load_measured(path)


# --- a number the rows cannot use: those rows unresolved, with the field ------------------------
def test_a_metric_the_run_cannot_use_is_its_row_unresolved_not_dropped(tmp_path):
    """output_throughput -100 printed "2 rows: 2 ok": the throughput row was gone."""
    path = _vllm(tmp_path, output_throughput=-100)
    got = _statuses(path)
    assert list(got) == VLLM_ROWS
    assert got["throughput"].startswith("unresolved: output_throughput is -100 (expected a")
    assert "not a number" not in got["throughput"]  # the reader's own reason, not the cell's
    assert got["mean_TPOT"] == got["ITL_mean"] == "ok"
    result = CliRunner().invoke(
        main, ["compare-measured", str(path), "--assumptions", "achievable", "--engine", "vllm"]
    )
    assert result.exit_code == 0, result.output
    assert "7 rows: 6 ok (read and predicted), 1 unresolved" in result.output
    assert "output_throughput is -100" in result.output
    nan = _statuses(_vllm(tmp_path, name="nan.json", mean_tpot_ms=float("nan")))  # NaN in JSON
    assert "mean_tpot_ms is nan (expected a finite number > 0)" in nan["mean_TPOT"]
    assert nan["throughput"] == "ok" and nan["ITL_mean"] == "ok"


@pytest.mark.parametrize(
    "base, field, value, said",
    [
        # total_input_tokens 0 was read as 1-token prompts: a different prediction, status ok
        (VLLM_CONCURRENCY, "total_input_tokens", 0, "is 0 (expected a number > 0)"),
        (VLLM_CONCURRENCY, "total_output_tokens", -40, "is -40 (expected a number > 0)"),
        (VLLM_CONCURRENCY, "total_input_tokens", None, "is not given"),
        (VLLM_CONCURRENCY, "completed", -5, "is -5 (expected a number >= 0)"),
        (VLLM_CONCURRENCY, "max_concurrency", 0, "is 0 (expected a number > 0)"),
        # request_rate -1 was read by Little's law as a run of ~4 clients, status ok
        (VLLM_RATE, "request_rate", -1, "is -1 (expected a number > 0)"),
        (VLLM_RATE, "request_rate", 0, "is 0 (expected a number > 0)"),
        (VLLM_RATE, "request_throughput", 0, "is 0 (expected a number > 0)"),
        (VLLM_RATE, "mean_e2el_ms", float("nan"), "is nan (expected a finite number > 0)"),
    ],
)
def test_a_length_or_load_the_run_cannot_use_makes_its_rows_unresolved(
    tmp_path, base, field, value, said
):
    got = _statuses(_vllm(tmp_path, base, **{field: value}))
    assert list(got) == VLLM_ROWS
    for status in got.values():
        assert status.startswith("unresolved: ") and f"{field} {said}" in status, status


def test_request_rate_inf_is_every_request_at_once_and_reads_its_concurrency(tmp_path):
    """vLLM writes "inf" for no rate (its default); Infinity is the same: the run is a closed
    loop of its max_concurrency clients, every row ok."""
    assert VLLM_CONCURRENCY["request_rate"] == "inf"
    for name, rate in (("text.json", "inf"), ("number.json", float("inf"))):
        rows = load_measured(_vllm(tmp_path, name=name, request_rate=rate))
        assert [r.status for r in rows if r.metric_text in PREDICTED] == ["ok"] * 5
        assert {r.concurrency for r in rows} == {8}


def test_a_run_of_a_sweep_the_tool_cannot_use_is_unresolved_and_the_others_go_on(tmp_path):
    rows = load_measured(_sweep(tmp_path, 2, total_input_tokens=0))
    assert len(rows) == 42
    bad = [r for r in rows if not r.ok]
    assert [r.row for r in bad] == list(range(16, 23))  # run 3's rows, in their place
    assert all("run 3.total_input_tokens is 0" in r.status for r in bad)
    # a run that completed no request was left out in silence beside the others
    rows = load_measured(_sweep(tmp_path, 2, completed=0))
    assert len(rows) == 42 and sum(r.ok for r in rows) == 35
    bad = [r for r in rows if not r.ok]
    assert all("run 3.completed is 0: the run completed no request" in r.status for r in bad)
    # no run completed a request: the file's one error, as before
    runs = [{**r, "completed": 0} for r in VLLM_SWEEP]
    path = tmp_path / "none.json"
    path.write_text("\n".join(json.dumps(r) for r in runs))
    with pytest.raises(SpecError, match="the result file holds no completed run"):
        load_measured(path)


def test_a_corrupt_line_of_an_appended_result_is_its_row_and_the_other_runs_go_on(tmp_path):
    """``--append-result`` writes one run a line: a line that is not JSON had refused the
    whole file ("field 'line 2': not valid JSON at line 1"); now it is one unresolved row
    naming its own line, and every run around it is predicted."""
    lines = [json.dumps(r) for r in VLLM_SWEEP]
    path = tmp_path / "appended.json"
    path.write_text("\n".join([lines[0], "{broken", *lines[1:3], "[1, 2]", *lines[3:]]) + "\n")
    rows = load_measured(path)
    bad = [r for r in rows if not r.ok]
    assert len(rows) == 44 and [r.row for r in bad] == [9, 24]
    assert bad[0].status == (
        "unresolved: line 2: not valid JSON: Expecting property name enclosed in double quotes "
        "(column 2) (write the run again, or delete the line)"
    )
    assert bad[1].status.startswith("unresolved: line 5: is [1, 2], not the JSON object of a run")
    assert sorted({r.concurrency for r in rows if r.ok}) == [1, 2, 4, 8, 16, 32]
    result = CliRunner().invoke(
        main, ["compare-measured", str(path), "--assumptions", "achievable", "--engine", "vllm"]
    )
    assert result.exit_code == 0, result.output
    assert "44 rows: 42 ok (read and predicted), 2 unresolved" in result.output
    assert "at line 1" not in result.output


@pytest.mark.parametrize(
    "change, field, said",
    [
        (lambda d: d["input_config"]["phases"][0].update(concurrency=-8),
         "input_config.phases[0].concurrency", "is -8 (expected a number > 0)"),
        (lambda d: d["input_sequence_length"].update(avg=0),
         "input_sequence_length.avg", "is 0 (expected a number > 0)"),
        # no lengths: the rows were left out in silence
        (lambda d: d.pop("output_sequence_length"), "output_sequence_length.avg", "is not given"),
        (lambda d: d["input_config"]["phases"][0].update(concurrency=None, rate=0),
         "input_config.phases[0].rate", "is 0 (expected a number > 0)"),
        (lambda d: (d["input_config"]["phases"][0].update(concurrency=None, rate=15),
                    d["request_latency"].update(avg=float("nan"))),
         "request_latency.avg", "is nan (expected a finite number > 0)"),
    ],
)  # fmt: skip
def test_aiperf_lengths_or_load_it_cannot_use_make_its_rows_unresolved(
    tmp_path, change, field, said
):
    got = _statuses(_aiperf(tmp_path, change))
    assert list(got) == [
        "throughput",
        "mean_TPOT",
        "mean_TTFT",
        "p99_TTFT",
        "mean_e2el",
        "p99_e2el",
    ]
    for status in got.values():
        assert status.startswith("unresolved: ") and f"{field} {said}" in status, status


def test_aiperf_metric_it_cannot_use_is_that_row_unresolved(tmp_path):
    got = _statuses(_aiperf(tmp_path, lambda d: d["output_token_throughput"].update(avg=-5)))
    assert "output_token_throughput.avg is -5 (expected a number > 0)" in got["throughput"]
    assert got["mean_TPOT"] == "ok"


@pytest.mark.parametrize(
    "count, said",
    [(0, "is 0 (expected a number > 0)"), (60.5, "is 60.5 (expected a whole number")],
)
def test_aiperf_request_count_it_cannot_use_makes_its_rows_unresolved(tmp_path, count, said):
    """The run's count sizes the replay: one that cannot be a count was dropped, and the rows
    predicted for a run of the replay's own length (609.6 tokens/s became 724.1)."""
    got = _statuses(_aiperf(tmp_path, lambda d: d["request_count"].update(avg=count)))
    assert len(got) == 6
    for status in got.values():
        assert status.startswith("unresolved: request_count.avg " + said), status


@pytest.mark.parametrize("field, value", [("was_cancelled", True), ("is_complete", False)])
def test_an_aiperf_run_cut_short_makes_its_rows_unresolved(tmp_path, field, value):
    """A cancelled run's figures are of part of its load: they had been read as a whole run's."""
    got = _statuses(_aiperf(tmp_path, lambda d: d.update({field: value})))
    assert len(got) == 6
    said = f"unresolved: {field} is {str(value).lower()}: the run stopped before its load was sent"
    for status in got.values():
        assert status.startswith(said), status
    whole = tmp_path / "whole"
    whole.mkdir()
    assert not any(s.startswith(said) for s in _statuses(_aiperf(whole, lambda d: None)).values())


@pytest.mark.parametrize("unit", ["requests/sec", "tokens/min", "furlongs"])
def test_aiperf_output_rate_in_another_unit_is_its_row_unresolved(tmp_path, unit):
    """An output token throughput stated in requests a second (or per minute) was read as
    tokens a second."""
    change = lambda d: d["output_token_throughput"].update(unit=unit)  # noqa: E731
    got = _statuses(_aiperf(tmp_path, change))
    assert got["throughput"].startswith(
        f"unresolved: output_token_throughput.unit is '{unit}', not output tokens a second"
    ), got["throughput"]
    assert got["mean_TPOT"] == "ok"


def test_the_unchanged_files_still_read_ok(tmp_path):
    assert all(r.ok for r in load_measured(_vllm(tmp_path)))
    rate = load_measured(_vllm(tmp_path, VLLM_RATE, name="rate.json"))
    little = VLLM_RATE["request_throughput"] * VLLM_RATE["mean_e2el_ms"] / 1e3
    assert all(r.ok for r in rate) and rate[0].concurrency == pytest.approx(little, rel=1e-3)
    assert [r.status for r in load_measured(_aiperf(tmp_path, lambda d: None))] == ["ok"] * 6


def test_the_status_line_counts_the_reasons_it_does_not_name():
    """compare-measured's stderr line names the four commonest reasons a row is not ok; the
    others were dropped without a word (a newcomer's fifth bad row vanished from it)."""
    import pandas as pd

    from inference_econ.cli.data_commands import _status_line

    status = ["ok"] + [f"unresolved: reason {k}" for k in range(5)] + ["unresolved: reason 0"]
    line = _status_line(pd.DataFrame({"status": status}))
    assert line.startswith("7 rows: 6 unresolved, 1 ok (read and predicted). Not ok: reason 0 (2)")
    assert line.endswith("; 1 more row of other reasons (the table)"), line


def test_the_status_line_of_a_long_log_counts_every_row_of_each_status():
    """A long log repeats a few statuses: each is split once, every row still counted."""
    import pandas as pd

    from inference_econ.cli.data_commands import _status_line

    status = ["unresolved: b", "ok", "derived: x", "unresolved: a", "unresolved:  b "] * 20_000
    for dtype in ("str", object):
        line = _status_line(pd.DataFrame({"status": pd.Series(status, dtype=dtype)}))
        assert line == (
            "100000 rows: 60000 unresolved, 20000 ok (read and predicted), 20000 derived. "
            "Not ok: b (40000); a (20000)"
        )


def test_the_status_line_of_statuses_without_a_reason():
    """A status with no ": reason" part is counted and names no reason, also where no status
    of the table has one."""
    import pandas as pd

    from inference_econ.cli.data_commands import _status_line

    assert _status_line(pd.DataFrame({"status": ["ok", "derived"]})) == (
        "2 rows: 1 ok (read and predicted), 1 derived"
    )
    line = _status_line(pd.DataFrame({"status": ["ok", "unresolved", "unresolved: gpu"]}))
    assert line == "3 rows: 2 unresolved, 1 ok (read and predicted). Not ok: gpu (1)"
