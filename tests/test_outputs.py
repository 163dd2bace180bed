"""What a user reads: every table, CSV and JSON says what it was computed with, columns are
named by the unit they print, numbers print as numbers, and the command line gives the same
columns as the API."""

import io
import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main

POINT = ["point", "Llama 3 70B", "-H", "H100-paper", "--gpus", "8", "--batch", "64"]


def run(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


EXPECTED = {
    "model": "Llama 3 70B",
    "model_file": "models/llama-3-70b.yaml",
    "hardware": "H100-paper",
    "hardware_file": "hardware/paper/h100_paper.yaml",
    "assumptions": "paper",
    "weight_bits": 8.0,
    "activation_bits": 16.0,
    "kv_cache_bits": 16.0,
    "context_tokens": 4096.0,
}


@pytest.mark.parametrize(
    "args",
    [
        POINT + ["--weight-bits", "8", "--context", "4096"],
        [
            "frontier",
            "Llama 3 70B",
            "-H",
            "H100-paper",
            "--weight-bits",
            "8",
            "--context",
            "4096",
            "--grid-points",
            "40",
            "-q",
        ],
    ],
    ids=["point", "frontier"],
)
def test_every_format_states_what_it_was_computed_with(args):
    meta = json.loads(run(*args, "--format", "json"))["metadata"]
    assert {k: meta[k] for k in EXPECTED} == EXPECTED
    csv = run(*args, "--format", "csv")
    comments = [line for line in csv.splitlines() if line.startswith("#")]
    text = " ".join(comments)
    for word in (
        "models/llama-3-70b.yaml",
        "hardware/paper/h100_paper.yaml",
        "assumptions paper",
        "8-bit weights",
        "16-bit activations",
        "16-bit KV cache",
        "context 4,096 tokens",
    ):
        assert word in text
        assert word in run(*args)  # the text table ends with the same statement
        assert word in run(*args, "--format", "markdown")
    # pandas reads the CSV with comment="#", as the docs say
    df = pd.read_csv(io.StringIO(csv), comment="#")
    assert len(df) >= 1 and "tokens_per_s" in df


def test_reproduce_outputs_state_every_curve():
    out = json.loads(run("reproduce", "table-4", "--format", "json", "-q"))
    curves = out["metadata"]["curves"]
    assert [c["label"] for c in curves] == ["H100 SXM", "A100 SXM", "V100 SXM"]
    assert {c["hardware_file"] for c in curves} == {
        "hardware/paper/h100_paper.yaml",
        "hardware/paper/a100_paper.yaml",
        "hardware/paper/v100_paper.yaml",
    }
    assert all(c["assumptions"] == "paper" and c["weight_bits"] == 8 for c in curves)


def test_a_modified_preset_is_named_with_its_changes():
    a = ie.preset("paper").replace(node_aligned_layouts=True)
    setting = ie.make_setting("Llama 3 70B", "H100-paper", assumptions=a)
    assert setting.metadata()["assumptions"] == "paper + node_aligned_layouts=True"


def test_point_columns_are_named_by_the_unit_they_print():
    row = json.loads(run(*POINT, "--format", "json"))["rows"][0]
    table = run(*POINT)
    fields = dict(line.split(None, 1) for line in table.splitlines()[3:] if line and " " in line)
    for name in ("latency", "kernel_launch", "collective_latency", "weight_read"):
        assert f"{name}_s" not in fields
        assert float(fields[f"{name}_ms"].replace(",", "")) == pytest.approx(
            row[f"{name}_s"] * 1e3, rel=1e-3
        )


def test_token_counts_never_print_in_scientific_notation():
    out = run(*POINT, "--context", "32000")
    assert "e+" not in out and "32,000" in out
    out = run("show", "Llama 3 70B")
    assert "e+0" not in "".join(line for line in out.splitlines() if "tokens" in line)


def test_cli_csv_has_the_columns_of_to_dataframe():
    front = ie.frontier(
        "Llama 3 70B", "H100-paper", weight_bits=8, prompt_tokens=2000, grid_points=40
    )
    csv = run(
        "frontier",
        "Llama 3 70B",
        "-H",
        "H100-paper",
        "--weight-bits",
        "8",
        "--prompt-tokens",
        "2000",
        "--grid-points",
        "40",
        "--format",
        "csv",
        "-q",
    )
    df = pd.read_csv(io.StringIO(csv), comment="#")
    api = front.to_dataframe()
    assert list(df.columns) == list(api.columns)
    assert {"ttft_s", "throughput_tokens_per_s", "tokens_per_s_per_gpu", "micro_batch"} <= set(
        df.columns
    )
    assert np.allclose(df["usd_per_mtok"], api["usd_per_mtok"], rtol=1e-9)
    assert api.attrs["metadata"]["prompt_tokens"] == 2000


def test_frontier_shows_the_papers_range_unless_asked():
    short = ie.frontier("Llama 3 70B", "H100-paper", weight_bits=8, grid_points=60)
    full = ie.frontier("Llama 3 70B", "H100-paper", weight_bits=8, grid_points=60, all_points=True)
    fastest = short.fastest().tokens_per_s
    assert short.points.tokens_per_s.min() >= fastest / 100 * (1 - 1e-9)
    assert full.points.tokens_per_s.min() < fastest / 100
    assert full.fastest().tokens_per_s == fastest
    # the paper's range is a slice of the whole frontier
    tail = full.points[full.points.tokens_per_s >= fastest / 100 * (1 - 1e-9)]
    assert np.allclose(tail.usd_per_mtok.to_numpy(), short.points.usd_per_mtok.to_numpy())
    csv = run(
        "frontier",
        "Llama 3 70B",
        "-H",
        "H100-paper",
        "--grid-points",
        "60",
        "--all-points",
        "--format",
        "csv",
        "-q",
    )
    assert len(pd.read_csv(io.StringIO(csv), comment="#")) == len(
        ie.frontier("Llama 3 70B", "H100-paper", grid_points=60, all_points=True)
    )


def test_messages_show_numbers_not_numpy_reprs():
    with pytest.raises(ie.SpecError) as err:
        ie.points("Llama 3 70B", "H100-paper", gpus=np.array([8.0, -1.0]), batch=64)
    assert "np." not in str(err.value) and "-1" in str(err.value)


def test_further_tables_read_back_from_csv_and_json_as_the_rows_they_hold():
    from inference_econ.output.render import csv_tables, render

    main = pd.DataFrame({"model": ["a", "b"], "gpus": [1, 2]})
    shared = pd.DataFrame({"gpu": [1], "instances": ["a (25%),\nb (50%)"], "share": [0.75]})
    tables = {"gpus": ("The shared GPUs", shared), "empty": ("None", shared.iloc[:0])}
    csv = render(main, "csv", notes=["a note"], summary={"gpus": 3}, tables=tables)
    # the main table is what pandas reads with comment="#", as the guide says
    assert pd.read_csv(io.StringIO(csv), comment="#").to_dict("list") == main.to_dict("list")
    back = csv_tables(csv)
    assert list(back) == ["gpus", "empty"] and "# Table gpus: The shared GPUs" in csv
    assert back["gpus"].to_dict("records") == [
        {"gpu": 1, "instances": "a (25%), b (50%)", "share": 0.75}  # one line: a comment's
    ]
    assert list(back["empty"].columns) == ["gpu", "instances", "share"] and back["empty"].empty
    d = json.loads(render(main, "json", summary={"gpus": 3}, tables=tables))
    assert d["gpus"] == shared.to_dict("records") and d["empty"] == []
    assert d["rows"] == main.to_dict("records") and d["summary"] == {"gpus": 3}
    with pytest.raises(ValueError, match="'summary'"):
        render(main, "json", summary={"gpus": 3}, tables={"summary": ("x", shared)})


def test_a_note_or_cell_that_reads_like_a_table_opens_no_csv_section():
    from inference_econ.output.render import csv_tables, render

    main = pd.DataFrame({"model": ["a"], "gpus": [1]})
    plans = pd.DataFrame({"plan": ["Table empty: a plan's name", "b"], "gpus": [2, 4]})
    empty = pd.DataFrame({"gpu": pd.Series([], dtype=int)})
    notes = ["Table 1: the paper's figures", "Table plans: not a section"]
    tables = {"plans": ("Plans", plans), "empty": ("", empty)}
    csv = render(main, "csv", notes=notes, tables=tables)
    assert "# Tables: plans 2, empty 0" in csv
    back = csv_tables(csv)
    assert list(back) == ["plans", "empty"]
    assert back["plans"].to_dict("list") == plans.to_dict("list")
    assert back["empty"].empty and list(back["empty"].columns) == ["gpu"]
    assert csv_tables(render(main, "csv", notes=notes)) == {}  # no further tables, none read
    with pytest.raises(ValueError, match="must be a word"):
        render(main, "csv", tables={"two words": ("x", plans)})


def test_a_note_or_cell_reading_like_the_tables_line_is_not_taken_for_it():
    from inference_econ.output.render import csv_tables, render

    main = pd.DataFrame({"m#": ["a"], "gpus": [1]})  # a '#' in a column name quotes the header
    table = pd.DataFrame({"x": ["Tables: q 1", "b"], "y": [1, 2]})
    csv = render(main, "csv", notes=["Tables: q 1"], tables={"q": ("Q", table)})
    assert csv_tables(csv)["q"].to_dict("list") == table.to_dict("list")
    assert pd.read_csv(io.StringIO(csv), comment="#").to_dict("list") == main.to_dict("list")


def test_names_that_look_like_csv_syntax_read_back_as_they_were_written():
    # a '#' in a cell would end the row for pandas' comment="#" (the rest of it blank) where
    # it is not quoted; a row or a note beginning 'Table x:' opens no section: a '# Tables:'
    # line lists the sections and their rows
    from inference_econ.output.render import csv_tables, render

    main = pd.DataFrame({"model": ["chat#2", "Table gpus: x"], "gpus": [1, 2]})
    table = pd.DataFrame({"model": ["Table gpus: x", "b"], "share": [0.25, 0.5]})
    notes = ["Table evil: no share of a GPU", "a note"]
    csv = render(main, "csv", notes=notes, tables={"gpus": ("The GPUs", table)})
    assert pd.read_csv(io.StringIO(csv), comment="#").to_dict("list") == main.to_dict("list")
    back = csv_tables(csv)
    assert list(back) == ["gpus"] and back["gpus"].to_dict("list") == table.to_dict("list")
    assert "# Table evil: no share of a GPU" in csv.splitlines()  # a note, not a section
    plain = render(main.iloc[1:], "csv")  # no '#' anywhere: cells quoted only where needed
    assert plain.splitlines()[-1] == "Table gpus: x,2"


SWEEP = ["sweep", "Llama 3 70B", "-H", "H100-paper", "--grid-points", "60"]


def test_a_sweep_says_why_a_value_has_no_cost_at_speed():
    """x4 the collectives' latency keeps Llama 3 70B below half the base fastest speed: its
    cost at that speed is blank, and a note names the fastest speed reached and the speed
    asked (it had been a silent blank)."""
    d = json.loads(
        run(*SWEEP, "--param", "nccl_latency", "--values", "1,4", "-q", "--format", "json")
    )
    base, slow = d["rows"]
    assert base["usd_per_mtok_at_speed"] > 0 and slow["usd_per_mtok_at_speed"] is None
    fastest, speed = slow["fastest_tokens_per_s"], slow["at_speed_tokens_per_s"]
    assert fastest < speed
    note = next(n for n in d["notes"] if n.startswith("nccl_latency = 4: "))
    assert (
        f"fastest speed reached, {fastest:.4g} tokens/s per request, is below {speed:.4g}" in note
    )
    assert not any(n.startswith("nccl_latency = 1: ") for n in d["notes"])  # it has a cost
    text = run(*SWEEP, "--param", "nccl_latency", "--values", "4", "--at-speed", "60", "-q")
    assert f"{fastest:.4g} tokens/s per request, is below --at-speed 60, so it has no cost" in text


def test_a_sweep_says_why_a_value_has_no_feasible_configuration():
    """A context of 10^12 tokens: one request's KV cache outgrows any number of GPUs, so the
    row is blank; a note gives the frontier's reason (it had been blank without a word)."""
    args = ["--param", "context", "--values", "1000,1e12", "-q", "--format", "json"]
    d = json.loads(run(*SWEEP, *args))
    base, huge = d["rows"]
    assert base["fastest_tokens_per_s"] > 0 and huge["fastest_tokens_per_s"] is None
    note = next(n for n in d["notes"] if n.startswith("context = 1e+12: "))
    assert (
        "no feasible configuration (no configuration fits: weights 141.1 GB plus 327,680,000.0 GB"
        " of KV cache per request on H100-paper (80 GB per GPU))" in note
    )  # 1e12 tokens x 327,680 bytes a token, in thousands: not 327680000.0
    assert note.endswith("so its figures are blank.")
    assert not any(n.startswith("context = 1000: ") for n in d["notes"])


def test_a_sweep_value_it_cannot_take_is_refused_naming_values_before_any_search(monkeypatch):
    """--values 0,1 for hbm_bandwidth had been refused as "field 'hbm_bandwidth': is 0" after
    the base frontier was searched: the option is named, every value checked first."""
    from inference_econ.studies import sensitivity

    def searched(*args, **kwargs):
        raise AssertionError("a frontier was searched before the values were checked")

    monkeypatch.setattr(sensitivity, "frontier", searched)
    args = [*SWEEP, "--param", "hbm_bandwidth", "--values", "0,1", "-q"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert (
        result.exit_code == 2
        and result.stdout == ""
        and result.stderr
        == ("error: --values (hbm_bandwidth): is 0 (expected a number > 0 and <= 1000000)\n")
    )
    setting = ie.make_setting("Llama 3 8B", "H100-paper")
    with pytest.raises(ie.SpecError, match=r"field 'values \(context\)': is -5"):
        ie.sweep(setting, "context", [4096, -5])
