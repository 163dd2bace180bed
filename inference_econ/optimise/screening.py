"""The screened capacity search (docs/model.md §E6): short searches of every co-located
candidate, then full searches, tests and bisections only of those that can still be the plan
(``screened_rows``), the same plan as searching every candidate in full."""

from __future__ import annotations

import dataclasses
import math

from ..errors import InfeasibleError, plural
from ..load.arrivals import Traffic
from ..load.deployment import Deployment
from ..load.engine import EngineConfig
from ..load.targets import Targets
from ..serving.setting import Setting
from .candidates import _candidate, _held_text, _options, sizes_tried
from .load_search import (
    SCREEN_MARGIN,
    SCREEN_REFINE,
    SCREEN_REQUESTS,
    Knee,
    find_knee,
    find_knee_from,
    grid_at_least,
    grid_rate,
    hopeless_for,
    lattice_start,
    probe_for,
    run_until,
    search_holds,
    without_undecided,
)

#: Full simulations testing whether a screened candidate can beat the plan (``screened_rows``)
#: before it is searched in full.
SCREEN_TESTS = 2


def screens(traffic: Traffic, disaggregated: bool, pools, failures) -> bool:
    """Whether ``cheapest_deployment`` screens with short searches (``screened_rows``): for
    co-located plans without failures, of synthetic traffic of at least four short probes."""
    return (
        not disaggregated
        and pools is None
        and failures is None
        and traffic.process != "trace"
        and traffic.simulated_requests >= 4 * SCREEN_REQUESTS
    )


def screened_rows(settings, traffic, targets, config, sizes, max_gpus, progress) -> list[dict]:
    """The rows of ``knee_rows`` (co-located only), searched where they can matter (docs/model.md
    §E6). Until the option that ranks first was searched in full, with what each candidate can
    at best hold (not searched: any load, one instance; searched short, with probes of
    ``SCREEN_REQUESTS`` requests on the full search's lattice and ``SCREEN_REFINE`` bisections:
    its answer taken ``SCREEN_MARGIN`` times higher): search it short if it was not, else test
    it with a full simulation or search it in full (``find_knee_from``, from its short answer
    bisected to the full grid). A candidate not searched in full keeps its short answer (a
    ``probe_requests`` column says which), and one whose single instance costs more than the
    plan is not searched at all (excluded, with that reason)."""
    rate = traffic.offered_rate_per_s
    # [setting, size, short knee or None, full knee or None, the most it may hold, tests,
    #  the rate a full simulation missed a target at]
    found: list[list] = [
        [s, n, None, None, math.inf, 0, math.nan]
        for s in settings
        for n in sizes_tried(s, sizes, max_gpus)
    ]

    def said(s, n, knee, how=""):
        if progress:
            row = _candidate(s, "deployment", n, knee, rate, max_gpus)
            progress(
                f"{s.gpu.name}, deployment instances of {n} {plural(n, 'GPU')}: "
                f"{_held_text(knee, row)}{how}"
            )

    while True:
        hopes = [_hope_row(f, rate, max_gpus) for f in found]
        options = _options(hopes)
        if not options:
            break
        first = _found(found, options[0])
        if first[3] is not None:
            break
        s, n, short_knee = first[:3]
        d = Deployment(n, 1)
        if short_knee is None:
            first[2] = _short_search(s, d, traffic, targets, config)
            said(s, n, first[2], f" (short probes of {SCREEN_REQUESTS} requests)")
            continue
        sure = _options([h for h, f in zip(hopes, found) if f[3] is not None])
        if sure:
            x = _to_beat(sure[0], _found(found, sure[0]), n, s, rate, max_gpus)
        else:  # the instances it hopes for hold the load
            x = rate / options[0][3].instances
        # a test needs the short search's answer below x: a full simulation failing where the
        # short search held is too little to go on (verdicts are not always monotone in the
        # rate: under speculation one may fail below a rate that holds), so search in full;
        # without speculation, a one-instance plan's own check at the offered load is run
        # first (needed if it is the plan; its search then starts above it)
        holds = None
        below = x is not None and x > short_knee.max_rate_per_s
        check = x == rate and s.spec is None
        if (below or check) and first[5] < SCREEN_TESTS:
            first[5] += 1
            # at the offered load itself where that is the check of a plan of one instance
            held, tested, most = _test(s, d, traffic, targets, config, x, on_grid=x != rate)
            if not held:  # holds less than x: never better than the plan searched in full
                first[4], first[6] = most, tested
                continue
            holds = tested
        searched = _full_search(
            s, d, traffic, targets, config, short_knee.max_rate_per_s, x or rate, holds
        )
        first[3] = searched
        said(s, n, searched)
    plan = options[0][0] if options else math.nan
    return _screened_table(found, traffic, plan, max_gpus, progress)


def _screened_table(found: list, traffic: Traffic, plan: float, max_gpus, progress) -> list[dict]:
    """The rows of ``screened_rows``' candidates (``found``): one never searched says why (more
    GPUs than ``max_gpus``, or one instance dearer than the ``plan``'s $/hour); one searched
    short keeps its short answer, capped where a full simulation missed below it."""
    rate = traffic.offered_rate_per_s
    rows = []
    for s, n, short_knee, full, most, _, tested in found:
        if short_knee is None:
            row = _candidate(s, "deployment", n, Knee(0.0, (), ""), rate, max_gpus)
            row["note"] = (
                f"not searched: needs {n} GPUs > --max-gpus {max_gpus}"
                if max_gpus is not None and n > max_gpus
                else f"not searched: one instance costs ${n * s.gpu.price_usd_per_hour:,.2f} an "
                f"hour, more than the plan's ${plan:,.2f}"
            )
            row["probe_requests"] = 0
            rows.append(row)
            if progress:
                progress(
                    f"{s.gpu.name}, deployment instances of {n} {plural(n, 'GPU')}: {row['note']}"
                )
            continue
        knee = full or short_knee
        if full is None and most < short_knee.max_rate_per_s:
            # a full simulation failed below the short answer: the full answer is lower
            knee = _at_most(most, tested, short_knee)
        row = _candidate(s, "deployment", n, knee, rate, max_gpus)
        row["probe_requests"] = traffic.simulated_requests if full else SCREEN_REQUESTS
        rows.append(row)
    return rows


def _full_search(
    setting: Setting,
    deployment: Deployment,
    traffic: Traffic,
    targets: Targets,
    config: EngineConfig,
    short_answer: float,
    otherwise: float,
    holds: float | None = None,
) -> Knee:
    """The full search of a candidate that a short one screened (answer ``short_answer``):
    the short search bisected to the full one's grid guesses the answer (``otherwise`` when
    nothing held), and ``find_knee_from`` finds it from there; failing runs stop early.
    ``holds``: a rate a full simulation held at (``_test``; ``find_knee_from``'s ``held``)."""
    short = dataclasses.replace(traffic, requests=SCREEN_REQUESTS)
    start = lattice_start("deployment", setting, deployment, traffic, config)
    short_probe = without_undecided(probe_for("deployment", setting, deployment, short, config))
    short_early = without_undecided(
        probe_for("deployment", setting, deployment, short, config, targets)
    )
    guess = find_knee(short_probe, targets, start, near=short_answer, early=short_early)
    probe = probe_for("deployment", setting, deployment, traffic, config)
    early = probe_for("deployment", setting, deployment, traffic, config, targets)
    guess_rate = guess.max_rate_per_s or otherwise
    return find_knee_from(probe, targets, start, guess_rate, early, held=holds)


def _test(setting, deployment, traffic, targets, config, need: float, on_grid: bool = True):
    """Whether one instance holds at least ``need`` requests/s, from one full simulation
    (stopped once it certainly misses the targets): (held, the rate simulated, the most the
    instance may hold when it did not). With ``on_grid`` the run is at the search grid's
    first point at or above ``need`` (``grid_at_least``: the same verdict where verdicts are
    monotone in the rate, and a run the candidate's full search reuses); else at ``need``
    (the offered load: the run that checks a plan of one such instance). When it misses a
    target, the search's answer is at most the grid point below the rate simulated."""
    start = lattice_start("deployment", setting, deployment, traffic, config)
    at = grid_at_least(start, need) if on_grid else None
    rate = need if at is None else grid_rate(start, at)
    run = run_until("deployment", setting, deployment, traffic.at_rate(rate), config, targets)
    if search_holds(run.with_targets(targets)):
        return True, rate, math.inf
    at = grid_at_least(start, rate)
    most = rate * (1 - 1e-6) if at is None else (grid_rate(start, at - 1) if at > 0 else 0.0)
    return False, rate, most


def _at_most(most: float, tested: float, short: Knee) -> Knee:
    """A candidate's knee known only from above (``_test``), and from its short search."""
    return Knee(
        most,
        (),
        f"holds at most {most:.4g} req/s (a full simulation at {tested:.4g} misses a target; "
        f"short probes: {short.max_rate_per_s:.4g})",
    )


def _hope_row(found: list, rate: float, max_gpus) -> dict:
    """A candidate's row with the most it may hold (``_hope``); one never searched may hold
    any load: one instance, and more load held than any searched one."""
    s, n, short = found[:3]
    if short is not None:
        return _candidate(s, "deployment", n, _hope(found), rate, max_gpus)
    row = _candidate(s, "deployment", n, Knee(rate, (), ""), rate, max_gpus)
    row["max_rate_per_instance"] = math.inf
    return row


def _hope(found: list) -> Knee:
    """The most a candidate may hold: its full search's answer, else its short one taken
    ``SCREEN_MARGIN`` times higher, and no more than a full simulation's miss allows
    (``_test``)."""
    _, _, short, full, most, *_ = found
    if full is not None:
        return full
    rate = min(short.max_rate_per_s * SCREEN_MARGIN, most)
    return Knee(rate, (), short.reason)


def _found(found: list, option: tuple) -> list:
    """The entry of ``found`` behind an option of ``_options``."""
    _, _, setting, deployment = option
    return next(f for f in found if f[0] is setting and f[1] == deployment.gpus_per_instance)


def _to_beat(option: tuple, entry: list, size: int, setting: Setting, rate: float, max_gpus):
    """The least load one instance of ``size`` GPUs of ``setting`` must hold for its option to
    rank at least level with ``option`` (fully searched): the most instances at no higher
    price, and more load held at the same price. None when no instance count is that cheap."""
    cost, _, _, deployment = option
    held = deployment.instances * entry[3].max_rate_per_s
    each = size * setting.gpu.price_usd_per_hour
    count = math.floor(round(cost / each, 9))
    if count < 1 or (max_gpus is not None and count * size > max_gpus):
        return None
    need = rate / count
    if math.isclose(count * each, cost, rel_tol=1e-9):
        need = max(need, held / count)
    return need


def _short_search(setting, deployment, traffic, targets, config) -> Knee:
    """A candidate's short search (``screened_rows``): probes of ``SCREEN_REQUESTS`` requests
    on the full search's lattice, ``SCREEN_REFINE`` bisections."""
    short = dataclasses.replace(traffic, requests=SCREEN_REQUESTS)
    try:
        start = lattice_start("deployment", setting, deployment, traffic, config)
    except InfeasibleError as exc:  # the engine's memory: the weights do not fit
        return Knee(max_rate_per_s=0.0, evaluated=(), reason=str(exc))
    probe = without_undecided(probe_for("deployment", setting, deployment, short, config))
    early = without_undecided(probe_for("deployment", setting, deployment, short, config, targets))
    hopeless = hopeless_for("deployment", setting, deployment)
    try:
        return find_knee(
            probe, targets, start, refine=SCREEN_REFINE, early=early, hopeless=hopeless
        )
    except InfeasibleError as exc:
        return Knee(max_rate_per_s=0.0, evaluated=(), reason=str(exc))
