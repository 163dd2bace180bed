"""Rendering results as text tables, CSV, JSON or Markdown."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from ..settings import option

FORMATS = option("format").choices

#: Friendlier headers for the text and Markdown tables.
HEADERS = {
    "tokens_per_s": "tok/s",
    "usd_per_mtok": "$/Mtok",
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
    "tp_dims": "TP dims",
    "draft_tokens": "draft",
    "latency_s": "latency ms",
    "mfu": "MFU",
}


def _fmt_number(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return ""
        if math.isinf(v):
            return "inf"
        a = abs(v)
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


def is_duration(column: str) -> bool:
    """Columns in seconds (``latency_s``), as opposed to rates (``tokens_per_s``)."""
    return column.endswith("_s") and not column.endswith("per_s")


def _display(df: pd.DataFrame) -> pd.DataFrame:
    """Scale seconds to milliseconds for reading; keep everything else."""
    out = df.copy()
    for col in out.columns:
        if is_duration(col) and pd.api.types.is_numeric_dtype(out[col]):
            out[col] = out[col] * 1e3
    rename = {c: HEADERS.get(c, c[:-2] + " ms" if is_duration(c) else c) for c in out.columns}
    return out.rename(columns=rename)


def _json_value(value):
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    return value


def render(df: pd.DataFrame, fmt: str = "table", title: str = "", notes=()) -> str:
    """Render a DataFrame as "table" (aligned text), "csv", "json" or "markdown"."""
    fmt = option("format").check(fmt, "argument", "format")  # SpecError with a did-you-mean
    if fmt == "csv":
        return df.to_csv(index=False, float_format="%.6g")
    if fmt == "json":
        records = [
            {k: _json_value(v) for k, v in row.items()} for row in df.to_dict(orient="records")
        ]
        payload = {"title": title, "rows": records} if title else records
        if notes and title:
            payload["notes"] = list(notes)
        return json.dumps(payload, indent=2) + "\n"
    shown = _display(df)
    cells = [[_fmt_number(v) for v in row] for row in shown.itertuples(index=False)]
    headers = [str(c) for c in shown.columns]
    if fmt == "markdown":
        lines = []
        if title:
            lines += [f"**{title}**", ""]
        lines.append("| " + " | ".join(headers) + " |")
        lines.append("|" + "|".join("---" for _ in headers) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in cells]
        lines += [f"\n{n}" for n in notes]
        return "\n".join(lines) + "\n"
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    numeric = [pd.api.types.is_numeric_dtype(shown[c]) for c in shown.columns]

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
    return "\n".join(out) + "\n"
