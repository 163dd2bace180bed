"""Intervals of the predictions of measured rows (compare-measured under an engine profile;
docs/model.md §F12), the regime a row is in and its calibration class (``row_class``): the
rules by which the validation's residuals are labelled and the shipped intervals looked up."""

from __future__ import annotations

import numpy as np

from ..serving import intervals as iv
from ..serving import support as sp
from .row_harness import stated_exchange

#: The batch an engine forms on offline and served rows, requests per instance (about a
#: thousand requests per node, half of them decoding): the regime rule's assumption.
SERVED_BATCH = 512.0


def regime(row) -> tuple[str, str, str]:
    """(dense or MoE, memory- or compute-bound, one node or many) of a resolved measured row:
    the tokens of a step per instance against the GPU's ridge point (``iv.bound_on``)."""
    moe = row.arch.is_moe
    L = row.lengths
    if row.scenario == "single":
        tokens = L.input_mean
    elif row.scenario == "static":
        tokens = (row.concurrency or 1.0) * (L.input_mean + L.output_mean) / L.output_mean
    elif row.scenario == "closed_loop":
        tokens = (row.concurrency or 1.0) * (1.0 + L.input_mean / L.output_mean)
    else:  # offline and served rows: the engine's batch
        tokens = SERVED_BATCH * (1.0 + L.input_mean / L.output_mean)
    bound = str(iv.bound_on(row.gpu, row.bits[0], tokens))
    nodes = "one node" if row.gpus <= row.gpu.scale_up_domain_gpus else "many nodes"
    return ("MoE" if moe else "dense"), bound, nodes


def row_class(row, kind: str) -> sp.CalibrationClass:
    """The calibration class of a resolved measured row's figure of ``kind``: its layout
    class from the layout it states (a dense row stating none is tensor-parallel, the only
    layouts its replay tries; an MoE row stating none is ``unstated``: its replay tries
    every class), its GPU's generation, its engine's family and its scenario."""
    moe = row.arch.is_moe
    lay = row.layout
    if row.disaggregated or lay is not None:
        layout = sp.layout_class(
            moe,
            lay.pipeline if lay else 1,
            bool(lay and (lay.attention_dp or (lay.expert or 1) > 1)),
            row.disaggregated,
        )
    else:
        layout = "unstated" if moe else "TP"
    family = sp.engine_family(row.engine)
    return sp.CalibrationClass(
        kind,
        "MoE" if moe else "dense",
        layout,
        sp.generation(row.gpu.name),
        sp.engine_variant(family, row.two_batch_overlap, stated_exchange(row, family) == "deepep"),
        str(row.scenario),
        row.arch.name,
    )


def add_intervals(table, rows):
    """The compare table with ``predicted_low80 ... predicted_high90`` (in the row's unit) and
    the ``support`` of the class they are sized on on every end-to-end row with status ok whose
    quantity has a kind; blank elsewhere. Rows that share a configuration share one band lookup
    (a fleet log repeats a few configurations)."""
    names = iv.interval_columns("predicted")
    ends = {c: np.full(len(table), np.nan) for c in names}
    support = np.full(len(table), "", dtype=object)
    predicted = table["predicted"].to_numpy(dtype=float)
    ok = (table["status"] == "ok").to_numpy()
    found: dict[tuple, tuple[int, object]] = {}  # configuration -> (orientation, band)
    picked: dict[tuple, list[int]] = {}  # (orientation, band id) -> rows
    bands: dict[tuple, tuple[int, object]] = {}
    labels: dict[tuple, str] = {}  # configuration -> its class's support
    for i, r in enumerate(rows):
        q = r.metric.quantity if r.metric is not None else ""
        if r.kind != "end-to-end" or q not in iv.QUANTITIES or not ok[i]:
            continue
        if not np.isfinite(predicted[i]):
            continue
        kind, orientation = iv.QUANTITIES[q]
        key = (
            id(r.arch),
            id(r.gpu),
            kind,
            orientation,
            r.layout,
            r.disaggregated,
            r.engine,
            r.two_batch_overlap,
            r.expert_exchange,
            r.scenario,
        )
        if key not in found:
            cls = row_class(r, kind)
            band = sp.classes().band(cls)
            found[key] = (orientation, band)
            bands[(orientation, id(band))] = found[key]
            labels[key] = sp.classes().support(cls).label()
        orientation, band = found[key]
        support[i] = labels[key]
        picked.setdefault((orientation, id(band)), []).append(i)
    for ident, at in picked.items():
        orientation, band = bands[ident]
        index = np.asarray(at)
        limits = iv.limits(predicted[index], orientation, [band] * len(index))
        for column, k in zip(names, iv.interval_keys()):
            ends[column][index] = limits[k]
    out = table.copy(deep=False)  # the new columns are the copy's alone; the rest is shared
    at = list(out.columns).index("predicted") + 1
    for k, (column, values) in enumerate([*ends.items(), ("support", support)]):
        out.insert(at + k, column, values)
    return out
