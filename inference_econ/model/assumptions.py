"""The modelling assumptions, as one explicit object with named presets.

``PAPER`` reproduces the paper (docs/model.md Part A). Every refinement of Part B is a named field
that is off in ``PAPER``; ``REFINED`` switches them all on. Both are ideal bounds: every kernel at
the hardware's (capped) limits. ``ACHIEVABLE`` keeps Part B's accounting and charges every kernel
class at the efficiency of a serving engine's profile (``engine``: docs/model.md Part F). Nothing
in the cost model reads a global setting: every function that depends on an assumption takes
this object.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from ..errors import SpecError, did_you_mean, short
from ..specs.schema import check_number

if TYPE_CHECKING:
    from ..specs.engine import EngineProfile

#: The shipped presets (``PRESETS``, docs/model.md Parts A, B and F).
PresetName = Literal["paper", "refined", "achievable", "paper-table-5"]
#: How MLA attention is decoded (§B3; ``workload.mla_decode_costs``).
MlaDecode = Literal["decompressed", "compressed", "absorbed"]
#: Which NCCL tuning tables price collective latencies (§B9; ``collectives.NVLS_LATENCY_S``).
NcclLatencyModel = Literal["paper", "nccl-2.20", "nccl-2.23"]
#: How a 2-D tensor-parallel matmul replicates its activations (§A2; "unclipped": the paper's
#: earlier code, the ``paper-table-5`` preset).
MatmulReplication = Literal["clipped", "unclipped"]

_NUMBERS: dict[str, dict[str, Any]] = {
    "pipeline_degree_count": dict(minimum=1, maximum=64, integer=True),
    "attention_divisor_count": dict(minimum=1, maximum=64, integer=True),
    "kernels_per_layer": dict(minimum=0, maximum=1000, integer=True),
    "expert_parallel_min_batch_per_sparsity": dict(minimum=0, maximum=1e6),
    "memory_reserve_fraction": dict(minimum=0, maximum=0.99),
    "launch_latency_scale": dict(minimum=0, maximum=1e6),
    "collective_latency_scale": dict(minimum=0, maximum=1e6),
}
_CHOICES = {
    "mla_decode": get_args(MlaDecode),
    "nccl_latency_model": get_args(NcclLatencyModel),
    "matmul_replication": get_args(MatmulReplication),
}


#: A least micro-batch per sparsity no batch reaches: expert parallelism never used (a layout
#: that states EP1, an engine without expert parallelism).
NO_EXPERT_PARALLEL = 1e6


def _changed_text(name: str, value) -> str:
    """A field that differs from its preset, as ``label`` states it: ``name=value``, except
    where a stated layout sets it (``--layout TP8EP8``, ``TP8EP1``), said in a user's words."""
    if name == "expert_parallel_min_batch_per_sparsity" and value == 0:
        return "experts split over the tensor group at every batch (the layout's EP)"
    if name == "expert_parallel_min_batch_per_sparsity" and value == NO_EXPERT_PARALLEL:
        return "experts never split (the layout's EP1)"
    return f"{name}={short(value)}"


@dataclass(frozen=True)
class Assumptions:
    """How the cost model turns an architecture and a GPU into a token latency."""

    name: str = "paper"

    # --- layouts searched (§A5) -----------------------------------------------------------
    #: Pipeline degrees searched: p = 1 and count − 1 more log-spaced up to min(B, L)
    #: (§A5: 10, i.e. 9 besides p = 1).
    pipeline_degree_count: int = 10
    #: Number of log-spaced attention divisors from 1 to N/p (§A5: 6).
    attention_divisor_count: int = 6
    #: Expert parallelism only when the micro-batch reaches this many times the sparsity (§A5: 2).
    expert_parallel_min_batch_per_sparsity: float = 2.0
    #: Sequential kernels per layer charged a launch latency each (§A5: 4).
    kernels_per_layer: int = 4
    #: Also search whole layouts: GPU counts that fill whole nodes, pipeline degrees dividing
    #: the layers, attention degrees dividing the heads (the paper's log grids miss them).
    node_aligned_layouts: bool = False

    # --- work of a forward pass (§A2) -------------------------------------------------------
    #: Charge each of the S tokens of a pass the mean context n + (S-1)/2 instead of n.
    mean_context_over_pass: bool = False

    # --- memory capacity (§A5 / Part B) -----------------------------------------------------
    #: Check the whole batch's KV cache against HBM (the paper checks one micro-batch's).
    kv_capacity_whole_batch: bool = False
    #: Fraction of HBM kept for activations and the runtime, unusable for weights and KV.
    memory_reserve_fraction: float = 0.0

    # --- architecture accounting (§A1 / Part B) ---------------------------------------------
    #: Sparsity E/k exactly instead of the paper's integer division E // k.
    exact_sparsity: bool = False
    #: Shared experts always active and counted apart from the routed ones.
    shared_experts_separate: bool = False
    #: MLA with every matrix and the rope key in the cache (paper: docs/model.md §A1 formulas).
    mla_full: bool = False
    #: MLA decode implementation when ``mla_full``: "decompressed", "compressed", "absorbed".
    mla_decode: MlaDecode = "absorbed"
    #: Count tied input/output embeddings once (paper: always 2·V·d).
    tied_embeddings_once: bool = False
    #: Cached positions of a sliding-window layer are min(n, window) (paper: n).
    sliding_windows: bool = False

    # --- hardware (§A3 / Part B) ------------------------------------------------------------
    #: FP4 weights run at the FP4 rate on chips that have it (paper: at the FP8 rate).
    native_fp4: bool = False
    #: Attention replicas each serving B/a requests instead of the paper's attention divisor.
    attention_data_parallel: bool = False
    #: The roofline step streams HBM at the best read bandwidth a streaming kernel measured on
    #: the part (the catalog's best where the part has no measurement), as an ideal bound must
    #: (§B14). The paper: 75 % of the datasheet, its assumption about whole models.
    measured_hbm_bandwidth: bool = False
    #: Every operation of the roofline step at the faster of the preset's figure and the best
    #: the part's measured kernels reached (GEMM and attention FLOP/s, HBM bytes/s, the
    #: engine's own all-reduce and NCCL inside a domain), so no measured kernel beats the
    #: bound (§B15). The paper: the datasheet figures times its fractions.
    measured_kernel_rates: bool = False

    #: GEMMs at the rate of the wider of the weights' element format and their activation
    #: operand (W8A16 and W4A16 at the 16-bit rate), attention at the KV cache's format, and
    #: 4-bit weights stored with their block scales (NVFP4: 4.5 bits; §B5). The paper: every
    #: matmul at the weights' rate, 4-bit weights exactly 4 bits.
    precision_formats: bool = False

    # --- collectives (§A4 / Part B) ---------------------------------------------------------
    #: NCCL latency table: "paper" (docs/model.md §A4), "nccl-2.20" (the same) or "nccl-2.23".
    nccl_latency_model: NcclLatencyModel = "paper"
    #: Use NVLink SHARP all-reduce on GPUs that have it.
    nvls: bool = False
    #: Multiplier on the per-kernel launch latency (CUDA graphs: well below 1).
    launch_latency_scale: float = 1.0
    #: Multiplier on every collective's latency terms (calibration, what-if).
    collective_latency_scale: float = 1.0

    #: The expert dispatch and combine span every expert-parallel rank, each GPU's own NIC
    #: carrying its remote share, with 8-bit dispatch where the expert GEMMs take 8-bit inputs
    #: and node-limited routing in prefill (§B11). The paper: min(k, e) ranks in one node, the
    #: inter-node term over all R ranks' NICs.
    expert_all_to_all: bool = False
    #: An attention tensor group wider than the KV heads keeps a copy of the KV cache per
    #: extra rank (MLA's latent on every rank): memory and reads times the copies (§B13). The
    #: paper: the cache spread evenly over all GPUs.
    kv_replication: bool = False
    #: Micro-batches scheduled through the pipeline stages: a step whose sequences cannot fill
    #: p micro-batches (one long prompt, fewer requests than stages) crosses the stages
    #: serially (§B12). The paper: p balanced micro-batches of B/p tokens, whatever the tokens
    #: are, and never more stages than requests.
    pipeline_bubbles: bool = False

    # --- the paper's earlier code, which printed its Table 5 (docs/deviations.md) ----------
    #: 2-D matmul activations replicated t1 = max(1, √(m/k)·t) and t2 = max(1, √(k/m)·t) times
    #: ("unclipped") instead of t1 = clip(√(m·t/k), 1, t) and t/t1 ("clipped", §A2).
    matmul_replication: MatmulReplication = "clipped"
    #: Pipeline degrees log-spaced up to L rather than min(B, L) (§A5).
    pipeline_degrees_up_to_layers: bool = False
    #: All-to-all bytes carry all k active experts of a token rather than min(k, e) (§A5).
    all_to_all_bytes_all_active: bool = False
    #: The whole batch's KV cache inside the p·(…) memory term (read p times per step) rather
    #: than one micro-batch's (§A5).
    kv_read_whole_batch: bool = False

    # --- achievable performance (Part F) -------------------------------------------------
    #: Engine efficiency profile (a name such as "trtllm", a YAML path or an ``EngineProfile``):
    #: every kernel class at the engine's measured or fitted efficiency instead of the ideal
    #: roofline (docs/model.md Part F). None: the ideal bound of Parts A and B.
    engine: str | Path | EngineProfile | None = None
    #: Under an engine profile, the step priced operation by operation from the measured
    #: kernel tables (``model/kernel_clock.py``: TensorRT-LLM 1.3.0rc20's kernels, physics
    #: fitted to them on a GPU without) instead of the profile's per-class efficiencies.
    #: None: so priced where a measured row states an engine version the tables time, on a
    #: part they were measured on (``EngineProfile.kernel_table_versions``); the profile's
    #: terms everywhere else. True: always; False: never.
    kernel_tables: bool | None = None
    #: Under an engine profile, each step split into two micro-batches whose MoE token
    #: exchange (dispatch and combine) runs while the other micro-batch computes: SGLang's
    #: two-batch overlap and vLLM's dual-batch overlap over DeepEP (docs/model-part-f.md §F7
    #: "Two-batch overlap"; ``model.overlap``). False: one batch, its exchange in series.
    two_batch_overlap: bool = False
    #: Under an engine profile, a MoE's tokens exchanged by DeepEP's all-to-all kernels
    #: (SGLang's ``--moe-a2a-backend deepep``, vLLM's DeepEP backends; §B11 at DeepEP's
    #: measured line, docs/model-part-f.md §F7) instead of the engine's default backend,
    #: which all-gathers them under attention data parallelism. Two-batch overlap implies it.
    deepep: bool = False

    def __post_init__(self) -> None:
        """Every field checked: numbers finite and in range (counts bounded, so no loop over
        them explodes), switches true or false, choices known."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in _NUMBERS:
                value = check_number(value, "assumptions", f.name, **_NUMBERS[f.name])
                object.__setattr__(self, f.name, value)  # 3.0 -> 3 for counts
            elif f.name in _CHOICES and value not in _CHOICES[f.name]:
                raise SpecError(
                    "assumptions",
                    f.name,
                    f"invalid value {short(value)}",
                    f"choose one of {', '.join(_CHOICES[f.name])} (docs/refinements.md)",
                )
            elif (isinstance(f.default, bool) or f.name == "kernel_tables") and not (
                isinstance(value, bool) or (value is None and f.default is None)
            ):
                nullable = "true, false or null" if f.default is None else "true or false"
                raise SpecError(
                    "assumptions", f.name, f"expected {nullable}, got {short(value)}", ""
                )
            elif f.name == "name" and not isinstance(value, str):
                raise SpecError("assumptions", "name", f"expected text, got {short(value)}", "")
            elif f.name == "engine" and not (
                value is None or isinstance(value, str) or hasattr(value, "hbm_efficiency")
            ):
                raise SpecError(
                    "assumptions",
                    "engine",
                    f"expected an engine profile, got {short(value)}",
                    "a name such as trtllm, or a path to an engines/*.yaml file",
                )

    @property
    def label(self) -> str:
        """The preset's name, with the engine profile's under an engine, plus every field that
        differs from that preset ("achievable, engine vllm", "paper + node_aligned_layouts=True"):
        what an output states it was computed with."""
        name = self.name
        if self.engine is not None:
            engine = self.engine if isinstance(self.engine, str) else self.engine.name
            name = f"{self.name}, engine {engine}"
        base = PRESETS.get(cast(PresetName, self.name))  # None: not a preset's name
        if base is None:
            return name
        changed = [
            _changed_text(f.name, getattr(self, f.name))
            for f in dataclasses.fields(self)
            if f.name not in ("name", "engine") and getattr(self, f.name) != getattr(base, f.name)
        ]
        return " + ".join([name, *changed])

    @property
    def achievable(self) -> bool:
        """Whether kernels run at an engine's efficiencies (Part F) rather than the ideal."""
        return self.engine is not None

    def profile(self):
        """The engine profile (``specs.engine.EngineProfile``), or None for an ideal preset."""
        if self.engine is None:
            return None
        from ..specs.engine import load_engine

        return load_engine(self.engine)

    def replace(self, **changes) -> Assumptions:
        """A copy with some fields changed; unknown field names are errors with a hint."""
        known = {f.name for f in dataclasses.fields(self)}
        for key in changes:
            if key not in known:
                hint = did_you_mean(str(key), known)
                raise SpecError("assumptions", key, "unknown assumption", hint)
        return dataclasses.replace(self, **changes)


PAPER = Assumptions()

#: Every refinement of docs/model.md Part B switched on (docs/refinements.md: what, why, source).
REFINED = Assumptions(
    name="refined",
    node_aligned_layouts=True,  # whole-node layouts the paper's log grids miss
    mean_context_over_pass=True,  # token i of a pass attends to n + i positions
    kv_capacity_whole_batch=True,  # every micro-batch's KV cache is resident at once
    memory_reserve_fraction=0.1,  # activations, CUDA graphs, allocator slack (vLLM's default 0.9 utilisation)
    exact_sparsity=True,  # E/k, not E // k
    shared_experts_separate=True,  # DeepSeek's shared expert always runs, routed ones by chance
    mla_full=True,  # rope key cached, all MLA matrices counted
    mla_decode="absorbed",  # W_UK and W_UV absorbed (DeepSeek-V2 paper; docs/model.md §B3)
    tied_embeddings_once=True,  # tied input/output embeddings are one matrix
    sliding_windows=True,  # local layers cache only their window
    native_fp4=True,  # Blackwell runs FP4 matmuls at the FP4 rate
    attention_data_parallel=True,  # DP attention as DeepSeek / SGLang deploy it
    measured_hbm_bandwidth=True,  # HBM at a streaming kernel's measured bandwidth, not 75 %
    measured_kernel_rates=True,  # no op slower than the best kernel measured for it
    nccl_latency_model="nccl-2.23",  # current NCCL tuning tables
    nvls=True,  # NVLink SHARP all-reduce inside an NVSwitch domain
    launch_latency_scale=0.5,  # CUDA graphs: ~2 us per kernel instead of ~4 us
    precision_formats=True,  # GEMM rate of both operands, attention at the KV format, NVFP4 scales
    expert_all_to_all=True,  # dispatch/combine over every EP rank and each GPU's NIC
    pipeline_bubbles=True,  # a lone sequence crosses the pipeline stages serially
    kv_replication=True,  # ranks beyond the KV heads keep copies of the cache
)

#: The earlier version of the paper's code, which printed the paper's Table 5: Part A with
#: five differences (docs/deviations.md, "Table 5").
PAPER_TABLE_5 = Assumptions(
    name="paper-table-5",
    matmul_replication="unclipped",  # t1 = max(1, √(m/k)·t), t2 = max(1, √(k/m)·t)
    pipeline_degrees_up_to_layers=True,  # p log-spaced up to L, not min(B, L)
    attention_divisor_count=1,  # no attention divisor: a = 1
    all_to_all_bytes_all_active=True,  # all-to-all bytes with k experts, not min(k, e)
    kv_read_whole_batch=True,  # the whole batch's KV inside p·(…), read p times
    kv_capacity_whole_batch=True,  # ... and in the capacity check
)

#: Part B's accounting with every kernel class at a serving engine's efficiency (docs/model.md
#: Part F): the engine profile ``trtllm`` unless ``engine`` says otherwise.
ACHIEVABLE = dataclasses.replace(REFINED, name="achievable", engine="trtllm")

#: ``kernel_tables`` of the ``clock`` setting's choices that price every step by one clock
#: (its third, ``auto``, leaves ``kernel_tables`` as the assumptions hold it).
CLOCKS = {"engine": False, "kernel": True}

PRESETS: dict[PresetName, Assumptions] = {
    "paper": PAPER,
    "refined": REFINED,
    "achievable": ACHIEVABLE,
    "paper-table-5": PAPER_TABLE_5,
}


def preset(name: str | Assumptions) -> Assumptions:
    """Look up a named preset of the cost model's assumptions.

    Parameters
    ----------
    name : str or Assumptions
        "paper" (docs/model.md Part A), "refined" (every refinement of Part B), "achievable"
        (Part B at a serving engine's efficiencies, Part F) or "paper-table-5" (the paper's
        earlier code); an ``Assumptions`` is returned as it is.

    Returns
    -------
    Assumptions
        The preset (frozen; ``.replace(field=value)`` makes a variant).

    Raises
    ------
    SpecError
        No preset has that name (the message suggests the nearest).

    Examples
    --------
    >>> import inference_econ as ie
    >>> ie.preset("refined").nvls
    True
    >>> ie.preset("paper").exact_sparsity
    False
    """
    if isinstance(name, Assumptions):
        return name
    try:
        return PRESETS[cast(PresetName, name)]  # a user's string: a miss is reported below
    except (KeyError, TypeError):
        hint = did_you_mean(str(name), PRESETS)
        raise SpecError(
            "argument",
            "assumptions",
            f"no preset named {short(name)}",
            hint or f"choose {', '.join(PRESETS)}",
        ) from None
