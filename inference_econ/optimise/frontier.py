"""Pareto frontiers of serial speed vs cost (docs/model.md §A7), extracted exactly.

``pareto_indices`` sorts configurations by latency and keeps each one that is strictly cheaper
than every faster one: a point is on the frontier iff no other point is at least as fast and at
least as cheap. ``Frontier`` holds the resulting configurations with their layouts and
breakdowns and answers the usual questions (fastest, cheapest, preference point, cheapest at
a given speed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InfeasibleError, SpecError, short
from ..specs.schema import check_number

if TYPE_CHECKING:  # a Frontier holds a DataFrame; importing this module needs no pandas
    import pandas as pd


def pareto_indices(latency_s, cost):
    """Indices of the Pareto-optimal points, fastest first (non-finite points are ignored)."""
    latency_s = np.asarray(latency_s, dtype=float).ravel()
    cost = np.asarray(cost, dtype=float).ravel()
    idx = np.flatnonzero(np.isfinite(latency_s) & np.isfinite(cost))
    if idx.size == 0:
        return idx
    order = idx[np.lexsort((cost[idx], latency_s[idx]))]
    c = cost[order]
    running = np.minimum.accumulate(c)
    keep = np.empty(c.shape, dtype=bool)
    keep[0] = True
    keep[1:] = c[1:] < running[:-1]
    return order[keep]


def near_pareto_indices(latency_s, cost, rtol: float, dominators=None):
    """Indices of the points that no point beats by more than a factor ``1 + rtol`` in both
    latency and cost, fastest first (ties by cost; non-finite points are ignored).

    The candidates of a frontier computed from values known only within a relative error
    ``e`` of the exact ones: if every value (latency and cost) is within ``e`` and
    ``(1 + rtol)(1 - e) > 1 + e``, a point left out is beaten in both by another point on the
    exact values, strictly, so it is not on the exact frontier; the exact frontier is then
    ``pareto_indices`` of the candidates described exactly. ``dominators`` (a mask) limits
    the points allowed to leave others out (those certainly feasible).
    """
    shape = np.shape(latency_s)
    latency_s = np.asarray(latency_s, dtype=float).ravel()
    cost = np.asarray(cost, dtype=float).ravel()
    idx = np.flatnonzero(np.isfinite(latency_s) & np.isfinite(cost))
    able_all = None if dominators is None else np.broadcast_to(dominators, shape).ravel()
    if idx.size > PREFILTER_POINTS:
        idx = _beaten_by_a_sample_removed(latency_s, cost, rtol, idx, able_all)
    idx = idx[np.argsort(latency_s[idx], kind="stable")]  # fastest first
    lat, price = latency_s[idx], cost[idx]
    able = slice(None) if able_all is None else able_all[idx]
    scaled = lat[able] * (1.0 + rtol)  # ascending, as the latencies
    cheapest = np.minimum.accumulate(price[able] * (1.0 + rtol))
    # for each point, the cheapest dominator whose latency times 1 + rtol is not above its own
    count = np.searchsorted(scaled, lat, side="right")
    best = np.full(lat.shape, np.inf)
    best[count > 0] = cheapest[count[count > 0] - 1]
    keep = np.flatnonzero(~(best <= price))
    return idx[keep[np.lexsort((price[keep], lat[keep]))]]


#: Above this many points ``near_pareto_indices`` first removes the points beaten by the
#: candidates of an evenly spread sample (``_beaten_by_a_sample_removed``), then sorts the rest.
PREFILTER_POINTS = 20_000
#: Every how many-th point the sample takes.
PREFILTER_STRIDE = 16


def _beaten_by_a_sample_removed(latency_s, cost, rtol: float, idx, able):
    """The points of ``idx`` (ascending) that no candidate of a sample of them beats by more
    than ``1 + rtol`` in both (the test of ``near_pareto_indices``), in the same order.

    Exact: a point removed here is removed by ``near_pareto_indices`` too (the sample's
    candidates are points allowed to beat others), and a removed point beats no remaining
    point that the point which removed it does not beat as well (``q`` beaten by ``d`` and
    beating ``x``: fl(d·(1 + r)) ≤ q ≤ fl(q·(1 + r)) ≤ x, costs alike), so the rest keeps
    every dominator it needs. On the 400 x 400 grid a sort of 144,000 latencies, most of
    the extraction's time, becomes one of a few thousand.
    """
    sample = idx[::PREFILTER_STRIDE]
    if able is not None:
        sample = sample[able[sample]]
    anchors = near_pareto_indices(latency_s[sample], cost[sample], rtol)
    if anchors.size == 0:
        return idx
    anchors = sample[anchors]  # fastest first: their scaled latencies ascend
    scaled = latency_s[anchors] * (1.0 + rtol)
    cheapest = np.minimum.accumulate(cost[anchors] * (1.0 + rtol))
    count = np.searchsorted(scaled, latency_s[idx], side="right")
    best = np.where(count > 0, cheapest[np.maximum(count - 1, 0)], np.inf)
    return idx[~(best <= cost[idx])]


def paper_sampled_indices(latency_s, count: int = 1000, decades: float = 2.0):
    """Frontier points the paper's code would have found (sorted by latency, fastest first).

    The paper's notebook sampled 1000 latency thresholds from the minimum to 100 times it and
    kept, for each, the cheapest point at least that fast. Only used to read the paper's
    preference points off our exact frontier (docs/deviations.md).
    """
    latency_s = np.asarray(latency_s, dtype=float)
    if latency_s.size == 0:
        return np.array([], dtype=int)
    thresholds = latency_s.min() * np.logspace(0, decades, count)
    pos = np.searchsorted(latency_s, thresholds, side="right") - 1
    return np.unique(pos[pos >= 0])


def preference_scores(tokens_per_s, usd_per_mtok, k: float = 3.0):
    """log(speed^k / price) of each point (paper Eq. 45): the preference point maximises it."""
    return np.log(np.asarray(tokens_per_s)) * k - np.log(np.asarray(usd_per_mtok))


@dataclass(frozen=True, eq=False)
class FrontierColumns:
    """A frontier's points as {column: 1-D array} (the columns of ``Frontier``, slowest
    first), with what ``Frontier`` says about them: what the optimiser computes before a
    DataFrame is made, and what the ``frontier`` command prints from, without pandas.
    ``Frontier`` is the same with its points in a DataFrame."""

    label: str
    columns: dict
    grid_points: int = 0
    elapsed_s: float = 0.0
    notes: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.columns["tokens_per_s"])

    def row(self, i: int) -> dict:
        """The point at position ``i`` as {column: value}."""
        return {name: values[i] for name, values in self.columns.items()}

    def key_indices(self) -> dict[str, int]:
        """Positions of the fastest point, the preference point (speed^3/price) and the
        cheapest, as ``Frontier.fastest``, ``preference_point`` and ``cheapest`` pick them
        (the first of equal ones)."""
        speed, price = self.columns["tokens_per_s"], self.columns["usd_per_mtok"]
        return {
            "fastest": int(np.argmax(speed)),
            "preference": int(np.argmax(preference_scores(speed, price))),
            "cheapest": int(np.argmin(price)),
        }

    def to_frontier(self) -> Frontier:
        """The same frontier with its points in a DataFrame."""
        import pandas as pd

        return Frontier(
            label=self.label,
            points=pd.DataFrame(self.columns),
            grid_points=self.grid_points,
            elapsed_s=self.elapsed_s,
            notes=list(self.notes),
            metadata=dict(self.metadata),
        )


@dataclass(eq=False)
class Frontier:
    """The Pareto frontier of one setting: one row per configuration, slowest first.

    Columns: tokens_per_s (per request), usd_per_mtok, latency_s, gpus, batch, the layout
    (pipeline_degree, tensor_degree, attention_degree, expert_degree, tp_dims, micro_batch,
    draft_tokens), mfu, throughput and the latency breakdown (see ``latency.Breakdown``).
    """

    label: str
    points: pd.DataFrame
    grid_points: int = 0
    elapsed_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    #: What the frontier was computed with (``Setting.metadata`` and the method).
    metadata: dict = field(default_factory=dict)

    def to_dataframe(self) -> pd.DataFrame:
        """The frontier's points (a copy), with ``attrs["metadata"]`` saying what they were
        computed with."""
        df = self.points.copy()
        df.attrs["metadata"] = dict(self.metadata)
        return df

    def __len__(self) -> int:
        return len(self.points)

    @property
    def empty(self) -> bool:
        return len(self.points) == 0

    def _require(self) -> None:
        if self.empty:
            reason = "; ".join(self.notes) or "no configuration is feasible"
            raise InfeasibleError(f"{self.label}: the frontier is empty ({reason})")

    def fastest(self) -> pd.Series:
        """The configuration with the highest tokens/s per request."""
        self._require()
        return self.points.loc[self.points["tokens_per_s"].idxmax()]

    def cheapest(self) -> pd.Series:
        """The configuration with the lowest $ per million tokens."""
        self._require()
        return self.points.loc[self.points["usd_per_mtok"].idxmin()]

    def preference_point(self, k: float = 3.0, sampling: str | None = None) -> pd.Series:
        """The point maximising speed^k / price (paper Eq. 45, k = 3).

        ``sampling="paper"`` picks among the points the paper's threshold sampler would have
        found, which is how the paper's Tables 3, 5 and 6 were read (docs/deviations.md).
        """
        self._require()
        k = check_number(k, "argument", "k", minimum=0, maximum=100)
        pts = self.points
        if sampling == "paper":
            fastest_first = pts.sort_values("latency_s")
            pts = fastest_first.iloc[paper_sampled_indices(fastest_first["latency_s"].to_numpy())]
        elif sampling is not None:
            raise SpecError(
                "argument", "sampling", f"unknown sampling {short(sampling)}", "use None or 'paper'"
            )
        score = preference_scores(pts["tokens_per_s"].to_numpy(), pts["usd_per_mtok"].to_numpy(), k)
        return pts.iloc[int(np.argmax(score))]

    def cheapest_at_speed(self, tokens_per_s: float) -> pd.Series | None:
        """The cheapest configuration reaching at least ``tokens_per_s`` (None if none does)."""
        self._require()
        tokens_per_s = check_number(tokens_per_s, "argument", "tokens_per_s", minimum=0)
        ok = self.points[self.points["tokens_per_s"] >= tokens_per_s]
        if ok.empty:
            return None
        return ok.loc[ok["usd_per_mtok"].idxmin()]

    def cost_at_speed(self, tokens_per_s):
        """$ per million tokens of the cheapest point at least this fast (inf if none)."""
        try:
            speeds = np.asarray(tokens_per_s, dtype=float)
        except (TypeError, ValueError):
            raise SpecError(
                "argument", "tokens_per_s", f"expected speeds, got {short(tokens_per_s)}", ""
            ) from None
        if np.isnan(speeds).any() or (speeds < 0).any():
            raise SpecError("argument", "tokens_per_s", "has NaN or negative speeds", "")
        pts = self.points.sort_values("tokens_per_s")
        s = pts["tokens_per_s"].to_numpy()
        c = pts["usd_per_mtok"].to_numpy()
        # cost is non-decreasing with speed on a frontier: first point at or above the speed
        pos = np.searchsorted(s, speeds, side="left")
        return np.where(
            pos < len(s), c[np.clip(pos, 0, max(len(s) - 1, 0))] if len(s) else np.inf, np.inf
        )


def domination_factor(front: Frontier, reference: Frontier) -> float:
    """How much better ``front`` is than ``reference`` at worst: the smallest f >= 1 such that
    every point of ``front`` is matched by a point of ``reference`` at least 1/f as fast and at
    most f times as expensive (1.0: ``reference`` is everywhere at least as good)."""
    if front.empty:
        return 1.0
    if reference.empty:
        return math.inf
    v = reference.points["tokens_per_s"].to_numpy()
    c = reference.points["usd_per_mtok"].to_numpy()
    worst = 1.0
    for speed, cost in zip(
        front.points["tokens_per_s"].to_numpy(), front.points["usd_per_mtok"].to_numpy()
    ):
        needed = np.maximum(speed / v, c / cost).min()
        worst = max(worst, float(needed))
    return worst
