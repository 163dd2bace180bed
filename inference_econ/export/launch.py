"""What an export deploys: engine workers (role, count, GPUs, whole layout, batch and token
limits), the load that checks them and the figures the plan expects — built from a point, a
frontier point, a capacity plan or a disaggregated plan, each worker's memory checked against
its engine's profile before anything is written (``serving.memory``).

The engines' own command lines and files are rendered from a ``LaunchPlan`` by
``export.engine_configs``; the benchmark that reproduces the load by ``export.benchmark_commands``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..errors import InfeasibleError, SpecError
from ..model.latency import stated_experts
from ..serving.derived_intervals import inverse_intervals, renamed_intervals
from ..serving.intervals import interval_columns, load_intervals, load_support
from ..serving.memory import MemoryCheck, check_worker, require_fit
from ..serving.setting import Setting
from ..serving.speculative import SpecDecoding
from ..serving.support import plan_line
from ..specs.features import ATTENTION_DP_FEATURES
from .eplb import balancer_launches
from .experts import expert_note, launched_degree, point_degree
from .overlap import overlap_launches
from .refusals import (
    checkpoint_of,
    longest_request,
    pipeline_launches,
    speculation_launches,
    weights_launch,
)

#: The engines an export writes for (the sections of launch_flags.yaml).
ENGINES = ("vllm", "sglang", "trtllm")


@lru_cache(maxsize=1)
def launch_flags() -> dict:
    """The engines' and benchmark tools' names by concept (``launch_flags.yaml``)."""
    from ..specs.yamlfile import load_yaml

    return load_yaml(Path(__file__).with_name("launch_flags.yaml"))


def engine_names(engine: str) -> dict:
    """One engine's section of ``launch_flags.yaml`` (unknown engines refused)."""
    data = launch_flags()["engines"]
    if engine not in data:
        raise SpecError(
            "argument",
            "engine",
            f"no launch configuration for {engine!r}",
            f"choose {', '.join(ENGINES)}",
        )
    return data[engine]


def _version(engine: str) -> str:
    """The version of ``engine`` an export targets (``launch_flags.yaml``)."""
    return str(engine_names(engine)["version"])


@dataclass(frozen=True)
class Worker:
    """One kind of engine worker: ``count`` copies of a ``gpus``-GPU instance."""

    role: str  # "server" (prefill and decode together), "prefill" or "decode"
    count: int
    gpus: int
    pipeline: int
    tensor: int  # GPUs of one pipeline stage
    attention_dp: int  # attention data-parallel ranks within the tensor group (1: none)
    expert: int  # expert-parallel degree (1: none)
    batch: int  # most running requests (max_num_seqs and its kin), per rank: ``rank_batch``
    token_budget: int  # most tokens per step
    memory: MemoryCheck


@dataclass(frozen=True)
class Load:
    """The load a benchmark replays: lengths, and a Poisson rate or a closed-loop
    concurrency, with the latency targets (seconds) and how many requests to send."""

    input_mean: float
    input_sd: float
    output_mean: float
    output_sd: float
    requests: int
    rate_per_s: float | None = None
    concurrency: int | None = None
    slo_ttft_p99_s: float | None = None
    slo_tpot_p99_s: float | None = None
    slo_e2e_p99_s: float | None = None
    #: A shared system prompt every prompt starts with (part of ``input_mean``), tokens, and
    #: how many different ones there are (0 tokens: none).
    prefix_tokens: float = 0.0
    prefixes: int = 1


@dataclass(frozen=True)
class LaunchPlan:
    """Everything an export writes, and where it came from."""

    source: str
    setting: Setting
    engine: str
    checkpoint: str
    workers: tuple[Worker, ...]
    max_model_len: int
    load: Load
    #: The plan's own figures (seconds, tokens/s, $ per million tokens), by name.
    expected: dict = field(default_factory=dict)
    #: Speculation: (kind "draft" | "eagle" | "mtp", draft checkpoint or None, draft tokens).
    speculation: tuple | None = None
    notes: tuple[str, ...] = ()
    #: The expected figures' 80 % and 90 % intervals (``name_low80`` ...; docs/model.md §F12),
    #: by name; empty under an ideal preset (a bound has none).
    intervals: dict = field(default_factory=dict)
    #: Whether the engine keeps and reuses finished requests' KV cache for prompts that start
    #: with them, as the plan's simulation did (``EngineConfig.prefix_caching``).
    prefix_caching: bool = True
    #: The longest prompt the plan's traffic sends, tokens (0: not known, the max length).
    longest_prompt: int = 0
    #: TensorRT-LLM's attention-DP balancing (wait, timeout steps) the plan ran, else None
    #: (``EngineConfig.adp_balancing``).
    adp_balancing: tuple[int, int] | None = None

    @property
    def version(self) -> str:
        return _version(self.engine)

    @property
    def disaggregated(self) -> bool:
        return any(w.role != "server" for w in self.workers)

    @property
    def gpus(self) -> int:
        return sum(w.count * w.gpus for w in self.workers)


#: What a whole number of each checked value counts (a batch is requests, not GPUs).
_OF = {"gpus": " of GPUs", "prefill_gpus": " of GPUs", "batch": " of requests"}


def _whole(value, what: str) -> int:
    v = float(value)
    if not math.isfinite(v) or abs(v - round(v)) > 1e-9 or v < 1:
        raise SpecError(
            "argument",
            what,
            f"is {v:g}, not a whole number{_OF.get(what, '')}",
            "engines run whole layouts: export a point of a discrete search (--discrete)",
        )
    return int(round(v))


def layout_degrees(
    setting: Setting, gpus, pipeline, tensor, attention, engine: str
) -> tuple[int, int, int, int]:
    """(pipeline, tensor, attention DP ranks, expert degree) of a layout on ``engine``, whole
    or refused."""
    n, p, t = (
        _whole(gpus, "gpus"),
        _whole(pipeline, "pipeline_degree"),
        _whole(tensor, "tensor_degree"),
    )
    a = _whole(attention, "attention_degree")
    if p * t != n or t % a:
        raise SpecError(
            "argument",
            "layout",
            f"PP{p} x TP{t} (attention TP{a}) is not a whole layout of {n} GPUs",
            "export a point of a discrete search (--discrete)",
        )
    split = _tensor_split(setting, t, a)
    if split:  # the engine's --tensor-parallel-size: every GPU a 1/t of each matrix
        raise SpecError(
            "argument",
            "--gpus",
            f"TP{t} cannot be launched: {split}",
            "give a GPU count whose tensor degree divides the model's heads and widths",
        )
    _refuse_dense_attention_dp(setting, engine, t, a)
    return p, t, t // a, launched_degree(setting, t, engine)


def _refuse_dense_attention_dp(setting: Setting, engine: str, t: int, a: int) -> None:
    """Refuse a tensor group of ``t`` GPUs whose attention the plan runs on ``a`` GPUs
    (attention data parallelism) where the engine runs that for no model of this class: the
    shipped profiles state it for MoE and MLA models only (SGLang 0.5.3's llama.py and qwen2.py
    split attention over the whole tensor group, so ``--enable-dp-attention`` fails there; vLLM
    and TensorRT-LLM replicate a dense model's KV heads instead, which the plan did not price).
    Only a preset without the engine's layouts (``paper``, ``refined``) plans it: an engine's
    own offers no such layout (``latency.engine_attention_degrees``)."""
    if a >= t:
        return
    model_class = setting.model.model_class
    if set(_profile(engine).layout_features(model_class)) & set(ATTENTION_DP_FEATURES):
        return
    why = f"as the {setting.assumptions.name} preset, which runs every layout, chose"
    raise SpecError(
        "argument",
        "--gpus",
        f"TP{t} cannot be launched as planned: the plan attends over {a} of each {t} GPUs "
        f"({t // a} attention data-parallel ranks, {why}), and {engine} {_version(engine)} runs "
        f"attention data parallelism for no {model_class} model",
        "plan under the engine's preset (--assumptions achievable)",
    )


#: Engines that refuse a step token budget below the batch: vLLM 0.11's SchedulerConfig raises
#: "max_num_batched_tokens ... must be greater than or equal to max_num_seqs"
#: (vllm/config/scheduler.py), so a worker's budget is raised to its batch there.
BUDGET_AT_LEAST_BATCH = ("vllm",)


def worker(
    setting: Setting,
    engine: str,
    role: str,
    count: int,
    degrees: tuple[int, int, int, int],
    batch: int,
    token_budget: int,
    context_tokens: float,
    max_model_len: int,
    check_batch: int | None = None,
) -> Worker:
    """A worker whose engine admits ``batch`` requests, its memory checked at ``check_batch``
    (default ``batch``) requests of ``context_tokens``."""
    p, t, dp, e = degrees
    label = {"server": "instance", "prefill": "prefill worker", "decode": "decode worker"}[role]
    if engine in BUDGET_AT_LEAST_BATCH:
        token_budget = max(int(token_budget), int(batch))
    planned = int(check_batch or batch)
    memory = check_worker(
        setting,
        engine,
        p * t,
        planned,
        context_tokens,
        max_model_len,
        label,
        max(int(dp), 1),
        int(token_budget),
        pipeline=int(p),
    )
    return Worker(role, int(count), p * t, p, t, dp, e, int(batch), int(token_budget), memory)


def finish(plan: LaunchPlan) -> LaunchPlan:
    """The plan, or the refusal of a worker that does not fit its GPUs (with the numbers), of
    speculation its engine refuses at start on the plan's layout, of a disaggregated pool's
    pipeline stages its engine does not run in that role, of redundant experts its
    balancer would not hold (its weights: ``loaded_checkpoint``, before the plan's work) or of two-batch
    overlap it would not run; the notes of the redundant experts and the overlap added."""
    require_fit([w.memory for w in plan.workers])
    names = engine_names(plan.engine)
    speculation_launches(plan, names)
    pipeline_launches(plan, names)
    added = balancer_launches(plan, names) + overlap_launches(plan, names)
    return dataclasses.replace(plan, notes=plan.notes + added) if added else plan


def loaded_checkpoint(setting: Setting, checkpoint: str | None, engine: str) -> str:
    """The checkpoint the engine loads, refused before any work where the model has none or
    it does not hold the plan's weights (``refusals.checkpoint_of``, ``weights_launch``)."""
    ckpt = checkpoint_of(setting, checkpoint)
    weights_launch(setting, ckpt, engine, engine_names(engine))
    return ckpt


def _speculation(setting: Setting, verify: int) -> tuple | None:
    """(kind, draft checkpoint, draft tokens) of the chosen configuration, None without."""
    spec = setting.spec
    if spec is None or verify <= 1:
        return None
    draft = getattr(spec, "draft", None)
    if draft is not None:
        return ("draft", checkpoint_of(setting.replace(model=draft), None), verify - 1)
    return (str(spec.kind), None, verify - 1)


def _profile(engine: str):
    from ..specs.engine import load_engine

    return load_engine(engine)


def step_budget(engine: str, gpu) -> int:
    """The engine's default tokens per step on this GPU for a served (online) run: vLLM V1
    takes 8,192 on GPUs of 70 GiB or more but the A100 and 2,048 elsewhere (its profile's
    scheduler rules), where the profile's base figure is the latter."""
    return int(_profile(engine).scheduler_limits(gpu, offline=False)[1])


def _runs(setting: Setting, gpus, row, what: str = "") -> None:
    """Refuse a GPU count no whole layout splits the model on (the request view's ``row``
    infinite for that reason), never a plan of inf; a layout that does not fit is left to the
    workers' memory check (``require_fit``), which says how far over it is."""
    if math.isfinite(float(row["decode_latency_s"])):
        return
    from ..serving.decode import uneven

    reason = uneven(setting, gpus, continuous=False)  # an engine runs whole layouts only
    if reason:
        raise InfeasibleError(what + reason)


def point_plan(
    setting: Setting,
    engine: str,
    gpus: float,
    batch: float,
    prompt_tokens: float,
    output_tokens: float,
    *,
    source: str = "point",
    max_model_len: int | None = None,
    checkpoint: str | None = None,
    requests: int | None = None,
) -> LaunchPlan:
    """One instance of ``gpus`` GPUs at ``batch`` requests of ``prompt_tokens`` in and
    ``output_tokens`` out (the request view, docs/model.md §B10), checked by a closed loop of
    ``batch`` clients."""
    from ..serving.requests import request

    ckpt = loaded_checkpoint(setting, checkpoint, engine)  # what the engine loads: refused first
    row = request(setting, gpus, batch, prompt_tokens, output_tokens, discrete=True)
    _runs(setting, gpus, row)
    degrees = layout_degrees(
        setting, gpus, row["pipeline_degree"], row["tensor_degree"], row["attention_degree"],
        engine,
    )  # fmt: skip
    b = _whole(batch, "batch")
    e0 = degrees[3]  # the degree the layout launches once batches are large
    e, why = point_degree(setting, degrees, b, engine)  # as the point's decode is priced
    degrees = (*degrees[:3], e)
    context = prompt_tokens + output_tokens / 2.0  # the decode step's mean context (§B10)
    longest = longest_request(max_model_len, prompt_tokens + output_tokens, setting)
    budget = step_budget(engine, setting.gpu)
    cap = rank_batch(engine, b, degrees[2])
    w = worker(setting, engine, "server", 1, degrees, cap, budget, context, longest, b)
    load = _closed_loop_load(prompt_tokens, output_tokens, b, requests)
    require_fit([w.memory])  # a worker that does not fit is refused with its numbers first
    # the benchmark the plan writes, run in the load engine as compare-measured replays it,
    # with the speculation the plan launches (none, or its draft length)
    verify = int(row["draft_tokens"])
    r = closed_loop(launched(setting, verify, w.expert), engine, degrees, w, context, load)
    expected, ends = _closed_loop_figures(r)
    plan = LaunchPlan(
        source,
        setting,
        engine,
        ckpt,
        (w,),
        longest,
        load,
        expected,
        _speculation(setting, verify),
        (
            f"Expected figures: the {setting.assumptions.label} preset's load engine running "
            f"the benchmark below: a closed loop of {b} clients, {prompt_tokens:g} in / "
            f"{output_tokens:g} out, {load.requests} requests (as compare-measured replays "
            "its results); means over the requests.",
            *filter(None, [expert_note(setting, w.tensor, e0, engine, _version(engine)), why]),
            *_rank_batch_note(engine, w, b),
            *extrapolation_notes(r),
        ),
        ends,
        longest_prompt=int(prompt_tokens),
    )
    return finish(plan)


def _closed_loop_load(prompt_tokens: float, output_tokens: float, batch: int, requests) -> Load:
    """The benchmark of a point or disaggregated plan: ``batch`` closed-loop clients sending
    requests of fixed lengths, ``requests`` of them (default ten per client, at least 200)."""
    return Load(
        float(prompt_tokens),
        0.0,
        float(output_tokens),
        0.0,
        int(requests or max(10 * batch, 200)),
        concurrency=batch,
    )


def _closed_loop_figures(r) -> tuple[dict, dict]:
    """The figures a point plan expects from its closed-loop run ``r`` (means over the
    requests) and their intervals, by name."""
    expected = {
        "ttft_s": r.ttft_s.mean,
        "tpot_s": r.tpot_s.mean,
        "e2e_latency_s": r.e2e_s.mean,
        "output_tokens_per_s_per_request": 1.0 / r.tpot_s.mean,
        "output_tokens_per_s": r.output_tokens_per_s,
        "usd_per_m_output_tokens": r.usd_per_m_output_tokens,
        "usd_per_m_input_tokens": r.usd_per_m_input_tokens,
    }
    # one output token: no time per output token, and no decode step to price (the first
    # token comes out of the prefill, charged as input): those figures are not stated
    expected = {k: v for k, v in expected.items() if math.isfinite(v) and v > 0}
    named = {  # the run's figure behind each expected figure
        "ttft_s": "ttft_mean_s",
        "tpot_s": "tpot_mean_s",
        "e2e_latency_s": "e2e_mean_s",
        "output_tokens_per_s": "output_tokens_per_s",
        "usd_per_m_output_tokens": "usd_per_m_output_tokens",
        "usd_per_m_input_tokens": "usd_per_m_input_tokens",
    }
    named = {k: v for k, v in named.items() if k in expected}
    ends = _renamed_ends(load_intervals(r), named)
    if "tpot_s" in expected:
        ends.update(inverse_intervals(ends, "tpot_s", "output_tokens_per_s_per_request"))
    return expected, ends


def launched(setting: Setting, verify: int, expert: int = 1) -> Setting:
    """The setting as the engine an export launches runs it: speculation with the plan's
    draft length, ``verify`` tokens a cycle at most (none at 1), as ``_speculation`` writes it;
    a mixture of experts with its experts split over the tensor group at every batch where the
    worker launches expert parallelism (``expert`` > 1), else never (``stated_experts``)."""
    if setting.model.is_moe:
        a = stated_experts(setting.assumptions, expert > 1)
        setting = setting.replace(assumptions=a)
    spec = setting.spec
    if spec is None:
        return setting
    if verify <= 1:
        return setting.replace(spec=None)
    if isinstance(spec, SpecDecoding):
        return setting.replace(spec=dataclasses.replace(spec, max_draft_tokens=verify))
    return setting.replace(spec=dataclasses.replace(spec, max_depth=verify - 1))


def closed_loop(setting: Setting, engine: str, degrees, w: Worker, context: float, load: Load):
    """The ``LoadResult`` of ``load.concurrency`` closed-loop clients on one instance of the
    worker ``w`` (its layout ``degrees``, batch cap and token budget as ``engine`` reads them;
    the engine profile's admission and prompt scheduling), each sending its next request of the load's fixed
    lengths when its last finishes: the benchmark a point plan writes (docs/model.md §E1)."""
    from ..load.arrivals import Traffic
    from ..load.engine import EngineConfig
    from ..load.lengths import Lengths
    from ..load.run import Run, instance_in, serve
    from ..model.mixed_step import EngineLayout
    from ..specs.engine import LIMITS_PER_ATTENTION_RANK

    p, t, dp, _ = degrees
    layout = EngineLayout(p * t, p, float(max(int(dp), 1)))
    config = EngineConfig(
        max_batch_requests=int(w.batch),
        # the worker's cap as its engine reads it: per attention rank or per instance
        per_attention_rank=engine in LIMITS_PER_ATTENTION_RANK,
        step_token_budget=int(w.token_budget),
        # the engine's scheduling, and the CUDA graphs the launch it writes captures
        engine_own=("admission", "prefill", "scheduler_steps", "graph_batch_sizes"),
    )
    inst = instance_in(setting, layout, config, context)
    traffic = Traffic(
        None,
        Lengths("fixed", float(load.input_mean)),
        Lengths("fixed", float(load.output_mean)),
        requests=int(load.requests),
        seed=0,
        clients=int(load.concurrency),
    )
    return serve(inst, Run(traffic, clients=int(load.concurrency))).result


def _renamed_ends(row, named: dict[str, str]) -> dict[str, float]:
    """The interval columns of each plan figure ``name`` from those of the figure ``source`` of
    ``row`` it states (``named``: name -> source; none where the row has none, an ideal bound)."""
    ends: dict[str, float] = {}
    for name, source in named.items():
        ends.update(renamed_intervals(row, source, name))
    return ends


def _speeds(ends: dict, tpot: str, batch: int) -> dict:
    """The interval columns of the speeds a time per output token ``tpot`` gives: per
    request 1 / it, and ``batch`` requests' output tokens per second (its ends, swapped);
    {} where it has none (a bound)."""
    per = inverse_intervals(ends, tpot, "output_tokens_per_s_per_request")
    whole = {c: batch * v for c, v in zip(interval_columns("output_tokens_per_s"), per.values())}
    return {**per, **whole} if per else {}


def extrapolation_notes(r) -> tuple[str, ...]:
    """The line saying a plan extrapolates, where the class of its run under load ``r`` is not
    in support (docs/model.md §F12); none in support or for a bound."""
    support = load_support(r)
    if support is None or support.status == "in support":
        return ()
    return (plan_line(support),)


def caps_per_rank(engine: str, attention_dp: int) -> bool:
    """Whether a worker's batch cap is each of its attention ranks' (``engine`` reads
    ``max_batch_size``/``max_num_seqs`` per rank: TensorRT-LLM, vLLM) rather than the
    instance's."""
    from ..specs.engine import LIMITS_PER_ATTENTION_RANK

    return attention_dp > 1 and engine in LIMITS_PER_ATTENTION_RANK


def rank_batch(engine: str, batch: int, attention_dp: int) -> int:
    """The requests a worker of ``engine`` is launched to admit for an instance batch of
    ``batch``: each of its ``attention_dp`` attention ranks' share, rounded up, where its cap
    is per rank (``caps_per_rank``), else the batch; CUDA graphs are then captured up to the
    batch a rank runs, not the instance's. An engine reading its cap as the instance's under
    attention data parallelism (SGLang) gives each rank its share rounded down
    (``TpModelWorker``, sglang/srt/managers/tp_worker.py): its cap is the batch rounded up to
    whole shares."""
    share = max(1, math.ceil(int(batch) / int(attention_dp)))
    if caps_per_rank(engine, attention_dp):
        return share
    return share * int(attention_dp) if attention_dp > 1 else int(batch)


def _rank_batch_note(engine: str, w: Worker, batch: int) -> tuple[str, ...]:
    """The line saying a worker's batch cap is each attention rank's share of the batch."""
    if w.batch == batch:
        return ()
    if not caps_per_rank(engine, w.attention_dp):  # the instance's cap, shared by its ranks
        return (
            f"Batch cap {w.batch} an instance ({w.batch // w.attention_dp} on each of its "
            f"{w.attention_dp} attention ranks, at least the plan's {batch}): {engine} gives "
            "each rank its share of the cap rounded down.",
        )
    return (
        f"Batch cap {w.batch} on each of the {w.attention_dp} attention ranks "
        f"({w.batch * w.attention_dp} an instance, at least the plan's {batch}): {engine} reads "
        "it per rank, and captures CUDA graphs up to it.",
    )


def _tensor_split(setting: Setting, n: int, attention: int | None = None) -> str | None:
    """Why a worker of tensor degree ``n`` (every GPU holding 1/n of each feed-forward matrix,
    and of each attention matrix over its ``attention`` GPUs, default ``n``, as engines'
    --tensor-parallel-size does) cannot split the model, or None: its query heads divide by
    ``attention``, and each feed-forward width (experts split n ways where they are fewer) by
    n. Experts spread whole where they or their slots with the model's redundant copies
    divide by n (DeepSeek-R1's 288 slots over 72 GPUs)."""
    m = setting.model
    heads = m.attention.query_heads
    a = n if attention is None else attention
    if heads % a:
        return f"{m.name}'s {heads} attention heads do not split {a} ways"
    copies = int(m.redundant_experts)
    for g in m.layer_groups:
        widths = [g.ffn.d_ff] + ([g.ffn.shared_d_ff] if g.ffn.shared_d_ff else [])
        if g.ffn.experts > 1 and (g.ffn.experts % n == 0 or (g.ffn.experts + copies) % n == 0):
            continue  # experts spread over the GPUs whole
        for w in widths:
            if w % n:
                return f"{m.name}'s feed-forward width {w:,} does not split {n} ways"
    return None


def disagg_plan(
    setting: Setting,
    engine: str,
    gpus: float,
    batch: float,
    prompt_tokens: float,
    output_tokens: float,
    prefill_gpus: float | None = None,
    *,
    max_model_len: int | None = None,
    checkpoint: str | None = None,
    requests: int | None = None,
) -> LaunchPlan:
    """A decode worker of ``gpus`` GPUs at ``batch`` and as many prefill workers of
    ``prefill_gpus`` as keep it fed (the pools' busy times, docs/model.md §B10)."""
    from ..serving import disaggregation as dg
    from ..serving.requests import request

    ckpt = loaded_checkpoint(setting, checkpoint, engine)  # what the engine loads: refused first
    row = request(setting, gpus, batch, prompt_tokens, output_tokens, discrete=True)
    _runs(setting, gpus, row, "decode workers: ")
    b = _whole(batch, "batch")
    n_p = _whole(prefill_gpus or gpus, "prefill_gpus")
    longest = longest_request(max_model_len, prompt_tokens + output_tokens, setting)
    decode_degrees = layout_degrees(
        setting, gpus, row["pipeline_degree"], row["tensor_degree"], row["attention_degree"],
        engine,
    )  # fmt: skip
    e, why = point_degree(setting, decode_degrees, b, engine)  # as its decode is priced
    decode_degrees = (*decode_degrees[:3], e)
    decode = worker(
        setting, engine, "decode", 1, decode_degrees, rank_batch(engine, b, decode_degrees[2]),
        step_budget(engine, setting.gpu), prompt_tokens + output_tokens / 2.0, longest, b,
    )  # fmt: skip
    require_fit([decode.memory])  # a decode worker that does not fit has no pool balance
    dis = dg.compare(
        setting, prompt_tokens, output_tokens, gpus, batch, prefill_gpus, discrete=True
    ).iloc[1]
    ratio = _prefill_ratio(setting, dis, gpus, b, n_p)
    prefill_count = max(1, int(math.ceil(ratio - 1e-9)))
    prefill_batch = max(1, int(math.ceil(16384 / prompt_tokens)))  # dg.compare's prompts per pass
    workers = (
        worker(
            setting,
            engine,
            "prefill",
            prefill_count,
            (1, n_p, 1, launched_degree(setting, n_p, engine)),
            prefill_batch,
            step_budget(engine, setting.gpu),
            prompt_tokens,
            longest,
        ),
        decode,
    )
    load = _closed_loop_load(prompt_tokens, output_tokens, b, requests)
    expected, ends = _disaggregated_figures(
        dis, b, _deployed_price_factor(dis, gpus, n_p, prefill_count)
    )
    notes = (
        f"Prefill workers: {prefill_count} per decode worker, the ratio of the pools' busy times "
        f"({ratio:.3g}; docs/model.md §B10).",
        *filter(None, [why]),
        *_rank_batch_note(engine, decode, b),
    )
    # the speculation the decode steps were priced with (the decode row's draft length), which
    # every worker launches: the prefill servers hand the draft its first hidden states
    spec = _speculation(setting, int(row["draft_tokens"]))
    plan = LaunchPlan("disagg", setting, engine, ckpt, workers, longest, load, expected, spec,
                      notes, ends, longest_prompt=int(prompt_tokens))  # fmt: skip
    return finish(plan)


def _prefill_ratio(setting: Setting, dis, gpus: float, b: int, n_p: int) -> float:
    """Prefill workers per decode worker: the ratio of the pools' busy times in the
    disaggregated row ``dis`` (§B10); refused where a prefill worker of ``n_p`` GPUs cannot run
    the model or split it ``n_p`` ways."""
    busy_prefill = float(dis["prefill_pool_busy_fraction"])
    busy_decode = float(dis["decode_pool_busy_fraction"])
    ratio = busy_prefill / busy_decode if busy_decode > 0 else math.inf
    if not math.isfinite(ratio):
        from ..serving.decode import uneven

        split = uneven(setting, n_p, continuous=False, pipeline=False)  # prefill: TP only
        raise InfeasibleError(
            f"prefill workers: {split}"
            if split
            else f"{setting.model.name} does not run {b} requests on {gpus:g} x "
            f"{setting.gpu.name} with a separate prefill pool of {n_p} GPUs a worker "
            "(docs/model.md §B10)"
        )
    split = _tensor_split(setting, n_p)
    if split:  # the prefill worker is written as TP n_p (its attention heads split n_p ways)
        raise InfeasibleError(
            f"prefill workers of {n_p} GPUs: {split}; give --prefill-gpus that divides them"
        )
    return ratio


def _deployed_price_factor(dis, gpus: float, n_p: int, prefill_count: int) -> float:
    """The all-in price of ``prefill_count`` prefill workers of ``n_p`` GPUs beside the decode
    worker of ``gpus`` over that of the pools' row ``dis``, which prices one: every GPU of the
    deployment paid for all the time, at the rate the slower pool then sets (§B10)."""
    from ..serving.disaggregation import pool_balance

    row_gpu_s = float(dis["gpu_s_per_request_idle_charged"])
    slower = row_gpu_s / (float(gpus) + n_p)  # the row's seconds per request
    prefill_s = float(dis["prefill_pool_busy_fraction"]) * slower
    decode_s = float(dis["decode_pool_busy_fraction"]) * slower
    deployed = pool_balance(prefill_count * n_p, prefill_s / prefill_count, gpus, decode_s)
    return deployed.gpu_s_per_request / row_gpu_s


def _disaggregated_figures(dis, b: int, price_factor: float = 1.0) -> tuple[dict, dict]:
    """The figures a disaggregated plan expects from its pools' row ``dis`` at ``b`` running
    requests a decode worker, and their intervals (§F12), by name; the price is the row's times
    ``price_factor``, the deployment's over the row's pools (its ends with it)."""
    expected = {
        "ttft_s": float(dis["ttft_s"]),
        "tpot_s": float(dis["decode_latency_s"]),
        "output_tokens_per_s_per_request": float(dis["tokens_per_s"]),
        "output_tokens_per_s": b / float(dis["decode_latency_s"]),
        "usd_per_m_output_tokens": float(dis["usd_per_m_output_tokens_all_in"]) * price_factor,
    }
    named = {  # the disaggregated row's figure behind each expected figure (§F12)
        "ttft_s": "ttft_s",
        "tpot_s": "decode_latency_s",
        "output_tokens_per_s_per_request": "tokens_per_s",
        "usd_per_m_output_tokens": "usd_per_m_output_tokens_all_in",
    }
    ends = _renamed_ends(dis, named)
    for column in interval_columns("usd_per_m_output_tokens"):
        if column in ends:  # the throughput's band, so the price's ends scale with it
            ends[column] *= price_factor
    if ends:
        speeds = _speeds(ends, "tpot_s", b)
        ends.update(
            zip(
                interval_columns("output_tokens_per_s"),
                [speeds[c] for c in interval_columns("output_tokens_per_s")],
            )
        )
    return expected, ends
