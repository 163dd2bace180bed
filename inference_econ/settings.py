"""The one table of settings: every option a user can give, once.

Each row names an option, its kind, default, unit, bounds and help text, and the layer that reads
it. The Python API checks its keyword arguments against this table, scenario files validate
their curve fields with it, and the command line generates its options from it, so a new option
is one new row (docs/architecture.md, "How to add a setting").

Layers: ``problem`` (what is served: ``serving.setting.Setting``), ``method`` (how the frontier
is searched: ``optimise.method.Method``), ``operating`` (a given configuration or request mix:
``point``, ``prefill``, ``request``, ``disagg``, a study's key points), ``load`` (traffic,
latency targets and the engine of a deployment under load: ``simulate``, ``capacity``),
``output`` (how results are printed), ``execution`` (how a study's cells are run). This module
is plain Python (no numpy), so the
command line can build its help without importing the numeric stack.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import SpecError, did_you_mean, short
from .model.assumptions import PRESETS
from .specs.bases import DEFAULT_PRICE_BASIS, PRICE_BASES
from .specs.schema import check_number

PROBLEM = "problem"
METHOD = "method"
OPERATING = "operating"
OUTPUT = "output"
#: Serving under load (docs/model.md Part E): traffic, latency targets, engine and deployment.
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
    #: The command-line flag; default ``--`` + the name with dashes.
    flag: str = ""
    #: A limit for which infinity means "no limit" (read as None); any other value is checked.
    no_limit: bool = False
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
        if not isinstance(value, str):
            raise SpecError(
                source, field, f"expected text, got {short(value)}", "write the value as text"
            )
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
        items = [x for x in items if x != ""]
        if not items:
            raise SpecError(source, field, "is empty", f"give numbers such as {self.default}")
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
        return tuple(single.check(x, source, field) for x in items)


def _is_infinity(value: Any) -> bool:
    """+infinity as a number or as text ("inf", "infinity")."""
    text = value.strip().lower() if isinstance(value, str) else None
    if text is not None:
        return text in ("inf", "+inf", "infinity", "+infinity", ".inf")
    try:
        return not isinstance(value, bool) and float(value) == float("inf")
    except (TypeError, ValueError):
        return False


BITS = dict(kind="number", unit="bits", minimum=1, maximum=32, optional=True)
#: Most GPUs of one instance (the search grid stops at 2^18).
MAX_GPUS = 2**20
#: Most tokens of a context, prompt or response (far beyond any model; keeps every count finite).
MAX_TOKENS = 1e12
#: Most values of a list setting (each is a computation of its own).
MAX_ITEMS = 64
#: The preset of serving under load (simulate, capacity, frontier --rate and their API
#: functions): their figures are expected ones, under an engine profile (the achievable
#: preset's, trtllm unless --engine says otherwise), each with its interval; the ideal bound
#: is asked for with --assumptions refined (docs/model.md §F12).
LOAD_ASSUMPTIONS = "achievable"
#: Largest observed speed (tokens/s), price ($/Mtok), blend ratio or markup: far beyond any
#: offer (the fastest APIs serve a few thousand tokens/s), so every ratio of them stays finite.
MAX_OBSERVED = 1e6
#: Smallest observed speed or price: a millionth of a token a second or of a dollar per Mtok,
#: so that the model's figure over an observed one stays below 1e12 (--price 1e-300 had
#: printed a markup of 300 digits).
MIN_OBSERVED = 1e-6
#: Longest latency target or limit, in seconds (11.6 days).
MAX_SECONDS = 1e6
#: Work estimated to take longer than this many seconds (a study's cells, a load search) is
#: refused with its estimate unless ``yes`` is given.
CONFIRM_SECONDS = 600.0

#: Every setting, in the order the command line lists them.
SETTINGS: tuple[Option, ...] = (
    # --- the problem: what is served, on what, under which assumptions -----------------------
    Option(
        "context_tokens",
        "number",
        # A context a deployment has (issue 27 item 3): 0 read no KV cache and let the cheapest
        # point batch 5,000-17,000 requests. 1,000 tokens is the paper's own middle context
        # (Figure 7's "Context of 1K tokens") and the order of MLPerf's chat benchmarks'
        # decode contexts (datasets/mlperf.yaml: 438 and 555 tokens for Llama 2 70B and
        # Mixtral 8x7B; 9,585 for Llama 3.1 405B's long-context set). Paper tables and figures
        # that use an empty context say context_tokens: 0 in their scenario files.
        1000.0,
        "Tokens already in the KV cache of every request (default 1,000: the paper's Figure 7 "
        "middle context; 0 reads no KV cache, as the paper's short-context tables do).",
        PROBLEM,
        unit="tokens",
        minimum=0,
        flag="--context",
        maximum=MAX_TOKENS,
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
        maximum=1e12,
        no_limit=True,
    ),
    Option(
        "draft",
        "name",
        None,
        "Draft model for speculative decoding (a name or a YAML file).",
        PROBLEM,
        optional=True,
        # the inverse analyses try the paper's draft model (§4.1) unless told otherwise
        command_defaults=((INFER, "Llama 3 8B"),),
        group="speculation",
    ),
    Option(
        "acceptance",
        "number",
        0.8,
        "Probability that the target accepts each draft token.",
        PROBLEM,
        minimum=0,
        maximum=1,
        needs=("draft", "draft_heads"),
        group="speculation",
    ),
    Option(
        "max_draft_tokens",
        "integer",
        5,
        "Longest draft tried: the most tokens one speculative cycle may yield, as in the"
        " draft_tokens column (draft heads draft one token fewer); 1 would mean no speculation,"
        " so with a draft it is refused.",
        PROBLEM,
        unit="tokens",
        minimum=1,
        maximum=64,
        flag="--max-draft",
        needs=("draft", "draft_heads"),
        group="speculation",
    ),
    Option(
        "draft_weight_bits",
        default=None,
        help="Bits per weight of the draft model (default: its file's).",
        layer=PROBLEM,
        needs=("draft",),
        **BITS,
    ),
    # --- speculation beyond a draft model: MTP and EAGLE heads, tree drafts (docs/model.md §C3)
    Option(
        "draft_heads",
        "text",
        None,
        "Speculate with heads on the target's features: mtp (the model's multi-token prediction"
        " modules) or eagle (an EAGLE head).",
        PROBLEM,
        optional=True,
        choices=("mtp", "eagle"),
        group="speculation",
    ),
    Option(
        "acceptance_by_position",
        "numbers",
        None,
        "Draft heads: top-1 acceptance at depths 1, 2, ... (the last repeats; default:"
        " --acceptance at every depth).",
        PROBLEM,
        minimum=0,
        maximum=1,
        optional=True,
        group="speculation",
    ),
    Option(
        "tree_branching",
        "integer",
        1,
        "Draft heads: candidates per node of a top-k tree draft (1: a chain).",
        PROBLEM,
        unit="tokens",
        minimum=1,
        maximum=16,
        group="speculation",
    ),
    Option(
        "eagle_layers",
        "integer",
        1,
        "Decoder layers of an EAGLE head.",
        PROBLEM,
        unit="layers",
        minimum=1,
        maximum=8,
        needs=("draft_heads",),
        group="speculation",
    ),
    Option("pipeline", "flag", True, "Allow pipeline parallelism.", PROBLEM),
    Option(
        "assumptions",
        "text",
        "paper",
        "Assumption preset (docs/model.md: paper is the paper's model, refined every refinement,"
        " achievable every kernel at a serving engine's efficiency).",
        PROBLEM,
        choices=tuple(PRESETS),
        # serving under load gives expected figures (LOAD_ASSUMPTIONS)
        command_defaults=(
            ("simulate", LOAD_ASSUMPTIONS),
            ("capacity", LOAD_ASSUMPTIONS),
            ("export", LOAD_ASSUMPTIONS),  # an export's figures are its engine's
        ),
    ),
    # --- achievable performance (issue 13; docs/model.md Part F) ---------------------------
    Option(
        "engine",
        "name",
        None,
        "Engine efficiency profile for the achievable preset: trtllm, vllm, sglang or a profile"
        " YAML (such as calibrate writes); default trtllm.",
        PROBLEM,
        optional=True,
        # calibrate fits the terms of a profile: rows naming no engine are TensorRT-LLM's
        command_defaults=(("calibrate", "trtllm"),),
    ),
    Option(
        "prompt_tokens",
        "number",
        None,
        "Prompt length of a request.",
        PROBLEM,
        unit="tokens",
        minimum=1,
        optional=True,
        maximum=MAX_TOKENS,
        # under a load the prompts' lengths are input_lengths (frontier --rate)
        excludes=("input_lengths",),
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
        maximum=MAX_SECONDS,
        no_limit=True,
        needs=("prompt_tokens",),
    ),
    Option("label", "text", "", "A name for the setting in tables and legends.", PROBLEM),
    # --- a cap on the GPUs of a deployment (new-user review, item 2): the frontier's instance,
    # the load frontier's and capacity's whole deployment
    Option(
        "max_gpus",
        "integer",
        None,
        "Consider only deployments of at most this many GPUs in all.",
        PROBLEM,
        unit="GPUs",
        minimum=1,
        optional=True,
        maximum=MAX_GPUS,
    ),
    # --- prices, power and carbon (issue 26, issue 22 item 9; docs/model.md Part G) ----------
    Option(
        "price_basis",
        "text",
        DEFAULT_PRICE_BASIS,
        "Kind of GPU-hour price: paper (the paper's discounted long-term rental), on-demand,"
        " reserved-1y, reserved-3y, spot, market (as the hardware file lists them) or owned (the"
        " cost of owning, from --costs).",
        PROBLEM,
        choices=PRICE_BASES,
        group="price",
    ),
    Option(
        "costs",
        "name",
        None,
        "Cost file of owning: purchase prices, depreciation, power price, PUE, hosting (a name"
        " or a YAML file; default owned-2025).",
        PROBLEM,
        optional=True,
        group="price",
    ),
    Option(
        "pue",
        "number",
        None,
        "Power usage effectiveness: facility power over IT power (default: the cost file's).",
        PROBLEM,
        minimum=1,
        maximum=5,
        optional=True,
        group="price",
    ),
    Option(
        "grid_intensity_g_per_kwh",
        "number",
        None,
        "Carbon intensity of the grid, for gCO2 per million tokens.",
        PROBLEM,
        unit="gCO2/kWh",
        minimum=0,
        maximum=5000,
        optional=True,
        flag="--grid-intensity",
        excludes=("grid_region",),
        group="price",
    ),
    Option(
        "grid_region",
        "text",
        None,
        "Carbon intensity of a named grid's published average: a country (France, FRA) or a"
        " cloud region (gcp:us-central1); needs the carbon extra (CodeCarbon's data).",
        PROBLEM,
        optional=True,
        group="price",
    ),
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
        maximum=2000,
        # the inverse analyses read every offer off every variant's frontier, with and without
        # speculation, and bisect model sizes on it: 100 points per axis keep an analysis to
        # seconds (docs/model.md Part D)
        command_defaults=((INFER, 100),),
    ),
    # --- trust pass (issue 11): the frontier's range ------------------------------------------
    Option(
        "all_points",
        "flag",
        False,
        "Keep the whole frontier, down to its slowest points (default: the paper's range, from "
        "1/100 of the fastest speed to the fastest).",
        METHOD,
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
        maximum=MAX_GPUS,
    ),
    Option(
        "batch",
        "number",
        REQUIRED,
        "Concurrent requests in the instance.",
        OPERATING,
        unit="requests",
        minimum=1,
        maximum=1e9,
    ),
    Option(
        "output_tokens",
        "number",
        REQUIRED,
        "Output tokens per request.",
        OPERATING,
        unit="tokens",
        minimum=1,
        maximum=MAX_TOKENS,
        # the price ratio (prices, §4.3) prices answers of 512 tokens unless told
        command_defaults=(("prices", 512.0),),
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
        maximum=1e9,
        # the prefill command's --batch: one prompt unless told (request and disagg batch as
        # many prompts as fill the engine's chunk when it is not given)
        command_defaults=(("prefill", 1.0),),
    ),
    Option(
        "cached_fraction",
        "number",
        0.0,
        "Share of the prompt served from a prefix cache (its last token is always computed:"
        " its logits start the reply).",
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
        maximum=MAX_TOKENS,
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
        maximum=MAX_GPUS,
        needs=("gpus",),
    ),
    Option(
        "devices",
        "integer",
        4,
        "Devices in the context-parallel chain.",
        OPERATING,
        minimum=1,
        maximum=1024,
    ),
    # context-parallel devices of several GPUs (new-user review 2, item 2)
    Option(
        "device_gpus",
        "integer",
        1,
        "GPUs per device of the context-parallel chain (each device holds the weights and the "
        "KV cache of its prefix).",
        OPERATING,
        unit="GPUs",
        minimum=1,
        maximum=MAX_GPUS,
    ),
    Option(
        "link_gb_per_s",
        "number",
        None,
        "Link bandwidth between devices (default: the NICs of a device's GPUs, one direction).",
        OPERATING,
        unit="GB/s",
        minimum=1e-6,
        optional=True,
        maximum=1e9,
    ),
    Option(
        "contexts",
        "numbers",
        "1000,10000,100000",
        "Comma-separated context lengths.",
        OPERATING,
        unit="tokens",
        minimum=0,
        maximum=MAX_TOKENS,
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
        maximum=MAX_TOKENS,
    ),
    Option(
        "values",
        "numbers",
        "0.5,1,2,4",
        "Comma-separated factors (values for context and acceptance).",
        OPERATING,
        minimum=0,
        maximum=MAX_TOKENS,
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
        maximum=1e9,
    ),
    # --- inverse economics: what observed API speeds and prices imply (studies/inverse) -------
    Option(
        "observed_tokens_per_s",
        "number",
        None,
        "Observed output speed of one request (instead of an observations file).",
        OPERATING,
        unit="tokens/s",
        minimum=MIN_OBSERVED,
        maximum=MAX_OBSERVED,
        optional=True,
        flag="--speed",
    ),
    Option(
        "observed_usd_per_mtok",
        "number",
        None,
        "Observed price per million output tokens (instead of an observations file).",
        OPERATING,
        unit="$/Mtok",
        minimum=MIN_OBSERVED,
        maximum=MAX_OBSERVED,
        optional=True,
        flag="--price",
    ),
    Option(
        "offer_price",
        "text",
        "output",
        "Price compared with our cost: the output-token price, or input and output blended.",
        OPERATING,
        choices=("output", "blended"),
    ),
    Option(
        "input_tokens_per_output",
        "number",
        3.0,
        "Blended price: input tokens per output token (Artificial Analysis blends 3:1).",
        OPERATING,
        unit="tokens",
        minimum=0,
        maximum=MAX_OBSERVED,
        flag="--blend-ratio",
    ),
    Option(
        "candidate_weight_bits",
        "numbers",
        "16,8,4",
        "Comma-separated weight precisions to try.",
        OPERATING,
        unit="bits",
        minimum=1,
        maximum=32,
        flag="--weight-bits",
    ),
    Option(
        "candidate_assumptions",
        "text",
        "paper",
        f"Comma-separated assumption presets to try ({', '.join(PRESETS)}).",
        OPERATING,
        flag="--assumptions",
    ),
    Option(
        "speculation",
        "flag",
        True,
        "Also try speculative decoding with the draft model.",
        OPERATING,
        # --no-speculation tries no draft: a draft, acceptance or draft length would be ignored
        excludes=("draft", "acceptance", "max_draft_tokens"),
    ),
    Option(
        "criterion",
        "text",
        "price",
        "Feasible means: our cost at the observed speed is within the price (price), or the "
        "speed is reachable at all (speed).",
        OPERATING,
        choices=("price", "speed"),
    ),
    Option(
        "log_speed_sd",
        "number",
        None,
        "Noise of an observed speed, standard deviation of ln(speed) (default: estimated "
        "from the residuals).",
        OPERATING,
        minimum=0,
        exclusive_minimum=True,
        # a factor of e^10 (22,000) either way: beyond it no speed says anything about k
        maximum=10,
        optional=True,
    ),
    Option(
        "family",
        "name",
        "Llama 3 70B",
        "Architecture family to scale: a single-group GQA model (dense or MoE).",
        OPERATING,
    ),
    Option(
        "experts",
        "integer",
        None,
        "Make the family a mixture of experts with this many experts per layer.",
        OPERATING,
        minimum=1,
        maximum=4096,
        optional=True,
    ),
    Option(
        "active_experts",
        "integer",
        None,
        "Experts active per token (with --experts).",
        OPERATING,
        minimum=1,
        maximum=4096,
        optional=True,
    ),
    Option(
        "depth_exponent",
        "number",
        1 / 3,
        "Layers grow as (parameters)^this; widths take the rest.",
        OPERATING,
        minimum=0,
        maximum=1,
        exclusive_minimum=False,
    ),
    Option(
        "markup",
        "number",
        1.0,
        "Assumed price / cost: 1 means the provider sells at our cost (an upper bound on size).",
        OPERATING,
        minimum=0,
        exclusive_minimum=True,
        maximum=MAX_OBSERVED,
    ),
    # --- serving under load (docs/model.md Part E): traffic, targets, engine, deployment ------
    Option(
        "arrival_rate_per_s",
        "number",
        None,
        "Requests per second offered to the whole deployment (Poisson, or a trace rescaled).",
        LOAD,
        unit="requests/s",
        # one request in about 17 minutes: simulated times stay within 1e10 s (10 million
        # requests), exact to microseconds, so latencies keep their digits
        minimum=1e-3,
        maximum=1e9,
        optional=True,
        flag="--rate",
        group="traffic",
    ),
    Option(
        "layout",
        "text",
        None,
        "The instances' layout as engines and benchmark results state it (TP8, TP2PP4, 'TP8"
        " attention-DP'), fixed instead of the one the engine model chooses for the load"
        " (docs/model.md §E6); capacity prints the layout of its plan.",
        LOAD,
        optional=True,
    ),
    Option(
        "concurrency",
        "integer",
        None,
        "Closed loop instead of --rate: this many clients, each sending its next request when"
        " its last one finishes (vllm bench serve --max-concurrency), spread evenly over the"
        " instances.",
        LOAD,
        unit="clients",
        minimum=1,
        maximum=1_000_000,
        optional=True,
        excludes=("arrival_rate_per_s", "trace", "arrival_process"),
    ),
    Option(
        "input_lengths",
        "text",
        None,
        "Prompt tokens per request: N, uniform:LO:HI, lognormal:MEAN:SIGMA[:CAP] or trace.",
        LOAD,
        optional=True,
        # one name per concept: a request's prompt length is --prompt-tokens in every command
        flag="--prompt-tokens",
        needs=("arrival_rate_per_s", "trace", "demand", "concurrency"),
        group="traffic",
    ),
    Option(
        "output_lengths",
        "text",
        None,
        "Output tokens per request: N, uniform:LO:HI, lognormal:MEAN:SIGMA[:CAP] or trace.",
        LOAD,
        optional=True,
        flag="--output-tokens",
        needs=("arrival_rate_per_s", "trace", "demand", "concurrency"),
        group="traffic",
    ),
    Option(
        "trace",
        "text",
        None,
        "CSV of requests (columns arrival_time_s, prompt_tokens, output_tokens).",
        LOAD,
        optional=True,
        group="traffic",
    ),
    Option(
        "arrival_process",
        "text",
        None,
        "Arrival times: poisson, or trace (the trace's own; default when a trace is given).",
        LOAD,
        optional=True,
        choices=("poisson", "trace"),
        flag="--arrivals",
        needs=("arrival_rate_per_s", "trace", "demand"),
        group="traffic",
    ),
    Option(
        "requests",
        "integer",
        10000,
        "Requests simulated per instance (with a trace: every row is).",
        LOAD,
        unit="requests",
        minimum=10,
        maximum=10_000_000,
        needs=("arrival_rate_per_s", "trace", "demand", "concurrency"),
        group="traffic",
    ),
    Option(
        "seed",
        "integer",
        0,
        "Seed of the random arrivals and lengths.",
        LOAD,
        minimum=0,
        maximum=2**32 - 1,
        needs=("arrival_rate_per_s", "trace", "demand", "concurrency"),
        group="traffic",
    ),
    Option(
        "slo_ttft_p99_s",
        "number",
        None,
        "Target: 99th percentile of the time to first token.",
        LOAD,
        unit="seconds",
        minimum=0,
        exclusive_minimum=True,
        maximum=MAX_SECONDS,
        optional=True,
        flag="--slo-ttft-p99",
        needs=("arrival_rate_per_s", "trace", "demand", "concurrency"),
        group="target",
    ),
    Option(
        "slo_tpot_p99_s",
        "number",
        None,
        "Target: 99th percentile of the time per output token (after the first).",
        LOAD,
        unit="seconds",
        minimum=0,
        exclusive_minimum=True,
        maximum=MAX_SECONDS,
        optional=True,
        flag="--slo-tpot-p99",
        needs=("arrival_rate_per_s", "trace", "demand", "concurrency"),
        group="target",
    ),
    Option(
        "slo_e2e_p99_s",
        "number",
        None,
        "Target: 99th percentile of the end-to-end latency of a request.",
        LOAD,
        unit="seconds",
        minimum=0,
        exclusive_minimum=True,
        maximum=MAX_SECONDS,
        optional=True,
        flag="--slo-e2e-p99",
        needs=("arrival_rate_per_s", "trace", "demand", "concurrency"),
        group="target",
    ),
    Option(
        "max_batch_requests",
        "integer",
        None,
        "Engine: most requests batched at once (vLLM max_num_seqs; default: the engine"
        " profile's own on the GPU, e.g. TensorRT-LLM 2,048, vLLM V1 256-1,024 by GPU memory;"
        " 256 for the ideal engine).",
        LOAD,
        unit="requests",
        minimum=1,
        maximum=65536,
        optional=True,
        flag="--max-batch",
        needs=("arrival_rate_per_s", "trace", "demand", "concurrency"),
        group="engine",
    ),
    Option(
        "step_token_budget",
        "integer",
        None,
        "Engine: most tokens per step, decode plus prompt chunks (vLLM max_num_batched_tokens;"
        " default: the engine profile's own on the GPU, e.g. TensorRT-LLM 8,192, vLLM V1"
        " 2,048-8,192 by GPU memory; 2,048 for the ideal engine).",
        LOAD,
        unit="tokens",
        minimum=1,
        maximum=1 << 22,  # the step table of an instance holds at most 2^22 entries
        optional=True,
        flag="--step-tokens",
        needs=("arrival_rate_per_s", "trace", "demand", "concurrency"),
        group="engine",
    ),
    Option(
        "scheduler_steps",
        "integer",
        None,
        "Engine: decode steps per scheduler call (vLLM V0's num_scheduler_steps, multi-step"
        " scheduling): requests are admitted and prompts scheduled only between windows of"
        " this many steps (default: the engine profile's own, 1 for every shipped profile).",
        LOAD,
        unit="steps",
        minimum=1,
        maximum=1024,
        optional=True,
        flag="--scheduler-steps",
        needs=("arrival_rate_per_s", "trace", "demand", "concurrency"),
        group="engine",
    ),
    # --- production serving (issue 25; docs/model.md §E8-§E11) -------------------------------
    Option(
        "speculation_max_batch",
        "integer",
        None,
        "Engine: switch speculation off above this many running requests (vLLM"
        " disable_by_batch_size, TensorRT-LLM max_concurrency; default: never).",
        LOAD,
        unit="requests",
        minimum=1,
        maximum=65536,
        optional=True,
        flag="--spec-max-batch",
        needs=("draft", "draft_heads"),
        group="engine",
    ),
    Option(
        "speculation_schedule",
        "text",
        "fixed",
        "Engine: speculate with the longest draft (--max-draft) at every batch (fixed, as vLLM"
        " and SGLang), or with the fastest draft length at each batch (by_batch, as TensorRT-LLM's"
        " draft_len_schedule).",
        LOAD,
        choices=("fixed", "by_batch"),
        flag="--spec-schedule",
        needs=("draft", "draft_heads"),
        group="engine",
    ),
    Option(
        "prefix_caching",
        "flag",
        True,
        "Engine: keep finished prompts' and answers' KV cache in the memory the running requests"
        " leave (LRU) and reuse it for prompts that start with them (vLLM, SGLang default).",
        LOAD,
        group="engine",
    ),
    Option(
        "shared_prefix_tokens",
        "integer",
        None,
        "Traffic: every prompt starts with a shared system prompt of this many tokens"
        " (--input-length is then the rest of the prompt).",
        LOAD,
        unit="tokens",
        minimum=1,
        maximum=10_000_000,
        optional=True,
        flag="--shared-prefix",
        needs=("arrival_rate_per_s", "demand"),
        group="traffic",
    ),
    Option(
        "shared_prefixes",
        "integer",
        1,
        "Traffic: how many different shared system prompts there are (each session or request"
        " starts with one, at random).",
        LOAD,
        minimum=1,
        maximum=1_000_000,
        needs=("shared_prefix_tokens",),
        group="traffic",
    ),
    Option(
        "session_turns",
        "integer",
        1,
        "Traffic: requests per session; each next one is sent after the answer before it (plus"
        " --think-time) and its prompt holds every earlier turn (--input-length: each new"
        " message).",
        LOAD,
        unit="requests",
        minimum=1,
        maximum=1000,
        flag="--turns",
        needs=("arrival_rate_per_s", "demand"),
        group="traffic",
    ),
    Option(
        "think_time_s",
        "number",
        0.0,
        "Traffic: mean time (exponential) between an answer and the session's next request.",
        LOAD,
        unit="seconds",
        minimum=0,
        maximum=MAX_SECONDS,
        flag="--think-time",
        needs=("session_turns",),
        group="traffic",
    ),
    Option(
        "router",
        "text",
        "random",
        "How the load balancer sends requests to the instances: random, round_robin,"
        " least_outstanding, or prefix_aware (consistent hashing of the session or shared"
        " prefix, with bounded loads).",
        LOAD,
        choices=("random", "round_robin", "least_outstanding", "prefix_aware"),
        needs=("arrival_rate_per_s", "trace", "demand", "concurrency"),
        group="engine",
    ),
    Option(
        "prefill_hardware",
        "text",
        None,
        "Disaggregated serving: GPUs of the prefill pool (names, comma-separated; default:"
        " --hardware).",
        LOAD,
        optional=True,
        needs=("disaggregated", "prefill_gpus"),
        group="plan",
    ),
    Option(
        "decode_hardware",
        "text",
        None,
        "Disaggregated serving: GPUs of the decode pool (names, comma-separated; default:"
        " --hardware).",
        LOAD,
        optional=True,
        needs=("disaggregated",),
        group="plan",
    ),
    Option(
        "failures",
        "flag",
        False,
        "Capacity: price the expected capacity lost to GPU failures and add the instances that"
        " hold the targets with one instance (a GPU's whole parallel group) down (N+1).",
        LOAD,
        group="plan",
    ),
    Option(
        "gpu_mtbf_hours",
        "number",
        50_000.0,
        "Mean time between failures of one GPU, hours (default: Llama 3's 419 unexpected"
        " interruptions in 54 days on 16,384 H100s).",
        LOAD,
        unit="hours",
        minimum=1,
        maximum=1e9,
        flag="--gpu-mtbf",
        needs=("failures",),
        group="plan",
    ),
    Option(
        "repair_hours",
        "number",
        24.0,
        "Hours an instance stays down after one of its GPUs fails (an assumption: give yours).",
        LOAD,
        unit="hours",
        minimum=0,
        exclusive_minimum=True,
        maximum=1e6,
        flag="--repair-time",
        needs=("failures",),
        group="plan",
    ),
    # --- capacity for a demand curve (issue 26; docs/model.md §G5) ---------------------------
    Option(
        "demand",
        "text",
        None,
        "CSV of requests per second by hour (columns hour, requests_per_s): the cheapest mix of"
        " reserved and on-demand (or spot) capacity meeting the targets at every hour.",
        LOAD,
        optional=True,
        excludes=("arrival_rate_per_s", "trace"),
        group="demand",
    ),
    Option(
        "reserved_basis",
        "text",
        "owned",
        "Price basis of the reserved capacity of a demand plan (owned, or a committed rate).",
        LOAD,
        choices=PRICE_BASES,
        needs=("demand",),
        group="demand",
    ),
    Option(
        "burst_basis",
        "text",
        "on-demand",
        "Price basis of the capacity a demand plan buys by the hour above its reserved base.",
        LOAD,
        choices=PRICE_BASES,
        needs=("demand",),
        group="demand",
    ),
    Option(
        "spot_interruption_rate",
        "number",
        None,
        "Also buy spot capacity (the hardware file's spot price) above the reserved base; this"
        " share of it is lost to interruptions each hour and bought again.",
        LOAD,
        minimum=0,
        maximum=0.99,
        optional=True,
        flag="--spot-interruption",
        needs=("demand",),
        group="demand",
    ),
    Option(
        "instances",
        "integer",
        1,
        "Engine instances of the deployment (behind a random load balancer).",
        LOAD,
        minimum=1,
        maximum=100_000,
        needs=("gpus",),
    ),
    Option(
        "prefill_instances",
        "integer",
        None,
        "Instances of a separate prefill pool (disaggregated serving).",
        LOAD,
        minimum=1,
        maximum=100_000,
        optional=True,
        needs=("gpus",),
    ),
    Option(
        "disaggregated",
        "flag",
        False,
        "Also consider separate prefill and decode pools.",
        LOAD,
    ),
    Option(
        "confidence",
        "number",
        0.9,
        "Also size the plan for the targets to hold at the pessimistic end of this interval of"
        " the expected figures (0.8 or 0.9; docs/model.md §F12).",
        LOAD,
        minimum=0.8,
        maximum=0.9,
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
        maximum=1e9,
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
        maximum=100,
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
    Option(
        "recompute",
        "flag",
        False,
        "Compute every cell again, ignoring (and replacing) the cache.",
        EXECUTION,
    ),
    Option(
        "yes",
        "flag",
        False,
        "Run work estimated to take longer than ten minutes (a study's cells, a capacity "
        "search) instead of refusing it with the estimate.",
        EXECUTION,
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
_ORDER = {o.name: i for i, o in enumerate(SETTINGS)}


def option(name: str) -> Option:
    """The row of one setting."""
    return BY_NAME[name]


def default(name: str, command: str | None = None) -> Any:
    """The default of a setting, in ``command`` if that command has its own (the row's
    ``command_defaults``): the one home of every default an API function or command shows."""
    row = BY_NAME[name]
    return dict(row.command_defaults).get(command, row.default)


#: The Python type of each kind of setting, as a generated signature states it.
_ANNOTATIONS = {
    "number": "float",
    "integer": "int",
    "numbers": "str | list[float]",
    "flag": "bool",
    "text": "str",
    "name": "str",
}


def takes(*layers: str, command: str | None = None) -> Callable:
    """Decorator: the function's signature lists, after its own parameters, every setting of
    ``layers`` as a keyword-only parameter with the table's default (``command``'s own where
    it has one), so ``help()`` and editors show what it takes. The function still receives
    them in ``**kwargs`` and checks them against the table as before; the signature is
    generated from the table, so it cannot drift from it."""

    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn)
        own = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
        taken = {p.name for p in own}
        extra = []
        for row in SETTINGS:
            if row.layer not in layers or row.name in taken:
                continue
            value = None if row.required else default(row.name, command)
            kind = _ANNOTATIONS.get(row.kind, "Any")
            annotation = f"{kind} | None" if row.optional or value is None else kind
            extra.append(
                inspect.Parameter(
                    row.name, inspect.Parameter.KEYWORD_ONLY, default=value, annotation=annotation
                )
            )
        fn.__signature__ = sig.replace(parameters=own + extra)
        return fn

    return wrap


def group(name: str) -> tuple[str, ...]:
    """The settings of one group (``Option.group``), in table order."""
    found = tuple(o.name for o in SETTINGS if o.group == name)
    if not found:
        raise KeyError(f"no settings in group {name!r}")
    return found


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


def unmet_needs(
    given: Iterable[str], offered: Iterable[str] | None = None, present: Iterable[str] = ()
) -> list[tuple[Option, tuple[str, ...]]]:
    """The given settings none of whose ``needs`` is given or ``present`` (set by a default,
    e.g. a command's default draft), each with the settings it needs (only those in
    ``offered``, e.g. a command's options; a row needing none of them is skipped)."""
    given = set(given)
    there = given | set(present)
    offered = None if offered is None else set(offered)
    out = []
    for name in sorted(given, key=lambda n: _ORDER.get(n, len(_ORDER))):
        row = BY_NAME.get(name)
        if row is None or not row.needs or any(n in there for n in row.needs):
            continue
        could = tuple(n for n in row.needs if offered is None or n in offered)
        if could:
            out.append((row, could))
    return out


def conflicts(given: Iterable[str]) -> list[tuple[Option, str]]:
    """Each given setting with a given setting its row ``excludes``."""
    given = set(given)
    out = []
    for name in sorted(given, key=lambda n: _ORDER.get(n, len(_ORDER))):
        row = BY_NAME.get(name)
        for other in row.excludes if row is not None else ():
            if other in given:
                out.append((row, other))
    return out


def given_names(values: Mapping[str, Any]) -> list[str]:
    """The settings of ``values`` that are given: not None, and a flag not at its default
    (``speculation=True`` changes nothing; ``speculation=False`` turns speculation off, which
    its row's ``excludes`` are about)."""
    out = []
    for key, value in values.items():
        row = BY_NAME.get(key)
        if value is None or (row is not None and row.kind == "flag" and value == row.default):
            continue
        out.append(key)
    return out


def check_needs(values: Mapping[str, Any], source: str = "argument") -> None:
    """Refuse a setting given (not None) without any of the settings it needs, or with one
    it excludes: it would be silently ignored (docs/errors.md, "Combinations")."""
    given = given_names(values)
    for row, could in unmet_needs(given):
        names = " or ".join(could)
        raise SpecError(
            source,
            row.name,
            f"is given without {names}",
            f"give {names} too, or leave {row.name} out",
        )
    for row, other in conflicts(given):
        raise SpecError(
            source,
            row.name,
            f"is given with {other}, which sets the same thing",
            f"give one of {row.name} and {other}",
        )


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
