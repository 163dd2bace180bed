"""How an engine's launch moves a MoE's tokens (docs/model-part-f.md §F7): SGLang's and vLLM's
default backends all-gather them under attention data parallelism and exchange nothing
without it; ``--deepep`` (SGLang's --moe-a2a-backend deepep, vLLM's DeepEP backends) prices
and launches DeepEP's all-to-all; a measured row runs the backend it states."""

from __future__ import annotations

import pandas as pd
import pytest

import inference_econ as ie
from inference_econ import api
from inference_econ.errors import SpecError
from inference_econ.export import bundle
from inference_econ.measured.overlap_words import exchange_of
from inference_econ.model.assumptions import preset
from inference_econ.serving.setting import make_setting

SGLANG = dict(assumptions="achievable", engine="sglang")


def _exchange(setting, gpus: int, batch: int) -> dict[str, float]:
    """The expert-exchange rows of one decode step's operation list (seconds by name)."""
    ops = api.operations(setting, gpus, batch, discrete=True).set_index("operation")
    return {
        name: float(row.time_s)
        for name, row in ops.iterrows()
        if str(name).startswith(("expert dispatch", "expert combine"))
    }


def test_sglangs_default_launch_gathers_under_attention_dp_and_deepep_exchanges():
    # DeepSeek-V3 FP8 on 8 H200, batch 256 as DP8 attention (32 sequences a rank): SGLang's
    # default backend ("none") all-gathers every rank's BF16 hidden states (7,168 x 2 bytes
    # a token) and reduce-scatters the output; --deepep dispatches each token's copies in FP8
    # with a 4-byte scale per 128 values, a shorter dispatch than the gather
    plain = make_setting("DeepSeek-V3", "H200-SXM", weight_bits=8, **SGLANG)
    deepep = make_setting("DeepSeek-V3", "H200-SXM", weight_bits=8, deepep=True, **SGLANG)
    gathered = _exchange(plain, 8, 256)
    exchanged = _exchange(deepep, 8, 256)
    assert set(gathered) == {"expert dispatch (all-gather)", "expert combine (reduce-scatter)"}
    assert set(exchanged) == {"expert dispatch", "expert combine"}
    assert exchanged["expert dispatch"] < 0.6 * gathered["expert dispatch (all-gather)"]
    # the plain point's layout is the default launch's: no DeepEP flag in its export
    plan = api.export("DeepSeek-V3", "H200", weight_bits=8, engine="sglang", gpus=8, batch=256,
                      prompt_tokens=1000, output_tokens=100)  # fmt: skip
    assert "--moe-a2a-backend" not in bundle.render(plan)["launch.sh"]


def test_sglangs_default_launch_under_tensor_parallel_attention_only_reduces():
    # Qwen3-235B-A22B on 8 H200 as TEP8 (AIConfigurator's SGLang runs launch it so, backend
    # "none"): every rank holds every token, the MoE's output is all-reduced over the eight
    # ranks, and no token is dispatched
    setting = make_setting("Qwen3-235B-A22B", "H200-SXM", weight_bits=8, **SGLANG)
    from inference_econ.model.latency import StepModel
    from inference_econ.model.workload import compile_workload

    a = setting.assumptions.replace(attention_data_parallel=False)
    model = StepModel(compile_workload(setting.model, a), setting.gpu, a)
    part = model.pipeline_part(8.0, 64.0, 1.0, 0.0, 1.0)
    names = [c.what for c in model.attention_calls(part, 1.0, False) + part.shared_calls]
    assert not any(n.startswith("expert dispatch") for n in names), names
    assert "all-reduce (expert combine)" in names, names


@pytest.mark.parametrize(
    "notes, kind",
    [
        ("moe_a2a_backend: mori", "all_to_all"),
        ("--moe-a2a-backend deepep --enable-dp-attention", "deepep"),
        ("--moe-a2a-backend none", "gather"),
        ("VLLM_ALL2ALL_BACKEND=deepep_low_latency", "deepep"),
        ("--all2all-backend allgather_reducescatter", "gather"),
        ("all2all_backend: pplx", "all_to_all"),
        ("SGLang 0.5.3, TP8", None),
        # a library in words, or SGLang 0.4's switch; negated it says nothing of what ran
        ("EP over DeepEP (low-latency kernels in decode)", "deepep"),
        ("--enable-deepep-moe --deepep-mode auto", "deepep"),
        ("MoRI-EP dispatch, FP8 combine", "all_to_all"),
        ("without DeepEP", None),
        ("DeepEP disabled", None),
        ("MORI_SHMEM_MODE=ISOLATION", None),
    ],
)
def test_a_measured_row_states_its_exchange_backend(notes, kind):
    assert exchange_of("", None, notes, "a row") == kind


def test_an_exchange_backend_not_known_or_two_of_different_kinds_is_the_rows_error():
    with pytest.raises(SpecError, match="'nvshmem' is not read.*give one of"):
        exchange_of("", None, "--moe-a2a-backend nvshmem", "a row")
    with pytest.raises(SpecError, match="2 kinds.*keep the one it ran"):
        exchange_of("", None, "moe_a2a_backend deepep; moe_a2a_backend none", "a row")


def test_a_measured_row_runs_the_exchange_it_states(tmp_path):
    # AIConfigurator's first SGLang DeepSeek run (8 H200, mean TPOT) read at 256 clients as
    # DP8 attention: stated with DeepEP it is priced as --deepep prices it, stated with the
    # default backend as the plain profile; under TensorRT-LLM, whose own strategy picks its
    # exchange by layout, the statement leaves the row as it is
    runs = pd.read_csv("tests/data/aic_silicon_runs.csv.gz")
    first = runs[runs.engine.str.contains("SGLang") & runs.model.str.contains("DeepSeek")]
    rows = first[first.metric == "mean_TPOT"].iloc[[0, 0, 0, 0]].copy()
    rows["parallelism"], rows["batch_or_concurrency"] = "TP8 attn-DP EP", "256"
    rows["notes"] = [
        "--moe-a2a-backend deepep",
        "--moe-a2a-backend none",
        "",
        "moe_a2a_backend deepep",
    ]
    rows["engine"] = ["SGLang 0.5.9"] * 3 + ["TensorRT-LLM 1.2"]
    plain = rows.iloc[[3]].assign(notes="")
    path = tmp_path / "rows.csv"
    pd.concat([rows, plain]).to_csv(path, index=False)
    t = api.compare_measured(path, preset("achievable")).table
    assert t["engine"].iloc[0] == "sglang, expert exchange by DeepEP as stated"
    # DeepEP's runs are a class of their own, as a plan with --deepep is ("sglang+DeepEP"):
    # no residual of the default launch sizes their intervals
    from inference_econ.measured.intervals import row_class
    from inference_econ.measured.reading import load_measured

    engines = [row_class(r, "TPOT").engine for r in load_measured(path)[:3]]
    assert engines == ["sglang+DeepEP", "sglang", "sglang"]
    assert t["engine"].iloc[1] == "sglang, expert exchange by all-gather as stated"
    assert t["predicted"].iloc[1] == pytest.approx(t["predicted"].iloc[2], rel=1e-12)
    assert t["predicted"].iloc[0] < t["predicted"].iloc[1]  # a shorter step
    assert t["status"].iloc[3] == "ok" and "expert exchange" not in t["engine"].iloc[3]
    assert t["predicted"].iloc[3] == pytest.approx(t["predicted"].iloc[4], rel=1e-12)


def test_both_deepep_options_refused_for_one_reason_name_both():
    with pytest.raises(
        SpecError, match=r"--two-batch-overlap.*\(drop --two-batch-overlap and --deepep\)"
    ):
        ie.point("DeepSeek-V3", "MI300X", gpus=8, batch=64, assumptions="achievable",
                 engine="sglang", deepep=True, two_batch_overlap=True)  # fmt: skip


def test_deepep_is_refused_where_no_engine_runs_it():
    for kw, match in (
        (dict(engine="trtllm"), "is not run by the trtllm engine profile"),
        (dict(engine="sglang", model="Llama-3.1-8B"), "has no routed experts"),
        (dict(engine="sglang", hardware="MI300X"), "NVLink switch"),
    ):
        model = kw.pop("model", "DeepSeek-V3")
        hardware = kw.pop("hardware", "H200")
        with pytest.raises(SpecError, match=f"--deepep.*DeepEP's exchange {match}|{match}"):
            ie.point(model, hardware, gpus=8, batch=64, assumptions="achievable", deepep=True, **kw)


def test_an_export_over_deepep_launches_it_where_the_engine_runs_it():
    # SGLang 0.5.3 runs DeepEP in its DeepEP MoE layer: FP8 experts, Hopper or later, the
    # expert-parallel size the tensor size; vLLM 0.11 selects it in the environment
    plan = api.export("DeepSeek-V3", "H200", weight_bits=8, engine="sglang", gpus=8, batch=256,
                      prompt_tokens=1000, output_tokens=100, deepep=True)  # fmt: skip
    text = bundle.render(plan)["launch.sh"]
    assert "--ep-size 8 --moe-a2a-backend deepep" in text
    assert "--enable-two-batch-overlap" not in text
    with pytest.raises(SpecError, match="--deepep.*FP8 experts only, not the plan's 16-bit"):
        api.export("Qwen3-235B-A22B", "H200", weight_bits=16, engine="sglang", gpus=8,
                   batch=256, prompt_tokens=1000, output_tokens=100, deepep=True)  # fmt: skip
    vllm = api.export("DeepSeek-V3", "H200", weight_bits=8, engine="vllm", gpus=8, batch=256,
                      prompt_tokens=1000, output_tokens=100, deepep=True)  # fmt: skip
    (w,) = vllm.workers
    launch = bundle.render(vllm)["launch.sh"]
    assert w.attention_dp > 1  # its DeepEP kernels run over data-parallel ranks only
    assert "VLLM_ALL2ALL_BACKEND=deepep_low_latency vllm serve" in launch
    assert "--enable-dbo" not in launch
