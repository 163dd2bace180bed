"""How the fused MoE's efficiency depends on rows per expert, measured against the model (docs/
model.md §F7 "The fused MoE against measured tables").

Reads NVIDIA AIConfigurator's measured MoE tables (``moe_perf.parquet``: TensorRT-LLM
1.3.0rc20's fused MoE, routing permutation, gated grouped GEMMs and un-permutation timed
together over token counts, expert counts, top-k, hidden and intermediate sizes, EP and TP
degrees and dtypes; github.com/ai-dynamo/aiconfigurator at 095f58a,
``aic-core/src/aiconfigurator_core/systems/data/<system>/moe/trtllm/1.3.0rc20/moe_perf.parquet``
for ``h100_sxm``, ``h200_sxm``, ``b200_sxm``; not part of this repository) and prints, for
Mixtral 8x7B (hidden 4,096, expert 14,336, 8 experts, top 2), DeepSeek-V3/R1 (7,168, 2,048,
256, top 8) and Qwen3-235B-A22B (4,096, 1,536, 128, top 8), uniform routing (``balanced``),
the CUTLASS kernels (``moe_torch_flow_cutlass``), TP 1 and EP 1 or 8:

* the measured efficiency at 1, 4, 16, 64, 256, 1,024 and 4,096 rows an expert (tokens × top-k
  over experts): useful FLOP (6·T·k·h·i over EP·TP GPUs, three matrices of a gated expert) over
  the time, over the model's ideal rate for the dtype (the GPU's dense peak at the weight bits
  times its best-shape GEMM efficiency, ``Machine.gemm_rate``: BF16 16 bits, FP8 and block FP8 8,
  NVFP4 4);
* beside it, what the model charges the same kernel in the engine step of the profile
  (default ``trtllm``): the grouped GEMM's expected padded rows (``expected_expert_rows``), the
  arithmetic at ``gemm_efficiency_scale`` × ``moe_gemm_efficiency`` (over the part's
  best-shape rate at the dtype's bits, §F2), its fixed cost ``V½/V`` at the whole group's volume (§F2), on a roofline against
  the experts' weight reads at ``hbm_efficiency``: the same useful FLOP over the model's seconds;
* a fit of the measured points to ``η = η_max · r/(r + r½)`` (``1/η`` linear in ``1/r``,
  weighted by relative error, all token counts of the table): the plateau and the
  half-saturation in rows per expert.

    PYTHONPATH=. python benchmarks/moe_table_fit.py h100.parquet h200.parquet b200.parquet \\
        [--engine trtllm] [--ep 1 8]

``--shares`` prints instead each table's plateau by format at the profile's S½ and the part's
``moe_plateau_share`` (its BF16 and FP8 plateaus over H100's and H200's, the median; the
figures of the hardware files, docs/model.md §F7); give the tables of every part, Hopper's too.

A measured figure beside a model figure: neither is a prediction of a benchmark row.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from aic_tables import fail, read_parquet  # noqa: E402

from inference_econ.errors import InferenceEconError  # noqa: E402
from inference_econ.model.efficiency import (  # noqa: E402
    best_gemm_efficiency,
    expected_expert_rows,
    expert_size_factor,
    size_factor,
)
from inference_econ.specs.engine import load_engine  # noqa: E402
from inference_econ.specs.hardware import load_hardware  # noqa: E402

COLUMNS = (
    "device",
    "version",
    "kernel_source",
    "moe_dtype",
    "num_tokens",
    "hidden_size",
    "inter_size",
    "topk",
    "num_experts",
    "moe_tp_size",
    "moe_ep_size",
    "distribution",
    "latency",
)
#: name: (hidden, expert intermediate, experts, top-k)
SHAPES = {
    "Mixtral 8x7B": (4096, 14336, 8, 2),
    "DeepSeek-V3/R1": (7168, 2048, 256, 8),
    "Qwen3-235B": (4096, 1536, 128, 8),
}
#: weight bits of each dtype, the rate the model charges it at
BITS = {"bfloat16": 16, "fp8": 8, "fp8_block": 8, "nvfp4": 4}
#: MXFP4 experts (gpt-oss): (the rate's bits, the weights' stored bits): W4A8 multiplies at the
#: FP8 rate on chips with 4-bit tensor cores, W4A16 at the BF16 one (§B5, ``mx_gemm_bits``);
#: their tables time TensorRT-LLM's ``moe_torch_flow`` kernels, not CUTLASS's.
MX = {"w4a8_mxfp4_mxfp8": (8, 4.25), "w4a16_mxfp4": (16, 4.25)}
DEVICES = {
    "NVIDIA H100 80GB HBM3": "H100",
    "NVIDIA H200": "H200",
    "NVIDIA B200": "B200",
    "NVIDIA GB200": "GB200",
    "NVIDIA B300 SXM6 AC": "B300",
    "NVIDIA GB300": "GB300",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "RTX PRO 6000",
    "NVIDIA L40S": "L40S",
}
ROWS = (1, 4, 16, 64, 256, 1024, 4096)


def model_seconds(prof, gpu, bits, tokens, shape, ep):
    """The model's seconds for the fused MoE of one layer on one GPU (§F2, §F7): a roofline of
    the experts' weight reads against the grouped GEMM's arithmetic, plus its fixed cost."""
    h, i, experts, k = shape
    rate = gpu.peak_flop_per_s(bits) * best_gemm_efficiency(gpu, bits)
    rows = expected_expert_rows(tokens, k, experts, float(prof.gemm_tile_tokens)) / ep
    eta = prof.gemm_efficiency_scale * prof.moe_gemm_efficiency
    eta = eta * expert_size_factor(h * i, prof.moe_expert_half_params)
    volume = rows * h * i
    arithmetic = 6.0 * rows * h * i / (rate * eta)
    fixed = arithmetic * prof.gemm_half_volume / volume
    hit = experts * (1.0 - (1.0 - k / experts) ** np.asarray(tokens, float)) / ep
    weights = hit * 3.0 * h * i * bits / 8.0 / (gpu.hbm_bandwidth_bytes_per_s * prof.hbm_efficiency)
    return np.maximum(weights, arithmetic) + fixed, eta * size_factor(volume, prof.gemm_half_volume)


def fit_points(frames, dtypes, prof):
    """Every balanced CUTLASS point of ``dtypes`` at TP·EP <= 8 and >= 1 row an expert, as
    arrays: measured seconds, the model's ideal arithmetic seconds (padded rows at the
    ``Machine.gemm_rate`` of the dtype), weight-read seconds, the group's volume, the expert
    matrix's parameters per GPU and the rows an expert."""
    cols = {k: [] for k in ("t", "flop", "w", "vg", "s", "r")}
    for gpu, frame in frames:
        kernel = "moe_torch_flow" if set(dtypes) <= set(MX) else "moe_torch_flow_cutlass"
        f = frame[
            (frame.distribution == "balanced")
            & (frame.kernel_source == kernel)
            & (frame.moe_ep_size * frame.moe_tp_size <= 8)
            & frame.moe_dtype.isin(dtypes)
        ]
        keys = ["hidden_size", "inter_size", "num_experts", "topk", "moe_dtype"]
        for (h, i, experts, k, dtype, ep, tp), q in f.groupby(
            keys + ["moe_ep_size", "moe_tp_size"]
        ):
            if experts < ep:
                continue
            bits, stored = MX[dtype] if dtype in MX else (BITS[dtype], BITS[dtype])
            rate = gpu.peak_flop_per_s(bits) * best_gemm_efficiency(gpu, bits)
            tokens = q.num_tokens.to_numpy(float)
            rows = expected_expert_rows(tokens, k, experts, float(prof.gemm_tile_tokens)) / ep
            hit = experts * (1.0 - (1.0 - k / experts) ** tokens) / ep
            bw = gpu.hbm_bandwidth_bytes_per_s * prof.hbm_efficiency
            cols["t"].append(q.latency.to_numpy(float) * 1e-3)
            cols["flop"].append(6.0 * rows * h * i / tp / rate)
            cols["w"].append(hit * 3.0 * h * i / tp * stored / 8.0 / bw)
            cols["vg"].append(rows * h * i / tp)
            cols["s"].append(np.full(tokens.size, h * i / tp))
            cols["r"].append(tokens * k / experts)
    d = {k: np.concatenate(v) if v else np.zeros(0) for k, v in cols.items()}
    keep = d["r"] >= 1.0
    return {k: v[keep] for k, v in d.items()}


def fit_half_params(d, half_volume):
    """(rms log error, plateau η, S½) minimising the mean squared log error of the model's MoE
    seconds, max(weights, arithmetic/(η·S/(S + S½))) plus the group's fixed cost, over a grid;
    and the rms of S½ = 0 at its own best η."""
    best = none = None
    for half in np.concatenate([[0.0], np.geomspace(1e5, 1e8, 31)]):
        for eta in np.linspace(0.1, 1.5, 141):
            c = d["flop"] / (eta * expert_size_factor(d["s"], half))
            err = np.log((np.maximum(d["w"], c) + c * half_volume / d["vg"]) / d["t"])
            rms = float(np.sqrt(np.mean(err**2)))
            if best is None or rms < best[0]:
                best = (rms, eta, half, float(np.median(np.abs(err))))
            if half == 0.0 and (none is None or rms < none[0]):
                none = (rms, eta, half, float(np.median(np.abs(err))))
    return best, none


def fit_plateau(d, half_volume, half_params):
    """(plateau η, median |log error|) at a fixed S½ (the profile's ``moe_expert_half_params``)
    minimising the mean squared log error over ``d`` (``fit_points``), on a grid of 0.005."""
    best = None
    for eta in np.arange(0.05, 1.5, 0.005):
        c = d["flop"] / (eta * expert_size_factor(d["s"], half_params))
        err = np.log((np.maximum(d["w"], c) + c * half_volume / d["vg"]) / d["t"])
        rms = float(np.mean(err**2))
        if best is None or rms < best[0]:
            best = (rms, float(eta), float(np.median(np.abs(err))))
    return best[1], best[2]


#: The formats both GPU generations run on the same CUTLASS kernels, whose plateaus give a
#: part's ``moe_plateau_share`` (docs/model.md §F7).
SHARE_FORMATS = ("bfloat16", "fp8")
#: The parts whose plateaus are the reference (the engine terms' fit is mostly their rows).
REFERENCE = ("H100", "H200")


def plateaus_by_part(frames, prof):
    """{part: {dtype: (plateau, points, median |log|)}} at the profile's S½, one fit per table
    and format."""
    out = {}
    for gpu, frame in frames:
        name = DEVICES[str(frame["device"].iloc[0])]
        part = out.setdefault(name, {})
        for dtype in list(BITS) + list(MX):
            d = fit_points([(gpu, frame)], (dtype,), prof)
            if d["t"].size < 10:
                continue
            eta, med = fit_plateau(d, prof.gemm_half_volume, prof.moe_expert_half_params)
            part[dtype] = (eta, int(d["t"].size), med)
    return out


def print_shares(frames, prof) -> None:
    """Each part's fused-MoE plateau by format and its share of the reference parts' plateau
    (the median over ``SHARE_FORMATS`` of plateau / the reference parts' mean plateau)."""
    table = plateaus_by_part(frames, prof)
    formats = list(BITS) + list(MX)
    print(
        f"\nplateau by part and format at S½ {prof.moe_expert_half_params:.3g} (balanced, "
        "TP*EP <= 8, >= 1 row an expert; CUTLASS kernels, MXFP4 moe_torch_flow); share: median "
        f"over {'/'.join(SHARE_FORMATS)} of plateau / mean of {'/'.join(REFERENCE)}"
    )
    print(f"{'part':14s}" + "".join(f"{f:>18s}" for f in formats) + f"{'share':>8s}")
    ref = {
        f: np.mean([table[p][f][0] for p in REFERENCE if p in table and f in table[p]] or [np.nan])
        for f in SHARE_FORMATS
    }
    for name, part in table.items():
        cells = "".join(
            (f"{part[f][0]:.3f} ({part[f][1]:4d})" if f in part else "-").rjust(18) for f in formats
        )
        ratios = [part[f][0] / ref[f] for f in SHARE_FORMATS if f in part and np.isfinite(ref[f])]
        share = float(np.median(ratios)) if ratios else float("nan")
        print(f"{name:14s}{cells}{share:8.3f}")


def half_saturation(r, eta):
    """(η_max, r½) of η = η_max·r/(r + r½) fitted as 1/η = 1/η_max + (r½/η_max)/r, each point
    weighted by its relative error."""
    y = 1.0 / eta
    slope, intercept = np.polyfit(1.0 / r, y, 1, w=1.0 / y)
    return 1.0 / intercept, slope / intercept


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tables", nargs="+", type=Path, help="AIConfigurator moe_perf.parquet")
    parser.add_argument("--engine", default="trtllm", help="engine profile (default trtllm)")
    parser.add_argument("--ep", type=int, nargs="+", default=[1, 8], help="EP degrees")
    parser.add_argument(
        "--fit", action="store_true", help="also fit the expert-size half-point S½ by format"
    )
    parser.add_argument(
        "--shares",
        action="store_true",
        help="only the plateau by part and format, and each part's share of Hopper's",
    )
    args = parser.parse_args(argv)
    try:
        prof = load_engine(args.engine)
    except InferenceEconError as exc:
        fail(str(exc))
    frames = []
    for path in args.tables:
        frame = read_parquet(path, "an AIConfigurator moe_perf.parquet", COLUMNS)
        device = str(frame["device"].iloc[0])
        if device not in DEVICES:
            fail(f"{path}: device {device!r} is none of {', '.join(DEVICES)}")
        gpu = load_hardware(DEVICES[device])
        frames.append((gpu, frame))
    print(
        f"profile {args.engine}: gemm_efficiency_scale {prof.gemm_efficiency_scale}, "
        f"moe_gemm_efficiency {prof.moe_gemm_efficiency}, "
        f"gemm_half_volume {prof.gemm_half_volume:.2g}, "
        f"tile {prof.gemm_tile_tokens}, hbm_efficiency {prof.hbm_efficiency}, "
        f"moe_expert_half_params {prof.moe_expert_half_params:.3g}"
    )
    if args.shares:
        print_shares(frames, prof)
        return 0
    print(
        "eta: useful FLOP / s over the model's ideal rate (dense peak x best-shape GEMM "
        "efficiency at the dtype's bits), per GPU; 'meas' measured, 'model' the model's seconds, "
        "'compute' its arithmetic share k_gemm*k_moe*V/(V+V1/2) before padding and weights"
    )
    for path, (gpu, frame) in zip(args.tables, frames):
        device = str(frame["device"].iloc[0])
        frame = frame[
            (frame.distribution == "balanced")
            & (frame.kernel_source == "moe_torch_flow_cutlass")
            & (frame.moe_tp_size == 1)
        ]
        print(f"\n== {path}: {device}, TensorRT-LLM {frame['version'].iloc[0]}, TP 1, balanced")
        print(f"{'shape':15s} {'dtype':9s} ep  rows/expert: " + " ".join(f"{r:>14d}" for r in ROWS))
        print(f"{'':31s}(meas/model/compute)    plateau  r1/2")
        for name, shape in SHAPES.items():
            h, i, experts, k = shape
            for dtype, bits in BITS.items():
                if gpu.peak_flop_per_s(bits) <= 0 or (bits == 4 and DEVICES[device] != "B200"):
                    continue
                for ep in args.ep:
                    q = frame[
                        (frame.hidden_size == h)
                        & (frame.inter_size == i)
                        & (frame.num_experts == experts)
                        & (frame.topk == k)
                        & (frame.moe_dtype == dtype)
                        & (frame.moe_ep_size == ep)
                    ].sort_values("num_tokens")
                    if len(q) < 4:
                        continue
                    tokens = q.num_tokens.to_numpy(float)
                    seconds = q.latency.to_numpy(float) * 1e-3  # milliseconds in the table
                    r = tokens * k / experts
                    rate = gpu.peak_flop_per_s(bits) * best_gemm_efficiency(gpu, bits)
                    flop = 6.0 * tokens * k * h * i / ep
                    eta = flop / seconds / rate
                    mod_s, compute = model_seconds(prof, gpu, bits, tokens, shape, ep)
                    eta_model = flop / mod_s / rate
                    cells = []
                    for want in ROWS:
                        if want < r[0] - 1e-9 or want > r[-1] + 1e-9:
                            cells.append(f"{'-':>14s}")
                            continue
                        m = np.exp(np.interp(np.log(want), np.log(r), np.log(eta)))
                        mm = np.exp(np.interp(np.log(want), np.log(r), np.log(eta_model)))
                        c = np.interp(np.log(want), np.log(r), compute)
                        cells.append(f"{m:.2f}/{mm:.2f}/{c:.2f}".rjust(14))
                    top, half = half_saturation(r, eta)
                    print(
                        f"{name:15s} {dtype:9s} {ep:2d}  {'':11s}"
                        + " ".join(cells)
                        + f"   {top:6.2f} {half:6.0f}"
                    )
    if args.fit:
        print(
            "\nS½ fit: mean squared log error of the model's MoE seconds (weights against "
            "arithmetic at eta*S/(S+S½), plus the group's fixed cost) over every balanced CUTLASS "
            "point, TP*EP <= 8, >= 1 row an expert, all shapes of the tables"
        )
        fits = (("bfloat16", "fp8"), ("bfloat16",), ("fp8",), ("fp8_block",), ("nvfp4",))
        for dtypes in fits + tuple((m,) for m in MX):
            d = fit_points(frames, dtypes, prof)
            if d["t"].size == 0:
                continue
            best, none = fit_half_params(d, prof.gemm_half_volume)
            print(
                f"{'+'.join(dtypes):14s} {d['t'].size:6d} points: S½ {best[2]:.3g} at plateau "
                f"{best[1]:.3f}, rms log {best[0]:.3f} (median |log| {best[3]:.3f}); "
                f"without S½: plateau {none[1]:.3f}, rms {none[0]:.3f} (median {none[3]:.3f})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
