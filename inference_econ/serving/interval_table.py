"""Bands of measured over predicted (``Band``: quantiles, widened, moved by software drift),
the kinds of figure, and the earlier stratum table of expected figures (docs/model.md §F12,
"The earlier rule", ``intervals/achievable.yaml``): its strata (a figure's kind and regime, and
whether the fit saw its GPU and model), pooled upward where a stratum is sparse and widened
outside coverage; read and checked from its YAML. No figure reads the stratum table: the
calibration classes (``serving/support.py``) size every interval, and
``benchmarks/interval_coverage.py`` compares their coverage against it."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal, get_args, overload

from ..errors import SpecError, short
from ..model.breakdown import Bound
from .setting import Setting

#: Kinds of figure, each in the orientation its residuals are stated in: a rate for
#: throughput, a time for TPOT and TTFT.
FigureKind = Literal["throughput", "TPOT", "TTFT"]


KINDS: tuple[FigureKind, ...] = get_args(FigureKind)


#: Stratum dimensions, in the order a sparse stratum drops them (pools upward).
POOLING = ("nodes", "bound", "architecture", "seen")


#: The quantiles of measured/predicted the table holds: (low, high) per level.
QUANTILES = {80: ("q10", "q90"), 90: ("q05", "q95")}


@dataclass(frozen=True)
class Stratum:
    """Where a figure sits: its kind and regime, and whether the fit saw its GPU and model."""

    kind: FigureKind
    architecture: str = "dense"
    bound: Bound = "compute"
    nodes: str = "one node"
    seen: bool = True

    def key(self, dropped: int = 0) -> tuple:
        """The table key with the first ``dropped`` dimensions of ``POOLING`` pooled."""
        kept = POOLING[dropped:]
        values = {**self.__dict__, "seen": "seen" if self.seen else "unseen"}
        return (self.kind, *(values[d] if d in kept else "*" for d in POOLING))


@dataclass(frozen=True)
class Band:
    """Quantiles of measured/predicted (natural logs, in the kind's orientation) of a stratum,
    and which table entry gave them."""

    q05: float
    q10: float
    q90: float
    q95: float
    source: str
    rows: int

    def widened(self, factor: float, why: str = "") -> Band:
        """The band with its log-width multiplied by ``factor`` about the middle of its 90 %
        interval (``why``: the source's words for it; default: outside coverage)."""
        mid = (self.q05 + self.q95) / 2.0
        q05, q10, q90, q95 = (
            mid + factor * (v - mid) for v in (self.q05, self.q10, self.q90, self.q95)
        )
        wide = f", {factor:g} x as wide" if factor != 1.0 else ""
        source = why + wide if why else f"{self.source}{wide} (outside coverage)"
        return Band(q05, q10, q90, q95, source, self.rows)

    def centred(self) -> Band:
        """The band moved so that its 80 % interval's middle is the expected figure: its spread
        without its bias (a borrowed band: how the model misses the class it was sized on says
        nothing of which way it misses another)."""
        shift = (self.q10 + self.q90) / 2.0
        q05, q10, q90, q95 = (v - shift for v in (self.q05, self.q10, self.q90, self.q95))
        return Band(q05, q10, q90, q95, f"{self.source}, centred", self.rows)

    def drifted(self, shift: float) -> Band:
        """The band with its high end raised by ``shift`` (a log ratio; its low end lowered
        where ``shift`` is negative): software drift since the calibration round."""
        if shift == 0.0:
            return self
        up, down = max(shift, 0.0), min(shift, 0.0)
        return Band(
            self.q05 + down,
            self.q10 + down,
            self.q90 + up,
            self.q95 + up,
            f"{self.source}, drift {shift:+.3f}",
            self.rows,
        )

    def inverted(self) -> Band:
        """The band of the inverse figure (a time's band from a rate's): each end negated and
        the ends swapped."""
        return Band(
            -self.q95, -self.q90, -self.q10, -self.q05, f"{self.source}, inverted", self.rows
        )

    def envelope(self, other: Band) -> Band:
        return Band(
            min(self.q05, other.q05),
            min(self.q10, other.q10),
            max(self.q90, other.q90),
            max(self.q95, other.q95),
            f"{self.source} or {other.source}, the wider",
            max(self.rows, other.rows),
        )


@dataclass(frozen=True)
class IntervalTable:
    """The shipped table: quantiles by stratum and what it was made from."""

    strata: dict
    min_rows: int
    unseen_widening: float
    fitted_gpus: frozenset
    fitted_models: frozenset
    provenance: dict
    path: str
    #: kind -> (log ratio per publication round, rounds from calibration to the table's date)
    drift: dict = field(default_factory=dict)

    def band(self, stratum: Stratum, rounds: float | None = None) -> Band:
        """The quantiles of ``stratum``, pooled upward, widened outside coverage and moved by
        the kind's software drift over ``rounds`` publication rounds after the calibration
        round (default: the table's, up to the round it was written in)."""
        per_round, as_of = self.drift.get(stratum.kind, (0.0, 0.0))
        shift = per_round * (as_of if rounds is None else rounds)
        if stratum.seen:
            return self._pooled(stratum).drifted(shift)
        seen = self._pooled(Stratum(**{**stratum.__dict__, "seen": True}))
        band = seen.widened(self.unseen_widening)
        unseen = self._pooled(stratum, stop=len(POOLING) - 1)
        return (band.envelope(unseen) if unseen is not None else band).drifted(shift)

    @overload
    def _pooled(self, stratum: Stratum, stop: None = None) -> Band: ...
    @overload
    def _pooled(self, stratum: Stratum, stop: int) -> Band | None: ...
    def _pooled(self, stratum: Stratum, stop: int | None = None) -> Band | None:
        last = len(POOLING) if stop is None else stop
        for dropped in range(last + 1):
            entry = self.strata.get(stratum.key(dropped))
            if entry is not None:
                return entry
        if stop is not None:
            return None
        raise SpecError(self.path, "strata", f"has no entry for {stratum.kind}", "refit the table")

    def seen(self, setting: Setting) -> tuple[bool, bool]:
        """(GPU measured in the fitting data, model family measured in it)."""
        return setting.gpu.name in self.fitted_gpus, family(setting.model) in self.fitted_models


def family(arch) -> tuple:
    """A model's family for coverage: its shape (layers, width, query and KV heads, experts);
    Llama 3.3 70B and Llama 3.1 70B are one family, Llama 3.1 8B another."""
    experts = max(g.ffn.experts for g in arch.layer_groups)
    a = arch.attention
    return (arch.layers, arch.d_model, a.query_heads, a.kv_heads, experts)


def _table_path() -> Path:
    from ..specs.catalog import data_roots

    found = (r / "intervals" / "achievable.yaml" for r in data_roots())
    path = next((p for p in found if p.is_file()), None)
    if path is None:
        raise SpecError("intervals/achievable.yaml", "", "is missing", "reinstall the package")
    return path


@lru_cache(maxsize=1)
def table() -> IntervalTable:
    """The shipped interval table (``intervals/achievable.yaml``)."""
    from ..specs.yamlfile import load_yaml

    path = _table_path()
    return parse_table(load_yaml(path), str(path))


#: Largest |log(measured / predicted)| a table's quantile may state: a factor of e^5 (148)
#: either way, far beyond any fitted band (the shipped ones stay within 1.5); quantiles of
#: +-700 had printed intervals of 1e+305.
MAX_LOG_RATIO = 5.0


def parse_table(data: dict, source: str) -> IntervalTable:
    """An interval table from its YAML mapping (``source`` names it in errors): every part
    of the type it must have, every number within its bounds (a user's table on
    INFERENCE_ECON_PATH is read here too)."""
    from ..specs.schema import check_number

    data = _mapping(data, source, "")
    widening = check_number(
        data.get("unseen_widening", 1.0), source, "unseen_widening", minimum=1.0, maximum=10.0
    )
    return IntervalTable(
        _strata(data.get("strata"), source),
        int(
            check_number(
                data.get("min_rows", 0), source, "min_rows", minimum=0, maximum=1e9, integer=True
            )
        ),
        float(widening),
        frozenset(_names(data.get("fitted_gpus"), source, "fitted_gpus")),
        frozenset(_families(_names(data.get("fitted_models"), source, "fitted_models"))),
        dict(_mapping(data.get("provenance") or {}, source, "provenance")),
        source,
        _drift(data.get("drift"), source),
    )


def _mapping(value, source: str, where: str) -> dict:
    """A part of the table that must be a mapping, or the table's error naming it."""
    if not isinstance(value, dict):
        raise SpecError(source, where, f"expected a mapping, got {short(value)}", "refit the table")
    return value


def _names(value, source: str, where: str) -> list[str]:
    """A list of names (GPUs, models) of the table; absent: none."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SpecError(
            source, where, f"expected a list of names, got {short(value)}", "refit the table"
        )
    return value


def _families(names: list[str]) -> set:
    """The model families of the fitted models' names (one the catalog lacks matches none)."""
    from ..specs.architecture import load_model

    models = set()
    for name in names:
        try:
            models.add(family(load_model(name)))
        except SpecError:
            continue  # a model the catalog no longer has: nothing can match it
    return models


def _strata(value, source: str) -> dict:
    """The table's bands by stratum key, each checked: a kind, ordered quantiles within
    ``MAX_LOG_RATIO``, a whole count of rows."""
    from ..specs.schema import check_number

    if value is None:
        return {}
    if not isinstance(value, list):
        raise SpecError(source, "strata", f"expected a list, got {short(value)}", "refit the table")
    strata = {}
    for i, item in enumerate(value):
        where = f"strata[{i}]"
        s = _mapping(item, source, where)
        kind = s.get("kind")
        if not isinstance(kind, str) or kind not in KINDS:
            raise SpecError(source, f"{where}.kind", f"is {short(kind)}", f"one of {KINDS}")
        q = {
            k: float(
                check_number(
                    s.get(k),
                    source,
                    f"{where}.{k}",
                    minimum=-MAX_LOG_RATIO,
                    maximum=MAX_LOG_RATIO,
                    unit="log ratio",
                )
            )
            for k in ("q05", "q10", "q90", "q95")
        }
        if not q["q05"] <= q["q10"] <= q["q90"] <= q["q95"]:
            raise SpecError(source, where, "quantiles out of order", "refit the table")
        rows = check_number(
            s.get("rows", 0), source, f"{where}.rows", minimum=0, maximum=1e9, integer=True
        )
        dims = tuple(str(s.get(d, "*")) if d != "seen" else _seen_key(s.get(d)) for d in POOLING)
        label = ", ".join(v for v in dims if v != "*") or "all"
        strata[(kind,) + dims] = Band(**q, source=f"{kind}: {label}", rows=int(rows))
    return strata


def _drift(value, source: str) -> dict:
    """Each kind's software drift: (log ratio per round, rounds), within their bounds."""
    from ..specs.schema import check_number

    drift = {}
    for kind, d in _mapping(value or {}, source, "drift").items():
        where = f"drift.{kind}"
        if kind not in KINDS or not isinstance(d, dict):
            raise SpecError(
                source, where, "is not a kind's drift", f"a mapping under one of {KINDS}"
            )
        drift[kind] = tuple(
            float(check_number(d.get(k), source, f"{where}.{k}", minimum=lo, maximum=hi, unit=u))
            for k, lo, hi, u in (
                ("log_per_round", -1.0, 1.0, "log ratio"),
                ("rounds", 0.0, 20.0, "rounds"),
            )
        )
    return drift


def _seen_key(value) -> str:
    if value in (None, "*"):
        return "*"
    return "seen" if value else "unseen"
