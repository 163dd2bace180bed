"""The engine clock of single operations (model/kernel_prices.py): measured points price as
measured, more work never prices cheaper, left-out points price close to their measured time,
a part without tables takes the fitted physics form, and bad arguments are named."""

from __future__ import annotations

import math

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.errors import SpecError
from inference_econ.model import kernel_prices as kp
from inference_econ.model.kernel_fit import fit_all
from inference_econ.model.kernel_physics import Sheet, fitted
from inference_econ.model.kernel_prices import Clock, table_rows
from inference_econ.specs.kernel_tables import KERNEL_FOLDERS, kernel_folder


@pytest.fixture(scope="module")
def h100():
    return ie.load_hardware("H100-SXM")


@pytest.fixture(scope="module")
def mi300x():
    return ie.load_hardware("MI300X")


def test_each_measured_part_names_a_catalogue_part_and_a_folder_of_tables():
    for name, folder in KERNEL_FOLDERS.items():
        assert ie.load_hardware(name).name == name
        assert kp.table_variants(folder, "collective") == {
            "all_reduce",
            "all_gather",
            "reduce_scatter",
            "alltoall",
        }
    assert kernel_folder("MI300X") is None
    assert kernel_folder("B300-HGX") == "b300_sxm" and kernel_folder("GB300-NVL72") == "gb300"


def test_blackwell_ultra_is_priced_from_its_own_tables_and_tests_the_fits():
    """B300 and GB300 have AIConfigurator's tables: the kernel clock reads them (a point of
    the custom all-reduce table is its measured time), and the engine clock's physics forms
    are fitted without them (kernels/engine_clock.yaml's ``parts``)."""
    from inference_econ.model.kernel_fit import FIT_FOLDERS

    for folder in ("b300_sxm", "gb300"):
        rows = table_rows(folder, "allreduce", "custom")
        assert len(rows) > 40
        assert folder not in FIT_FOLDERS
        for variants in fitted().values():
            for entry in variants.values():
                assert folder not in entry["parts"]


def test_a_measured_point_prices_its_measured_time(h100):
    # AIConfigurator's H100 custom all-reduce of 2**28 bf16 elements on 8 GPUs: 2,109.2 us
    rows = table_rows("h100_sxm", "allreduce", "custom")
    at = (rows.shape["ranks"] == 8) & (rows.shape["nbytes"] == 2.0**29)
    assert rows.seconds[at] == pytest.approx([2109.2e-6], rel=1e-4)
    assert kp.allreduce_s(h100, 8, 2.0**29) == pytest.approx(rows.seconds[at][0], rel=1e-12)
    # every row of the table: most exactly, the rest within the few per cent of a smoothed dip
    ratio = kp.allreduce_s(h100, rows.shape["ranks"], rows.shape["nbytes"]) / rows.seconds
    assert np.mean(np.abs(ratio - 1.0) < 1e-9) > 0.9
    assert np.all(np.abs(ratio - 1.0) < 0.05)
    assert kp.allreduce_s(h100, [1, 8], 2.0**29)[0] == 0.0  # one rank: nothing to reduce


def test_one_decode_attention_call_costs_the_measured_floor_on_hopper(h100):
    # the shortest measured call (one sequence, two positions, 8 heads of 128) is 8.66 us a
    # layer, not the microsecond or less that its bytes and FLOP over the datasheet come to
    seconds = kp.generation_attention_s(h100, "bfloat16", 1, 2, 8, 8, 128)
    assert 8.0e-6 < seconds < 9.4e-6


def test_more_work_is_never_cheaper(h100, mi300x):
    size = np.geomspace(1, 3e9, 97)  # off the grid, and past its last value
    for gpu in (h100, mi300x):
        for seconds in (
            kp.allreduce_s(gpu, 8, size),
            kp.collective_s(gpu, "all_gather", 4, size),
            kp.pass_s(gpu, "add_rmsnorm", np.geomspace(1, 40000, 97), 5120),
            kp.generation_attention_s(gpu, "fp8", 8, np.geomspace(1, 3e5, 97), 32, 8, 128),
            kp.generation_attention_s(gpu, "bfloat16", np.geomspace(1, 4000, 97), 700, 28, 4, 128),
        ):
            assert np.all(np.diff(seconds) >= -1e-12 * seconds[1:])  # rounding of the logs
            assert np.all(seconds > 0)


def test_left_out_token_counts_price_within_a_tenth_at_the_median(h100):
    # RMSNorm on H100: every other measured token count left out, priced from the rest
    rows = table_rows("h100_sxm", "pass", "add_rmsnorm")
    counts = np.unique(rows.shape["tokens"])
    out = np.isin(rows.shape["tokens"], counts[1::2])
    clock = Clock("pass", "add_rmsnorm", Sheet.of(h100), rows.take(~out))
    left = rows.take(out)
    ratio = clock(left.shape) / left.seconds
    assert len(left) == 49
    assert abs(np.median(ratio) - 1.0) < 0.1
    assert np.all((ratio > 0.75) & (ratio < 1.35))


def test_a_part_without_tables_takes_the_fitted_physics(mi300x):
    # latency + latency a doubling of ranks + the ring's bytes over the bus share of the
    # all-reduce bus bandwidth (MI300X: 896 GB/s of links, a quarter of it)
    p = fitted()["allreduce"]["custom"]
    bus = 896e9 / 4.0
    nbytes = 64e6
    by_hand = (p["latency_us"] + p["rank_us"] * 3.0) * 1e-6 + 1.75 * nbytes / (bus * p["bus_share"])
    assert kp.allreduce_s(mi300x, 8, nbytes) == pytest.approx(by_hand, rel=1e-12)
    assert kp.allreduce_s(mi300x, 1, nbytes) == 0.0
    # a GEMM: fixed time + the larger of its arithmetic and its bytes
    g = fitted()["gemm"]["bfloat16"]
    m, n, k = 4096.0, 8192.0, 8192.0
    rate = 1.3074e15 * g["efficiency"] * m / (m + g["half_tokens"])
    memory = (n * k * 2.0 + 2.0 * m * (n + k)) / (5.3e12 * g["stream_share"])
    by_hand = g["fixed_us"] * 1e-6 + max(2.0 * m * n * k / rate, memory)
    assert kp.gemm_s(mi300x, "bf16", m, n, k) == pytest.approx(by_hand, rel=1e-12)


def test_refitting_reproduces_the_stored_parameters():
    """The collectives and the NVFP4 fused MoE (fitted to the default kernel's rows, the one
    the engine runs above 128 tokens a call)."""
    stored = fitted()
    for op, variant in (("allreduce", "custom"), ("collective", "all_reduce"), ("moe", "nvfp4")):
        entry = stored[op][variant]
        for name, value in fit_all(op, variant).items():
            assert value == entry[name], (op, variant, name)


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda g: kp.gemm_s(g, "int3", 1, 8, 8), "dtype"),
        (lambda g: kp.gemm_s(g, "fp8", -4, 8, 8), "m"),
        (lambda g: kp.allreduce_s(g, 8, -1.0), "nbytes"),
        (lambda g: kp.collective_s(g, "broadcast", 8, 1024), "op"),
        (lambda g: kp.moe_s(g, "fp8", 16, 4096, 1024, 2, 8, 1, 1, "zipf"), "distribution"),
        (lambda g: kp.context_attention_s(g, "fp8", 1, math.nan, 32, 8, 128), "tokens"),
    ],
)
def test_bad_arguments_name_the_argument(h100, call, argument):
    with pytest.raises(SpecError) as caught:
        call(h100)
    assert caught.value.field == argument
    assert "\n" not in str(caught.value)


def test_unique_rows_is_numpys_unique_of_each_tables_rows():
    # every shape table of one part, the MoE's with its several group fields, plus rows that
    # take numpy's own path (a NaN, a negative zero)
    tables = []
    for op in ("gemm", "generation_attention", "context_attention", "moe", "collective"):
        for variant in sorted(kp.table_variants("h100_sxm", op)):
            table, at, shape = kp._READERS[op]("h100_sxm", variant, "balanced")
            tables.append(np.stack([np.asarray(v, dtype=float) for v in shape.values()], axis=1))
    tables += [np.array([[1.0, np.nan], [1.0, np.nan], [0.0, 2.0]]), np.array([[-0.0], [0.0]])]
    for rows in tables:
        unique, inverse = kp.unique_rows(rows)
        expected, expected_inverse = np.unique(rows, axis=0, return_inverse=True)
        np.testing.assert_array_equal(unique, expected)
        np.testing.assert_array_equal(inverse, expected_inverse.reshape(-1))
        assert np.array_equal(np.signbit(unique), np.signbit(expected))


def test_a_filled_cell_takes_the_first_nearest_measured_cell():
    from inference_econ.model.kernel_grid import _nearest

    # the H100 FP8 GEMM table's cells: most measured, the few missing filled from a neighbour
    rows = table_rows("h100_sxm", "gemm", "fp8")
    index = [np.unique(rows.shape[a], return_inverse=True)[1] for a in ("m", "n", "k")]
    measured = np.zeros([int(i.max()) + 1 for i in index], dtype=bool)
    measured[tuple(index)] = True
    measured[::3, 1::4, 2] = False  # a few more gaps, several steps from the nearest
    have, want = np.argwhere(measured), np.argwhere(~measured)
    got = _nearest(want, have, measured.shape)
    # brute force on every fifth missing cell (the whole set's distances cost a second)
    some = slice(None, None, 5)
    steps = np.abs(want[some, None, :] - have[None, :, :]).sum(axis=2)
    np.testing.assert_array_equal(got[some], steps.argmin(axis=1))
    # a grid as long as 16-bit distances could overflow takes whole 64-bit ones
    wide = np.zeros(20000, dtype=bool)
    wide[[3, 19989]] = True
    have, want = np.argwhere(wide), np.argwhere(~wide)
    far = _nearest(want, have, wide.shape)
    np.testing.assert_array_equal(far, np.abs(want - have.T).argmin(axis=1))
    assert far[want[:, 0] == 9996].tolist() == [0]  # 9,993 from either: the first


def test_a_prompt_past_the_tables_grows_with_its_square():
    # B200's context attention is measured to 16,384 tokens a prompt (12,288 to 16,384: an
    # elasticity of 1.97); a causal prompt's work grows with the square of its tokens, so a
    # 32,768-token prompt costs near four times a 16,384-token one (12.3 ms against 3.1), where
    # a sliding-window layer's (128) and a GEMM's rows stay linear, at most twice
    b200 = ie.load_hardware("B200")

    def attention(tokens, window=0, batch=1):
        return float(kp.context_attention_s(b200, "fp8", batch, tokens, 64, 8, 128, window))

    ratio = attention(32768) / attention(16384)
    assert 3.6 < ratio <= 4.0
    assert attention(65536) / attention(32768) == pytest.approx(ratio, rel=1e-9)
    assert 1.0 < attention(32768, 128) / attention(16384, 128) <= 2.0
    gemm = [float(kp.gemm_s(b200, "fp8", m, 8192, 8192)) for m in (65536, 131072)]
    assert 1.0 < gemm[1] / gemm[0] <= 2.0
