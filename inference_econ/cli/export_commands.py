"""Export: a chosen configuration written as the engine launches it, with the benchmark that
checks it (docs/user-guide.md, "From a plan to a running engine and back")."""

from __future__ import annotations

import click

from ..errors import SpecError
from ..settings import MAX_TOKENS
from ..settings.load import KV_TIER_SETTINGS
from .common import (
    OutputFolder,
    Progress,
    checked,
    format_option,
    handle_errors,
    length_option,
    option,
    options,
    quiet_option,
    renamed_flags,
)
from .load_options import ENGINE, TARGETS, TRAFFIC, hardware_list
from .typed import given, modes, typed_name

#: The request lengths of a point (a number) and of a capacity plan's traffic (a number or a
#: distribution): one flag each.
LENGTHS = {"prompt_tokens": "input_lengths", "output_tokens": "output_lengths"}

#: What is served (the engine is the export's --engine).
SERVED = (
    "weight_bits",
    "activation_bits",
    "kv_cache_bits",
    "redundant_experts",
    "two_batch_overlap",
    "deepep",
    "pipeline",
    "assumptions",
    "clock",
    # speculation, as point and frontier take it: a draft model or draft heads (MTP, EAGLE)
    "draft",
    "draft_heads",
    "eagle_layers",
    "tree_branching",
    "acceptance",
    "acceptance_by_position",
    "max_draft_tokens",
)


#: The options each plan uses (the others, what is served and the launch's own, serve every
#: plan): one given to a plan that ignores it is refused.
#: The engine settings an export launches: not the KV-cache tiers, which no launch it writes sets.
EXPORTED_ENGINE = tuple(e for e in ENGINE if e not in KV_TIER_SETTINGS)

PLAN_OPTIONS = {
    "point": ("gpus", "batch", "prompt_tokens", "output_tokens"),
    "frontier": ("pick", "speed", "prompt_tokens", "output_tokens"),
    "capacity": (
        "prompt_tokens",
        "output_tokens",
        "disaggregated",
        "max_gpus",
        *(t for t in TRAFFIC if t not in LENGTHS.values()),
        *TARGETS,
        *EXPORTED_ENGINE,
    ),
    "disagg": ("gpus", "batch", "prefill_gpus", "prompt_tokens", "output_tokens"),
}


@click.command(short_help="Write a plan as engine launch commands, configs and a benchmark.")
@click.argument("model")
@hardware_list
@click.option(
    "--engine",
    "engine",
    type=click.Choice(["vllm", "sglang", "trtllm"]),
    required=True,
    help="The engine to launch (its version is in the output); also the profile of the figures.",
)
@click.option(
    "--plan",
    "plan",
    type=click.Choice(["point", "frontier", "capacity", "disagg"]),
    default="point",
    show_default=True,
    help="What to export: a point (--gpus, --batch), a frontier point (--pick or --speed), "
    "a capacity plan (--rate and targets; --disaggregated for pools) or a disagg plan "
    "(--gpus, --batch, --prefill-gpus).",
)
@option("gpus", default=None, help="GPUs of the instance (decode worker for --plan disagg).")
@option("batch", default=None, help="Requests running at once on the instance.")
@length_option(
    "prompt_tokens",
    "input_lengths",
    help="Input tokens per request (point, frontier, disagg; a capacity plan's traffic below).",
)
@length_option(
    "output_tokens",
    "output_lengths",
    help="Output tokens per request (point, frontier, disagg; a capacity plan's traffic below).",
)
@option(
    "prefill_gpus",
    help="GPUs of each prefill worker (--plan disagg; default: as many as decode). The export "
    "runs as many workers as keep the decode worker fed (the ratio of the pools' busy times), "
    "where disagg prices one pool of these GPUs.",
)
@options("disaggregated", "max_gpus")
@click.option(
    "--pick",
    type=click.Choice(["fastest", "cheapest", "preference"]),
    help="Frontier point to export (--plan frontier).",
)
@click.option(
    "--speed",
    type=float,
    # the bounds of at_speed, the same quantity (finite: 1e400 is refused, never inf)
    callback=lambda ctx, param, value: checked(value, "at_speed", "--speed"),
    help="Export the cheapest frontier point at this many tokens/s per request.",
)
@click.option(
    "--max-model-len",
    "max_model_len",
    type=click.IntRange(min=1, max=int(MAX_TOKENS)),
    help="Longest request, tokens (default: the traffic's longest prompt plus output where its "
    "lengths are capped, else the longest request the plan ran, rounded up to 256).",
)
@click.option(
    "--checkpoint",
    help="Checkpoint the engine loads (default: the model file's hf_repository).",
)
@options(
    *(t for t in TRAFFIC if t not in LENGTHS.values()),
    *TARGETS,
    *EXPORTED_ENGINE,
    *SERVED,
    command="export",
)
@renamed_flags
@click.option(
    "-o",
    "--out",
    type=OutputFolder(),
    help="Folder to write launch.sh, the engine's files, benchmark.md and plan.json into.",
)
@format_option
@quiet_option
@handle_errors
@modes("plan", PLAN_OPTIONS)
def export(model, hardware, engine, plan, out, format, quiet, **values):
    """Write a configuration as what an engineer launches — vLLM, SGLang or TensorRT-LLM
    command lines and files (copies on GPUs of their own behind sglang-router; disaggregated
    pools in NVIDIA Dynamo / sglang-router / trtllm-serve form; a Kubernetes manifest for vLLM,
    the ROCm image on AMD parts; a plan over several servers as one launch.sh each runs with
    NODE_RANK and NODE_ADDRS) — after checking that every worker's
    weights, KV cache at the planned batch and context, and the engine's reserve fit its GPUs
    (refused with the numbers otherwise), with the benchmark command that replays the plan's
    load and the figures it expects.

    \b
    Example:  inference-econ export "Llama 3.3 70B" -H H100 --engine vllm --weight-bits 8 \\
                  --gpus 8 --batch 64 --prompt-tokens 2000 --output-tokens 500
    """
    from .. import api

    names = [h.strip() for item in hardware for h in item.split(",") if h.strip()]
    if plan != "capacity" and len(names) > 1:  # a point is on one GPU: the rest were ignored
        raise SpecError(
            "command line",
            "--hardware",
            f"names {len(names)} GPUs, and a {plan} plan is on one",
            "give one GPU, or --plan capacity to choose among them",
        )
    said = given(click.get_current_context())
    # options at their defaults are left to the API (a load option means nothing without a
    # capacity plan; the figures' preset defaults to achievable under --engine)
    kwargs = {
        k: v
        for k, v in values.items()
        if v is not None and (k in said or (plan == "capacity" and k not in SERVED))
    }
    for name, lengths in LENGTHS.items():  # a capacity plan's traffic, or a point's request
        value = kwargs.get(name)
        if plan == "capacity" and value is not None:
            kwargs.pop(name)
            whole = not isinstance(value, str) and float(value).is_integer()
            kwargs[lengths] = str(int(value)) if whole else str(value)  # no rounding
        elif isinstance(value, str):
            flag = typed_name(name)
            raise SpecError(
                "command line",
                flag,
                f"{value} is a distribution of lengths, which describes a capacity plan's load",
                "give one length, or --plan capacity with --rate",
            )
    picked = {
        k: kwargs.pop(k, None)
        for k in (
            "gpus",
            "batch",
            "prompt_tokens",
            "output_tokens",
            "prefill_gpus",
            "pick",
            "speed",
            "max_model_len",
            "checkpoint",
        )
    }
    result = api.export(
        model, names if plan == "capacity" else names[0], engine=engine, plan=plan,
        progress=Progress(quiet), **picked, **kwargs,
    )  # fmt: skip
    if out:
        written = api.write_launch_files(result, out)
        click.echo(f"wrote {', '.join(written)} into {out}", err=True)
    files = api.launch_files(result)
    if format in ("table", "markdown"):
        click.echo(files["launch.sh"])
        click.echo(files["benchmark.md"], nl=False)
        return
    click.echo(_workers_table(result, format), nl=False)


def _workers_table(plan, fmt: str) -> str:
    """One row per kind of worker: its layout, limits and memory per GPU (csv, json)."""
    import json

    import pandas as pd

    from ..api import plan_record
    from ..output.render import render

    record = plan_record(plan)
    rows = [
        {k: v for k, v in w.items() if k != "memory_gb_per_gpu"}
        | {f"{k}_gb_per_gpu": v for k, v in w["memory_gb_per_gpu"].items()}
        for w in record["workers"]
    ]
    meta = {
        k: record[k]
        for k in ("engine", "engine_version", "source", "model", "hardware", "checkpoint")
    }
    meta["expected"] = json.dumps(record["expected"])
    return render(pd.DataFrame(rows), fmt, title="Workers of the exported plan", meta=meta)


COMMANDS = (export,)
