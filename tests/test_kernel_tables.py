"""The measured kernel tables in kernels/: each file states the device that measured it, every row
moves the bytes its pass must move, and no pass beats the GPU's datasheet memory bandwidth (the
memory side of the roofline is a bound no measured kernel beats); AIConfigurator's tables read
through ``specs.kernel_tables`` with their fields, and a broken file is one clear error."""

from __future__ import annotations

import csv
import gzip
import json
import os
from pathlib import Path

import pytest

import inference_econ as ie
from inference_econ.errors import SpecError
from inference_econ.specs.kernel_tables import REQUIRED, kernel_table, read_kernel_table

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


#: AIConfigurator's system folders: the device their tables' first line states.
AIC = {
    "h100_sxm": "NVIDIA H100 80GB HBM3",
    "h200_sxm": "NVIDIA H200",
    "b200_sxm": "NVIDIA B200",
    "gb200": "NVIDIA GB200",
}
#: A field of whole numbers in each kind of table.
WHOLE = {
    "gemm": "m",
    "generation_attention": "step",
    "context_attention": "isl",
    "custom_allreduce": "num_gpus",
    "nccl": "message_elements",
    "moe": "num_tokens",
}
AIC_TABLES = [
    (op, "trtllm-1.3.0rc20")
    for op in ("gemm", "generation_attention", "context_attention", "custom_allreduce", "moe")
] + [("nccl", "nccl-2.29.2")]


@pytest.mark.parametrize("gpu", sorted(AIC))
def test_each_aiconfigurator_table_reads_with_its_fields_and_positive_latencies(gpu):
    for op, engine in AIC_TABLES:
        table = kernel_table(gpu, op, engine)
        assert set(REQUIRED[op]) <= set(table.names), (gpu, op)
        assert table.header["device"] == AIC[gpu]
        assert table.header["commit"].startswith("095f58a51")
        assert table.header["path"].endswith("_perf.parquet")
        assert {len(column) for column in table.columns.values()} == {len(table)}
        assert len(table) >= 46 and (table["latency_ms"] > 0).all()
        assert table["latency_ms"].dtype.kind == "f" and table[WHOLE[op]].dtype.kind == "i"
        assert all(column.dtype.kind in "ifO" for column in table.columns.values()), (gpu, op)


def test_hand_checked_rows_of_the_h100_tables():
    """aic-core/src/aiconfigurator_core/systems/data/h100_sxm/gemm/trtllm/1.3.0rc20/
    gemm_perf.parquet (aiconfigurator 095f58a51), the row bfloat16 m = n = k = 8192: latency
    1.404784 ms (783 TFLOP/s); comm/trtllm/1.3.0rc20/custom_allreduce_perf.parquet, 2 GPUs,
    128 bfloat16 elements: 0.00266208 ms."""
    gemm = kernel_table("h100_sxm", "gemm")
    at = (gemm["gemm_dtype"] == "bfloat16") & (gemm["m"] == 8192) & (gemm["n"] == 8192)
    at &= gemm["k"] == 8192
    assert gemm["latency_ms"][at].tolist() == [pytest.approx(1.404784, abs=5e-7)]
    allreduce = kernel_table("h100_sxm", "custom_allreduce")
    at = (allreduce["num_gpus"] == 2) & (allreduce["message_elements"] == 128)
    assert allreduce["latency_ms"][at].tolist() == [pytest.approx(0.00266208, abs=5e-9)]


@pytest.mark.parametrize(
    ("content", "field", "problem"),
    [
        (b"not gzip at all", "", "is not a gzip-compressed UTF-8 table"),
        (gzip.compress(b"gemm_dtype,m,n,k,latency_ms\n"), "", "its first line is not"),
        (gzip.compress(b"# {}\ngemm_dtype,m,n,k\nbfloat16,1,2,3\n"), "latency_ms", "is missing"),
        (gzip.compress(b"# {}\nm,latency_ms\n1,0.5\n2,fast\n"), "", "a row does not parse"),
        (
            gzip.compress(b"# {}\ngemm_dtype,m,n,k,latency_ms\nbf16,1,2,3,0\n"),
            "latency_ms",
            "row 1",
        ),
        # a header nested past the JSON parser's depth, and a file that expands past 64 MiB
        (
            gzip.compress(b"# " + b"[" * 10**5 + b"]" * 10**5 + b"\nm,latency_ms\n1,0.5\n"),
            "",
            "its first line is not",
        ),
        (gzip.compress(b"# {}\nm,latency_ms\n" + b"0" * 65 * 2**20), "", "expands to more than"),
    ],  # fmt: skip
)
def test_a_broken_table_is_one_error_naming_the_file_and_field(tmp_path, content, field, problem):
    path = tmp_path / "gemm.csv.gz"
    path.write_bytes(content)
    with pytest.raises(SpecError) as caught:
        read_kernel_table(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and problem in message
    assert caught.value.field == field


def test_a_table_path_that_is_no_regular_file_is_refused_at_once(tmp_path):
    """A FIFO named as a table (a folder on INFERENCE_ECON_PATH may hold one) is refused,
    not waited on."""
    path = tmp_path / "gemm.csv.gz"
    os.mkfifo(path)
    with pytest.raises(SpecError, match="is a FIFO"):
        read_kernel_table(path)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["x" * 31], ["x" * 31]),
        (["", "ab"], ["", "ab"]),
        (["", ""], ["", ""]),
        (["x" * 32], "holds text of 32 characters or more"),
        (["bf16\u00e9"], "holds text that is not ASCII"),
    ],
)
def test_a_text_field_reads_its_ascii_values_and_refuses_cut_or_other_text(
    tmp_path, values, expected
):
    rows = "".join(f"{v},1,2,3,0.5\n" for v in values)
    path = tmp_path / "gemm.csv.gz"
    path.write_bytes(gzip.compress(f"# {{}}\ngemm_dtype,m,n,k,latency_ms\n{rows}".encode()))
    if isinstance(expected, str):
        with pytest.raises(SpecError, match=expected) as caught:
            read_kernel_table(path)
        assert caught.value.field == "gemm_dtype"
        return
    column = read_kernel_table(path)["gemm_dtype"]
    assert column.dtype == object and column.tolist() == expected


def test_an_absent_table_or_field_names_what_there_is():
    with pytest.raises(SpecError, match="is not shipped.*h100_sxm/trtllm-1.3.0rc20/gemm.csv.gz"):
        kernel_table("h100_sxm", "gemm", "vllm-0.1")
    with pytest.raises(SpecError, match="field 'latency': is not a column.*latency_ms"):
        kernel_table("h100_sxm", "gemm")["latency"]


#: Tables whose rows pandas' C reader and numpy's could read apart: each must read to the same
#: arrays, or be refused with the same error, whichever reader reads it.
READER_CASES = {
    "plain": "bf16,1,2,3,0.5\nfp8,4,5,6,0.25\n",
    "blank line": "bf16,1,2,3,0.5\n\nfp8,4,5,6,0.25\n",
    "windows lines": "bf16,1,2,3,0.5\r\nfp8,4,5,6,0.25\r\n",
    "spaces": "bf16, 1,2,3,0.5\nfp8,4,5,6, 0.25\n",
    "empty text": ",1,2,3,0.5\n,4,5,6,0.25\n",
    "quoted text": 'bf16,1,2,3,0.5\n"fp8",4,5,6,0.25\n',
    "a field short": "bf16,1,2,3,0.5\nfp8,4,5,6\n",
    "a text field short": "bf16,1,2,3,0.5\n4,5,6,0.25\n",
    "a field more": "bf16,1,2,3,0.5\nfp8,4,5,6,0.25,7\n",
    "a fraction in a count": "bf16,1,2,3,0.5\nfp8,4.5,5,6,0.25\n",
    "a count past 64 bits": "bf16,1,2,3,0.5\nfp8,99999999999999999999,5,6,0.25\n",
    "nan latency": "bf16,1,2,3,0.5\nfp8,4,5,6,nan\n",
    "infinite size": "bf16,1,2,3.0,0.5\nfp8,4,5,inf,0.25\n",
    "not ascii": "bf16,1,2,3,0.5\nf\u00e9,4,5,6,0.25\n",
}


@pytest.mark.parametrize("case", sorted(READER_CASES))
def test_both_readers_read_a_table_alike(tmp_path, monkeypatch, case):
    """The C reader is the fast path; numpy's reads whatever it declines. Each case reads to
    the same arrays, or the same one-line refusal, with the fast path or without it."""
    import inference_econ.specs.kernel_tables as kt

    path = tmp_path / "gemm.csv.gz"
    path.write_bytes(
        gzip.compress(f"# {{}}\ngemm_dtype,m,n,k,latency_ms\n{READER_CASES[case]}".encode())
    )

    def read():  # read_kernel_table's reading, not kept (the shipped tables' stay kept)
        try:
            table = kt._read.__wrapped__(str(path))
        except SpecError as exc:
            return str(exc)
        return {name: (str(a.dtype), a.tolist()) for name, a in table.columns.items()}

    fast = read()
    monkeypatch.setattr(kt, "_plain_columns", lambda *args: None)
    slow = read()
    assert fast == slow
    if case == "plain":
        assert fast["m"] == ("int64", [1, 4]) and fast["gemm_dtype"] == ("object", ["bf16", "fp8"])


def test_the_shipped_tables_read_alike_by_either_reader(monkeypatch):
    """Every shipped table's arrays, by the fast reader and by numpy's, bit for bit (the
    smallest of each GPU's folders: the whole set takes seconds)."""
    import numpy as np

    import inference_econ.specs.kernel_tables as kt

    for gpu in ("h100_sxm", "b200_sxm"):
        path = kt.table_path(gpu, "custom_allreduce")
        fast = kt._read(str(path)).columns
        with monkeypatch.context() as m:
            m.setattr(kt, "_plain_columns", lambda *args: None)
            slow = kt._read.__wrapped__(str(path)).columns
        assert list(fast) == list(slow)
        for name in fast:
            assert fast[name].dtype == slow[name].dtype and np.array_equal(fast[name], slow[name])


#: A text field's values, repeated down a table (the shipped tables hold a few distinct values
#: a field over up to 218,295 rows).
TEXT_VALUES = ["moe_torch_flow_min_latency", "cutlass", "", "fp8_block", "cutlass"]


@pytest.mark.parametrize("reader", ["pandas", "numpy"])
def test_a_text_field_is_its_strings_at_eight_bytes_a_row(tmp_path, monkeypatch, reader):
    """Each distinct value is one shared string, so the column costs a pointer a row whatever
    its values' length; it compares, matches, sorts and lists as the strings it holds, by
    either reader."""
    import numpy as np

    import inference_econ.specs.kernel_tables as kt

    values = TEXT_VALUES * 200
    rows = "".join(f"{v},{i},2,3,0.5\n" for i, v in enumerate(values))
    path = tmp_path / "gemm.csv.gz"
    path.write_bytes(gzip.compress(f"# {{}}\ngemm_dtype,m,n,k,latency_ms\n{rows}".encode()))
    if reader == "numpy":
        monkeypatch.setattr(kt, "_plain_columns", lambda *args: None)
    column = kt._read.__wrapped__(str(path))["gemm_dtype"]  # read_kernel_table's, not kept
    assert column.nbytes <= 8 * len(values)
    assert len({id(v) for v in column}) == len(set(values))
    plain = np.array(values)  # the same strings as fixed-width unicode
    assert column.tolist() == values and all(type(v) is str for v in column)
    for value in [*set(values), "cut", "fp8"]:
        assert ((column == value) == (plain == value)).all()
        assert ((column != value) == (plain != value)).all()
    assert np.isin(column, ["cutlass", ""]).tolist() == np.isin(plain, ["cutlass", ""]).tolist()
    assert np.unique(column).tolist() == np.unique(plain).tolist()
    unique, inverse = np.unique(column, return_inverse=True)
    assert unique[inverse].tolist() == values
    order = np.argsort(column, kind="stable")
    assert order.tolist() == np.argsort(plain, kind="stable").tolist()
    assert np.lexsort((np.arange(len(values)), column)).tolist() == order.tolist()
