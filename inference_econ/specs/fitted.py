"""The figures of a hardware file measured or fitted on that one part, and which of them a
part derived from it (``derive_from``) inherits without measurements of its own.

A derived part keeps every field of its base that it does not set, fitted ones included: a
new GPU derived from the L40S would run at the L40S's ``gemm_power_derating``. The derived
spec records each such figure and the part it was measured on, and ``show`` prints them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

#: GPU fields measured or fitted on one part's own results (docs/model.md §F2, §F7, §B14):
#: best-shape GEMM efficiency, the power-limited GEMM derating, the engines' small-batch
#: GEMM lines, the fused MoE's plateau share, the STREAM bandwidth fraction, the kernel
#: tables' ceilings (§B15) and the collective latency scale fitted by calibration. Each has a
#: default meaning "not measured".
FITTED_FIELDS = (
    "gemm_efficiency",
    "gemm_power_derating",
    "small_batch_gemm",
    "moe_plateau_share",
    "stream_bandwidth_fraction",
    "kernel_ceilings",
    "collective_latency_scale",
)


def inherited_fits(base: Any, changed: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(field, part it was measured on) for each fitted figure a spec derived from ``base``
    keeps: set on ``base`` (not at its "not measured" default) and not in ``changed`` (the
    derived spec's own fields and scaled ones). A figure ``base`` itself inherited keeps the
    part it came from."""
    defaults = {f.name: f.default for f in dataclasses.fields(base)}
    origins = dict(base.inherited_fits)
    return tuple(
        (name, origins.get(name, base.name))
        for name in FITTED_FIELDS
        if name not in changed and getattr(base, name) != defaults[name]
    )
