"""The ``point`` and ``frontier`` commands' pandas-free paths against the general
pandas ones.

``api.point_fields`` (a dict, no pandas) must hold what ``api.point`` (a Series) holds, and the
text, CSV and JSON written from the dict (``output.render.row_text``, ``cli.stated.vertical``)
must be the bytes the DataFrame renderer writes; a frontier's columns
(``optimiser.frontier_columns``) must be ``Frontier.points`` and their text table the one the
DataFrame path writes; on the paper preset, an engine profile (with intervals), whole layouts,
MoE and speculation.
"""

from __future__ import annotations

import io
import json
import math
import re

import numpy as np
import pandas as pd
import pytest

import inference_econ as ie
from inference_econ import api
from inference_econ.cli.stated import vertical
from inference_econ.output.ranges import ranged
from inference_econ.output.render import render, row_text

CASES = [
    dict(model="Llama 3 70B", hardware="H100-paper", gpus=8, batch=64),
    dict(model="Llama 3 70B", hardware="H100", gpus=8, batch=64, assumptions="achievable"),
    dict(model="Mixtral 8x22B", hardware="H100", gpus=8, batch=64, weight_bits=8, discrete=True),
    dict(
        model="Llama 3 70B",
        hardware="H100-paper",
        gpus=8,
        batch=64,
        draft="Llama 3 8B",
        acceptance=0.8,
    ),
    dict(model="Llama 3 70B", hardware="H100-paper", gpus=1, batch=64),  # does not fit
]
META = {"model": "m", "hardware": "g", "context_tokens": 1000.0, "layouts": "continuous (§A5)"}


def _old_vertical(series, fmt, title, meta, notes):
    """The field/value table as it was written before the pandas-free path (a DataFrame of
    text through ``render``)."""
    from inference_econ.output.render import format_number, is_duration, milliseconds_name

    fields, values = [], []
    for key, value in series.items():
        if is_duration(key) and isinstance(value, (int, float)):
            key, value = milliseconds_name(key), value * 1e3
        fields.append(key)
        values.append(format_number(value))
    table = pd.DataFrame({"field": fields, "value": values})
    return render(table, fmt, title=title, notes=notes, meta=meta)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['model']}-{c['gpus']}")
def test_point_fields_and_their_output_are_the_pandas_path(case):
    case = dict(case)
    model, hardware = case.pop("model"), case.pop("hardware")
    fast = api.point_fields(model, hardware, **case)
    row = ie.point(model, hardware, **case)
    assert list(fast) == list(row.index)
    for key, value in fast.items():
        if isinstance(value, str):
            assert value == row[key], key
        else:
            assert np.array_equal(value, row[key], equal_nan=True), key
    if case.get("assumptions") == "achievable":  # an engine profile: intervals
        assert "tokens_per_s_low80" in fast
        assert fast["tokens_per_s_low80"] < fast["tokens_per_s"] < fast["tokens_per_s_high80"]
    notes = ["first note", "=formula-like note"]
    for fmt in ("csv", "json"):
        general = render(pd.DataFrame([row]), fmt, title="t", notes=notes, meta=META)
        assert row_text(fast, fmt, title="t", notes=notes, meta=META) == general
        assert vertical(fast, fmt, "t", META, notes) == general
    for fmt in ("table", "markdown"):
        old = _old_vertical(ranged(row), fmt, "t", META, notes)
        assert vertical(ranged(fast), fmt, "t", META, notes) == old
        assert vertical(ranged(row), fmt, "t", META, notes) == old


def test_row_text_writes_awkward_cells_as_pandas_does():
    """Missing and infinite numbers, whole floats, ints, bools and text a spreadsheet would run
    (a leading '=', '-', '@'), quotes and commas: the same CSV and JSON as the DataFrame path."""
    row = {
        "a_s": 0.1 + 0.2,
        "b": math.nan,
        "c": math.inf,
        "d": 8.0,
        "e": np.int64(3),
        "f": True,
        "g": "=1+1",
        "h": "-2.5",
        "i": 'say "hi", then go',
        "j": None,
        "k": np.float64(-1e-300),
        "l": 123456789012345.0,
    }
    for fmt in ("csv", "json"):
        assert row_text(row, fmt, "t", ["n"], META) == render(
            pd.DataFrame([row]), fmt, title="t", notes=["n"], meta=META
        )
    cells = row_text(row, "csv").splitlines()[1]
    assert cells == '0.3,,,8,3,True,\'=1+1,-2.5,"say ""hi"", then go",,-1e-300,1.23456789e+14'
    assert json.loads(row_text(row, "json"))["rows"][0]["c"] is None
    hashed = {**row, "m": "chat#2"}  # a '#' quotes every cell, on both paths
    assert row_text(hashed, "csv") == render(pd.DataFrame([hashed]), "csv")
    assert pd.read_csv(io.StringIO(row_text(hashed, "csv")), comment="#")["m"][0] == "chat#2"


def test_point_command_does_not_import_pandas(point_in_a_fresh_process):
    """``point`` prints its table without importing pandas (0.2 s of its 0.35 s goal; the
    text table of conftest.point_in_a_fresh_process, in a fresh interpreter)."""
    stdout, loaded = point_in_a_fresh_process["text"]
    assert "pandas" not in loaded, "pandas imported"
    assert re.search(r"^tokens_per_s +75.29$", stdout, re.M)


FRONTIER_CASES = [
    dict(model="Llama 3 70B", hardware="H100-paper", weight_bits=8),
    dict(model="Llama 3 70B", hardware="H100", assumptions="achievable"),
    dict(model="Llama 3 70B", hardware="H100-paper", draft="Llama 3 8B", acceptance=0.8),
    dict(model="Mixtral 8x22B", hardware="H100", weight_bits=8, discrete=True),
]


def _old_frontier_text(setting, front, rows, discrete):
    """The frontier command's text table as the DataFrame path writes it."""
    from inference_econ.cli.decode_commands import layout_notes
    from inference_econ.output.ranges import ranged_columns
    from inference_econ.serving.decode import DETAIL_COLUMNS, SUMMARY_COLUMNS
    from inference_econ.serving.intervals import interval_columns

    df = front.to_dataframe()
    if len(df) > rows:
        speeds = np.log(df["tokens_per_s"].to_numpy())
        targets = np.linspace(speeds.min(), speeds.max(), rows)
        df = df.iloc[np.unique([int(np.argmin(np.abs(speeds - t))) for t in targets])]
    notes = [*front.notes, *layout_notes(df, discrete)]
    shown = [c for c in (*DETAIL_COLUMNS, "ttft_s") if c in df]
    shown += [c for n in shown for c in interval_columns(n) if c in df]
    shown += ["support"] if "support" in df else []
    key_columns = SUMMARY_COLUMNS + [c for n in SUMMARY_COLUMNS for c in interval_columns(n)]
    key_columns = [c for c in [*key_columns, "support"] if c in df]
    keys = pd.DataFrame(
        [
            front.fastest()[key_columns].rename("fastest"),
            front.preference_point()[key_columns].rename("preference (speed^3/price)"),
            front.cheapest()[key_columns].rename("cheapest"),
        ]
    )
    keys.insert(0, "point", keys.index)
    head = render(
        ranged_columns(keys),
        "table",
        title=f"{setting.name}: {len(front)} frontier points, assumptions: "
        f"{setting.assumptions.label} ({front.elapsed_s:.2f} s)",
    )
    body = render(
        ranged_columns(df[shown]),
        "table",
        title=f"{len(df)} points, slowest first"
        + (" (every point)" if len(df) == len(front) else " (--rows to change)"),
        meta=front.metadata,
        notes=notes,
    )
    return head + "\n" + body


@pytest.mark.parametrize("case", FRONTIER_CASES, ids=lambda c: "-".join(map(str, c.values())))
def test_frontier_columns_and_text_are_the_pandas_path(case):
    from inference_econ.cli.decode_commands import _frontier_text, _thin, layout_notes
    from inference_econ.optimise.optimiser import frontier, frontier_columns

    case = dict(case)
    discrete = case.pop("discrete", False)
    setting = ie.make_setting(case.pop("model"), case.pop("hardware"), **case)
    method = ie.Method(grid_points=80, kind="discrete" if discrete else "grid")
    table = frontier_columns(setting, method)
    front = frontier(setting, method)
    assert len(table) == len(front) > 10
    pd.testing.assert_frame_equal(pd.DataFrame(table.columns), front.points, check_exact=True)
    with pytest.raises(ValueError):  # the cached columns cannot be changed by a caller
        table.columns["gpus"][0] = 1.0
    front.elapsed_s = table.elapsed_s  # the title's seconds: the same search
    for rows in (7, 10_000):
        columns = _thin(table.columns, rows)
        notes = [*table.notes, *layout_notes(columns, discrete)]
        assert _frontier_text(setting, table, columns, notes) == _old_frontier_text(
            setting, front, rows, discrete
        )
