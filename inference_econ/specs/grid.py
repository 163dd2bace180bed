"""Carbon intensity of a named grid (docs/model.md §G4): a country's published yearly average,
or a cloud region's, read from the data that CodeCarbon ships (its ``global_energy_mix.json``:
Ember and Our World in Data country averages; its ``cloud/impact.csv``: cloud regions with
their sources). The optional ``carbon`` extra installs CodeCarbon; a grid intensity given in
gCO2/kWh needs nothing.
"""

from __future__ import annotations

import csv
import importlib.util
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..errors import SpecError, did_you_mean, short

#: The files read, relative to CodeCarbon's package folder.
COUNTRIES = Path("data/private_infra/global_energy_mix.json")
CLOUD = Path("data/cloud/impact.csv")


@dataclass(frozen=True)
class GridIntensity:
    """Grams of CO2 per kWh of one grid, and where the figure comes from."""

    g_per_kwh: float
    source: str


def _package_folder() -> Path:
    """CodeCarbon's folder, found without importing it (its import loads a tracker)."""
    spec = importlib.util.find_spec("codecarbon")
    if spec is None or not spec.submodule_search_locations:
        raise SpecError(
            "argument",
            "grid_region",
            "naming a grid region needs CodeCarbon's published averages, which are not installed",
            "pip install 'inference-econ[carbon]', or give the intensity itself with "
            "--grid-intensity (gCO2/kWh)",
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _version(folder: Path) -> str:
    for meta in folder.parent.glob("codecarbon-*.dist-info"):
        return meta.name.removeprefix("codecarbon-").removesuffix(".dist-info")
    return "?"


@cache
def regions() -> dict[str, GridIntensity]:
    """Every named grid: ISO 3166 alpha-3 codes and country names, and cloud regions as
    ``provider:region`` (keys in lower case)."""
    folder = _package_folder()
    tag = f"CodeCarbon {_version(folder)}"
    out: dict[str, GridIntensity] = {}
    try:
        countries = json.loads((folder / COUNTRIES).read_text(encoding="utf-8"))
        with open(folder / CLOUD, encoding="utf-8-sig", newline="") as handle:
            cloud = list(csv.DictReader(handle))
    except (OSError, ValueError) as exc:
        raise SpecError(
            str(folder),
            "grid_region",
            f"CodeCarbon's grid data could not be read ({exc})",
            "reinstall the carbon extra, or give --grid-intensity (gCO2/kWh)",
        ) from None
    for code, row in countries.items():
        value = row.get("carbon_intensity")
        if not isinstance(value, (int, float)) or value < 0:
            continue
        where = f"{row.get('country_name', code)} {row.get('year', '')} average".replace("  ", " ")
        grid = GridIntensity(float(value), f"{where} (Ember / Our World in Data via {tag})")
        out[code.lower()] = grid
        if row.get("country_name"):
            out[str(row["country_name"]).lower()] = grid
    for row in cloud:
        try:
            value = float(row["impact"])
        except (KeyError, ValueError):
            continue
        key = f"{row['provider']}:{row['region']}".lower()
        out[key] = GridIntensity(value, f"{key} ({row.get('source') or 'no source'}, via {tag})")
    return out


def grid_intensity(region: str) -> GridIntensity:
    """The intensity of a named grid: a country (``France``, ``FRA``) or a cloud region
    (``gcp:europe-west4``, ``aws:us-east-1``); an unknown name gets a did-you-mean."""
    known = regions()
    key = str(region).strip().lower()
    if key in known:
        return known[key]
    matches = [k for k in known if k.split(":", 1)[-1] == key]
    if len(matches) == 1:
        return known[matches[0]]
    hint = did_you_mean(key, list(known)) if not matches else ""
    raise SpecError(
        "argument",
        "grid_region",
        f"no grid named {short(region)}"
        + (f" (several clouds have it: {', '.join(matches)})" if matches else ""),
        hint or "name a country (France, FRA) or a cloud region (gcp:us-central1)",
    )
