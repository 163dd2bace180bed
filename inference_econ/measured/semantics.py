"""What the fields of a measured-benchmark row mean: numbers, scenarios (and cells
labelled by scenario), the engine's batch caps, token budgets and build settings a row states,
and its source, read from the free text benchmark tables use (docs/user-guide.md, "Measured
results: the CSV format"); metric names are ``metric_names``', lengths and MLPerf
benchmarks ``mlperf``'s, layouts and disaggregation ``layouts``', engine names and precisions
``engine_words``'. Plain functions
from text to typed values; no numbers are predicted here. A cell that cannot be read raises
``SpecError`` (the reader turns it into the row's ``unresolved`` status) or returns the reason
as text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from ..errors import SpecError
from ..load.engine import ADP_BALANCING_DEFAULTS, ADP_BALANCING_MOST, adp_pair
from ..specs.engine import LIMITS_PER_ATTENTION_RANK
from ..specs.engine_terms import BY_TERM
from .metric_names import Metric

#: Words that say a feature named beside them is off: before it ("no MTP", "not WideEP",
#: "without ADP", "non-disaggregated") or after it, ending the phrase or after ":" / "=" ("MTP
#: off", "ADP: disabled", "ep=false", "MTP=0", "(EP n/a)", "EP-MoE disabled)"); "MTP no
#: overlap scheduler" and "MTP: 0.85 acceptance" do not.
_OFF_BEFORE = re.compile(r"(?:\bno|\bnot|\bwithout|\bnon)[\s_-]*$", re.IGNORECASE)
_OFF_AFTER = re.compile(
    r"^[\w-]*?\s*(?:[:=]\s*)?(?:off|false|disabled|none|no|n/a|0)(?=\s*(?:$|[,;)\]|]))",
    re.IGNORECASE,
)


def said_off(text: str, start: int, end: int) -> bool:
    """Whether the words beside ``text[start:end]`` (a feature's name) say it is off."""
    return bool(
        _OFF_BEFORE.search(text[max(0, start - 12) : start]) or _OFF_AFTER.match(text[end:])
    )


def number(text) -> float | None:
    """A plain number (None if the text is not one); commas only as thousands separators
    ("1,024"), so a list such as "1,4,16,64" is not read as one number."""
    raw = str(text).strip().rstrip(",")  # "512," of "max batch 512, max_num_tokens 2560"
    if "," in raw and not re.fullmatch(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?", raw):
        return None
    try:
        value = float(raw.replace(",", ""))
    except ValueError:
        return None
    return value


_NA = re.compile(r"^\s*(n/?a|na|none|unknown|not stated|-|\?)?\s*$", re.IGNORECASE)


def is_missing(text) -> bool:
    """Empty or n/a: the row does not say."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return True
    return bool(_NA.match(str(text)))


# --- scenarios and scenario-labelled cells ----------------------------------------------------

#: Scenarios (the ``scenario`` column, or inferred from the text).
SCENARIOS = (
    "offline",
    "server",
    "interactive",
    "closed_loop",
    "static",
    "single",
    "prefill",
    "micro",
)
_SCENARIO_WORDS = {
    "off": "offline",
    "srv": "server",
    "inter": "interactive",
    "int": "interactive",
    "concurrency": "closed_loop",
    "closed": "closed_loop",
    "prefill_only": "prefill",
}
#: Label words a cell may give its parts ("Off: TP2xPP2 x2; Server/Interactive: TP4 x2",
#: "max batch 896 (Off) / 1024 (Server)", "768 (Interactive)").
_LABEL = r"\b(?:offline|off|server|srv|interactive|inter|int)\b"
_LABELS = rf"{_LABEL}(?:\s*(?:/|&|\+|,|\band\b)\s*{_LABEL})*"
#: A label that opens a part: at the start or after a separator, followed by ":" or "=".
_PREFIX = re.compile(rf"(?:^|(?<=[;|,/]))\s*({_LABELS})\s*[:=]", re.IGNORECASE)
#: A label that closes a value: "768 (Interactive)".
_POSTFIX = re.compile(rf"\(\s*({_LABELS})\s*\)", re.IGNORECASE)


def _scenarios_named(labels: str) -> set[str]:
    words = re.findall(_LABEL, labels, re.IGNORECASE)
    return {_SCENARIO_WORDS.get(w.lower(), w.lower()) for w in words}


@dataclass(frozen=True)
class Part:
    """The part of a cell that applies to one scenario: its text (the cell itself when it
    names no scenario), and the scenarios the cell names parts for."""

    text: str
    labelled: tuple[str, ...] = ()

    @property
    def others_only(self) -> bool:
        """The cell labels parts, none of them for this scenario, and says nothing else."""
        return bool(self.labelled) and not self.text.strip()


def _pieces(raw: str) -> list[tuple[set[str] | None, str]]:
    """A cell cut into (scenarios, text) pieces; None: a piece no label claims. A prefix
    label claims the text up to the next ";" or "|" or the next label."""
    cuts = list(_PREFIX.finditer(raw))
    if not cuts:
        return [(None, raw)]
    out: list[tuple[set[str] | None, str]] = [(None, raw[: cuts[0].start()])]
    for k, m in enumerate(cuts):
        end = cuts[k + 1].start() if k + 1 < len(cuts) else len(raw)
        parts = re.split(r"[;|]", raw[m.end() : end], maxsplit=1)
        out.append((_scenarios_named(m.group(1)), parts[0]))
        out.append((None, parts[1] if len(parts) > 1 else ""))
    return out


def scenario_part(text, scenario: str | None) -> Part:
    """The part of a cell for ``scenario``: the parts labelled with it and the unlabelled ones;
    ``Part.others_only`` when the cell names other scenarios only."""
    raw = "" if is_missing(text) else str(text)
    if not _PREFIX.search(raw) and not _POSTFIX.search(raw):
        return Part(raw)
    keep: list[str] = []
    named: set[str] = set()
    for names, body in _pieces(raw):
        body = body.strip(" ;|,/")
        if names is not None:
            named |= names
            if scenario in names:
                keep.append(body)
            continue
        if not _POSTFIX.search(body):
            keep.append(body)
            continue
        for piece in re.split(r"\s*[/;,|]\s*", body):
            tag = _POSTFIX.search(piece)
            if not tag:
                keep.append(piece)
                continue
            names = _scenarios_named(tag.group(1))
            named |= names
            if scenario in names:
                keep.append(_POSTFIX.sub(" ", piece))
    return Part("; ".join(k.strip() for k in keep if k.strip()), tuple(sorted(named)))


#: MLPerf's scenarios as words in free text ("Offline", "Server", "Interactive").
MLPERF_SCENARIO_WORD = re.compile(r"\b(offline|server|interactive)\b", re.IGNORECASE)


#: A run at maximum load: every request queued at once ("max load", "maximum load", an
#: infinite rate).
_MAX_LOAD = re.compile(r"max(?:imum)? load|infinite rate", re.IGNORECASE)
#: Other words for it, read where no concurrency is stated ("max throughput", "--request-rate
#: inf", "trtllm-bench throughput"; "--request-rate inf --max-concurrency 64" is vLLM's closed
#: loop).
_MAX_LOAD_WORDS = re.compile(
    r"max(?:imum)?[\s_-]+throughput|request[\s_-]*rate\s*[=:]?\s*inf\b"
    r"|trtllm[-_]bench\s+throughput",
    re.IGNORECASE,
)
#: A concurrency stated with its number ("--max-concurrency 64", "concurrency: 64", "64
#: concurrent").
_STATED_CONCURRENCY = re.compile(r"concurrency\s*[=:]?\s*\d|\d\s*concurrent", re.IGNORECASE)


def scenario_of(row: dict, metric: Metric, context: str = "") -> str | None:
    """The scenario of a row: the ``scenario`` column, else read from the text (MLPerf's
    Offline/Server/Interactive in the model, source or notes, the first that names exactly one;
    static batching; a prefill-only run; a benchmark at maximum load; a concurrency sweep).
    ``context`` is the notes the row reads (its own and, for a derived row, its parent's).
    None when nothing says."""
    given = str(row.get("scenario") or "").strip().lower().replace("-", "_").replace(" ", "_")
    if given and not is_missing(given):
        return _SCENARIO_WORDS.get(given, given)
    if metric.micro:
        return "micro"
    if metric.quantity == "ttft_single":
        return "single"
    notes = context or str(row.get("notes") or "")
    unlabelled = " ".join(body for names, body in _pieces(notes) if names is None)
    texts = (str(row.get("model") or ""), str(row.get("source") or ""), unlabelled)
    for text in texts:
        found = {name.lower() for name in MLPERF_SCENARIO_WORD.findall(text)}
        if len(found) == 1:
            return found.pop()
    text = " ".join(texts)
    if re.search(r"static batch", text, re.IGNORECASE):
        return "static"
    batch = str(row.get("batch_or_concurrency") or "")
    unchunked = re.sub(r"chunked[\s_-]*prefill", " ", text, flags=re.IGNORECASE)
    if (
        metric.quantity == "input_throughput"
        and re.search(r"\bprefill\b", unchunked, re.IGNORECASE)
        and lead_number(batch) is None  # a closed loop's clients: a whole run's input rate
    ):
        return "prefill"
    if _MAX_LOAD.search(batch + " " + text):
        return "offline"
    if lead_number(batch) is not None:
        return "closed_loop"
    said = batch + " " + text
    if _MAX_LOAD_WORDS.search(said) and not _STATED_CONCURRENCY.search(said):
        return "offline"
    return None


#: A concurrency written with its name: "concurrency 64", "conc=64", "C=64" (a bare "c" only
#: before "=" or ":"), "max concurrency: 64",
#: "--max-concurrency 64", "64 concurrent requests", "64 users", "64 clients".
_NAMED_CONCURRENCY = re.compile(
    r"^\s*(?:-{0,2}(?:max[\s_-]*)?(?:concurrency|conc|c(?=\s*[:=]))\s*[:=]?\s*(\d[\d,]*)"
    r"|(\d[\d,]*)\s*(?:concurrent(?:\s+(?:requests|users|clients|streams))?|users|clients))\s*$",
    re.IGNORECASE,
)


def _count(text: str) -> float | None:
    """A plain number, or a concurrency written with its name (``_NAMED_CONCURRENCY``)."""
    value = number(text)
    if value is not None:
        return value
    m = _NAMED_CONCURRENCY.match(text)
    return number(m.group(1) or m.group(2)) if m else None


def lead_number(cell, named: bool = True) -> float | None:
    """The number of a ``batch_or_concurrency`` cell: the cell itself ("64", and with ``named``
    "concurrency 64", "64 users"), or its first ";"-piece when the others state the engine's
    token budget or build flags ("64; max_num_tokens 2048; gemm_allreduce_plugin float16")."""
    read = _count if named else number
    text = str(cell or "")
    head, _, rest = text.partition(";")
    if read(text) is not None or not rest:
        return read(text)
    pieces = [p for p in rest.split(";") if p.strip()]
    if all(_BUDGET.search(p) or _FUSED_FLAG.search(p) or _KV_FRACTION.search(p) for p in pieces):
        return read(head)
    return None


#: A concurrency given per GPU: "64 per GPU", "64/GPU", "concurrency 64 per GPU", "64 users
#: per GPU", alone or restating a total in brackets ("512 (64 per GPU)").
_PER_GPU = r"(\d[\d,]*)\s*(?:concurrent\s+)?(?:(?:requests?|users?|clients?)\s+)?(?:per|/|a)\s*gpu"
_NAMED = r"(?:(?:max[\s_-]*)?(?:concurrency|conc)\s*[:=]?\s*)?"
_PER_GPU_ALONE = re.compile(rf"^\s*{_NAMED}{_PER_GPU}\s*$", re.IGNORECASE)
_PER_GPU_BESIDE = re.compile(rf"^\s*{_NAMED}(\d[\d,]*)\s*\(\s*{_PER_GPU}\s*\)\s*$", re.IGNORECASE)


def total_concurrency(cell, gpus: int | None, where: str = ""):
    """A ``batch_or_concurrency`` cell that gives its clients per GPU, as the run's total:
    "64 per GPU" on 8 GPUs is 512; "512 (64 per GPU)" is 512 where the two agree and refused
    where they do not. Any other cell is returned as it is (the reader keeps an MLPerf row's
    cell, whose number is the engine's cap)."""
    text, _, rest = str(cell or "").partition(";")  # "64 per GPU; max_num_tokens 2048"
    rest = f";{rest}" if rest else ""
    alone, beside = _PER_GPU_ALONE.match(text), _PER_GPU_BESIDE.match(text)
    if not (alone or beside) or not gpus:
        return cell
    each = number(alone.group(1) if alone else beside.group(2))  # type: ignore[union-attr]
    if alone:
        return f"{each * gpus:g}{rest}" if each is not None else cell
    total = number(beside.group(1))  # type: ignore[union-attr]
    if total is not None and each is not None and total != each * gpus:
        raise SpecError(
            where,
            "batch_or_concurrency",
            f"{text.strip()!r}: {each:g} per GPU on {gpus} GPUs is {each * gpus:g}, not {total:g}",
            "give the run's total clients, or its clients per GPU, alone",
        )
    return f"{total:g}{rest}" if total is not None else cell


# --- engine batch caps and concurrency ------------------------------------------------------

#: Words that make a number an engine's batch cap ("max batch 896", "gpu_batch 512",
#: "--max-num-seqs 256", "max_batch_size=512", "CUDA graphs up to 8192").
_CAP = re.compile(
    r"(?:max(?:imum)?[\s_-]*batch(?:[\s_-]*size)?|gpu[\s_-]*batch(?:[\s_-]*size)?|"
    r"batch[\s_-]*size|max[\s_-]*num[\s_-]*seqs|max[\s_-]*running[\s_-]*requests|"
    r"max[\s_-]*batch[\s_-]*requests|up\s+to)\s*[:=]?\s*(\d[\d,]*)",
    re.IGNORECASE,
)
MLPERF_SCENARIOS = ("offline", "server", "interactive")


def batch_of(text, scenario: str | None, notes: str = "") -> tuple[float | None, float | None]:
    """(concurrency or static batch, engine batch cap) of a row. ``batch_or_concurrency`` is
    read for the row's scenario ("max batch 896 (Off) / 1024 (Server)", "768 (Interactive)",
    "gpu_batch 512"): in an MLPerf scenario (which has no client concurrency) a number is the
    engine's cap, elsewhere a plain number is the concurrency; a cap may also be in the notes
    ("--max-num-seqs 256")."""
    part = scenario_part(text, scenario).text
    concurrency = cap = None
    m = _CAP.search(part)
    if m:
        cap = number(m.group(1))
    elif lead_number(part, named=scenario not in MLPERF_SCENARIOS) is not None:
        # a concurrency with its name is no MLPerf scenario's cap (they have no clients)
        value = lead_number(part, named=scenario not in MLPERF_SCENARIOS)
        if scenario in MLPERF_SCENARIOS:
            cap = value
        else:
            concurrency = value
    elif scenario in MLPERF_SCENARIOS:
        lone = re.fullmatch(r"\s*(\d[\d,]*)\s*(?:per (?:instance|gpu))?\s*", part, re.I)
        cap = number(lone.group(1)) if lone else None
    if cap is None and notes:
        m = _CAP.search(scenario_part(notes, scenario).text)
        cap = number(m.group(1)) if m else None
    return concurrency, cap


#: Words that make a number an engine's token budget per step ("max_num_tokens 1536",
#: "--max-num-batched-tokens 8192", "max tokens per step 2048", "token budget 4096").
_BUDGET = re.compile(
    r"(?:max[\s_-]*num[\s_-]*(?:batched[\s_-]*)?tokens|max[\s_-]*tokens[\s_-]*per[\s_-]*step|"
    r"tokens[\s_-]*per[\s_-]*step|(?:step[\s_-]*)?token[\s_-]*budget)\s*[:=]?\s*(\d[\d,]*)",
    re.IGNORECASE,
)


def budget_of(text, scenario: str | None, notes: str = "", where: str = "") -> float | None:
    """The engine's token budget per step a row states for its scenario (TensorRT-LLM's
    ``max_num_tokens``, vLLM's ``max_num_batched_tokens``), in ``batch_or_concurrency``
    ("max batch 256, max_num_tokens 2048") or else the notes; None where neither states one.
    A cell whose part for the scenario states two budgets (a label claims only the text up to
    the next ";": "Server: max batch 512; max_num_tokens 2560; Offline: ...") is the row's
    ``SpecError``, never the first one taken."""
    for field, cell in (("batch_or_concurrency", text), ("notes", notes)):
        found = {number(m.group(1)) for m in _BUDGET.finditer(scenario_part(cell, scenario).text)}
        if len(found) > 1:
            raise SpecError(
                where,
                field,
                f"states {len(found)} token budgets for the {scenario} scenario "
                f"({', '.join(f'{v:g}' for v in sorted(found))})",
                "a label claims its text up to the next ';': join each scenario's items with "
                "commas ('Server: max batch 512, max_num_tokens 2560; Offline: max batch 512, "
                "max_num_tokens 1536')",
            )
        if found:
            return found.pop()
    return None


#: An engine built with each row-parallel GEMM and its all-reduce in one kernel: TensorRT-LLM's
#: build flag set to a type ("gemm_allreduce_plugin float16", "'gemm_allreduce_plugin':
#: 'bfloat16'"), its PyTorch runtime's switch ("TRTLLM_GEMM_ALLREDUCE_FUSION_ENABLED=1"), or
#: in words ("GEMM+all-reduce fused", "fused GEMM-AllReduce", "GEMM and all-reduce fusion").
_FUSED_FLAG = re.compile(
    r"(\b(?:no|not|without)\s+)?"
    r"gemm[\s_-]*all[\s_-]*reduce[\s_-]*(?:plugin|fusion[\s_-]*enabled)['\"]?"
    r"(?:\s*[:=]\s*|\s+(?:is\s+)?)?[('\"]?([\w.]*)",
    re.I,
)
#: Values of the flag that fuse (a data type, or on) and that do not.
_FUSED_ON = {"float16", "bfloat16", "fp16", "bf16", "half", "auto", "1", "true", "on", "yes"}
_FUSED_ON |= {"enable", "enabled"}
_FUSED_OFF = {"none", "null", "disable", "disabled", "false", "off", "0", "no", "not", "unset"}
_FUSED_WORDS = re.compile(
    r"(\b(?:no|not|without|non)[\s-]+)?"
    r"(?:fused\s+gemm\s*(?:[-+/_]|and|with)?\s*all[\s_-]*reduce|"
    r"gemm\s*(?:[-+/_]|and|with)?\s*all[\s_-]*reduce\s+(?:fused|fusion))"
    r"(\s+(?:disabled|off|not\s+used|unused|turned\s+off))?",
    re.I,
)


def fused_allreduce_of(text, scenario: str | None, notes: str = "", where: str = "") -> bool:
    """Whether a row states that its engine fuses each row-parallel GEMM with its all-reduce
    (docs/model.md §F6), in ``batch_or_concurrency`` or the notes (the row's scenario part):
    the flag set to a type or on, or the fusion in words ("GEMM+all-reduce fused"); a flag set
    to None, disable or "not set", or the words negated ("no fused GEMM+all-reduce", "...
    fusion disabled"), is not. A value it cannot read, or the part saying both, is the row's
    ``SpecError`` (never a guess)."""
    said: set[bool] = set()
    for field, cell in (("batch_or_concurrency", text), ("notes", notes)):
        part = scenario_part(cell, scenario).text
        for flag in _FUSED_FLAG.finditer(part):
            if flag.group(1):  # "built without gemm_allreduce_plugin"
                said.add(False)
                continue
            value = flag.group(2).lower()
            if value not in _FUSED_ON | _FUSED_OFF:
                raise SpecError(
                    where,
                    field,
                    f"gemm_allreduce_plugin {flag.group(2) or '(no value)'!r} is not read",
                    "give a type (float16, bfloat16) or on to fuse, None or disable not to",
                )
            said.add(value in _FUSED_ON)
        for words in _FUSED_WORDS.finditer(part):
            said.add(words.group(1) is None and words.group(2) is None)
    if len(said) > 1:
        raise SpecError(
            where,
            "batch_or_concurrency",
            f"says the GEMM/all-reduce fusion is both on and off for the {scenario} scenario",
            "state it once for each scenario, each item with its own label "
            "('Server: gemm_allreduce_plugin float16; Offline: gemm_allreduce_plugin None')",
        )
    return said == {True}


#: TensorRT-LLM's share of the memory left after the weights that its KV cache takes
#: ("kvcache_free_gpu_mem_frac 0.95", "kv_cache_free_gpu_mem_fraction=0.9").
_KV_FRACTION = re.compile(
    r"kv[\s_-]*cache[\s_-]*free[\s_-]*gpu[\s_-]*mem(?:ory)?[\s_-]*frac(?:tion)?['\"]?"
    r"\s*[:=]?\s*['\"]?([^\s;,)'\"|]*)",
    re.I,
)
#: The bounds of the profile's ``kv_cache_memory_fraction`` (``specs.engine_terms.BY_TERM``).
_KV_TERM = BY_TERM["kv_cache_memory_fraction"]


def kv_fraction_of(text, scenario: str | None, notes: str = "", where: str = "") -> float | None:
    """The share of the memory left after the weights that a row states its engine gives the
    KV cache (TensorRT-LLM's ``kv_cache_free_gpu_mem_fraction``, docs/model.md §F8), in
    ``batch_or_concurrency`` or else the notes (the row's scenario part); None where neither
    states one; a range ("0.9-0.95") is read as its lower end. A value it cannot read or
    outside the profile term's bounds (0.01-1), or two values for one scenario, is the row's
    ``SpecError``."""
    for field, cell in (("batch_or_concurrency", text), ("notes", notes)):
        found = set()
        for m in _KV_FRACTION.finditer(scenario_part(cell, scenario).text):
            raw = m.group(1)[:-1] if m.group(1).endswith(".") else m.group(1)  # "... 0.95."
            # a range ("0.9-0.95", TensorRT-LLM's performance tables) is read as its lower
            # end: the least cache the runs had
            raw = re.sub(r"^(\d*\.?\d+)-\d*\.?\d+$", r"\1", raw)
            value = number(raw) if re.fullmatch(r"\d*\.?\d+", raw) else None
            bounds = f"from {_KV_TERM.minimum:g} to {_KV_TERM.maximum:g}"
            found.add(
                _within(
                    value, _KV_TERM, (where, field), ("kvcache_free_gpu_mem_frac", m.group(1)),
                    f"give a fraction {bounds} (0.95, not 95%)",
                )
            )  # fmt: skip
        if len(found) > 1:
            raise SpecError(
                where,
                field,
                f"kvcache_free_gpu_mem_frac {', '.join(f'{v:g}' for v in sorted(found))} for "
                f"the {scenario} scenario",
                "state one fraction for each scenario",
            )
        if found:
            return found.pop()
    return None


def _within(value: float | None, term, place: tuple[str, str], said: tuple, fix: str) -> float:
    """``value`` where it was read and lies within ``term``'s bounds; else the row's
    ``SpecError`` at ``place`` (where, field): ``said`` (the flag, its text as written) is
    not read."""
    if value is None or not term.minimum <= value <= term.maximum:
        flag, raw = said
        raise SpecError(*place, f"{flag} {repr(raw) if raw else '(no value)'} is not read", fix)
    return value


#: vLLM's scheduler flags as a row states them: decode steps per scheduler call
#: ("num_scheduler_steps 8", "--num-scheduler-steps 8") and chunked prefill on or off
#: ("enable_chunked_prefill True", "--enable-chunked-prefill", "--no-enable-chunked-prefill").
_STEPS = re.compile(r"num[\s_-]*scheduler[\s_-]*steps['\"]?\s*[:=]?\s*['\"]?([^\s;,)'\"|]*)", re.I)
_CHUNKED = re.compile(
    r"(--no-)?enable[\s_-]*chunked[\s_-]*prefill['\"]?"
    r"(?:\s*([:=])\s*['\"]?([^\s;,)'\"|]*)|\s+['\"]?(true|false|on|off|yes|no|1|0)\b)?",
    re.I,
)
#: SGLang's decoding requests mixed into its prefill batches ("--enable-mixed-chunk",
#: "enable_mixed_chunk: True"; off by default).
_MIXED = re.compile(
    r"(?<![\w-])(?:--)?(no-)?enable[\s_-]*mixed[\s_-]*chunk(?![\w-])['\"]?"
    r"(?:\s*([:=])\s*['\"]?([^\s;,)'\"|]*)|\s+['\"]?(true|false|on|off|yes|no|1|0)\b)?",
    re.I,
)
_ON, _OFF = ("true", "on", "yes", "1"), ("false", "off", "no", "0")
_STEPS_TERM = BY_TERM["scheduler_steps"]


def _one_value(found: set, name: str, scenario, where: str, field: str):
    """The one value a cell states for ``name`` (None: none); two different values for one
    scenario are the row's ``SpecError``."""
    if len(found) > 1:
        raise SpecError(
            where,
            field,
            f"states {name} twice, differently, for the {scenario} scenario",
            "state it once for each scenario",
        )
    return next(iter(found)) if found else None


def scheduler_of(text, scenario: str | None, notes: str = "", where: str = "") -> tuple:
    """(decode steps per scheduler call, chunked prefill, mixed chunks) a row states its engine
    ran with (vLLM's ``num_scheduler_steps`` and ``enable_chunked_prefill``, SGLang's
    ``enable_mixed_chunk``, docs/model.md §F9), in ``batch_or_concurrency`` or else the notes
    (the row's scenario part); None for each it does not state. A value it cannot read, or two
    values for one scenario, is the row's ``SpecError``."""
    steps = chunked = mixed = None
    for field, cell in (("batch_or_concurrency", text), ("notes", notes)):
        part = scenario_part(cell, scenario).text
        found_steps = set()
        for m in _STEPS.finditer(part):
            value = number(m.group(1)) if re.fullmatch(r"\d+", m.group(1)) else None
            bounds = f"from {_STEPS_TERM.minimum:g} to {_STEPS_TERM.maximum:g}"
            found_steps.add(
                int(
                    _within(
                        value, _STEPS_TERM, (where, field), ("num_scheduler_steps", m.group(1)),
                        f"give a whole number of steps {bounds}",
                    )
                )
            )  # fmt: skip
        found_chunked = _switches(
            _CHUNKED, part, "enable_chunked_prefill", where, field,
            "(or the flag alone, --enable-chunked-prefill or --no-enable-chunked-prefill)",
        )  # fmt: skip
        found_mixed = _switches(
            _MIXED,
            part,
            "enable_mixed_chunk",
            where,
            field,
            "(or the flag --enable-mixed-chunk alone)",
        )
        said_steps = _one_value(found_steps, "num_scheduler_steps", scenario, where, field)
        said_chunked = _one_value(found_chunked, "chunked prefill", scenario, where, field)
        said_mixed = _one_value(found_mixed, "enable_mixed_chunk", scenario, where, field)
        if steps is None:
            steps = said_steps
        if chunked is None:
            chunked = said_chunked
        if mixed is None:
            mixed = said_mixed
    return steps, chunked, mixed


def _switches(pattern, part: str, name: str, where: str, field: str, flags: str) -> set:
    """The on/off values a cell's ``part`` states for the switch ``pattern`` matches (its
    ``--no-`` form, ``name: True``, ``name False`` or the flag alone); a value that is not one
    of them is the row's ``SpecError`` (``flags``: how else it may be written), never a
    guess."""
    found = set()
    for m in pattern.finditer(part):
        said = (m.group(3) if m.group(2) else m.group(4) or "true").lower()
        if said not in _ON + _OFF:  # "enable_chunked_prefill: maybe"
            raise SpecError(
                where,
                field,
                f"{name} {m.group(3) or '(no value)'!r} is not read",
                f"give True or False {flags}",
            )
        found.add(not m.group(1) and said in _ON)
    return found


#: vLLM's overlapped scheduler as a row states it ("async_scheduling: True",
#: "--async-scheduling", "--no-async-scheduling").
_ASYNC = re.compile(
    r"(--no-)?async[\s_-]*scheduling['\"]?"
    r"(?:\s*([:=])\s*['\"]?([^\s;,)'\"|]*)|\s+['\"]?(true|false|on|off|yes|no|1|0)\b)?",
    re.I,
)


def async_of(text, scenario: str | None, notes: str = "", where: str = "") -> bool | None:
    """Whether a row states its vLLM engine ran with async scheduling (``--async-scheduling``:
    the next step planned while the GPU runs this one, docs/model.md §F5), in
    ``batch_or_concurrency`` or else the notes (the row's scenario part); None where it does
    not say. A value not read, or two for one scenario, is the row's ``SpecError``."""
    for field, cell in (("batch_or_concurrency", text), ("notes", notes)):
        found = set()
        for m in _ASYNC.finditer(scenario_part(cell, scenario).text):
            said = (m.group(3) if m.group(2) else m.group(4) or "true").lower()
            if said not in _ON + _OFF:
                raise SpecError(
                    where,
                    field,
                    f"async_scheduling {m.group(3) or '(no value)'!r} is not read",
                    "give True or False (or the flag alone, --async-scheduling or "
                    "--no-async-scheduling)",
                )
            found.add(not m.group(1) and said in _ON)
        said = _one_value(found, "async_scheduling", scenario, where, field)
        if said is not None:
            return said
    return None


#: AMD's vLLM V1 scheduler patch of MLPerf v6.0 (closed/AMD/setup/*/patches/*vllm*.patch,
#: ``vllm/v1/core/sched/scheduler.py``): decode-only scheduler calls between those that admit
#: waiting requests, and the running requests below which every call admits, as the harness
#: configuration's ``vllm_env_config`` sets them ("VLLM_SUBSEQUENT_DECODE_STEPS: 6").
_CADENCE = {
    "VLLM_SUBSEQUENT_DECODE_STEPS": re.compile(
        r"VLLM_SUBSEQUENT_DECODE_STEPS['\"]?\s*[:=]?\s*['\"]?([^\s;,)'\"|]*)"
    ),
    "VLLM_MIN_REQUEST_DECODE_STEP": re.compile(
        r"VLLM_MIN_REQUEST_DECODE_STEP['\"]?\s*[:=]?\s*['\"]?([^\s;,)'\"|]*)"
    ),
}
#: The most decode-only calls, or requests, a cadence is read with (a larger value is a typo).
CADENCE_MOST = 1_000_000


def cadence_of(text, scenario: str | None, notes: str = "", where: str = "") -> tuple | None:
    """(decode-only calls between admitting ones, requests below which every call admits) a
    row states its engine ran with (``_CADENCE``, ``EngineConfig.admission_cadence``), in
    ``batch_or_concurrency`` or else the notes (the row's scenario part); None where it states
    neither. A value that is not a whole number, or two values for one scenario, is the row's
    ``SpecError``."""
    for field, cell in (("batch_or_concurrency", text), ("notes", notes)):
        part = scenario_part(cell, scenario).text
        values = []
        for name, pattern in _CADENCE.items():
            found = set()
            for m in pattern.finditer(part):
                if not re.fullmatch(r"\d+", m.group(1)) or int(m.group(1)) > CADENCE_MOST:
                    raise SpecError(
                        where,
                        field,
                        f"{name} {m.group(1) or '(no value)'!r} is not read",
                        f"give a whole number from 0 to {CADENCE_MOST:,}",
                    )
                found.add(int(m.group(1)))
            values.append(_one_value(found, name, scenario, where, field))
        if values != [None, None]:
            return tuple(v or 0 for v in values)
    return None


#: TensorRT-LLM's attention-DP balancing as an export's benchmark states it ("attention-DP
#: balancing 0,60", also "0/60"): (wait, timeout) steps.
_BALANCING = re.compile(
    r"attention[\s_-]*dp[\s_-]*balancing\s*[:=]?\s*(\S+?)\s*[,/]\s*([^\s;,)}\]]+)", re.I
)
#: A config that turns the balancing on or off: TensorRT-LLM's ``enable_balance``, MLPerf's
#: harness ``adp_balancing_enable``.
_SWITCH = r"(?:enable_balance|adp_balancing_enable)['\"]?\s*[:=]\s*['\"]?"
_BALANCE_ON = re.compile(_SWITCH + r"(?:true|1|on)\b", re.I)
_BALANCE_OFF = re.compile(_SWITCH + r"(?:false|0|off)\b", re.I)
#: Each step count of a config, in either order ("timeout_iters: 60").
_ITERS = tuple(
    re.compile(name + r"['\"]?\s*[:=]?\s*([^\s;,)}\]'\"]+)", re.I)
    for name in ("batching_wait_iters", "timeout_iters")
)


def _stated_pair(wait: str, timeout: str, where: str, field: str) -> tuple[int, int]:
    """A row's balancing counts (``adp_pair``), or its ``SpecError`` naming them."""
    pair = adp_pair(wait, timeout)
    if pair is None:
        raise SpecError(
            where,
            field,
            f"attention-DP balancing {wait!r}, {timeout!r} is not read",
            "give the wait and timeout steps as whole numbers, the timeout at least"
            f" 1, each at most {ADP_BALANCING_MOST:,}: 'attention-DP balancing 0,60'",
        )
    return pair


def balancing_of(text, scenario: str | None, notes: str = "", where: str = "") -> tuple | None:
    """(batching wait, timeout) steps of TensorRT-LLM's attention-DP balancing a row states its
    engine ran with (``EngineConfig.adp_balancing``), in ``batch_or_concurrency`` or else the
    notes (the row's scenario part): an export's words (``_BALANCING``), or a config that
    switches it on (``_BALANCE_ON``; off by default, so counts alone are not the balancing),
    a count it leaves out at TensorRT-LLM's default (``ADP_BALANCING_DEFAULTS``); None where
    neither states it. A count that is not a whole number (a timeout of at least 1), or two
    different values for one scenario, is the row's ``SpecError``."""
    for field, cell in (("batch_or_concurrency", text), ("notes", notes)):
        part = scenario_part(cell, scenario).text
        found = {
            _stated_pair(m.group(1), m.group(2), where, field) for m in _BALANCING.finditer(part)
        }
        if _BALANCE_ON.search(part) and not _BALANCE_OFF.search(part):
            counts = [p.search(part) for p in _ITERS]
            texts = [m.group(1) if m else str(d) for m, d in zip(counts, ADP_BALANCING_DEFAULTS)]
            found.add(_stated_pair(*texts, where, field))
        value = _one_value(found, "attention-DP balancing", scenario, where, field)
        if value is not None:
            return value
    return None


def admission_of(text, scenario: str | None, notes: str = "", where: str = "") -> tuple:
    """(prefill-admission cadence, attention-DP balancing) a row states its engine held its
    prompts back by (``cadence_of``, ``balancing_of``); None for each it does not state."""
    return cadence_of(text, scenario, notes, where), balancing_of(text, scenario, notes, where)


#: Engines whose batch cap counts the requests of one attention data-parallel rank, not of the
#: whole instance (the engine's own rule, with its sources: ``specs.engine``).
CAP_PER_ATTENTION_RANK = LIMITS_PER_ATTENTION_RANK


def source_group(row: dict) -> str:
    """The source a row belongs to, for leave-one-source-out validation: the ``source_group``
    column, else the source up to its first " (" or " @"; a path into a repository is cut to
    owner/repository, or, in a results repository (a ``results`` folder, as MLPerf's), to the
    folder above ``results``: one source per submitter."""
    given = str(row.get("source_group") or "").strip()
    if given:
        return given
    return _group_of_source(str(row.get("source") or ""))


@lru_cache(maxsize=4096)
def _group_of_source(source: str) -> str:
    """``source_group`` of a row without a ``source_group`` column, by its source alone (a
    log repeats a few sources over many rows)."""
    text = re.split(r"\s\(|\s@", source.strip())[0].strip()
    first = text.partition(" ")[0]
    parts = first.split("/")
    if len(parts) >= 4:
        if "results" in parts[2:]:
            return "/".join(parts[: parts.index("results", 2)])
        return "/".join(parts[:2])
    return text or "(no source)"


def publication(group: str) -> str:
    """The publication a source belongs to: a results repository's submitters together
    (MLPerf Inference v4.1 as one), any other source as itself."""
    parts = group.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 and " " not in parts[1] else group
