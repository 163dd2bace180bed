"""InferenceX (SemiAnalysis' InferenceMAX) results as measured rows: the summary its harness
writes of each run (``utils/process_result.py``, ``agg_<run>.json``), a list of them
(``utils/collect_results.py``), or the same with the figures under ``metrics`` (the rows of its
results site). Recognised by their content: ``hw`` (or ``hardware``) and ``conc``.

A summary names everything a row needs: the model (``infmax_model_prefix``, else ``model``), the
runner (``hw``: "h200", "b200-nscale", "cluster:gb200-nv"; its GPU is the name before the
site), the layout (``tp``, ``ep``, ``dp_attention``, ``pp``; disaggregated runs their
``prefill_*`` and ``decode_*`` workers), the precision, the framework and its container image
(the engine's release where the image is the engine's own), ``isl``, ``osl`` and ``conc``.
What it leaves out is the harness's (github.com/SemiAnalysisAI/InferenceX, read at 843c6254):

* lengths: ``benchmark_serving.py --dataset-name random --random-range-ratio 0.8``
  (RANDOM_RANGE_RATIO in ``.github/workflows/benchmark-tmpl.yml``), each prompt and output
  drawn uniformly from int(0.8 x L) to L tokens, outputs run to their length (``--ignore-eos``);
* TensorRT-LLM's attention-DP balancing, which its single-node scripts switch on wherever they
  run attention DP (``HARNESS_BALANCING``): stated in the rows' notes, and replayed;
* requests: ``--num-prompts $((CONC * 10))`` in every single-node benchmark script, a closed
  loop of ``conc`` clients (``--request-rate inf --max-concurrency CONC``), after 2 x CONC
  warm-up requests the figures leave out.

Throughputs are per GPU as the harness divides them: a single-node run's by its tp x pp GPUs
(prompt context parallelism, ``pcp_size`` above 1, is not modelled); a disaggregated run's output by its decode GPUs, input by its prefill GPUs
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
from ..load.engine import ADP_BALANCING_DEFAULTS, balancing_words
from ..settings import MAX_TOKENS
from .result_fields import Unusable, checked, number, rows_of, section, unresolved_rows

#: The harness's lengths: uniform from int(RANGE_RATIO x L) to L (benchmark-tmpl.yml).
RANGE_RATIO = 0.8
#: Requests a single-node run sends per client (``--num-prompts $((CONC * 10))``).
PROMPTS_PER_CLIENT = 10
#: The most clients a run is read with: its requests stay within the measured format's 10^9.
MAX_CLIENTS = 1e8
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
#: TensorRT-LLM's attention-DP balancing (wait, timeout steps) the harness's single-node scripts
#: switch on wherever they run attention DP, by model: ``attention_dp_config`` in the
#: repository's SemiAnalysisAI/InferenceX/benchmarks/single_node/fixed_seq_len/``dsr1_*_trt*.sh``
#: (``batching_wait_iters: 0, enable_balance: true, timeout_iters: 60``, since ec90f3fe7,
#: 2025-09-18) and
#: ``gptoss_fp4_*_trt.sh`` (``enable_balance: true`` alone, TensorRT-LLM's default counts,
#: since 28e5a01ea, 2025-09-19), as at 843c6254; a run states it in its notes for the reader.
HARNESS_BALANCING = {"DeepSeek-R1": (0, 60), "gpt-oss-120b": ADP_BALANCING_DEFAULTS}
#: Sizes the results site keeps under ``metrics``, its configurations having no column for
#: them (InferenceX-app ``benchmark-mapper.ts``: keys outside NON_METRIC_KEYS are figures).
SITE_SIZES = tuple(
    f"{role}{key}" for role in ("", "prefill_", "decode_") for key in ("pp", "dcp_size", "pcp_size")
)
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


#: Keys only InferenceX's harness writes in a run summary (utils/process_result.py): an object
#: with ``conc`` and one of them but no runner is a summary missing its ``hw``.
_SUMMARY_KEYS = (
    "infmax_model_prefix",
    "tput_per_gpu",
    "output_tput_per_gpu",
    "input_tput_per_gpu",
    "is_multinode",
    "dp_attention",
)


def refuse_missing_runner(run, path: Path, at: str) -> None:
    """Refuse an InferenceX run summary without its runner (``hw``; the site's rows name it
    ``hardware``), in one line naming the file, the field and the fix: it had been read as no
    tool's result (one summary) or as another tool's run beside InferenceX's (a list)."""
    if not isinstance(run, dict) or "hw" in run or "hardware" in run or "conc" not in run:
        return
    if any(key in run for key in _SUMMARY_KEYS):
        raise SpecError(
            str(path),
            at + "hw",
            "is missing: an InferenceX run summary names the runner it ran on",
            'add "hw", the runner as the harness writes it: "h200", "b200-nscale"',
        )


def inferencex_rows(run: dict, path: Path, i: int, at: str) -> list:
    """The rows of one InferenceX run summary (``at``: its fields' prefix, "[3]." in a list)."""
    figures = section(run.get("metrics"), path, at + "metrics", dict)
    inner = at + "metrics." if figures is not None else at
    figures = run if figures is None else figures
    if "hw" not in run:  # the site files a run's pipeline and context-parallel sizes as figures
        sizes = {k: figures[k] for k in SITE_SIZES if k in figures}
        if "pp" in sizes and "tp" not in run:  # a single node's, whose layout is decode_*
            sizes.setdefault("decode_pp", sizes["pp"])
        run = {**sizes, **run}
    base, why = _base(run, path, i, at)
    disaggregated = base["disaggregated"] == "true"
    metrics = _metrics(run, figures, path, inner, disaggregated)
    if why is not None:
        return unresolved_rows(base, metrics, why, "the summary")
    try:
        n_in = _lengths(run, "isl", path, at)
        n_out = _lengths(run, "osl", path, at)
        clients = number(run.get("conc"), path, at + "conc", required=True)
        assert clients is not None  # (``required``)
        if clients != int(clients) or clients > MAX_CLIENTS:
            raise Unusable(str(path), at + "conc", f"is {short(run.get('conc'))}",
                           f"a whole number of clients up to {MAX_CLIENTS:g}")  # fmt: skip
    except Unusable as exc:
        return unresolved_rows(base, metrics, exc, "the summary")
    requests = None if disaggregated else PROMPTS_PER_CLIENT * clients
    note = (
        f"InferenceX: closed loop of {clients:g} clients, lengths uniform from "
        f"{RANGE_RATIO:g} x isl/osl to isl/osl (its harness's --random-range-ratio)"
    )
    return rows_of(base, metrics, (n_in, n_out), f"{clients:g}", note, "the summary", requests)


def _lengths(run: dict, key: str, path: Path, at: str) -> str:
    """A length as the harness draws it from ``run[key]`` = L: uniform whole numbers from
    int(0.8 L) to L, written as its mean and standard deviation ("921.5 mean (sd 59.5)")."""
    if run.get(key) is None:  # summaries before 2025-11-21 give the lengths in their name only
        raise Unusable(str(path), at + key, "is not given", "add isl and osl as the run used them")
    top = number(run.get(key), path, at + key)
    assert top is not None
    if top != int(top) or top > MAX_TOKENS:
        raise Unusable(str(path), at + key, f"is {short(run.get(key))}",
                       f"a whole number of tokens up to {MAX_TOKENS:g}")  # fmt: skip
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


def _flag(run: dict, key: str, path: Path, at: str) -> bool:
    """A harness switch as the summary writes it: true/false, the text of one, or 0/1 (absent:
    off); anything else is the file's error."""
    value = run.get(key)
    if value is None or isinstance(value, bool):
        return bool(value)
    word = str(value).strip().lower() if isinstance(value, (str, int)) else None
    if word in ("true", "1", "yes", "on"):
        return True
    if word in ("false", "0", "no", "off", ""):
        return False
    raise SpecError(str(path), at + key, f"expected true or false, got {short(value)}", _AS_WRITTEN)


#: The fix of a field the harness writes otherwise.
_AS_WRITTEN = "give the summary as the harness wrote it"


def _worker(run: dict, prefix: str, engine: str, gpus: int, where: tuple) -> str:
    """One worker's layout in the measured format's words, on ``gpus`` GPUs (a multi-node
    worker's share of its pool; 0: a single node's tp x pp). With attention DP each rank
    attends alone (SGLang ``--tp N --dp N``, TensorRT-LLM ``enable_attention_dp``, vLLM
    ``--data-parallel-size N``), or on ranks of vLLM's ``tp`` where it states one; its experts
    split ``ep`` ways (EP1: tensor-parallel experts, as vLLM runs them without
    ``--enable-expert-parallel``)."""
    tp, ep = _count(run, prefix + "tp", *where), _count(run, prefix + "ep", *where) or 1
    pp = _count(run, prefix + "pp", *where) or 1
    attention_dp = _flag(run, prefix + "dp_attention", *where)
    size = gpus // pp if gpus else tp  # the tensor group of one pipeline stage
    ranks_of_tp = attention_dp and engine == "vllm"  # vLLM's tp: each DP rank's, not the group's
    if gpus and (gpus % pp or (size != tp and not ranks_of_tp)):
        raise Unusable(
            str(where[0]),
            where[1] + prefix + "tp",
            f"x pp is {tp * pp}, but each worker has {gpus} GPUs",
            _AS_WRITTEN,
        )
    stage = f"TP{size}" + (f"PP{pp}" if pp > 1 else "")
    if not attention_dp:
        return f"{stage} EP{ep}"
    if ranks_of_tp and 1 < tp < size:
        return f"{stage} (EP{ep}, DP{size // tp} attn-DP)"
    return f"{stage} (EP{ep}, attn-DP)"


def _topology(run: dict, engine: str, where: tuple) -> tuple[str, int, int, bool]:
    """(layout text, GPUs, decode GPUs, disaggregated) of a run: a single-node run's one
    instance, or a multi-node run's prefill and decode workers (an aggregated multi-node run,
    no decode GPUs: its workers serve both). The results site's rows (``hardware`` for
    ``hw``) state a single-node run's layout as its ``decode_*`` fields."""
    site = "hw" not in run
    multinode = _flag(run, "is_multinode", *where) or (
        _flag(run, "disagg", *where) if site else "num_decode_gpu" in run
    )
    if not multinode:
        prefix = "decode_" if site and "tp" not in run else ""
        tp, pp = _count(run, prefix + "tp", *where), _count(run, prefix + "pp", *where) or 1
        layout = _worker(run, prefix, engine, 0, where)
        return layout, tp * pp, 0, False
    parts, counts = [], {}
    for role in ("prefill", "decode"):
        gpus = _count(run, f"num_{role}_gpu", *where)
        workers = _count(run, f"{role}_num_workers", *where) or 1
        counts[role] = gpus
        if not gpus:
            continue
        if gpus % workers:
            raise Unusable(
                str(where[0]),
                where[1] + f"num_{role}_gpu",
                f"is {gpus}, not a whole number of GPUs for each of {workers} workers",
                _AS_WRITTEN,
            )
        layout = _worker(run, f"{role}_", engine, gpus // workers, where)
        parts.append((role, layout + (f" x{workers}" if workers > 1 else "")))
    if not counts["decode"]:  # an aggregated run over several nodes: its workers serve both
        return (parts[0][1] if parts else ""), counts["prefill"], 0, False
    layout = "; ".join(f"{role}: {text}" for role, text in parts)
    return layout, counts["prefill"] + counts["decode"], counts["decode"], True


def _unreadable(run: dict, path: Path, at: str, gpus: int) -> Unusable | None:
    """Why the model cannot read the run (None: it can): a trace replay, context parallelism,
    pools on two kinds of GPU, or no GPUs stated."""

    def why(key: str, problem: str, fix: str) -> Unusable:
        return Unusable(str(path), at + key, problem, fix)

    key = "benchmark_type" if run.get("benchmark_type") else "scenario_type"
    kind = str(run.get(key) or "").strip().lower()
    if "agentic" in kind:
        return why(
            key,
            f"is {kind}: a trace replay, whose requests' lengths the summary does not give",
            "compare its fixed-length runs",
        )
    for key in [f"{r}{k}" for r in ("", "prefill_", "decode_") for k in ("dcp_size", "pcp_size")]:
        if _count(run, key, path, at) > 1:
            return why(
                key,
                f"is {short(run.get(key))}: context parallelism (of the prompt or the KV cache) "
                "is not modelled",
                "compare runs without it",
            )
    pools = {_gpu_of(str(run.get(k) or "")) for k in ("prefill_hw", "decode_hw")} - {""}
    if len(pools) > 1:
        return why(
            "prefill_hw",
            f"names pools on two kinds of GPU ({', '.join(sorted(pools))})",
            "a measured row names one GPU: compare runs on one",
        )
    if not gpus:
        return why("tp", "states no GPUs", _AS_WRITTEN)
    return None


#: The day InferenceX's TensorRT-LLM scripts began running the expert and attention layout
#: they are given (17d5e204f, 2025-11-03); before, they chose it by concurrency themselves.
STATED_LAYOUT_SINCE = "2025-11-03"


def _unrecorded(run: dict) -> tuple[str, str, str] | None:
    """(field, problem, fix) where the summary does not record the layout its run had: a raw
    disaggregated summary older than per-worker fields (no ``prefill_tp``), a results-site row
    of a disaggregated run stored before them (its worker fields the site's tp x ep
    placeholders), or a site row of a TensorRT-LLM run whose script chose its layout."""
    site = "hw" not in run
    framework = str(run.get("framework") or "").lower()
    pooled = framework.startswith("dynamo-") or framework in ("mori-sglang", "sglang-disagg")
    newer = "compare newer runs"
    if not site and "num_decode_gpu" in run and "prefill_tp" not in run:
        return (
            "num_decode_gpu",
            "is given without prefill_tp: a summary older than the workers' layouts (2025-12), "
            "which it does not record",
            newer,
        )
    if site and (pooled or run.get("disagg") is True) and run.get("is_multinode") is not True:
        return (
            "is_multinode",
            "is false for a disaggregated run: a results-site row stored before the workers' "
            "layouts, whose worker fields are placeholders (tp x ep GPUs)",
            newer,
        )
    date = run.get("date")
    if site and framework == "trt" and isinstance(date, str) and date[:10] < STATED_LAYOUT_SINCE:
        return (
            "date",
            f"is {date[:10]}: InferenceX's TensorRT-LLM scripts then chose expert and attention "
            "parallelism by concurrency, which the row does not record",
            newer,
        )
    return None


def _base(run: dict, path: Path, i: int, at: str) -> tuple[dict, Unusable | None]:
    """The columns every row of the run shares, and why the run cannot be read (None: it can)."""
    text = {k: _text(run, k, path, at) for k in ("hw", "hardware", "framework", "precision")}
    image = _text(run, "image", path, at).replace("#", "/")  # artifact names write "/" as "#"
    written = _text(run, "model", path, at)  # a checkpoint ("nvidia/DeepSeek-R1-0528-FP4-V2")
    model = _model(_text(run, "infmax_model_prefix", path, at), written)
    gpu = _gpu_of(text["hw"] or text["hardware"])
    framework = text["framework"].strip().lower()
    engine = FRAMEWORKS.get(framework, framework)
    layout, gpus, decode_gpus, disaggregated = "", 0, 0, False
    unrecorded = _unrecorded(run)
    try:
        if unrecorded is not None:
            raise Unusable(str(path), at + unrecorded[0], *unrecorded[1:])
        layout, gpus, decode_gpus, disaggregated = _topology(run, engine, (path, at))
        why = _unreadable(run, path, at, gpus)
    except Unusable as exc:  # a layout not recorded, or a count that is no whole number
        why = exc
    notes = [f"InferenceX {framework or 'framework not stated'}"]
    if image:
        notes.append(f"image {image}")
    spec = next(
        (
            str(run[k]).strip().lower()
            for k in ("spec_decoding", "spec_method", "mtp")
            if run.get(k)
        ),
        "",
    )
    if spec not in ("", "none", "false", "off", "0"):
        notes.append(f"speculative decoding: {spec}")
    if isinstance(run.get("date"), str):
        notes.append(f"run of {run['date']}")
    balancing = HARNESS_BALANCING.get(model) if engine == "trtllm" and not disaggregated else None
    if balancing is not None and "attn-DP" in layout:  # the script's, as it launched the engine
        notes.append(f"{balancing_words(balancing)} (the harness's attention_dp_config)")
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


def _gpu_of(runner: str) -> str:
    """The catalog's GPU of an InferenceX runner name: the part before its site and index
    ("cluster:b300-nv", "mi355x-amds_0", "h100-dgxc-slurm_3"); else the name as written."""
    name = re.sub(r"^cluster:", "", runner.strip().lower())
    return RUNNERS.get(re.split(r"[-_]", name, maxsplit=1)[0], runner)


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
