"""Parameters, FLOP and HBM bytes of one forward pass (docs/model.md §A1-§A2), as pure functions.

``Workload`` compiles an architecture, a precision and the assumptions into the handful of
numbers the latency model needs, so the search over layouts works on plain floats and arrays.
Layer groups are summed over; with one group every formula is the paper's. Hybrids (§C2) mix
attention layers with recurrent ones: the token mixer's weights, reads and all-reduce widths are
averaged over the layers, and a recurrent group caches a fixed state instead of positions.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from typing import get_args

import numpy as np

from ..errors import SpecError
from ..specs.architecture import Architecture
from ..specs.features import ModelClass
from .assumptions import Assumptions, MatmulReplication, MlaDecode
from .values import add_into, divide_into, maximum_into, minimum_into, multiply_into

#: ``matmul_activation_bytes_per_token`` of Python floats, by its arguments: a step model asks
#: for a few dozen of them thousands of times (numpy's scalar operations cost microseconds).
_SCALAR_BYTES: dict[tuple, object] = {}
_SCALAR_BYTES_MAX = 4096


def matmul_activation_bytes_per_token(m, k, tp, bytes_per_activation, replication="clipped"):
    """HBM activation bytes per token of an ``m x k`` matmul under tensor parallelism ``tp``
    (§A2). 2-D partitioning replicates the inputs t1 times and the outputs tp/t1 times,
    t1 = clip(sqrt(m·tp/k), 1, tp): t1·k + (tp/t1)·m elements, or with
    the paper's earlier ``"unclipped"`` rule t1·k + t2·m, t1 = max(1, √(m/k)·tp),
    t2 = max(1, √(k/m)·tp) (the ``paper-table-5`` preset). Of Python floats, kept (the result
    is a numpy scalar: never changed in place)."""
    b = bytes_per_activation
    if type(m) is float and type(k) is float and type(tp) is float and type(b) is float:
        key = (m, k, tp, b, replication)
        found = _SCALAR_BYTES.get(key)
        if found is None:
            if len(_SCALAR_BYTES) >= _SCALAR_BYTES_MAX:
                _SCALAR_BYTES.clear()
            found = _SCALAR_BYTES[key] = _activation_bytes(m, k, tp, b, replication)
        return found
    return _activation_bytes(m, k, tp, bytes_per_activation, replication)


def _activation_bytes(m, k, tp, bytes_per_activation, replication):
    """``matmul_activation_bytes_per_token``, computed."""
    if replication == "unclipped":
        t1 = np.maximum(1.0, np.sqrt(m / k) * tp)
        t2 = np.maximum(1.0, np.sqrt(k / m) * tp)
        return (t1 * k + t2 * m) * bytes_per_activation
    # clip(x, 1, max(tp, 1)) as the two operations clip stands for (without its dispatch);
    # each operation in place on the new array it made (the same numbers)
    t1 = divide_into(m * tp, k)
    t1 = np.sqrt(t1, out=t1 if type(t1) is np.ndarray else None)
    t1 = minimum_into(maximum_into(t1, 1.0), np.maximum(tp, 1.0))
    both = add_into(t1 * k, multiply_into(tp / t1, m))
    return multiply_into(both, bytes_per_activation)


@dataclass(frozen=True)
class GroupWork:
    """The feed-forward side of one layer group, reduced to numbers (§A1)."""

    layers: int
    d_ff: float
    matrices_in: int
    matrices_out: int
    experts: int  # routed experts E (shared ones folded in under the paper's accounting)
    active: int  # routed experts per token k
    sparsity: float  # s = E // k (paper) or E / k
    shared: int  # always-active experts counted apart (0 under the paper's accounting)
    shared_d_ff: float
    window: float  # cached positions are min(n, window); inf for full attention, 0 if recurrent
    #: Recurrent mixers (§C2): state bytes per sequence and FLOP per token, per layer.
    state_bytes: float = 0.0
    recurrent_flop_per_token: float = 0.0
    #: Node-limited routing (§B11): experts in groups, a token's in at most this many (0: any).
    expert_groups: int = 1
    groups_per_token: int = 0

    def routed_fraction_read(self, tokens):
        """Expected fraction of routed experts hit by ``tokens`` tokens (uniform routing, §A2)."""
        if self.experts <= 1:
            return np.ones_like(np.asarray(tokens, dtype=np.result_type(tokens, np.float32)))
        return hit_share(1.0 / self.sparsity, tokens)


def hit_share(chance, tokens):
    """The share of ``n`` experts (or slots) that ``tokens`` tokens hit when each token hits
    any one with probability ``chance`` (uniform routing, §A2): 1 - (1 - chance)^tokens."""
    return 1.0 - (1.0 - chance) ** tokens


def prefix_sums(contexts: np.ndarray) -> np.ndarray:
    """0 and the running sums of ``contexts`` (``Workload.layer_positions_of_many``'s)."""
    out = np.empty(len(contexts) + 1)
    out[0] = 0.0
    np.cumsum(contexts, dtype=float, out=out[1:])
    return out


@dataclass(frozen=True)
class Workload:
    """Everything the cost model needs about one model at one precision (§A1-§A2)."""

    name: str
    d_model: float
    vocab_size: float
    layers: int
    query_heads: float
    kv_vectors: float  # kv = 2H/g keys and values counted together
    #: Heads a whole attention tensor degree must divide (KV heads, or query heads for MQA/MLA).
    tp_heads: int
    head_dim: float
    #: Words of the two 2-D attention all-reduces: d and (H + kv)·dh (§A5).
    attention_heads_words: float
    #: Attention weight matrices (m, k) read per layer (§A2).
    attention_matrices: tuple[tuple[float, float], ...]
    attention_params_per_layer: float
    #: KV-cache bytes per cached position per layer.
    kv_bytes_per_position_per_layer: float
    #: Attention-context FLOP per token per cached position per layer: 4·x·H (§A2).
    context_flop_per_position_per_layer: float
    embedding_params: float
    groups: tuple[GroupWork, ...]
    bytes_per_weight: float
    bytes_per_activation: float
    bytes_per_kv_element: float
    weight_bits: float
    mean_context_over_pass: bool
    #: Hybrids (§C2): the share of layers whose mixer is attention, and the recurrent mixers'
    #: matrices as (m, k, share of layers). ``attention_params_per_layer`` and
    #: ``attention_heads_words`` are then averages over all layers.
    attention_share: float = 1.0
    recurrent_matrices: tuple[tuple[float, float, float], ...] = ()
    #: Layers whose mixer is attention (KV cache per token; None: all layers).
    attention_layers: int | None = None
    #: Dense matrices applied once per token outside the layers (a draft head's input
    #: projection, §C3), as (m, k).
    extra_matrices: tuple[tuple[float, float], ...] = ()
    #: Embedding parameters that live in another model's weights (a draft head sharing its
    #: target's output head, §C3): computed and read, but not resident again.
    shared_embedding_params: float = 0.0
    #: 2-D activation replication rule: "clipped" (§A2) or the earlier "unclipped".
    matmul_replication: MatmulReplication = "clipped"
    #: Bits of the format the GEMMs run at (§B5): the weights' (paper) or the wider of the
    #: weights' element format and the activation operand (``precision_formats``); None: the
    #: weights' bits.
    gemm_bits: float | None = None
    #: Bits of the format attention runs at (§B5: the KV cache's); None: the GEMMs' rate.
    attention_bits: float | None = None
    #: The model's class for an engine's layouts (§F11): "mla", "moe" or "dense".
    model_class: ModelClass = "dense"
    #: The routing of real tokens over its experts where the model file states it
    #: (``Architecture.expert_routing``); None: its class's (``moe.routing_of``).
    expert_routing: str | None = None
    #: Redundant copies of routed experts in each MoE layer (EPLB, §F7 "Redundant experts").
    redundant_experts: float = 0.0
    #: Ways the attention KV cache splits over attention tensor ranks (§B13): the KV heads
    #: (GQA, MHA), one for MQA and MLA's shared latent; inf: never replicated.
    kv_shards: float = math.inf
    #: Bytes per element of the expert dispatch (§B11): the GEMMs' activation operand where it
    #: is narrower than the activations (FP8 dispatch, with its block scales); None: the
    #: activations' bytes.
    dispatch_bytes_per_element: float | None = None
    #: Bytes per weight outside the routed experts (attention, router, embeddings, shared
    #: experts, dense layers) where the checkpoint stores them in another format than its
    #: experts (``Precision.dense_weight_bits``, §B5); None: ``bytes_per_weight``.
    dense_bytes_per_weight: float | None = None
    #: Bits of the format those weights' GEMMs run at; None: ``gemm_bits``.
    dense_gemm_bits: float | None = None
    #: Whether a sliding-window layer's KV cache holds only its window (§E2: the engine frees
    #: the positions beyond it); False: it holds the whole context, as the engine's cache
    #: manager allocates it (``EngineProfile.sliding_window_cache`` "full"), while attention
    #: still reads only the window.
    cache_windows: bool = True
    #: The 8-bit weights carry block scales (``Precision.weight_block_scaled``): the kernel
    #: tables' block-scaled FP8 GEMMs and fused MoE price them (§F13).
    weight_block_scaled: bool = False

    #: Bytes per weight of the embedding table and output head (``Precision.embedding_bits``).
    embedding_bytes_per_weight: float | None = None

    @property
    def dense_weight_bytes(self) -> float:
        """Bytes per weight outside the routed experts."""
        d = self.dense_bytes_per_weight
        return self.bytes_per_weight if d is None else d

    # --- parameters (§A1) ------------------------------------------------------------------
    def ff_params_per_expert(self, g: GroupWork) -> float:
        return (g.matrices_in + g.matrices_out) * self.d_model * g.d_ff

    def shared_ff_params(self, g: GroupWork) -> float:
        return g.shared * (g.matrices_in + g.matrices_out) * self.d_model * g.shared_d_ff

    @property
    def extra_params(self) -> float:
        return float(sum(m * k for m, k in self.extra_matrices))

    @property
    def total_params(self) -> float:
        ff = sum(
            g.layers * (g.experts * self.ff_params_per_expert(g) + self.shared_ff_params(g))
            for g in self.groups
        )
        return (
            self.layers * self.attention_params_per_layer
            + ff
            + self.embedding_params
            + self.extra_params
        )

    @property
    def active_ff_params(self) -> float:
        return sum(
            g.layers
            * (g.experts * self.ff_params_per_expert(g) / g.sparsity + self.shared_ff_params(g))
            for g in self.groups
        )

    @property
    def routed_active_params(self) -> float:
        """Parameters of the routed experts one token runs (k of E a layer), every layer."""
        return sum(
            g.layers * g.experts * self.ff_params_per_expert(g) / g.sparsity
            for g in self.groups
            if g.experts > 1
        )

    @property
    def active_params(self) -> float:
        return (
            self.layers * self.attention_params_per_layer
            + self.active_ff_params
            + self.embedding_params
            + self.extra_params
        )

    @property
    def routed_expert_params(self) -> float:
        """Parameters of every routed expert of every layer."""
        return sum(
            g.layers * g.experts * self.ff_params_per_expert(g)
            for g in self.groups
            if g.experts > 1
        )

    @property
    def redundant_expert_params(self) -> float:
        """Parameters of the redundant expert copies of every MoE layer (0 without them)."""
        per = (g.layers * self.ff_params_per_expert(g) for g in self.groups if g.experts > 1)
        return self.redundant_experts * sum(per)

    @property
    def weights_total_bytes(self) -> float:
        """Bytes of the weights that must be resident (shared embeddings left out, §C3): the
        routed experts and their copies, the embedding tables and the rest in theirs (§B5)."""
        resident = self.total_params - self.shared_embedding_params
        copies = self.redundant_expert_params * self.bytes_per_weight + embedding_format_bytes(self)
        if self.dense_bytes_per_weight is None:
            return resident * self.bytes_per_weight + copies
        experts, dense = self.routed_expert_params, self.dense_weight_bytes
        return experts * self.bytes_per_weight + (resident - experts) * dense + copies

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per token of context, all attention layers (§A1), ignoring windows."""
        layers = self.layers if self.attention_layers is None else self.attention_layers
        return self.kv_bytes_per_position_per_layer * layers

    @property
    def state_bytes_per_sequence(self) -> float:
        """Bytes of the recurrent layers' state per request, whatever the context (§C2)."""
        return float(sum(g.layers * g.state_bytes for g in self.groups))

    # --- KV cache and FLOP (§A2) ------------------------------------------------------------
    def layer_positions(self, context):
        """Cached positions summed over the layers, Σ_g L_g·min(n, window_g) (§A2, §B4): what
        one request of context ``n`` caches (times the KV bytes per position per layer) and
        what one of its tokens attends to (times the FLOP per position per layer). The one
        place a layer's attention window enters what a step reads and attends to (what a request
        holds in the cache: ``held_positions``). A scalar context gives a
        Python float, which leaves the precision of the arrays it multiplies as it is (a
        numpy float64 would make the single-precision grid search double precision,
        docs/model.md "The search")."""
        total = 0.0
        if type(context) is float or type(context) is int:  # the same floats, without numpy
            for g in self.groups:
                w = g.window
                total = total + g.layers * (w if w < context else context)  # min(n, window)
            return float(total)
        for g in self.groups:
            total = total + g.layers * np.minimum(context, g.window)
        return float(total) if np.ndim(total) == 0 else total

    def layer_positions_of_many(self, contexts, ahead=0.0, cums=None, shift=0.0):
        """Σ over requests of ``layer_positions(c + ahead)`` for the sorted array ``contexts``
        (``ahead`` may be an array), in O(groups · log n): Σ min(c + a, w) = Σ (c + a) −
        Σ max(0, c + a − w), the second sum over the requests past the window. ``cums``:
        ``prefix_sums(contexts)``, where the caller keeps them for several calls. ``shift``
        (an array ``ahead`` only): of the contexts ``contexts + shift``, priced from the
        unshifted sums; the same floats as the shifted contexts' own where every context,
        ``shift``, ``ahead`` and window is a whole number (each sum exact)."""
        ctx = np.asarray(contexts, dtype=float)
        if cums is None:
            cums = prefix_sums(ctx)
        total = 0.0
        scalar = type(ahead) is float or type(ahead) is int
        if scalar and not shift:  # the same floats, in Python scalars
            a, n, whole = float(ahead), len(ctx), cums[-1]
            for g in self.groups:
                full = whole + n * a
                if math.isfinite(g.window):
                    idx = int(ctx.searchsorted(g.window - a, side="right"))
                    full = full - (whole - cums[idx] + (n - idx) * (a - g.window))
                total = total + g.layers * full
            return total
        ahead = np.asarray(ahead, dtype=float)
        n = len(ctx)
        whole = cums[-1] + n * shift if shift else cums[-1]
        for g in self.groups:
            full = whole + n * ahead
            if np.isfinite(g.window):
                if shift:  # the shifted contexts' sums: the unshifted ones plus the index x shift
                    idx = np.searchsorted(ctx, g.window - ahead - shift, side="right")
                    below = cums[idx] + idx * shift
                else:
                    idx = np.searchsorted(ctx, g.window - ahead, side="right")
                    below = cums[idx]
                full = full - (whole - below + (n - idx) * (ahead - g.window))
            total = total + g.layers * full
        return total

    def layer_positions_of_whole(self, bases: list, total: int, shift: float, ahead=0.0):
        """``layer_positions_of_many`` of the contexts ``bases + shift`` for a sorted list of
        whole numbers ``bases`` summing to ``total`` (an exact int), ``shift`` and the scalar
        ``ahead`` whole numbers too, every window whole: each sum is then exact in any order,
        so these are the same floats, read from the list without prefix sums (the requests
        on the shorter side of each window summed)."""
        n, a = len(bases), float(ahead)
        whole = float(total) + n * shift  # Σ (b + shift)
        out = 0.0
        for g in self.groups:
            full = whole + n * a
            if math.isfinite(g.window):
                k = bisect_right(bases, g.window - a - shift)
                below = sum(bases[:k]) if 2 * k <= n else float(total) - sum(bases[k:])
                full = full - (whole - (below + k * shift) + (n - k) * (a - g.window))
            out = out + g.layers * full
        return out

    def held_positions(self, context):
        """Cached positions one request of context ``context`` holds in the KV cache, summed over
        the layers: ``layer_positions`` where the cache keeps only a window's positions
        (``cache_windows``), else every attention layer holds the whole context (§E2)."""
        if self.cache_windows:
            return self.layer_positions(context)
        total = 0.0
        for g in self.groups:
            held = g.window if g.window == 0.0 else math.inf  # a recurrent layer holds none
            total = total + g.layers * np.minimum(context, held)
        return float(total) if np.ndim(total) == 0 else total

    def attention_held_bytes(self, context, batch):
        """Bytes the attention layers of ``batch`` requests at ``context`` hold in the KV cache
        (its memory; what a step reads of it: ``attention_kv_bytes``)."""
        return self.kv_bytes_per_position_per_layer * self.held_positions(context) * batch

    def kv_held_bytes(self, context, batch):
        """Bytes ``batch`` requests at context ``context`` hold in the KV cache (its memory; what
        a step reads of it: ``kv_cache_bytes``), recurrent states included."""
        held = self.attention_held_bytes(context, batch)
        if self.recurrent_matrices:  # a fixed state per request (§C2)
            held = held + self.state_bytes_per_sequence * batch
        return held

    def attention_kv_bytes(self, context, batch):
        """Bytes of the attention layers' KV cache of ``batch`` requests at ``context``."""
        return self.kv_bytes_per_position_per_layer * self.layer_positions(context) * batch

    def kv_cache_bytes(self, context, batch):
        """KV-cache bytes of ``batch`` requests at context ``context``."""
        cache = self.attention_kv_bytes(context, batch)
        if self.recurrent_matrices:  # a fixed state per request (§C2)
            cache = cache + self.state_bytes_per_sequence * batch
        return cache

    def kv_replication(self, attention_degree):
        """How many copies of the attention KV cache an attention tensor group of this many
        GPUs holds (§B13): ranks beyond the KV heads (one for MQA and MLA) each keep a copy,
        max(1, degree / kv_shards). Data-parallel attention shards by request instead."""
        return np.maximum(1.0, np.asarray(attention_degree, dtype=float) / self.kv_shards)

    def effective_context(self, context, tokens_per_pass):
        """Context charged to each token of a pass: n (paper) or n + (S - 1)/2."""
        if self.mean_context_over_pass:
            return context + (tokens_per_pass - 1) / 2.0
        return context

    def flop(self, batch, tokens_per_pass, context):
        """(feed-forward, attention-context, projection) FLOP of one pass over the batch."""
        tokens = batch * tokens_per_pass
        ff = 2.0 * self.active_ff_params * tokens
        n = self.effective_context(context, tokens_per_pass)
        ctx = self.context_flop_per_position_per_layer * self.layer_positions(n) * tokens
        if self.recurrent_matrices:  # the state update of recurrent layers (§C2)
            recurrent = sum(g.layers * g.recurrent_flop_per_token for g in self.groups)
            ctx = ctx + recurrent * tokens
        proj = (
            2.0
            * (
                self.layers * self.attention_params_per_layer
                + self.embedding_params
                + self.extra_params
            )
            * tokens
        )
        return ff, ctx, proj

    def routed_expert_flop(self, batch, tokens_per_pass):
        """The routed experts' part of ``flop``'s feed-forward FLOP of one pass (what a fused
        MoE kernel does, charged at its own measured rate under ``measured_kernel_rates``,
        §B15): 2 FLOP a routed parameter a token runs."""
        return 2.0 * self.routed_active_params * (batch * tokens_per_pass)

    def total_flop(self, batch, tokens_per_pass=1, context=0):
        ff, ctx, proj = self.flop(batch, tokens_per_pass, context)
        return ff + ctx + proj

    # --- HBM bytes (§A2) --------------------------------------------------------------------
    def routed_expert_bytes(self, g: GroupWork, tokens):
        """Weight bytes of one layer's routed experts that ``tokens`` tokens read: the experts
        they are expected to hit (§A2)."""
        frac = g.routed_fraction_read(tokens) * (g.experts * (g.matrices_in + g.matrices_out))
        return frac * (self.d_model * g.d_ff * self.bytes_per_weight)

    def ff_bytes(self, g: GroupWork, tokens, tp):
        """(weight, activation) bytes of one layer's feed-forward block over ``tokens``."""
        mats = g.matrices_in + g.matrices_out
        per_token = matmul_activation_bytes_per_token(
            self.d_model, g.d_ff, tp, self.bytes_per_activation, self.matmul_replication
        )
        if g.experts > 1:
            frac = g.routed_fraction_read(tokens) * (g.experts * mats)
            weights = frac * (self.d_model * g.d_ff * self.bytes_per_weight)  # routed_expert_bytes
            acts = frac * (per_token * (tokens / g.sparsity))
        else:
            weights = mats * (self.d_model * g.d_ff * self.dense_weight_bytes)
            acts = (mats * per_token) * tokens
        if g.shared:
            shared_per_token = matmul_activation_bytes_per_token(
                self.d_model, g.shared_d_ff, tp, self.bytes_per_activation, self.matmul_replication
            )
            weights = (
                weights + g.shared * mats * self.d_model * g.shared_d_ff * self.dense_weight_bytes
            )
            acts = acts + (g.shared * mats * shared_per_token) * tokens
        return weights, acts

    def attention_activation_bytes_per_token(self, tp):
        """Activation bytes per token of one layer's attention matmuls (the mixer's, averaged
        over the layers for a hybrid, §C2)."""
        per_token = 0.0
        for m, k in self.attention_matrices:
            per_token = add_into(
                per_token,
                matmul_activation_bytes_per_token(
                    m, k, tp, self.bytes_per_activation, self.matmul_replication
                ),
            )
        if self.recurrent_matrices:
            per_token = per_token * self.attention_share
            for m, k, share in self.recurrent_matrices:
                per_token = per_token + share * matmul_activation_bytes_per_token(
                    m, k, tp, self.bytes_per_activation, self.matmul_replication
                )
        return per_token

    @property
    def attention_matrix_weight_bytes(self) -> float:
        """Weight bytes of one layer's attention matrices (averaged over a hybrid's layers)."""
        total = sum(m * k for m, k in self.attention_matrices) * self.dense_weight_bytes
        if self.recurrent_matrices:
            total = (
                total * self.attention_share
                + sum(share * m * k for m, k, share in self.recurrent_matrices)
                * self.dense_weight_bytes
            )
        return total

    @property
    def unembedding_bytes(self) -> float:
        return self.vocab_size * self.d_model * embedding_weight_bytes(self)

    @property
    def output_weight_bytes(self) -> float:
        """Weights read once per pass outside the layers: the output embedding and any extra
        matrices of a draft head (§A2, §C3)."""
        if not self.extra_matrices:
            return self.unembedding_bytes
        return self.unembedding_bytes + self.extra_params * self.dense_weight_bytes


def embedding_weight_bytes(w: Workload) -> float:
    """Bytes per weight of the embedding table and output head: their own format where the
    checkpoint keeps one (AWQ, GPTQ: 16 bits), else the dense weights'."""
    e = w.embedding_bytes_per_weight
    return w.dense_weight_bytes if e is None else e


def embedding_format_bytes(w: Workload) -> float:
    """Bytes the resident embedding table and output head take beyond the dense weights'
    width (0 unless ``embedding_bytes_per_weight`` is set)."""
    tables = w.embedding_params - w.shared_embedding_params
    return tables * (embedding_weight_bytes(w) - w.dense_weight_bytes)


MLA_DECODES = get_args(MlaDecode)


def mla_decode_costs(heads, nope_dim, rope_dim, value_dim, latent_dim, implementation):
    """(cached elements, attention FLOP) per token of context per layer for the three MLA
    decode implementations (docs/model.md §B3; DeepSeek-V2: 40960 / 576 elements; 0.08 / 33.64 /
    0.28 MFLOP):

    * decompressed - cache full keys (nope + rope) and values; plain attention over them;
    * compressed - cache the latent and rope key; re-expand every cached position each step;
    * absorbed - cache the latent and rope key; W_UK and W_UV absorbed into query and output,
      so scores and values are taken over the latent directly.
    """
    H, dh, r, v, c = heads, nope_dim, rope_dim, value_dim, latent_dim
    attend = 2.0 * H * (dh + r) + 2.0 * H * v  # q·k over nope + rope, then a·v
    if implementation == "decompressed":
        return H * (dh + r + v), attend
    if implementation == "compressed":
        return c + r, 2.0 * c * H * (dh + v) + attend
    if implementation == "absorbed":
        return c + r, 2.0 * H * (c + r) + 2.0 * H * c
    raise SpecError(
        "assumptions",
        "mla_decode",
        f"unknown MLA decode implementation {implementation!r}",
        f"choose {', '.join(MLA_DECODES)}",
    )


def _attention_shape(arch: Architecture, a: Assumptions, kv_bytes: float):
    """(params/layer, matrices, 2-D words, kv bytes/position/layer, ctx FLOP/position/layer)."""
    att = arch.attention
    d = arch.d_model
    H = att.query_heads
    dh = att.head_dim
    if att.kind == "mla":
        c, cq = att.kv_lora_rank, att.q_lora_rank
        kv = 2.0 * H  # g = 1 (§A1)
        if not a.mla_full:
            params = 2 * c * d + cq * d + kv * dh * c + H * dh * cq + H * dh * d
            matrices: tuple[tuple[float, float], ...] = (
                ((c + cq), d),
                ((H + kv) * dh, (c + cq)),
                (d, H * dh),
            )
            return params, matrices, (H + kv) * dh, c * kv_bytes, 4.0 * c * H
        r, v = att.rope_head_dim, att.v_dim
        # Down-projections (query latent, KV latent and rope key fused), the two
        # up-projections and the output projection, as DeepSeek's checkpoints store them.
        matrices = (
            (cq + c + r, d),
            (H * (dh + r), cq if cq else d),
            (H * (dh + v), c),
            (d, H * v),
        )
        params = sum(m * k for m, k in matrices)
        cache, ctx = mla_decode_costs(H, dh, r, v, c, a.mla_decode)
        return params, matrices, (H + kv) * dh, cache * kv_bytes, ctx
    kv = att.kv_vectors
    gate = H if att.output_gate else 0  # the gate's H·dh rows come out of the query projection
    params = (H + gate + kv) * dh * d + H * dh * d
    matrices = (((H + gate + kv) * dh, d), (d, H * dh))
    return params, matrices, (H + gate + kv) * dh, kv * dh * kv_bytes, 4.0 * dh * H


def recurrent_mixer_shape(mixer, d_model: int):
    """(matrices (m, k), other parameters, state elements, FLOP per token, 2-D all-reduce
    width) of one recurrent layer (docs/model.md §C2)."""
    K = mixer.conv_kernel
    if mixer.kind == "mamba":
        inner, n, rank = mixer.inner, mixer.state_dim, mixer.dt_rank
        matrices: tuple[tuple[float, float], ...] = (
            (2 * inner, d_model),
            (rank + 2 * n, inner),
            (inner, rank),
            (d_model, inner),
        )
        # convolution taps and bias, step bias, A (inner x n), D
        other = inner * K + inner + inner + inner * n + inner
        state = inner * n + (K - 1) * inner
        flop = 7.0 * inner * n + 2.0 * inner * K
        return matrices, other, state, flop, 2 * inner
    qk = mixer.key_heads * mixer.key_head_dim
    v = mixer.value_heads * mixer.value_head_dim
    conv_channels = 2 * qk + v
    matrices = ((2 * qk + 2 * v, d_model), (2 * mixer.value_heads, d_model), (d_model, v))
    # convolution taps, per-head decay and step bias, the output norm
    other = conv_channels * K + 2 * mixer.value_heads + mixer.value_head_dim
    state = mixer.value_heads * mixer.key_head_dim * mixer.value_head_dim + (K - 1) * conv_channels
    flop = 7.0 * mixer.value_heads * mixer.key_head_dim * mixer.value_head_dim
    flop += 2.0 * conv_channels * K
    return matrices, other, state, flop, 2 * qk + 2 * v


def _group_work(g, assumptions: Assumptions, d_model: int = 0, kv_bits: float = 16) -> GroupWork:
    """One layer group's feed-forward side as numbers: experts, sparsity, shared experts and
    the attention window under the assumptions (§A1, §B2, §B4)."""
    f = g.ffn
    if assumptions.shared_experts_separate or f.shared_experts == 0:
        experts, active, shared = f.experts, f.active_experts, f.shared_experts
    else:  # the paper folds shared experts into the active count (DeepSeek-V3: k = 9)
        experts, active, shared = f.experts, f.active_experts + f.shared_experts, 0
    if experts == 1:
        sparsity = 1.0
    elif assumptions.exact_sparsity:
        sparsity = experts / active
    else:
        sparsity = float(experts // active)
    window = (
        float(g.sliding_window_tokens)
        if (assumptions.sliding_windows and g.sliding_window_tokens)
        else math.inf
    )
    state_bytes = recurrent_flop = 0.0
    if g.mixer is not None:  # a fixed state instead of cached positions (§C2)
        _, _, state, recurrent_flop, _ = recurrent_mixer_shape(g.mixer, d_model)
        bits = g.mixer.state_bits if g.mixer.state_bits is not None else kv_bits
        window, state_bytes = 0.0, state * bits / 8.0
    return GroupWork(
        layers=g.layers,
        d_ff=float(f.d_ff),
        matrices_in=f.matrices_in,
        matrices_out=f.matrices_out,
        experts=experts,
        active=active,
        sparsity=sparsity,
        shared=shared,
        shared_d_ff=float(f.shared_d_ff or f.d_ff),
        window=window,
        state_bytes=float(state_bytes),
        recurrent_flop_per_token=float(recurrent_flop),
        expert_groups=f.expert_groups,
        groups_per_token=f.groups_per_token,
    )


def compile_workload(arch: Architecture, assumptions: Assumptions) -> Workload:
    """Reduce an architecture, at its precision (``Architecture.with_precision``), to the
    numbers of §A1-§A2."""
    p = arch.precision
    wb, ab, kvb = p.bytes_per_weight, p.bytes_per_activation, p.bytes_per_kv_element
    formats = precision_formats(p) if assumptions.precision_formats else {}
    if formats:
        wb = formats.pop("bytes_per_weight")
    elif p.dense_weight_bits is not None:  # the checkpoint's bytes in every preset
        formats = {"dense_bytes_per_weight": p.dense_weight_bits / 8.0}
    if p.embedding_bits is not None:  # the checkpoint's bytes in every preset
        formats["embedding_bytes_per_weight"] = p.embedding_bits / 8.0
    params, matrices, heads_words, kv_layer, ctx_flop = _attention_shape(arch, assumptions, kvb)
    kv_bits = kvb * 8.0
    groups = tuple(_group_work(g, assumptions, arch.d_model, kv_bits) for g in arch.layer_groups)
    mixers = {
        "attention_params_per_layer": float(params),
        "attention_heads_words": float(heads_words),
        **_hybrid_mixers(arch, params, heads_words),
    }
    embeddings = (
        (1 if (arch.tied_embeddings and assumptions.tied_embeddings_once) else 2)
        * arch.vocab_size
        * arch.d_model
    )
    att = arch.attention
    profile = assumptions.profile()
    return Workload(
        cache_windows=profile is None or profile.sliding_window_cache == "window",
        name=arch.name,
        d_model=float(arch.d_model),
        vocab_size=float(arch.vocab_size),
        layers=arch.layers,
        query_heads=float(att.query_heads),
        tp_heads=int(att.kv_heads if (att.kind != "mla" and att.kv_heads > 1) else att.query_heads),
        kv_vectors=2.0 * att.query_heads if att.kind == "mla" else att.kv_vectors,
        head_dim=float(att.head_dim),
        attention_matrices=tuple((float(m), float(k)) for m, k in matrices),
        kv_bytes_per_position_per_layer=float(kv_layer),
        context_flop_per_position_per_layer=float(ctx_flop),
        embedding_params=float(embeddings),
        groups=groups,
        bytes_per_weight=wb,
        bytes_per_activation=ab,
        bytes_per_kv_element=kvb,
        weight_bits=p.weight_bits,
        weight_block_scaled=p.weight_block_scaled,
        mean_context_over_pass=assumptions.mean_context_over_pass,
        attention_layers=arch.attention_layers,
        matmul_replication=assumptions.matmul_replication,
        model_class=arch.model_class,
        expert_routing=arch.expert_routing,
        redundant_experts=float(arch.redundant_experts),
        kv_shards=1.0 if att.kind == "mla" else float(att.kv_heads),
        **formats,
        **mixers,
    )


#: Bits of block scales per 4-bit weight: NVFP4 stores one FP8 scale per 16 values (0.5 bit;
#: NVIDIA, "Introducing NVFP4", 2025); MXFP4 one 8-bit scale per 32 (0.25 bit; OCP MX spec
#: v1.0), which a model file states as 4.25 bits.
NVFP4_SCALE_BITS = 0.5
#: Bytes of scales per element of an 8-bit dispatch: one FP32 scale per 128 values (DeepEP's
#: FP8 dispatch; DeepSeek-V3's 1x128 activation tiles); a 4-bit one carries NVFP4's.
FP8_DISPATCH_SCALE_BYTES = 4.0 / 128.0


def precision_formats(p) -> dict:
    """Workload fields of a precision read as formats (§B5, ``precision_formats``): 4-bit
    weights stored with NVFP4's block scales (a fractional width such as MXFP4's 4.25 already
    holds them); GEMMs at the wider of the weights' element format (4.25 -> 4) and their
    activation operand; attention at the KV cache's format; the expert dispatch in the GEMMs'
    activation format when it is narrower than the activations (§B11). A checkpoint that
    quantises only its experts (``dense_weight_bits``) stores and multiplies its other weights
    in their own format by the same rules."""
    bits, element = _stored_bits(p.weight_bits)
    operand = element if p.gemm_activation_bits is None else float(p.gemm_activation_bits)
    dispatch = None
    if operand < p.activation_bits:
        scales = FP8_DISPATCH_SCALE_BYTES if operand >= 8 else NVFP4_SCALE_BITS / 8.0
        dispatch = operand / 8.0 + scales
    out = {
        "bytes_per_weight": bits / 8.0,
        "gemm_bits": max(element, operand),
        "attention_bits": p.bytes_per_kv_element * 8.0,
        "dispatch_bytes_per_element": dispatch,
    }
    if p.dense_weight_bits is not None:
        dense, dense_element = _stored_bits(p.dense_weight_bits)
        out["dense_bytes_per_weight"] = dense / 8.0
        out["dense_gemm_bits"] = max(dense_element, operand)
    return out


def _stored_bits(weight_bits: float) -> tuple[float, float]:
    """(bits stored per weight, bits of its element format) of a weight format: 4-bit weights
    carry NVFP4's block scales; a fractional width (MXFP4's 4.25) holds its own."""
    bits = weight_bits + (NVFP4_SCALE_BITS if weight_bits == 4 else 0.0)
    return bits, float(math.floor(weight_bits + 1e-9))


def _hybrid_mixers(arch: Architecture, attention_params, attention_words) -> dict:
    """Workload fields of a hybrid's token mixers, averaged over its layers (§C2); empty for a
    model whose every layer is attention (its numbers stay Part A's, operation for operation)."""
    recurrent = [g for g in arch.layer_groups if not g.is_attention]
    if not recurrent:
        return {}
    L = float(arch.layers)
    share = arch.attention_layers / L
    params = share * attention_params
    words = share * attention_words
    matrices = []
    for g in recurrent:
        mats, other, _, _, width = recurrent_mixer_shape(g.mixer, arch.d_model)
        params += g.layers / L * (sum(m * k for m, k in mats) + other)
        words += g.layers / L * width
        matrices += [(float(m), float(k), g.layers / L) for m, k in mats]
    return {
        "attention_share": share,
        "recurrent_matrices": tuple(matrices),
        "attention_params_per_layer": float(params),
        "attention_heads_words": float(words),
    }
