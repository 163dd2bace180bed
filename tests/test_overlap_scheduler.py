"""An overlap scheduler prepares each step's batch while the GPU runs the step before, so a
request that arrives during a step joins the step after next (docs/model-part-f.md §F5): one
step more of waiting than a scheduler that plans each step after the last one ends."""

import copy
import dataclasses

import numpy as np
import pytest

from inference_econ.load.arrivals import Arrivals
from inference_econ.load.engine import EngineConfig, build_instance
from inference_econ.load.simulate import simulate
from inference_econ.serving.setting import make_setting


def planned_after_each_step(inst):
    """The same instance with a scheduler that plans each step after the last one ends."""
    table = copy.copy(inst.table)
    table.prepares_ahead = False
    return dataclasses.replace(inst, table=table)


@pytest.fixture(scope="module")
def trtllm():
    """Llama 3 8B on one H100 under TensorRT-LLM's profile (the PyTorch backend, whose overlap
    scheduler is on by default), prompts in steps of their own."""
    setting = make_setting("Llama 3 8B", "H100", assumptions="achievable", engine="trtllm")
    return build_instance(setting, 1, EngineConfig(prefill="separate"))


def test_which_engines_prepare_the_next_step_ahead(trtllm):
    assert trtllm.table.prepares_ahead
    vllm = make_setting("Llama 3 8B", "H100", assumptions="achievable", engine="vllm")
    assert build_instance(vllm, 1, EngineConfig()).table.prepares_ahead  # async from 0.14
    vllm = make_setting("Llama 3 8B", "H100", assumptions="achievable", engine="vllm@0.13.0")
    assert not build_instance(vllm, 1, EngineConfig()).table.prepares_ahead  # no --async-scheduling
    ideal = make_setting("Llama 3 8B", "H100")
    assert not build_instance(ideal, 1, EngineConfig()).table.prepares_ahead


def test_an_arrival_during_a_step_joins_the_step_after_next(trtllm):
    """A prompt that arrives 2.5 decode steps after the first request's first token starts
    its prefill after 3 decode steps when each step is planned after the last, and after 4
    when the third step's successor was planned while it ran; its first token is one decode
    step later, and the first request's are unchanged."""
    plain = planned_after_each_step(trtllm)
    alone = simulate(trtllm, Arrivals(np.zeros(1), np.array([100]), np.array([50])))
    step = (alone.finish_s[0] - alone.first_token_s[0]) / 49  # 49 decode steps at batch 1
    t0 = alone.first_token_s[0]  # an idle engine's prompt step: at once, under either scheduler
    arrivals = Arrivals(np.array([0.0, t0 + 2.5 * step]), np.full(2, 100), np.full(2, 50))
    for inst, steps in ((plain, 3), (trtllm, 4)):
        rec = simulate(inst, arrivals)
        assert rec.first_token_s[0] == t0
        k = (rec.first_token_s[1] - t0 - t0) / step  # its prompt step starts k steps after t0
        assert k == pytest.approx(steps, abs=0.01)
    idle = simulate(trtllm, Arrivals(np.array([5.0]), np.array([100]), np.array([50])))
    assert idle.first_token_s[0] - 5.0 == pytest.approx(t0, rel=1e-12)


def test_requests_queued_at_once_are_served_alike(trtllm):
    """Every request queued at t = 0 (an offline run): nothing arrives during a step, so the
    overlap scheduler's record is the other's, number for number."""
    arrivals = Arrivals(np.zeros(40), np.full(40, 300), np.full(40, 60))
    a, b = simulate(trtllm, arrivals), simulate(planned_after_each_step(trtllm), arrivals)
    for name in ("first_token_s", "finish_s", "admitted_s"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
