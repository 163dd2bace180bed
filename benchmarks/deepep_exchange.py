"""SGLang's DeepEP dispatch and combine as AIConfigurator timed them (``kernels/<gpu>/sglang-*/
deepep_*.csv.gz``) against the ideal bound's charge (``refined``, §B11) and SGLang's step
(``achievable`` with ``--engine sglang``; ``deepep``: the same with ``deepep_exchange``, as
its DeepEP launches and two-batch overlap run): for each GPU, kernel (low-latency: decode steps of
``num_token`` sequences a rank; normal: prefill passes of that many tokens a rank, the fastest
of its SM settings) and shape a catalogue model has, the median and largest of charged over
measured, and by node count. A bound's largest must stay below 1. SGLang's plain step moves
a dense-attention layout's tokens with no expert all-to-all (an all-reduce instead), so its
column reads "-" where the rows' layout runs none.

    PYTHONPATH=. python benchmarks/deepep_exchange.py [--by-nodes]
    PYTHONPATH=. python benchmarks/deepep_exchange.py --fit [--write kernels/deepep_exchange.yaml]

``--fit`` fits each part's in-node rows (every shape, both directions, the fastest setting of
each size) with one line a kernel, time = latency + bytes / (efficiency x the links' rate):
the bytes the engine step charges (a token's k copies of d elements, FP8 with its scales
dispatched, BF16 combined; ``efficiency`` takes the normal kernels' copy a destination rank),
at the seconds a byte the step's expert all-to-all takes inside one domain at full rate;
least squares in log time. ``--write`` writes the lines the engine step reads.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

#: (catalogue GPU, kernels/ folder, SGLang release folder of its DeepEP tables).
GPUS = (
    ("H100-SXM", "h100_sxm", "0.5.6.post2"),
    ("H200", "h200_sxm", "0.5.6.post2"),
    ("B200", "b200_sxm", "0.5.12"),
    ("GB200", "gb200", "0.5.12"),
    ("B300", "b300_sxm", "0.5.12"),
    ("GB300", "gb300", "0.5.12"),
)
#: Catalogue models by the tables' (hidden size, top-k, experts).
MODELS = {
    (7168, 8, 256): "DeepSeek-R1",
    (7168, 8, 384): "Kimi K2",
    (4096, 8, 128): "Qwen3-235B-A22B",
    (2048, 8, 128): "Qwen3-30B-A3B",
    (5120, 1, 128): "Llama 4 Maverick",
    (4096, 2, 8): "Mixtral 8x7B",
}
#: (kernel table, its dispatch and combine times in µs).
KERNELS = (
    ("deepep_low_latency", ("dispatch_avg_t_us", "combine_avg_t_us")),
    ("deepep_normal", ("dispatch_transmit_us", "combine_transmit_us")),
)


def fastest(table, rows, times) -> dict:
    """The fastest measured (dispatch, combine) µs of each (nodes, tokens) among ``rows``."""
    out: dict = {}
    for i in rows:
        key = (int(table["node_num"][i]), int(table["num_token"][i]))
        got = (float(table[times[0]][i]), float(table[times[1]][i]))
        out[key] = tuple(map(min, zip(out.get(key, got), got)))
    return out


def ratios(model_name, gpu, preset, kernel, measured) -> list:
    """(nodes, tokens, dispatch, combine) charged over measured for one shape and kernel."""
    import inference_econ as ie
    from inference_econ.model.latency import StepModel, prefill_step_model, stated_experts
    from inference_econ.model.workload import compile_workload

    arch, part = ie.load_model(model_name), ie.load_hardware(gpu)
    preset = stated_experts(preset, True)  # DeepEP runs at every size: the experts split
    if kernel == "deepep_low_latency":
        model = StepModel(compile_workload(arch, preset), part, preset)
    else:
        model = prefill_step_model(arch, part, preset)
    gi = next(i for i, g in enumerate(model.work.groups) if g.experts > 1)
    layers = model.work.groups[gi].layers
    out = []
    for (nodes, tokens), (dispatch, combine) in sorted(measured.items()):
        ep = 8.0 * nodes  # AIConfigurator's collectors ran 8 ranks a node
        step = (ep * tokens, 1.0) if kernel == "deepep_low_latency" else (1.0, ep * tokens)
        calls = [
            c
            for c in model.pipeline_part(ep, *step, 0.0, 1.0).shared_calls
            if c.what in ("expert dispatch", "expert combine")
        ][:2]
        if len(calls) < 2:  # a profile that moves no tokens on this layout (an all-reduce)
            return []
        us = [float(c.time_s()) / layers * 1e6 for c in calls]
        out.append((nodes, tokens, us[0] / dispatch, us[1] / combine))
    return out


def fit_lines() -> dict:
    """(latency seconds, efficiency, rows, median and largest |error|) of each part's kernels
    inside one node (``--fit``)."""
    import numpy as np
    from scipy.optimize import least_squares

    import inference_econ as ie
    from inference_econ.model.collectives import (
        EXPERT_ALLTOALL,
        OUTSIDE_DOMAIN_S,
        CollectiveCost,
        Protocol,
    )
    from inference_econ.specs.kernel_tables import kernel_table

    unit = (Protocol("full rate", 1.0, 0.0, OUTSIDE_DOMAIN_S, 0.0),)
    out: dict = {}
    for gpu, folder, release in GPUS:
        per_byte = CollectiveCost(8.0, 1.0, ie.load_hardware(gpu), EXPERT_ALLTOALL, unit).per_byte[
            0
        ]
        for kernel, times in KERNELS:
            table = kernel_table(folder, kernel, f"sglang-{release}")
            keep = table["node_num"] == 1
            if "device" in table.names:
                keep &= np.char.find(table["device"].astype(str), gpu.split("-")[0]) >= 0
            best: dict = {}
            for i in np.flatnonzero(keep):
                key = tuple(int(table[c][i]) for c in ("hidden_size", "num_topk", "num_token"))
                got = (float(table[times[0]][i]), float(table[times[1]][i]))
                best[key] = tuple(map(min, zip(best.get(key, got), got)))
            if not best:
                continue
            full, measured = [], []
            for (d, k, n), (dispatch, combine) in best.items():
                for element, us in ((1.0 + 4.0 / 128.0, dispatch), (2.0, combine)):
                    full.append(n * k * d * element * per_byte)
                    measured.append(us * 1e-6)
            x, y = np.array(full), np.array(measured)

            def residual(p, x=x, y=y):
                return np.log(p[0] + x / p[1]) - np.log(y)

            fit = least_squares(residual, [1e-5, 0.5], bounds=([0.0, 0.01], [1e-2, 4.0]))
            err = np.abs(np.exp(residual(fit.x)) - 1.0)
            row = (
                float(fit.x[0]),
                float(fit.x[1]),
                len(y),
                float(np.median(err)),
                float(err.max()),
            )
            out.setdefault(folder, {})[kernel.removeprefix("deepep_")] = row
    return out


def write_lines(lines: dict, path: Path) -> None:
    """The fitted lines as kernels/deepep_exchange.yaml (its header says where they come from)."""
    text = [
        "# DeepEP's expert dispatch and combine inside one node (8 ranks), as one line a kernel:",
        "# time = latency_s + bytes / (efficiency x the links' one-way rate), bytes as the engine",
        "# step charges them (a token's k copies of d elements: FP8 with one 4-byte scale per 128",
        "# dispatched, BF16 combined; the normal kernels send a copy a destination rank, which",
        "# their efficiency takes in). Least squares in log time over every in-node row of each",
        "# part's tables (each size's fastest SM setting, both directions): NVIDIA AIConfigurator's",
        "# DeepEP tables (github.com/ai-dynamo/aiconfigurator at",
        "# 095f58a51c4ca8e61b66ec108d86f223f8d559ce, .../systems/data/<gpu>/comm/sglang/<release>/",
        "# wideep_deepep_{ll,normal}_perf.parquet; Apache-2.0, kernels/LICENSE-aiconfigurator), as",
        "# shipped in kernels/<gpu>/sglang-<release>/. Written by 'PYTHONPATH=. python",
        "# benchmarks/deepep_exchange.py --fit --write kernels/deepep_exchange.yaml': rerun it",
        "# rather than edit. rows: the calls fitted; error: median and largest |fitted/measured - 1|.",
        "lines:",
    ]
    for folder, kernels in lines.items():
        text.append(f"  {folder}:")
        for kernel, (latency, share, rows, median, worst) in kernels.items():
            text.append(
                f"    {kernel}: {{latency_s: {latency:.4g}, efficiency: {share:.4g}}}"
                f"   # {rows} rows, error {median:.3f} / {worst:.3f}"
            )
    path.write_text("\n".join(text) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--by-nodes", action="store_true", help="also each node count's line")
    parser.add_argument("--fit", action="store_true", help="fit the in-node lines")
    parser.add_argument("--write", type=Path, help="with --fit: write them here")
    args = parser.parse_args(argv)
    if args.fit:
        lines = fit_lines()
        for folder, kernels in lines.items():
            for kernel, (latency, share, rows, median, worst) in kernels.items():
                print(f"{folder:9s} {kernel:12s} latency {latency * 1e6:6.1f} us  efficiency "
                      f"{share:.3f}  {rows:4d} rows  |error| median {median:.3f} max {worst:.3f}")  # fmt: skip
        if args.write:
            write_lines(lines, args.write)
            print(f"wrote {args.write}")
        return 0
    import numpy as np

    from inference_econ.model.assumptions import ACHIEVABLE, REFINED
    from inference_econ.specs.kernel_tables import kernel_table

    start = time.process_time()
    from inference_econ.specs.engine import load_engine

    deepep = load_engine("sglang").with_terms(deepep_exchange=1)  # as its DeepEP launches run
    presets = (
        ("bound", REFINED),
        ("sglang", ACHIEVABLE.replace(engine="sglang")),
        ("deepep", ACHIEVABLE.replace(engine=deepep)),
    )
    print(f"{'GPU':9s} {'kernel':19s} {'model':17s} {'rows':>4s}  " + "  ".join(
        f"{n} median/max" for n, _ in presets))  # fmt: skip
    worst = 0.0
    for gpu, folder, release in GPUS:
        for kernel, times in KERNELS:
            table = kernel_table(folder, kernel, f"sglang-{release}")
            for shape, name in MODELS.items():
                keep = (
                    (table["hidden_size"] == shape[0])
                    & (table["num_topk"] == shape[1])
                    & (table["num_experts"] == shape[2])
                )
                if "device" in table.names:  # H200's normal table also holds an H100's rows
                    keep &= np.char.find(table["device"].astype(str), gpu.split("-")[0]) >= 0
                measured = fastest(table, np.flatnonzero(keep), times)
                if not measured:
                    continue
                found = {p: ratios(name, gpu, a, kernel, measured) for p, a in presets}
                cells = []
                for p, _ in presets:
                    if not found[p]:
                        cells.append(f"{'-':>6s} / {'-':>4s}")
                        continue
                    r = np.array([x[2:] for x in found[p]])
                    cells.append(f"{np.median(r):6.2f} / {r.max():4.2f}")
                    if p == "bound":
                        worst = max(worst, float(r.max()))
                line = f"{gpu:9s} {kernel:19s} {name:17s} {len(measured):4d}  "
                print(line + "      ".join(cells))
                if args.by_nodes:
                    for n in sorted({x[0] for x in found["bound"]}):
                        sub = [
                            f"{np.median([x[2:] for x in found[p] if x[0] == n]):6.2f} / {np.max([x[2:] for x in found[p] if x[0] == n]):4.2f}"
                            if found[p]
                            else f"{'-':>6s} / {'-':>4s}"
                            for p, _ in presets
                        ]
                        print(
                            f"{'':9s} {'':19s} {f'  {n} node(s)':17s} {'':4s}  "
                            + "      ".join(sub)
                        )
    print(f"largest bound over measured: {worst:.3f} (below 1: a bound)")
    print(
        f"CPU {time.process_time() - start:.1f} s (PYTHONDONTWRITEBYTECODE=1: no compiled bytecode)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
