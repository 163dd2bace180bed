"""How fast the serving-under-load simulator is (docs/model.md §E3).

    python benchmarks/bench_load.py            # 10,000 and 100,000 requests at three loads
    python benchmarks/bench_load.py --check    # also fail if 10,000 requests take over 2 s

Llama 3 70B, 8-bit weights, on one 8 x H100 instance (`refined`), prompts log-normal (mean 1000
tokens, sigma 0.8), outputs log-normal (mean 300, sigma 0.6), Poisson arrivals at a light load,
near the knee and overloaded. Times are of the simulation alone (the engine instance, built once
in ~20 ms, is shared), the median of three runs for 10,000 requests and one run for 100,000
(whose progress goes to stderr): wall-clock seconds and CPU seconds of this process (the same
on an idle machine; on a shared one the CPU seconds are what the simulation costs, and what
--check tests).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from inference_econ.load.arrivals import make_traffic  # noqa: E402
from inference_econ.load.engine import EngineConfig, build_instance  # noqa: E402
from inference_econ.load.simulate import simulate  # noqa: E402
from inference_econ.serving.setting import make_setting  # noqa: E402

LOADS = {"light (2 req/s)": 2.0, "near the knee (28 req/s)": 28.0, "overloaded (60 req/s)": 60.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="fail if 10,000 requests take > 2 CPU s"
    )
    args = parser.parse_args()
    setting = make_setting("Llama 3 70B", "H100", weight_bits=8, assumptions="refined")
    start = time.perf_counter()
    instance = build_instance(setting, 8, EngineConfig(), reference_context=1150.0)
    built = time.perf_counter() - start
    print(
        f"{setting.model.name} on {instance.layout.describe()} ({setting.gpu.name}); instance built in {built * 1e3:.0f} ms"
    )
    print(
        f"{'load':<26} {'requests':>9} {'wall s':>7} {'CPU s':>7} {'steps':>10} {'CPU us/request':>14}"
    )
    worst = 0.0
    for label, rate in LOADS.items():
        for count, repeats in ((10_000, 3), (100_000, 1)):
            stream = make_traffic(
                rate, "lognormal:1000:0.8", "lognormal:300:0.6", requests=count, seed=0
            ).stream()
            walls, cpus, steps = [], [], 0
            for _ in range(repeats):
                report = (
                    (lambda d, n: print(f"  {d}/{n} requests", file=sys.stderr))
                    if count > 10_000
                    else None
                )
                w0, c0 = time.perf_counter(), time.process_time()
                record = simulate(instance, stream, progress=report)
                walls.append(time.perf_counter() - w0)
                cpus.append(time.process_time() - c0)
                steps = record.steps
            wall, cpu = statistics.median(walls), statistics.median(cpus)
            if count == 10_000:
                worst = max(worst, cpu)
            print(
                f"{label:<26} {count:>9,} {wall:>7.2f} {cpu:>7.2f} {steps:>10,} {cpu / count * 1e6:>14.0f}"
            )
    if args.check and worst > 2.0:
        print(f"FAIL: 10,000 requests took {worst:.2f} CPU seconds (limit 2 s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
