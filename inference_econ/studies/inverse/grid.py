"""Speed and cost of every grid point of a setting, for any acceptance rate at once.

The inverse analyses ask the same frontier many questions: the cost at one speed, the fastest
speed, and the smallest acceptance rate that brings an observed point inside (docs/model.md
§D2). The target's passes (S = 1 … γ_max) and the draft's pass do not depend on the acceptance
rate α, so they are computed once per setting (``optimiser.Problem.pass_latencies``) and
speculation is recombined for each α (§A6), which costs microseconds instead of a frontier.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field

import numpy as np

from ... import settings as table
from ...model.economics import priced_grid
from ...optimise.frontier import pareto_indices
from ...optimise.method import Method
from ...optimise.optimiser import Problem
from ...serving.setting import Setting
from ...serving.speculative import combine

#: Bisection on α stops when the bracket is narrower than this.
ACCEPTANCE_TOLERANCE = 1e-3
#: The grid is searched in single precision: a speed within this relative distance of a
#: point's counts as reached (a frontier described in double precision may differ by ~1e-7).
SPEED_RTOL = 1e-6
#: Staircases a grid keeps, the least recently asked dropped first: the bisections of many
#: offers on one grid revisit the same dyadic rates, the coarse ones most (the first eight
#: halvings visit 255; at 400 points a staircase is up to ~2,000 points, 32 KB).
STAIRCASES_KEPT = 256
_KEPT_LOCK = threading.Lock()
#: Grids a process keeps (``speed_cost_grid``; a 400-point grid with a draft holds ~10 MB).
GRIDS_KEPT = 32


@dataclass(frozen=True)
class Staircase:
    """The grid points no faster point undercuts, at one acceptance rate: speeds ascending,
    costs ascending with them (every point of finite cost is at most as fast and at least as
    expensive as one of these, so each question below has the whole grid's answer)."""

    tokens_per_s: np.ndarray
    usd_per_mtok: np.ndarray

    @classmethod
    def of(cls, speed: np.ndarray, cost: np.ndarray) -> Staircase:
        finite = np.isfinite(cost)
        s, c = speed[finite], cost[finite]
        order = np.argsort(s, kind="stable")
        s, c = s[order], c[order]
        cheapest_from = np.minimum.accumulate(c[::-1])[::-1]  # min cost at this speed or more
        step = c == cheapest_from
        return cls(s[step], c[step])


@dataclass(frozen=True, eq=False)
class SpeedCostGrid:
    """Pass latencies of one setting on the §A7 grid (rows: batches, columns: GPU counts)."""

    setting: Setting
    gpus: np.ndarray
    batch: np.ndarray
    target_pass_s: dict
    draft_pass_s: dict | None
    # kept per acceptance rate; not an argument, so a replaced grid starts with none
    _staircases: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def speculative(self) -> bool:
        return self.draft_pass_s is not None

    def latency_s(self, acceptance: float | None = None) -> np.ndarray:
        """Per-token latency at every point: no speculation (``None``), or the best draft
        length per point at acceptance ``acceptance`` (§A6; no speculation stays a candidate)."""
        if acceptance is None or not self.speculative:
            return self.target_pass_s[1]
        spec = self.setting.spec.with_acceptance(float(acceptance))
        return combine(self.target_pass_s, self.draft_pass_s, spec)[0]

    def _speed_cost(self, acceptance):
        latency = self.latency_s(acceptance)
        with np.errstate(divide="ignore", invalid="ignore"):
            speed = np.where(np.isfinite(latency), 1.0 / latency, 0.0)
            cost = priced_grid(
                self.gpus,
                latency,
                self.batch,
                self.setting.gpu.price_usd_per_hour,
                self.setting.max_throughput_tokens_per_s,
            )
        return speed, np.where(np.isfinite(cost), cost, np.inf)

    def staircase(self, acceptance: float | None = None) -> Staircase:
        """The points that answer every speed and cost question at ``acceptance`` (kept per
        rate: the same grid is asked of many offers, and a bisection revisits rates)."""
        key = None if acceptance is None or not self.speculative else float(acceptance)
        kept = self._staircases
        with _KEPT_LOCK:
            steps = kept.pop(key, None)
            if steps is not None:
                kept[key] = steps  # the most recently asked last
        if steps is None:
            steps = Staircase.of(*self._speed_cost(key))
            with _KEPT_LOCK:
                kept[key] = steps
                while len(kept) > STAIRCASES_KEPT:
                    kept.pop(next(iter(kept)))
        return steps

    def fastest_tokens_per_s(self, acceptance: float | None = None) -> float:
        """The highest speed of any feasible point (0 if none is feasible)."""
        speed = self.staircase(acceptance).tokens_per_s
        return float(speed[-1]) if len(speed) else 0.0

    def cost_at_speed(self, tokens_per_s: float, acceptance: float | None = None) -> float:
        """$ per million tokens of the cheapest point at least this fast (inf if none is):
        the frontier's cost at that speed (``Frontier.cost_at_speed``)."""
        steps = self.staircase(acceptance)
        at = np.searchsorted(steps.tokens_per_s, tokens_per_s * (1 - SPEED_RTOL), side="left")
        return float(steps.usd_per_mtok[at]) if at < len(steps.usd_per_mtok) else float("inf")

    def pareto(self, acceptance: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(tokens/s, $ per million tokens) of the Pareto-optimal points, slowest first."""
        speed, cost = self._speed_cost(acceptance)
        with np.errstate(divide="ignore"):
            idx = pareto_indices(np.where(speed > 0, 1.0 / speed, np.inf), cost)
        order = idx[np.argsort(speed.ravel()[idx])]
        return speed.ravel()[order], cost.ravel()[order]

    def outside_factor(
        self, tokens_per_s: float, usd_per_mtok: float, acceptance: float | None = None
    ) -> float:
        """How far an offer is outside the frontier (§D2): the smallest f such that some
        point is at least 1/f times as fast and at most f times as expensive. Below 1 the
        offer is inside, with that much to spare; inf if nothing is feasible."""
        steps = self.staircase(acceptance)
        ok = steps.tokens_per_s > 0
        if not ok.any():
            return float("inf")
        speed, cost = steps.tokens_per_s[ok], steps.usd_per_mtok[ok]
        return float(np.maximum(tokens_per_s / speed, cost / usd_per_mtok).min())

    def minimum_acceptance(self, tokens_per_s: float, usd_per_mtok: float | None = None):
        """The smallest α at which the offer is reached: its speed (``usd_per_mtok`` None) or
        its speed at a cost within the price. None if not even α = 1 does it (§D2)."""

        def ok(alpha):
            if usd_per_mtok is None:
                return self.fastest_tokens_per_s(alpha) >= tokens_per_s * (1 - SPEED_RTOL)
            return self.cost_at_speed(tokens_per_s, alpha) <= usd_per_mtok

        if not self.speculative or not ok(1.0):
            return None
        if ok(0.0):
            return 0.0
        lo, hi = 0.0, 1.0  # monotone: a higher α makes every point faster and cheaper
        while hi - lo > ACCEPTANCE_TOLERANCE:
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if ok(mid) else (mid, hi)
        return hi


def speed_cost_grid(
    setting: Setting, grid_points: int = table.default("grid_points", table.INFER)
) -> SpeedCostGrid:
    """The pass latencies of a setting on a grid of ``grid_points`` per axis (cached; the
    setting's acceptance rate does not matter)."""
    if setting.spec is not None:
        setting = setting.replace(spec=setting.spec.with_acceptance(1.0))
    return _grid(setting, int(grid_points))


@functools.lru_cache(maxsize=GRIDS_KEPT)
def _grid(setting: Setting, grid_points: int) -> SpeedCostGrid:
    problem = Problem(setting, Method(grid_points=grid_points))
    n_values, b_values = problem.continuous_axes()
    target, draft = problem.pass_latencies(n_values, b_values)
    N, B = np.meshgrid(n_values, b_values)
    as_float = {g: np.asarray(t, dtype=float) for g, t in target.items()}
    return SpeedCostGrid(
        setting=setting,
        gpus=N,
        batch=B,
        target_pass_s=as_float,
        draft_pass_s=None
        if draft is None
        else {g: np.asarray(d, dtype=float) for g, d in draft.items()},
    )
