"""AMD Instinct, Blackwell Ultra, PCIe and TPU parts: listed, shown with their datasheet figures,
found by benchmark system names, and never beaten by measured AMD results (docs/model.md §C1)."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.specs.catalog import resolve_system_name

AMD_ROWS = Path(__file__).parent / "data" / "benchmarks_amd.csv"

# Datasheet figures, dense: HBM bytes as the device reports them (nvidia-smi's memory.total:
# 81,559 MiB on an H100 PCIe, 143,771 on an H200, 275,040 on a B300, 284,208 on a GB300, 46,068
# on an L40S, 97,887 on an RTX PRO 6000; rocm-smi's 206,141,652,992 bytes on an MI300X; 256 and
# 288 GiB on the MI325X and MI355X by the same rule; each hardware file cites its reading),
# HBM bytes/s, {bits: peak FLOP/s}, scale-up bandwidth per GPU (both directions), per-link
# bandwidth (mesh/torus) or PCIe bandwidth, price per hour
DATASHEETS = {
    "MI300X": (206141652992, 5.3e12, {16: 1307.4e12, 8: 2614.9e12}, 896e9, 128e9),
    "MI325X": (256 * 2**30, 6.0e12, {16: 1307.4e12, 8: 2614.9e12}, 896e9, 128e9),
    "MI355X": (288 * 2**30, 8.0e12, {16: 2.5e15, 8: 5.0e15, 6: 10e15, 4: 10e15}, 1075.2e9, 153.6e9),
    "GB300-NVL72": (284208 * 2**20, 8.0e12, {16: 2.5e15, 8: 5e15, 6: 5e15, 4: 15e15}, 1.8e12, None),
    "B300-HGX": (275040 * 2**20, 8.0e12, {16: 2.25e15, 8: 4.5e15, 4: 13.125e15}, 1.8e12, None),
    "H200-NVL": (143771 * 2**20, 4.8e12, {16: 1671e12 / 2, 8: 3341e12 / 2}, 900e9, 128e9),
    "H100-PCIe": (81559 * 2**20, 2.0e12, {16: 1513e12 / 2, 8: 3026e12 / 2}, 600e9, 128e9),
    "L40S": (46068 * 2**20, 864e9, {16: 362.05e12, 8: 733e12}, 0.0, 64e9),
    "RTX-PRO-6000-BSE": (97887 * 2**20, 1.792e12, {4: 4000e12 / 2}, 0.0, 128e9),
    "TPU-v5e": (16e9, 819e9, {16: 197e12, 8: 393e12}, 400e9, 100e9),
    "TPU-v5p": (95e9, 2765e9, {16: 459e12, 8: 918e12}, 1200e9, 200e9),
    "TPU-v6e": (32e9, 1638e9, {16: 918e12, 8: 1836e12}, 800e9, 200e9),
}
KINDS = {"MI": "full_mesh", "TP": "torus", "GB": "switch", "B3": "switch"}
#: USD per chip-hour on Google's on-demand list, and on the paper basis (the paper's rule: the
#: lowest long-term rate x 2/3; the v6e's 3-year commitment 1.22, docs/model.md §G1)
TPU_PRICES = {"TPU-v5e": 1.20, "TPU-v5p": 4.20, "TPU-v6e": 2.70}
TPU_PAPER_PRICES = {"TPU-v6e": 1.22 * 2 / 3}


def test_every_new_part_is_listed():
    result = CliRunner().invoke(main, ["list", "hardware", "--format", "csv"])
    listed = set(pd.read_csv(pd.io.common.StringIO(result.stdout), comment="#")["name"])
    assert set(DATASHEETS) <= listed


@pytest.mark.parametrize("name", sorted(DATASHEETS))
def test_show_gives_the_datasheet_figures(name):
    hbm, bw, flops, scale_up, link = DATASHEETS[name]
    result = CliRunner().invoke(main, ["show", name, "--format", "json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)["rows"][0]
    assert shown["hbm_capacity_bytes"] == pytest.approx(hbm)
    assert shown["hbm_bandwidth_bytes_per_s"] == pytest.approx(bw)
    for bits, rate in flops.items():
        assert shown["flop_per_s"][str(bits)] == pytest.approx(rate, rel=0.01), bits
    assert shown["nvlink_bandwidth_bytes_per_s"] == pytest.approx(scale_up)
    kind = shown["interconnect"]
    assert kind == KINDS.get(name[:2], "pcie" if "PCIe" in name or name[0] in "HLR" else kind)
    if kind in ("full_mesh", "torus"):
        assert shown["link_bandwidth_bytes_per_s"] == pytest.approx(link)
    elif kind == "pcie":
        assert shown["pcie_bandwidth_bytes_per_s"] == pytest.approx(link)
    if name in TPU_PRICES:  # every price carries its basis
        assert shown["prices"]["on-demand"] == pytest.approx(TPU_PRICES[name])
        assert shown["price_basis"] == "paper"
    if name in TPU_PAPER_PRICES:
        assert shown["price_usd_per_hour"] == pytest.approx(TPU_PAPER_PRICES[name], rel=1e-3)


def test_fp4_and_fp6_run_at_their_own_rate_where_the_chip_has_one():
    mi355x = ie.load_hardware("MI355X")
    assert (
        mi355x.peak_flop_per_s(4)
        == mi355x.peak_flop_per_s(6)
        == pytest.approx(2 * mi355x.peak_flop_per_s(8))
    )
    mi300x = ie.load_hardware("MI300X")
    assert mi300x.peak_flop_per_s(4) == mi300x.peak_flop_per_s(8)  # CDNA 3: no FP4
    assert mi355x.peak_flop_per_s(4, native_fp4=False) == mi355x.peak_flop_per_s(8)


@pytest.mark.parametrize(
    "text, name, count",
    [
        ("8xMI325X_2xEPYC_9575F", "MI325X", 8),
        ("NVIDIA B200-SXM-180GB", "B200-HGX", None),
        ("GB200 NVL72", "GB200-NVL72", None),
        ("NVIDIA H200-SXM-141GB-CTS", "H200-SXM", None),
        ("AMD Instinct MI300X-NPS1-SPX-192GB-750W", "MI300X", None),
        ("AMD MI300X-NPS1-SPX-192GB-750W", "MI300X", None),
        ("1xMI300X_2xEPYC-9374F", "MI300X", 1),
        ("GB300-NVL72_GB300-288GB_aarch64x72", "GB300-NVL72", None),
        ("NVIDIA H100-PCIe-80GB", "H100-PCIe", None),
        ("H100 80GB HBM3 x8 (Azure ND H100 v5)", "H100-SXM", 8),
        ("XE9680_MI300X_192GBx8", "MI300X", 8),
        ("TPU v6e", "TPU-v6e", None),
        ("8xB200_NVL", "B200-HGX", 8),  # TensorRT-LLM's recipe tables
        ("B200 NVL", "B200-HGX", None),
        ("HGX B200 NVL8", "B200-HGX", None),
        ("GB200 NVL", "GB200-NVL72", None),
        ("HGX B300 NVL16", "B300-HGX", None),  # NVIDIA's name counts the 16 dies of 8 GPUs
    ],
)
def test_benchmark_system_names_resolve(text, name, count):
    system = resolve_system_name(text)
    assert system.name == name and system.accelerators == count
    assert ie.load_hardware(text).name == name  # load_hardware falls back to it


def test_a_different_part_is_never_read_as_a_similar_one():
    # the H100 NVL (94 GB) is not the H100 SXM: identifying words are kept
    assert resolve_system_name("NVIDIA H100-NVL-94GB").name == "H100-NVL"
    with pytest.raises(ie.SpecError) as info:  # a part the catalog lacks stays unknown
        resolve_system_name("NVIDIA H100-NVX-96GB")
    assert "read as 'H100 NVX'" in str(info.value) and "did you mean" in str(info.value)


def test_a_domain_word_is_dropped_only_where_it_names_the_parts_own_domain():
    # the GB200 NVL4 board links four GPUs: not the 72 of the GB200-NVL72 file
    with pytest.raises(
        ie.SpecError, match=r"NVLink domain of 4 GPUs; the GB200-NVL72 spec's is 72"
    ):
        resolve_system_name("GB200 NVL4")
    # the H200 has an NVL card of its own, so "NVL8" after it names neither part
    with pytest.raises(ie.SpecError, match="did you mean"):
        resolve_system_name("H200 NVL8")
    assert resolve_system_name("H200 NVL").name == "H200-NVL"
    assert resolve_system_name("B200 NVL 8").name == "B200-HGX"
    # a size the name states is still checked once the word is dropped
    with pytest.raises(ie.SpecError, match="it states 96 GB, and the B200 parts"):
        resolve_system_name("B200 NVL8 96GB")
    # parts with no NVLink domain of several GPUs take no such word
    for text in ("GH200 NVL", "L40S NVL8", "MI300X NVL8"):
        with pytest.raises(ie.SpecError, match="did you mean"):
            resolve_system_name(text)


@pytest.fixture(scope="module")
def amd_rows():
    return pd.read_csv(AMD_ROWS)


def test_every_amd_row_resolves_to_our_files(amd_rows):
    names = {resolve_system_name(h).name for h in amd_rows.hardware}
    assert names == {"MI300X", "MI325X", "MI355X"}
    mlperf = amd_rows[amd_rows.model.str.startswith("Llama-2-70B")]
    assert len(mlperf) == 36 and {resolve_system_name(h).name for h in mlperf.hardware} == {
        "MI300X"
    }
    assert ie.load_model("llama2-70b-99").name == "Llama 2 70B"  # MLPerf's benchmark name


def test_amd_rows_stay_under_the_refined_bound(amd_rows):
    """The bound: decode only (no prefill), at context 0, FP8 weights, activations and cache,
    the `refined` preset; the best throughput per GPU any configuration reaches (the frontier's
    cheapest point), and for Server rows the best at the measured speed per user or faster.
    Prefill, longer contexts and 16-bit activations only lower it, so a row above it would
    mean the model is wrong."""
    front = ie.frontier(
        "Llama 2 70B",
        "MI300X",
        weight_bits=8,
        activation_bits=8,
        kv_cache_bits=8,
        assumptions="refined",
        grid_points=48,
    )
    best_per_gpu = front.cheapest().tokens_per_s_per_gpu
    mlperf = amd_rows[amd_rows.model.str.startswith("Llama-2-70B")]
    per_gpu = mlperf[mlperf.metric == "throughput_per_gpu"]
    assert len(per_gpu) == 8 and (per_gpu.value < best_per_gpu).all()
    server = mlperf[mlperf.model.str.contains("Server")]
    for _, speed in server[server.metric == "per_user_decode_speed"].iterrows():
        same = server[(server.source == speed.source) & (server.metric == "throughput_per_gpu")]
        bound = front.cheapest_at_speed(speed.value).tokens_per_s_per_gpu
        assert same.value.iloc[0] < bound
    # matmul micro-benchmarks stay under the BF16 peak
    for _, row in amd_rows[amd_rows.metric == "TFLOPS"].iterrows():
        gpu = ie.load_hardware(row.hardware)
        assert row.value * 1e12 < gpu.peak_flop_per_s(16)


# --- parts of the newer held-out file (MLPerf v5.1, v6.0, v6.1) ---------------------------------
NEWER_ROWS = Path(__file__).parent / "data" / "benchmarks_test_mlperf_newer.csv"
#: Every name the held-out file's hardware column gives each part, and figures checked by hand
#: against the source the part's file cites for them.
NEWER_PARTS = {
    # ServeTheHome MI350 series table: 8 TB/s, MXFP8 4.6 PFLOPS (256 CU x 8,192 x 2.2 GHz)
    "MI350X": (
        ["AMD Instinct MI350X 288GB HBM3e"],
        {"hbm_bandwidth_bytes_per_s": 8.0e12, "fp8": 4.6e15},
    ),
    # ServeTheHome: half an MI350X, 144 GB, 4 TB/s, MXFP8 2.3 PFLOPS, PCIe Gen5 x16 only
    "MI350P": (["AMD Instinct MI350P"], {"hbm_capacity_bytes": 144e9, "fp8": 2.3e15}),
    # 256-bit GDDR7 at 28 Gbps = 896 GB/s
    "RTX-PRO-4500": (["NVIDIA RTX PRO 4500 Blackwell"], {"hbm_bandwidth_bytes_per_s": 896e9}),
    # 128-bit GDDR6 at 14 Gbps = 224 GB/s; 170 INT8 TOPS
    "Arc-Pro-B50": (
        ["Intel(R) Arc Pro(R) B50"],
        {"hbm_bandwidth_bytes_per_s": 224e9, "fp8": 170e12},
    ),
    # 192-bit GDDR6 at 19 Gbps = 456 GB/s; Intel's 197 INT8 TOPS
    "Arc-Pro-B60": (
        ["Intel(R) Arc Pro(R) B60"],
        {"hbm_bandwidth_bytes_per_s": 456e9, "fp8": 197e12},
    ),
    # 256-bit GDDR6, 608 GB/s; 367 INT8 TOPS
    "Arc-Pro-B70": (
        ["Intel(R) Arc Pro(R) B70", "Intel(R) Arc(TM) Pro B70"],
        {"hbm_bandwidth_bytes_per_s": 608e9, "fp8": 367e12},
    ),
    # one card = two B60 GPUs, as MLPerf counts it ("48 GB" per accelerator)
    "Arc-Pro-B60-Dual": (
        ["MS-Intel Arc Pro B60 Dual 48G Turbo", "[MAXSUN] MS-Intel Arc Pro B60 Dual 48G Turbo"],
        {"hbm_capacity_bytes": 48e9, "hbm_bandwidth_bytes_per_s": 912e9},
    ),
    # MLPerf v6.1 NVIDIA system description: 288 GB HBM4, 72 GPUs in one NVLink domain
    "VR200-NVL72": (
        ["NVIDIA Vera Rubin", "NVIDIA VR200"],
        {"hbm_capacity_bytes": 288e9, "scale_up_domain_gpus": 72},
    ),
}


@pytest.fixture(scope="module")
def newer_hardware():
    return set(pd.read_csv(NEWER_ROWS, usecols=["hardware"]).hardware)


@pytest.mark.parametrize("name", sorted(NEWER_PARTS))
def test_newer_parts_load_resolve_and_match_their_sources(name, newer_hardware):
    texts, figures = NEWER_PARTS[name]
    assert set(texts) <= newer_hardware  # the strings are the held-out file's own
    for text in texts:
        assert resolve_system_name(text).name == name, text
    gpu = ie.load_hardware(name)
    for field, value in figures.items():
        got = gpu.peak_flop_per_s(8) if field == "fp8" else getattr(gpu, field)
        assert got == pytest.approx(value, rel=0.01), field
    assert gpu.price_basis == "paper" and gpu.power.board_w > gpu.power.idle_w


def test_every_single_part_of_the_newer_file_resolves(newer_hardware):
    """Only the mixed-GPU systems (several parts in one name) stay unresolved."""
    unresolved = set()
    for text in newer_hardware:
        try:
            resolve_system_name(text)
        except ie.SpecError:
            unresolved.add(text)
    assert unresolved and all(re.search(r" \+ | and |\), AMD", t) for t in unresolved)


def test_newer_parts_interconnects_and_precisions():
    dual, b60 = ie.load_hardware("Arc-Pro-B60-Dual"), ie.load_hardware("Arc-Pro-B60")
    assert dual.peak_flop_per_s(16) == pytest.approx(2 * b60.peak_flop_per_s(16))
    assert dual.scale_up_domain_gpus == 4 and dual.pcie_bandwidth_bytes_per_s == 128e9
    for name in ("Arc-Pro-B50", "Arc-Pro-B60", "Arc-Pro-B70"):  # no FP4 on Xe2 XMX
        arc = ie.load_hardware(name)
        assert arc.interconnect == "pcie" and arc.peak_flop_per_s(4) == arc.peak_flop_per_s(8)
    assert ie.load_hardware("MI350X").interconnect == "full_mesh"
    assert ie.load_hardware("MI350X").link_bandwidth_bytes_per_s == pytest.approx(153.6e9)
    assert ie.load_hardware("MI350P").interconnect == "pcie"
    rubin = ie.load_hardware("VR200-NVL72")
    assert rubin.interconnect == "switch" and rubin.nvlink_bandwidth_bytes_per_s == 3.6e12
    assert rubin.peak_flop_per_s(4) == pytest.approx(2.5e18 / 72)  # NVFP4 training, per rack
