"""A dense model's layout whose attention the plan runs on fewer GPUs than its tensor group
(its KV heads do not divide the group) is refused by every engine's export: no shipped engine
runs attention data parallelism for a dense model (SGLang 0.5.3's llama.py splits attention
over the whole group, so ``--enable-dp-attention`` would fail at start)."""

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
def test_a_dense_layout_with_attention_over_part_of_its_group_is_refused(engine, tmp_path):
    with pytest.raises(SpecError) as err:
        api.export(**LLAMA_405B, engine=engine)
    text = str(err.value)
    assert "TP16 cannot be launched as planned" in text, text
    assert "attends over 8 of each 16 GPUs" in text and "8 KV heads" in text, text
    assert "runs attention data parallelism for no dense model" in text, text
    assert "experts" not in text, text  # the model has none (vLLM's message named them)


@pytest.mark.parametrize("engine", ENGINES)
def test_seven_gpus_of_a_dense_llama_exit_2_naming_the_gpus(engine, tmp_path):
    out = tmp_path / "plan"
    r = CliRunner().invoke(
        main,
        ["export", "Llama 3.3 70B", "-H", "H100", "--engine", engine, "--gpus", "7",
         "--batch", "8", "--prompt-tokens", "2000", "--output-tokens", "500", "-q",
         "--out", str(out)],
    )  # fmt: skip
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: --gpus: TP7 cannot be launched as planned"), r.output
    assert "divides the 8 KV heads" in r.output and "Traceback" not in r.output, r.output
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
