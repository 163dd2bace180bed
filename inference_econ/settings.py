"""The one table of settings: every option a user can give, once.

Each row names an option, its kind, default, unit, bounds and help text, and the layer that reads
it. The Python API checks its keyword arguments against this table, scenario files validate
their curve fields with it, and the command line generates its options from it, so a new option
is one new row (docs/architecture.md, "How to add a setting").

Layers: ``problem`` (what is served: ``serving.setting.Setting``), ``method`` (how the frontier
is searched: ``optimise.method.Method``), ``operating`` (a given configuration or request mix:
``point``, ``prefill``, ``request``, ``disagg``, a study's key points), ``output`` (how results
are printed), ``execution`` (how a study's cells are run). This module is plain Python (no numpy), so the
command line can build its help without importing the numeric stack.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import SpecError, did_you_mean
from .model.assumptions import PRESETS
from .specs.schema import check_number

PROBLEM = "problem"
METHOD = "method"
OPERATING = "operating"
OUTPUT = "output"
EXECUTION = "execution"

#: A required option has no default.
REQUIRED = object()


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
    #: The command-line flag; default ``--`` + the name with dashes.
    flag: str = ""

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

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
            return value if self.kind == "integer" else float(value)
        if self.kind == "flag":
            if not isinstance(value, bool):
                raise SpecError(source, field, f"expected true or false, got {value!r}", "")
            return value
        if not isinstance(value, str):
            raise SpecError(
                source, field, f"expected text, got {_short(value)}", "write the value as text"
            )
        if self.choices and value not in self.choices:
            hint = did_you_mean(value, self.choices)
            raise SpecError(
                source,
                field,
                f"unknown value {_short(value)}",
                f"{hint + ' ' if hint else ''}choose one of {', '.join(self.choices)}",
            )
        return value

    def _check_list(self, value: Any, source: str, field: str) -> tuple[float, ...]:
        """A comma-separated text or a list of numbers, each checked like a number."""
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            items = [items]
        items = [x.strip() if isinstance(x, str) else x for x in items]
        items = [x for x in items if x != ""]
        if not items:
            raise SpecError(source, field, "is empty", f"give numbers such as {self.default}")
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
        return tuple(single.check(x, source, field) for x in items)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


BITS = dict(kind="number", unit="bits", minimum=1, maximum=32, optional=True)

#: Every setting, in the order the command line lists them.
SETTINGS: tuple[Option, ...] = (
    # --- the problem: what is served, on what, under which assumptions -----------------------
    Option(
        "context_tokens",
        "number",
        0.0,
        "Tokens already in the KV cache of every request.",
        PROBLEM,
        unit="tokens",
        minimum=0,
        flag="--context",
    ),
    Option(
        "weight_bits",
        default=None,
        help="Bits per weight (default: the model file's).",
        layer=PROBLEM,
        **BITS,
    ),
    Option(
        "activation_bits",
        default=None,
        help="Bits per activation (default: the model file's).",
        layer=PROBLEM,
        **BITS,
    ),
    Option(
        "kv_cache_bits",
        default=None,
        help="Bits per KV-cache element (default: the activation bits).",
        layer=PROBLEM,
        flag="--kv-bits",
        **BITS,
    ),
    Option(
        "max_throughput_tokens_per_s",
        "number",
        None,
        "Demand cap: total tokens/s of one instance (default: none).",
        PROBLEM,
        unit="tokens/s",
        minimum=0,
        exclusive_minimum=True,
        optional=True,
        flag="--max-throughput",
    ),
    Option(
        "draft",
        "name",
        None,
        "Draft model for speculative decoding (a name or a YAML file).",
        PROBLEM,
        optional=True,
    ),
    Option(
        "acceptance",
        "number",
        0.8,
        "Probability that the target accepts each draft token.",
        PROBLEM,
        minimum=0,
        maximum=1,
    ),
    Option(
        "max_draft_tokens",
        "integer",
        5,
        "Longest draft tried (gamma_max).",
        PROBLEM,
        unit="tokens",
        minimum=1,
        maximum=64,
        flag="--max-draft",
    ),
    Option(
        "draft_weight_bits",
        default=None,
        help="Bits per weight of the draft model (default: its file's).",
        layer=PROBLEM,
        **BITS,
    ),
    Option("pipeline", "flag", True, "Allow pipeline parallelism.", PROBLEM),
    Option(
        "assumptions",
        "text",
        "paper",
        "Assumption preset (docs/model.md: paper is the paper's model, refined every refinement).",
        PROBLEM,
        choices=tuple(PRESETS),
    ),
    Option(
        "prompt_tokens",
        "number",
        None,
        "Prompt length: adds each configuration's time to first token.",
        PROBLEM,
        unit="tokens",
        minimum=1,
        optional=True,
    ),
    Option(
        "ttft_max_s",
        "number",
        None,
        "Keep only configurations whose time to first token is within this.",
        PROBLEM,
        unit="seconds",
        minimum=0,
        exclusive_minimum=True,
        optional=True,
        flag="--ttft-max",
    ),
    Option("label", "text", "", "A name for the setting in tables and legends.", PROBLEM),
    # --- the method: how the frontier is searched --------------------------------------------
    Option(
        "discrete",
        "flag",
        False,
        "Whole GPUs, nodes, batches and layouts one could deploy (else the paper's grid).",
        METHOD,
    ),
    Option(
        "grid_points",
        "integer",
        400,
        "Points per axis of the search grid.",
        METHOD,
        minimum=4,
        maximum=4000,
    ),
    # --- an operating point: a given configuration or request mix ----------------------------
    Option(
        "gpus",
        "number",
        REQUIRED,
        "GPUs in the instance.",
        OPERATING,
        unit="GPUs",
        minimum=0,
        exclusive_minimum=True,
    ),
    Option(
        "batch",
        "number",
        REQUIRED,
        "Concurrent requests in the instance.",
        OPERATING,
        unit="requests",
        minimum=0,
        exclusive_minimum=True,
    ),
    Option(
        "output_tokens",
        "number",
        REQUIRED,
        "Output tokens per request.",
        OPERATING,
        unit="tokens",
        minimum=1,
    ),
    Option(
        "prefill_batch",
        "number",
        None,
        "Prompts prefilled together in one pass.",
        OPERATING,
        unit="prompts",
        minimum=1,
        optional=True,
    ),
    Option(
        "cached_fraction",
        "number",
        0.0,
        "Share of the prompt served from a prefix cache.",
        OPERATING,
        minimum=0,
        maximum=1,
    ),
    Option(
        "chunk_tokens",
        "number",
        None,
        "Chunked prefill: tokens per pass (default: one pass if it fits).",
        OPERATING,
        unit="tokens",
        minimum=1,
        optional=True,
        flag="--chunk",
    ),
    Option(
        "prefill_gpus",
        "number",
        None,
        "GPUs of the prefill pool (default: as many as decode).",
        OPERATING,
        unit="GPUs",
        minimum=0,
        exclusive_minimum=True,
        optional=True,
    ),
    Option(
        "devices",
        "integer",
        4,
        "Devices in the context-parallel chain.",
        OPERATING,
        minimum=1,
        maximum=4096,
    ),
    Option(
        "link_gb_per_s",
        "number",
        None,
        "Link bandwidth between devices (default: the GPU's NIC).",
        OPERATING,
        unit="GB/s",
        minimum=0,
        exclusive_minimum=True,
        optional=True,
    ),
    Option(
        "contexts",
        "numbers",
        "1000,10000,100000",
        "Comma-separated context lengths.",
        OPERATING,
        unit="tokens",
        minimum=0,
    ),
    Option(
        "prompt_lengths",
        "numbers",
        "1000,4000,16000,64000",
        "Comma-separated prompt lengths.",
        OPERATING,
        unit="tokens",
        minimum=1,
        flag="--prompt-tokens",
    ),
    Option(
        "values",
        "numbers",
        "0.5,1,2,4",
        "Comma-separated factors (values for context and acceptance).",
        OPERATING,
        minimum=0,
    ),
    Option(
        "at_speed",
        "number",
        None,
        "Report the cost at this tokens/s per request (default: half the base fastest).",
        OPERATING,
        unit="tokens/s",
        minimum=0,
        exclusive_minimum=True,
        optional=True,
    ),
    # --- studies (issue 16): key points of every cell, and how the cells are run --------------
    Option(
        "at_speeds",
        "numbers",
        None,
        "Also report the cheapest configuration at least this fast (comma-separated speeds).",
        OPERATING,
        unit="tokens/s per request",
        minimum=0,
        exclusive_minimum=True,
        optional=True,
    ),
    Option(
        "preference_k",
        "number",
        3.0,
        "Exponent k of the preference point, which maximises speed^k / price (paper Eq. 45).",
        OPERATING,
        minimum=0,
        exclusive_minimum=True,
    ),
    Option(
        "jobs",
        "integer",
        None,
        "Local processes computing cells at once (default: the machine's cores).",
        EXECUTION,
        unit="processes",
        minimum=1,
        maximum=1024,
        optional=True,
    ),
    Option(
        "dask",
        "text",
        None,
        "Run the cells on a Dask cluster: a scheduler address, or 'local' for a local cluster.",
        EXECUTION,
        optional=True,
    ),
    # --- output ------------------------------------------------------------------------------
    Option(
        "format",
        "text",
        "table",
        "How results are printed.",
        OUTPUT,
        choices=("table", "csv", "json", "markdown"),
    ),
)

BY_NAME: dict[str, Option] = {o.name: o for o in SETTINGS}


def option(name: str) -> Option:
    """The row of one setting."""
    return BY_NAME[name]


def names(*layers: str) -> tuple[str, ...]:
    """The settings read by some layers, in table order."""
    return tuple(o.name for o in SETTINGS if o.layer in layers)


def defaults(*layers: str) -> dict[str, Any]:
    """Default values of the settings of some layers (required ones left out)."""
    return {o.name: o.default for o in SETTINGS if o.layer in layers and not o.required}


def check(
    values: Mapping[str, Any],
    layers: Iterable[str],
    source: str = "argument",
    prefix: str = "",
    fill_defaults: bool = True,
) -> dict[str, Any]:
    """Validate settings of the given layers; unknown names are errors with a hint.

    Returns every setting of those layers, defaults filled in for those not given (unless
    ``fill_defaults`` is false). ``prefix`` is put before field names in messages.
    """
    layers = tuple(layers)
    allowed = names(*layers)
    for key in values:
        if key not in allowed:
            hint = did_you_mean(str(key), allowed)
            raise SpecError(
                source,
                f"{prefix}{key}",
                "unknown setting",
                hint or f"known settings: {', '.join(allowed)}",
            )
    out: dict[str, Any] = {}
    for name in allowed:
        row = BY_NAME[name]
        if name in values:
            out[name] = row.check(values[name], source, f"{prefix}{name}")
        elif row.required:
            raise SpecError(source, f"{prefix}{name}", "is missing", row.help)
        elif fill_defaults:
            out[name] = row.default
    return out


def check_each(values: Mapping[str, Any], source: str = "argument") -> dict[str, Any]:
    """Validate some named settings (of any layer) and return them normalised."""
    out = {}
    for key, value in values.items():
        if key not in BY_NAME:
            hint = did_you_mean(str(key), BY_NAME)
            raise SpecError(
                source, str(key), "unknown setting", hint or "see inference_econ/settings.py"
            )
        out[key] = BY_NAME[key].check(value, source)
    return out
