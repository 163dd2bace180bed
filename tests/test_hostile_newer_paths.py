"""Hostile input to the newer paths, a few seeded cases of each class a trial of hostile
inputs found (``benchmarks/hostile_inputs.py`` runs thousands of them):

* export: a --checkpoint that reads as an option, a tensor degree the model's heads do not
  split (``--gpus 131072``), an option of another plan, a second export into one folder;
* result files: a whole number beyond a float's range in a result or its plan.json, a null
  worker;
* a measured CSV whose quote left open swallows the lines after it;
* searches bounded before they start: capacity --demand's reserved counts, a study's cells;
* calibrate on rows that pin down no term; an interval table of quantiles +-700;
* the public API's argument types (mtp_heads, make_traffic, Targets, max_load's
  curve_points, load_inputs, EngineConfig);
* --markup 1e-310, an --out name too long, a --dask address with nothing to compute.

Each is called in this process (the command line through click's CliRunner); the contract
(docs/errors.md): one line naming the argument or file, the field and the fix, exit 2, and
from the API a ``SpecError`` (a ``ValueError``) naming the argument.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ import api
from inference_econ.cli import main
from inference_econ.errors import InfeasibleError, SpecError

DATA = Path(__file__).parent / "data"
RESULTS = DATA / "benchmark_results"
#: A point small enough to simulate in milliseconds, on an engine that runs its layout.
POINT = ["-H", "H100", "--engine", "sglang", "--assumptions", "paper", "--gpus", "1"]
POINT += ["--batch", "1", "--prompt-tokens", "16", "--output-tokens", "2"]


def _one_error_line(result, *words):
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for w in words:
        assert w in lines[0], (w, lines[0])


def _cli(*args):
    return CliRunner().invoke(main, list(args))


# --- export ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--checkpoint", "--help"], ["--checkpoint", "read as an option"]),
        (["--checkpoint", "-tp"], ["--checkpoint", "read as an option"]),
        (["--pick", "fastest"], ["--pick", "not used by --plan point", "--plan frontier"]),
        (["--rate", "3"], ["--rate", "not used by --plan point", "--plan capacity"]),
        (["-H", "H200"], ["--hardware", "names 2 GPUs"]),
    ],
)
def test_an_export_refuses_what_it_would_ignore_or_pass_on_as_an_option(extra, words):
    """``--checkpoint --help`` was written into the launch command as the engine's option;
    options of another plan were accepted and had no effect."""
    _one_error_line(_cli("export", "Qwama 0.5B", *POINT, *extra), *words)


def test_an_export_refuses_a_tensor_degree_the_heads_do_not_split():
    """``--gpus 131072`` wrote ``--tensor-parallel-size 131072`` and 0.0 GB of weights for a
    model of 64 heads (4,096 to 65,536 were refused by the step table's size)."""
    args = ["export", "Llama 3 70B", *POINT]
    args[args.index("--gpus") + 1] = "131072"
    _one_error_line(_cli(*args), "--gpus", "TP131072", "does not split 131072 ways")


def test_a_second_export_into_a_folder_leaves_none_of_the_first_engines_files(tmp_path):
    out = tmp_path / "plan"
    first = _cli("export", "Qwama 0.5B", *POINT, "--out", str(out))
    assert first.exit_code == 0 and (out / "launch.sh").is_file()
    (out / "mine.txt").write_text("a user's own file stays")
    args = [*POINT]
    args[args.index("sglang")] = "trtllm"
    second = _cli("export", "Qwama 0.5B", *args, "--out", str(out))
    assert second.exit_code == 0, second.output
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert names == ["benchmark.md", "launch.sh", "mine.txt", "plan.json", "trtllm-server.yaml"]
    assert "trtllm-serve" in (out / "launch.sh").read_text()


def test_the_api_export_refuses_arguments_its_plan_does_not_use():
    with pytest.raises(SpecError, match="'pick': is not used by a point plan"):
        api.export("Qwama 0.5B", "H100", engine="sglang", gpus=1, batch=1, pick="fastest")
    with pytest.raises(SpecError, match="'gpus': is not used by a capacity plan"):
        api.export("Qwama 0.5B", "H100", engine="sglang", plan="capacity", gpus=8)


# --- result files and measured CSVs ------------------------------------------------------------


@pytest.mark.parametrize("value", [10**400, -(10**400)], ids=["1e+400", "-1e+400"])
def test_a_whole_number_beyond_a_float_in_a_result_file_is_that_rows_reason(tmp_path, value):
    """The handler written for it overflowed again (``math.copysign`` of the integer)."""
    from inference_econ.measured.reading import load_measured

    data = json.loads((RESULTS / "vllm-bench-rate.json").read_text())
    data["mean_tpot_ms"] = value
    (tmp_path / "r.json").write_text(json.dumps(data))
    rows = load_measured(tmp_path / "r.json")
    word = "1e+400" if value > 0 else "-1e+400"
    assert [r.status for r in rows] == [
        "ok",
        f"unresolved: mean_tpot_ms is {word} (expected a finite number > 0)",
        *["ok"] * 5,
    ]
    assert rows[1].metric_text == "mean_TPOT" and rows[1].value is None


@pytest.mark.parametrize("worker", [None, "x"])
def test_a_null_worker_in_plan_json_is_the_plans_error(tmp_path, worker):
    from inference_econ.measured.reading import load_measured

    plan = json.loads((RESULTS / "plan.json").read_text())
    plan["workers"][0] = worker
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    data = json.loads((RESULTS / "vllm-bench-rate.json").read_text())
    data = {k: v for k, v in data.items() if not k.startswith("ie_")}  # the plan names the GPU
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(SpecError, match=r"plan.json: field 'workers\[0\]'"):
        load_measured(tmp_path / "r.json")


def test_a_quote_left_open_is_reported_with_the_lines_it_swallowed(tmp_path):
    """A quote left open merged the next lines into one row (17 of 100,000 rows vanished
    without a word); now that row is unresolved naming its lines, and every row after it
    keeps the line it is on."""
    from inference_econ.measured.reading import load_measured

    lines = (DATA / "measured_public_sample.csv").read_text().splitlines()
    lines[3] = lines[3][:-1]  # line 4's last cell: its closing quote gone
    path = tmp_path / "m.csv"
    path.write_text("\n".join(lines) + "\n")
    rows = load_measured(path)
    assert [r.row for r in rows] == [2, 3, 4, 6, 7, 8]
    assert rows[2].status.startswith("unresolved: runs over lines 4-5: a quote left open")
    assert [r.status for r in rows if r.row != 4] == ["ok"] * 5


# --- searches bounded before they start ------------------------------------------------------


def test_the_reserved_count_is_the_exhaustive_searchs_at_any_peak():
    """The cheapest reserved base is at 0 or one of the hours' counts (the cost is linear
    between them): the same plan as trying every count, found for a peak of 10^9 instances
    (which tried a billion counts: a hang)."""
    from inference_econ.optimise import demand as dm

    prices = dm.Prices(2.0, 5.0, None, "owned", "on-demand")
    rng = random.Random(0)
    for _ in range(20):
        needed = np.array([rng.randrange(0, 40) for _ in range(24)])
        best = dm.hourly_plan(needed, 2, prices, None)
        costs = [24 * b * 4.0 + 10.0 * np.maximum(needed - b, 0).sum() for b in range(41)]
        assert best["total_usd"] == pytest.approx(min(costs))
        assert best["reserved"] == int(np.argmin(np.round(costs, 6)))
    peak = np.array([1] * 23 + [10**9])
    assert dm.hourly_plan(peak, 1, prices, None)["reserved"] == 1  # 23 hours of 1 reserved
    spot = dm.Prices(2.0, 5.0, 1.0, "owned", "on-demand")
    with pytest.raises(SpecError, match="spot_interruption_rate.*1,000,000 instances"):
        dm.hourly_plan(np.array([1] * 23 + [10**6]), 1, spot, 0.1)


def test_a_study_of_too_many_cells_is_refused_before_its_values_are_read():
    from inference_econ.studies.study import study_from_dict

    axes = {"model": ["Llama 3 8B"], "hardware": ["H100"], "context_tokens": list(range(100_000))}
    with pytest.raises(SpecError, match=r"axes.context_tokens'?: has 100,000 values"):
        study_from_dict({"title": "t", "axes": axes}, "s.yaml")


# --- calibrate, interval tables ---------------------------------------------------------------


def test_rows_that_pin_down_no_term_are_refused_not_an_index_error():
    """Two rows on which no term's prediction depends passed the count of rows and ended in
    an IndexError inside the fit."""
    from inference_econ.measured import calibration

    flat = SimpleNamespace(
        rows=[0, 1], step_engine=[], base_name="trtllm", predict=lambda t, k: np.ones((len(t), 2))
    )
    with pytest.raises(InfeasibleError, match="the 2 usable rows pin down none of the"):
        calibration._usable_priors(flat, [], lambda m: None)


@pytest.mark.parametrize(
    "strata, field",
    [
        ([{"kind": "TPOT", "q05": -700, "q10": -1, "q90": 1, "q95": 700}], "strata[0].q05"),
        (["TPOT"], "strata[0]"),
        ({"kind": "TPOT"}, "strata"),
        ([{"kind": "TPOT", "q05": -1, "q10": -1, "q90": 1, "q95": 1, "rows": "x"}], "rows"),
    ],
)
def test_a_users_interval_table_is_checked_field_by_field(strata, field):
    """Quantiles of +-700 printed intervals of 1e+305; a stratum not a mapping was a
    traceback."""
    from inference_econ.serving.interval_table import parse_table

    with pytest.raises(SpecError) as info:
        parse_table({"strata": strata}, "t.yaml")
    assert info.value.source == "t.yaml" and info.value.field.endswith(field)


# --- the public API -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: ie.mtp_heads(None, 0.8), "model"),
        (lambda: ie.mtp_heads("DeepSeek-V3", 0.8, max_depth="x"), "max_depth"),
        (lambda: ie.eagle_head("Llama 3 8B", 0.8, layers=float("nan")), "layers"),
        (lambda: ie.make_traffic(2.0, "100", "10", requests=None), "requests"),
        (lambda: ie.make_traffic(2.0, "100", "10", session_turns="x"), "session_turns"),
        (lambda: ie.Targets(ttft_p99_s=10**400), "ttft_p99_s"),
        (lambda: ie.Traffic(None, None, None, clients="x"), "concurrency"),
        (lambda: ie.EngineConfig(engine_own=5), "engine_own"),
        (lambda: ie.load_inputs("x"), "settings"),
        (lambda: ie.max_load("Qwama 0.5B", "H100", gpus=1, curve_points="x"), "curve_points"),
        (lambda: ie.capacity("Qwama 0.5B", "H100", progress="x"), "progress"),
        (lambda: ie.run_scenario(5), "scenario"),
        (lambda: ie.load_observations("9" * 400), "observations"),
    ],
)
def test_the_public_api_names_the_argument_of_a_wrong_type(call, argument):
    with pytest.raises(SpecError) as info:
        call()
    assert info.value.field == argument and isinstance(info.value, ValueError)


def test_draft_heads_take_a_models_name():
    heads = ie.mtp_heads("DeepSeek-V3", 0.8)
    assert (heads.kind, heads.copies, heads.max_depth) == ("mtp", 1, 5)


# --- options of the command line --------------------------------------------------------------


def test_a_markup_below_a_millionth_is_refused():
    """--markup 1e-310 made the target cost infinite: a math domain error."""
    args = ["infer", "size", "--model", "GPT-4.1", "--speed", "110", "--price", "8"]
    _one_error_line(_cli(*args, "--markup", "1e-310"), "--markup", "1e-310")


def test_an_out_name_too_long_is_one_line(tmp_path):
    out = tmp_path / ("a" * 300)
    _one_error_line(_cli("export", "Qwama 0.5B", *POINT, "--out", str(out)), "too long")


def test_a_dask_address_is_checked_with_nothing_to_compute():
    with pytest.raises(SpecError, match="--dask'?: 'nonsense' is not a Dask scheduler"):
        ie.study(
            {"title": "t", "axes": {"model": ["Qwama 0.5B"], "hardware": ["H100"]}}, dask="nonsense"
        )


def test_options_a_command_would_ignore_are_refused(tmp_path):
    """A running scheduler's workers compute a study's cells (``--jobs`` had no effect), and a
    scenario's report has no axes (``--compare`` and ``--where`` had none either)."""
    study = {"title": "t", "axes": {"model": ["Qwama 0.5B"], "hardware": ["H100"]}}
    with pytest.raises(SpecError, match="'jobs': is given with the Dask scheduler"):
        ie.study(study, jobs=2, dask="tcp://host:8786")
    out = str(tmp_path / "f.html")
    for flag, value in (("--compare", "hardware"), ("--where", "hardware=H100")):
        result = _cli("report", "paper/figure-6", "--out", out, flag, value)
        _one_error_line(result, flag, "is a scenario")


def test_rows_whose_steps_cannot_be_built_are_named_not_a_value_error(tmp_path):
    """Prompts of 10^9 tokens leave no room for the KV cache on any layout of the rows' GPUs:
    no step could be built, and concatenating none was a ValueError."""
    import csv
    import io

    from inference_econ.measured.fit_problem import build_problem
    from inference_econ.measured.reading import load_measured
    from inference_econ.specs.engine import load_engine

    header, *rows = list(csv.reader(io.StringIO((DATA / "measured_public_sample.csv").read_text())))
    at = header.index("input_len")
    buf = io.StringIO()
    csv.writer(buf).writerows([header, *([*r[:at], "1e9", *r[at + 1 :]] for r in rows[:3])])
    path = tmp_path / "long.csv"
    path.write_text(buf.getvalue())
    with pytest.raises(
        SpecError, match=r"no row calibration can use: 3 rows left out \(line 2: infeasible"
    ):
        build_problem(load_measured(path), load_engine("trtllm"), {}, [], source=str(path))


def test_a_measured_cell_of_thousands_of_digits_is_its_rows_reason(tmp_path):
    from inference_econ.measured.reading import load_measured

    # Python reads no whole number of more than 4,300 digits: each reader of degrees, counts
    # or engine settings had raised, stopping the file
    head = "model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,output_len"
    head += ",metric,value,unit,notes\n"
    row = "DeepSeek-R1,FP4,B200,4,{},max load,1024,1024,throughput_per_gpu,6430,"
    row += "output tok/s per GPU,TensorRT-LLM 1.2; {}\n"
    nines = "9" * 5000
    cells = [
        ("DEP" + nines, ""),
        ("DEP4", "VLLM_SUBSEQUENT_DECODE_STEPS: " + nines),
        ("DEP4", f"num_slots: {nines}"),
        ("DEP4", "num_slots: 288"),
    ]
    path = tmp_path / "rows.csv"
    path.write_text(head + "".join(row.format(*c) for c in cells))
    result = CliRunner().invoke(main, ["compare-measured", str(path), "--format", "csv"])
    assert result.exit_code == 0 and "Traceback" not in result.output
    rows = load_measured(path)
    fields = ["parallelism", "notes", "notes"]
    for r, field in zip(rows, fields):
        assert r.status == (
            f"unresolved: {field}: holds a number of 5,000 digits (give numbers of at most 100 "
            "digits, as the source states them)"
        )
    assert rows[3].status == "ok" and rows[3].arch.redundant_experts == 32
