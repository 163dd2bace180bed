"""TensorRT-LLM's KV-cache capacity as the trtllm profile sizes it (docs/model.md §F8),
against the engine's measured largest batch of sequences (tests/data/trtllm_kv_capacity.csv:
72 trtllm-bench runs at --max_seq_len isl + osl + 1000, --max_num_tokens 2 x isl and two
memory fractions, from AIConfigurator's benchmark-anchored tests, Apache-2.0).

    PYTHONPATH=. python benchmarks/kv_capacity_check.py [--engine FILE]

Prints, per GPU and model, the median and range of (sequences the profile's cache holds) /
(sequences measured), each run's fraction and token budget put on the profile; ``--engine``
checks another profile file the same way.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "trtllm_kv_capacity.csv"


def ratios(profile) -> list[tuple[str, str, float]]:
    """(GPU, model, held / measured) of every run of the file."""
    import inference_econ as ie
    from inference_econ.model.assumptions import preset
    from inference_econ.model.latency import StepModel
    from inference_econ.model.workload import compile_workload

    with open(DATA, newline="") as f:
        runs = list(csv.DictReader(f))
    out = []
    for r in runs:
        engine = profile.replace(
            kv_cache_memory_fraction=float(r["free_gpu_memory_fraction"]),
            step_token_budget=int(r["max_num_tokens"]),
        )
        bits = {"FP8": 8, "BF16": 16}[r["precision"]]
        arch = ie.load_model(r["model"]).with_precision(weight_bits=bits, kv_cache_bits=16)
        a = preset("achievable").replace(engine=engine)
        model = StepModel(compile_workload(arch, a), ie.load_hardware(r["hardware"]), a)
        per_sequence = model.work.kv_bytes_per_token * int(r["max_seq_len"])
        held = float(model.kv_capacity_bytes(float(r["tensor_parallel"]))) / per_sequence
        out.append((r["hardware"], r["model"], held / int(r["measured_max_sequences"])))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="trtllm", help="a profile name or file")
    args = parser.parse_args(argv)
    from inference_econ.specs.engine import load_engine

    t0 = time.process_time()
    got = ratios(load_engine(args.engine))
    print(f"held / measured sequences, {args.engine} profile ({len(got)} runs of {DATA.name})")
    print(f"{'GPU':<12} {'model':<14} {'runs':>4} {'median':>7} {'min':>6} {'max':>6}")
    groups = sorted({(g, m) for g, m, _ in got})
    for g, m in groups + [("all", "")]:
        r = np.array([x for gg, mm, x in got if g == "all" or (gg, mm) == (g, m)])
        print(f"{g:<12} {m:<14} {len(r):>4} {np.median(r):7.3f} {r.min():6.3f} {r.max():6.3f}")
    print(f"CPU {time.process_time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
