"""The load frontier (docs/model.md §E6): deployments that serve a load within the targets,
per-request speed against the all-in price per million output tokens, and their Pareto
frontier."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..columns import ALL_IN
from ..errors import InfeasibleError, plural
from ..load.arrivals import Traffic
from ..load.deployment import Deployment
from ..load.engine import BALANCING_NOT_RUN, DEFAULT_ENGINE, IDLE_COPIES, EngineConfig
from ..load.targets import Targets
from ..serving.derived_intervals import inverse_intervals
from ..serving.setting import Setting, requests_metadata
from .candidates import _instances_for, sizes_tried
from .capacity import _planned_rate
from .frontier import pareto_indices
from .load_search import (
    knee_of,
    run_at,
)


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
    # each GPU's metadata: its first run's, else (no deployment meets the targets) its own
    metas: dict = {s.gpu.name: requests_metadata(s) for s in settings}
    ran: set = set()
    for s in settings:
        for n in sizes_tried(s, sizes, max_gpus):
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
                    row["copies_idle"] = any(n.startswith(IDLE_COPIES) for n in r.notes)
                    row["balancing_not_run"] = any(n.startswith(BALANCING_NOT_RUN) for n in r.notes)
                    speed = inverse_intervals(row, "tpot_mean_s", "tokens_per_s")
                    rows.append({"tokens_per_s": 1.0 / r.tpot_s.mean, **speed, **row})
                    if s.gpu.name not in ran:
                        metas[s.gpu.name] = r.metadata()
                        ran.add(s.gpu.name)
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
    meta = _merged(metas)
    if max_gpus is not None:
        meta["max_gpus"] = int(max_gpus)
    idle = sorted(set(points.loc[points["copies_idle"], "layout"]))
    if idle:  # copies held where no expert group is split over GPUs (``idle_copies_notes``)
        meta["redundant_experts_balance_nothing_on"] = "; ".join(idle)
    unrun = sorted(set(points.loc[points["balancing_not_run"], "layout"]))
    if unrun:  # balancing given where a layout has no attention DP (``balancing_notes``)
        meta["adp_balance_not_run_on"] = "; ".join(unrun)
    if len(settings) > 1:
        meta["hardware"] = ", ".join(s.gpu.name for s in settings)
    if traffic.input_notes:  # the trace rows left out (unreadable): the load is the others'
        meta["trace_left_out"] = "; ".join(traffic.input_notes)
    return LoadFrontier(rate, targets, points, every, meta)


def _merged(metas: dict) -> dict:
    """One metadata of the GPUs': what they state alike as it is, what differs by GPU (its
    file, price, price date) as "GPU value" for each GPU that states it, in the order searched."""
    keys = dict.fromkeys(k for m in metas.values() for k in m)
    out = {}
    for key in keys:
        values = {gpu: m[key] for gpu, m in metas.items() if m.get(key) is not None}
        first = next(iter(values.values()), None)
        same = all(v == first for v in values.values())
        out[key] = first if same else "; ".join(f"{gpu} {v}" for gpu, v in values.items())
    return out
