"""The engine step of measured offline rows at their predicted operating point, part by part
(docs/model.md Part F, §F1-§F5): which terms make a row slow.

    python benchmarks/step_breakdown.py                       # TensorRT-LLM perf-overview rows
    python benchmarks/step_breakdown.py --source perf-overview --model "Llama 3.1 8B" --gpu H100-SXM

For each steady (offline) throughput row of the file whose source contains ``--source``: the
batch the engine settles at, the mean step (the steps a row mixes, weighted as its prediction
weighs them), predicted and measured throughput, and the step's parts in milliseconds with
their share: the per-layer, per-step, per-sequence (host) and GEMM fixed overheads, collectives,
elementwise passes and logits, the GEMM roofline (its weight reads apart), and the KV reads
(context and fixed per-request positions) against attention arithmetic. Every number comes from
``efficiency.combine`` on the row's own ``StepWork`` under its engine profile, as the prediction
does. Run it from the repository with ``PYTHONPATH=.`` to use this checkout's package.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from inference_econ.model.efficiency import StepWork, combine  # noqa: E402
from inference_econ.studies.measured import predicting as pr  # noqa: E402
from inference_econ.studies.measured.reading import load_measured  # noqa: E402

TRAIN = Path(__file__).resolve().parent.parent / "tests" / "data" / "benchmarks_train.csv"


def one_step(work: StepWork, i: int) -> StepWork:
    """Step ``i`` of a concatenated ``StepWork``."""
    return StepWork(*(np.asarray(getattr(work, f.name))[i] for f in fields(StepWork)))


def parts_ms(work: StepWork, prof) -> dict:
    """The step's parts in milliseconds (§F1): they add up to ``total``."""
    t = combine(work, prof)
    scale = prof.step_time_scale
    layer = scale * work.layers * (prof.layer_overhead_s + work.eager * prof.eager_layer_overhead_s)
    host = t.overhead_s - layer - t.gemm_fixed_s  # the step's and sequences' host work
    passes = scale * prof.elementwise_passes * work.elementwise_read_s / prof.hbm_efficiency
    return {
        "total": t.total_s,
        "layer": layer,
        "host": host,
        "gemm fixed": t.gemm_fixed_s,
        "collectives": t.collective_latency_s + t.collective_bandwidth_s,
        "elementwise": passes,
        "logits": t.elementwise_s - passes,
        "gemm": np.maximum(t.gemm_memory_s, t.gemm_compute_s),
        "(weights)": t.gemm_weight_s,
        "kv/attention": np.maximum(t.kv_s, t.attention_compute_s),
        "(kv requests)": scale
        * prof.kv_request_positions
        * work.kv_request_read_s
        / prof.kv_read_efficiency,
        "sequences": work.sequences,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default=str(TRAIN), help="measured rows (CSV)")
    parser.add_argument("--source", default="perf-overview", help="part of the source group")
    parser.add_argument("--model", action="append", help="only these models (repeatable)")
    parser.add_argument("--gpu", action="append", help="only these GPUs (repeatable)")
    args = parser.parse_args()
    rows = [
        r
        for r in load_measured(args.file)
        if args.source in (r.group or "")
        and r.kind == "end-to-end"
        and r.arch is not None
        and r.metric is not None
        and r.metric.quantity == "throughput"
        and r.scenario == "offline"
        and (not args.model or r.arch.name in args.model)
        and (not args.gpu or r.gpu.name in args.gpu)
    ]
    plan = pr.build_plan(rows, "achievable")
    if not plan.groups:  # nothing to break down: say so, not a traceback
        print(
            f"{args.file}: no offline throughput row of source {args.source!r} (models "
            f"{args.model or 'any'}, GPUs {args.gpu or 'any'}) has a steady closed-form step; "
            "rows the load engine simulates are not broken down here",
            file=sys.stderr,
        )
        return 2
    pts = pr.Points.of(plan)
    work = plan.step_work()
    profiles = [g.model.profile for g in plan.groups for _ in g.D]
    shown = ("layer", "host", "gemm fixed", "collectives", "elementwise", "logits", "gemm")
    shown += ("(weights)", "kv/attention", "(kv requests)")
    print("row  model  GPU  in/out  layout  batch  step_ms  predicted  measured  error")
    print("     parts: ms (share of the step)")
    for k in range(len(pts.row)):
        i = int(pts.row[k])
        row = plan.rows[i]
        a, b = int(pts.a[k]), int(pts.b[k])
        pa = parts_ms(one_step(work, a), profiles[a])
        pb = parts_ms(one_step(work, b), profiles[b])
        mean = {key: pts.wa[k] * pa[key] + pts.wb[k] * pb[key] for key in pa}
        step = float(mean["total"])
        predicted = pts.replicas[k] * pts.batch[k] / step / row.per_count
        measured = row.value * pr._unit_scale(row)
        L = row.lengths
        print(
            f"{row.row}  {row.arch.name}  {row.gpu.name}  {L.input_mean:g}/{L.output_mean:g}  "
            f"{plan.candidates[(i, int(pts.cand[k]))].label()}  {pts.batch[k]:.0f}  "
            f"{1e3 * step:.2f}  {predicted:.0f}  {measured:.0f}  {predicted / measured - 1:+.3f}"
        )
        text = [
            f"{key} {1e3 * float(mean[key]):.2f} ({float(mean[key]) / step:.0%})" for key in shown
        ]
        print("     " + ", ".join(text) + f"; {float(mean['sequences']):.0f} sequences a step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
