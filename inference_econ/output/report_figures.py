"""The report's plotly figures: a section's frontiers on a log-dollar axis, one trace per curve
(its 90 % band where the figures are expected ones), a point's layout and where its latency goes
on hover (``report_hover``), a selector over groups of curves; or a square-root-law section's measured latencies.
plotly is an optional extra (``inference-econ[html]``), imported when a figure is drawn.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import SpecError
from ..serving.toy import square_root_law
from .report_hover import hover, hover_text
from .style import (
    DOLLAR_TICKS,
    LATENCY_TICKS,
    PALETTE,
    PLOTLY_DASH,
    dollar_ticks,
    dollars,
    log_ticks,
    parameters,
)

if TYPE_CHECKING:
    from .report_sections import Curve, Section

#: Points shown per curve at most (evenly spaced along the line; key points always kept).
MAX_POINTS = 80
#: Curves a selector entry shows at most before the page offers "all" too.
ALL_LIMIT = 40


def require_plotly():
    """plotly and its graph objects, or the error that names the extra to install."""
    try:
        import plotly
        import plotly.graph_objects as go
    except ImportError:
        raise SpecError(
            "command line",
            "the interactive report (--html, report)",
            "needs plotly, which is not installed",
            "pip install 'inference-econ[html]'",
        ) from None
    return plotly, go


def thin(points: pd.DataFrame, keep_speeds=(), limit: int = MAX_POINTS) -> pd.DataFrame:
    """At most ``limit`` points, evenly spaced along the drawn line (linear speed, log cost),
    plus the key points' rows."""
    if len(points) <= limit:
        return points
    x = points["tokens_per_s"].to_numpy(dtype=float)
    y = np.log(points["usd_per_mtok"].to_numpy(dtype=float))
    u = (x - x.min()) / max(np.ptp(x), 1e-300)
    v = (y - y.min()) / max(np.ptp(y), 1e-300)
    length = np.concatenate([[0.0], np.cumsum(np.hypot(np.diff(u), np.diff(v)))])
    targets = np.linspace(0.0, length[-1], limit)
    pick = set(np.abs(length[None, :] - targets[:, None]).argmin(axis=1).tolist())
    for s in keep_speeds:
        pick.add(int(np.abs(x - s).argmin()))
    return points.iloc[sorted(pick)]


def figure(section: Section, max_points: int = MAX_POINTS):
    """The plotly figure of a section: one trace per curve, a selector over groups."""
    _, go = require_plotly()
    if section.law and not section.curves:
        return _law_figure(section)
    fig = go.Figure()
    groups = list(dict.fromkeys(c.group for c in section.curves))
    first = groups[0] if groups else ""
    by_name: dict[str, str] = {}
    for curve in section.curves:
        pts = curve.points
        if len(pts) == 0:
            continue
        pts = thin(pts, curve.marks.values(), max_points)
        colour = curve.color or by_name.get(curve.name) or PALETTE[len(by_name) % len(PALETTE)]
        by_name.setdefault(curve.name, colour)
        if "usd_per_mtok_low90" in pts and pts["usd_per_mtok_low90"].notna().any():
            # expected figures: the 90 % interval, shaded (a bound's cells have none)
            fig.add_trace(_band(go, curve, pts, colour, curve.group == first))
        fig.add_trace(_line(go, curve, pts, colour, curve.group == first))
    _share_hover(fig)
    fig.update_layout(
        template=_template(fig.layout.template),
        title={"text": _title(section, first), "font": {"size": 14}, "y": 0.98, "yanchor": "top"},
        xaxis={"title": {"text": "tokens per second per request"}, "rangemode": "tozero"},
        yaxis={
            "title": {"text": "cost per million output tokens"},
            "type": "log",
            **_dollar_axis([c.points for c in section.curves]),
        },
        legend={"title": {"text": "click to hide or show"}},
        hoverlabel={"align": "left"},
        updatemenus=_selector(section, groups, fig.data),
        margin={"t": 130},
        height=640,
    )
    return fig


def _band(go, curve: Curve, pts: pd.DataFrame, colour: str, visible: bool):
    """The shaded 90 % interval of a curve's expected cost: no hover, toggled with its line."""
    x = pts["tokens_per_s"].to_numpy()
    return go.Scatter(
        x=np.concatenate([x, x[::-1]]),
        y=np.concatenate(
            [
                pts["usd_per_mtok_low90"].to_numpy(),
                pts["usd_per_mtok_high90"].to_numpy()[::-1],
            ]
        ),
        fill="toself",
        fillcolor=colour,
        opacity=0.15,
        line={"width": 0},
        hoverinfo="skip",
        name=f"{curve.name}: 90 % interval",
        legendgroup=curve.name,
        visible=visible,
        meta=curve.group,
    )


def _line(go, curve: Curve, pts: pd.DataFrame, colour: str, visible: bool):
    """A curve's frontier: its points (key points larger) with their layout on hover."""
    data, template = hover(pts)
    speeds = pts["tokens_per_s"].to_numpy()
    marked = np.isin(speeds, list(curve.marks.values()))
    return go.Scatter(
        x=speeds,
        y=pts["usd_per_mtok"].to_numpy(),
        mode="lines+markers",
        name=curve.name,
        legendgroup=curve.name,
        line={"color": colour, "width": 2, "dash": PLOTLY_DASH[curve.dash]},
        marker={"size": np.where(marked, 10, 4).tolist(), "color": colour},
        customdata=data,
        text=hover_text(pts),
        hovertemplate=template,
        visible=visible,
        meta=curve.group,
    )


def _share_hover(fig) -> None:
    """A hover template every trace shares is said once, in the layout's template (the page
    would otherwise repeat it per trace)."""
    traces = fig.data
    templates = {t.hovertemplate for t in traces}
    if len(templates) == 1 and len(traces) > 1:
        for t in traces:
            t.hovertemplate = None
        fig.update_layout(template={"data": {"scatter": [{"hovertemplate": templates.pop()}]}})


def _selector(section: Section, groups: list[str], traces) -> list[dict]:
    """The menu over groups of curves (each trace's ``meta`` is its group), with "all curves"
    first where they are few enough; none for a single group."""
    if len(groups) <= 1:
        return []
    buttons = [
        _button(g or "(all)", [t.meta == g for t in traces], _title(section, g)) for g in groups
    ]
    if len(traces) <= ALL_LIMIT:
        buttons.insert(0, _button("all curves", [True] * len(traces), _title(section, "")))
    return [
        {
            "buttons": buttons,
            "direction": "down",
            "x": 0.0,
            "xanchor": "left",
            "y": 1.03,
            "yanchor": "bottom",
            "showactive": True,
            "active": 1 if len(traces) <= ALL_LIMIT else 0,
        }
    ]


def _button(label: str, visible: list[bool], title: str) -> dict:
    """A selector entry: which traces it shows and the title it gives the plot."""
    return {
        "label": label,
        "method": "update",
        "args": [{"visible": visible}, {"title.text": title}],
    }


def _dollar_axis(tables) -> dict:
    """A log dollar axis ticked as the PNGs are (``style.dollar_ticks``: 1, 2 and 5 times the
    powers of ten, labelled by ``style.dollars``), over every curve's range, so that no tick,
    minor ones included, lacks its dollar sign."""
    values = np.concatenate(
        [t["usd_per_mtok"].to_numpy(dtype=float) for t in tables if len(t)] or [np.array([])]
    )
    values = values[np.isfinite(values) & (values > 0)]
    if not values.size:
        return {"tickprefix": "$"}
    ticks = dollar_ticks(values.min() / 1.5, values.max() * 1.5)
    return {"tickmode": "array", "tickvals": ticks, "ticktext": [dollars(v) for v in ticks]}


def _law_figure(section: Section):
    """The square-root law of a section (paper Figure 2): measured best latencies against
    parameters on log-log axes, the law through the smallest model dashed, as the PNG draws."""
    _, go = require_plotly()
    params = np.array([p["params"] for p in section.law], dtype=float)
    latency = np.array([p["latency_ms"] for p in section.law], dtype=float)
    grid = np.logspace(np.log10(params.min() / 2), np.log10(params.max() * 2), 50)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=grid,
            y=square_root_law(grid, params[0], latency[0]),
            mode="lines",
            name="square-root law through the smallest model",
            line={"color": "gray", "dash": "dash"},
            hovertemplate="%{x:.3s} parameters: %{y:.3g} ms<extra>square-root law</extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=params,
            y=latency,
            mode="markers+text",
            name="measured best latency",
            text=[p.get("label", "") for p in section.law],
            textposition="bottom right",
            marker={"color": "black", "size": 9},
            hovertemplate="%{text}: %{x:.3s} parameters, %{y:.3g} ms<extra></extra>",
        )
    )
    xs = log_ticks(grid.min(), grid.max(), DOLLAR_TICKS)
    law = square_root_law(grid, params[0], latency[0])
    ys = log_ticks(min(law.min(), latency.min()), max(law.max(), latency.max()), LATENCY_TICKS)
    fig.update_layout(
        template="plotly_white",
        title={"text": _title(section, ""), "font": {"size": 14}},
        xaxis={
            "title": {"text": "parameters"},
            "type": "log",
            "tickmode": "array",
            "tickvals": xs,
            "ticktext": [parameters(v) for v in xs],
        },
        yaxis={
            "title": {"text": "best token latency (ms)"},
            "type": "log",
            "tickmode": "array",
            "tickvals": ys,
            "ticktext": [f"{v:g}" for v in ys],
        },
        height=560,
    )
    return fig


def _template(extra):
    """plotly_white, with the shared hover template (if any) as its scatter default."""
    import plotly.io as pio

    base = pio.templates["plotly_white"]
    if extra is not None and extra.data.scatter:
        base = base.to_plotly_json()
        base["data"]["scatter"] = [extra.data.scatter[0].to_plotly_json()]
    return base


def _title(section: Section, group: str) -> str:
    """The plot's title: the group shown (the page's heading already names the section)."""
    return html.escape(group or section.title)
