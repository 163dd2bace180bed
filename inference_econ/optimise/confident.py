"""The confident capacity plan (docs/model.md §F12): the cheapest plan whose targets hold at
the pessimistic end of an interval of the load one instance holds (``with_odds``), found
exactly over a screened search by searching only the candidates that could make it
(``confident_plan``)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import pandas as pd

from ..errors import InfeasibleError, SpecError
from ..load.arrivals import Traffic
from ..load.deployment import Deployment
from ..load.engine import DEFAULT_ENGINE, EngineConfig
from ..serving.intervals import (
    LEVELS,
)
from ..serving.setting import Setting
from . import screening
from .candidates import (
    _candidate,
    _held_columns,
    _instances_for,
    _ranked,
    _spec_label,
    past_max_gpus_only,
)
from .capacity_plan import CapacityPlan, Confident
from .load_search import (
    SCREEN_MARGIN,
    Knee,
    knee_of,
)


def _row_setting(settings, row):
    """The setting a candidate row was searched with (its GPU and speculation), or None."""
    spec = getattr(row, "speculation", "none")
    return next(
        (s for s in settings if s.gpu.name == row.hardware and _spec_label(s) == spec), None
    )


def with_odds(
    plan: CapacityPlan,
    confidence: float = 0.9,
    bound: CapacityPlan | str | None = None,
    settings: list[Setting] | None = None,
) -> CapacityPlan:
    """The expected ``plan`` with its confident plan (the targets held at the pessimistic
    end of the ``confidence`` interval of the load an instance holds; ``Confident``) and the
    ideal ``bound`` beside it. ``confidence`` is 0.8 or 0.9 (the levels the intervals have).
    With the searched ``settings``, every co-located candidate searched in full is sized at
    its own interval's low end and the cheapest is taken (another size or GPU may need fewer
    extra instances than the expected plan's); without, the expected plan's is scaled. A plan
    within ``--max-gpus`` ranks before any past it; one past it is taken only where none
    within it holds, and its note says so."""
    level = int(round(100 * confidence))
    if level not in LEVELS:
        raise SpecError(
            "argument",
            "confidence",
            f"is {confidence:g}",
            f"choose {' or '.join(f'{v / 100:g}' for v in LEVELS)} (the interval levels)",
        )
    d, r = plan.deployment, plan.result
    ends = plan.intervals()
    factor = min(1.0, ends[f"max_rate_per_s_low{level}"] / plan.max_rate_per_s)
    note = ""
    if d.disaggregated:
        # each pool holds at least the plan's load, so its instances times the low end's
        # shortfall (over 1: more copies needed) hold the offered load there
        shortfall = plan.rate_per_s / (plan.max_rate_per_s * factor)
        pools = (d.instances, d.prefill_instances)
        scaled = [max(k, math.ceil(k * shortfall - 1e-9)) for k in pools]
        spread = min(s / k for s, k in zip(scaled, pools))
        deployment = Deployment(
            d.gpus_per_instance,
            scaled[0],
            d.prefill_gpus_per_instance,
            scaled[1],
            d.prefill_setting,
        )
        grow = deployment.gpus / d.gpus
    else:
        per = plan.max_rate_per_s / d.instances * factor
        count = max(d.instances, _instances_for(plan.rate_per_s, per))
        deployment = Deployment(d.gpus_per_instance, count)
        grow = spread = count / d.instances
    if factor >= 1.0:
        note = "the interval's low end is above the expected figure: the expected plan stands"
    usd = r.usd_per_hour * grow
    held = plan.max_rate_per_s * factor * spread
    cap = _max_gpus(plan, settings)
    # (past --max-gpus, $/hour, -load held, GPUs): any plan within the limit ranks first
    best = (_over(deployment, cap), usd, -held, deployment.gpus)
    confident = Confident(
        level, deployment, factor, held, usd, r.usd_per_m_output_tokens_all_in * grow, note
    )
    if settings:  # a disaggregated plan's confident one may be co-located, and vice versa
        for option in _confident_options(plan, level, settings):
            c_usd, c_held, c_deployment, c_factor, hardware = option
            key = (_over(c_deployment, cap), c_usd, -c_held, c_deployment.gpus)
            # within the limit never cheaper than the expected plan; past it, what holds
            if (key[0] or c_usd >= r.usd_per_hour - 1e-9) and _placed_before(key, best):
                best = key
                mtok = r.usd_per_m_output_tokens_all_in * c_usd / r.usd_per_hour
                same = (
                    not d.disaggregated
                    and hardware == r.hardware
                    and c_deployment.gpus_per_instance == d.gpus_per_instance
                )
                confident = Confident(
                    level, c_deployment, c_factor, c_held, c_usd, mtok, "",
                    None if same else hardware,
                )  # fmt: skip
    if best[0]:
        confident = dataclasses.replace(confident, note=_past_limit(confident, cap, settings))
    support, extrapolates = _support(plan, confident, settings)
    confident = dataclasses.replace(confident, support=support, extrapolates=extrapolates)
    return dataclasses.replace(plan, confident=confident, bound=bound)


def _placed_before(key: tuple, best: tuple) -> bool:
    """Whether a confident plan (past ``--max-gpus``, $/hour, -load held, GPUs) ranks before
    ``best``: within the limit before past it, then as ``_ranks_before``."""
    if key[0] != best[0]:
        return not key[0]
    return _ranks_before(key[1:], best[1:])


def _past_limit(confident: Confident, cap, settings) -> str:
    """The note of a confident plan past ``--max-gpus``: the cheapest that holds, none
    within the limit (of the candidates searched in full, where there are others)."""
    of = "of the candidates searched in full" if settings else "at the plan's own size"
    return (
        f"{confident.deployment.gpus} GPUs, over --max-gpus {cap}: no deployment within it "
        f"({of}) holds the targets at the {confident.level} % interval's low end"
    )


def _max_gpus(plan: CapacityPlan, settings) -> int | None:
    """The most GPUs a deployment may have in all (``--max-gpus``; None: no limit)."""
    return (settings[0] if settings else plan.setting).max_gpus


def _over(deployment: Deployment, cap: int | None) -> bool:
    """Whether ``deployment`` has more GPUs in all than ``--max-gpus`` allows."""
    return cap is not None and deployment.gpus > cap


def _support(plan: CapacityPlan, confident: Confident, settings) -> tuple[str, str]:
    """The support of the interval the confident plan was sized on (the class of its GPU and
    instance layout, served under load: the expected plan's run, or the candidate row it was
    sized from) and, where it is not in support, the line saying the plan extrapolates."""
    from ..serving.intervals import described_layout, load_where
    from ..serving.support import plan_line, support_of

    d = confident.deployment
    setting, (layouts, _) = plan.setting, load_where(plan.result)
    layout = layouts[0]
    if confident.hardware is not None or d.gpus_per_instance != plan.deployment.gpus_per_instance:
        hardware = confident.hardware or plan.result.hardware
        setting = next((s for s in settings or () if s.gpu.name == hardware), setting)
        rows = plan.candidates
        if "layout" in rows:
            mine = rows[
                (rows.hardware == hardware) & (rows.gpus_per_instance == d.gpus_per_instance)
            ]
            text = mine.layout.iloc[0] if len(mine) else ""
            layout = described_layout(text, setting.model.is_moe, d.disaggregated)
    s = support_of(setting, ("throughput", "TPOT", "TTFT"), layout, "server")
    line = "" if s.status == "in support" else plan_line(s, "The confident plan")
    return s.label(), line


def _same_price(a: float, b: float) -> bool:
    """Two prices $/hour that are the same sum of GPU-hours (the last bits rounded off)."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _ranks_before(key: tuple, best: tuple) -> bool:
    """Whether a confident plan ($/hour, -load held, GPUs) ranks before ``best``: cheaper,
    else at the same price (``_same_price``) holding more load, else with fewer GPUs."""
    if not _same_price(key[0], best[0]):
        return key[0] < best[0]
    return key[1:] < best[1:]


def _confident_options(plan: CapacityPlan, level: int, settings: list[Setting]):
    """(usd per hour, load held at the low end, deployment, factor, GPU) of each co-located
    candidate searched in full other than the plan's own, sized at its interval's low end (its
    row's, read at its run at that load: the calibration class of its GPU and layout)."""
    r, d = plan.result, plan.deployment
    table = plan.candidates
    if "pool" not in table or table.empty:
        return
    full = table["probe_requests"].max() if "probe_requests" in table else None
    for row in table.itertuples():
        if row.pool != "deployment":
            continue
        if row.excluded and not past_max_gpus_only(row):  # past the limit: ranked after it
            continue
        if not row.instances:
            continue
        if full is not None and row.probe_requests != full:
            continue  # a short search's figure is too rough to size a plan on
        own = row.hardware == r.hardware and row.gpus_per_instance == d.gpus_per_instance
        if own and not d.disaggregated:
            continue  # the plan's own, scaled from its verified figures above
        per = float(row.max_rate_per_instance)
        if not (per > 0 and math.isfinite(per)):
            continue
        setting = _row_setting(settings, row)
        if setting is None:
            continue
        factor = _row_factor(row, level, setting, per)
        if factor is None:
            continue  # no interval: an ideal bound's row
        count = max(int(row.instances), _instances_for(plan.rate_per_s, per * factor))
        price = float(row.usd_per_hour) / float(row.gpus)
        usd = count * row.gpus_per_instance * price
        deployment = Deployment(row.gpus_per_instance, count)
        yield usd, per * factor * count, deployment, factor, row.hardware


def confident_plan(
    plan: CapacityPlan,
    confidence: float,
    bound: CapacityPlan | str | None,
    settings: list[Setting],
    traffic: Traffic,
    config: EngineConfig = DEFAULT_ENGINE,
    progress: Callable[[str], None] | None = None,
) -> CapacityPlan:
    """``with_odds`` over every co-located candidate searched in full, where a candidate not
    searched in full that could make a confident plan as cheap (``_confident_hopes``) is first
    searched: short if it was not searched at all, in full once its short answer still hopes
    (its row updated); until the cheapest confident plan rests on full searches and no other
    candidate can match it (the confident plan of every candidate searched in full). Before
    either, where a miss is likely (``_confident_test``), one full simulation tests whether
    it holds the least load that could make such a plan (``_confident_need``): one that
    misses a target there rules the candidate out (monotone verdicts: the full search's
    answer lies below it), its row saying so; one that holds is kept for its full search
    (``find_knee_from``'s ``held``), on whichever turn that comes. Ties rank by the load held at the low end
    (``_ranks_before``): a candidate that at best ties holding less is not searched
    (``_could_rank_first``), and a tie's test asks for as much load (``_confident_need``);
    the likeliest plan (on short answers themselves) is searched first. Exact, as those say:
    the plan found so far only improves, and every candidate left out ranks below it, so the
    plan is the one every candidate searched in full gives, in any order (within
    ``--max-gpus``; a plan past it, where none within holds, is the cheapest of the candidates
    the search ran in full, which candidates past the limit do not join)."""
    level = int(round(100 * confidence))
    max_gpus = settings[0].max_gpus if settings else None
    ruled_out: set[tuple] = set()
    # the most load a candidate's tests held at (``_test``), kept for its full search (a
    # candidate tested before its short search is searched in full on a later turn) and to
    # spare a later test at no more load
    held_at: dict[tuple, float] = {}
    for _ in range(3 * len(plan.candidates) + 1):
        odds = with_odds(plan, confidence, bound, settings)
        if level not in LEVELS or odds.confident is None:
            return odds
        # a candidate not searched in full whose confident plan could be no dearer: a tie is
        # decided by the load held, which only its full search gives (as the full search's
        # plan decides it), so ties are searched too
        # a confident plan over --max-gpus ranks after any within it: every candidate hopes
        over = _over(odds.confident.deployment, max_gpus)
        bar = math.inf if over else odds.confident.usd_per_hour
        hopes = [
            h
            for h in _confident_hopes(plan, level, settings)
            if (over or _could_rank_first(h, odds.confident)) and (h[1], h[2]) not in ruled_out
        ]
        if not hopes:
            return odds
        # the likeliest plan first (on its short answer itself): a good plan found early rules
        # the others out with one run each (``_confident_need``); any order gives the same plan
        _, setting, size, short, *_ = min(hopes, key=lambda h: (*h[5], h[2]))
        d = Deployment(size, 1)
        need = _confident_need(
            plan, level, setting, size, bar, max_gpus, odds.confident.max_rate_per_s
        )
        holds = held_at.get((setting, size))  # a rate it held at, on an earlier turn
        tested_before = holds is not None and need is not None and holds >= need
        if need is not None and _confident_test(setting, short, need) and not tested_before:
            try:
                held, tested, most = screening._test(
                    setting, d, traffic, plan.targets, config, need
                )
            except InfeasibleError:  # the weights do not fit: the short search says so
                held, tested, most = True, None, math.inf
            if not held:
                ruled_out.add((setting, size))
                if progress:
                    progress(
                        f"{setting.gpu.name} x{size}: a full simulation at {tested:.4g} req/s "
                        "misses a target: no confident plan as cheap"
                    )
                plan = _ruled_out(plan, setting, size, short, tested, most, level, max_gpus)
                continue
            if tested is not None:
                holds = held_at[setting, size] = max(tested, holds or 0.0)
        plan = _searched(plan, setting, size, short, holds, traffic, config, progress, max_gpus)
    return with_odds(plan, confidence, bound, settings)


def _searched(
    plan: CapacityPlan,
    setting: Setting,
    size: int,
    short: float | None,
    holds: float | None,
    traffic: Traffic,
    config: EngineConfig,
    progress: Callable[[str], None] | None,
    max_gpus: int | None,
) -> CapacityPlan:
    """``plan`` with the row of a candidate ``confident_plan`` searches: short where it was
    never searched, else in full (from its short answer and ``holds``, the most its tests held
    at), its ``probe_requests`` saying which."""
    d = Deployment(size, 1)
    rate = plan.rate_per_s
    full = int(plan.candidates["probe_requests"].max())
    if short is None:  # never searched: a short search first
        if progress:
            progress(f"{setting.gpu.name} x{size}: searched short for the confident plan")
        knee = screening._short_search(setting, d, traffic, plan.targets, config)
        row, requests = _candidate(setting, "deployment", size, knee, rate, max_gpus), None
    else:
        if progress:
            progress(f"{setting.gpu.name} x{size}: searched in full for the confident plan")
        if short > 0:  # from its short answer, and the most its tests held at
            knee = screening._full_search(
                setting, d, traffic, plan.targets, config, short, short, holds
            )
        else:
            knee = knee_of("deployment", setting, d, traffic, plan.targets, config)
        row, requests = _candidate(setting, "deployment", size, knee, rate, max_gpus), full
    table = plan.candidates.copy()
    at = _row_at(table, setting, size)
    _put_row(table, at, row)
    table.loc[at, "probe_requests"] = screening.SCREEN_REQUESTS if requests is None else requests
    return dataclasses.replace(plan, candidates=_ranked(table))


def _put_row(table: pd.DataFrame, at, row: dict) -> None:
    """Write a candidate's new row (``_candidate``) into ``table`` at its rows ``at``: its
    layout, load held, instances, GPUs, price, exclusion, note and held load's intervals."""
    for name in ("layout", "max_rate_per_instance", "instances", "gpus"):
        table.loc[at, name] = row[name]
    for name in ("usd_per_hour", "excluded", "note"):
        table.loc[at, name] = row[name]
    _held_columns(table, [row], at)


def _could_rank_first(hope: tuple, confident: Confident) -> bool:
    """Whether a candidate's hope (``_confident_hopes``) could make a confident plan that ranks
    no lower than ``confident``: no dearer, and at the same price (a tie, ranked by the load
    held) holding no less at the low end. Exact: at its most (its hope), a candidate has its
    fewest instances, so its lowest price; at a lower load it costs as much only with as
    many instances, each holding less (``_confident_need``)."""
    usd, *_, held, _ = hope
    if _same_price(usd, confident.usd_per_hour):
        return held >= confident.max_rate_per_s * (1 - 1e-6)
    return usd < confident.usd_per_hour


def _confident_need(
    plan: CapacityPlan,
    level: int,
    setting,
    size: int,
    bar: float,
    max_gpus,
    best_held: float = 0.0,
):
    """The least load one instance of ``size`` GPUs of ``setting`` must hold for its plan at
    ``level`` % confidence (``_confident_options``: as many instances as the interval's low
    end needs) to rank no lower than the confident plan (``bar`` $/hour, ``best_held``
    req/s at its low end; ``bar`` infinite where that plan is past ``max_gpus``, so any
    count within it ranks first): the most instances at that price, each holding its share at the
    low end; where that count costs the same as the plan (a tie, ranked by the load held,
    ``with_odds``), its instances must also hold ``best_held`` at the low end, unless one
    instance fewer (cheaper, so ranked first) holds the load; taken a millionth lower
    (rounding). None when no instance count is that cheap.

    Exact: the low end is the load held times a factor ``f`` that does not depend on it (a
    band of the instance's class at its most, ``_confident_factor``, ``figure_limits``), so ``K = ⌈rate / (f · per)⌉``
    instances (and their price) never rise, and at a given ``K`` the load held ``K · f · per``
    never falls, as ``per`` grows: below this load every count the candidate can take costs
    more than the plan, or as much holding less."""
    each = size * setting.gpu.price_usd_per_hour
    count = math.floor((bar + 1e-9) / each) if math.isfinite(bar) else None
    if max_gpus is not None:
        count = max_gpus // size if count is None else min(count, max_gpus // size)
    if count is None or count < 1:
        return None
    factor = _confident_factor(plan, level, setting, size, 1.0)
    need = plan.rate_per_s / (factor * count)
    if _same_price(count * each, bar):  # a tie at ``count``
        tie = max(plan.rate_per_s, best_held) / (factor * count)
        cheaper = plan.rate_per_s / (factor * (count - 1)) if count > 1 else math.inf
        need = min(tie, cheaper)
    return need * (1 - 1e-6)


def _row_factor(row, level: int, setting: Setting, per: float) -> float | None:
    """The low end of the ``level`` % interval of a candidate row's held load over it (at most
    1): its row's interval where it has one, else its layout's class served under load."""
    from ..serving.intervals import described_layout, figure_intervals

    low = getattr(row, f"max_rate_per_instance_low{level}", None)
    if low is None or not math.isfinite(float(low)):
        layout = described_layout(getattr(row, "layout", ""), setting.model.is_moe)
        ends = figure_intervals(
            {"max_rate_per_s": per}, ["max_rate_per_s"], setting, row.gpus_per_instance,
            "compute", where=([layout], "server"),
        )  # fmt: skip
        low = ends.get(f"max_rate_per_s_low{level}")
    return None if low is None else min(1.0, float(low) / per)


def _confident_factor(plan: CapacityPlan, level: int, setting, size: int, per: float) -> float:
    """The most the low end of the ``level`` % interval of the load ``per`` an instance of
    ``size`` GPUs holds may be, over ``per`` (at most 1): the largest over the layout classes
    it may run (its own is known once it is searched, and its row's interval then sizes it,
    ``_confident_options``), so that no candidate is passed over on a lower one."""
    from ..serving.intervals import figure_intervals, load_bound
    from ..serving.support import LAYOUTS

    r = plan.result
    out = r.output_tokens_per_s
    regime = load_bound(plan.setting, r.mean_batch, r.input_tokens_per_s / out if out > 0 else 0)
    best = 0.0
    moe = setting.model.is_moe  # a dense model's layouts are never DP+EP (layout_class)
    for layout in [x for x in LAYOUTS if x != "disaggregated" and (moe or x != "DP+EP")]:
        ends = figure_intervals(
            {"max_rate_per_s": per}, ["max_rate_per_s"], setting, size, regime,
            where=([layout], "server"),
        )  # fmt: skip
        if not ends:
            return 1.0
        best = max(best, ends[f"max_rate_per_s_low{level}"] / per)
    return min(1.0, best)


def _confident_test(setting: Setting, short: float | None, need: float) -> bool:
    """Whether ``confident_plan`` tests a candidate at ``need`` before searching it: one never
    searched (without speculation: a miss spares its short search and its full one), or one
    whose short answer is below ``need`` (as ``screened_rows``: a full simulation failing
    where the short search held is too little to go on; and below its short answer a test
    mostly holds, for nothing, where the short answer's own guess finds the full answer in
    about two runs)."""
    if short is None:
        return setting.spec is None
    return need > short


def _ruled_out(plan, setting, size, short, tested, most, level, max_gpus) -> CapacityPlan:
    """``plan`` with the row of a candidate ``confident_plan`` ruled out by a full
    simulation at ``tested`` req/s: never searched, its note says why; searched short, its
    answer is capped at ``most`` (``_at_most``) where that is lower."""
    table = plan.candidates.copy()
    at = _row_at(table, setting, size)
    why = (
        f"a full simulation at {tested:.4g} req/s misses a target: its plan at {level} % "
        "confidence costs more than the plan's, or as much holding less"
    )
    if short is None:
        table.loc[at, "note"] = f"not searched: {why}"
    elif most < short:
        knee = screening._at_most(most, tested, Knee(short, ()))
        row = _candidate(setting, "deployment", size, knee, plan.rate_per_s, max_gpus)
        _put_row(table, at, row)
    else:
        table.loc[at, "note"] = why
    return dataclasses.replace(plan, candidates=_ranked(table))


def _row_at(table: pd.DataFrame, setting: Setting, size: int):
    """The co-located candidate row of ``setting`` (its GPU and speculation) and ``size``."""
    at = (table["hardware"] == setting.gpu.name) & (table["gpus_per_instance"] == size)
    at &= table["pool"] == "deployment"
    if "speculation" in table:
        at &= table["speculation"] == _spec_label(setting)
    return at


def _confident_hopes(plan: CapacityPlan, level: int, settings: list[Setting]):
    """($/hour, setting, GPUs per instance, short answer or None, load held at the low end,
    ($/hour, -load held) on the short answer itself) of each co-located candidate not
    searched in full: the confident plan it would make at best. One searched short is sized on the
    most its full answer may be, its short answer ``SCREEN_MARGIN`` times higher (as ``_hope``
    takes it: short answers were 0.92-1.31 times the full ones on the user guide's
    walk-through), at that load's interval's low end; one never searched (one instance cost
    more than the expected plan) costs at least one instance, and is searched short first.
    Those past ``--max-gpus`` are left out."""
    table = plan.candidates
    if "probe_requests" not in table or "pool" not in table or table.empty:
        return
    full = table["probe_requests"].max()
    max_gpus = settings[0].max_gpus if settings else None
    for row in table.itertuples():
        if row.pool != "deployment" or row.probe_requests == full:
            continue
        size = int(row.gpus_per_instance)
        if max_gpus is not None and size > max_gpus:
            continue
        setting = _row_setting(settings, row)
        if setting is None:
            continue
        each = size * setting.gpu.price_usd_per_hour
        if row.probe_requests == 0:
            yield each, setting, size, None, math.inf, (each, -math.inf)
            continue
        short = float(row.max_rate_per_instance)
        if not (short > 0 and math.isfinite(short)):
            continue  # no load held in the short search: screened out, as ``_hope`` does
        per = short * SCREEN_MARGIN
        factor = _confident_factor(plan, level, setting, size, per)
        count = max(1, _instances_for(plan.rate_per_s, per * factor))
        if max_gpus is not None and count * size > max_gpus:
            continue
        likely = max(1, _instances_for(plan.rate_per_s, short * factor))
        yield (
            count * each, setting, size, short, count * per * factor,
            (likely * each, -likely * short * factor),
        )  # fmt: skip
