"""Two parts of a MoE step outside the layers' big GEMMs (docs/model-part-f.md §F8 and "A step
as operations"): where the embedding table and output head live under attention data
parallelism, and the router's gate. Qwen3-235B-A22B (FP8, 94 layers, d 4,096, 128 experts,
vocabulary 151,936) on 4 H200."""

import pytest

import inference_econ as ie
from inference_econ.model.kernel_prices import gemm_s
from inference_econ.model.latency import StepModel, replicated_weight_bytes
from inference_econ.model.operations import step_operations
from inference_econ.model.workload import compile_workload

MODEL, GPU = "Qwen3-235B-A22B", "H200"
N, B, CONTEXT = 4, 256, 2048
LAYERS, D, EXPERTS, VOCAB = 94, 4096, 128, 151936


def step_model(engine: str | None, preset: str = "achievable", **changes) -> StepModel:
    a = ie.preset(preset)
    a = a.replace(engine=engine, **changes) if engine else a.replace(**changes)
    arch = ie.load_model(MODEL).with_precision(weight_bits=8, kv_cache_bits=8)
    return StepModel(compile_workload(arch, a), ie.load_hardware(GPU), a)


def ops(model: StepModel, adiv: float) -> dict:
    return {op.name: op for op in step_operations(model, N, B, 1, CONTEXT, 1, adiv, False)}


def test_each_attention_rank_holds_its_own_16_bit_embedding_and_head(tmp_path):
    """DEP4 under TensorRT-LLM: four BF16 copies of the two 151,936 x 4,096 tables (2.49 GB a
    copy) for the one FP8 copy the weights count (1.24 GB), 8.71 GB more over the instance
    than the same engine with its head split; its KV cache 0.9 (the fraction of the memory
    left the engine gives it) of that smaller."""
    profile = tmp_path / "vocab-tp.yaml"
    profile.write_text(
        "name: vocab-tp\nderive_from: trtllm\nvocabulary_under_attention_dp: tensor_parallel\n"
    )
    trt, split = step_model("trtllm"), step_model(str(profile))
    tables = 2 * VOCAB * D
    assert trt.work.embedding_params == tables
    extra = replicated_weight_bytes(trt, 4.0, N) - replicated_weight_bytes(split, 4.0, N)
    assert extra == pytest.approx(tables * (4 * 2.0 - 1.0), rel=1e-12)
    assert extra == pytest.approx(8.713e9, rel=1e-3)
    assert replicated_weight_bytes(trt, 1.0, N) == replicated_weight_bytes(split, 1.0, N) == 0.0
    less = split.kv_capacity_bytes(N, 4.0) - trt.kv_capacity_bytes(N, 4.0)
    assert less == pytest.approx(0.9 * extra, rel=1e-9)
    assert split.kv_capacity_bytes(N, 1.0) == trt.kv_capacity_bytes(N, 1.0)


def test_each_rank_runs_the_whole_head_on_its_own_sequences():
    """DEP4: a rank's 64 sequences against all 151,936 rows of the head, read in BF16 (1.24
    GB a GPU a step); SGLang gathers the 256 to a head split four ways (its FP8 share). The
    same FLOP either way."""
    mine, theirs = (
        ops(step_model("trtllm"), 4.0)["lm head"],
        ops(step_model("sglang"), 4.0)["lm head"],
    )
    assert (mine.shape["m"], mine.shape["n"], mine.shape["k"]) == (B / 4, VOCAB, D)
    assert (theirs.shape["m"], theirs.shape["n"]) == (B, VOCAB / 4)
    assert mine.weight_bytes == pytest.approx(VOCAB * D * 2.0, rel=1e-12)
    assert theirs.weight_bytes == pytest.approx(VOCAB * D * 1.0 / 4, rel=1e-12)
    assert mine.flop_per_gpu == pytest.approx(theirs.flop_per_gpu, rel=1e-12)


def test_the_engine_step_reads_each_replicas_head():
    """The engine clock's weight reads grow by the head's extra bytes a GPU over HBM
    bandwidth: (4 x 2 - 1) x 151,936 x 4,096 bytes over 4 GPUs."""
    trt, sgl = step_model("trtllm"), step_model("sglang")
    part = trt.pipeline_part(N, B, 1, CONTEXT, 1)
    extra = trt.attention_reads(part, 4.0)[0] - sgl.attention_reads(part, 4.0)[0]
    bandwidth = trt.machine.hbm_bandwidth_bytes_per_s
    assert extra == pytest.approx(7.0 * VOCAB * D / (N * bandwidth), rel=1e-9)


def test_the_roofline_presets_keep_one_split_copy():
    for preset in ("paper", "refined"):
        m = step_model(None, preset)
        assert not m.calls.vocabulary_with_attention
        assert replicated_weight_bytes(m, 4.0, N) == 0.0
        assert ops(m, 4.0)["lm head"].shape["n"] == VOCAB / N


def test_the_router_is_a_bf16_gemm_of_each_ranks_tokens_against_every_expert():
    """The gate of each of the 94 MoE layers: under DEP4 a rank's 64 tokens (TEP4: all 256 on
    every rank) against 128 expert rows of 4,096, priced by the kernel clock at the measured
    BF16 GEMM (5.9 us a call on H200 at these sizes); no FLOP or bytes in Part A's terms."""
    model = step_model("trtllm", kernel_tables=True)
    for adiv, rows in ((4.0, B / 4), (1.0, B)):
        router = ops(model, adiv)["router"]
        assert router.kind == "gemm" and router.work == "router" and router.calls == LAYERS
        assert (router.shape["m"], router.shape["n"], router.shape["k"]) == (rows, EXPERTS, D)
        assert router.flop == router.bytes == 0.0
    step = step_operations(model, N, B, 1, CONTEXT, 1, 4.0, False)
    seconds = dict(zip(step.names, model_clock_seconds(step)))
    one = float(gemm_s(model.machine.gpu, "bfloat16", B / 4, EXPERTS, D))
    assert seconds["router"] == pytest.approx(LAYERS * one, rel=1e-12)
    assert 2e-6 < one < 2e-5
    names = step.names
    assert names.index("router") < names.index("expert dispatch (all-gather)")


def model_clock_seconds(step) -> list:
    from inference_econ.model.kernel_clock import KernelClock

    return [float(s) for s in KernelClock().seconds(step)]


def test_each_rank_samples_its_own_sequences():
    """Sampling follows the head: DEP4's ranks sample 64 sequences each, over the whole
    vocabulary; split (SGLang), every GPU gathers all 256 over its quarter."""
    mine, theirs = (
        ops(step_model("trtllm"), 4.0)["sampling"],
        ops(step_model("sglang"), 4.0)["sampling"],
    )
    assert (mine.shape["sequences"], mine.shape["vocab"]) == (B / 4, VOCAB)
    assert (theirs.shape["sequences"], theirs.shape["vocab"]) == (B, VOCAB / 4)


def test_the_head_reads_match_the_operation_over_pipeline_stages():
    """Two stages of 4 GPUs, two replicas a stage: the engine step's extra reads of the head
    are the head operation's extra bytes over HBM bandwidth, p/N of the (2·2 − 1)·V·d bytes
    each GPU of the last stage reads beyond its split FP8 share."""
    trt, sgl = step_model("trtllm"), step_model("sglang")
    n, p, adiv = 8, 2, 2.0
    part = trt.pipeline_part(n, B, 1, CONTEXT, p)
    extra = trt.attention_reads(part, adiv)[0] - sgl.attention_reads(part, adiv)[0]
    bandwidth = trt.machine.hbm_bandwidth_bytes_per_s
    assert extra == pytest.approx(3.0 * VOCAB * D * p / (n * bandwidth), rel=1e-9)
    mine = step_operations(trt, n, B, 1, CONTEXT, p, adiv, False)
    theirs = step_operations(sgl, n, B, 1, CONTEXT, p, adiv, False)
    head = [op.weight_bytes for s in (mine, theirs) for op in s if op.name == "lm head"]
    assert (head[0] - head[1]) / bandwidth == pytest.approx(extra, rel=1e-9)
    assert replicated_weight_bytes(trt, adiv, n / p) - replicated_weight_bytes(
        sgl, adiv, n / p
    ) == (pytest.approx(2 * VOCAB * D * (2 * 2.0 - 1.0), rel=1e-12))


def test_a_tied_models_one_table_is_what_each_replica_holds():
    """Qwama 0.5B (BF16) ties its embedding and output head: one 128,256 x 896 table a
    replica (``tied_embeddings_once``), so two replicas hold one BF16 table more than the
    weights count, 229.8 MB, beside their second copy of the attention."""
    a = ie.preset("achievable")
    arch = ie.load_model("Qwama 0.5B")
    m = StepModel(compile_workload(arch, a), ie.load_hardware(GPU), a)
    table = 128256 * 896
    assert m.work.embedding_params == table
    attention = arch.layers * m.work.attention_matrix_weight_bytes
    vocabulary = replicated_weight_bytes(m, 2.0, 2.0) - attention
    assert vocabulary == pytest.approx(table * (2 * 2.0 - 2.0), rel=1e-12)
    assert vocabulary == pytest.approx(229.8e6, rel=1e-3)
