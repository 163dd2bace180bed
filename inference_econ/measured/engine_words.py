"""What a measured row says of its software: the engine it names (profile name, version,
platform), features it uses that the model lacks (speculative decoding) and its precision's
bits. Plain functions from text to typed values."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .semantics import is_missing, said_off

# --- engines --------------------------------------------------------------------------------

#: Engines named in free text -> profile names; the first named in the text wins. A name
#: joined to its version by "_" ("vllm_0.9.1", a results folder's name) is still the name; one
#: joined to other words ("VLLM_USE_V1", an environment variable) is not.
ENGINE_WORDS = (
    (re.compile(r"(?<![a-z0-9])vllm(?:\b|(?=_v?\d))", re.I), "vllm"),
    (re.compile(r"(?<![a-z0-9])sglang(?:\b|(?=_v?\d))", re.I), "sglang"),
    (re.compile(r"trt|tensorrt|\bnim\b", re.I), "trtllm"),
)
#: A versioned mention: the engine's own name followed by its version ("vLLM 0.6.x",
#: "vllm==0.8.5", "vllm-0.9.0", "TensorRT-LLM 0.17", "TRT-LLM v1.0", "SGLang 0.4.6.post1").
_VERSIONED = re.compile(
    r"(?P<name>\bvllm|\bsglang|tensorrt[-_ ]?llm|trt[-_ ]?llm|\btrtllm)"
    r"\s*(?:v(?:ersion)?\s*|==\s*|@\s*|\(\s*v?|[-_]v?)?"
    r"(?P<version>\d+(?:\.\d+)*(?:\.[x*])?(?:[.+-]?(?:rc|post|dev|a|b)\d*)*)",
    re.IGNORECASE,
)
#: A container image named by its tag ("nvcr.io/nvidia/tensorrt-llm/release:1.0.0rc6",
#: "vllm/vllm-openai:v0.10.2", "lmsysorg/sglang:v0.5.2-cu126"): the engine's release. NVIDIA
#: Dynamo's runtime images ("ai-dynamo/tensorrtllm-runtime:0.8.1") are tagged with Dynamo's
#: release, not the engine's: no version.
_IMAGE = re.compile(
    r"(?<!dynamo/)(?P<name>\bvllm|\bsglang|tensorrt[-_]?llm|\btrtllm)[\w./-]*:v?"
    r"(?P<version>\d+(?:\.\d+)+(?:(?:rc|post|dev)\d*|\.post\d+)*)",
    re.IGNORECASE,
)
#: A build named by its source branch, not a release ("TensorRT-LLM feat/1.2-mlpinf", the
#: framework of NVIDIA's MLPerf v6.0 and v6.1 systems): no version a profile or the kernel
#: tables can place, but what the row states, so its label says it.
_BRANCH = re.compile(
    r"(?P<name>\bvllm|\bsglang|tensorrt[-_ ]?llm|trt[-_ ]?llm|\btrtllm)"
    r"\s+(?P<branch>(?:feat|release|main|dev)/[\w.+-]+)",
    re.IGNORECASE,
)
_PLATFORM_WORDS = (
    (re.compile(r"\brocm|\bhip\b", re.I), "rocm"),
    (re.compile(r"\bcuda\b", re.I), "cuda"),
    (re.compile(r"\btpu\b|\bjax\b|\bjetstream\b|\bxla\b", re.I), "tpu"),
)
_VENDOR_PLATFORMS = (
    (re.compile(r"\bamd\b|\binstinct\b|\bmi\d{3}", re.I), "rocm"),
    (re.compile(r"\bnvidia\b", re.I), "cuda"),
    (re.compile(r"\btpu\b|\bgoogle\b", re.I), "tpu"),
)


@dataclass(frozen=True)
class EngineText:
    """The engine a row names: a profile name (None: none the toolkit knows), its version as
    written (None: not stated), its platform ("cuda", "rocm", "tpu"; None: unknown) and, where
    it states no version, the source branch it names (``_BRANCH``; None: none)."""

    name: str | None
    version: str | None
    platform: str | None
    branch: str | None = None


def _engine_named(m: re.Match) -> str:
    """The profile family a versioned or branch mention's ``name`` group writes."""
    word = m.group("name").lower().replace("-", "").replace("_", "").replace(" ", "")
    return "trtllm" if word.startswith(("tensorrt", "trt")) else word


def _version(text: str, name: str) -> str | None:
    """The version ``text`` states of engine ``name``: a versioned mention or an image's tag."""
    for m in [*_VERSIONED.finditer(text), *_IMAGE.finditer(text)]:
        if _engine_named(m) != name:
            continue
        version = re.sub(r"\.[x*]$", "", m.group("version")).rstrip(".")
        release = re.match(r"[\d.]*\d", version).group(0)
        if not any(int(p) for p in release.split(".") if p):
            return None  # "0.0.0.dev1+mlperf50": a placeholder, no release
        return version
    return None


def _branch(text: str, name: str) -> str | None:
    """The source branch ``text`` names for engine ``name`` (``_BRANCH``), else None."""
    for m in _BRANCH.finditer(text):
        if _engine_named(m) == name:
            return m.group("branch").rstrip(".")
    return None


def engine_of(row: dict, context: str = "", hardware_description: str = "") -> EngineText:
    """The engine of a row: the ``engine`` column ("vllm", "vllm@0.10", a profile file), else
    the first engine named in the precision, notes (``context``: a derived row's include its
    parent's), source and hardware; its version from a versioned mention of that engine; its
    platform from the text ("ROCm", "CUDA", "TPU"), else the GPU's vendor."""
    notes = context or str(row.get("notes") or "")
    precision, source, hardware = (
        str(row.get(k) or "") for k in ("precision", "source", "hardware")
    )
    text = f"{precision} {notes} {source} {hardware}"
    vendor = f"{hardware} {hardware_description}"
    return _engine_text(str(row.get("engine") or "").strip(), text, vendor)


@lru_cache(maxsize=4096)
def _engine_text(given: str, text: str, vendor: str) -> EngineText:
    name = version = None
    if given and not is_missing(given):
        base, _, pinned = given.partition("@")
        named = [n for p, n in ENGINE_WORDS if p.search(base)]
        name = named[0] if named and not base.endswith((".yaml", ".yml")) else base.strip()
        version = pinned.strip() or _version(base, name)
        text = f"{given} {text}"
    else:
        hits = [(m.start(), n) for p, n in ENGINE_WORDS for m in [p.search(text)] if m]
        name = min(hits)[1] if hits else None
    if name is not None and version is None:
        version = _version(text, name)
    platform = None
    for pattern, value in _PLATFORM_WORDS:
        m = pattern.search(text)
        if m and (platform is None or m.start() < platform[0]):
            platform = (m.start(), value)
    if platform is None:
        platform = next(((0, v) for p, v in _VENDOR_PLATFORMS if p.search(vendor)), None)
    branch = _branch(text, name) if name is not None and version is None else None
    return EngineText(name, version, platform[1] if platform else None, branch)


#: Speculative decoding, as a measured row's status names it (``out_of_scope``).
SPECULATIVE = "speculative decoding / multi-token prediction"
#: Features the model lacks: rows that use them are out of scope.
UNMODELLED = (
    (
        re.compile(
            r"speculat|(?<![a-z])mtp\d*(?![a-z])|multi-token|eagle|medusa|draft model|lookahead",
            re.I,
        ),
        SPECULATIVE,
    ),
)


def out_of_scope(what: str, why: str = "") -> str:
    """The status of a row that uses a feature the model lacks (``why``: how it is known
    when the row does not say it)."""
    return f"out of scope: uses {what}, which inference-econ does not model" + (
        f" ({why})" if why else ""
    )


def unmodelled_of(row: dict, context: str = "") -> str | None:
    """The feature the model lacks that a row says it ran with ("DEP8 + MTP", "mtp3", "EAGLE
    draft"), in its precision, model, engine, parallelism or notes; one said to be off ("MTP
    off", "no MTP") is not."""
    notes = context or str(row.get("notes") or "")
    cells = [str(row.get(k) or "") for k in ("precision", "model", "engine", "parallelism")]
    for pattern, what in UNMODELLED:
        for text in (*cells, notes):  # each cell on its own: a word of the next is not said of it
            if any(not said_off(text, m.start(), m.end()) for m in pattern.finditer(text)):
                return what
    return None


#: Precisions: weight, activation and KV-cache bits (the KV cache follows an 8-bit engine).
PRECISIONS = {
    "bf16": (16, 16, 16),
    "fp16": (16, 16, 16),
    "fp32": (32, 32, 32),
    "fp8": (8, 16, 8),
    "int8": (8, 16, 16),
    "fp4": (4, 16, 8),
    "nvfp4": (4, 16, 8),
    "mxfp4": (4, 16, 8),
    "int4": (4, 16, 16),
    "awq": (4, 16, 16),
}


#: A KV-cache format stated in a precision cell ("INT4 (...; KV cache fp8)"): it overrides the
#: weight format's default (an INT4 deployment with an FP8 cache, as Intel's MLPerf v6.0 Arc one).
_KV_FORMAT = re.compile(r"kv[ _-]cache[ _:=-]*(fp8|int8|fp16|bf16)\b", re.I)
_KV_BITS = {"fp8": 8, "int8": 8, "fp16": 16, "bf16": 16}


def states_kv_format(text) -> bool:
    """Whether a precision cell states its KV cache's format ("FP8 (KV cache fp8)")."""
    return _KV_FORMAT.search(str(text or "")) is not None


#: An 8-bit checkpoint whose weights carry block scales, stated in a precision cell ("FP8
#: (block-scaled)", "fp8 block scales", "FP8 blockwise", "fp8_block", "FP8 block", "FP8
#: (block)", "FP8 per-block", "FP8 [128,128] blocks").
_BLOCK_SCALED = re.compile(
    r"block[ _-]?(?:scaled|scales?|wise)\b|\bfp8[ _-]?block\b|\bper[ _-]?block\b"
    r"|\(\s*block\s*\)|\b128\s*[x×,]\s*128\b",
    re.I,
)


def states_block_scaled(text) -> bool:
    """Whether a precision cell states 8-bit weights scaled per block ("FP8 (block-scaled)";
    "not per-block" does not)."""
    raw = str(text or "")
    return any(not said_off(raw, m.start(), m.end()) for m in _BLOCK_SCALED.finditer(raw))


def precision_of(text) -> tuple[float, float, float] | None:
    """Bits of a precision cell ("FP8", "FP8 e4m3", "FP8 likely (TRT-LLM)"); None when it is
    not stated or only guessed ("n/a", "BF16?"). A stated "KV cache fp8" sets the cache's bits."""
    # a format word on its own, not inside another's name ("W4AFP8": INT4 weights, FP8 GEMMs,
    # refused); "W8A8" before one ("W8A8FP8") and an FP8 encoding ("e4m3fp8") name nothing else
    raw = re.sub(r"w8a8[-_ ]?|e[45]m[23][-_ ]?", " ", str(text or ""), flags=re.I)
    # 4-bit weights with 8-bit activations named first are a 4-bit format only where one follows
    # ("W4A8 MXFP4"; "W4A8 FP8" is no format the model prices, "INT4 (W4A8 ...)" is INT4, as it
    # says first); "W4A16" is INT4 weight-only
    raw = re.sub(r"(?<![a-z0-9])w4a16(?:g\d+)?(?![a-z0-9])", " int4", raw, flags=re.I)
    words = r"(?<![a-z0-9])(w4a(?:8|fp8)|nvfp4|mxfp4|bf16|fp16|fp32|fp8|int8|fp4|int4|awq)(\?)?"
    found = list(re.finditer(words, raw, re.I))
    if found and found[0].group(1).lower().startswith("w4a"):
        after = found[1] if len(found) > 1 else None
        four_bit = after is not None and after.group(1).lower() in ("mxfp4", "nvfp4", "fp4", "int4")
        found = [after] if four_bit and not found[0].group(2) else []
    for m in found:
        if m.group(2):
            return None
        weight, activation, kv = PRECISIONS[m.group(1).lower()]
        stated = _KV_FORMAT.search(raw)
        return weight, activation, _KV_BITS[stated.group(1).lower()] if stated else kv
    return None
