"""Every command of the README and the user guide parses with today's command line: its
command exists, every flag is one the command takes, every value has the flag's type and
bounds (click's own parsing, without running the command). A renamed flag or a dropped
option breaks a documented example here, in well under a second; running every example in
full (reproduce all, the 600-cell study, long capacity searches) is
``benchmarks/doc_examples.py`` on a fresh clone."""

from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path

import click
import pytest

from inference_econ.cli import main

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "doc_examples", ROOT / "benchmarks" / "doc_examples.py"
)
doc_examples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(doc_examples)  # the one parser of documented examples


def _commands():
    for doc in doc_examples.DOCS:
        for where, kind, text in doc_examples.doc_examples(doc):
            if kind == "shell" and "..." not in text and "<" not in text:
                yield pytest.param(text, id=where)


def test_the_docs_have_commands():
    assert len(list(_commands())) >= 40


@pytest.mark.parametrize("text", list(_commands()))
def test_a_documented_command_parses(text, monkeypatch):
    monkeypatch.chdir(ROOT)  # documented paths are relative to the repository
    args = shlex.split(text)[1:]
    if not args or args[0].startswith("-"):
        return  # inference-econ --help / --version
    ctx = main.make_context("inference-econ", list(args[:1]), resilient_parsing=True)
    command = main.get_command(ctx, args[0])
    assert command is not None, f"no command {args[0]!r}: {text}"
    if isinstance(command, click.Group):
        if len(args) < 2 or args[1].startswith("-"):
            return
        sub = command.get_command(ctx, args[1])
        assert sub is not None, f"no command {args[0]} {args[1]!r}: {text}"
        command, args = sub, args[1:]
    try:
        command.make_context(args[0], list(args[1:]))
    except click.exceptions.Exit:
        pass  # --help
    except click.UsageError as exc:
        pytest.fail(f"{text}\n  -> {exc.format_message()}")
    except SystemExit as exc:  # a renamed flag or a bad value: one line, then exit 2
        assert exc.code in (0, None), f"{text}\n  -> exit {exc.code}"
