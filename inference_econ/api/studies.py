"""Scenarios, the paper's tables, studies' metadata, sensitivity sweeps, and the measured rows:
predictions compared with them, and an engine profile calibrated to them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from ..measured.calibration import Calibration
    from ..measured.comparison import Comparison
    from ..optimise.method import Method
    from ..runs.runner import RunResult
    from ..runs.study_run import StudyResult
    from ..serving.setting import Setting
    from ..specs.engine import EngineProfile
    from ..studies.scenario import Scenario


def load_scenario(name_or_path: str | Path) -> Scenario:
    """A scenario file (a path, or a shipped name such as ``table-1``).

    Parameters
    ----------
    name_or_path : str or Path
        The scenario.

    Returns
    -------
    Scenario
        Its figures, table or curves, checked.
    """
    from ..studies.scenario import load_scenario as load
    from .results import Scenario

    return Scenario.of(load(name_or_path))


def run_scenario(
    scenario: Scenario | str, out_dir: str | Path | None = None, **options
) -> RunResult:
    """A scenario run: its frontiers, table and figures (written to ``out_dir`` when given).

    Parameters
    ----------
    scenario : Scenario or str
        The scenario, or its name or file.
    out_dir : str or Path, optional
        Where its files are written.
    **options
        ``measured_csv``, ``progress``, ``observations``, ``offer_price``, ``assumptions``
        (``runs.runner.run_scenario``).

    Returns
    -------
    RunResult
        The frontiers, the table, the files written and the notes.
    """
    from ..runs.runner import run_scenario as run

    return run(scenario, out_dir, **options)


def curve_models(scenario: Scenario) -> list:
    """The models a scenario's curves serve (an offer of another model is not drawn).

    Parameters
    ----------
    scenario : Scenario
        The scenario.

    Returns
    -------
    list of Architecture
        One per curve.
    """
    from ..runs.runner import curve_models as models

    return models(scenario)


def run_table(
    scenario: Scenario | str, progress=None, assumptions: str | None = None
) -> pd.DataFrame:
    """A table scenario's rows (the paper's tables 1-5), with the paper's values beside ours.

    Parameters
    ----------
    scenario : Scenario or str
        The table's scenario.
    progress : callable, optional
        Called with a line of text as the work goes.
    assumptions : str, optional
        The preset (default the scenario's).

    Returns
    -------
    pandas.DataFrame
        The table.
    """
    from ..studies.tables import run_table as run

    return run(scenario, progress, assumptions)


def paper_deviations(table: pd.DataFrame) -> tuple[dict[str, float], bool]:
    """How far a reproduced table is from the paper's.

    Parameters
    ----------
    table : pandas.DataFrame
        ``run_table``'s table.

    Returns
    -------
    tuple
        (the largest relative deviation per column, whether every one is within tolerance).
    """
    from ..studies.tables import deviations, matches_paper

    worst = deviations(table).drop(columns="label").abs().max().to_dict()
    return worst, matches_paper(table)


def paper_tolerance() -> dict[str, float]:
    """The relative deviation from the paper's tables a reproduction is allowed, per column.

    Returns
    -------
    dict
        {column: relative tolerance}.
    """
    from ..studies.tables import TOLERANCE

    return dict(TOLERANCE)


def study_metadata(result: StudyResult) -> dict[str, Any]:
    """What a study was computed with, as a table's metadata.

    Parameters
    ----------
    result : StudyResult
        The study.

    Returns
    -------
    dict
        Its name, version, cells and axes.
    """
    from ..runs.study_run import study_metadata as metadata

    return metadata(result)


def default_speed(setting: Setting, method: Method) -> float:
    """The speed per request an elasticity is read at by default (the preference point's).

    Parameters
    ----------
    setting : Setting
        The problem.
    method : Method
        The frontier's search.

    Returns
    -------
    float
        Tokens/s per request.
    """
    from ..studies.sensitivity import default_speed as speed

    return speed(setting, method)


def elasticities(
    setting: Setting, at_speed: float | None, progress, method: Method
) -> pd.DataFrame:
    """The elasticity of the cost at a speed to each parameter (a tornado's rows).

    Parameters
    ----------
    setting : Setting
        The problem.
    at_speed : float, optional
        The speed per request the cost is read at.
    progress : callable, optional
        Called with a line of text as the work goes.
    method : Method
        The frontier's search.

    Returns
    -------
    pandas.DataFrame
        One row per parameter.
    """
    from ..studies.sensitivity import elasticities as compute

    return compute(setting, at_speed=at_speed, progress=progress, method=method)


def sweep(
    setting: Setting, parameter: str, values, at_speed: float | None, progress, method: Method
) -> pd.DataFrame:
    """The frontier's key figures as one parameter is scaled.

    Parameters
    ----------
    setting : Setting
        The problem.
    parameter : str
        The parameter scaled (``hbm_bandwidth``, ...).
    values : list of float
        Its factors.
    at_speed : float, optional
        The speed per request the cost is read at.
    progress : callable, optional
        Called with a line of text as the work goes.
    method : Method
        The frontier's search.

    Returns
    -------
    pandas.DataFrame
        One row per value.
    """
    from ..studies.sensitivity import sweep as compute

    return compute(setting, parameter, values, at_speed, progress, method)


def compare_measured(
    path,
    assumptions="paper",
    engine: str | None = None,
    progress=None,
    hardware: str | None = None,
    gpus: int | None = None,
    precision: str | None = None,
    jobs: int = 1,
    clock: str = "auto",
    dask: str | None = None,
    model: str | None = None,
) -> Comparison:
    """Measured rows against the model's predictions, row by row.

    Parameters
    ----------
    path : str or Path
        The measured rows (a CSV).
    assumptions : str or Assumptions
        The preset predicted under.
    engine : str, optional
        The engine profile (default each row's engine).
    progress : callable, optional
        Called with a line of text as the work goes.
    hardware : str, optional
        The GPU of the rows that name none (a plain ``vllm bench serve`` result).
    gpus : int, optional
        The GPU count of the rows that state none.
    precision : str, optional
        The precision (``FP8``, ``BF16``, ``FP4``) of the rows that state none.
    jobs : int
        Worker processes replaying the rows under load (the same table as with one); with
        ``dask='local'``, the local cluster's workers.
    clock : str
        How an engine profile prices each row's step: ``auto`` (the kernel clock where the row
        states an engine version the kernel tables time, on a GPU they were measured on),
        ``engine`` or ``kernel`` for every row.
    dask : str, optional
        Replay the rows under load on a Dask cluster: a running scheduler's address
        (``tcp://host:8786``, whose workers replay them; ``jobs`` must then be 1) or ``local``
        for a local cluster of ``jobs`` worker processes. The same table as one process's.
    model : str, optional
        The model of the rows that name none (SGLang's ``bench_serving`` result).

    Returns
    -------
    Comparison
        The table of rows and the preset's label.
    """
    from ..measured.comparison import compare

    return compare(
        path, assumptions, engine, progress, hardware, gpus, precision, jobs, clock, dask, model
    )


def calibrate(
    path,
    engine: str | None,
    holdout: bool,
    progress,
    split: str,
    hardware: str | None = None,
    gpus: int | None = None,
    precision: str | None = None,
    model: str | None = None,
) -> Calibration:
    """An engine profile's terms fitted to measured rows.

    Parameters
    ----------
    path : str or Path
        The measured rows (a CSV).
    engine : str or None
        The profile fitted; rows naming no engine are its rows. None: trtllm's, those rows
        left out.
    holdout : bool
        Whether each source is also predicted by a fit without it.
    progress : callable, optional
        Called with a line of text as the work goes.
    split : str
        How the held-out fits split the rows.
    hardware, gpus, precision, model : optional
        The GPU, GPU count, precision and model of the rows that state none (a benchmark
        tool's plain result), as ``compare_measured`` takes them.

    Returns
    -------
    Calibration
        The terms, their errors and the held-out errors.
    """
    from ..measured.calibration import calibrate as fit
    from ..measured.comparison import stated_columns

    stated = stated_columns(hardware, gpus, precision, model)
    return fit(path, engine, holdout=holdout, progress=progress, split=split, stated=stated)


def calibrated_yaml(
    result: Calibration, engine: str | EngineProfile, name: str | None = None
) -> str:
    """A calibration as an engine profile's YAML, derived from the profile it fitted.

    Parameters
    ----------
    result : Calibration
        The fit.
    engine : str or EngineProfile
        The profile fitted (a name, a file or the profile).
    name : str, optional
        The new profile's name.

    Returns
    -------
    str
        The YAML.
    """
    from ..measured.calibration_report import calibrated_yaml as to_yaml
    from ..specs.engine import load_engine

    return to_yaml(result, load_engine(engine), name)
