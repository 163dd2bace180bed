"""Benchmark tools' result files as measured rows (docs/user-guide.md, "Measured results: the
CSV format"), so ``compare-measured`` and ``calibrate`` read them directly.

Read, recognised by their content (not their name):

* ``vllm bench serve --save-result`` JSON (one run, or one per line with ``--append-result``,
  where a line after the first that holds no run, not JSON or not an object, is one row
  unresolved with its line and reason, ``UnreadLine``): the keys of
  ``vllm/benchmarks/serve.py`` (``completed``, ``output_throughput``, ``mean_tpot_ms``,
  ``request_rate``, ``max_concurrency``, ...), a row for each figure of ``VLLM_METRICS`` the run
  states (its TTFTs and end-to-end latencies too: the model's reason lists those it does not
  predict, as InferenceX's are);
* SGLang's ``bench_serving`` JSON lines: vLLM's keys but its end-to-end latencies'
  (``SGLANG_KEYS``), and no model (``--model`` gives it);
* ``aiperf profile`` ``profile_export_aiperf.json``: its metrics (``{"unit", "avg", ...}``)
  and ``input_config`` (the phase's concurrency or request rate); genai-perf's
  ``profile_export_genai_perf.json`` alike, its model and load in ``input_config`` itself;
* InferenceX's run summaries, one or a JSON list of them (``inferencex``), which name their
  GPU, layout and engine themselves.

A result file does not name the GPU or the layout. They come from the ``ie_*`` keys an
exported ``vllm bench serve --metadata`` writes into the file, else from the ``plan.json`` an
export writes, found beside the file or in a folder above it; without either the rows are
read as ``unresolved`` with the reason.

A run at a fixed concurrency C is a closed loop of C clients. A run at a Poisson rate is read
as a closed loop at its mean requests in flight, by Little's law: completed requests per
second x mean end-to-end latency (the notes of each row say so). A vLLM or SGLang run at an
infinite rate with no concurrency limit (both tools' default) sends every request at once: a
maximum-load (offline) run of the requests it completed.

Every number is read by ``number``. A field of the wrong JSON type (a list, an object,
true/false, words where a number is; a string where a section is) is the file's error: one
line naming the file and the field. A number of the right type the rows cannot use (NaN, not
positive, a length not given) makes the rows it feeds ``unresolved`` with the field as the
reason: its metric's row, or every row of its run (a length, a rate, a concurrency); the
file's other rows go on.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import SpecError, short
from ..specs.inputs import NotJSON, parse_json, read_json, read_text
from .inferencex import inferencex_rows, is_inferencex, refuse_missing_runner
from .metric_names import SECONDS, rate_unit_problem, time_unit, unit_counts
from .result_fields import (
    UNUSABLE,
    Unusable,
    checked,
    number,
    rows_of,
    section,
    unresolved_rows,
    usable,
)

#: How far up from a result file a plan.json is looked for (aiperf writes into a subfolder).
PLAN_LEVELS = 3
#: Keys of an export's metadata -> columns of the measured format.
CONTEXT_KEYS = {
    "ie_model": "model",
    "ie_hardware": "hardware",
    "ie_n_gpus": "n_gpus",
    "ie_parallelism": "parallelism",
    "ie_precision": "precision",
    "ie_engine": "engine",
    "ie_disaggregated": "disaggregated",
    "ie_stated": "stated",  # what the plan ran that its rows' notes state
}


def json_but_no_result(path) -> bool:
    """Whether a file that ``tool_frame`` read as no tool's result is JSON all the same: an
    object or a list, or a ``.json`` file holding one JSON value (``null``, ``42``), which a
    CSV's "columns missing" would misname."""
    import json

    text = read_text(Path(path)).strip()
    if text[:1] in ("{", "["):
        return True
    if not Path(path).name.lower().removesuffix(".gz").endswith((".json", ".jsonl")):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def tool_frame(path) -> pd.DataFrame | None:
    """The measured rows of a benchmark tool's result file, as strings in the measured CSV's
    columns; None when the file is not one (a CSV in the measured format, say)."""
    path = Path(path)
    text = read_text(path)
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return None
    runs = _json_runs(stripped, path)
    if runs is None:
        return None
    listed = stripped.startswith("[")  # a JSON list (InferenceX's collected summaries)
    parts, completed = [], False
    for i, run in enumerate(runs):
        at = f"run {i + 1}." if len(runs) > 1 else ""  # a field's name in the file's errors
        if isinstance(run, UnreadLine):  # its row, once the file's other rows name the tool
            parts.append(run)
            continue
        refuse_missing_runner(run, path, f"[{i}]." if listed else at)
        if listed:  # InferenceX's collected summaries, named by their index
            if i and not (isinstance(run, dict) and is_inferencex(run)):
                raise SpecError(str(path), f"[{i}]", f"is {short(run)}, not an InferenceX run "
                                "summary as the list's first is", "give one tool's runs per file")  # fmt: skip
            if not is_inferencex(run):
                return None
            rows, ran = inferencex_rows(run, path, i, f"[{i}]."), True
        elif is_inferencex(run):
            rows, ran = inferencex_rows(run, path, i, ""), True
        elif _is_vllm(run):
            rows, ran = _vllm_rows(run, path, i, at)
        elif _is_aiperf(run):
            rows, ran = _aiperf_rows(run, path, at), True
        else:
            return None if len(runs) == 1 or (listed and not i) else _unknown(path, i)
        parts.append(rows)
        completed = completed or (ran and bool(rows))
    if not completed:  # (a run of no completed request beside others: its rows unresolved)
        raise SpecError(
            str(path), "", "the result file holds no completed run", "rerun the benchmark"
        )
    group = next((p[0]["source_group"] for p in parts if p and isinstance(p, list)), path.name)
    rows = [
        row
        for part in parts
        for row in (part.rows(path, group) if isinstance(part, UnreadLine) else part)
    ]
    return pd.DataFrame(rows).fillna("").astype(str)


def _json_runs(text: str, path: Path):
    """One JSON object, a list of them (InferenceX's collected summaries), or one per line
    (vLLM's --append-result: a later line that holds no run is an ``UnreadLine``); None: not
    JSON objects.
    JSON the parser cannot take (nested too deeply), and text that is no JSON whose first line
    is no JSON either (a file cut short), is one error (``inputs.parse_json``)."""
    try:
        data = parse_json(text, str(path))
        if isinstance(data, list) and data and isinstance(data[0], dict):
            return data  # (its other items are checked one by one)
        return [data] if isinstance(data, dict) else None
    except NotJSON as exc:
        whole = exc  # the file's error where no line holds a run either (a truncated file)
    runs: list = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = parse_json(line, str(path), f"line {n}")
        except NotJSON as exc:
            if not runs:  # (a cut column: the whole file's position, not its first line's)
                fix = "the file is cut short or damaged: write it again with the tool"
                raise SpecError(str(path), "", whole.problem, fix) from None
            runs.append(UnreadLine(n, f"not valid JSON: {exc.detail}"))
            continue
        if not isinstance(data, dict):
            if not runs:
                return None
            runs.append(UnreadLine(n, f"is {short(data)}, not the JSON object of a run"))
            continue
        runs.append(data)
    return runs or None


@dataclass(frozen=True)
class UnreadLine:
    """A line of a JSON-lines result file (``--append-result``) that holds no run: its row is
    unresolved with the reason, and the file's other runs go on."""

    line: int
    problem: str

    def rows(self, path: Path, group: str) -> list:
        """Its one row, in the measured CSV's columns, grouped with the file's other rows."""
        text = (
            f"{UNUSABLE}line {self.line}: {self.problem} (write the run again, or delete the line)"
        )
        return [
            {
                "source": f"{path.name} line {self.line}",
                "source_group": group,
                "model": "",
                "hardware": "",
                "n_gpus": "",
                "metric": "",
                "unit": "",
                "value": text,
                "notes": text[len(UNUSABLE) :],
            }
        ]


def _unknown(path: Path, i: int):
    raise SpecError(
        str(path),
        f"run {i + 1}",
        "is not a vllm bench serve, aiperf or InferenceX result",
        "give one tool's runs per file",
    )


def _is_vllm(run: dict) -> bool:
    return (
        "completed" in run
        and ("mean_tpot_ms" in run or "output_throughput" in run)
        and "backend" in run
    )


def _is_aiperf(run: dict) -> bool:
    return "aiperf_version" in run or (
        "input_config" in run and isinstance(run.get("time_to_first_token"), dict)
    )


def _plan_context(path: Path) -> dict:
    """Columns from the plan.json of the export the benchmark ran from (empty: none found)."""
    folder = path.resolve().parent
    for _ in range(PLAN_LEVELS):
        plan = folder / "plan.json"
        if plan.is_file():
            try:
                data = read_json(plan)
            except SpecError:
                return {}
            if not isinstance(data, dict) or "engine_version" not in data:
                return {}
            workers = section(data.get("workers"), plan, "workers", list) or [{}]
            for k, w in enumerate(workers):
                if section(w, plan, f"workers[{k}]", dict) is None:
                    raise SpecError(
                        str(plan), f"workers[{k}]", "is null", "write it again with export"
                    )
            gpus = sum(
                _plan_count(w, "count", 1, plan, f"workers[{k}]")
                * _plan_count(w, "gpus", 0, plan, f"workers[{k}]")
                for k, w in enumerate(workers)
            )
            return {
                "model": _plan_text(data, "model", plan),
                "hardware": _plan_text(data, "hardware", plan),
                "n_gpus": str(gpus),
                "parallelism": _plan_layouts(workers, plan),
                "precision": _precision_word(str(data.get("precision", ""))),
                "engine": " ".join(
                    filter(None, (_plan_text(data, k, plan) for k in ("engine", "engine_version")))
                ),
                "disaggregated": str(any(w.get("role") != "server" for w in workers)).lower(),
                "stated": str(data.get("stated") or ""),
                "plan": os.path.relpath(plan, path.resolve().parent),
            }
        if folder.parent == folder:
            break
        folder = folder.parent
    return {}


def _plan_layouts(workers: list, plan: Path) -> str:
    """The layout an export's plan.json states, as a measured row's parallelism: its instance
    ("TP8 x2"), or its pools by role ("prefill: TP8 x2; decode: TP16 (EP16, attn-DP)"), which
    say how many of the GPUs decode."""
    parts = []
    for k, w in enumerate(workers):
        count = _plan_count(w, "count", 1, plan, f"workers[{k}]")
        layout = str(w.get("parallelism", "")) + (f" x{count}" if count > 1 else "")
        role = w.get("role")
        parts.append(layout if role in ("server", None) else f"{role}: {layout}")
    return "; ".join(parts)


def _plan_text(data: dict, key: str, plan: Path) -> str:
    """A name of an export's plan.json (its model, GPU, engine): text, or the plan's error."""
    value = data.get(key, "")
    if not isinstance(value, str):
        raise SpecError(
            str(plan), key, f"expected text, got {short(value)}", "write it again with export"
        )
    return value


def _plan_count(worker: dict, key: str, default: int, plan: Path, at: str) -> int:
    """A worker's whole count (instances, GPUs) from an export's plan.json: a count that is
    not a whole number is the plan's error (its file and field), never a traceback."""
    field = f"{at}.{key}"
    value = number(worker.get(key, default), plan, field, zero=True)
    if value is None or value != int(value):
        raise SpecError(
            str(plan),
            field,
            f"is {short(worker.get(key))}, not a whole number",
            "write the plan.json again with inference-econ export",
        )
    return int(value)


def _precision_word(label: str) -> str:
    """ "W8A16 KV8"-style labels to the format's precision words."""
    text = label.lower()
    for bits, word in (("4", "FP4"), ("8", "FP8"), ("16", "BF16")):
        if (
            text.startswith(f"w{bits}")
            or text.startswith(f"{bits}-bit")
            or f"weights {bits}" in text
        ):
            return word
    return label


def _context(run: dict, path: Path) -> tuple[dict, str]:
    """The row's model, GPU, layout, precision and engine, and where they came from."""
    given = {col: str(run[key]) for key, col in CONTEXT_KEYS.items() if key in run}
    if given.get("engine") and run.get("ie_engine_version"):  # "trtllm 1.2.1", as a row says it
        given["engine"] = f"{given['engine']} {run['ie_engine_version']}"
    if given.get("hardware"):
        return given, "the file's --metadata"
    plan = _plan_context(path)
    if plan:
        return {k: v for k, v in plan.items() if k != "plan"}, f"plan {plan['plan']}"
    return given, ""


def _base(run: dict, path: Path, tool: str, model_text: str) -> tuple[dict, str]:
    ctx, where = _context(run, path)
    base = {
        "model": ctx.get("model") or model_text,
        "hardware": ctx.get("hardware") or "not stated",
        "n_gpus": ctx.get("n_gpus") or "n/a",
        "parallelism": ctx.get("parallelism", ""),
        "precision": ctx.get("precision", ""),
        "engine": ctx.get("engine", ""),
        "disaggregated": ctx.get("disaggregated", ""),
        "notes": ctx.get("stated", ""),  # the plan's, ahead of each row's own (``rows_of``)
        "scenario": "closed_loop",
        "source": f"{tool} result {path.name}",
        "source_group": f"{tool} {path.name}",
    }
    return (
        base,
        where or "no plan: the file names no GPU (run it from an export folder, beside plan.json)",
    )


def _loop(concurrency, rate, req_per_s, e2e_s) -> tuple[str, str]:
    """(concurrency, note) of a run: its closed-loop clients, or Little's law for a rate.
    The figures are ``checked`` values: one the run uses and cannot is ``Unusable``."""
    concurrency = usable(concurrency)
    if concurrency:
        return f"{concurrency:g}", f"closed loop of {concurrency:g} clients"
    rate = usable(rate)
    if rate is None:
        return "", "the run states neither a concurrency nor a rate with its latency"
    req_per_s, e2e_s = usable(req_per_s), usable(e2e_s)
    if req_per_s is None or e2e_s is None:
        return "", "the run states neither a concurrency nor a rate with its latency"
    c = req_per_s * e2e_s
    return f"{c:.4g}", (
        f"Poisson {rate:g} req/s read as a closed loop of {c:.4g} clients: the mean requests in "
        f"flight (Little's law: {req_per_s:.4g} completed req/s x {e2e_s:.4g} s mean end-to-end)"
    )


#: vLLM's figures the rows are: (metric, key, unit), named as a measured CSV names them. The
#: end-to-end latencies are listed as the model reads them: a closed loop's replay predicts
#: them (InferenceX's summaries list theirs alike).
VLLM_METRICS = (
    ("throughput", "output_throughput", "tokens/s"),
    ("mean_TPOT", "mean_tpot_ms", "ms"),
    ("ITL_mean", "mean_itl_ms", "ms"),
    ("mean_TTFT", "mean_ttft_ms", "ms"),
    ("p99_TTFT", "p99_ttft_ms", "ms"),
    ("mean_e2el", "mean_e2el_ms", "ms"),
    ("p99_e2el", "p99_e2el_ms", "ms"),
)
#: vLLM's figures of a run's lengths and load, and how ``number`` reads each.
VLLM_RUN = {
    "completed": {"zero": True},
    "total_input_tokens": {"required": True},
    "total_output_tokens": {"required": True},
    "request_rate": {"infinite": True},  # "inf" (or Infinity): every request at once
    "max_concurrency": {},
    "request_throughput": {},
    "mean_e2el_ms": {},
    "mean_ttft_ms": {},
}


#: SGLang's ``bench_serving`` (``--output-file``, one run per line) writes vLLM's keys but
#: for its end-to-end latencies: the file's own name of each key read under vLLM's name.
SGLANG_KEYS = {"mean_e2el_ms": "mean_e2e_latency_ms", "p99_e2el_ms": "p99_e2e_latency_ms"}
#: The ``backend`` a run states (vllm bench serve's or bench_serving's ``--backend``: the
#: server's API) -> the engine profile it names; an OpenAI-compatible backend names none.
BACKEND_ENGINES = (("sglang", "sglang"), ("vllm", "vllm"), ("tensorrt-llm", "trtllm"),
                   ("trt", "trtllm"))  # fmt: skip


def _is_sglang(run: dict) -> bool:
    return "mean_e2el_ms" not in run and any(k in run for k in SGLANG_KEYS.values())


def _backend_engine(run: dict) -> str:
    """The engine a run's ``backend`` names ("sglang-oai-chat": sglang), else ""."""
    backend = run.get("backend")
    if not isinstance(backend, str):
        return ""
    word = backend.strip().lower()
    return next((e for b, e in BACKEND_ENGINES if word == b or word.startswith(b + "-")), "")


def _vllm_rows(run: dict, path: Path, i: int, at: str) -> tuple[list, bool]:
    """The rows of one ``vllm bench serve`` (or SGLang ``bench_serving``) run (``at``: its
    fields' prefix, "run 3." in a file of several), and whether it completed a request (if
    not, its rows are unresolved)."""
    names = SGLANG_KEYS if _is_sglang(run) else {}
    got = {
        key: checked(number, run.get(names.get(key, key)), path, at + names.get(key, key), **opts)
        for key, opts in VLLM_RUN.items()
    }
    metrics = [
        (
            metric,
            checked(number, run.get(names.get(key, key)), path, at + names.get(key, key)),
            unit,
        )
        for metric, key, unit in VLLM_METRICS
        if run.get(names.get(key, key)) is not None
    ]
    tool = "sglang bench_serving" if names else "vllm bench serve"
    base, where = _base(run, path, tool, str(run.get("model_id", "")))
    if not base["engine"]:  # the server the run's backend names, before the tool's own name
        base["engine"] = _backend_engine(run)
    if i:
        base["source"] += f" run {i + 1}"
    if got["completed"] is None or got["completed"] == 0:
        why = Unusable(
            str(path),
            at + "completed",
            f"is {short(run.get('completed'))}: the run completed no request",
            "rerun the benchmark",
        )
        return unresolved_rows(base, metrics, why, where), False
    try:
        done = usable(got["completed"])
        n_in = usable(got["total_input_tokens"]) / done
        n_out = usable(got["total_output_tokens"]) / done
        rate = got["request_rate"]
        at_once = isinstance(rate, float) and math.isinf(rate)
        if at_once and run.get("max_concurrency") is None:  # the tools' default run
            base["scenario"] = "offline"
            conc = ""
            note = (
                "every request sent at once (request rate inf, no --max-concurrency): a run at "
                f"maximum load of its {done:g} requests"
            )
        elif rate is None or at_once:
            conc, note = _loop(got["max_concurrency"], None, None, None)
        else:  # Little's law needs the mean end-to-end latency (or TTFT + TPOT per token)
            e2e_ms, ttft = got["mean_e2el_ms"], got["mean_ttft_ms"]
            tpot = {m: v for m, v, _ in metrics}.get("mean_TPOT")
            if e2e_ms is None and ttft is not None and tpot is not None:
                e2e_ms = usable(ttft) + usable(tpot) * max(n_out - 1.0, 0.0)
            e2e_s = usable(e2e_ms) / 1e3 if e2e_ms is not None else None
            conc, note = _loop(None, rate, got["request_throughput"], e2e_s)
    except Unusable as why:
        return unresolved_rows(base, metrics, why, where), True
    rows = rows_of(base, metrics, (n_in, n_out), conc, f"{tool}: {note}", where, done)
    return rows, True


def _avg(run: dict, key: str, path: Path, at: str, stat: str = "avg", time=False, **opts):
    """The ``avg`` (or ``stat``: "p99") of one of aiperf's metrics (``{"unit", "avg", "p99",
    ...}``), ``checked``; a ``time`` in milliseconds, from the unit the metric states as a
    measured row's is read (``metric_names.time_unit``; none: ms, as both tools write it)."""
    metric = section(run.get(key), path, at + key, dict) or {}
    value = checked(number, metric.get(stat), path, f"{at}{key}.{stat}", **opts)
    unit = metric.get("unit", "ms")
    if not time or not isinstance(value, float):
        return value
    read = time_unit(str(unit))
    if read is None:
        raise SpecError(
            str(path), f"{at}{key}.unit", f"is {unit!r}, not a unit of time this reads",
            "a latency in ms, s, us or ns, as the tool writes it",
        )  # fmt: skip
    return value * SECONDS[read] / SECONDS["ms"]


def _tokens_per_s(run: dict, key: str, path: Path, at: str):
    """An aiperf rate of output tokens (``{"unit": "tokens/sec", "avg": ...}``), ``checked``;
    one whose unit counts something else or is not per second ("requests/sec", "tokens/min")
    is ``Unusable``: its row is unresolved, not read as tokens a second."""
    value = _avg(run, key, path, at)
    unit = (section(run.get(key), path, at + key, dict) or {}).get("unit")
    if unit is None or not isinstance(value, float):  # none: tokens/sec, as the tool writes it
        return value
    if unit_counts(str(unit)) != "tokens" or rate_unit_problem(str(unit), key):
        return Unusable(
            str(path), f"{at}{key}.unit", f"is {short(unit)}, not output tokens a second",
            "give the file as the tool wrote it: tokens/sec",
        )  # fmt: skip
    return value


def _aiperf_rows(run: dict, path: Path, at: str) -> list:
    """The rows of one ``aiperf profile`` export."""
    config = section(run.get("input_config"), path, at + "input_config", dict) or {}
    where_cfg = at + "input_config"
    models = section(config.get("models"), path, f"{where_cfg}.models", dict) or {}
    items = section(models.get("items"), path, f"{where_cfg}.models.items", list) or [{}]
    first = section(items[0], path, f"{where_cfg}.models.items[0]", dict) or {}
    model = first.get("name", "") or _genai_perf_model(config)
    phases = []
    for k, p in enumerate(section(config.get("phases"), path, f"{where_cfg}.phases", list) or []):
        p = section(p, path, f"{where_cfg}.phases[{k}]", dict)
        if p is not None and p.get("kind", "profiling") == "profiling":
            phases.append((k, p))
    k, phase = phases[0] if phases else (0, {})
    at_phase = f"{where_cfg}.phases[{k}]."
    genai_perf = "aiperf_version" not in run and "phases" not in config
    if genai_perf:  # genai-perf's input_config holds its load itself: "concurrency": 64
        phase, at_phase = config, f"{where_cfg}."
    rate_key = "request_rate" if phase.get("request_rate") is not None else "rate"
    rate = checked(number, phase.get(rate_key), path, at_phase + rate_key)
    concurrency = checked(number, phase.get("concurrency"), path, at_phase + "concurrency")
    n_in = _avg(run, "input_sequence_length", path, at, required=True)
    n_out = _avg(run, "output_sequence_length", path, at, required=True)
    req_per_s = _avg(run, "request_throughput", path, at)
    latency = _avg(run, "request_latency", path, at, time=True)
    count = _avg(run, "request_count", path, at)
    metrics = [
        (metric, value, unit)
        for metric, value, unit in (
            ("throughput", _tokens_per_s(run, "output_token_throughput", path, at), "tokens/s"),
            # aiperf's inter-token latency is (end-to-end - TTFT) / (output tokens - 1) per
            # request: the time per output token the format calls TPOT
            ("mean_TPOT", _avg(run, "inter_token_latency", path, at, time=True), "ms"),
            # its first tokens and whole requests, as vllm bench serve's are read
            ("mean_TTFT", _avg(run, "time_to_first_token", path, at, time=True), "ms"),
            ("p99_TTFT", _avg(run, "time_to_first_token", path, at, "p99", True), "ms"),
            ("mean_e2el", latency, "ms"),
            ("p99_e2el", _avg(run, "request_latency", path, at, "p99", True), "ms"),
        )
        if value is not None
    ]
    tool = "genai-perf" if genai_perf else f"aiperf {run.get('aiperf_version', '')}".strip()
    base, where = _base(run, path, tool, str(model))
    pool = None if genai_perf else _synthetic_entries(config, path, where_cfg)
    try:
        lengths = (usable(n_in), usable(n_out))
        pool = usable(pool)
        conc, note = _loop(
            concurrency if rate is None else None,
            rate,
            req_per_s,
            latency if not isinstance(latency, float) else latency / 1e3,
        )
    except Unusable as why:
        return unresolved_rows(base, metrics, why, where)
    # the run's count, a whole number (none: the replay's own count); one it cannot be (0,
    # NaN, 60.5) is its rows' reason, not a run of the replay's own length in silence
    if isinstance(count, float) and not (count >= 1 and count.is_integer()):
        count = Unusable(str(path), f"{at}request_count.avg", f"is {count:g}",
                         "expected a whole number of requests >= 1")  # fmt: skip
    if isinstance(count, Unusable):
        return unresolved_rows(base, metrics, count, where)
    stopped = next((f for f, v in (("was_cancelled", True), ("is_complete", False))
                    if run.get(f) is v), None)  # fmt: skip
    if stopped:  # a run cut short: its figures are of part of its load
        why = Unusable(str(path), at + stopped, f"is {str(run[stopped]).lower()}: the run stopped "
                       "before its load was sent", "rerun it to its end")  # fmt: skip
        return unresolved_rows(base, metrics, why, where)
    done = count
    if pool:  # the replay sends them again as aiperf did, to the engine's prefix cache
        base["distinct_prompts"] = str(pool)
        note += f"; prompts: {pool} synthetic ones, each sent again"
    return rows_of(base, metrics, lengths, conc, f"{tool.split()[0]} profile: {note}", where, done)


#: aiperf's synthetic prompts unless ``--num-dataset-entries`` says (aiperf 0.13.0,
#: ``config/dataset/config.py``: ``SyntheticDataset.entries``), sent again in shuffled rounds.
AIPERF_SYNTHETIC_ENTRIES = 100


def _synthetic_entries(config: dict, path: Path, where: str):
    """The distinct prompts of an aiperf run's first dataset where it is synthetic (its
    ``entries``, else aiperf's default); None for a file or public dataset, or none named; a
    ``checked`` value (an ``Unusable`` where ``entries`` is not a whole number >= 1)."""
    sets = section(config.get("datasets"), path, f"{where}.datasets", list) or []
    first = section(sets[0], path, f"{where}.datasets[0]", dict) if sets else None
    if not first or first.get("type") != "synthetic":
        return None
    field = f"{where}.datasets[0].entries"
    entries = checked(number, first.get("entries"), path, field)
    if entries is None:
        return AIPERF_SYNTHETIC_ENTRIES
    if isinstance(entries, float) and not entries.is_integer():
        return Unusable(str(path), field, f"is {entries:g} prompts", "give a whole number >= 1")
    return entries if isinstance(entries, Unusable) else int(entries)


def _genai_perf_model(config: dict) -> str:
    """The model genai-perf's ``input_config`` names (``"model": ["name", ...]``; its first),
    else ""."""
    model = config.get("model")
    if isinstance(model, list) and model:
        model = model[0]
    return model if isinstance(model, str) else ""
