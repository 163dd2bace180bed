"""Redundant experts (EPLB, ``--redundant-experts``): the copies' memory, the slots a step reads
and the busiest expert-parallel rank's load on both clocks (docs/model-part-f.md §F7)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.errors import SpecError
from inference_econ.model import kernel_prices as kp
from inference_econ.model.efficiency import expert_imbalance
from inference_econ.model.kernel_clock import KernelClock
from inference_econ.model.latency import StepModel
from inference_econ.model.moe import (
    EPLB_RANK_LOAD,
    MLA_ROUTING,
    eplb_routing_factor,
    moe_routing_factor,
    slots_read_share,
)
from inference_econ.model.operations import step_operations
from inference_econ.model.workload import compile_workload
from inference_econ.serving.setting import make_setting
from inference_econ.settings import option
from inference_econ.specs.architecture import MOST_REDUNDANT_EXPERTS

GB200 = ie.load_hardware("GB200-NVL72")


def _deepseek(copies: int, assumptions):
    """DeepSeek-R1 at NVFP4 with ``copies`` redundant experts a MoE layer."""
    arch = ie.load_model("DeepSeek-R1").with_precision(weight_bits=4)
    return compile_workload(arch.with_redundant_experts(copies), assumptions)


def test_copies_are_resident_weights_at_the_experts_bytes():
    # 58 MoE layers of 256 experts, each 3 matrices of 7,168 x 2,048: a copy in every layer is
    # 58 x 3 x 7,168 x 2,048 = 2,554,331,136 parameters, at NVFP4's 4.5 bits (its block scales
    # under the achievable preset's formats) 1.437 GB
    a = ie.preset("achievable")
    none, some = _deepseek(0, a), _deepseek(32, a)
    per_copy = 58 * 3 * 7168 * 2048
    assert some.redundant_expert_params == 32 * per_copy
    extra = some.weights_total_bytes - none.weights_total_bytes
    assert extra == pytest.approx(32 * per_copy * 4.5 / 8, rel=1e-12)
    assert extra / 32 == pytest.approx(1.437e9, rel=1e-3)
    assert some.total_params == none.total_params  # the model's parameters stay its own


def test_slots_read_grow_from_none_at_one_token_to_all_the_slots():
    tokens = np.array([1.0, 4.0, 64.0, 1024.0, 1e6])
    share = slots_read_share(256, 8, 288, tokens)
    assert share[0] == pytest.approx(1.0, rel=1e-12)  # one token reads its 8 experts, once
    assert share[-1] == pytest.approx(288 / 256, rel=1e-9)  # every slot hit
    assert np.all(np.diff(share) > 0.0)
    assert np.all(slots_read_share(256, 8, 256, tokens) == pytest.approx(1.0, rel=1e-12))


def test_the_busiest_rank_carries_the_measured_load_once_tokens_are_many():
    # 8,192 tokens over EP 32: without copies the tables' power law (DeepSeek's alpha 1.01) loads
    # the busiest rank 1.3-1.6 x balanced on Blackwell; with them the charge's binomial spread
    # times the capped factor is TensorRT-LLM's measured 1.11
    many, few = 8192.0, 16.0
    factor = moe_routing_factor(GB200, MLA_ROUTING, 256, 32, many)
    spread = expert_imbalance(many, 8, 256, 32)
    assert 1.3 < factor < 1.6 and 1.0 < spread < 1.1
    assert spread * eplb_routing_factor(factor, spread) == pytest.approx(EPLB_RANK_LOAD)
    # a few tokens hit fewer experts than balanced routing reads: copies keep that (< 1)
    low = moe_routing_factor(GB200, MLA_ROUTING, 256, 32, few)
    assert low < 1.0
    assert eplb_routing_factor(low, expert_imbalance(few, 8, 256, 32)) == low


def _moe_seconds(copies: int, requests_per_rank: float) -> float:
    """The routed experts' seconds of one decode step of DeepSeek-R1 (NVFP4) on 32 GB200 with
    attention DP over all 32 (experts EP 32), ``requests_per_rank`` at 2,000 cached positions."""
    a = ie.preset("achievable").replace(kernel_tables=True, attention_data_parallel=True)
    model = StepModel(_deepseek(copies, a), GB200, a)
    step = step_operations(model, 32, 32 * requests_per_rank, 1, 2000, 1, 32, False)
    seconds = KernelClock().price(step)
    return float(sum(s for op, s in zip(step.operations, seconds) if op.kind == "moe"))


def test_the_kernel_clock_reads_the_balanced_slots_at_the_measured_load():
    # 256 requests a rank: 8,192 tokens over 32 ranks. With 32 copies the routed experts cost
    # the smaller of the tables' DeepSeek routing over 256 experts and 1.11 x balanced routing
    # over 288, here the latter (the power law loads one rank ~1.4 x)
    per_layer = {
        r: float(kp.moe_s(GB200, "nvfp4", 8192, 7168, 2048, 8, 256 + r, 1, 32, how))
        for r, how in ((0, MLA_ROUTING), (32, "balanced"))
    }
    assert per_layer[32] * EPLB_RANK_LOAD < per_layer[0]
    without, with_copies = _moe_seconds(0, 256), _moe_seconds(32, 256)
    assert without == pytest.approx(58 * per_layer[0], rel=1e-9)
    assert with_copies == pytest.approx(58 * EPLB_RANK_LOAD * per_layer[32], rel=1e-9)
    # at 4 requests a rank the power law's few experts hit are cheaper: copies change nothing
    assert _moe_seconds(32, 4) == pytest.approx(_moe_seconds(0, 4), rel=1e-12)


def test_copies_need_routed_experts_and_a_whole_count():
    with pytest.raises(SpecError, match="no routed experts"):
        ie.load_model("Llama 3 70B").with_redundant_experts(8)
    with pytest.raises(SpecError, match="whole number"):
        ie.load_model("DeepSeek-R1").with_redundant_experts(-1)
    setting = make_setting("DeepSeek-R1", "GB200-NVL72", redundant_experts=32)
    assert setting.model.redundant_experts == 32
    assert setting.metadata()["redundant_experts"] == 32
    result = CliRunner().invoke(
        main,
        [
            "point",
            "Llama 3 70B",
            "-H",
            "H100",
            "--gpus",
            "8",
            "--batch",
            "8",
            "--redundant-experts",
            "8",
        ],
    )
    assert result.exit_code == 2
    assert "--redundant-experts" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_measured_row_states_its_slots_or_its_copies(tmp_path):
    from inference_econ.measured.reading import load_measured

    head = "model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,output_len"
    head += ",metric,value,unit,notes\n"
    row = "DeepSeek-R1,FP4,GB200 NVL72,16,DEP16,max load,1024,1024,throughput_per_gpu,5000,"
    row += "output tok/s per GPU,TensorRT-LLM 1.2; "  # 288 and 272 slots both split over 16
    notes = (
        "moe load balancer num_slots: 288",
        "--ep-num-redundant-experts 16",
        "EPLB 200",
        "num_slots 288; 16 redundant experts",
    )
    dense = "Llama 3.1 70B,FP8,H100,8,TP8,max load,1024,1024,throughput_per_gpu,3000,"
    dense += "output tok/s per GPU,TensorRT-LLM 1.2; 32 redundant experts\n"
    path = tmp_path / "rows.csv"
    path.write_text(head + "".join(row + n + "\n" for n in notes) + dense)
    rows = load_measured(path)
    assert [r.arch.redundant_experts for r in rows[:2]] == [32, 16]
    assert rows[2].status.startswith("unresolved: notes: states 200 expert slots, fewer than")
    assert "twice" in rows[3].status and "unresolved" in rows[3].status
    assert rows[4].status == "unresolved: notes: states redundant experts (EPLB) of a dense model"


def test_whole_layouts_split_experts_at_the_common_divisor():
    from inference_econ.model.step_calls import whole_expert_degrees

    assert whole_expert_degrees([128], 1) == {1}
    assert whole_expert_degrees([128], 4) == {4}
    assert whole_expert_degrees([128], 3) == {1}  # gcd(3, 128): the experts tensor-split
    assert whole_expert_degrees([1, 256, 256], 8) == {8}  # DeepSeek's dense layers left out
    assert whole_expert_degrees([1], 8) == set()  # a dense model splits no experts
    # redundant copies widen the split where the slots divide the group: 288 slots over 72
    # GPUs (an NVL72 rack) split at EP72, not gcd(72, 256) = 8; copies whose slots split no
    # wider (288 over 64, Mixtral's 9 over 8) leave the experts' own split
    assert whole_expert_degrees([256], 72) == {8}
    assert whole_expert_degrees([256], 72, 32) == {72}
    assert whole_expert_degrees([256], 64, 32) == {64} and whole_expert_degrees([8], 8, 1) == {8}


def test_a_rack_of_72_gpus_splits_deepseeks_experts_on_288_slots():
    """DeepSeek-R1 (NVFP4) on 72 GB200 as whole layouts: its 256 experts alone split over
    gcd(72, 256) = 8 ranks, tensor-split nine ways, which no expert width divides: refused, and
    the refusal names the copies that split them over all 72 (32, 288 slots); with them the
    point runs at EP72."""
    args = ["point", "DeepSeek-R1", "-H", "GB200-NVL72", "--gpus", "72", "--batch", "8192",
            "--discrete", "--assumptions", "achievable", "--weight-bits", "4"]  # fmt: skip
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code != 0 and "no whole layout of 72 GPUs" in refused.output
    assert "--redundant-experts 32 (288 slots)" in refused.output
    kw = dict(gpus=72, batch=8192, assumptions="achievable", discrete=True, weight_bits=4)
    point = ie.point("DeepSeek-R1", "GB200-NVL72", redundant_experts=32, **kw)
    assert point.expert_degree == 72


def test_a_refused_whole_layout_names_copies_only_where_they_give_one():
    """The refusal of a count of GPUs names redundant copies only where their slots give the
    count a whole layout: 16 copies held on 72 GPUs (272 slots) are named as not splitting and
    32 as the copies that do; on 70 GPUs the 24 copies that split the experts (280 slots) are
    not named, as no whole layout of 70 GPUs exists with them either (refused again)."""

    def refusal(gpus, copies):
        args = ["point", "DeepSeek-R1", "-H", "GB200-NVL72", "--gpus", str(gpus), "--batch",
                "2048", "--discrete", "--redundant-experts", str(copies)]  # fmt: skip
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1 and f"no whole layout of {gpus} GPUs" in result.output
        return result.output

    held = refusal(72, 16)
    assert "256 experts and 16 redundant copies (272 slots) do not split over all 72" in held
    assert "--redundant-experts 32 (288 slots) does" in held
    for copies in (0, 24):
        assert "--redundant-experts" not in refusal(70, copies)


def test_an_expert_degree_that_splits_no_experts_evenly_runs_on_the_fewest_slots(tmp_path):
    """DeepSeek-R1's 256 experts over EP72 ("WideEP 72" on a GB200 NVL72 rack) run only on
    balanced slots under TensorRT-LLM and SGLang (num_slots % ep_size): a row that states
    none is read with the fewest, 288 slots (32 copies), says so, and is predicted as the
    same row stating them; DEP8 needs none, and vLLM, which splits experts unevenly, none."""
    from inference_econ.measured import comparison
    from inference_econ.measured.expert_slots import needed_copies
    from inference_econ.measured.layouts import Layout
    from inference_econ.measured.reading import load_measured

    wide = Layout(72, expert=72, attention_ranks=72)
    assert [needed_copies(256, Layout(ep, expert=ep), "trtllm") for ep in (8, 72)] == [0, 32]
    assert needed_copies(256, wide, None) == 32
    with pytest.raises(SpecError, match="unevenly, as vLLM runs it .3 or 4 a rank."):
        needed_copies(256, wide, "vllm")
    assert needed_copies(256, Layout(8, expert=8), "vllm") == 0
    assert needed_copies(256, None, "trtllm") == 0 and needed_copies(1, wide, "trtllm") == 0
    assert needed_copies(256, Layout(72, attention_ranks=72), "trtllm") == 0  # no EP stated
    head = "model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,output_len"
    head += ",metric,value,unit,notes\n"
    row = "DeepSeek-R1,FP4,GB200 NVL72,{n},{layout},max load,1024,1024,throughput_per_gpu,5000,"
    row += "output tok/s per GPU,TensorRT-LLM 1.2{notes}\n"
    lines = [
        row.format(n=72, layout="WideEP 72", notes=""),
        row.format(n=72, layout="WideEP 72", notes="; num_slots: 288"),
        row.format(n=8, layout="DEP8", notes=""),
    ]
    path = tmp_path / "rows.csv"
    path.write_text(head + "".join(lines))
    rows = load_measured(path)
    assert [r.arch.redundant_experts for r in rows] == [32, 32, 0]
    assert [r.copies_needed for r in rows] == [True, False, False]
    predicted, _, status, engines = comparison.predict_rows(rows[:2], "achievable")
    assert list(status) == ["ok", "ok"] and predicted[0] == predicted[1]
    assert "32 redundant experts (EPLB): the fewest for 288 slots" in engines[0]


def test_a_row_stating_slots_its_expert_degree_does_not_split_is_unresolved(tmp_path):
    """A row of DeepSeek-R1 at "WideEP 72" stating 272 slots (16 copies) or 256 (none) states
    what TensorRT-LLM does not launch (num_slots % ep_size): it is refused with the fewest
    slots that split (288), where it had been priced as the experts' own EP8, tensor-split
    nine ways, under an EP72 label; 288 slots are read, and vLLM, which splits experts
    unevenly, takes 272."""
    from inference_econ.measured.reading import load_measured

    head = "model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,output_len"
    head += ",metric,value,unit,notes\n"
    row = "DeepSeek-R1,FP4,GB200 NVL72,72,WideEP 72,max load,1024,1024,throughput_per_gpu,5000,"
    row += "output tok/s per GPU,{engine}; num_slots: {slots}\n"
    lines = [row.format(engine="TensorRT-LLM 1.2", slots=n) for n in (272, 256, 288)]
    path = tmp_path / "rows.csv"
    path.write_text(head + "".join(lines) + row.format(engine="vLLM 0.11", slots=272))
    rows = load_measured(path)
    for r, slots in zip(rows, (272, 256)):
        assert r.status.startswith(
            f"unresolved: notes: states {slots} expert slots ({slots - 256} redundant experts), "
            "which its expert degree 72 does not split evenly"
        )
        assert "288 (32 redundant experts) is the fewest" in r.status
    assert [r.arch.redundant_experts for r in rows[2:]] == [32, 16]


#: A light load of Qwen3-30B-A3B (128 experts) with 16 redundant experts a layer.
COPIES_LOAD = dict(
    assumptions="achievable",
    arrival_rate_per_s=2.0,
    input_lengths="500",
    output_lengths="50",
    redundant_experts=16,
)


def test_a_run_says_when_its_layout_leaves_the_copies_idle():
    # Qwen3-30B-A3B's 128 experts: on one GPU nothing is split, so 16 copies balance nothing
    # and the run says so; on 4 GPUs the experts are split EP4 and the note is absent
    one = ie.simulate_load("Qwen3-30B-A3B", "H200-SXM", gpus=1, requests=40, **COPIES_LOAD)
    four = ie.simulate_load("Qwen3-30B-A3B", "H200-SXM", gpus=4, requests=40, **COPIES_LOAD)
    idle = [n for n in one.notes if n.startswith("redundant experts: 16 copies")]
    assert len(idle) == 1 and "TP1" in idle[0] and "export refuses" in idle[0]
    assert not [n for n in four.notes if n.startswith("redundant experts")]


def test_a_load_frontier_names_the_layouts_whose_copies_are_idle():
    front = ie.load_frontier(
        "Qwen3-30B-A3B", "H200-SXM", sizes=[1], requests=100, slo_tpot_p99_s=0.2, **COPIES_LOAD
    )
    assert front.metadata()["redundant_experts_balance_nothing_on"] == (
        "1 GPU: TP1 (attention TP1), PP1"
    )


@pytest.mark.parametrize(
    "count", [float("nan"), float("inf"), "nan", "32", None, True, [32], 4097, 10**30, 1e300]
)
def test_copies_outside_whole_numbers_up_to_the_bound_are_a_spec_error(count):
    # the API's Architecture is reached without the settings table: its own check refuses
    # what int() would raise on (nan, inf, None) and what would overflow a float (10**30)
    with pytest.raises(SpecError, match="whole number from 0 to 4096"):
        ie.load_model("DeepSeek-R1").with_redundant_experts(count)
    assert ie.load_model("DeepSeek-R1").with_redundant_experts(4096).redundant_experts == 4096
    assert option("redundant_experts").maximum == MOST_REDUNDANT_EXPERTS == 4096


def test_a_measured_count_is_read_whole_or_the_row_is_unresolved(tmp_path):
    from inference_econ.measured.reading import load_measured

    head = "model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,output_len"
    head += ",metric,value,unit,notes\n"
    row = "DeepSeek-R1,FP4,GB200 NVL72,32,DEP32,max load,1024,1024,throughput_per_gpu,5000,"
    row += 'output tok/s per GPU,"TensorRT-LLM 1.2; '
    notes = {
        "-32 redundant experts": "redundant experts '-32', not a whole number",
        "32.5 redundant experts": "redundant experts '32.5', not a whole number",
        "--ep-num-redundant-experts -32": "redundant experts '-32', not a whole number",
        "num_slots: -288": "expert slots '-288', not a whole number",
        "num_slots: 288.5": "expert slots '288.5', not a whole number",
        "num_slots: 2.88e2": "expert slots '2.88e2', not a whole number",
        "99999999999999999999 redundant experts": "more than the 4,096 a layer is read with",
        "EPLB 4353": "more than the 4,352 a layer is read with",
    }
    path = tmp_path / "rows.csv"
    path.write_text(head + "".join(f'{row}{n}"\n' for n in (*notes, "1,024 expert slots")))
    rows = load_measured(path)
    for r, said in zip(rows, notes.values()):
        assert r.status.startswith("unresolved: notes: states ") and said in r.status, r.status
    assert rows[-1].arch.redundant_experts == 1024 - 256  # thousands separated, read whole


def test_copies_balance_only_where_the_slots_split_evenly_over_the_ranks():
    from inference_econ.model.moe import balanced_slots

    # 256 experts over EP 32: 288 slots (9 a rank) balance, 257 do not; EP 1 never does
    assert balanced_slots(256, 32, np.array([32.0, 1.0])).tolist() == [True, False]
    assert not balanced_slots(256, 1, 8.0)
    # Mixtral 8x7B on 8 H100 (EP8): one copy (9 slots) is run by no engine's balancer, so it
    # prices as none on both clocks instead of as a balanced layout
    for clock in ("engine", "kernel"):
        kw = dict(gpus=8, batch=256, assumptions="achievable", clock=clock, discrete=True)
        none = ie.point("Mixtral 8x7B", "H100-SXM", redundant_experts=0, **kw)
        one = ie.point("Mixtral 8x7B", "H100-SXM", redundant_experts=1, **kw)
        assert one.expert_degree == 8 and one.tokens_per_s == pytest.approx(none.tokens_per_s)


def test_copies_a_layout_cannot_balance_are_said_to_take_memory_only():
    """DeepSeek-R1's 256 experts with 30 copies on 8 H200 (EP8): 286 slots do not split over
    8 ranks, so the model prices the copies as memory only (the point's speed is the same as
    with none) and the point says so, with the nearest counts that split (24, 32); 32 copies
    balance and say nothing. A tensor-parallel layout (EP1) balances none."""
    from click.testing import CliRunner

    from inference_econ.cli import main
    from inference_econ.model.moe import redundant_note

    assert redundant_note(256, 30, [8.0]).endswith("286 expert slots do not split evenly over "
                                                   "EP8, as every engine's balancer needs; give "
                                                   "24 or 32")  # fmt: skip
    assert redundant_note(256, 32, [8.0]) is None and redundant_note(256, 0, [8.0]) is None
    assert "no expert parallelism" in redundant_note(256, 32, [1.0, 8.0])
    args = ["point", "DeepSeek-R1", "-H", "H200", "--gpus", "8", "--batch", "256", "--discrete",
            "--assumptions", "achievable", "--engine", "trtllm", "--format", "json"]  # fmt: skip
    out = {r: CliRunner().invoke(main, [*args, "--redundant-experts", str(r)]) for r in (0, 30, 32)}
    rows = {r: json.loads(o.output) for r, o in out.items()}
    speed = {r: rows[r]["rows"][0]["tokens_per_s"] for r in rows}
    assert speed[30] == pytest.approx(speed[0], rel=1e-9) and speed[32] != speed[0]
    said = {r: [n for n in rows[r]["notes"] if "redundant experts" in n] for r in rows}
    assert len(said[30]) == 1 and "give 24 or 32" in said[30][0]
    assert said[0] == said[32] == []
