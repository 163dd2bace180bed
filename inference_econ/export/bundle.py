"""The files of an export: launch.sh, the engines' own configuration files, the Kubernetes
manifest of a vLLM plan, and plan.json (the plan as data)."""

from __future__ import annotations

import json

from .benchmark_commands import stated
from .engine_configs import commands, launch_script, parallelism, placements
from .kubernetes import kubernetes_manifest
from .launch import LaunchPlan, caps_per_rank
from .nodes import names_a_node, node_count


def plan_record(plan: LaunchPlan) -> dict:
    """The plan as data (plan.json): engine and version, workers with their memory, the load,
    the expected figures, and the place for their intervals."""
    return {
        "engine": plan.engine,
        "engine_version": plan.version,
        "source": plan.source,
        "model": plan.setting.model.name,
        "checkpoint": plan.checkpoint,
        "hardware": plan.setting.gpu.name,
        "assumptions": plan.setting.assumptions.label,
        "precision": plan.setting.precision.label(),
        "max_model_len": plan.max_model_len,
        "nodes": node_count(placements(plan)),
        "gpus_per_node": plan.setting.gpu.gpus_per_host,
        "workers": [
            {
                "role": w.role,
                "count": w.count,
                "gpus": w.gpus,
                "parallelism": parallelism(w, plan.setting.model.is_moe),
                "batch": w.batch,
                # whose cap ``batch`` is: each attention rank's where the engine reads it so
                "batch_per": "attention rank"
                if caps_per_rank(plan.engine, w.attention_dp)
                else "instance",
                "token_budget": w.token_budget,
                "memory_gb_per_gpu": {
                    "hbm": w.memory.hbm_bytes_per_gpu / 1e9,
                    "weights": w.memory.weights_bytes_per_gpu / 1e9,
                    "engine_reserve": w.memory.reserve_bytes_per_gpu / 1e9,
                    "kv_cache": w.memory.kv_capacity_bytes_per_gpu / 1e9,
                    "kv_needed_at_planned_batch": w.memory.kv_needed_bytes_per_gpu / 1e9,
                },
                "planned_batch": w.memory.batch,
                "admitted_requests": w.memory.admitted_requests,
            }
            for w in plan.workers
        ],
        "load": plan.load.__dict__,
        "expected": plan.expected,
        # the expected figures' 80 % and 90 % intervals (null under an ideal preset: a bound)
        "intervals": plan.intervals or None,
        "notes": list(plan.notes),
        # what a result read back states of the plan (``benchmark_commands.stated``)
        "stated": stated(plan),
    }


#: Every file an export may write (``render``'s, by engine and plan, and benchmark.md): a
#: later export into the same folder removes those of them it does not write itself.
EXPORT_FILES = (
    "launch.sh",
    "benchmark.md",
    "plan.json",
    "k8s-dynamo.yaml",
    "k8s-vllm-rocm.yaml",
    "k8s-vllm-lws.yaml",
    *(f"trtllm-{role}.yaml" for role in ("server", "prefill", "decode", "disagg")),
    *(f"trtllm-{role}-eplb.yaml" for role in ("server", "prefill", "decode")),
)


def render(plan: LaunchPlan) -> dict:
    """The files of an export: launch.sh, the engines' own files, the Kubernetes manifest
    (vLLM: through Dynamo on NVIDIA parts, its ROCm image on AMD ones, a LeaderWorkerSet for
    copies larger than a node), plan.json."""
    processes = commands(plan)  # first: a layout the engine cannot run is refused here
    manifest = kubernetes_manifest(plan) if plan.engine == "vllm" else None
    notes = (manifest,) if isinstance(manifest, str) else ()
    files = {"launch.sh": launch_script(plan, notes, processes)}
    for c in processes:  # a file naming nodes' addresses is written by launch.sh
        files.update({k: v for k, v in c.files.items() if not names_a_node(v)})
    if isinstance(manifest, tuple):
        name, text = manifest
        files[name] = text
    files["plan.json"] = json.dumps(plan_record(plan), indent=1, default=float) + "\n"
    return files
