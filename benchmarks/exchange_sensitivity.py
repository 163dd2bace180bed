"""What the attention-DP expert exchange on Hopper would have to cost for the Hopper MoE groups
to sit on their measurements: the kernel clock's all-gather and reduce-scatter of an MoE layer
under attention data parallelism (TensorRT-LLM's AllGatherReduceScatter strategy, priced from
NCCL's ``all_gather`` and ``reduce_scatter`` tables; Blackwell's one-sided all-to-all is not
touched) times K, and at each K the MoE attention-DP groups of TensorRT-LLM 1.2's performance
overview (``overview_intervals.py``'s, 86 MoE figures) and of AIConfigurator's measured runs
(``silicon_runs_judge.py --per-group 400``'s Hopper lines).

Why it is asked: where the ranks hold different token counts, TensorRT-LLM gathers with the
sizes of each rank, which its op runs as one NCCL group of a broadcast per rank, per tensor
(hidden states, their scales, the expert ids and weights), and scatters as a group of a reduce
per rank (``cpp/tensorrt_llm/thop/allgatherOp.cpp`` and ``reducescatterOp.cpp``; the sizes are
passed unless ``use_dp_padding``, ``fused_moe/communication/allgather_reducescatter.py``).
NCCL-tests' ``all_gather`` and ``reduce_scatter`` tables time neither grouping. No public table
measures it, so nothing here is fitted or shipped: it prints what such a cost would move. NCCL's
source schedules such a group as one all-gather of the same bytes (docs/model-part-f.md §F7, "The
gather's grouping, not timed"), so a K of 2 or 3 is not what the grouping costs.

    PYTHONPATH=. python benchmarks/exchange_sensitivity.py [--factors 1 2 3]

Each judge runs at each factor in a process of its own (the replays keep what they computed).
"""

from __future__ import annotations

import argparse
import os
import runpy
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The judges run at each factor, and the lines of their output kept (their starts): the
#: overview's errors are of throughput (+: predicted too fast), the runs' of mean TPOT and TTFT
#: (+: predicted too slow).
JUDGES = (
    ("overview_intervals.py", ["--files", "moe,moe_rest"], ("group", "MoE DP+EP")),
    ("silicon_runs_judge.py", ["--per-group", "400"], ("mean_", "MoE DEP Hopper  ")),
)


def child(factor: float, script: str, args: list[str]) -> None:
    """Run ``script`` with the exchange's gather and scatter priced ``factor`` times."""
    sys.path.insert(0, str(ROOT))  # this checkout's package
    from inference_econ.model import kernel_clock

    priced = kernel_clock._Pricer._collective

    def scaled(self, op):
        cost = priced(self, op)
        exchange = "(all-gather" in op.name or "(reduce-scatter" in op.name
        return cost * factor if exchange else cost

    kernel_clock._Pricer._collective = scaled
    sys.argv = [script, *args]
    runpy.run_path(str(ROOT / "benchmarks" / script), run_name="__main__")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--factors", nargs="+", type=float, default=[1.0, 2.0, 3.0])
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(float(args.child[0]), args.child[1], args.child[2:])
        return 0
    start = time.time()
    for factor in args.factors:
        print(f"exchange's all-gather and reduce-scatter x {factor:g}")
        for script, extra, keep in JUDGES:
            done = subprocess.run(
                [sys.executable, __file__, "--child", str(factor), script, *extra],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                print(f"  {script} failed:\n{done.stderr[-2000:]}")
                return 1
            for line in done.stdout.splitlines():
                if any(line.strip().startswith(k) for k in keep):
                    print(f"  {line.rstrip()}")
        print()
    bytecode = "no compiled bytecode" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "bytecode"
    print(f"{time.time() - start:.0f} s wall ({bytecode})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
