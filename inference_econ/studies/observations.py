"""Provider observations as data: the speed and price at which an API serves a model.

An observations CSV has one row per observed offer (docs/user-guide.md, "Inverse economics"):
``provider, model, date, tokens_per_s, usd_per_mtok_input, usd_per_mtok_output`` and optionally
``context_tokens, weight_bits, source, notes``. Every cell is validated; a row with a bad one
is reported as one line naming the file, the row, the column and the fix, and left out (the
others are read; a file with no readable row is an error). The model column is free text:
closed models (GPT-4.1) have no spec, so it is resolved to an architecture only by the analyses
that need one (``Observation.architecture``). The inverse analyses (``studies/inverse/``) and
the figure overlays read these objects; docs/model.md §D1 says which price is compared with
what.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from pathlib import Path, PurePath

from ..errors import SpecError, UnknownNameError, did_you_mean, expect, short
from ..settings import option
from ..specs import catalog
from ..specs.architecture import Architecture, load_model
from ..specs.inputs import Rows, csv_rows, left_out, too_many_cells
from ..specs.schema import check_number

REQUIRED_COLUMNS = (
    "provider",
    "model",
    "date",
    "tokens_per_s",
    "usd_per_mtok_input",
    "usd_per_mtok_output",
)
OPTIONAL_COLUMNS = ("context_tokens", "weight_bits", "source", "notes")
COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
#: Shipped observation files live here, under each data root (``catalog.data_roots``).
FOLDER = ("scenarios", "observations")
_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")


@dataclass(frozen=True)
class Observation:
    """One observed offer: a provider serving a model at a speed and prices.

    ``tokens_per_s`` is the output speed one request sees (tokens per second per request);
    prices are dollars per million input and output tokens. ``context_tokens`` and
    ``weight_bits`` are what the analyses should assume for this offer when known (None: the
    command's setting). ``origin`` says where it came from ("file, row N") for messages.
    """

    provider: str
    model: str
    date: str
    tokens_per_s: float
    usd_per_mtok_input: float
    usd_per_mtok_output: float
    context_tokens: float | None = None
    weight_bits: float | None = None
    source: str = ""
    notes: str = ""
    origin: str = "argument"

    def __post_init__(self) -> None:
        """An observation built in Python is checked like a row of a file: speeds and prices
        within the bounds of the settings that give them on the command line."""
        for name in _NUMBERS:
            value = getattr(self, name)
            if value is not None or name in _REQUIRED_NUMBERS:
                check_number(value, self.origin, name, **bounds(name))

    @property
    def label(self) -> str:
        date = f", {self.date}" if self.date else ""
        return f"{self.provider}: {self.model}{date}"

    def price(self, basis: str = "output", input_per_output: float = 3.0) -> float:
        """Dollars per million tokens on a basis: ``output`` (the output-token price, what a
        decode frontier prices) or ``blended`` (input and output prices weighted
        ``input_per_output`` : 1, as Artificial Analysis blends them 3 : 1)."""
        basis = option("offer_price").check(basis)
        check_blend(basis, input_per_output != option("input_tokens_per_output").default)
        if basis == "output":
            return self.usd_per_mtok_output
        r = option("input_tokens_per_output").check(input_per_output)
        return (r * self.usd_per_mtok_input + self.usd_per_mtok_output) / (r + 1.0)

    def architecture(self) -> Architecture:
        """The model spec the ``model`` column names (an error naming the row if none)."""
        try:
            return load_model(self.model)
        except UnknownNameError as exc:
            raise SpecError(
                self.origin,
                "model",
                f"no model spec named {self.model!r}",
                f"{exc.fix}; a closed model can only be sized ('infer size')",
            ) from None

    def matches_model(self, arch: Architecture) -> bool:
        """Whether this observation is of the model ``arch`` (by name or alias)."""
        try:
            return load_model(self.model).name == arch.name
        except SpecError:
            return _key(self.model) in {_key(arch.name), *map(_key, arch.aliases)}


#: Numeric fields of an observation and the settings whose bounds they take.
_NUMBERS = {
    "tokens_per_s": "observed_tokens_per_s",
    "usd_per_mtok_input": "observed_usd_per_mtok",
    "usd_per_mtok_output": "observed_usd_per_mtok",
    "context_tokens": "context_tokens",
    "weight_bits": "weight_bits",
}
_REQUIRED_NUMBERS = ("tokens_per_s", "usd_per_mtok_input", "usd_per_mtok_output")


def check_blend(
    basis: str, ratio_given: bool, source: str = "argument", blended: str = "offer_price='blended'"
) -> None:
    """Refuse a blend ratio given with the ``output`` price basis, which weighs no input price
    (the ratio would be silently ignored; docs/user-guide.md: ``--blend-ratio`` is for
    ``blended``). ``blended`` is how the caller's user asks for the blended basis."""
    if ratio_given and basis != "blended":
        raise SpecError(
            source,
            "input_tokens_per_output",
            "weighs input prices into a blended offer price, but offers are compared on their "
            "output price",
            f"give {blended}, or leave the ratio out",
        )


def bounds(name: str) -> dict:
    """The bounds of an observation's numeric field (an input price may be 0: free input)."""
    out = option(_NUMBERS[name]).bounds
    if name == "usd_per_mtok_input":
        out["exclusive_minimum"] = False
    return out


def as_observation(value, field: str = "observed") -> Observation:
    """``value`` if it is an Observation; anything else is one clear error."""
    if isinstance(value, Observation):
        return value
    raise SpecError(
        "argument",
        field,
        f"expected an Observation, got {short(value)}",
        "build one with ie.observation(tokens_per_s, usd_per_mtok, model=...) or take one "
        "from ie.load_observations(...)",
    )


def _key(text: str) -> str:
    return "".join(ch for ch in str(text).lower() if ch.isalnum())


def observation(
    tokens_per_s: float,
    usd_per_mtok: float,
    model: str = "",
    provider: str = "given",
    date: str = "",
    usd_per_mtok_input: float | None = None,
    context_tokens: float | None = None,
    weight_bits: float | None = None,
) -> Observation:
    """One observation from numbers (``usd_per_mtok`` is the output price; the input price
    defaults to it)."""
    speed = check_number(tokens_per_s, "argument", "tokens_per_s", **bounds("tokens_per_s"))
    out = check_number(usd_per_mtok, "argument", "usd_per_mtok", **bounds("usd_per_mtok_output"))
    inp = out if usd_per_mtok_input is None else usd_per_mtok_input
    inp = check_number(inp, "argument", "usd_per_mtok_input", **bounds("usd_per_mtok_input"))
    if context_tokens is not None:
        context_tokens = float(
            check_number(context_tokens, "argument", "context_tokens", **bounds("context_tokens"))
        )
    if weight_bits is not None:
        weight_bits = float(
            check_number(weight_bits, "argument", "weight_bits", **bounds("weight_bits"))
        )
    return Observation(
        provider=str(provider),
        model=str(model),
        date=_check_date(str(date), "argument", "date") if date else "",
        tokens_per_s=float(speed),
        usd_per_mtok_input=float(inp),
        usd_per_mtok_output=float(out),
        context_tokens=context_tokens,
        weight_bits=weight_bits,
    )


def shipped() -> list[str]:
    """Names of the observation files that ship (and that ``INFERENCE_ECON_PATH`` adds)."""
    names = set()
    for root in catalog.data_roots():
        folder = root.joinpath(*FOLDER)
        if folder.is_dir():
            names.update(p.stem for p in folder.glob("*.csv"))
    return sorted(names)


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file; a name the system cannot look up (too long) is none."""
    try:
        return path.is_file()
    except OSError:
        return False


def find_observations(name_or_path: str | Path) -> Path:
    """A CSV path, or the name of a shipped observations file (e.g. ``paper-2025``)."""
    expect(name_or_path, (str, PurePath), "observations", "a file or a name", "e.g. 'paper-2025'")
    candidate = Path(str(name_or_path)).expanduser()
    if _is_file(candidate):
        return candidate
    for root in catalog.data_roots():
        path = root.joinpath(*FOLDER, f"{candidate.stem}.csv")
        if _is_file(path) and candidate.suffix in ("", ".csv"):
            return path
    names = shipped()
    hint = did_you_mean(str(name_or_path), names)
    raise SpecError(
        "argument",
        "observations",
        f"no observations file {str(name_or_path)!r}",
        hint or f"give a CSV path or one of: {', '.join(names) or '(none shipped)'}",
    )


def load_observations(name_or_path: str | Path) -> Rows:
    """Read and validate an observations CSV (a path or a shipped name): a tuple of
    ``Observation``; a row that cannot be read is reported (a warning naming its line, field
    and fix) and left out, and the tuple's ``left_out`` says which (``specs.inputs.Rows``).
    A file with no readable row is an error."""
    path = find_observations(name_or_path)
    return _read(*csv_rows(path), str(path))


def _read(header: list[str], lines: list, source: str) -> Rows:
    if not header or not any(header):
        raise SpecError(
            source, "", "is empty", f"the first line names the columns: {', '.join(COLUMNS)}"
        )
    for name in header:
        if name not in COLUMNS:
            hint = did_you_mean(name, COLUMNS)
            raise SpecError(
                source,
                name or "(blank)",
                "unknown column",
                hint or f"the columns are {', '.join(COLUMNS)}",
            )
    seen = set()
    for name in header:
        if name in seen:
            raise SpecError(source, name, "column given twice", "keep one")
        seen.add(name)
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise SpecError(
            source,
            missing[0],
            f"columns missing: {', '.join(missing)}",
            f"the required columns are {', '.join(REQUIRED_COLUMNS)}",
        )
    out, problems = [], []
    for line, values in lines:
        where = f"{source}, row {line}"
        try:
            if len(values) > len(header):
                raise too_many_cells(where, len(values), len(header))
            cells = dict(zip(header, (v.strip() for v in values)))
            out.append(_observation(cells, where))
        except SpecError as exc:
            problems.append((line, exc))
    if not lines:
        raise SpecError(source, "", "has no rows", "add one observation per line")
    return Rows(out, left_out(source, "observation row", len(lines), problems))


def _observation(cells: dict, where: str) -> Observation:
    def text(column):
        value = cells.get(column, "")
        if column in REQUIRED_COLUMNS and not value:
            raise SpecError(where, column, "is empty", f"give the {column.replace('_', ' ')}")
        return value

    def number(column, unit, required=True):
        value = cells.get(column, "")
        if not value:
            if required:
                raise SpecError(where, column, "is empty", f"give a number in {unit}")
            return None
        return float(check_number(value, where, column, **{**bounds(column), "unit": unit}))

    return Observation(
        provider=text("provider"),
        model=text("model"),
        date=_check_date(text("date"), where, "date"),
        tokens_per_s=number("tokens_per_s", "tokens/s per request"),
        usd_per_mtok_input=number("usd_per_mtok_input", "$ per million input tokens"),
        usd_per_mtok_output=number("usd_per_mtok_output", "$ per million output tokens"),
        context_tokens=number("context_tokens", "tokens", required=False),
        weight_bits=number("weight_bits", "bits", required=False),
        source=cells.get("source", ""),
        notes=cells.get("notes", ""),
        origin=where,
    )


def _check_date(text: str, where: str, field: str) -> str:
    """YYYY, YYYY-MM or YYYY-MM-DD (the day or month may be unknown)."""
    m = _DATE.match(text)
    fix = "write the date as YYYY-MM-DD, YYYY-MM or YYYY"
    if not m:
        raise SpecError(where, field, f"cannot read {text!r} as a date", fix)
    year, month, day = (int(g) if g else 1 for g in m.groups())
    try:
        datetime.date(year, month, day)
    except ValueError as exc:
        raise SpecError(where, field, f"{text!r} is not a date ({exc})", fix) from None
    return text


def select(
    observations, provider: str | None = None, model: str | None = None
) -> tuple[Observation, ...]:
    """The observations of a provider and/or a model (case-insensitive; a model matches by its
    text or the spec it names). Nothing matching is an error listing what there is."""
    chosen = tuple(observations)
    if provider:
        chosen = tuple(o for o in chosen if _key(o.provider) == _key(provider))
    if model:
        try:
            arch = load_model(model)
        except SpecError:
            arch = None
        chosen = tuple(
            o
            for o in chosen
            if _key(o.model) == _key(model) or (arch is not None and o.matches_model(arch))
        )
    if not chosen:
        known = sorted({f"{o.provider} / {o.model}" for o in observations})
        raise SpecError(
            "argument",
            "provider" if provider and not model else "model",
            f"no observation matches{f' provider {provider!r}' if provider else ''}"
            f"{f' model {model!r}' if model else ''}",
            f"the file has: {'; '.join(known)}",
        )
    return chosen


def overlay_points(
    observations, basis: str = "output", input_per_output: float = 3.0, models=None
) -> tuple[list[dict], list[Observation]]:
    """Points for ``output.plots.frontier_figure``'s overlay, and the observations left out
    because their model is not one of ``models`` (architectures; None keeps every one). With
    ``models``, each point's ``model_index`` is the first model it matches."""
    points, left_out = [], []
    markers = ("D", "s", "^", "v", "P", "X", "*", "h")
    for obs in observations:
        match = None
        if models is not None:
            match = next((i for i, m in enumerate(models) if obs.matches_model(m)), None)
            if match is None:
                left_out.append(obs)
                continue
        points.append(
            {
                "label": obs.label,
                "tokens_per_s": obs.tokens_per_s,
                "usd_per_mtok": obs.price(basis, input_per_output),
                "marker": markers[len(points) % len(markers)],
                "model_index": match,
            }
        )
    return points, left_out
