"""Tables: one reported point per curve of a scenario, beside the paper's values if it has them.

``run_table(scenario)`` computes each curve's frontier and picks its fastest point or its
preference point (or, for the toy model, the closed-form optimum). The result keeps the
layout and breakdown of every row, so each printed number can be traced; ``TABLE_COLUMNS``
names the columns a CSV of each kind of table carries.
"""

from __future__ import annotations

import math
from decimal import Decimal

import pandas as pd

from ..errors import expect
from ..optimise.optimiser import frontier
from ..serving import toy
from ..serving.decode import continuous_note
from ..serving.setting import whole_batch_kv_note
from ..specs.architecture import load_model
from ..specs.catalog import display_path
from .scenario import Scenario, load_scenario

TABLE_COLUMNS = {
    "fastest": ["label", "tokens_per_s", "gpus"],
    "toy-optimum": ["label", "tokens_per_s", "gpus"],
    "preference": ["label", "tokens_per_s", "usd_per_mtok", "gpus", "batch"],
}

PAPER_TABLES = {f"table-{i}": f"paper/table-{i}" for i in range(1, 7)}


def columns_for(scenario: Scenario) -> list[str]:
    """The CSV columns of a table scenario: its values, then the paper's twins if any."""
    base = TABLE_COLUMNS.get(scenario.report, TABLE_COLUMNS["preference"])
    if any(c.paper for c in scenario.curves):
        return base + ["paper_" + c for c in base[1:]]
    return base


def _toy_arch(curve):
    arch = load_model(curve.fields["model"])
    if "weight_bits" in curve.fields:
        arch = arch.with_precision(weight_bits=curve.fields["weight_bits"])
    return arch


def _toy_row(curve) -> dict:
    params = dict(curve.toy)
    result = toy.model_optimum(
        _toy_arch(curve),
        bandwidth_bytes_per_s=float(params.get("bandwidth_bytes_per_s", 3.3e12)),
        allreduce_latency_s=float(params.get("allreduce_latency_s", 2e-6)),
        allreduces_per_layer=params.get("allreduces_per_layer", 4),
        base_latency_s=float(params.get("base_latency_s", 0.0)),
    )
    return {
        "tokens_per_s": result.tokens_per_s,
        "gpus": result.optimal_gpus,
        "latency_s": result.latency_s,
    }


def curve_metadata(curve, method_label: str | None = None) -> dict:
    """What one curve of a scenario is computed with (its setting, or the toy model's inputs)."""
    if curve.toy is not None:
        arch = _toy_arch(curve)
        return {
            "label": curve.label,
            "model": arch.name,
            "model_file": display_path(arch.source_file),
            "weight_bits": float(arch.precision.weight_bits),
            "method": "toy model of Section 2",
            **{k: v for k, v in curve.toy.items()},
        }
    meta = {"label": curve.label, **curve.setting().metadata()}
    meta["method"] = method_label or curve.method().label
    return meta


def scenario_metadata(scenario: Scenario, curves: list[dict]) -> dict:
    """A scenario's result: which file, and what each curve was computed with."""
    return {
        "scenario": scenario.name,
        "scenario_file": display_path(scenario.source),
        "curves": curves,
    }


def run_table(
    scenario: Scenario | str, progress=None, assumptions: str | None = None
) -> pd.DataFrame:
    """One row per curve: the reported point (with layout and breakdown) and the paper's values.

    ``assumptions`` computes every curve under that preset instead of the file's own (e.g.
    ``"paper-table-5"`` for the paper's printed Table 5)."""
    expect(scenario, (Scenario, str), "scenario", "a scenario or its name", "e.g. 'paper-table-3'")
    if isinstance(scenario, str):
        scenario = load_scenario(PAPER_TABLES.get(scenario, scenario))
    scenario = scenario.with_assumptions(assumptions)
    rows, curves, notes = [], [], list(scenario.notes)
    for i, curve in enumerate(scenario.curves):
        if progress:
            progress(f"{scenario.name}: {curve.label} ({i + 1}/{len(scenario.curves)})")
        curves.append(curve_metadata(curve))
        if scenario.report == "toy-optimum" or curve.toy is not None:
            row = _toy_row(curve)
        else:
            front = frontier(curve.setting(), curve.method())
            if scenario.report == "fastest":
                point = front.fastest()
            else:
                point = front.preference_point(sampling=scenario.preference_sampling)
            row = point.to_dict()
            setting = curve.setting()
            kv = whole_batch_kv_note(setting, row["gpus"], row["batch"], setting.context_tokens)
            notes += [f"{curve.label}: {kv}"] if kv else []
        row["label"] = curve.label
        for key, value in curve.paper.items():
            row["paper_" + key] = value
        rows.append(row)
    df = pd.DataFrame(rows)
    first = columns_for(scenario)
    for col in first:
        if col not in df:
            df[col] = math.nan
    rest = [c for c in df.columns if c not in first]
    out = df[first + rest]
    out.attrs["title"] = scenario.title
    out.attrs["columns"] = first
    real = continuous_note(out[[c for c in out.columns if not c.startswith("paper_")]])
    out.attrs["notes"] = notes + ([real] if real else [])
    out.attrs["metadata"] = scenario_metadata(scenario, curves)
    return out


#: How close a reproduced table must be to the paper: relative, per column (README, docs/deviations.md).
TOLERANCE = {"tokens_per_s": 0.01, "usd_per_mtok": 0.01, "gpus": 0.10, "batch": 0.10}


def within_tolerance(ours: float, paper: float, rel: float) -> bool:
    """Within ``rel`` of the paper's value, or within the rounding of its printed digits."""
    decimals = max(0, -Decimal(repr(float(paper))).normalize().as_tuple().exponent)
    half_unit = 0.5 * 10.0**-decimals
    return abs(ours - paper) <= max(rel * abs(paper), half_unit + 1e-12)


def matches_paper(table: pd.DataFrame) -> bool:
    """True when every cell with a paper twin is within ``TOLERANCE`` of it."""
    return all(
        within_tolerance(ours, paper, rel)
        for col, rel in TOLERANCE.items()
        if col in table and "paper_" + col in table
        for ours, paper in zip(table[col], table["paper_" + col])
        if not (pd.isna(ours) or pd.isna(paper))
    )


def deviations(table: pd.DataFrame) -> pd.DataFrame:
    """Relative differences (ours / paper - 1) for every column that has a paper twin."""
    out = pd.DataFrame({"label": table["label"]})
    for col in table.attrs.get("columns", table.columns):
        if col.startswith("paper_"):
            ours = col[len("paper_") :]
            out[ours + "_rel_diff"] = table[ours] / table[col] - 1.0
    return out
