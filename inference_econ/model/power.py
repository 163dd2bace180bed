"""Power and energy of a step (docs/model.md §G2): what the boards draw between idle and their
power limit given where the step's time goes, what the servers around them add, and the
energy, tokens per kW and carbon that follow.

A board draws ``idle + (TDP − idle)·a``, where the activity ``a`` adds the shares of the step
its units are busy: tensor cores at the sustained rate count fully (a compute-bound step runs
at the power limit, which is why the sustained rate is below the datasheet's), HBM streaming
at the sustained bandwidth and links moving collective bytes count ``memory_activity``; ``a``
is at most 1 (the board caps its power by slowing its clock). Launch gaps, engine overheads
and collective latencies keep the clocks up but the units idle: they cost idle power.
"""

from __future__ import annotations

import numpy as np

from ..specs.hardware import Power

JOULES_PER_KWH = 3.6e6


def board_activity(power: Power, latency_s, compute_time_s, memory_time_s, collective_s=0.0):
    """The share ``a`` of the dynamic range a board draws over a step of ``latency_s`` whose
    tensor cores work ``compute_time_s`` and whose HBM streams ``memory_time_s`` (both at the
    sustained rates, in full whichever side binds) and links ``collective_s`` (§G2)."""
    latency = np.asarray(latency_s, dtype=float)
    busy = np.asarray(compute_time_s, dtype=float) + power.memory_activity * (
        np.asarray(memory_time_s, dtype=float) + collective_s
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(latency > 0, busy / np.where(latency > 0, latency, 1.0), 0.0)
    return np.clip(a, 0.0, 1.0)


def board_power_w(power: Power, activity):
    """Watts one board draws at activity ``a`` (§G2)."""
    return power.idle_w + (power.board_w - power.idle_w) * np.asarray(activity, dtype=float)


def it_power_w(power: Power, activity):
    """Watts of one GPU and its share of the server (IT power) at activity ``a``."""
    return board_power_w(power, activity) + power.host_w


def energy_per_token_j(gpus, watts_per_gpu, tokens_per_s):
    """Joules per token of ``gpus`` GPUs drawing ``watts_per_gpu`` each while producing
    ``tokens_per_s`` tokens per second in all."""
    return gpus * np.asarray(watts_per_gpu, dtype=float) / tokens_per_s


def tokens_per_s_per_kw_it(joules_per_token):
    """Tokens per second per kW drawn: 1000 / (J per token)."""
    return 1e3 / np.asarray(joules_per_token, dtype=float)


def tokens_per_s_per_mw_facility(joules_per_token, pue):
    """Tokens per second per MW of facility power: IT power times the PUE."""
    return 1e6 / (np.asarray(joules_per_token, dtype=float) * pue)


def grams_co2_per_mtok(joules_per_token, pue, grid_g_per_kwh):
    """Grams of CO2 per million tokens: facility energy (IT × PUE) times the grid's intensity."""
    return np.asarray(joules_per_token, dtype=float) * 1e6 * pue / JOULES_PER_KWH * grid_g_per_kwh
