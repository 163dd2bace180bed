"""Speculation beyond a draft model (docs/model.md §C3): MTP modules, EAGLE heads, tree drafts."""

import numpy as np
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.optimise.method import make_method
from inference_econ.optimise.optimiser import Problem
from inference_econ.serving.decode import Decoder
from inference_econ.serving.speculative import DraftHeads, cycle_latency, eagle_head, mtp_heads

REFINED = ie.preset("refined")


def heads(**kw):
    base = dict(
        kind="eagle",
        head=ie.load_model("Llama 3 8B"),
        projection_params=0.0,
        copies=1,
        acceptance=(0.8,),
    )
    return DraftHeads(**{**base, **kw})


def test_expected_tokens_of_chains_and_trees():
    chain = heads(acceptance=(0.8,), max_depth=3)
    assert chain.expected_tokens(3) == pytest.approx(1 + 0.8 + 0.64 + 0.512)
    by_depth = heads(acceptance=(0.9, 0.5), max_depth=3)  # the last value repeats
    assert by_depth.expected_tokens(3) == pytest.approx(1 + 0.9 + 0.45 + 0.225)
    tree = heads(acceptance=(0.5,), branching=2, max_depth=2)
    # one of 2 candidates is right with 1 - 0.5^2 = 0.75; 1 + 2 + 4 nodes verified; the first
    # head pass re-reads the 3 positions the last cycle may have accepted, the second expands 2
    c = tree.cycles()[1]
    assert c.expected_tokens == pytest.approx(1 + 0.75 + 0.75**2)
    assert c.verify_tokens == 7 and c.draft_passes == ((2, 1), (3, 1))
    assert heads(acceptance=(0.0,), max_depth=4).expected_tokens(4) == 1.0


def test_draft_tokens_mean_the_same_for_a_draft_model_and_heads():
    # the column is the most tokens one cycle yields: what it yields when every draft is
    # accepted. A draft model of length γ yields up to γ (the paper's §A6); heads of depth D
    # up to D + 1 (their D tokens and the target's own); 1 is no speculation for both
    draft = ie.make_setting("Llama 3 70B", "H100", draft="Llama 3 8B", max_draft_tokens=4).spec
    mtp = ie.make_setting("DeepSeek-V3", "H200", draft_heads="mtp", max_draft_tokens=4).spec
    tree = ie.make_setting("Llama 3 8B", "H100", draft_heads="eagle", tree_branching=2).spec
    assert [c.label for c in draft.cycles()] == [2, 3, 4]
    assert [c.label for c in mtp.cycles()] == [2, 3, 4]  # depths 1, 2, 3
    assert [c.verify_tokens for c in mtp.cycles()] == [2, 3, 4]
    assert [c.label for c in tree.cycles()] == [2, 3, 4, 5]  # the default --max-draft 5
    assert [c.verify_tokens for c in tree.cycles()] == [3, 7, 15, 31]  # 1 + 2 + ... + 2^D
    for spec in (draft, mtp, tree):
        certain = spec.with_acceptance(1.0)
        assert [c.expected_tokens for c in certain.cycles()] == [c.label for c in spec.cycles()]
    # at α = 0.8 a chain of depth 2 yields 1 + 0.8 + 0.64 = 2.44 of its 3 tokens
    assert mtp.with_acceptance(0.8).cycles()[1].expected_tokens == pytest.approx(2.44)
    # --max-draft 1 would speculate with neither: refused, not silently turned off
    for kw, flag in ((dict(draft="Llama 3 8B"), "--draft"), (dict(draft_heads="eagle"), "")):
        with pytest.raises(ie.SpecError, match=f"no speculation.*drop draft.*{flag}"):
            ie.make_setting("Llama 3 8B", "H100", max_draft_tokens=1, **kw)
    row = ie.point("Llama 3 8B", "H100", gpus=1, batch=1, draft_heads="eagle", acceptance=0.9)
    assert row.draft_tokens == 5  # depth 4, the deepest --max-draft 5 allows


def test_a_tree_too_large_is_refused():
    with pytest.raises(ie.SpecError, match="lower --max-draft or the branching"):
        heads(branching=8, max_depth=5)


@pytest.fixture(scope="module")
def dsv3_mtp():
    return mtp_heads(ie.load_model("DeepSeek-V3"), (0.0,), max_depth=3)


def test_deepseek_mtp_module_size_and_memory(dsv3_mtp):
    # one MLA + MoE layer and the 2·7168 x 7168 projection: 11.6B (README_WEIGHTS.md: 11.5B)
    work = dsv3_mtp.draft_workload(REFINED)
    assert work.total_params - work.shared_embedding_params == pytest.approx(11.5e9, rel=0.02)
    assert work.kv_bytes_per_token == 576 * 2  # its own MLA cache: one layer
    setting = ie.make_setting("DeepSeek-V3", "H200", draft_heads="mtp", assumptions="refined")
    plain = ie.make_setting("DeepSeek-V3", "H200", assumptions="refined")
    grew = Decoder(setting).target.weights_total_bytes - Decoder(plain).target.weights_total_bytes
    assert grew == pytest.approx(work.weights_total_bytes)  # resident beside the target


def test_acceptance_zero_gains_nothing_and_costs_the_heads():
    setting = ie.make_setting(
        "DeepSeek-V3",
        "H200",
        draft_heads="mtp",
        acceptance=0.0,
        max_draft_tokens=3,
        assumptions="refined",
    )
    d = Decoder(setting)
    assert [c.label for c in setting.spec.cycles()] == [2, 3]  # depths 1 and 2
    N, B = np.array([16.0, 64.0]), np.array([8.0, 256.0])
    target, draft = d.layouts(N, B)
    T = {s: lay.latency_s for s, lay in target.items()}
    D = {s: lay.latency_s for s, lay in draft.items()}
    for cycle in setting.spec.cycles():
        assert cycle.expected_tokens == 1.0
        heads_s = sum(n * D[s] for s, n in cycle.draft_passes)
        assert np.allclose(cycle_latency(cycle, T, D), T[cycle.verify_tokens] + heads_s)
        assert np.all(heads_s > 0) and np.all(T[cycle.verify_tokens] >= T[1])
        assert np.all(cycle_latency(cycle, T, D) > T[1])  # slower than not speculating
    row = d.describe(N, B)
    assert (row.draft_tokens == 1).all()  # no speculation chosen
    assert np.allclose(row.latency_s, T[1])


def test_higher_acceptance_is_never_slower():
    n = np.array([1.0, 4.0, 16.0])
    b = np.array([1.0, 16.0, 256.0])
    method = make_method("grid", grid_points=8)
    previous = None
    for a in (0.0, 0.4, 0.8, 1.0):
        s = ie.make_setting(
            "Llama 3 8B",
            "H100",
            draft_heads="eagle",
            acceptance=a,
            tree_branching=2,
            max_draft_tokens=3,
        )
        latency, _ = Problem(s, method).grid_latency(n, b)
        if previous is not None:
            assert np.all(latency <= previous * (1 + 1e-6))
        previous = latency
    none, _ = Problem(ie.make_setting("Llama 3 8B", "H100"), method).grid_latency(n, b)
    # certain acceptance is never slower than not speculating, and faster where memory-bound
    assert np.all(previous <= none) and previous[0, 0] < none[0, 0] / 2


def test_eagle_head_on_a_dense_model():
    llama = ie.load_model("Llama 3 70B")
    head = eagle_head(llama, (0.8, 0.6), max_depth=4)
    work = head.draft_workload(REFINED)
    # one Llama 3 70B layer (attention 150,994,944 + feed-forward 704,643,072) and the
    # 2·8192 x 8192 input projection; the output head is shared, so not resident again
    layer = 150_994_944 + 704_643_072
    assert work.weights_total_bytes == (layer + 2 * 8192 * 8192) * 2
    assert work.kv_bytes_per_token == 16 * 128 * 2
    assert head.acceptance_at(1) == 0.8 and head.acceptance_at(4) == 0.6


def test_settings_errors_are_clear():
    with pytest.raises(ie.SpecError, match="either a draft model"):
        ie.make_setting("Llama 3 70B", "H100", draft="Llama 3 8B", draft_heads="eagle")
    with pytest.raises(ie.SpecError, match="has no multi-token prediction modules"):
        ie.make_setting("Llama 3 70B", "H100", draft_heads="mtp")
    with pytest.raises(ie.SpecError, match="applies to draft heads only"):
        ie.make_setting("Llama 3 70B", "H100", draft="Llama 3 8B", tree_branching=2)
    with pytest.raises(ie.SpecError, match="did you mean 'mtp'"):
        ie.make_setting("DeepSeek-V3", "H100", draft_heads="mpt")


def test_frontier_with_mtp_and_a_tree_from_the_command_line():
    result = CliRunner().invoke(
        main,
        [
            "frontier",
            "Qwen3-Next-80B-A3B",
            "-H",
            "MI355X",
            "--draft-heads",
            "mtp",
            "--acceptance-by-position",
            "0.9,0.7",
            "--tree-branching",
            "2",
            "--max-draft",
            "3",
            "--assumptions",
            "refined",
            "--grid-points",
            "16",
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    header = next(line for line in result.stdout.splitlines() if not line.startswith("#"))
    assert "draft_tokens" in header


def test_acceptance_by_position_with_one_acceptance_is_refused():
    """The rates by depth replace --acceptance: both given, one was ignored (a point at
    --acceptance 0.7 --acceptance-by-position 0.9 priced 0.9 at every depth)."""
    args = ["point", "Llama 3 70B", "-H", "H100-paper", "--gpus", "8", "--batch", "64",
            "--draft-heads", "eagle", "--acceptance", "0.7", "--acceptance-by-position", "0.9"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(
        "error: --acceptance-by-position: cannot be given with --acceptance"
    )
    assert result.stderr.count("\n") == 1
    with pytest.raises(ie.SpecError, match="acceptance_by_position.*given with acceptance"):
        ie.make_setting("Llama 3 70B", "H100", draft_heads="eagle", acceptance=0.7,
                        acceptance_by_position=[0.9])  # fmt: skip
    alone = ie.make_setting(
        "Llama 3 70B", "H100", draft_heads="eagle", acceptance_by_position=[0.9]
    )
    assert alone.spec.acceptance == (0.9,)


def test_eagle_layers_with_mtp_heads_is_refused():
    """MTP heads are the model's own modules: an EAGLE depth with them was ignored (the same
    164.1 tok/s with --eagle-layers 2 as without)."""
    args = ["point", "DeepSeek-V3", "-H", "H200", "--gpus", "16", "--batch", "64",
            "--draft-heads", "mtp", "--eagle-layers", "2"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("error: --eagle-layers: applies to EAGLE heads only")
    assert result.stderr.count("\n") == 1
    mtp = ie.make_setting("DeepSeek-V3", "H200", draft_heads="mtp", eagle_layers=1)
    assert mtp.spec.kind == "mtp"
    eagle = ie.make_setting("Llama 3 70B", "H100", draft_heads="eagle", eagle_layers=2)
    assert eagle.spec.kind == "eagle"
