"""The figure of an autoscaled day (docs/model-part-e.md §E14): instances paid and serving beside
the hourly plan's, the cumulative cost of each, and the requests that missed their targets while
capacity arrived, minute by minute."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..errors import expect  # noqa: E402
from .plots import wrap  # noqa: E402


def autoscale_figure(plan, title: str = ""):
    """Three panels over the day, minute by minute: instances paid (solid) and serving (dotted)
    under the policy (blue) and the hourly plan (orange) with the demand on a second axis; the
    cumulative cost of each; the requests that missed their targets."""
    from ..optimise.autoscale import AutoscalePlan

    expect(plan, AutoscalePlan, "plan", "an AutoscalePlan", "the result of ie.autoscale_plan(...)")
    df = plan.timeline()
    hours = df["minute"].to_numpy() / 60.0
    fig, axes = plt.subplots(3, 1, figsize=(9.0, 7.5), sharex=True)
    runs = (("autoscaled", "#1f77b4", "policy"), ("hourly_plan", "#dd8452", "hourly plan"))
    ax = axes[0]
    for key, colour, label in runs:
        ax.plot(hours, df[f"{key}_instances_paid"], color=colour, lw=1.2, label=f"{label}: paid")
        ax.plot(
            hours,
            df[f"{key}_instances_serving"],
            color=colour,
            lw=1.0,
            ls=":",
            label=f"{label}: serving",
        )
    ax.set_ylabel("instances")
    ax.set_ylim(0, None)
    ax.legend(loc="upper left", fontsize=7, frameon=False, ncol=2)
    rate = ax.twinx()
    rate.plot(hours, df["requests"] / 60.0, color="black", lw=0.6, alpha=0.6)
    rate.set_ylabel("requests/s (grey)")
    rate.set_ylim(0, None)
    for key, colour, label in runs:
        axes[1].plot(hours, df[f"{key}_usd"], color=colour, lw=1.2, label=label)
    axes[1].set_ylabel(f"USD so far ({plan.plan.prices.burst_basis})")
    axes[1].legend(loc="upper left", fontsize=7, frameon=False)
    for key, colour, label in runs:
        axes[2].plot(hours, df[f"{key}_missed"], color=colour, lw=1.0, label=label)
    axes[2].set_ylabel("requests missed / min")
    axes[2].set_xlabel("hour")
    axes[2].legend(loc="upper left", fontsize=7, frameon=False)
    axes[2].set_xlim(0, float(np.ceil(hours[-1])))
    s = plan.summary()
    axes[0].set_title(
        wrap(
            title
            or f"{plan.plan.setting.model.name}, {plan.plan.gpus_per_instance} x "
            f"{s['hardware']}: {s['policy']}, start-up {s['startup_s']:.0f} s: "
            f"{s['usd']:,.0f} USD, {s['missed_share']:.2%} missed (hourly plan "
            f"{s['hourly_plan_usd']:,.0f} USD, {s['hourly_plan_missed_requests']:,} missed)"
        ),
        fontsize=10,
    )
    fig.tight_layout()
    return fig
