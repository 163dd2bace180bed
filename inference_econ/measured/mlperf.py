"""Prompt and output lengths of a measured row, and the MLPerf Inference LLM benchmarks that
give the lengths and latency limits a row does not state (``datasets/mlperf.yaml``): a row's
length cells read against its benchmark's dataset, and its Server/Interactive limits."""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from functools import lru_cache

from ..errors import SpecError
from ..settings import MAX_TOKENS
from .semantics import is_missing, number, scenario_part

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
    #: Distinct prompts the run drew its requests from, each sent again (a ``distinct_prompts``
    #: column; aiperf's synthetic dataset entries): the engine's prefix cache serves repeats.
    #: 0: every prompt its own.
    distinct_prompts: int = 0


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


#: A publication round of MLPerf Inference named in a row's text: the results repository
#: ("inference_results_v5.1") or the round itself ("MLPerf v5.1", "MLPerf Inference v5.1").
_ROUND = re.compile(r"(?:inference_results_v|mlperf\s+(?:inference\s+)?v)(\d+\.\d+)", re.IGNORECASE)


def round_of(text: str) -> str | None:
    """The MLPerf Inference round a row's text names ("5.1"; None: none named): the harness
    that ran it is that round's (``EngineProfile.harness_fields``' ``rounds``)."""
    m = _ROUND.search(text)
    return m.group(1) if m else None


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
    both = _input_and_output(input_text) if token_count(input_text) is None else None
    if is_missing(output_text) and both is not None:
        input_text, output_text = both  # "1K/1K", "ISL 1024 / OSL 1024" in the input cell
    n_in, n_out = token_count(input_text), token_count(output_text)
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
        if not str(input_text).strip() and not str(output_text).strip():
            return "input_len and output_len are not given: give the tokens of a prompt and of an output"
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


#: A length in thousands of tokens as engine tables and blog posts write it ("1K", "8k", "32K").
_KILO_TOKENS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*k\s*$", re.IGNORECASE)


#: Both lengths in one cell, as tables head their columns: "1K/1K", "1k-1k", "1024 / 1024",
#: "1024 in, 1024 out", "8k1k", or labelled, "ISL 1024 / OSL 1024", "ISL=4400, OSL=1200", the
#: pair under its heading's label ("ISL/OSL 1024/1024", "Sequence Length (ISL/OSL): 1K/1K") (a
#: "-" or "," between two numbers is a range or a thousands separator unless they are labelled:
#: "1,024", "1000-2000" are not two lengths).
_BOTH_LENGTHS = re.compile(
    r"^\s*(?:(?:sequence\s+lengths?\s*)?\(?\s*(?:isl\s*/\s*osl|input\s*/\s*output)\s*\)?"
    r"\s*[=:]?\s*)?(\d+(?:\.\d+)?\s*k?)\s*(?:in\b)?\s*/\s*(\d+(?:\.\d+)?\s*k?)\s*(?:out\b)?\s*$"
    r"|^\s*isl\s*[=:]?\s*(\d+(?:\.\d+)?\s*k?)\s*[/,-]\s*osl\s*[=:]?\s*(\d+(?:\.\d+)?\s*k?)\s*$"
    r"|^\s*(\d+k)\s*[-,]?\s*(\d+k)\s*$|^\s*(\d+)\s*in\s*[,/-]\s*(\d+)\s*out\s*$",
    re.IGNORECASE,
)


def _input_and_output(text) -> tuple[str, str] | None:
    """(input, output) a cell writes together (``_BOTH_LENGTHS``), else None."""
    m = _BOTH_LENGTHS.match(str(text))
    if m is None:
        return None
    found = [g for g in m.groups() if g]
    return found[0], found[1]


def token_count(text) -> float | None:
    """A length in tokens: a plain number, or "1K" / "8k" as 1,024 and 8,192 (the runs such
    tables call 1K/1K and 8K/1K are 1,024 and 8,192 tokens: TensorRT-LLM's performance overview
    and blogs, SemiAnalysis' InferenceMAX); None where it is neither."""
    value = number(text)
    if value is not None:
        return value
    m = _KILO_TOKENS.match(str(text))
    return float(m.group(1)) * 1024.0 if m else None


def _mean_sd(text) -> tuple[float, float] | None:
    """(mean, sd) of "480", "8K", "480 mean", "480 mean (sd 240)", "mean 480 (sd 240)"."""
    value = token_count(text)
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
