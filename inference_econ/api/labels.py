"""How a result states its figures: an ideal bound or expected (an engine profile), their
intervals' columns, and the notes a result carries (``serving.figure_labels``,
``serving.intervals``). The interval table is imported only where expected figures are read,
so a bound's output starts without it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..serving.decode import DETAIL_COLUMNS, SUMMARY_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

    from ..model.assumptions import Assumptions
    from ..serving.setting import Setting

__all__ = [
    "DETAIL_COLUMNS",
    "SUMMARY_COLUMNS",
    "context_parallel_intervals",
    "continuous_note",
    "coverage_note",
    "expected_figures",
    "figures_line",
    "held_intervals",
    "ideal_setting",
    "interval_columns",
    "load_coverage_note",
    "prefill_intervals",
    "redundant_note",
    "requests_metadata",
    "memory_reason",
    "uneven_note",
    "whole_batch_kv_note",
]


def figures_line(
    under: Setting | Assumptions | str | list, intervals: bool = True, parts: str = "Cells"
) -> str:
    """The first line of every command's output: an ideal bound or expected figures.

    Parameters
    ----------
    under : Setting, Assumptions or str, or a list of them
        What the figures were computed under (a preset's label will do); several: one line
        where they agree, else each's.
    intervals : bool
        Whether the output shows the expected figures' intervals.
    parts : str
        What several are ("Cells", "Models"), for the line where they differ.

    Returns
    -------
    str
        The line, naming the preset and engine profile.
    """
    from ..serving.figure_labels import figures_line as line

    return line(under, intervals, parts)


def expected_figures(setting: Setting) -> bool:
    """Whether a setting's figures are expected (an engine profile) rather than bounds.

    Parameters
    ----------
    setting : Setting
        The problem.

    Returns
    -------
    bool
        True under an engine profile.
    """
    from ..serving.figure_labels import expected

    return expected(setting)


def interval_columns(name: str) -> list[str]:
    """The interval columns of a figure.

    Parameters
    ----------
    name : str
        A figure's column.

    Returns
    -------
    list of str
        ``name_low80, name_high80, name_low90, name_high90``.
    """
    from ..serving.figure_labels import interval_columns as columns

    return columns(name)


def coverage_note(
    setting: Setting, layout: str = "TP", scenario: str | None = None, names=None
) -> str | None:
    """One line when a configuration's calibration class is not in support.

    Parameters
    ----------
    setting : Setting
        The problem.
    layout : str
        Its layout class: ``TP``, ``PP``, ``DP+EP`` or ``disaggregated``.
    scenario : str or None
        ``offline``, ``server`` or ``interactive``; None: each kind's own (a throughput at
        its most load, latencies under load).
    names : iterable of str, optional
        The figures shown: the kinds of those with intervals (a decode point has no time to
        first token); default every kind.

    Returns
    -------
    str or None
        The class with the fewest residuals among its kinds, how many it has and the band
        its intervals take instead (docs/model.md §F12); None in support or for a bound.
    """
    from ..serving.intervals import coverage_note as note

    return note(setting, layout, scenario, names)


def rows_coverage_note(setting: Setting, columns, n: int) -> str | None:
    """One line when a table's rows are not all in support: of the calibration classes of
    its rows' layouts (``row_layouts``) and of the kinds of the figures it shows with
    intervals, the least supported (as each row's ``support`` column reads them).

    Parameters
    ----------
    setting : Setting
        The problem.
    columns : DataFrame or dict of arrays
        The rows: their figures and degrees (``pipeline_degree``, ``tensor_degree``,
        ``attention_degree``, ``expert_degree``).
    n : int
        How many rows.

    Returns
    -------
    str or None
        That class's line (docs/model.md §F12); None in support, for a bound or no rows.
    """
    from ..serving.intervals import expected, has_interval, kinds_of
    from ..serving.support import STATUS_ORDER, row_layouts, support_line, support_of

    if not expected(setting) or n == 0:
        return None
    kinds = kinds_of([c for c in columns if has_interval(c)]) or ["throughput"]
    layouts = dict.fromkeys(row_layouts(columns, n, setting))
    found = [support_of(setting, kinds, str(layout)) for layout in layouts]
    s = min(found, key=lambda s: (STATUS_ORDER.index(s.status), s.rows))
    return None if s.status == "in support" else support_line(s)


def load_coverage_note(result: Any) -> str | None:
    """One line when a run under load's calibration class is not in support.

    Parameters
    ----------
    result : LoadResult
        A run under load (its setting, layout and pools give its class, served under load).

    Returns
    -------
    str or None
        The class with the fewest residuals among its kinds, how many it has and the band
        its intervals take instead (docs/model.md §F12); None in support or for a bound.
    """
    from ..serving.intervals import load_support
    from ..serving.support import support_line

    s = load_support(result)
    return None if s is None or s.status == "in support" else support_line(s)


def held_intervals(result: Any, max_rate_per_s: float) -> dict[str, float]:
    """The interval columns of the load a deployment holds within its targets.

    Parameters
    ----------
    result : LoadResult
        The deployment's run at that load.
    max_rate_per_s : float
        The load held.

    Returns
    -------
    dict
        ``max_rate_per_instance``'s interval columns; {} for a bound.
    """
    from ..serving.intervals import held_intervals as held

    return held(result, max_rate_per_s)


def ideal_setting(setting: Setting) -> Setting:
    """A setting's ideal bound: the same modelling choices without the engine profile.

    Parameters
    ----------
    setting : Setting
        The problem.

    Returns
    -------
    Setting
        The setting under the ideal preset (itself when already ideal).
    """
    from ..serving.intervals import ideal

    return ideal(setting)


def prefill_intervals(
    row: pd.Series,
    setting: Setting,
    gpus: float,
    chunk_tokens: float | None = None,
    discrete: bool = False,
) -> pd.Series:
    """A prefill's result with the interval entries of its figures, none faster than the
    same prefill under the ideal bound.

    Parameters
    ----------
    row : pandas.Series
        ``prefill``'s result (its ``bound`` says what limits it).
    setting : Setting
        The problem.
    gpus : float
        The prefill's GPUs.
    chunk_tokens : float or None
        The token budget per pass ``prefill`` was given (None: whole prompts).
    discrete : bool
        Whether ``prefill`` ran on whole layouts.

    Returns
    -------
    pandas.Series
        The row with each figure's intervals after it; unchanged for a bound.
    """
    from ..serving import prefill

    return prefill.prefill_intervals(row, setting, gpus, chunk_tokens, discrete)


def context_parallel_intervals(
    df: pd.DataFrame,
    setting: Setting,
    devices: int,
    device_gpus: float,
    bound: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """A context-parallel comparison with the intervals of its times and speed-ups.

    A single device's time to first token is one device's on ``device_gpus`` GPUs, a chain's
    on every device's; the speed-ups are paired ratios of one engine and one prompt. With
    ``bound`` no time's end is faster than the same time under the ideal bound.

    Parameters
    ----------
    df : pandas.DataFrame
        ``compare_context_parallel``'s table.
    setting : Setting
        The problem.
    devices : int
        Devices of the chain.
    device_gpus : float
        GPUs of each device.
    bound : pandas.DataFrame or None
        The same comparison under the ideal bound (``compare_context_parallel`` of
        ``intervals.ideal(setting)``), row for row; None: held within the peak only.

    Returns
    -------
    pandas.DataFrame
        The table with the interval columns.
    """
    import pandas as pd

    from ..serving.derived_intervals import paired_ratio_intervals
    from ..serving.intervals import (
        CHAIN_FIGURES,
        CONTEXT_PARALLEL_FIGURES,
        bound_floors,
        bound_of_tokens,
        series_intervals,
    )

    rows = []
    for i, (_, row) in enumerate(df.iterrows()):
        tokens = float(row["prompt_tokens"])
        for name, kind in CONTEXT_PARALLEL_FIGURES.items():
            on_chain = name in CHAIN_FIGURES
            gpus = devices * device_gpus if on_chain else device_gpus
            limit = str(bound_of_tokens(setting, tokens / devices if on_chain else tokens))
            floors = None
            if bound is not None:
                floors = bound_floors([bound[name].iloc[i]], [row[name]])
            row = series_intervals(row, setting, gpus, limit, {name: kind}, floors=floors,
                                   floor_kind="TTFT")  # fmt: skip
        row = row.to_dict()
        for name, chained in (
            ("speedup_ring_attention", "ring_attention_s"),
            ("speedup_kv_runahead", "kv_runahead_balanced_s"),
        ):
            row.update(paired_ratio_intervals(row, "single_device_s", chained, name))
        # one chain's devices, each in the chain's stratum: their error cancels in the spread
        row.update(
            dict.fromkeys(interval_columns("equal_chunks_spread"), row["equal_chunks_spread"])
        )
        rows.append(row)
    return pd.DataFrame(rows).reset_index(drop=True)


def requests_metadata(setting: Setting) -> dict[str, Any]:
    """The metadata of a result whose requests bring their own contexts.

    Parameters
    ----------
    setting : Setting
        The problem.

    Returns
    -------
    dict
        ``setting.metadata()``, its context stated as the requests'.
    """
    from ..serving.setting import requests_metadata as metadata

    return metadata(setting)


def whole_batch_kv_note(setting: Setting, gpus, batch, context, what: str = "") -> str | None:
    """The note of configurations whose whole-batch KV cache and weights exceed their HBM.

    Parameters
    ----------
    setting : Setting
        The problem.
    gpus, batch, context : float or array
        The configurations (arrays: many, described by how many exceed).
    what : str
        What many configurations are (a frontier's points).

    Returns
    -------
    str or None
        The note; None when none exceeds.
    """
    from ..serving.setting import whole_batch_kv_note as note

    return note(setting, gpus, batch, context, what)


def continuous_note(rows: Any) -> str | None:
    """The note of configurations with a GPU count, batch or degree not a whole number.

    Parameters
    ----------
    rows : Series, dict or DataFrame
        One configuration, or a table of them.

    Returns
    -------
    str or None
        That the figures are the paper's continuous model; None for whole numbers.
    """
    from ..serving.decode import continuous_note as note

    return note(rows)


def uneven_note(setting: Setting, gpus: float) -> str | None:
    """Why no whole layout of ``gpus`` GPUs serves a setting, when none splits it evenly.

    Parameters
    ----------
    setting : Setting
        The problem.
    gpus : float
        The GPUs.

    Returns
    -------
    str or None
        The reason; None when an even split exists or another reason applies.
    """
    from ..serving.decode import uneven

    return uneven(setting, gpus)


def memory_reason(setting: Setting, gpus: float) -> str:
    """Why a configuration does not fit its GPUs' memory, in words, with the fix.

    Parameters
    ----------
    setting : Setting
        Its model, precision and GPU.
    gpus : float
        GPUs of the configuration that does not fit.

    Returns
    -------
    str
        The weights alone past the GPUs' HBM (fewer weight bits or more GPUs), else the
        weights with the batch's KV cache.
    """
    from ..serving.decode import memory_reason as reason

    return reason(setting, gpus)


def redundant_note(setting: Setting, rows) -> str | None:
    """The line saying the redundant experts take memory only on the rows' layouts.

    Parameters
    ----------
    setting : Setting
        The problem (its model's ``redundant_experts``).
    rows : dict, pandas.Series or pandas.DataFrame
        Configurations with a ``tensor_degree``.

    Returns
    -------
    str or None
        The line, with the nearest counts whose slots split evenly over the layout's expert
        degree (``model.moe.redundant_note``); None without copies or where they balance.
    """
    import numpy as np

    from ..model.moe import redundant_note as note
    from ..model.step_calls import whole_expert_degrees

    copies = int(setting.model.redundant_experts)
    if not copies or "tensor_degree" not in rows:
        return None
    tensor = np.ravel(np.asarray(rows["tensor_degree"], dtype=float))
    experts = setting.model.routed_experts
    degrees = {e for t in set(tensor[np.isfinite(tensor)]) for e in
               whole_expert_degrees([experts], int(round(t)), copies)}  # fmt: skip
    return note(experts, copies, degrees)
