"""Redundant experts (``--redundant-experts``) in an export: each engine's expert-parallel load
balancer launched with the plan's copies, in names its version takes (the records in
tests/data/engine_flags/), or the plan refused in one line where the engine would not hold them
as the plan priced them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inference_econ import api
from inference_econ.cli import main
from inference_econ.errors import InfeasibleError, SpecError
from inference_econ.export import engine_configs as ec

FLAGS = Path(__file__).parent / "data" / "engine_flags"
#: DeepSeek-R1 on 8 H200 with FP8 weights (its own checkpoint), 1,000 / 100 tokens: EP8 on
#: every engine, its 256 experts and 32 copies 36 slots a rank.
R1 = dict(prompt_tokens=1000, output_tokens=100, weight_bits=8, gpus=8, redundant_experts=32)


def record(name: str) -> dict:
    return json.loads((FLAGS / name).read_text())


@pytest.fixture(scope="module")
def balanced():
    """Per engine, DeepSeek-R1's plan with 32 redundant experts: at batch 32 under SGLang over
    DeepEP and vLLM (two attention ranks of TP4), at 256 under TensorRT-LLM, whose balancer
    runs only with attention data parallelism (all eight ranks)."""
    return {
        engine: api.export(
            "DeepSeek-R1", "H200", engine=engine, batch=batch, deepep=engine == "sglang", **R1
        )
        for engine, batch in (("sglang", 32), ("vllm", 32), ("trtllm", 256))
    }


def server_argv(plan) -> list[str]:
    (c,) = [c for c in ec.commands(plan) if c.role == "server"]
    return list(c.argv)


def test_sglang_launches_its_eplb_with_the_plans_redundant_experts(balanced):
    plan = balanced["sglang"]
    (w,) = plan.workers
    assert (w.tensor, w.attention_dp, w.expert) == (8, 2, 8)
    argv = server_argv(plan)
    flags = record("sglang-0.5.3.json")["flags"]
    assert all(a in flags for a in argv if a.startswith("--"))
    at = argv.index("--enable-eplb")
    assert argv[at - 2 : at + 3] == ["--ep-size", "8", "--enable-eplb", "--ep-num-redundant-experts", "32"]  # fmt: skip
    assert flags["--enable-eplb"]["kind"] == "switch"
    note = (
        "Redundant experts: 32 copies of DeepSeek-R1's routed experts in each MoE layer (288 "
        "slots for its 256 experts, 36 on each of EP8's ranks), placed by sglang 0.5.3's EPLB: "
        "--enable-eplb --ep-num-redundant-experts 32."
    )
    files = api.launch_files(plan)
    assert plan.notes[-2] == note and f"# {note}" in files["launch.sh"]
    assert json.loads(files["plan.json"])["notes"][-2] == note
    assert plan.notes[-1].startswith("DeepEP's exchange: sglang 0.5.3 moves a MoE's tokens")


def test_vllm_launches_its_eplb_through_the_eplb_config_not_the_deprecated_flag(balanced):
    """vLLM 0.11.0 deprecates --num-redundant-experts for EPLBConfig's num_redundant_experts
    (vllm/engine/arg_utils.py): the export writes --eplb-config, whose fields the record holds."""
    plan = balanced["vllm"]
    rec = record("vllm-0.11.0.json")
    argv = server_argv(plan)
    assert all(a in rec["flags"] for a in argv if a.startswith("--"))
    at = argv.index("--enable-eplb")
    assert argv[at - 1 : at + 3] == [
        "--enable-expert-parallel", "--enable-eplb", "--eplb-config", '{"num_redundant_experts":32}'
    ]  # fmt: skip
    assert "--num-redundant-experts" not in argv
    config = json.loads(argv[at + 2])
    assert config == {"num_redundant_experts": 32}
    assert set(config) <= set(rec["json_fields"]["--eplb-config"]["fields"])
    assert plan.notes[-1].endswith(
        'placed by vllm 0.11.0\'s EPLB: --enable-eplb --eplb-config {"num_redundant_experts":32}.'
    )
    assert "--eplb-config '{\"num_redundant_experts\":32}'" in api.launch_files(plan)["launch.sh"]


def test_trtllm_writes_its_moe_load_balancer_inline_with_the_plans_slots(balanced, tmp_path):
    """TensorRT-LLM 1.2.1 takes the MoeLoadBalancerConfig inline in the worker's extra options
    (``moe_config.load_balancer``, a dict, a MoeLoadBalancerConfig or a path: MoeConfig and
    TorchLlmArgs.validate_load_balancer): the slots, balanced online, in trtllm-server.yaml,
    and a later export without copies writes none."""
    plan = balanced["trtllm"]
    (w,) = plan.workers
    assert (w.tensor, w.attention_dp, w.expert) == (8, 8, 8)
    api_fields = record("trtllm-1.2.1.json")["llm_api"]
    (server,) = [c for c in ec.commands(plan) if c.role == "server"]
    argv = list(server.argv)
    options = yaml.safe_load(server.files[argv[argv.index("--config") + 1]])
    assert options["enable_attention_dp"] is True
    assert set(options) <= set(api_fields["TorchLlmArgs"])
    assert set(options["moe_config"]) <= set(api_fields["MoeConfig"])
    balancer = options["moe_config"]["load_balancer"]
    assert balancer == {"num_slots": 288, "layer_updates_per_iter": 1}
    assert set(balancer) <= set(api_fields["MoeLoadBalancerConfig"])
    assert set(server.files) == {"trtllm-server.yaml"}
    assert plan.notes[-1].endswith(
        "placed by trtllm 1.2.1's MoE load balancer, online: moe_config.load_balancer in "
        "trtllm-server.yaml (num_slots: 288, layer_updates_per_iter: 1)."
    )
    api.write_launch_files(plan, tmp_path)
    plain = api.export("DeepSeek-R1", "H200", engine="trtllm", batch=256, **{**R1, "redundant_experts": 0})  # fmt: skip
    api.write_launch_files(plain, tmp_path)
    assert "load_balancer" not in (tmp_path / "trtllm-server.yaml").read_text()


def test_without_redundant_experts_an_export_is_as_it_was():
    """--redundant-experts 0, the default, writes no balancer: the files are those of a plan
    without the option, byte for byte, and name no EPLB flag, field or file."""
    for engine in ("sglang", "vllm", "trtllm"):
        kw = dict(engine=engine, batch=256, prompt_tokens=1000, output_tokens=100, weight_bits=8)
        given = api.launch_files(api.export("DeepSeek-R1", "H200", gpus=8, redundant_experts=0, **kw))  # fmt: skip
        assert given == api.launch_files(api.export("DeepSeek-R1", "H200", gpus=8, **kw))
        assert not any("eplb" in t.lower() or "load_balancer" in t for t in given.values())
        assert "Redundant experts" not in given["plan.json"]


#: (engine, model and layout, the refusal's text): each engine's balancer refuses them.
REFUSED = [
    # no expert parallelism: Qwen3-30B-A3B on one GPU
    ("sglang", ["Qwen3-30B-A3B", "--gpus", "1", "--batch", "8", "--redundant-experts", "16"],
     "is 16, but the plan's server worker (TP1, EP1) launches no expert parallelism, and sglang "
     "0.5.3 balances experts only between expert-parallel ranks (leave --redundant-experts out, "
     "or plan a layout whose tensor degree divides Qwen3-30B-A3B's 128 experts)"),
    # 256 + 30 slots over EP8
    ("vllm", ["DeepSeek-R1", "--weight-bits", "8", "--gpus", "8", "--batch", "32",
              "--redundant-experts", "30"],
     "is 30: DeepSeek-R1's 256 experts and 30 copies make 286 slots, which do not split evenly "
     "over the 8 expert-parallel ranks of the plan's server worker (TP8, EP8), as vllm 0.11.0 "
     "places them (give --redundant-experts 24 or 32)"),
    # an architecture the engine's balancer does not run
    ("sglang", ["Mixtral 8x7B", "-H", "H100", "--gpus", "8", "--batch", "32",
                "--redundant-experts", "8"],
     "is 8, but sglang 0.5.3's expert-parallel load balancer does not run MixtralForCausalLM, "
     "Mixtral 8x7B's architecture (leave --redundant-experts out, or export for trtllm or vllm)"),
    # vLLM 0.11.0 balances FP8 and 16-bit experts only
    ("vllm", ["DeepSeek-R1", "-H", "B200", "--weight-bits", "4", "--checkpoint",
              "nvidia/DeepSeek-R1-FP4", "--gpus", "8", "--batch", "32", "--redundant-experts", "32"],
     "is 32, but vllm 0.11.0 balances FP8 or 16-bit experts only, not the plan's 4-bit ones "
     "(plan 8- or 16-bit weights, or leave --redundant-experts out, or export for sglang or "
     "trtllm)"),
    # TensorRT-LLM's balancer runs only with attention data parallelism
    ("trtllm", ["DeepSeek-R1", "--weight-bits", "8", "--gpus", "8", "--batch", "32",
                "--redundant-experts", "32"],
     "is 32, but the plan's server worker (TP8, EP8) has no attention data parallelism, without "
     "which trtllm 1.2.1 runs no MoE load balancer (leave --redundant-experts out, or "
     "plan a larger batch (attention data-parallel), or export for sglang or vllm)"),
]  # fmt: skip


@pytest.mark.parametrize(
    "engine, args, problem",
    REFUSED,
    ids=["no-expert-parallelism", "slots-not-even", "architecture", "weights", "attention-dp"],
)
def test_redundant_experts_an_engine_would_not_balance_are_refused_in_one_line(
    engine, args, problem, tmp_path
):
    model, *rest = args
    hardware = [] if "-H" in rest else ["-H", "H200"]
    point = ["--prompt-tokens", "1000", "--output-tokens", "100", "--out", str(tmp_path / "p")]
    r = CliRunner().invoke(main, ["export", model, *hardware, "--engine", engine, *rest, *point])
    assert r.exit_code == 2, r.output
    assert r.stderr == f"error: --redundant-experts: {problem}\n"
    assert not (tmp_path / "p").exists()


def test_vllm_balances_experts_on_cuda_only_and_models_it_knows():
    """vLLM 0.11.0's ParallelConfig refuses EPLB off CUDA; a model whose architecture the
    export does not know (no checkpoint of a family it knows) is refused on every engine."""
    with pytest.raises(SpecError, match="vllm 0.11.0 balances experts on CUDA GPUs only, not MI300X"):  # fmt: skip
        api.export("DeepSeek-R1", "MI300X", engine="vllm", batch=32, **R1)
    paper = "DeepSeek-V3 (paper approximation)"
    with pytest.raises(SpecError, match=r"cannot tell whether sglang 0\.5\.3 balances DeepSeek-V3"):
        api.export(paper, "H200", engine="sglang", batch=32, checkpoint="./v3", **R1)


def test_a_rack_of_72_gpus_launches_deepseeks_experts_on_288_slots():
    """DeepSeek-R1 on 72 GB200 with 32 copies (288 slots, 4 a rank) is launched at EP72, as
    point and simulate price it: the experts' slots spread over the GPUs whole, so no expert's
    width is split 72 ways (the launch had been refused, "feed-forward width 2,048 does not
    split 72 ways"); without the copies it is refused, naming them."""
    kw = dict(prompt_tokens=1000, output_tokens=1000, gpus=72, batch=4096)
    plan = api.export("DeepSeek-R1", "GB200-NVL72", engine="trtllm", redundant_experts=32, **kw)
    (w,) = plan.workers
    assert (w.tensor, w.attention_dp, w.expert) == (72, 72, 72)
    config = yaml.safe_load(api.launch_files(plan)["trtllm-server.yaml"])
    assert config["moe_config"]["load_balancer"]["num_slots"] == 288
    with pytest.raises(InfeasibleError, match=r"--redundant-experts 32 \(288 slots\)"):
        api.export("DeepSeek-R1", "GB200-NVL72", engine="trtllm", **kw)


def test_trtllm_balances_gpt_oss_experts_as_its_1_2_line_lists_them():
    """TensorRT-LLM 1.2's moe_model_arch_list holds GptOssForCausalLM (NVIDIA/TensorRT-LLM PR
    #8886, "Enable EPLB for trtllm-gen and cutlass backend", in the 1.2 release notes), so
    gpt-oss-120b's copies are launched on its load balancer; they had been refused as an
    architecture the balancer does not run."""
    kw = dict(prompt_tokens=1000, output_tokens=100, gpus=4, batch=512, redundant_experts=4)
    plan = api.export("gpt-oss-120b", "B200", engine="trtllm", **kw)
    (w,) = plan.workers
    assert (w.expert, w.attention_dp) == (4, 4)
    config = yaml.safe_load(api.launch_files(plan)["trtllm-server.yaml"])
    assert config["moe_config"]["load_balancer"] == {"num_slots": 132, "layer_updates_per_iter": 1}


def test_trtllm_runs_mxfp4_experts_on_the_backend_the_plan_is_priced_with():
    """gpt-oss's MXFP4 experts are priced with the kernels AIConfigurator times them on
    (Triton on Hopper, TRTLLM-gen on Blackwell), the backends TensorRT-LLM 1.2.1's gpt-oss
    guide sets; left out, 1.2.1 runs its default CUTLASS. The worker's extra options name
    them, values MoeConfig.backend takes; FP8 and 16-bit experts keep the default (no
    moe_config); a balancer beside TRITON, which runs none, is refused naming SGLang."""
    values = record("trtllm-1.2.1.json")["llm_api"]["values"]["MoeConfig.backend"]
    kw = dict(engine="trtllm", prompt_tokens=1000, output_tokens=500, gpus=1, batch=64)
    for gpu, backend in (("H200", "TRITON"), ("H100", "TRITON"), ("B200", "TRTLLM")):
        plan = api.export("gpt-oss-120b", gpu, **kw)
        options = yaml.safe_load(api.launch_files(plan)["trtllm-server.yaml"])
        assert options["moe_config"] == {"backend": backend} and backend in values, gpu
    for model, extra in (("DeepSeek-V3", dict(gpus=8, weight_bits=8)), ("Llama 3.1 8B", {})):
        plan = api.export(model, "H200", **(kw | extra))
        assert "moe_config" not in ec.trtllm_options(plan, plan.workers[0]), model
    with pytest.raises(SpecError, match=r"TRITON MoE backend.*no load balancer.*for sglang"):
        api.export("gpt-oss-120b", "H200", **(kw | dict(gpus=4, batch=512, redundant_experts=4)))
