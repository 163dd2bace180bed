"""Decode-only steps padded to the CUDA graph they replay (docs/model-part-f.md §F5, "CUDA-graph
padding"): TensorRT-LLM's ``cuda_graph_config`` with ``enable_padding`` runs a decode-only
batch as the next captured batch size, every attention-DP rank at the busiest rank's size."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from conftest import shipped_rows

from inference_econ.errors import SpecError
from inference_econ.load.arrivals import Arrivals
from inference_econ.load.engine import (
    ENGINE_OWN,
    EngineConfig,
    build_instance,
    engine_config,
    layout_search,
    trtllm_graph_sizes,
)
from inference_econ.load.simulate import simulate
from inference_econ.measured.bench_limits import OVERVIEW_GRAPH_SIZES, overview_graphs
from inference_econ.measured.comparison import compare
from inference_econ.model.assumptions import preset
from inference_econ.model.mixed_step import (
    EngineLayout,
    captured_sizes,
    decode_run_s,
    decode_step_s,
    graph_batch,
    graph_padded_requests,
    with_graphs,
)
from inference_econ.serving.setting import make_setting

SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024)
DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    "requests, ranks, cap, padded",
    [
        (0, 1, 0, 0),
        (1, 1, 0, 1),
        (3, 1, 0, 4),
        (300, 1, 0, 384),  # the next size up
        (513, 1, 0, 1024),
        (2000, 1, 0, 2000),  # above the largest graph: run as it is
        (400, 1, 448, 448),  # sizes above a rank's largest batch give way to it
        (300, 1, 448, 384),
        (1001, 4, 0, 1024),  # 4 ranks, the busiest of 251 requests padded to 256 each
        (5, 4, 0, 8),  # busiest rank 2 requests: 2 a rank
    ],
)
def test_padded_request_counts_hand_computed(requests, ranks, cap, padded):
    captured = captured_sizes(SIZES, cap)
    assert graph_padded_requests(2048, captured, ranks)[requests] == padded
    assert graph_batch(requests, captured, ranks) == padded  # the closed forms' scalar


@pytest.fixture(scope="module")
def llama_table():
    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable", engine="trtllm")
    inst = build_instance(setting, 1, EngineConfig(2048, 8192), layout=EngineLayout(1, 1, 1.0))
    return inst.table


def test_a_decode_run_costs_its_graphs_batch_and_a_mixed_step_its_own(llama_table):
    plain = llama_table
    padded = with_graphs(plain, list(SIZES))
    q0, growth, steps = 300 * 32 * 900.0, 300 * 32.0, 40
    # 300 requests run the 384-request graph: 384 requests' tokens and per-request work, the
    # 300 requests' KV reads and attention (the 84 dummies' caches are empty)
    want = decode_run_s(plain.decode_terms(384, 384), q0, growth, steps)
    assert padded.run_time_s(300, q0, growth, steps) == pytest.approx(want, rel=1e-12)
    assert padded.run_time_s(300, q0, growth, steps) > plain.run_time_s(300, q0, growth, steps)
    # a size that is a graph's, and a step with prompt tokens (never captured), are unchanged
    assert padded.run_time_s(256, q0, growth, steps) == plain.run_time_s(256, q0, growth, steps)
    assert padded.time_s(300, q0, q0, 300) == plain.time_s(300, q0, q0, 300)
    times = padded.times_s(300, np.array([q0, q0 + growth]))
    assert times[0] == pytest.approx(decode_step_s(plain.decode_terms(384, 384), q0), rel=1e-12)


@pytest.fixture(scope="module")
def deepseek_ranks():
    """DeepSeek-V3 on 8 H200 over 8 attention-DP ranks, 512 requests and 2,048 tokens a rank:
    without graphs, and padded to ``SIZES``."""
    setting = make_setting("DeepSeek-V3", "H200", assumptions="achievable", engine="trtllm")
    config = EngineConfig(8 * 512, 8 * 2048, per_attention_rank=False, rank_scheduling=True)
    layout = EngineLayout(8, 1, 8.0)
    search = layout_search(setting, 8)
    graphs = dataclasses.replace(config, graph_batch_sizes=SIZES)
    return tuple(
        build_instance(setting, 8, c, layout=layout, search=search) for c in (config, graphs)
    )


def test_an_instance_pads_per_attention_rank(deepseek_ranks):
    plain, inst = deepseek_ranks
    assert plain.table.graph_requests is None
    # 8 ranks of 201 requests each (1,608 in all) run the 256 graph on every rank
    assert inst.table.graph_requests[1608] == 8 * 256
    assert inst.table.graph_requests[8 * 512] == 8 * 512  # a full batch is a graph's size
    assert "CUDA graphs of up to 1024" in inst.config.describe()


@pytest.mark.parametrize("sizes", [(0,), ("8",), [1, 2], (True,)])
def test_graph_sizes_are_whole_positive_numbers(sizes):
    with pytest.raises(SpecError, match="graph_batch_sizes"):
        EngineConfig(graph_batch_sizes=sizes)


OVERVIEW = "TensorRT-LLM performance overview (trtllm-bench throughput, PyTorch backend)"


@pytest.mark.parametrize(
    "source, cell, sizes",
    [
        (OVERVIEW, "max load (batch auto, CUDA graphs up to 8192)", OVERVIEW_GRAPH_SIZES),
        (OVERVIEW, "max load", ()),  # the row does not say it captured graphs
        ("TensorRT-LLM blog", "max load (CUDA graphs up to 8192)", ()),
        ("SGLang performance overview", "CUDA graphs up to 512", ()),
    ],
)
def test_only_the_overviews_rows_state_its_graphs(source, cell, sizes):
    assert overview_graphs(source, cell) == sizes


def test_the_overview_rows_read_their_graphs():
    for name in ("trtllm_perf_overview_moe.csv", "trtllm_perf_overview_dense.csv"):
        rows = shipped_rows(name)
        assert all(r.graph_batch_sizes == OVERVIEW_GRAPH_SIZES for r in rows), name
    assert OVERVIEW_GRAPH_SIZES[-4:] == (1024, 2048, 4096, 8192)


def test_padding_never_makes_a_run_faster(deepseek_ranks):
    """300 requests of 256/512 tokens queued at once on 8 attention-DP ranks: padded to the
    captured graphs, the decode steps run no fewer tokens, so the run ends no sooner."""
    plain, padded = deepseek_ranks
    n = 300
    arrivals = Arrivals(np.zeros(n), np.full(n, 256, np.int64), np.full(n, 512, np.int64))
    a, b = simulate(plain, arrivals), simulate(padded, arrivals)
    assert np.nanmax(b.finish_s) > np.nanmax(a.finish_s)


def test_a_bench_row_without_stated_graphs_pads_to_the_tools_own(tmp_path):
    """trtllm-bench pads to graphs up to its own batch limit where the run's options name none
    (``trtllm_graph_sizes``): 1, 2, 4, the multiples of 8 to 128, the powers of 2 below the limit."""
    assert trtllm_graph_sizes(384) == (1, 2, 4, *range(8, 129, 8), 256, 384)
    assert trtllm_graph_sizes(2048)[-4:] == (256, 512, 1024, 2048)
    assert trtllm_graph_sizes(64) == (1, 2, 4, *range(8, 65, 8))
    with open(DATA / "trtllm_perf_overview_moe.csv", newline="") as f:
        row = next(csv.DictReader(f))
    path = tmp_path / "bench.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(row))
        w.writeheader()
        w.writerow(dict(row, batch_or_concurrency="max load (batch auto)"))
    (got,) = compare(str(path), assumptions=preset("achievable")).table.itertuples()
    assert "the limits trtllm-bench picks itself" in got.engine
    assert "padded to CUDA graphs up to its batch limit" in got.engine


def test_a_planned_tensorrt_llm_instance_pads_as_its_launch_does():
    """A plan's TensorRT-LLM instance captures the graphs the launch the tool writes does
    (padding on up to its batch limit, ``trtllm_options``): the LLM API's generated sizes;
    vLLM's are not modelled, and a config that names its own limits keeps its own (none)."""
    assert trtllm_graph_sizes(2048) == (1, 2, 4, *range(8, 129, 8), 256, 512, 1024, 2048)
    assert trtllm_graph_sizes(1) == (1,)
    trt = make_setting("Llama 3.1 8B", "H100", assumptions="achievable", engine="trtllm")
    planned = engine_config(EngineConfig(engine_own=ENGINE_OWN), trt)
    assert planned.graph_batch_sizes == trtllm_graph_sizes(planned.max_batch_requests)
    capped = engine_config(EngineConfig(300, 8192, engine_own=("graph_batch_sizes",)), trt)
    assert capped.graph_batch_sizes[-3:] == (128, 256, 300)
    assert engine_config(EngineConfig(300, 8192), trt).graph_batch_sizes == ()
    vllm = make_setting("Llama 3.1 8B", "H100", assumptions="achievable", engine="vllm")
    assert engine_config(EngineConfig(engine_own=ENGINE_OWN), vllm).graph_batch_sizes == ()
