"""Energy, power density and carbon of a served configuration (docs/model.md §G2, §G4): the one
place the energy columns of every output are made, from a setting's GPU power figures, its PUE
and grid, and where the time of its steps goes.

Columns: ``joules_per_output_token`` (IT energy: the boards and their servers),
``output_tokens_per_s_per_kw_it`` (per kW of IT power), ``output_tokens_per_s_per_mw_facility`` (per MW of
facility power, IT times the PUE), ``it_power_w_per_gpu`` (what one GPU and its server share
draw) and ``board_activity`` (§G2's ``a``); with a grid intensity also ``gco2_per_mtok``
(grams of CO2 per million output tokens). A GPU without power figures gets NaN (its setting's
metadata says why).
"""

from __future__ import annotations

import numpy as np

from ..model.power import (
    board_activity,
    energy_per_token_j,
    grams_co2_per_mtok,
    it_power_w,
    tokens_per_s_per_kw_it,
    tokens_per_s_per_mw_facility,
)
from .setting import Setting, facility_pue

#: The energy columns every table of configurations carries, in display order.
ENERGY_COLUMNS = [
    "joules_per_output_token",
    "output_tokens_per_s_per_kw_it",
    "output_tokens_per_s_per_mw_facility",
]
CARBON_COLUMN = "gco2_per_mtok"


def energy_columns(
    setting: Setting,
    gpus,
    output_tokens_per_s,
    latency_s,
    compute_time_s,
    memory_time_s,
    collective_s=0.0,
    busy_fraction=1.0,
) -> dict:
    """The energy columns of configurations of ``gpus`` GPUs producing ``output_tokens_per_s``
    output tokens per second in all, whose steps of ``latency_s`` spend ``compute_time_s`` on
    the tensor cores, ``memory_time_s`` streaming HBM and ``collective_s`` moving collective
    bytes; ``busy_fraction`` of the time is spent in steps (the rest idles, §G2)."""
    power = setting.gpu.power
    shape = np.shape(np.asarray(output_tokens_per_s, dtype=float) + np.asarray(gpus, dtype=float))
    if power is None:
        nan = np.full(shape, np.nan)
        out = {name: nan for name in ENERGY_COLUMNS}
        out.update(it_power_w_per_gpu=nan, board_activity=nan)
        if setting.grid_intensity_g_per_kwh is not None:
            out[CARBON_COLUMN] = nan
        return out
    pue = facility_pue(setting)
    a = board_activity(power, latency_s, compute_time_s, memory_time_s, collective_s)
    a = a * busy_fraction
    watts = it_power_w(power, a) + np.zeros(shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        joules = energy_per_token_j(gpus, watts, output_tokens_per_s)
        joules = np.where(np.isfinite(joules), joules, np.nan)
        out = {
            "joules_per_output_token": joules,
            "output_tokens_per_s_per_kw_it": tokens_per_s_per_kw_it(joules),
            "output_tokens_per_s_per_mw_facility": tokens_per_s_per_mw_facility(joules, pue),
            "it_power_w_per_gpu": watts,
            "board_activity": a + np.zeros(shape),
        }
    if setting.grid_intensity_g_per_kwh is not None:
        out[CARBON_COLUMN] = grams_co2_per_mtok(joules, pue, setting.grid_intensity_g_per_kwh)
    return out
