"""How fast is TensorRT-LLM's own all-reduce, against the model's charge? (docs/model.md §F6
"The engine's all-reduce, measured").

Reads NVIDIA AIConfigurator's measured custom all-reduce tables (``custom_allreduce_perf.parquet``:
TensorRT-LLM's ``AllReduce`` with strategy AUTO and its autotuner off, timed in a CUDA graph of
five calls, 2, 4 and 8 GPUs of one node, ``message_size`` in elements, ``latency`` in ms;
github.com/ai-dynamo/aiconfigurator, ``aic-core/src/aiconfigurator_core/systems/data/<system>/
comm/trtllm/<version>/``; download the files you want, they are not part of this repository)
and prints:

* per file and GPU count: the time of the smallest messages (1-2 KB) and the latency ``α`` and
  bandwidth efficiency ``η`` that make the model's custom all-reduce charge (§F6: the faster of
  one-shot ``α + (R−1)·X/(η·B₁)`` and two-shot ``2α + 2(R−1)/R·X/(η·B₁)``, ``B₁`` the NVLink
  bandwidth one way) closest to the measured times (least squares on log time) from 1 KB to
  4 MB, where TensorRT-LLM's AUTO strategy runs its own kernels on every GPU count;
* the same fit pooled over every file and GPU count (one ``α``, one ``η``: the engine profile
  holds one value of each);
* the model's whole all-reduce charge (every protocol of §F6, the fastest per message: NCCL's
  scaled by the fitted ``collective_*`` terms, NVLS, the custom kernels) at 1 KB-64 MB beside
  the measured time, with the profile's values and with the pooled fit, and the median and
  90th percentile of |model/measured − 1| over 1 KB-4 MB and over 1 KB-64 MB.

    python benchmarks/custom_allreduce_fit.py h100.parquet h200.parquet b200.parquet \\
        [--engine trtllm] [--latency-s 6e-6 --efficiency 0.8]

A file's GPU is read from its ``device`` column (H100, H200, B200, B300, A100); name it
yourself with ``PATH=HARDWARE`` (e.g. ``b200.parquet=B200``). ``--latency-s``/``--efficiency``
replace the profile's values in the "profile" columns (to compare an earlier prior).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from aic_tables import fail, read_parquet  # noqa: E402

import inference_econ as ie  # noqa: E402
from inference_econ.errors import InferenceEconError  # noqa: E402
from inference_econ.model.collectives import (  # noqa: E402
    ALLREDUCE,
    CollectiveCost,
    measured_protocols,
)
from inference_econ.specs.engine import load_engine  # noqa: E402

COLUMNS = ("num_gpus", "message_size", "latency", "allreduce_dtype")
BYTES_PER_ELEMENT = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4}
#: AIConfigurator's device names -> this repository's hardware files.
DEVICES = (("H100", "H100-SXM"), ("H200", "H200"), ("B200", "B200"), ("B300", "B300"))
DEVICES += (("A100", "A100-SXM-80GB"),)
#: The custom kernels' range: TensorRT-LLM's AUTO strategy table (cpp/tensorrt_llm/common/
#: customAllReduceUtils.h, SM90 and SM100, TP 2/4/8 at hidden 4,096) picks one-shot or two-shot
#: up to 512 tokens (4 MB in BF16) and hands larger messages to NCCL from 1,024 or 2,048.
FIT_BYTES = (1024.0, 4.0 * 2**20)
SHOWN_BYTES = tuple(2.0**k for k in (10, 14, 18, 20, 22, 24, 26))  # 1 KB .. 64 MB


def read_table(path: Path):
    """{gpus: (bytes, seconds)} of one AIConfigurator custom_allreduce_perf.parquet, its label
    and its device name."""
    frame = read_parquet(path, "an AIConfigurator custom_allreduce_perf.parquet", COLUMNS)
    dtypes = sorted(map(str, frame["allreduce_dtype"].unique()))
    if len(dtypes) != 1 or dtypes[0] not in BYTES_PER_ELEMENT:
        fail(
            f"{path}: allreduce_dtype {', '.join(dtypes)}; one of "
            f"{', '.join(BYTES_PER_ELEMENT)} is needed"
        )
    width = BYTES_PER_ELEMENT[dtypes[0]]
    frame = frame[(frame["latency"] > 0) & (frame["message_size"] > 0)]
    if frame.empty:
        fail(f"{path}: no row with a positive latency and message_size")
    tables = {}
    for gpus, rows in frame.groupby("num_gpus"):
        rows = rows.sort_values("message_size")
        # message_size counts elements (AIConfigurator's collector); latency is in milliseconds
        tables[int(gpus)] = (
            rows["message_size"].to_numpy(float) * width,
            rows["latency"].to_numpy(float) * 1e-3,
        )
    label = " ".join(
        str(frame[c].iloc[0]) for c in ("device", "framework", "version") if c in frame.columns
    )
    device = str(frame["device"].iloc[0]) if "device" in frame.columns else ""
    return tables, label, device


def hardware_for(path: Path, device: str, given: str | None):
    name = given
    if name is None:
        name = next((ours for key, ours in DEVICES if key in device.upper()), None)
    if name is None:
        fail(f"{path}: device {device!r} is not one this script knows; pass PATH=HARDWARE")
    try:
        return ie.load_hardware(name)
    except InferenceEconError as exc:
        fail(f"{path}: hardware {name!r}: {exc}")


def custom_seconds(alpha: float, eta: float, nbytes, gpus: int, one_way: float):
    """The model's custom all-reduce charge (§F6): the faster of one-shot and two-shot."""
    one = alpha + (gpus - 1) * nbytes / (eta * one_way)
    two = 2 * alpha + 2 * (gpus - 1) / gpus * nbytes / (eta * one_way)
    return np.minimum(one, two)


def fit(samples) -> tuple[float, float, float]:
    """(α seconds, η, rms of log(model/measured)) over [(bytes, seconds, gpus, B₁), ...]."""
    from scipy.optimize import least_squares

    def residual(p):
        return np.concatenate(
            [np.log(custom_seconds(p[0] * 1e-6, p[1], x, r, b) / t) for x, t, r, b in samples]
        )

    result = least_squares(residual, [5.0, 0.5], bounds=([0.0, 0.01], [100.0, 1.0]))
    return result.x[0] * 1e-6, float(result.x[1]), float(np.sqrt(np.mean(result.fun**2)))


def model_seconds(gpu, profile, gpus: int, nbytes):
    """The model's whole all-reduce charge under the achievable preset with ``profile``: every
    protocol of §F6 on one node of ``gpus`` GPUs, the fastest per message."""
    assumptions = ie.preset("achievable")
    protocols = measured_protocols(gpu, assumptions.nvls, profile)
    scale = assumptions.collective_latency_scale * gpu.collective_latency_scale
    cost = CollectiveCost(np.array(float(gpus)), np.array(1.0), gpu, ALLREDUCE, protocols, scale)
    lat, bw, choice = cost.terms(np.asarray(nbytes, float))
    return np.asarray(lat + bw), [protocols[int(i)].name for i in np.atleast_1d(choice)]


def error_summary(ratios) -> str:
    e = np.abs(np.asarray(ratios) - 1.0)
    return f"median {np.median(e):.3f}, p90 {np.quantile(e, 0.9):.3f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "tables", nargs="+", help="AIConfigurator custom_allreduce_perf.parquet [=HARDWARE]"
    )
    parser.add_argument("--engine", default="trtllm", help="engine profile (default trtllm)")
    parser.add_argument("--latency-s", type=float, help="custom_allreduce_latency_s to compare")
    parser.add_argument("--efficiency", type=float, help="custom_allreduce_bandwidth_efficiency")
    args = parser.parse_args(argv)
    start = time.process_time()
    try:
        profile = load_engine(args.engine)
    except InferenceEconError as exc:
        fail(f"--engine: {exc}")
    for name, value, top in (
        ("--latency-s", args.latency_s, 1e-3),
        ("--efficiency", args.efficiency, 1),
    ):
        if value is not None and not 0 < value <= top:
            fail(f"{name} {value}: give a number in (0, {top:g}]")
    profile = dataclasses.replace(
        profile,
        custom_allreduce_latency_s=args.latency_s or profile.custom_allreduce_latency_s,
        custom_allreduce_bandwidth_efficiency=(
            args.efficiency or profile.custom_allreduce_bandwidth_efficiency
        ),
    )
    files = []
    for item in args.tables:
        path_text, _, hardware = item.partition("=")
        path = Path(path_text)
        tables, label, device = read_table(path)
        files.append((path, label, hardware_for(path, device, hardware or None), tables))

    print(
        f"profile {args.engine}: custom_allreduce_latency_s {profile.custom_allreduce_latency_s:.3g}, "
        f"custom_allreduce_bandwidth_efficiency {profile.custom_allreduce_bandwidth_efficiency:.3g}"
    )
    print(f"== fit of the custom charge, {FIT_BYTES[0]:.0f} B - {FIT_BYTES[1] / 2**20:.0f} MB")
    pooled = []
    for path, label, gpu, tables in files:
        one_way = gpu.nvlink_bandwidth_bytes_per_s / 2.0
        for gpus, (x, t) in tables.items():
            small = t[(x >= 1024) & (x <= 2048)]
            keep = (x >= FIT_BYTES[0]) & (x <= FIT_BYTES[1])
            if keep.sum() < 3 or gpus < 2:
                continue
            sample = (x[keep], t[keep], gpus, one_way)
            pooled.append(sample)
            alpha, eta, rms = fit([sample])
            print(
                f"  {path.name} ({label}, {gpu.name}, B1 {one_way / 1e9:.0f} GB/s) R={gpus}: "
                f"1-2 KB {np.median(small) * 1e6:.2f} us; fit alpha {alpha * 1e6:.2f} us, "
                f"eta {eta:.3f} (rms log error {rms:.3f})"
            )
    if not pooled:
        fail("no GPU count of two or more with three messages of 1 KB-4 MB in the files given")
    alpha, eta, rms = fit(pooled)
    print(
        f"  pooled over {len(pooled)} (file, GPU count): alpha {alpha * 1e6:.2f} us, eta {eta:.3f} "
        f"(rms log error {rms:.3f})"
    )
    derived = dataclasses.replace(
        profile, custom_allreduce_latency_s=alpha, custom_allreduce_bandwidth_efficiency=eta
    )

    print("== the model's whole all-reduce charge against the measured time (us)")
    print(
        "  file                R      bytes  measured   profile (protocol)      ratio   fit     ratio"
    )
    ratios: dict[str, list] = {"profile": [], "fit": [], "profile_all": [], "fit_all": []}
    for path, _label, gpu, tables in files:
        for gpus, (x, t) in tables.items():
            if gpus < 2:
                continue
            keep = (x >= FIT_BYTES[0]) & (x <= SHOWN_BYTES[-1])
            x, t = x[keep], t[keep]
            now, names = model_seconds(gpu, profile, gpus, x)
            new, _ = model_seconds(gpu, derived, gpus, x)
            inside = x <= FIT_BYTES[1]
            ratios["profile"] += list((now / t)[inside])
            ratios["fit"] += list((new / t)[inside])
            ratios["profile_all"] += list(now / t)
            ratios["fit_all"] += list(new / t)
            for i, size in enumerate(x):
                if size in SHOWN_BYTES:
                    print(
                        f"  {path.name[:18]:18s} {gpus:2d} {size:10.0f} {t[i] * 1e6:9.1f} "
                        f"{now[i] * 1e6:9.1f} ({names[i]:15s}) {now[i] / t[i]:5.2f} "
                        f"{new[i] * 1e6:7.1f} {new[i] / t[i]:5.2f}"
                    )
    print(
        f"  |model/measured - 1|, 1 KB-4 MB: profile {error_summary(ratios['profile'])}; "
        f"fit {error_summary(ratios['fit'])}"
    )
    print(
        f"  |model/measured - 1|, 1 KB-64 MB: profile {error_summary(ratios['profile_all'])}; "
        f"fit {error_summary(ratios['fit_all'])}"
    )
    print(f"CPU {time.process_time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
