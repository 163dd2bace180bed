"""Intervals of the predictions of measured rows (compare-measured under an engine profile;
docs/model.md §F12), and the regime a row is in: the one rule by which the validation's
residuals are labelled and the shipped intervals are looked up."""

from __future__ import annotations

import numpy as np

from ..serving import intervals as iv

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


def add_intervals(table, rows):
    """The compare table with ``predicted_low80 ... predicted_high90`` (in the row's unit) on
    every end-to-end row with status ok whose quantity has a kind; blank elsewhere. Rows that
    share a configuration share one band lookup (a fleet log repeats a few configurations)."""
    names = iv.interval_columns("predicted")
    ends = {c: np.full(len(table), np.nan) for c in names}
    predicted = table["predicted"].to_numpy(dtype=float)
    ok = (table["status"] == "ok").to_numpy()
    found: dict[tuple, tuple[int, object]] = {}  # configuration -> (orientation, band)
    picked: dict[tuple, list[int]] = {}  # (orientation, band id) -> rows
    bands: dict[tuple, tuple[int, object]] = {}
    for i, r in enumerate(rows):
        q = r.metric.quantity if r.metric is not None else ""
        if r.kind != "end-to-end" or q not in iv.QUANTITIES or not ok[i]:
            continue
        if not np.isfinite(predicted[i]):
            continue
        kind, orientation = iv.QUANTITIES[q]
        L = r.lengths
        key = (
            id(r.arch), id(r.gpu), kind, orientation, r.gpus, r.bits[0], r.scenario,
            r.concurrency, L.input_mean, L.output_mean,
        )  # fmt: skip
        if key not in found:
            _, bound, _ = regime(r)
            band = iv.stratum_bands(r.arch, r.gpu, kind, [r.gpus], [bound])[0]
            found[key] = (orientation, band)
            bands[(orientation, id(band))] = found[key]
        orientation, band = found[key]
        picked.setdefault((orientation, id(band)), []).append(i)
    for ident, at in picked.items():
        orientation, band = bands[ident]
        index = np.asarray(at)
        limits = iv.limits(predicted[index], orientation, [band] * len(index))
        for column, k in zip(names, iv.interval_keys()):
            ends[column][index] = limits[k]
    out = table.copy()
    at = list(out.columns).index("predicted") + 1
    for k, (column, values) in enumerate(ends.items()):
        out.insert(at + k, column, values)
    return out
