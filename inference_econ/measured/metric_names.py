"""Metric names of measured-benchmark rows and what they mean: the quantity (output, input or
total tokens/s, requests/s, a latency with its statistic, a per-user speed), what a figure is per
(GPU, node, decode GPU) as the name or the unit says it, and the units a rate or a latency may
take (docs/user-guide.md, "Measured results: the CSV format"). Plain functions from text to typed
values."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Metric:
    """A metric name's meaning: the quantity, what the name says it is per ("gpu", "node",
    "decode_gpu"; None: the name does not say, the unit may) and whether it is a
    micro-benchmark."""

    quantity: str
    per: str | None = None
    micro: bool = False

    @property
    def per_gpu(self) -> bool:
        return self.per == "gpu"


#: Names (case-insensitive, spaces and dashes as "_") -> (quantity, statistic it implies).
#: Throughputs are output tokens/s unless named input, total (input + output) or requests.
_NAMES = {
    "throughput": "throughput",
    "throughput_total": "throughput",
    "output_throughput": "throughput",
    "output_token_throughput": "throughput",
    "output_tokens_throughput": "throughput",
    "output_tokens_per_s": "throughput",
    "output_tok_per_s": "throughput",
    "output_tps": "throughput",
    "output_tput": "throughput",
    "tokens_per_s": "throughput",
    "tok_per_s": "throughput",
    # InferenceX (SemiAnalysis' InferenceMAX) names its total tokens/s "tput" ("tput_per_gpu" is
    # its total_token_throughput over the GPUs, beside output_tput_per_gpu and
    # input_tput_per_gpu: utils/process_result.py)
    "tput": "total_throughput",
    "total_tput": "total_throughput",
    "input_tput": "input_throughput",
    "token_throughput": "throughput",
    "generation_throughput": "throughput",
    "decode_throughput": "throughput",
    "system_output_throughput": "throughput",
    "total_output_throughput": "throughput",
    "input_throughput": "input_throughput",
    "input_token_throughput": "input_throughput",
    "input_tokens_per_s": "input_throughput",
    "input_tok_per_s": "input_throughput",
    "input_tps": "input_throughput",
    "prefill_throughput": "input_throughput",
    "prefill_input_throughput": "input_throughput",
    "prefill_tokens_per_s": "input_throughput",
    "prefill_tps": "input_throughput",
    "total_token_throughput": "total_throughput",
    "total_tokens_per_s": "total_throughput",
    "total_tok_per_s": "total_throughput",
    "total_tps": "total_throughput",
    "request_throughput": "request_throughput",
    "requests_per_s": "request_throughput",
    "req_per_s": "request_throughput",
    "queries_per_s": "request_throughput",
    "samples_per_s": "request_throughput",
    "qps": "request_throughput",
    "tpot": "tpot",
    "time_per_output_token": "tpot",
    "itl": "itl",
    "inter_token_latency": "itl",
    "ttft": "ttft",
    "time_to_first_token": "ttft",
    "ttft_batch1": "ttft_single",
    "e2el": "e2e_latency",
    "e2e_latency": "e2e_latency",
    "end_to_end_latency": "e2e_latency",
    "request_latency": "e2e_latency",
    "per_user_decode_speed": "user_speed",
    "per_user_token_speed": "user_speed",
    "per_user_output_speed": "user_speed",
    "per_user_speed": "user_speed",
    "per_user_throughput": "user_speed",
    "throughput_per_user": "user_speed",  # "Throughput (per user)"
    "output_throughput_per_user": "user_speed",
    "output_token_throughput_per_user": "user_speed",  # AIPerf's: 1 / inter-token latency
    "output_speed_per_user": "user_speed",
    "throughput_per_request": "user_speed",
    "tokens_per_s_per_user": "user_speed",
    "tok_per_s_per_user": "user_speed",
    "output_tokens_per_s_per_user": "user_speed",
    "output_tokens_per_s_per_request": "user_speed",
    "tokens_per_s_per_request": "user_speed",
    "output_tokens_per_s_median": "user_speed",
    "tps_per_user": "user_speed",
    "output_speed": "user_speed",
    "user_speed": "user_speed",
    "decode_speed": "user_speed",
    "interactivity": "user_speed",
    "intvty": "user_speed",
    "implied_concurrent_streams": "streams",
    "concurrent_streams": "streams",
}
_MICRO = {
    "busbw": "busbw",
    "tflops": "gemm_flops",
    "copy / triad / dot": "stream",
}
#: Statistic words a name may carry ("p99_TPOT", "median_TTFT", "output_speed_median").
_STATISTICS = {
    "mean": "mean",
    "avg": "mean",
    "average": "mean",
    "median": "median",
    "p50": "median",
}
_STAT = re.compile(
    r"^(mean|avg|average|median|p\d+(?:\.\d+)?)_(.+)$|^(.+)_(mean|avg|average|median|p\d+(?:\.\d+)?)$"
)
#: What a figure is per, written last or first ("Per GPU Output Throughput": trtllm-bench's).
_PER = re.compile(r"^(?:(.+?)_per_(gpu|node|decode_gpu)|per_(gpu|node|decode_gpu)_(.+))$")
#: Quantities measured in time (unit "ms", "s" or "us"), with any statistic ("ttft_p99",
#: "tpot_median"); the rest are rates or counts.
TIME_QUANTITIES = ("tpot", "itl", "ttft", "e2e_latency", "ttft_single")
#: Rates any run of many requests has (output, input, input + output tokens and requests).
RATES = ("throughput", "input_throughput", "total_throughput", "request_throughput")


def is_time(quantity: str) -> bool:
    """Whether a quantity is a latency (of any statistic)."""
    return quantity in TIME_QUANTITIES or quantity.rsplit("_", 1)[0] in TIME_QUANTITIES


#: What the unit of a rate or a count says, one of which it must: a thing counted (tokens,
#: requests, queries, samples, sequences, streams, users, clients, concurrency, iterations)
#: or a rate ("/s", "per s", "per second", "TPS", "QPS", "RPS"): "output tok/s per GPU",
#: "t/s", "sequences (system)". A blank unit leaves it to the metric's name.
RATE_UNIT_WORDS = re.compile(
    r"tok|req|quer|sampl|seq|stream|user|client|concurr|/\s*s\b|\bper\s*s(ec(ond)?)?\b|"
    r"\b[tqr]ps\b|\bit/s"
)


#: Units of a rate the reader does not scale: per minute or hour, and k or M prefixes on the
#: thing counted ("k tok/s", "Mtok/s", "req/min").
SCALED_RATE_UNIT = re.compile(
    r"/\s*(min|minute|h|hr|hour)\b|\bper\s*(min|minute|hour)\b|\b[km]\s*(tok|req|tps|qps|rps)"
)


#: A unit of requests a second ("req/s", "requests per second", "QPS", "RPS", MLPerf's
#: "samples/s", a sample being one query), not of tokens ("t/s (64 reqs)" counts tokens).
_REQUEST_UNIT = re.compile(
    r"\b(?:req(?:uest)?s?|quer(?:y|ies)|samples?)\s*(?:/|per)\s*(?:s|sec|second)\b|\b[qr]ps\b",
    re.IGNORECASE,
)
#: A unit of input and output tokens together ("tok/s (input+output)", "in+out tok/s",
#: "prefill+decode tokens/s"), not a length ("in+out=2048").
_BOTH_TOKENS_UNIT = re.compile(
    r"\b(?:input|in|prefill)\s*(?:\+|&|and)\s*(?:output|out|decode)\b(?!\s*[=:]\s*\d)",
    re.IGNORECASE,
)
#: A unit that counts tokens: "tok", "tps", "t/s".
_TOKEN_UNIT = re.compile(r"tok|\btps\b|\bt\s*/\s*s\b", re.IGNORECASE)
#: A throughput's name that says no more than "throughput" (with a basis): what it counts is
#: its unit's to say ("Throughput" in req/s is requests a second).
_BARE_THROUGHPUT = re.compile(
    r"^(?:per_(?:gpu|node|decode_gpu)_)?(?:(?:mean|avg|average)_)?(?:throughput|tput)"
    r"(?:_(?:mean|avg|average))?(?:_per_(?:gpu|node|decode_gpu|s))?$"
)


def unit_counts(unit: str) -> str | None:
    """What a rate's unit counts: "requests", "both" (input and output tokens), "tokens", or
    None where it does not say."""
    text = str(unit)
    if _REQUEST_UNIT.search(text) and not _TOKEN_UNIT.search(text):
        return "requests"
    both = _BOTH_TOKENS_UNIT.search(text)
    rest = text[: both.start()] + text[both.end() :] if both else ""
    if both and not re.search(r"\b(?:output|decode|input|prefill)\b", rest, re.IGNORECASE):
        return "both"  # not "output tok/s (input+output)", which says two things
    return "tokens" if _TOKEN_UNIT.search(text) else None


#: The quantity of a bare throughput by what its unit counts.
_COUNTED = {"requests": "request_throughput", "both": "total_throughput"}
#: What each rate counts, for a name and a unit that must agree.
_RATE_COUNTS = {
    "throughput": "tokens",
    "input_throughput": "tokens",
    "total_throughput": "tokens",
    "request_throughput": "requests",
}


def count_problem(metric, unit: str, metric_name: str) -> str:
    """Why a rate's unit counts another thing than its name ("Output token throughput" in
    req/s; "Request throughput" in tok/s; output tokens in an input+output unit), or ""."""
    counts = unit_counts(unit)
    expected = _RATE_COUNTS.get(metric.quantity)
    if counts is None or expected is None:
        return ""
    if (counts == "requests") != (expected == "requests") or (
        counts == "both" and metric.quantity in ("throughput", "input_throughput")
    ):
        what = {"requests": "requests", "both": "input and output tokens", "tokens": "tokens"}
        named = {
            "throughput": "output tokens",
            "input_throughput": "input tokens",
            "total_throughput": "input and output tokens",
            "request_throughput": "requests",
        }
        return (
            f"unit {unit!r} counts {what[counts]} but metric {metric_name!r} counts "
            f"{named[metric.quantity]}: make the metric name and the unit agree"
        )
    return ""


def rate_unit_problem(unit: str, metric_name: str) -> str:
    """Why ``unit`` cannot be the unit of an end-to-end rate or count, or "": one that names
    neither a thing counted nor a rate (``RATE_UNIT_WORDS``; "furlongs") is refused rather
    than read as tokens/s."""
    text = str(unit).strip().lower()
    if SCALED_RATE_UNIT.search(text):
        return (
            f"unit {unit!r} of {metric_name!r} is not per second or has a prefix (k, M), "
            "which is not scaled: give the value per second, in plain tokens or requests"
        )
    if not text or RATE_UNIT_WORDS.search(text):
        return ""
    return (
        f"unit {unit!r} of {metric_name!r} names no tokens, requests or other count and no "
        "rate (give one such as tok/s, output tok/s per GPU or req/s)"
    )


#: Quantities a "per GPU" or "per node" figure divides (throughputs and in-flight requests).
DIVISIBLE = (*RATES, "streams")


#: Words in brackets that are part of a metric's name, not a note: a statistic alone or beside
#: a time unit ("TTFT (p99)", "TPOT (ms, p99)"; "(max)", "(peak)" and "(min)" too, which no
#: quantity the toolkit reads is, so "Throughput (peak)" is not read as the mean rate), or a
#: basis ("Throughput [per GPU]", "(per chip)", "(per user)"); "(median of 3 runs)" is a note.
_BRACKETED_WORDS = re.compile(
    r"[(\[]\s*(?:(?:ms|s|us)\s*,\s*)?(p\d+(?:\.\d+)?|median|mean|avg|average|max(?:imum)?|min(?:imum)?|peak)"
    r"(?:\s*,\s*(?:ms|s|us))?\s*[)\]]"
    r"|[(\[]\s*(per[\s-]+(?:decode[\s-]+)?(?:gpu|node|accelerator|chip|device|user|request)s?)"
    r"\s*[)\]]",
    re.IGNORECASE,
)
#: The words a basis in brackets may name a GPU by.
_GPU_WORDS = re.compile(r"\b(?:accelerator|chip|device)(s?)\b", re.IGNORECASE)
#: A square-bracketed note restating a name's acronym ("time-per-output-token [TPOT]",
#: "Per User Output Speed [1/TPOT]"), dropped where the name is read no other way.
_ACRONYM_NOTE = re.compile(r"\[\s*(?:1/)?[a-z]+\s*\]")


def _normalise(name: str, acronyms: bool = False) -> str:
    """A metric name as ``_NAMES`` spells it: notes in parentheses dropped but a statistic or
    a basis in brackets kept ("TTFT (p99)": ttft_p99); with ``acronyms``, an acronym note in
    square brackets dropped too ("Average time-per-output-token [TPOT]"); "per second" as
    "_per_s" ("tokens per second per GPU": tokens_per_s_per_gpu)."""
    text = _BRACKETED_WORDS.sub(
        lambda m: (
            " " + _GPU_WORDS.sub(r"gpu\1", (m.group(1) or m.group(2)).replace("-", " ")) + " "
        ),
        str(name).lower(),
    )
    text = _ACRONYM_NOTE.sub(" ", text) if acronyms else text
    text = re.sub(r"\([^)]*\)", " ", text)
    text = re.sub(r"\btok(en)?s?/s\b", lambda m: m.group(0).replace("/s", "_per_s"), text)
    text = text.replace("/", "_per_")
    text = re.sub(r"_+", "_", re.sub(r"[^a-z0-9.]+", "_", text)).strip("_")
    return re.sub(r"_per_sec(?:ond)?(?=_|$)", "_per_s", text)


def _quantity(base: str, statistic: str) -> str | None:
    """A quantity and a statistic as one quantity name. Per-request decode pace (TPOT, ITL,
    per-user speed) varies little between the requests of a steady run, so its median is read
    as its mean; a median TTFT (queueing) and any percentile are their own quantities."""
    if statistic == "mean":
        return base
    if base in ("tpot", "itl", "user_speed") and statistic == "median":
        return base
    if base in ("tpot", "itl", "ttft", "e2e_latency"):
        return f"{base}_{statistic}"
    return None


#: trtllm-bench's "Per User Output Throughput (tokens/sec/user)", later "... [w/ ctx]
#: (tps/user)": the mean over requests of each one's output tokens over its whole latency, its
#: time to first token included (``output_throughput_tok_ns_per_user`` of the tool's
#: statistics; 2.06 beside a "Per User Output Speed [1/TPOT]" of 5.47 in TensorRT-LLM's
#: performance overview's example), which is no speed of one request the model predicts.
_WITH_CONTEXT = re.compile(
    r"^[\W_]*per[\W_]+user[\W_]+output[\W_]+throughput(?![a-z])"
    r"|^[\W_]*output_throughput_per_user_tok_s\b",  # its JSON report's key
    re.IGNORECASE,
)
#: An extreme in brackets ("(peak, tok/s)", "(Max.)", "(max, per GPU)"; not a note about the
#: run, "(max load)", "(peak batch 256)"): no figure the toolkit predicts.
_EXTREME = re.compile(
    r"[(\[][^)\]]*\b(?:max(?:imum)?|min(?:imum)?|peak)\b\.?"
    r"(?!\s*(?:load|batch|concurrency|throughput|rate|requests?|users?))[^)\]]*[)\]]",
    re.IGNORECASE,
)


def why_not_read(name: str) -> str:
    """Why a metric name ``metric_of`` does not read is left unresolved: a name that looks like
    a metric it reads but means another thing says which; any other, that it is not read."""
    if _EXTREME.search(str(name)):
        return f"metric {str(name)!r} is an extreme, not a mean: no figure the toolkit predicts"
    if _WITH_CONTEXT.search(str(name)):
        return (
            f"metric {str(name)!r} is trtllm-bench's output tokens over each request's whole "
            "latency, its TTFT included, not a speed of decoding (give 'Per User Output Speed "
            "[1/TPOT]', the TPOT or the throughput instead)"
        )
    return f"metric {name!r} is not one the toolkit reads (see docs/user-guide.md)"


@lru_cache(maxsize=4096)
def metric_of(name: str) -> Metric | None:
    """The meaning of a metric name (None: not one the toolkit reads). A name read no other way
    is read without an acronym note ("[TPOT]") and without a unit at its end (vLLM's result
    keys, "p99_ttft_ms"); trtllm-bench's "[TPOT] P99" reads as written."""
    raw = str(name).strip().lower()
    if raw in _MICRO:
        return Metric(_MICRO[raw], micro=True)
    if _EXTREME.search(raw):
        return None
    for text in dict.fromkeys((_normalise(raw), _normalise(raw, acronyms=True))):
        for candidate in (text, re.sub(r"_(?:ms|s|us|sec)$", "", text)):
            found = _metric_named(candidate)
            if found is not None:
                return found
    return None


def _metric_named(text: str) -> Metric | None:
    """``metric_of`` of a name already spelt as ``_NAMES`` spells its names."""
    per = None
    m = _PER.match(text)
    if m and text not in _NAMES:
        text, per = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    if text in _NAMES:
        return None if per and is_time(_NAMES[text]) else Metric(_NAMES[text], per)
    m = _STAT.match(text)
    if not m:
        return None
    stat, base = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    stat = _STATISTICS.get(stat, stat)
    if base not in _NAMES:
        return None
    quantity = _quantity(_NAMES[base], stat)
    return Metric(quantity, per) if quantity and not (per and is_time(quantity)) else None


@lru_cache(maxsize=4096)
def basis_of_unit(unit: str) -> str | None:
    """What a unit says a figure is per ("output tok/s/GPU": gpu; "tok/s per node": node;
    "tok/s per decode GPU": decode_gpu; "(system)", "total", "all GPUs": system; "tok/s/user":
    user, a speed of one request), or None."""
    u = str(unit).lower()
    if re.search(r"(/|\bper\b)\s*-?\s*decode[\s_-]*(gpu|accelerator)", u):
        return "decode_gpu"
    if re.search(r"(/|\bper\b)\s*-?\s*(gpu|accelerator|chip|device)s?\b", u):
        return "gpu"
    # a GPU by its name: "tok/s/H200", "tokens/s per B200 GPU", "tok/s per H100 80GB", "per
    # MI300X accelerator"; "per H100 node" per node, "per GB200 NVL72", "per B200 system" not
    gpu_name = re.search(r"(/|\bper\b)\s*(?:nvidia\s+|amd\s+)?(?:gb|gh|mi|[abhlv])\d{2,3}[a-z]*", u)
    if gpu_name:
        rest = u[gpu_name.end() :]
        if re.search(r"\bnodes?\b", rest):
            return "node"
        if not re.search(r"system|rack|server|pod|cluster|nvl\d*|equiv|\d+\s*gpus", rest):
            return "gpu"  # "per H200 (8 GPUs)" is per system
    if re.search(r"(/|\bper\b)\s*-?\s*(user|request|stream|client)s?\b", u):
        return "user"
    if re.search(r"(/|\bper\b)\s*-?\s*node\b", u):
        return "node"
    if re.search(r"\bsystem\b|\btotal\b|\ball gpus\b", u):
        return "system"
    return None


#: Time units by what they are written as: "ms", "msec", "milliseconds", "ms/token", "s", "sec",
#: "seconds", "us", "µs", "microseconds", "ns", "nanoseconds".
_TIME_UNITS = (
    ("ms", re.compile(r"^(?:ms|msec|millisec(?:ond)?s?)\b")),
    ("us", re.compile(r"^(?:us|µs|μs|usec|microsec(?:ond)?s?)\b")),
    ("ns", re.compile(r"^(?:ns|nsec|nanosec(?:ond)?s?)\b")),
    ("s", re.compile(r"^(?:s|sec|secs|seconds?)\b")),
)


#: Seconds in each of ``time_unit``'s units.
SECONDS = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}


@lru_cache(maxsize=1024)
def time_unit(unit: str) -> str | None:
    """ "ms", "s", "us" or "ns" as a unit's first word writes it ("milliseconds", "ms/token", "sec"),
    else None (a rate's unit, or none)."""
    text = str(unit).strip().lower()
    return next((name for name, pattern in _TIME_UNITS if pattern.match(text)), None)


#: A unit written in a metric's name ("Throughput (tok/s/GPU)", "TTFT [ms]").
_NAMED_UNIT = re.compile(
    r"[(\[]([^)\]]*(?:/\s*s\b|tok|tps|req|/gpu|/user|\bms\b|\bsec)[^)\]]*)[)\]]", re.I
)


def row_metric(name: str, unit: str) -> tuple[Metric | None, str]:
    """(metric, unit) of a row: ``metric_of`` its name, its unit as given or, where the unit
    cell is blank, as its name writes it ("Throughput (tok/s/GPU)", vLLM's "p99_ttft_ms"); a
    throughput whose unit is per user ("tok/s/user", "TPS/user") is the speed of one request
    (``user_speed``), and a bare "Throughput" counts what its unit counts (requests in "req/s",
    input and output tokens in "tok/s (input+output)")."""
    blank = not str(unit).strip() or str(unit).strip().lower() == "nan"
    found = _NAMED_UNIT.search(str(name)) if blank else None
    unit = found.group(1).strip() if found else unit
    metric = metric_of(name)
    if blank and not found and metric is not None and is_time(metric.quantity):
        unit = named_time_unit(name) or unit  # vLLM's "p99_ttft_ms"
    per_user = basis_of_unit(unit) == "user"
    if metric is not None and metric.quantity == "throughput" and per_user and not metric.per:
        metric = Metric("user_speed")
    counted = _COUNTED.get(unit_counts(unit) or "")
    bare = _BARE_THROUGHPUT.match(_normalise(str(name).strip().lower()))
    if metric is not None and metric.quantity == "throughput" and counted and bare:
        metric = Metric(counted, metric.per)  # "Throughput" in req/s: requests a second
    return metric, unit


def named_time_unit(name: str) -> str | None:
    """The time unit a metric's name ends with ("p99_ttft_ms": ms), or None."""
    found = re.search(r"[_\s](ms|s|us|secs?)$", str(name).strip().lower())
    return ("s" if found.group(1).startswith("sec") else found.group(1)) if found else None
