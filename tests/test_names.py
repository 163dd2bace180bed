"""Names and defaults that never silently become something else: a part's name that states a
memory size is that part or an error (nvidia-smi's names too); the common parts and models users
name are in the catalog with their sources; a default engine that does not run on a part's
platform gives way to that platform's, said on one line, and a named one is refused; a derived
GPU says which fitted figures it inherits, and from which part."""

import warnings

import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.errors import InferenceEconWarning, SpecError
from inference_econ.specs import catalog
from inference_econ.specs.hardware import derive, gpu_from_dict, load_hardware

GIB = 2**30


# --- a name that states a memory size ------------------------------------------------------------


@pytest.mark.parametrize(
    "name, part",
    [
        ("A100-40GB", "A100-SXM-40GB"),
        ("A100 40 GB", "A100-SXM-40GB"),
        ("NVIDIA A100-SXM4-40GB", "A100-SXM-40GB"),  # nvidia-smi's name
        ("NVIDIA A100-PCIE-40GB", "A100-PCIe-40GB"),
        ("A100 80GB", "A100-SXM-80GB"),
        ("NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("H100 94GB", "H100-NVL"),  # the 94 GB H100 is the NVL card, not the 80 GB SXM
        ("NVIDIA H200", "H200-SXM"),
        ("NVIDIA B200", "B200-HGX"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA GeForce RTX 4090", "RTX-4090"),
        ("NVIDIA GeForce RTX 5090", "RTX-5090"),
        ("NVIDIA GH200 Grace Hopper Superchip 96GB", "GH200-96GB"),
    ],
)
def test_a_name_is_the_part_with_the_memory_it_states(name, part):
    assert load_hardware(name).name == part


@pytest.mark.parametrize(
    "name, listed",
    [("B200 96GB", "B200-HGX (179 GiB)"), ("H100 40GB", "H100-SXM (80 GiB)")],
)
def test_a_memory_size_no_such_part_has_is_refused_with_the_parts(name, listed):
    """Before: "B200 96GB" ran the 180 GB B200 (its size dropped as decoration)."""
    with pytest.raises(SpecError, match="states") as info:
        load_hardware(name)
    assert listed in str(info.value)
    result = CliRunner().invoke(main, ["show", name])
    assert result.exit_code != 0 and listed in result.output


def test_every_shipped_name_that_states_a_memory_size_holds_it():
    """An alias such as "H100-NVL-94GB" or "AMD Instinct MI300X 192GB HBM3" names a part of
    that memory, within the 5 % GB/GiB rounding (a "180GB" B200 has 179 GiB)."""
    for entry in catalog.entries("hardware"):
        for text in (entry.name, *entry.aliases):
            gb = catalog.stated_memory_gb(text)
            if gb is not None:
                size = load_hardware(entry.path).hbm_capacity_bytes
                assert any(0.95 <= size / (gb * u) <= 1.05 for u in (1e9, GIB)), (text, size)


# --- the parts and models users name ---------------------------------------------------------


@pytest.mark.parametrize(
    "name, capacity, bandwidth, bf16, fp8, board_w",
    [
        # NVIDIA A100 datasheet: 40 GB HBM2 at 1,555 GB/s, 312 TFLOPS BF16 and 624 TOPS INT8
        ("A100-SXM-40GB", 40 * GIB, 1.555e12, 312e12, 624e12, 400),
        ("A100-PCIe-40GB", 40 * GIB, 1.555e12, 312e12, 624e12, 250),
        # NVIDIA L4 datasheet: 242 / 485 TFLOPS with sparsity, 300 GB/s, 72 W
        ("L4", 24e9, 300e9, 121e12, 242.5e12, 72),
        # Ada whitepaper: 165.2 / 330.3 TFLOPS with FP32 accumulate, dense; 1,008 GB/s, 450 W
        ("RTX-4090", 24e9, 1.008e12, 165.2e12, 330.3e12, 450),
        # 838.4 / 1,676.8 TFLOPS sparse with FP16 accumulate, quartered; 1,792 GB/s, 575 W
        ("RTX-5090", 32e9, 1.792e12, 209.6e12, 419.2e12, 575),
    ],
)
def test_the_common_parts_have_their_datasheet_figures(
    name, capacity, bandwidth, bf16, fp8, board_w
):
    gpu = load_hardware(name)
    assert gpu.hbm_capacity_bytes == pytest.approx(capacity)
    assert gpu.hbm_bandwidth_bytes_per_s == pytest.approx(bandwidth)
    assert gpu.peak_flop_per_s(16) == pytest.approx(bf16)
    assert gpu.peak_flop_per_s(8) == pytest.approx(fp8)
    assert gpu.power is not None and gpu.power.board_w == board_w


def test_the_96gb_gh200_is_its_own_part():
    """HBM3 at 4 TB/s, the 144 GB part's Hopper otherwise (NVIDIA's GH200 announcement)."""
    small, large = load_hardware("GH200-96GB"), load_hardware("GH200-144GB")
    assert (small.hbm_capacity_bytes, small.hbm_bandwidth_bytes_per_s) == (96e9, 4.0e12)
    assert small.flop_per_s == large.flop_per_s


@pytest.mark.parametrize(
    "name, repo, total, active",
    [
        ("Mistral 7B v0.3", "mistralai/Mistral-7B-Instruct-v0.3", 7.25e9, 7.25e9),
        ("Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B", 30.5e9, 3.3e9),
        ("Qwen3-8B", "Qwen/Qwen3-8B", 8.2e9, 8.2e9),
        ("Qwen3-32B", "Qwen/Qwen3-32B", 32.8e9, 32.8e9),
        ("Qwen3-235B-A22B", "Qwen/Qwen3-235B-A22B", 235e9, 22e9),
        ("Kimi K2", "moonshotai/Kimi-K2-Instruct", 1.04e12, 32.6e9),
        ("GLM-4.6", "zai-org/GLM-4.6", 355e9, 32e9),
    ],
)
def test_the_models_users_ask_for_name_their_checkpoint(name, repo, total, active):
    """Each file names its Hugging Face repository first (what ``export`` loads) and counts
    the model card's parameters within 10 % (GLM's 32B active leaves out its embeddings)."""
    summary = ie.model_summary(name)
    assert str(summary["source"]).split()[0] == repo
    assert summary["total_params"] == pytest.approx(total, rel=0.1)
    assert summary["active_params"] == pytest.approx(active, rel=0.1)


def test_mistral_v03_differs_from_v01_where_its_config_does():
    """v0.3: a 32,768-token vocabulary and no sliding window (v0.1: 32,000 and 4,096)."""
    v1, v3 = ie.load_model("Mistral 7B"), ie.load_model("mistral-7b-v0.3")
    assert (v1.vocab_size, v3.vocab_size) == (32000, 32768)
    windows = [{g.sliding_window_tokens for g in m.layer_groups} for m in (v1, v3)]
    assert windows == [{4096}, {None}]


# --- the engine on a part's platform ---------------------------------------------------------


def test_the_default_engine_gives_way_on_rocm_and_says_so():
    """Before: the achievable preset ran TensorRT-LLM (CUDA only) on an MI300X without a word."""
    with pytest.warns(InferenceEconWarning, match="MI300X runs ROCm.*served by vllm-rocm"):
        setting = ie.make_setting("Llama 3 70B", "MI300X", assumptions="achievable")
    assert setting.assumptions.profile().name == "vllm-rocm"


def test_the_command_line_says_so_on_one_line():
    args = ["point", "Llama 3 70B", "-H", "MI300X", "--gpus", "8", "--batch", "64"]
    result = CliRunner().invoke(main, [*args, "--weight-bits", "8", "--assumptions", "achievable"])
    assert result.exit_code == 0, result.output
    said = [line for line in result.output.splitlines() if line.startswith("warning: MI300X")]
    assert len(said) == 1 and "served by vllm-rocm" in said[0]
    assert "engine profile vllm-rocm" in result.output


def test_the_default_engine_stays_where_it_runs():
    with warnings.catch_warnings():
        warnings.simplefilter("error", InferenceEconWarning)
        setting = ie.make_setting("Llama 3 70B", "H100", assumptions="achievable")
        named = ie.make_setting("Llama 3 70B", "MI300X", assumptions="achievable", engine="vllm")
    assert setting.assumptions.profile().name == "trtllm"
    assert named.assumptions.profile().name == "vllm-rocm"  # vLLM's profile on ROCm, unsaid


@pytest.mark.parametrize(
    "engine, runs",
    [
        ("vllm", "vllm-rocm"),
        ("vllm@0.18.0", "vllm-rocm@0.18.0"),
        ("vllm-rocm@0.18.0", "vllm-rocm@0.18.0"),
        ("vllm-v0", "vllm-v0-rocm"),
    ],
)
def test_vllm_named_on_an_amd_part_runs_its_rocm_profile(engine, runs):
    """vLLM named on an MI300X had run the CUDA profile (any platform), whose async scheduler of
    0.14 and later hides the step's host work, where the ROCm profile waits for it, as the
    default engine there and a measured row on the part do ("vllm-rocm@0.18.0" had been the
    CUDA profile too). Llama 3.1 8B on one MI300X at batch 32: its host work, 1 ms a step and
    6.588 us a sequence (engines/vllm.yaml), is charged (it had been 0 under vllm 0.14+)."""
    setting = ie.make_setting("Llama 3.1 8B", "MI300X", assumptions="achievable", engine=engine)
    assert setting.assumptions.label == f"achievable, engine {runs}"
    prof = setting.assumptions.profile()
    assert prof.platform == "rocm" and prof.host_overhead_exposed == 1.0
    row = ie.point(
        "Llama 3.1 8B", "MI300X", gpus=1, batch=32, assumptions="achievable", engine=engine
    )
    host = prof.step_time_scale * (prof.step_overhead_s + 32 * prof.sequence_overhead_s)
    assert row.host_s == pytest.approx(host, rel=1e-9) and row.host_s > 1.2e-3
    on_h100 = ie.make_setting("Llama 3.1 8B", "H100", assumptions="achievable", engine="vllm")
    assert on_h100.assumptions.profile().name == "vllm"  # CUDA: the profile itself


@pytest.mark.parametrize(
    "hardware, engine, says",
    [("MI300X", "trtllm", "runs on CUDA"), ("H100", "vllm-rocm", "runs on ROCm")],
)
def test_a_named_engine_that_does_not_run_on_the_part_is_refused(hardware, engine, says):
    with pytest.raises(SpecError, match=says):
        ie.make_setting("Llama 3 70B", hardware, assumptions="achievable", engine=engine)


@pytest.mark.parametrize(
    "hardware, says", [("TPU v6e", "runs TPU"), ("Arc Pro B60", "runs Intel XPU")]
)
def test_a_tpu_or_an_intel_gpu_is_not_served_by_a_cuda_engine(hardware, says):
    """TPUs and Intel's Arc parts had been taken for CUDA parts: the achievable preset priced
    them with TensorRT-LLM without a word, and export wrote a TensorRT-LLM launch (and a
    CUDA image with nvidia.com/gpu) for a TPU. The default gives way to vLLM, which runs on
    both; TensorRT-LLM named is refused; export writes no launch for either."""
    with pytest.warns(InferenceEconWarning, match=f"{says}.*served by vllm"):
        setting = ie.make_setting("Llama 3.1 8B", hardware, assumptions="achievable")
    assert setting.assumptions.profile().name == "vllm"
    with pytest.raises(SpecError, match="trtllm runs on CUDA"):
        ie.make_setting("Llama 3.1 8B", hardware, assumptions="achievable", engine="trtllm")
    from inference_econ import api

    with pytest.raises(SpecError, match="export writes launches for CUDA and ROCm parts only"):
        api.export(
            "Llama 3.1 8B", hardware, engine="vllm", gpus=1, batch=8, prompt_tokens=100,
            output_tokens=10,
        )  # fmt: skip


def test_a_part_derived_from_an_amd_one_runs_rocm_whatever_its_name():
    """A what-if MI300X named "AMD what-if" (twice the NIC bandwidth) was taken for a CUDA part
    and priced with TensorRT-LLM: Llama 3.1 8B on one GPU at batch 32 ran at 124.4 tok/s
    against the MI300X's own 108.1 under vllm-rocm. It runs vllm-rocm, at the MI300X's speed."""
    base = ie.point("Llama 3.1 8B", "MI300X", gpus=1, batch=32, assumptions="achievable")
    what_if = derive("MI300X", name="AMD what-if", scale={"nic_bandwidth_bytes_per_s": 2})
    with pytest.warns(InferenceEconWarning, match="AMD what-if runs ROCm.*vllm-rocm"):
        setting = ie.make_setting("Llama 3.1 8B", what_if, assumptions="achievable")
    assert setting.assumptions.profile().name == "vllm-rocm"
    with pytest.warns(InferenceEconWarning, match="runs ROCm"):
        row = ie.point("Llama 3.1 8B", what_if, gpus=1, batch=32, assumptions="achievable")
    assert base.tokens_per_s == pytest.approx(108.1, rel=1e-3)
    assert row.tokens_per_s == pytest.approx(base.tokens_per_s, rel=1e-9)
    with pytest.raises(SpecError, match="runs on CUDA"):
        ie.make_setting("Llama 3 70B", what_if, assumptions="achievable", engine="trtllm")
    # and a part derived from a CUDA one stays CUDA whatever its name ("Mild..." starts "MI")
    mild = derive("H100-SXM", name="Mild H100")
    assert ie.make_setting("Llama 3.1 8B", mild, assumptions="achievable").assumptions.profile(
    ).name == "trtllm"  # fmt: skip


def test_a_part_derived_from_an_a100_keeps_the_a100s_engine_defaults():
    """vLLM's larger defaults (1,024 requests, 8,192 tokens served) skip the A100 by name; a
    what-if A100 named otherwise took them, and at 30 req/s of 1,000 / 300 tokens on one GPU
    its simulated p99 TPOT was 165 ms against the A100's 108 ms. It keeps the A100's."""
    vllm = ie.load_engine("vllm")
    a100 = load_hardware("A100-SXM-80GB")
    what_if = derive(a100, name="Ampere what-if")
    for offline in (True, False):
        assert vllm.scheduler_limits(what_if, offline) == vllm.scheduler_limits(a100, offline)
    assert vllm.scheduler_limits(what_if, False) != vllm.scheduler_limits(
        load_hardware("H100-SXM"), False
    )


def test_every_profile_states_a_platform_the_catalog_knows():
    for entry in catalog.entries("engines"):
        assert ie.load_engine(entry.path).platform in ("cuda", "rocm", "any")


# --- fitted figures a derived part inherits ----------------------------------------------------


def test_a_derived_spec_names_the_fitted_figures_it_inherits():
    """Before: a GPU derived from the L40S ran at the L40S's fitted derating without a word."""
    card = derive("L40S", name="my card", hbm_bandwidth_bytes_per_s=1e12)
    assert dict(card.inherited_fits) == {
        "gemm_efficiency": "L40S",
        "gemm_power_derating": "L40S",
        "small_batch_gemm": "L40S",
        "moe_plateau_share": "L40S",
    }
    assert card.gemm_power_derating == load_hardware("L40S").gemm_power_derating == 0.53


def test_a_fitted_figure_set_again_is_not_inherited_and_a_chain_keeps_its_origin():
    card = derive("L40S", name="my card", gemm_power_derating=1.0, scale={"moe_plateau_share": 1})
    assert dict(card.inherited_fits) == {"gemm_efficiency": "L40S", "small_batch_gemm": "L40S"}
    again = derive(card, name="my other card")  # the scaled figure is now "my card"'s own
    assert dict(again.inherited_fits) == {
        "gemm_efficiency": "L40S",
        "small_batch_gemm": "L40S",
        "moe_plateau_share": "my card",
    }


def test_show_prints_what_a_shipped_derived_spec_inherits():
    paper = load_hardware("A100-paper")
    assert paper.inherited_fits == (("gemm_efficiency", "A100-SXM-80GB"),)
    assert load_hardware("A100-SXM-80GB").inherited_fits == ()
    result = CliRunner().invoke(main, ["show", "A100-paper"])
    assert result.exit_code == 0 and "gemm_efficiency (from A100-SXM-80GB)" in result.output


def test_a_file_cannot_claim_what_it_inherits():
    with pytest.raises(SpecError, match="unknown field"):
        gpu_from_dict({"derive_from": "H100-SXM", "inherited_fits": []}, "x.yaml")


def test_a_profile_file_runs_its_engines_terms_of_a_stated_version(tmp_path):
    """A calibrated vLLM profile (derive_from: vllm) inherits the 0.14+ async scheduler; a row
    stating 0.11.0 runs it waiting for its host work, as the catalog's vllm does at that
    version (the file had hidden it, pricing the rows it was fitted on otherwise)."""
    from inference_econ.specs.engine import select_engine

    path = tmp_path / "calibrated.yaml"
    path.write_text("name: my-vllm\nderive_from: vllm\nstep_time_scale: 1.0\n", encoding="utf-8")
    for version, exposed in ((None, 0.0), ("0.11.0", 1.0), ("0.18.0", 0.0)):
        assert select_engine(str(path), version).host_overhead_exposed == exposed, version
