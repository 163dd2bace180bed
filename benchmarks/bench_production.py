"""How fast the simulator serves production-like traffic (docs/model.md §E8-§E10): prefix
caching, multi-turn sessions and speculative decoding together.

    python benchmarks/bench_production.py           # 10,000 requests at three loads
    python benchmarks/bench_production.py --check   # also fail if any takes over 3 CPU s

Llama 3.3 70B, 8-bit weights, on one 8 x H100 instance (`refined`) with an EAGLE head
(acceptance 0.7, up to 4 tokens per cycle) switched off above 64 running requests; every prompt
starts with one of 4 system prompts of 1,500 tokens, sessions of 4 turns (new messages
log-normal, mean 300 tokens; answers log-normal, mean 250), sent 2 s (mean) after the answer
before; Poisson session starts at a light load, a heavy one and overloaded. Then a group of 4
such instances behind the prefix-aware router (10,000 requests in all). Times are of the
simulation alone (instances built once, modules imported before the clock starts, so compiling
bytecode or not does not enter them), the median of three runs: wall-clock seconds and CPU
seconds of this process (what --check tests).
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
from inference_econ.load.routing import Router  # noqa: E402
from inference_econ.load.simulate import simulate, simulate_group  # noqa: E402
from inference_econ.serving.setting import make_setting  # noqa: E402

LOADS = {"light (2 req/s)": 2.0, "heavy (16 req/s)": 16.0, "overloaded (40 req/s)": 40.0}
LIMIT_S = 3.0


def traffic(rate: float, requests: int = 10_000):
    return make_traffic(
        rate,
        "lognormal:300:0.8",
        "lognormal:250:0.6",
        requests=requests,
        seed=0,
        shared_prefix_tokens=1500,
        shared_prefixes=4,
        session_turns=4,
        think_time_s=2.0,
    )


def timed(run) -> tuple[float, float, object]:
    walls, cpus, out = [], [], None
    for _ in range(3):
        w0, c0 = time.perf_counter(), time.process_time()
        out = run()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help=f"fail above {LIMIT_S:g} CPU s")
    args = parser.parse_args()
    setting = make_setting(
        "Llama 3.3 70B",
        "H100",
        weight_bits=8,
        assumptions="refined",
        draft_heads="eagle",
        acceptance=0.7,
        max_draft_tokens=4,
    )
    config = EngineConfig(speculation_max_batch=64)
    instance = build_instance(setting, 8, config, reference_context=2400.0)
    compiled = "with" if not sys.dont_write_bytecode else "without"
    print(
        f"{setting.model.name} on {instance.layout.describe()} ({setting.gpu.name}), "
        f"{instance.draft.describe()}; Python {sys.version.split()[0]}, {compiled} bytecode "
        "files written (PYTHONDONTWRITEBYTECODE; the timings exclude imports)"
    )
    print(
        f"{'load':<28} {'requests':>9} {'wall s':>7} {'CPU s':>7} {'hit rate':>9} "
        f"{'speculated':>10}"
    )
    worst = 0.0
    for label, rate in LOADS.items():
        stream = traffic(rate).stream()
        wall, cpu, record = timed(lambda s=stream: simulate(instance, s))
        worst = max(worst, cpu)
        hit = record.cached_tokens.sum() / stream.prompt_tokens.sum()
        spec = record.spec_steps / max(record.decode_steps, 1)
        print(f"{label:<28} {len(stream):>9,} {wall:>7.2f} {cpu:>7.2f} {hit:>9.1%} {spec:>10.0%}")
    t = traffic(4 * 16.0, requests=2_500)  # 2,500 per instance: 10,000 in all
    stream = t.stream(4, 4)
    keys = stream.sharing.route_keys

    def group():
        return simulate_group([instance] * 4, stream, Router("prefix_aware", 4, keys, 0))

    wall, cpu, record = timed(group)
    worst = max(worst, cpu)
    hit = record.cached_tokens.sum() / stream.prompt_tokens.sum()
    spec = record.spec_steps / max(record.decode_steps, 1)
    label = "4 instances, prefix-aware"
    print(f"{label:<28} {len(stream):>9,} {wall:>7.2f} {cpu:>7.2f} {hit:>9.1%} {spec:>10.0%}")
    if args.check and worst > LIMIT_S:
        print(f"FAIL: a run took {worst:.2f} CPU seconds (limit {LIMIT_S:g} s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
