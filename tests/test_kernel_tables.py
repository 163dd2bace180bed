"""The measured kernel tables in kernels/: each file states the device that measured it, every row
moves the bytes its pass must move, and no pass beats the GPU's datasheet memory bandwidth (the
memory side of the roofline is a bound no measured kernel beats)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import inference_econ as ie

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
#: Table folder: (the device name its first line states, the hardware file it is held against).
PASSES = {
    "h100_sxm": ("NVIDIA H100 80GB HBM3", "H100-SXM"),
    "h200_sxm": ("NVIDIA H200", "H200-SXM"),
}


def read_passes(folder: str) -> tuple[dict, list[dict]]:
    lines = (KERNELS / folder / "passes.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# "), "the first line states where the figures come from"
    return json.loads(lines[0][2:]), list(csv.DictReader(lines[1:]))


def fewest_bytes(op: str, tokens: int, width: int) -> int | None:
    """The bytes each pass must move, as benchmarks/measure_passes.py counts them (bf16 and
    float32 elements), by hand: None for the floor and copy rows."""
    if op == "add_rmsnorm":  # read x, the residual and the weight; write the residual and y
        return 2 * (4 * tokens * width + width)
    if op == "silu_mul":  # read gate and up, write their product
        return 2 * 3 * tokens * width
    if op == "rope":  # read and write query and key heads of 128, read cos and sin of 64
        kv = max(width // 4, 1)
        return 2 * (2 * tokens * (width + kv) * 128 + 2 * tokens * 64)
    if op == "sample_greedy":  # read float32 logits, write an int64 a row
        return 4 * tokens * width + 8 * tokens
    return None


@pytest.mark.parametrize("folder", sorted(PASSES))
def test_a_passes_table_states_its_device_and_counts_its_bytes(folder):
    meta, rows = read_passes(folder)
    assert meta["device"] == PASSES[folder][0]
    assert {"torch", "cuda", "date"} <= set(meta)
    ops = {r["op"] for r in rows}
    assert {"add_rmsnorm", "silu_mul", "rope", "sample_greedy", "kernel_floor_start"} <= ops
    for r in rows:
        assert float(r["latency_us"]) > 0
        expected = fewest_bytes(r["op"], int(r["tokens"]), int(r["width"]))
        if expected is not None:
            assert int(r["bytes"]) == expected, r


@pytest.mark.parametrize("folder", sorted(PASSES))
def test_no_measured_pass_beats_the_datasheet_memory_bandwidth(folder):
    _, rows = read_passes(folder)
    hbm = ie.load_hardware(PASSES[folder][1]).hbm_bandwidth_bytes_per_s
    floor_us = min(float(r["latency_us"]) for r in rows if r["op"].startswith("kernel_floor"))
    for r in rows:
        if r["op"].startswith(("copy", "kernel_floor")):
            continue
        seconds = float(r["latency_us"]) * 1e-6
        assert int(r["bytes"]) / seconds <= hbm, r  # bytes over time: never above the datasheet
        assert float(r["latency_us"]) >= floor_us, r  # and never under one kernel's floor
