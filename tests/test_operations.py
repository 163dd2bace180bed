"""A step as a list of operations and the two clocks that price it (docs/model.md "A step as
operations"): the same list under both, each clock's total the step model's latency."""

from typing import get_args

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.model.breakdown import ADDITIVE_PARTS
from inference_econ.model.clocks import EngineClock, RooflineClock
from inference_econ.model.efficiency import host_overhead_s
from inference_econ.model.kernel_clock import clock_of
from inference_econ.model.latency import StepModel, prefill_step_model
from inference_econ.model.operations import OperationClass, step_operations
from inference_econ.model.workload import compile_workload

#: (model, GPU, N, B, S, context, p, attention divisor, 2-D, prefill): dense, MoE (expert
#: parallel at this batch), a hybrid with recurrent layers, p > 1, a divisor > 1, 2-D, prefill.
CASES = [
    ("Llama 3 8B", "H100", 1, 1, 1, 0, 1, 1, False, False),
    ("Llama 3 70B", "H100", 8, 64, 1, 4096, 1, 4, False, False),
    ("Llama 3 70B", "H100", 16, 64, 1, 2048, 2, 1, True, False),
    ("Mixtral-8x7B", "H100", 8, 256, 1, 2048, 1, 2, False, False),
    ("DeepSeek-V3", "H200", 32, 512, 1, 2048, 2, 2, False, False),
    ("Jamba 1.5 Mini", "H100", 4, 32, 1, 8192, 2, 1, False, False),
    ("Llama 3 70B", "H100", 8, 1, 2048, 0, 1, 1, False, True),
    ("Mixtral-8x7B", "H100", 8, 2, 1024, 0, 1, 2, False, True),
]

_MODELS: dict = {}


def model(name, gpu, preset, prefill):
    """A step model, kept for the module (building one loads specs and compiles)."""
    key = (name, gpu, preset, prefill)
    if key not in _MODELS:
        a, arch, hw = ie.preset(preset), ie.load_model(name), ie.load_hardware(gpu)
        _MODELS[key] = (
            prefill_step_model(arch, hw, a)
            if prefill
            else StepModel(compile_workload(arch, a), hw, a)
        )
    return _MODELS[key]


@pytest.mark.parametrize("preset", ["paper", "refined", "achievable"])
def test_each_clock_prices_the_list_at_the_step_models_latency(preset):
    for name, gpu, N, B, S, ctx, p, adiv, two_d, prefill in CASES:
        m = model(name, gpu, preset, prefill)
        step = step_operations(m, N, B, S, ctx, p, adiv, two_d)
        lat2, lat1 = m.latency_by_dims(m.pipeline_part(N, B, S, ctx, p), adiv)
        expected = float(lat2 if two_d else lat1)
        clock = clock_of(m)
        assert isinstance(clock, EngineClock if preset == "achievable" else RooflineClock)
        if not np.isfinite(expected):  # no engine runs 2-D tensor parallelism (§F11)
            assert not step.fits and clock.total(step) == np.inf
            continue
        assert step.fits
        assert clock.total(step) == pytest.approx(expected, rel=1e-12), (name, N, B, S)
        # the breakdown's additive parts are sums of the operations' parts
        bd = m.breakdown(N, B, S, ctx, p, adiv, two_d)
        sums = clock.aggregates(step)
        for part in ADDITIVE_PARTS:
            assert sums[part] == pytest.approx(float(getattr(bd, part)), rel=1e-12, abs=1e-18)
        # the operations' FLOP are the step's; each has a name and a class
        assert sum(op.flop for op in step) == pytest.approx(float(bd.flop), rel=1e-12)
        assert all(op.name and op.kind in get_args(OperationClass) for op in step)
        assert len(set(step.names)) == len(step)  # every row named apart
        classes = clock.by_class(step)
        assert sum(classes.values()) == pytest.approx(expected, rel=1e-12)
        # collectives add outside the roofline: their class is the breakdown's two parts
        collective = sums["collective_latency_s"] + sums["collective_bandwidth_s"]
        assert classes.get("collective", 0.0) == pytest.approx(collective, rel=1e-12, abs=1e-18)


def test_the_list_is_the_same_under_both_clocks():
    ideal = step_operations(
        model("Mixtral-8x7B", "H100", "refined", False), 8, 256, 1, 2048, 1, 2, 0
    )
    engine = step_operations(
        model("Mixtral-8x7B", "H100", "achievable", False), 8, 256, 1, 2048, 1, 2, 0
    )
    # but the MoE's exchange, which the engine names by its method: on Hopper with attention
    # data parallelism TensorRT-LLM gathers and reduce-scatters the tokens (§F7)
    by_method = {
        "expert dispatch": "expert dispatch (all-gather)",
        "expert combine": "expert combine (reduce-scatter)",
    }
    assert [by_method.get(n, n) for n in ideal.names] == engine.names
    assert [op.kind for op in ideal] == [op.kind for op in engine]
    names = set(ideal.names)
    assert {"routed experts", "expert dispatch", "expert combine", "attention (decode)"} <= names
    assert {"kernel launches", "host and scheduling", "sampling", "lm head"} <= names
    routed = next(op for op in ideal if op.name == "routed experts")
    # 256 requests a micro-batch: experts split over the 8 GPUs (§A5), each whole (t_ff = 1)
    assert (routed.shape["ep"], routed.shape["tp"], routed.shape["topk"]) == (8.0, 1.0, 2)


def test_qkv_projection_of_a_small_dense_model_by_hand():
    # Llama 3 8B, 16-bit, one GPU, batch 1, empty context: d = 4096, 32 query heads and 8 KV
    # heads of 128, 32 layers. The fused QKV matrix is (32 + 2·8)·128 = 6,144 outputs of
    # 4,096 inputs: m = 1 token, n = 6,144, k = 4,096.
    step = step_operations(model("Llama 3 8B", "H100", "paper", False), 1, 1, 1, 0, 1, 1, False)
    qkv = next(op for op in step if op.name == "qkv projection")
    assert dict(qkv.shape) == {"m": 1.0, "n": 6144.0, "k": 4096.0}
    assert qkv.calls == 32
    assert qkv.weight_bytes == 6144 * 4096 * 2 * 32  # 1,610,612,736: every layer's, BF16
    # §A2's activations of one token on one GPU: the input row (4,096) and the output row
    # (6,144), 2 bytes each, every layer
    assert qkv.activation_bytes == (4096 + 6144) * 2 * 32
    assert qkv.flop == 2 * 6144 * 4096 * 32  # 1,610,612,736: two FLOP a weight a token
    out = next(op for op in step if op.name == "attention output projection")
    assert dict(out.shape) == {"m": 1.0, "n": 4096.0, "k": 4096.0}
    assert out.weight_bytes == 4096 * 4096 * 2 * 32
    attention = next(op for op in step if op.name == "attention (decode)")
    assert attention.kv_bytes == 0.0 and attention.flop == 0.0  # nothing cached yet


def test_host_work_is_an_operation_apart_from_the_kernel_launches():
    # vLLM 0.13's runtime prepares a step after the last one ends: its host work is exposed
    # (host_overhead_exposed 1); it is named apart from the per-layer launch overhead
    a = ie.preset("achievable").replace(engine="vllm@0.13.0")
    arch = ie.load_model("Llama 3 8B")
    steps = {}
    for gpu in ("H100", "L40S"):
        m = StepModel(compile_workload(arch, a), ie.load_hardware(gpu), a)
        step = step_operations(m, 1, 32, 1, 1024, 1, 1, False)
        seconds = dict(zip(step.names, EngineClock().price(step)))
        prof = m.engine.profile
        host = prof.step_time_scale * host_overhead_s(prof, 32.0)
        assert host > 0.0
        assert seconds["host and scheduling"] == pytest.approx(host, rel=1e-12)
        launch = prof.step_time_scale * 32 * prof.layer_overhead_s  # CUDA graphs: not eager
        assert seconds["kernel launches"] == pytest.approx(launch, rel=1e-12)
        parts = EngineClock().aggregates(step)
        assert parts["host_s"] == pytest.approx(host, rel=1e-12)
        assert parts["kernel_launch_s"] == pytest.approx(launch, rel=1e-12)
        steps[gpu] = (seconds, parts["gemm_fixed_s"])
    # the GEMMs' fixed cost per kernel, 2·V½/(η·F), grows on the slower part and is a part of
    # its own; the launch and host operations and parts do not
    assert steps["L40S"][1] > 1.5 * steps["H100"][1]
    for name in ("kernel launches", "host and scheduling"):
        assert steps["L40S"][0][name] == pytest.approx(steps["H100"][0][name], rel=1e-12)


def test_nvidias_mlperf_harness_runs_its_tensorrt_engines_without_cuda_graphs(tmp_path):
    # its executor core builds the ExecutorConfig with no extended runtime perf knobs, whose
    # cudaGraphMode defaults to false; DeepSeek-R1 and gpt-oss-120b run the PyTorch endpoint
    from inference_econ.measured.predicting import resolve_engines
    from inference_econ.measured.reading import load_measured

    prof = ie.load_engine("trtllm")
    for model_name, scenario in (("Llama 2 70B", "interactive"), ("Llama 3.1 405B", "offline")):
        assert prof.harness_cuda_graphs("mlperf", None, model_name, scenario, "6.0") == 0
    for model_name in ("DeepSeek-R1", "gpt-oss-120b"):
        assert prof.harness_cuda_graphs("mlperf", None, model_name, "server", "6.0") is None
    assert prof.harness_cuda_graphs(None, None, "Llama 2 70B", "offline") is None
    # the rounds before 5.1 (the fit's MLPerf rows): their harness code is not read
    assert prof.harness_cuda_graphs("mlperf", None, "Llama 2 70B", "offline", "4.1") is None
    # every step then pays eager_layer_overhead_s a layer on top: 80 x 40 us for Llama 2 70B
    arch = ie.load_model("Llama 2 70B")
    launches = []
    for p in (prof, prof.with_terms(cuda_graph_max_batch=0)):
        a = ie.preset("achievable").replace(engine=p)
        m = StepModel(compile_workload(arch, a), ie.load_hardware("H200"), a)
        step = step_operations(m, 1, 32, 1, 1024, 1, 1, False)
        launches.append(dict(zip(step.names, EngineClock().price(step)))["kernel launches"])
    assert prof.eager_layer_overhead_s == 40e-6
    assert launches[1] - launches[0] == pytest.approx(80 * 40e-6 * prof.step_time_scale, rel=1e-9)
    # a measured MLPerf row of the harness runs so, and says so
    path = tmp_path / "rows.csv"
    path.write_text(
        "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
        "output_len,metric,value,unit,notes\n"
        "mlcommons/inference_results_v5.1/closed/X,Llama 2 70B (MLPerf v5.1 llama2-70b-99 "
        "Interactive),FP8,H200,8,TP2 x4,max batch 512,1024,300,throughput_total,9000,"
        "output tok/s (system),TensorRT-LLM (NVIDIA harness)\n"
    )
    found = resolve_engines(load_measured(path), ie.preset("achievable"))[0]
    assert found.profile.cuda_graph_max_batch == 0
    assert "no CUDA graphs" in found.label
    # a harness entry's value out of bounds is one line naming the field
    from inference_econ.errors import SpecError
    from inference_econ.specs.engine import profile_from_dict

    bad = {"name": "x", "harnesses": {"mlperf": [{"cuda_graph_max_batch": -1}]}}
    with pytest.raises(SpecError, match=r"harnesses\.mlperf\[0\]\.cuda_graph_max_batch"):
        profile_from_dict(bad, "x.yaml")


def test_a_decode_step_s_breakdown_names_host_launches_and_gemm_fixed_cost_apart():
    """Llama 3 8B on one GPU, batch 1, engine vllm 0.13 (its host work exposed): its 'kernel launch'
    part was 4.12 ms on H100 and 14.23 ms on L40S, the host's work and the GEMMs' fixed cost
    in it. The host's 1 ms + 6.6 us a sequence and the 32 layers' 25.3 us of launch gaps are
    parts of their own, the same on both GPUs; the fixed cost grows as the FLOP rate falls;
    the weights are read on both, which binds; the parts add up to the step."""
    from inference_econ.model.breakdown import ADDITIVE_PARTS
    from inference_econ.specs.engine import select_engine

    vllm = select_engine("vllm", "0.13.0")
    scale = vllm.step_time_scale
    host = scale * vllm.host_overhead_exposed * (vllm.step_overhead_s + vllm.sequence_overhead_s)
    launch = scale * 32 * vllm.layer_overhead_s
    rows = {
        gpu: ie.point(
            "Llama 3 8B", gpu, gpus=1, batch=1, assumptions="achievable", engine="vllm@0.13.0"
        )
        for gpu in ("H100", "L40S")
    }
    for row in rows.values():
        assert row["host_s"] == pytest.approx(host, rel=1e-12) and host > 0.0
        assert row["kernel_launch_s"] == pytest.approx(launch, rel=1e-12)
        assert row["weight_read_s"] > 10 * row["arithmetic_s"] >= 0.0
        assert row["bound"] == "memory"
        assert sum(row[p] for p in ADDITIVE_PARTS) == pytest.approx(row["latency_s"], rel=1e-12)
    assert rows["L40S"]["gemm_fixed_s"] > 5 * rows["H100"]["gemm_fixed_s"]


def test_a_tiny_mfu_moe_step_reads_its_weights_and_is_not_called_compute_bound():
    """gpt-oss-120b on one H100 at batch 4 (MFU 0.6 %): the GEMMs' compute side (the experts'
    small-shape kernels) came out 0.7 % above their reads, so the step was called compute-bound
    with 0 ms of weight reads. Each roofline's reads are shown in full (3.6 ms of weights) and
    its arithmetic as what it takes beyond them; the reads bind."""
    row = ie.point("gpt-oss-120b", "H100", gpus=1, batch=4, assumptions="achievable")
    assert row["mfu"] < 0.01 and row["bound"] == "memory"
    assert row["weight_read_s"] == pytest.approx(row["weight_read_full_s"], rel=1e-12)
    assert round(row["weight_read_s"] * 1e3, 2) == 3.58
    assert row["arithmetic_s"] < 0.1 * row["weight_read_s"]


def test_point_prints_its_step_as_operations_whose_times_add_up_to_its_latency():
    from click.testing import CliRunner

    from inference_econ import api
    from inference_econ.cli import main

    args = ["Llama 3 70B", "-H", "H100-paper", "--gpus", "8", "--batch", "64"]
    out = CliRunner().invoke(main, ["point", *args]).output
    assert "Operations of one decode step (roofline clock, paper)" in out
    for name in ("qkv projection", "all-reduce (attention)", "host and scheduling"):
        assert name in out.split("Operations of one decode step")[1]
    csv = CliRunner().invoke(main, ["point", *args, "--format", "csv"]).output
    assert "Operations" not in csv  # CSV keeps its one row
    setting = ie.make_setting("Llama 3 70B", "H100", assumptions="achievable")
    row = api.point_fields(setting, gpus=8, batch=64)
    table = api.point_operations(setting, row)
    assert table.clock == "engine"
    assert table.seconds.sum() == pytest.approx(row["latency_s"], rel=1e-12)
    columns = table.columns(detail=True)
    for part in ADDITIVE_PARTS:
        assert columns[part].sum() == pytest.approx(row[part], rel=1e-12, abs=1e-18)


def test_the_kernel_clocks_note_names_the_tables_it_read():
    """A part with tables names its own folder of kernels/ (B300's since they ship); a part
    without says its figures are the physics fitted to other GPUs' tables."""
    from inference_econ import api

    notes = {}
    for gpu in ("B300", "H20"):
        setting = ie.make_setting("Llama 3.1 8B", gpu, assumptions="achievable", clock="kernel")
        row = api.point_fields(setting, gpus=1, batch=8, discrete=True)
        notes[gpu] = api.point_operations(setting, row, discrete=True).note
    assert "kernels/b300_sxm/trtllm-1.3.0rc20 and kernels/b300_sxm/nccl-2.29.2" in notes["B300"]
    assert "H20 has no measured tables: the physics fitted to other GPUs' tables" in notes["H20"]


@pytest.mark.parametrize("preset", ["refined", "achievable"])
def test_a_batch_smaller_than_the_stages_lists_its_own_flop(preset):
    """DeepSeek-R1 at 8 bits on 16 x H100 as PP2 x TP8 (§B12): one request's step takes as long
    as two requests' (each micro-batch of one crosses both stages), and its operations state
    the one request's FLOP, 9.19e10 (the step's, what MFU counts), half the pair's."""
    m = model("DeepSeek-R1", "H100", preset, False)
    alone, pair = (step_operations(m, 16, B, 1, 1000.0, 2, 1.0, False) for B in (1, 2))
    clock = clock_of(m)
    assert clock.total(alone) == pytest.approx(clock.total(pair), rel=1e-12)
    listed = sum(op.flop for op in alone)
    assert listed == pytest.approx(alone.flop, rel=1e-12)
    assert listed == pytest.approx(float(m.breakdown(16, 1, 1, 1000.0, 2, 1.0, False).flop))
    assert listed == pytest.approx(sum(op.flop for op in pair) / 2, rel=1e-12)
    assert listed == pytest.approx(9.19e10, rel=1e-3)
    # the time of each operation is the pair's: its FLOP per GPU are charged
    assert [op.flop_per_gpu for op in alone] == [op.flop_per_gpu for op in pair]
