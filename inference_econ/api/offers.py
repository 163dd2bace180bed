"""Inverse economics (docs/model.md Part D): observed offers (an API's speed and price), and
what they imply - feasibility, margin, the buyers' preference and a closed model's size."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..studies.inverse.feasibility import FeasibilityResult
    from ..studies.inverse.margin import MarginResult
    from ..studies.inverse.preference import PreferenceFit
    from ..studies.inverse.size import SizeResult
    from ..studies.inverse.variants import InverseOptions
    from ..studies.observations import Observation, Rows


def load_observations(name_or_path: str | Path) -> Rows:
    """The offers of an observations file (shipped by name, or a CSV).

    Parameters
    ----------
    name_or_path : str or Path
        A shipped file's name (``paper-2025``) or a CSV.

    Returns
    -------
    Rows
        The offers, with notes of the rows left out.
    """
    from ..studies.observations import load_observations as load

    return load(name_or_path)


def find_observations(name_or_path: str | Path) -> Path:
    """The file an observations name stands for.

    Parameters
    ----------
    name_or_path : str or Path
        A shipped file's name or a CSV.

    Returns
    -------
    Path
        The file.
    """
    from ..studies.observations import find_observations as find

    return find(name_or_path)


def observation(tokens_per_s: float, usd_per_mtok: float, model: str, provider: str) -> Observation:
    """One offer from numbers (its output price; the input price the same).

    Parameters
    ----------
    tokens_per_s : float
        The speed observed per request.
    usd_per_mtok : float
        The output price, $ per million tokens.
    model, provider : str
        What is served, and by whom.

    Returns
    -------
    Observation
        The offer.
    """
    from ..studies.observations import observation as offer

    return offer(tokens_per_s, usd_per_mtok, model, provider)


def select_offers(observations, provider: str | None, model: str | None) -> tuple:
    """The offers of a provider and/or a model (nothing matching is an error).

    Parameters
    ----------
    observations : iterable of Observation
        The offers.
    provider, model : str, optional
        The filters (case-insensitive; a model also by the spec it names).

    Returns
    -------
    tuple of Observation
        The offers kept.
    """
    from ..studies.observations import select

    return select(observations, provider, model)


def check_blend(basis: str, ratio_given: bool, source: str, blended: str) -> None:
    """Refuse a blend ratio given with the ``output`` price basis, which weighs no input price.

    Parameters
    ----------
    basis : str
        The offers' price basis.
    ratio_given : bool
        Whether a blend ratio is given.
    source, blended : str
        Where the values come from, and how its user asks for the blended basis.

    Returns
    -------
    None
    """
    from ..studies.observations import check_blend as check

    check(basis, ratio_given, source, blended)


def overlay_points(
    observations, basis: str = "output", input_per_output: float = 3.0, models=None
) -> tuple[list[dict], list[Observation]]:
    """Offers as points over a frontier figure, and those of no model drawn.

    Parameters
    ----------
    observations : iterable of Observation
        The offers.
    basis : {"output", "blended"}
        The price drawn.
    input_per_output : float
        Input tokens per output token of a blended price.
    models : list of Architecture, optional
        The models drawn (None keeps every offer).

    Returns
    -------
    tuple
        (points, offers left out).
    """
    from ..studies.observations import overlay_points as overlay

    return overlay(observations, basis, input_per_output, models)


def shared_grids():
    """A context in which the offers analysed (``feasibility``, ``margin``, ``implied_size``)
    share the grids of their model's settings: build each once for a whole observations file.

    Returns
    -------
    contextlib.AbstractContextManager
        Enter it around the loop over offers; the figures are the same as without it.
    """
    from ..studies.inverse.variants import shared_grids as shared

    return shared()


def feasibility(
    observed: Observation, options: InverseOptions | None = None, **settings
) -> FeasibilityResult:
    """Which settings put an offer on or inside its model's frontier (§D2).

    Parameters
    ----------
    observed : Observation
        The offer.
    options : InverseOptions, optional
        The settings tried.
    **settings
        The same, as keywords (``criterion``, ``hardware``, ``assumptions``, ...).

    Returns
    -------
    FeasibilityResult
        A verdict per setting tried.
    """
    from ..studies.inverse.feasibility import feasibility as analyse

    return analyse(observed, options, **settings)


def feasibility_frontiers(observed: Observation, **settings) -> dict[str, Any]:
    """The frontiers a feasibility analysis compares an offer with, one per setting tried.

    Parameters
    ----------
    observed : Observation
        The offer.
    **settings
        The settings tried (``hardware``, ``assumptions``, ``context_tokens``, ...).

    Returns
    -------
    dict
        {setting's label: Frontier}.
    """
    from ..studies.inverse.feasibility import frontiers

    return frontiers(observed, **settings)


def margin(
    observed: Observation, options: InverseOptions | None = None, **settings
) -> MarginResult:
    """The provider's price against the cost at the observed speed, as markups (§D3).

    Parameters
    ----------
    observed : Observation
        The offer.
    options : InverseOptions, optional
        The settings tried.
    **settings
        The same, as keywords.

    Returns
    -------
    MarginResult
        A markup per setting tried.
    """
    from ..studies.inverse.margin import margin as analyse

    return analyse(observed, options, **settings)


def fit_preference(observations, **settings) -> PreferenceFit:
    """Fit k of speed^k/price to observed offers (§D4).

    Parameters
    ----------
    observations : iterable of Observation
        The offers.
    **settings
        The settings tried (``hardware``, ``weight_bits``, ...).

    Returns
    -------
    PreferenceFit
        The fitted exponent and each offer's point.
    """
    from ..studies.inverse.preference import fit_preference as fit

    return fit(observations, **settings)


def implied_size(
    observed: Observation, options: InverseOptions | None = None, **settings
) -> SizeResult:
    """The parameter counts of a family that put an offer on the frontier (§D5).

    Parameters
    ----------
    observed : Observation
        The offer.
    options : InverseOptions, optional
        The settings tried.
    **settings
        The same, as keywords (``family``, ``markup``, ...).

    Returns
    -------
    SizeResult
        A size per setting tried.
    """
    from ..studies.inverse.size import implied_size as size

    return size(observed, options, **settings)
