"""Speculative decoding under load against vLLM's published measurement (docs/model.md §E8).

    python benchmarks/spec_under_load.py

vLLM's blog "How Speculative Decoding Boosts vLLM Performance by up to 2.8x" (2024-10-17)
measured Llama 3 70B on 4 x H100 with ShareGPT prompts and a Qwama-0.5B draft: up to 1.5x
faster token generation at 1 query per second, 1.4x slower at high load. It gives neither the
acceptance rate nor the draft length; this script prints the simulated ratio (mean time per
output token without speculation over with it) for several acceptances, fixed at every batch as
vLLM runs it (5 draft tokens), and with the engine switching speculation off above 16 running
requests. ShareGPT-like lengths (prompts log-normal, mean 300 tokens, sigma 0.9; answers mean
250, sigma 0.8) are an assumption, as is the `achievable` preset's vLLM profile.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from inference_econ.load.arrivals import make_traffic  # noqa: E402
from inference_econ.load.deployment import Deployment, simulate_deployment  # noqa: E402
from inference_econ.load.engine import EngineConfig  # noqa: E402
from inference_econ.serving.setting import make_setting  # noqa: E402

RATES = (1.0, 2.0, 4.0, 8.0, 16.0)
ACCEPTANCES = (0.6, 0.7, 0.8)


def main() -> None:
    common = dict(assumptions="achievable", engine="vllm")
    plain = make_setting("Llama 3 70B", "H100", **common)
    print(
        "Llama 3 70B on 4 x H100 (achievable, vLLM profile), draft Qwama 0.5B, 5 draft tokens;"
        " TPOT without / with speculation (above 1: faster)"
    )
    print(
        f"{'req/s':>6} " + " ".join(f"{'a=' + format(a, 'g'):>9}" for a in ACCEPTANCES) + "  off>16"
    )
    for rate in RATES:
        t = make_traffic(rate, "lognormal:300:0.9:4000", "lognormal:250:0.8:2000", requests=3000)
        base = simulate_deployment(plain, Deployment(4), t).tpot_s.mean
        cells = []
        for a in ACCEPTANCES:
            spec = make_setting(
                "Llama 3 70B",
                "H100",
                draft="Qwama 0.5B",
                acceptance=a,
                max_draft_tokens=5,
                **common,
            )
            r = simulate_deployment(spec, Deployment(4), t)
            cells.append(base / r.tpot_s.mean)
        spec = make_setting(
            "Llama 3 70B", "H100", draft="Qwama 0.5B", acceptance=0.7, max_draft_tokens=5, **common
        )
        off = simulate_deployment(
            spec, Deployment(4), t, config=EngineConfig(speculation_max_batch=16)
        )
        print(
            f"{rate:>6g} "
            + " ".join(f"{c:>9.2f}" for c in cells)
            + f"  {base / off.tpot_s.mean:>6.2f}"
        )


if __name__ == "__main__":
    main()
