"""Where the load engine runs a measured row: for each row the replay simulates (Offline runs
of a whole dataset, Server, Interactive, closed loop), on each candidate layout, the engine
limits it ran under, what its KV cache holds, and what the replay measured - the batch in
flight, the time per output token, the first token's, the throughput - beside the row's value.
``step_breakdown.py`` breaks down rows with a closed-form steady state and ``step_clocks.py``
one step at a batch you name; this says which batch a simulated row's prediction came from.

    PYTHONPATH=. python benchmarks/operating_point.py FILE [LINE ...] [--assumptions PRESET]

LINE is a row's index among the file's rows (0 first; default every row). Each line printed is
one (row, layout): the instance's request and token limits (a rank's under attention data
parallelism, and where they come from for a row trtllm-bench ran with its own), the requests
of the row's full length (input + output) its KV cache holds, and the replay's mean requests in
flight, mean TPOT and TTFT and output tokens per second per GPU.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("lines", nargs="*", type=int, help="rows by index (0 first)")
    parser.add_argument("--assumptions", default="achievable")
    args = parser.parse_args(argv)
    from inference_econ.errors import InfeasibleError, SpecError
    from inference_econ.measured import replay as rp
    from inference_econ.measured.predicting import build_plan, tool_limits_text
    from inference_econ.measured.reading import load_measured

    start = time.process_time()
    try:
        rows = load_measured(args.file)
    except SpecError as exc:
        print(exc)
        return 2
    lines = args.lines or list(range(len(rows)))
    bad = [n for n in lines if not 0 <= n < len(rows)]
    if bad:
        print(f"{args.file}: no row {bad[0]} (it has {len(rows)})")
        return 2
    chosen = [rows[n] for n in lines]
    plan = build_plan(chosen, args.assumptions)
    if not plan.load:
        print(f"{args.file}: none of these rows is replayed under load (see step_breakdown.py)")
        return 0
    for (i, j), case in plan.load.items():
        row, cand = chosen[i], plan.candidates[(i, j)]
        try:
            inst = rp.instance(case)
        except InfeasibleError as exc:  # a layout that cannot hold the row says why
            print(f"row {lines[i]} on {cand.label()}: infeasible: {exc}")
            continue
        how = tool_limits_text(plan.engines[i], cand, row) if i in plan.engines else ""
        print(_line(lines[i], row, cand, case, inst, how, rp.replay(case)))
    print(f"CPU {time.process_time() - start:.1f} s (PYTHONDONTWRITEBYTECODE=1: no bytecode)")
    return 0


def _line(n, row, cand, case, inst, how: str, out) -> str:
    """One (row, layout): its limits (``how``: trtllm-bench's own, as the engine label states
    them, where it picked them), what its KV cache holds and the replay's figures (``out``)."""
    ranks = max(int(cand.attention_ranks), 1)
    rank = " a rank" if ranks > 1 else ""
    cfg = inst.config
    limits = how or (
        f"{cfg.max_batch_requests // ranks:,} requests and {cfg.step_token_budget // ranks:,} "
        f"tokens a step{rank}"
    )
    full = case.prompt[0] + case.output[0]
    held = inst.max_requests_at(full) // ranks
    gpus = case.tensor * case.pipeline * case.replicas
    figures = (
        f"{out.streams / case.replicas / ranks:,.0f} in flight{rank}, TPOT {out.tpot * 1e3:.1f} "
        f"ms, TTFT {out.ttft:.2f} s, {out.throughput / gpus:,.0f} tok/s per GPU"
        if out.ok
        else out.note
    )
    return (
        f"row {n} {row.arch.name} on {cand.gpus:g} {row.gpu.name} ({cand.label()})\n"
        f"    limits {limits}; KV cache holds {held:,} requests of {full:,.0f} tokens{rank}\n"
        f"    replay: {figures}\n"
        f"    {row.metric_text} measured {row.value:,.4g} {row.unit}"
    )


if __name__ == "__main__":
    sys.exit(main())
