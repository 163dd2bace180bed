"""The checks of docs/model.md §E9-§E10 against closed forms, and the routers on sessions.

    python benchmarks/production_checks.py

1. The prefix cache's LRU against Che's approximation (Che, Tung and Wang, 2002): 200 prefixes
   of 32 tokens, Zipf(0.8) popularity, room for 50 of them, 40,000 requests (the first 10,000
   warm the cache).
2. Routers on two instances serving one request at a time, one-token answers, rho = 0.5: mean
   wait over the service time, against M/D/1 (Pollaczek-Khinchine, random routing) and
   D/D/1-like round robin.
3. Routers on 8 instances of Llama 3 8B on one H100 each (refined), sessions of 4 turns behind
   one of 4 system prompts of 1,000 tokens: prefix-cache hit rate and latency percentiles.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from inference_econ.load.arrivals import make_traffic  # noqa: E402
from inference_econ.load.deployment import Deployment, simulate_deployment  # noqa: E402
from inference_econ.load.engine import EngineConfig, build_instance  # noqa: E402
from inference_econ.load.prefix_cache import che_check  # noqa: E402
from inference_econ.load.routing import ROUTERS, Router  # noqa: E402
from inference_econ.load.simulate import simulate_group  # noqa: E402
from inference_econ.serving.setting import make_setting  # noqa: E402


def che() -> None:
    zipf = 1.0 / np.arange(1, 201) ** 0.8
    simulated, theory = che_check(zipf, 32, 50, 40000, 10000, seed=1)
    print(f"1. LRU hit ratio {simulated:.4f}; Che's approximation {theory:.4f}")


def queues() -> None:
    s = make_setting("Llama 3 8B", "H100")
    inst = build_instance(s, 1, EngineConfig(max_batch_requests=1), 1000)
    service = inst.table.time_s(1000, 0.0, 1000 * float(inst.positions(999 / 2)))
    rate = 2 * 0.5 / service
    stream = make_traffic(rate, "1000", "1", requests=4000, seed=0).stream(2, 2)
    print("2. two servers at rho 0.5, mean wait / service time (M/D/1 for random: 0.5)")
    for policy in ("random", "round_robin", "least_outstanding"):
        rec = simulate_group([inst, inst], stream, Router(policy, 2, None, 0))
        wait = (rec.first_token_s - stream.arrival_s - service).mean() / service
        print(f"   {policy:<18} {wait:.3f}")


def sessions() -> None:
    s = make_setting("Llama 3 8B", "H100", assumptions="refined")
    t = make_traffic(
        16,
        "lognormal:200:0.6",
        "lognormal:200:0.6",
        requests=2500,
        seed=0,
        shared_prefix_tokens=1000,
        shared_prefixes=4,
        session_turns=4,
        think_time_s=3.0,
    )
    print("3. 8 x Llama 3 8B on 1 H100 each, 16 req/s in sessions of 4 turns")
    print(
        f"   {'router':<18} {'hit rate':>8} {'TTFT p50 ms':>11} {'TTFT p99 ms':>11} {'TPOT p99 ms':>11}"
    )
    for router in ROUTERS:
        r = simulate_deployment(s, Deployment(1, 8), t, config=EngineConfig(router=router))
        print(
            f"   {router:<18} {r.prefix_hit_rate:>8.1%} {r.ttft_s.p50 * 1e3:>11.1f} "
            f"{r.ttft_s.p99 * 1e3:>11.1f} {r.tpot_s.p99 * 1e3:>11.2f}"
        )


if __name__ == "__main__":
    che()
    queues()
    sessions()
