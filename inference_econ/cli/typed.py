"""Options as the user typed them, and which combinations of them a command takes: the
checks every command runs before it computes anything (docs/errors.md, "Combinations")."""

from __future__ import annotations

import click

from .. import settings as table
from ..errors import SpecError

#: Fields the catalog names by the kind of spec looked up, and the option that names one.
CATALOG_FIELDS = {
    "models": "model",
    "hardware": "hardware",
    "engines": "engine",
    "scenarios": "scenario",
}


def typed_name(name: str, ctx: click.Context | None = None) -> str:
    """What a user types for a setting or parameter of the running command: ``--rate`` for
    ``arrival_rate_per_s``, ``MODEL argument`` for ``model``; the table's flag otherwise."""
    ctx = ctx or click.get_current_context(silent=True)
    params = {p.name: p for p in ctx.command.params} if ctx is not None else {}
    if CATALOG_FIELDS.get(name) in params:  # the catalog's "models": the MODEL argument
        name = CATALOG_FIELDS[name]
    param = params.get(name) or next(
        (
            p
            for p in params.values()
            if isinstance(p, click.Argument) and p.human_readable_name == name
        ),
        None,
    )
    if isinstance(param, click.Argument):
        return f"{param.human_readable_name} argument"
    if isinstance(param, click.Option):
        if param.secondary_opts and ctx.params.get(param.name) is False:
            return max(param.secondary_opts, key=len)  # --no-speculation as typed
        return max(param.opts, key=len)
    row = table.BY_NAME.get(name)
    return row.cli_flag if row is not None else name


def given(ctx: click.Context) -> set[str]:
    """The parameters of the running command given on the command line (not defaults)."""
    default = click.core.ParameterSource.DEFAULT
    return {
        p.name
        for p in ctx.command.params
        if ctx.get_parameter_source(p.name) not in (None, default)
    }


def _flag_at_default(ctx: click.Context, name: str) -> bool:
    """Whether ``name`` is an on/off option given at its default value."""
    param = next((p for p in ctx.command.params if p.name == name), None)
    return (
        isinstance(param, click.Option) and param.is_flag and ctx.params.get(name) == param.default
    )


def searched(setting: str, by: str):
    """Decorator: with option ``by`` the command searches ``setting`` itself, so settings that
    need it (its rows' ``needs``) mean something without it (``capacity --gpus`` finds the
    most load: the rate)."""

    def decorate(fn):
        fn.__dict__.setdefault("searched", {})[setting] = by
        return fn

    return decorate


def excludes(name: str, *others: str, why: str = ""):
    """Decorator: the command's option ``name`` cannot be given with any of ``others`` (one
    would be silently ignored, e.g. ``sweep --tornado`` and ``--param``); ``why`` says so. The
    command-line twin of the table's ``excludes``, for options that are not settings."""

    def decorate(fn):
        fn.__dict__.setdefault("excludes", []).append((name, others, why))
        return fn

    return decorate


def modes(choice: str, uses: dict[str, tuple[str, ...]]):
    """Decorator: the command's option ``choice`` picks a mode, and each mode uses only its
    own options of those named in ``uses`` (mode -> option names; an option named by no mode
    serves every mode): one given for another mode would be silently ignored."""

    def decorate(fn):
        fn.__dict__["modes"] = (choice, uses)
        return fn

    return decorate


def sole(name: str, check):
    """Decorator: option ``name`` brings a file that sets everything else (``capacity --fleet``):
    given, ``check(ctx, names)`` judges the other options given instead of the combination
    rules, whose fixes (give --rate too) would point away from that file."""

    def decorate(fn):
        fn.__dict__["sole"] = (name, check)
        return fn

    return decorate


def _check_modes(ctx: click.Context, names: set[str]) -> None:
    """Refuse an option of another mode than the one chosen (``modes``), in the words the
    user typed: ``--pick is not used by --plan point (drop --pick, or use --plan frontier)``."""
    choice, uses = getattr(ctx.command.callback, "modes", (None, {}))
    mode = ctx.params.get(choice) if choice else None
    if mode is None:
        return
    for name in sorted(names, key=lambda n: [p.name for p in ctx.command.params].index(n)):
        users = [m for m, options in uses.items() if name in options]
        if users and mode not in users:
            flag, by = typed_name(name, ctx), typed_name(choice, ctx)
            raise SpecError(
                "command line",
                flag,
                f"is not used by {by} {mode}",
                f"drop {flag}, or use {by} {' or '.join(users)}",
            )


def check_combinations(ctx: click.Context) -> None:
    """Refuse an option given without any of the options it needs (the table's ``needs``),
    one given with an option it excludes (the table's ``excludes``, the command's
    ``excludes``), and a setting the command searches itself (``searched``): each would be
    silently ignored (docs/errors.md, "Combinations")."""
    names = {
        n for n in given(ctx) if not _flag_at_default(ctx, n)
    }  # --speculation, the default, changes nothing: only --no-speculation is given
    name, check = getattr(ctx.command.callback, "sole", (None, None))
    if name in names:
        return check(ctx, names - {name})
    _check_modes(ctx, names)
    offered = {p.name for p in ctx.command.params}
    callback = ctx.command.callback
    implied: dict[str, str] = {}  # settings a given option searches: by that option
    for setting, by in getattr(callback, "searched", {}).items():
        if by in names and setting in names:
            flag, search = typed_name(setting, ctx), typed_name(by, ctx)
            raise SpecError(
                "command line",
                flag,
                f"is searched when {search} is given, so it would be ignored",
                f"drop {flag}, or drop {search}",
            )
        if by in names and setting not in names:
            implied[setting] = by  # searched: as if given, but by ``by``
            names.add(setting)
    present = {k for k, v in ctx.params.items() if v is not None and v is not False}
    for row, could in table.unmet_needs(names, offered, present):
        flag = typed_name(row.name, ctx)
        needed = " or ".join(typed_name(n, ctx) for n in could)
        raise SpecError(
            "command line", flag, f"needs {needed}", f"give {needed} too, or drop {flag}"
        )
    pairs = [(row.name, (other,), "") for row, other in table.conflicts(names)]
    for name, others, why in [*pairs, *getattr(callback, "excludes", ())]:
        clash = [o for o in others if o in names] if name in names else []
        if clash:
            flag, other = typed_name(name, ctx), typed_name(clash[0], ctx)
            reason = f": {why}" if why else ": one of them would be ignored"
            if clash[0] in implied:  # not typed: an option given searches it
                by = typed_name(implied[clash[0]], ctx)
                reason, other = f" (which searches {other}){reason}", by
            raise SpecError(
                "command line",
                flag,
                f"cannot be given with {other}{reason}",
                f"drop {flag} or {other}",
            )


#: What a command that computes on one GPU says to a --hardware naming several.
ONE_GPU_FIX = "give one -H; capacity and frontier --rate compare several GPUs"


def gpu_names(hardware) -> list[str]:
    """The GPUs a repeatable -H names: each value, a comma list split (not a YAML file whose
    path has a comma)."""
    import os

    values = [hardware] if isinstance(hardware, str) else list(hardware or ())
    return [
        name.strip()
        for value in values
        for name in ([value] if os.path.isfile(value) else value.split(","))
        if name.strip()
    ]


def one_gpu(hardware, command: str, fix: str = ONE_GPU_FIX):
    """The one GPU of a command that computes on one: a -H given once (as typed); a repeated
    -H or a comma list is refused naming --hardware (click had kept the last silently)."""
    names = gpu_names(hardware)
    if len(names) > 1:
        raise SpecError(
            "command line",
            "--hardware",
            f"names {len(names)} GPUs ({', '.join(names)}); {command} takes one",
            fix,
        )
    if isinstance(hardware, str):
        return hardware
    return hardware[-1] if hardware else None


def refuse_repeats(command: click.Command, args: list[str]) -> None:
    """Refuse an option given twice that takes one value (``--rate 3 ... --rate 5``; click
    keeps the last silently), or an on/off flag given both ways: one line naming it, exit 2.
    ``args`` are the command's own (a group's subcommand is followed)."""
    while isinstance(command, click.Group) and args:
        sub = command.commands.get(args[0])
        if sub is None:
            return
        command, args = sub, args[1:]
    takes_one = {
        opt: p
        for p in command.params
        if isinstance(p, click.Option) and not p.multiple and not p.count
        for opt in (*p.opts, *p.secondary_opts)
    }
    seen: dict[str, list[str]] = {}
    i = 0
    while i < len(args) and args[i] != "--":
        name, eq, value = args[i].partition("=") if args[i].startswith("--") else (args[i], "", "")
        param = takes_one.get(name)
        if param is not None and param.is_flag:
            seen.setdefault(param.name or name, []).append(name)
        elif param is not None:
            if not eq and i + 1 < len(args):
                i, value = i + 1, args[i + 1]
            seen.setdefault(param.name or name, []).append(value)
        i += 1
    for name, values in seen.items():
        param = next(p for p in command.params if p.name == name)
        if len(values) > 1 and (not getattr(param, "is_flag", False) or len(set(values)) > 1):
            flag = max(param.opts, key=len)
            raise click.UsageError(
                f"{flag}: is given {len(values)} times ({', '.join(values)}) (give it once)"
            )
