"""A study's output folder read back for the report, through the input boundary:
``study.json`` checked for the shape the report reads, the key-point and frontier tables
(Parquet or CSV) with every column it reads holding what the study wrote, and the tables and
the manifest describing the same cells. Anything else is one error naming the file, the
column and the row, never a traceback from deep inside the report.
"""

from __future__ import annotations

import io
import itertools
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import SpecError, short
from ..model.latency import ADDITIVE_PARTS
from ..specs.inputs import read_bytes, read_json, read_text
from ..specs.schema import Reader, check_number
from .report_hover import LAYOUT


def read_manifest(path: Path) -> dict:
    """A study's ``study.json`` through the input boundary, checked for the shape the report
    reads (``runs.study_run.manifest`` writes it): anything else is one error naming the
    file and the field, never a traceback from deep inside the report."""
    fix = "run 'inference-econ study FILE --out DIR' first"
    if not os.path.lexists(path):
        raise SpecError(str(path), "", "cannot read a study's output here (no study.json)", fix)
    data = read_json(path)
    where = str(path)
    top = Reader(data, where)
    for key in ("title", "source", "package_version"):
        top.string(key)
    top.string("description", "")
    axes = top.mapping("axes")
    if not axes:
        raise SpecError(where, "axes", "is empty", fix)
    for name, values in axes.items():
        if not isinstance(values, list) or not values:
            raise SpecError(
                where, f"axes.{name}", f"expected a list of values, got {short(values)}", fix
            )
    cells = top.raw("cells")
    if not isinstance(cells, list) or not cells:
        raise SpecError(where, "cells", f"expected a list of cells, got {short(cells)}", fix)
    for i, cell in enumerate(cells):
        item = Reader(cell, where, f"cells.{i}")
        item.number("cell", minimum=0, integer=True)
        item.string("label")
        values = item.mapping("values")
        missing = [a for a in axes if a not in values]
        if missing:
            raise SpecError(where, f"cells.{i}.values", f"has no value of axis {missing[0]!r}", fix)
    speeds = top.raw("at_speeds", [])
    if not isinstance(speeds, list):
        raise SpecError(where, "at_speeds", f"expected a list of speeds, got {short(speeds)}", fix)
    for i, speed in enumerate(speeds):
        check_number(speed, where, f"at_speeds.{i}", minimum=0, exclusive_minimum=True)
    top.boolean("complete", True)
    for key in ("assumptions", "hardware", "models"):
        for name, value in (top.mapping(key, {}) or {}).items():
            if not isinstance(value, Mapping):
                raise SpecError(
                    where, f"{key}.{name}", f"expected a mapping, got {short(value)}", fix
                )
    return data


#: The largest table of a study's folder read back (the tool's own output, larger than the
#: inputs a user gives: a frontier row per cell and point).
MAX_TABLE_BYTES = 2**31
#: Columns the report reads from a study's key-point table.
KEY_COLUMNS = (
    "cell", "point", "target_tokens_per_s", "feasible", "note",
    "tokens_per_s", "usd_per_mtok", "gpus", "batch",
)  # fmt: skip


def read_table(folder: Path, name: str) -> pd.DataFrame:
    """A table of a study's folder, through the input boundary: Parquet when pyarrow can read
    it (faster), else CSV; the key points must have the columns the report reads, and every
    column it reads must hold what the study wrote (``_check_key_points``,
    ``_check_frontiers``): a table the tool wrote is refused whole, never drawn in part. The
    frame's ``attrs["source"]`` is the file read and ``attrs["first_line"]`` the line of its
    first row (0: a Parquet file, whose rows are counted from 1)."""
    parquet = folder / f"{name}.parquet"
    df = None
    source, first = str(parquet), 0
    if os.path.isfile(parquet):
        try:
            df = pd.read_parquet(io.BytesIO(read_bytes(parquet, MAX_TABLE_BYTES)))
        except ImportError:
            pass
        except (ValueError, OSError) as exc:  # pyarrow's errors derive from these
            raise SpecError(
                str(parquet), "", f"cannot read the table ({exc})", "rerun the study"
            ) from None
    if df is None:
        path = folder / f"{name}.csv"
        if not os.path.lexists(path):
            raise SpecError(str(folder), name, "the table is missing", "rerun the study")
        text = read_text(path, MAX_TABLE_BYTES)
        source = str(path)
        if text and not text.endswith("\n"):  # the study ends every row with a line break
            raise SpecError(
                source,
                "",
                "ends in the middle of a row (the file is cut short)",
                "rerun the study",
            )
        # first, '#' lines: what the table was computed with
        skip = sum(1 for _ in itertools.takewhile(lambda x: x.startswith("#"), text.splitlines()))
        first = skip + 2  # the header's line, then the first row's
        try:
            df = pd.read_csv(
                io.StringIO(text), keep_default_na=False, na_values=[""], skiprows=skip
            )
        except (ValueError, pd.errors.ParserError) as exc:
            raise SpecError(
                str(path), "", f"cannot read the table ({exc})", "rerun the study"
            ) from None
    df.attrs.update(source=source, first_line=first)
    if name == "key_points":
        missing = [c for c in KEY_COLUMNS if c not in df.columns]
        if missing:
            raise SpecError(str(folder / name), missing[0], "column missing", "rerun the study")
        _check_key_points(df)
    elif len(df) and not {"cell", "tokens_per_s", "usd_per_mtok"} <= set(df.columns):
        raise SpecError(
            str(folder / name), "", "is not a study's frontier table", "rerun the study"
        )
    else:
        _check_frontiers(df)
    return df


#: Columns of a frontier table the report draws (a point's place): finite and positive.
FRONTIER_FIGURES = ("tokens_per_s", "usd_per_mtok")
#: Columns of a frontier table the report shows on hover, where a table has them: numbers, and
#: finite and not negative where given (a column only some cells have is empty in the others).
HOVER_COLUMNS = (
    *(c for c, _, _ in LAYOUT),
    "latency_s",
    "mfu",
    *ADDITIVE_PARTS,
)
#: Columns of 90 % intervals (expected figures), drawn as a band: finite and positive where given.
INTERVAL_COLUMNS = ("usd_per_mtok_low90", "usd_per_mtok_high90")
#: Figures of a key point the report shows, where the point is feasible: finite and positive.
KEY_FIGURES = ("tokens_per_s", "usd_per_mtok", "gpus", "batch")
#: How the ``feasible`` column of a key-point table may read (CSV text or Parquet booleans).
FEASIBLE = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _bad(df: pd.DataFrame, column: str, at, problem: str) -> SpecError:
    """The error of a study table's ``column``: ``problem`` of its row at position ``at``,
    named by its line in a CSV file (its row in a Parquet one)."""
    first = df.attrs.get("first_line", 0)
    row = f"line {first + at}" if first else f"row {at + 1}"
    return SpecError(
        df.attrs.get("source", "study table"), column, f"{row}: {problem}", "rerun the study"
    )


def _numbers(df: pd.DataFrame, column: str) -> np.ndarray:
    """``column`` as floats (empty cells NaN); a cell that is not a number (text, a boolean;
    in a Parquet file, any text: its columns are typed) is an error naming the file, the
    column and the row."""
    values = df[column]
    if pd.api.types.is_bool_dtype(values.dtype):
        raise _bad(df, column, 0, f"{short(values.iloc[0])} is not a number (a boolean column)")
    if pd.api.types.is_numeric_dtype(values.dtype):
        return values.to_numpy(dtype=float)
    given = values.notna().to_numpy()
    if not df.attrs.get("first_line", 0) and given.any():  # Parquet: its columns are typed
        at = int(np.flatnonzero(given)[0])
        raise _bad(df, column, at, f"{short(values.iloc[at])} is text, not a number")
    number = pd.to_numeric(values, errors="coerce")
    text = values.notna() & number.isna()
    if text.any():
        at = int(np.flatnonzero(text.to_numpy())[0])
        raise _bad(df, column, at, f"{short(values.iloc[at])} is not a number")
    flags = values.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
    if flags.any():
        at = int(np.flatnonzero(flags)[0])
        raise _bad(df, column, at, f"{short(values.iloc[at])} is not a number")
    return number.to_numpy(dtype=float)


def _check_figures(
    df: pd.DataFrame, column: str, rows=None, positive: bool = True, required: bool = True
) -> np.ndarray:
    """``column`` of ``df`` as numbers, each of ``rows`` (a mask; None: every row) finite and
    positive (``positive``; else not negative); an empty cell is refused when ``required``."""
    values = _numbers(df, column)
    mask = np.ones(len(values), bool) if rows is None else np.asarray(rows, bool)
    given = mask & ~np.isnan(values) if not required else mask
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(values) & ((values > 0) if positive else (values >= 0))
    wrong = given & ~ok
    if wrong.any():
        at = int(np.flatnonzero(wrong)[0])
        value = values[at]
        what = "empty" if np.isnan(value) else f"{short(float(value))}"
        need = "a finite number above 0" if positive else "a finite number of at least 0"
        raise _bad(df, column, at, f"is {what}, not {need}")
    return values


def _check_cell_column(df: pd.DataFrame) -> None:
    """The ``cell`` column: whole numbers of at least 0 in every row (the cell a row is of)."""
    cells = _check_figures(df, "cell", positive=False)
    whole = cells == np.round(cells)
    if not whole.all():
        at = int(np.flatnonzero(~whole)[0])
        raise _bad(df, "cell", at, f"{short(float(cells[at]))} is not a cell's index")
    df["cell"] = cells.astype(np.int64)


def _check_frontiers(df: pd.DataFrame) -> None:
    """A study's frontier table as the report draws it: every row of a cell, at a finite,
    positive speed and cost, with numbers in the columns shown on hover."""
    if not len(df):
        return
    _check_cell_column(df)
    for column in FRONTIER_FIGURES:
        df[column] = _check_figures(df, column)
    for column in INTERVAL_COLUMNS:
        if column in df:
            df[column] = _check_figures(df, column, required=False)
    for column in HOVER_COLUMNS:
        if column in df:
            df[column] = _check_figures(df, column, positive=False, required=False)


def _check_key_points(df: pd.DataFrame) -> None:
    """A study's key-point table as the report reads it: the cell of every row, whether the
    point is feasible (true or false), and a feasible point's finite, positive figures."""
    if not len(df):
        raise SpecError(df.attrs["source"], "", "has no rows", "rerun the study")
    _check_cell_column(df)
    feasible = df["feasible"]
    if not pd.api.types.is_bool_dtype(feasible.dtype):
        text = feasible.astype(str).str.strip().str.lower()
        known = text.isin(list(FEASIBLE))
        if not known.all():
            at = int(np.flatnonzero(~known.to_numpy())[0])
            raise _bad(df, "feasible", at, f"{short(feasible.iloc[at])} is not true or false")
        feasible = text.map(FEASIBLE)
    df["feasible"] = feasible.to_numpy(dtype=bool)
    for column in KEY_FIGURES:
        df[column] = _check_figures(df, column, rows=df["feasible"].to_numpy())
    at_speed = (df["point"] == "at_speed").to_numpy()
    df["target_tokens_per_s"] = _check_figures(df, "target_tokens_per_s", rows=at_speed)


def check_cells(manifest: dict, keys: pd.DataFrame, fronts: pd.DataFrame) -> None:
    """The tables and ``study.json`` describe the same cells: every row is of a cell of the
    manifest, every cell has its key points, and every cell with a feasible key point has
    its frontier's rows."""
    cells = [int(c["cell"]) for c in manifest["cells"]]
    known = set(cells)
    for df in (keys, fronts):
        if len(df):
            strays = ~df["cell"].isin(known).to_numpy()
            if strays.any():
                at = int(np.flatnonzero(strays)[0])
                raise _bad(
                    df, "cell", at, f"{int(df['cell'].iloc[at])} is not a cell of study.json"
                )
    with_keys = set(keys["cell"].tolist())
    missing = [c for c in cells if c not in with_keys]
    if missing:
        raise SpecError(
            keys.attrs["source"], "cell", f"has no row of cell {missing[0]}", "rerun the study"
        )
    drawn = set(fronts["cell"].tolist()) if len(fronts) else set()
    feasible = keys.loc[keys["feasible"], "cell"].tolist()
    missing = [c for c in dict.fromkeys(feasible) if c not in drawn]
    if missing:
        where = fronts.attrs.get("source", "frontiers")
        raise SpecError(
            where,
            "cell",
            f"has no row of cell {missing[0]}, whose key points are feasible",
            "rerun the study",
        )
