"""A dense model's tensor group wider than its KV heads attends over the whole group with each
KV head copied, as every engine runs it; a group its query heads do not split over has no layout
an engine launches; and a layout whose attention a preset without the engine's layouts runs on
fewer GPUs than its tensor group is refused by every engine's export: no shipped engine runs
attention data parallelism for a dense model (SGLang 0.5.3's llama.py splits attention over the
whole group, so ``--enable-dp-attention`` would fail at start)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from inference_econ import api
from inference_econ.cli import main
from inference_econ.errors import SpecError

ENGINES = ("vllm", "sglang", "trtllm")
#: Llama 3.1 405B on 16 GPUs in one tensor group: its 8 KV heads allow attention over 8 of them.
LLAMA_405B = dict(
    model="Llama 3.1 405B", hardware="H100", gpus=16, batch=64, prompt_tokens=2000,
    output_tokens=500, pipeline=False, weight_bits=8, checkpoint="my-org/llama-405b-fp8",
)  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
def test_a_dense_group_wider_than_its_kv_heads_attends_over_all_of_it(engine):
    """Llama 3.1 405B's 8 KV heads on one tensor group of 16 GPUs: attention over all 16 (128
    query heads, 8 a GPU), each KV head on two GPUs with its cache copied (docs/model.md §B13),
    launched as TP16 over two nodes; it had been planned as two attention ranks of 8, which no
    engine runs for a dense model."""
    plan = api.export(**LLAMA_405B, engine=engine)
    w = plan.workers[0]
    assert (w.tensor, w.attention_dp) == (16, 1)
    script = api.launch_files(plan)["launch.sh"]
    flag = {"vllm": "--tensor-parallel-size 16", "sglang": "--tp-size 16", "trtllm": "--tp_size 16"}
    assert flag[engine] in script
    assert "dp-attention" not in script and "enable_attention_dp: true" not in script


@pytest.mark.parametrize("engine", ENGINES)
def test_seven_gpus_of_a_dense_llama_are_infeasible_naming_the_heads(engine, tmp_path):
    """Llama 3.3 70B's 64 query heads do not split 7 ways: no engine launches TP7 (it had been
    planned as seven attention ranks of one GPU). Valid input with nothing feasible: exit 1
    with one line (docs/errors.md)."""
    out = tmp_path / "plan"
    r = CliRunner().invoke(
        main,
        ["export", "Llama 3.3 70B", "-H", "H100", "--engine", engine, "--gpus", "7",
         "--batch", "8", "--prompt-tokens", "2000", "--output-tokens", "500", "-q",
         "--out", str(out)],
    )  # fmt: skip
    assert r.exit_code == 1, r.output
    assert r.output.startswith("error: no whole layout of 7 GPUs splits Llama 3.3 70B"), r.output
    assert "the attention heads (the query heads split by it" in r.output, r.output
    assert "4, 5, 8 or 10 GPUs do" in r.output and "Traceback" not in r.output, r.output
    assert not out.exists()  # nothing written


def test_a_moe_model_keeps_its_attention_data_parallel_ranks():
    plan = api.export(
        "DeepSeek-V3", "H200", engine="sglang", gpus=8, batch=256, prompt_tokens=2000,
        output_tokens=500,
    )  # fmt: skip
    w = plan.workers[0]
    assert (w.tensor, w.attention_dp) == (8, 4)


def test_a_preset_without_the_engines_layouts_is_told_to_plan_under_it():
    """The paper preset runs every layout: Llama 3 8B on 8 H200 at batch 1 attends over 4 of
    each 8 GPUs, which SGLang had been launched with as ``--enable-dp-attention --dp-size 2``."""
    with pytest.raises(SpecError) as err:
        api.export(
            "Llama 3 8B", "H200", engine="sglang", assumptions="paper", gpus=8, batch=1,
            prompt_tokens=16, output_tokens=2,
        )  # fmt: skip
    assert err.value.field == "--gpus"
    assert "attends over 4 of each 8 GPUs (2 attention data-parallel ranks" in str(err.value)
    assert "--assumptions achievable" in str(err.value)
