"""What a refusal names: the option as typed (``--engine``, not the catalog's ``engines``), a
file given by a path that is not there, a misspelt field of a spec file (not the required
field it was meant to be), the cell that left a trace too short, a measured file no row of which
could be read; and what the help and the assumptions line say in a user's words.

The contract (docs/errors.md): one line naming the argument or file, the field and the fix,
exit 2.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from inference_econ.cli import main
from inference_econ.specs import catalog

ROOT = Path(__file__).resolve().parent.parent
#: A point on one H100 under an engine profile.
POINT = ["Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--batch", "8"]
POINT += ["--assumptions", "achievable"]


def _cli(*args):
    return CliRunner().invoke(main, list(args))


def _error_line(result) -> str:
    """The one line of a refused command (exit 2), without its "error: "."""
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0].removeprefix("error: ")


# --- an unknown engine profile --------------------------------------------------------------


def test_an_unknown_engine_names_the_option_and_lists_the_profiles():
    line = _error_line(_cli("point", *POINT, "--engine", "tgi"))
    names = ", ".join(e.name for e in catalog.entries("engines"))
    assert line == (
        f"--engine: no engine profile named 'tgi' (the engine profiles are {names}, or give a "
        "path to a YAML file)"
    )
    assert "sglang, trtllm" in names and "field 'engines'" not in line


def test_a_misspelt_engine_names_the_option_with_a_did_you_mean():
    line = _error_line(_cli("point", *POINT, "--engine", "vlm"))
    assert line.startswith("--engine: no engine profile named 'vlm' (did you mean 'vLLM'")


# --- a path that is not there ---------------------------------------------------------------


def test_a_missing_hardware_file_is_said_to_be_missing(tmp_path):
    missing = tmp_path / "nonexist.yaml"
    line = _error_line(
        _cli("point", "Llama 3.1 8B", "-H", str(missing), "--gpus", "1", "--batch", "8")
    )
    assert line == (
        f"--hardware: file '{missing}' not found (check the path, or give a name that "
        "'inference-econ list hardware' shows)"
    )


def test_a_missing_model_file_is_said_to_be_missing(tmp_path):
    missing = tmp_path / "models" / "mine"  # a slash, no .yaml: still a path
    line = _error_line(_cli("point", str(missing), "-H", "H100", "--gpus", "1", "--batch", "8"))
    assert line.startswith(f"MODEL argument: file '{missing}' not found (check the path")


def test_a_missing_file_close_to_a_name_says_the_name():
    line = _error_line(
        _cli("point", "Llama 3.1 8B", "-H", "h100.yaml", "--gpus", "1", "--batch", "8")
    )
    assert line.startswith("--hardware: file 'h100.yaml' not found (did you mean 'H100'")


def test_a_misspelt_scenario_name_with_its_folder_is_still_a_name():
    # scenarios are named by folder ("paper/figure-1"): a slash alone is no path
    line = _error_line(_cli("run", "paper/figur-1"))
    assert line.startswith("SCENARIO argument: no scenario named 'paper/figur-1' (did you mean")
    line = _error_line(_cli("run", "paper/figur-1.yaml"))
    assert line.startswith("SCENARIO argument: file 'paper/figur-1.yaml' not found")
