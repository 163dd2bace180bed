"""Two-batch overlap (docs/model-part-f.md §F7 "Two-batch overlap"): an engine splits each step
into two micro-batches and runs one's MoE token exchange (dispatch and combine) while the
other computes, so the exchange hides under the step's other work, at the price of reading
the weights and launching every kernel once per micro-batch.

Engines, as their sources say:

* SGLang 0.5.3, ``--enable-two-batch-overlap``: the scheduler splits a batch in its MLP
  sync step (``Scheduler.prepare_mlp_sync_batch``, run under attention DP or DeepEP, whose
  dispatch and combine are what the other half hides; the export launches it with
  ``--moe-a2a-backend deepep``), where it can be split (``ForwardBatch.can_run_tbo``: a
  decode batch by sequences, at least one each).
* vLLM 0.11.0, ``--enable-dbo``: needs ``VLLM_ALL2ALL_BACKEND`` deepep_low_latency or
  deepep_high_throughput (vllm/config/__init__.py); a rank micro-batches a step of at least
  ``--dbo-decode-token-threshold`` tokens (32; 512 with prompt tokens,
  ``--dbo-prefill-token-threshold``, vllm/config/parallel.py), every data-parallel rank
  agreeing, and only with data parallelism (``ubatch_splitting.py``: none at a size of 1).
* TensorRT-LLM has none.

DeepEP moves tokens over NVLink inside a node and RDMA between nodes: an NVIDIA part with an
NVLink switch.
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecError
from .values import Floats

#: Engines (profile families) that overlap two micro-batches, and the fewest tokens a rank's
#: step must hold to be split: SGLang's two halves need a sequence each; vLLM's decode
#: threshold (its prompt steps' 512 is not told apart: a simplification).
MIN_TOKENS = {"sglang": 2.0, "vllm": 32.0}

#: The fewest attention data-parallel ranks a layout needs for the engine to split its steps:
#: vLLM micro-batches only with data parallelism (its ``ubatch_splitting``, vllm/v1/worker);
#: SGLang splits under DeepEP whatever its attention layout.
MIN_RANKS = {"sglang": 1.0, "vllm": 2.0}

#: Micro-batches of an overlapped step.
MICRO_BATCHES = 2.0

FLAG = "--two-batch-overlap"
#: The option that launches DeepEP's exchange alone (one batch a step).
DEEPEP_FLAG = "--deepep"


def overlap_problem(profile, kernel_tables, gpu, is_moe: bool, model: str, flag: str = FLAG):
    """(why, fix) where two-batch overlap (or DeepEP's exchange, ``flag``) cannot run, else
    None: an ideal preset (no ``profile``), an engine without it, a part DeepEP does not run
    on, the kernel clock (its tables time TensorRT-LLM), a dense model (nothing to
    exchange)."""
    from ..specs.platforms import platform_of  # the engines' module: only where asked for

    if profile is None:
        return "is an engine's, and an ideal preset (a bound) has none", (
            "use --assumptions achievable with --engine sglang or --engine vllm"
        )
    if profile.family not in MIN_TOKENS:
        why = f"is not run by the {profile.name} engine profile (only SGLang's and vLLM's)"
        return why, "use --engine sglang or --engine vllm"
    if platform_of(gpu) != "cuda" or gpu.interconnect != "switch":
        lead = "runs over DeepEP, which needs" if flag.startswith(FLAG) else "needs"
        why = f"{lead} NVIDIA GPUs joined by an NVLink switch; {gpu.name} is not such a part"
        return why, f"drop {flag}"
    if kernel_tables:
        why = "is not priced by the kernel clock, whose tables time TensorRT-LLM's kernels"
        return why, "use --clock engine"
    if not is_moe:
        return f"is a MoE layer's token exchange, and {model} has no routed experts", (
            f"drop {flag}"
        )
    return None


def check_overlap(assumptions, gpu, is_moe: bool, model: str) -> None:
    """Refuse two-batch overlap, or DeepEP's exchange, where no engine runs it
    (``overlap_problem``); nothing to do without them."""
    given = [
        f
        for on, f in ((assumptions.two_batch_overlap, FLAG), (assumptions.deepep, DEEPEP_FLAG))
        if on
    ]
    if not given:
        return
    what = "two-batch overlap" if assumptions.two_batch_overlap else "DeepEP's exchange"
    profile, tables = assumptions.profile(), assumptions.kernel_tables
    # every reason holds for both: the fix names each option given
    problem = overlap_problem(profile, tables, gpu, is_moe, model, " and ".join(given))
    if problem is not None:
        raise SpecError("argument", given[0], f"{what} {problem[0]}", problem[1])


def micro_batches(family: str, tokens_per_rank, ranks=1.0) -> Floats:
    """Micro-batches of a step of ``ranks`` attention data-parallel ranks each holding
    ``tokens_per_rank`` tokens under an engine that overlaps (``MIN_TOKENS``, ``MIN_RANKS``):
    two where the step is split, else one."""
    split = (np.asarray(tokens_per_rank, dtype=float) >= MIN_TOKENS[family]) & (
        np.asarray(ranks, dtype=float) >= MIN_RANKS[family]
    )
    return np.where(split, MICRO_BATCHES, 1.0)


def half_read_share(work, tokens) -> Floats:
    """The share of a step's routed-expert weight reads that one micro-batch of half its
    ``tokens`` makes: it reads the experts its own tokens hit (§A2), fewer than the whole
    step's where tokens are few, so the two micro-batches read between once and twice."""
    groups = [g for g in work.groups if g.experts > 1]
    t = np.asarray(tokens, dtype=float)
    whole = sum(g.layers * work.routed_expert_bytes(g, t) for g in groups)
    half = sum(g.layers * work.routed_expert_bytes(g, t / MICRO_BATCHES) for g in groups)
    return np.where(np.asarray(whole) > 0.0, half / np.maximum(whole, 1e-300), 1.0)


def overlapped_s(gpu_s, exchange_latency_s, exchange_bandwidth_s, micro):
    """Seconds of a step whose GPU work (its exchange apart, the micro-batches' weight reads
    and kernels counted) is ``gpu_s`` and whose MoE exchange has the given latency and
    bandwidth seconds: with ``micro`` > 1 the longer of the work and the exchange, which then
    pays its latency once per micro-batch (one micro-batch's exchange runs while the other
    computes; the pipeline's first and last stage, one layer's, are not counted); else the
    two in series."""
    m = np.asarray(micro, dtype=float)
    alone = gpu_s + exchange_latency_s + exchange_bandwidth_s
    overlapped = np.maximum(gpu_s, m * exchange_latency_s + exchange_bandwidth_s)
    return np.where(m > 1.0, overlapped, alone)


def runs_deepep(profile, assumptions) -> bool:
    """Whether an engine's expert all-to-all runs DeepEP's kernels (§F7): where its profile
    says so (``deepep_exchange``), where the plan launches them (``deepep``), and under two
    micro-batches a step, which SGLang and vLLM run only over DeepEP (vLLM's --enable-dbo
    needs a DeepEP backend)."""
    said = assumptions.deepep or assumptions.two_batch_overlap
    return profile is not None and bool(profile.deepep_exchange or said)
