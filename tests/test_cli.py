"""The command line as a user meets it: output, formats, files and exit codes."""

import ast
import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ import settings as table
from inference_econ.cli import main
from inference_econ.cli.common import RENAMED_FLAGS
from inference_econ.settings import LOAD_ASSUMPTIONS
from inference_econ.specs.engine import load_engine

ROOT = Path(__file__).resolve().parents[1]


def run(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout  # progress lines go to stderr


def test_list_and_show():
    code, out = run("list", "models")
    assert code == 0 and "Llama 3 70B" in out and "DeepSeek-V3 (paper approximation)" in out
    code, out = run("list", "hardware", "--format", "csv")
    assert code == 0 and "H100-paper" in out
    code, out = run("show", "Llama 3 70B")
    assert code == 0 and "kv_bytes_per_token" in out and "327,680" in out
    code, out = run("show", "H100", "--format", "json")
    shown = json.loads(out)  # an object, as every JSON output
    assert code == 0 and list(shown) == ["title", "metadata", "rows"]
    assert shown["rows"][0]["intra_node_allreduce_bandwidth_bytes_per_s"] == 225e9
    assert (
        shown["metadata"]["hardware_file"] == shown["rows"][0]["file"] == "hardware/h100_sxm.yaml"
    )


def test_show_tells_model_gpu_and_engine_files_apart(tmp_path):
    # a GPU file works with show as with -H: here half an H100-SXM's 3.35 TB/s
    gpu = tmp_path / "derived.yaml"
    gpu.write_text(
        "name: H100 half\nderive_from: H100-SXM\nscale: {hbm_bandwidth_bytes_per_s: 0.5}\n"
    )
    code, out = run("show", str(gpu), "--format", "json")
    assert code == 0, out
    assert json.loads(out)["rows"][0]["hbm_bandwidth_bytes_per_s"] == pytest.approx(1.675e12)
    # a GPU file with a typo gets the -H message, whether it derives or stands alone
    typo = tmp_path / "typo.yaml"
    typo.write_text("name: x\nderive_from: H100-SXM\nhbm_bandwith_bytes_per_s: 1.0e12\n")
    alone = tmp_path / "alone.yaml"
    alone.write_text(
        "name: y\nhbm_bandwith_bytes_per_s: 1.0e12\nflop_per_s: {16: 1.0e15}\n"
        "hbm_capacity_bytes: 8.0e10\n"
    )
    for path in (typo, alone):
        shown = CliRunner().invoke(main, ["show", str(path)])
        as_gpu = CliRunner().invoke(
            main, ["point", "Llama 3 8B", "-H", str(path), "--gpus", "1", "--batch", "1"]
        )
        assert shown.exit_code == 2 and shown.output == as_gpu.output
        assert "did you mean 'hbm_bandwidth_bytes_per_s'" in shown.output
        assert "d_model" not in shown.output
    engine = tmp_path / "engine.yaml"
    engine.write_text("name: slower\nderive_from: trtllm\nstep_time_scale: 1.3\n")
    code, out = run("show", str(engine), "--format", "json")
    row = json.loads(out)["rows"][0]
    assert code == 0 and row["step_time_scale"] == 1.3 and row["derived_from"] == "trtllm"
    # the versions it describes and what the earlier ones run with instead, the base's own
    assert row["versions"] == ">=1.0"
    assert row["at versions <1.2"] == "one_sided_exchange 1"
    # a name at a version is that version's profile, wherever a profile name goes
    code, out = run("show", "trtllm@1.1", "--format", "json")
    assert code == 0 and json.loads(out)["rows"][0]["one_sided_exchange"] == 1
    args = ["point", "DeepSeek-R1", "-H", "B200", "--gpus", "8", "--batch", "512", "--discrete"]
    code, out = run(*args, "--assumptions", "achievable", "--engine", "trtllm@1.1")
    assert code == 0 and "engine trtllm@1.1;" in out and "expert dispatch (all-gather)" in out
    bad = CliRunner().invoke(main, [*args, "--assumptions", "achievable", "--engine", "trtllm@x"])
    assert bad.exit_code == 2 and "'x' in 'trtllm@x' is not a version" in bad.output
    code, out = run("show", "vllm-v0-rocm", "--format", "json")
    fitted = load_engine("vllm-v0-rocm").step_time_scale  # vLLM 0.4.3 on ROCm, fitted
    assert code == 0 and json.loads(out)["rows"][0]["step_time_scale"] == pytest.approx(fitted)
    assert fitted != 1.0
    model = tmp_path / "model.yaml"
    model.write_text((ROOT / "models" / "llama-3-8b.yaml").read_text())
    code, out = run("show", str(model), "--format", "json")
    assert code == 0 and json.loads(out)["rows"][0]["kv_bytes_per_token"] == 32 * 8 * 128 * 2 * 2
    neither = tmp_path / "neither.yaml"
    neither.write_text("name: z\nfoo: 1\n")
    shown = CliRunner().invoke(main, ["show", str(neither)])
    assert shown.exit_code == 2
    assert "is not recognisably a model, a GPU or an engine-profile file" in shown.output


def test_contexts_beyond_the_window_and_self_speculation_warn_once():
    # the case: Llama 3 70B (an 8K model) at a 10M-token context is computed, with one
    # warning line naming the window and the file it comes from
    base = ["frontier", "Llama 3 70B", "-H", "H100-paper", "--grid-points", "8", "-q"]
    long = CliRunner().invoke(main, [*base, "--context", "1e7"])
    assert long.exit_code == 0
    assert long.stderr.splitlines() == [
        "warning: a context of 10,000,000 tokens exceeds the window of Llama 3 70B (8,192 "
        "tokens, max_context_tokens in models/llama-3-70b.yaml): the model was not trained for "
        "it; the cost is extrapolated"
    ]
    within = CliRunner().invoke(main, [*base, "--context", "8192"])
    assert within.exit_code == 0 and within.stderr == ""
    # a request of 8000 + 500 tokens outgrows the window by its output: one line for it
    req = ["request", "Llama 3 70B", "-H", "H100-paper", "--gpus", "8", "--batch", "8"]
    result = CliRunner().invoke(main, [*req, "--prompt-tokens", "8000", "--output-tokens", "500"])
    assert result.exit_code == 0 and result.stderr.count("warning:") == 1
    assert "a context of 8,500 tokens exceeds the window of Llama 3 70B" in result.stderr
    # a draft that is the target: accepted, with one line; a smaller draft is not flagged
    point = ["point", "-H", "H100", "--gpus", "1", "--batch", "1", "--draft", "Llama 3 8B"]
    same = CliRunner().invoke(main, [point[0], "Llama 3 8B", *point[1:]])
    assert same.exit_code == 0 and same.stderr.splitlines() == [
        "warning: the draft model Llama 3 8B is the target model itself (self-speculation): "
        "each draft token costs a full target pass, so speculation never pays off; a draft is "
        "normally a smaller model that shares the target's tokenizer"
    ]
    two = [a if a != "1" or point[i - 1] != "--gpus" else "2" for i, a in enumerate(point)]
    other = CliRunner().invoke(main, [two[0], "Llama 3 70B", *two[1:]])
    assert other.exit_code == 0 and other.stderr == ""


def test_warnings_print_once_per_text(capsys):
    from inference_econ.cli.common import warnings_once
    from inference_econ.errors import warn

    with warnings_once():
        for text in ("a", "b", "a"):
            warn(text)
    assert capsys.readouterr().err == "warning: a\nwarning: b\n"
    with pytest.warns(ie.InferenceEconWarning, match="window of Llama 3 8B"):
        ie.make_setting("Llama 3 8B", "H100", prompt_tokens=10_000)


def test_point_prints_layout_and_breakdown():
    code, out = run(
        "point",
        "Llama 3 70B",
        "-H",
        "H100-paper",
        "--gpus",
        "8",
        "--batch",
        "64",
        "--weight-bits",
        "8",
    )
    assert code == 0
    for word in (
        "tokens_per_s",
        "usd_per_mtok",
        "mfu",
        "collective_latency_ms",
        "weight_read_ms",
        "tensor_degree",
        "bound",
    ):
        assert word in out
    code, out = run(
        "point",
        "Llama 3 70B",
        "-H",
        "H100-paper",
        "--gpus",
        "8",
        "--batch",
        "64",
        "--format",
        "json",
    )
    assert code == 0 and json.loads(out)["rows"][0]["gpus"] == 8


def test_frontier_formats_and_out_file(tmp_path):
    target = tmp_path / "f.csv"
    code, _ = run(
        "frontier",
        "Llama 3 70B",
        "-H",
        "H100-paper",
        "--weight-bits",
        "8",
        "--format",
        "csv",
        "--out",
        str(target),
    )
    assert code == 0
    df = pd.read_csv(target, comment="#")
    assert len(df) > 100 and {
        "tokens_per_s",
        "usd_per_mtok",
        "gpus",
        "batch",
        "pipeline_degree",
    } <= set(df.columns)
    code, out = run("frontier", "Llama 3 70B", "-H", "H100-paper", "--weight-bits", "8")
    assert code == 0 and "fastest" in out and "preference" in out


def test_reproduce_table_1_json():
    code, out = run("reproduce", "table-1", "--format", "json", "-q")
    rows = json.loads(out)["rows"]
    assert code == 0 and rows[0]["label"] == "Llama 3 8B" and abs(rows[0]["tokens_per_s"] - 966) < 1


def test_reproduce_refuses_a_preset_that_no_curve_of_the_target_takes():
    for target in ("table-1", "figure-1", "figure-2"):
        result = CliRunner().invoke(main, ["reproduce", target, "--assumptions", "refined"])
        assert result.exit_code == 2, result.output
        assert result.stderr == (
            f"error: --assumptions: {target} has no curve a preset applies to (the toy model "
            "of Section 2, or measured points): it would be ignored (drop --assumptions)\n"
        )
    # a target whose curves take a preset computes under it (table-4's curves are the paper's)
    code, out = run(
        "reproduce", "table-4", "--assumptions", "paper-table-5", "--format", "json", "-q"
    )
    assert code == 0 and json.loads(out)["metadata"]["curves"][0]["assumptions"] == "paper-table-5"


def test_bad_input_exits_2_with_a_clear_message():
    result = CliRunner().invoke(
        main, ["point", "Lama 3 70B", "-H", "H100", "--gpus", "8", "--batch", "1"]
    )
    assert (
        result.exit_code == 2
        and "did you mean" in result.output
        and "Traceback" not in result.output
    )
    result = CliRunner().invoke(main, ["frontier", "Llama 3 70B", "-H", "H100", "--context", "-5"])
    assert result.exit_code == 2 and "error: --context: is -5" in result.output
    result = CliRunner().invoke(
        main,
        ["frontier", "Llama 3 70B", "-H", "H100", "--acceptance", "1.5", "--draft", "Llama 3 8B"],
    )
    assert result.exit_code == 2 and "acceptance" in result.output


def test_infeasible_exits_1():
    result = CliRunner().invoke(
        main, ["point", "Llama 3.1 405B (paper)", "-H", "H100-paper", "--gpus", "2", "--batch", "1"]
    )
    assert result.exit_code == 1 and "does not fit" in result.output


@pytest.mark.parametrize("module", ["inference_econ.cli", "inference_econ"])
def test_console_script_is_installed(module):
    """``python -m inference_econ.cli`` and ``python -m inference_econ`` run a command (a point:
    no pandas to import; ``list hardware`` is tested in this process above)."""
    point = ["point", "Llama 3 8B", "-H", "GB200", "--gpus", "1", "--batch", "1"]
    out = subprocess.run(
        [sys.executable, "-m", module, *point],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "GB200" in out.stdout


def test_simulate_and_export_take_the_load_options_without_the_capacity_command():
    """The options and notes of serving under load live in cli/load_options.py: simulate and
    export load neither capacity's module nor the fleet and autoscale commands it brings,
    and take the same option objects capacity does."""
    code = (
        "import sys\n"
        "from inference_econ.cli import export_commands, load_options, simulate_commands\n"
        "print(sorted(m for m in sys.modules if m.endswith('_commands')))\n"
        "from inference_econ.cli import capacity_commands\n"
        "print(capacity_commands.traffic_options is simulate_commands.traffic_options"
        " is load_options.traffic_options, export_commands.TARGETS is capacity_commands.TARGETS)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "['inference_econ.cli.export_commands', 'inference_econ.cli.simulate_commands']",
        "True True",
    ]


def test_help_is_complete_and_plain():
    code, out = run("--help")
    commands = out.split("Commands:")[1]
    assert "..." not in commands  # no description cut mid-sentence
    leaves = [
        (f"{name} {sub}", sub_command)
        for name, command in main.commands.items()
        for sub, sub_command in getattr(command, "commands", {name: command}).items()
    ]
    for name, command in leaves:
        code, text = run(*dict.fromkeys(name.split()), "--help")
        # no internal names (the source documents were "seed 000" ... "seed 004")
        assert not re.search(r"seeds?[ /]0", text.lower()), name
        for old in RENAMED_FLAGS:  # a renamed option is refused: its help names the new one
            assert old not in text, (name, old)
        params = {p.name: p for p in command.params}
        if name != "report report":  # report writes an HTML file and prints no table
            assert "format" in params, f"{name} prints a table without --format"
        if "assumptions" in params:  # the paper's preset, but expected figures under load
            load = name.split()[0] in ("simulate", "capacity", "export")  # export: its engine's
            assert params["assumptions"].default in (
                (LOAD_ASSUMPTIONS,) if load else (None, "paper")
            ), name
            # the help states the default a run without the option uses (settings.default)
            assert params["assumptions"].default == table.default(
                "assumptions", name.split()[0]
            ) or name.split()[0] not in ("simulate", "capacity", "export"), name
    code, text = run("prefill", "--help")
    for flag in ("--draft", "--acceptance", "--max-draft", "--context"):
        assert flag not in text


def test_unknown_reproduce_target_is_one_short_line():
    result = CliRunner().invoke(main, ["reproduce", "table-99"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "TARGET" in lines[0] and "table-99" in lines[0]
    assert lines[0].count("table-1") == 1 and "figure-10" in lines[0]
    assert "figure-context" in lines[0]
    code, out = run("reproduce", "--help")
    assert "TARGET" in out and "{" not in out.split("\n")[0]


def test_reproduce_numbers_the_figures_as_the_paper_does():
    """``reproduce figure-N`` is the paper's Figure N: each figure scenario's ``paper_ref``
    (its place in the paper) is its own number; the paper's Figures 3-5 are one target, and
    the context-length figure, which the paper does not have, is named by its content."""
    from inference_econ.api import load_scenario
    from inference_econ.cli.scenario_commands import PAPER_ITEMS

    figures = [k for k in PAPER_ITEMS if k.startswith("figure")]
    assert figures == [f"figure-{n}" for n in (1, 2, 3, 6, 7, 8, 9, 10)] + ["figure-context"]
    for n in (1, 2, 6, 7, 8, 9, 10):
        scenario = load_scenario(PAPER_ITEMS[f"figure-{n}"])
        assert scenario.paper_ref == f"Figure {n}" and scenario.title.startswith(f"Figure {n}:")
    assert load_scenario(PAPER_ITEMS["figure-3"]).paper_ref == "Figures 3-5"
    context = load_scenario(PAPER_ITEMS["figure-context"])
    assert context.paper_ref == "context-length figure"
    assert "not a figure of the paper" in context.title
    code, out = run("reproduce", "--help")
    assert "figure-6 GPU generations" in " ".join(out.split())
    result = CliRunner().invoke(main, ["reproduce", "figure-4"])
    assert result.exit_code == 2 and "drawn together: figure-3" in result.output


def test_long_commands_show_progress_from_the_first_item():
    result = CliRunner().invoke(main, ["reproduce", "table-1"])
    assert result.exit_code == 0
    first = result.stderr.splitlines()[0]
    assert first.startswith("[") and "(1/5)" in first
    result = CliRunner().invoke(
        main,
        ["frontier", "Llama 3 8B", "-H", "H100-paper", "--grid-points", "20", "--format", "csv"],
    )
    assert result.stderr.startswith("[") and "searching" in result.stderr
    quiet = CliRunner().invoke(
        main, ["frontier", "Llama 3 8B", "-H", "H100-paper", "--grid-points", "20", "-q"]
    )
    assert quiet.stderr == ""


def test_list_json_and_csv_say_what_they_list():
    """'list --format json' had an empty title and metadata; CSV had no '#' line."""
    data = json.loads(CliRunner().invoke(main, ["list", "engines", "--format", "json"]).stdout)
    assert data["title"] == f"{len(data['rows'])} engine profiles" and len(data["rows"]) >= 3
    assert data["metadata"]["listed"] == "engines" and data["metadata"]["inference_econ"]
    csv = CliRunner().invoke(main, ["list", "models", "--format", "csv"]).stdout
    assert csv.startswith("# Computed with: listed models; from the package's data")


def test_frontier_under_load_takes_the_trace_its_help_names(tmp_path):
    """--rate's help says "or a trace rescaled" and --prompt-tokens trace said "give --trace":
    frontier has --trace now (the load is the trace; with --rate, rescaled to it). -q printed
    the load search's progress all the same."""
    trace = tmp_path / "tr.csv"
    rows = "".join(f"{i * 0.05:.3f},500,50\n" for i in range(100))  # 20 requests/s
    trace.write_text("arrival_time_s,prompt_tokens,output_tokens\n" + rows)
    args = ["frontier", "Llama 3 8B", "-H", "H100", "--trace", str(trace), "--max-gpus", "1"]
    args += ["--slo-tpot-p99", "0.03", "--format", "csv", "-q"]
    for extra, rate in (((), "20 req/s"), (("--rate", "40"), "40 req/s")):
        result = CliRunner().invoke(main, [*args, *extra])
        assert result.exit_code == 0, result.output
        assert result.stderr == ""  # -q silences the load search's progress too
        lines = result.stdout.splitlines()
        comments = [x for x in lines if x.startswith("#")]
        header, *points = [x for x in lines if not x.startswith("#")]
        assert any(f"arrivals of trace {trace.name}, {rate}" in x for x in comments), comments
        assert header.startswith("tokens_per_s,usd_per_m_output_tokens_all_in") and len(points) == 1
        # read as CSV: the layout column's text holds a comma (a split on "," read TTFT)
        (point,) = csv.DictReader([header, *points])
        assert 0 < float(point["tpot_p99_s"]) <= 0.03


def test_frontier_text_file_has_every_point_like_the_csv(tmp_path):
    """--out f.txt wrote the 20-row screen summary while .csv/.md/.json wrote every point."""
    args = ["frontier", "Llama 3 8B", "-H", "H100", "--grid-points", "30", "-q"]
    CliRunner().invoke(main, [*args, "--out", str(tmp_path / "f.txt")])
    text = (tmp_path / "f.txt").read_text()
    points = int(re.search(r": (\d+) frontier points", text).group(1))
    assert points > 20 and f"\n{points} points, slowest first (every point)\n" in text
    body = text.split("(every point)\n")[1].splitlines()
    assert len([ln for ln in body if re.match(r"\s*\d", ln)]) == points


def test_wording_counts_and_single_messages():
    """'1 prompt', '1 draft token', 'Computed with: H100-SXM' (not 'on H100-SXM' with no
    model), 'whole number' said once, no doubled '(--assumptions achievable)', show's help."""

    def err(*args):
        result = CliRunner().invoke(main, list(args))
        assert result.exit_code != 0 and "Traceback" not in result.output
        return result.stderr.strip()

    tail = CliRunner().invoke(main, ["show", "H100"]).stdout.strip().splitlines()[-1]
    assert tail == "Computed with: H100-SXM (hardware/h100_sxm.yaml)"
    msg = err("frontier", "Llama 3 8B", "-H", "H100", "--max-gpus", "1.5")
    assert msg == "error: --max-gpus: is '1.5' (expected a whole number >= 1 and <= 1048576)"
    msg = err(
        "point", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--batch", "1", "--engine", "vllm"
    )
    assert msg.endswith("(use the achievable preset with an engine: --assumptions achievable)")
    msg = err("prefill", "Llama 3 70B", "-H", "H100", "--gpus", "1", "--prompt-tokens", "8000")
    assert "prefill of 1 prompt does not fit on 1 x H100-SXM" in msg
    from inference_econ.output.render import describe_setting

    said = describe_setting({"draft": "Llama 3 8B", "acceptance": 0.8, "max_draft_tokens": 1})
    assert said.endswith("acceptance 0.8, up to 1 draft token")
    listing = CliRunner().invoke(main, ["--help"]).stdout
    assert "show              A model's, a GPU's or an engine profile's figures." in listing


def test_the_command_line_process_tunes_glibc_malloc_and_nothing_else(monkeypatch):
    """``tune_allocator``: on Linux it sets glibc's mmap threshold, trim threshold,
    top pad and arena count (mallopt parameters -3, -1, -2, -8) to the module's values, the
    search's threads sharing one heap, once per command;
    elsewhere, or without ``mallopt`` (not glibc), it does nothing and raises nothing."""
    import ctypes

    from inference_econ.cli import common

    calls = []

    class Libc:
        def mallopt(self, param, value):
            calls.append((param, value))
            return 1

    monkeypatch.setattr(ctypes, "CDLL", lambda name: Libc())
    monkeypatch.setattr(common.sys, "platform", "linux")
    common.tune_allocator()
    assert calls == [(-3, 32 * 2**20), (-1, 128 * 2**20), (-2, 64 * 2**20), (-8, 1)]
    assert common.MALLOC_MMAP_THRESHOLD_BYTES > 400 * 400 * 4  # a float32 block of the grid
    calls.clear()
    monkeypatch.setattr(common.sys, "platform", "darwin")
    common.tune_allocator()
    assert calls == []
    monkeypatch.setattr(common.sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: object())  # a libc without mallopt
    common.tune_allocator()
    assert calls == []
    # a command runs it before anything else
    monkeypatch.setattr(common, "tune_allocator", lambda: calls.append("tuned"))
    result = CliRunner().invoke(main, ["list", "models"])
    assert result.exit_code == 0 and calls == ["tuned"]


def test_a_command_loads_only_its_own_module(point_in_a_fresh_process):
    """The table of command modules names every command of every module (``--help`` lists
    all 21), and running ``point`` imports no other command's module (the command
    line's start-up is part of what a user waits for; conftest.point_in_a_fresh_process runs
    it as a text table and as CSV in one fresh interpreter)."""
    import importlib

    from inference_econ.cli import COMMAND_MODULES

    modules = sorted(set(COMMAND_MODULES.values()))
    found = {
        command.name: module
        for module in modules
        for command in importlib.import_module(f"inference_econ.cli.{module}").COMMANDS
    }
    assert found == COMMAND_MODULES and len(found) == 21
    assert sorted(main.commands) == sorted(COMMAND_MODULES)
    stdout, loaded = point_in_a_fresh_process["csv"]
    assert sorted(m.split(".")[-1] for m in loaded if m.endswith("_commands")) == [
        "decode_commands"
    ]
    assert "latency" in stdout


#: Modules a frontier of ideal-bound figures does without (each would be compiled on
#: every start, as this machine writes no bytecode): the load commands, the engine profiles and
#: their step model, the interval table, prefill (no --prompt-tokens), whole layouts (no
#: --discrete), the output files' checks (no --out), pandas and the figures.
FRONTIER_SKIPS = (
    "inference_econ.cli.capacity_commands",
    "inference_econ.specs.engine",
    "inference_econ.model.achievable",
    "inference_econ.serving.intervals",
    "inference_econ.serving.prefill",
    "inference_econ.optimise.discrete",
    "inference_econ.output.files",
    "pandas",
    "matplotlib",
)


def test_a_plain_frontier_loads_only_what_it_uses(tmp_path):
    """A plain frontier (benchmarks/bench_cli.py's command, on a smaller model) imports none
    of ``FRONTIER_SKIPS``, and the same command under the achievable preset, with a prompt
    length, whole layouts and a text file to write does load the engine profile, its step
    model, the interval table, prefill, the discrete search and the output files' checks: the
    modules are needed there, so the first check can fail. Both run in one fresh interpreter,
    the plain one first: what the second loads is what is loaded by the interpreter's exit
    beyond what the first did, which is none of them."""
    code = (
        "import atexit, sys; from inference_econ.cli import main\n"
        "cut = sys.argv.index('--then')\n"
        "atexit.register(lambda: print(sorted(sys.modules), file=sys.stderr, flush=True))\n"
        "for args in (sys.argv[1:cut], sys.argv[1:cut] + sys.argv[cut + 1 :]):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as e:\n"
        "        assert not e.code, e.code\n"
        "    print(sorted(sys.modules), file=sys.stderr, flush=True)\n"
    )
    plain = ["frontier", "Llama 3 8B", "-H", "H100-paper", "--weight-bits", "8", "-q"]
    more = ["--assumptions", "achievable", "--prompt-tokens", "1000", "--discrete", "--out"]
    more.append(str(tmp_path / "frontier.txt"))
    out = subprocess.run(
        [sys.executable, "-c", code, *plain, "--then", *more],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    lists = [line for line in out.stderr.splitlines() if line.startswith("['")]
    first, _, at_exit = (ast.literal_eval(line) for line in lists)
    assert "inference_econ.optimise.optimiser" in first and "Ideal bound" in out.stdout
    assert [m for m in FRONTIER_SKIPS if m in first] == []
    assert [m for m in FRONTIER_SKIPS if m in at_exit] == list(FRONTIER_SKIPS[1:7])
    assert "Expected figures" in (tmp_path / "frontier.txt").read_text()


def test_load_work_past_the_limit_offers_yes_on_each_command_that_refuses_it():
    """simulate and frontier --rate refuse load work estimated past ten minutes naming --yes as
    the way to run it, so both take --yes; a frontier without a load refuses it (its work is
    bounded by its grid)."""
    load = ("--prompt-tokens", "1000", "--output-tokens", "200", "--requests", "10000000")
    for args in (
        ("simulate", "Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--rate", "10", *load),
        ("frontier", "Llama 3.1 8B", "-H", "H100", "--rate", "10", "--slo-ttft-p99", "2", *load),
    ):
        refused = CliRunner().invoke(main, list(args))
        assert refused.exit_code == 2 and "or give --yes (yes=True) to run it" in refused.output
        assert "--yes" in CliRunner().invoke(main, [args[0], "--help"]).output
    code, _ = run("simulate", "Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--rate", "4",
                  "--prompt-tokens", "200", "--output-tokens", "20", "--requests", "50", "--yes", "-q")  # fmt: skip
    assert code == 0
    plain = CliRunner().invoke(main, ["frontier", "Llama 3 70B", "-H", "H100-paper", "--yes"])
    assert plain.exit_code == 2 and "--yes: applies to a frontier under a load" in plain.output
