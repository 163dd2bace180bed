"""The command line: a thin layer over the public API.

Exit codes: 0 success, 1 a runtime failure (e.g. nothing feasible), 2 bad input. Each command
lives in a module named after what it is about; options come from the table of settings
(``inference_econ/settings/``) through ``common.options``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping

import click

from .common import Main

#: Each command's module (``--help`` lists the commands sorted by name). A command's
#: module is imported when the command runs, or when every command is listed (``--help``,
#: ``commands()``): ``frontier`` and ``point`` load no other command's options.
#: ``tests/test_cli.py`` checks this table against each module's ``COMMANDS``.
COMMAND_MODULES = {
    "list": "catalog_commands",
    "show": "catalog_commands",
    "import-hf": "catalog_commands",
    "point": "decode_commands",
    "frontier": "decode_commands",
    "reproduce": "scenario_commands",
    "run": "scenario_commands",
    "prefill": "serving_commands",
    "request": "serving_commands",
    "prices": "serving_commands",
    "context-parallel": "serving_commands",
    "disagg": "serving_commands",
    "compare-measured": "data_commands",
    "calibrate": "data_commands",
    "sweep": "data_commands",
    "infer": "infer_commands",
    "simulate": "simulate_commands",
    "capacity": "capacity_commands",
    "study": "study_commands",
    "report": "study_commands",
    "export": "export_commands",
}


class _Commands(MutableMapping):
    """The group's commands by name, each module imported on first use of one of its
    commands (click asks ``get`` for the command it runs, and iterates the names to list
    them)."""

    def __init__(self, modules: dict[str, str]) -> None:
        self._modules = dict(modules)
        self._loaded: dict[str, click.Command] = {}

    def _load(self, module: str) -> None:
        for command in importlib.import_module(f"{__name__}.{module}").COMMANDS:
            self._loaded.setdefault(command.name, command)

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded and name in self._modules:
            self._load(self._modules[name])
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        self._modules.pop(name, None)
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._modules, *self._loaded]))

    def __len__(self) -> int:
        return len(set(self._modules) | set(self._loaded))


@click.group(
    cls=Main,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(package_name="inference-econ")
def main():
    """How fast and how cheaply can a model be served on a GPU, and with which setup?

    The terms of the outputs (critical batch, attention TP, EP, goodput, MFU, TTFT, TPOT, the
    ideal bound and the expected figure) are defined in docs/glossary.md; the user guide is
    docs/user-guide.md. Every command's --help has an example: the files they read ship in
    examples/.

    \b
    Examples:
      inference-econ list models
      inference-econ show "Llama 3 70B"
      inference-econ point "Llama 3 70B" -H H100 --gpus 8 --batch 64 --weight-bits 8
      inference-econ frontier "Llama 3 70B" -H H100-paper --weight-bits 8
      inference-econ reproduce table-1
    """


main.commands = _Commands(COMMAND_MODULES)


if __name__ == "__main__":  # pragma: no cover
    main()


def commands(group: click.Group | None = None, path: tuple[str, ...] = ()):
    """Every command of the command line, with the words that call it (``("infer", "margin")``)."""
    for name, command in sorted((group or main).commands.items()):
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield (*path, name), command
