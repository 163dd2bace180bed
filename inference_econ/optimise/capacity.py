"""Capacity planning (docs/model.md §E6): the cheapest deployment that serves a load within
latency targets (the frontier of deployments that do is ``load_frontier``'s).

A deployment is ``K`` instances of ``N`` GPUs each (optionally with a separate prefill pool).
For every GPU and instance size the load search (``load_search``) finds the most requests/s one
instance holds within the targets; ``K = ⌈rate / that⌉`` instances serve the load. The cheapest
is simulated at the full load to report its latencies, prices and headroom; if it then misses
a target, one more instance is added until it does not (at most ``MAX_BUMPS``, within
``max_gpus``), else the next cheapest option is tried; none holding the targets is an error.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from ..errors import InfeasibleError, SpecError
from ..load.arrivals import Traffic
from ..load.backlog import OVERLOAD
from ..load.deployment import Deployment, counted_ends
from ..load.engine import DEFAULT_ENGINE, EngineConfig, balancing_words
from ..load.failures import Failures
from ..load.targets import Targets
from ..serving.setting import Setting
from .candidates import MAX_BUMPS, _options, _per_instance_rate, _table, knee_rows
from .capacity_plan import CapacityPlan
from .load_search import (
    run_at,
)
from .redundancy import grow, n_plus_one
from .screening import screened_rows, screens


def _verify(setting, deployment: Deployment, traffic, targets, config, max_gpus=None):
    """The deployment at the full load, with instances added while a target is missed (never
    past ``max_gpus``), and why the first run missed (None: it did not)."""
    missed = None
    for bump in range(MAX_BUMPS + 1):
        result = run_at("deployment", setting, deployment, traffic, config).with_targets(targets)
        if result.meets_targets:
            return deployment, result, missed
        if missed is None:
            missed = _why_missed(result, targets)
        more = _one_more(deployment, result, targets)
        if bump == MAX_BUMPS or (max_gpus is not None and more.gpus > max_gpus):
            break  # the deployment returned is the one this run simulated
        deployment = more
    return deployment, result, missed


def _one_more(d: Deployment, result, targets) -> Deployment:
    """``d`` with one more instance: of the prefill pool where a disaggregated run missed its
    TTFT target, else of the decode pool (or the deployment); its pools' GPUs kept."""
    prefill = d.disaggregated and result.ttft_s.p99 > (targets.ttft_p99_s or math.inf)
    return grow(d, "prefill" if prefill else "decode", 1)


def _why_missed(result, targets) -> str:
    """What a run at the full load missed: a p99 over its target, rejected requests, or a
    backlog that grew over the run (§E4)."""
    over = [
        f"p99 {name.upper()} {result.p99[name] * 1e3:.4g} ms over {limit * 1e3:g}"
        for name, limit in (
            ("ttft", targets.ttft_p99_s),
            ("tpot", targets.tpot_p99_s),
            ("e2e", targets.e2e_p99_s),
        )
        if limit is not None and result.p99[name] > limit
    ]
    if result.rejected:
        over.append(f"{result.rejected} requests rejected")
    if not result.stable:
        over.append(result.overloaded_note or OVERLOAD)
    return ", ".join(over) or "a target"


def _planned_rate(traffic: Traffic) -> float:
    """The request rate a plan sizes instances for: a trace whose requests all arrive at once
    has none (its rate is infinite), which a plan of instances by rate cannot hold."""
    rate = traffic.offered_rate_per_s
    if traffic.process == "trace" and not math.isfinite(rate):
        raise SpecError(
            traffic.trace.path if traffic.trace is not None else "trace",
            "arrival_time_s",
            "every request arrives at the same time: a burst has no request rate to size "
            "instances for",
            "spread the arrivals over time, or replay the burst with simulate",
        )
    return rate


def _first_held(options, traffic, targets, config, max_gpus):
    """(setting, deployment as searched, as verified, its run, why the search's missed, the
    cheaper options that missed) of the cheapest option that holds the targets in a run at
    the full load (``_verify``); an ``InfeasibleError`` naming what each missed if none does."""
    failed: list[str] = []  # options that missed a target at the full load, whatever was added
    for _, _, setting, searched in options:
        deployment, result, missed = _verify(setting, searched, traffic, targets, config, max_gpus)
        if result.meets_targets:
            return setting, searched, deployment, result, missed, failed
        failed.append(f"{deployment.describe()} {setting.gpu.name}: {_why_missed(result, targets)}")
    raise InfeasibleError(
        f"no deployment meets {targets.describe()} at {traffic.offered_rate_per_s:g} req/s "
        f"in a run at the full load, with up to {MAX_BUMPS} more instances each "
        + (f"within --max-gpus {max_gpus} " if max_gpus is not None else "")
        + f"({'; '.join(failed)})"
    )


def cheapest_deployment(
    settings: list[Setting],
    traffic: Traffic,
    targets: Targets,
    config: EngineConfig = DEFAULT_ENGINE,
    disaggregated: bool = False,
    sizes: list[int] | None = None,
    max_gpus: int | None = None,
    progress: Callable[[str], None] | None = None,
    pools: tuple[list, list] | None = None,
    failures: Failures | None = None,
    screen: bool = True,
) -> CapacityPlan:
    """The cheapest deployment of any of ``settings`` (one per GPU, with and without
    speculation when it is given) serving ``traffic`` within ``targets`` (module docstring);
    with ``pools`` (prefill settings, decode settings) the pools of a disaggregated deployment
    may run on different GPUs; with ``failures``, the plan that holds the targets with one
    instance down (``n_plus_one``). Raises ``InfeasibleError`` with the reasons if none does.
    ``screen``: search in two passes where ``screens`` allows (``screened_rows``: the same
    plan in a fraction of the work); False searches every candidate in full."""
    _planned_rate(traffic)
    if screen and screens(traffic, disaggregated, pools, failures):
        rows = screened_rows(settings, traffic, targets, config, sizes, max_gpus, progress)
    else:
        rows = knee_rows(
            settings, traffic, targets, config, sizes, max_gpus, disaggregated, progress, pools
        )
    options = _options(rows, mixed=pools is not None)
    if not options:
        reasons = "; ".join(
            sorted(
                {
                    f"{r['hardware']} x{r['gpus_per_instance']}: {r['note']}"
                    for r in rows
                    if r["note"]
                }
            )
        )
        raise InfeasibleError(
            f"no deployment meets {targets.describe()} at {traffic.offered_rate_per_s:g} req/s ({reasons or 'no instance size fits'})"
        )
    held = _first_held(options, traffic, targets, config, max_gpus)
    setting, searched, deployment, result, missed, failed = held
    ends = counted_ends(setting, deployment, traffic, targets, config, result)
    if ends is not None:  # the plan's simulated counts at the step time's ends (§F12)
        result = dataclasses.replace(result, count_ends=ends)
    per = _per_instance_rate(rows, setting, deployment)
    notes = list(result.notes)
    if failed:  # cheaper candidates missed a target at the full load
        notes.append("missed a target at the full load: " + "; ".join(failed))
    if missed is not None:  # the candidates' table counts the instances the run needed
        notes.append(
            f"{searched.describe()}, as the search sized it, missed the targets in the run at "
            f"the full load ({missed}); {deployment.describe()} held them"
            + (f" (a run of {traffic.requests} requests an instance is short: more --requests "
               "steady its p99s and backlog)" if traffic.requests < 1000 else "")
        )  # fmt: skip
    table = _table(rows, setting, deployment)
    plan = CapacityPlan(
        rate_per_s=traffic.offered_rate_per_s,
        targets=targets,
        deployment=deployment,
        setting=setting,
        result=result,
        max_rate_per_s=per,
        candidates=table,
        notes=tuple(notes),
    )
    if failures is not None:
        red = n_plus_one(plan, traffic, config, failures, progress, rows)
        plan = dataclasses.replace(plan, redundancy=red)
        if max_gpus is not None and red.deployment.gpus > max_gpus:  # said, not hidden
            over = (
                f"N+1 needs {red.deployment.gpus} GPUs ({red.deployment.describe()}), over "
                f"--max-gpus {max_gpus}: the plan for failures is priced beyond it"
            )
            plan = dataclasses.replace(plan, notes=(*plan.notes, over))
    return plan


#: Step budgets a capacity search also plans with (``tune_engine``), tokens a step (an
#: attention rank's under attention data parallelism where the engine's limits hold per rank,
#: ``LIMITS_PER_ATTENTION_RANK``; else the instance's, SGLang's ``--chunked-prefill-size``): the
#: powers of two across the range trtllm-bench's own choice spans (2,048 to 32,768,
#: ``measured.bench_limits``) and vLLM V1's defaults take (2,048 to 8,192), up to 16,384: each
#: is one more whole search (a larger budget is given with ``--step-tokens``).
STEP_TOKEN_SEARCH = (2048, 4096, 8192, 16384)
#: TensorRT-LLM's attention-DP balancing a tuned search also tries on a MoE model (wait and
#: timeout steps): the ``attention_dp_config`` TensorRT-LLM's performance overview runs
#: DeepSeek-R1 with (``enable_balance: true, batching_wait_iters: 0, timeout_iters: 60``).
ADP_BALANCE_TRIED = (0, 60)
#: How a searched plan's note on its step budgets begins (an export repeats the note).
BUDGETS_SEARCHED = "Step budgets searched (tokens a step"
#: (label, config, tokens a step: None where the engine's own differs by GPU) of a budget tried.
Budget = tuple[str, EngineConfig, int | None]


def budget_configs(
    config: EngineConfig, own: dict[str, int], balance: bool = False
) -> list[Budget]:
    """(label, config, tokens) of each step budget a searched plan tries: ``config`` as given
    (its engine's own budget, ``own[gpu]`` tokens on each GPU searched), then each budget of
    ``STEP_TOKEN_SEARCH``, set as a user's ``--step-tokens`` is; the one the engine takes for
    itself on every GPU is left out (it is the first), but not one it takes on some GPUs only
    (vLLM V1's 2,048 on an A100 and 8,192 on an H100: the H100 is searched at 2,048 too). With
    ``balance``, each of them again with ``ADP_BALANCE_TRIED``, after all of them (a tie keeps
    the engine's default, no balancing)."""
    budgets = set(own.values())
    mine = next(iter(budgets)) if len(budgets) == 1 else None
    if mine is not None:
        label = f"{mine:,} (the engine's own)"
    else:
        label = "the engine's own (" + ", ".join(f"{b:,} on {g}" for g, b in own.items()) + ")"
    kept = tuple(n for n in config.engine_own if n != "step_token_budget")
    out: list[Budget] = [(label, config, mine)]
    for budget in STEP_TOKEN_SEARCH:
        if budget != mine:
            tried = dataclasses.replace(config, step_token_budget=budget, engine_own=kept)
            out.append((f"{budget:,}", tried, budget))
    if balance:
        words = f" with {balancing_words(ADP_BALANCE_TRIED)}"
        out += [
            (label + words, dataclasses.replace(c, adp_balancing=ADP_BALANCE_TRIED), tokens)
            for label, c, tokens in out
        ]
    return out


def cheapest_of_budgets(
    plan_with: Callable[[EngineConfig], CapacityPlan],
    configs: list[Budget],
    progress: Callable[[str], None] | None = None,
) -> tuple[CapacityPlan, EngineConfig]:
    """(plan, config) of the cheapest of ``plan_with(config)`` over ``configs`` (the N+1 plan's
    price where it is sized for failures; on a tie, the one holding the most load, then the
    first, the engine's own), with a note of every budget's
    plan or why it has none, and the chosen plan's budget over its instance where its attention
    ranks hold one each (the run's ``step_token_budget``); ``InfeasibleError`` naming each
    budget's reason where none has one."""
    plans: list[tuple[str, EngineConfig, int | None, CapacityPlan | None, str]] = []
    for label, config, tokens in configs:
        if progress:
            progress(f"a step budget of {label}")
        try:
            plans.append((label, config, tokens, plan_with(config), ""))
        except InfeasibleError as exc:
            plans.append((label, config, tokens, None, str(exc)))
    held = [(p, c) for _, c, _, p, _ in plans if p is not None]
    if not held:
        raise InfeasibleError(
            "at every step budget searched: " + "; ".join(f"{p[0]}: {p[4]}" for p in plans)
        )
    best, config = min(held, key=lambda pc: (_priced(pc[0]), -pc[0].max_rate_per_s))
    engine = best.result.engine
    per_rank = engine is not None and bool(engine.per_attention_rank)
    words = []
    for label, _, tokens, plan, _why in plans:
        if plan is None:
            words.append(f"{label}: none holds the targets")
            continue
        chosen = " (chosen)" if plan is best else ""
        if chosen and engine is not None and tokens not in (None, engine.step_token_budget):
            chosen = f" (chosen; {engine.step_token_budget:,} over the instance's attention ranks)"
        words.append(
            f"{label}: {plan.deployment.describe()} {plan.result.hardware}, "
            f"${plan.result.usd_per_hour:,.2f} an hour"
            + (f" (N+1 ${_priced(plan):,.2f})" if plan.redundancy is not None else "")
            + chosen
        )
    whose = ", an attention rank's under attention DP" if per_rank else ", an instance's"
    note = f"{BUDGETS_SEARCHED}{whose}): " + "; ".join(words)
    return dataclasses.replace(best, notes=(*best.notes, note)), config


def _priced(plan: CapacityPlan) -> float:
    """Dollars an hour a plan is chosen by: its N+1 plan's where it is sized for failures."""
    red = plan.redundancy
    return red.result.usd_per_hour if red is not None else plan.result.usd_per_hour
