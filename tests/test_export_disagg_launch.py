"""A disaggregated export launches its pools as the engine starts them: every flag a decode or
prefill server needs beside the others, and the speculation its figures were priced with."""

from __future__ import annotations

import shlex

import pytest

from inference_econ import api
from inference_econ.errors import SpecError


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
