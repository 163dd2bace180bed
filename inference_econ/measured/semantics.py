"""What the fields of a measured-benchmark row mean: metrics, scenarios, datasets, layouts,
limits, engines and disaggregation, read from the free text benchmark tables use
(docs/user-guide.md, "Measured results: the CSV format"). Plain functions from text to typed
values; no numbers are predicted here. A cell that cannot be read raises ``SpecError`` (the
reader turns it into the row's ``unresolved`` status) or returns the reason as text.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
from dataclasses import dataclass
from functools import lru_cache

from ..errors import SpecError
from ..settings import MAX_TOKENS
from ..specs.engine import LIMITS_PER_ATTENTION_RANK
from ..specs.engine_terms import BY_TERM

# --- metrics ----------------------------------------------------------------------------------


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
    "tput": "throughput",
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
_STATISTICS = {"mean": "mean", "avg": "mean", "average": "mean", "median": "median"}
_STAT = re.compile(
    r"^(mean|avg|average|median|p\d+(?:\.\d+)?)_(.+)$|^(.+)_(mean|avg|average|median|p\d+(?:\.\d+)?)$"
)
_PER_SUFFIX = re.compile(r"^(.+?)_per_(gpu|node|decode_gpu)$")
#: Quantities measured in time (unit "ms", "s" or "us"), with any statistic ("ttft_p99",
#: "tpot_median"); the rest are rates or counts.
TIME_QUANTITIES = ("tpot", "itl", "ttft", "e2e_latency", "ttft_single")
#: Rates any run of many requests has (output, input, input + output tokens and requests).
RATES = ("throughput", "input_throughput", "total_throughput", "request_throughput")


def is_time(quantity: str) -> bool:
    """Whether a quantity is a latency (of any statistic)."""
    return quantity in TIME_QUANTITIES or quantity.rsplit("_", 1)[0] in TIME_QUANTITIES


#: Quantities a "per GPU" or "per node" figure divides (throughputs and in-flight requests).
DIVISIBLE = (*RATES, "streams")


def _normalise(name: str) -> str:
    text = re.sub(r"\([^)]*\)", " ", str(name).strip().lower())
    text = re.sub(r"\btok(en)?s?/s\b", lambda m: m.group(0).replace("/s", "_per_s"), text)
    text = text.replace("/", "_per_")
    return re.sub(r"_+", "_", re.sub(r"[^a-z0-9.]+", "_", text)).strip("_")


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


@lru_cache(maxsize=4096)
def metric_of(name: str) -> Metric | None:
    """The meaning of a metric name (None: not one the toolkit reads)."""
    raw = str(name).strip().lower()
    if raw in _MICRO:
        return Metric(_MICRO[raw], micro=True)
    text = _normalise(raw)
    per = None
    m = _PER_SUFFIX.match(text)
    if m and text not in _NAMES:
        text, per = m.group(1), m.group(2)
    if text in _NAMES:
        return Metric(_NAMES[text], per)
    m = _STAT.match(text)
    if not m:
        return None
    stat, base = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    stat = _STATISTICS.get(stat, stat)
    if base not in _NAMES:
        return None
    quantity = _quantity(_NAMES[base], stat)
    return Metric(quantity, per) if quantity else None


@lru_cache(maxsize=4096)
def basis_of_unit(unit: str) -> str | None:
    """What a unit says a figure is per ("output tok/s/GPU": gpu; "tok/s per node": node;
    "tok/s per decode GPU": decode_gpu; "(system)", "total", "all GPUs": system), or None."""
    u = str(unit).lower()
    if re.search(r"(/|\bper\b)\s*-?\s*decode[\s_-]*(gpu|accelerator)", u):
        return "decode_gpu"
    if re.search(r"(/|\bper\b)\s*-?\s*(gpu|accelerator|chip|device)s?\b", u):
        return "gpu"
    if re.search(r"(/|\bper\b)\s*-?\s*node\b", u):
        return "node"
    if re.search(r"\bsystem\b|\btotal\b|\ball gpus\b", u):
        return "system"
    return None


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


# --- lengths and MLPerf benchmarks ------------------------------------------------------------


@dataclass(frozen=True)
class Lengths:
    """Prompt and output lengths of a benchmark: means, and the contexts a step sees."""

    input_mean: float
    output_mean: float
    #: Mean context a decoding request has, weighted by the time it decodes:
    #: E[n_in·n_out + n_out²/2] / E[n_out].
    decode_context: float
    #: Mean causal context of a prompt token: E[n_in²] / (2 E[n_in]).
    prefill_context: float
    label: str
    #: Longest prompt and output, tokens (a dataset's longest sample; inf: unbounded). A
    #: replayed run draws its lengths from log-normals truncated there (load/lengths).
    input_max: float = math.inf
    output_max: float = math.inf
    #: Requests the run issues: a ``requests`` column's count (a closed loop's whole run), else
    #: at least what a LoadGen Server run of the benchmark issues, its performance sample
    #: count, each sample issued equally often (``sample_concatenate_permutation``: MLPerf's
    #: equal-issue mode for its LLM latency scenarios); 0 where neither says.
    issued: int = 0


def uniform_lengths(n_in: float, n_out: float, sd_in: float = 0.0, sd_out: float = 0.0) -> Lengths:
    """Lengths with these means (and standard deviations), independent."""
    e_out2 = n_out * n_out + sd_out * sd_out
    e_in2 = n_in * n_in + sd_in * sd_in
    return Lengths(
        n_in,
        n_out,
        n_in + e_out2 / (2.0 * n_out),
        e_in2 / (2.0 * n_in),
        f"{n_in:g} in / {n_out:g} out",
    )


@dataclass(frozen=True)
class Benchmark:
    """An MLPerf Inference LLM benchmark: its model, its dataset's token lengths (None where
    not published) and its (p99 TTFT, p99 TPOT) limits in seconds by scenario
    (``datasets/mlperf.yaml``)."""

    name: str
    model: str
    dataset: str
    names: tuple[str, ...]
    samples: int
    input_mean: float | None
    input_sd: float | None
    input_max: float | None
    output_mean: float | None
    output_sd: float | None
    output_max: float | None
    decode_context: float | None
    prefill_context: float | None
    limits: tuple[tuple[str, tuple[float, float]], ...]

    def limits_for(self, scenario: str) -> tuple[float, float] | None:
        return dict(self.limits).get(scenario)

    def lengths(self) -> Lengths | None:
        """The dataset's own lengths (None when a mean is not published)."""
        if None in (self.input_mean, self.output_mean, self.decode_context, self.prefill_context):
            return None
        return Lengths(
            self.input_mean,
            self.output_mean,
            self.decode_context,
            self.prefill_context,
            f"MLPerf {self.name} dataset ({self.dataset})",
            self.input_max or math.inf,
            self.output_max or math.inf,
            self.samples,
        )


_LENGTH_FIELDS = {
    "input_mean": "input_mean_tokens",
    "input_sd": "input_sd_tokens",
    "input_max": "input_max_tokens",
    "output_mean": "output_mean_tokens",
    "output_sd": "output_sd_tokens",
    "output_max": "output_max_tokens",
    "decode_context": "decode_context_tokens",
    "prefill_context": "prefill_context_tokens",
}


@lru_cache(maxsize=1)
def benchmarks() -> dict[str, Benchmark]:
    """The MLPerf LLM benchmarks of the shipped ``datasets/mlperf.yaml``, by name."""
    from ..specs.catalog import data_roots
    from ..specs.schema import check_number
    from ..specs.yamlfile import load_yaml

    found = (r / "datasets" / "mlperf.yaml" for r in data_roots())
    path = next((p for p in found if p.is_file()), None)
    if path is None:
        raise SpecError("datasets/mlperf.yaml", "", "is missing", "reinstall the package")
    out = {}
    for name, spec in load_yaml(path).get("benchmarks", {}).items():
        where = f"benchmarks.{name}"
        figures = {}
        for key, field in _LENGTH_FIELDS.items():
            value = spec.get(field)
            figures[key] = (
                None
                if value is None
                else float(
                    check_number(value, str(path), f"{where}.{field}", minimum=0, unit="tokens")
                )
            )
        for side in ("input", "output"):
            top, mean = figures[f"{side}_max"], figures[f"{side}_mean"]
            if top is not None and mean is not None and top < mean:
                raise SpecError(
                    str(path),
                    f"{where}.{side}_max_tokens",
                    f"the longest {side} ({top:g} tokens) is below the mean ({mean:g} tokens)",
                    f"give the dataset's longest {side} in tokens, at least {side}_mean_tokens",
                )
        limits = []
        for scenario, pair in (spec.get("limits") or {}).items():
            ttft = check_number(pair["ttft_p99_s"], str(path), f"{where}.limits", minimum=0)
            tpot = check_number(pair["tpot_p99_s"], str(path), f"{where}.limits", minimum=0)
            limits.append((scenario, (float(ttft), float(tpot))))
        out[name] = Benchmark(
            name=name,
            model=str(spec["model"]),
            dataset=str(spec["dataset"]),
            names=tuple(str(n).lower().replace(" ", "") for n in spec.get("names") or ()),
            samples=int(spec["samples"]),
            limits=tuple(limits),
            **figures,
        )
    return out


_MLPERF = re.compile(r"mlperf|mlcommons|inference_results", re.IGNORECASE)


def benchmark_of(model_name: str, text: str) -> Benchmark | None:
    """The MLPerf benchmark of a row: its model is the benchmark's and its text names MLPerf."""
    if not _MLPERF.search(text):
        return None
    return next((b for b in benchmarks().values() if b.model == model_name), None)


def _named_dataset(text) -> Benchmark | None:
    """The benchmark whose dataset an input_len cell names (the longest name that matches)."""
    flat = str(text).lower().replace(" ", "")
    found = [(len(n), b) for b in benchmarks().values() for n in b.names if n and n in flat]
    return max(found, key=lambda f: f[0])[1] if found else None


def lengths_of(input_text, output_text, benchmark: Benchmark | None = None) -> Lengths | str:
    """The lengths of a row, or the reason they cannot be read. Numbers are uniform lengths;
    "480 mean (sd 240)" a mean and standard deviation. A dataset named in the input cell
    (OpenOrca, OpenOrca+GSM8K+MBXP, CNN-DailyMail) or the row's MLPerf ``benchmark`` gives the
    figures the row does not state (``datasets/mlperf.yaml``); both from the dataset keep its
    measured contexts."""
    n_in, n_out = number(input_text), number(output_text)
    stated = [v for pair in (_mean_sd(input_text), _mean_sd(output_text)) if pair for v in pair]
    if not all(math.isfinite(v) for v in stated):
        return f"lengths {str(input_text)!r} / {str(output_text)!r} are not finite numbers"
    if any(v > MAX_TOKENS for v in (*stated, n_in or 0.0, n_out or 0.0)):
        return (
            f"lengths {str(input_text)!r} / {str(output_text)!r}: more than {MAX_TOKENS:g} "
            "tokens a request (check input_len and output_len)"
        )
    if n_in is not None and n_out is not None:
        if n_in < 0 or n_out <= 0:
            return f"lengths {input_text!r} / {output_text!r} are not positive"
        return uniform_lengths(max(n_in, 1.0), n_out)
    row_in, row_out = _mean_sd(input_text), _mean_sd(output_text)
    if row_out is not None and row_out[0] <= 0:
        return f"output length {output_text!r} is not positive"
    data = _named_dataset(input_text) or benchmark
    if data is None:
        if row_in is not None and row_out is not None:
            return uniform_lengths(max(row_in[0], 1.0), row_out[0], row_in[1], row_out[1])
        return f"cannot read lengths {str(input_text)!r} / {str(output_text)!r}"
    if row_in is None and row_out is None and data.lengths() is not None:
        return data.lengths()
    if row_in is None and data.input_mean is None:
        return f"the input mean of the MLPerf {data.name} dataset is not published: give input_len"
    if row_out is None and data.output_mean is None:
        cap = f" (at most {data.output_max:g} new tokens)" if data.output_max else ""
        return (
            f"the output mean of the MLPerf {data.name} dataset is not published{cap}: "
            "give output_len"
        )
    mean_in, sd_in = row_in or (data.input_mean, data.input_sd or 0.0)
    mean_out, sd_out = row_out or (data.output_mean, data.output_sd or 0.0)
    # the dataset's longest sample bounds its lengths, stated in the row or taken from the
    # dataset (a stated mean above it is not that dataset's: no bound)
    top_in, top_out = data.input_max or math.inf, data.output_max or math.inf
    return dataclasses.replace(
        uniform_lengths(max(mean_in, 1.0), mean_out, sd_in, sd_out),
        input_max=top_in if mean_in <= top_in else math.inf,
        output_max=top_out if mean_out <= top_out else math.inf,
        issued=data.samples,
    )


def _mean_sd(text) -> tuple[float, float] | None:
    """(mean, sd) of "480", "480 mean", "480 mean (sd 240)", "mean 480 (sd 240)"."""
    value = number(text)
    if value is not None:
        return value, 0.0
    m = re.match(
        r"^\s*(?:mean\s+)?([\d.,]+)(?:\s*mean)?(?:\s*\(sd\s*([\d.,]+)\))?\s*$",
        str(text),
        re.IGNORECASE,
    )
    if not m or not re.search(r"mean|sd", str(text), re.IGNORECASE):
        return None
    mean, sd = number(m.group(1)), number(m.group(2) or 0)
    return None if mean is None or sd is None else (mean, sd)


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


_MLPERF_SCENARIO = re.compile(r"\b(offline|server|interactive)\b", re.IGNORECASE)


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
        found = {name.lower() for name in _MLPERF_SCENARIO.findall(text)}
        if len(found) == 1:
            return found.pop()
    text = " ".join(texts)
    if re.search(r"static batch", text, re.IGNORECASE):
        return "static"
    if metric.quantity == "input_throughput" and re.search(r"\bprefill\b", text, re.IGNORECASE):
        return "prefill"
    batch = str(row.get("batch_or_concurrency") or "")
    if re.search(r"max load|infinite rate", batch + " " + text, re.IGNORECASE):
        return "offline"
    if lead_number(batch) is not None:
        return "closed_loop"
    return None


def lead_number(cell) -> float | None:
    """The number of a ``batch_or_concurrency`` cell: the cell itself, or its first
    ";"-piece when the others state the engine's token budget or build flags ("64;
    max_num_tokens 2048; gemm_allreduce_plugin float16")."""
    text = str(cell or "")
    head, _, rest = text.partition(";")
    if number(text) is not None or not rest:
        return number(text)
    pieces = [p for p in rest.split(";") if p.strip()]
    if all(_BUDGET.search(p) or _FUSED_FLAG.search(p) or _KV_FRACTION.search(p) for p in pieces):
        return number(head)
    return None


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
    elif lead_number(part) is not None:
        value = lead_number(part)
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
            if value is None or not _KV_TERM.minimum <= value <= _KV_TERM.maximum:
                raise SpecError(
                    where,
                    field,
                    f"kvcache_free_gpu_mem_frac {m.group(1) or '(no value)'!r} is not read",
                    f"give a fraction from {_KV_TERM.minimum:g} to {_KV_TERM.maximum:g} "
                    "(0.95, not 95%)",
                )
            found.add(value)
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


#: Engines whose batch cap counts the requests of one attention data-parallel rank, not of the
#: whole instance (the engine's own rule, with its sources: ``specs.engine``).
CAP_PER_ATTENTION_RANK = LIMITS_PER_ATTENTION_RANK


# --- limits -------------------------------------------------------------------------------------

_LIMIT = re.compile(
    r"ttft[^;|]*?(?:<=|≤|<|=)\s*([\d.]+)\s*(ms|s)\b.*?tpot[^;|]*?(?:<=|≤|<|=)\s*([\d.]+)\s*(ms|s)\b",
    re.IGNORECASE | re.DOTALL,
)


def limits_of(
    notes: str, scenario: str, benchmark: Benchmark | None = None
) -> tuple[float, float] | None:
    """(p99 TTFT, p99 TPOT) seconds a Server/Interactive row was run under: from the notes
    ("p99 TTFT<=2000ms, p99 TPOT<=200ms", the row's scenario part), else its MLPerf
    benchmark's limits for the scenario (``datasets/mlperf.yaml``); None when neither says."""
    m = _LIMIT.search(scenario_part(notes, scenario).text)
    if m:
        scale = {"ms": 1e-3, "s": 1.0}
        return (
            float(m.group(1)) * scale[m.group(2).lower()],
            float(m.group(3)) * scale[m.group(4).lower()],
        )
    return benchmark.limits_for(scenario) if benchmark is not None else None


# --- layouts ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """A layout a row states: tensor, pipeline and expert degrees, the attention's
    data-parallel ranks within the tensor group (1: tensor-parallel attention; ``tensor``: each
    GPU attends alone; "TP8 DP2 attn-DP": 2 ranks of attention TP4) and replicas (None where
    the row does not say)."""

    tensor: int
    pipeline: int = 1
    expert: int | None = None
    attention_ranks: int = 1
    replicas: int = 1

    def __post_init__(self) -> None:
        check_attention_ranks(self.tensor, self.attention_ranks)

    @property
    def attention_dp(self) -> bool:
        """Whether the attention is data-parallel (over some or all of the tensor group)."""
        return self.attention_ranks > 1

    @property
    def gpus(self) -> int:
        return self.tensor * self.pipeline * self.replicas

    def label(self) -> str:
        parts = [f"TP{self.tensor}"]
        if self.pipeline > 1:
            parts.append(f"PP{self.pipeline}")
        if self.expert:
            parts.append(f"EP{self.expert}")
        parts += attention_words(self.tensor, self.attention_ranks)
        text = " ".join(parts)
        return f"{self.replicas} x {text}" if self.replicas > 1 else text


def check_attention_ranks(tensor: int, ranks) -> None:
    """Refuse attention ranks that are not a whole number >= 1 dividing the tensor degree."""
    whole = isinstance(ranks, numbers.Integral) and not isinstance(ranks, bool)
    if not whole or ranks < 1 or tensor % ranks:
        raise ValueError(f"attention_ranks {ranks!r} is not a whole divisor of TP{tensor}")


def attention_words(tensor: int, ranks: int) -> list[str]:
    """How a layout's text states its attention's data-parallel ranks: nothing for
    tensor-parallel attention, "attn-DP" over the whole tensor group, "DP2 attn-DP" over part
    of it (what ``layout_of`` reads back)."""
    if ranks <= 1:
        return []
    return ["attn-DP"] if ranks == tensor else [f"DP{ranks}", "attn-DP"]


#: Attention data parallelism: "attn-DP", "attention-DP", "attention data parallel",
#: "DP-attention", "DP8 attention", "DPA", "--enable-dp-attention" (SGLang); a degree written
#: with it is the attention's.
_ATTENTION_DP = re.compile(
    r"(?:attn|attention)[\s_-]*(?:dp|data[\s_-]*parallel(?:ism)?)"
    # a degree after it ("attention-DP 8"), not a count of copies ("attn-DP 2 instances")
    r"(?:\s*(\d+)(?!\d|\s*(?:[x×]|instances?\b|replicas?\b|copies\b|engines?\b)))?"
    r"|dp\s*(\d*)[\s_-]*(?:attn|attention)|\bdpa\b",
    re.IGNORECASE,
)
#: Launch flags naming degrees: "--tp 8", "--tensor-parallel-size 8", "tp_size=8".
_FLAGS = {
    "TP": r"tp|tp[-_]size|tensor[-_]parallel(?:[-_]size)?",
    "PP": r"pp|pp[-_]size|pipeline[-_]parallel(?:[-_]size)?",
    "DP": r"dp|dp[-_]size|data[-_]parallel(?:[-_]size)?",
    "EP": r"ep|ep[-_]size|expert[-_]parallel(?:[-_]size)?",
}
_FLAG = re.compile(
    r"(?:--?|\b)(?:"
    + "|".join(f"(?P<{k}>{v})" for k, v in _FLAGS.items())
    + r")(?:\s*[=:]\s*|\s+)(?P<n>\d+)",
    re.IGNORECASE,
)
#: vLLM's --enable-expert-parallel: experts across every GPU of the instance.
_EXPERTS_ACROSS = re.compile(r"enable[-_]expert[-_]parallel", re.IGNORECASE)
#: Degrees written as tokens: "TP2xPP2", "TP8 (EP8)", TensorRT-LLM's "DEP8" (attention DP and
#: expert parallelism over 8 GPUs) and "TEP8" (tensor and expert parallelism).
_DEGREE = re.compile(r"(?<![A-Za-z])(DEP|TEP|TP|PP|EP|DP|CP|SP)\s*(-?\d+)", re.IGNORECASE)
_LEADING_COPIES = re.compile(r"^\s*(\d+)\s*[x×]\s*(?=[(A-Za-z])")
_COPIES = re.compile(
    r"(?<![\w.])[x×]\s*(\d+)\b|(\d+)\s*(?:instances|replicas|copies|engines)\b", re.I
)


def _degrees(
    raw: str, where: str, field: str = "parallelism"
) -> tuple[dict[str, int], bool, int | None]:
    """(degrees, attention data parallel, replica count or None) a text names: TP/PP/EP/DP
    tokens, TensorRT-LLM's DEP/TEP and launch flags. A degree below 1 or one the model does
    not read (context or sequence parallelism) is an error."""
    text = re.sub(r"(\d)\s*[x×]\s*(?=[A-Za-z])", r"\1 x ", raw)
    found: list[tuple[str, int]] = []
    attention = False
    for m in _ATTENTION_DP.finditer(text):
        attention = True
        if m.group(1) or m.group(2):
            found.append(("DP", int(m.group(1) or m.group(2))))
    text = _ATTENTION_DP.sub(" ", text)
    for m in _FLAG.finditer(text):
        found.append((next(k for k in _FLAGS if m.group(k)), int(m.group("n"))))
    text = _FLAG.sub(" ", text)
    found += [(key.upper(), int(value)) for key, value in _DEGREE.findall(text)]
    degrees: dict[str, int] = {}
    for key, v in found:
        if v < 1:
            raise SpecError(where, field, f"{key}{v} in {raw!r}", "degrees are >= 1")
        if key in ("CP", "SP"):
            if v > 1:
                raise SpecError(
                    where,
                    field,
                    f"{key}{v} in {raw!r}: context or sequence parallelism is not modelled",
                    "give the row's tensor, pipeline and expert degrees",
                )
        else:
            # DEP8: tensor, experts and the attention's ranks over 8 GPUs; TEP8: the first two
            keys = {"DEP": ("TP", "EP", "DP"), "TEP": ("TP", "EP")}.get(key, (key,))
            for k in keys:  # one degree of each kind: "TP8 TP4" is not a layout
                if degrees.get(k, v) != v:
                    raise SpecError(
                        where,
                        field,
                        f"{raw!r} names two {k} degrees ({degrees[k]} and {v})",
                        "give each degree once"
                        if field != "notes"
                        else "state the row's layout in its parallelism field",
                    )
                degrees[k] = v
            attention = attention or key == "DEP"
    if _EXPERTS_ACROSS.search(raw):
        degrees.setdefault("EP", 0)
    lead = _LEADING_COPIES.match(raw)
    rest = _COPIES.search(_DEGREE.sub(" ", _FLAG.sub(" ", text)))
    copies = lead.group(1) if lead else (next(g for g in rest.groups() if g) if rest else None)
    return degrees, attention, None if copies is None else int(copies)


def layout_of(
    text, gpus: int, where: str, field: str = "parallelism", whole: str = "the row"
) -> Layout | None:
    """The layout a text states (None: not given). "TP2", "TP4PP2", "TP2xPP2 x2", "TP1 x8"
    (eight replicas), "TP8 (EP8, attn-DP)", "TP8 DP2 attn-DP", "DP2 TP4", "DEP8", "--tp 8 --dp 8
    --enable-dp-attention". With attention data parallelism a DP degree is the attention's ranks
    (an instance spans max(TP, DP) GPUs; "TP8 DP2 attn-DP": two ranks of attention TP4; without
    a DP degree every GPU attends alone), otherwise DP counts replicas. Without a replica count an
    instance is repeated over the row's GPUs. Degrees must be whole numbers >= 1 that fit the
    row's GPUs: anything else is an error naming the field."""
    if is_missing(text):
        return None
    raw = str(text)
    degrees, attention_dp, copies = _degrees(raw, where, field)
    if not {"TP", "PP", "EP", "DP"} & set(degrees):
        if re.search(r"(?<![A-Za-z])(TP|PP|EP)\b(?!\s*\d)", _ATTENTION_DP.sub(" ", raw)):
            raise SpecError(
                where, field, f"{raw!r} names a degree without its number", "write e.g. TP8"
            )
        return None  # free text ("n/a (see configs)", "world size 8"): the operator's choice
    tp, pp, dp = degrees.get("TP", 1), degrees.get("PP", 1), degrees.get("DP", 1)
    ranks = 1
    if attention_dp:  # a DP degree stated with it is the attention's ranks, else the whole group
        ranks = dp if "DP" in degrees else tp
        tp, dp = max(tp, dp), 1
    elif degrees.get("EP") == 0 and dp > 1:
        # vLLM: data-parallel ranks of attention TP each, sharing their experts over them all
        tp, dp, ranks = tp * dp, 1, dp
    if tp % ranks:
        raise SpecError(
            where,
            field,
            f"{raw!r} splits the attention of TP{tp} into {ranks} data-parallel ranks",
            f"the attention's DP degree divides the tensor degree, e.g. TP{tp} DP{_divisor_below(tp, ranks)} attn-DP",
        )
    instance = tp * pp
    expert = degrees.get("EP") or (instance if "EP" in degrees else None)
    if copies is None and dp == 1 and gpus % instance == 0:
        replicas = gpus // instance  # "TP8" on 16 GPUs: two instances
    else:
        replicas = dp * (copies or 1)
    layout = Layout(tp, pp, expert, ranks, replicas)
    if layout.gpus != gpus:
        raise SpecError(
            where,
            field,
            f"{raw!r} uses {layout.gpus} GPUs but {whole} has {gpus}",
            f"the degrees (TP x PP x replicas) must multiply to the GPUs {whole} has",
        )
    if layout.expert is not None and layout.expert > instance:
        raise SpecError(
            where,
            field,
            f"EP{layout.expert} in {raw!r} is larger than the instance's {instance} GPUs",
            "the expert degree spans GPUs of one instance",
        )
    return layout


def _divisor_below(n: int, k: int) -> int:
    """The largest divisor of ``n`` not above ``k``."""
    return max(d for d in range(1, min(n, k) + 1) if n % d == 0)


def row_layout(parallelism, notes: str, scenario: str | None, gpus: int, where: str):
    """The layout of a row for its scenario: the ``parallelism`` cell's part for the scenario,
    else degrees or launch flags in the notes; None where neither states one. A cell that
    names layouts for other scenarios only is an error (the row's own is not stated)."""
    part = scenario_part(parallelism, scenario)
    if part.others_only:
        raise SpecError(
            where,
            "parallelism",
            f"{str(parallelism)!r} names layouts for {', '.join(part.labelled)} only, "
            f"not for this {scenario or 'unstated'} row",
            "give the row's own layout (e.g. 'Server: TP4 x2; Offline: TP8')",
        )
    layout = layout_of(part.text, gpus, where) if part.text else None
    if layout is None and notes:
        stated = notes_layout(scenario_part(notes, scenario).text)
        layout = layout_of(stated, gpus, where, "notes") if stated else None
    return layout


_NOTES_LAYOUT = re.compile(r"\b(?:layout|parallelism)\s*[:=]\s*([^;|]+)", re.IGNORECASE)
#: Launch flags (the degree flags of ``_FLAGS`` written with their dashes).
_LAUNCH = re.compile(
    r"--(?:" + "|".join(_FLAGS.values()) + r")(?:\s*[=:]\s*|\s+)\d+"
    r"|--enable-dp-attention|--enable-expert-parallel",
    re.IGNORECASE,
)


def notes_layout(notes: str) -> str:
    """The layout free-text notes state: a part labelled "layout:" or "parallelism:", else
    their launch flags ("--tp 8 --enable-dp-attention"); "" when they state none (other
    numbers in notes, "18 nodes x 4 accelerators", are not a layout)."""
    m = _NOTES_LAYOUT.search(notes)
    if m:
        return m.group(1)
    return " ".join(_LAUNCH.findall(notes))


# --- disaggregation -----------------------------------------------------------------------------

_ROLE = re.compile(r"^\s*(prefill|context|ctx|decode|generation|gen)\s*[:=]\s*(.*)$", re.I)
#: Workers described in words: "2 prefill worker(s) of 4 GPUs each (tp 4, ep 4, attention data
#: parallel); 4 decode workers of 16 GPUs each (tp 16, ep 16)".
_WORKERS = re.compile(
    r"(?P<count>\d+)\s+(?P<role>prefill|context|ctx|decode|generation|gen)\s+"
    r"(?:worker|instance|server|engine)s?(?:\(s\))?\s+of\s+(?P<gpus>\d+)\s+"
    r"(?:gpus?|accelerators?)(?:\s+each)?(?:\s*\((?P<layout>[^)]*)\))?",
    re.IGNORECASE,
)
_DECODE_BASIS = re.compile(r"per[\s-]+decode[\s_-]*gpu|/\s*decode[\s_-]*gpu", re.IGNORECASE)


def _says_disaggregated(notes: str, scenario: str | None) -> bool:
    """Whether notes say the row's run is disaggregated: "disaggregated" not tied to another
    scenario ("colocated Offline/Server ..., while disaggregated Interactive ..." says it of
    Interactive rows only)."""
    for m in _DISAGGREGATED.finditer(notes):
        named = {w.lower() for w in _MLPERF_SCENARIO.findall(m.group(0))}
        if not named or scenario in named:
            return True
    return False


#: "disaggregated" with the word before it and the three after it (where a scenario it is
#: said of would be: "Interactive disaggregated", "disaggregated prefill/decode Interactive").
_DISAGGREGATED = re.compile(r"(?:[\w/-]+\s+)?disaggregat\w*(?:\s+[\w/-]+){0,3}", re.IGNORECASE)


def disaggregation_of(
    row: dict, context: str, unit: str, gpus: int, where: str, scenario: str | None = None
):
    """(disaggregated, decode GPUs, decode layout text) of a row. A row is disaggregated when
    its ``disaggregated`` column is true, its notes say so or its parallelism gives prefill and
    decode parts ("prefill: TP4 x2; decode: TP8"; or in the notes "2 prefill workers of 4 GPUs
    each (tp 4); 4 decode workers of 16 GPUs each (tp 16, ep 16)"). Its decode GPUs come from a
    ``decode_gpus`` column, those parts, or "per decode GPU" in the unit or notes (then
    ``n_gpus`` counts the decode GPUs only); None when it does not say."""
    flag = str(row.get("disaggregated") or "").strip().lower() in ("1", "true", "yes", "y")
    parallelism = "" if is_missing(row.get("parallelism")) else str(row.get("parallelism"))
    roles, sizes = _roles(parallelism, context)
    disaggregated = flag or bool(roles) or _says_disaggregated(context, scenario)
    if not disaggregated:
        return False, None, None
    given = row.get("decode_gpus")
    if not is_missing(given):
        from ..specs.schema import check_number

        value = check_number(number(given), where, "decode_gpus", minimum=1, integer=True)
        if value > gpus:
            raise SpecError(where, "decode_gpus", f"is {value} of {gpus} GPUs", "at most n_gpus")
        return True, int(value), roles.get("decode")
    if _DECODE_BASIS.search(f"{unit} {context}"):
        return True, gpus, roles.get("decode")
    if "decode" in roles:
        span = {r: sizes.get(r) or _instance_gpus(text, where) for r, text in roles.items()}
        parts = {r: layout_of(text, span[r], where) for r, text in roles.items()}
        for role, part in parts.items():
            if part is None:
                raise SpecError(
                    where,
                    "parallelism",
                    f"{roles[role]!r}: the {role} part states no degrees",
                    "give each part's degrees and replicas (e.g. 'prefill: TP4 x2; decode: TP8 x1')",
                )
        decode = parts["decode"]
        prefill_gpus = parts["prefill"].gpus if "prefill" in parts else 0
        if decode is not None and decode.gpus + prefill_gpus == gpus:
            return True, decode.gpus, roles["decode"]
        raise SpecError(
            where,
            "parallelism",
            f"{parallelism!r}: prefill and decode GPUs do not add up to the row's {gpus}",
            "give each part's degrees and replicas (e.g. 'prefill: TP4 x2; decode: TP8 x1')",
        )
    return True, None, None


def _roles(parallelism: str, context: str) -> tuple[dict[str, str], dict[str, int]]:
    """The prefill and decode parts a row states, ({role: layout text}, {role: GPUs}): from
    its parallelism ("prefill: TP4 x2; decode: TP8") or its notes' workers ("2 prefill
    worker(s) of 4 GPUs each (tp 4, ...)")."""
    roles: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for segment in re.split(r"\s*[;|]\s*", parallelism):
        m = _ROLE.match(segment)
        if m:
            role = "prefill" if m.group(1).lower() in ("prefill", "context", "ctx") else "decode"
            roles[role] = m.group(2)
    for m in _WORKERS.finditer(context):
        role = "prefill" if m.group("role").lower() in ("prefill", "context", "ctx") else "decode"
        layout = (m.group("layout") or "").split(";")[0]
        roles.setdefault(role, f"{layout} x{m.group('count')}")
        sizes[role] = int(m.group("count")) * int(m.group("gpus"))
    return roles, sizes


def prefill_pool_of(row: dict, context: str, where: str) -> Layout | None:
    """The prefill instances a disaggregated row states ("prefill: TP4 x2" in its
    parallelism, or its notes' prefill workers), or None where it does not say."""
    parallelism = "" if is_missing(row.get("parallelism")) else str(row.get("parallelism"))
    roles, sizes = _roles(parallelism, context)
    if "prefill" not in roles:
        return None
    text = roles["prefill"]
    return layout_of(text, sizes.get("prefill") or _instance_gpus(text, where), where)


def _instance_gpus(text: str, where: str) -> int:
    """GPUs a layout text spans as written (its degrees times its replica count)."""
    degrees, attention, copies = _degrees(text, where)
    tp, pp, dp = degrees.get("TP", 1), degrees.get("PP", 1), degrees.get("DP", 1)
    if attention:
        tp, dp = max(tp, dp), 1
    return tp * pp * dp * (copies or 1)


# --- engines --------------------------------------------------------------------------------

#: Engines named in free text -> profile names; the first named in the text wins.
ENGINE_WORDS = (
    (re.compile(r"\bvllm\b", re.I), "vllm"),
    (re.compile(r"\bsglang\b", re.I), "sglang"),
    (re.compile(r"trt|tensorrt|\bnim\b", re.I), "trtllm"),
)
#: A versioned mention: the engine's own name followed by its version ("vLLM 0.6.x",
#: "vllm==0.8.5", "vllm-0.9.0", "TensorRT-LLM 0.17", "TRT-LLM v1.0", "SGLang 0.4.6.post1").
_VERSIONED = re.compile(
    r"(?P<name>\bvllm|\bsglang|tensorrt[-_ ]?llm|trt[-_ ]?llm|\btrtllm)"
    r"\s*(?:v(?:ersion)?\s*|==\s*|@\s*|\(\s*v?|-v?)?"
    r"(?P<version>\d+(?:\.\d+)*(?:\.[x*])?(?:[.+-]?(?:rc|post|dev|a|b)\d*)*)",
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
    written (None: not stated) and its platform ("cuda", "rocm", "tpu"; None: unknown)."""

    name: str | None
    version: str | None
    platform: str | None


def _version(text: str, name: str) -> str | None:
    for m in _VERSIONED.finditer(text):
        word = m.group("name").lower().replace("-", "").replace("_", "").replace(" ", "")
        engine = "trtllm" if word.startswith(("tensorrt", "trt")) else word
        if engine != name:
            continue
        version = re.sub(r"\.[x*]$", "", m.group("version")).rstrip(".")
        release = re.match(r"[\d.]*\d", version).group(0)
        if not any(int(p) for p in release.split(".") if p):
            return None  # "0.0.0.dev1+mlperf50": a placeholder, no release
        return version
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
    return EngineText(name, version, platform[1] if platform else None)


def platform_of(gpu) -> str:
    """The software platform of a GPU: ROCm on AMD Instinct parts (MI...), CUDA otherwise."""
    return "rocm" if gpu.name.upper().startswith("MI") else "cuda"


#: Speculative decoding, as a measured row's status names it (``out_of_scope``).
SPECULATIVE = "speculative decoding / multi-token prediction"
#: Features the model lacks: rows that use them are out of scope.
UNMODELLED = (
    (
        re.compile(r"speculat|\bmtp\b|multi-token|eagle|medusa|draft model|lookahead", re.I),
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
    notes = context or str(row.get("notes") or "")
    text = " ".join(str(row.get(k) or "") for k in ("precision", "model", "engine")) + " " + notes
    for pattern, what in UNMODELLED:
        if pattern.search(text):
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


def precision_of(text) -> tuple[float, float, float] | None:
    """Bits of a precision cell ("FP8", "FP8 e4m3", "FP8 likely (TRT-LLM)"); None when it is
    not stated or only guessed ("n/a", "BF16?"). A stated "KV cache fp8" sets the cache's bits."""
    raw = str(text or "")
    for m in re.finditer(r"(nvfp4|mxfp4|bf16|fp16|fp32|fp8|int8|fp4|int4|awq)(\?)?", raw, re.I):
        if m.group(2):
            return None
        weight, activation, kv = PRECISIONS[m.group(1).lower()]
        stated = _KV_FORMAT.search(raw)
        return weight, activation, _KV_BITS[stated.group(1).lower()] if stated else kv
    return None


def source_group(row: dict) -> str:
    """The source a row belongs to, for leave-one-source-out validation: the ``source_group``
    column, else the source up to its first " (" or " @"; a path into a repository is cut to
    owner/repository, or, in a results repository (a ``results`` folder, as MLPerf's), to the
    folder above ``results``: one source per submitter."""
    given = str(row.get("source_group") or "").strip()
    if given:
        return given
    text = re.split(r"\s\(|\s@", str(row.get("source") or "").strip())[0].strip()
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
