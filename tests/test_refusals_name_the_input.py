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
