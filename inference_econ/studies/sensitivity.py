"""What-if studies: vary one hardware, model or workload parameter and watch the frontier move.

``sweep`` reports, for each value of a parameter, the fastest speed and the cost at a fixed
speed; ``elasticities`` summarises several parameters by d ln(metric) / d ln(parameter) between
half and twice the base value (a tornado chart). Parameters are multiplicative factors on the
base setting, except ``context`` (tokens) and ``acceptance`` (a probability), which are values.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import settings as table
from ..errors import SpecError, did_you_mean, expect, short
from ..optimise.method import GRID, Method
from ..optimise.optimiser import frontier
from ..serving.derived_intervals import nested_ends, renamed_intervals
from ..serving.intervals import interval_columns
from ..serving.setting import Setting, check_windows
from ..settings.row import refuse_repeats
from ..specs.hardware import derive
from ..specs.schema import check_number

#: parameter -> (kind, what it scales, description)
PARAMETERS = {
    "hbm_bandwidth": ("factor", "HBM bandwidth"),
    "flops": ("factor", "tensor-core FLOP/s"),
    "interconnect_bandwidth": ("factor", "scale-up (NVLink, xGMI, ICI, PCIe) and NIC bandwidth"),
    "nccl_latency": ("factor", "every collective's latency"),
    "launch_latency": ("factor", "kernel launch latency"),
    "price": ("factor", "GPU price per hour"),
    "hbm_capacity": ("factor", "HBM capacity"),
    "context": ("value", "context length in tokens"),
    "acceptance": ("value", "speculative decoding acceptance probability"),
}


#: factor parameters that scale GPU fields: (short name, fields scaled)
HARDWARE_SCALES = {
    "hbm_bandwidth": ("HBM", ("hbm_bandwidth_bytes_per_s",)),
    "flops": ("FLOP/s", ("flop_per_s",)),
    "interconnect_bandwidth": (
        "links",
        ("nvlink_bandwidth_bytes_per_s", "nic_bandwidth_bytes_per_s", "pcie_bandwidth_bytes_per_s"),
    ),
    "price": ("price", ("price_usd_per_hour",)),
    "hbm_capacity": ("HBM size", ("hbm_capacity_bytes",)),
}


def vary(setting: Setting, parameter: str, value: float, field: str = "") -> Setting:
    """The setting with one parameter changed (a factor, or a value for context/acceptance);
    a value it cannot take is refused naming ``field`` (default the parameter: a sweep's
    ``values``, the list it came from)."""
    field = field or parameter
    if parameter not in PARAMETERS:
        hint = did_you_mean(str(parameter), PARAMETERS)
        raise SpecError(
            "argument",
            "parameter",
            f"unknown parameter {short(parameter)}",
            hint or f"choose {', '.join(PARAMETERS)}",
        )
    if PARAMETERS[parameter][0] == "factor":
        latency = parameter in ("nccl_latency", "launch_latency")  # 0: no latency at all
        value = check_number(
            value, "argument", field, minimum=0, exclusive_minimum=not latency, maximum=1e6
        )
    elif parameter == "context":
        value = table.option("context_tokens").check(value, "argument", field)
    else:
        value = table.option("acceptance").check(value, "argument", field)
    value = float(value)
    gpu, a = setting.gpu, setting.assumptions
    if parameter in HARDWARE_SCALES:
        what, fields = HARDWARE_SCALES[parameter]
        scale = dict.fromkeys(fields, value)
        try:
            gpu = derive(gpu, name=f"{gpu.name} x{value:g} {what}", scale=scale)
        except SpecError as exc:  # e.g. a factor that takes a figure out of range
            raise SpecError("argument", field, f"x{value:g}: {exc.problem}", exc.fix) from None
        return setting.replace(gpu=gpu)
    try:
        if parameter == "nccl_latency":
            return setting.replace(
                assumptions=a.replace(collective_latency_scale=a.collective_latency_scale * value)
            )
        if parameter == "launch_latency":
            return setting.replace(
                assumptions=a.replace(launch_latency_scale=a.launch_latency_scale * value)
            )
    except SpecError as exc:
        raise SpecError("argument", field, f"x{value:g}: {exc.problem}", exc.fix) from None
    if parameter == "context":
        check_windows(setting.model, setting.spec, value)
        return setting.replace(context_tokens=value)
    if setting.spec is None:
        raise SpecError(
            "argument",
            "acceptance",
            "the setting has no speculation",
            "give a draft model (--draft) or draft heads (--draft-heads) to vary the acceptance",
        )
    if value > 1:
        raise SpecError("argument", field, f"is {short(value)}", "expected a probability in [0, 1]")
    return setting.replace(spec=setting.spec.with_acceptance(value))


#: The factors an elasticity is measured between (d ln metric / d ln factor over x0.5 to x2).
ELASTICITY_FACTORS = (0.5, 2.0)


def _base_speed(setting: Setting, method: Method, progress) -> float:
    """``default_speed``, announced on ``progress``: called only once every argument has
    been checked, so a refusal never follows the base setting's search."""
    if progress:
        progress(f"base frontier of {setting.name}")
    return default_speed(setting, method)


def default_speed(setting: Setting, method: Method = GRID) -> float:
    """The speed at which costs are compared by default: half the base setting's fastest
    tokens/s per request (a speed every factor between x0.5 and x2 usually still reaches)."""
    return 0.5 * frontier(setting, method).fastest().tokens_per_s


def sweep(
    setting: Setting,
    parameter: str,
    values,
    at_speed: float | None = None,
    progress=None,
    method: Method = GRID,
) -> pd.DataFrame:
    """For each value: the fastest tokens/s per request and the cheapest $/M tokens at
    ``at_speed`` (default: half the base setting's fastest speed), every frontier searched
    with ``method``."""
    expect(
        setting, Setting, "setting", "a Setting", "build one with ie.make_setting(model, hardware)"
    )
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        expect(values, (list, tuple), "values", "a list of values", "e.g. [0.5, 1, 2]")
    values = list(values)
    if not values:
        raise SpecError(
            "argument", "values", "is empty", "give at least one value, e.g. [0.5, 1, 2]"
        )
    _check_progress(progress)
    at_speed = _checked_speed(at_speed)
    # every value checked before any frontier is searched, each refusal naming the list
    varied = [vary(setting, parameter, value, f"values ({parameter})") for value in values]
    refuse_repeats(tuple(float(v) for v in values), "argument", "values")
    if at_speed is None:
        at_speed = _base_speed(setting, method, progress)
    rows, infeasible = [], []
    for i, value in enumerate(values):
        if progress:
            progress(f"{parameter} = {float(value):g} ({i + 1}/{len(values)})")
        front = frontier(varied[i], method)
        if front.empty:  # why every figure of the row is blank
            infeasible.append((float(value), "; ".join(front.notes) or "no configuration fits"))
        # nothing feasible, or the speed out of reach: no number (blank), never inf
        fastest = front.fastest() if not front.empty else None
        cost = float(front.cost_at_speed(at_speed)) if not front.empty else math.nan
        # expected figures' intervals (§F12): those of the frontier points they are read from
        # (the point cost_at_speed reads is the cheapest at least that fast)
        at = front.cheapest_at_speed(at_speed) if math.isfinite(cost) else None
        cheapest = front.cheapest() if not front.empty else None
        ends = {
            **renamed_intervals(fastest, "tokens_per_s", "fastest_tokens_per_s"),
            **renamed_intervals(fastest, "latency_s", "fastest_latency_s"),
            **renamed_intervals(at, "usd_per_mtok", "usd_per_mtok_at_speed"),
            **renamed_intervals(cheapest, "usd_per_mtok", "cheapest_usd_per_mtok"),
        }
        rows.append(
            {
                "parameter": parameter,
                "value": float(value),
                "fastest_tokens_per_s": fastest.tokens_per_s if fastest is not None else math.nan,
                "fastest_latency_s": fastest.latency_s if fastest is not None else math.nan,
                "at_speed_tokens_per_s": float(at_speed),
                "usd_per_mtok_at_speed": cost if math.isfinite(cost) else math.nan,
                "cheapest_usd_per_mtok": front.cheapest().usd_per_mtok
                if not front.empty
                else math.nan,
                **ends,
            }
        )
    result = pd.DataFrame(rows)
    result.attrs["infeasible"] = infeasible
    return result


def elasticities(
    setting: Setting,
    parameters=None,
    at_speed: float | None = None,
    progress=None,
    method: Method = GRID,
) -> pd.DataFrame:
    """d ln(metric) / d ln(parameter) between x0.5 and x2 of each factor parameter: of the
    fastest speed, and of the cost at ``at_speed`` tokens/s per request (default: half the
    base setting's fastest; the column ``at_speed_tokens_per_s`` says which)."""
    expect(
        setting, Setting, "setting", "a Setting", "build one with ie.make_setting(model, hardware)"
    )
    parameters = _factor_parameters(parameters)
    _check_progress(progress)
    at_speed = _checked_speed(at_speed)
    for p in parameters:  # every factor's setting checked before any frontier is searched
        for factor in ELASTICITY_FACTORS:
            vary(setting, p, factor, f"parameters ({p})")
    if at_speed is None:
        at_speed = _base_speed(setting, method, progress)
    rows = []
    for i, p in enumerate(parameters):
        if progress:
            progress(f"{p} x0.5 and x2 ({i + 1}/{len(parameters)})")
        df = sweep(setting, p, list(ELASTICITY_FACTORS), at_speed, method=method)
        speed = np.log(df.fastest_tokens_per_s.to_numpy())
        cost = np.log(df.usd_per_mtok_at_speed.to_numpy())
        row = {
            "parameter": p,
            "description": PARAMETERS[p][1],
            "fastest_speed_elasticity": (speed[1] - speed[0]) / np.log(4.0),
            "cost_at_speed_elasticity": (cost[1] - cost[0]) / np.log(4.0),
            "at_speed_tokens_per_s": float(at_speed),
        }
        row.update(_paired_elasticity(df, "fastest_tokens_per_s", "fastest_speed_elasticity", row))
        row.update(_paired_elasticity(df, "usd_per_mtok_at_speed", "cost_at_speed_elasticity", row))
        rows.append(row)
    return pd.DataFrame(rows)


def _factor_parameters(parameters) -> list[str]:
    """The factor parameters ``elasticities`` varies, each checked before any is searched (one
    name is one parameter, not its letters); None: every factor but HBM capacity."""
    factors = [p for p, (kind, _) in PARAMETERS.items() if kind == "factor"]
    if parameters is None:
        return [p for p in factors if p != "hbm_capacity"]
    if isinstance(parameters, str):
        parameters = [parameters]
    expect(parameters, (list, tuple), "parameters", "a list of names", "e.g. ['flops', 'price']")
    if not parameters:
        raise SpecError("argument", "parameters", "is empty", f"name some of {', '.join(factors)}")
    for p in parameters:
        if p not in factors:
            hint = did_you_mean(str(p), factors) or f"choose from {', '.join(factors)}"
            raise SpecError("argument", "parameters", f"{short(p)} is not a factor parameter", hint)
    return list(parameters)


def _check_progress(progress) -> None:
    if progress is not None and not callable(progress):
        raise SpecError(
            "argument", "progress", f"expected a function, got {short(progress)}", "e.g. print"
        )


def _checked_speed(at_speed) -> float | None:
    """The speed costs are read at: None (the default), or within the ``at_speed`` row."""
    return table.option("at_speed").check(at_speed)


def _paired_elasticity(df: pd.DataFrame, figure: str, name: str, row: dict) -> dict:
    """The interval columns of an elasticity between the two runs of ``df`` (x0.5, x2) under
    an engine profile (docs/model.md §F12): each run's ``figure`` at the same end of its own
    interval (one engine's error, at the same quantile in both runs: where both fall in one
    stratum of the interval table it cancels, and the elasticity is exact), between the
    least and the most of those and the value; {} for an ideal bound."""
    have = interval_columns(figure)
    if not all(c in df for c in have):
        return {}
    value = row[name]
    ends = []
    for c in have:  # low80 high80 low90 high90 of the figure, in each run
        a, b = (float(x) for x in df[c].to_numpy()[:2])
        ends.append((np.log(b) - np.log(a)) / np.log(4.0) if a > 0 and b > 0 else math.nan)
    if not all(math.isfinite(e) for e in ends):
        return {}
    return dict(zip(interval_columns(name), nested_ends(ends, value)))
