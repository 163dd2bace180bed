"""The widening of the calibration-class rule's borrowed bands (``serving/support.py``,
docs/model.md §F12), fitted where the class table is written (``interval_coverage.py``'s
``class_mapping``).

A figure outside every class in support takes a borrowed band: the widest band of the nearest
in-support classes of its kind, its log-width multiplied by a multiplier for its distance (the
class dimensions it differs in), centred on the expected figure, or, where no class of its kind
is in support, the band of all its kind's residuals pooled, widened by a factor. How much wider
a borrowed band must be is measured on the calibration residuals themselves, never on the
figures whose coverage is measured after:

* **nearest**: each residual sized as the rule sizes a figure of its class and model: a thin
  class's by the table as it is, an in-support class's with that class left out (the band it
  would borrow without its own);
* **pooled**: each class with residuals left out in turn and its residuals sized by the band of
  the rest of its kind's pooled.

Each configuration weighs one, however many residuals it has (a concurrency sweep is one draw,
as the class rule counts it). Per kind and distance (1, 2, 3 or more), the multiplier kept is
the one of ``GRID`` (1 to 4: a borrowed band is never narrower than the band it borrows) whose
residuals so sized fall inside the 80 % and 90 % bands nearest those shares (least squares over
the two levels), at least the nearer distance's (widths grow with distance); where no residual
borrows a band, ``PRIOR`` per dimension.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Factors tried, 1 to 4 by 0.05.
GRID = np.round(np.arange(1.0, 4.0 + 1e-9, 0.05), 2)
#: Distances (class dimensions differing) fitted apart: 1, 2, and 3 or more (few residuals are
#: further from every class in support).
DISTANCES = 3
#: (low quantile field, high quantile field, nominal share) of each interval level.
LEVELS = (("q10", "q90", 0.80), ("q05", "q95", 0.90))
#: The factor of a kind none of whose residuals borrows a band (the stratum table's for a GPU or
#: model family outside its fit).
PRIOR = 1.5


def _hits(band, factors: np.ndarray, r: np.ndarray, w: np.ndarray, centred: bool) -> np.ndarray:
    """(factors, levels) weights ``w`` of the residuals ``r`` inside ``band`` widened by each
    factor as the rule widens it (``Band.widened``), then, where ``centred``, centred as the rule
    centres it (``Band.centred``)."""
    out = np.empty((len(factors), len(LEVELS)))
    for i, f in enumerate(factors):
        b = band.widened(float(f))
        b = b.centred() if centred else b
        for j, (lo, hi, _) in enumerate(LEVELS):
            out[i, j] = w @ ((r >= getattr(b, lo)) & (r <= getattr(b, hi)))
    return out


def _loss(hits: np.ndarray, n: float) -> np.ndarray:
    """Per factor of ``GRID``: the squared distance of its shares inside from nominal."""
    nominal = np.array([share for _, _, share in LEVELS])
    return ((hits / n - nominal[None, :]) ** 2).sum(axis=1)


def _best(hits: np.ndarray, n: float) -> float:
    """The factor of ``GRID`` whose shares inside (``hits`` / ``n``) are nearest nominal."""
    return float(GRID[int(np.argmin(_loss(hits, n)))]) if n else PRIOR


def configuration_weights(cal: pd.DataFrame) -> pd.Series:
    """Each residual's weight: one over its configuration's residuals of its kind, so that a
    configuration counts once (a concurrency sweep is one draw, as the class rule counts it)."""
    per = cal.groupby(["kind", "configuration"])["r"].transform("size")
    return 1.0 / per.astype(float)


def _nearest_hits(table, cal: pd.DataFrame, keys: list[str], centred: bool) -> dict:
    """kind -> {distance: (hits per multiplier and level, configurations)} of the residuals
    that borrow a band (``nearest_widening``), the band centred or kept where its class puts
    it; distances from ``DISTANCES`` on counted as that one."""
    from inference_econ.serving import support as sp

    cal = cal.assign(w=configuration_weights(cal))
    out: dict = {}
    for kind, part in cal.groupby("kind", sort=True):
        by = out.setdefault(str(kind), {})
        for key, g in part.groupby(keys, sort=True):
            key = tuple(key)
            others = {k: b for k, b in table.bands.items() if k != key}
            for model, m in g.groupby("model"):
                got = sp.nearest_bands(others, key, table._few_models(key, str(model)))
                if got is None:
                    continue
                d, band = min(got[0], DISTANCES), got[1]
                hits, n = by.get(d, (np.zeros((len(GRID), len(LEVELS))), 0.0))
                w = m.w.to_numpy()
                by[d] = (hits + _hits(band, GRID, m.r.to_numpy(), w, centred), n + w.sum())
    return out


def _multipliers(by_distance: dict) -> tuple[list[int], list[float]]:
    """(the index in ``GRID`` of each distance's multiplier, the multipliers for distances 1 to
    ``DISTANCES``): each distance's best, at least the nearer one's (widths grow with distance),
    a distance no residual reaches the nearer one's (1 at the first); no residual at any
    distance: ``PRIOR`` per dimension."""
    if not by_distance:
        return [], [PRIOR**d for d in range(1, DISTANCES + 1)]
    out: list[float] = []
    at: list[int] = []
    for d in range(1, DISTANCES + 1):
        hits, n = by_distance.get(d, (None, 0.0))
        best = int(np.argmin(_loss(hits, n))) if n else (at[-1] if at else 0)
        best = max(best, at[-1]) if at else best
        at.append(best)
        out.append(float(GRID[best]))
    return at, out


def nearest_widening(table, cal: pd.DataFrame, keys: list[str]) -> dict[str, list[float]]:
    """kind -> the multiplier of a borrowed band's width at each distance (1 to
    ``DISTANCES``) of the nearest-class rule (``cal``: residuals ``r`` with their class columns
    ``keys``, ``model`` and ``configuration``), on the figures that borrow a band: each thin
    class's, sized by ``table``, and each in-support class's, that class left out, its band
    centred as the rule centres it; each configuration weighing one."""
    fits = _nearest_hits(table, cal, keys, True)
    return {kind: _multipliers(by)[1] for kind, by in fits.items()}


def nearest_shares(table, cal: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per kind, the borrowed bands' shares inside at 80 and 90 % on the residuals
    ``nearest_widening`` fits on: centred at its multipliers (the rule), kept where their class
    puts them at their own, and centred at ``PRIOR`` per dimension."""
    rows = []
    fits = {c: _nearest_hits(table, cal, keys, c) for c in (True, False)}
    for kind, by in fits[True].items():
        n = sum(v[1] for v in by.values())
        if not n:
            continue
        row = {"kind": kind, "configurations": round(n)}
        for label, per in (("centred", by), ("kept", fits[False][kind])):
            at, mult = _multipliers(per)
            hits = sum(h[at[d - 1]] for d, (h, _) in per.items())
            row[f"{label}, by distance"] = " / ".join(f"{m:g}" for m in mult)
            row[f"{label} 80 / 90 %"] = f"{hits[0] / n:.1%} / {hits[1] / n:.1%}"
        prior = [int(np.argmin(np.abs(GRID - PRIOR**d))) for d in range(1, DISTANCES + 1)]
        hits = sum(h[prior[d - 1]] for d, (h, _) in by.items())
        row[f"centred at {PRIOR:g} per dimension"] = f"{hits[0] / n:.1%} / {hits[1] / n:.1%}"
        rows.append(row)
    return pd.DataFrame(rows)


def pooled_widening(cal: pd.DataFrame, keys: list[str], percentiles, min_rows: int) -> dict:
    """kind -> the factor of its pooled band, each class with residuals left out in turn and
    sized by the band (``percentiles``: the table's conformal quantiles) of the rest of its
    kind's residuals, where those are of at least ``min_rows`` configurations; each
    configuration weighing one."""
    from inference_econ.serving.interval_table import Band

    cal = cal.assign(w=configuration_weights(cal))
    out = {}
    for kind, part in cal.groupby("kind", sort=True):
        hits, n = np.zeros((len(GRID), len(LEVELS))), 0.0
        for _, g in part.groupby(keys, sort=True):
            rest = part.drop(g.index)
            if rest.configuration.nunique() < min_rows:
                continue
            q = (float(v) for v in percentiles(rest.r.to_numpy(), (5, 10), (90, 95)))
            w = g.w.to_numpy()
            hits += _hits(Band(*q, "rest", len(rest)), GRID, g.r.to_numpy(), w, centred=False)
            n += w.sum()
        out[str(kind)] = _best(hits, n)
    return out
