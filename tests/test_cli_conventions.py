"""What every command shares: options that need another option, --out's suffix and --format,
errors naming what was typed, whole numbers, defaults in --help, JSON objects, the provenance
of spec files, TP dims at TP 1."""

import io
import json
import os
import re
from pathlib import Path

import click
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import EXAMPLE_WHOLE_RUNS, whole_runs_of

import inference_econ as ie
from inference_econ import api
from inference_econ import settings as table
from inference_econ.cli import commands, main
from inference_econ.cli.common import OutputFile, TableFile, wrote_files
from inference_econ.errors import InfeasibleError, SpecError
from inference_econ.model.layouts import tp_dims
from inference_econ.output.render import first_sentence, render
from inference_econ.specs import catalog

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]

SMALL = ["frontier", "Llama 3 8B", "-H", "H100-paper", "--grid-points", "20", "-q"]


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_options_that_need_another_are_refused_naming_both():
    """Load options without --rate used to be dropped silently by frontier."""
    for args, line in [
        (("--output-tokens", "1000"), "error: --output-tokens: needs --rate"),
        (("--requests", "100"), "error: --requests: needs --rate"),
        (("--slo-e2e-p99", "30"), "error: --slo-e2e-p99: needs --rate"),  # the flag exists
        (("--acceptance", "0.5"), "error: --acceptance: needs --draft or --draft-heads"),
        (("--ttft-max", "1"), "error: --ttft-max: needs --prompt-tokens"),
    ]:
        code, out, err = invoke(*SMALL, *args)
        assert code == 2 and out == "" and err.startswith(line) and err.count("\n") == 1, err
    code, _, err = invoke("capacity", "Llama 3 8B", "-H", "H100", "--rate", 5, "--instances", 2)
    assert code == 2 and err.startswith("error: --instances: needs --gpus")
    code, _, err = invoke("simulate", "Llama 3 8B", "-H", "H100", "--gpus", 1, "--requests", 50)
    assert code == 2 and "--requests: needs --rate or --trace" in err
    # the API reads the same table: an EAGLE depth without EAGLE heads is not ignored either
    with pytest.raises(SpecError, match="eagle_layers.*given without draft_heads"):
        ie.make_setting("Llama 3 8B", "H100-paper", eagle_layers=2)


def test_capacity_with_gpus_searches_the_rate(monkeypatch):
    """--gpus makes capacity find the most load: the load options need no --rate there."""

    def reached(*args, **kwargs):
        raise InfeasibleError(f"reached the search with {sorted(kwargs)}")

    monkeypatch.setattr(api, "max_load", reached)
    args = ["capacity", "Llama 3 8B", "-H", "H100", "--gpus", 1, "--prompt-tokens", 100]
    code, _, err = invoke(*args, "--slo-ttft-p99", 1)
    assert code == 1 and "reached the search" in err and "input_lengths" in err


def test_max_gpus_caps_the_plain_frontier():
    free = ie.frontier("Llama 3 8B", "H100-paper", grid_points=60)
    capped = ie.frontier("Llama 3 8B", "H100-paper", grid_points=60, max_gpus=2)
    assert free.fastest()["gpus"] > 2  # the cap binds
    assert capped.points["gpus"].max() == 2.0  # the cap is a point of the GPU axis
    assert capped.fastest()["tokens_per_s"] < free.fastest()["tokens_per_s"]
    assert capped.points["usd_per_mtok"].is_monotonic_increasing  # still a Pareto frontier
    # whole layouts: the columns above the cap go, and every point within it stays (a
    # tighter cap is never cheaper or faster)
    kw = dict(discrete=True, grid_points=20, all_points=True)
    whole = ie.frontier("Llama 3 8B", "H100-paper", max_gpus=8, **kw).points
    within = ie.frontier("Llama 3 8B", "H100-paper", max_gpus=4, **kw).points
    assert set(within["gpus"]) <= {1.0, 2.0, 3.0, 4.0} and within["gpus"].max() == 4
    kept = set(zip(within["gpus"], within["batch"]))
    assert set(zip(*whole[whole["gpus"] <= 4][["gpus", "batch"]].to_numpy().T)) <= kept
    code, out, _ = invoke(*SMALL, "--max-gpus", 2)
    assert code == 0 and "at most 2 GPUs" in out.splitlines()[-1]  # stated with the rest
    code, _, err = invoke("frontier", "Llama 3 70B", "-H", "H100-paper", "--max-gpus", 1)
    assert code == 1 and "need at least 1.76 GPUs" in err and "cap of 1" in err


def test_out_suffix_sets_the_format(tmp_path):
    code, _, _ = invoke(*SMALL, "--out", tmp_path / "f.json")
    payload = json.loads((tmp_path / "f.json").read_text())
    assert code == 0 and list(payload)[:3] == ["title", "metadata", "rows"]  # then "notes"
    assert payload["notes"][0].startswith("Ideal bound: paper preset")  # what the figures are
    invoke(*SMALL, "--out", tmp_path / "f.md")
    md = (tmp_path / "f.md").read_text()  # whether a bound or expected, first, then the table
    assert md.startswith("Ideal bound: paper preset") and "\n\n**Llama 3 8B on H100-paper**" in md
    invoke(*SMALL, "--format", "csv", "--out", tmp_path / "data.dat")  # --format decides
    assert pd.read_csv(tmp_path / "data.dat", comment="#")["gpus"].size > 5
    for args, words in [
        (("--format", "csv", "--out", tmp_path / "g.json"), "'.json' is json, but --format is csv"),
        (("--out", tmp_path / "g.xlsx"), "'.xlsx' is not a table format"),
    ]:
        code, _, err = invoke(*SMALL, *args)
        assert code == 2 and words in err and err.count("\n") == 1, err
    assert not (tmp_path / "g.json").exists() and not (tmp_path / "g.xlsx").exists()


def test_errors_name_what_the_user_typed():
    for args, start in [
        (("point", "Lama 3 70B", "-H", "H100", "--gpus", 8, "--batch", 1), "MODEL argument: "),
        (("point", "Llama 3 70B", "-H", "H10", "--gpus", 8, "--batch", 1), "--hardware: "),
        (("point", "Llama 3 70B", "-H", "H100", "--gpus", 0, "--batch", 1), "--gpus: is 0"),
        (("frontier", "Llama 3 70B", "-H", "H100", "--draft", "Lama 3 8B"), "--draft: no model"),
        (("simulate", "Llama 3 8B", "-H", "H100", "--gpus", 1), "--rate: is missing"),
    ]:
        code, _, err = invoke(*args)
        assert code == 2 and err.startswith(f"error: {start}"), err
        assert "argument: field" not in err and "command line: field" not in err


def test_whole_numbers_print_as_whole_numbers():
    df = pd.DataFrame({"gpus": [32.0, 8.0], "batch": [1.0, 6346.0], "tokens_per_s": [152.3, 1.54]})
    rows = render(df).splitlines()[2:]
    assert rows[0].split() == ["32", "1", "152.3"] and rows[1].split() == ["8", "6,346", "1.54"]
    # a value that rounds to 1 prints as 1.0 does (not 1.000 beside 1.00)
    fractions = render(pd.DataFrame({"goodput_fraction": [1.0, 0.9998, 0.5]})).splitlines()
    assert [line.strip() for line in fractions[2:]] == ["1.00", "1.00", "0.500"]
    code, out, _ = invoke("infer", "size", "--help")
    assert "[default: 0.3333]" in out and "0.33333" not in out
    code, out, _ = invoke("prefill", "--help")
    assert "[default: 0]" in out and "[default: 0.0]" not in out
    assert "Tokens of each prompt prefilled" in out and "first token" not in " ".join(out.split())
    code, out, _ = invoke("frontier", "--help")
    text = " ".join(out.split())
    assert "gamma" not in text and "adds each configuration's time to first token" in text


def test_help_and_bare_command():
    code, out, _ = invoke()
    assert code == 0 and "Usage" in out  # the help is what was asked for: success
    code, out, _ = invoke("infer", "--help")
    assert "..." not in out.split("Commands:")[1]  # short help that fits


def test_every_command_that_writes_to_out_takes_o_for_it():
    """-o is --out on every command that has --out (export, reproduce, run, study and report
    had only the long name, so a user's -o was an unknown option there)."""
    missing = [
        " ".join(path)
        for path, command in commands()
        for option in command.params
        if "--out" in getattr(option, "opts", ()) and "-o" not in option.opts
    ]
    assert missing == []
    outs = [path for path, command in commands() if any("--out" in p.opts for p in command.params)]
    assert len(outs) >= 20  # the check reached the commands that write files


def test_json_is_an_object_and_descriptions_fit_the_table():
    code, out, _ = invoke("list", "scenarios", "--format", "json")
    full = json.loads(out)
    assert list(full) == ["title", "metadata", "rows"]
    assert max(len(r["description"]) for r in full["rows"]) > 300  # the whole text here
    code, out, _ = invoke("list", "scenarios")
    assert code == 0 and max(len(line) for line in out.splitlines()) < 160
    assert first_sentence("Pope et al. (2022) report 4 ms. More follows.") == (
        "Pope et al. (2022) report 4 ms."
    )
    assert wrote_files(9, "out/") == wrote_files(9, "out") == "wrote 9 files to out/"


def test_tp_dims_only_where_tensor_parallel():
    assert tp_dims(True, 1.0) == "-" and tp_dims(True, 8.0) == "2D" and tp_dims(False, 2) == "1D"
    code, out, _ = invoke("point", "Llama 3 8B", "-H", "H100-paper", "--gpus", 1, "--batch", 8)
    assert code == 0 and re.search(r"^tp_dims +- *$", out, re.M)
    row = ie.point("Llama 3 8B", "H100-paper", gpus=8, batch=8)
    assert row["tp_dims"] in ("1D", "2D")


def test_yaml_outputs_refuse_a_suffix_of_another_format(tmp_path):
    """import-hf -o model.json and calibrate -o cal.csv wrote YAML under those names: a file
    that a JSON or CSV reader then fails on, or takes for what it is not."""
    examples = Path(__file__).parent.parent / "examples"
    for args in [
        ("import-hf", examples / "config.json", "-o", tmp_path / "model.json"),
        ("calibrate", examples / "measured-rows.csv", "-o", tmp_path / "cal.csv"),
    ]:
        code, _, err = invoke(*args)
        suffix = Path(str(args[-1])).suffix
        assert code == 2 and f"cannot be written as '{suffix}' (use one of .yaml, .yml)" in err
        assert not Path(str(args[-1])).exists()
    code, _, _ = invoke("import-hf", examples / "config.json", "-o", tmp_path / "m.yml")
    assert code == 0 and (tmp_path / "m.yml").read_text().startswith("# Imported from")


def test_a_csv_cell_of_nothing_split_reads_as_the_api_gives_it():
    """The CSV guard against formulas wrote tp_dims '-' (one GPU) as "'-": pandas then read
    a value the table, the JSON and the API never give."""
    import io

    code, out, _ = invoke(
        "point", "Llama 3 8B", "-H", "H100-paper", "--gpus", 1, "--batch", 8, "--format", "csv"
    )
    row = pd.read_csv(io.StringIO(out), comment="#").iloc[0]
    api_row = ie.point("Llama 3 8B", "H100-paper", gpus=1, batch=8)
    assert code == 0 and row["tp_dims"] == api_row["tp_dims"] == "-"


def test_csv_cells_of_repeated_text_are_guarded_as_each_cell_is():
    """A long table's text repeats (its models, GPUs and sources): each distinct value is
    guarded once. The cells are those of ``safe_cell`` cell by cell, whatever the column holds:
    text of the engine's own string type, text with gaps, text among numbers (where 1 and 1.0
    are one value to a hash, not to the CSV)."""
    import numpy as np

    from inference_econ.output.render import csv_cells, safe_cell

    df = pd.DataFrame(
        {
            "text": pd.array(["=1+1", "x", None, "=1+1", "-", "a\r\nb"] * 50, dtype="str"),
            "objects": ["@x", "y", np.nan, "@x", "-2", None] * 50,
            "mixed": [1, 1.0, "1", True, "=sum", None] * 50,
        }
    )
    cells = csv_cells(df).to_csv(index=False)
    each = df.copy()
    for name in each.columns:
        each[name] = each[name].astype(object).map(safe_cell)
    assert cells == each.to_csv(index=False)
    assert cells.splitlines()[1:4] == ["'=1+1,'@x,1", "x,y,1.0", ",,1"]


def test_spec_files_are_named_by_where_they_come_from(tmp_path, monkeypatch):
    assert ie.hardware_summary("H100")["file"] == "hardware/h100_sxm.yaml"  # shipped: relative
    (tmp_path / "hardware").mkdir()
    mine = tmp_path / "hardware" / "my_gpu.yaml"
    mine.write_text("name: My GPU\nderive_from: H100-SXM\nprice_usd_per_hour: 1.5\n")
    monkeypatch.setenv("INFERENCE_ECON_PATH", str(tmp_path))
    catalog.clear_cache()
    try:
        shown = ie.hardware_summary("My GPU")["file"]
        setting = ie.make_setting("Llama 3 8B", "My GPU")
    finally:
        monkeypatch.delenv("INFERENCE_ECON_PATH")
        catalog.clear_cache()
    assert shown == str(mine.resolve())  # a user's file in full: it never looks shipped
    assert setting.metadata()["hardware_file"] == str(mine.resolve())


def test_list_warns_of_a_search_path_entry_it_reads_nothing_from(tmp_path, monkeypatch):
    """A typo in INFERENCE_ECON_PATH, or the hardware/ folder itself named, was silent: the
    user's GPUs were just missing from list and -H."""
    (tmp_path / "hardware").mkdir()
    paths = [tmp_path / "typo", tmp_path / "hardware", tmp_path]
    monkeypatch.setenv("INFERENCE_ECON_PATH", os.pathsep.join(str(p) for p in paths))
    catalog.clear_cache()
    try:
        code, _, err = invoke("list", "hardware")
    finally:
        monkeypatch.delenv("INFERENCE_ECON_PATH")
        catalog.clear_cache()
    assert code == 0 and err.count("warning: INFERENCE_ECON_PATH") == 2, err
    assert f"'{tmp_path / 'typo'}' is not a folder: nothing is read from it" in err
    assert f"'{tmp_path / 'hardware'}' holds none of hardware/, models/" in err
    assert "(name the folder above those)" in err and f"'{tmp_path}'" not in err


def test_every_needed_setting_exists():
    for row in table.SETTINGS:
        assert set(row.needs) <= set(table.BY_NAME), row.name


def test_load_outputs_state_what_they_were_computed_with():
    """simulate and capacity CSVs start with the # line of every other CSV; JSON has metadata."""
    import json

    from click.testing import CliRunner

    from inference_econ.cli import main

    load = ["Llama 3 8B", "-H", "H100", "--requests", "100", "--prompt-tokens", "500"]
    load += ["--output-tokens", "50"]
    out = CliRunner().invoke(
        main, ["simulate", *load, "--gpus", "1", "--rate", "5", "--format", "csv"]
    )
    assert out.exit_code == 0, out.output
    first, *comments = [x for x in out.stdout.splitlines() if x.startswith("#")]
    assert first.startswith(  # serving under load: expected figures by default
        "# Computed with: Llama 3 8B (models/llama-3-8b.yaml) on H100-SXM "
        "(hardware/h100_sxm.yaml); assumptions achievable, engine trtllm; 16-bit weights"
    )
    assert "5 req/s" in first and "requests_per_instance 100" in first and "seed 0" in first
    assert comments[0].startswith("# Expected figures: achievable preset, engine profile trtllm")
    assert any(
        c.startswith("# only 100 requests per instance: p99 values are rough") for c in comments
    )
    args = ["capacity", *load, "--rate", "5", "--slo-tpot-p99", "0.05", "--format", "json"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    meta = json.loads(out.stdout)["metadata"]
    assert meta["targets"] == "p99 TPOT <= 50 ms"
    assert meta["assumptions"] == "achievable, engine trtllm"


def test_capacity_of_a_given_deployment_refuses_disaggregated():
    """--disaggregated searches prefill pools; with --gpus it would be silently dropped."""
    from click.testing import CliRunner

    from inference_econ.cli import main

    args = ["capacity", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--disaggregated"]
    args += ["--prompt-tokens", "500", "--output-tokens", "50", "--slo-tpot-p99", "0.05"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 2 and "--disaggregated" in out.stderr and "--prefill-gpus" in out.stderr


# --- conventions a new user relies on -----------------------------------


_commands = commands  # every command of the command line, with the words that call it


def test_every_command_with_format_has_out():
    """The docs say --format everywhere and --out writes atomically."""
    with_format = [words for words, cmd in _commands() if "format" in _names(cmd)]
    assert len(with_format) >= 20 and ("point",) in with_format and ("sweep",) in with_format
    missing = [
        words for words, cmd in _commands() if "format" in _names(cmd) and "out" not in _names(cmd)
    ]
    assert missing == []
    # --out is the printed table's file (a TableFile) except where the README says otherwise
    # ("every table command takes --out" holds for every table command)
    other = sorted(
        words[-1]
        for words, cmd in _commands()
        if "format" in _names(cmd)
        and not isinstance(next(p for p in cmd.params if p.name == "out").type, TableFile)
    )
    assert other == ["calibrate", "export", "import-hf", "reproduce", "run", "study"]
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert (
        "while `run`, `study`, `export` and `reproduce figure-N|all` write a folder with `--out DIR`"
        in readme
        and "`calibrate --out` and `import-hf --out` are the engine profile and the model" in readme
    )


def test_every_command_that_computes_takes_quiet():
    """-q is one flag: a command with no progress lines takes it too (point -q had been "No such
    option"); list, show and import-hf compute nothing and take none."""
    without = sorted(
        " ".join(words)
        for words, cmd in _commands()
        if not any("-q" in p.opts for p in cmd.params if isinstance(p, click.Option))
    )
    assert without == ["import-hf", "list", "show"]
    code, out, err = invoke(
        "point", "Llama 3 8B", "-H", "H100-paper", "--gpus", 1, "--batch", 8, "-q"
    )
    assert code == 0 and "Llama 3 8B" in out, err


def test_calibrate_quiet_prints_no_progress_lines():
    """The shipped rows' whole runs replayed as the --help examples replay them
    (``whole_runs_of``): what -q silences is the progress lines, whatever the runs' length."""
    csv = ROOT / "examples" / "measured-rows.csv"
    with whole_runs_of(EXAMPLE_WHOLE_RUNS):
        _, _, err = invoke("calibrate", csv, "--no-holdout")
        code, out, quiet = invoke("calibrate", csv, "--no-holdout", "-q")
    assert code == 0 and "hbm_efficiency" in out, quiet
    assert re.search(r"^\[ *[0-9.]+s\] ", err, re.M)
    assert not re.search(r"^\[ *[0-9.]+s\] ", quiet, re.M)


def _names(cmd) -> set[str]:
    return {p.name for p in cmd.params}


def test_out_writes_what_would_be_printed(tmp_path):
    """point, list, show, request ... take --out like frontier: the suffix sets the format,
    the file is written atomically, nothing on stdout; a failure writes nothing."""
    point = ["point", "Llama 3 8B", "-H", "H100-paper", "--gpus", 1, "--batch", 8]
    code, out, err = invoke(*point, "--out", tmp_path / "p.json")
    payload = json.loads((tmp_path / "p.json").read_text())
    assert code == 0 and out == "" and err == f"wrote {tmp_path / 'p.json'}\n"
    assert payload["rows"][0]["gpus"] == 1 and payload["rows"][0]["batch"] == 8
    code, printed, _ = invoke(*point, "--format", "csv")
    invoke(*point, "--out", tmp_path / "p.csv")
    assert code == 0 and (tmp_path / "p.csv").read_text() == printed  # byte for byte
    code, _, _ = invoke("list", "models", "--out", tmp_path / "m.md")
    assert code == 0 and "\n| name | aliases |" in (tmp_path / "m.md").read_text()
    code, _, err = invoke(*point, "--format", "csv", "--out", tmp_path / "q.json")
    assert code == 2 and "'.json' is json, but --format is csv" in err
    # a failed command leaves the file as it was (p.csv: the tool's own, so it may replace it;
    # a user's own file is refused before anything runs: test_output_safety)
    code, _, err = invoke(
        "point",
        "Llama 3 70B",
        "-H",
        "H100-paper",
        "--gpus",
        1,
        "--batch",
        1,
        "--out",
        tmp_path / "p.csv",
    )
    assert code == 1 and "does not fit" in err and (tmp_path / "p.csv").read_text() == printed


def test_a_misspelt_flag_is_never_pointed_at_a_renamed_one():
    """click suggests the flags nearest a misspelt one; a renamed flag's old name is among
    them but only refuses, so it is suggested by its new name (--input-lengths: --prompt-tokens,
    never --input-length)."""
    code, out, err = invoke("export", "Llama 3 70B", "-H", "H100", "--input-lengths", 5)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "No such option '--input-lengths'" in err and "'--prompt-tokens'" in err
    assert "'--input-length'" not in err and "'--output-length'" not in err


def test_options_that_would_be_dropped_are_refused():
    """Each of these combinations used to drop an option without a word."""
    rate = ["--rate", 5, "--output-tokens", 100, "--slo-ttft-p99", 2]
    for args, line in [
        (
            ["frontier", "Llama 3 8B", "-H", "H100", *rate, "--input-length", 100],
            "error: --input-length: was renamed --prompt-tokens",
        ),
        (
            ["frontier", "Llama 3 8B", "-H", "H100", "--prompt-tokens", "uniform:10:20"],
            "error: --prompt-tokens: uniform:10:20 is a distribution of prompt lengths",
        ),
        (
            ["capacity", "Llama 3 8B", "-H", "H100", "--gpus", 1, *rate],
            "error: --rate: is searched when --gpus is given, so it would be ignored",
        ),
        (
            [
                "sweep",
                "Llama 3 8B",
                "-H",
                "H100",
                "--param",
                "context",
                "--values",
                1000,
                "--tornado",
                "t.png",
            ],
            "error: --tornado: cannot be given with --param",
        ),
        (
            [
                "request",
                "Llama 3 8B",
                "-H",
                "H100",
                "--gpus",
                1,
                "--batch",
                8,
                "--prompt-tokens",
                100,
                "--output-tokens",
                10,
                "--prefill-batch",
                100,
            ],
            "error: --prefill-batch: is 100, more prompts than the decode batch of 8 holds",
        ),
        (
            [
                "point",
                "Llama 3 8B",
                "-H",
                "H100",
                "--gpus",
                1,
                "--batch",
                1,
                "--draft",
                "Llama 3 8B",
                "--max-draft",
                1,
            ],
            "error: --max-draft: is 1, which means no speculation",
        ),
    ]:
        code, out, err = invoke(*args)
        assert code == 2 and out == "" and err.startswith(line) and err.count("\n") == 1, err
    assert table.conflicts(["prompt_tokens", "input_lengths"])[0][1] == "input_lengths"
    # a prefill batch up to the decode batch is the engine's business: accepted
    setting = ie.make_setting("Llama 3 8B", "H100-paper")
    assert ie.request_view(setting, 1, 8, 100, 10, prefill_batch=8)["prefill_batch"] == 8
    with pytest.raises(SpecError, match="prefill_batch"):
        ie.request_view(setting, 1, 8, 100, 10, prefill_batch=9)


def test_spec_paths_are_shown_as_given_or_relative_to_the_package(tmp_path, monkeypatch):
    """No absolute path for a file given relative, no site-packages path for a shipped one
    in errors from any module and in list's CSV and JSON."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "typo.yaml").write_text("name: Typo\nlayerz: 3\n")
    code, _, err = invoke("point", "typo.yaml", "-H", "H100", "--gpus", 1, "--batch", 1)
    assert code == 2 and err.startswith("error: typo.yaml: field "), err
    code, _, err = invoke("point", "Llama 3 8B", "-H", "typo.yaml", "--gpus", 1, "--batch", 1)
    assert code == 2 and err.startswith("error: typo.yaml: field 'layerz'"), err
    code, _, err = invoke("point", tmp_path / "typo.yaml", "-H", "H100", "--gpus", 1, "--batch", 1)
    assert code == 2 and err.startswith(f"error: {tmp_path / 'typo.yaml'}: ")  # absolute: as given
    args = ["point", "Llama 3 8B", "-H", "H100", "--gpus", 1, "--batch", 1, "--draft-heads", "mtp"]
    code, _, err = invoke(*args)
    assert code == 2 and err.startswith("error: models/llama-3-8b.yaml: field 'mtp'"), err
    for fmt in ("csv", "json"):
        code, out, _ = invoke("list", "models", "--format", fmt)
        assert (
            code == 0
            and "models/llama-3-8b.yaml" in out
            and str(catalog.shipped_roots()[0]) not in out
        )
    scenario = "name: s\ntitle: t\ncurves:\n  - {model: Llama 3 8B, hardware: H100, model_overrides: {layers: 0}}\n"
    (tmp_path / "s.yaml").write_text(scenario)
    code, _, err = invoke("run", "s.yaml", "--out", "o")
    assert code == 2 and "model_overrides on models/llama-3-8b.yaml: field 'layers'" in err, err


def test_tp_dims_need_a_split_worth_naming():
    """A continuous frontier's 1.0007 GPUs show TP 1.00: no "1D" beside it."""
    assert tp_dims(False, 1.0007) == "-" and tp_dims(True, 1.0049) == "-"
    assert tp_dims(False, 1.005) == "1D" and tp_dims(True, 1.01) == "2D"
    front = ie.frontier("Llama 3 8B", "H100-paper", grid_points=60).to_dataframe()
    split = front["tensor_degree"] >= 1.005
    assert (front.loc[split, "tp_dims"] != "-").all() and (
        front.loc[~split, "tp_dims"] == "-"
    ).all()


def test_every_figure_option_accepts_the_same_suffixes(tmp_path):
    """capacity --figure took only png/svg/pdf where compare-measured took every format
    matplotlib saves: one FigureFile rule for all."""
    from inference_econ.cli.common import FigureFile

    figures = [
        (words, p.opts[0])
        for words, cmd in _commands()
        for p in cmd.params
        if isinstance(p.type, OutputFile) and p.name in ("figure", "tornado")
    ]
    assert len(figures) >= 4
    for words, flag in figures:
        params = {p.opts[0]: p for p in dict(_commands())[words].params}
        assert isinstance(params[flag].type, FigureFile), (words, flag)
    assert FigureFile.target("a/b.EPS") == ("a/b", ("eps",)) and FigureFile.target("c") == (
        "c",
        ("png",),
    )
    code, _, err = invoke("capacity", "Llama 3 8B", "-H", "H100", "--rate", 1, "--figure", "f.xyz")
    assert code == 2 and "cannot be written as '.xyz'" in err and "eps" in err


def test_a_command_on_one_gpu_refuses_a_second_one():
    """A repeated -H (or a comma list) had kept the last GPU silently where a command computes
    on one (frontier -H H100 -H H200 priced H200 alone): refused in one line naming
    --hardware, before any work. Commands that compare GPUs take several."""
    compare = {"capacity", "export", "frontier", *(f"infer {w}" for w in ("feasibility", "margin"))}
    compare |= {"infer preference", "infer size"}
    checked = []
    for words, cmd in _commands():
        if not any("-H" in p.opts for p in cmd.params) or " ".join(words) in compare:
            continue
        for hardware in (["-H", "H100", "-H", "H200"], ["-H", "H100,H200"]):
            code, out, err = invoke(*words, *hardware)
            assert code == 2 and out == "" and err.count("\n") == 1, (words, err)
            assert err.startswith("error: --hardware: names 2 GPUs (H100, H200);"), err
            assert "(give one -H" in err, err
        checked.append(" ".join(words))
    assert {"point", "simulate", "sweep", "show", "compare-measured", "prefill"} <= set(checked)
    code, _, err = invoke("frontier", "Llama 3 70B", "-H", "H100", "-H", "H200")
    assert code == 2 and err == (
        "error: --hardware: names 2 GPUs (H100, H200); frontier takes one "
        "(give one -H, or --rate to compare several GPUs)\n"
    )
    load = ["--rate", 2, "--prompt-tokens", 500, "--output-tokens", 50, "--requests", 100]
    code, out, _ = invoke("frontier", "Llama 3 8B", "-H", "H100", "-H", "H200", *load,
                          "--slo-tpot-p99", 0.05, "--format", "csv", "-q")  # fmt: skip
    rows = pd.read_csv(io.StringIO(out), comment="#")
    assert code == 0 and set(rows["hardware"]) == {"H100-SXM", "H200-SXM"}


def test_article_before_a_number_said_aloud():
    from inference_econ.errors import article

    said = {n: article(n) for n in (1, 8, 11, 18, 80, 100, 800, 1000, 8000, 11000, 18000, 110000)}
    assert [n for n, a in said.items() if a == "an"] == [8, 11, 18, 80, 800, 8000, 11000, 18000]
    assert article(1.5) == "a" and article(180000) == "a"


def test_a_confident_capacity_plan_gives_its_plans_and_headroom_in_json():
    """The text of a capacity plan prints the plans side by side (expected, at the confidence,
    the ideal bound) and its headroom; its JSON had carried neither."""
    from click.testing import CliRunner

    from inference_econ.cli import main

    load = ["Llama 3 8B", "-H", "H100", "--rate", "12", "--prompt-tokens", "1000"]
    load += ["--output-tokens", "200", "--slo-tpot-p99", "0.05", "--requests", "100", "-q"]
    text = CliRunner().invoke(main, ["capacity", *load])
    assert text.exit_code == 0, text.output
    out = CliRunner().invoke(main, ["capacity", *load, "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    plans = data["plans"]
    assert [p["plan"].split(" ")[0] for p in plans] == ["expected", "90", "ideal"]
    for p in plans:  # each plan's deployment and price as the text's side-by-side table has them
        assert p["deployment"] in text.stdout and f"{p['usd_per_hour']:.2f}" in text.stdout
    held = next(n for n in data["notes"] if n.startswith("Headroom:"))
    assert held in text.stdout


def test_capacity_confidence_beside_an_ideal_bound_is_one_line_exit_2():
    """--confidence under --assumptions refined had been dropped without a word (an ideal bound
    has no interval); the refined plan at the default confidence still runs."""
    load = ["Llama 3 8B", "-H", "H100", "--rate", "12", "--prompt-tokens", "1000", "-q"]
    load += ["--output-tokens", "200", "--slo-tpot-p99", "0.05", "--requests", "100"]
    code, out, err = invoke("capacity", *load, "--assumptions", "refined", "--confidence", "0.8")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("error: --confidence: sizes the plan at an interval's end, and the ")
    code, out, err = invoke("capacity", *load, "--assumptions", "refined")
    assert code == 0 and "Cheapest deployment" in out, err


@pytest.mark.parametrize(
    "args, says",
    [
        (["point", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--batch", "8", "--batch=16"],
         "--batch: is given 2 times (8, 16) (give it once)"),
        (["capacity", "Llama 3.1 8B", "-H", "H100", "--rate", "3", "--prompt-tokens", "100",
          "--rate", "5"], "--rate: is given 2 times (3, 5)"),
        (["infer", "margin", "paper-2025", "--grid-points", "10", "--grid-points", "20"],
         "--grid-points: is given 2 times (10, 20)"),
        (["simulate", "Llama 3.1 8B", "-H", "H100", "--rate", "3", "--prefix-caching",
          "--no-prefix-caching"], "--prefix-caching: is given 2 times"),
    ],
)  # fmt: skip
def test_an_option_given_twice_is_refused_not_the_last_kept(args, says):
    # click keeps the last of an option given twice: --rate 3 ... --rate 5 had planned 5 req/s
    # without a word; an option taken repeatedly (-H of capacity) and a flag said twice alike
    # are not refused
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    assert says in result.output


def test_an_option_taken_repeatedly_or_a_flag_said_twice_alike_is_not_refused():
    from inference_econ.cli.typed import refuse_repeats

    capacity = main.commands["capacity"]
    refuse_repeats(capacity, ["M", "-H", "H100", "-H", "H200", "--rate", "3"])  # -H repeats
    refuse_repeats(capacity, ["M", "--no-prefix-caching", "--no-prefix-caching"])
    refuse_repeats(capacity, ["M", "--", "--rate", "3", "--rate", "4"])  # past "--": arguments
