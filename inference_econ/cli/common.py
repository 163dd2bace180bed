"""What every command shares: options generated from the table of settings, error handling,
progress lines and output.

Only click and the plain-Python table are imported here, so ``inference-econ --help`` does not
load numpy, pandas or matplotlib; commands import the numeric stack when they run.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import time

import click

from .. import settings as table
from ..errors import InferenceEconError, SpecError


class Progress:
    """Progress lines on stderr, shown only once a run has taken more than a second."""

    def __init__(self, quiet: bool = False) -> None:
        self.start = time.perf_counter()
        self.quiet = quiet

    def __call__(self, message: str) -> None:
        if not self.quiet and time.perf_counter() - self.start > 1.0:
            click.echo(f"[{time.perf_counter() - self.start:5.1f}s] {message}", err=True)


def fail(exc: Exception) -> None:
    """One line on stderr and the exit code: 2 for bad input, 1 otherwise."""
    code = 2 if isinstance(exc, SpecError) else 1
    click.echo(f"error: {exc}", err=True)
    sys.exit(code)


def handle_errors(fn):
    """Turn the toolkit's own errors into a one-line message and an exit code, no traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except InferenceEconError as exc:
            fail(exc)

    return wrapper


def emit(text: str, out: str | None) -> None:
    """Print ``text``, or write it to ``out`` atomically."""
    if out:
        from ..output.files import write_atomic

        write_atomic(out, text)
        click.echo(f"wrote {out}", err=True)
    else:
        click.echo(text, nl=False)


class RawValue(click.ParamType):
    """Passes the text through: values are checked by the table of settings, so every bad
    value gets the same one-line message and exit code wherever it comes from."""

    def __init__(self, metavar: str) -> None:
        self.name = metavar

    def get_metavar(self, param, ctx=None) -> str:
        return self.name

    def convert(self, value, param, ctx):
        return value


def _click_option(row: table.Option, flag: str = "", default=..., required=None, help=""):
    """The click option of one row of the table: its value is checked by the row as it is
    parsed (one line and exit 2 when it is bad). A command may change the row's flag,
    default, requiredness or help."""
    changes = {}
    if flag:
        changes["flag"] = flag
    if default is not ...:
        changes["default"] = default
    if required:
        changes["default"] = table.REQUIRED
    if help:
        changes["help"] = help
    row = dataclasses.replace(row, **changes) if changes else row
    help_text = row.help + (f" [{row.unit}]" if row.unit and row.unit not in row.help else "")
    if row.kind == "flag":
        if row.default is True:
            name = row.cli_flag[2:]
            return click.option(
                f"--{name}/--no-{name}", row.name, default=True, show_default=True, help=help_text
            )
        return click.option(row.cli_flag, row.name, is_flag=True, help=help_text)
    if row.choices:
        help_text += f" One of: {', '.join(row.choices)}."
    if row.required:
        help_text += "  [required]"
    metavar = {"number": "NUMBER", "integer": "INTEGER", "numbers": "LIST", "name": "NAME"}.get(
        row.kind, "TEXT"
    )
    shown = None if row.required or row.default is None else row.default

    def check(ctx, param, value):
        try:
            return row.check(value, "command line", f"{row.cli_flag} ({row.name})")
        except SpecError as exc:
            fail(exc)

    return click.option(
        row.cli_flag,
        row.name,
        type=RawValue(metavar),
        default=shown,
        show_default=shown is not None,
        callback=check,
        help=help_text,
    )


def option(name: str, **changes):
    """Decorator adding the click option of one row of the table, with changes for this
    command (``flag``, ``default``, ``required``, ``help``)."""
    return _click_option(table.option(name), **changes)


def options(*names: str):
    """Decorator adding the click options of some rows of the table, in the given order."""

    def decorate(fn):
        for name in reversed(names):
            fn = _click_option(table.option(name))(fn)
        return fn

    return decorate


#: The settings of a serving problem that every decoding command takes.
SETTING_NAMES = (
    "context_tokens",
    "weight_bits",
    "activation_bits",
    "kv_cache_bits",
    "draft",
    "acceptance",
    "max_draft_tokens",
    "draft_heads",
    "acceptance_by_position",
    "tree_branching",
    "eagle_layers",
    "pipeline",
    "assumptions",
    "engine",
)

hardware_option = click.option(
    "--hardware", "-H", required=True, help="GPU name, alias or YAML file (see 'list hardware')."
)


def setting_options(fn):
    """--hardware and the settings of a serving problem."""
    return hardware_option(options(*SETTING_NAMES)(fn))


format_option = options("format")
out_option = click.option(
    "--out", type=click.Path(dir_okay=False), help="Write to this file (atomically)."
)
quiet_option = click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")


def make_setting(model, hardware, **values):
    """The Setting of a command's options (the API checks every value)."""
    from ..serving.setting import make_setting as build

    return build(model, hardware, **values)
