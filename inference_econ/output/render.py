"""Rendering results as text tables, CSV, JSON or Markdown, each stating what it was computed
with (the ``meta`` of a result: model and GPU files, assumptions, precisions, context).

CSV files carry that statement, and the notes a table has, as ``#`` comment lines before the
header, so ``pandas.read_csv(path, comment="#")`` reads them; JSON puts it in a ``metadata``
object beside the ``rows`` (and the notes in ``notes``); text and Markdown tables end with
their notes and a "Computed with" line. A result of several tables (a fleet's GPUs and
candidates beside its models) gives JSON a list of row objects under each table's name, and CSV
a ``# Tables: NAME ROWS, ...`` line after the notes and a ``# Table NAME: title`` section of
``#`` lines for each (``csv_tables`` reads them back).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from ..columns import HEADERS as PRICE_HEADERS
from ..errors import one_line, plural
from ..settings import option

if TYPE_CHECKING:  # imported where a DataFrame is rendered: a point's output needs none
    import pandas as pd

#: Friendlier headers for the text and Markdown tables.
HEADERS = {
    "tokens_per_s": "tok/s",
    **PRICE_HEADERS,  # the cost vocabulary's (inference_econ/columns.py)
    "gpus": "GPUs",
    "batch": "batch",
    "paper_tokens_per_s": "paper tok/s",
    "paper_usd_per_mtok": "paper $/Mtok",
    "paper_gpus": "paper GPUs",
    "paper_batch": "paper batch",
    "pipeline_degree": "PP",
    "tensor_degree": "TP",
    "attention_degree": "attn TP",
    "expert_degree": "EP",
    "prefill_pipeline_degree": "prefill PP",
    "prefill_tensor_degree": "prefill TP",
    "prefill_attention_degree": "prefill attn TP",
    "prefill_expert_degree": "prefill EP",
    "tp_dims": "TP dims",
    "draft_tokens": "draft",
    "latency_s": "latency_ms",
    "mfu": "MFU",
    "joules_per_output_token": "J/tok",
    "output_tokens_per_s_per_kw_it": "tok/s/kW IT",
    "output_tokens_per_s_per_mw_facility": "tok/s/MW facility",
}


def is_na(value) -> bool:
    """Is ``value`` pandas' missing value (never, while pandas is not imported)?"""
    pandas = sys.modules.get("pandas")
    return pandas is not None and value is pandas.NA


#: From here on a number prints in scientific notation (3.3e+15) in every table: its digits
#: past the fourth say nothing, and a typo such as 1e308 would otherwise print 309 of them.
HUGE = 1e15


def _fmt_number(value) -> str:
    if value is None or is_na(value):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        if abs(int(value)) < HUGE:
            return str(int(value))
        value = float(value) if abs(int(value)) < 1e308 else math.inf
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if not math.isfinite(v):  # a value that does not exist (docs/errors.md)
            return ""
        if abs(v) >= HUGE:  # 1e+308 (a measured file's typo), never 309 digits with commas
            return f"{v:.4g}"
        # the magnitude after rounding to three digits picks the decimals, so 0.9998 prints
        # as 1.00 like 1.0 does (not 1.000), and 99.996 as 100.0
        a = abs(float(f"{v:.3g}"))
        if a == 0:
            return "0"
        if a >= 1000:
            return f"{v:,.0f}"
        if a >= 100:
            return f"{v:.1f}"
        if a >= 1:
            return f"{v:.2f}"
        if a >= 0.01:
            return f"{v:.3f}"
        return f"{v:.3g}"
    return str(value)


def _whole(value) -> str:
    """A number of a whole-valued column: 32, 6,346 (never 32.00)."""
    if isinstance(value, (bool, np.bool_)) or value is None:
        return _fmt_number(value)
    v = float(value)
    if not math.isfinite(v):
        return _fmt_number(value)
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.0f}"


def whole_columns(df: pd.DataFrame) -> list[bool]:
    """Per column: is it a float column whose every finite value is a whole number (GPUs and
    batches of discrete layouts, counts)? Text and Markdown tables print those without
    decimals, and other columns with the decimals their magnitude calls for."""
    import pandas as pd

    out = []
    for i in range(df.shape[1]):
        values = df.iloc[:, i]
        finite = values.to_numpy(dtype=float) if pd.api.types.is_float_dtype(values) else None
        if finite is not None:
            finite = finite[np.isfinite(finite)]
        out.append(
            finite is not None
            and finite.size > 0
            and bool(np.all(finite == np.round(finite)) and np.all(np.abs(finite) < 1e15))
        )
    return out


#: A full stop that ends a sentence: before a capital, not after "et al", "e.g", "i.e", "vs".
_SENTENCE_END = re.compile(r"(?<!\bal)(?<!e\.g)(?<!i\.e)(?<!\bvs)(?<!\bcf)\.\s+(?=[A-Z(\[])")


def first_sentence(text: str, limit: int = 100) -> str:
    """The first sentence of a description, cut to ``limit`` characters with an ellipsis
    (``list`` tables show this; its CSV and JSON keep the whole text)."""
    text = " ".join(str(text).split())
    end = _SENTENCE_END.search(text)
    if end is not None:
        text = text[: end.start() + 1]
    if len(text) > limit:
        text = text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:(") + "…"
    return text


def is_duration(column: str) -> bool:
    """Columns in seconds (``latency_s``), as opposed to rates (``tokens_per_s``)."""
    return column.endswith("_s") and not column.endswith("per_s")


def _display(df: pd.DataFrame) -> pd.DataFrame:
    """Scale seconds to milliseconds for reading; keep everything else."""
    import pandas as pd

    out = df.copy()
    for col in out.columns:
        if is_duration(col) and pd.api.types.is_numeric_dtype(out[col]):
            out[col] = out[col] * 1e3
    rename = {c: HEADERS.get(c, milliseconds_name(c) if is_duration(c) else c) for c in out.columns}
    return out.rename(columns=rename)


def milliseconds_name(column: str) -> str:
    """The name of a duration column printed in milliseconds: ``ttft_s`` -> ``ttft_ms``."""
    return column[:-2] + "_ms"


def format_number(value) -> str:
    """One number for a field/value table: whole thousands with separators (32,000, never
    3.2e+04), four significant digits below 1000, and rates, bytes and parameter counts of a
    billion and more to four digits (3.3e+12)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        return _fmt_number(value)
    if isinstance(value, (int, np.integer)):
        return _fmt_number(value)
    v = float(value)
    if not math.isfinite(v):
        return _fmt_number(value)
    if abs(v) >= 1e9:
        return f"{v:.4g}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.4g}"


def _bits(value) -> str:
    return f"{float(value):g}-bit"


def describe_setting(meta: dict) -> str:
    """One sentence stating what a result was computed with."""
    m = dict(meta)
    parts = []
    if "study" in m:
        parts.append(f"study {m.pop('study')} ({m.pop('study_file', '')})".replace(" ()", ""))
    if "scenario" in m:
        parts.append(f"{m.pop('scenario')} ({m.pop('scenario_file', '')})".replace(" ()", ""))
    if "model" in m:
        parts.append(f"{m.pop('model')} ({m.pop('model_file', '')})".replace(" ()", ""))
    if "hardware" in m:  # "on H100-SXM" after a model; a GPU's own figures name it alone
        gpu = f"{m.pop('hardware')} ({m.pop('hardware_file', '')})".replace(" ()", "")
        parts.append(f"on {gpu}" if parts else gpu)
    if "engine_file" in m:
        parts.append(f"engine {m.pop('engine', '')} ({m.pop('engine_file')})")
    head = " ".join(parts)
    items = [f"axes {m.pop('axes')}"] if "axes" in m else []
    if "assumptions" in m:
        items.append(f"assumptions {m.pop('assumptions')}")
    if "weight_bits" in m:
        bits = [f"{_bits(m.pop('weight_bits'))} weights"]
        if "activation_bits" in m:
            bits.append(f"{_bits(m.pop('activation_bits'))} activations")
        if "kv_cache_bits" in m:
            bits.append(f"{_bits(m.pop('kv_cache_bits'))} KV cache")
        items.append(", ".join(bits))
    if "context_tokens" in m:
        context = m.pop("context_tokens")
        if isinstance(context, str):  # the requests' own contexts (serving.setting)
            items.append(f"context {context}")
        else:
            items.append(f"context {format_number(float(context))} tokens")
    if "max_gpus" in m:
        cap = m.pop("max_gpus")
        items.append(f"at most {format_number(cap)} {plural(cap, 'GPU')}")
    if "draft" in m:
        draft = f"draft {m.pop('draft')} ({m.pop('draft_file', '')})".replace(" ()", "")
        if "draft_weight_bits" in m:
            draft += f", {_bits(m.pop('draft_weight_bits'))} weights"
        if "acceptance" in m:
            accepted = m.pop("acceptance")  # a number, or a sweep's "each row's value"
            shown = f"{accepted:g}" if isinstance(accepted, (int, float)) else accepted
            draft += f", acceptance {shown}"
        if "max_draft_tokens" in m:
            n = m.pop("max_draft_tokens")
            draft += f", up to {n} draft {plural(n, 'token')}"
        items.append(draft)
    for key, value in m.items():
        items.append(f"{key} {format_number(value)}")
    return "; ".join([x for x in [head, *items] if x])


def meta_lines(meta: dict | None) -> list[str]:
    """Lines stating what a result was computed with: one for the whole result, one per
    curve of a scenario."""
    if not meta:
        return []
    rest = {k: v for k, v in meta.items() if k != "curves"}
    lines = [f"Computed with: {describe_setting(rest)}"] if rest else ["Computed with:"]
    for curve in meta.get("curves", ()):
        fields = {k: v for k, v in curve.items() if k != "label"}
        lines.append(f"  {curve.get('label', '')}: {describe_setting(fields)}")
    return lines


def _json_value(value):
    if is_na(value):
        return None
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    return value


def _json_meta(meta):
    if isinstance(meta, dict):
        return {k: _json_meta(v) for k, v in meta.items()}
    if isinstance(meta, (list, tuple)):
        return [_json_meta(v) for v in meta]
    return _json_value(meta)


#: Characters that make a spreadsheet read a cell as a formula (OWASP, "CSV Injection").
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: Text that is a plain number ("-1.5", "+3e8"): spreadsheets read it as the number it is;
#: and a lone "-" (``tp_dims`` where nothing is split), which holds no formula to run.
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|-")


def safe_cell(value):
    """A cell of a CSV as spreadsheets may open it: text that starts with a formula character
    (``=1+1``, ``@SUM(A1)``, ``-2+3``, a tab) gets a leading single quote, so it is shown as
    text and never run (OWASP's rule); numbers, and text that is a plain number, stay as they
    are, and so does a lone ``-`` (the same cell as the table, JSON and API give); a
    non-finite number is blank (a value that does not exist). A carriage return inside
    text becomes a line feed, which the writer quotes (a bare one would end the row for
    readers that take it as a line end)."""
    if isinstance(value, str):
        if value.startswith(FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
            value = "'" + value
        return value.replace("\r\n", "\n").replace("\r", "\n")
    if isinstance(value, (float, np.floating)) and not math.isfinite(float(value)):
        return None
    return value


def csv_cells(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` ready for a CSV file: headers and text cells through ``safe_cell``, infinities
    blank (NaN already is)."""
    import pandas as pd

    out = df.copy()
    out.columns = [safe_cell(str(c)) for c in df.columns]
    for i in range(out.shape[1]):
        column = out.iloc[:, i]
        if pd.api.types.is_float_dtype(column):
            values = column.to_numpy(dtype=float)
            if not np.isfinite(values[~np.isnan(values)]).all():
                out.isetitem(i, column.where(np.isfinite(values)))
        elif column.dtype == object or pd.api.types.is_string_dtype(column):
            out.isetitem(i, _safe_column(column))
    return out


def _safe_column(column: pd.Series) -> pd.Series:
    """``safe_cell`` of each cell of a text column, computed once a distinct value (a long
    table repeats its models, GPUs and sources row after row)."""
    import pandas as pd

    if pd.api.types.infer_dtype(column, skipna=True) not in ("string", "empty"):
        return column.map(safe_cell)  # numbers among the text: 1 and 1.0 are one key
    codes, uniques = pd.factorize(column, use_na_sentinel=False)
    safe = np.empty(len(uniques), dtype=object)
    safe[:] = [safe_cell(v) for v in np.asarray(uniques, dtype=object)]
    return pd.Series(safe[codes], index=column.index, name=column.name, dtype=object)


def csv_text(
    df: pd.DataFrame,
    meta: dict | None = None,
    float_format: str | None = "%.10g",
    notes=(),
    quoting: int | None = None,
) -> str:
    """The one CSV writer of the toolkit: '#' lines stating what the table was computed with,
    and its notes (what the text table prints under it), then the table with ``csv_cells`` (no
    formula can start a cell, no infinity is printed; ``_csv_block``'s quoting)."""
    lines = [*meta_lines(meta), *(str(n) for n in notes)]
    comments = "".join(f"# {one_line(line).strip()}\n" for line in lines if line.strip())
    return comments + _csv_block(csv_cells(df), float_format, quoting=quoting)


def _csv_block(
    cells: pd.DataFrame, float_format: str | None, header: bool = True, quoting: int | None = None
) -> str:
    """``csv_cells``' table as CSV text. A table with a column name or a text cell holding '#'
    quotes every cell (``quoting``: how, when decided for the whole table):
    ``pandas.read_csv(path, comment="#")`` (how the docs read a CSV) ends a line at an
    unquoted '#', which would cut a row naming a model 'chat#2' short (the rest of it
    blank)."""
    if quoting is None:
        quoting = csv.QUOTE_ALL if _holds_hash(cells) else csv.QUOTE_MINIMAL
    return cells.to_csv(index=False, header=header, float_format=float_format, quoting=quoting)


def _holds_hash(cells: pd.DataFrame) -> bool:
    """Whether a column name or a text cell of ``cells`` holds '#' (each distinct value looked
    at once)."""
    import pandas as pd

    if any("#" in str(name) for name in cells.columns):
        return True
    columns = (cells.iloc[:, i] for i in range(cells.shape[1]))
    return any(
        any(isinstance(v, str) and "#" in v for v in pd.unique(column))
        for column in columns
        if column.dtype == object or pd.api.types.is_string_dtype(column)
    )


def csv_text_chunks(
    df: pd.DataFrame,
    meta: dict | None = None,
    float_format: str | None = "%.10g",
    notes=(),
    rows: int = 50_000,
) -> Iterator[str]:
    """``csv_text`` ``rows`` rows at a time: the same text, without ever holding a large
    table's whole text (a 10,000-cell study's frontiers are 2.5 GB of CSV; a 100,000-row
    measured log's table, 50 MB, held with its copies as one text added 250 MB)."""
    quoting = csv.QUOTE_ALL if _holds_hash(df) else csv.QUOTE_MINIMAL  # one for every block
    yield csv_text(df.iloc[:rows], meta, float_format, notes, quoting)
    for start in range(rows, len(df), rows):
        block = csv_cells(df.iloc[start : start + rows])
        yield _csv_block(block, float_format, header=False, quoting=quoting)


def csv_chunks(
    df: pd.DataFrame,
    meta: dict | None = None,
    float_format: str | None = "%.10g",
    notes=(),
    rows: int = 50_000,
) -> Iterator[bytes]:
    """``csv_text_chunks`` as UTF-8: the same bytes as ``csv_text``, a block of rows at a
    time."""
    for text in csv_text_chunks(df, meta, float_format, notes, rows):
        yield text.encode("utf-8")


def table_cells(df: pd.DataFrame) -> tuple[list[str], list[list[str]], list[bool]]:
    """A table as people read it: (headers, the cells as text, which columns are numeric).
    Durations in milliseconds, friendly headers (``HEADERS``), whole-valued columns without
    decimals, other numbers with the decimals their magnitude calls for. The text and Markdown
    tables and the HTML report's tables are all made of these."""
    import pandas as pd

    shown = _display(df)
    whole = whole_columns(shown)
    cells = [
        [_whole(v) if w else _fmt_number(v) for v, w in zip(row, whole)]
        for row in shown.itertuples(index=False)
    ]
    numeric = [pd.api.types.is_numeric_dtype(shown[c]) for c in shown.columns]
    return [str(c) for c in shown.columns], cells, numeric


def render(
    df: pd.DataFrame,
    fmt: str = "table",
    title: str = "",
    notes=(),
    meta: dict | None = None,
    summary: dict | None = None,
    tables: dict | None = None,
) -> str:
    """Render a DataFrame as "table" (aligned text), "csv", "json" or "markdown", stating
    ``meta`` (what it was computed with) as the format allows; ``summary``: the answer a
    table's rows add up to (a fleet's totals), which JSON carries as ``summary`` and CSV as a
    comment line; ``tables``: {name: (title, DataFrame)} the result prints beside ``df`` (a
    fleet's GPUs and candidates), which JSON carries as lists of rows under their names and CSV
    as ``# Table`` sections (the text prints its own summary and tables)."""
    fmt = option("format").check(fmt, "argument", "format")  # SpecError with a did-you-mean
    summary = {} if summary is None else dict(summary)  # (a pandas Series too)
    tables = tables or {}
    if fmt == "csv":  # what it was computed with, the notes, then the other tables, as comments
        told = "; ".join(
            f"{k} {v:.10g}" if isinstance(v, float) else f"{k} {_json_value(v)}"
            for k, v in summary.items()
        )
        lines = [*notes, *([f"Summary: {told}"] if told else [])]
        if tables:
            lines.append(_MANIFEST + ", ".join(f"{n} {len(t)}" for n, (_, t) in tables.items()))
        for name, (caption, table) in tables.items():
            lines += _section_lines(name, caption, table)
        return csv_text(df, meta, notes=lines)
    if fmt == "json":
        payload = {"title": title, "metadata": _json_meta(meta or {}), "rows": _records(df)}
        if summary:
            payload["summary"] = {str(k): _json_value(v) for k, v in summary.items()}
        for name, (_, table) in tables.items():
            if name in payload or name == "notes":
                raise ValueError(f"a table named {name!r} would replace the JSON's own {name!r}")
            payload[name] = _records(table)
        if notes:
            payload["notes"] = list(notes)
        return json.dumps(payload, indent=2) + "\n"
    return render_cells(*table_cells(df), fmt, title, notes, meta)


def _records(df: pd.DataFrame) -> list[dict]:
    """A table's rows as JSON objects (missing and non-finite values null)."""
    return [{k: _json_value(v) for k, v in row.items()} for row in df.to_dict(orient="records")]


#: The line that lists a CSV's further tables, after its notes: ``# Tables: NAME ROWS, ...``.
_MANIFEST = "Tables: "
#: The line that opens a further table of a CSV: ``# Table NAME: title``.
_SECTION = "Table {}:"


def _section_lines(name: str, title: str, df: pd.DataFrame) -> list[str]:
    """A further table of a CSV as comment lines: ``Table NAME: title``, its header and rows
    (cells as ``csv_cells`` writes them, each on one line: a comment ends at a line break)."""
    if not re.fullmatch(r"\w+", name):
        raise ValueError(f"a further table's name must be a word, not {name!r}")
    cells = csv_cells(df)
    for i in range(cells.shape[1]):
        if cells.iloc[:, i].dtype == object:
            cells.isetitem(
                i, cells.iloc[:, i].map(lambda v: one_line(v) if isinstance(v, str) else v)
            )
    text = cells.to_csv(index=False, float_format="%.10g")
    return [f"{_SECTION.format(name)} {title}", *text.splitlines()]


def csv_tables(text: str) -> dict[str, pd.DataFrame]:
    """The further tables of a CSV ``render`` wrote, by name: the ``# Tables:`` line after
    its notes names each and counts its rows, and its ``# Table NAME:`` section follows with a
    header and that many rows, the last ending the comment lines (so a note or a cell that
    reads "Table X:" or "Tables:" opens nothing); ``pandas.read_csv(path, comment="#")``
    reads its main table."""
    comments = []
    for line in text.splitlines():
        if not line.startswith("# "):
            break
        comments.append(line[2:])
    for i in reversed(range(len(comments))):
        if comments[i].startswith(_MANIFEST):
            found = _sections(comments, i)
            if found is not None:
                return found
    return {}


def _sections(comments: list[str], listed: int) -> dict | None:
    """The sections the ``# Tables:`` line at ``listed`` names, where each is where it puts
    it and the last ends the comment lines; None otherwise (not the manifest)."""
    import pandas as pd

    at, found = listed + 1, {}
    for entry in comments[listed][len(_MANIFEST) :].split(", "):
        name, _, rows = entry.rpartition(" ")
        if not (name and rows.isdigit()) or at >= len(comments):
            return None
        if not comments[at].startswith(_SECTION.format(name)):
            return None
        found[name] = comments[at + 1 : at + 2 + int(rows)]
        at += 2 + int(rows)
    if at != len(comments):
        return None
    return {name: pd.read_csv(io.StringIO("\n".join(body))) for name, body in found.items()}


def column_cells(columns: dict) -> tuple[list[str], list[list[str]], list[bool]]:
    """``table_cells`` of a table given as {column: 1-D numpy array}, without pandas: the
    same headers and text (a numpy kind stands for the DataFrame's dtype: floats "f",
    numbers "biufc")."""
    headers, texts, numeric = [], [], []
    for name, values in columns.items():
        values = np.asarray(values)
        number = values.dtype.kind in "biufc"
        if is_duration(name) and number:
            values = values * 1e3
        headers.append(
            str(HEADERS.get(name, milliseconds_name(name) if is_duration(name) else name))
        )
        finite = values[np.isfinite(values)] if values.dtype.kind == "f" else None
        whole = (
            finite is not None
            and finite.size > 0
            and bool(np.all(finite == np.round(finite)) and np.all(np.abs(finite) < 1e15))
        )
        texts.append([_whole(v) if whole else _fmt_number(v) for v in values.tolist()])
        numeric.append(number)
    return headers, [list(row) for row in zip(*texts)], numeric


def render_columns(
    columns: dict, fmt: str = "table", title: str = "", notes=(), meta: dict | None = None
) -> str:
    """``render``'s text or Markdown table of {column: 1-D array}, without pandas."""
    return render_cells(*column_cells(columns), fmt, title, notes, meta)


#: The cells ``row_text`` writes without pandas; a row with any other goes through ``render``.
_PLAIN = (str, bool, np.bool_, int, np.integer, float, np.floating, type(None))


def row_text(row: dict, fmt: str, title: str = "", notes=(), meta: dict | None = None) -> str:
    """One row {column: value} as ``render(pd.DataFrame([row]), fmt, ...)`` writes it in
    CSV or JSON, without pandas when every value is text, a number or None (the
    ``point`` command's output); the same bytes (tests/test_fast_output.py compares them)."""
    if fmt not in ("csv", "json") or not all(isinstance(v, _PLAIN) for v in row.values()):
        import pandas as pd

        return render(pd.DataFrame([row]), fmt, title=title, notes=notes, meta=meta)
    if fmt == "json":
        payload = {
            "title": title,
            "metadata": _json_meta(meta or {}),
            "rows": [{k: _json_value(v) for k, v in row.items()}],
        }
        if notes:
            payload["notes"] = list(notes)
        return json.dumps(payload, indent=2) + "\n"
    lines = [*meta_lines(meta), *(str(n) for n in notes)]
    comments = "".join(f"# {one_line(line).strip()}\n" for line in lines if line.strip())
    buffer = io.StringIO()
    hashed = any(isinstance(v, str) and "#" in v for v in (*row, *row.values()))  # as _csv_block
    quoting = csv.QUOTE_ALL if hashed else csv.QUOTE_MINIMAL
    writer = csv.writer(buffer, lineterminator="\n", quoting=quoting)  # pandas' dialect
    writer.writerow([safe_cell(str(c)) for c in row])
    writer.writerow([_csv_value(v) for v in row.values()])
    return comments + buffer.getvalue()


def _csv_value(value) -> str:
    """A cell as ``csv_text`` writes a one-row table's: floats as %.10g, blank when missing
    or not finite, text through ``safe_cell``."""
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return f"{v:.10g}" if math.isfinite(v) else ""  # pandas float_format="%.10g"
    return safe_cell(value)


def render_cells(
    headers: list[str],
    cells: list[list[str]],
    numeric: list[bool],
    fmt: str = "table",
    title: str = "",
    notes=(),
    meta: dict | None = None,
) -> str:
    """``render``'s "table" or "markdown" of a table given as text (``table_cells``):
    numeric columns right-aligned; what a table of a few fields prints without pandas."""
    if fmt == "markdown":
        lines = []
        if title:
            lines += [f"**{title}**", ""]
        lines.append("| " + " | ".join(headers) + " |")
        lines.append("|" + "|".join("---" for _ in headers) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in cells]
        lines += [f"\n{n}" for n in notes]
        described = meta_lines(meta)
        if described:
            lines += ["", described[0]] + [f"* {line.strip()}" for line in described[1:]]
        return "\n".join(lines) + "\n"
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values):
        return "  ".join(
            v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)
        ).rstrip()

    out = []
    if title:
        out.append(title)
    out.append(line(headers))
    out.append("  ".join("-" * w for w in widths))
    out += [line(r) for r in cells]
    out += list(notes)
    out += meta_lines(meta)
    return "\n".join(out) + "\n"
