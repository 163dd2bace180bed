"""What a sliding-window layer holds in the KV cache against what its attention reads
(docs/model.md §B4): TensorRT-LLM keeps every layer's whole context, vLLM only the window.
Hand-computed on gpt-oss-120b: 36 layers, 18 of them windowed to 128 tokens."""

import dataclasses

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


def test_many_requests_positions_are_the_sum_of_each_requests():
    """gpt-oss-120b: 18 layers x min(n, 128) + 18 layers x n. Contexts 100, 128 and 1,000,
    one step ahead: 18 x (101 + 128 + 128) + 18 x (101 + 129 + 1001) = 28,584."""
    w = _work("trtllm")
    ctx = np.array([100.0, 128.0, 1000.0])
    assert w.layer_positions_of_many(ctx, 1) == 28584.0
    assert w.layer_positions_of_many(ctx, 1) == sum(w.layer_positions(c + 1) for c in ctx)
    # the same contexts as bases 40 below, shifted by 40: from the sorted list and as an array
    bases = [60.0, 88.0, 960.0]
    assert w.layer_positions_of_whole(bases, 1108, 40.0, 1.0) == 28584.0
    ahead = np.array([0.0, 1.0, 30.0])
    shifted = w.layer_positions_of_many(np.array(bases), ahead, shift=40.0)
    assert shifted.tolist() == w.layer_positions_of_many(ctx, ahead).tolist()
    assert shifted[1] == 28584.0


def test_whole_number_contexts_price_the_same_floats_from_the_list_and_the_arrays():
    """The simulator prices a batch of whole-number contexts from its sorted bases without
    prefix sums of the contexts (exact sums); the floats are the prefix sums' own, whichever
    side of each window most requests are on, and bases below zero (requests that joined
    late) included."""
    rng = np.random.default_rng(0)
    for work in (
        _work("trtllm"),
        compile_workload(load_model("Gemma 3 27B"), ie.preset("refined")),
    ):
        for low, high in ((1, 200), (500, 5000), (1, 3000)):
            bases = np.sort(rng.integers(low, high, size=400).astype(float) - 350.0)
            G = 350.0 + float(rng.integers(0, 50))
            ctx = bases + G
            total = int(bases.sum())
            for a in (0, 1, 7):
                want = work.layer_positions_of_many(ctx, a)
                got = work.layer_positions_of_whole(bases.tolist(), total, G, float(a))
                assert got == want
            ahead = np.arange(0.0, 300.0)
            want = work.layer_positions_of_many(ctx, ahead)
            got = work.layer_positions_of_many(bases, ahead, shift=G)
            assert np.array_equal(got, want)


def test_a_windowed_run_keeps_its_sorted_bases_as_requests_join_and_leave(monkeypatch):
    """A windowed model's simulation keeps its decoding requests' bases sorted as they join
    (from a prompt step or prefilled elsewhere), finish and are preempted (a small cache), and
    prices whole-number batches from them: at every call the list is the decoding requests'
    own bases in order, and the price is, bit for bit, that of their sorted contexts' prefix
    sums. Speculation (fractional steps) takes the prefix sums."""
    from inference_econ.load.engine_state import EngineState
    from inference_econ.model.workload import prefix_sums

    priced = EngineState.decode_positions
    calls = []

    def checked(self, ahead=0):
        got = priced(self, ahead)
        bases = list(self.running.values())
        assert self.bases.values == sorted(bases)
        whole = [b for b in bases if float(b).is_integer()]
        assert self.bases.whole_sum == sum(int(b) for b in whole)
        assert self.bases.odd == len(bases) - len(whole)
        ctx = np.sort(np.array(bases, dtype=float)) + self.G
        want = self.inst.work.layer_positions_of_many(ctx, ahead, prefix_sums(ctx))
        assert np.array_equal(np.asarray(got), np.asarray(want))
        calls.append(self.G.is_integer())
        return got

    monkeypatch.setattr(EngineState, "decode_positions", checked)

    def run(setting, cap=1.0, prefill="whole", prefilled=False):
        inst = build_instance(setting, 2, EngineConfig(prefill=prefill))
        inst = dataclasses.replace(inst, kv_capacity=cap * inst.kv_capacity)
        n = 300
        rng = np.random.default_rng(1)
        arr = Arrivals(
            np.sort(rng.uniform(0.0, 6.0, n)),
            rng.integers(20, 900, n).astype(float),
            rng.integers(5, 300, n).astype(float),
        )
        return simulate(inst, arr, prefilled=prefilled)

    plain = make_setting("gpt-oss-120b", "H100", assumptions="refined")
    assert run(plain, cap=0.01).preemptions.sum() > 0  # requests leave the batch preempted
    run(plain, prefill="chunked")
    run(plain, prefilled=True)  # a decode pool: every request joins prefilled elsewhere
    whole = len(calls)
    assert whole > 1000 and all(calls)
    eagle = make_setting(
        "gpt-oss-120b", "H100", assumptions="refined", draft_heads="eagle", acceptance=0.7
    )
    run(eagle)
    assert not all(calls[whole:])  # fractional steps: priced from the prefix sums
