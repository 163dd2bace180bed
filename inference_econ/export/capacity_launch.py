"""The launch plan of a capacity plan: its instances (or prefill and decode pools) in the
layouts its simulation chose, each worker's limits as its engine is launched with them, and the
Poisson benchmark at the plan's rate and lengths that checks it against its targets."""

from __future__ import annotations

import math

from ..optimise.capacity import BUDGETS_SEARCHED
from ..serving.intervals import load_intervals
from ..serving.setting import Setting
from .launch import (
    LaunchPlan,
    Load,
    Worker,
    extrapolation_notes,
    finish,
    layout_degrees,
    loaded_checkpoint,
    worker,
)
from .refusals import capacity_speculation, round_length, within_window


def capacity_plan(
    capacity, engine: str, traffic, config, *, max_model_len=None, checkpoint=None
) -> LaunchPlan:
    """The deployment of a capacity plan (``optimise.capacity_plan.CapacityPlan``): its instances
    (or prefill and decode pools) in the layouts the simulation chose, checked at the plan's
    Poisson rate and lengths against its targets."""
    import numpy as np

    from ..load.deployment import reference_context

    setting, r = capacity.setting, capacity.result
    if setting.spec is not None:
        flag = "draft" if getattr(setting.spec, "draft", None) is not None else "draft_heads"
        raise capacity_speculation(flag)
    s = traffic.stream()
    ctx = reference_context(traffic)
    drawn, prompt_cap, capped = refuse_past_window(traffic, setting, s)
    longest = max_model_len or round_length(max(drawn, capped), setting.model.max_context_tokens)
    batch = max(1, int(math.ceil(r.mean_batch)))
    prompt = float(np.mean(s.prompt_tokens))
    workers, placed = _capacity_workers(
        capacity, engine, traffic, config, ctx, prompt, batch, longest
    )
    load = _capacity_load(capacity, traffic, s)
    expected = _capacity_expected(capacity)
    notes = _capacity_notes(capacity, workers, batch, ctx, config) + placed
    ckpt = loaded_checkpoint(setting, checkpoint, engine)
    return finish(
        LaunchPlan(
            "capacity",
            setting,
            engine,
            ckpt,
            workers,
            longest,
            load,
            expected,
            None,
            notes,
            {
                k: float(v)
                for k, v in {
                    **load_intervals(r),
                    **dict(r.count_ends),
                    **capacity.intervals(),
                }.items()
                if k.rsplit("_", 1)[0] in expected
            },
            prefix_caching=bool(getattr(config, "prefix_caching", True)),
            adp_balancing=getattr(config, "adp_balancing", None),
            longest_prompt=int(max(np.max(s.prompt_tokens), prompt_cap)),
        )  # fmt: skip
    )


def refuse_past_window(traffic, setting: Setting, s=None) -> tuple[float, float, float]:
    """(the longest request the traffic's run draws, its longest prompt and its longest
    request by each side's stated longest where its law caps it if longer): a session's later
    turns and a shared prefix lengthen a prompt past its law's cap; a traffic's lengths may
    have no upper end (a given --max-model-len caps its tail). Where the traffic states its
    longest request (caps, fixed lengths, a trace's rows) one beyond the window is refused,
    not launched at a length the engine refuses it at: it depends on the traffic alone, so an
    export checks it before the plan's search too. ``s``: the traffic's stream, if drawn."""
    import numpy as np

    s = traffic.stream() if s is None else s
    drawn = float(np.max(s.prompt_tokens + s.output_tokens))
    prompt_cap = _longest_side(traffic.input_lengths, s.prompt_tokens)
    capped = prompt_cap + _longest_side(traffic.output_lengths, s.output_tokens)
    sides = (traffic.input_lengths, traffic.output_lengths)
    if all(side is None or math.isfinite(side.longest()) for side in sides):
        within_window(capped, setting, trace=traffic.trace is not None)
    return drawn, prompt_cap, capped


def _longest_side(lengths, drawn) -> float:
    """The longest prompt (or output) an exported engine must take: the law's own cap
    (``Lengths.longest``) where it has one, so a rare long request of the plan's traffic is not
    refused, else the longest the run drew."""
    cap = lengths.longest() if lengths is not None else math.inf
    return float(cap) if math.isfinite(cap) else float(max(drawn))


def _capacity_workers(
    capacity, engine: str, traffic, config, ctx: float, prompt: float, batch: int, longest: int
) -> tuple[tuple[Worker, ...], tuple[str, ...]]:
    """The workers of a capacity plan's deployment: its instances, or its prefill and decode
    pools (each on its own GPU, as the simulation ran them), each in the layout the simulation's
    instance for its share of the load chose, its
    memory checked at the simulation's mean ``batch`` at the reference context ``ctx`` (a
    prefill worker: one step's budget of prompts of ``prompt`` tokens); a decoding worker's
    experts placed as at that mean batch (``experts.simulated_degree``), with the lines saying
    so."""
    from ..load.deployment import instance_for, offered_load
    from .experts import simulated_degree

    d = capacity.deployment
    placed: list[str] = []

    def pool(role, gpus, count, load):
        # a prefill pool on GPUs of its own (``prefill_hardware``) is planned, and checked, on them
        setting = (d.prefill_setting if role == "prefill" else None) or capacity.setting
        inst = instance_for(setting, gpus, config, ctx, load)
        # the instance's own limits (the engine's defaults on the GPU), as the engine is
        # launched with them: one attention rank's where they hold per rank (the instance's
        # are its ranks' together, ``EngineConfig.on_layout``)
        lay = inst.layout
        cap, budget = inst.config.rank_limits(lay)
        # prompts in flight on a prefill worker: one step's budget of them on every rank
        prefill_batch = max(1, int(math.ceil(inst.config.step_token_budget / prompt)))
        attention = lay.tensor_degree / lay.attention_divisor
        degrees = layout_degrees(setting, gpus, lay.pipeline, lay.tensor_degree, attention, engine)
        at, planned = (prompt, prefill_batch) if role == "prefill" else (ctx, batch)
        if role != "prefill":  # a prefill pass splits experts by its tokens, well past §A5's edge
            e, note = simulated_degree(setting, degrees, planned, engine)
            degrees = (*degrees[:3], e)
            placed.extend([note] if note else [])
        return worker(setting, engine, role, count, degrees, cap, budget, at, longest, planned)

    if d.disaggregated:
        workers = (
            pool(
                "prefill",
                d.prefill_gpus_per_instance,
                d.prefill_instances,
                offered_load(traffic, d.prefill_instances, outputs=False),
            ),
            pool(
                "decode",
                d.gpus_per_instance,
                d.instances,
                offered_load(traffic, d.instances, prompts=False),
            ),
        )
    else:
        workers = (
            pool("server", d.gpus_per_instance, d.instances, offered_load(traffic, d.instances)),
        )
    return workers, tuple(placed)


def _capacity_load(capacity, traffic, s) -> Load:
    """The benchmark of a capacity plan: its traffic's lengths (``s``, the traffic's stream)
    at the plan's Poisson rate, with its latency targets."""
    import numpy as np

    t = capacity.targets
    prefix = float(traffic.shared_prefix_tokens)  # synthetic traffic's system prompts
    own = s.prompt_tokens - prefix  # each prompt's own part, after the shared prefix
    return Load(
        float(np.mean(s.prompt_tokens)),
        float(np.std(own)),
        float(np.mean(s.output_tokens)),
        float(np.std(s.output_tokens)),
        int(traffic.requests),
        rate_per_s=float(capacity.rate_per_s),
        slo_ttft_p99_s=t.ttft_p99_s,
        slo_tpot_p99_s=t.tpot_p99_s,
        slo_e2e_p99_s=t.e2e_p99_s,
        prefix_tokens=prefix,
        prefixes=int(traffic.shared_prefixes),
    )


def _capacity_expected(capacity) -> dict:
    """The figures a capacity plan expects: its simulation's percentiles, throughput, goodput
    and prices at the plan's rate, and the most it holds within the targets."""
    r = capacity.result
    return {
        "ttft_p50_s": r.ttft_s.p50,
        "ttft_p99_s": r.ttft_s.p99,
        "tpot_p50_s": r.tpot_s.p50,
        "tpot_p99_s": r.tpot_s.p99,
        "e2e_p99_s": r.e2e_s.p99,
        "output_tokens_per_s": r.output_tokens_per_s,
        "goodput_fraction": r.goodput_fraction,
        "usd_per_m_output_tokens": r.usd_per_m_output_tokens,
        # the deployment's whole cost per million output tokens, capacity's headline price
        "usd_per_m_output_tokens_all_in": r.usd_per_m_output_tokens_all_in,
        "max_rate_per_s": capacity.max_rate_per_s,
    }


def _per_rank(setting: Setting, w: Worker) -> str:
    """How a worker's written limits hold: each attention rank's, where its engine's limits
    hold per rank (``LIMITS_PER_ATTENTION_RANK``) and it runs several; else nothing to add."""
    from ..specs.engine import LIMITS_PER_ATTENTION_RANK

    prof = setting.assumptions.profile()
    if w.attention_dp <= 1 or prof is None or prof.family not in LIMITS_PER_ATTENTION_RANK:
        return ""
    return (
        f" on each of its {w.attention_dp} attention ranks ({w.batch * w.attention_dp} an instance)"
    )


def _confident_note(capacity) -> tuple[str, ...]:
    """The plan for the targets to hold at the pessimistic end of the load an instance holds,
    where it is not this launch's (``Confident``): the launch is the expected plan."""
    c, d = capacity.confident, capacity.deployment
    if c is None or (c.deployment == d and c.hardware in (None, capacity.setting.gpu.name)):
        return ()
    gpu = c.hardware or capacity.setting.gpu.name
    return (
        f"This launch is the expected plan. At {c.level} % confidence (one instance holding as "
        f"little as {c.factor:.2f} x the expected load, the low end of its {c.level} % "
        f"interval) the targets hold with {c.deployment.describe()} {gpu} "
        f"(${c.usd_per_hour:,.2f} an hour against ${capacity.result.usd_per_hour:,.2f}): launch more "
        "instances of it, or plan that deployment (capacity says so).",
    )


def _capacity_notes(capacity, workers: tuple[Worker, ...], batch: int, ctx: float, config) -> tuple:
    """What a capacity plan's expected figures are, where its memory was checked and what of
    its scheduler ``config`` a launch leaves out."""
    setting, d, r, t = capacity.setting, capacity.deployment, capacity.result, capacity.targets
    notes = (
        f"Expected figures: the simulation of {d.describe()} {setting.gpu.name} at {capacity.rate_per_s:g} req/s "
        f"({r.assumptions}); it holds {capacity.max_rate_per_s:.4g} req/s within {t.describe()}.",
        f"Memory checked at the simulation's mean batch ({batch}) and the lengths' mean context "
        f"({ctx:,.0f} tokens); the engine's scheduler cap is {workers[-1].batch} requests"
        f"{_per_rank(setting, workers[-1])}.",
    )
    notes += extrapolation_notes(r) + _confident_note(capacity)
    if getattr(config, "adp_balancing", None) and all(w.attention_dp <= 1 for w in workers):
        notes += (
            "attention_dp_config is not written: no worker runs attention data parallelism, "
            "which its balancing (--adp-balance) schedules",
        )
    if capacity.config is not None:  # a searched step budget: each budget's plan, as chosen
        notes += tuple(n for n in capacity.notes if n.startswith(BUDGETS_SEARCHED))
    if r.offered_rates and load_intervals(r):  # expected figures; the offered load's are bare
        notes += (
            "output_tokens_per_s and the prices per million output tokens are the offered load's (a "
            "deployment that keeps up serves it), so they carry no interval; the others do "
            "(§F12).",
        )
    return notes
