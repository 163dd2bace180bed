"""The results of capacity planning (docs/model.md §E6, §E11, §F12): the cheapest deployment
found with every candidate (``CapacityPlan``), the plan sized for an interval's pessimistic end
(``Confident``) and the plan sized for failures (``Redundancy``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from ..columns import HOURS_PER_MONTH
from ..load.deployment import Deployment
from ..load.engine import EngineConfig
from ..load.failures import Failures
from ..load.results import LoadResult
from ..load.targets import Targets
from ..serving.derived_intervals import headroom_intervals
from ..serving.intervals import FIGURES, held_intervals, ideal, load_intervals
from ..serving.setting import Setting


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
    #: The scheduler limits the plan was searched under where a search chose them
    #: (``tune_engine``: its step budget), else None (the caller's); an export
    #: launches these.
    config: EngineConfig | None = None

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
            "monthly_usd": r.monthly_usd,
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
                f"support_at_{c.level}": c.support,
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
                "monthly_usd": r.monthly_usd,
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
                    "monthly_usd": c.monthly_usd,
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
                    "monthly_usd": b.result.monthly_usd,
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
        columns = {}
        for name in summary.index:
            if name == "hardware":  # the chosen rows' own (their layout: at their most load)
                continue
            value = summary[name]
            blank = math.nan if isinstance(value, (int, float)) else None
            columns[f"plan_{name}" if name in table.columns else name] = [
                value if chosen else blank for chosen in table["chosen"]
            ]
        # added at once: one column at a time fragments the frame (pandas warns past 100)
        added = pd.DataFrame(columns, index=table.index)
        return pd.concat([table.drop(columns=[c for c in columns if c in table]), added], axis=1)


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
    #: The support of the interval it was sized on (``serving.support.Support.label``), and
    #: the line saying so where it is not in support ("" in support).
    support: str = ""
    extrapolates: str = ""

    @property
    def monthly_usd(self) -> float:
        """Its cost a month (``columns.HOURS_PER_MONTH`` hours)."""
        return self.usd_per_hour * HOURS_PER_MONTH


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
