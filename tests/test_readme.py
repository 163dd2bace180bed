"""The README opens with exactly the two commands a new user runs, and CI runs the second."""

import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from inference_econ.cli import main

ROOT = Path(__file__).resolve().parents[1]


def first_block():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_readme_opens_with_two_commands():
    text = (ROOT / "README.md").read_text()
    assert text.index("```bash") < 40, "the commands come first"
    install_run, install_test = first_block()
    assert install_run.startswith("python -m pip install . && inference-econ ")
    assert install_test == 'python -m pip install -e ".[test]" && python -m pytest'


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert first_block()[1] in ci


def test_readme_main_job_is_a_valid_command():
    args = shlex.split(first_block()[0].split("&& inference-econ ", 1)[1])
    result = CliRunner().invoke(main, [*args, "--help"])
    assert result.exit_code == 0


def test_readme_figures_state_the_command_that_drew_them():
    text = (ROOT / "README.md").read_text()
    for match in re.finditer(r"!\[[^\]]*\]\((docs/img/[^)]+)\)", text):
        image = match.group(1)
        cell = text[match.start() :].split("|")[0]
        commands = re.findall(r"`((?:inference-econ|python benchmarks/\S+) [^`]+)`", cell)
        assert commands, f"{image}: no command beside it"
        command = commands[0]
        # the command writes the image, or the cell names the file it draws (a study's
        # summary.png; a scenario's frontier in its output folder)
        drawn = Path(image).stem in command or "--out docs/img" in command
        named = "summary.png`" in cell or f"/{Path(image).name}`" in cell
        assert drawn or named, (image, command)
        if "tornado" in image:  # the caption's precision is the command's
            assert "8-bit" in cell and "--weight-bits 8" in command
