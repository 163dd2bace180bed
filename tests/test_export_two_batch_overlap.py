"""Two-batch overlap (``--two-batch-overlap``) in an export: SGLang 0.5.3's
``--enable-two-batch-overlap`` over DeepEP and vLLM 0.11.0's ``--enable-dbo`` with its DeepEP
kernels selected in the worker's environment, in names those versions take (the records in
tests/data/engine_flags/), or the plan refused in one line where the engine would not run it as
the plan priced it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from inference_econ import api
from inference_econ.api.problem import setting_of
from inference_econ.cli import main
from inference_econ.errors import SpecError
from inference_econ.export import engine_configs as ec
from inference_econ.export import launch
from inference_econ.export.kubernetes import kubernetes_manifest

FLAGS = Path(__file__).parent / "data" / "engine_flags"
#: DeepSeek-R1 on 8 H200 with FP8 weights (its own checkpoint), 1,000 / 100 tokens, overlapped.
R1 = dict(prompt_tokens=1000, output_tokens=100, weight_bits=8, gpus=8, two_batch_overlap=True)


def record(name: str) -> dict:
    return json.loads((FLAGS / name).read_text())


def server(plan):
    (c,) = [c for c in ec.commands(plan) if c.role == "server"]
    return c


def test_sglang_launches_two_batch_overlap_over_deepep(overlapped):
    """SGLang 0.5.3 runs it with --moe-a2a-backend deepep, whose expert-parallel size is the
    tensor-parallel size (server_args.py): the worker's EP8 of TP8 as planned."""
    plan = overlapped["sglang"]
    (w,) = plan.workers
    assert (w.tensor, w.expert) == (8, 8)
    argv = list(server(plan).argv)
    flags = record("sglang-0.5.3.json")["flags"]
    assert all(a in flags for a in argv if a.startswith("--"))
    at = argv.index("--enable-two-batch-overlap")
    assert argv[at : at + 3] == ["--enable-two-batch-overlap", "--moe-a2a-backend", "deepep"]
    assert argv[argv.index("--ep-size") + 1] == "8"
    assert flags["--enable-two-batch-overlap"]["kind"] == "switch"
    assert "deepep" in flags["--moe-a2a-backend"]["choices"]
    assert server(plan).env == ()  # SGLang's overlap needs no environment
    note = plan.notes[-1]
    assert note.startswith("Two-batch overlap: sglang 0.5.3 runs each step as two micro-batches")
    assert "--enable-two-batch-overlap --moe-a2a-backend deepep" in note
    files = api.launch_files(plan)
    assert f"# {note}" in files["launch.sh"]
    assert json.loads(files["plan.json"])["notes"][-1] == note


def test_vllm_launches_dbo_with_its_deepep_kernels_in_the_workers_environment(overlapped):
    """vLLM 0.11.0 asserts VLLM_ALL2ALL_BACKEND deepep_low_latency or deepep_high_throughput
    with --enable-dbo (vllm/config/__init__.py): the server's environment selects the
    low-latency kernels, and the Kubernetes manifests, which carry no environment, are not
    written."""
    plan = overlapped["vllm"]
    (w,) = plan.workers
    assert (w.tensor, w.attention_dp, w.expert) == (8, 4, 8)
    rec = record("vllm-0.11.0.json")
    c = server(plan)
    argv = list(c.argv)
    assert all(a in rec["flags"] for a in argv if a.startswith("--"))
    assert argv[argv.index("--enable-dbo") - 1] == "--enable-expert-parallel"
    assert rec["flags"]["--enable-dbo"]["kind"] == "switch"
    assert dict(c.env) == {"VLLM_ALL2ALL_BACKEND": "deepep_low_latency"}
    choices = rec["environment"]["VLLM_ALL2ALL_BACKEND"]["choices"]
    assert "deepep_low_latency" in choices and "deepep_high_throughput" in choices
    files = api.launch_files(plan)
    assert "VLLM_ALL2ALL_BACKEND=deepep_low_latency vllm serve" in files["launch.sh"]
    assert "--enable-dbo with VLLM_ALL2ALL_BACKEND=deepep_low_latency" in plan.notes[-1]
    assert isinstance(kubernetes_manifest(plan), str) and "k8s-dynamo.yaml" not in files
    assert "# no Kubernetes manifest: two-batch overlap selects" in files["launch.sh"]


def test_vllm_pools_take_the_kernels_of_their_role(overlapped):
    """A prefill worker runs DeepEP's high-throughput kernels, a decode worker its
    low-latency ones (Dynamo's workers, each with its environment)."""
    plan = overlapped["vllm"]
    (w,) = plan.workers
    pools = tuple(dataclasses.replace(w, role=r) for r in ("prefill", "decode"))
    plan = dataclasses.replace(plan, workers=pools)
    env = {c.role: dict(c.env) for c in ec.commands(plan) if c.role in ("prefill", "decode")}
    assert env["prefill"]["VLLM_ALL2ALL_BACKEND"] == "deepep_high_throughput"
    assert env["decode"]["VLLM_ALL2ALL_BACKEND"] == "deepep_low_latency"
    for c in ec.commands(plan):
        if c.role in ("prefill", "decode"):
            assert "--enable-dbo" in c.argv


def test_without_two_batch_overlap_an_export_is_as_it_was():
    """The default writes no overlap flag or environment: the files are those of a plan
    without the option, byte for byte."""
    for engine in ("sglang", "vllm"):
        kw = dict(engine=engine, batch=256, **{**R1, "two_batch_overlap": False})
        given = api.launch_files(api.export("DeepSeek-R1", "H200", **kw))
        kw.pop("two_batch_overlap")
        assert given == api.launch_files(api.export("DeepSeek-R1", "H200", **kw))
        text = "".join(given.values())
        assert "two-batch-overlap" not in text and "--enable-dbo" not in text
        assert "VLLM_ALL2ALL_BACKEND" not in text and "deepep" not in text


#: (engine, model and layout, the refusal's text): where the engine would not run it.
REFUSED = [
    # an architecture whose layers SGLang 0.5.3 does not split (operations_strategy.py)
    ("sglang", ["GLM-4.5", "--weight-bits", "8", "--gpus", "8", "--batch", "32"],
     "sglang 0.5.3 splits a batch in two for DeepSeek-V2/V3 and Qwen3 MoE layers only, not "
     "Glm4MoeForCausalLM, GLM-4.5's architecture (drop --two-batch-overlap, or export for vllm)"),
    # no expert parallelism: Qwen3-30B-A3B on one GPU
    ("sglang", ["Qwen3-30B-A3B", "--weight-bits", "8", "--gpus", "1", "--batch", "8"],
     "the plan's server worker (TP1, EP1) launches no expert parallelism, and sglang 0.5.3 "
     "overlaps DeepEP's token exchange between expert-parallel ranks (drop "
     "--two-batch-overlap, or plan a layout whose tensor degree divides Qwen3-30B-A3B's 128 "
     "experts)"),
    # EP4 of TP12: DeepEP sets ep_size to tp_size (server_args.py)
    ("sglang", ["Qwen3-235B-A22B", "--weight-bits", "8", "--gpus", "12", "--batch", "64"],
     "sglang 0.5.3 under DeepEP sets the expert-parallel size to the tensor-parallel size, and "
     "the plan's server worker (TP12, EP4) splits its experts over part of its tensor group "
     "(drop --two-batch-overlap, or plan a layout whose tensor degree divides "
     "Qwen3-235B-A22B's 128 experts)"),
    # DeepEPMoE asserts FP8 experts (ep_moe/layer.py)
    ("sglang", ["Qwen3-30B-A3B", "--gpus", "8", "--batch", "64"],
     "sglang 0.5.3 runs it over DeepEP, whose MoE layer takes FP8 experts only, not the plan's "
     "16-bit ones (plan 8-bit weights (--weight-bits 8), or drop --two-batch-overlap)"),
    # and DeepGEMM, on SM 90 and later (deep_gemm_wrapper/configurer.py)
    ("sglang", ["Qwen3-30B-A3B", "-H", "A100-SXM-80GB", "--weight-bits", "8", "--gpus", "8",
                "--batch", "32"],
     "sglang 0.5.3 runs it over DeepEP, whose MoE layer needs DeepGEMM, which runs on Hopper "
     "and later GPUs, not A100-SXM-80GB (drop --two-batch-overlap)"),
    # vLLM micro-batches only over data-parallel ranks (ubatch_splitting.py)
    ("vllm", ["DeepSeek-R1", "--weight-bits", "8", "--gpus", "8", "--batch", "8"],
     "vllm 0.11.0 splits a step in two only over data-parallel ranks, and the plan's server "
     "worker (TP8, EP8) has no attention data parallelism (drop --two-batch-overlap, or plan a "
     "larger batch (attention data-parallel), or export for sglang)"),
    # TensorRT-LLM has none: refused with the setting, before any work
    ("trtllm", ["DeepSeek-R1", "--weight-bits", "8", "--gpus", "8", "--batch", "256"],
     "two-batch overlap is not run by the trtllm engine profile (only SGLang's and vLLM's) "
     "(use --engine sglang or --engine vllm)"),
]  # fmt: skip


@pytest.mark.parametrize(
    "engine, args, problem",
    REFUSED,
    ids=[
        "architecture",
        "no-expert-parallelism",
        "ep-not-tp",
        "weights",
        "part",
        "no-dp",
        "trtllm",
    ],
)
def test_overlap_an_engine_would_not_run_is_refused_in_one_line(engine, args, problem, tmp_path):
    model, *rest = args
    hardware = [] if "-H" in rest else ["-H", "H200"]
    point = ["--prompt-tokens", "1000", "--output-tokens", "100", "--out", str(tmp_path / "p")]
    argv = ["export", model, *hardware, "--engine", engine, *rest, *point, "--two-batch-overlap"]
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 2, r.output
    assert r.stderr == f"error: --two-batch-overlap: {problem}\n"
    assert not (tmp_path / "p").exists()


def test_a_plan_priced_under_one_engines_overlap_launches_on_that_engine_only():
    """Figures priced with SGLang's micro-batches are not launched by TensorRT-LLM, which has
    no overlap, nor by vLLM, which splits steps at other sizes."""
    s = setting_of(
        "DeepSeek-R1", "H200", weight_bits=8, assumptions="achievable", engine="sglang",
        two_batch_overlap=True, context_tokens=1050,
    )  # fmt: skip
    with pytest.raises(SpecError, match=r"trtllm 1\.2\.1 has no two-batch overlap"):
        launch.point_plan(s, "trtllm", 8, 256, 1000, 100)
    with pytest.raises(SpecError, match=r"figures price sglang's two micro-batches"):
        launch.point_plan(s, "vllm", 8, 256, 1000, 100)


def test_a_benchmark_of_an_overlapped_plan_is_read_back_as_planned(tmp_path):
    """The benchmark's --metadata (and plan.json) state what the plan runs beyond its layout,
    in the words the measured reader takes: a result that measured exactly the plan's
    expected figures is predicted as the plan priced it, copies and overlap included."""
    import sys

    from inference_econ.export import benchmark_commands as bc
    from inference_econ.measured.comparison import compare

    sys.path.insert(0, str(Path(__file__).parent))
    from test_export import measured_as_planned

    plan = api.export(
        "DeepSeek-R1", "H200", engine="sglang", batch=32, prompt_tokens=500, output_tokens=50,
        weight_bits=8, gpus=8, two_batch_overlap=True, redundant_experts=8,
    )  # fmt: skip
    assert bc.metadata(plan)["ie_stated"] == "8 redundant experts; two-batch overlap"
    assert json.loads(api.launch_files(plan)["plan.json"])["stated"] == bc.stated(plan)
    run = measured_as_planned(plan, "deepseek-ai/DeepSeek-R1", bc.metadata(plan))
    path = tmp_path / "vllm-bench.json"
    path.write_text(json.dumps(run))
    t = compare(path, "achievable", engine="sglang").table
    assert list(t.status) == ["ok"] * len(t) and len(t) >= 2
    assert all(
        "8 redundant experts (EPLB) as stated, two-batch overlap as stated" in e for e in t.engine
    )
    assert (t.predicted / t.measured - 1).abs().max() < 1e-4, t[["metric", "measured", "predicted"]]


def _deepep_server(gpu: str, batch: int):
    plan = api.export(
        "DeepSeek-R1", gpu, engine="sglang", batch=batch, prompt_tokens=1000, output_tokens=1000,
        gpus=8, deepep=True,
    )  # fmt: skip
    return plan, list(server(plan).argv)


def test_sglang_deepep_captures_cuda_graphs_up_to_an_attention_ranks_batch():
    """SGLang 0.5.3 captures each attention rank's CUDA graphs up to its whole
    --max-running-requests unless --cuda-graph-max-bs says otherwise, and DeepEP's low-latency
    dispatch takes 128 tokens a GPU: DeepSeek-R1 on 8 B200 at 512 requests (8 attention ranks
    of one GPU) captures up to the 64 a rank runs, not 512."""
    plan, argv = _deepep_server("B200", 512)
    (w,) = plan.workers
    assert (w.tensor, w.attention_dp, w.expert) == (8, 8, 8)
    assert argv[argv.index("--max-running-requests") + 1] == "512"
    assert argv[argv.index("--cuda-graph-max-bs") + 1] == "64"
    assert record("sglang-0.5.3.json")["flags"]["--cuda-graph-max-bs"]["kind"] == "value"


def test_sglang_deepep_beyond_its_low_latency_buffer_is_refused():
    """2,048 requests over 8 attention ranks of one B200 each: 256 decode tokens a GPU, twice
    what SGLang 0.5.3's DeepEP low-latency kernels dispatch."""
    with pytest.raises(SpecError) as e:
        _deepep_server("B200", 2048)
    text = str(e.value)
    assert "each GPU dispatches up to 256 decode tokens" in text
    assert "take at most 128" in text and "plan a batch of at most 1024" in text


def test_sglang_without_deepep_writes_no_cuda_graph_limit():
    plan = api.export(
        "DeepSeek-R1", "B200", engine="sglang", batch=512, prompt_tokens=1000,
        output_tokens=1000, gpus=8,
    )  # fmt: skip
    assert plan.workers[0].attention_dp == 8
    assert "--cuda-graph-max-bs" not in server(plan).argv
