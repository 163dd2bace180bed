"""What every command shares: options generated from the table of settings, error handling,
progress lines and output.

Only click and the plain-Python table are imported here, so ``inference-econ --help`` does not
load numpy, pandas or matplotlib; commands import the numeric stack when they run.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import gc
import os
import re
import sys
import time
from pathlib import Path

import click

from .. import settings as table
from ..errors import InferenceEconError, SpecError
from .interrupts import Watch
from .typed import (
    CATALOG_FIELDS,
    ONE_GPU_FIX,
    check_combinations,
    given,
    one_gpu,
    refuse_repeats,
    typed_name,
)


class Progress:
    """Progress lines on stderr, from the first item (``--quiet`` silences them), each with
    the time since the command started. ``always=False``: only once a second has passed;
    ``every_s``: only once that long has passed, and at most one line per ``every_s`` (for
    frequent updates that are noise on a fast run)."""

    def __init__(self, quiet: bool = False, always: bool = True, every_s: float = 0.0) -> None:
        self.start = self.last = time.perf_counter()
        self.quiet = quiet
        self.always = always
        self.every_s = every_s

    def __call__(self, message: str) -> None:
        if self.quiet:
            return
        now = time.perf_counter()
        if self.every_s and now - self.last < self.every_s:
            return
        if self.always or now - self.start > 1.0:
            self.last = now
            click.echo(f"[{now - self.start:5.1f}s] {message}", err=True)


def fail(exc: Exception) -> None:
    """One line on stderr and the exit code: 2 for bad input (docs/errors.md), 1 otherwise.
    An error about an argument names what the user typed (``--gpus``, ``MODEL argument``),
    not the API's keyword."""
    code = 2 if isinstance(exc, (SpecError, OSError)) else 1
    if isinstance(exc, OSError) and not isinstance(exc, SpecError):
        where = f"{exc.filename}: " if exc.filename else ""
        message = f"{where}{exc.strerror or exc}"
    elif isinstance(exc, SpecError) and exc.source in ("argument", "command line"):
        message = _as_typed(exc)
    else:
        message = str(exc)
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def one_gpu_option(fix: str = ONE_GPU_FIX, **changes):
    """The -H of a command that computes on one GPU: taken repeatedly so that a second one is
    refused (``one_gpu``) before the command runs, not silently dropped."""

    def callback(ctx: click.Context, param: click.Parameter, value):
        try:
            return one_gpu(value, ctx.command.name or "this command", fix)
        except SpecError as exc:
            fail(exc)

    return click.option(
        "--hardware",
        "-H",
        multiple=True,
        callback=callback,
        **{
            "required": True,
            "help": "GPU name, alias or YAML file (see 'list hardware').",
            **changes,
        },
    )


def _as_typed(exc: SpecError) -> str:
    """A SpecError about an argument as the user typed it: ``--gpus: is 0 (...)``."""
    field = exc.field
    if field and not field.startswith("-"):
        # "input_lengths (mean)": the setting, then which part of its value
        name, rest = re.match(r"(\w*)(.*)", field).groups()
        known = name in table.BY_NAME or name in CATALOG_FIELDS
        ctx = click.get_current_context(silent=True)
        names = {p.name for p in ctx.command.params} if ctx is not None else set()
        upper = {p.human_readable_name for p in ctx.command.params} if ctx is not None else set()
        if known or name in names or name in upper:
            field = typed_name(name, ctx) + rest
        else:
            field = f"field '{field}'"
    tail = f" ({exc.fix})" if exc.fix else ""
    return f"{field}: {exc.problem}{tail}" if field else f"{exc.problem}{tail}"


#: click >= 8.2 raises this for a group called without a command (it shows the help).
_NO_ARGS = getattr(click.exceptions, "NoArgsIsHelpError", ())


#: glibc malloc settings of a command-line process (``tune_allocator``): blocks up to 32 MB
#: come from the heap, 128 MB of free heap may stay with the process, and the heap grows by
#: 64 MB (address space; pages are only touched when used) beyond each request.
MALLOC_MMAP_THRESHOLD_BYTES = 32 * 2**20
MALLOC_TRIM_THRESHOLD_BYTES = 128 * 2**20
MALLOC_TOP_PAD_BYTES = 64 * 2**20
#: Heaps (arenas) glibc's malloc keeps for the process's threads: one, which the search's
#: threads share (``tune_allocator``).
MALLOC_ARENAS = 1
#: ``mallopt`` parameters of glibc's malloc.h.
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -2, -3, -8


def tune_allocator() -> None:
    """Let glibc's malloc reuse memory across a grid search's numpy temporaries.

    The search's arrays (a block of the 400 x 400 grid is ~0.6 MB) are above glibc's default
    threshold for memory mapping (128 kB, raised only as mapped blocks are freed), so many are
    mapped, faulted in page by page and unmapped again: ~40,000 page faults in a frontier.
    From the heap they reuse pages already touched (~10 % of a frontier's CPU time).
    The search's threads share that one heap (``MALLOC_ARENAS``): a second thread's own arena
    is a fresh heap whose pages are faulted in anew (32,700 page faults in a plain frontier
    on two threads, 27,000 sharing one, 22,100 on one thread; 0.014 s of CPU plain and 0.047 s
    speculative, paired runs of whole processes, 2026-11-23), and the search allocates a few
    thousand block-sized arrays, too few for the shared lock to matter.
    The command line's own process only (the API leaves its caller's allocator alone); a
    no-op off Linux or without glibc's ``mallopt``.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD_BYTES)
    mallopt(_M_TRIM_THRESHOLD, MALLOC_TRIM_THRESHOLD_BYTES)
    mallopt(_M_TOP_PAD, MALLOC_TOP_PAD_BYTES)
    mallopt(_M_ARENA_MAX, MALLOC_ARENAS)


def skip_exit_collections() -> None:
    """Leave the objects alive at the process's exit out of the interpreter's last garbage
    collections (``gc.freeze`` from an exit handler, once per process).

    At exit the interpreter runs full collections over every object still tracked (~27,000
    after a frontier) before tearing the modules down; frozen, they are still freed by their
    reference counts as the modules go, but not traversed: 0.015-0.02 s of a frontier's CPU
    (15 alternating pairs of whole ``frontier`` processes, medians). Only objects
    in reference cycles at exit are then left to the operating system unfinalized, which
    Python does not promise to finalize anyway; the standard streams are flushed before,
    and the commands close the files they write. The command line's own process only.
    """
    global _EXIT_COLLECTIONS_SKIPPED
    if not _EXIT_COLLECTIONS_SKIPPED:
        atexit.register(gc.freeze)
        _EXIT_COLLECTIONS_SKIPPED = True


_EXIT_COLLECTIONS_SKIPPED = False


class Main(click.Group):
    """The command group, with click's own usage errors (a missing argument, an unknown
    option, a bad choice, an option given twice) on one line and exit 2 like every other bad
    input, and an interrupt on one line and exit 130 (``interrupts.Watch``; docs/errors.md)."""

    def resolve_command(self, ctx, args):
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:  # click keeps the last of an option given twice: refused
            refuse_repeats(command, rest)
        return name, command, rest

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        tune_allocator()
        skip_exit_collections()
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        with Watch(settle=args is None) as run:  # args None: the process's own command line
            try:
                code = super().main(args, prog_name, complete_var, False, **extra)
            except _NO_ARGS as exc:  # a group called without a command: its help, and success
                click.echo(exc.ctx.get_help())
                sys.exit(0)
            except click.ClickException as exc:
                if isinstance(exc, click.NoSuchOption) and exc.possibilities:
                    # a renamed flag is suggested by its new name, never by the one it refuses
                    names = (RENAMED_FLAGS.get(p, p) for p in exc.possibilities)
                    exc.possibilities = list(dict.fromkeys(names))
                ctx = getattr(exc, "ctx", None)
                hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
                click.echo(f"error: {exc.format_message()}{hint}", err=True)
                sys.exit(exc.exit_code)
            sys.exit(code if isinstance(code, int) else 0)
        sys.exit(run.code)


def handle_errors(fn):
    """Run a command with the error contract of docs/errors.md: the toolkit's own errors and
    any OSError become one line and an exit code (2 bad input or output, 1 nothing feasible),
    never a traceback. The files the command reads are remembered, and its outputs are checked
    against them before anything is computed (an output never overwrites an input)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from .. import api

        with api.tracking_inputs(), warnings_once():
            try:
                ctx = click.get_current_context()
                _check_outputs(ctx)
                check_combinations(ctx)
                if "format" in kwargs:
                    kwargs["format"] = _table_format(ctx, kwargs["format"])
                if "out" in kwargs and "out" not in _named_parameters(fn):
                    return _printed_to(kwargs.pop("out"), fn, args, kwargs)
                return fn(*args, **kwargs)
            except BrokenPipeError:  # the reader of stdout went away (| head): nothing to say
                sys.exit(1)
            except (InferenceEconError, OSError) as exc:
                fail(exc)

    return wrapper


def _named_parameters(fn) -> set[str]:
    """The parameters ``fn`` names itself (not those its ``**values`` would swallow)."""
    import inspect

    return {
        name
        for name, p in inspect.signature(fn).parameters.items()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    }


def _printed_to(out: str | None, fn, args, kwargs):
    """Run a command whose table ``table_output`` sends to ``--out``: what it prints on
    stdout is written to ``out`` atomically once it has finished (nothing on failure); stderr
    (progress, warnings) is untouched."""
    if not out:
        return fn(*args, **kwargs)
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        result = fn(*args, **kwargs)
    emit(printed.getvalue(), out)
    return result


@contextlib.contextmanager
def warnings_once():
    """The toolkit's warnings (``errors.InferenceEconWarning``) as ``warning: ...`` lines on
    stderr, each text once per command; other warnings as Python shows them."""
    import warnings

    from ..errors import InferenceEconWarning

    seen: set[str] = set()
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if not issubclass(category, InferenceEconWarning):
            return shown(message, category, filename, lineno, file, line)
        if str(message) not in seen:
            seen.add(str(message))
            click.echo(f"warning: {message}", err=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always", InferenceEconWarning)
        warnings.showwarning = show
        yield


def _check_outputs(ctx: click.Context) -> None:
    """Record the files named on the command line as inputs; refuse an output that is one
    of them, or that another output of the command also names."""
    from .. import api

    outputs = []
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value is None:
            continue
        if isinstance(param.type, (OutputFile, OutputFolder, OutputTarget)):
            outputs.append((param, value))
        elif isinstance(value, str) and os.path.isfile(value):
            api.record_input(value)  # a CSV, a config, a model or GPU file named by its path
    seen = {}
    for param, value in outputs:
        if isinstance(param.type, OutputFile):
            from ..output.files import check_output  # only with an output file

            check_output(value, typed_name(param.name, ctx))
            key = api.file_identity(value) or str(Path(value).resolve())
            if key in seen:
                raise SpecError(
                    "command line",
                    typed_name(param.name, ctx),
                    f"names the same file as {seen[key]}",
                    "give each output its own file",
                )
            seen[key] = typed_name(param.name, ctx)


def _table_format(ctx: click.Context, fmt: str) -> str:
    """The format of the printed table, given the command's ``--out`` (a ``TableFile``)."""
    out = next(
        (
            ctx.params.get(p.name)
            for p in ctx.command.params
            if isinstance(p.type, TableFile) and ctx.params.get(p.name)
        ),
        None,
    )
    return resolve_format(fmt, out, ctx)


def resolve_format(fmt: str | None, out: str | None, ctx: click.Context | None = None) -> str:
    """The format of a table written to ``out``: its suffix's when ``--format`` was not given
    (f.json: json); both given and disagreeing is an error (``output.files.table_format``)."""
    if out is None or fmt is None:
        return fmt
    from ..output.files import table_format

    ctx = ctx or click.get_current_context()
    explicit = "format" in given(ctx)
    return table_format(out, fmt if explicit else None, f"--out {out}")


def wrote_files(count: int, folder) -> str:
    """``wrote 9 files to out/``: the folder once with one trailing separator."""
    return f"wrote {count} file{'s' if count != 1 else ''} to {os.path.join(str(folder), '')}"


class OutputFile(click.ParamType):
    """A file the command writes: checked as it is parsed (not a directory, a device or a
    FIFO; its folder writable), and before the command runs against its inputs and, if it
    exists, the record of the files the toolkit wrote (``output.files.check_owned_file``)."""

    name = "FILE"

    def __init__(self, suffixes: tuple[str, ...] | None = None) -> None:
        self.suffixes = suffixes

    def convert(self, value, param, ctx):
        from ..output.files import check_output

        flag = typed_name(param.name, ctx) if param is not None else "output"
        try:  # whose file it is: checked after the inputs (``_check_outputs``)
            check_output(value, flag, self.suffixes, owned=False)
        except SpecError as exc:
            fail(exc)
        return value


class TableFile(OutputFile):
    """The file a command writes its table to (``--out``): its suffix gives the format when
    ``--format`` is not given (.csv, .json, .md; .txt or none: the text table)."""


class FigureFile(OutputFile):
    """A figure the command writes: its suffix must be a format written here (png, svg, pdf,
    jpg, ...: ``output.files.figure_formats``; none: png). Every --figure and --tornado is
    one, so all accept the same."""

    name = "FIGURE"

    def __init__(self) -> None:
        super().__init__(suffixes=("figure",))

    @staticmethod
    def target(path: str) -> tuple[str, tuple[str, ...]]:
        """(stem, formats) of a figure's path, as ``output.plots.save`` takes them."""
        return str(Path(path).with_suffix("")), (Path(path).suffix.lstrip(".").lower() or "png",)


class OutputTarget(click.ParamType):
    """A file or a folder the command writes, which it checks once it knows which (``reproduce
    --out``: a table's file, or the folder of figures); never taken for an input."""

    name = "PATH"


class OutputFolder(click.ParamType):
    """A folder the command writes into: it is a folder or does not exist yet."""

    name = "FOLDER"

    def convert(self, value, param, ctx):
        from ..output.files import check_folder

        try:
            check_folder(value, typed_name(param.name, ctx) if param is not None else "output")
        except SpecError as exc:
            fail(exc)
        return value


def emit(text: str, out: str | None) -> None:
    """Print ``text``, or write it to ``out`` atomically (output/files.py: never over an
    input of the command or a file the toolkit did not write, a symlink's target replaced,
    the file's mode kept)."""
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
    if shown is not None:
        help_text += f"  [default: {_readable(shown)}]"

    def check(ctx, param, value):
        try:
            return row.check(value, "command line", row.cli_flag)
        except SpecError as exc:
            fail(exc)

    return click.option(
        row.cli_flag,
        row.name,
        type=RawValue(metavar),
        default=shown,
        callback=check,
        help=help_text,
    )


def checked(value, row: str, flag: str):
    """The value of an option that is not a row of the table, checked by the row of the same
    quantity (finite, within its bounds: one line and exit 2 otherwise); None stays None."""
    if value is None:
        return None
    try:
        return table.option(row).check(value, "command line", flag)
    except SpecError as exc:
        fail(exc)


def _readable(value) -> str:
    """A default as --help shows it: 0.3333 (not 0.3333333333333333), 0 and 1 (not 0.0)."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def option(name: str, command: str | None = None, **changes):
    """Decorator adding the click option of one row of the table, with changes for this
    command (``flag``, ``required``, ``help``); its default is the table's, in ``command``
    if the row has one there (``settings.default``)."""
    if command is not None:
        changes["default"] = table.default(name, command)
    return _click_option(table.option(name), **changes)


def length_option(name: str, lengths: str, **changes):
    """Decorator adding the one flag of a request length (row ``name``, e.g. --prompt-tokens,
    a number) in a command that also serves loads, where the same flag gives a distribution of
    lengths (row ``lengths``: ``input_lengths``, ``uniform:500:1500``). A value that reads as a
    number is checked by ``name``'s row and is a float; any other is checked by ``lengths``'s
    row and stays text. The command routes it (``frontier``, ``export``)."""
    row = table.option(name)
    dist = table.option(lengths)
    if changes.get("help"):
        row = dataclasses.replace(row, help=changes.pop("help"))
    extra = " [tokens]" if row.unit == "tokens" else ""
    forms = dist.help.split(": ", 1)[-1]  # "N, uniform:LO:HI, ... or trace."
    help_text = f"{row.help}{extra} Under a load (--rate or --trace): {forms}"
    required = changes.pop("required", False)

    def check(ctx, param, value):
        if value is None:
            return None
        try:
            float(value)
        except (TypeError, ValueError):
            number = False
        else:
            number = True
        try:
            if number:
                return row.check(value, "command line", row.cli_flag)
            return dist.check(value, "command line", row.cli_flag)
        except SpecError as exc:
            fail(exc)

    return click.option(
        row.cli_flag,
        row.name,
        type=RawValue("N|DIST"),
        required=required,
        callback=check,
        help=help_text,
    )


#: Flags renamed so that one concept has one name across commands: refused with the new name
#: (never silently taken), as docs/user-guide.md says.
RENAMED_FLAGS = {"--input-length": "--prompt-tokens", "--output-length": "--output-tokens"}


def renamed_flags(fn):
    """Decorator adding the old names of renamed flags (``RENAMED_FLAGS``), hidden from help:
    given, they stop with one line naming the new flag (exit 2)."""
    for old, new in RENAMED_FLAGS.items():

        def refuse(ctx, param, value, old=old, new=new):
            if value is not None:
                fail(
                    SpecError(
                        "command line",
                        old,
                        f"was renamed {new}, the name every command gives a request's length",
                        f"write {new} {value}",
                    )
                )

        fn = click.option(old, hidden=True, expose_value=False, callback=refuse)(fn)
    return fn


def options(*names: str, command: str | None = None):
    """Decorator adding the click options of some rows of the table, in the given order; their
    defaults are the table's, in ``command`` where a row has one there (``settings.default``)."""

    def decorate(fn):
        for name in reversed(names):
            fn = option(name, command)(fn)
        return fn

    return decorate


#: How a configuration is priced (rented or owned) and what its power costs in carbon
#: (docs/model.md Part G): every command that prices a GPU-hour takes them.
PRICE_AND_ENERGY = table.group("price")

#: Speculative decoding: a draft model or draft heads (docs/model.md §A6, §C3, §E8).
SPECULATION_SETTING_NAMES = table.group("speculation")
#: The settings of a serving problem that every decoding command takes.
SETTING_NAMES = (
    "context_tokens",
    "weight_bits",
    "activation_bits",
    "kv_cache_bits",
    "redundant_experts",
    *SPECULATION_SETTING_NAMES,
    "pipeline",
    "assumptions",
    "engine",
    "clock",
    *("two_batch_overlap", "deepep"),  # how a MoE's tokens move (§F7)
    *PRICE_AND_ENERGY,
)

#: The -H of a command that computes on one GPU (a second -H is refused: ``typed.one_gpu``).
hardware_option = one_gpu_option()


#: Requests set their own contexts (prompt and output lengths): no --context.
REQUEST_SETTING_NAMES = tuple(n for n in SETTING_NAMES if n != "context_tokens")
#: A prefill alone: no context (a prompt starts empty) and no draft model.
PREFILL_SETTING_NAMES = tuple(
    n for n in SETTING_NAMES if n != "context_tokens" and n not in SPECULATION_SETTING_NAMES
)


def setting_options(fn):
    """--hardware and the settings of a serving problem."""
    return hardware_option(options(*SETTING_NAMES)(fn))


def request_setting_options(fn):
    """--hardware and the settings of a serving problem whose contexts come from requests."""
    return hardware_option(options(*REQUEST_SETTING_NAMES)(fn))


def prefill_setting_options(fn):
    """--hardware and the settings a prefill reads (precisions, pipelining, assumptions and
    the engine profile)."""
    return hardware_option(options(*PREFILL_SETTING_NAMES)(fn))


format_option = options("format")
out_option = click.option(
    "-o",
    "--out",
    type=TableFile(),
    help="Write to this file (atomically); .csv, .json or .md sets the format.",
)


def table_output(fn):
    """--format and --out for a command that prints a table: the format of the table and the
    file it is written to (atomically; the file's suffix sets the format when --format is not
    given). A command that does not take ``out`` itself prints as usual and ``handle_errors``
    writes what it printed to the file."""
    return format_option(out_option(fn))


def _quiet(expose: bool):
    return click.option(
        "--quiet", "-q", is_flag=True, expose_value=expose, help="No progress lines on stderr."
    )


quiet_option = _quiet(True)
#: The same flag on a command that prints no progress lines: taken, so that -q is one flag of
#: every command that computes, with nothing to silence.
quiet_accepted = _quiet(False)


def make_setting(model, hardware, **values):
    """The Setting of a command's options (the API checks every value). Options left at
    their defaults are not passed, so the API can tell what the user asked for (e.g.
    ``--acceptance`` without ``--draft`` is an error, the default acceptance is not)."""
    from .. import api

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        default = click.core.ParameterSource.DEFAULT
        values = {k: v for k, v in values.items() if ctx.get_parameter_source(k) != default}
    return api.setting_of(model, hardware, **values)
