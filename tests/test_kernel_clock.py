"""The kernel clock (model/kernel_clock.py): a step's operations priced one by one from the
measured kernel tables, checked against the tables' own prices of the shapes by hand."""

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.load.arrivals import Arrivals
from inference_econ.load.engine import EngineConfig, build_instance
from inference_econ.load.simulate import simulate
from inference_econ.model import kernel_prices as kp
from inference_econ.model.kernel_clock import Formats, KernelClock, clock_of
from inference_econ.model.latency import StepModel
from inference_econ.model.mixed_step import EngineLayout, StepTable
from inference_econ.model.operations import step_operations
from inference_econ.model.workload import compile_workload
from inference_econ.serving.setting import make_setting


@pytest.fixture(scope="module")
def llama70_fp8():
    """Llama 3.1 70B with FP8 weights and KV cache on H100 under the achievable preset."""
    a = ie.preset("achievable")
    arch = ie.load_model("Llama 3.1 70B").with_precision(weight_bits=8, kv_cache_bits=8)
    return StepModel(compile_workload(arch, a), ie.load_hardware("H100"), a)


def test_formats_of_an_fp8_checkpoint(llama70_fp8):
    f = Formats(llama70_fp8.work)
    assert (f.dense, f.moe, f.head, f.kv) == ("fp8", "fp8", "bfloat16", "fp8")


def test_one_gemm_is_the_tables_price_times_its_layers(llama70_fp8):
    step = step_operations(llama70_fp8, 4, 1, 1, 2048, 1, 1, False)
    seconds = dict(zip(step.names, KernelClock().price(step)))
    # the fused QKV of a layer over 4 GPUs: (64 + 2·8)·128 / 4 = 2,560 outputs of 8,192 inputs
    one = float(kp.gemm_s(ie.load_hardware("H100"), "fp8", 1, 2560, 8192))
    assert 10e-6 < one < 40e-6  # a 21 MB FP8 weight read at 1 token: 0.5-2 TB/s
    assert seconds["qkv projection"] == pytest.approx(80 * one, rel=1e-12)


def test_llama70_fp8_tp4_decode_step_by_class(llama70_fp8):
    # one decode step at batch 1 and 2,048 cached positions, tensor parallel over 4 H100s:
    # each class's seconds as the tables price the shapes written out by hand, 80 layers
    h100 = ie.load_hardware("H100")
    gemms = 80 * sum(
        float(kp.gemm_s(h100, "fp8", 1, n, k))
        for n, k in ((2560, 8192), (8192, 2048), (2 * 28672 // 4, 8192), (8192, 28672 // 4))
    ) + float(kp.gemm_s(h100, "bfloat16", 1, 128256 / 4, 8192))  # the head, in BF16
    attention = 80 * float(kp.generation_attention_s(h100, "fp8", 1, 2048, 16, 2, 128))
    allreduce = 2 * 80 * float(kp.allreduce_s(h100, 4, 8192 * 2))
    step = step_operations(llama70_fp8, 4, 1, 1, 2048, 1, 1, False)
    clock = KernelClock()
    parts = clock.by_class(step)
    assert parts["gemm"] == pytest.approx(gemms, rel=0.10)
    assert parts["attention"] == pytest.approx(attention, rel=0.10)
    assert parts["collective"] == pytest.approx(allreduce, rel=0.10)
    # what the tables say of the step (H100, TensorRT-LLM 1.3.0rc20): ~10.3 ms of GEMMs,
    # ~0.75 ms of attention, ~0.52 ms of all-reduces; no launches apart under a CUDA graph
    assert 9e-3 < parts["gemm"] < 11.5e-3
    assert 0.6e-3 < parts["attention"] < 0.9e-3
    assert 0.45e-3 < parts["collective"] < 0.6e-3
    assert parts["launch"] == 0.0 and parts["host"] == 0.0  # the overlap scheduler hides it
    total = clock.total(step)
    assert total == pytest.approx(sum(parts.values()), rel=1e-12)
    assert total == pytest.approx(clock.parts(step).sum(), rel=1e-12)


def test_a_gpu_without_tables_is_priced_by_physics_and_grows_with_context(llama70_fp8):
    a = ie.preset("achievable")
    arch = ie.load_model("Llama 3.1 70B").with_precision(weight_bits=8, kv_cache_bits=8)
    m = StepModel(compile_workload(arch, a), ie.load_hardware("L40S"), a)
    clock = KernelClock()
    short, long = (clock.total(step_operations(m, 8, 8, 1, c, 1, 1, False)) for c in (512, 8192))
    assert np.isfinite(short) and long > short > 0.0


@pytest.fixture(scope="module")
def llama70_fp8_kernels():
    """``llama70_fp8`` with the step priced on the kernel clock (``kernel_tables``)."""
    a = ie.preset("achievable").replace(kernel_tables=True)
    arch = ie.load_model("Llama 3.1 70B").with_precision(weight_bits=8, kv_cache_bits=8)
    return StepModel(compile_workload(arch, a), ie.load_hardware("H100"), a)


def test_the_step_model_under_kernel_tables_is_the_kernel_clocks_step(llama70_fp8_kernels):
    m = llama70_fp8_kernels
    N, B = np.array([[4.0], [8.0]]), np.array([[1.0, 16.0, 256.0]])
    grid = m.latency(m.pipeline_part(N, B, 1.0, 2048.0, 1.0), 1.0)
    assert isinstance(clock_of(m), KernelClock)
    for i, n in enumerate((4, 8)):
        for j, b in enumerate((1, 16, 256)):
            step = step_operations(m, n, b, 1, 2048, 1, 1, False)
            assert grid[i, j] == pytest.approx(KernelClock().total(step), rel=1e-9)
    # 2-D tensor parallelism: no engine runs it (§F11)
    lat2, lat1 = m.latency_by_dims(m.pipeline_part(4.0, 1.0, 1.0, 2048.0, 1.0), 1.0)
    assert lat2 == np.inf and np.isfinite(lat1)


def test_the_load_engines_step_table_on_the_kernel_clock(llama70_fp8_kernels):
    m = llama70_fp8_kernels
    table = StepTable(m, EngineLayout(4), 64)
    # a step of 16 decoding requests with nothing cached is the step model's, its decode
    # attention and sampling at their seconds a sequence between 1 and 1,024 sequences
    part = m.pipeline_part(4.0, 16.0, 1.0, 0.0, 1.0)
    assert table.time_s(16, 0.0, 0.0) == pytest.approx(float(m.latency(part, 1.0)), rel=0.01)
    # a cached layer-position: the decode attention's slope, of the order of its KV bytes
    # over the bandwidth (2 KV heads of 128 a GPU, FP8: 512 bytes at 3.35 TB/s, 0.15 ns)
    assert 0.1e-9 < table.kv_s < 1.0e-9
    # 64 requests at 2,048 positions each: the table's line against the step model's step
    q = m.work.layer_positions(2048.0) * 64
    step = float(m.latency(m.pipeline_part(4.0, 64.0, 1.0, 2048.0, 1.0), 1.0))
    assert table.time_s(64, q, q) == pytest.approx(step, rel=0.05)


def test_a_steps_prompt_attention_runs_after_its_decoding_requests(llama70_fp8_kernels):
    # TensorRT-LLM's attention op runs a mixed batch's context requests and then its generation
    # requests, two kernels on one stream: on the kernel clock their seconds add, where the
    # roofline's lines (the engine clock) overlap them. Two requests decoding at 2,048 cached
    # positions and a 256-token chunk after a 512-token prefix, one step of 258 tokens and 3
    # sequences, by hand from the table's terms:
    m = llama70_fp8_kernels
    table = StepTable(m, EngineLayout(4), 2048).at_prompt(256)
    assert table.serial_prompts
    assert table.memory_s[258] == table.compute_s[258] == table.request_s == 0.0
    # a short prompt's kernel runs slower a position than the generation kernel reads one: the
    # step's lines hold the decoding requests' attention to that rate, the prompt keeps its own
    assert table.prompt_attention_s > 2.0 * table.attention_s
    assert table.attention_s == table.kv_s
    q = 2 * m.work.layer_positions(2048.0)
    pkv = m.work.layer_positions(512.0)  # the chunk's prefix, read by its own kernel
    patt = 256 * m.work.layer_positions(512.0 + 255 / 2.0)
    by_hand = (
        table.fixed_s[258]
        + 3 * table.sequence_s
        + max(table.kv_s * q, table.attention_s * q)
        + table.prompt_attention_s * patt
    )
    step = table.time_s(258, q + pkv, q + patt, 3, 256, pkv, patt)
    assert step == pytest.approx(by_hand, rel=1e-12)
    overlapped = table.time_s(258, q + pkv, q + patt, 3, 256)
    kept_in_lines = by_hand + table.kv_s * pkv  # the prompt added but its positions kept
    assert step > 1.05 * overlapped
    assert abs(step / kept_in_lines - 1.0) > 1e-4


def test_the_load_engine_runs_a_mixed_steps_prompt_after_its_decoding_request():
    # Llama 3.1 8B (FP8) on one H100 on the kernel clock, chunked prefill of 2,560 tokens a
    # step: prompts of 1,024 and 3,000 tokens queued at once. The first step prefills the first
    # prompt and 1,536 tokens of the second; the second step decodes the first request (1,024
    # cached positions) beside the second prompt's last 1,464 tokens after its 1,536-token
    # prefix, and the second request's first token comes at its end.
    a = ie.preset("achievable").replace(kernel_tables=True)
    setting = make_setting(
        "Llama 3.1 8B", "H100-SXM", weight_bits=8, kv_cache_bits=8, assumptions=a
    )
    inst = build_instance(setting, 1, EngineConfig(64, 2560, prefill="chunked"))
    table = inst.table
    assert table.serial_prompts
    run = simulate(inst, Arrivals(np.zeros(2), np.array([1024, 3000]), np.array([3, 2])))
    layers = float(sum(g.layers for g in inst.work.groups))
    first = table.time_s(2560, 0.0, layers * (1024 * 1023 / 2 + 1536 * 1535 / 2), 2, 1536)
    assert run.first_token_s[0] == pytest.approx(first, rel=1e-12)
    q, pkv = layers * 1024, layers * 1536
    patt = 1464 * layers * (1536 + 1463 / 2)
    second = table.time_s(1465, q + pkv, q + patt, 2, 1464, pkv, patt)
    assert run.first_token_s[1] - run.first_token_s[0] == pytest.approx(second, rel=1e-9)
    overlapped = table.time_s(1465, q + pkv, q + patt, 2, 1464)
    assert abs(second / overlapped - 1.0) > 1e-4


def test_the_engine_clocks_step_table_overlaps_prompt_and_decode_attention(llama70_fp8):
    engine = StepTable(llama70_fp8, EngineLayout(4), 2048)
    assert not engine.serial_prompts
    q = llama70_fp8.work.layer_positions(2048.0) * 64
    att = 1024 * llama70_fp8.work.layer_positions(1023 / 2.0)
    assert engine.time_s(1088, q, q + att, 65, 1024, 0.0, att) == engine.time_s(
        1088, q, q + att, 65, 1024
    )


def test_deepseek_mla_decode_is_priced_by_the_mla_kernels_table():
    # DeepSeek-R1 under attention DP on 8 B200 (every rank runs all 128 query heads over its
    # own 32 sequences): the decode attention is TensorRT-LLM's MLA kernel as AIConfigurator
    # timed it (generation_mla, FP8 cache, 128 heads, 32 sequences at 1,024 positions:
    # 0.021221 ms, within the grid's smoothing of a dip), not the GQA table's 128 query heads over one 128-wide KV head (0.16 ms
    # and up at the same batch and positions)
    b200 = ie.load_hardware("B200")
    assert float(kp.mla_s(b200, "fp8", 32, 128, positions=1024)) == pytest.approx(
        21.221e-6, rel=0.01
    )
    gqa = float(kp.generation_attention_s(b200, "fp8", 32, 1024, 128, 1, 128))
    assert gqa > 5 * 21.221e-6
    assert kp.mla_s(ie.load_hardware("MI300X"), "fp8", 32, 128, positions=1024) is None
    a = ie.preset("achievable").replace(kernel_tables=True)
    arch = ie.load_model("DeepSeek-R1").with_precision(weight_bits=8, kv_cache_bits=8)
    model = StepModel(compile_workload(arch, a), b200, a)
    step = step_operations(model, 8, 256, 1, 1024, 1, 8, False)
    (op,) = [op for op in step if op.name == "attention (decode)"]
    assert op.shape["batch"] == 32 and op.shape["heads"] == 128
    one = float(kp.mla_s(b200, "fp8", 32, 128, positions=op.shape["positions"]))
    assert KernelClock().price(step)[step.names.index(op.name)] == pytest.approx(61 * one)
    assert 61 * one < 2e-3  # 61 layers of MLA at 32 sequences: under 2 ms a step


def test_routed_experts_are_read_at_the_routing_and_kernel_the_engine_runs():
    # AIConfigurator reads its fused-MoE tables at power-law routing, alpha 1.01 for DeepSeek's
    # family and 1.2 for its plain MoE models (Qwen3); NVFP4 experts run TensorRT-LLM's low-latency kernel
    # up to 128 tokens a call and its default (CUTLASS) kernel above (AIConfigurator's gate).
    # DeepSeek's shape over 4 ranks of a B200: at 128 tokens the low-latency kernel, 0.2166 ms
    # routed against 0.3176 ms balanced; at 256 the CUTLASS kernel, though the table also times
    # the low-latency one there (0.2326 ms): 0.2601 ms routed, GB200's series at the two parts'
    # usual ratio (``moe_latency_ms``: B200's own takes 1.84 times GB200's, 0.4760 ms at 256;
    # GB200's 0.2495 ms at 192 tokens x 1.0425, since more tokens never cost less)
    from inference_econ.model.moe import routing_of

    b200 = ie.load_hardware("B200")
    a = ie.preset("achievable").replace(kernel_tables=True)
    arch = ie.load_model("DeepSeek-R1").with_precision(weight_bits=4, kv_cache_bits=8)
    model = StepModel(compile_workload(arch, a), b200, a)
    assert routing_of(model.work.model_class) == "power_law_1.01"
    qwen = compile_workload(ie.load_model("Qwen3-235B-A22B"), a)
    assert routing_of(qwen.model_class) == "power_law_1.2"
    small = (128, 7168, 2048, 8, 256, 1, 4)
    low = float(kp.moe_s(b200, "nvfp4", *small, "power_law_1.01"))
    assert low == pytest.approx(0.2166e-3, rel=0.01)
    assert float(kp.moe_s(b200, "nvfp4", *small)) > 1.3 * low  # balanced: all 64 read
    shape = (256, 7168, 2048, 8, 256, 1, 4)
    routed = float(kp.moe_s(b200, "nvfp4", *shape, "power_law_1.01"))
    assert routed == pytest.approx(0.2495e-3 * 1.0425, rel=0.002)
    # one token past the gate is read between the default kernel's own 128 and 160 rows
    past = float(kp.moe_s(b200, "nvfp4", 129, *shape[1:], "power_law_1.01"))
    assert past == pytest.approx(0.2491e-3, rel=0.01) and past > 1.1 * low
    step = step_operations(model, 4, 256, 1, 1024, 1, 4, False)
    (op,) = [op for op in step if op.name == "routed experts"]
    assert (op.shape["tokens"], op.shape["ep"]) == (256, 4)
    assert KernelClock().price(step)[step.names.index(op.name)] == pytest.approx(58 * routed)


def test_a_fused_moe_series_far_slower_than_its_sibling_parts_is_read_at_the_siblings():
    """B200 and GB200 (one architecture, one memory) time the fused MoE a median 1.04 apart,
    but some CUTLASS series up to 1.9 apart either way (a tactic of the measurement): a series
    over 1.2 times its sibling's (beyond that usual ratio) takes the faster of the two, point
    by point; the other series, and a part without a sibling, read their own rows."""
    from inference_econ.specs.kernel_tables import kernel_table

    def row(folder, source, tokens, ep=4, routing="power_law_1.01"):
        t = kernel_table(folder, "moe")
        at = (t["kernel_source"] == source) & (t["moe_dtype"] == "nvfp4")
        at &= (t["hidden_size"] == 7168) & (t["inter_size"] == 2048) & (t["num_experts"] == 256)
        at &= (t["moe_tp_size"] == 1) & (t["moe_ep_size"] == ep) & (t["distribution"] == routing)
        (i,) = np.flatnonzero(at & (t["num_tokens"] == tokens))
        return float(t["latency_ms"][i]), float(kp.moe_latency_ms(folder)[i])

    cutlass, low = "moe_torch_flow_cutlass", "moe_torch_flow_min_latency"
    b200, gb200 = row("b200_sxm", cutlass, 384), row("gb200", cutlass, 384)
    assert b200[0] == pytest.approx(0.4878, rel=1e-3) and gb200[0] == pytest.approx(
        0.2681, rel=1e-3
    )
    assert b200[1] == pytest.approx(0.2681 * 1.0425, rel=2e-3)  # GB200's at the usual ratio
    assert gb200[1] == gb200[0]  # the faster part keeps its own
    own, read = row("b200_sxm", low, 384)  # within the tolerance: its own rows
    assert own == read == pytest.approx(0.2640, rel=1e-3)
    # some of GB200's series are the slower ones: they take B200's, at the inverse ratio, where
    # that is faster; no point is read slower than it was measured
    t, own = kernel_table("gb200", "moe"), kp.moe_latency_ms("gb200")
    changed = own != t["latency_ms"]
    assert changed.any() and np.all(own <= t["latency_ms"])
    h200 = kernel_table("h200_sxm", "moe")
    assert kp.moe_latency_ms("h200_sxm") is h200["latency_ms"]  # no sibling


def test_a_model_file_states_the_routing_its_experts_are_read_at():
    # AIConfigurator reads Llama 4's experts (its HYBRIDMOE family) at alpha 1.01, not the 1.2
    # of its plain MoE family. The tables time Maverick's FP8 shape on H200 at EP 8 under that
    # routing at 0.597 and 0.541 ms at 1,536 and 2,048 tokens (read as their geometric mean,
    # 0.568 ms, since more tokens never cost less), and at 2.992 ms under alpha 1.2 at 2,048 (one
    # expert of 128, top-1, takes most of rank 0's rows)
    from inference_econ.model.moe import routing_of

    h200 = ie.load_hardware("H200")
    a = ie.preset("achievable").replace(kernel_tables=True)
    arch = ie.load_model("Llama 4 Maverick").with_precision(weight_bits=8, kv_cache_bits=8)
    assert arch.expert_routing == ie.load_model("Llama 4 Scout").expert_routing
    model = StepModel(compile_workload(arch, a), h200, a)
    assert routing_of(model.work.model_class, model.work.expert_routing) == "power_law_1.01"
    shape = (2048, 5120, 8192, 1, 128, 1, 8)
    routed = float(kp.moe_s(h200, "fp8", *shape, "power_law_1.01"))
    assert routed == pytest.approx((0.5970e-3 * 0.5409e-3) ** 0.5, rel=0.001)
    assert float(kp.moe_s(h200, "fp8", *shape, "power_law_1.2")) > 5.0 * routed
    step = step_operations(model, 8, 2048, 1, 1024, 1, 8, False)
    ops = [op for op in step if op.name.startswith("routed experts")]
    prices = KernelClock().price(step)
    assert {op.shape["tokens"] for op in ops} == {2048}
    total = sum(prices[step.names.index(op.name)] for op in ops)
    assert total == pytest.approx(24 * routed, rel=1e-9)  # 24 MoE layers, 2 layer groups


def test_a_prompt_chunk_runs_the_once_a_sequence_kernels_once(llama70_fp8_kernels):
    # 2,048 prompt tokens of one request against 2,048 decoding requests, nothing cached: the
    # decode attention (80 layers, 16 query and 2 KV heads of 128 a GPU, FP8 cache), the BF16
    # output head (128,256 / 4 outputs of 8,192 inputs) and the sampling over the vocabulary
    # run once for the chunk (the engines take a prompt's logits at its last token), 2,048
    # times for the requests; every other kernel sees 2,048 tokens in both
    m, h100 = llama70_fp8_kernels, ie.load_hardware("H100")
    table = StepTable(m, EngineLayout(4), 2048)
    chunk = table.time_s(2048, 0.0, 0.0, requests=1)
    requests = table.time_s(2048, 0.0, 0.0, requests=2048)
    ends = np.array([1.0, 2048.0])
    attention = kp.generation_attention_s(h100, "fp8", ends, 1, 16, 2, 128)
    head = kp.gemm_s(h100, "bfloat16", ends, 128256 / 4, 8192)
    sampling = kp.pass_s(h100, "sample_greedy", ends, 128256)
    by_hand = 80 * float(np.diff(attention)[0]) + float(np.diff(head)[0] + np.diff(sampling)[0])
    assert 3e-3 < by_hand < 20e-3
    assert requests - chunk == pytest.approx(by_hand, rel=0.10)


@pytest.fixture(scope="module")
def qwen3_b200_kernels():
    """Qwen3-235B-A22B (NVFP4 experts, FP8 KV cache) on B200 on the kernel clock."""
    a = ie.preset("achievable").replace(kernel_tables=True)
    arch = ie.load_model("Qwen3-235B-A22B").with_precision(weight_bits=4, kv_cache_bits=8)
    return StepModel(compile_workload(arch, a), ie.load_hardware("B200"), a)


@pytest.mark.parametrize("ranks, heads, kv_heads", [(4.0, 64, 4), (1.0, 16, 1)])
def test_a_prompts_attention_is_its_measured_kernels_on_its_rank(
    qwen3_b200_kernels, ranks, heads, kv_heads
):
    # 94 layers of TensorRT-LLM's context attention (FP8, 128-wide heads) for one prompt: under
    # attention DP (4 ranks) the prompt runs all 64 query and 4 KV heads on its own rank, and
    # the table's positions are every rank's prompts, so a position costs a quarter of the
    # kernel's share; under TP4 a GPU runs 16 query heads over 1 KV head of every prompt
    m, b200 = qwen3_b200_kernels, ie.load_hardware("B200")
    table = StepTable(m, EngineLayout(4, 1, ranks), 64)
    for prompt in (2048, 16384):
        charged = table.at_prompt(prompt).attention_s * 94 * prompt * prompt / 2.0 * ranks
        kernel = 94 * float(kp.context_attention_s(b200, "fp8", 1, prompt, heads, kv_heads, 128))
        assert charged == pytest.approx(kernel, rel=1e-9)
    # the kernel's rate grows with its prompt: a position of a 16 Ki-token prompt costs under
    # half of one of a 2 Ki-token prompt (0.276 s a prompt on its rank, not 0.70 s)
    assert table.at_prompt(16384).attention_s < 0.5 * table.at_prompt(2048).attention_s
    assert table.at_prompt(float("nan")) is table and table.at_prompt(-1.0) is table


def test_a_short_prompts_rate_never_charges_the_decode_attention(qwen3_b200_kernels):
    # a 256-token prompt's context kernel is mostly its fixed time (2.0 ms over 94 layers for
    # 32,768 positions each), more a position than the generation kernel's read of one; a
    # decoding request's positions count on both sides of the step's maximum, so the slope
    # is held to the generation kernel's and a decode step is the same at any prompt
    m = qwen3_b200_kernels
    table = StepTable(m, EngineLayout(4, 1, 4.0), 64)
    short = table.at_prompt(256)
    assert short.attention_s == table.kv_s
    q = 64 * m.work.layer_positions(4096.0)
    assert short.time_s(64, q, q) == pytest.approx(table.time_s(64, q, q), rel=1e-12)
    assert short.time_s(64, q, q) == pytest.approx(
        table.fixed_s[64] + 64 * table.sequence_s + table.kv_s * q, rel=1e-12
    )


def test_a_fused_all_reduce_costs_what_exceeds_its_gemm():
    # Llama 3.1 405B (FP8) on 4 B200, a 1,536-token chunk: each all-reduce of 50 MB over 126
    # layers measures 19.9 ms; an engine built with GEMM and all-reduce fused sends it while
    # its row-parallel GEMM runs, so the attention's costs 19.9 - 11.3 ms (its output
    # projection's), and the feed-forward's (behind a 34.3 ms GEMM) its latency alone
    b200 = ie.load_hardware("B200")
    arch = ie.load_model("Llama 3.1 405B").with_precision(weight_bits=8, kv_cache_bits=8)
    prices = {}
    for overlap in (0.0, 1.0):
        engine = ie.load_engine("trtllm").with_terms(gemm_allreduce_overlap=overlap)
        a = ie.preset("achievable").replace(kernel_tables=True, engine=engine)
        step = step_operations(
            StepModel(compile_workload(arch, a), b200, a), 4, 1536, 1, 0, 1, 1, False
        )
        prices[overlap] = dict(zip(step.names, KernelClock().price(step)))
        ff = step.operations[step.names.index("all-reduce (feed-forward)")]
    apart, fused = prices[0.0], prices[1.0]
    assert apart["all-reduce (attention)"] == pytest.approx(19.91e-3, rel=0.01)
    assert fused["all-reduce (attention)"] == pytest.approx(
        apart["all-reduce (attention)"] - apart["attention output projection"], rel=1e-9
    )
    assert fused["all-reduce (feed-forward)"] == pytest.approx(ff.collective.terms_s()[0])
    assert fused["feed-forward out"] == apart["feed-forward out"]


def test_shared_experts_run_beside_the_routed_ones_in_a_graphed_step():
    # TensorRT-LLM runs an MoE layer's shared experts on a stream of their own beside its
    # routed experts in steps replayed from CUDA graphs (Deepseekv3MoE and Llama4MoE,
    # maybe_execute_in_parallel), as AIConfigurator prices them (OverlapOp: the longer path).
    # DeepSeek-R1 (NVFP4) as DEP4 on 4 B200 at 256 tokens: the shared experts' 58 layers take
    # less than the routed path (dispatch, routed experts, combine), so they cost nothing; run
    # one after the other (an engine without the stream, or a step too large for its graphs)
    # they cost their own kernels' time, and the step the sum.
    b200 = ie.load_hardware("B200")
    arch = ie.load_model("DeepSeek-R1").with_precision(weight_bits=4, kv_cache_bits=8)
    prices = {}
    for name, terms in (
        ("beside", {}),
        ("after", {"shared_expert_overlap": 0.0}),
        ("eager", {"cuda_graph_max_batch": 128}),
    ):
        engine = ie.load_engine("trtllm").with_terms(**terms)
        a = ie.preset("achievable").replace(kernel_tables=True, engine=engine)
        step = step_operations(
            StepModel(compile_workload(arch, a), b200, a), 4, 256, 1, 1024, 1, 4, False
        )
        prices[name] = dict(zip(step.names, KernelClock().price(step)))
    beside, after, eager = prices["beside"], prices["after"], prices["eager"]
    routed = sum(v for k, v in after.items() if k.startswith(("expert ", "routed experts")))
    shared = after["shared experts"]
    assert 0.0 < shared < routed  # 2.26 ms against 17.97
    assert beside["shared experts"] == 0.0
    assert sum(beside.values()) == pytest.approx(sum(after.values()) - shared, rel=1e-12)
    assert eager["shared experts"] == pytest.approx(shared, rel=1e-12)
    for k in after:  # every other operation as it was
        if k != "shared experts":
            assert beside[k] == after[k], k


def test_block_scaled_fp8_is_priced_by_the_block_scaled_kernels():
    # DeepSeek-R1's FP8 (128 x 128 block scales) on 8 H200 under attention DP, 1,024 tokens:
    # its routed experts are TensorRT-LLM's block-scaled fused MoE (0.559 ms a layer at EP 8,
    # routed as AIConfigurator reads it; the per-tensor FP8 kernel takes 0.451 ms), its
    # projections the block-scaled GEMMs
    h200 = ie.load_hardware("H200")
    a = ie.preset("achievable").replace(kernel_tables=True)
    model = StepModel(compile_workload(ie.load_model("DeepSeek-R1"), a), h200, a)
    formats = Formats(model.work)
    assert (formats.dense, formats.moe) == ("fp8_block", "fp8_block")
    step = step_operations(model, 8, 1024, 1, 1024, 1, 8, False)
    prices = dict(zip(step.names, KernelClock().price(step)))
    shape = (1024, 7168, 2048, 8, 256, 1, 8, "power_law_1.01")
    one = float(kp.moe_s(h200, "fp8_block", *shape))
    assert one == pytest.approx(0.559e-3, rel=0.01)
    assert float(kp.moe_s(h200, "fp8", *shape)) < 0.85 * one
    assert prices["routed experts"] == pytest.approx(58 * one, rel=1e-9)
    (qkv,) = [op for op in step if op.name == "qkv down projection"]
    s = qkv.shape
    block = float(kp.gemm_s(h200, "fp8_block", s["m"], s["n"], s["k"]))
    assert prices["qkv down projection"] == pytest.approx(qkv.calls * block, rel=1e-9)


def test_mxfp4_experts_run_the_parts_own_kernel():
    # gpt-oss-120b's MXFP4 experts take MXFP8 activations where the tensor cores multiply
    # 4-bit operands (B200: the w4a8 table); a Hopper part has no such instruction and runs
    # them as BF16 GEMMs of dequantised weights (the w4a16 table, TensorRT-LLM's Triton MoE
    # on Hopper, which AIConfigurator's collector times for gpt-oss), as the engine clock does
    a = ie.preset("achievable").replace(kernel_tables=True)
    arch = ie.load_model("gpt-oss-120b")
    for name, fmt in (("H200", "w4a16_mxfp4"), ("B200", "w4a8_mxfp4_mxfp8")):
        gpu = ie.load_hardware(name)
        model = StepModel(compile_workload(arch, a), gpu, a)
        assert model.work.gemm_bits == 8  # the checkpoint's MXFP8 activations
        assert Formats(model.work, model.machine.gpu).moe == fmt
        step = step_operations(model, 1, 107, 1, 4600, 1, 1, False)
        prices = dict(zip(step.names, KernelClock().price(step)))
        (experts, *_) = [op for op in step if op.kind == "moe"]
        s = experts.shape
        one = float(
            kp.moe_s(gpu, fmt, 107, s["hidden"], s["inter"], s["topk"], s["experts"], 1, 1,
                     "power_law_1.2")
        )  # fmt: skip
        assert prices[experts.name] == pytest.approx(experts.calls * one, rel=1e-9)
        if name == "H200":  # the table's 0.518 ms a layer (the w4a8 form it lacks: 1.07 ms)
            assert one == pytest.approx(0.518e-3, rel=0.01)


def test_an_instance_reads_its_prompt_attention_at_the_runs_prompt():
    # the kernel clock's instance of Llama 3.1 8B (FP8) on one H100 for 8,192-token prompts
    # charges a position attended less than for 1,024-token ones (the kernel's rate grows
    # with its prompt); the engine clock's attention runs at one rate: the same instance
    import dataclasses

    from inference_econ.load.engine import DEFAULT_ENGINE
    from inference_econ.load.run import instance_in

    small = dataclasses.replace(DEFAULT_ENGINE, max_batch_requests=8, step_token_budget=256)
    a = ie.preset("achievable")
    for kernels in (True, False):
        setting = ie.make_setting(
            "Llama 3.1 8B", "H100", weight_bits=8, assumptions=a.replace(kernel_tables=kernels)
        )
        inst = instance_in(setting, EngineLayout(1), small)
        long, short = inst.at_prompt(8192.0), inst.at_prompt(1024.0)
        if kernels:
            assert long.table.attention_s < 0.8 * short.table.attention_s
            assert long.table.kv_s == inst.table.kv_s and long.config == inst.config
        else:
            assert long is inst and short is inst


def test_sliding_window_layers_attend_within_their_window():
    # gpt-oss-120b on one H100: 18 of its 36 layers slide a 128-token window (the tables time
    # them with window_size 128); 256 sequences at 4,096 cached positions read the whole
    # context in 18 layers and 128 positions in the other 18, about half of 36 full layers
    gpu = ie.load_hardware("H100")
    a = ie.preset("achievable").replace(kernel_tables=True)
    model = StepModel(compile_workload(ie.load_model("gpt-oss-120b"), a), gpu, a)
    step = step_operations(model, 1, 256, 1, 4096, 1, 1, False)
    (op,) = [op for op in step if op.name == "attention (decode)"]
    windows = sorted(g.window for g in model.work.groups)
    assert windows == [128, np.inf] and op.calls == 36
    heads, kv_heads, dim = op.shape["heads"], op.shape["kv_heads"], op.shape["head_dim"]
    kv = Formats(model.work).kv
    full, slid = (
        float(kp.generation_attention_s(gpu, kv, 256, 4096, heads, kv_heads, dim, w))
        for w in (0, 128)
    )
    assert slid < full / 5
    seconds = KernelClock().price(step)[step.names.index(op.name)]
    assert seconds == pytest.approx(18 * full + 18 * slid)


def test_a_prompts_attention_runs_each_layer_at_its_window():
    # gpt-oss-20b on one B200 (BF16 KV cache): 12 of its 24 layers slide a 128-token window.
    # The load engine's seconds a layer-position attended, times a 16 Ki-token prompt's
    # positions (the sliding layers' 128 each), is the tables' context attention of 12 full
    # layers and 12 layers at window_size 128: 41.1 ms, not 24 full layers' 71.9 ms
    gpu = ie.load_hardware("B200")
    a = ie.preset("achievable").replace(kernel_tables=True)
    model = StepModel(compile_workload(ie.load_model("gpt-oss-20b"), a), gpu, a)
    assert sorted((g.layers, g.window) for g in model.work.groups) == [(12, 128), (12, np.inf)]
    kv = Formats(model.work).kv
    table = StepTable(model, EngineLayout(1), 64)
    for prompt in (2048.0, 16384.0):
        charged = (
            table.at_prompt(prompt).attention_s * model.work.layer_positions(prompt) * prompt / 2.0
        )
        full, slid = (
            float(kp.context_attention_s(gpu, kv, 1, prompt, 64, 8, 64, w)) for w in (0, 128)
        )
        assert slid < (full / 6 if prompt > 8192 else full)
        assert charged == pytest.approx(12 * full + 12 * slid, rel=1e-9)
    assert 12 * full + 12 * slid == pytest.approx(41.1e-3, rel=0.01)


def test_a_prefill_pass_samples_the_last_token_of_each_prompt():
    # the engines take a prompt's logits at its last token: a prefill pass of 2 prompts of
    # 8,192 tokens of Llama 3.1 8B (FP8) on one H100 runs its output head as a GEMM of 2 rows,
    # not 16,384 (that was 11.5 ms of the kernel clock's 156 ms pass of one such prompt); a
    # decode step of 64 sequences samples all 64
    from inference_econ.model.latency import prefill_step_model

    gpu = ie.load_hardware("H100")
    a = ie.preset("achievable").replace(kernel_tables=True)
    arch = ie.load_model("Llama 3.1 8B").with_precision(weight_bits=8, kv_cache_bits=8)
    head = Formats(compile_workload(arch, a), gpu).head
    for model, batch, tokens in (
        (prefill_step_model(arch, gpu, a, True), 2, 8192),
        (StepModel(compile_workload(arch, a), gpu, a), 64, 1),
    ):
        step = step_operations(model, 1, batch, tokens, 0, 1, 1, False)
        (op,) = [op for op in step if op.name == "lm head"]
        assert op.shape["m"] == batch
        seconds = KernelClock().price(step)[step.names.index("lm head")]
        vocab, width = model.work.vocab_size, model.work.d_model
        assert seconds == pytest.approx(float(kp.gemm_s(gpu, head, batch, vocab, width)))


def test_a_prompt_chunk_attends_within_its_window_after_a_prefix():
    # 512 prompt tokens after 3,584 cached: every one reaches past a 128-token window, so
    # 512 x 128 positions, against the table's lone 512-token prompt 128 x 64 + 384 x 128;
    # without a window the causal work is 512 x (3,584 + 256), 15 times the lone prompt's
    from inference_econ.model.kernel_clock import _attended

    assert _attended(3584.0, 512.0, 128.0) == 512 * 128
    assert _attended(0.0, 512.0, 128.0) == 128 * 64 + 384 * 128
    assert _attended(3584.0, 512.0, 0.0) / _attended(0.0, 512.0, 0.0) == 15.0
    assert _attended(64.0, 512.0, 128.0) == 64 * (64 + 32) + 448 * 128


def test_a_short_chunk_after_a_long_prefix_pays_each_kernels_fixed_cost_once():
    # one new token after 1,024 cached ones attends 1,024.5 positions, as a lone causal prompt
    # of 45.3 tokens does: priced at that prompt's kernel, not 1,025 times the one-token
    # kernel's time (which had charged Llama 3.1 70B on 4 H200 2.18 s a pass); a chunk with
    # no prefix keeps its own length, and a longer prefix never costs less
    from inference_econ.model.kernel_clock import _attended, _equal_prompt

    for prefix, tokens, window in (
        (1024.0, 1.0, 0.0),
        (3584.0, 512.0, 128.0),
        (64.0, 512.0, 128.0),
    ):
        equal = float(_equal_prompt(prefix, tokens, window))
        assert _attended(0.0, equal, window) == pytest.approx(_attended(prefix, tokens, window))
    assert float(_equal_prompt(0.0, 512.0, 0.0)) == 512.0
    assert float(_equal_prompt(0.0, 512.0, 128.0)) == 512.0
    assert float(_equal_prompt(1024.0, 1.0, 0.0)) == pytest.approx(45.266, abs=1e-3)
    from inference_econ.model.latency import prefill_step_model

    a = ie.preset("achievable").replace(kernel_tables=True)
    arch = ie.load_model("Llama 3.1 70B")
    model = prefill_step_model(arch, ie.load_hardware("H200-SXM"), a, True)
    passes = []
    for cached in (0.0, 1024.0, 8192.0):
        step = step_operations(model, 4, 1, 1.0, cached, 1, 1, False)
        passes.append(float(np.sum(KernelClock().price(step))))
    assert passes == sorted(passes) and passes[2] < 1.5 * passes[0], passes


def test_a_chunks_prefix_is_read_whole_from_its_mean_context():
    # an 8,192-token chunk after 8,192 cached tokens of Llama 3.1 70B (FP8 cache) on 4 H200: its
    # operation holds the mean context 8,192 + 4,095.5; it attends as a lone prompt of
    # sqrt(2 x 8,192 x 12,288) = 14,189 tokens does, 80 layers of that prompt's kernel (the
    # mean context had been read as the chunk's end: a prompt of 11,585)
    from inference_econ.model.latency import prefill_step_model

    a = ie.preset("achievable").replace(kernel_tables=True)
    arch = ie.load_model("Llama 3.1 70B").with_precision(kv_cache_bits=8)
    gpu = ie.load_hardware("H200-SXM")
    model = prefill_step_model(arch, gpu, a, True)
    step = step_operations(model, 4, 1, 8192.0, 8192.0, 1, 1, False)
    seconds = KernelClock().price(step)[step.names.index("attention (prefill)")]
    equal = (2 * 8192 * (8192 + 4096)) ** 0.5
    one = float(kp.context_attention_s(gpu, "fp8", 1, equal, 16, 2, 128))
    assert seconds == pytest.approx(80 * one, rel=1e-9)


def test_a_prefill_on_the_kernel_clock_is_priced_by_it_and_its_parts_add_up():
    # Mixtral 8x7B's 16,384-token prompt on one H200: 0.687 s in one pass on the kernel clock
    # (the engine clock's 0.997 s had been printed for the prefill command under --clock
    # kernel), in 8,192-token chunks as the time to first token prices it; the breakdown's
    # parts sum to the total
    from inference_econ.model.breakdown import ADDITIVE_PARTS
    from inference_econ.serving.prefill import prefill_latency_s

    totals = {}
    for tables in (True, False):
        a = ie.preset("achievable").replace(kernel_tables=tables)
        s = ie.make_setting("Mixtral 8x7B", "H200-SXM", assumptions=a)
        row = ie.prefill_pass(s, 1, 16384, batch=1, discrete=True)
        chunked = ie.prefill_pass(s, 1, 16384, batch=1, discrete=True, chunk_tokens=8192)
        alone = prefill_latency_s(s.replace(prompt_tokens=16384), [1.0], integer_layouts=True)
        assert chunked["latency_s"] == pytest.approx(float(alone[0]), rel=1e-9)
        for r in (row, chunked):
            assert sum(r[p] for p in ADDITIVE_PARTS) == pytest.approx(r["latency_s"], rel=1e-9)
        totals[tables] = row["latency_s"]
    assert totals[True] == pytest.approx(0.687, abs=0.002)
    assert totals[False] == pytest.approx(0.997, abs=0.002)


def test_a_breakdown_scaled_to_another_total_keeps_its_shares_and_blanks():
    # a step of 1 s scaled to 2 s doubles every part; one the new clock cannot run (inf) is
    # blank as a layout that does not fit; one that did not fit stays so; FLOP are not time
    import dataclasses

    from inference_econ.model.breakdown import Breakdown, scaled_to

    names = [f.name for f in dataclasses.fields(Breakdown)]
    parts = np.array([0.25, 1.0, np.nan])
    bd = Breakdown(
        **{n: np.array([1.0, 2.0, np.inf]) if n == "latency_s" else parts for n in names}
    )
    out = scaled_to(bd, np.array([2.0, np.inf, 3.0]))
    assert out.latency_s.tolist() == [2.0, np.inf, np.inf]
    assert out.weight_read_s[0] == 0.5 and np.isnan(out.weight_read_s[1:]).all()
    assert out.flop[:2].tolist() == [0.25, 1.0]


def test_the_step_table_prices_a_grid_and_interpolates_within_a_tenth_of_a_percent(
    llama70_fp8_kernels,
):
    # every count to 1,024 priced, then 64 an octave: 4,096 rows price 1,153 steps; a count
    # between two priced ones is within 0.1 % of the step priced at it
    from inference_econ.model.kernel_clock import table_grid, table_terms

    grid = table_grid(np.arange(4097.0))
    assert len(grid) == 1025 + 128 and grid[1024] == 1024 and grid[-1] == 4096
    assert np.all(np.diff(np.log2(grid[1024:])) < 1.1 / 64)
    m = llama70_fp8_kernels
    full = table_terms(m, 4, 1, 1.0, False, np.arange(4097.0))[0]
    for t in (1500.0, 3001.0):
        alone = table_terms(m, 4, 1, 1.0, False, np.array([0.0, t]))[0][1]  # t itself priced
        assert t not in grid and full[int(t)] == pytest.approx(alone, rel=1e-3)


def test_a_layout_splitting_a_dimension_below_one_element_runs_one_elements_kernel():
    # Llama 3.1 70B over 65,536 GPUs: each GPU's share of the fused QKV's 10,240 outputs is
    # 0.156, of the feed-forward's 28,672 inputs of its second GEMM 0.4375; the busiest GPU
    # still runs a kernel on one element, which the tables price (they refused such a shape)
    a = ie.preset("achievable").replace(kernel_tables=True)
    arch = ie.load_model("Llama 3.1 70B").with_precision(weight_bits=8, kv_cache_bits=8)
    m = StepModel(compile_workload(arch, a), ie.load_hardware("H100"), a)
    step = step_operations(m, 65536, 1, 1, 2048, 1, 1, False)
    seconds = dict(zip(step.names, KernelClock().price(step)))
    h100 = ie.load_hardware("H100")
    assert seconds["qkv projection"] == pytest.approx(
        80 * float(kp.gemm_s(h100, "fp8", 1, 1, 8192))
    )
    assert seconds["feed-forward out"] == pytest.approx(
        80 * float(kp.gemm_s(h100, "fp8", 1, 8192, 1))
    )
    assert all(np.isfinite(s) and s >= 0.0 for s in seconds.values())


def test_whole_layouts_frontier_on_the_kernel_clock_and_the_continuous_grid_refused():
    """The discrete search prices every whole layout on the kernel clock (its widest layouts
    split the model's dimensions below one element a GPU) and each frontier point is the
    point of its GPUs and batch; the continuous grid's fractional GPU counts are refused with
    the way to search (some 300 times the search's time: 619 s against 2.2 s measured)."""
    clock = ie.preset("achievable").replace(kernel_tables=True)
    kw = dict(assumptions=clock, weight_bits=8, context_tokens=2000)
    # a 30-point grid: 70 points, the clocks' ratios at either end 0.948 and 0.949 (on 100:
    # 0.948, 0.93; on 60: 102 points)
    front = ie.frontier("Llama 3.3 70B", "H100", discrete=True, grid_points=30, **kw).points
    engine = ie.frontier(
        "Llama 3.3 70B",
        "H100",
        discrete=True,
        grid_points=30,
        **{**kw, "assumptions": "achievable"},
    )
    assert len(front) > 20 and np.isfinite(front.tokens_per_s).all()
    # the two clocks price the same layouts within a third of each other at either end
    for col, end in (("tokens_per_s", "max"), ("usd_per_mtok", "min")):
        ratio = getattr(front[col], end)() / getattr(engine.points[col], end)()
        assert 0.75 < ratio < 1.33, (col, ratio)
    for i in (0, len(front) // 2, len(front) - 1):
        r = front.iloc[i]
        p = ie.point(
            "Llama 3.3 70B", "H100", gpus=int(r.gpus), batch=float(r.batch), discrete=True, **kw
        )
        assert p.tokens_per_s == pytest.approx(r.tokens_per_s, rel=1e-9)
    with pytest.raises(ie.SpecError, match="clock.*--discrete"):  # refused before any work
        ie.frontier("Llama 3.3 70B", "H100", grid_points=10, **kw)


def test_an_expert_gather_is_priced_from_the_all_gather_and_reduce_scatter_tables():
    """gpt-oss-120b (two MoE layer groups, so its operations are named by group) on 8 H200
    with attention data parallelism: TensorRT-LLM gathers and reduce-scatters the experts'
    tokens on Hopper (§F7), each priced at NCCL's all_gather / reduce_scatter table for its
    bytes over 8 ranks, times its calls (18 layers a group)."""
    a = ie.preset("achievable").replace(engine="trtllm", kernel_tables=True)
    gpu = ie.load_hardware("H200")
    m = StepModel(compile_workload(ie.load_model("gpt-oss-120b"), a), gpu, a)
    step = step_operations(m, 8, 512, 1, 2048, 1, 8, False)
    ops = [op for op in step if op.kind == "collective" and op.name.startswith("expert")]
    assert sorted(op.name for op in ops) == [
        f"expert {what}, layer group {i})"
        for what in ("combine (reduce-scatter", "dispatch (all-gather")
        for i in (1, 2)
    ]
    prices = dict(zip(step.names, KernelClock().seconds(step)))
    for op in ops:
        table = "all_gather" if "all-gather" in op.name else "reduce_scatter"
        expected = op.calls * float(kp.collective_s(gpu, table, 8.0, op.shape["bytes"]))
        assert op.shape["ranks"] == 8.0 and op.calls == 18.0
        assert prices[op.name] == pytest.approx(expected, rel=1e-9)
        alltoall = op.calls * float(kp.collective_s(gpu, "alltoall", 8.0, op.shape["bytes"]))
        assert expected != pytest.approx(alltoall, rel=0.01)
