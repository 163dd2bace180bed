"""What the fields of a measured-benchmark row mean: metrics, scenarios, datasets, layouts,
limits and engines, read from the free text benchmark tables use (docs/user-guide.md,
"Measured results: the CSV format"). Plain functions from text to typed values; no numbers are
predicted here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ...errors import SpecError


@dataclass(frozen=True)
class Metric:
    """A metric name's meaning: the quantity, whether it is per GPU, its unit scale to SI
    (seconds, tokens/s, bytes/s, FLOP/s) and whether it is a micro-benchmark."""

    quantity: str
    per_gpu: bool = False
    micro: bool = False


#: Metric names (case-insensitive) -> quantity. Throughputs are output tokens per second.
METRICS = {
    "throughput_total": Metric("throughput"),
    "throughput": Metric("throughput"),
    "output_throughput": Metric("throughput"),
    "tokens_per_s": Metric("throughput"),
    "throughput_per_gpu": Metric("throughput", per_gpu=True),
    "mean_tpot": Metric("tpot"),
    "tpot": Metric("tpot"),
    "tpot_mean": Metric("tpot"),
    "p99_tpot": Metric("tpot_p99"),
    "tpot_p99": Metric("tpot_p99"),
    "itl_mean": Metric("itl"),
    "itl": Metric("itl"),
    "mean_itl": Metric("itl"),
    "mean_ttft": Metric("ttft"),
    "ttft": Metric("ttft"),
    "ttft_mean": Metric("ttft"),
    "ttft_batch1": Metric("ttft_single"),
    "per_user_decode_speed": Metric("user_speed"),
    "per_user_token_speed": Metric("user_speed"),
    "tokens_per_s_per_user": Metric("user_speed"),
    "output_tokens_per_s_per_request": Metric("user_speed"),
    "output_tokens_per_s_median": Metric("user_speed"),
    "implied_concurrent_streams": Metric("streams"),
    "busbw": Metric("busbw", micro=True),
    "tflops": Metric("gemm_flops", micro=True),
    "copy / triad / dot": Metric("stream", micro=True),
}
#: Quantities measured in time: unit "ms" or "s"; the rest are rates.
TIMES = ("tpot", "tpot_p99", "itl", "ttft", "ttft_single")
#: Scenarios (the ``scenario`` column, or inferred from the text).
SCENARIOS = ("offline", "server", "interactive", "closed_loop", "static", "single", "micro")


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


#: Named datasets a row may give instead of numbers: MLPerf Inference v4.1's (token lengths of
#: the MLCommons reference pickles, summarised by openshift-psap/performance-dashboard
#: mlperf-data/summaries; Llama 2 70B outputs at the reference's 294.45 tokens per sample).
DATASETS = {
    "openorca+gsm8k+mbxp": Lengths(427.39, 144.84, 554.88, 340.03, "MLPerf Mixtral 8x7B dataset"),
    "openorca": Lengths(222.33, 294.45, 437.98, 177.31, "MLPerf Llama 2 70B (OpenOrca)"),
}

#: MLPerf Inference latency limits (p99 TTFT, p99 TPOT) by scenario (the benchmark's rules).
MLPERF_LIMITS = {"server": (2.0, 0.2), "interactive": (0.45, 0.04)}

_NA = re.compile(r"^\s*(n/?a|na|none|unknown|-|\?)?\s*$", re.IGNORECASE)


def is_missing(text) -> bool:
    """Empty or n/a: the row does not say."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return True
    return bool(_NA.match(str(text)))


def metric_of(name: str) -> Metric | None:
    return METRICS.get(str(name).strip().lower())


def number(text) -> float | None:
    """A plain number (None if the text is not one)."""
    try:
        value = float(str(text).strip().replace(",", ""))
    except ValueError:
        return None
    return value


def lengths_of(input_text, output_text) -> Lengths | str:
    """The lengths of a row, or the reason they cannot be read. Numbers are uniform lengths;
    "480 mean (sd 240)" a mean and standard deviation; a known dataset name (OpenOrca,
    OpenOrca+GSM8K+MBXP) gives both lengths unless the output is a plain number."""
    n_in, n_out = number(input_text), number(output_text)
    if n_in is not None and n_out is not None:
        if n_in < 0 or n_out <= 0:
            return f"lengths {input_text!r} / {output_text!r} are not positive"
        return uniform_lengths(max(n_in, 1.0), n_out)
    text = str(input_text).lower().replace(" ", "")
    for key, lengths in DATASETS.items():
        if key in text:
            if n_out is not None and n_out > 0:
                return uniform_lengths(lengths.input_mean, n_out)
            return lengths
    mean_in, sd_in = _mean_sd(input_text)
    mean_out, sd_out = _mean_sd(output_text)
    if mean_in is not None and mean_out is not None and mean_out > 0:
        return uniform_lengths(mean_in, mean_out, sd_in, sd_out)
    return f"cannot read lengths {str(input_text)!r} / {str(output_text)!r}"


def _mean_sd(text) -> tuple[float | None, float]:
    value = number(text)
    if value is not None:
        return value, 0.0
    m = re.match(r"^\s*([\d.]+)\s*mean(?:\s*\(sd\s*([\d.]+)\))?\s*$", str(text), re.IGNORECASE)
    if not m:
        return None, 0.0
    return float(m.group(1)), float(m.group(2) or 0.0)


@dataclass(frozen=True)
class Layout:
    """A layout a row states: tensor, pipeline and expert degrees, attention data parallelism
    and replicas (None where the row does not say)."""

    tensor: int
    pipeline: int = 1
    expert: int | None = None
    attention_dp: bool = False
    replicas: int = 1

    @property
    def gpus(self) -> int:
        return self.tensor * self.pipeline * self.replicas

    def label(self) -> str:
        parts = [f"TP{self.tensor}"]
        if self.pipeline > 1:
            parts.append(f"PP{self.pipeline}")
        if self.expert:
            parts.append(f"EP{self.expert}")
        if self.attention_dp:
            parts.append("attn-DP")
        text = " ".join(parts)
        return f"{self.replicas} x {text}" if self.replicas > 1 else text


_DEGREE = re.compile(r"\b(TP|PP|EP|DP)\s*(-?\d+)", re.IGNORECASE)


def layout_of(text, gpus: int, where: str) -> Layout | None:
    """The layout a ``parallelism`` cell states (None: not given). "TP2", "TP4PP2", "TP1 x8"
    (eight replicas), "TP8 (EP8, attn-DP)", "DP2 TP4". Degrees must be whole numbers >= 1 and
    multiply to the row's GPUs: anything else is an error (exit 2)."""
    if is_missing(text):
        return None
    raw = str(text)
    found = _DEGREE.findall(raw.replace("TP", " TP").replace("PP", " PP").replace("EP", " EP"))
    if not found:
        return None  # free text ("n/a (see configs)", "world size 8"): the operator's choice
    degrees: dict[str, int] = {}
    for key, value in found:
        v = int(value)
        if v < 1:
            raise SpecError(
                where, "parallelism", f"{key.upper()}{v} in {raw!r}", "degrees are >= 1"
            )
        degrees[key.upper()] = v
    reps = re.search(r"[x×]\s*(\d+)", raw)
    replicas = degrees.get("DP", 1) * (int(reps.group(1)) if reps else 1)
    tp = degrees.get("TP", 1)
    pp = degrees.get("PP", 1)
    attention_dp = bool(re.search(r"attn[- ]?dp|dp[- ]?attention|dpa\b", raw, re.IGNORECASE))
    layout = Layout(tp, pp, degrees.get("EP"), attention_dp, replicas)
    if layout.gpus != gpus:
        raise SpecError(
            where,
            "parallelism",
            f"{raw!r} uses {layout.gpus} GPUs but the row has n_gpus {gpus}",
            "the degrees (TP x PP x replicas) must multiply to n_gpus",
        )
    if layout.expert is not None and layout.expert > tp * pp:
        raise SpecError(
            where,
            "parallelism",
            f"EP{layout.expert} in {raw!r} is larger than the instance's {tp * pp} GPUs",
            "the expert degree spans GPUs of one instance",
        )
    return layout


def scenario_of(row: dict, metric: Metric) -> str | None:
    """The scenario of a row: the ``scenario`` column, else read from the text (MLPerf's
    Offline/Server/Interactive in the model or notes, static batching, a benchmark at maximum
    load, a concurrency sweep). None when nothing says."""
    given = str(row.get("scenario") or "").strip().lower().replace("-", "_").replace(" ", "_")
    if given:
        return given
    if metric.micro:
        return "micro"
    if metric.quantity == "ttft_single":
        return "single"
    text = " ".join(str(row.get(k) or "") for k in ("model", "notes", "source"))
    for name in ("offline", "server", "interactive"):
        if re.search(rf"\b{name}\b", text, re.IGNORECASE):
            return name
    if re.search(r"static batch", text, re.IGNORECASE):
        return "static"
    batch = str(row.get("batch_or_concurrency") or "")
    if re.search(r"max load|infinite rate", batch + " " + text, re.IGNORECASE):
        return "offline"
    if number(batch) is not None:
        return "closed_loop"
    return None


def batch_of(text) -> tuple[float | None, dict]:
    """(concurrency or batch, engine batch caps by scenario) of ``batch_or_concurrency``:
    a number, or "max batch 896 (Off) / 1024 (Server)", "CUDA graphs up to 8192"."""
    value = number(text)
    if value is not None:
        return value, {}
    raw = str(text or "")
    caps: dict = {}
    m = re.search(r"max batch\s+(\d+)(?:\s*\(off\w*\)\s*/\s*(\d+)\s*\(server\))?", raw, re.I)
    if m:
        caps["offline"] = float(m.group(1))
        caps["server"] = float(m.group(2) or m.group(1))
    m = re.search(r"up to\s+(\d+)", raw, re.IGNORECASE)
    if m and not caps:
        caps["offline"] = caps["server"] = float(m.group(1))
    return None, caps


def limits_of(notes: str, scenario: str) -> tuple[float, float] | None:
    """(p99 TTFT, p99 TPOT) seconds a Server/Interactive row was run under: from the notes
    ("p99 TTFT<=2000ms, p99 TPOT<=200ms"), else MLPerf's limits for the scenario."""
    m = re.search(
        r"ttft\s*<=\s*([\d.]+)\s*(ms|s).*?tpot\s*<=\s*([\d.]+)\s*(ms|s)", str(notes), re.I
    )
    if m:
        scale = {"ms": 1e-3, "s": 1.0}
        return float(m.group(1)) * scale[m.group(2).lower()], float(m.group(3)) * scale[
            m.group(4).lower()
        ]
    return MLPERF_LIMITS.get(scenario)


#: Engines named in free text -> profile names (the first that matches).
ENGINE_WORDS = (
    (re.compile(r"\bvllm\b", re.I), "vllm"),
    (re.compile(r"\bsglang\b", re.I), "sglang"),
    (re.compile(r"trt|tensorrt|\bnim\b|trtllm", re.I), "trtllm"),
)
#: Features the model lacks: rows that use them are out of scope.
UNMODELLED = (
    (
        re.compile(r"speculat|\bmtp\b|multi-token|eagle|medusa|draft model|lookahead", re.I),
        "speculative decoding / multi-token prediction",
    ),
)


def engine_of(row: dict) -> str | None:
    given = str(row.get("engine") or "").strip()
    if given and not is_missing(given):
        return given
    text = " ".join(str(row.get(k) or "") for k in ("precision", "notes", "source", "hardware"))
    for pattern, name in ENGINE_WORDS:
        if pattern.search(text):
            return name
    return None


_VERSION_AFTER = re.compile(
    r"(?:vllm|sglang|tensorrt[- ]?llm|trt[- ]?llm)[\s:=v]*(\d+\.\d+(?:\.\d+)?(?:[.\w+-]*)?)",
    re.IGNORECASE,
)


def engine_version_of(row: dict) -> str | None:
    """The engine's version: the ``engine_version`` column, else the number written after the
    engine's name in the notes or precision ("vLLM 0.4.3+rocm614" -> "0.4.3+rocm614")."""
    given = str(row.get("engine_version") or "").strip()
    if given and not is_missing(given):
        return given
    text = " ".join(str(row.get(k) or "") for k in ("engine", "notes", "precision"))
    m = _VERSION_AFTER.search(text)
    return m.group(1) if m else None


def platform_of_row(row: dict) -> str | None:
    """The ``platform`` column (cuda, rocm), lower-cased; None when not given."""
    given = str(row.get("platform") or "").strip().lower()
    return given if given and not is_missing(given) else None


def unmodelled_of(row: dict) -> str | None:
    text = " ".join(str(row.get(k) or "") for k in ("precision", "notes", "model", "engine"))
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


def precision_of(text) -> tuple[float, float, float] | None:
    """Bits of a precision cell ("FP8", "FP8 e4m3", "FP8 likely (TRT-LLM)"); None when it is
    not stated or only guessed ("n/a", "BF16?")."""
    raw = str(text or "")
    for m in re.finditer(r"(nvfp4|mxfp4|bf16|fp16|fp32|fp8|int8|fp4|int4|awq)(\?)?", raw, re.I):
        if m.group(2):
            return None
        return PRECISIONS[m.group(1).lower()]
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
