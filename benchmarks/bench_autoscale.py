"""How long the user guide's autoscaling example takes (docs/model-part-e.md §E14), and each part
of it: the hourly plan's knee search, one day of the pool (86,400 one-second bins, about nine
million requests) and the search over a policy's eight targets.

    python benchmarks/bench_autoscale.py           # CPU seconds of each part and of the whole
    python benchmarks/bench_autoscale.py --check   # also fail if the whole takes over 30 CPU s

Llama 3.3 70B, 8-bit weights, on B200s, the chat day of scenarios/demand/chat-day.csv, p99 TTFT
<= 2 s and p99 TPOT <= 50 ms, each policy in turn with the weights from a local SSD. Times are
CPU seconds of this process, modules imported before the clock starts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package

import inference_econ as ie  # noqa: E402
from inference_econ.load.autoscaling import make_policy  # noqa: E402
from inference_econ.load.scaled_pool import arrival_counts, simulate_scaled_day  # noqa: E402
from inference_econ.optimise.autoscale import autoscale_search  # noqa: E402

LIMIT_S = 30.0
ASK = dict(
    demand=str(ROOT / "scenarios" / "demand" / "chat-day.csv"),
    weight_bits=8,
    input_lengths="lognormal:1000:0.8",
    output_lengths="lognormal:300:0.6",
    slo_ttft_p99_s=2,
    slo_tpot_p99_s=0.05,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help=f"fail over {LIMIT_S:g} CPU s")
    args = parser.parse_args()
    start = time.process_time()
    plan = ie.autoscale_plan("Llama 3.3 70B", "B200", autoscale="hpa", **ASK)
    whole = time.process_time() - start
    print(f"capacity --demand --autoscale hpa (knee search and the search): {whole:.2f} CPU s")
    arrivals = arrival_counts(plan.plan.demand.requests_per_s)
    clock = time.process_time()
    run = simulate_scaled_day(arrivals, plan.pool, make_policy("hpa", 0.8))
    one = time.process_time() - clock
    print(f"one day of the pool ({run.requests:,} requests in 86,400 bins): {one:.3f} CPU s")
    for policy in ("hpa", "keda", "planner"):
        clock = time.process_time()
        found = autoscale_search(
            plan.plan, policy, plan.startup, time_in_system_s=plan.pool.time_in_system_s
        )
        spent = time.process_time() - clock
        best = found.summary()
        print(
            f"{policy:8s} search of {len(found.tried)} targets: {spent:.2f} CPU s "
            f"(chosen {best['policy']}: {best['gpu_hours']:.1f} GPU-hours, "
            f"{best['missed_share']:.3%} missed)"
        )
    if args.check and whole > LIMIT_S:
        print(f"over {LIMIT_S:g} CPU s", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
