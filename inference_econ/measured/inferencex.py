"""InferenceX (SemiAnalysis' InferenceMAX) results as measured rows: the summary its harness
writes of each run (``utils/process_result.py``, ``agg_<run>.json``), a list of them
(``utils/collect_results.py``), or the same with the figures under ``metrics`` (the rows of its
results site). Recognised by their content: ``hw`` (or ``hardware``) and ``conc``.

A summary names everything a row needs: the model (``model``, else ``infmax_model_prefix``), the
runner (``hw``: "h200", "b200-nscale", "cluster:gb200-nv"; its GPU is the name before the
site), the layout (``tp``, ``ep``, ``dp_attention``, ``pp``; disaggregated runs their
``prefill_*`` and ``decode_*`` workers), the precision, the framework and its container image
(the engine's release where the image is the engine's own), ``isl``, ``osl`` and ``conc``.
What it leaves out is the harness's (github.com/SemiAnalysisAI/InferenceX, read at 843c6254):

* lengths: ``benchmark_serving.py --dataset-name random --random-range-ratio 0.8``
  (RANDOM_RANGE_RATIO in ``.github/workflows/benchmark-tmpl.yml``), each prompt and output
  drawn uniformly from int(0.8 x L) to L tokens, outputs run to their length (``--ignore-eos``);
* requests: ``--num-prompts $((CONC * 10))`` in every single-node benchmark script, a closed
  loop of ``conc`` clients (``--request-rate inf --max-concurrency CONC``), after 2 x CONC
  warm-up requests the figures leave out.

Throughputs are per GPU as the harness divides them: a single-node run's by its
tp x pp x pcp GPUs; a disaggregated run's output by its decode GPUs, input by its prefill GPUs
and total by all (``tput_per_gpu`` of summaries older than ``is_multinode``, which divided by a
count it does not state, is left out). Latencies are in seconds. ``*_intvty`` is 1000 / TPOT in
ms, the TPOT rows restated (a "p99" of it is the 99th percentile TPOT's, not a speed's), and
``std_*`` no statistic the model gives: both are left out.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from ..errors import SpecError, short
from .result_fields import Unusable, checked, number, rows_of, section, unresolved_rows

#: The harness's lengths: uniform from int(RANGE_RATIO x L) to L (benchmark-tmpl.yml).
RANGE_RATIO = 0.8
#: Requests a single-node run sends per client (``--num-prompts $((CONC * 10))``).
PROMPTS_PER_CLIENT = 10
#: InferenceX runner names (``configs/runners.yaml``: the part before a site, "-cw", "-nb",
#: "-dgxc", "-nscale", "-multinode", "-disagg") -> the catalog's GPU.
RUNNERS = {
    "h100": "H100-SXM",
    "h200": "H200-SXM",
    "b200": "B200-HGX",
    "b300": "B300-HGX",
    "gb200": "GB200-NVL72",
    "gb300": "GB300-NVL72",
    "mi300x": "MI300X",
    "mi325x": "MI325X",
    "mi355x": "MI355X",
    "rtx6000pro": "RTX-PRO-6000-BSE",
}
#: The results site's model keys (InferenceX-app ``DB_MODEL_TO_DISPLAY``) -> catalog names; a
#: model the catalog lacks (Qwen3.5, Kimi K2.5, MiniMax M2.5, GLM-5) is left as written.
MODELS = {
    "dsr1": "DeepSeek-R1",
    "gptoss": "gpt-oss-120b",
    "gptoss120b": "gpt-oss-120b",
    "llama70b": "Llama 3.3 70B",
}
#: InferenceX frameworks -> the engine that runs the model (Dynamo and llm-d route to it).
FRAMEWORKS = {
    "vllm": "vllm",
    "sglang": "sglang",
    "trt": "trtllm",
    "sglang-disagg": "sglang",
    "dynamo-trt": "trtllm",
    "dynamo-sglang": "sglang",
    "dynamo-vllm": "vllm",
    "llmd-vllm": "vllm",
    "mori-sglang": "sglang",
}
#: The latencies read (seconds), by the harness's key ``<statistic>_<quantity>``: mean, median
#: or a percentile ("p99", "p99.9") of TTFT, TPOT, ITL or end-to-end latency.
_LATENCY_KEY = re.compile(r"^(mean|median|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)$")


def is_inferencex(run: dict) -> bool:
    """Whether a JSON object is an InferenceX run summary: its runner or GPU (``hw``, the
    site's ``hardware``) and its clients (``conc``), keys no other tool's result writes."""
    return ("hw" in run or "hardware" in run) and "conc" in run


def inferencex_rows(run: dict, path: Path, i: int, at: str) -> list:
    """The rows of one InferenceX run summary (``at``: its fields' prefix, "[3]." in a list)."""
    figures = section(run.get("metrics"), path, at + "metrics", dict)
    inner = at + "metrics." if figures is not None else at
    figures = run if figures is None else figures
    base, why = _base(run, path, i, at)
    disaggregated = base["disaggregated"] == "true"
    metrics = _metrics(run, figures, path, inner, disaggregated)
    if why is not None:
        return unresolved_rows(base, metrics, why, "the summary")
    try:
        n_in = _lengths(run, "isl", path, at)
        n_out = _lengths(run, "osl", path, at)
        clients = number(run.get("conc"), path, at + "conc", required=True)
    except Unusable as exc:
        return unresolved_rows(base, metrics, exc, "the summary")
    assert clients is not None  # (``required``)
    requests = None if disaggregated else PROMPTS_PER_CLIENT * clients
    note = (
        f"InferenceX: closed loop of {clients:g} clients, lengths uniform from "
        f"{RANGE_RATIO:g} x isl/osl to isl/osl (its harness's --random-range-ratio)"
    )
    return rows_of(base, metrics, (n_in, n_out), f"{clients:g}", note, "the summary", requests)


def _lengths(run: dict, key: str, path: Path, at: str) -> str:
    """A length as the harness draws it from ``run[key]`` = L: uniform whole numbers from
    int(0.8 L) to L, written as its mean and standard deviation ("921.5 mean (sd 59.5)")."""
    top = number(run.get(key), path, at + key, required=True)
    assert top is not None  # (``required``)
    if top != int(top):
        raise Unusable(str(path), at + key, f"is {short(run.get(key))}", "a whole number")
    low = int(top * RANGE_RATIO)
    n = top - low + 1
    return f"{(low + top) / 2:.10g} mean (sd {math.sqrt((n * n - 1) / 12):.4g})"


def _metrics(run: dict, figures: dict, path: Path, at: str, disaggregated: bool) -> list:
    """(metric, ``checked`` value, unit) of every figure the summary holds that a row reads."""
    out = []
    for key, name in (  # a disaggregated run's output is per decode GPU, input per prefill GPU
        ("output_tput_per_gpu", "output_tput_per_decode_gpu" if disaggregated else None),
        ("input_tput_per_gpu", "skip" if disaggregated else None),
        ("tput_per_gpu", "skip" if disaggregated and not _all_gpus(run) else None),
    ):
        if figures.get(key) is not None and name != "skip":  # null: not measured
            value = checked(number, figures[key], path, at + key)
            out.append((name or key, value, "tokens/s"))
    for key, value in figures.items():
        m = _LATENCY_KEY.match(key) if isinstance(key, str) else None
        if value is None or not m or (m.group(1) == "p50" and f"median_{m.group(2)}" in figures):
            continue  # null, another key, or p50 beside median (the same figure)
        out.append((key, checked(number, value, path, at + key), "s"))
    if not out:  # a run with no figure is still reported, with its reason
        why = Unusable(str(path), at + "output_tput_per_gpu", "is not given: the run has no figure",
                       "give the summary as the harness wrote it")  # fmt: skip
        out.append(("output_tput_per_gpu", why, "tokens/s"))
    return out


#: The day InferenceX's disaggregated summaries began dividing ``tput_per_gpu`` by all their
#: GPUs and writing ``is_multinode`` (utils/process_result.py at 93e1b3ca, 2025-12-05).
ALL_GPUS_SINCE = "2025-12-05"


def _all_gpus(run: dict) -> bool:
    """Whether a disaggregated run's ``tput_per_gpu`` is over all its GPUs: its summary writes
    ``is_multinode``, or the results site dates it on or after ``ALL_GPUS_SINCE``."""
    if "hw" in run:
        return "is_multinode" in run
    return isinstance(run.get("date"), str) and run["date"][:10] >= ALL_GPUS_SINCE


def _count(run: dict, key: str, path: Path, at: str) -> int:
    """A whole count of the summary (GPUs, workers, a degree); 0 where it is not given. A
    count of the wrong type is the file's error; one that is no whole number >= 0 is
    ``Unusable`` (the run's rows give it as their reason)."""
    value = number(run.get(key), path, at + key, zero=True)
    if value is None:
        return 0
    if value != int(value):
        raise Unusable(str(path), at + key, f"is {short(run.get(key))}", "a whole number")
    return int(value)


def _flag(value) -> bool:
    """A harness switch as the summary writes it: true/false, or the text of one."""
    return value is True or str(value).strip().lower() in ("true", "1", "yes")


def _layout(run: dict, prefix: str, engine: str, where: tuple) -> tuple[str, int]:
    """One worker's layout in the measured format's words and its GPUs (``where``: the
    file and the run's prefix, for a count's errors)."""
    tp, ep = _count(run, prefix + "tp", *where), _count(run, prefix + "ep", *where) or 1
    pp = _count(run, prefix + "pp", *where) or 1
    dp_attention = _flag(run.get(prefix + "dp_attention"))
    split = f"TP{tp}" + (f"PP{pp}" if pp > 1 else "")
    if dp_attention and engine == "vllm":
        text = f"DP{tp} EP{ep}"  # --data-parallel-size TP --enable-expert-parallel
    elif dp_attention:
        text = f"{split} (EP{ep}, attn-DP)"  # every GPU attends alone
    else:
        text = f"{split} EP{ep}" if ep > 1 else split
    return text, tp * pp


def _topology(run: dict, engine: str, where: tuple) -> tuple[str, int, int, bool]:
    """(layout text, GPUs, decode GPUs, disaggregated) of a run: a single-node run's one
    instance, or a multi-node run's prefill and decode workers (an aggregated multi-node run,
    no decode GPUs: its workers serve both). The results site's rows (``hardware`` for
    ``hw``) state a single-node run's layout as its ``decode_*`` fields."""
    site = "hw" not in run
    multinode = _flag(run.get("is_multinode")) or (
        _flag(run.get("disagg")) if site else "num_decode_gpu" in run
    )
    if not multinode:
        prefix = "decode_" if site and "tp" not in run else ""
        layout, gpus = _layout(run, prefix, engine, where)
        return layout, gpus * (_count(run, "pcp_size", *where) or 1), 0, False
    decode_gpus = _count(run, "num_decode_gpu", *where)
    prefill, _ = _layout(run, "prefill_", engine, where)
    workers = _count(run, "prefill_num_workers", *where) or 1
    prefill += f" x{workers}" if workers > 1 else ""
    if not decode_gpus:
        return prefill, _count(run, "num_prefill_gpu", *where), 0, False
    decode, _ = _layout(run, "decode_", engine, where)
    count = _count(run, "decode_num_workers", *where) or 1
    decode += f" x{count}" if count > 1 else ""
    gpus = _count(run, "num_prefill_gpu", *where) + decode_gpus
    return f"prefill: {prefill}; decode: {decode}", gpus, decode_gpus, True


def _unreadable(run: dict, path: Path, at: str, gpus: int) -> Unusable | None:
    """Why the model cannot read the run (None: it can): a trace replay, context parallelism
    of the KV cache, pools on two kinds of GPU, or no GPUs stated."""

    def why(key: str, problem: str, fix: str) -> Unusable:
        return Unusable(str(path), at + key, problem, fix)

    kind = str(run.get("benchmark_type") or "").strip().lower()
    if kind == "agentic_traces":
        return why(
            "benchmark_type",
            "is agentic_traces: a trace replay, whose requests' lengths the summary does not give",
            "compare its fixed-length runs",
        )
    for key in ("dcp_size", "pcp_size", "prefill_dcp_size", "decode_dcp_size"):
        if _count(run, key, path, at) > 1:
            return why(
                key,
                f"is {short(run.get(key))}: context parallelism of the KV cache is not modelled",
                "compare runs without it",
            )
    pools = {str(run.get(k) or "").lower() for k in ("prefill_hw", "decode_hw")} - {""}
    if len(pools) > 1:
        return why(
            "prefill_hw",
            f"names pools on two kinds of GPU ({', '.join(sorted(pools))})",
            "a measured row names one GPU: compare runs on one",
        )
    if not gpus:
        return why("tp", "states no GPUs", "give the summary as the harness wrote it")
    return None


def _base(run: dict, path: Path, i: int, at: str) -> tuple[dict, Unusable | None]:
    """The columns every row of the run shares, and why the run cannot be read (None: it can)."""
    text = {k: _text(run, k, path, at) for k in ("hw", "hardware", "framework", "precision")}
    image = _text(run, "image", path, at).replace("#", "/")  # artifact names write "/" as "#"
    written = _text(run, "model", path, at)  # a checkpoint ("nvidia/DeepSeek-R1-0528-FP4-V2")
    model = _model(_text(run, "infmax_model_prefix", path, at), written)
    runner = re.sub(r"^cluster:", "", (text["hw"] or text["hardware"]).strip().lower())
    gpu = RUNNERS.get(re.split(r"[-_]", runner, maxsplit=1)[0], text["hw"] or text["hardware"])
    framework = text["framework"].strip().lower()
    engine = FRAMEWORKS.get(framework, framework)
    try:
        layout, gpus, decode_gpus, disaggregated = _topology(run, engine, (path, at))
        why = _unreadable(run, path, at, gpus)
    except Unusable as exc:  # a count that is no whole number: the run's reason
        layout, gpus, decode_gpus, disaggregated, why = "", 0, 0, False, exc
    notes = [f"InferenceX {framework or 'framework not stated'}"]
    if image:
        notes.append(f"image {image}")
    spec = str(run.get("spec_decoding") or run.get("spec_method") or "").strip().lower()
    if spec not in ("", "none", "false", "off", "0"):
        notes.append(f"speculative decoding: {spec}")
    if isinstance(run.get("date"), str):
        notes.append(f"run of {run['date']}")
    base = {
        "model": model,
        "hardware": gpu,
        "n_gpus": str(gpus) if gpus else "n/a",
        "parallelism": layout,
        "precision": _precision(text["precision"], written),
        "engine": engine,
        "disaggregated": "true" if disaggregated else "",
        "notes": "; ".join(notes),
        "scenario": "closed_loop",
        "source": f"InferenceX result {path.name}" + (f" [{i}]" if at else ""),
        "source_group": f"InferenceX {path.name}",
    }
    if disaggregated:
        base["decode_gpus"] = str(decode_gpus)
    return base, why


def _model(prefix: str, written: str) -> str:
    """The model a run served: its prefix where the catalog knows it ("dsr1", "gptoss",
    "llama70b-fp8"; the harness's served name may be a local path or a server's own), else
    the model as written, else the prefix (InferenceX-app's ``resolveModelKey`` order)."""
    key = re.sub(r"-(?:fp4|fp8|mxfp4|nvfp4)(?:-.*)?$", "", prefix.strip().lower())
    return MODELS.get(key) or MODELS.get(written.strip().lower()) or written or prefix


def _precision(precision: str, model: str) -> str:
    """The precision's word: the model's own where its name says the format (an MXFP4 or NVFP4
    checkpoint run as "fp4")."""
    named = re.search(r"(?i)(mxfp4|nvfp4|mxfp8)", model)
    return named.group(1).upper() if named else precision.upper()


def _text(run: dict, key: str, path: Path, at: str) -> str:
    """A name of the summary (its runner, model, framework): text, or the file's error."""
    value = run.get(key)
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        raise SpecError(
            str(path),
            at + key,
            f"expected text, got {short(value)}",
            "give the summary as the harness wrote it",
        )
    return str(value)
