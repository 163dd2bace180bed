"""The command line: a thin layer over the public API.

Exit codes: 0 success, 1 a runtime failure (e.g. nothing feasible), 2 bad input. Each command
lives in a module named after what it is about; options come from the table of settings
(``inference_econ/settings.py``) through ``common.options``.
"""

from __future__ import annotations

import click

from . import (
    capacity_commands,
    catalog_commands,
    data_commands,
    decode_commands,
    export_commands,
    infer_commands,
    scenario_commands,
    serving_commands,
    study_commands,
)
from .common import Main


@click.group(
    cls=Main,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(package_name="inference-econ")
def main():
    """How fast and how cheaply can a model be served on a GPU, and with which setup?

    \b
    Examples:
      inference-econ list models
      inference-econ show "Llama 3 70B"
      inference-econ point "Llama 3 70B" -H H100 --gpus 8 --batch 64 --weight-bits 8
      inference-econ frontier "Llama 3 70B" -H H100-paper --weight-bits 8 --draft "Llama 3 8B"
      inference-econ reproduce table-2
    """


for _module in (
    catalog_commands,
    decode_commands,
    scenario_commands,
    serving_commands,
    data_commands,
    infer_commands,
    capacity_commands,
    study_commands,
    export_commands,
):
    for _command in _module.COMMANDS:
        main.add_command(_command)


if __name__ == "__main__":  # pragma: no cover
    main()


def commands(group: click.Group | None = None, path: tuple[str, ...] = ()):
    """Every command of the command line, with the words that call it (``("infer", "margin")``)."""
    for name, command in sorted((group or main).commands.items()):
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield (*path, name), command
