"""Money and utilisation: $ per million tokens, GPU-seconds and MFU (docs/model.md §A7), and the
price of owning a GPU-hour (§G3). Every module that prices a configuration calls these (the
FLOP/s a chip sustains: ``machine``)."""

from __future__ import annotations

import numpy as np

from ..columns import SECONDS_PER_HOUR
from ..errors import SpecError
from ..specs.catalog import display_path
from ..specs.costs import OwnedCosts
from ..specs.hardware import GPU, Price


def usd_per_mtok(gpus, latency_s, tokens_per_step, price_usd_per_hour):
    """$ per million tokens when ``gpus`` GPUs produce ``tokens_per_step`` tokens every
    ``latency_s`` seconds (§A7: 1e6·N·latency/B·price/3600)."""
    return 1e6 * gpus * latency_s / tokens_per_step * price_usd_per_hour / SECONDS_PER_HOUR


def priced_grid(gpus, latency_s, batch, price_usd_per_hour, max_throughput_tokens_per_s):
    """$ per million tokens of every configuration of a grid, inf where its throughput
    B/latency exceeds the demand cap (§A7: a provider cannot sell more tokens than are asked
    for). Arrays broadcast; infinite latencies stay infinite costs."""
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = usd_per_mtok(gpus, latency_s, batch, price_usd_per_hour)
        return np.where(batch / latency_s > max_throughput_tokens_per_s, np.inf, cost)


def usd_per_mtok_at_throughput(tokens_per_s_per_gpu, price_usd_per_hour):
    """$ per million tokens of a GPU producing ``tokens_per_s_per_gpu`` tokens per second."""
    return 1e6 * price_usd_per_hour / SECONDS_PER_HOUR / tokens_per_s_per_gpu


def mfu(flop, gpus, peak_flop_per_s, latency_s):
    """Model FLOP utilisation: useful FLOP over what the uncapped peak could do (§A7)."""
    return flop / (gpus * peak_flop_per_s * latency_s)


HOURS_PER_YEAR = 8760.0


def owned_price(gpu: GPU, costs: OwnedCosts, pue: float | None = None) -> Price:
    """The ``owned`` price of one GPU-hour (docs/model.md §G3): its purchase with the server
    share and the network and storage bought alongside, straight-line over the depreciation
    years; hosting per kW of IT capacity (board TDP plus the server's share); and electricity
    at the mean draw times the PUE (``pue`` replaces the cost file's). A GPU without power
    figures, or one the cost file does not price, is refused."""
    if gpu.power is None:
        raise SpecError(
            display_path(gpu.source_file) or gpu.name,
            "power",
            f"{gpu.name} has no power figures, which owning (hosting, electricity) needs",
            "add a 'power: {board_w: ..., idle_w: ..., host_w: ...}' block, or choose a rental"
            " --price-basis",
        )
    kw = gpu.power.it_max_w / 1e3
    capital = (
        costs.purchase_usd(gpu)
        * (1.0 + costs.network_storage_fraction)
        / (costs.depreciation_years * HOURS_PER_YEAR)
    )
    hosting = costs.hosting_usd_per_kw_month * kw * 12.0 / HOURS_PER_YEAR
    energy = costs.usd_per_kwh * (costs.pue if pue is None else pue) * kw
    energy *= costs.average_power_fraction
    return Price("owned", capital + hosting + energy, costs.date, display_path(costs.source_file))
