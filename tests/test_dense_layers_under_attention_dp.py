"""A MoE model's dense feed-forward layers under attention data parallelism (docs/model-part-f.md
§F7, "Dense layers under attention DP"): TensorRT-LLM and vLLM run them with the attention's
layout, each replica on its own tokens with the block's weights, nothing gathered; SGLang keeps
them tensor-parallel over the instance, the replicas' tokens gathered and scattered around them.
Llama 4 Maverick (24 dense layers of 48, d 5,120, dense d_ff 16,384) on 8 B200."""

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.model.latency import StepModel, replicated_weight_bytes
from inference_econ.model.operations import step_operations
from inference_econ.model.workload import compile_workload
from inference_econ.specs.engine import load_engine

MODEL, GPU = "Llama 4 Maverick", "B200"
#: 8 GPUs, 1,024 decoding requests at 2,048 cached positions, one stage
N, B, CONTEXT = 8, 1024, 2048
DENSE_LAYERS, D, F = 24, 5120, 16384


def step_model(engine: str) -> StepModel:
    a = ie.preset("achievable").replace(engine=engine)
    return StepModel(compile_workload(ie.load_model(MODEL), a), ie.load_hardware(GPU), a)


def ops(model: StepModel, adiv: float) -> dict:
    return {op.name: op for op in step_operations(model, N, B, 1, CONTEXT, 1, adiv, False)}


def test_the_engines_state_where_their_dense_layers_and_vocabulary_run():
    """The embedding table and output head too (model-part-f.md §F8): TensorRT-LLM builds them
    whole on every attention-DP rank, a vLLM data-parallel rank is an engine of its own, SGLang
    splits the head over the whole tensor group unless --enable-dp-lm-head."""
    for engine, layout in (
        ("trtllm", "data_parallel"),
        ("vllm", "data_parallel"),
        ("sglang", "tensor_parallel"),
    ):
        profile = load_engine(engine)
        assert profile.dense_under_attention_dp == profile.vocabulary_under_attention_dp == layout


def test_tensorrt_llm_runs_each_ranks_dense_blocks_on_its_own_tokens():
    """DEP8: every GPU its own attention replica; the dense blocks go with it."""
    step = ops(step_model("trtllm"), adiv=8.0)
    assert "attention-DP gather and scatter" not in step
    assert not any(name.startswith("all-reduce") for name in step)  # one rank a replica
    ff_in, ff_out = step["feed-forward in"], step["feed-forward out"]
    assert ff_in.calls == ff_out.calls == DENSE_LAYERS
    # a rank's 1,024 / 8 tokens through the whole block: gate and up fused, then down
    assert (ff_in.shape["m"], ff_in.shape["n"], ff_in.shape["k"]) == (B / 8, 2 * F, D)
    assert (ff_out.shape["m"], ff_out.shape["n"], ff_out.shape["k"]) == (B / 8, D, F)
    shared = step["shared experts (layer group 2)"]  # one expert of 8,192, gate and up fused
    assert (shared.shape["m"], shared.shape["n"]) == (B / 8, 2 * 8192)


def test_sglang_gathers_the_tokens_to_tensor_parallel_dense_blocks():
    step = ops(step_model("sglang"), adiv=8.0)
    gather = step["attention-DP gather and scatter"]
    assert gather.calls == 2 * DENSE_LAYERS and gather.shape["ranks"] == 8.0
    reduce = step["all-reduce (feed-forward)"]
    assert reduce.calls == DENSE_LAYERS and reduce.shape["ranks"] == 8.0
    ff_in = step["feed-forward in"]
    assert (ff_in.shape["m"], ff_in.shape["n"]) == (B, 2 * F / 8)


def test_replicas_of_several_gpus_reduce_their_dense_outputs_among_themselves():
    """vLLM, 2 data-parallel ranks of tensor degree 4: each replica's dense outputs are
    all-reduced over its 4 GPUs, for its 512 tokens, one BF16 row of d a token a layer."""
    step = ops(step_model("vllm"), adiv=2.0)
    assert "attention-DP gather and scatter" not in step
    dense = step["all-reduce (dense feed-forward)"]
    assert dense.calls == DENSE_LAYERS and dense.shape["ranks"] == 4.0
    assert dense.shape["bytes"] == D * 2.0 * (B / 2)
    assert step["feed-forward in"].shape["m"] == B / 2
    assert step["feed-forward in"].shape["n"] == 2 * F / 4


def test_every_replica_holds_and_reads_the_dense_weights(tmp_path):
    """Beyond the attention's replicas, 7 more copies of the 24 dense layers' blocks (three
    BF16 matrices of d x d_ff each) and of the 24 MoE layers' shared experts (three of d x
    8,192); their reads 8 times the tensor-parallel blocks'."""
    profile = tmp_path / "dense-tp.yaml"
    profile.write_text(
        "name: dense-tp\nderive_from: trtllm\ndense_under_attention_dp: tensor_parallel\n"
    )
    with_attention, tensor_parallel = step_model("trtllm"), step_model(str(profile))
    extra = replicated_weight_bytes(with_attention, 8.0, N) - replicated_weight_bytes(
        tensor_parallel, 8.0, N
    )
    shared = 7 * 24 * 3 * D * 8192 * 2.0
    assert extra == pytest.approx(7 * DENSE_LAYERS * 3 * D * F * 2.0 + shared, rel=1e-12)
    assert with_attention.kv_capacity_bytes(N, 8.0) < tensor_parallel.kv_capacity_bytes(N, 8.0)
    mine, theirs = ops(with_attention, 8.0), ops(tensor_parallel, 8.0)
    for name in ("feed-forward in", "feed-forward out", "shared experts (layer group 2)"):
        assert mine[name].weight_bytes == pytest.approx(8.0 * theirs[name].weight_bytes, rel=1e-12)
        assert mine[name].flop_per_gpu == pytest.approx(theirs[name].flop_per_gpu, rel=1e-12)


def test_no_gather_against_every_rank_reading_the_dense_weights(tmp_path):
    """The trade the engine makes: with NVFP4 weights and 128 requests a rank, the gather,
    scatter and all-reduce around 24 dense layers cost more than every rank reading the dense
    blocks' weights (the step is shorter with the attention); with BF16 weights and 8 requests
    a rank, the reads cost more (longer)."""
    profile = tmp_path / "dense-tp.yaml"
    profile.write_text(
        "name: dense-tp\nderive_from: trtllm\ndense_under_attention_dp: tensor_parallel\n"
    )

    def step(engine, weight_bits, batch):
        a = ie.preset("achievable").replace(engine=engine)
        arch = ie.load_model(MODEL).with_precision(weight_bits=weight_bits, kv_cache_bits=8)
        m = StepModel(compile_workload(arch, a), ie.load_hardware(GPU), a)
        return float(m.latency_by_dims(m.pipeline_part(N, batch, 1, CONTEXT, 1), 8.0)[1])

    fp4 = [step(engine, 4, B) for engine in ("trtllm", str(profile))]
    bf16 = [step(engine, 16, 64) for engine in ("trtllm", str(profile))]
    assert np.isfinite(fp4 + bf16).all()
    assert fp4[0] < fp4[1] and bf16[0] > bf16[1]


def test_the_roofline_presets_keep_tensor_parallel_dense_blocks():
    a = ie.preset("refined")
    model = StepModel(compile_workload(ie.load_model(MODEL), a), ie.load_hardware(GPU), a)
    assert not model.calls.dense_with_attention
    assert "attention-DP gather and scatter" in ops(model, 8.0)


def sglang_over(deepep: bool) -> StepModel:
    a = ie.preset("achievable").replace(engine="sglang", deepep=deepep)
    return StepModel(compile_workload(ie.load_model(MODEL), a), ie.load_hardware(GPU), a)


@pytest.mark.parametrize("adiv", [8.0, 1.0])
def test_sglang_over_deepep_runs_its_shared_experts_whole_on_every_gpu(adiv):
    """SGLang builds the shared experts at tensor degree 1 where DeepEP moves the experts'
    tokens (model-part-f.md §F7, "Shared experts over DeepEP"), with attention DP or without:
    each of the 8 GPUs its 128 of the 1,024 tokens through the whole 8,192-wide expert, and 7
    more copies of the 24 layers' shared experts (three BF16 matrices of d x 8,192) held and
    read; the dense layers stay tensor-parallel over the 8 GPUs."""
    deepep, gather = sglang_over(True), sglang_over(False)
    assert deepep.calls.shared_on_every_gpu and not deepep.calls.dense_with_attention
    assert not gather.calls.shared_on_every_gpu
    mine, theirs = ops(deepep, adiv), ops(gather, adiv)
    shared, split = mine["shared experts (layer group 2)"], theirs["shared experts (layer group 2)"]
    assert (shared.shape["m"], shared.shape["n"]) == (B / N, 2 * 8192)
    assert (split.shape["m"], split.shape["n"]) == (B, 2 * 8192 / N)
    assert shared.weight_bytes == pytest.approx(N * split.weight_bytes, rel=1e-12)
    assert shared.flop_per_gpu == pytest.approx(split.flop_per_gpu, rel=1e-12)
    ff_in = mine["feed-forward in"]
    assert (ff_in.shape["m"], ff_in.shape["n"]) == (B, 2 * F / N)  # the dense layers as before
    extra = replicated_weight_bytes(deepep, adiv, N) - replicated_weight_bytes(gather, adiv, N)
    assert extra == pytest.approx(7 * 24 * 3 * D * 8192 * 2.0, rel=1e-12)
    # SGLang's static memory fraction is of the whole memory: the copies come off the cache
    less = gather.kv_capacity_bytes(N, adiv) - deepep.kv_capacity_bytes(N, adiv)
    assert less == pytest.approx(extra, rel=1e-12)


def test_a_pipelined_layouts_cache_counts_the_shared_copies_of_its_stages_tensor_group():
    """Over DeepEP each GPU of a stage holds the shared experts whole: a layout of 16 stages
    of one GPU holds no copy beyond one, so its KV cache is what it is without DeepEP, and one
    of 2 stages of 8 GPUs holds 7 copies, not the 15 of a single stage over all 16."""
    from inference_econ.load.layout_choice import layout_capacity
    from inference_econ.model.mixed_step import EngineLayout

    def capacity(model, layout):  # from the layout search's capacity, of one stage, in bytes
        return layout_capacity(model, float(model.kv_capacity_bytes(16.0)), layout)

    deepep, gather = sglang_over(True), sglang_over(False)
    stages = EngineLayout(16, 16, 1.0, False)
    assert capacity(deepep, stages) == pytest.approx(capacity(gather, stages), rel=1e-12)
    two = EngineLayout(16, 2, 1.0, False)
    held = float(deepep.kv_capacity_bytes(16.0, 1.0, 2.0))
    assert capacity(deepep, two) == pytest.approx(held, rel=1e-12)
    assert held > float(deepep.kv_capacity_bytes(16.0))


def test_only_sglang_builds_its_shared_experts_whole_over_deepep():
    """vLLM over DeepEP without attention DP is one engine of one data-parallel rank, whose
    shared experts stay tensor-parallel (its sequence-parallel MoE needs data_parallel_size > 1)."""
    a = ie.preset("achievable").replace(engine="vllm", deepep=True, attention_data_parallel=False)
    model = StepModel(compile_workload(ie.load_model(MODEL), a), ie.load_hardware(GPU), a)
    assert not model.calls.shared_on_every_gpu and not model.calls.dense_with_attention
    assert replicated_weight_bytes(model, 1.0, N) == 0.0
