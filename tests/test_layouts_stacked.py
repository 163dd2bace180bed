"""``best_layout`` evaluates a pipeline degree's attention divisors as one stacked array, and
``best_layouts`` shares a pipeline degree's collective structures across the tokens per pass
(``layouts._best_layouts_stacked``): the same layouts, bit for bit, as offering each
candidate in turn, and so the same frontiers and study cells."""

import numpy as np
import pytest
from conftest import fewer_pipeline_degrees

import inference_econ as ie
from inference_econ.model import layouts
from inference_econ.optimise import optimiser

CASES = [
    # the worked study's kinds of cell: refined preset, node-aligned layouts, a draft, MoE
    ("Llama 3.3 70B", "H100-SXM", dict(weight_bits=8, context_tokens=8000, assumptions="refined")),
    (
        "Llama 3.1 405B",
        "GB200",
        dict(
            weight_bits=4,
            context_tokens=32000,
            assumptions="refined",
            draft="Llama 3.1 8B",
            acceptance=0.7,
        ),
    ),
    ("DeepSeek-V3", "B200", dict(weight_bits=8, context_tokens=128000, assumptions="refined")),
    ("gpt-oss-120b", "H100-SXM", dict(context_tokens=8000, assumptions="refined")),
    # the paper's preset, the engine profiles', and a paper MoE table
    ("Llama 3 70B", "H100-paper", dict(weight_bits=8)),
    ("Llama 3 70B", "H100", dict(assumptions="achievable", context_tokens=8000)),
    ("Mixtral 8x22B", "H100-paper", dict(assumptions="paper-table-5")),
]


def _points(problem, every=9):
    """Every ``every``-th point of the 40 x 40 grid (178 points, in steps across both axes:
    40 is not a multiple of 9)."""
    n_values, b_values = problem.continuous_axes()
    N, B = np.meshgrid(n_values, b_values)
    return N.ravel()[::every], B.ravel()[::every]


@pytest.mark.parametrize("model, hardware, kwargs", CASES)
def test_stacked_divisors_give_the_layouts_of_one_candidate_at_a_time(
    model, hardware, kwargs, monkeypatch
):
    # each pipeline degree's divisors stacked or one at a time: on fewer degrees than the
    # preset's (conftest.fewer_pipeline_degrees)
    setting = ie.make_setting(model, hardware, **fewer_pipeline_degrees(kwargs))
    problem = optimiser.Problem(setting, ie.Method(grid_points=40))
    N, B = _points(problem)
    d, ctx, pipe = problem.decoder, setting.context_tokens, setting.pipeline
    passes = [(d.target, S) for S in d.gamma_values()]
    passes += [(d.draft, S) for S in d.draft_values()] if d.draft is not None else []
    shared = {id(d.target): layouts.best_layouts(d.target, N, B, d.gamma_values(), ctx, pipe)}
    if d.draft is not None:
        shared[id(d.draft)] = layouts.best_layouts(d.draft, N, B, d.draft_values(), ctx, pipe)
    for model_, S in passes:
        stacked = layouts.best_layout(model_, N, B, S, ctx, pipe)
        with monkeypatch.context() as m:
            m.setattr(layouts, "STACKED_POINTS_MAX", 0)  # one candidate at a time
            one_by_one = layouts.best_layout(model_, N, B, S, ctx, pipe)
        for field in ("latency_s", "pipeline", "attention_divisor", "two_d"):
            a, b = getattr(stacked, field), getattr(one_by_one, field)
            assert a.dtype == b.dtype and np.array_equal(a, b), (field, S)
            assert np.array_equal(getattr(shared[id(model_)][S], field), b), (field, S)
        # not a comparison of trivial layouts: some points fit, on several pipeline degrees
        # and divisors
        finite = np.isfinite(stacked.latency_s)
        assert 0 < finite.sum() < finite.size
        assert len(np.unique(stacked.pipeline[finite])) > 2
        if model_.assumptions.attention_divisor_count > 1:  # 1 under engine profiles
            assert len(np.unique(stacked.attention_divisor[finite])) > 2


def test_a_study_cell_is_the_same_with_either_path(monkeypatch, fresh_searches):
    """A worked-study cell (100 x 100 grid, refined preset, a draft) describes the same
    frontier, every column bit for bit, with the stacked and the one-at-a-time search."""
    from inference_econ.studies.study import compute_cell

    setting = ie.make_setting(
        "Llama 3.3 70B",
        "H200-SXM",
        weight_bits=8,
        context_tokens=8000,
        assumptions="refined",
        draft="Llama 3.1 8B",
        acceptance=0.7,
    )
    method = ie.Method(grid_points=60)
    fresh_searches()
    fast = compute_cell(setting, method)
    fresh_searches()
    monkeypatch.setattr(layouts, "STACKED_POINTS_MAX", 0)
    slow = compute_cell(setting, method)
    assert len(fast["data"]) > 100
    assert fast["columns"] == slow["columns"]
    assert fast["data"] == slow["data"]  # NaN-free numeric rows compare exactly


@pytest.mark.parametrize(
    "model, hardware, kwargs",
    [
        ("DeepSeek-V3", "H200-SXM", dict(weight_bits=8, assumptions="refined")),
        ("Llama 3 70B", "H100-paper", dict(weight_bits=8)),
    ],
)
def test_stacked_prefill_layouts_with_tokens_and_contexts_per_point(
    model, hardware, kwargs, monkeypatch
):
    """A prefill's chunks (``serving.prefill``): tokens per pass and context differ at each
    point, and expert parallelism follows the tokens."""
    from inference_econ.serving.prefill import prefill_model

    setting = ie.make_setting(model, hardware, **kwargs)
    step = prefill_model(setting)
    assert step.expert_parallel_by_tokens
    rng = np.random.default_rng(7)
    N = 2.0 ** rng.uniform(0, 9, 300)
    B = np.round(2.0 ** rng.uniform(0, 6, 300))
    S = np.round(2.0 ** rng.uniform(7, 13, 300))
    context = np.round(2.0 ** rng.uniform(8, 15, 300))
    stacked = layouts.best_layout(step, N, B, S, context, True)
    monkeypatch.setattr(layouts, "STACKED_POINTS_MAX", 0)
    one_by_one = layouts.best_layout(step, N, B, S, context, True)
    for field in ("latency_s", "pipeline", "attention_divisor", "two_d"):
        assert np.array_equal(getattr(stacked, field), getattr(one_by_one, field)), field
    assert 0 < np.isfinite(stacked.latency_s).sum() < 300
