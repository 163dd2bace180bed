"""Property-based checks of the cost model over random configurations (hypothesis)."""

import numpy as np
import pytest
from conftest import fewer_pipeline_degrees
from hypothesis import given, settings
from hypothesis import strategies as st

import inference_econ as ie
from inference_econ.model.latency import ADDITIVE_PARTS

MODELS = ["Llama 3 70B", "Mixtral 8x22B", "DeepSeek-V3 (paper approximation)", "Llama 3 8B"]
configs = st.tuples(
    st.sampled_from(MODELS),
    st.floats(min_value=1, max_value=4096),  # GPUs
    st.floats(min_value=1, max_value=1e5),  # batch
    st.sampled_from([0.0, 1000.0, 32000.0]),  # context
    st.sampled_from([4, 8, 16]),  # weight bits
)


# Each run draws new random configurations (these properties are not derandomised): 20 to 30
# a run nearly always draw each model, precision and context of ``configs``; later runs others.
@settings(max_examples=30, deadline=None)
@given(configs)
def test_breakdown_adds_up_and_is_non_negative(config):
    model, gpus, batch, context, bits = config
    row = ie.point(
        model, "H100-paper", gpus=gpus, batch=batch, context_tokens=context, weight_bits=bits
    )
    if not np.isfinite(row.latency_s):
        return
    parts = np.array([row[p] for p in ADDITIVE_PARTS])
    assert np.all(parts >= 0)
    assert np.isclose(parts.sum(), row.latency_s, rtol=1e-9)
    assert 0 < row.mfu <= 0.7 + 1e-9  # never above the sustained FLOP/s cap
    assert row.usd_per_mtok > 0 and row.tokens_per_s > 0


@settings(max_examples=20, deadline=None)
@given(
    configs,
    st.sampled_from(
        [
            "hbm_bandwidth_bytes_per_s",
            "nvlink_bandwidth_bytes_per_s",
            "nic_bandwidth_bytes_per_s",
            "flop_per_s",
        ]
    ),
)
def test_better_hardware_is_never_slower(config, field):
    model, gpus, batch, context, bits = config
    base_gpu = ie.load_hardware("H100-paper")
    better = ie.derive(base_gpu, scale={field: 1.7})
    base = ie.point(
        model, base_gpu, gpus=gpus, batch=batch, context_tokens=context, weight_bits=bits
    )
    fast = ie.point(model, better, gpus=gpus, batch=batch, context_tokens=context, weight_bits=bits)
    assert fast.latency_s <= base.latency_s * (1 + 1e-12)


@settings(max_examples=20, deadline=None)
@given(configs)
def test_longer_context_is_never_faster(config):
    model, gpus, batch, context, bits = config
    short = ie.point(
        model, "H100-paper", gpus=gpus, batch=batch, context_tokens=context, weight_bits=bits
    )
    long = ie.point(
        model, "H100-paper", gpus=gpus, batch=batch, context_tokens=context + 5000, weight_bits=bits
    )
    assert long.latency_s >= short.latency_s * (1 - 1e-12)


# --- the breakdown adds up to the latency for every preset, search mode and model ----------

from inference_econ.model.assumptions import PRESETS  # noqa: E402
from inference_econ.optimise import discrete  # noqa: E402
from inference_econ.serving.decode import Decoder  # noqa: E402
from inference_econ.specs import catalog  # noqa: E402

EVERY_MODEL = [e.name for e in catalog.entries("models")]


def assert_adds_up(df, where):
    finite = np.isfinite(df.latency_s.to_numpy())
    assert finite.any(), where
    parts = df.loc[finite, list(ADDITIVE_PARTS)].to_numpy()
    assert (parts >= 0).all(), where
    assert np.allclose(parts.sum(axis=1), df.latency_s.to_numpy()[finite], rtol=1e-9, atol=0), where


def models_for(preset: str) -> list[str]:
    """Half the shipped models, in turn: with the presets in order, model i is checked under
    presets i and i + 1 (mod their number), so every model under two presets and every preset
    on half the models, a different half each (the sum is the same code for every pair)."""
    k, n = sorted(PRESETS).index(preset), len(PRESETS)
    return [m for i, m in enumerate(EVERY_MODEL) if (k - i) % n in (0, 1)]


def test_every_model_is_checked_under_two_presets():
    counts = {m: sum(m in models_for(p) for p in PRESETS) for m in EVERY_MODEL}
    assert len(PRESETS) >= 3 and set(counts.values()) == {2}


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_breakdown_adds_up_for_every_preset_mode_and_model(preset):
    """The frontier describes its points with Decoder.describe: on the grid it finds each
    point's layout again (as point does); the discrete search hands over the layouts it found.
    Both must give parts that add up to the latency, at every kind of point (``models_for``:
    each model under two of the presets; the grid's layouts on fewer pipeline degrees than
    the presets', ``conftest.fewer_pipeline_degrees``: each layout's parts add up alike)."""
    gpus = np.array([1.0, 3.0, 8.0, 24.0, 64.0, 512.0])
    batch = np.array([1.0, 7.0, 64.0, 500.0, 4096.0, 65536.0])
    for model in models_for(preset):
        draft = "Llama 3 8B" if model == "Llama 3 70B" else None
        kwargs = dict(context_tokens=4000, assumptions=preset, draft=draft)
        setting = ie.make_setting(model, "H200", **fewer_pipeline_degrees(kwargs))
        where = f"{model}, {preset}"
        N, B = (x.ravel() for x in np.meshgrid(gpus, batch))
        assert_adds_up(Decoder(setting).describe(N, B), where + ", grid")
        dec = Decoder(setting, integer_layouts=True)
        counts = np.array([8.0, 24.0, 64.0, 512.0])
        per_count = [dec.whole_layouts(np.array([n]), batch) for n in counts]
        cols = {g: discrete._columns([t[g] for t, _ in per_count]) for g in dec.gamma_values()}
        dlay = (
            {x: discrete._columns([d[x] for _, d in per_count]) for x in dec.draft_values()}
            if dec.draft
            else None
        )
        Nd, Bd = np.meshgrid(counts, batch)
        idx = np.arange(Nd.size)
        problem = type("P", (), {"decoder": dec})()
        df = discrete.describe(problem, Nd, Bd, (cols, dlay), idx)
        assert_adds_up(df, where + ", discrete")


def test_breakdown_adds_up_on_a_refined_discrete_frontier():
    # DeepSeek-V3 on H200, refined, discrete, 4000 tokens: 33 of 197 points were 0.4-1 % off
    front = ie.frontier(
        "DeepSeek-V3",
        "H200",
        context_tokens=4000,
        assumptions="refined",
        discrete=True,
        grid_points=60,
        all_points=True,
    )
    assert len(front) > 30
    assert_adds_up(front.points, "DeepSeek-V3 refined discrete")


@settings(max_examples=8, deadline=None)
@given(
    st.sampled_from(MODELS),
    st.sampled_from([0.0, 8000.0, 100000.0]),
    st.sampled_from([4, 8, 16]),
    st.sampled_from([1.05, 1.25, 2.0, 4.0]),
)
def test_more_hbm_capacity_never_makes_the_fastest_point_slower(model, context, bits, scale):
    """The GPU-count grid does not move with the capacity (optimise/optimiser.gpu_lattice): a
    GPU with more memory searches every configuration a smaller one does."""
    base = ie.load_hardware("H100-paper")
    big = ie.derive(base, scale={"hbm_capacity_bytes": scale})
    kwargs = dict(context_tokens=context, weight_bits=bits, grid_points=40)
    small_front = ie.frontier(model, base, **kwargs)
    big_front = ie.frontier(model, big, **kwargs)
    if small_front.empty:
        return
    assert not big_front.empty
    fastest = small_front.fastest().tokens_per_s
    assert big_front.fastest().tokens_per_s >= fastest * (1 - 1e-12)
    # and the cheapest point at any speed the smaller GPU reaches is no dearer
    speeds = small_front.points.tokens_per_s.to_numpy()
    assert np.all(big_front.cost_at_speed(speeds) <= small_front.cost_at_speed(speeds) * (1 + 1e-9))


def test_the_gpu_axis_is_a_lattice_that_does_not_move_with_memory():
    from inference_econ.optimise.optimiser import gpu_lattice

    weights = 70e9
    small = gpu_lattice(weights, weights / 80e9, 400)
    big = gpu_lattice(weights, weights / 160e9, 400)
    assert np.allclose(small[0], weights / 80e9) and len(small) == 400  # the paper's grid at 80 GB
    assert np.allclose(small[-1], 2.0**18)
    assert set(np.round(np.log2(small[1:]), 9)) <= set(np.round(np.log2(big), 9))
