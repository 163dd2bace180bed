"""One configuration seen beyond its decode step: its prefill, a whole request, a context-
parallel chain, disaggregated pools, and the output/input price ratio; with the search
method and the frontier's columns a command reads without pandas."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from ..optimise.method import Method
    from ..optimise.optimiser import FrontierColumns
    from ..serving.operations_table import OperationTable
    from ..serving.setting import Setting


def search_method(
    method: str | Method | None = None, *, discrete=False, grid_points=None, all_points=False
) -> Method:
    """How a frontier is searched.

    Parameters
    ----------
    method : {"grid", "discrete", "exhaustive"} or Method, optional
        The search (default the paper's continuous grid).
    discrete : bool
        Whole layouts.
    grid_points : int, optional
        Points of the grid (default the table's).
    all_points : bool
        Every point, not only the paper's range.

    Returns
    -------
    Method
        The method, its options checked.
    """
    from ..optimise.method import make_method

    options: dict[str, Any] = {"discrete": discrete, "all_points": all_points}
    if grid_points is not None:
        options["grid_points"] = grid_points
    return make_method(method, **options)


def frontier_columns(setting: Setting, method: Method) -> FrontierColumns:
    """A frontier's points as arrays, computed without pandas.

    Parameters
    ----------
    setting : Setting
        The problem.
    method : Method
        The search (``search_method``).

    Returns
    -------
    FrontierColumns
        The points' columns, notes and key points.
    """
    from ..optimise.optimiser import frontier_columns as columns

    return columns(setting, method)


def cached_prompt_tokens(prompt_tokens: float, cached_fraction: float) -> int:
    """The tokens of a prompt found in the prefix cache.

    Parameters
    ----------
    prompt_tokens : float
        The prompt's tokens.
    cached_fraction : float
        The fraction cached.

    Returns
    -------
    int
        Whole tokens cached.
    """
    from ..serving.prefill import cached_prompt_tokens as cached

    return cached(prompt_tokens, cached_fraction)


def cache_note(prompt_tokens: float, cached_fraction: float) -> str | None:
    """The note of a prompt partly found in the prefix cache.

    Parameters
    ----------
    prompt_tokens : float
        The prompt's tokens.
    cached_fraction : float
        The fraction cached.

    Returns
    -------
    str or None
        What the cache saves; None when nothing is cached.
    """
    from ..serving.prefill import cache_note as note

    return note(prompt_tokens, cached_fraction)


def prefill(
    setting: Setting,
    gpus: float,
    prompt_tokens: float,
    *,
    batch: float = 1.0,
    cached_tokens: float = 0.0,
    chunk_tokens: float | None = None,
    discrete: bool = False,
) -> pd.Series:
    """The prefill of a batch of prompts (docs/model.md Part B).

    Parameters
    ----------
    setting : Setting
        The problem.
    gpus : float
        The GPUs.
    prompt_tokens : float
        Tokens of each prompt.
    batch : float
        Prompts prefilled together.
    cached_tokens : float
        Tokens of each prompt found in the prefix cache.
    chunk_tokens : float, optional
        Prefill in chunks of this many tokens.
    discrete : bool
        Whole layouts.

    Returns
    -------
    pandas.Series
        Latency, throughput, cost, MFU, layout and what bounds it.
    """
    from ..serving.prefill import prefill as compute

    return compute(
        setting,
        gpus,
        prompt_tokens,
        batch=batch,
        cached_tokens=cached_tokens,
        chunk_tokens=chunk_tokens,
        discrete=discrete,
    )


def request(
    setting: Setting,
    gpus: float,
    batch: float,
    prompt_tokens: float,
    output_tokens: float,
    prefill_batch: float | None = None,
    cached_fraction: float = 0.0,
    discrete: bool = False,
) -> pd.Series:
    """One request from prompt to last token on a configuration.

    Parameters
    ----------
    setting : Setting
        The problem.
    gpus, batch : float
        The configuration.
    prompt_tokens, output_tokens : float
        The request's tokens in and out.
    prefill_batch : float, optional
        Prompts prefilled together.
    cached_fraction : float
        The fraction of the prompt found in the prefix cache.
    discrete : bool
        Whole layouts.

    Returns
    -------
    pandas.Series
        Time to first token, decode speed, end-to-end time and costs.
    """
    from ..serving.requests import request as view

    return view(
        setting, gpus, batch, prompt_tokens, output_tokens, prefill_batch, cached_fraction, discrete
    )


def point_operations(setting: Setting, row: dict, discrete: bool = False) -> OperationTable | None:
    """The decode step of a described configuration as its operations, priced by the
    setting's clock (docs/model.md "A step as operations"): what ``point`` prints under its
    figures.

    Parameters
    ----------
    setting : Setting
        The problem.
    row : dict
        The configuration as ``point_fields`` describes it (its GPUs, batch and layout).
    discrete : bool
        Whole layouts.

    Returns
    -------
    OperationTable or None
        The operations and their seconds by breakdown part; None with speculative decoding
        (a cycle is several passes, not one step).
    """
    from ..serving.operations_table import operation_table

    return operation_table(setting, row, discrete)


def operations(setting: Setting, gpus: float, batch: float, discrete: bool = False) -> pd.DataFrame:
    """The decode step of a configuration as its operations, priced by the setting's clock
    (docs/model.md "A step as operations").

    Parameters
    ----------
    setting : Setting
        The problem (no speculation: a cycle is several passes).
    gpus, batch : float
        The configuration, at its best layout (as ``point`` finds it).
    discrete : bool
        Whole layouts.

    Returns
    -------
    pandas.DataFrame
        One row per operation: its name, class, calls, seconds (``time_s``) and share of the
        step, FLOP, bytes per GPU, shape, its seconds by breakdown part (their sums over the
        rows are ``point``'s breakdown) and the clock.
    """
    import pandas as pd

    from ..errors import SpecError
    from ..serving.decode import evaluate_columns

    columns = evaluate_columns(setting, gpus, batch, discrete)
    table = point_operations(setting, {k: v[0] for k, v in columns.items()}, discrete)
    if table is None:
        raise SpecError(
            "argument",
            "setting",
            "speculative decoding has several passes a cycle, not one step",
            "give a setting without a draft",
        )
    return pd.DataFrame(table.columns(detail=True))


def compare_context_parallel(
    setting: Setting,
    prompt_tokens,
    devices: int,
    link_bytes_per_s: float | None = None,
    devices_gpus: float = 1.0,
) -> pd.DataFrame:
    """Single device against ring attention and KV-Runahead chains, per prompt length.

    Parameters
    ----------
    setting : Setting
        The problem.
    prompt_tokens : list of float
        The prompt lengths.
    devices : int
        Devices of the chain.
    link_bytes_per_s : float, optional
        Bandwidth between devices (default the GPU's).
    devices_gpus : float
        GPUs of each device.

    Returns
    -------
    pandas.DataFrame
        One row per prompt length.
    """
    from ..serving.context_parallel import compare

    return compare(setting, prompt_tokens, devices, link_bytes_per_s, devices_gpus)


def compare_disaggregation(
    setting: Setting,
    prompt_tokens: float,
    output_tokens: float,
    decode_gpus: float,
    decode_batch: float,
    prefill_gpus: float | None = None,
    discrete: bool = False,
) -> pd.DataFrame:
    """Prefill and decode on the same GPUs against separate pools.

    Parameters
    ----------
    setting : Setting
        The problem.
    prompt_tokens, output_tokens : float
        The request's tokens in and out.
    decode_gpus, decode_batch : float
        The decode configuration.
    prefill_gpus : float, optional
        The prefill pool's GPUs.
    discrete : bool
        Whole layouts.

    Returns
    -------
    pandas.DataFrame
        One row per arrangement (``attrs``: its notes and the decode layout).
    """
    from ..serving.disaggregation import compare

    return compare(
        setting,
        prompt_tokens,
        output_tokens,
        decode_gpus,
        decode_batch,
        prefill_gpus,
        discrete=discrete,
    )


def price_ratio(model, hardware, context_tokens: float, **settings) -> pd.Series:
    """The output/input price ratio at the decode frontier's preference point (paper §4.3).

    Parameters
    ----------
    model : str or Architecture
        The model.
    hardware : str or GPU
        The GPU.
    context_tokens : float
        The decode's context.
    **settings
        Settings of what is served.

    Returns
    -------
    pandas.Series
        The ratio, the prices and the preference point.
    """
    from ..studies.prices import price_ratio as ratio

    return ratio(model, hardware, context_tokens, **settings)
