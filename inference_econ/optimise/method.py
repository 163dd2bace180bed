"""How a frontier is searched: the method, apart from the problem (a ``Setting``).

* ``grid`` - the paper's continuous grid (docs/model.md §A7): real-valued GPU counts and
  batches, ``grid_points`` per axis, searched fast (``grid.py``);
* ``discrete`` - whole GPUs, nodes, batches and layouts one could deploy (§B7, ``discrete.py``);
* ``exhaustive`` - the same grid as ``grid`` by the plain loop over every layout at every point,
  in float64: slow, the reference the fast search is tested against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast, get_args

from .. import settings as table
from ..errors import SpecError

#: How the frontier is searched: the paper's grid, whole deployable layouts, or every layout.
MethodKind = Literal["grid", "discrete", "exhaustive"]
KINDS: tuple[MethodKind, ...] = get_args(MethodKind)


#: The grid's ceiling (§A7): up to 2^18 GPUs, batches up to 2^(18 + log2 s) for sparsity s.
GRID_MAX_LOG2 = 18

#: The paper's range of a frontier: speeds from the fastest down to 1/100 of it (§A7).
SPEED_RANGE = 100.0


@dataclass(frozen=True)
class Method:
    """A search method, the points per axis of its grid, and whether the frontier keeps its
    slow tail below the paper's range (fastest/100 to fastest)."""

    kind: MethodKind = "grid"
    grid_points: int = table.default("grid_points")
    all_points: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise SpecError(
                "argument", "method", f"unknown method {self.kind!r}", f"choose {', '.join(KINDS)}"
            )
        table.option("grid_points").check(self.grid_points)

    @property
    def discrete(self) -> bool:
        return self.kind == "discrete"

    @property
    def label(self) -> str:
        """How outputs name the method: "continuous grid 400 x 400" (real-valued GPUs, batches
        and degrees, §A5), "discrete (400 batch sizes)", "continuous exhaustive 60 x 60"."""
        base = (
            f"discrete ({self.grid_points} batch sizes)"
            if self.discrete
            else f"continuous {self.kind} {self.grid_points} x {self.grid_points}"
        )
        return base if self.all_points else f"{base}, speeds from fastest/{SPEED_RANGE:g}"


#: The paper's grid with 400 points per axis.
GRID = Method()


def make_method(method: str | Method | None = None, **options) -> Method:
    """A Method from a name and the ``method`` rows of the table (discrete, grid_points)."""
    if isinstance(method, Method) and not options:
        return method
    values = table.check(options, [table.METHOD])
    # a name is checked by Method itself
    kind = method.kind if isinstance(method, Method) else cast(MethodKind, method or "grid")
    if values["discrete"]:
        if kind not in ("grid", "discrete"):
            raise SpecError(
                "argument", "discrete", f"conflicts with method {kind!r}", "give one of them"
            )
        kind = "discrete"
    return Method(kind=kind, grid_points=values["grid_points"], all_points=values["all_points"])
