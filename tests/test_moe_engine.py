"""Mixture-of-experts terms of the engine step (docs/model-part-f.md §F7): the factor of a
format's fused-MoE kernel from TensorRT-LLM's measured tables, and dispatch and combine as an
all-gather and a reduce-scatter where the engine has no all-to-all kernel. Hand-computed
cases against the shipped table of factors."""

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.model import achievable
from inference_econ.model.latency import StepModel
from inference_econ.model.moe import (
    EP_GRID,
    TOKEN_GRID,
    expert_kernel_format,
    family_of,
    format_grids,
    moe_format_factor,
    nearest_shape,
)
from inference_econ.model.step_calls import NO_CACHE
from inference_econ.model.workload import compile_workload
from inference_econ.specs.architecture import load_model


@pytest.fixture(scope="module")
def parts():
    return {n: ie.load_hardware(n) for n in ("B200", "GB300", "H200", "RTX PRO 6000", "MI355X")}


DEEPSEEK = (7168, 2048, 256, 8)  # hidden, intermediate, experts, top-k
GPT_OSS = (2880, 2880, 128, 4)


def test_factor_reads_the_table_at_its_grid_points(parts):
    """At a grid point the factor is the shape's cell of kernels/moe_formats.yaml: DeepSeek-V3's
    NVFP4 experts on B200 at EP 8 and 1,024 tokens 2.071; gpt-oss's W4A16 MXFP4 on H200 at
    EP 1 and 16,384 tokens 1.493."""
    nvfp4 = format_grids("blackwell", "nvfp4")[DEEPSEEK]
    assert nvfp4[EP_GRID.index(8)][TOKEN_GRID.index(1024)] == 2.071
    assert moe_format_factor(parts["B200"], "nvfp4", DEEPSEEK, 8, 1024) == pytest.approx(2.071)
    got = moe_format_factor(parts["H200"], "w4a16_mxfp4", GPT_OSS, 1, 16384)
    assert got == pytest.approx(1.493)


def test_factor_interpolates_in_log2_and_holds_beyond_the_grid(parts):
    """512 tokens is halfway (in log2) from 256 to 1,024: DeepSeek-V3 NVFP4 at EP 8, (2.113 +
    2.071)/2 = 2.092; EP sqrt(32) halfway from 4 to 8 at 1,024 tokens: (1.274 + 2.071)/2 =
    1.6725; EP 256 and 65,536 tokens take the last cell, 1.299; 0 tokens the first column's,
    2.073 (the low-latency kernel's, which TensorRT-LLM runs NVFP4 at up to 128 tokens)."""
    b200 = parts["B200"]
    assert moe_format_factor(b200, "nvfp4", DEEPSEEK, 8, 512) == pytest.approx(2.092)
    assert moe_format_factor(b200, "nvfp4", DEEPSEEK, np.sqrt(32.0), 1024) == pytest.approx(1.6725)
    assert moe_format_factor(b200, "nvfp4", DEEPSEEK, 256, 65536) == pytest.approx(1.299)
    assert moe_format_factor(b200, "nvfp4", DEEPSEEK, 8, 0) == pytest.approx(2.073)
    got = moe_format_factor(
        b200, "nvfp4", DEEPSEEK, np.array([8.0, 8.0]), np.array([512.0, 1024.0])
    )
    np.testing.assert_allclose(got, [2.092, 2.071])


def test_a_shape_the_tables_lack_takes_the_nearest_measured_one():
    """A model's own shape is itself where measured (Kimi K2's 384 experts are not DeepSeek's
    256); a shape not measured takes the one nearest in log2 of hidden, intermediate, experts
    and top-k: 7,000 x 2,000 with 250 experts, top 8, is DeepSeek-V3's; gpt-oss's NVFP4 (not a
    measured pairing) takes the 128-expert, top-4 shape 6,144 x 3,072."""
    measured = tuple(format_grids("blackwell", "nvfp4"))
    assert nearest_shape(DEEPSEEK, measured) == DEEPSEEK
    assert nearest_shape((7168, 2048, 384, 8), measured) == (7168, 2048, 384, 8)
    assert nearest_shape((7000, 2000, 250, 8), measured) == DEEPSEEK
    assert nearest_shape(GPT_OSS, measured) == (6144, 3072, 128, 4)


def test_formats_and_families(parts):
    """gpt-oss's MXFP4 experts (4.25 bits, FP8 GEMM activations) run W4A8 on Blackwell and
    W4A16 on Hopper; 4-bit weights are NVFP4 on Blackwell, no format with a factor on Hopper,
    whose FP8 tensor cores take them; 8-bit weights with 8-bit GEMM activations are per-tensor
    FP8 on both, with 16-bit ones (W8A16) and BF16 no format with a factor; a part without
    tables has factor 1."""
    b200, h200, rtx = parts["B200"], parts["H200"], parts["RTX PRO 6000"]
    assert expert_kernel_format(b200, 4.25, 8.0) == "w4a8_mxfp4_mxfp8"
    assert expert_kernel_format(h200, 4.25, 8.0) == "w4a16_mxfp4"
    assert expert_kernel_format(b200, 4.25, 16.0) == "w4a16_mxfp4"
    assert expert_kernel_format(b200, 4, 4.0) == "nvfp4"
    assert expert_kernel_format(h200, 4, 4.0) is None
    assert expert_kernel_format(b200, 8, 8.0) == expert_kernel_format(h200, 8, 8.0) == "fp8"
    assert expert_kernel_format(b200, 8, 16.0) is None
    assert expert_kernel_format(b200, 16, 16.0) is None
    assert expert_kernel_format(h200, 8, 8.0, block_scaled=True) == "fp8_block"
    assert family_of(parts["GB300"]) == "blackwell" and family_of(h200) == "hopper"
    assert family_of(rtx) is None and family_of(parts["MI355X"]) is None
    assert moe_format_factor(rtx, "nvfp4", DEEPSEEK, 8, 1024) == 1.0
    assert moe_format_factor(b200, None, DEEPSEEK, 8, 1024) == 1.0


def test_a_derived_part_runs_its_bases_fused_moe_and_is_never_slower_for_a_faster_network():
    """A part derived from an H100 (``derive_from``) runs the H100's fused-MoE kernels: its
    family is the base's, so gpt-oss-120b on 2 GPUs at batch 64 runs at the H100's 63.9 tok/s
    (48.8 when the derived part lost the tables' factor and was charged as a part without
    them), and twice the NIC bandwidth is never slower than the H100 itself."""
    h100 = ie.load_hardware("H100-SXM")
    same = ie.derive(h100, name="H100 what-if")
    faster = ie.derive(same, name="H100 2x NIC", scale={"nic_bandwidth_bytes_per_s": 2})
    assert same.derived_from == ("H100-SXM",)
    assert faster.derived_from == ("H100 what-if", "H100-SXM")
    assert family_of(same) == family_of(faster) == "hopper"
    assert family_of(ie.load_hardware("H100-paper")) == "hopper"
    speeds = [
        ie.point("gpt-oss-120b", gpu, gpus=2, batch=64, assumptions="achievable").tokens_per_s
        for gpu in (h100, same, faster)
    ]
    assert speeds[0] == pytest.approx(63.93, rel=1e-3)
    assert speeds[1] == pytest.approx(speeds[0], rel=1e-9)
    assert speeds[2] >= speeds[0] * (1 - 1e-9)


def _model(name, gpu, bits=None, preset="achievable"):
    arch = load_model(name)
    if bits is not None:
        arch = arch.with_precision(*bits)
    a = ie.preset(preset)
    return StepModel(compile_workload(arch, a), ie.load_hardware(gpu), a)


def test_engine_step_charges_the_experts_at_the_factor(monkeypatch):
    """DeepSeek-R1 at NVFP4 on 8 B200 with its experts over 8 ranks, 1,024 tokens a step: the
    routed experts' GEMM seconds and weight reads are the factor's 2.071 times what they are
    without it; the dense GEMMs are unchanged."""
    model = _model("deepseek-r1", "B200", (4, 16))
    splits = [(1.0, 8.0) if g.experts <= 1 else (8.0, 1.0) for g in model.work.groups]
    part = model.engine.part(1024.0, 1.0, 8.0, 1024.0, splits, 0.0)
    monkeypatch.setattr(achievable, "moe_format_factor", lambda *args: 1.0)
    plain = model.engine.part(1024.0, 1.0, 8.0, 1024.0, splits, 0.0)
    assert part.expert_gemm_s == pytest.approx(2.071 * plain.expert_gemm_s)
    assert part.expert_weight_read_s == pytest.approx(2.071 * plain.expert_weight_read_s)
    assert part.dense_gemm_s == pytest.approx(plain.dense_gemm_s)


def test_dispatch_is_a_gather_and_a_scatter_on_pcie_cards():
    """Qwen3-30B-A3B (d 2,048, top 8) at NVFP4 over 8 RTX PRO 6000 (PCIe, no all-to-all kernel):
    under an engine profile each rank gathers every token (d elements in the dispatch format)
    and reduce-scatters every token's output (d BF16 elements), 48 layers each; over 8 H200
    (NVLink) the all-to-all of §B11 stays (8 copies of d elements per token, over the 8 ranks'
    share of the tokens); under ``refined`` on the PCIe cards too, at the ideal's fewest
    copies: one a destination rank, 8·(1 − (7/8)^8) = 5.25 of the 8 (§B11)."""
    model = _model("qwen3-30b-a3b", "RTX PRO 6000", (4, 16))
    g = model.work.groups[0]
    calls = model.calls.all_to_all(0, g, 8.0, 8.0, 4096.0, NO_CACHE)
    dispatch = model.work.dispatch_bytes_per_element or model.work.bytes_per_activation
    assert [c.bytes_per_token for c in calls] == [2048 * dispatch, 2048 * 2.0]
    assert [c.calls for c in calls] == [48, 48]
    nvlink = _model("qwen3-30b-a3b", "H200", (8, 16))
    sent = nvlink.calls.all_to_all(0, nvlink.work.groups[0], 8.0, 8.0, 4096.0, NO_CACHE)
    assert sent[1].bytes_per_token == pytest.approx(2048 * 8 / 8.0 * 2.0)
    bound = _model("qwen3-30b-a3b", "RTX PRO 6000", (4, 16), preset="refined")
    copies = bound.calls.all_to_all(0, bound.work.groups[0], 8.0, 8.0, 4096.0, NO_CACHE)
    ranks = 8 * (1 - (7 / 8) ** 8)
    assert copies[1].bytes_per_token == pytest.approx(2048 * ranks / 8.0 * 2.0)


def test_mx_experts_run_as_bf16_gemms_exchange_bf16_tokens():
    """gpt-oss-120b (d 2,880, MXFP4 experts taking MXFP8 activations where the chip has 4-bit
    tensor cores): on B200 the dispatch carries FP8 with one FP32 scale per 128 values, 2,880 x
    (1 + 4/128) = 2,970 bytes a token; on H200, which runs the experts as BF16 GEMMs (Hopper's
    Triton MoE gathers the BF16 hidden states before the router, TensorRT-LLM's gpt-oss
    attention-DP block), 2,880 x 2 = 5,760, as its combine; either way the combine is BF16."""
    for gpu, sent in (("B200", 2880 * (1 + 4 / 128)), ("H200", 2880 * 2.0)):
        model = _model("gpt-oss-120b", gpu)
        assert model.work.d_model * model.calls._dispatch_bytes() == pytest.approx(sent)
        assert model.work.bytes_per_activation == 2.0


def test_engines_reduce_the_combined_experts_once_a_token():
    # DeepSeek-R1 (top 8 and one shared expert), TP8 on 8 B200, 256 decoding requests: the
    # engines' fused MoE sums each token's 8 outputs on its GPU and adds the shared expert's
    # before one all-reduce of a 7,168-wide BF16 row a token (SGLang's DeepseekV2MoE, vLLM's
    # MoE blocks): 256 x 7,168 x 2 = 3,670,016 bytes a layer; §A5 (refined) reduces 9 rows
    from inference_econ.model.latency import StepModel, stated_experts
    from inference_econ.model.operations import step_operations
    from inference_econ.model.workload import compile_workload

    arch = ie.load_model("DeepSeek-R1").with_precision(weight_bits=4, kv_cache_bits=8)
    b200 = ie.load_hardware("B200")
    # the experts' reduction; under the engine the three dense layers' own is among the
    # attention's ("all-reduce (dense feed-forward)", §F7), so the experts' is the only one named so
    names = {"achievable": "all-reduce (feed-forward)"}
    got = {}
    for preset in ("achievable", "refined"):
        a = stated_experts(ie.preset(preset), False)  # the experts tensor-split (TP8)
        model = StepModel(compile_workload(arch, a), b200, a, integer_layouts=True)
        step = step_operations(model, 8, 256, 1, 1024, 1, 1, False)
        name = names.get(preset, "all-reduce (feed-forward, layer group 2)")
        (op,) = [op for op in step if op.name == name]
        assert op.shape["ranks"] == 8 and op.calls == 58
        got[preset] = float(op.shape["bytes"])
    assert got["achievable"] == 256 * 7168 * 2
    assert got["refined"] == 9 * 256 * 7168 * 2


def test_block_scaled_fp8_experts_are_charged_at_their_kernels_factor(parts):
    """DeepSeek-R1's released FP8 is block-scaled (128 x 128 scales): TensorRT-LLM's CUTLASS
    block-scaled kernel on an H200 at EP 8 and 1,024 tokens measures 1.166 times the engine
    step's charge for the shape at the reference formats' level (kernels/moe_formats.yaml); a
    re-quantised checkpoint (NVFP4) is not block-scaled FP8 any more, and an 8-bit checkpoint
    without block scales runs the per-tensor FP8 kernel."""
    h200 = parts["H200"]
    assert float(moe_format_factor(h200, "fp8_block", DEEPSEEK, 8, 1024)) == pytest.approx(1.166)
    native = _model("deepseek-r1", "H200")
    assert native.engine.expert_format == "fp8_block"
    assert _model("deepseek-r1", "H200", (4, 16)).engine.expert_format is None
    assert _model("qwen3-235b-a22b", "H200", (8, 16)).engine.expert_format == "fp8"


def test_per_tensor_fp8_experts_are_charged_near_their_kernels_on_blackwell(parts):
    """Per-tensor FP8 experts have their own factor on Blackwell (kernels/moe_formats.yaml):
    Qwen3-235B-A22B's shape at EP 8 and 1,024 tokens 1.309; Hopper's engine terms are fitted
    to FP8 experts' measured runs, and keep 1. Its routed experts on 8
    B200 as DEP8 at 32, 64, 128 and 256 requests a rank (256 to 2,048 tokens of the group) cost
    the engine clock 0.75-0.85 of the measured kernels' price, where without the factor they
    had cost 0.62-0.75 of it (which ranked FP8 experts above NVFP4 ones the tables time alike)."""
    from inference_econ.model.clocks import EngineClock
    from inference_econ.model.kernel_clock import KernelClock
    from inference_econ.model.latency import stated_experts
    from inference_econ.model.operations import step_operations

    qwen3 = (4096, 1536, 128, 8)
    assert moe_format_factor(parts["B200"], "fp8", qwen3, 8, 1024) == pytest.approx(1.309)
    assert moe_format_factor(parts["H200"], "fp8", qwen3, 8, 1024) == 1.0
    arch = ie.load_model("Qwen3 235B").with_precision(weight_bits=8, activation_bits=8)
    prices = []
    for tables in (False, True):
        a = stated_experts(ie.preset("achievable").replace(kernel_tables=tables), True)
        model = StepModel(compile_workload(arch, a), parts["B200"], a)
        assert model.engine.expert_format == "fp8"
        for n in (32, 64, 128, 256):
            step = step_operations(model, 8, 8 * n, 1, 2000, 1, 8, False)
            clock = KernelClock() if tables else EngineClock()
            prices.append(clock.price(step)[step.names.index("routed experts")])
    ratio = np.array(prices[:4]) / np.array(prices[4:])
    assert ratio.min() > 0.72 and ratio.max() < 0.9


def test_the_engine_clock_reads_nvfp4_experts_at_the_kernel_the_engine_runs_for_few_tokens(parts):
    """TensorRT-LLM runs NVFP4 experts through its low-latency kernel up to 128 tokens a call
    (the kernel clock's gate, AIConfigurator's), so up to there the format's factor on the
    engine step is the low-latency kernel's own grid (``nvfp4+low_latency``), and above it
    CUTLASS's, with no blend across the gate: DeepSeek-R1's routed experts on 8 B200 as DEP8
    at 1, 8, 12 and 16 requests a rank (8 to 128 tokens) cost the engine clock within 15 % of
    the measured kernels' price (at 2.55 and 1.89 times it at 8 and 64 tokens with CUTLASS's
    factor there); at 129 and 160 tokens the factor is CUTLASS's grid's."""
    from inference_econ.model.clocks import EngineClock
    from inference_econ.model.kernel_clock import KernelClock
    from inference_econ.model.latency import stated_experts
    from inference_econ.model.moe import _on_grid
    from inference_econ.model.operations import step_operations

    b200 = parts["B200"]
    arch = ie.load_model("DeepSeek-R1").with_precision(weight_bits=4, kv_cache_bits=8)
    per_rank = (1, 8, 12, 16)
    prices = []
    for tables in (False, True):
        a = stated_experts(ie.preset("achievable").replace(kernel_tables=tables), True)
        model = StepModel(compile_workload(arch, a), b200, a)
        for n in per_rank:
            step = step_operations(model, 8, 8 * n, 1, 3000, 1, 8, False)
            assert [op.shape["ep"] for op in step if op.name == "routed experts"] == [8]
            clock = KernelClock() if tables else EngineClock()
            prices.append(clock.price(step)[step.names.index("routed experts")])
    engine, kernel = np.array(prices[:4]), np.array(prices[4:])
    np.testing.assert_allclose(engine / kernel, 1.0, atol=0.15)
    cutlass = format_grids("blackwell", "nvfp4")[DEEPSEEK]
    low = format_grids("blackwell", "nvfp4+low_latency")[DEEPSEEK]
    for n in (129.0, 160.0):
        got = moe_format_factor(b200, "nvfp4", DEEPSEEK, 8, n)
        assert got == pytest.approx(float(_on_grid(cutlass, 8, n)))
    assert moe_format_factor(b200, "nvfp4", DEEPSEEK, 8, 128) == pytest.approx(
        float(_on_grid(low, 8, 128))
    )


def test_vllm_lays_out_attention_data_parallelism_only_where_its_experts_span_the_group():
    """vLLM runs attention data parallelism only with --enable-expert-parallel, which spans
    every GPU of the group: gpt-oss-120b's 128 experts must divide the tensor degree. Its
    discrete frontier on H100 holds attention-DP layouts of such degrees only (SGLang's,
    which splits part of the group, also TP3, TP5, TP6 and TP10); 5 GPUs, whose only
    attention degree its 8 KV heads allow is one GPU a rank, have no layout vLLM launches,
    and the refusal says why."""
    from inference_econ import api

    tensor = {}
    for engine in ("vllm", "sglang"):
        s = ie.make_setting("gpt-oss-120b", "H100", assumptions="achievable", engine=engine,
                            context_tokens=1000)  # fmt: skip
        t = ie.frontier(s, method="discrete").to_dataframe()
        tensor[engine] = set(t.tensor_degree[t.attention_degree < t.tensor_degree])
    assert tensor["vllm"] and tensor["vllm"] <= {2.0, 4.0, 8.0}  # the degrees 128 divides
    assert {3.0, 5.0, 6.0} <= tensor["sglang"]
    s = ie.make_setting("gpt-oss-120b", "H100", assumptions="achievable", engine="vllm",
                        context_tokens=1000)  # fmt: skip
    assert ie.point(s, gpus=5, batch=248, discrete=True)["latency_s"] == np.inf
    assert "the routed experts (the engine runs it only with" in api.uneven_note(s, 5)
    assert ie.point(s.replace(assumptions=s.assumptions.replace(engine=None)), gpus=5, batch=248,
                    discrete=True)["attention_degree"] == 1  # fmt: skip


def test_tensorrt_llm_lays_out_attention_over_every_gpu_or_none_and_exports_what_it_chose():
    """TensorRT-LLM's enable_attention_dp makes every GPU of the tensor group an attention rank,
    or none (no partial attention DP). Qwen3-235B's 4 KV heads split over at most 4 GPUs, so
    of a group of 8 or 12 only "every GPU alone" is laid out (degree 1), of 4 both; its plans
    on 8, 12 and 16 H200 are layouts the engine runs, and export writes them."""
    from inference_econ.api import export
    from inference_econ.export.bundle import render
    from inference_econ.model.latency import launched_attention_degrees

    work = compile_workload(load_model("Qwen3-235B-A22B"), ie.preset("achievable"))
    features = ie.load_engine("trtllm").layout_features("moe")
    assert [launched_attention_degrees(work, t, features) for t in (2, 4, 8, 12)] == [
        [1, 2], [1, 4], [1], [1],
    ]  # fmt: skip
    for gpus in (8, 12, 16):
        plan = export("Qwen3-235B-A22B", "H200", engine="trtllm", gpus=gpus, batch=384,
                      prompt_tokens=1000, output_tokens=1000)  # fmt: skip
        (w,) = plan.workers
        assert w.attention_dp in (1, w.tensor), (gpus, w)
        files = render(plan)  # a layout the engine cannot run is refused here
        assert ("enable_attention_dp: true" in files["trtllm-server.yaml"]) == (w.attention_dp > 1)
