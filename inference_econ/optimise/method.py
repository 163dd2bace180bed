"""How a frontier is searched: the method, apart from the problem (a ``Setting``).

* ``grid`` - the paper's continuous grid (docs/model.md §A7): real-valued GPU counts and
  batches, ``grid_points`` per axis, searched fast (``grid.py``);
* ``discrete`` - whole GPUs, nodes, batches and layouts one could deploy (§B7, ``discrete.py``);
* ``exhaustive`` - the same grid as ``grid`` by the plain loop over every layout at every point,
  in float64: slow, the reference the fast search is tested against.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import settings as table
from ..errors import SpecError

KINDS = ("grid", "discrete", "exhaustive")


@dataclass(frozen=True)
class Method:
    """A search method and its one option, the points per axis of the grid."""

    kind: str = "grid"
    grid_points: int = 400

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise SpecError(
                "argument", "method", f"unknown method {self.kind!r}", f"choose {', '.join(KINDS)}"
            )
        table.option("grid_points").check(self.grid_points)

    @property
    def discrete(self) -> bool:
        return self.kind == "discrete"


#: The paper's grid with 400 points per axis.
GRID = Method()


def make_method(method: str | Method | None = None, **options) -> Method:
    """A Method from a name and the ``method`` rows of the table (discrete, grid_points)."""
    if isinstance(method, Method) and not options:
        return method
    values = table.check(options, [table.METHOD])
    kind = method.kind if isinstance(method, Method) else (method or "grid")
    if values["discrete"]:
        if kind not in ("grid", "discrete"):
            raise SpecError(
                "argument", "discrete", f"conflicts with method {kind!r}", "give one of them"
            )
        kind = "discrete"
    return Method(kind=kind, grid_points=values["grid_points"])
