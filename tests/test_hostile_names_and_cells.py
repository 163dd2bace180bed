"""Hostile input: names that would break out of a comment in a file the toolkit writes, and
cells too large to read. The contract (docs/errors.md): one line naming the file and the field,
exit 2; in a file of rows, the row unresolved with its reason and the others predicted."""

from __future__ import annotations

import json
import math

import pytest
import yaml
from click.testing import CliRunner
from conftest import EXAMPLE_WHOLE_RUNS, STUCK_CPU_S, whole_runs_of

from inference_econ.cli import main
from inference_econ.errors import control_character, one_line

EXPORT = ["-H", "H100", "--weight-bits", "8", "--gpus", "8", "--batch", "64"]
EXPORT += ["--prompt-tokens", "2000", "--output-tokens", "500", "--engine", "vllm"]


def _one_error_line(result, *words):
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for w in words:
        assert w in lines[0], (w, lines[0])


def test_control_characters_are_found_and_flattened():
    assert control_character("org/model") is None
    assert control_character("a\nb") == repr("\n") and control_character("a\u2028b") is not None
    assert control_character("tab\there") == repr("\t")
    assert one_line("org/m\ntouch x\r\n") == "org/m touch x  "


@pytest.mark.parametrize(
    "checkpoint", ["org/model\ntouch PWNED", "org/model\rtouch PWNED", "a\x00b", "a\u2029b"]
)
def test_a_checkpoint_with_a_line_break_is_refused(checkpoint):
    """A launch script wrote ``--checkpoint`` into a '#' line: a newline in it ran what followed."""
    r = CliRunner().invoke(main, ["export", "Llama 3.3 70B", *EXPORT, "--checkpoint", checkpoint])
    _one_error_line(r, "--checkpoint", "control character")


@pytest.mark.parametrize("field", ["name", "source"])
def test_a_model_file_whose_name_or_source_breaks_a_line_is_refused(tmp_path, field):
    from inference_econ.specs import catalog

    model = yaml.safe_load(catalog.find("models", "Llama 3.3 70B").read_text())
    model[field] = model[field] + "\ntouch PWNED"
    path = tmp_path / "evil.yaml"
    path.write_text(yaml.safe_dump(model))
    r = CliRunner().invoke(main, ["export", str(path), *EXPORT])
    _one_error_line(r, "evil.yaml", f"'{field}'", "control character")


def test_a_hugging_face_config_whose_name_breaks_a_line_is_refused(tmp_path):
    from test_hub_import import LLAMA_8B  # the hub-import tests' Llama 3.1 8B config

    cfg = {**LLAMA_8B, "_name_or_path": "org/m\ntouch PWNED\n"}
    src = tmp_path / "config.json"
    src.write_text(json.dumps(cfg))
    r = CliRunner().invoke(main, ["import-hf", str(src), "-o", str(tmp_path / "m.yaml")])
    _one_error_line(r, "config.json", "_name_or_path", "control character")
    assert not (tmp_path / "m.yaml").exists()


def test_every_comment_of_a_launch_script_is_one_line(monkeypatch):
    """Whatever reaches the header (a plan's notes), each of its lines stays a comment."""
    from inference_econ.export import engine_configs as ec

    real = ec._header
    monkeypatch.setattr(ec, "_header", lambda plan: [*real(plan), "note\ntouch PWNED"])
    r = CliRunner().invoke(main, ["export", "Llama 3.3 70B", *EXPORT])
    assert r.exit_code == 0, r.output
    script = r.output[r.output.index("#!/bin/sh") :]
    assert "# note touch PWNED" in script
    assert not any(ln.startswith("touch") for ln in script.splitlines())


def test_a_batch_cap_or_budget_beyond_the_settings_bounds_is_the_rows_reason(tmp_path):
    """A cap of 1e12 sized the step table (a traceback, or the process killed for memory); a
    cap, concurrency or budget is now held to the bounds of the setting it runs as (--max-batch
    1-65,536, --concurrency 1-1,000,000, --step-tokens 1-4,194,304): the row is unresolved
    with the bound, every other row is read."""
    from pathlib import Path

    import pandas as pd

    from inference_econ.measured.reading import load_measured

    rows = pd.read_csv(Path(__file__).resolve().parent.parent / "examples" / "measured-rows.csv")
    rows = rows.head(3)
    rows.loc[1, "batch_or_concurrency"] = "max batch 1000000000000"
    rows.loc[2, "batch_or_concurrency"] = "max batch 256, max_num_tokens 99999999999"
    path = tmp_path / "rows.csv"
    rows.to_csv(path, index=False)
    got = load_measured(str(path))
    assert got[0].status == "ok" and got[0].batch_cap == 8192
    assert got[1].status.startswith("unresolved") and "<= 65536" in got[1].status
    assert "batch_or_concurrency" in got[1].status
    assert got[2].status.startswith("unresolved") and "<= 4194304" in got[2].status, got[2].status


@pytest.mark.parametrize(
    "extra, code, words",
    [
        (["--gpus", "3"], 1, ["no whole layout of 3 GPUs splits Llama 3.3 70B", "1, 2, 4 or 5"]),
        (["--gpus", "8", "--max-model-len", "1"], 2, ["--max-model-len", "2,500"]),
        (["--plan", "disagg", "--gpus", "8", "--prefill-gpus", "3"], 1, ["prefill workers"]),
        (["--plan", "disagg", "--gpus", "8", "--prefill-gpus", "5"], 1, ["64 attention heads"]),
        (["--plan", "disagg", "--gpus", "3", "--prefill-gpus", "2"], 1, ["decode workers"]),
    ],
)
def test_an_export_no_engine_could_launch_is_refused(extra, code, words):
    """``export`` had written vLLM --tensor-parallel-size 3 for a 64-head model with inf TPOT
    and cost (exit 0), a --max-model-len shorter than the plan's requests, a traceback for
    prefill workers of 3 GPUs and TP5 prefill workers: now one line and 1 (nothing feasible)
    or 2 (a bad option)."""
    base = ["export", "Llama 3.3 70B", "-H", "H100", "--weight-bits", "8", "--batch", "64"]
    base += ["--prompt-tokens", "2000", "--output-tokens", "500", "--engine", "vllm"]
    r = CliRunner().invoke(main, [*base, *extra])
    assert r.exit_code == code, r.output
    lines = [ln for ln in r.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert "inf" not in lines[0].split() and all(w in lines[0] for w in words), lines[0]


@pytest.mark.parametrize("command", ["study", "export"])
def test_an_empty_output_folder_is_refused(command, tmp_path, monkeypatch):
    """``study --out ""`` had written its tables, cache and figure into the current folder."""
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    study = str(Path(__file__).resolve().parent.parent / "examples" / "study.yaml")
    args = {"study": ["study", study], "export": ["export", "Llama 3.3 70B", *EXPORT]}[command]
    r = CliRunner().invoke(main, [*args, "--out", ""])
    _one_error_line(r, "--out", "is not a folder name")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["1e308", "1e-300", "1e19"])
def test_a_measured_value_beyond_any_measurement_is_the_rows_reason(value, tmp_path):
    """1e308 had printed an error of -1.00 as "ok", 1e-300 a p90 error of 6e30."""
    from pathlib import Path

    import pandas as pd

    from inference_econ.measured.reading import VALUE_BOUNDS, load_measured

    assert VALUE_BOUNDS == (1e-9, 1e18)
    rows = pd.read_csv(Path(__file__).resolve().parent.parent / "examples" / "measured-rows.csv")
    rows = rows.head(2).astype({"value": str})
    rows.loc[1, "value"] = value
    path = tmp_path / "rows.csv"
    rows.to_csv(path, index=False)
    got = load_measured(str(path))
    assert got[0].status == "ok"
    assert got[1].status.startswith("unresolved: value: is") and "<= 1e+18" in got[1].status


def test_rows_of_one_configuration_whose_values_cannot_be_read_each_name_their_own(tmp_path):
    """Rows differing only in their value share one reading; an unreadable value's reason had
    been the first such row's ("value 'some 6400'" said of '6k-7k' and '6430 tok/s')."""
    from pathlib import Path

    import pandas as pd

    from inference_econ.measured.reading import load_measured

    rows = pd.read_csv(Path(__file__).resolve().parent.parent / "examples" / "measured-rows.csv")
    rows = pd.concat([rows.head(1)] * 4, ignore_index=True).astype({"value": str})
    rows.loc[1:, "value"] = ["some 6400", "6k-7k", "6430 tok/s"]
    path = tmp_path / "rows.csv"
    rows.to_csv(path, index=False)
    got = [r.status for r in load_measured(str(path))]
    assert got[0] == "ok"
    assert got[1:] == [
        f"unresolved: value {v!r} is not a number" for v in ("some 6400", "6k-7k", "6430 tok/s")
    ]


def test_compare_measured_reports_its_progress_on_rows_under_load():
    """A whole MLPerf file ran for minutes with no output: rows the load engine simulates are
    counted to ``progress`` (the CLI prints them every ten seconds, ``-q`` silences it). The
    shipped example's 7 closed-loop rows and its 56 trtllm-bench throughput rows (replayed
    over their datasets) are the rows under load here. Their whole runs are those the --help
    examples replay (``conftest.whole_runs_of``: at most ``EXAMPLE_WHOLE_RUNS`` requests an
    instance, the replays kept for the rest of the run): which rows are counted and resolved
    is checked, not their figures, and neither depends on a run's length or on a replay read
    from the cache (each row under load is counted as its prediction is done)."""
    from pathlib import Path

    from inference_econ.measured import comparison
    from inference_econ.measured import predicting as ms

    path = Path(__file__).resolve().parent.parent / "examples" / "measured-rows.csv"
    said: list[str] = []
    with whole_runs_of(EXAMPLE_WHOLE_RUNS):
        result = comparison.compare(path, "achievable", progress=said.append)
    assert said == [f"{k}/63 rows under load predicted" for k in range(63)]
    assert (result.table.status == "ok").sum() == 74
    assert ms._PROGRESS.get() is None  # reset after the run


def test_an_instance_whose_step_table_would_exhaust_memory_is_refused_up_front():
    """``simulate --gpus 65536`` of an 8B model ran out of memory with no output (its 8,192
    attention ranks each with the engine's limits: a step table of 84 M entries). No engine
    runs it (its 32 query heads do not split over so many GPUs): one line, before any work.
    A table over ``MAX_STEP_ENTRIES`` is refused with its size and what to lower, before it
    is built."""
    import time

    from inference_econ.errors import SpecError
    from inference_econ.load import engine
    from inference_econ.model.mixed_step import EngineLayout
    from inference_econ.serving.setting import make_setting

    assert engine.MAX_STEP_ENTRIES == 1 << 22
    args = ["simulate", "Llama 3.1 8B", "-H", "H100", "--rate", "4", "--requests", "200"]
    args += ["--prompt-tokens", "1000", "--output-tokens", "200", "-q"]
    start = time.process_time()
    r = CliRunner().invoke(main, [*args, "--gpus", "65536"])
    assert time.process_time() - start < STUCK_CPU_S  # refused before any work, not stuck
    assert r.exit_code == 1 and r.output.count("\n") == 1, r.output
    assert r.output.startswith("error: no whole layout of 65536 GPUs splits Llama 3.1 8B")
    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable")
    layout = EngineLayout(65536, 1, 8192.0, False)
    search = engine.layout_search(setting, 8)
    with pytest.raises(SpecError) as err:
        engine._check_table(setting, 65536, layout, search.model, 83_886_080)
    text = str(err.value)
    assert "83,886,081 entries" in text and "4,194,304" in text, text
    assert "smaller instances" in text and err.value.field == "gpus"


def test_a_demand_row_that_cannot_be_read_mid_day_is_named_as_the_cause(tmp_path):
    """A 'nan' rate at hour 2 had ended in "field 'hour': jumps from 1 to 3" after a warning:
    two lines, the last naming the wrong field. Now one error, the row's own."""
    from inference_econ.errors import SpecError
    from inference_econ.load.demand import load_demand

    path = tmp_path / "day.csv"
    path.write_text("hour,requests_per_s\n0,2\n1,3\n2,nan\n3,4\n")
    with pytest.raises(SpecError) as e:
        load_demand(path)
    assert e.value.field == "requests_per_s" and "line 4" in str(e.value)
    assert "every hour needs a readable row" in str(e.value)
    path.write_text("hour,requests_per_s\n0,2\n1,3\n2,4\n")
    assert list(load_demand(path).hours) == [0, 1, 2]


def test_a_burst_or_an_impossibly_fast_trace_is_refused_where_a_rate_is_needed(tmp_path):
    """A trace whose requests all arrive at once (rate infinite) crashed frontier --trace and
    capacity --trace (OverflowError sizing instances); arrivals 1e-300 s apart printed a rate
    of 1e+300. simulate still replays a burst ("all at once")."""
    burst, fast = tmp_path / "burst.csv", tmp_path / "fast.csv"
    burst.write_text("arrival_time_s,prompt_tokens,output_tokens\n0,100,10\n0,100,10\n0,100,10\n")
    fast.write_text("arrival_time_s,prompt_tokens,output_tokens\n0,100,10\n1e-300,100,10\n")
    common = ["Llama 3.1 8B", "-H", "H100", "--slo-ttft-p99", "2"]
    for command in ("frontier", "capacity"):
        r = CliRunner().invoke(main, [command, *common, "--max-gpus", "2", "--trace", str(burst)])
        _one_error_line(r, "burst.csv", "arrival_time_s", "at the same time")
    r = CliRunner().invoke(main, ["simulate", *common[:3], "--gpus", "1", "--trace", str(fast)])
    _one_error_line(r, "fast.csv", "arrival_time_s", "more than the 1e+09")
    r = CliRunner().invoke(main, ["simulate", *common[:3], "--gpus", "1", "--trace", str(burst)])
    assert r.exit_code == 0 and "all at once" in r.output


def test_a_demand_peak_below_the_least_simulated_rate_names_the_file(tmp_path):
    """A peak of 0.0005 requests/s passed the file's check and failed as '--rate'; a quiet hour
    beside a busier one is planned as before."""
    from inference_econ.errors import SpecError
    from inference_econ.load.demand import load_demand

    path = tmp_path / "day.csv"
    path.write_text("hour,requests_per_s\n0,0\n1,0.0005\n")
    with pytest.raises(SpecError, match="field 'requests_per_s': peaks at 0.0005, below"):
        load_demand(path)
    path.write_text("hour,requests_per_s\n0,0.0003\n1,2\n")
    assert list(load_demand(path).hours) == [0, 1]


def test_disagg_of_an_endless_prompt_or_a_layout_that_cannot_run_is_one_line():
    """disagg --prompt-tokens 1e12 had looped for minutes cutting the prompt into chunks; an
    instance that does not fit leaked numpy's 'invalid value' warnings before its error."""
    import time

    base = ["disagg", "Llama 3 70B", "-H", "H100-paper", "--weight-bits", "8", "--batch", "64"]
    start = time.process_time()
    r = CliRunner().invoke(
        main, [*base, "--gpus", "8", "--output-tokens", "500", "--prompt-tokens", "1e12"]
    )
    assert time.process_time() - start < STUCK_CPU_S  # refused before any work, not stuck
    _one_error_line(r, "--prompt-tokens", "passes (at most 100,000)")
    for preset in ("paper", "achievable"):
        r = CliRunner().invoke(
            main,
            [*base, "--gpus", "1", "--prompt-tokens", "4000", "--output-tokens", "500",
             "--assumptions", preset],
        )  # fmt: skip
        assert r.exit_code == 1 and "Warning" not in r.output, r.output
        lines = [ln for ln in r.output.strip().splitlines() if ln.strip()]
        assert len(lines) == 1 and "does not fit" in lines[0], lines


def test_an_observed_price_or_speed_too_small_to_compare_is_refused():
    """--price 1e-300 printed a markup of 300 digits and an outside factor of 9e298."""
    args = ["infer", "feasibility", "--model", "Llama 3 70B", "--weight-bits", "8"]
    args += ["--no-speculation", "--grid-points", "20"]
    r = CliRunner().invoke(main, [*args, "--speed", "100", "--price", "1e-300"])
    _one_error_line(r, "--price", ">= 1e-06")
    r = CliRunner().invoke(main, [*args, "--speed", "1e-7", "--price", "1"])
    _one_error_line(r, "--speed", ">= 1e-06")


@pytest.mark.parametrize("speed, where", [("1e6", "faster"), ("1e-6", "slower")])
def test_no_preference_k_is_printed_when_every_offer_lies_outside_its_frontier(speed, where):
    """infer preference printed 'k = 20.00' (the search's bound) while its notes said no k
    explains the offer; now nothing feasible: one line, exit 1."""
    args = ["infer", "preference", "--model", "Llama 3 70B", "--weight-bits", "8"]
    r = CliRunner().invoke(main, [*args, "--no-speculation", "--speed", speed, "--price", "1"])
    assert r.exit_code == 1, r.output
    lines = [ln for ln in r.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "no k explains" in lines[0] and where in lines[0], lines


@pytest.mark.parametrize("name", ["load_demand", "load_trace", "compare_measured", "calibrate"])
@pytest.mark.parametrize("given", [None, 5, [], True])
def test_a_python_caller_passing_no_path_gets_the_packages_error(name, given):
    """load_demand(None) and its kin raised pathlib's TypeError from deep inside."""
    import inference_econ as ie
    from inference_econ.errors import SpecError

    with pytest.raises(SpecError, match="field 'path': expected the path of a file"):
        getattr(ie, name)(given)


@pytest.mark.parametrize(
    "given, field",
    [({"seed": "x"}, "seed"), ({"requests": 0}, "requests"), ({"requests": -5}, "requests")],
)
def test_make_traffic_checks_its_numbers_by_their_settings(given, field):
    """make_traffic(seed='x') raised int()'s ValueError; requests=0 or -5 were accepted."""
    import inference_econ as ie
    from inference_econ.errors import SpecError

    with pytest.raises(SpecError, match=f"field '{field}'"):
        ie.make_traffic(rate_per_s=1, input_lengths=100, output_lengths=10, **given)
    assert ie.make_traffic(rate_per_s=1, input_lengths=100, output_lengths=10).requests == 10_000


@pytest.mark.parametrize(
    "change, field",
    [
        ({"num_attention_heads": 30}, "num_attention_heads"),  # 4,096 / 30: head_dim floored
        ({"quantization_config": "fp8"}, "quantization_config"),  # ignored: came out 16-bit
    ],
)
def test_a_hugging_face_config_that_contradicts_itself_is_refused(tmp_path, change, field):
    """import-hf accepted these without a word."""
    from test_hub_import import LLAMA_8B

    src = tmp_path / "config.json"
    src.write_text(json.dumps({**LLAMA_8B, "architectures": ["LlamaForCausalLM"], **change}))
    r = CliRunner().invoke(main, ["import-hf", str(src), "-o", str(tmp_path / "m.yaml")])
    _one_error_line(r, "config.json", f"'{field}'")


def test_moe_layer_lists_must_fit_the_layers():
    """gpt-oss layer_types of 3 entries for 24 layers had been read as 3 sliding and 21 full;
    mlp_only_layers [99, -1, 'x'] was ignored."""
    from inference_econ.errors import SpecError
    from inference_econ.specs.hf_import import _layer_indices, _layer_kinds

    assert _layer_kinds({"layer_types": ["sliding_attention", "full_attention"]}, "c", 2)
    with pytest.raises(SpecError, match="has 3 entries for 24 layers"):
        _layer_kinds({"layer_types": ["sliding_attention"] * 3}, "c", 24)
    with pytest.raises(SpecError, match="expected a list of"):
        _layer_kinds({"layer_types": ["sliding_attention", "moe"]}, "c", 2)
    assert _layer_indices({"mlp_only_layers": [0, 3]}, "mlp_only_layers", "c", 4) == {0, 3}
    with pytest.raises(SpecError, match="expected layer indices from 0 to 47"):
        _layer_indices({"mlp_only_layers": [99, -1, "x"]}, "mlp_only_layers", "c", 48)


@pytest.mark.parametrize(
    "name, given, field",
    [
        ("resolve_system_name", None, "text"),
        ("list_specs", [], "kind"),
        ("load_costs", "", "costs"),
        ("load_costs", [], "costs"),
    ],
)
def test_python_callers_slips_are_the_packages_errors(name, given, field):
    """resolve_system_name(None) raised AttributeError, list_specs([]) TypeError; load_costs('')
    and load_costs([]) silently gave the default cost file."""
    import inference_econ as ie
    from inference_econ.errors import SpecError

    with pytest.raises(SpecError, match=f"field '{field}'"):
        getattr(ie, name)(given)
    assert ie.load_costs(None).name == "owned-2025"


def test_messages_name_what_the_user_typed():
    """capacity --demand with --gpus said '--demand cannot be given with --rate' (never typed:
    --gpus searches the rate); request --prompt-tokens 1e12 said to fix '--chunk', which
    request does not have; an unknown cost file pointed to 'list costs', which list refused."""
    from pathlib import Path

    r = CliRunner().invoke(
        main,
        ["capacity", "Llama 3.1 8B", "-H", "H100", "--demand", str(Path("x.csv")), "--gpus",
         "1", "--slo-tpot-p99", "0.05"],
    )  # fmt: skip
    _one_error_line(r, "--demand", "cannot be given with --gpus (which searches --rate)")
    r = CliRunner().invoke(
        main,
        ["request", "Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--batch", "1",
         "--prompt-tokens", "1e12", "--output-tokens", "10"],
    )  # fmt: skip
    assert r.exit_code == 2  # (after the warning that the context passes the model's window)
    errors = [ln for ln in r.output.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith("error: --prompt-tokens: ")
    assert "passes (at most 100,000)" in errors[0] and "--chunk:" not in r.output
    r = CliRunner().invoke(main, ["list", "costs"])
    assert r.exit_code == 0 and "owned-2025" in r.output


def test_the_public_api_names_a_wrong_argument():
    """None or a wrong object for a Setting, a result, a scenario, a model or an acceptance
    raised AttributeError, TypeError or ValueError from deep inside."""
    import inference_econ as ie
    from inference_econ.errors import SpecError

    s = ie.make_setting("Llama 3.1 8B", "H100-paper")
    arch = ie.load_model("Llama 3 70B")
    calls = [
        (lambda: ie.prefill_pass(None, 8, 1000), "setting"),
        (lambda: ie.elasticities(None), "setting"),
        (lambda: ie.sweep(s, "hbm_bandwidth_bytes_per_s", None), "values"),
        (lambda: ie.run_table(None), "scenario"),
        (lambda: ie.calibrated_yaml(None, None), "result"),
        (lambda: ie.demand_figure(None), "plan"),
        (lambda: ie.latency_load_figure(None), "result"),
        (lambda: ie.eagle_head(arch, "x"), "acceptance"),
        (lambda: ie.eagle_head(arch, [0.8, None]), "acceptance"),
        (lambda: ie.eagle_head(None, 0.7), "model"),
    ]
    for call, field in calls:
        with pytest.raises(SpecError, match=f"field '{field}': expected"):
            call()
    assert ie.eagle_head(arch, (0.8, 0.6)).acceptance == (0.8, 0.6)


@pytest.mark.parametrize(
    "given", [{"ttft_p99_s": -1}, {"tpot_p99_s": float("nan")}, {"e2e_p99_s": "x"}]
)
def test_a_latency_target_is_positive_seconds(given):
    """Targets(ttft_p99_s=-1) was accepted, and every run missed it."""
    from inference_econ.errors import SpecError
    from inference_econ.load.targets import Targets

    with pytest.raises(SpecError, match=f"field '{next(iter(given))}'"):
        Targets(**given)
    assert Targets(ttft_p99_s=2.0, tpot_p99_s=float("inf")).limits == {
        "ttft": 2.0,
        "tpot": math.inf,
    }


def test_a_description_may_span_lines_but_a_name_may_not(tmp_path):
    """Prose (a YAML block scalar description) is kept; only names and the like are one line."""
    from inference_econ.specs import catalog

    model = yaml.safe_load(catalog.find("models", "Llama 3.3 70B").read_text())
    model.update(name="My 70B", description="Line one\nline two\twith a tab\n")
    path = tmp_path / "multi.yaml"
    path.write_text(yaml.safe_dump(model))
    r = CliRunner().invoke(main, ["point", str(path), "-H", "H100", "--gpus", "8", "--batch", "8"])
    assert r.exit_code == 0 and "My 70B on 8 x H100-SXM" in r.output, r.output
