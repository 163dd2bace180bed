"""A small figure of a simulated schedule (docs/model.md §E12): each instance's steps over time
(prompt steps and decode runs as bars), and the requests decoding in each step, from the same
``Timeline`` that ``simulate --timeline`` writes for Perfetto."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from ..errors import expect  # noqa: E402
from ..load.timeline import Timeline, step_spans  # noqa: E402
from .plots import wrap  # noqa: E402

#: Colours of a step with prompt tokens and of a run of decode steps.
PROMPT_COLOUR, DECODE_COLOUR = "#d94801", "#4292c6"
#: Step events the top panel shows by default: few enough that each is a visible bar.
ZOOM_EVENTS = 60


def timeline_figure(timeline: Timeline, title: str = "", window_s: float | None = None):
    """Top: one row per instance, its prompt steps (orange) and decode runs (blue) over the
    first ``window_s`` seconds of the run (None: the span of its first ``ZOOM_EVENTS`` step
    events, where single steps can be told apart); bottom: the requests decoding in each
    step over the whole run (a step line per instance), the window shaded."""
    expect(timeline, Timeline, "timeline", "a Timeline", "the result of ie.simulate_load(...)")
    lanes = [(label, rows) for label, rows in step_spans(timeline) if len(rows)]
    if not lanes:
        raise ValueError("the timeline holds no step: simulate a run with requests first")
    start = min(float(rows[0, 0]) for _, rows in lanes)
    if window_s is None:
        first = lanes[0][1][:ZOOM_EVENTS]
        window_s = float(first[-1, 0] + first[-1, 1]) - start
    elif not (isinstance(window_s, (int, float)) and np.isfinite(window_s) and window_s > 0):
        raise ValueError(f"window_s is {window_s!r}: give a number of seconds above 0")
    height = 0.8 + 0.35 * len(lanes)
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(9.0, height + 3.0), height_ratios=(height, 2.4)
    )
    for row, (label, rows) in enumerate(lanes):
        for prompt, colour in ((1.0, PROMPT_COLOUR), (0.0, DECODE_COLOUR)):
            part = rows[(rows[:, 3] == prompt) & (rows[:, 0] <= start + window_s)]
            top.broken_barh(
                list(zip(part[:, 0], part[:, 1])),
                (row - 0.4, 0.8),
                color=colour,
                ec="white",
                lw=0.3,
            )
        ends = rows[:, 0] + rows[:, 1]
        starts = np.concatenate([rows[:, 0], ends[-1:]])
        batch = np.concatenate([rows[:, 2], rows[-1:, 2]])
        bottom.step(starts, batch, where="post", lw=0.8, label=label)
    top.set_xlim(start, start + window_s)
    top.set_yticks(range(len(lanes)), [label for label, _ in lanes])
    top.invert_yaxis()
    top.set_xlabel(f"simulated time (s): the first {window_s:.3g} s")
    fig.legend(
        handles=[Patch(color=PROMPT_COLOUR), Patch(color=DECODE_COLOUR)],
        labels=["step with prompt tokens", "decode steps (a run of them)"],
        loc="lower center",
        ncol=2,
        fontsize=8,
    )
    bottom.axvspan(start, start + window_s, color="0.85", lw=0)
    bottom.set_ylabel("requests decoding")
    bottom.set_xlabel("simulated time (s): the whole run, the window above shaded")
    if len(lanes) > 1:
        bottom.legend(fontsize=8, loc="upper right")
    top.set_title(wrap(title or "Simulated schedule"), fontsize=10)
    fig.tight_layout(rect=(0.0, 0.05, 1.0, 1.0))
    return fig
