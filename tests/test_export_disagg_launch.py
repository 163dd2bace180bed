"""A disaggregated export launches its pools as the engine starts them: every flag a decode or
prefill server needs beside the others, and the speculation its figures were priced with."""

from __future__ import annotations

import shlex

import pytest

from inference_econ import api
from inference_econ.errors import SpecError
from inference_econ.export.launch import engine_names


def _servers(plan, role: str) -> list[list[str]]:
    """The argument lists of the ``role`` servers in the plan's launch.sh (one a node)."""
    script = api.launch_files(plan)["launch.sh"]
    lines = [ln.strip().rstrip("&").strip() for ln in script.splitlines()]
    return [
        shlex.split(ln)
        for ln in lines
        if "sglang.launch_server" in ln and f"--disaggregation-mode {role}" in ln
    ]


@pytest.fixture(scope="module")
def sglang_wide_decode():
    """DeepSeek-R1 on GB200: a decode worker of 16 GPUs over four 4-GPU trays whose attention
    runs on data-parallel ranks, fed by prefill workers of 8 GPUs without them."""
    return api.export(
        "DeepSeek-R1", "GB200", engine="sglang", plan="disagg", gpus=16, batch=512,
        prefill_gpus=8, prompt_tokens=2000, output_tokens=500, weight_bits=8,
    )  # fmt: skip


def test_sglang_decode_with_data_parallel_ranks_asserts_prefill_round_robin(sglang_wide_decode):
    """SGLang 0.5.3 asserts ``prefill_round_robin_balance`` at start for a decode server whose
    ``dp_size`` is above 1 (ServerArgs._handle_disaggregation): every node of that copy is
    launched with ``--prefill-round-robin-balance``, and no prefill server (which has no
    data-parallel ranks here) is."""
    decode = _servers(sglang_wide_decode, "decode")
    prefill = _servers(sglang_wide_decode, "prefill")
    assert len(decode) == 4 and prefill  # the decode copy on each of its four trays
    for argv in decode:
        assert int(argv[argv.index("--dp-size") + 1]) > 1
        assert "--prefill-round-robin-balance" in argv
    for argv in prefill:
        assert "--dp-size" not in argv and "--prefill-round-robin-balance" not in argv


def test_disagg_export_launches_the_speculation_its_decode_was_priced_with():
    """DeepSeek-R1's MTP heads at most 4 tokens a cycle: the disaggregated plan's decode steps
    are priced with them (a shorter time per output token than without), so every server,
    prefill and decode, launches SGLang's NEXTN with the 3 draft tokens the heads draft (the
    prefill hands the draft its first hidden states); it had launched none."""
    pools = dict(engine="sglang", plan="disagg", gpus=8, batch=32, prefill_gpus=8,
                 prompt_tokens=2000, output_tokens=500, weight_bits=8)  # fmt: skip
    plain = api.export("DeepSeek-R1", "B200", **pools)
    mtp = api.export("DeepSeek-R1", "B200", **pools, draft_heads="mtp", max_draft_tokens=4)
    assert mtp.expected["tpot_s"] < 0.8 * plain.expected["tpot_s"]
    assert mtp.speculation == ("mtp", None, 3) and plain.speculation is None
    for role in ("prefill", "decode"):
        (argv,) = _servers(mtp, role)
        assert argv[argv.index("--speculative-algorithm") + 1] == "NEXTN"
        assert argv[argv.index("--speculative-num-steps") + 1] == "3"
        assert argv[argv.index("--speculative-num-draft-tokens") + 1] == "4"
        assert "--speculative-algorithm" not in _servers(plain, role)[0]


def test_sglang_decode_pool_with_pipeline_stages_is_refused_with_the_fix():
    """SGLang 0.5.3 runs no pipeline loop for a decode server (run_scheduler_process picks
    event_loop_normal_disagg_decode whatever --pp-size, python/sglang/srt/managers/
    scheduler.py lines 2881-2885; disaggregation/decode.py fixes its pipeline rank at 0):
    Llama 3.1 405B's decode worker of 16 H100s, planned PP2 x TP8, is refused naming the
    version, the pool, the layout and the fix; it had been written with --pp-size 2 beside
    --disaggregation-mode decode. Planned without pipeline stages it launches as TP16."""
    pools = dict(engine="sglang", plan="disagg", gpus=16, batch=64, prefill_gpus=8,
                 prompt_tokens=2000, output_tokens=500, weight_bits=8)  # fmt: skip
    with pytest.raises(SpecError) as refused:
        api.export("Llama 3.1 405B", "H100", **pools)
    text = str(refused.value)
    assert "decode pool's copies run PP2 x TP8" in text and "sglang 0.5.3" in text
    assert "--no-pipeline" in text
    plain = api.export("Llama 3.1 405B", "H100", **pools, pipeline=False)
    for argv in _servers(plain, "decode"):
        assert argv[argv.index("--tp-size") + 1] == "16" and "--pp-size" not in argv


def test_sglang_prefill_pool_keeps_its_pipeline_stages():
    """SGLang 0.5.3 runs a prefill server's stages (event_loop_pp_disagg_prefill, its decode
    servers fetching the prefill's pipeline size at bootstrap): a capacity plan of Llama
    3.1 405B on H100 whose prefill copies are PP2 x TP4 launches them with --pp-size 2."""
    plan = api.export(
        "Llama 3.1 405B", ["H100"], engine="sglang", plan="capacity", disaggregated=True,
        sizes=[8, 16], weight_bits=8, arrival_rate_per_s=10.0, input_lengths="2000",
        output_lengths="500", slo_ttft_p99_s=10.0, slo_tpot_p99_s=0.3, requests=200,
    )  # fmt: skip
    prefill, decode = plan.workers
    assert (prefill.pipeline, decode.pipeline) == (2, 1)
    for argv in _servers(plan, "prefill"):
        assert argv[argv.index("--pp-size") + 1] == "2"


def _capacity_pools(engine: str, **given):
    """A capacity plan of Llama 3.1 405B on H100 in pools, of 8- and 16-GPU copies; at 8-bit
    weights its prefill copies are PP2 x TP4 beside decode copies of TP8."""
    return api.export(
        "Llama 3.1 405B", ["H100"], engine=engine, plan="capacity", disaggregated=True,
        sizes=[8, 16], weight_bits=8, arrival_rate_per_s=10.0, input_lengths="2000",
        output_lengths="500", slo_ttft_p99_s=10.0, slo_tpot_p99_s=0.3, requests=200, **given,
    )  # fmt: skip


def test_every_engine_names_the_pools_that_run_pipeline_stages():
    """Which disaggregated servers run pipeline stages is stated for every engine (an engine
    without ``disagg_pipeline_roles`` would not be checked), each role a pool's."""
    for engine in ("vllm", "sglang", "trtllm"):
        roles = engine_names(engine)["disagg_pipeline_roles"]
        assert set(roles) <= {"prefill", "decode"}, engine


def test_vllm_pool_with_pipeline_stages_is_refused_with_the_fix():
    """vLLM 0.11.0's NixlConnector, which Dynamo 0.6.1's workers join their pools through,
    tells a worker by its tensor rank alone (its handshake port, nixl_connector.py lines
    491-494 and 622): no prefill or decode worker runs pipeline stages. The prefill copies
    of PP2 x TP4 are refused naming the version, the pool, the layout and the fix; they had
    been written as --pipeline-parallel-size 2 beside --is-prefill-worker. Planned without
    pipeline stages every worker launches with one stage."""
    with pytest.raises(SpecError) as refused:
        _capacity_pools("vllm")
    text = str(refused.value)
    assert "prefill pool's copies run PP2 x TP4" in text and "vllm 0.11.0" in text
    assert "any disaggregated server" in text and "--no-pipeline" in text
    plain = _capacity_pools("vllm", pipeline=False)
    script = api.launch_files(plain)["launch.sh"]
    lines = [ln.strip().rstrip("&") for ln in script.splitlines()]
    workers = [shlex.split(ln) for ln in lines if "python3 -m dynamo.vllm " in ln]
    assert workers
    for argv in workers:
        assert argv[argv.index("--pipeline-parallel-size") + 1] == "1"


def _trtllm_servers(plan, role: str) -> list[list[str]]:
    """The argument lists of the plan's ``role`` trtllm-serve servers (by their YAML)."""
    script = api.launch_files(plan)["launch.sh"]
    lines = [ln.strip().rstrip("&") for ln in script.splitlines()]
    return [
        shlex.split(ln) for ln in lines if "trtllm-serve " in ln and f" trtllm-{role}.yaml " in ln
    ]


def test_trtllm_decode_pools_keep_their_pipeline_stages_and_context_pools_beside_tp_none():
    """TensorRT-LLM 1.2.1 runs pipeline stages on generation servers (its feature matrix:
    disaggregated serving with pipeline parallelism): a decode worker of 24 GPUs planned PP3 x
    TP8 launches with --pp_size 3. Its release notes keep a known hang of context pipeline
    stages beside generation tensor parallelism, so prefill copies of PP2 x TP4 beside decode
    copies of TP8 are refused with the fix; planned without stages, they launch with none."""
    wide = api.export(
        "Llama 3.1 405B", "H100", engine="trtllm", plan="disagg", gpus=24, batch=64,
        prefill_gpus=16, prompt_tokens=2000, output_tokens=500, weight_bits=16,
    )  # fmt: skip
    (gen,) = _trtllm_servers(wide, "decode")
    assert gen[gen.index("--pp_size") + 1] == "3" and gen[gen.index("--tp_size") + 1] == "8"
    fp8 = "nvidia/Llama-3.1-405B-Instruct-FP8"
    with pytest.raises(SpecError) as refused:
        _capacity_pools("trtllm", checkpoint=fp8)
    text = str(refused.value)
    assert "prefill pool's copies run PP2 x TP4" in text and "--no-pipeline" in text
    assert "beside decode copies of TP8 without stages" in text and "\n" not in text
    plain = _capacity_pools("trtllm", checkpoint=fp8, pipeline=False)
    assert [(w.role, w.pipeline) for w in plain.workers] == [("prefill", 1), ("decode", 1)]
    assert _trtllm_servers(plain, "prefill")
    for argv in _trtllm_servers(plain, "prefill"):
        assert "--pp_size" not in argv or argv[argv.index("--pp_size") + 1] == "1"


def test_trtllm_context_stages_launch_beside_generation_stages():
    """TensorRT-LLM 1.2's known hang is of context pipeline stages beside generation tensor
    parallelism, not beside generation stages: at 16-bit weights Llama 3.1 405B's capacity
    plan in 16- and 24-GPU copies has prefill copies of PP3 x TP8 beside decode copies of
    PP2 x TP8, which launch with their stages; they had been refused. SGLang 0.5.3 still
    refuses its decode pool's stages."""
    pools = dict(sizes=[16, 24], weight_bits=16)
    plan = api.export(
        "Llama 3.1 405B", ["H100"], engine="trtllm", plan="capacity", disaggregated=True,
        arrival_rate_per_s=10.0, input_lengths="2000", output_lengths="500",
        slo_ttft_p99_s=10.0, slo_tpot_p99_s=0.3, requests=200, **pools,
    )  # fmt: skip
    assert [(w.role, w.pipeline, w.tensor) for w in plan.workers] == [
        ("prefill", 3, 8),
        ("decode", 2, 8),
    ]
    for role, stages in (("prefill", "3"), ("decode", "2")):
        servers = _trtllm_servers(plan, role)
        assert servers
        for argv in servers:
            assert argv[argv.index("--pp_size") + 1] == stages
    with pytest.raises(SpecError, match="decode pool's copies run PP2 x TP8"):
        api.export(
            "Llama 3.1 405B", ["H100"], engine="sglang", plan="capacity", disaggregated=True,
            arrival_rate_per_s=10.0, input_lengths="2000", output_lengths="500",
            slo_ttft_p99_s=10.0, slo_tpot_p99_s=0.3, requests=200, **pools,
        )  # fmt: skip
