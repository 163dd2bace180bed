"""What a sliding-window layer holds in the KV cache against what its attention reads
(docs/model.md §B4): TensorRT-LLM keeps every layer's whole context, vLLM only the window.
Hand-computed on gpt-oss-120b: 36 layers, 18 of them windowed to 128 tokens."""

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.load.arrivals import Arrivals
from inference_econ.load.engine import EngineConfig, build_instance
from inference_econ.load.simulate import simulate
from inference_econ.model.workload import compile_workload
from inference_econ.serving.setting import make_setting
from inference_econ.specs.architecture import load_model
from inference_econ.specs.engine import load_engine


def _work(engine):
    return compile_workload(
        load_model("gpt-oss-120b"), ie.preset("achievable").replace(engine=engine)
    )


def test_the_engines_say_what_a_window_holds():
    assert load_engine("trtllm").sliding_window_cache == "full"
    assert load_engine("vllm").sliding_window_cache == "window"
    assert load_engine("sglang").sliding_window_cache == "window"


def test_a_full_cache_holds_every_layers_context_and_reads_the_window():
    """At 1,000 tokens of context: read 18 x 128 + 18 x 1,000 = 20,304 layer-positions under
    either engine; held 36 x 1,000 under TensorRT-LLM, the same 20,304 under vLLM. Below the
    window the two agree (100 tokens: 3,600)."""
    trt, vllm = _work("trtllm"), _work("vllm")
    assert trt.layer_positions(1000.0) == vllm.layer_positions(1000.0) == 20304.0
    assert trt.held_positions(1000.0) == 36000.0
    assert vllm.held_positions(1000.0) == 20304.0
    assert trt.held_positions(100.0) == vllm.held_positions(100.0) == 3600.0
    per = trt.kv_bytes_per_position_per_layer
    assert trt.kv_held_bytes(1000.0, 4.0) == pytest.approx(per * 36000.0 * 4.0)
    assert trt.kv_cache_bytes(1000.0, 4.0) == pytest.approx(per * 20304.0 * 4.0)  # read
    np.testing.assert_allclose(trt.held_positions(np.array([100.0, 1000.0])), [3600.0, 36000.0])


def test_a_run_admits_the_requests_the_engines_cache_holds():
    """Twelve requests of 200 + 400 tokens at t = 0 under no-evict admission, on a cache of
    100,000 layer-positions: each reserves its peak context, 599 tokens. A cache that keeps
    whole contexts holds 100,000 // (36 x 599) = 4 of them; one that keeps windows holds
    100,000 // (18 x 128 + 18 x 599) = 7."""
    burst = Arrivals(np.zeros(12), np.full(12, 200), np.full(12, 400))
    held = {}
    for engine in ("trtllm", "vllm"):
        setting = make_setting("gpt-oss-120b", "H200", assumptions="achievable", engine=engine)
        inst = build_instance(setting, 1, EngineConfig(64, 8192, "no_evict"))
        small = type(inst)(inst.setting, inst.layout, inst.config, inst.table, inst.work, 1e5)
        held[engine] = simulate(small, burst).peak_batch
    assert held == {"trtllm": 4, "vllm": 7}
