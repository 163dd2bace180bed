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
``efficiency.combine`` on the row's own ``StepWork`` under its engine profile, as the engine
clock's prediction does (every row on the engine clock here, ``kernel_tables`` False; a row
``compare-measured`` prices from the kernel tables is broken down by operation by
``step_clocks.py``). Run it from the repository with ``PYTHONPATH=.`` to use this checkout's
package.

``--step LINE:DECODING:CONTEXT:PROMPT`` breaks down one step of the engine a row the load
engine runs (Offline, Server or Interactive) runs on instead (the row on line LINE of
``--file``, on the layout it states):
DECODING requests each decoding one token at mean context CONTEXT, and one prompt chunk of
PROMPT tokens (0: a decode-only step).

    python benchmarks/step_breakdown.py --file tests/data/benchmarks_test_mlperf_newer.csv \
        --step 561:202:359:222
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling scripts, however run

from measured_files import fail, measured_rows  # noqa: E402

from inference_econ.load.engine import layout_search  # noqa: E402
from inference_econ.measured import closed_forms, comparison  # noqa: E402
from inference_econ.measured import predicting as pr  # noqa: E402
from inference_econ.measured import replay as rp  # noqa: E402
from inference_econ.measured.reading import load_measured  # noqa: E402
from inference_econ.model.efficiency import StepWork, combine  # noqa: E402
from inference_econ.model.mixed_step import mixed_step_work  # noqa: E402

TRAIN = Path(__file__).resolve().parent.parent / "tests" / "data" / "benchmarks_train.csv"


def _engine_clock():
    """The achievable preset with every row on the engine profile's terms."""
    from inference_econ.model.assumptions import preset

    return preset("achievable").replace(kernel_tables=False)


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


SHOWN = ("layer", "host", "gemm fixed", "collectives", "elementwise", "logits", "gemm")
SHOWN += ("(weights)", "kv/attention", "(kv requests)")


def parse_step(text: str) -> tuple[int, float, float, float]:
    """``--step LINE:DECODING:CONTEXT:PROMPT``: a row's line and a step's shape."""
    parts = text.split(":")
    try:
        line, decoding, context, prompt = int(parts[0]), *map(float, parts[1:])
    except ValueError:
        line, decoding, context, prompt = -1, 0.0, 0.0, 0.0
    if len(parts) != 4 or line < 2 or not (decoding >= 0 and context >= 0 and prompt >= 0):
        fail(f"--step {text!r}: write LINE:DECODING:CONTEXT:PROMPT, e.g. 561:202:359:222")
    if not (decoding + prompt > 0 and max(decoding, context, prompt) < 1e9):
        fail(f"--step {text!r}: a step needs a decoding request or a prompt token, each < 1e9")
    return line, decoding, context, prompt


def engine_step_parts(path: str, line: int, shapes) -> tuple[object, object, list[dict]]:
    """(row, instance, parts of each step) of the engine the row on line ``line`` of ``path``
    runs on: ``shapes`` are (decoding requests, their mean context, prompt-chunk tokens); each
    step's parts in seconds (``parts_ms``'s keys), from one plan of that row alone."""
    rows = measured_rows(Path(path))
    if line - 2 >= len(rows):
        fail(f"--step: {path} has no line {line} (its last row is line {len(rows) + 1})")
    plan = pr.build_plan([rows[line - 2]], _engine_clock())  # that row alone: rows are independent
    cases = [c for (i, _), c in plan.load.items() if i == 0]
    if len(cases) != 1:
        fail(
            f"--step: line {line} of {path} is not a row the load engine runs on one stated "
            "layout (an MLPerf-style row that states its layout); pick another line"
        )
    inst = rp.instance(cases[0])
    search = layout_search(inst.setting, inst.gpus)
    decoding, context, prompt = (np.array([s[k] for s in shapes], dtype=float) for k in range(3))
    work = mixed_step_work(
        search.model, search.prefill_work, inst.layout, decoding, context, prompt
    )
    n = len(shapes)
    parts = {k: np.broadcast_to(v, (n,)) for k, v in parts_ms(work, search.model.profile).items()}
    out = [{k: float(v[j]) for k, v in parts.items()} for j in range(n)]
    return rows[line - 2], inst, out


def one_engine_step(path: str, spec: str) -> int:
    """``--step``: the parts of one step of the engine the row on line LINE runs on."""
    line, decoding, context, prompt = parse_step(spec)
    row, inst, (parts,) = engine_step_parts(path, line, [(decoding, context, prompt)])
    print(
        f"line {line}: {row.arch.name} on {inst.gpus} x {row.gpu.name}, layout "
        f"{inst.layout.describe()}; a step of {decoding:g} decoding requests at context "
        f"{context:g} and a {prompt:g}-token prompt chunk: {1e3 * parts['total']:.2f} ms"
    )
    for key in SHOWN:
        print(f"  {key:14s} {1e3 * parts[key]:8.3f} ms ({parts[key] / parts['total']:.0%})")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default=str(TRAIN), help="measured rows (CSV)")
    parser.add_argument("--source", default="perf-overview", help="part of the source group")
    parser.add_argument("--model", action="append", help="only these models (repeatable)")
    parser.add_argument("--gpu", action="append", help="only these GPUs (repeatable)")
    parser.add_argument("--step", help="LINE:DECODING:CONTEXT:PROMPT: one step of a row's engine")
    args = parser.parse_args()
    if args.step is not None:
        return one_engine_step(args.file, args.step)
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
    plan = pr.build_plan(rows, _engine_clock())
    if not plan.groups:  # nothing to break down: say so, not a traceback
        print(
            f"{args.file}: no offline throughput row of source {args.source!r} (models "
            f"{args.model or 'any'}, GPUs {args.gpu or 'any'}) has a steady closed-form step; "
            "rows the load engine simulates are not broken down here",
            file=sys.stderr,
        )
        return 2
    pts = closed_forms.Points.of(plan)
    work = plan.step_work()
    profiles = [g.model.profile for g in plan.groups for _ in g.D]
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
        measured = row.value * comparison._unit_scale(row)
        L = row.lengths
        print(
            f"{row.row}  {row.arch.name}  {row.gpu.name}  {L.input_mean:g}/{L.output_mean:g}  "
            f"{plan.candidates[(i, int(pts.cand[k]))].label()}  {pts.batch[k]:.0f}  "
            f"{1e3 * step:.2f}  {predicted:.0f}  {measured:.0f}  {predicted / measured - 1:+.3f}"
        )
        text = [
            f"{key} {1e3 * float(mean[key]):.2f} ({float(mean[key]) / step:.0%})" for key in SHOWN
        ]
        print("     " + ", ".join(text) + f"; {float(mean['sequences']):.0f} sequences a step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
