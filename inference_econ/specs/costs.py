"""What owning an accelerator costs (docs/model.md §G3): a cost file of dated, sourced
assumptions (``costs/*.yaml``) from which ``model.economics.owned_price`` makes the ``owned``
price basis, and the facility's PUE that turns IT power into facility power (§G2).

A cost file gives the purchase price of each accelerator with its share of the server, the
years it is depreciated over, the price of electricity, the PUE, the hosting price per kW of
IT capacity and month, the network and storage bought with the servers (a share of their
price) and the mean draw as a share of the IT power provisioned.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import SpecError, short
from . import catalog
from .hardware import GPU, _date
from .inputs import record
from .schema import Reader
from .yamlfile import load_yaml

#: The cost file used when none is named.
DEFAULT_COSTS = "owned-2025"


@dataclass(frozen=True)
class OwnedCosts:
    """The assumptions of owning (one cost file)."""

    name: str
    date: str
    depreciation_years: float
    usd_per_kwh: float
    pue: float
    hosting_usd_per_kw_month: float
    network_storage_fraction: float
    average_power_fraction: float
    #: (accelerator name, USD) pairs: the accelerator with its share of the server.
    purchase_usd_per_gpu: tuple[tuple[str, float], ...]
    source_file: str = ""

    def purchase_usd(self, gpu: GPU) -> float:
        """What one ``gpu`` costs to buy with its server share; refused when the file has no
        price for it (matched by name or alias, ignoring case and punctuation)."""
        wanted = {_key(gpu.name), *(_key(a) for a in gpu.aliases)}
        for name, usd in self.purchase_usd_per_gpu:
            if _key(name) in wanted:
                return usd
        known = ", ".join(n for n, _ in self.purchase_usd_per_gpu)
        raise SpecError(
            catalog.display_path(self.source_file) or self.name,
            f"purchase_usd_per_gpu.{gpu.name}",
            f"has no purchase price for {gpu.name} (it prices {known})",
            f"add '{gpu.name}: <USD>' under purchase_usd_per_gpu (with its source), or choose a"
            " rental --price-basis",
        )


def _key(name: str) -> str:
    return "".join(ch for ch in str(name).lower() if ch.isalnum())


def costs_from_dict(data, source: str = "<dict>") -> OwnedCosts:
    """Read and check a cost file's mapping."""
    r = Reader(data, source)
    name = r.string("name")
    r.text_list("aliases")
    r.string("description", "")
    date = _date(r.raw("date"), source, "date")
    years = r.number("depreciation_years", minimum=0, exclusive_minimum=True, maximum=50)
    kwh = r.number("usd_per_kwh", minimum=0, maximum=100, unit="USD/kWh")
    pue = r.number("pue", minimum=1, maximum=5)
    hosting = r.number("hosting_usd_per_kw_month", minimum=0, maximum=1e5, unit="USD per kW-month")
    network = r.number("network_storage_fraction", minimum=0, maximum=10)
    draw = r.number("average_power_fraction", minimum=0, exclusive_minimum=True, maximum=1)
    table = r.mapping("purchase_usd_per_gpu")
    if not table:
        raise SpecError(source, "purchase_usd_per_gpu", "is empty", "give 'GPU name: USD' pairs")
    prices = []
    for gpu, usd in table.items():
        if not isinstance(gpu, str):
            raise SpecError(
                source, "purchase_usd_per_gpu", f"expected a GPU name, got {short(gpu)}", ""
            )
        sub = Reader({gpu: usd}, source, "purchase_usd_per_gpu")
        prices.append((gpu, float(sub.number(gpu, minimum=1, maximum=1e9, unit="USD"))))
    r.finish()
    return OwnedCosts(
        name=name,
        date=date,
        depreciation_years=float(years),
        usd_per_kwh=float(kwh),
        pue=float(pue),
        hosting_usd_per_kw_month=float(hosting),
        network_storage_fraction=float(network),
        average_power_fraction=float(draw),
        purchase_usd_per_gpu=tuple(prices),
        source_file=source,
    )


@lru_cache(maxsize=32)
def _load_path(path: Path) -> OwnedCosts:
    return costs_from_dict(load_yaml(path), str(path))


def load_costs(name_or_path=None) -> OwnedCosts:
    """A cost file by name, alias or path (default ``DEFAULT_COSTS``)."""
    if isinstance(name_or_path, OwnedCosts):
        return name_or_path
    if name_or_path is not None and (
        not isinstance(name_or_path, (str, os.PathLike)) or not str(name_or_path).strip()
    ):  # '' or [] had silently given the default file
        raise SpecError(
            "argument",
            "costs",
            f"expected a cost file's name or path, got {short(name_or_path)}",
            "give a name ('owned-2025') or a path, or leave it out for the default",
        )
    path = catalog.resolved(catalog.find("costs", name_or_path or DEFAULT_COSTS))
    record(path)
    return _load_path(path)
