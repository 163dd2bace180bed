"""SGLang's DeepEP dispatch and combine as AIConfigurator timed them (``kernels/<gpu>/sglang-*/
deepep_*.csv.gz``) against the ideal bound's charge (``refined``, §B11) and SGLang's step
(``achievable`` with ``--engine sglang``): for each GPU, kernel (low-latency: decode steps of
``num_token`` sequences a rank; normal: prefill passes of that many tokens a rank, the fastest
of its SM settings) and shape a catalogue model has, the median and largest of charged over
measured, and by node count. A bound's largest must stay below 1.

    PYTHONPATH=. python benchmarks/deepep_exchange.py [--by-nodes]
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
        us = [float(c.time_s()) / layers * 1e6 for c in calls]
        out.append((nodes, tokens, us[0] / dispatch, us[1] / combine))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--by-nodes", action="store_true", help="also each node count's line")
    args = parser.parse_args(argv)
    import numpy as np

    from inference_econ.model.assumptions import ACHIEVABLE, REFINED
    from inference_econ.specs.kernel_tables import kernel_table

    start = time.process_time()
    presets = (("bound", REFINED), ("sglang", ACHIEVABLE.replace(engine="sglang")))
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
