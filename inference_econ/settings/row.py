"""One row of the table of settings (``Option``: a name, kind, default, unit, bounds and help
text, and the check of a value), and the dataclass field that declares it.

Options are declared as typed fields of small frozen dataclasses, one per group of options read
together (``section``), each field's default its default and its metadata the rest of its row
(``setting``); the kind and whether None is allowed come from the field's type. The table
(``settings.table.SETTINGS``) is derived from those fields, and a dataclass that uses options
reads their defaults from the same fields (``TargetOptions.slo_ttft_p99_s``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError, did_you_mean, short
from ..specs.schema import check_number
from .limits import MAX_ITEMS

#: The layers that read options (``Option.layer``): ``problem`` (what is served:
#: ``serving.setting.Setting``), ``method`` (how the frontier is searched:
#: ``optimise.method.Method``), ``operating`` (a given configuration or request mix: ``point``,
#: ``prefill``, ``request``, ``disagg``, a study's key points), ``load`` (traffic, latency
#: targets and the engine of a deployment under load, docs/model.md Part E: ``simulate``,
#: ``capacity``), ``output`` (how results are printed), ``execution`` (how a study's cells are
#: run).
PROBLEM = "problem"
METHOD = "method"
OPERATING = "operating"
OUTPUT = "output"
LOAD = "load"
EXECUTION = "execution"

#: A required option has no default.
REQUIRED = object()

#: The command (and API functions) of the inverse analyses, as ``command_defaults`` name it.
INFER = "infer"


@dataclass(frozen=True)
class Option:
    """One setting: its name (Python keyword, YAML key), kind, default, unit, bounds and help."""

    name: str
    kind: str  # "number", "integer", "numbers" (a list), "flag", "text", "name"
    default: Any
    help: str
    layer: str
    unit: str = ""
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    #: None is allowed and means "not given" (e.g. the model file's own precision).
    optional: bool = False
    choices: tuple[str, ...] = ()
    #: The only values a number setting takes (``confidence``: the intervals' levels), where
    #: a value between them has no meaning; refused as it is read, before any work.
    levels: tuple[float, ...] = ()
    #: The command-line flag; default ``--`` + the name with dashes.
    flag: str = ""
    #: A text setting that a number stands for too, as its text (``input_lengths=500`` is
    #: "500", a fixed length, as ``--prompt-tokens 500`` is).
    number_as_text: bool = False
    #: A limit for which infinity means "no limit" (read as None); any other value is checked.
    no_limit: bool = False
    #: A list whose values are each computed once (contexts, a sweep's values): a value given
    #: twice is refused, as it would compute the same row again.
    distinct: bool = False
    #: Settings of which one must be given for this one to mean anything (else it would be
    #: silently ignored, an error: docs/errors.md, "Combinations"); see ``check_needs``.
    needs: tuple[str, ...] = ()
    #: Settings that cannot be given with this one: both would set the same thing, so one of
    #: them would be silently ignored (docs/errors.md, "Combinations"); see ``conflicts``.
    excludes: tuple[str, ...] = ()
    #: Defaults of particular commands that differ from ``default``, each for a reason stated
    #: beside the row (``(("infer", 100),)``): every default a command or API function shows
    #: comes from here (``default(name, command)``), never from a signature.
    command_defaults: tuple[tuple[str, Any], ...] = ()
    #: The settings a command takes together (``group(name)``): ``speculation``, ``price``
    #: (price basis and power), ``traffic``, ``target``, ``engine``, ``demand``, ``plan``. A
    #: command lists a group, so a new row of the group joins every command that takes it.
    group: str = ""

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def bounds(self) -> dict[str, Any]:
        """The row's bounds and unit as ``specs.schema.check_number`` takes them, for a value
        of the same quantity read elsewhere (a CSV column, a dataclass field)."""
        return dict(
            minimum=self.minimum,
            maximum=self.maximum,
            exclusive_minimum=self.exclusive_minimum,
            integer=self.kind == "integer",
            unit=self.unit,
        )

    def check(self, value: Any, source: str = "argument", field: str | None = None) -> Any:
        """The value validated and normalised (numbers finite and in range, text in choices)."""
        field = field or self.name
        if value is None:
            if self.optional:
                return None
            if self.required:
                raise SpecError(source, field, "is missing", self.help)
            return self.default
        if self.kind == "numbers":
            return self._check_list(value, source, field)
        if self.no_limit and _is_infinity(value):
            return None
        if self.kind in ("number", "integer"):
            value = check_number(
                value,
                source,
                field,
                minimum=self.minimum,
                maximum=self.maximum,
                exclusive_minimum=self.exclusive_minimum,
                integer=self.kind == "integer",
                unit=self.unit,
            )
            if self.levels and not any(math.isclose(value, v) for v in self.levels):
                raise SpecError(
                    source, field, f"is {short(value)}",
                    f"choose {' or '.join(f'{v:g}' for v in self.levels)}",
                )  # fmt: skip
            return value if self.kind == "integer" else float(value)
        if self.kind == "flag":
            if not isinstance(value, bool):
                raise SpecError(
                    source,
                    field,
                    f"expected true or false, got {short(value)}",
                    "write true or false",
                )
            return value
        if self.number_as_text and isinstance(value, numbers.Real) and not isinstance(value, bool):
            value = str(value)  # checked as its text is, where it is read (a length's bounds)
        if not isinstance(value, str):
            kind, fix = ("text", "write the value as text")
            if self.number_as_text:
                kind, fix = (
                    "a number or text",
                    "give a number, or text such as 'uniform:500:1500'",
                )
            raise SpecError(source, field, f"expected {kind}, got {short(value)}", fix)
        if self.choices and value not in self.choices:
            hint = did_you_mean(value, self.choices)
            raise SpecError(
                source,
                field,
                f"unknown value {short(value)}",
                f"{hint + ' ' if hint else ''}choose one of {', '.join(self.choices)}",
            )
        return value

    def _check_list(self, value: Any, source: str, field: str) -> tuple[float, ...]:
        """A comma-separated text or a list of numbers, each checked like a number."""
        items = value.split(",") if isinstance(value, str) else value
        if hasattr(items, "tolist"):  # a numpy array
            items = items.tolist()
        if not isinstance(items, (list, tuple)):
            items = [items]
        items = [x.strip() if isinstance(x, str) else x for x in items]
        example = f" such as {self.default}" if self.default is not None else ""
        if all(x == "" for x in items):
            raise SpecError(source, field, "is empty", f"give comma-separated numbers{example}")
        if "" in items:  # dropping it would shift the values after it (rates by depth)
            kept = ",".join(str(x) for x in items if x != "")
            raise SpecError(
                source,
                field,
                f"has an empty value in {short(value)}",
                f"give one number between each two commas, such as {kept}",
            )
        if len(items) > MAX_ITEMS:
            raise SpecError(
                source, field, f"has {len(items)} values", f"give at most {MAX_ITEMS} values"
            )
        single = Option(
            self.name,
            "number",
            None,
            self.help,
            self.layer,
            self.unit,
            self.minimum,
            self.maximum,
            self.exclusive_minimum,
        )
        checked = tuple(single.check(x, source, field) for x in items)
        if self.distinct:
            refuse_repeats(checked, source, field)
        return checked


def refuse_repeats(values: tuple[float, ...], source: str, field: str) -> None:
    """Refuse a value given twice in a list whose values are each computed once (a sweep's
    values, a table's contexts): it would compute the same row again."""
    twice = next((x for i, x in enumerate(values) if x in values[:i]), None)
    if twice is not None:
        once = ",".join(f"{x:g}" for x in dict.fromkeys(values))
        raise SpecError(
            source,
            field,
            f"gives {twice:g} twice: it would be computed twice",
            f"give each value once, such as {once}",
        )


def _is_infinity(value: Any) -> bool:
    """+infinity as a number or as text ("inf", "infinity")."""
    text = value.strip().lower() if isinstance(value, str) else None
    if text is not None:
        return text in ("inf", "+inf", "infinity", "+infinity", ".inf")
    try:
        return not isinstance(value, bool) and float(value) == float("inf")
    except (TypeError, ValueError, OverflowError):  # 10**400: a whole number, not infinity
        return False


#: A spec's name, or the path of its YAML file (an option of kind ``name``).
Name = str
#: Comma-separated numbers, or a list of them (an option of kind ``numbers``).
Numbers = str | tuple[float, ...]

#: The kind of an option (``Option.kind``) by the type of the field that declares it; a type
#: ``| None`` makes the option optional (None: not given), and then its default is None.
KINDS = {
    "float": "number",
    "int": "integer",
    "Numbers": "numbers",
    "bool": "flag",
    "str": "text",
    "Name": "name",
}
#: Where a field's metadata keeps its row.
_ROW = "option"


def setting(default: Any = REQUIRED, *, help: str, group: str | None = None, **row: Any) -> Any:
    """A dataclass field declaring one option: its default (none when ``REQUIRED``), and in
    its metadata the help text and the rest of its row (unit, bounds, flag, needs ...);
    ``group`` when it differs from its section's."""
    meta = dict(row, help=help)
    if group is not None:
        meta["group"] = group
    if default is REQUIRED:
        return dataclasses.field(metadata={_ROW: meta})
    return dataclasses.field(default=default, metadata={_ROW: meta})


def section(layer: str, group: str = "") -> Callable[[type], type]:
    """Class decorator: the class as a frozen, keyword-only dataclass of the options ``layer``
    reads (in ``group`` unless a field names its own), each field declared by ``setting``;
    their rows are ``rows(cls)``, built once, so a bad declaration fails on import."""

    def wrap(cls: type) -> type:
        cls = dataclass(frozen=True, kw_only=True, repr=False, eq=False)(cls)
        cls._rows = tuple(_row(cls, f, layer, group) for f in dataclasses.fields(cls))
        return cls

    return wrap


def rows(cls: type) -> tuple[Option, ...]:
    """The rows of the options a ``section`` declares, in the order of its fields."""
    return cls._rows


def _row(cls: type, f: dataclasses.Field, layer: str, group: str) -> Option:
    """The row of one field: its name, the kind and optionality its type states, its default."""
    meta = dict(f.metadata[_ROW])
    text = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    types = [t.strip() for t in text.split("|")]
    optional = "None" in types
    kind = KINDS.get(" | ".join(t for t in types if t != "None"))
    default = REQUIRED if f.default is dataclasses.MISSING else f.default
    if kind is None or optional != (default is None):
        raise TypeError(
            f"{cls.__name__}.{f.name}: a type of {', '.join(KINDS)}, '| None' when (and only"
            f" when) the default is None; got {f.type} = {default!r}"
        )
    meta.setdefault("group", group)
    return Option(f.name, kind, default, layer=layer, optional=optional, **meta)
