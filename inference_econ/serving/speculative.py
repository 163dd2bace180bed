"""Speculative decoding: a draft model (docs/model.md §A6, paper §4.1) and draft heads on the
target's own features - multi-token prediction modules and EAGLE heads, as chains or top-k
trees (§C3).

Every method is a list of ``Cycle`` s: the target verifies ``verify_tokens`` tokens per request
in one pass after some draft passes, and a cycle yields ``expected_tokens`` tokens on average.
The time per generated token of a cycle is (target pass + draft passes) / expected tokens;
``combine`` takes the fastest cycle, or no speculation, at every configuration.

* Draft model (the paper's method, unchanged): γ draft passes with S = 1, a verification pass
  with S = γ, ``(1 - α^γ)/(1 - α)`` tokens per cycle.
* Draft heads: a head of depth ``D`` drafts ``D`` tokens along a chain (``branching = 1``) or a
  tree with ``k`` candidates per node. Its first pass re-reads the ``D + 1`` positions the last
  cycle may have accepted (the head keeps its own KV cache) and proposes depth 1; pass ``i``
  expands the ``k^(i-1)`` nodes of depth ``i - 1``. The target verifies the root and every node,
  ``1 + k + … + k^D`` tokens. With top-1 acceptance ``α_i`` at depth ``i``, one of ``k``
  candidates is accepted with ``q_i = 1 - (1 - α_i)^k`` and a cycle yields
  ``1 + Σ_i Π_{j<=i} q_j`` tokens (the accepted drafts and the target's own next token).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal, get_args

import numpy as np

from .. import settings as table
from ..errors import SpecError, expect, short, warn
from ..model.assumptions import Assumptions
from ..model.workload import Workload, compile_workload
from ..specs.architecture import Architecture, FeedForward, LayerGroup
from ..specs.schema import check_number

#: Kinds of draft heads (``draft_heads`` setting).
HeadKind = Literal["mtp", "eagle"]
HEAD_KINDS: tuple[HeadKind, ...] = get_args(HeadKind)
#: Largest verification pass a tree may ask for, tokens per request.
MAX_TREE_TOKENS = 4096


@dataclass(frozen=True)
class Cycle:
    """One way to speculate: the passes of a cycle and the tokens it yields on average."""

    #: The ``draft_tokens`` column: the most tokens the cycle can yield (§C3), γ for a draft
    #: model, D + 1 for heads of depth D; 1 stands for no speculation.
    label: int
    #: Tokens per request of the target's verification pass.
    verify_tokens: int
    #: (tokens per request, number) of the draft passes.
    draft_passes: tuple[tuple[int, int], ...]
    expected_tokens: float


def _probability(value: float, field: str) -> float:
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise SpecError("argument", field, f"is {short(value)}", "expected a probability in [0, 1]")
    return float(value)


@dataclass(frozen=True)
class SpecDecoding:
    """A draft model, its per-token acceptance probability and the longest draft (§A6)."""

    draft: Architecture
    acceptance: float
    max_draft_tokens: int = 5

    def __post_init__(self) -> None:
        table.option("acceptance").check(self.acceptance)
        table.option("max_draft_tokens").check(self.max_draft_tokens)

    @property
    def draft_lengths(self) -> range:
        """The draft lengths γ tried besides no speculation (paper: 2 … γ_max)."""
        return range(2, int(self.max_draft_tokens) + 1)

    @property
    def draft_architecture(self) -> Architecture:
        return self.draft

    def cycles(self) -> tuple[Cycle, ...]:
        return tuple(
            Cycle(g, g, ((1, g),), expected_tokens(self.acceptance, g)) for g in self.draft_lengths
        )

    def draft_workload(self, assumptions: Assumptions) -> Workload:
        return compile_workload(self.draft, assumptions)

    def resident(self, assumptions: Assumptions) -> tuple[Workload | None, int]:
        """Weights that must sit beside the target's (none: the paper charges the draft
        model's memory to no one, §A6)."""
        return None, 0

    def with_acceptance(self, value: float) -> SpecDecoding:
        return dataclasses.replace(self, acceptance=value)

    def describe(self) -> str:
        return f"draft model {self.draft.name}, acceptance {self.acceptance:g}"


@dataclass(frozen=True)
class DraftHeads:
    """Draft heads on the target's features: MTP modules or an EAGLE head (§C3).

    ``head`` is one head as a small model (its decoder layers); ``projection_params`` the
    weights that mix the target's feature with the next token's embedding; ``copies`` the heads
    resident in memory (MTP: one per module; a depth beyond them reuses the last module).
    ``acceptance`` gives the top-1 acceptance at depths 1, 2, … (the last value repeats).
    ``max_depth`` is the deepest draft tried, one less than the most tokens a cycle may yield
    (``max_draft_tokens``; 0 tries none).
    """

    kind: HeadKind
    head: Architecture
    projection_params: float
    copies: int
    acceptance: tuple[float, ...]
    max_depth: int = 5
    branching: int = 1

    def __post_init__(self) -> None:
        if self.kind not in HEAD_KINDS:
            raise SpecError(
                "argument", "draft_heads", f"unknown kind {self.kind!r}", f"choose {HEAD_KINDS}"
            )
        if not self.acceptance:
            raise SpecError("argument", "acceptance_by_position", "is empty", "give probabilities")
        for a in self.acceptance:
            _probability(a, "acceptance_by_position")
        for field, least, most in (("max_depth", 0, 64), ("branching", 1, 16)):
            # the table's bounds of max_draft_tokens and tree_branching
            check_number(
                getattr(self, field), "argument", field, minimum=least, maximum=most, integer=True
            )
        if tree_tokens(self.branching, self.max_depth) > MAX_TREE_TOKENS:
            raise SpecError(
                "argument",
                "tree_branching",
                f"a tree of {self.branching} candidates per node and depth {self.max_depth} has "
                f"{tree_tokens(self.branching, self.max_depth)} nodes",
                f"keep 1 + k + ... + k^depth <= {MAX_TREE_TOKENS}: lower --max-draft or the branching",
            )

    @property
    def draft_architecture(self) -> Architecture:
        return self.head

    def acceptance_at(self, depth: int) -> float:
        """Top-1 acceptance at ``depth`` (1-based; the last given value repeats)."""
        return self.acceptance[min(depth, len(self.acceptance)) - 1]

    def expected_tokens(self, depth: int) -> float:
        """Tokens a cycle of this depth yields: 1 + Σ_i Π_{j<=i} q_j (§C3)."""
        total, reach = 1.0, 1.0
        for i in range(1, depth + 1):
            reach *= 1.0 - (1.0 - self.acceptance_at(i)) ** self.branching
            total += reach
        return total

    def cycles(self) -> tuple[Cycle, ...]:
        out = []
        k = self.branching
        for depth in range(1, int(self.max_depth) + 1):
            passes: dict[int, int] = {depth + 1: 1}  # re-read the accepted path, propose depth 1
            for i in range(2, depth + 1):
                passes[k ** (i - 1)] = passes.get(k ** (i - 1), 0) + 1
            out.append(
                Cycle(
                    depth + 1,  # D drafted tokens and the target's own next one
                    tree_tokens(k, depth),
                    tuple(sorted(passes.items())),
                    self.expected_tokens(depth),
                )
            )
        return tuple(out)

    def draft_workload(self, assumptions: Assumptions) -> Workload:
        """One head as a workload: its layers, the input projection, and the shared output head
        (computed and read every pass, not resident again)."""
        work = compile_workload(self.head, assumptions)
        d = float(self.head.d_model)
        logits = float(self.head.vocab_size) * d
        return dataclasses.replace(
            work,
            embedding_params=logits,
            shared_embedding_params=logits,
            extra_matrices=((d, self.projection_params / d),) if self.projection_params else (),
        )

    def resident(self, assumptions: Assumptions) -> tuple[Workload, int]:
        """The head's weights and KV cache live beside the target's: (workload, copies)."""
        return self.draft_workload(assumptions), int(self.copies)

    def with_acceptance(self, value: float) -> DraftHeads:
        return dataclasses.replace(self, acceptance=(value,))

    def describe(self) -> str:
        acc = ", ".join(f"{a:g}" for a in self.acceptance)
        tree = f", top-{self.branching} tree" if self.branching > 1 else ""
        layers = f", {self.head.layers} decoder layers each" if self.head.layers > 1 else ""
        return (
            f"{self.kind} heads ({self.head.name}{layers}), acceptance by depth {acc}{tree}, up to "
            f"{self.max_depth + 1} tokens per cycle (depth {self.max_depth})"
        )


#: How far apart a draft's and its target's vocabularies may be and still be one tokenizer's:
#: checkpoints of one family pad their embedding tables differently (Qwen2.5-7B's 152,064
#: rows beside Qwen2.5-0.5B's 151,936, 0.08 %); other tokenizers differ by far more (Mistral
#: 7B's 32,000 beside Llama 3's 128,256).
VOCABULARY_PADDING = 0.02


def shares_vocabulary(target: Architecture, draft: Architecture) -> bool:
    """Whether a draft's vocabulary can be its target's tokenizer's (``VOCABULARY_PADDING``):
    the target verifies the draft's tokens, so an engine runs only such a pair."""
    a, b = int(target.vocab_size), int(draft.vocab_size)
    return abs(a - b) <= VOCABULARY_PADDING * max(a, b)


def check_draft(target: Architecture, draft: Architecture, fix: str = "") -> None:
    """Warn when the draft model is the target itself (§A6): drafting with the full model
    costs a target pass per draft token, so speculation never beats plain decoding. (A draft
    of another tokenizer is priced as a cost, as the paper's own tables pair a Llama 3 draft
    with Mixtral; ``export``, which launches it, refuses it: ``shares_vocabulary``.)"""
    if draft.name != target.name:
        return
    bits = draft.precision.weight_bits
    cost = (
        "each draft token costs a full target pass, so speculation never pays off"
        if bits == target.precision.weight_bits
        else f"it drafts with a {bits:g}-bit copy of the target"
    )
    warn(
        f"the draft model {draft.name} is the target model itself (self-speculation): {cost}; "
        "a draft is normally a smaller model that shares the target's tokenizer" + fix
    )


def tree_tokens(branching: int, depth: int) -> int:
    """Nodes of a full tree with the root: 1 + k + … + k^depth."""
    return sum(int(branching) ** i for i in range(int(depth) + 1))


def expected_tokens(acceptance: float, draft_tokens: int) -> float:
    """Tokens produced per verification cycle of a draft model: (1 - α^γ)/(1 - α) (γ when
    α = 1; §A6)."""
    if acceptance >= 1.0:
        return float(draft_tokens)
    return (1.0 - acceptance**draft_tokens) / (1.0 - acceptance)


def cycle_latency(cycle: Cycle, target_passes: dict, draft_passes: dict):
    """Seconds per generated token of one cycle: (T_verify + Σ n·D_s) / expected tokens (the
    paper's Eq. 46, (T_γ + γ·D) / E[tokens], for a draft model's cycle)."""
    total = target_passes[cycle.verify_tokens]
    for tokens, count in cycle.draft_passes:
        total = total + count * draft_passes[tokens]
    return total / cycle.expected_tokens


def combine(target_passes: dict, draft_passes, spec):
    """Best per-token latency and cycle at every point, from target passes {S: T_S} and draft
    passes {S: D_S} (an array stands for {1: D}).

    Returns (latency, verify tokens) arrays; 1 verified token means no speculation.
    """
    best = np.asarray(target_passes[1], dtype=float)
    verify = np.ones(best.shape, dtype=np.int64)
    if spec is None:
        return best, verify
    if not isinstance(draft_passes, dict):
        draft_passes = {1: draft_passes}
    for cycle in spec.cycles():
        cand = cycle_latency(cycle, target_passes, draft_passes)
        better = cand < best
        best = np.where(better, cand, best)
        verify = np.where(better, cycle.verify_tokens, verify)
    return best, verify


def target_tokens(spec) -> list[int]:
    """Tokens per request of every target pass a setting needs: 1 and each verification."""
    if spec is None:
        return [1]
    return [1] + sorted({c.verify_tokens for c in spec.cycles()} - {1})


def draft_tokens(spec) -> list[int]:
    """Tokens per request of every draft pass a setting needs."""
    if spec is None:
        return []
    return sorted({s for c in spec.cycles() for s, _ in c.draft_passes})


def draft_labels(spec, verify):
    """The ``draft_tokens`` column from the verified tokens of the chosen cycles: the most
    tokens each cycle can yield, 1 without speculation (§C3)."""
    verify = np.asarray(verify)
    if spec is None:
        return verify
    out = np.ones(verify.shape, dtype=np.int64)
    for c in spec.cycles():
        out = np.where(verify == c.verify_tokens, c.label, out)
    return out


# --- building heads (§C3) --------------------------------------------------------------------


def _target(model) -> Architecture:
    """The target model of draft heads: an ``Architecture``, or a model's name or file."""
    from ..specs.architecture import load_model

    if isinstance(model, Architecture):
        return model
    if isinstance(model, (str, PurePath)) and str(model):
        return load_model(str(model))
    raise SpecError(
        "argument",
        "model",
        f"expected an Architecture or a model's name, got {short(model)}",
        "give ie.load_model('DeepSeek-V3') or the name itself",
    )


def mtp_heads(model: Architecture, acceptance, max_depth: int = 5, branching: int = 1):
    """The multi-token prediction modules a model ships (its ``mtp:`` block) as draft heads
    (docs/model.md §C3).

    Parameters
    ----------
    model : Architecture
        The target model; it must have an ``mtp:`` block.
    acceptance : float or sequence of float
        Top-1 acceptance at depths 1, 2, ... (the last value repeats).
    max_depth : int
        Deepest draft tried (a cycle yields at most ``max_depth + 1`` tokens).
    branching : int
        Candidates per depth (1: a chain; more: a tree verified in one pass).

    Returns
    -------
    DraftHeads
        Heads of kind "mtp", one resident copy per module.

    Raises
    ------
    SpecError
        The model has no multi-token prediction modules.

    Examples
    --------
    >>> import inference_econ as ie
    >>> heads = ie.mtp_heads(ie.load_model("DeepSeek-V3"), 0.8)
    >>> heads.kind, heads.copies, heads.max_depth
    ('mtp', 1, 5)
    """
    model = _target(model)
    mtp = model.mtp
    if mtp is None:
        raise SpecError(
            model.source_file or model.name,
            "mtp",
            f"{model.name} has no multi-token prediction modules",
            "use draft_heads: eagle, or add an 'mtp:' block to the model file",
        )
    g = model.group(mtp.layer_group)
    head = _head(model, f"{model.name} MTP module", g.ffn, 1, g.mixer, g.sliding_window_tokens)
    return DraftHeads(
        "mtp",
        head,
        float(mtp.projection_params),
        mtp.modules,
        _acceptances(acceptance),
        max_depth,
        branching,
    )


def eagle_head(
    model: Architecture, acceptance, max_depth: int = 5, branching: int = 1, layers: int = 1
):
    """An EAGLE-style head: ``layers`` decoder layers with the target's attention and a dense
    feed-forward block (the target's first dense one; for an all-MoE target, one as wide as a
    token's active experts), and an input projection of 2·d x d (§C3).

    Parameters
    ----------
    model : Architecture
        The target model the head drafts for.
    acceptance : float or sequence of float
        Top-1 acceptance at depths 1, 2, ... (the last value repeats).
    max_depth : int
        Deepest draft tried.
    branching : int
        Candidates per depth (1: a chain; more: a tree verified in one pass).
    layers : int
        Decoder layers of the head.

    Returns
    -------
    DraftHeads
        One head of kind "eagle".

    Examples
    --------
    >>> import inference_econ as ie
    >>> head = ie.eagle_head(ie.load_model("Llama 3 70B"), (0.8, 0.6))
    >>> head.kind, head.acceptance
    ('eagle', (0.8, 0.6))
    """
    model = _target(model)
    expect(model, Architecture, "model", "an Architecture", "e.g. ie.load_model('Llama 3 70B')")
    dense = next((g.ffn for g in model.layer_groups if not g.ffn.is_moe), None)
    if dense is None:
        f = model.layer_groups[-1].ffn
        width = f.d_ff * f.active_experts + (f.shared_d_ff or f.d_ff) * f.shared_experts
        dense = FeedForward(d_ff=width, matrices_in=f.matrices_in, matrices_out=f.matrices_out)
    check_number(layers, "argument", "layers", minimum=1, maximum=8, integer=True)
    head = _head(model, f"{model.name} EAGLE head", dense, layers, None, None)
    projection = 2.0 * model.d_model * model.d_model
    return DraftHeads("eagle", head, projection, 1, _acceptances(acceptance), max_depth, branching)


def _head(model: Architecture, name, ffn, layers, mixer, window) -> Architecture:
    group = LayerGroup(
        name="head", layers=int(layers), ffn=ffn, sliding_window_tokens=window, mixer=mixer
    )
    return dataclasses.replace(
        model,
        name=name,
        layer_groups=(group,),
        aliases=(),
        published_total_params=None,
        published_active_params=None,
        mtp=None,
    )


def _acceptances(acceptance) -> tuple[float, ...]:
    """A probability or a sequence of them, as floats (each checked by ``DraftHeads``)."""
    if isinstance(acceptance, (int, float)) and not isinstance(acceptance, bool):
        return (check_number(acceptance, "argument", "acceptance", minimum=0, maximum=1),)
    if isinstance(acceptance, (str, bytes)) or not hasattr(acceptance, "__iter__"):
        expect(acceptance, (list, tuple), "acceptance", "a probability or a list of them", "0.7")
    for a in acceptance:
        expect(a, numbers.Real, "acceptance", "probabilities", "e.g. [0.8, 0.6]")
    return tuple(float(a) for a in acceptance)
