"""The kinds of GPU-hour price (docs/model.md §G1), in plain Python so that the command line
lists them without loading a spec.

``paper``: the paper's rule (the lowest long-term rental rate less a third of markup, or a figure
scaled from the paper's H100 by public rate ratios); ``on-demand`` and ``reserved-1y`` /
``reserved-3y``: a cloud's list price without and with a commitment; ``spot``: interruptible
capacity; ``market``: what GPU marketplaces charge; ``owned``: the total cost of owning,
computed from a cost file (``specs/costs.py``, ``model.economics.owned_price``). A comparison
uses one basis and says which.
"""

from __future__ import annotations

from typing import Literal, get_args

PriceBasis = Literal["paper", "on-demand", "reserved-1y", "reserved-3y", "spot", "market", "owned"]
PRICE_BASES: tuple[PriceBasis, ...] = get_args(PriceBasis)
#: Bases a hardware file lists (``owned`` is computed from a cost file, never listed).
LISTED_BASES = PRICE_BASES[:-1]
#: The basis of a file's ``price_usd_per_hour`` when it does not say (docs/user-guide.md).
DEFAULT_PRICE_BASIS: PriceBasis = "paper"
