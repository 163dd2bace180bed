"""Layout rankings: published measurements of several layouts of one model on one GPU, and
whether the model orders them as measured (docs/validation.md "Layout rankings").

A rankings file is a measured CSV (``reading.load_measured``'s columns) with a ``group``
column: the rows of one group share model, GPU, engine, lengths and load and differ in their
layout. Each row's figure is compared per GPU (throughputs) or as it is (latencies), so
layouts of different GPU counts rank by what a GPU of each delivers.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ..model.assumptions import Assumptions
from .comparison import larger_is_better, predict_rows
from .metric_names import is_time, time_unit
from .reading import load_measured

#: Two figures of one group closer than this share are a tie: the largest difference between
#: TensorRT-LLM's performance overview's 1000/1000 and 1024/1024 figures of one layout (the
#: same benchmark with 2.4 % more tokens: Qwen3-235B-A22B on GB200, DEP4, 6,172 and 5,862 tok/s
#: per GPU, 5.3 %; the median of its 23 such pairs is 0.6 %), the spread of one configuration
#: measured twice.
TOLERANCE = 0.05


@dataclass(frozen=True)
class Ranked:
    """One row of a group: its layout as written, and the measured and predicted figures on
    one scale (per GPU for throughputs), ``better`` 1 where larger is better, else -1."""

    group: str
    layout: str
    measured: float
    predicted: float
    better: int


def ranked_rows(path, groups=None, assumptions: str | Assumptions = "achievable") -> list[Ranked]:
    """Every row of the rankings file ``path`` (of ``groups`` only, where given) with its
    prediction under ``assumptions``."""
    with open(Path(path), newline="", encoding="utf-8") as f:
        cells = [(r["group"], r["parallelism"]) for r in csv.DictReader(f)]
    rows = load_measured(path)
    keep = [k for k, (name, _) in enumerate(cells) if groups is None or name in groups]
    chosen = [rows[k] for k in keep]
    predicted = predict_rows(chosen, assumptions)[0]
    out = []
    for k, row, value in zip(keep, chosen, predicted):
        quantity = row.metric.quantity
        scale = 1e-3 if is_time(quantity) and time_unit(row.unit) == "ms" else 1.0
        per = 1.0 if is_time(quantity) else float(row.gpus)
        out.append(
            Ranked(
                *cells[k],
                float(row.value) * scale / per,
                float(value) / per,
                1 if larger_is_better(quantity) else -1,
            )
        )
    return out


def misordered(rows: list[Ranked], tolerance: float = TOLERANCE) -> list[tuple[Ranked, Ranked]]:
    """Pairs of one group the measurements order (better by more than ``tolerance``) whose
    prediction orders the other way by more than ``tolerance``: (measured better, worse)."""
    out = []
    for a in rows:
        for b in rows:
            if a.group != b.group:
                continue
            measured = (a.measured / b.measured) ** a.better
            predicted = (a.predicted / b.predicted) ** a.better
            if measured > 1.0 + tolerance and predicted < 1.0 / (1.0 + tolerance):
                out.append((a, b))
    return out
