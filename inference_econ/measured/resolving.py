"""The names and fields of a measured row resolved to the toolkit's specs: a model name to a
model, a hardware name to one GPU (a system mixing accelerators is heterogeneous), an engine
cell to its profile and its MLPerf harness's speculative decoding, what a value is per, a
precision as its checkpoint is released, the metrics each scenario can measure and a GEMM's
shape. A name or field that cannot be read is a ``SpecError`` or the reason as text.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from ..errors import SpecError
from ..specs.architecture import Architecture, load_model
from ..specs.catalog import REPOSITORY_ID, find, is_host_part, resolve_system_name
from ..specs.engine import select_engine
from ..specs.hardware import GPU, load_hardware
from ..specs.platforms import platform_of
from . import engine_words, layouts
from . import metric_names as mn
from . import semantics as sem

#: Words a model name may carry that name no different model.
SUFFIXES = ("instruct", "chat", "it", "hf", "base", "fp8", "bf16")


#: Separators between the parts of a mixed system ("8xH100 + 8xH200", "H100, A100").
_PARTS = re.compile(r"\s*(?:\+|&|;|,|\band\b|\swith\s|\s/\s)\s*", re.IGNORECASE)


@lru_cache(maxsize=1024)
def hardware_of(text: str) -> tuple[GPU | None, int | None, str]:
    """(GPU, accelerator count the name gives, reason if no GPU). A system of more than one
    kind of accelerator is ``heterogeneous``: the model has one GPU per row."""
    raw = str(text).strip()
    if sem.is_missing(text) or re.search(r"undisclosed|not stated", raw, re.I):
        return None, None, f"hardware {raw!r} is not disclosed"
    if re.search(r"heterogeneous|\bmixed\b", raw, re.I):
        return None, None, f"heterogeneous: hardware {raw!r} mixes accelerators"
    parts = [p.strip() for p in _PARTS.split(re.sub(r"\([^)]*\)", " ", raw)) if p.strip()]
    kinds: dict[str, tuple[GPU, int | None]] = {}
    unknown, others = [], []
    for part in parts if len(parts) > 1 else ():
        try:
            gpu, count = _load_gpu(part)
            kinds.setdefault(gpu.name, (gpu, count))
        except SpecError:
            others.append(part)
            if not is_host_part(part) and _ACCELERATOR_WORD.search(part):
                unknown.append(part)
    if len(kinds) + len(unknown) > 1:
        names = " and ".join([*sorted(kinds), *unknown])
        return None, None, f"heterogeneous: hardware {raw!r} mixes {names}"
    try:
        gpu, count = _load_gpu(raw)
        return gpu, count, ""
    except SpecError as exc:
        if len(kinds) == 1 and all(is_host_part(p) for p in others):
            gpu, count = next(iter(kinds.values()))  # one accelerator and its host CPUs
            return gpu, count, ""
        return None, None, f"hardware {raw!r}: {exc.problem}{_heading_hint(raw)}"


def _heading_hint(raw: str) -> str:
    """What to do with a hardware cell that is a table's whole column heading ("B200 DEP4
    (FP4)", "H200<br/>TP1 (FP8)"): the layout and the precision have cells of their own."""
    words = [w for w in re.split(r"\s+|<br\s*/?>", re.sub(r"\([^)]*\)", " ", raw)) if w]
    found = [w for w in words if layouts.stated_gpus(w) is not None]
    if not found or len(found) == len(words):
        return ""
    said = re.search(r"\(([^()]*)\)", raw)
    precise = said is not None and engine_words.precision_of(said.group(1)) is not None
    also = f" and {said.group(1)!r} in precision" if precise else ""  # type: ignore[union-attr]
    return (
        f": it names a layout too ({found[0]!r}): give the GPU alone here, the layout in "
        f"parallelism{also}"
    )


#: Words that make an unknown part of a system name an accelerator (not a host or a count).
_ACCELERATOR_WORD = re.compile(r"nvidia|\bamd\b|instinct|intel|gaudi|\barc\b|\btpu", re.I)


@lru_cache(maxsize=512)
def _load_gpu(text: str) -> tuple[GPU, int | None]:
    system = resolve_system_name(text)
    return load_hardware(system.path), system.accelerators


@lru_cache(maxsize=256)  # once per (engine, GPU, model, scenario, benchmark): not per row
def harness_unmodelled(
    engine, gpu, model: str, scenario, benchmark, benchmark_round=None
) -> str | None:
    """The out-of-scope status of an MLPerf row whose harness (its ``benchmark_round``'s) runs
    its model, in its scenario, with speculative decoding (its engine profile's ``speculative``
    harness field, docs/model.md §F9): the run speculated whether or not the row says so. None: it does not, or the row's
    engine has no profile for its version (the prediction says so)."""
    if benchmark is None or engine.name is None:
        return None
    try:
        prof = select_engine(engine.name, engine.version, engine.platform or platform_of(gpu))
    except SpecError:
        return None
    key = (engine.version, model, scenario, benchmark_round)
    if not prof.harness_applies("mlperf", *key):
        return None
    method = prof.harness_speculative("mlperf", *key)
    if method is None:
        return None
    return engine_words.out_of_scope(
        engine_words.SPECULATIVE,
        f"MLPerf's harness runs {model} {scenario} with {method}: every published "
        f"configuration of it does, engine profile {prof.name!r}",
    )


@lru_cache(maxsize=256)
def engine_profile(name: str):
    """The profile file an ``engine`` cell names; an unknown one is the row's error."""
    try:
        return find("engines", name)
    except SpecError as exc:
        raise SpecError("", "engine", exc.problem, exc.fix) from None


#: What a release's name adds to its architecture's, read off the end one at a time: its
#: checkpoint format ("-FP8", "-NVFP4-v2", "-FP8-dynamic", "-FP8-KV", "-MXFP4-Preview", "-AWQ",
#: "-W4AFP8", AMD's "-w-mxfp4-a-fp8"; the row's precision column says the format), its date
#: ("-0528", "-2507"), a preview and a thinking variant. A revision ("-v0.2") is not one: it may
#: be another architecture (Mistral 7B v0.2 drops v0.1's sliding window).
_RELEASE_TAGS = re.compile(
    r"[-_ ]+(?:(?:nv|mx)?fp(?:4|8|16)(?:[-_ ]+(?:v\d+|dynamic|static|block|kv))?|bf16|int[48]|awq"
    r"|gptq|w4a16|w8a8|w4a8|w4afp8|w[-_]?mxfp4[-_]?a[-_]?fp8|\d{4}|preview|thinking)$",
    re.IGNORECASE,
)
#: The maker's name a repository may lead a model's name with ("Meta-Llama-3.1-70B-Instruct").
_MAKER = re.compile(r"^meta[-_ ]+(?=llama)", re.IGNORECASE)


@lru_cache(maxsize=512)
def resolve_model(name: str) -> Architecture:
    """A benchmark's model name to a model spec: parenthesised notes ("(MLPerf v4.1
    Server)") and suffixes (-Instruct, -Chat) dropped, "Llama-3.1-70B" read as "Llama 3.1 70B".
    A name no spec has is then read as a release of one (``_release_names``): a Hugging Face
    repository id by its name, the tags a release adds to its architecture's name dropped
    (format, date, preview), a "v" before a version number read away ("LLaMA v4 Maverick")."""
    text = re.sub(r"\([^)]*\)|\"[^\"]*\"", " ", str(name)).strip()
    try:
        return _catalog_model(text)
    except SpecError:
        for candidate in _release_names(text):
            try:
                return _catalog_model(candidate)
            except SpecError:
                continue
        raise  # a repository id's reason is the catalog's (specs.catalog._by_repository)


def _catalog_model(text: str) -> Architecture:
    """The catalog's model ``text`` names, its trailing words of ``SUFFIXES`` dropped one by one
    until a name is found (``load_model``'s error for the text as given otherwise)."""
    tokens = [t for t in re.split(r"[-_ ]+", text) if t]
    while tokens:
        try:
            return load_model(" ".join(tokens))
        except SpecError:
            if tokens[-1].lower() in SUFFIXES:
                tokens = tokens[:-1]
                continue
            break
    return load_model(text.strip())


def _release_names(text: str) -> list[str]:
    """The names a release's name may stand for, in the order tried: a repository id's own
    name (less a maker's "Meta-"), then that name without each further trailing release tag
    (``_RELEASE_TAGS``, and ``SUFFIXES`` words between them: "Llama-3.3-70B-Instruct-FP8"),
    then each without its ``SUFFIXES`` words anywhere, then each with a "v" before a version
    number read away ("LLaMA v3.3 70B" as "LLaMA 3.3 70B")."""
    m = REPOSITORY_ID.match(text)
    base = _MAKER.sub("", m.group(1) if m else text)
    names = [base] if base != text else []
    first = base
    while True:
        cut = _RELEASE_TAGS.sub("", base).rstrip("-_ ")
        words = [t for t in re.split(r"[-_ ]+", cut) if t]
        while words and words[-1].lower() in SUFFIXES and len(words) > 1:
            words.pop()
        cut = " ".join(words)
        if not cut or cut == base:
            break
        names.append(cut)
        base = cut
    plain = [  # the SUFFIXES words anywhere in it: "Mixtral 8x7B Instruct v0.1" as "Mixtral 8x7B v0.1"
        " ".join(w for w in re.split(r"[-_ ]+", n) if w.lower() not in SUFFIXES)
        for n in dict.fromkeys([first, *names])
    ]
    unversioned = [
        re.sub(r"(?i)(?<![A-Za-z])v(?=\d)", "", n) for n in dict.fromkeys([first, *names])
    ]
    tried = [*names, *plain, *unversioned]
    return [n for n in dict.fromkeys(tried) if n and n != text]


#: How a unit's basis is written in a message.
_BASIS_WORDS = {"gpu": "GPU", "node": "node"}


def basis_of(rec, metric, gpus, count, gpu, decode_gpus) -> tuple[str, int]:
    """(what the value is per, how many of those the system has). The metric name and the unit
    say it ("throughput_per_gpu", "output tok/s/GPU": the user guide's "/GPU" rule); they
    must not disagree. A node is the accelerators the hardware name gives ("8xH200"), else the
    GPU's scale-up domain of at most 8."""
    named, unit = metric.per, mn.basis_of_unit(rec["unit"])
    if metric.quantity not in mn.DIVISIBLE:
        if unit in ("gpu", "node"):  # "TPOT" in "ms per GPU" ("per decode GPU" says the pool)
            raise SpecError(
                "",
                "unit",
                f"{rec['unit']!r} is per {_BASIS_WORDS[unit]} but metric {rec['metric']!r} "
                "is one request's, not a share of the run",
                "give the unit alone (ms, s or tok/s/user)",
            )
        return "system", 1
    if unit == "user":  # a per-user unit on a rate of the whole run ("req/s/user")
        raise SpecError(
            "",
            "unit",
            f"{rec['unit']!r} is per user but metric {rec['metric']!r} is a rate of the whole run",
            "give one request's speed as a per-user speed (per_user_output_speed, tok/s/user)",
        )
    if named and unit and named != unit:
        raise SpecError(
            "",
            "unit",
            f"{rec['unit']!r} says per {unit.replace('_', ' ')} but metric {rec['metric']!r} "
            f"is per {named.replace('_', ' ')}",
            "make the metric name and the unit agree",
        )
    per = named or unit or "system"
    if per == "gpu":
        return per, gpus
    if per == "decode_gpu":
        if decode_gpus is None:
            raise SpecError(
                "", "unit", "per decode GPU, but the row does not say which GPUs decode"
            )
        return per, decode_gpus
    if per == "node":
        node = count or (gpu.scale_up_domain_gpus if gpu.scale_up_domain_gpus <= 8 else None)
        if node is None or gpus % node:
            raise SpecError(
                "",
                "unit",
                f"per node: a node of {gpu.name} has {node or 'an unstated number of'} GPUs "
                f"and the row has {gpus}",
                "name the count in the hardware ('8xH200') or give the figure per GPU",
            )
        return per, gpus // node
    return per, 1


#: What each scenario can measure besides latencies (a metric outside it is unresolved).
MEASURABLE = {
    "offline": (*mn.RATES, "streams", "user_speed"),
    "server": (*mn.RATES, "streams", "user_speed"),
    "interactive": (*mn.RATES, "streams", "user_speed"),
    "closed_loop": (*mn.RATES, "user_speed"),
    "static": ("throughput",),
    "single": ("ttft_single", "ttft"),
    "prefill": ("input_throughput",),
}
#: Scenarios of many requests whose latencies (any statistic) a row may give (an offline run's:
#: trtllm-bench's report at maximum load).
WITH_LATENCIES = ("server", "interactive", "closed_loop", "offline")


def scenario_problem(scenario, metric, concurrency, bits, rec) -> str:
    if bits is None:
        said = str(rec.get("precision", "") or "")
        how = "is not stated" if sem.is_missing(said) or said.endswith("?") else "is not read"
        return (
            f"precision {said!r} {how}: give --precision (FP8, BF16, FP4, NVFP4, MXFP4, INT4; "
            "a mixed format such as W4A8 is not one the toolkit prices)"
        )
    if scenario is None:
        return "scenario not stated (give a scenario column, or a concurrency)"
    if scenario not in MEASURABLE:
        return f"scenario {scenario!r} is not one of {', '.join(MEASURABLE)}"
    if scenario in ("closed_loop", "static") and concurrency is None:
        return f"a {scenario.replace('_', ' ')} row needs its concurrency (batch_or_concurrency)"
    q = metric.quantity
    latency = scenario in WITH_LATENCIES and mn.is_time(q) and q != "ttft_single"
    if q not in MEASURABLE[scenario] and not latency:
        return f"metric {rec['metric']!r} is not read for the {scenario} scenario"
    return ""


def as_released(bits, arch, text=""):
    """A row's precision (weight, activation, KV bits) on a model whose checkpoint stores its
    weights in a format of the same element width keeps that format's exact width: "FP4" on
    gpt-oss is its released MXFP4 (4.25 bits; its BF16 non-expert weights and MXFP8 GEMM
    operand are the model file's and stay, ``Architecture.with_precision``). On a model
    released in one format only (``Architecture.released_format_only``), wider weights are
    that checkpoint too: TensorRT-LLM's performance overview heads its Hopper gpt-oss columns
    "(FP8)" for runs of openai/gpt-oss-120b's MXFP4 experts, where the cell ``text`` is such a
    bare label (``released_instead``)."""
    if bits is None:
        return None
    released = arch.precision.weight_bits
    if released != bits[0] and math.floor(released + 1e-9) == math.floor(bits[0] + 1e-9):
        return (released, *bits[1:])
    if released_instead(bits, arch, text):
        return (released, *bits[1:])
    return bits


#: A precision cell that states its weights in a wider format or a quantisation of its own
#: ("FP8 (weights fp8 per the results table)", "FP8 weights", "w-fp8-a-fp8", "W8A8",
#: "self-quantized", "requantized", AMD Quark's, ModelOpt's, llm-compressor's), not a bare
#: label: another checkpoint of the model, read as it says. "FP8 (KV cache quantized)" or
#: "FP8 activations (weights MXFP4)" says nothing of other weights.
_STATES_WEIGHTS = re.compile(
    r"weights?\s*[:=]?\s*(?:fp8|bf16|fp16|fp32|int8)|(?:fp8|bf16|fp16|fp32|int8)[\s_-]*weights?"
    r"|(?<![a-z])w-?(?:fp|int)?(?:8|16)(?![0-9])|self[\s-]*quanti[sz]|re-?quanti[sz]"
    r"|quark|modelopt|llm[\s-]*compressor",
    re.IGNORECASE,
)


def released_instead(bits, arch, text="") -> bool:
    """Whether a row's precision cell ``text``, a bare label of wider weights ("FP8") than a
    model released in one format only, is read as that release (``as_released``; the row's
    engine label says so)."""
    return (
        bits is not None
        and arch.released_format_only
        and bits[0] > arch.precision.weight_bits + 1e-9
        and not _STATES_WEIGHTS.search(str(text or ""))
    )


def gemm_shape_of(text):
    """(M, N, K) of "8192^3" or "6144x12288x12288"; None for "best shape"; "?" otherwise."""
    raw = str(text or "").strip().lower()
    if "best" in raw:
        return None
    m = re.match(r"^(\d+)\s*\^\s*3$", raw)
    if m:
        n = float(m.group(1))
        return (n, n, n)
    m = re.match(r"^(\d+)\s*x\s*(\d+)\s*x\s*(\d+)$", raw)
    if m:
        return tuple(float(g) for g in m.groups())
    return "?"
