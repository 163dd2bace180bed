"""The benchmark that checks an exported plan: ``vllm bench serve`` and ``aiperf profile``
command lines replaying the plan's load (its Poisson rate, or a closed loop of its batch),
lengths and latency targets, with the plan's expected figures beside them (benchmark.md).

The result files they write are read back by ``compare-measured`` and ``calibrate``
(``measured.tool_results``): vLLM's carries the plan through ``--metadata``; aiperf's
is matched to the ``plan.json`` the export writes beside it.
"""

from __future__ import annotations

import math
import shlex

from ..load.engine import balancing_words
from .engine_configs import FRONT_PORT, parallelism
from .launch import LaunchPlan, launch_flags, step_budget

#: How a result row states each engine's DeepEP exchange (``measured.overlap_words``
#: reads the backend after the flag's name).
DEEPEP_BACKEND = {"sglang": "moe_a2a_backend", "vllm": "all2all_backend"}

#: Percentiles the benchmarks report (the plan's targets are p99s).
PERCENTILES = "50,90,99"
#: Where the commands write their results, relative to the export folder.
RESULTS = "results"


def _tool(name: str) -> dict:
    return launch_flags()["benchmarks"][name]


def _own(load) -> float:
    """A prompt's mean tokens after its shared system prompt (the tools add the prefix)."""
    return load.input_mean - load.prefix_tokens


def _range_ratio(mean: float, sd: float) -> float:
    """vLLM's random dataset draws lengths uniformly within mean x (1 ± r): the r whose
    uniform spread has the plan's standard deviation (sd = r·mean/√3), below 1."""
    if mean <= 0 or sd <= 0:
        return 0.0
    return round(min(math.sqrt(3.0) * sd / mean, 0.99), 3)


def stated(plan: LaunchPlan) -> str:
    """What the plan runs that a measured row states in its notes for ``compare-measured`` to
    predict it so: its redundant experts, two-batch overlap or DeepEP's exchange, a step budget
    other than the engine's default (one for every worker) and TensorRT-LLM's attention-DP
    balancing where a worker runs attention DP, in the words the reader takes ("32 redundant
    experts", "two-batch overlap", "moe_a2a_backend deepep", "step token budget 2048",
    "attention-DP balancing 0,60"); "" for none."""
    copies = int(plan.setting.model.redundant_experts)
    said = [f"{copies} redundant experts"] if copies else []
    if plan.setting.assumptions.two_batch_overlap:
        said.append("two-batch overlap")
    elif plan.setting.assumptions.deepep:  # the backend in the words its flag has
        said.append(f"{DEEPEP_BACKEND[plan.engine]} deepep")
    budgets = {w.token_budget for w in plan.workers}
    if len(budgets) == 1 and budgets != {step_budget(plan.engine, plan.setting.gpu)}:
        said.append(f"step token budget {budgets.pop()}")
    if plan.adp_balancing is not None and any(w.attention_dp > 1 for w in plan.workers):
        said.append(balancing_words(plan.adp_balancing))
    return "; ".join(said)


def metadata(plan: LaunchPlan) -> dict:
    """What a result row needs besides the measurement (the measured-results CSV's columns,
    and what its notes state: ``stated``)."""
    said = stated(plan)
    extra = {"ie_stated": said} if said else {}
    moe = plan.setting.model.is_moe
    layouts = {  # pools as the reader takes them: "prefill: TP8 x2; decode: TP16"
        w.role: parallelism(w, moe) + (f" x{w.count}" if w.count > 1 else "") for w in plan.workers
    }
    return {
        "ie_model": plan.setting.model.name,
        "ie_hardware": plan.setting.gpu.name,
        "ie_n_gpus": plan.gpus,
        "ie_parallelism": "; ".join(
            layout if role == "server" else f"{role}: {layout}" for role, layout in layouts.items()
        ),
        "ie_precision": _precision(plan),
        "ie_engine": plan.engine,
        "ie_engine_version": plan.version,
        "ie_disaggregated": str(plan.disaggregated).lower(),
        "ie_source": f"inference-econ export ({plan.source} plan)",
        **extra,
    }


def _precision(plan: LaunchPlan) -> str:
    """The plan's precision as a measured row's precision cell states it, its KV cache's
    format too ("FP8 (KV cache bf16)"): the reader takes an FP8 row's cache as FP8 otherwise."""
    p = plan.setting.precision
    w = {16: "BF16", 8: "FP8", 4: "FP4"}.get(int(round(p.weight_bits)), f"{p.weight_bits:g}-bit")
    kv = {16: "bf16", 8: "fp8"}.get(int(round(p.bytes_per_kv_element * 8)))
    return f"{w} (KV cache {kv})" if kv else w


def vllm_bench(plan: LaunchPlan) -> list[str]:
    """``vllm bench serve`` replaying the plan's load."""
    t = _tool("vllm")
    f = t["flags"]
    load = plan.load
    argv = [
        *t["launch"],
        f["model"], plan.checkpoint,
        f["base_url"], f"http://localhost:{FRONT_PORT}",
        f["dataset"], "random",
        f["input_len"], str(int(round(_own(load)))),
        f["output_len"], str(int(round(load.output_mean))),
        f["range_ratio"], f"{_range_ratio(_own(load), load.input_sd):g}",
        *([f["prefix_len"], str(int(round(load.prefix_tokens)))] if load.prefix_tokens else []),
        f["requests"], str(load.requests),
        f["ignore_eos"],
        f["percentile_metrics"], "ttft,tpot,itl,e2el",
        f["percentiles"], PERCENTILES,
        f["seed"], "0",
    ]  # fmt: skip
    if load.rate_per_s is not None:
        argv += [f["rate"], f"{load.rate_per_s:g}"]
    else:
        argv += [f["rate"], "inf", f["concurrency"], str(load.concurrency)]
    goodput = _goodput(load, {"ttft": "ttft", "tpot": "tpot", "e2e": "e2el"}, ":")
    if goodput:
        argv += [f["goodput"], *goodput]
    argv += [f["save"], f["result_dir"], RESULTS, f["result_file"], "vllm-bench.json"]
    argv += [f["metadata"], *[f"{k}={v}" for k, v in metadata(plan).items()]]
    return argv


def aiperf_profile(plan: LaunchPlan) -> list[str]:
    """``aiperf profile`` replaying the plan's load: streaming completions requests, as
    ``vllm bench serve`` sends them (the prompts' token counts exact, no chat template, and
    any checkpoint served, an instruct one or not)."""
    t = _tool("aiperf")
    f = t["flags"]
    load = plan.load
    argv = [
        *t["launch"],
        f["model"], plan.checkpoint,
        f["url"], f"http://localhost:{FRONT_PORT}",
        f["endpoint"], "completions",
        f["streaming"],
        f["input_mean"], str(int(round(_own(load)))),
        f["input_sd"], str(int(round(load.input_sd))),
        f["output_mean"], str(int(round(load.output_mean))),
        f["output_sd"], str(int(round(load.output_sd))),
        f["requests"], str(load.requests),
        # every prompt its own, as the plan's traffic has them: aiperf generates 100 synthetic
        # prompts unless told and sends them again in turn, which an engine's prefix cache
        # then serves without prefilling them
        f["entries"], str(load.requests),
        f["seed"], "0",
    ]  # fmt: skip
    if load.prefix_tokens:  # its pool of system prompts, each before a synthetic prompt
        argv += [f["prefix_len"], str(int(round(load.prefix_tokens)))]
        argv += [f["prefix_pool"], str(load.prefixes)]
    if load.rate_per_s is not None:
        argv += [f["rate"], f"{load.rate_per_s:g}", f["arrival"], "poisson"]
    else:
        argv += [f["concurrency"], str(load.concurrency)]
    names = {"ttft": "time_to_first_token", "tpot": "inter_token_latency", "e2e": "request_latency"}
    goodput = _goodput(load, names, ":")
    if goodput:
        argv += [f["goodput"], " ".join(goodput)]
    argv += [f["artifact_dir"], f"{RESULTS}/aiperf"]
    return argv


def _goodput(load, names: dict, sep: str) -> list[str]:
    """The targets as the tools take them (milliseconds)."""
    pairs = (
        ("ttft", load.slo_ttft_p99_s),
        ("tpot", load.slo_tpot_p99_s),
        ("e2e", load.slo_e2e_p99_s),
    )
    return [f"{names[k]}{sep}{v * 1e3:g}" for k, v in pairs if v is not None]


def _one_ratio(load) -> list[str]:
    """A note where ``vllm bench serve`` cannot draw the plan's lengths: vLLM 0.11's random
    dataset spreads prompts and outputs by one range ratio (``RandomDataset``, its
    ``input_low``/``output_low`` both at mean x (1 - r)), the prompts' here."""
    r_in = _range_ratio(_own(load), load.input_sd)
    r_out = _range_ratio(load.output_mean, load.output_sd)
    shared = (
        [
            "",
            f"vllm bench serve puts one shared prefix of {load.prefix_tokens:.0f} tokens before "
            f"every prompt, where the plan's traffic has {load.prefixes}; aiperf's command draws "
            "from that many.",
        ]
        if load.prefixes > 1 and load.prefix_tokens
        else []
    )
    if r_in == r_out:
        return shared
    return [
        *shared,
        "",
        f"vllm bench serve spreads prompts and outputs by one range ratio ({r_in:g}, the "
        f"prompts'), where the outputs' would be {r_out:g}: its outputs are drawn within "
        f"{load.output_mean * (1 - r_in):.0f}-{load.output_mean * (1 + r_in):.0f} tokens. "
        "aiperf's command draws each length as the plan has it.",
    ]


def benchmark_text(plan: LaunchPlan) -> str:
    """benchmark.md: the commands, the load they replay and the figures the plan expects."""
    load = plan.load
    how = (
        f"a Poisson stream of {load.rate_per_s:g} requests/s"
        if load.rate_per_s is not None
        else f"a closed loop of {load.concurrency} clients"
    )
    targets = ", ".join(
        f"p99 {k} <= {v * 1e3:g} ms"
        for k, v in (
            ("TTFT", load.slo_ttft_p99_s),
            ("TPOT", load.slo_tpot_p99_s),
            ("E2E", load.slo_e2e_p99_s),
        )
        if v is not None
    )
    lines = [
        f"# Benchmark of the {plan.source} plan: {plan.setting.model.name} on {plan.gpus} x {plan.setting.gpu.name}, {plan.engine} {plan.version}",
        "",
        f"Load: {how}, {load.requests} requests, prompts {load.input_mean:.0f} tokens (sd {load.input_sd:.0f}"
        + (
            f"; each starts with {'a shared prefix' if load.prefixes == 1 else f'one of {load.prefixes} shared prefixes'} of {load.prefix_tokens:.0f}), "
            if load.prefix_tokens
            else "), "
        )
        + f"outputs {load.output_mean:.0f} tokens (sd {load.output_sd:.0f})"
        + (f"; targets {targets}." if targets else "."),
        *_one_ratio(load),
        "",
        "```bash",
        " ".join(shlex.quote(a) for a in vllm_bench(plan)),
        "",
        " ".join(shlex.quote(a) for a in aiperf_profile(plan)),
        "```",
        "",
        "Read the results back (no hand-made CSV):",
        "",
        "```bash",
        f"inference-econ compare-measured {RESULTS}/vllm-bench.json --assumptions achievable --engine {plan.engine}",
        f"inference-econ compare-measured {RESULTS}/aiperf/profile_export_aiperf.json --assumptions achievable --engine {plan.engine}",
        "# calibrate fits terms to many rows: run vllm bench serve at several --max-concurrency",
        "# values with --append-result into one file (one run per line), then",
        f"inference-econ calibrate {RESULTS}/vllm-bench.json --engine {plan.engine} --out my-{plan.engine}.yaml",
        "```",
        "",
        "| expected | value |",
        "|---|---|",
        *[f"| {k} | {v:.4g} |" for k, v in plan.expected.items()],
        "",
        (
            "Intervals of the expected figures (80 % and 90 %, from out-of-sample error: "
            "docs/validation.md in the project): "
            + "; ".join(
                f"{k} {plan.intervals[f'{k}_low80']:.4g}-{plan.intervals[f'{k}_high80']:.4g} "
                f"(90 %: {plan.intervals[f'{k}_low90']:.4g}-{plan.intervals[f'{k}_high90']:.4g})"
                for k in plan.expected
                if f"{k}_low80" in plan.intervals
            )
            + "."
            if plan.intervals
            else "Intervals of the expected figures: none, under an ideal preset (a bound)."
        ),
        "",
    ]
    return "\n".join(lines)
