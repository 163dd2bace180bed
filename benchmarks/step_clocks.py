"""One decode step of a measured row's layout as its operations, priced by the engine clock
(``achievable``) and by the kernel clock (the same preset with ``kernel_tables``: each
operation at AIConfigurator's measured kernel time where the shipped tables hold it), side by
side: where the engine step's parts stand against measured kernels at an operating point of the
row's own (docs/model.md "A step as operations").

    PYTHONPATH=. python benchmarks/step_clocks.py FILE LINE REQUESTS_A_RANK CONTEXT [PROMPT]

LINE is the row's index among the file's rows (0 first); the layout is the first candidate the
row's parallelism allows (attention data parallel where it states it); REQUESTS_A_RANK
requests each decode one token at CONTEXT cached positions (with PROMPT, each request is a
prompt of that many tokens instead, nothing cached: the prefill pass's own step model, its
attention the prompts' causal attention and its output head at each prompt's last token).
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
    parser.add_argument("line", type=int)
    parser.add_argument("requests", type=float, help="requests a rank")
    parser.add_argument("context", type=float)
    parser.add_argument("prompt", type=float, nargs="?", default=0.0)
    args = parser.parse_args(argv)
    from inference_econ.measured.predicting import (
        _assumptions_for,
        _models,
        candidates,
        for_layout,
        resolve_engines,
    )
    from inference_econ.measured.reading import load_measured
    from inference_econ.model.assumptions import preset
    from inference_econ.model.clocks import EngineClock
    from inference_econ.model.kernel_clock import KernelClock
    from inference_econ.model.latency import prefill_step_model
    from inference_econ.model.operations import step_operations

    start = time.process_time()
    rows = load_measured(args.file)
    if not 0 <= args.line < len(rows):
        print(f"{args.file}: no row {args.line} (it has {len(rows)})")
        return 2
    row = rows[args.line]
    base = preset("achievable")
    found = resolve_engines([row], base).get(0)
    if found is None or isinstance(found, str) or found.profile is None:
        print(f"{args.file}: row {args.line} has no engine profile ({found})")
        return 2
    cand = candidates(row)[0]
    layout = for_layout(found, cand, row)
    a = _assumptions_for(base, layout, cand)
    ranks = cand.attention_ranks
    tokens, context = (args.prompt, 0.0) if args.prompt else (1.0, args.context)
    steps = []
    for clock, tables in ((EngineClock(), False), (KernelClock(), True)):
        at = a.replace(kernel_tables=tables)
        if args.prompt:  # a prefill pass's own step model: its attention is the prompts'
            arch = row.arch.with_precision(*row.bits)
            model = prefill_step_model(arch, row.gpu, at, True)
        else:
            model, _ = _models(row.arch, row.gpu, row.bits, at)
        step = step_operations(
            model, cand.gpus, args.requests * ranks, tokens, context, cand.pipeline, ranks, False
        )
        steps.append((step, clock.price(step)))
    (ops, engine), (_, kernel) = steps
    print(
        f"{row.arch.name} on {cand.gpus:g} {row.gpu.name} ({cand.label()}), "
        f"{args.requests:g} requests a rank, "
        + (f"prompts of {args.prompt:g}" if args.prompt else f"{args.context:g} cached positions")
    )
    print(f"  {'operation':34s} {'class':11s} {'engine ms':>10s} {'kernel ms':>10s} {'ratio':>6s}")
    for op, e, k in zip(ops, engine, kernel):
        ratio = f"{e / k:6.2f}" if k > 0 else "     -"
        print(f"  {op.name:34s} {op.kind:11s} {e * 1e3:10.3f} {k * 1e3:10.3f} {ratio}")
    total_e, total_k = float(engine.sum()), float(kernel.sum())
    print(f"  {'step':46s} {total_e * 1e3:10.2f} {total_k * 1e3:10.2f} {total_e / total_k:6.2f}")
    print(f"CPU {time.process_time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
