"""Benchmark tools' result files as measured rows (docs/user-guide.md, "Measured results: the
CSV format"), so ``compare-measured`` and ``calibrate`` read them directly.

Read, recognised by their content (not their name):

* ``vllm bench serve --save-result`` JSON (one run, or one per line with ``--append-result``):
  the keys of ``vllm/benchmarks/serve.py`` (``completed``, ``output_throughput``,
  ``mean_tpot_ms``, ``request_rate``, ``max_concurrency``, ...);
* ``aiperf profile`` ``profile_export_aiperf.json``: its metrics (``{"unit", "avg", ...}``)
  and ``input_config`` (the phase's concurrency or request rate).

A result file does not name the GPU or the layout. They come from the ``ie_*`` keys an
exported ``vllm bench serve --metadata`` writes into the file, else from the ``plan.json`` an
export writes, found beside the file or in a folder above it; without either the rows are
read as ``unresolved`` with the reason.

A run at a fixed concurrency C is a closed loop of C clients. A run at a Poisson rate is read
as a closed loop at its mean requests in flight, by Little's law: completed requests per
second x mean end-to-end latency (the notes of each row say so).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd

from ...errors import SpecError
from ...specs.inputs import NotJSON, parse_json, read_json, read_text

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
}


def tool_frame(path) -> pd.DataFrame | None:
    """The measured rows of a benchmark tool's result file, as strings in the measured CSV's
    columns; None when the file is not one (a CSV in the measured format, say)."""
    path = Path(path)
    text = read_text(path)
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return None
    runs = _json_runs(stripped, path)
    if runs is None:
        return None
    rows = []
    for i, run in enumerate(runs):
        if _is_vllm(run):
            rows += _vllm_rows(run, path, i)
        elif _is_aiperf(run):
            rows += _aiperf_rows(run, path)
        else:
            return None if len(runs) == 1 else _unknown(path, i)
    if not rows:
        raise SpecError(
            str(path), "", "the result file holds no completed run", "rerun the benchmark"
        )
    return pd.DataFrame(rows).fillna("").astype(str)


def _json_runs(text: str, path: Path):
    """One JSON object, or one per line (vLLM's --append-result); None: not JSON objects.
    JSON the parser cannot take (nested too deeply) is one error (``inputs.parse_json``)."""
    try:
        data = parse_json(text, str(path))
        return [data] if isinstance(data, dict) else None
    except NotJSON:
        pass
    runs = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = parse_json(line, str(path), f"line {n}")
        except NotJSON:
            if not runs:
                return None
            raise
        if not isinstance(data, dict):
            return None
        runs.append(data)
    return runs or None


def _unknown(path: Path, i: int):
    raise SpecError(
        str(path),
        f"run {i + 1}",
        "is not a vllm bench serve or aiperf result",
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
            workers = data.get("workers") or [{}]
            decode = next(
                (w for w in workers if w.get("role") in ("server", "decode")), workers[-1]
            )
            count = int(decode.get("count", 1))
            return {
                "model": data.get("model", ""),
                "hardware": data.get("hardware", ""),
                "n_gpus": str(sum(int(w.get("count", 1)) * int(w.get("gpus", 0)) for w in workers)),
                "parallelism": str(decode.get("parallelism", ""))
                + (f" x{count}" if count > 1 else ""),
                "precision": _precision_word(str(data.get("precision", ""))),
                "engine": data.get("engine", ""),
                "disaggregated": str(any(w.get("role") != "server" for w in workers)).lower(),
                "plan": os.path.relpath(plan, path.resolve().parent),
            }
        if folder.parent == folder:
            break
        folder = folder.parent
    return {}


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
        "scenario": "closed_loop",
        "source": f"{tool} result {path.name}",
        "source_group": f"{tool} {path.name}",
    }
    return (
        base,
        where or "no plan: the file names no GPU (run it from an export folder, beside plan.json)",
    )


def _loop(concurrency, rate, req_per_s: float, e2e_s: float) -> tuple[str, str]:
    """(concurrency, note) of a run: its closed-loop clients, or Little's law for a rate."""
    if concurrency:
        return f"{float(concurrency):g}", f"closed loop of {float(concurrency):g} clients"
    if rate is None or not (req_per_s > 0 and e2e_s > 0):
        return "", "the run states neither a concurrency nor a rate with its latency"
    c = req_per_s * e2e_s
    return f"{c:.4g}", (
        f"Poisson {rate} req/s read as a closed loop of {c:.4g} clients: the mean requests in "
        f"flight (Little's law: {req_per_s:.4g} completed req/s x {e2e_s:.4g} s mean end-to-end)"
    )


def _rows(
    base: dict, metrics: list, lengths: tuple, concurrency: str, note: str, where: str
) -> list:
    n_in, n_out = lengths
    out = []
    for metric, value, unit in metrics:
        if value is None or not math.isfinite(float(value)) or float(value) <= 0:
            continue
        out.append(
            {
                **base,
                "metric": metric,
                "value": f"{float(value):.6g}",
                "unit": unit,
                "batch_or_concurrency": concurrency,
                "input_len": f"{n_in:.6g}",
                "output_len": f"{n_out:.6g}",
                "notes": f"{note}; context from {where}",
            }
        )
    return out


def _vllm_rows(run: dict, path: Path, i: int) -> list:
    done = float(run.get("completed") or 0)
    if done <= 0:
        return []
    base, where = _base(run, path, "vllm bench serve", str(run.get("model_id", "")))
    if i:
        base["source"] += f" run {i + 1}"
    n_in = float(run.get("total_input_tokens", 0)) / done
    n_out = float(run.get("total_output_tokens", 0)) / done
    e2e_ms = run.get("mean_e2el_ms")
    if (
        e2e_ms is None
        and run.get("mean_ttft_ms") is not None
        and run.get("mean_tpot_ms") is not None
    ):
        e2e_ms = run["mean_ttft_ms"] + run["mean_tpot_ms"] * max(n_out - 1.0, 0.0)
    rate = run.get("request_rate")
    rate = None if rate in (None, "inf") or (isinstance(rate, float) and math.isinf(rate)) else rate
    conc, note = _loop(
        run.get("max_concurrency") if rate is None else None,
        rate,
        float(run.get("request_throughput") or 0.0),
        float(e2e_ms or 0.0) / 1e3,
    )
    metrics = [
        ("throughput", run.get("output_throughput"), "tokens/s"),
        ("mean_TPOT", run.get("mean_tpot_ms"), "ms"),
        ("ITL_mean", run.get("mean_itl_ms"), "ms"),
    ]
    return _rows(base, metrics, (n_in, n_out), conc, f"vllm bench serve: {note}", where)


def _avg(run: dict, key: str):
    value = run.get(key)
    return value.get("avg") if isinstance(value, dict) else None


def _aiperf_rows(run: dict, path: Path) -> list:
    config = run.get("input_config") or {}
    models = ((config.get("models") or {}).get("items") or [{}])[0].get("name", "")
    base, where = _base(run, path, f"aiperf {run.get('aiperf_version', '')}".strip(), str(models))
    phases = [p for p in config.get("phases") or [] if p.get("kind", "profiling") == "profiling"]
    phase = phases[0] if phases else {}
    rate = phase.get("request_rate") or phase.get("rate")
    concurrency = phase.get("concurrency") if rate is None else None
    n_in, n_out = _avg(run, "input_sequence_length"), _avg(run, "output_sequence_length")
    if not n_in or not n_out:
        return []
    conc, note = _loop(
        concurrency,
        rate,
        float(_avg(run, "request_throughput") or 0),
        float(_avg(run, "request_latency") or 0) / 1e3,
    )
    metrics = [
        ("throughput", _avg(run, "output_token_throughput"), "tokens/s"),
        # aiperf's inter-token latency is (end-to-end - TTFT) / (output tokens - 1) per request:
        # the time per output token the format calls TPOT
        ("mean_TPOT", _avg(run, "inter_token_latency"), "ms"),
    ]
    return _rows(base, metrics, (float(n_in), float(n_out)), conc, f"aiperf profile: {note}", where)
