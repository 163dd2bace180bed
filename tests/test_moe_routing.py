"""The fused MoE's factor for the routing real tokens take (kernels/moe_routing.yaml), as the
engine step charges it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.model.latency import StepModel
from inference_econ.model.moe import MLA_ROUTING, MOE_ROUTING, moe_routing_factor, routing_of
from inference_econ.model.workload import compile_workload
from inference_econ.specs.kernel_tables import kernel_table, moe_routing_table

H200 = ie.load_hardware("H200")


def _measured_ratio(folders, routing, experts, ep, tokens):
    """The median, over the tables' TP-1 calls of ``experts`` experts at ``ep`` ranks and
    tokens within a factor 2 of ``tokens``, of the time routed over the time balanced."""
    ratios = []
    for folder in folders:
        t = kernel_table(folder, "moe")
        keys = ("kernel_source", "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk")
        at = (
            (t["moe_tp_size"] == 1)
            & (t["num_experts"] == experts)
            & (t["moe_ep_size"] == ep)
            & (t["num_tokens"] >= tokens / 2)
            & (t["num_tokens"] <= tokens * 2)
        )
        calls = list(zip(*(t[k][at].tolist() for k in keys)))
        times = t["latency_ms"][at]
        how = t["distribution"][at]
        base = {c: x for c, x, d in zip(calls, times, how) if d == "balanced"}
        ratios += [x / base[c] for c, x, d in zip(calls, times, how) if d == routing and c in base]
    return float(np.median(ratios))


def test_the_shipped_factors_are_the_tables_medians():
    # One cell recomputed from the shipped tables: Qwen3-like routing (alpha 1.2) through 128
    # experts over 8 ranks at 4,096 tokens on Hopper (H100 and H200 pooled): the busiest rank's
    # experts hold more rows than under balanced routing, about 1.7 times the time.
    want = _measured_ratio(("h100_sxm", "h200_sxm"), MOE_ROUTING, 128, 8, 4096)
    assert 1.4 < want < 2.0
    table = moe_routing_table()
    assert table["factors"]["hopper"][MOE_ROUTING][128][3][6] == pytest.approx(want, abs=5e-4)
    assert moe_routing_factor(H200, MOE_ROUTING, 128, 8, 4096) == pytest.approx(want, abs=5e-4)


def test_few_tokens_hit_fewer_experts_and_many_load_the_busiest_rank():
    for routing in (MLA_ROUTING, MOE_ROUTING):
        assert moe_routing_factor(H200, routing, 256, 8, 64) < 0.95
        many = [moe_routing_factor(H200, routing, 256, ep, 4096) for ep in (1, 2, 4, 8, 16, 32)]
        assert many[0] > 1.0 and all(b >= a for a, b in zip(many, many[1:]))
    # the stronger skew of the plain MoE models' routing costs more at many tokens
    assert moe_routing_factor(H200, MOE_ROUTING, 256, 8, 4096) > moe_routing_factor(
        H200, MLA_ROUTING, 256, 8, 4096
    )


def test_counts_between_the_measured_ones_interpolate_and_parts_without_tables_get_none():
    # 192 experts lie between the tables' 160 and 256: log2-interpolated between them
    low, mid, high = (moe_routing_factor(H200, MOE_ROUTING, e, 8, 1024) for e in (160, 192, 256))
    u = (np.log2(192) - np.log2(160)) / (np.log2(256) - np.log2(160))
    assert mid == pytest.approx(low * (1 - u) + high * u, rel=1e-12)
    assert moe_routing_factor(ie.load_hardware("MI300X"), MOE_ROUTING, 128, 8, 4096) == 1.0
    got = moe_routing_factor(H200, MOE_ROUTING, 128, np.array([1, 8]), np.array([4096, 4096]))
    assert got.shape == (2,) and got[1] > got[0]


def test_the_engine_step_charges_the_routing_the_model_sees():
    # DeepSeek-R1 (MLA) routes as DeepSeek's family, Qwen3 as the plain MoE models; a decode
    # step of 4,096 tokens over 8 H200 with the experts spread (EP 8) costs more than the same
    # step charged at balanced routing, and a dense model's step is untouched
    a = ie.preset("achievable")
    ds = compile_workload(ie.load_model("DeepSeek-R1"), a)
    qwen = compile_workload(ie.load_model("Qwen3-235B-A22B"), a)
    assert (routing_of(ds.model_class), routing_of(qwen.model_class)) == (MLA_ROUTING, MOE_ROUTING)
    model = StepModel(qwen, H200, a)
    g = qwen.groups[0]
    part = model.engine.part(4096.0, 1.0, 8.0, 4096.0, [(8.0, 1.0)], 0.0)
    factor = moe_routing_factor(H200, MOE_ROUTING, g.experts, 8, 4096)
    rows = model.engine.grouped_expert_gemm(g, 4096.0, 8.0, 1.0, 8.0, 3.0 * qwen.d_model)[0]
    assert factor > 1.3
    assert part.expert_gemm_s == pytest.approx(factor * rows, rel=1e-9)
    # a model file's stated routing is the engine step's too: Llama 4 Maverick's experts are
    # charged at alpha 1.01, which skews its 128 experts' step less than 1.2 would at 4,096
    mav = compile_workload(ie.load_model("Llama 4 Maverick"), a)
    engine = StepModel(mav, H200, a).engine
    assert engine.routing == MLA_ROUTING == mav.expert_routing
    e = next(g for g in mav.groups if g.experts > 1)
    at = [moe_routing_factor(H200, r, e.experts, 8, 4096) for r in (MLA_ROUTING, MOE_ROUTING)]
    assert at[0] < at[1]
    splits = [(8.0 if g.experts > 1 else 1.0, 1.0) for g in mav.groups]
    mav_part = engine.part(4096.0, 1.0, 8.0, 4096.0, splits, 0.0)
    plain = StepModel(dataclasses.replace(mav, expert_routing=None), H200, a).engine
    assert plain.routing == MOE_ROUTING
    other = plain.part(4096.0, 1.0, 8.0, 4096.0, splits, 0.0)
    assert mav_part.expert_gemm_s < other.expert_gemm_s
