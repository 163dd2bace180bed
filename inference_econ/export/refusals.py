"""What an exported launch loads, and what its engine would refuse at start (each refused
here with the argument to change): the checkpoint (``checkpoint_of``), weights of another format
than the checkpoint's (``weights_launch``), speculation the engine version does not run on the
plan's layout (``speculation_launches``), a disaggregated pool's pipeline stages where the
engine version runs none in that role (``pipeline_launches``), requests longer than the model's
window or the given max model length (``longest_request``). ``plan`` is an
``export.launch.LaunchPlan``; ``names`` its engine's section of launch_flags.yaml."""

from __future__ import annotations

import math

from ..errors import SpecError, control_character, short
from ..serving.setting import Setting
from ..serving.speculative import shares_vocabulary

#: Lengths engines are configured in: max model length is rounded up to a multiple of this.
LENGTH_STEP_TOKENS = 256


def checkpoint_of(setting: Setting, given: str | None) -> str:
    """The checkpoint an engine loads: the one given (one line, not an option), else the
    Hugging Face repository the model file names (``hf_repository``); a model without one is
    refused, never launched under its display name (an engine reads that as a local folder)."""
    if given is not None:
        text = str(given)
        bad = control_character(text)
        if bad is not None:  # it goes into the launch script's comments and command lines
            raise SpecError(
                "argument",
                "--checkpoint",
                f"holds the control character {bad}",
                "give the checkpoint's name or path on one line (e.g. org/model)",
            )
        if not text.strip() or text.startswith("-"):  # an engine would read it as an option
            raise SpecError(
                "argument",
                "--checkpoint",
                f"{short(text)} is not a checkpoint name (it would be read as an option)",
                "give a Hugging Face repository id (org/model) or a path (./model)",
            )
        return text
    if setting.model.hf_repository:
        return setting.model.hf_repository
    raise SpecError(
        "argument",
        "--checkpoint",
        f"{setting.model.name} names no Hugging Face repository (no hf_repository in its file)",
        "give --checkpoint org/model, or add hf_repository to the model file",
    )


def online_quantization(setting: Setting, checkpoint: str, names: dict) -> str | None:
    """The engine's online quantization that turns the checkpoint it loads into the plan's
    weights (vLLM's and SGLang's ``--quantization fp8`` of the model's own 16-bit checkpoint;
    ``quantization`` in export/launch_flags.yaml); None where there is none to write."""
    if checkpoint != setting.model.hf_repository or float(setting.model.checkpoint_bits) != 16:
        return None
    table = {float(k): v for k, v in names.get("quantization", {}).items()}
    return table.get(float(setting.precision.weight_bits))


def weights_launch(setting: Setting, checkpoint: str, engine: str, names: dict) -> None:
    """Refuse a plan whose weights are not the checkpoint's the engine loads: the model file's
    checkpoint (``hf_repository``) holds the file's precision, and an engine turns a 16-bit one
    into another format only where it quantizes online (``online_quantization``). Any other
    format needs a checkpoint quantized to it, named with ``--checkpoint``: launched as it is,
    the engine would load weights the plan did not price (gpt-oss's MXFP4 one refuses
    ``--quantization fp8`` outright: vLLM's ``ModelConfig`` and SGLang's check the flag against
    the checkpoint's quant_method)."""
    if checkpoint != setting.model.hf_repository:
        return  # the user's checkpoint: its format is theirs to match (the script's notes say so)
    planned, native = float(setting.precision.weight_bits), float(setting.model.checkpoint_bits)
    if planned == native or online_quantization(setting, checkpoint, names) is not None:
        return
    online = sorted(int(k) for k in names.get("quantization", {}))
    raise SpecError(
        "argument",
        "--weight-bits",
        f"is {planned:g}, but {checkpoint} holds {native:g}-bit weights, which "
        f"{engine} {names['version']} "
        + (
            f"quantizes online to {', '.join(map(str, online))} bits only"
            if online and native == 16
            else "loads as they are"
        ),
        f"give --checkpoint naming a checkpoint quantized to {planned:g} bits, or "
        f"--weight-bits {native:g}",
    )


def capacity_speculation(flag: str) -> SpecError:
    """The refusal of speculation (``flag``: draft or draft_heads) in a capacity plan's
    export, which launches none."""
    return SpecError(
        "argument", flag, "is given: a capacity plan's export launches no speculation",
        "drop the speculation to export the plan, or export a point plan with it",
    )  # fmt: skip


def speculation_launches(plan, names: dict) -> None:
    """Refuse speculation the targeted engine version refuses at start: an EAGLE head without
    its checkpoint (vLLM's SpeculativeConfig: "num_speculative_tokens was provided but without
    speculative model"; SGLang's and TensorRT-LLM's draft path); vLLM 0.11 a separate draft
    model ("Speculative decoding with draft model is not supported yet",
    vllm/config/speculative.py); SGLang 0.5.3 any speculation beside pipeline stages
    (``check_server_args``: "Pipeline parallelism is not compatible with ... speculative
    decoding") and a separate draft (its STANDALONE algorithm) beside attention data
    parallelism ("standalone speculative decoding does not support dp attention",
    sglang/srt/server_args.py)."""
    if plan.speculation is None:
        return
    kind, engine = plan.speculation[0], plan.engine
    spec = plan.setting.spec
    draft = getattr(spec, "draft", None)
    if draft is not None and not shares_vocabulary(plan.setting.model, draft):
        raise SpecError(
            "argument", "--draft", f"{draft.name}'s vocabulary ({int(draft.vocab_size):,} "
            f"tokens) is not {plan.setting.model.name}'s: no engine runs a draft without the "
            "target's tokenizer", "give a draft of the target's family",
        )  # fmt: skip
    version = f"{engine} {names['version']}"
    if draft is not None and float(draft.precision.weight_bits) != float(draft.checkpoint_bits):
        raise SpecError(
            "argument", "draft_weight_bits", f"is {float(draft.precision.weight_bits):g}, but "
            f"the draft's checkpoint ({draft.hf_repository}) holds "
            f"{float(draft.checkpoint_bits):g}-bit weights, which the export loads as they are",
            f"leave draft_weight_bits out ({float(draft.checkpoint_bits):g}) to export",
        )  # fmt: skip
    if getattr(spec, "branching", 1) > 1:  # the export writes a chain of draft tokens
        raise SpecError(
            "argument", "tree_branching", f"is {spec.branching}: the plan priced a tree of "
            f"draft tokens, and the export launches {version}'s speculation as a chain",
            "leave the tree branching at 1 (a chain) to export",
        )  # fmt: skip
    if kind == "eagle":  # no engine runs EAGLE without the head's own checkpoint
        raise SpecError(
            "argument", "draft_heads", f"is eagle: {version} loads an EAGLE head from its own "
            "checkpoint, which the export does not know", "drop draft_heads='eagle' to export "
            "(or 'mtp' for a model with MTP heads)",
        )  # fmt: skip
    if engine == "vllm" and kind == "draft":
        raise SpecError(
            "argument", "--draft", f"{version} runs no separate draft model (EAGLE or MTP "
            "heads only)", "drop --draft, or export for trtllm or sglang, which run one"
        )  # fmt: skip
    per_node = plan.setting.gpu.gpus_per_host
    if engine == "trtllm" and kind == "draft" and any(w.gpus > per_node for w in plan.workers):
        raise SpecError(  # its ranks on other nodes would start before their copy of the draft
            "argument", "--draft", f"{version} loads a draft from each node's own folder, which "
            "a copy over several nodes (started by mpirun from its first) cannot wait for",
            f"plan copies of at most {per_node} GPUs, or drop --draft",
        )  # fmt: skip
    if engine != "sglang":
        return
    if any(w.pipeline > 1 for w in plan.workers):
        raise SpecError(
            "argument", "--draft" if kind == "draft" else "draft_heads",
            f"{version} runs no speculation beside pipeline stages, which the plan's layout "
            "has", "plan without pipeline stages (fewer GPUs a copy), or export for trtllm",
        )  # fmt: skip
    if kind == "draft" and any(w.attention_dp > 1 for w in plan.workers):
        raise SpecError(
            "argument", "--draft", f"{version} runs no separate draft model beside attention "
            "data parallelism, which the plan's layout has", "drop --draft, or export for trtllm"
        )  # fmt: skip


def pipeline_launches(plan, names: dict) -> None:
    """Refuse a disaggregated pool whose copies run pipeline stages where the engine version
    runs them in other roles only (``disagg_pipeline_roles`` in launch_flags.yaml, its source
    cited there; absent, every role), or only beside stages in the other pool
    (``disagg_pipeline_beside_stages``): SGLang 0.5.3 runs a prefill server's stages
    (event_loop_pp_disagg_prefill) but has no pipeline loop for a decode server
    (run_scheduler_process, python/sglang/srt/managers/scheduler.py lines 2881-2885), whose
    later stages would never be handed a request; vLLM 0.11.0's NixlConnector, which Dynamo
    0.6.1's workers join their pools through, tells a worker by its tensor rank alone: two
    stages of a prefill or decode worker listen on one handshake port (nixl_connector.py
    lines 491-494, 622), and a decode worker reads from one prefill worker a tensor rank;
    TensorRT-LLM 1.2's release notes keep a hang of context stages beside generation tensor
    parallelism, so its context servers launch with stages only beside generation stages."""
    roles = names.get("disagg_pipeline_roles")
    if roles is None or not plan.disaggregated:
        return
    paired = names.get("disagg_pipeline_beside_stages") or []
    for w in plan.workers:
        if w.pipeline <= 1:
            continue
        layout = f"the {w.role} pool's copies run PP{w.pipeline} x TP{w.tensor} ({w.gpus} GPUs)"
        engine = f"{plan.engine} {names['version']}"
        if w.role not in roles:
            where = (
                f"a disaggregated {w.role} server (only on {', '.join(roles)})"
                if roles
                else "any disaggregated server"
            )
            raise SpecError(
                "argument", "pipeline", f"{layout}, and {engine} runs no pipeline stages on "
                f"{where}", "plan the pools without pipeline stages: --no-pipeline",
            )  # fmt: skip
        flat = [o for o in plan.workers if o.role != w.role and o.pipeline == 1]
        if w.role in paired and flat:
            other = flat[0]
            raise SpecError(
                "argument", "pipeline", f"{layout} beside {other.role} copies of "
                f"TP{other.tensor} without stages, and {engine} runs pipeline stages on a "
                f"disaggregated {w.role} server only beside {other.role} servers with stages",
                "plan the pools without pipeline stages: --no-pipeline",
            )  # fmt: skip


def round_length(tokens: float, window: int | None) -> int:
    """A max model length: ``tokens`` rounded up to the engines' step, within the window."""
    n = int(math.ceil(float(tokens) / LENGTH_STEP_TOKENS) * LENGTH_STEP_TOKENS)
    return min(n, int(window)) if window else n


def within_window(tokens: float, setting: Setting, trace: bool = False) -> None:
    """Refuse requests of ``tokens`` (prompt plus output) beyond the model's context window:
    the engine would refuse them. ``trace``: the requests are a trace's, named as such."""
    window = setting.model.max_context_tokens
    if window and tokens > window:
        raise SpecError(
            "argument",
            "--trace" if trace else "--prompt-tokens",
            ("has requests" if trace else "with --output-tokens makes requests")
            + f" of {tokens:,.0f} tokens, longer than {setting.model.name}'s context window "
            f"({int(window):,})",
            f"plan requests of at most {int(window):,} tokens (prompt plus output)",
        )


def longest_request(max_model_len: int | None, tokens: float, setting: Setting) -> int:
    """The engine's longest request: ``max_model_len`` where given, which must hold the plan's
    requests (a shorter one launches an engine that refuses them), else theirs rounded up."""
    window = setting.model.max_context_tokens
    within_window(tokens, setting)
    if max_model_len is None:
        return round_length(tokens, window)
    if window and max_model_len > window:  # vLLM refuses a length above the model's (its
        raise SpecError(  # max_position_embeddings) unless told to allow it; so does SGLang
            "argument",
            "--max-model-len",
            f"is {max_model_len:,} tokens, longer than {setting.model.name}'s context window "
            f"({int(window):,})",
            f"give at most {int(window):,}, or leave it out",
        )
    if max_model_len < tokens:
        raise SpecError(
            "argument",
            "--max-model-len",
            f"is {max_model_len:,} tokens, shorter than the plan's requests ({tokens:,.0f})",
            f"give at least {math.ceil(tokens):,}, or leave it out",
        )
    return int(max_model_len)
