"""A serving setting: the problem every question is asked about.

What is served (a model at some precisions, optionally with a draft model), on what (a GPU),
at which context, under which demand cap and time-to-first-token limit, and under which
modelling assumptions. How its frontier is searched is the optimiser's business
(``optimise.method.Method``), not the setting's. ``make_setting`` takes names or objects and
validates every keyword against the table of settings (``inference_econ/settings/``).
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

import numpy as np

from .. import settings as table
from ..errors import SpecError, did_you_mean, expect, warn
from ..model.assumptions import CLOCKS, Assumptions, preset
from ..model.overlap import check_overlap
from ..specs.architecture import Architecture, Precision, load_model
from ..specs.catalog import display_path
from ..specs.hardware import GPU, load_hardware
from ..specs.schema import check_number
from .speculative import DraftHeads, SpecDecoding, check_draft, eagle_head, mtp_heads


@dataclass(frozen=True)
class Setting:
    """One serving scenario: what is served, on what, under which assumptions."""

    model: Architecture
    gpu: GPU
    context_tokens: float = table.option("context_tokens").default  # the table's default
    max_throughput_tokens_per_s: float = math.inf
    pipeline: bool = True
    #: Speculation: a draft model (§A6) or draft heads (§C3).
    spec: SpecDecoding | DraftHeads | None = None
    assumptions: Assumptions = Assumptions()
    label: str = ""
    #: Prompt length for time to first token; with ``ttft_max_s`` the frontier keeps only
    #: configurations whose TTFT on their own layout (prefill of one prompt + the first decode
    #: step at the prompt's length, docs/model.md §B8) is within it.
    prompt_tokens: float | None = None
    ttft_max_s: float | None = None
    #: At most this many GPUs in a deployment (the frontier's instance; capacity's whole
    #: deployment); None: no cap.
    max_gpus: int | None = None
    #: Facility power over IT power (None: the default cost file's, ``facility_pue``).
    pue: float | None = None
    #: Grams of CO2 per kWh of the grid, and where the figure comes from (None: not given).
    grid_intensity_g_per_kwh: float | None = None
    grid_source: str = ""
    #: The cost file the ``owned`` price came from ("" for a rental basis).
    costs_file: str = ""

    @property
    def precision(self) -> Precision:
        return self.model.precision

    @property
    def name(self) -> str:
        return self.label or f"{self.model.name} on {self.gpu.name}"

    def replace(self, **changes) -> Setting:
        """A copy with ``changes``: each a field of ``Setting``, checked as ``make_setting``
        checks it (a row of the table of settings against its bounds; ``model``, ``gpu`` and
        ``assumptions`` by type). A setting of the table that is not a field (``weight_bits``,
        ``draft``, ...) is refused with the call that builds it."""
        return dataclasses.replace(self, **_checked_changes(changes))

    def metadata(self) -> dict:
        """What a result was computed with: model and GPU (names and files), assumptions,
        precisions, context, and the options that were given (draft, caps, prompt)."""
        p = self.precision
        meta = {
            "model": self.model.name,
            "model_file": display_path(self.model.source_file),
            "hardware": self.gpu.name,
            "hardware_file": display_path(self.gpu.source_file),
            "price_basis": self.gpu.price_basis,
            "price_usd_per_gpu_hour": float(self.gpu.price_usd_per_hour),
            "assumptions": self.assumptions.label,
            "weight_bits": float(p.weight_bits),
            "activation_bits": float(p.activation_bits),
            "kv_cache_bits": float(
                p.activation_bits if p.kv_cache_bits is None else p.kv_cache_bits
            ),
            "context_tokens": float(self.context_tokens),
        }
        if self.model.redundant_experts:
            meta["redundant_experts"] = int(self.model.redundant_experts)
        if isinstance(self.spec, SpecDecoding):
            meta.update(
                draft=self.spec.draft.name,
                draft_file=display_path(self.spec.draft.source_file),
                draft_weight_bits=float(self.spec.draft.precision.weight_bits),
                acceptance=float(self.spec.acceptance),
                max_draft_tokens=int(self.spec.max_draft_tokens),
            )
        elif self.spec is not None:
            meta["speculation"] = self.spec.describe()
        if math.isfinite(self.max_throughput_tokens_per_s):
            meta["max_throughput_tokens_per_s"] = float(self.max_throughput_tokens_per_s)
        if not self.pipeline:
            meta["pipeline"] = False
        if self.prompt_tokens is not None:
            meta["prompt_tokens"] = float(self.prompt_tokens)
        if self.ttft_max_s is not None:
            meta["ttft_max_s"] = float(self.ttft_max_s)
        if self.max_gpus is not None:
            meta["max_gpus"] = int(self.max_gpus)
        if self.gpu.price_date:
            meta["price_date"] = self.gpu.price_date
        if self.costs_file:
            meta["costs_file"] = self.costs_file
        meta["pue"] = float(facility_pue(self))
        if self.gpu.power is None:
            meta["power"] = "not given in the hardware file: no energy figures"
        if self.grid_intensity_g_per_kwh is not None:
            meta["grid_intensity_g_per_kwh"] = float(self.grid_intensity_g_per_kwh)
            if self.grid_source:
                meta["grid_source"] = self.grid_source
        # any other setting the table copies into a Setting, when it is not at the table's
        # default: a new row is stated here without being listed (tests/test_defaults.py
        # checks that every problem row changes the metadata when given)
        for row in table.SETTINGS:
            if row.layer != table.PROBLEM or row.name in meta or row.name not in _STATED:
                continue
            value = getattr(self, row.name)
            if value is not None and value != row.default and value != math.inf:
                meta[row.name] = value
        return meta


#: The context a result states when its requests bring their own (prefill, request, disagg,
#: context-parallel prefill, runs under load): the setting's ``context_tokens`` is not read.
REQUESTS_CONTEXT = (
    "each request's own (its prompt, then its prompt and the tokens it has generated)"
)


def requests_metadata(setting: Setting) -> dict:
    """``setting.metadata()`` of a result whose requests bring their own contexts: it states
    that (``REQUESTS_CONTEXT``) instead of the setting's unread ``context_tokens``."""
    return {**setting.metadata(), "context_tokens": REQUESTS_CONTEXT}


#: The fields of a Setting its metadata states from the table (the label names the result:
#: it is the title of its curve or table, not a setting it was computed with).
_STATED = {f.name for f in dataclasses.fields(Setting)} - {"label"}


def facility_pue(setting: Setting) -> float:
    """The PUE a setting's facility runs at: its own, else the default cost file's (§G2)."""
    if setting.pue is not None:
        return setting.pue
    from ..specs.costs import load_costs

    return load_costs().pue


#: Fields of a Setting built from several settings rather than copied from one.
_BUILT = (
    "model",
    "gpu",
    "spec",
    "assumptions",
    "max_throughput_tokens_per_s",
    "engine",
    "pue",
    "grid_intensity_g_per_kwh",
    "grid_source",
    "costs_file",
    "two_batch_overlap",  # a field of the assumptions
    "deepep",  # a field of the assumptions
)


def check_values(name: str, values, source: str = "argument") -> np.ndarray:
    """An array of values of one setting (e.g. ``gpus``, ``batch``), each checked against the
    row of the table: finite and within its bounds (vectorised; the message names the first
    bad value)."""
    row = table.option(name)
    arr = np.atleast_1d(values)
    if arr.dtype.kind not in "iuf" or arr.size == 0:
        bad = arr.ravel()[0] if arr.size else values
        return np.asarray(row.check(bad, source), dtype=float)  # raises with the row's message
    arr = arr.astype(float)
    bad = ~np.isfinite(arr)
    if row.minimum is not None:
        bad |= arr <= row.minimum if row.exclusive_minimum else arr < row.minimum
    if row.maximum is not None:
        bad |= arr > row.maximum
    if np.any(bad):
        row.check(float(arr[bad][0]), source)  # raises with the row's message
    return arr


def make_setting(model, hardware, **options) -> Setting:
    """Build the problem of a search: what is served, on what, under which assumptions.

    Parameters
    ----------
    model : str or Architecture
        A model's name or alias (``inference-econ list models``), a YAML path, or an
        ``Architecture``.
    hardware : str or GPU
        A GPU's name or alias (``inference-econ list hardware``), a YAML path, or a ``GPU``.
    **options
        Any ``problem`` row of the table of settings (``inference_econ.settings``):
        ``context_tokens``, ``prompt_tokens``, ``weight_bits``, ``kv_cache_bits``, ``draft``,
        ``acceptance``, ``assumptions`` (a preset name or ``Assumptions``), ``engine``,
        ``price_basis`` and the others; each is checked against the row's bounds, and a row
        whose name is a field of ``Setting`` is copied into it.

    Returns
    -------
    Setting
        The frozen problem: model at its precision, GPU with its price, assumptions,
        speculation and the operating options.

    Raises
    ------
    SpecError
        An unknown option (with a did-you-mean), a value out of bounds, an option given without
        the one it needs, or a model or GPU that cannot be found.

    Examples
    --------
    >>> import inference_econ as ie
    >>> s = ie.make_setting("Llama 3 70B", "H100", weight_bits=8, context_tokens=8192)
    >>> s.gpu.name, s.assumptions.name, s.context_tokens
    ('H100-SXM', 'paper', 8192.0)
    """
    assumptions = options.pop("assumptions", None)
    engine = options.get("engine")
    if isinstance(engine, os.PathLike):
        options["engine"] = os.fspath(engine)
    elif engine is not None and not isinstance(engine, str):  # an EngineProfile object
        options.pop("engine")
    values = table.check(options, [table.PROBLEM])
    table.check_needs(options)  # e.g. an acceptance without a draft would be ignored
    if engine is not None and not isinstance(engine, (str, os.PathLike)):
        values["engine"] = engine
    arch = load_model(model).with_precision(
        values["weight_bits"], values["activation_bits"], values["kv_cache_bits"]
    )
    arch = arch.with_redundant_experts(values["redundant_experts"])
    spec = _speculation(arch, values)
    for tokens in (values["context_tokens"], values["prompt_tokens"]):
        if tokens is not None:
            check_windows(arch, spec, tokens)
    if not isinstance(assumptions, Assumptions):
        assumptions = preset(table.option("assumptions").check(assumptions))
    assumptions = with_clock(with_engine(assumptions, values["engine"]), values["clock"])
    copied = {
        f.name: values[f.name]
        for f in dataclasses.fields(Setting)
        if f.name in values and f.name not in _BUILT
    }
    gpu, costs_file = price_gpu(
        load_hardware(_given(hardware)), values["price_basis"], values["costs"], values["pue"]
    )
    assumptions = engine_on_part(assumptions, gpu, values["engine"])
    assumptions = with_overlap(assumptions, values, gpu, arch)
    grid, source = _grid_intensity(values)
    return Setting(
        model=arch,
        gpu=gpu,
        spec=spec,
        assumptions=assumptions,
        max_throughput_tokens_per_s=_cap(values["max_throughput_tokens_per_s"]),
        pue=values["pue"],
        grid_intensity_g_per_kwh=grid,
        grid_source=source,
        costs_file=costs_file,
        **copied,
    )


#: Fields of a Setting that ``replace`` checks by type, not against a row of the table.
_TYPED = {
    "model": (Architecture, "an Architecture", "e.g. ie.load_model('Llama 3 70B')"),
    "gpu": (GPU, "a GPU", "e.g. ie.load_hardware('H100')"),
    "assumptions": (Assumptions, "an Assumptions", "e.g. ie.preset('refined')"),
}


def _checked_changes(changes: dict) -> dict:
    """``Setting.replace``'s changes, validated (never a silently wrong number later)."""
    fields = [f.name for f in dataclasses.fields(Setting)]
    out = {}
    for key, value in changes.items():
        if key not in fields:
            fix = did_you_mean(str(key), fields) or f"fields: {', '.join(fields)}"
            if key in table.BY_NAME:
                fix = f"build a new one: ie.make_setting(model, hardware, {key}=...)"
            raise SpecError("argument", str(key), "is not a field of Setting", fix)
        if key in _TYPED:
            value = expect(value, _TYPED[key][0], key, *_TYPED[key][1:])
        elif key in table.BY_NAME:
            value = _row_checked(table.option(key), value)
        out[key] = _cap(value) if key == "max_throughput_tokens_per_s" else value
    return out


def _row_checked(row: table.Option, value):
    """``value`` checked against its row: a number is finite and above the row's minimum (not
    held to its maximum: a derived setting may pass it, e.g. a context of prompt and output,
    and the check that knows why refuses it by the option given)."""
    if (
        value is None
        or row.kind not in ("number", "integer")
        or (row.no_limit and value == math.inf)
    ):
        return row.check(value)
    number = check_number(
        value, "argument", row.name, minimum=row.minimum,
        exclusive_minimum=row.exclusive_minimum, integer=row.kind == "integer", unit=row.unit,
    )  # fmt: skip
    return number if row.kind == "integer" else float(number)


def _given(hardware):
    """The GPU argument, refused where it is missing (not "no hardware spec named 'None'")."""
    if hardware is None:
        raise SpecError(
            "argument", "hardware", "is missing",
            "name the GPU the model runs on: hardware='H100' or the second argument, a name "
            "from ie.list_specs('hardware'), a YAML file or a GPU",
        )  # fmt: skip
    return hardware


def _grid_intensity(values: dict) -> tuple[float | None, str]:
    """(the grid's carbon intensity, g/kWh, and where it comes from): a named region's (its
    source), or the figure given ("given"), or none."""
    grid, source = values["grid_intensity_g_per_kwh"], ""
    if values["grid_region"] is not None:
        from ..specs.grid import grid_intensity

        found = grid_intensity(values["grid_region"])
        grid, source = found.g_per_kwh, found.source
    elif grid is not None:
        source = "given"
    return grid, source


def price_gpu(gpu: GPU, basis: str, costs=None, pue: float | None = None) -> tuple[GPU, str]:
    """``gpu`` priced on ``basis`` (docs/model.md §G1), and the cost file an ``owned`` price
    came from ("" otherwise): a listed basis takes the hardware file's price there; ``owned``
    computes it from the cost file (``costs``: a name, path or ``OwnedCosts``; default
    owned-2025) at the PUE ``pue`` (default the file's)."""
    from ..specs.hardware import priced

    if basis != "owned":
        if costs is not None:
            raise SpecError(
                "argument",
                "costs",
                f"is given with price basis {basis!r}, which does not read it",
                "use --price-basis owned, or drop --costs",
            )
        return priced(gpu, basis), ""
    from ..model.economics import owned_price
    from ..specs.costs import load_costs

    owned = load_costs(costs)
    return priced(gpu, "owned", owned_price(gpu, owned, pue)), display_path(owned.source_file)


def check_windows(model: Architecture, spec, tokens: float) -> None:
    """``check_context`` for the target and, with speculation by a draft model, the draft:
    the draft reads the same context (draft heads share the target's window)."""
    check_context(model, tokens)
    if isinstance(spec, SpecDecoding):
        check_context(spec.draft, tokens, "the draft model ")


def check_context(model: Architecture, tokens: float, role: str = "") -> None:
    """Warn when a context of ``tokens`` exceeds the model's window (``max_context_tokens``):
    the cost is computed all the same, but the model was not trained for it."""
    window = model.max_context_tokens
    if window is not None and tokens > window:
        where = display_path(model.source_file) or "its spec"
        warn(
            f"a context of {tokens:,.0f} tokens exceeds the window of {role}{model.name} ({window:,} "
            f"tokens, max_context_tokens in {where}): the model was not trained for it; the "
            "cost is extrapolated"
        )


def whole_batch_kv_excess(setting: Setting, gpus, batch, context) -> np.ndarray | None:
    """What the capacity check would need over what it may fill, if it counted the whole
    batch's KV cache, per configuration (``gpus``, ``batch`` and ``context`` broadcast): the
    weights it charges (the target's, and draft heads' with their cache; a draft model's memory
    is charged to no one, §A6) plus every request's KV cache, over the GPUs' usable HBM (§A5).
    None under a preset that checks the whole batch (``kv_capacity_whole_batch``), which never
    prices such a configuration; under the paper's check of one micro-batch's cache a value
    above 1 is a configuration whose cache does not fit its GPUs, and every output says so
    (``whole_batch_kv_note``)."""
    from ..model.machine import usable_hbm_bytes
    from ..model.workload import compile_workload

    a = setting.assumptions
    if a.kv_capacity_whole_batch:
        return None
    work = compile_workload(setting.model, a)
    gpus, batch, context = np.broadcast_arrays(
        np.asarray(gpus, dtype=float), np.asarray(batch, dtype=float), np.asarray(context, float)
    )
    need = work.weights_total_bytes + np.asarray(work.kv_held_bytes(context, batch), float)
    companion, copies = setting.spec.resident(a) if setting.spec is not None else (None, 0)
    if companion is not None and copies:  # draft heads live beside the target, with their cache
        need = need + copies * (
            companion.weights_total_bytes + companion.kv_held_bytes(context, batch)
        )
    return need / (gpus * usable_hbm_bytes(setting.gpu, a))


def whole_batch_kv_note(setting: Setting, gpus, batch, context, what: str = "") -> str | None:
    """The note every output carries when a configuration's whole-batch KV cache plus the
    weights exceed its HBM (``whole_batch_kv_excess`` above 1); None when none does. One
    configuration (scalars) is described in full; many (arrays: a frontier's points, ``what``
    naming them) by how many exceed and the worst of them."""
    from ..model.machine import usable_hbm_bytes
    from ..model.workload import compile_workload

    excess = whole_batch_kv_excess(setting, gpus, batch, context)
    if excess is None or not np.any(excess > 1.0):
        return None
    work = compile_workload(setting.model, setting.assumptions)
    gpus, batch, context = np.broadcast_arrays(
        np.asarray(gpus, dtype=float), np.asarray(batch, dtype=float), np.asarray(context, float)
    )
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
    n, b, ctx = float(gpus[worst]), float(batch[worst]), float(context[worst])
    kv = float(work.kv_held_bytes(ctx, b))
    hbm = n * usable_hbm_bytes(setting.gpu, setting.assumptions)
    weights = float(excess[worst]) * hbm - kv
    if excess.size == 1:
        described = (
            f"the whole batch's KV cache ({b:g} x {ctx:,.0f} tokens, {kv / 1e9:,.0f} GB) plus the "
            f"weights ({weights / 1e9:,.0f} GB) exceed the {hbm / 1e9:,.0f} GB of HBM on {n:g} x "
            f"{setting.gpu.name}"
        )
    else:
        over = int(np.count_nonzero(excess > 1.0))
        described = (
            f"at {over} of {excess.size} {what or 'configurations'} the whole batch's KV cache "
            f"plus the weights exceed the GPUs' HBM, up to {float(excess[worst]):.3g} times (batch "
            f"{b:,.0f} x {ctx:,.0f} tokens: {kv / 1e9:,.0f} GB of KV cache and {weights / 1e9:,.0f} "
            f"GB of weights on {n:.4g} x {setting.gpu.name}, {hbm / 1e9:,.0f} GB)"
        )
    return (
        f"note: {described}: the {setting.assumptions.name} preset checks only one "
        "micro-batch's cache, as the paper does; --assumptions refined checks the whole batch "
        "(kv_capacity_whole_batch, docs/refinements.md)"
    )


def with_engine(assumptions: Assumptions, engine) -> Assumptions:
    """The assumptions with an engine profile (docs/model.md Part F): only the achievable
    preset (or assumptions that already have an engine) takes one; the profile is loaded
    here so a bad name or file fails before any work."""
    if engine is None:
        return assumptions
    if assumptions.engine is None:
        raise SpecError(
            "argument",
            "engine",
            f"an engine profile does not apply to the {assumptions.name!r} preset (an ideal bound)",
            "use the achievable preset with an engine: --assumptions achievable",
        )
    from ..specs.engine import load_engine, split_engine

    profile = load_engine(engine)
    # "trtllm@1.1" stays as written, so that what an output says it was computed with names
    # the version whose terms it ran with (``Assumptions.profile`` loads it again)
    versioned = isinstance(engine, str) and split_engine(engine)[1] is not None
    return assumptions.replace(engine=engine if versioned else profile)


def with_clock(assumptions: Assumptions, clock: str) -> Assumptions:
    """The assumptions with the step priced by ``clock`` (docs/model.md, "Which clock prices a
    measured row"): ``engine`` or ``kernel`` everywhere (only an engine profile has those
    clocks); ``auto`` leaves ``kernel_tables`` as the assumptions hold it (a preset's: the
    rule)."""
    if clock not in CLOCKS:
        return assumptions
    if assumptions.engine is None:
        raise SpecError(
            "argument",
            "clock",
            f"the {clock} clock prices an engine's step; the {assumptions.name!r} preset is "
            "an ideal bound",
            "use the achievable preset: --assumptions achievable",
        )
    return assumptions.replace(kernel_tables=CLOCKS[clock])


def _cap(cap: float | None) -> float:
    """A demand cap as the setting holds it (inf: none)."""
    return math.inf if cap is None else cap


def with_overlap(assumptions: Assumptions, values: dict, gpu: GPU, arch) -> Assumptions:
    """The assumptions with two-batch overlap where the values ask for it, checked before any
    work (``model.overlap.check_overlap``: an engine that runs it, on a part it runs on)."""
    if values["deepep"]:
        assumptions = assumptions.replace(deepep=True)
    if values["two_batch_overlap"]:
        assumptions = assumptions.replace(two_batch_overlap=True)
    check_overlap(assumptions, gpu, arch.is_moe, arch.name)
    return assumptions


def engine_on_part(assumptions: Assumptions, gpu: GPU, given=None) -> Assumptions:
    """The assumptions with an engine that runs on ``gpu``'s platform (``specs.platforms``):
    a preset's default engine that does not run there gives way to the platform's own, said
    on one line; an engine the user named (``given``, or a profile in assumptions built in
    Python rather than a preset's name) that does not run there is refused."""
    profile = assumptions.profile()
    if profile is None:
        return assumptions
    from ..specs.platforms import engine_on, platform_profile

    named = given is not None or not isinstance(assumptions.engine, str)
    if named:  # vllm on an AMD part is vLLM's ROCm profile, as docs/user-guide.md says
        own = platform_profile(assumptions.engine, profile, gpu)
        if own is not assumptions.engine:
            return assumptions.replace(engine=own)
    chosen, note = engine_on(profile, gpu, named)
    if chosen is profile:
        return assumptions
    warn(note)
    return assumptions.replace(engine=chosen)


def _speculation(arch: Architecture, values: dict):
    """The speculation a setting's values ask for: a draft model (§A6), draft heads (§C3) or
    none. The two are exclusive; per-position acceptance and trees are for heads only (draft
    settings without a draft are refused by ``check_needs``, from the table)."""
    heads = values["draft_heads"]
    if (values["draft"] is not None or heads is not None) and values["max_draft_tokens"] == 1:
        which = "draft" if values["draft"] is not None else "draft_heads"
        raise SpecError(
            "argument",
            "max_draft_tokens",
            "is 1, which means no speculation (a cycle would yield only the target's token)",
            f"drop {which} ({table.option(which).cli_flag}), or raise max_draft_tokens"
            " (--max-draft) to 2 or more",
        )
    if values["draft"] is not None and heads is not None:
        raise SpecError(
            "argument",
            "draft_heads",
            "given together with a draft model",
            "speculate with either a draft model (draft) or draft heads (draft_heads)",
        )
    if heads is None:
        for name, unset in (("acceptance_by_position", None), ("tree_branching", 1)):
            if values[name] != unset:
                raise SpecError(
                    "argument",
                    name,
                    "applies to draft heads only",
                    "give draft_heads (--draft-heads mtp or eagle), or drop it: a draft model"
                    " uses one acceptance (the paper's §A6)",
                )
    if values["draft"] is not None:
        try:
            draft = load_model(values["draft"])
        except SpecError as exc:
            raise exc.inside("argument", "draft") from None
        if values["draft_weight_bits"] is not None:
            draft = draft.with_precision(weight_bits=values["draft_weight_bits"])
        check_draft(arch, draft)
        return SpecDecoding(draft, values["acceptance"], values["max_draft_tokens"])
    if heads is None:
        return None
    acceptance = values["acceptance_by_position"] or (values["acceptance"],)
    # max_draft_tokens caps the tokens a cycle may yield: a head's depth and the target's token
    depth, k = values["max_draft_tokens"] - 1, values["tree_branching"]
    if heads == "mtp":
        if values["eagle_layers"] != 1:
            raise SpecError(
                "argument",
                "eagle_layers",
                "applies to EAGLE heads only",
                "give draft_heads eagle (--draft-heads eagle), or drop it: MTP heads are the"
                " model's own modules",
            )
        return mtp_heads(arch, acceptance, depth, k)
    return eagle_head(arch, acceptance, depth, k, values["eagle_layers"])
