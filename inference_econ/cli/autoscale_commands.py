"""capacity --demand FILE --autoscale POLICY (docs/model-part-e.md §E14): the demand curve served
by instances that scale, their start-up delays priced, beside the hourly plan."""

from __future__ import annotations

import numbers

from ..errors import plural
from .common import emit
from .stated import emit_tables, save_figure


def autoscale_demand(model, names, kwargs: dict, figure, fmt: str, out, say) -> None:
    """The chosen target's day and every target's, the hourly plan's day beside them, and
    (with --figure) cost and missed requests over the day."""
    from .. import api
    from ..api import requests_metadata
    from ..output.ranges import ranged
    from ..output.render import render
    from .stated import vertical

    plan = api.autoscale_plan(model, names, progress=say, **kwargs)
    base = plan.plan
    meta = {**requests_metadata(base.setting), "demand": base.demand.source}
    for key in ("price_basis", "price_usd_per_gpu_hour", "price_date"):
        meta.pop(key, None)  # priced on the demand plan's own bases
    title = (
        f"Autoscaling {base.demand.describe()} within {base.targets.describe()} on "
        f"{base.gpus_per_instance} x {base.setting.gpu.name} instances: "
        f"{plan.best.policy.describe()}"
    )
    notes = _notes(plan)
    line = api.figures_line(base.setting)  # expected figures with intervals, or a bound
    summary = plan.summary()
    if fmt in ("csv", "json"):  # the rows with the summary the text prints above them
        emit(
            render(
                plan.candidates(),
                fmt,
                title=title,
                notes=[line, *notes],
                meta=meta,
                summary=summary,
            ),  # fmt: skip
            out,
        )
    else:  # counts as the text prints every other figure: 8,971,295 requests
        head = line + "\n" + vertical(ranged(_counts_as_figures(summary)), fmt, title)
        body = render(
            _counts_as_figures(plan.candidates()),
            fmt,
            title="Every target tried, and the hourly plan's day simulated the same way",
        )
        emit_tables(head, body, notes, meta, fmt, out)
    if figure:
        from ..output.autoscale_plot import autoscale_figure

        save_figure(autoscale_figure(plan), figure)


def _counts_as_figures(values):
    """A summary (Series) or table (DataFrame) with its whole counts (requests, missed requests,
    instances, GPUs) as floats, which the text prints with thousands separators as it does
    every other figure (integers print as written: 8971295); CSV and JSON keep them whole."""
    import pandas as pd

    if isinstance(values, pd.DataFrame):
        counts = [c for c in values.columns if pd.api.types.is_integer_dtype(values[c])]
        return values.astype({c: float for c in counts})
    return values.map(
        lambda v: float(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v
    )


def _notes(plan) -> list[str]:
    """What the day was simulated with, how the two plans are priced, and the hourly plan's
    own notes (rows of the curve left out, a held load its run could not judge)."""
    pool, base = plan.pool, plan.plan
    return [
        f"Start-up of a new instance: {plan.startup.describe()}"
        + ("" if plan.startup.source == "given" else " (load/startup.yaml's sources)")
        + "; it is paid from when it is asked for.",
        f"The day as a non-homogeneous Poisson stream of {plan.best.requests:,} requests in "
        f"one-second bins; each serving instance holds {pool.per_instance:.4g} req/s within the "
        "targets (the knee of capacity's search), which the policy scales by; the intervals of "
        "the chosen day's GPU-hours, cost and missed share are its day again where an instance "
        "holds each end of that load's interval; a request that waits longer than "
        f"{pool.allowance_s:g} s for capacity missed its targets; scale-downs wait "
        f"{pool.window_s:g} s (stabilisation window).",
        f"Chosen: the fewest GPU-hours with at most {plan.miss_budget:.2%} of the requests "
        "missing their targets. The hourly plan's day: each hour's instances, those added asked "
        f"for {plan.startup.total_s:.0f} s before the hour.",
        f"Prices: every instance on {base.prices.burst_basis} ${base.prices.burst_usd:.3g} per "
        f"GPU-hour (usd); with the hourly plan's {base.reserved_instances:,} reserved "
        f"{plural(base.reserved_instances, 'instance')} "
        f"all day at ${base.prices.reserved_usd:.3g} ({base.prices.reserved_basis}) and the "
        "rest on the burst basis (usd_with_reserved).",
        *base.notes,
    ]
