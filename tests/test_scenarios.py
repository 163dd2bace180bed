"""Scenario files: the shipped ones load, bad ones get errors naming file, curve and field."""

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.specs import catalog

SCENARIOS = [e for e in catalog.entries("scenarios") if not e.name.startswith("studies/")]


@pytest.mark.parametrize("entry", SCENARIOS, ids=lambda e: e.name)
def test_every_shipped_scenario_loads(entry):
    scenario = ie.load_scenario(entry.path)
    assert scenario.title
    for curve in scenario.curves:
        if curve.toy is None:
            assert curve.setting().gpu.name


def test_paper_has_a_scenario_per_table_and_figure():
    # numbered as the paper numbers them: its Figures 3-5 are one scenario (figure-3), and the
    # context-length figure the paper does not have is named by its content
    names = {e.name for e in catalog.entries("scenarios")}
    assert {f"paper/table-{i}" for i in range(1, 7)} <= names
    assert {f"paper/figure-{i}" for i in (1, 2, 3, 6, 7, 8, 9, 10)} | {"paper/figure-context"} <= (
        names
    )
    assert not {"paper/figure-4", "paper/figure-5"} & names


def test_paper_scenarios_read_preference_points_the_papers_way():
    # the paper's code sampled its frontiers (docs/deviations.md): every paper scenario with a
    # preference point reads it the same way, so its key points match the paper's code
    for entry in catalog.entries("scenarios"):
        if not entry.name.startswith("paper/"):
            continue
        scenario = ie.load_scenario(entry.path)
        if scenario.curves and scenario.report == "preference":
            assert scenario.preference_sampling == "paper", entry.name


GOOD = """
title: My comparison
curves:
  - label: fast one
    model: Llama 3 70B
    hardware: H100-paper
"""


def write(tmp_path, text):
    path = tmp_path / "bad.yaml"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize(
    "change, field, words",
    [
        ("    model: Llama 3 70B\n", "model", "missing"),
        ("    hardware: H100-paper\n", "hardware", "missing"),
    ],
)
def test_missing_fields(tmp_path, change, field, words):
    path = write(tmp_path, GOOD.replace(change, ""))
    with pytest.raises(ie.SpecError) as info:
        ie.load_scenario(path)
    msg = str(info.value)
    assert str(path) in msg and "curve 'fast one'" in msg and field in msg and words in msg


@pytest.mark.parametrize(
    "extra, field, words",
    [
        ("    hardware: H10O\n", "hardware", "did you mean"),
        ("    context_tokens: -5\n", "context_tokens", ">= 0"),
        ("    weight_bits: eight\n", "weight_bits", "expected a number"),
        ("    acceptance: 1.5\n", "acceptance", "<= 1"),
        ("    pipeline: maybe\n", "pipeline", "true or false"),
        ("    contxt_tokens: 5\n", "contxt_tokens", "did you mean 'context_tokens'"),
    ],
)
def test_bad_values(tmp_path, extra, field, words):
    text = (
        GOOD.replace("    hardware: H100-paper\n", "") + extra
        if "hardware" in extra
        else GOOD + extra
    )
    path = write(tmp_path, text)
    with pytest.raises(ie.SpecError) as info:
        ie.load_scenario(path)
    msg = str(info.value)
    assert str(path) in msg and "curve 'fast one'" in msg and field in msg and words in msg, msg


def test_bad_scenario_on_the_command_line_exits_2_without_traceback(tmp_path):
    path = write(tmp_path, GOOD + "    context_tokens: -1\n")
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 2
    assert (
        "Traceback" not in result.output
        and "context_tokens" in result.output
        and "fast one" in result.output
    )


def test_top_level_errors(tmp_path):
    with pytest.raises(ie.SpecError, match="curves"):
        ie.load_scenario(write(tmp_path, "title: x\ncurves: []\n"))
    with pytest.raises(ie.SpecError, match="title"):
        ie.load_scenario(write(tmp_path, "curves: [{model: Llama 3 8B, hardware: H100}]\n"))
    with pytest.raises(ie.SpecError, match="did you mean 'frontier'"):
        ie.load_scenario(write(tmp_path, GOOD + "plots: [fronteir]\n"))
    dupes = GOOD + "  - label: fast one\n    model: Llama 3 8B\n    hardware: H100\n"
    with pytest.raises(ie.SpecError, match="duplicate labels"):
        ie.load_scenario(write(tmp_path, dupes))


def test_what_if_overrides(tmp_path):
    text = (
        GOOD
        + "    hardware_scale: {hbm_bandwidth_bytes_per_s: 2}\n    model_overrides: {attention.kv_heads: 1}\n"
    )
    scenario = ie.load_scenario(write(tmp_path, text))
    setting = scenario.curves[0].setting()
    assert setting.gpu.hbm_bandwidth_bytes_per_s == pytest.approx(6.6e12)
    assert setting.model.attention.kv_heads == 1 and "what-if" in setting.model.name
    bad = GOOD + "    model_overrides: {attention.kv_heads: 3}\n"
    with pytest.raises(ie.SpecError, match="kv_heads"):
        ie.load_scenario(write(tmp_path, bad))


def test_refusals_name_a_price_per_million_tokens_and_the_field_as_the_curve_writes_it(tmp_path):
    """A measured point's usd_per_mtok of 0 was "0 in USD", and a factor of hardware_scale was
    reported as "hardware_overrides.scale...", a field the scenario does not have."""
    path = write(tmp_path, GOOD + "    hardware_scale: {hbm_bandwidth_bytes_per_s: 0}\n")
    with pytest.raises(ie.SpecError) as info:
        ie.load_scenario(path)
    assert str(info.value) == (
        f"{path}, curve 'fast one': field 'hardware_scale.hbm_bandwidth_bytes_per_s': is 0 "
        "(expected a number > 0)"
    )
    over = GOOD + "    hardware_overrides: {hbm_bandwidth_bytes_per_s: 0}\n"
    with pytest.raises(ie.SpecError, match="field 'hardware_overrides.hbm_bandwidth_bytes_per_s'"):
        ie.load_scenario(write(tmp_path, over))
    measured = GOOD + "measured: [{tokens_per_s: 100, usd_per_mtok: 0}]\n"
    with pytest.raises(ie.SpecError) as info:
        ie.load_scenario(write(tmp_path, measured))
    assert "field 'measured[0].usd_per_mtok': is 0 in USD per million tokens (" in str(info.value)
    points = tmp_path / "points.csv"
    points.write_text("tokens_per_s,usd_per_mtok\n100,-1\n")
    example = Path(__file__).resolve().parent.parent / "examples" / "scenario.yaml"
    result = CliRunner().invoke(main, ["run", str(example), "--measured", str(points)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr == (
        f"error: {points}: line 2: field 'usd_per_mtok': is -1 in USD per million tokens; none "
        "of its 1 point row can be read (expected a number > 0 and <= 1e+12)\n"
    )
    # an owned-costs file's hosting price is per kW of draw a month, not a sum of USD
    import yaml

    from inference_econ.specs.costs import costs_from_dict

    root = Path(__file__).resolve().parent.parent
    costs = yaml.safe_load((root / "costs" / "owned-2025.yaml").read_text())
    with pytest.raises(ie.SpecError, match="is -1 in USD per kW-month"):
        costs_from_dict({**costs, "hosting_usd_per_kw_month": -1}, "owned.yaml")


def test_the_example_scenario_describes_its_what_if_curve_as_the_file_runs_it():
    """Its description had called the third curve "the GPU of the file examples/gpu.yaml",
    which the scenario never reads: the curve is H100-SXM scaled by its own hardware_scale."""
    import yaml

    examples = Path(__file__).resolve().parent.parent / "examples"
    scenario = yaml.safe_load((examples / "scenario.yaml").read_text())
    gpu = yaml.safe_load((examples / "gpu.yaml").read_text())
    what_if = [c for c in scenario["curves"] if "hardware_scale" in c]
    assert len(what_if) == 1 and what_if[0]["hardware_scale"] == {"hbm_bandwidth_bytes_per_s": 2}
    words = " ".join(scenario["description"].split())
    assert "the GPU of the file" not in words
    assert f"the {what_if[0]['hardware']} with its HBM bandwidth doubled" in words
    assert "the curve's own hardware_scale" in words
    # the file it names as the same GPU is that GPU
    assert gpu["derive_from"] == what_if[0]["hardware"]
    assert gpu["scale"] == what_if[0]["hardware_scale"]
