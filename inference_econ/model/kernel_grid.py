"""A measured kernel's seconds over a grid of sizes, interpolated in log space and never
cheaper for more work.

The grid is the table's own values of each size axis (tokens, batch, positions, bytes...).
A cell the table lacks is filled from its nearest measured cell, scaled by the op's physics
form between the two shapes. Along the axes where more work is never cheaper (tokens, batch,
positions, bytes) the seconds are then fitted non-decreasing (weighted isotonic least squares
in log space, filled cells weighing little), so a measured point prices exactly its measured
time unless a neighbour along such an axis measured faster; the wobble of a flat, launch-bound
stretch is averaged there. Between grid values the log of the seconds is multilinear in the
log of the sizes; below the grid it is the smallest value's (the measured floor); above, it
grows with the elasticity of the last two grid values, between 0 and the axis's ceiling:
linearly in the size up to an elasticity of 1 (linear in FLOP or bytes at most, every axis's
ceiling but one whose work grows faster), as a power of the size above it (a causal prompt's
attention, whose work grows with the square of its tokens: a ceiling of 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: The weight of a filled cell against a measured one where a fall is smoothed away.
FILLED_WEIGHT = 1e-3
#: Seconds of the op's physics form at sizes (rows, axes): scales a cell filled from another.
Physics = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class LogGrid:
    """The log seconds ``values`` (one dimension an axis) over the log sizes ``axes``."""

    axes: tuple[np.ndarray, ...]
    values: np.ndarray
    rising: tuple[int, ...] = ()
    #: The largest elasticity each axis is extrapolated with above its grid (empty: 1 each).
    ceilings: tuple[float, ...] = ()

    @classmethod
    def build(
        cls, sizes: np.ndarray, seconds: np.ndarray, physics: Physics | None,
        monotone: tuple[bool, ...] | None = None, ceilings: tuple[float, ...] = (),
    ) -> LogGrid:  # fmt: skip
        """The grid of measured ``seconds`` at ``sizes`` (rows, axes); ``physics`` scales the
        cells a row does not give (the fastest of repeated rows is kept); along each axis
        ``monotone`` marks (every one by default) the seconds never fall; ``ceilings``: the
        largest elasticity of each axis above the grid (1 each where empty)."""
        sizes = np.asarray(sizes, dtype=float).reshape(len(seconds), -1)
        axes, index = [], []
        for column in sizes.T:
            values, where = np.unique(column, return_inverse=True)
            axes.append(values)
            index.append(where)
        cells = np.full([len(a) for a in axes], np.inf)
        np.minimum.at(cells, tuple(index), np.log(seconds))
        missing = ~np.isfinite(cells)
        if missing.any():
            _fill(cells, missing, axes, physics)
        weights = np.where(missing, FILLED_WEIGHT, 1.0)
        rising = [a for a in range(cells.ndim) if monotone is None or monotone[a]]
        for axis in rising:
            cells = _isotonic(cells, weights, axis)
        axes_log = tuple(np.log(a) for a in axes)
        return cls(axes_log, _rising(cells, rising), tuple(rising), tuple(ceilings))

    def rescaled(self, factor: Physics) -> LogGrid:
        """This grid with each cell's seconds times ``factor`` at its sizes (rows, axes),
        kept non-decreasing along the same axes."""
        mesh = np.meshgrid(*(np.exp(a) for a in self.axes), indexing="ij")
        cells = np.stack([m.reshape(-1) for m in mesh], axis=1)
        values = self.values + np.log(factor(cells)).reshape(self.values.shape)
        return LogGrid(self.axes, _rising(values, self.rising), self.rising, self.ceilings)

    def __call__(self, sizes: np.ndarray) -> np.ndarray:
        """Seconds at ``sizes`` (rows, axes), every size above 0."""
        logs = np.log(np.asarray(sizes, dtype=float).reshape(-1, len(self.axes)))
        inside = np.stack(
            [np.clip(logs[:, a], ax[0], ax[-1]) for a, ax in enumerate(self.axes)], axis=1
        )
        base = self._multilinear(inside)
        growth = np.ones(len(logs))
        for a, ax in enumerate(self.axes):
            above = logs[:, a] > ax[-1]
            if not above.any() or len(ax) < 2:
                continue
            last, before = inside[above].copy(), inside[above].copy()
            before[:, a] = ax[-2]
            last[:, a] = ax[-1]
            slope = (self._multilinear(last) - self._multilinear(before)) / (ax[-1] - ax[-2])
            ratio = np.exp(logs[above, a] - ax[-1])
            elasticity = np.clip(slope, 0.0, self.ceilings[a] if self.ceilings else 1.0)
            # up to 1 the tangent in the size; above it (work growing faster than the size)
            # the tangent in log space, which a power of the size follows
            linear = 1.0 + elasticity * (ratio - 1.0)
            growth[above] *= np.where(elasticity > 1.0, ratio**elasticity, linear)
        return np.exp(base) * growth

    def _multilinear(self, logs: np.ndarray) -> np.ndarray:
        """Log seconds at log sizes inside the grid, multilinear between its values. Each
        axis's two sides (weights and indices) are computed once for every corner; a corner's
        weight is their product in axis order (the first factor alone: 1 · x is x)."""
        n = len(logs)
        sides = []
        for a, ax in enumerate(self.axes):
            if len(ax) == 1:
                low, frac = np.zeros(n, dtype=int), np.zeros(n)
            else:
                low = np.clip(np.searchsorted(ax, logs[:, a], side="right") - 1, 0, len(ax) - 2)
                frac = (logs[:, a] - ax[low]) / (ax[low + 1] - ax[low])
            top = len(ax) - 1
            sides.append(((1.0 - frac, np.minimum(low, top)), (frac, np.minimum(low + 1, top))))
        out = np.zeros(n)
        for corner in range(1 << len(self.axes)):
            weight, index = None, []
            for a, side in enumerate(sides):
                factor, at = side[(corner >> a) & 1]
                weight = factor if weight is None else weight * factor
                index.append(at)
            out += (np.ones(n) if weight is None else weight) * self.values[tuple(index)]
        return out


def _rising(cells: np.ndarray, axes: list[int] | tuple[int, ...]) -> np.ndarray:
    """``cells`` raised where needed so that they never fall along ``axes``."""
    for axis in axes:
        cells = np.maximum.accumulate(cells, axis=axis)
    return cells


def _isotonic(cells: np.ndarray, weights: np.ndarray, axis: int) -> np.ndarray:
    """``cells`` fitted non-decreasing along ``axis`` by weighted least squares (pool adjacent
    violators), line by line; lines already non-decreasing are kept as they are."""
    values = np.moveaxis(cells, axis, -1).copy()
    lines = values.reshape(-1, values.shape[-1])
    line_weights = np.moveaxis(weights, axis, -1).reshape(lines.shape)
    for i in np.flatnonzero((np.diff(lines, axis=1) < 0).any(axis=1)):
        lines[i] = _pava(lines[i], line_weights[i])
    return np.moveaxis(lines.reshape(values.shape), -1, axis)


def _pava(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The non-decreasing sequence nearest ``y`` in ``w``-weighted squares."""
    means: list[float] = []
    totals: list[float] = []
    counts: list[int] = []
    for value, weight in zip(y.tolist(), w.tolist()):
        means.append(value)
        totals.append(weight)
        counts.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            m, t, c = means.pop(), totals.pop(), counts.pop()
            means[-1] = (means[-1] * totals[-1] + m * t) / (totals[-1] + t)
            totals[-1] += t
            counts[-1] += c
    return np.repeat(means, counts)


def _fill(cells: np.ndarray, missing: np.ndarray, axes: list, physics: Physics | None) -> None:
    """Fill the ``missing`` cells in place from their nearest measured cell (in grid steps),
    scaled by ``physics`` between the two shapes."""
    have = np.argwhere(~missing)
    want = np.argwhere(missing)
    source = have[_nearest(want, have, cells.shape)]
    values = cells[tuple(source.T)]
    if physics is not None:
        at = np.stack([axes[a][want[:, a]] for a in range(len(axes))], axis=1)
        src = np.stack([axes[a][source[:, a]] for a in range(len(axes))], axis=1)
        values = values + np.log(physics(at)) - np.log(physics(src))
    cells[tuple(want.T)] = values


#: Missing cells whose distances to every measured cell are taken at once (``_nearest``).
_NEAREST_ROWS = 16


def _nearest(want: np.ndarray, have: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """For each cell of ``want`` (grid indices, rows), the row of ``have`` nearest it in grid
    steps, the first on a tie: whole distances, in 16-bit integers where none can overflow
    them, a few cells at a time (the memory traffic of one cell against every measured one)."""
    wide = sum(shape) >= 1 << 14
    kind = np.int64 if wide else np.int16
    columns = [np.ascontiguousarray(have[:, a], dtype=kind) for a in range(have.shape[1])]
    cells = want.astype(kind)
    out = np.empty(len(want), dtype=np.intp)
    for start in range(0, len(want), _NEAREST_ROWS):
        chunk = cells[start : start + _NEAREST_ROWS]
        distance = np.abs(chunk[:, 0, None] - columns[0])
        for a in range(1, len(columns)):
            distance += np.abs(chunk[:, a, None] - columns[a])
        out[start : start + _NEAREST_ROWS] = distance.argmin(axis=1)
    return out
