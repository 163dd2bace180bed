"""The widening factors of the calibration-class rule (``serving/support.py``, docs/model.md
§F12), fitted where the class table is written (``interval_coverage.py``'s ``class_mapping``).

A figure outside every class in support takes a borrowed band: the widest band of the nearest
in-support classes of its kind, its log-width multiplied by a factor for each dimension away,
or, where no class of its kind is in support, the band of all its kind's residuals pooled,
widened once. How much wider a borrowed band must be is measured on the calibration residuals
themselves, never on the figures whose coverage is measured after:

* **nearest**: each in-support class is left out in turn and each of its residuals sized as a
  figure of its model would be without it (the widest of the nearest other classes, ``d``
  dimensions away, its width times ``f ** d``, centred on the expected figure);
* **pooled**: each class with residuals is left out in turn and its residuals sized by the band
  of the rest of its kind's pooled, times ``f``.

Per kind, the factor kept is the one of ``GRID`` (1 to 4: a borrowed band is never narrower than
the band it borrows) whose left-out residuals fall inside the 80 % and 90 % bands nearest those
shares (least squares over the two levels); where no class can be left out, ``PRIOR``, the
factor the rule used before it was fitted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Factors tried, 1 to 4 by 0.05.
GRID = np.round(np.arange(1.0, 4.0 + 1e-9, 0.05), 2)
#: (low quantile field, high quantile field, nominal share) of each interval level.
LEVELS = (("q10", "q90", 0.80), ("q05", "q95", 0.90))
#: The factor of a kind no class of which can be left out: the rule's before it was fitted (the
#: stratum table's for a GPU or model family outside its fit).
PRIOR = 1.5


def _hits(band, factors: np.ndarray, r: np.ndarray, centred: bool = False) -> np.ndarray:
    """(factors, levels) counts of the residuals ``r`` inside ``band`` widened by each factor
    about the middle of its 90 % interval (``Band.widened``), then, where ``centred``, moved so
    that its 80 % interval's middle is 0 (``Band.centred``)."""
    mid = (band.q05 + band.q95) / 2.0
    ends = {q: mid + factors * (getattr(band, q) - mid) for q in ("q05", "q10", "q90", "q95")}
    shift = (ends["q10"] + ends["q90"]) / 2.0 if centred else np.zeros_like(factors)
    out = np.empty((len(factors), len(LEVELS)))
    for j, (lo, hi, _) in enumerate(LEVELS):
        low, high = ends[lo] - shift, ends[hi] - shift
        out[:, j] = ((r[None, :] >= low[:, None]) & (r[None, :] <= high[:, None])).sum(axis=1)
    return out


def _loss(hits: np.ndarray, n: int) -> np.ndarray:
    """Per factor of ``GRID``: the squared distance of its shares inside from nominal."""
    nominal = np.array([share for _, _, share in LEVELS])
    return ((hits / n - nominal[None, :]) ** 2).sum(axis=1)


def _best(hits: np.ndarray, n: int) -> float:
    """The factor of ``GRID`` whose shares inside (``hits`` / ``n``) are nearest nominal."""
    return float(GRID[int(np.argmin(_loss(hits, n)))]) if n else PRIOR


def nearest_widening(table, cal: pd.DataFrame, keys: list[str]) -> dict[str, float]:
    """kind -> the factor per dimension of the nearest-class rule, each in-support class of
    ``table`` left out in turn (``cal``: residuals ``r`` with their class columns ``keys`` and
    ``model``), the borrowed band centred as the rule centres it."""
    from inference_econ.serving import support as sp

    by_class = {tuple(k): g for k, g in cal.groupby(keys, sort=True)}
    out = {}
    for kind in sorted({k[0] for k in table.counts}):
        hits, n = np.zeros((len(GRID), len(LEVELS))), 0
        for key in [k for k in table.bands if k[0] == kind]:
            others = {k: b for k, b in table.bands.items() if k != key}
            for model, g in by_class[key].groupby("model"):
                got = sp.nearest_bands(others, key, table._few_models(key, str(model)))
                if got is None:
                    continue
                d, band = got
                r = g.r.to_numpy()
                hits += _hits(band, GRID**d, r, centred=True)
                n += len(r)
        out[kind] = _best(hits, n)
    return out


def pooled_widening(cal: pd.DataFrame, keys: list[str], percentiles, min_rows: int) -> dict:
    """kind -> the factor of its pooled band, each class with residuals left out in turn and
    sized by the band (``percentiles``: the table's conformal quantiles) of the rest of its
    kind's residuals, where those are at least ``min_rows``."""
    from inference_econ.serving.interval_table import Band

    out = {}
    for kind, part in cal.groupby("kind", sort=True):
        hits, n = np.zeros((len(GRID), len(LEVELS))), 0
        for _, g in part.groupby(keys, sort=True):
            rest = part.r.drop(g.index).to_numpy()
            if len(rest) < min_rows:
                continue
            q05, q10, q90, q95 = (float(v) for v in percentiles(rest, (5, 10), (90, 95)))
            r = g.r.to_numpy()
            hits += _hits(Band(q05, q10, q90, q95, "rest", len(rest)), GRID, r)
            n += len(r)
        out[kind] = _best(hits, n)
    return out
