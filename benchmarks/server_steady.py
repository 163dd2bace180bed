"""What would make a replayed Server run steady (issue 21; docs/model.md §F9, "The shape of a
replayed Server run" and "Tried and not taken"): ``compare-measured FILE --assumptions
achievable`` with one experimental change at a time, patched in at run time (the model is not
changed), and the figures that judge it.

    python benchmarks/server_steady.py tests/data/benchmarks_train_mlperf_v50.csv \\
        tests/data/benchmarks_train.csv [--budgets] [--admission recompute] \\
        [--fixed-share 0.3] [--overlap]

* ``--budgets``: NVIDIA's MLPerf harness budgets for Llama 2 70B on TensorRT-LLM, Server rows of
  MLPerf v5.0 and later (§F9 "Tried and not taken": 2,048 requests and 3,584 tokens per step on
  B200 and GB200, 2,048 and 1,536 on H200, H100 NVL, GH200 and L40S); ``--admission``: those
  rows' admission as well (``recompute``: the nearest to the harness's ``max_util``).
* ``--fixed-share PHI``: a counterfactual, not a model: every Server instance's step table
  becomes ``PHI·t_ref + (1 - PHI)·t(x)``, ``t_ref`` the step of the replay's steady-state
  estimate at the row's TPOT limit: the same step there, a load-independent part ``PHI`` of it.
* ``--overlap``: a GEMM whose reads and arithmetic overlap imperfectly: the step's GEMM roofline
  ``max(reads, arithmetic) + BETA·min(reads, arithmetic)`` with ``BETA = 1`` and the trtllm terms
  refitted with it (``REFIT``).

Prints, per file: median and p90 of |predicted/measured - 1| over every row with status ok; by
scenario and metric for the TensorRT-LLM rows, median |error| and median log(predicted/measured);
the median Server/Offline throughput ratio of the systems with both rows, measured and
predicted; the mean TPOT by arrival fifth over the run's p99 TPOT of the Llama 2 70B Server runs
read; the CPU seconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from inference_econ.measured import comparison, fit_problem, predicting, replay  # noqa: E402
from inference_econ.model import achievable, efficiency, mixed_step  # noqa: E402
from inference_econ.specs import engine as spec_engine  # noqa: E402

#: NVIDIA's harness budgets for Llama 2 70B (requests, tokens per step), by GPU name part: the
#: counts and sources are in docs/model.md §F9 ("Tried and not taken").
BUDGETS = (("B200", (2048, 3584)), ("H200", (2048, 1536)), ("H100-NVL", (2048, 1536)))
BUDGETS += (("L40S", (2048, 1536)),)
#: ``--overlap``: the trtllm terms refitted with BETA = 1 (the term ``gemm_overlap_loss``
#: added to specs/engine.py TERMS and priors/calibration.yaml with prior 1 +- 0.01, then
#: ``python benchmarks/fit_engines.py --check``, 2026-11-23; with a free prior of 0 +- 0.5 the
#: training rows leave it at 0.17 +- 0.29, not fitted).
BETA = 1.0
REFIT = dict(
    gemm_efficiency_scale=0.99388,
    moe_gemm_efficiency=0.78197,
    elementwise_passes=13.842,
    layer_overhead_s=9.8063e-06,
)
QUANTITIES = ("mean_TTFT", "mean_TPOT", "p99_TTFT", "p99_TPOT", "throughput_total")


def patch_budgets(admission: str | None) -> None:
    """The harness budgets (and admission) on Llama 2 70B Server rows of MLPerf v5.0 on."""
    case = predicting._case

    def patched(row, cand, a, config):
        found = re.search(r"inference_results_v(\d+)\.(\d+)", row.source or "")
        later = found is not None and (int(found[1]), int(found[2])) >= (5, 0)
        trt = a.engine is not None and a.profile().family == "trtllm"
        llama = row.arch is not None and "Llama 2 70B" in row.arch.name
        if later and trt and llama and row.scenario == "server":
            for part, (batch, tokens) in BUDGETS:
                if part in row.gpu.name:
                    config = dataclasses.replace(
                        config, max_batch_requests=batch, step_token_budget=tokens
                    )
                    if admission:
                        config = dataclasses.replace(config, admission=admission)
                    break
        return case(row, cand, a, config)

    predicting._case = patched


def patch_fixed_share(phi: float) -> None:
    """Every Server instance's steps as ``phi·t_ref + (1 - phi)·t``."""
    instance = replay.instance

    @functools.lru_cache(maxsize=256)
    def patched(case):
        inst = instance(case)
        if case.scenario != "server":
            return inst
        t_ref = replay.estimate(case, inst).tpot
        table = inst.table.slowed(1.0 - phi)
        table.fixed_s = [v + phi * t_ref if k else 0.0 for k, v in enumerate(table.fixed_s)]
        return dataclasses.replace(inst, table=table)

    replay.instance = patched


def patch_overlap() -> None:
    """``efficiency.combine`` with BETA·min(reads, arithmetic) added, and trtllm's REFIT."""
    combine = efficiency.combine

    def patched(work, terms):
        times = combine(work, terms)
        m, c = times.gemm_memory_s, times.gemm_compute_s  # already scaled
        return dataclasses.replace(times, total_s=times.total_s + BETA * np.minimum(m, c))

    for module in (efficiency, mixed_step, achievable, fit_problem):
        module.combine = patched  # type: ignore[attr-defined]
    load = spec_engine.load_engine

    @functools.lru_cache(maxsize=64)
    def load_refit(name):
        prof = load(name)
        return dataclasses.replace(prof, **REFIT) if prof.family == "trtllm" else prof

    spec_engine.load_engine = load_refit
    comparison.load_engine = load_refit


def keep_runs() -> list:
    """Keep every Server run whose statistics a row reads: (case, result)."""
    kept: list = []
    scaled = replay._scaled

    def keep(case, result, rate=float("nan")):
        if case.scenario == "server" and result.latencies is not None:
            kept.append((case, result))
        return scaled(case, result, rate)

    replay._scaled = keep
    return kept


def report(path: str, kept: list) -> None:
    kept.clear()
    d = comparison.compare(path, assumptions="achievable").table
    d = d[d.status == "ok"].copy()
    d["ae"] = (d.predicted / d.measured - 1).abs()
    d["log"] = np.log(d.predicted / d.measured)
    print(
        f"{path}: {len(d)} rows, median |error| {d.ae.median():.4f}, p90 {d.ae.quantile(0.9):.4f}"
    )
    trt = d[d.engine.astype(str).str.contains("trtllm")]
    for (scenario, metric), g in trt.groupby(["scenario", "metric"]):
        if metric in QUANTITIES and len(g) >= 3:
            print(
                f"  {scenario:11s} {metric:16s} {len(g):4d} rows  median |error| "
                f"{g.ae.median():.3f}  p90 {g.ae.quantile(0.9):.3f}  bias {g.log.median():+.3f}"
            )
    thr = trt[trt.metric == "throughput_total"].copy()
    thr["system"] = thr.source.str.extract(r"results/([^/]+)/")[0] + thr.model.str.slice(0, 12)
    ratio = {}
    for col in ("measured", "predicted"):
        p = thr.pivot_table(index="system", columns="scenario", values=col, aggfunc="max")
        if {"server", "offline"} <= set(p.columns):
            ratio[col] = (p.server / p.offline).dropna()
    if ratio:
        print(
            f"  Server/Offline throughput, median of {len(ratio['measured'])} systems: measured "
            f"{ratio['measured'].median():.3f}, predicted {ratio['predicted'].median():.3f}"
        )
    last = {(c.setting.model.name, c.setting.gpu.name, c.tensor): r for c, r in kept}
    for key, result in last.items():  # the last run of each: a row's reading run
        if "Llama 2 70B" not in key[0]:
            continue
        parts = np.array_split(result.latencies.tpot_s, 5)
        fifths = " ".join(f"{np.nanmean(x) / result.tpot_s.p99:.2f}" for x in parts)
        print(f"  {key[0]} / {key[1]} / TP{key[2]}: mean TPOT by fifth / p99 {fifths}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--budgets", action="store_true")
    parser.add_argument("--admission", choices=("recompute", "no_evict"))
    parser.add_argument("--fixed-share", type=float, default=0.0)
    parser.add_argument("--overlap", action="store_true")
    args = parser.parse_args()
    if args.admission and not args.budgets:
        parser.error("--admission applies to the rows --budgets patches")
    start = time.process_time()
    if args.budgets:
        patch_budgets(args.admission)
    if args.fixed_share:
        patch_fixed_share(args.fixed_share)
    if args.overlap:
        patch_overlap()
    kept = keep_runs()
    for path in args.files:
        report(path, kept)
    flags = [f"--budgets{' --admission ' + args.admission if args.admission else ''}"] * bool(
        args.budgets
    )
    flags += [f"--fixed-share {args.fixed_share:g}"] * bool(args.fixed_share)
    flags += ["--overlap"] * args.overlap
    print(f"experiment: {' '.join(flags) or 'none'}; CPU: {time.process_time() - start:.0f} s")


if __name__ == "__main__":
    main()
