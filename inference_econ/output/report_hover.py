"""What hovering a point of the report shows: its layout (GPUs, batch, PP/TP/EP, attention
degree, draft length), its latency and MFU, and where its latency goes (each additive part's
share), as a plotly hover template over the trace's ``customdata``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..model.breakdown import ADDITIVE_PARTS, ENGINE_PARTS

#: What the breakdown on hover calls each additive part of the latency.
PART_LABELS = {
    "host_s": "host and scheduling",
    "kernel_launch_s": "kernel launches",
    "gemm_fixed_s": "GEMM fixed cost",
    "collective_latency_s": "collective latency",
    "collective_bandwidth_s": "collective bandwidth",
    "weight_read_s": "weight reads",
    "kv_read_s": "KV-cache reads",
    "activation_read_s": "activation reads",
    "arithmetic_s": "arithmetic",
}
#: Layout columns shown on hover: (column, text before it, format).
LAYOUT = (
    ("gpus", "GPUs ", ".4g"),
    ("batch", "batch ", ".4g"),
    ("pipeline_degree", "PP ", ".3g"),
    ("tensor_degree", "TP ", ".3g"),
    ("expert_degree", "EP ", ".3g"),
    ("attention_degree", "attention ", ".3g"),
    ("draft_tokens", "draft tokens ", ".0f"),
)


def hover(points: pd.DataFrame) -> tuple[np.ndarray, str]:
    """customdata (float32) and the hover template showing layout and latency breakdown."""
    cols, lines = [], []
    layout = [(c, t, f) for c, t, f in LAYOUT if c in points]
    for i, (col, text, fmt) in enumerate(layout):
        cols.append(points[col].to_numpy(dtype=float))
        lines.append(f"{text}%{{customdata[{i}]:{fmt}}}")
    body = "<br>".join([" · ".join(lines[:2]), " · ".join(lines[2:])]) if lines else ""
    if "tp_dims" in points:
        body += " (%{text} TP)"
    extra = []
    if "latency_s" in points:
        cols.append(points["latency_s"].to_numpy(dtype=float) * 1e3)
        extra.append(f"latency %{{customdata[{len(cols) - 1}]:.4g}} ms")
    if "mfu" in points:
        cols.append(points["mfu"].to_numpy(dtype=float))
        extra.append(f"MFU %{{customdata[{len(cols) - 1}]:.1%}}")
    parts = []
    # the parts a table has, less the engine's own that no point spends time in (a roofline has
    # no host work or GEMM fixed cost; a table written before those were parts has them in its
    # launches)
    present = [
        p
        for p in ADDITIVE_PARTS
        if p in points and (p not in ENGINE_PARTS or np.nan_to_num(points[p].to_numpy(float)).any())
    ]
    if "latency_s" in points and present:
        latency = points["latency_s"].to_numpy(dtype=float)
        for part in present:
            with np.errstate(divide="ignore", invalid="ignore"):
                cols.append(points[part].to_numpy(dtype=float) / latency)
            parts.append(f"  {PART_LABELS[part]} %{{customdata[{len(cols) - 1}]:.1%}}")
    template = (
        "<b>%{fullData.name}</b><br>%{x:.4g} tokens/s per request · $%{y:.4g} per M tokens<br>"
        + body
        + ("<br>" + " · ".join(extra) if extra else "")
        + ("<br>where the time goes:<br>" + "<br>".join(parts) if parts else "")
        + "<extra></extra>"
    )
    data = np.column_stack(cols).astype(np.float32) if cols else None
    return data, template


def hover_text(points: pd.DataFrame):
    """Each point's tensor-parallel dimensions, as the hover template names them."""
    if "tp_dims" not in points:
        return None
    return points["tp_dims"].astype(str).replace("-", "no").to_numpy()  # "(no TP)" at TP 1
