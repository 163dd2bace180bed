"""The expert-parallel degree an export launches: the one the model prices a mixture of experts
at on the worker's whole layout (docs/model-part-f.md §F11), where the engine's version runs it
with that tensor group; else the experts tensor-split (EP1), priced so, and said so."""

from __future__ import annotations

from ..model.machine import is_mx_width
from ..model.step_calls import whole_expert_degrees
from ..serving.setting import Setting

#: Engines whose expert-parallel size may be part of the tensor group, the experts' matrices
#: tensor-split over the rest. SGLang 0.5.3's ``--ep-size``: moe_tp_size = tp_size // ep_size
#: (sglang/srt/distributed/parallel_state.py); its MoE layer asserts num_experts % ep_size == 0
#: and the expert width % moe_tp_size == 0 (layers/moe/fused_moe_triton/layer.py), and
#: server_args.py holds ep_size to 1 or tp_size only under the flashinfer_cutlass MoE runner
#: (and sets it to tp_size under DeepEP), neither of which an export selects. TensorRT-LLM's
#: ``--ep_size`` (moe_expert_parallel_size): its Mapping takes moe_tp_size = tp_size //
#: moe_ep_size and checks that their product is tp_size. vLLM 0.11's
#: ``--enable-expert-parallel`` spans the whole group (EP = TP x DP), unevenly where the
#: experts do not divide it, which the model does not price.
PART_OF_GROUP = ("sglang", "trtllm")


def priced_degree(setting: Setting, t: int) -> int:
    """The degree the model splits a mixture of experts over a tensor group of ``t`` GPUs at,
    once it splits them (§A5 on whole layouts: gcd(t, E), ``model.step_calls.expert_degree``);
    1 for a dense model, or where its MoE groups' degrees differ (one flag sets them all)."""
    model = setting.model
    degrees = whole_expert_degrees(
        [g.ffn.experts for g in model.layer_groups], t, model.redundant_experts
    )
    return degrees.pop() if len(degrees) == 1 else 1


def launched_degree(setting: Setting, t: int, engine: str) -> int:
    """The expert-parallel degree a worker of tensor degree ``t`` launches on ``engine``: the
    priced one where it is 1 or the whole group, or the engine takes part of the group; else 1
    (the experts tensor-split, as ``launch._tensor_split`` checks they can be). 1 also where
    the engine keeps the experts' format only unsplit (``mx_experts_unsplit``)."""
    e = priced_degree(setting, t)
    if mx_experts_unsplit(setting, engine):
        return 1
    return e if e in (1, t) or engine in PART_OF_GROUP else 1


def mx_experts_unsplit(setting: Setting, engine: str) -> bool:
    """Whether ``engine`` runs the model's MX-format experts (gpt-oss's MXFP4: a fractional
    width below 8 bits) as such only at expert-parallel size 1: SGLang 0.5.3 off SM100 takes
    its Triton MXFP4 kernel only where ``ep_size`` is 1 (server_args.py, the GptOss branch;
    the kernel asserts it), and at any other size ``process_weights_after_loading`` upcasts
    the experts to BF16 (layers/quantization/mxfp4.py), four times the weights planned."""
    from ..model.moe import family_of

    mx = setting.model.is_moe and is_mx_width(float(setting.precision.weight_bits))
    return engine == "sglang" and mx and family_of(setting.gpu) != "blackwell"


def trtllm_moe_backend(setting: Setting, names: dict) -> str | None:
    """The ``moe_config.backend`` a TensorRT-LLM worker names for the plan's routed experts:
    MXFP4 ones (a fractional width below 8: gpt-oss's 4.25 bits) on the backend whose kernel
    the plan is priced with, by the part's family of kernel tables (``mxfp4_moe_backend`` of
    launch_flags.yaml: TRITON on Hopper, TRTLLM on Blackwell); None, the engine's default
    (CUTLASS), for any other format or part."""
    from ..model.moe import family_of

    if not setting.model.is_moe or not is_mx_width(float(setting.precision.weight_bits)):
        return None
    return names.get("mxfp4_moe_backend", {}).get(family_of(setting.gpu))


def expert_note(setting: Setting, t: int, launched: int, engine: str, version: str) -> str:
    """The line saying a worker launches its experts otherwise than the model splits them on
    its layout at large batches (vLLM, whose expert parallelism spans the whole group), and
    that the export's figures are the launched degree's; "" where they agree."""
    e = priced_degree(setting, t)
    if e <= 1 or launched == e:
        return ""
    experts = setting.model.routed_experts
    if mx_experts_unsplit(setting, engine):
        return (
            f"Experts: the model splits {setting.model.name}'s {experts} experts EP{e} over "
            f"TP{t} once batches are large; {engine} {version} keeps MXFP4 experts on the "
            f"{setting.gpu.name} only at EP1 (at any other expert-parallel size it upcasts them "
            f"to BF16): the export launches them tensor-split (EP1) and its figures are EP1's."
        )
    return (
        f"Experts: the model splits {setting.model.name}'s {experts} experts EP{e} over TP{t} "
        f"(the largest degree dividing both) once batches are large; {engine} {version}'s "
        f"expert parallelism spans all {t} GPUs of the group, unevenly, which the model does "
        f"not price: the export launches the experts tensor-split (EP{launched}) and its "
        f"figures are EP{launched}'s."
    )


def uneven_experts(setting: Setting, t: int) -> str:
    """Why vLLM launches no expert parallelism on a tensor group of ``t`` GPUs, to follow a
    refusal that needs it: its experts do not divide the group; "" where they do."""
    e = priced_degree(setting, t)
    if e == t or not setting.model.is_moe:
        return ""
    return (
        f"; vLLM's expert parallelism spans all {t} GPUs, spreading {setting.model.name}'s "
        "experts unevenly, which the model does not price"
        + (f" (it splits them EP{e})" if e > 1 else "")
    )


def split_at(setting: Setting, micro_batch: float) -> bool:
    """Whether the model splits the experts of a decode step of ``micro_batch`` sequences a
    pipeline stage (§A5's rule under the setting's assumptions: once it holds
    ``expert_parallel_min_batch_per_sparsity`` x each MoE group's sparsity)."""
    from ..model.step_calls import expert_degree
    from ..model.workload import compile_workload

    least = setting.assumptions.expert_parallel_min_batch_per_sparsity
    work = compile_workload(setting.model, setting.assumptions)
    moe = [g for g in work.groups if g.experts > 1]
    # §A5's degree on a group as wide as the experts: above 1 once the micro-batch reaches it
    return all(
        expert_degree(micro_batch, g.experts, g.experts, least * g.sparsity) > 1 for g in moe
    )


def point_degree(setting: Setting, degrees, batch: int, engine: str) -> tuple[int, str]:
    """The expert degree a point's worker launches, and the line saying why where it is not
    ``launched_degree``'s: a point whose decode steps the model prices with the experts
    tensor-split (its micro-batch below §A5's minimum) launches them so (EP1), which every
    engine runs, unless the plan needs expert parallelism (redundant experts, two-batch
    overlap, or vLLM's attention data parallelism, whose MoE layers must then be
    expert-parallel): then it keeps the group's degree, and the line says its figures are
    that degree's."""
    p, t, dp, e = degrees
    if e <= 1 or split_at(setting, batch / p):
        return e, ""
    needs = _expert_parallel_needs(setting, dp, engine)
    if needs:
        return e, (
            f"Experts EP{e} at every batch: the model splits them only from a larger "
            f"micro-batch than this point's {batch / p:g} (tensor-split below), but "
            f"expert-parallel MoE layers are needed for {' and '.join(needs)}; the figures are "
            f"EP{e}'s."
        )
    return 1, (
        f"Experts tensor-split (EP1), as the point's decode steps of {batch / p:g} sequences "
        f"a stage are priced (the model splits them EP{e} only from a larger micro-batch); "
        "the figures are EP1's."
    )


def _expert_parallel_needs(setting: Setting, dp: int, engine: str) -> list[str]:
    """What in a plan needs expert-parallel MoE layers whatever the batch: redundant experts,
    two-batch overlap, vLLM's attention data parallelism over ``dp`` ranks."""
    return [
        why
        for why, needed in (
            ("redundant experts", setting.model.redundant_experts > 0),
            ("two-batch overlap", setting.assumptions.two_batch_overlap),
            ("DeepEP's exchange", setting.assumptions.deepep),
            ("vLLM's attention data parallelism", engine == "vllm" and dp > 1),
        )
        if needed
    ]


def simulated_degree(setting: Setting, degrees, batch: float, engine: str) -> tuple[int, str]:
    """The expert degree a worker of a simulated plan (capacity) launches, and the line saying
    so: the simulation prices each decode step's experts by §A5's rule at that step's
    micro-batch (split from a micro-batch of ``expert_parallel_min_batch_per_sparsity`` x the
    sparsity, tensor-split below), while an engine runs one placement; the launch takes the
    placement of the plan's mean ``batch`` (``point_degree``'s rule), and the line says which
    steps run otherwise than simulated. "" where the simulation priced one placement."""
    from ..model.latency import experts_placement
    from ..model.workload import compile_workload

    p, t, dp, e = degrees
    least = setting.assumptions.expert_parallel_min_batch_per_sparsity
    work = compile_workload(setting.model, setting.assumptions)
    placement = experts_placement(work, t, least)
    launched, _ = point_degree(setting, degrees, int(round(batch)), engine)
    if e <= 1 or "from a micro-batch" not in placement:
        return launched, ""
    edge = min(least * g.sparsity for g in work.groups if g.experts > 1)
    needs = _expert_parallel_needs(setting, dp, engine)
    if launched > 1:
        why = f", expert parallelism being needed for {' and '.join(needs)}" if needs else ""
        other = f"its steps below a micro-batch of {edge:g} run EP{launched}, not tensor-split"
    else:
        why, other = "", f"its steps from a micro-batch of {edge:g} run tensor-split, not EP{e}"
    return launched, (
        f"Experts EP{launched}, the placement at the plan's mean decode micro-batch of "
        f"{batch / p:.4g} sequences{why}; the simulation priced {placement} (§A5), and an "
        f"engine runs one placement: {other} as simulated."
    )
