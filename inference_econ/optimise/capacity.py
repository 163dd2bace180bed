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
from typing import TYPE_CHECKING

import pandas as pd

from ..errors import InfeasibleError, SpecError
from ..load.arrivals import Traffic
from ..load.deployment import Deployment, count_intervals
from ..load.engine import DEFAULT_ENGINE, EngineConfig
from ..load.failures import Failures
from ..load.results import LoadResult
from ..load.targets import Targets
from ..serving.intervals import (
    FIGURES,
    headroom_intervals,
    held_intervals,
    ideal,
    load_intervals,
)
from ..serving.setting import Setting
from .candidates import MAX_BUMPS, _options, _per_instance_rate, _table, knee_rows
from .load_search import (
    run_at,
)
from .redundancy import Redundancy, n_plus_one
from .screening import screened_rows, screens

if TYPE_CHECKING:
    from .confident import Confident


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
