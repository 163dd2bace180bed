"""Capacity planning (docs/model.md §E6): the cheapest deployment that serves a load within
latency targets, and the frontier of deployments that do.

A deployment is ``K`` instances of ``N`` GPUs each (optionally with a separate prefill pool).
For every GPU and instance size the load search (``load_search``) finds the most requests/s one
instance holds within the targets; ``K = ⌈rate / that⌉`` instances serve the load. The cheapest
is simulated at the full load to report its latencies, prices and headroom; if it then misses
a target, one more instance is added until it does not.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..columns import ALL_IN
from ..errors import InfeasibleError, SpecError, plural
from ..load.arrivals import Traffic
from ..load.deployment import Deployment, Pool, count_intervals
from ..load.engine import DEFAULT_ENGINE, EngineConfig
from ..load.failures import Failures, expected_capacity
from ..load.results import LoadResult
from ..load.targets import Targets
from ..model.machine import min_gpus
from ..model.workload import compile_workload
from ..serving.intervals import (
    FIGURES,
    LEVELS,
    headroom_intervals,
    held_intervals,
    ideal,
    interval_columns,
    inverse_intervals,
    load_intervals,
)
from ..serving.setting import Setting
from ..serving.speculative import SpecDecoding
from .frontier import pareto_indices
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
    knee_of,
    lattice_start,
    probe_for,
    run_at,
    run_until,
)

#: Full simulations testing whether a screened candidate can beat the plan (``screened_rows``)
#: before it is searched in full.
SCREEN_TESTS = 2
#: Extra instances tried when the cheapest count misses a target at the full load.
MAX_BUMPS = 8


def instance_sizes(setting: Setting, max_gpus: int | None = None) -> list[int]:
    """GPUs per instance worth trying: powers of two up to a node and whole multiples of a node,
    from the smallest that holds the weights (and room for a KV cache) up to four times it."""
    work = compile_workload(setting.model, setting.assumptions)
    smallest = min_gpus(work.weights_total_bytes, setting.gpu, setting.assumptions)
    node = setting.gpu.scale_up_domain_gpus
    sizes = [2**i for i in range(0, 12) if 2**i <= node] + [node * 2**j for j in range(1, 10)]
    top = max(node, 4 * smallest)
    keep = [n for n in sizes if smallest < n <= top and (max_gpus is None or n <= max_gpus)]
    return sorted(set(keep))


@dataclass(frozen=True)
class Confident:
    """The cheapest plan whose targets hold at the pessimistic end of the ``level`` %
    interval of the load one instance holds (docs/model.md §F12): of every co-located
    candidate searched in full, ``⌈rate / (max rate per instance x factor)⌉`` instances (never
    fewer than it needs at the expected figure), the expected plan's own included; never
    cheaper than the expected plan."""

    level: int
    deployment: Deployment
    #: Measured over predicted load at the interval's pessimistic end (its low end).
    factor: float
    #: The load the deployment holds within the targets at that end, requests/s.
    max_rate_per_s: float
    usd_per_hour: float
    #: All-in $ per million output tokens (columns.ALL_IN).
    usd_per_m_output_tokens_all_in: float
    note: str
    #: Its GPU (None: the expected plan's).
    hardware: str | None = None


@dataclass(frozen=True)
class CapacityPlan:
    """The cheapest deployment found, simulated at the full load, and every candidate. Under
    an engine profile it is the expected plan, with ``confident`` (the plan sized for an
    interval's pessimistic end) and ``bound`` (the ideal bound's plan, or why there is none)."""

    rate_per_s: float
    targets: Targets
    deployment: Deployment
    setting: Setting
    result: LoadResult
    #: The most load the chosen deployment holds within the targets, requests/s.
    max_rate_per_s: float
    candidates: pd.DataFrame
    notes: tuple[str, ...] = field(default=())
    #: The plan sized for failures (``capacity --failures``), else None.
    redundancy: Redundancy | None = None
    confident: Confident | None = None
    bound: CapacityPlan | str | None = None

    @property
    def layout_note(self) -> str | None:
        """Where the chosen candidate's row names another layout than the one the deployment
        runs, a line saying both (an instance takes the layout that serves its load fastest,
        §E6: its row's is the one it holds its most load with, the deployment's the one for its
        share of the offered load); else None."""
        table = self.candidates
        chosen = table[table["chosen"] & (table["pool"] == "deployment")]
        if self.deployment.disaggregated or chosen.empty:
            return None
        row = chosen.iloc[0]
        if row["layout"] == self.result.layout:
            return None
        share = self.rate_per_s / self.deployment.instances
        return (
            f"Layout: each instance runs {self.result.layout} at its share of the load "
            f"({share:.4g} req/s), the layout that serves that load fastest; the chosen "
            f"candidate's row names the one it holds its most load with ({row['layout']}, "
            f"{row['max_rate_per_instance']:.4g} req/s)."
        )

    @property
    def load_headroom(self) -> float:
        """How much more load the deployment holds: max rate / offered rate − 1."""
        return self.max_rate_per_s / self.rate_per_s - 1.0

    def summary(self) -> pd.Series:
        """The answer in one column: deployment, GPUs, prices, p99s and headroom."""
        r = self.result
        row = {
            "hardware": r.hardware,
            "deployment": self.deployment.describe(),
            "layout": r.layout,
            "gpus": r.gpus,
            "usd_per_hour": r.usd_per_hour,
            "usd_per_m_input_tokens": r.usd_per_m_input_tokens,
            "usd_per_m_output_tokens": r.usd_per_m_output_tokens,
            "usd_per_m_output_tokens_all_in": r.usd_per_m_output_tokens_all_in,
            "input_tokens_per_output_token": r.input_tokens_per_output_token,
            "joules_per_output_token": r.joules_per_output_token,
            "output_tokens_per_s_per_kw_it": r.output_tokens_per_s_per_kw_it,
            "output_tokens_per_s_per_mw_facility": r.output_tokens_per_s_per_mw_facility,
            "it_power_kw": r.it_power_kw,
            "rate_per_s": self.rate_per_s,
            "max_rate_per_s": self.max_rate_per_s,
            "load_headroom": self.load_headroom,
            "ttft_p99_s": r.ttft_s.p99,
            "tpot_p99_s": r.tpot_s.p99,
            "e2e_p99_s": r.e2e_s.p99,
            **{f"{k}_headroom": v for k, v in r.headroom.items()},
            "goodput_fraction": r.goodput_fraction,
            "mfu": r.mfu,
            "assumptions": r.assumptions,
        }
        for name in dict.fromkeys(k.rsplit("_", 1)[0] for k, _ in r.count_ends):
            if name not in row:  # a count with its ends: the count beside them (their order)
                row[name] = getattr(r, name)
        for name in ("prefix_hit_rate", "speculative_step_fraction"):
            if getattr(r, name) is not None:
                row[name] = getattr(r, name)
        if self.redundancy is not None:
            row.update(self.redundancy.summary())
        if self.confident is not None:
            for key, value in self._odds().items():
                figure = key.rsplit("_", 1)[0]  # "ttft_p99_s_low80" -> "ttft_p99_s"
                if figure not in FIGURES or figure in row:  # the intervals of shown figures
                    row[key] = value
        return pd.Series(row)

    def _odds(self) -> dict:
        """The intervals of the expected figures, the confident plan and the ideal bound's."""
        r, c = self.result, self.confident
        assert c is not None, "odds are stated for a plan with a confident level"
        bound = self.setting_bound()
        out = {**self.intervals(), **load_intervals(r), **dict(r.count_ends)}
        out.update(headroom_intervals(out, self.rate_per_s, r.targets.limits))
        out.update(
            {
                "confidence": c.level / 100,
                f"deployment_at_{c.level}": c.deployment.describe()
                + (f" {c.hardware}" if c.hardware else ""),
                f"gpus_at_{c.level}": c.deployment.gpus,
                f"usd_per_hour_at_{c.level}": c.usd_per_hour,
                f"usd_per_m_output_tokens_all_in_at_{c.level}": c.usd_per_m_output_tokens_all_in,
                f"max_rate_per_s_at_{c.level}": c.max_rate_per_s,
            }
        )
        b = self.bound if isinstance(self.bound, CapacityPlan) else None
        out.update(
            {
                "bound_assumptions": bound,
                "bound_hardware": b.result.hardware if b else None,
                "bound_deployment": b.deployment.describe() if b else None,
                "bound_gpus": b.deployment.gpus if b else None,
                "bound_usd_per_hour": b.result.usd_per_hour if b else math.nan,
                "bound_usd_per_m_output_tokens_all_in": (
                    b.result.usd_per_m_output_tokens_all_in if b else math.nan
                ),
                "bound_max_rate_per_s": b.max_rate_per_s if b else math.nan,
            }
        )
        return out

    def setting_bound(self) -> str:
        """The ideal bound's preset, as results name it."""
        if isinstance(self.bound, CapacityPlan):
            return self.bound.result.assumptions
        return ideal(self.setting).assumptions.label

    def intervals(self) -> dict:
        """The interval of the load the deployment holds (a throughput figure)."""
        return held_intervals(self.result, self.max_rate_per_s)

    def plans(self) -> pd.DataFrame:
        """The expected plan (the headline), the plan sized for the confidence level and the
        ideal bound's, one row each (only the first under an ideal preset)."""
        r = self.result
        rows = [
            {
                "plan": f"expected ({r.assumptions}; the headline)",
                "hardware": r.hardware,
                "deployment": self.deployment.describe(),
                "gpus": self.deployment.gpus,
                "usd_per_hour": r.usd_per_hour,
                "usd_per_m_output_tokens_all_in": r.usd_per_m_output_tokens_all_in,
                "max_rate_per_s": self.max_rate_per_s,
            }
        ]
        c = self.confident
        if c is not None:
            rows.append(
                {
                    "plan": f"{c.level} % confidence (the interval's pessimistic end)",
                    "hardware": c.hardware or r.hardware,
                    "deployment": c.deployment.describe(),
                    "gpus": c.deployment.gpus,
                    "usd_per_hour": c.usd_per_hour,
                    "usd_per_m_output_tokens_all_in": c.usd_per_m_output_tokens_all_in,
                    "max_rate_per_s": c.max_rate_per_s,
                }
            )
        b = self.bound
        if isinstance(b, CapacityPlan):
            rows.append(
                {
                    "plan": f"ideal bound ({b.result.assumptions}; no interval)",
                    "hardware": b.result.hardware,
                    "deployment": b.deployment.describe(),
                    "gpus": b.deployment.gpus,
                    "usd_per_hour": b.result.usd_per_hour,
                    "usd_per_m_output_tokens_all_in": b.result.usd_per_m_output_tokens_all_in,
                    "max_rate_per_s": b.max_rate_per_s,
                }
            )
        elif isinstance(b, str):
            rows.append({"plan": f"ideal bound ({self.setting_bound()}): {b}"})
        return pd.DataFrame(rows)

    def to_dataframe(self) -> pd.DataFrame:
        """Every candidate (GPU x instance size, and pools), cheapest first; ``chosen`` marks
        the answer, whose rows also carry the plan's figures at the full load (``summary``:
        its deployment, prices per million tokens, p99s and headroom; blank on the others; its
        GPUs and $/hour as ``plan_gpus`` and ``plan_usd_per_hour``, which count every pool and
        any instance added when the full load missed a target, and as ``plan_layout`` the layout
        it runs at the offered load, ``layout_note``)."""
        table = self.candidates.copy()
        summary = self.summary()
        for name in summary.index:
            if name == "hardware":  # the chosen rows' own (their layout: at their most load)
                continue
            value = summary[name]
            blank = math.nan if isinstance(value, (int, float)) else None
            table[f"plan_{name}" if name in table.columns else name] = [
                value if chosen else blank for chosen in table["chosen"]
            ]
        return table


def _row_setting(settings, row):
    """The setting a candidate row was searched with (its GPU and speculation), or None."""
    spec = getattr(row, "speculation", "none")
    return next(
        (s for s in settings if s.gpu.name == row.hardware and _spec_label(s) == spec), None
    )


def _spec_label(setting: Setting) -> str:
    """The candidates table's speculation column: none, the draft model, or the heads."""
    spec = setting.spec
    if spec is None:
        return "none"
    if isinstance(spec, SpecDecoding):
        return f"draft {spec.draft.name}"
    return f"{spec.kind} heads"


def _candidate(
    setting: Setting, kind: str, size: int, knee: Knee, rate: float, max_gpus: int | None
) -> dict:
    """One row of the candidates table: the instances a size needs for the load, or why it is
    excluded (no load meets the targets: no instance count, GPUs or price; more GPUs than
    ``max_gpus``: those figures, but not an option)."""
    per = knee.max_rate_per_s
    at = knee.at_max
    row = {
        "hardware": setting.gpu.name,
        "pool": kind,
        "speculation": _spec_label(setting),
        "gpus_per_instance": size,
        "layout": at.layout if at else "",
        "max_rate_per_instance": per if per > 0 else math.nan,
        "instances": None,
        "gpus": None,
        "usd_per_hour": math.nan,
        "excluded": per <= 0,
        "note": knee.reason,
        "setting": setting,
        # the held load's intervals (§F12; {} for a bound), for plans built on it (--demand)
        "held": held_intervals(at, per) if at is not None and per > 0 else {},
    }
    if per > 0:
        count = _instances_for(rate, per)
        row.update(
            instances=count,
            gpus=count * size,
            usd_per_hour=count * size * setting.gpu.price_usd_per_hour,
        )
        if max_gpus is not None and count * size > max_gpus:
            row.update(excluded=True, note=f"needs {count * size} GPUs > --max-gpus {max_gpus}")
    return row


def knee_rows(
    settings,
    traffic,
    targets,
    config,
    sizes,
    max_gpus,
    disaggregated,
    progress,
    pools: tuple[list, list] | None = None,
):
    """Rows for every GPU, instance size and kind (co-located; prefill and decode pools, on
    the GPUs of ``pools`` = (prefill settings, decode settings) when given, else on each)."""
    limits: dict[Pool, Targets] = {
        "deployment": targets,
        "prefill": Targets(ttft_p99_s=targets.ttft_p99_s),
        "decode": Targets(tpot_p99_s=targets.tpot_p99_s),
    }
    kinds: list[Pool] = ["deployment"]
    if disaggregated and pools is None:
        kinds += ["prefill", "decode"]
    plan: list[tuple[Setting, list[Pool]]] = [(s, kinds) for s in settings]
    if disaggregated and pools is not None:
        plan += [(s, ["prefill"]) for s in pools[0]] + [(s, ["decode"]) for s in pools[1]]
    rate = traffic.offered_rate_per_s
    rows = []
    for s, which in plan:
        for n in sizes or instance_sizes(s, max_gpus):
            for kind in which:
                limit = limits[kind]
                try:
                    knee = knee_of(kind, s, Deployment(n, 1), traffic, limit, config)
                except InfeasibleError as exc:  # the engine's memory: the weights do not fit
                    knee = Knee(max_rate_per_s=0.0, evaluated=(), reason=str(exc))
                row = _candidate(s, kind, n, knee, rate, max_gpus)
                rows.append(row)
                if progress:
                    progress(
                        f"{s.gpu.name}, {kind} instances of {n} {plural(n, 'GPU')}: "
                        f"{_held_text(knee, row)}"
                    )
    return rows


def _held_text(knee: Knee, row: dict) -> str:
    """What one instance holds, for the progress line of a search."""
    if not row["instances"]:
        return "no load meets the targets" if knee.evaluated else knee.reason
    excluded = " (excluded)" if row["excluded"] else ""
    count = row["instances"]
    return f"{knee.max_rate_per_s:.4g} req/s each -> {count} {plural(count, 'instance')}{excluded}"


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
        for n in sizes or instance_sizes(s, max_gpus)
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
    short_probe = probe_for("deployment", setting, deployment, short, config)
    short_early = probe_for("deployment", setting, deployment, short, config, targets)
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
    if run.with_targets(targets).meets_targets:
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


def _verify(setting, deployment: Deployment, traffic, targets, config):
    """The deployment at the full load, with instances added while a target is missed."""
    for _ in range(MAX_BUMPS + 1):
        result = run_at("deployment", setting, deployment, traffic, config).with_targets(targets)
        if result.meets_targets:
            return deployment, result
        d = deployment
        if d.disaggregated and not (result.ttft_s.p99 > (targets.ttft_p99_s or math.inf)):
            deployment = Deployment(
                d.gpus_per_instance,
                d.instances + 1,
                d.prefill_gpus_per_instance,
                d.prefill_instances,
            )
        elif d.disaggregated:
            deployment = Deployment(
                d.gpus_per_instance,
                d.instances,
                d.prefill_gpus_per_instance,
                d.prefill_instances + 1,
            )
        else:
            deployment = Deployment(d.gpus_per_instance, d.instances + 1)
    return deployment, result


def _options(rows: list[dict], mixed: bool = False) -> list[tuple[float, int, Setting, Deployment]]:
    """(cost per hour, GPUs, setting, deployment) of every complete option: each co-located
    size, and per GPU (and speculation) the first prefill pool with the first decode pool by
    ``_pool_rank`` (with ``mixed`` pools, of any GPU each); cheapest first, and among options
    of the same price the one that holds the most load (the most headroom), then the fewest
    GPUs (pools rank alike)."""
    out = []
    for r in rows:
        if r["pool"] == "deployment" and not r["excluded"]:
            held = r["instances"] * r["max_rate_per_instance"]
            deployment = Deployment(r["gpus_per_instance"], r["instances"])
            out.append((r["usd_per_hour"], held, r["gpus"], r["setting"], deployment))
    by_gpu: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        if r["pool"] != "deployment" and not r["excluded"]:
            key = ("any", r["speculation"]) if mixed else (r["hardware"], r["speculation"])
            best = by_gpu.setdefault(key, {}).get(r["pool"])
            if best is None or _pool_rank(r) < _pool_rank(best):
                by_gpu[key][r["pool"]] = r
    for pools in by_gpu.values():
        if {"prefill", "decode"} <= set(pools):
            p, d = pools["prefill"], pools["decode"]
            other = p["setting"] if p["setting"] is not d["setting"] else None
            deployment = Deployment(
                d["gpus_per_instance"],
                d["instances"],
                p["gpus_per_instance"],
                p["instances"],
                other,
            )
            held = min(
                d["instances"] * d["max_rate_per_instance"],
                p["instances"] * p["max_rate_per_instance"],
            )
            cost = p["usd_per_hour"] + d["usd_per_hour"]
            out.append((cost, held, deployment.gpus, d["setting"], deployment))
    out.sort(key=lambda o: (*_rank(o[0], o[1], o[2]), o[4].disaggregated))
    return [(cost, gpus, setting, deployment) for cost, _, gpus, setting, deployment in out]


def _rank(usd_per_hour: float, held: float, gpus: int) -> tuple:
    """How options rank (``_options``), and pools of one kind: the cheapest (a price is a sum
    of GPU-hours at one price: its last bits are rounded off before comparing), then the one
    that holds the most load, then the fewest GPUs."""
    return (round(usd_per_hour, 9), -held, gpus)


def _pool_rank(row: dict) -> tuple:
    """A pool's ``_rank`` among the pools of one kind."""
    held = row["instances"] * row["max_rate_per_instance"]
    return _rank(row["usd_per_hour"], held, row["gpus"])


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
    _, _, setting, deployment = options[0]
    deployment, result = _verify(setting, deployment, traffic, targets, config)
    ends = count_intervals(setting, deployment, traffic, targets, config, result)
    if ends:  # the plan's simulated counts at the step time's ends (§F12)
        result = dataclasses.replace(result, count_ends=tuple(ends.items()))
    per = _per_instance_rate(rows, setting, deployment)
    notes = list(result.notes)
    if not result.meets_targets:
        notes.append(f"still misses a target after {MAX_BUMPS} more instances")
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
        plan = dataclasses.replace(
            plan, redundancy=n_plus_one(plan, traffic, config, failures, progress, rows)
        )
    return plan


def _table(rows: list[dict], setting: Setting, deployment: Deployment) -> pd.DataFrame:
    """The candidates, cheapest first and the excluded ones last, with the chosen pools marked
    (instances and GPUs are blank where no load meets the targets; the speculation column only
    where speculation was searched)."""
    d = deployment
    wanted = {
        "deployment": (setting, d.gpus_per_instance),
        "decode": (setting, d.gpus_per_instance),
        "prefill": (d.prefill_setting or setting, d.prefill_gpus_per_instance),
    }
    pools = ("prefill", "decode") if d.disaggregated else ("deployment",)
    chosen = [
        r["pool"] in pools
        and r["setting"] is wanted[r["pool"]][0]
        and r["gpus_per_instance"] == wanted[r["pool"]][1]
        for r in rows
    ]
    table = pd.DataFrame(
        [{k: v for k, v in r.items() if k not in ("setting", "held")} for r in rows]
    )
    _held_columns(table, rows)
    table["chosen"] = chosen
    if set(table["speculation"]) == {"none"}:
        table = table.drop(columns=["speculation"])
    for name in ("instances", "gpus"):
        table[name] = table[name].astype("Int64")
    return _ranked(table)


def _held_columns(table: pd.DataFrame, rows: list[dict], at=None) -> None:
    """Put the interval columns of each candidate's ``max_rate_per_instance`` (its held load's,
    §F12, ``held_intervals``) into ``table`` (its rows ``at``, default all, one per
    ``rows``): blank for an excluded candidate; none at all under an ideal bound."""
    names = interval_columns("max_rate_per_instance")
    if not any(r["held"] for r in rows):
        return
    ends = [[r["held"].get(c, math.nan) for c in interval_columns("max_rate_per_s")] for r in rows]
    for i, name in enumerate(names):
        if name not in table:
            table[name] = math.nan
        values = [e[i] for e in ends]
        if at is None:
            table[name] = values
        else:
            table.loc[at, name] = values[0]


def _ranked(table: pd.DataFrame) -> pd.DataFrame:
    """The candidates in the order of ``_options``: cheapest, then the most load held, then
    the fewest GPUs; the excluded ones last."""
    table = table.copy()
    table["held"] = -table["instances"].astype(float) * table["max_rate_per_instance"]
    table = table.sort_values(["excluded", "usd_per_hour", "held", "gpus"], kind="stable")
    return table.drop(columns="held").reset_index(drop=True)


def _per_instance_rate(rows, setting, deployment: Deployment) -> float:
    """The most load the deployment holds: its instances times what one holds (for a
    disaggregated one, the scarcer of its two pools)."""

    def per(pool, size, s=setting):
        return next(
            r["max_rate_per_instance"]
            for r in rows
            if r["setting"] is s and r["pool"] == pool and r["gpus_per_instance"] == size
        )

    if not deployment.disaggregated:
        return deployment.instances * per("deployment", deployment.gpus_per_instance)
    return min(
        deployment.instances * per("decode", deployment.gpus_per_instance),
        deployment.prefill_instances
        * per(
            "prefill", deployment.prefill_gpus_per_instance, deployment.prefill_setting or setting
        ),
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
    extra instances than the expected plan's); without, the expected plan's is scaled."""
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
        pools = (d.instances, d.prefill_instances)
        scaled = [max(k, _instances_for(k, factor)) for k in pools]
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
        grow = count / d.instances
    if factor >= 1.0:
        note = "the interval's low end is above the expected figure: the expected plan stands"
    usd = r.usd_per_hour * grow
    held = plan.max_rate_per_s * factor * grow
    best = (usd, -held, deployment.gpus)
    confident = Confident(
        level, deployment, factor, held, usd, r.usd_per_m_output_tokens_all_in * grow, note
    )
    if settings:  # a disaggregated plan's confident one may be co-located, and vice versa
        for option in _confident_options(plan, level, settings):
            c_usd, c_held, c_deployment, c_factor, hardware = option
            key = (c_usd, -c_held, c_deployment.gpus)
            if c_usd >= r.usd_per_hour - 1e-9 and _ranks_before(key, best):
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
    return dataclasses.replace(plan, confident=confident, bound=bound)


def _instances_for(rate: float, per: float) -> int:
    """Instances of ``per`` requests/s each that hold ``rate``: a load met to the last bits of
    its float counts as held."""
    return math.ceil(rate / per - 1e-9)


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
    candidate searched in full other than the plan's own, sized at its interval's low end (the
    stratum of its size, at the plan's memory- or compute-bound regime)."""
    from ..serving.intervals import figure_intervals, load_bound

    r, d = plan.result, plan.deployment
    table = plan.candidates
    if "pool" not in table or table.empty:
        return
    full = table["probe_requests"].max() if "probe_requests" in table else None
    out = r.output_tokens_per_s
    regime = load_bound(plan.setting, r.mean_batch, r.input_tokens_per_s / out if out > 0 else 0)
    for row in table.itertuples():
        if row.pool != "deployment" or row.excluded or not row.instances:
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
        ends = figure_intervals(
            {"max_rate_per_s": per}, ["max_rate_per_s"], setting, row.gpus_per_instance, regime
        )
        if not ends:
            continue
        factor = min(1.0, ends[f"max_rate_per_s_low{level}"] / per)
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
    plan is the one every candidate searched in full gives, in any order."""
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
        bar = odds.confident.usd_per_hour
        hopes = [
            h
            for h in _confident_hopes(plan, level, settings)
            if _could_rank_first(h, odds.confident) and (h[1], h[2]) not in ruled_out
        ]
        if not hopes:
            return odds
        # the likeliest plan first (on its short answer itself): a good plan found early rules
        # the others out with one run each (``_confident_need``); any order gives the same plan
        _, setting, size, short, *_ = min(hopes, key=lambda h: (*h[5], h[2]))
        d = Deployment(size, 1)
        rate = plan.rate_per_s
        full = int(plan.candidates["probe_requests"].max())
        need = _confident_need(
            plan, level, setting, size, bar, max_gpus, odds.confident.max_rate_per_s
        )
        holds = held_at.get((setting, size))  # a rate it held at, on an earlier turn
        tested_before = holds is not None and need is not None and holds >= need
        if need is not None and _confident_test(setting, short, need) and not tested_before:
            try:
                held, tested, most = _test(setting, d, traffic, plan.targets, config, need)
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
        if short is None:  # never searched: a short search first
            if progress:
                progress(f"{setting.gpu.name} x{size}: searched short for the confident plan")
            knee = _short_search(setting, d, traffic, plan.targets, config)
            row, requests = _candidate(setting, "deployment", size, knee, rate, max_gpus), None
        else:
            if progress:
                progress(f"{setting.gpu.name} x{size}: searched in full for the confident plan")
            if short > 0:  # from its short answer, and the most its tests held at
                knee = _full_search(setting, d, traffic, plan.targets, config, short, short, holds)
            else:
                knee = knee_of("deployment", setting, d, traffic, plan.targets, config)
            row, requests = _candidate(setting, "deployment", size, knee, rate, max_gpus), full
        table = plan.candidates.copy()
        at = _row_at(table, setting, size)
        for name in ("layout", "max_rate_per_instance", "instances", "gpus"):
            table.loc[at, name] = row[name]
        for name in ("usd_per_hour", "excluded", "note"):
            table.loc[at, name] = row[name]
        _held_columns(table, [row], at)
        table.loc[at, "probe_requests"] = SCREEN_REQUESTS if requests is None else requests
        plan = dataclasses.replace(plan, candidates=_ranked(table))
    return with_odds(plan, confidence, bound, settings)


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
    req/s at its low end): the most instances at that price, each holding its share at the
    low end; where that count costs the same as the plan (a tie, ranked by the load held,
    ``with_odds``), its instances must also hold ``best_held`` at the low end, unless one
    instance fewer (cheaper, so ranked first) holds the load; taken a millionth lower
    (rounding). None when no instance count is that cheap.

    Exact: the low end is the load held times a factor ``f`` that does not depend on it (a
    band of the instance's stratum, ``figure_limits``), so ``K = ⌈rate / (f · per)⌉``
    instances (and their price) never rise, and at a given ``K`` the load held ``K · f · per``
    never falls, as ``per`` grows: below this load every count the candidate can take costs
    more than the plan, or as much holding less."""
    each = size * setting.gpu.price_usd_per_hour
    count = math.floor((bar + 1e-9) / each)
    if max_gpus is not None:
        count = min(count, max_gpus // size)
    if count < 1:
        return None
    factor = _confident_factor(plan, level, setting, size, 1.0)
    need = plan.rate_per_s / (factor * count)
    if _same_price(count * each, bar):  # a tie at ``count``
        tie = max(plan.rate_per_s, best_held) / (factor * count)
        cheaper = plan.rate_per_s / (factor * (count - 1)) if count > 1 else math.inf
        need = min(tie, cheaper)
    return need * (1 - 1e-6)


def _confident_factor(plan: CapacityPlan, level: int, setting, size: int, per: float) -> float:
    """The low end of the ``level`` % interval of the load ``per`` an instance of ``size``
    GPUs holds, over ``per`` (at most 1; the stratum of its size at the plan's regime)."""
    from ..serving.intervals import figure_intervals, load_bound

    r = plan.result
    out = r.output_tokens_per_s
    regime = load_bound(plan.setting, r.mean_batch, r.input_tokens_per_s / out if out > 0 else 0)
    ends = figure_intervals({"max_rate_per_s": per}, ["max_rate_per_s"], setting, size, regime)
    return min(1.0, ends[f"max_rate_per_s_low{level}"] / per) if ends else 1.0


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
        knee = _at_most(most, tested, Knee(short, ()))
        row = _candidate(setting, "deployment", size, knee, plan.rate_per_s, max_gpus)
        for name in ("layout", "max_rate_per_instance", "instances", "gpus"):
            table.loc[at, name] = row[name]
        for name in ("usd_per_hour", "excluded", "note"):
            table.loc[at, name] = row[name]
        _held_columns(table, [row], at)
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


def _short_search(setting, deployment, traffic, targets, config) -> Knee:
    """A candidate's short search (``screened_rows``): probes of ``SCREEN_REQUESTS`` requests
    on the full search's lattice, ``SCREEN_REFINE`` bisections."""
    short = dataclasses.replace(traffic, requests=SCREEN_REQUESTS)
    try:
        start = lattice_start("deployment", setting, deployment, traffic, config)
    except InfeasibleError as exc:  # the engine's memory: the weights do not fit
        return Knee(max_rate_per_s=0.0, evaluated=(), reason=str(exc))
    probe = probe_for("deployment", setting, deployment, short, config)
    early = probe_for("deployment", setting, deployment, short, config, targets)
    hopeless = hopeless_for("deployment", setting, deployment)
    try:
        return find_knee(
            probe, targets, start, refine=SCREEN_REFINE, early=early, hopeless=hopeless
        )
    except InfeasibleError as exc:
        return Knee(max_rate_per_s=0.0, evaluated=(), reason=str(exc))


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


@dataclass(frozen=True)
class LoadFrontier:
    """Deployments that serve a load within the targets: per-request speed (1 / mean TPOT)
    against the all-in price per million output tokens; ``points`` is their Pareto frontier."""

    rate_per_s: float
    targets: Targets
    points: pd.DataFrame
    evaluated: pd.DataFrame
    #: What the frontier was computed with: a result's metadata, the GPU cap (``metadata``).
    meta: dict = field(default_factory=dict, compare=False)

    def to_dataframe(self) -> pd.DataFrame:
        return self.points

    def metadata(self) -> dict:
        return dict(self.meta)


#: Instance counts tried, as multiples of the fewest that meet the targets.
COUNT_MULTIPLES = (1, 1.25, 1.5, 2, 3, 4, 6, 8)


def load_frontier(
    settings: list[Setting],
    traffic: Traffic,
    targets: Targets,
    config: EngineConfig = DEFAULT_ENGINE,
    sizes: list[int] | None = None,
    max_gpus: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> LoadFrontier:
    """Every instance size with ``K`` instances, from the fewest that meet the targets up to 8
    times as many (more instances: smaller batches, faster tokens, higher price)."""
    rate = _planned_rate(traffic)
    rows: list = []
    meta: dict = {}
    for s in settings:
        for n in sizes or instance_sizes(s, max_gpus):
            knee = knee_of("deployment", s, Deployment(n, 1), traffic, targets, config)
            if knee.max_rate_per_s <= 0:
                continue
            fewest = _instances_for(rate, knee.max_rate_per_s)
            for k in sorted({math.ceil(fewest * m) for m in COUNT_MULTIPLES}):
                if max_gpus is not None and k * n > max_gpus:
                    continue
                r = run_at("deployment", s, Deployment(n, k), traffic, config).with_targets(targets)
                if r.meets_targets:
                    row = r.row()
                    speed = inverse_intervals(row, "tpot_mean_s", "tokens_per_s")
                    rows.append({"tokens_per_s": 1.0 / r.tpot_s.mean, **speed, **row})
                    meta = meta or r.metadata()
            if progress:
                progress(
                    f"{s.gpu.name}, instances of {n} {plural(n, 'GPU')}: {len(rows)} "
                    f"{plural(len(rows), 'deployment')} "
                    f"{'meets' if len(rows) == 1 else 'meet'} the targets so far"
                )
    if not rows:
        raise InfeasibleError(f"no deployment meets {targets.describe()} at {rate:g} req/s")
    every = pd.DataFrame(rows)
    keep = pareto_indices(1.0 / every["tokens_per_s"].to_numpy(), every[ALL_IN].to_numpy())
    points = every.iloc[np.sort(keep)].sort_values("tokens_per_s").reset_index(drop=True)
    if max_gpus is not None:
        meta["max_gpus"] = int(max_gpus)
    if len(settings) > 1:
        meta["hardware"] = ", ".join(s.gpu.name for s in settings)
        meta.pop("hardware_file", None)
    if traffic.input_notes:  # the trace rows left out (unreadable): the load is the others'
        meta["trace_left_out"] = "; ".join(traffic.input_notes)
    return LoadFrontier(rate, targets, points, every, meta)


@dataclass(frozen=True)
class Redundancy:
    """A capacity plan sized for failures (docs/model.md §E11): the expected capacity the
    cheapest plan loses, the plan with one more instance per pool (N+1) verified by
    simulation with one instance down, and what that redundancy costs."""

    #: The N+1 plan's setting (its GPU may differ from the cheapest plan's).
    setting: Setting
    failures: Failures
    #: (pool, instances, GPUs per instance, share of time each instance is down) of the plan.
    pools: tuple[tuple[str, int, int, float], ...]
    #: Expected requests/s the cheapest plan holds over time, and the share of time it has
    #: an instance down (below the capacity it was verified at).
    expected_max_rate_per_s: float
    degraded_probability: float
    deployment: Deployment
    #: The N+1 plan at the full load, and with one instance of each pool down.
    result: LoadResult
    one_down: tuple[tuple[str, LoadResult], ...]
    #: The probability that more instances are down than the N+1 plan was verified without.
    shortfall_probability: float
    extra_usd_per_hour: float
    base_usd_per_hour: float

    @property
    def holds(self) -> bool:
        """Every one-instance-down simulation meets the targets."""
        return all(r.meets_targets for _, r in self.one_down)

    def summary(self) -> dict:
        """The failure figures of the plan, for its summary column (expected figures)."""
        return {
            "gpu_mtbf_hours": self.failures.gpu_mtbf_hours,
            "repair_hours": self.failures.repair_hours,
            "instance_unavailability": max(u for *_, u in self.pools),
            "expected_max_rate_per_s": self.expected_max_rate_per_s,
            "degraded_probability": self.degraded_probability,
            "n_plus_one_deployment": f"{self.deployment.describe()} {self.setting.gpu.name}",
            "n_plus_one_usd_per_hour": self.result.usd_per_hour,
            "n_plus_one_usd_per_m_output_tokens_all_in": self.result.usd_per_m_output_tokens_all_in,
            "redundancy_usd_per_hour": self.extra_usd_per_hour,
            "redundancy_cost_fraction": self.extra_usd_per_hour / self.base_usd_per_hour,
            "n_plus_one_holds_one_down": self.holds,
            "n_plus_one_shortfall_probability": self.shortfall_probability,
        }


def _grow(d: Deployment, pool: Pool, by: int) -> Deployment:
    """The deployment with ``by`` more instances in ``pool`` ("decode": the main pool)."""
    if pool == "prefill":
        return dataclasses.replace(d, prefill_instances=d.prefill_instances + by)
    return dataclasses.replace(d, instances=d.instances + by)


def n_plus_one(
    plan: CapacityPlan,
    traffic: Traffic,
    config: EngineConfig,
    failures: Failures,
    progress=None,
    rows: list[dict] | None = None,
) -> Redundancy:
    """Size ``plan`` for failures (§E11): one more instance in each pool, then more while a
    simulation at the full load with one instance of a pool down misses a target. A
    co-located plan takes the candidate (``rows``: GPU and instance size) whose instances plus
    one cost least: smaller instances make cheaper spares."""
    d, s, targets = plan.deployment, plan.setting, plan.targets
    if not d.disaggregated and rows:
        best = min(
            (r for r in rows if r["pool"] == "deployment" and not r["excluded"] and r["instances"]),
            key=lambda r: (
                (r["instances"] + 1) * r["gpus_per_instance"] * r["setting"].gpu.price_usd_per_hour,
                r["setting"] is not s or r["gpus_per_instance"] != d.gpus_per_instance,
            ),
        )
        s = best["setting"]
        d = Deployment(best["gpus_per_instance"], max(best["instances"], 1))
        if (s, d.gpus_per_instance) == (plan.setting, plan.deployment.gpus_per_instance):
            d = plan.deployment  # the plan's own, as verified
    kinds: tuple[Pool, ...] = ("prefill", "decode") if d.disaggregated else ("decode",)
    n1 = d
    for kind in kinds:
        n1 = _grow(n1, kind, 1)
    for _ in range(MAX_BUMPS + 1):
        one_down = tuple(
            (
                f"one {kind} instance down" if d.disaggregated else "one instance down",
                run_at("deployment", s, _grow(n1, kind, -1), traffic, config).with_targets(targets),
            )
            for kind in kinds
        )
        failing = [k for k, (_, r) in zip(kinds, one_down) if not r.meets_targets]
        if not failing:
            break
        for kind in failing:
            n1 = _grow(n1, kind, 1)
    if progress:
        progress(f"N+1: {n1.describe()} {s.gpu.name}, checked with one instance down")
    full = run_at("deployment", s, n1, traffic, config).with_targets(targets)
    n1_setting = s
    # what the cheapest plan holds over time: each pool's instances at what one holds
    d = plan.deployment
    kinds = ("prefill", "decode") if d.disaggregated else ("decode",)
    chosen = plan.candidates[plan.candidates["chosen"]]
    each = {r.pool: r.max_rate_per_instance for r in chosen.itertuples()}
    sizes = {
        "decode": (d.instances, d.gpus_per_instance, each.get("decode", each.get("deployment"))),
        "prefill": (d.prefill_instances, d.prefill_gpus_per_instance, each.get("prefill")),
    }
    pools = tuple(
        (kind if d.disaggregated else "deployment", n, g, failures.unavailability(g))
        for kind, (n, g, _) in ((k, sizes[k]) for k in kinds)
    )
    mean, _, _ = expected_capacity([sizes[k] for k in kinds], failures)
    up = math.prod(float(failures.down(n, g)[0]) for n, g, _ in (sizes[k] for k in kinds))
    extra = {
        "decode": (n1.instances, n1.gpus_per_instance),
        "prefill": (n1.prefill_instances, n1.prefill_gpus_per_instance),
    }
    # verified with one instance of a pool down: more than one down at once is not covered
    covered = math.prod(1.0 - failures.more_down_than(1, *extra[k]) for k in kinds)
    return Redundancy(
        setting=n1_setting,
        failures=failures,
        pools=pools,
        expected_max_rate_per_s=mean,
        degraded_probability=1.0 - up,
        deployment=n1,
        result=full,
        one_down=one_down,
        shortfall_probability=1.0 - covered,
        extra_usd_per_hour=full.usd_per_hour - plan.result.usd_per_hour,
        base_usd_per_hour=plan.result.usd_per_hour,
    )
