"""Fitting the engine clock's physics forms (``kernel_physics``) to the measured kernel tables:
one op class and variant at a time, over the parts that have its table.

Robust least squares (scipy's soft-L1 loss) on the log of modelled over measured seconds, each
part's rows thinned to the same count so that every part weighs alike, every parameter fitted
as its log (so each stays above 0). benchmarks/fit_kernel_prices.py writes the result to
kernels/engine_clock.yaml; pricing reads that file and never fits.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ..specs.hardware import load_hardware
from ..specs.kernel_tables import KERNEL_FOLDERS
from .kernel_physics import FORMS, Sheet, physics_s
from .kernel_prices import Rows, table_rows, table_variants

#: Rows of one part a fit reads at most (spread evenly over its table).
ROWS_PER_PART = 3000
#: Where the loss turns from squares to absolute values (log of the ratio).
F_SCALE = 0.05
#: The routing the MoE form is fitted to.
FIT_DISTRIBUTION = "balanced"
#: Significant digits the fitted parameters are kept to.
DIGITS = 4
#: The parts the fits are made over (kernels/engine_clock.yaml's ``parts``): Hopper and the
#: first Blackwell. B300 and GB300 (Blackwell Ultra) are priced from their own tables and left
#: out, so that their tables test the fitted forms on parts the fits never saw.
FIT_FOLDERS = ("h100_sxm", "h200_sxm", "b200_sxm", "gb200")


@cache
def sheet_of(folder: str) -> Sheet:
    """The datasheet of the catalogue part measured in kernels/``folder``."""
    name = next(n for n, f in KERNEL_FOLDERS.items() if f == folder)
    return Sheet.of(load_hardware(name))


def thinned(rows: Rows, count: int = ROWS_PER_PART) -> Rows:
    """At most ``count`` of ``rows``, spread evenly through them."""
    if len(rows) <= count:
        return rows
    return rows.take(np.unique(np.linspace(0, len(rows) - 1, count).round().astype(int)))


def samples(op: str, variant: str, folders=None) -> list[tuple[Sheet, Rows]]:
    """(datasheet, thinned rows) of every part in ``folders`` (``FIT_FOLDERS`` by default)
    measuring it."""
    chosen = FIT_FOLDERS if folders is None else folders
    return [
        (sheet_of(f), thinned(table_rows(f, op, variant, FIT_DISTRIBUTION)))
        for f in chosen
        if variant in table_variants(f, op)
    ]


def fit(op: str, variant: str, data: list[tuple[Sheet, Rows]]) -> dict[str, float]:
    """The parameters of ``op``'s form at ``variant`` fitted to ``data``, rounded."""
    from scipy.optimize import least_squares

    names = list(FORMS[op].start)
    start = np.log([FORMS[op].start[n] for n in names])
    logs = [np.log(rows.seconds) for _, rows in data]

    def residuals(x: np.ndarray) -> np.ndarray:
        p = dict(zip(names, np.exp(x)))
        parts = [
            np.log(physics_s(op, variant, sheet, rows.shape, p)) - measured
            for (sheet, rows), measured in zip(data, logs)
        ]
        return np.concatenate(parts)

    bounds = (np.full(len(names), np.log(1e-4)), np.full(len(names), np.log(1e5)))
    result = least_squares(residuals, start, loss="soft_l1", f_scale=F_SCALE, bounds=bounds)
    return {n: float(f"{v:.{DIGITS}g}") for n, v in zip(names, np.exp(result.x))}


def fit_all(op: str, variant: str, exclude: str | None = None) -> dict[str, float] | None:
    """``fit`` over every part of ``FIT_FOLDERS`` measuring ``op`` at ``variant`` but
    ``exclude``; None where none is left."""
    folders = [f for f in FIT_FOLDERS if f != exclude]
    data = samples(op, variant, folders)
    return fit(op, variant, data) if data else None
