"""Calibration classes of expected figures (docs/model.md §F12, "Support"): what kind of
configuration a figure is (dense or MoE; its layout class: tensor-parallel, pipelined,
attention-data-parallel with expert parallelism, or disaggregated; its GPU generation; its
engine; its scenario), how many measured residuals that class has in the shipped class table
(``intervals/classes.yaml``), and the band its interval takes (``figure_class``,
``class_bands``, ``support_of``; ``row_layouts`` reads a table's layout classes).

The rule: a class whose residuals come from at least ``min_rows`` configurations (the table's
writer counts them; a concurrency sweep is one) is *in support* and takes its own conformal
band for a figure of a model among its residuals' or where those are of at least
``min_models`` models (a band sized on one or two models measures how far the model misses
those, not a model it was never held against); a figure of another model, of a thinner class
(*near*: some residuals) or of an empty one (*extrapolating*: none) takes the widest band of the
in-support classes of its kind nearest to it (fewest dimensions differing, ``distance``; not one
of too few models, none of them its own), its log-width multiplied by the kind's ``widening``
at that distance (``multiplier``; growing with it) and the whole moved so that its 80 %
interval's middle is the expected figure (``Band.centred``: the spread of the model's misses
there, not their bias); where no class of its kind is in support, the band of all the kind's
residuals pooled, widened by the kind's pooled factor. Both are fitted where the table is
written, on the calibration residuals sized by the rule, an in-support class's with that class
left out (``benchmarks/class_widening.py``). The kind's software drift is added to every band as the
stratum table's is (``interval_table.Band.drifted``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import SpecError, plural, short
from .interval_table import KINDS, Band
from .setting import Setting

#: The dimensions of a class after its kind, in the order its label names them.
DIMENSIONS = ("architecture", "layout", "generation", "engine", "scenario")
#: Layout classes: tensor-parallel (with replicas), pipelined, attention data-parallel with
#: expert parallelism, and prefill/decode disaggregated serving (a measured MoE row stating
#: no layout is ``unstated``: ``measured.intervals.row_class``).
LAYOUTS = ("TP", "PP", "DP+EP", "disaggregated")
#: Engine families a profile's name starts with ("vllm@0.10" is vllm). A class names the
#: family, not the version: the residuals state a version on a few rows only, and a class per
#: version would never have residuals from an older round (every figure would extrapolate).
ENGINES = ("trtllm", "vllm", "sglang")
#: Each catalog GPU's generation: the architecture its vendor names it by (NVIDIA's, AMD's
#: CDNA, Intel's Xe2, Google's TPU versions). A GPU not listed is a generation of its own.
_GPUS_BY_GENERATION = {
    "Volta": ("V100-SXM2-16GB",),
    "Ampere": ("A100-PCIe-40GB", "A100-SXM-40GB", "A100-SXM-80GB"),
    "Ada": ("L4", "L40S", "RTX-4090"),
    "Hopper": (
        *("GH200-144GB", "GH200-96GB", "H100-NVL", "H100-PCIe", "H100-SXM"),
        *("H20", "H200-NVL", "H200-SXM", "H800-SXM"),
    ),
    "Blackwell": (
        *("B200-HGX", "B300-HGX", "GB200-NVL72", "GB300-NVL72"),
        *("RTX-5090", "RTX-PRO-4500", "RTX-PRO-6000-BSE"),
    ),
    "Rubin": ("VR200-NVL72",),
    "CDNA3": ("MI300X", "MI325X"),
    "CDNA4": ("MI350P", "MI350X", "MI355X"),
    "Xe2": ("Arc-Pro-B50", "Arc-Pro-B60", "Arc-Pro-B60-Dual", "Arc-Pro-B70"),
    "TPU v5e": ("TPU-v5e",),
    "TPU v5p": ("TPU-v5p",),
    "TPU v6e": ("TPU-v6e",),
}
GENERATIONS = {gpu: gen for gen, gpus in _GPUS_BY_GENERATION.items() for gpu in gpus}


def generation(gpu_name: str) -> str:
    """A GPU's generation (``GENERATIONS``; its own name where not listed)."""
    return GENERATIONS.get(gpu_name, gpu_name)


@dataclass(frozen=True)
class CalibrationClass:
    """Where a figure sits among the residuals the intervals were calibrated on."""

    kind: str
    architecture: str = "dense"
    layout: str = "TP"
    generation: str = "Hopper"
    engine: str = "trtllm"
    scenario: str = "offline"
    #: The figure's model (not a dimension: a class of few models is in support for those)
    model: str = ""

    def key(self) -> tuple[str, ...]:
        return (self.kind, *(getattr(self, d) for d in DIMENSIONS))

    def label(self) -> str:
        return " / ".join(getattr(self, d) for d in DIMENSIONS)


def distance(a: tuple, b: tuple) -> int:
    """How many class dimensions two keys of one kind differ in."""
    return sum(x != y for x, y in zip(a[1:], b[1:]))


@dataclass(frozen=True)
class Support:
    """A class's support: its own residuals (``rows``), whether it is ``in support``,
    ``near`` or ``extrapolating``, and the band it takes (before drift)."""

    cls: CalibrationClass
    rows: int
    status: str
    band: Band

    def label(self) -> str:
        """The ``support`` column's text (what the band was sized on: ``support_line``)."""
        if self.status == "extrapolating":
            return "extrapolating"
        return f"{self.status} ({self.rows} {plural(self.rows, 'residual')})"


@dataclass(frozen=True)
class ClassTable:
    """The shipped class table: the conformal band of every class in support, the residual
    count of every class with residuals, and the rule for the others."""

    bands: dict
    counts: dict
    #: kind -> the band of all its residuals pooled (where no class of the kind is in support)
    pooled: dict
    min_rows: int
    #: kind -> the multipliers of a borrowed band's log-width 1, 2, ... dimensions away
    widening: dict
    provenance: dict
    path: str
    #: kind -> (log ratio per publication round, rounds from calibration to the table's date)
    drift: dict = field(default_factory=dict)
    #: The fewest models a class's residuals are of for it to be in support for any model, and
    #: the models of each class's residuals (key -> frozenset of names; absent: not stated).
    min_models: int = 1
    models: dict = field(default_factory=dict)
    #: kind -> the factor its pooled band is widened by (absent: the kind's ``widening``)
    pooled_widening: dict = field(default_factory=dict)
    #: Each class's ``support``, kept once found: it depends on the table and the class alone
    #: (a table is only read), and a frontier's intervals ask for a few classes many times.
    _supports: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def support(self, cls: CalibrationClass) -> Support:
        """The class's support and band (``rule`` in the module docstring)."""
        found = self._supports.get(cls)
        if found is None:
            found = self._supports[cls] = self._support(cls)
        return found

    def _support(self, cls: CalibrationClass) -> Support:
        key = cls.key()
        rows = int(self.counts.get(key, 0))
        own = self.bands.get(key)
        of = self.models.get(key)
        if own is not None and (not of or len(of) >= self.min_models or cls.model in of):
            return Support(cls, rows, "in support", own)
        nearest = nearest_bands(self.bands, key, self._few_models(key, cls.model))
        if nearest is not None:
            d, widest = nearest
            why = f"sized on {widest.source}, {d} dimension{'s' * (d > 1)} away"
            band = widest.widened(self.multiplier(cls.kind, d), why).centred()
        elif cls.kind in self.pooled:
            factor = self.pooled_widening.get(cls.kind, self.multiplier(cls.kind, 1))
            band = self.pooled[cls.kind].widened(factor, "sized on all its kind's")
        else:
            raise SpecError(self.path, "pooled", f"has no band of {cls.kind}", "refit it")
        return Support(cls, rows, "near" if rows else "extrapolating", band)

    def multiplier(self, kind: str, d: int) -> float:
        """The multiplier of a borrowed band's log-width ``d`` class dimensions away: the
        kind's ``widening`` at that distance (its last beyond those it lists)."""
        by_distance = self.widening[kind]
        return by_distance[min(d, len(by_distance)) - 1]

    def _few_models(self, key: tuple, model: str) -> set:
        """Keys whose band ``model``'s figures do not take: classes of fewer than
        ``min_models`` models, ``model`` not among them (``key`` itself included)."""
        few = {key}
        for k, of in self.models.items():
            if of and len(of) < self.min_models and model not in of:
                few.add(k)
        return few

    def band(self, cls: CalibrationClass, rounds: float | None = None) -> Band:
        """The class's band moved by its kind's drift over ``rounds`` publication rounds
        after the newest calibration round (default: the table's)."""
        per_round, as_of = self.drift.get(cls.kind, (0.0, 0.0))
        shift = per_round * (as_of if rounds is None else rounds)
        return self.support(cls).band.drifted(shift)


def nearest_bands(bands: dict, key: tuple, skip=()) -> tuple[int, Band] | None:
    """(distance, widest band) of the in-support classes of ``key``'s kind nearest to it
    (``skip``: keys that are not, ``key`` itself always), the widest by its 90 % log-width
    (ties: the 80 %'s, then the label); None if none."""
    near = [
        (distance(k, key), b)
        for k, b in bands.items()
        if k[0] == key[0] and k != key and k not in skip
    ]
    if not near:
        return None
    d = min(n for n, _ in near)
    widest = max(
        (b for n, b in near if n == d), key=lambda b: (b.q95 - b.q05, b.q90 - b.q10, b.source)
    )
    return d, widest


def layout_class(moe: bool, pipeline=1, spread: bool = False, disaggregated: bool = False) -> str:
    """The layout class of a configuration: disaggregated, else pipelined (more than one
    stage), else ``DP+EP`` (an MoE model whose attention is data-parallel or whose experts are
    spread over its GPUs: ``spread``), else tensor-parallel."""
    if disaggregated:
        return "disaggregated"
    if pipeline > 1:
        return "PP"
    return "DP+EP" if moe and spread else "TP"


def engine_family(engine) -> str:
    """The engine family of a profile (a name, "family@version", a path or a profile); a
    profile of the user's own (``calibrate``'s, a file outside the catalog) is an engine of
    its own, its name: no residual of the table measures it, so its figures borrow a
    neighbour's band, widened, and say so (§F12)."""
    name = getattr(engine, "name", engine)
    if _own_profile(engine):
        return str(name).lower()
    text = Path(str(name)).stem.split("@")[0].lower() if name is not None else ""
    return next((e for e in ENGINES if text.startswith(e)), text or "unstated")


def _own_profile(engine) -> bool:
    """Whether ``engine`` is a profile read from a file that is none of the catalog's."""
    source = getattr(engine, "source_file", None)
    if not source:
        return False
    from ..specs.catalog import entries

    return _outside_catalog(str(source), entries("engines"), os.getcwd())


@lru_cache(maxsize=64)
def _outside_catalog(source: str, found: tuple, cwd: str) -> bool:
    """Whether the file ``source`` is none of the catalog's ``found`` entries, both resolved
    (``cwd``, which a relative path is resolved against, is part of the key): the answer
    ``_own_profile`` asks for each figure, worked out once for each file and catalog."""
    return Path(source).resolve() not in {e.path.resolve() for e in found}


def _table_path() -> Path:
    from ..specs.catalog import data_roots

    found = (r / "intervals" / "classes.yaml" for r in data_roots())
    path = next((p for p in found if p.is_file()), None)
    if path is None:
        raise SpecError("intervals/classes.yaml", "", "is missing", "reinstall the package")
    return path


@lru_cache(maxsize=1)
def classes() -> ClassTable:
    """The shipped class table (``intervals/classes.yaml``)."""
    from ..specs.yamlfile import load_yaml

    path = _table_path()
    return parse_classes(load_yaml(path), str(path))


def parse_classes(data: dict, source: str) -> ClassTable:
    """A class table from its YAML mapping (``source`` names it in errors)."""
    from ..specs.schema import check_number

    bands, counts, models = {}, {}, {}
    for i, c in enumerate(data.get("classes") or ()):
        where = f"classes[{i}]"
        if c.get("kind") not in KINDS:
            raise SpecError(source, f"{where}.kind", f"is {c.get('kind')!r}", f"one of {KINDS}")
        cls = CalibrationClass(c["kind"], *(str(c.get(d, "")) for d in DIMENSIONS))
        rows = int(check_number(c.get("rows"), source, f"{where}.rows", minimum=1, integer=True))
        counts[cls.key()] = rows
        if "models" in c:
            names = c["models"]
            if (
                not isinstance(names, list)
                or not names
                or not all(isinstance(n, str) for n in names)
            ):
                raise SpecError(
                    source, f"{where}.models", f"is {short(names)}", "a list of model names"
                )
            models[cls.key()] = frozenset(names)
        if "q05" not in c:
            continue  # a thin class: counted, sized by the rule
        q = {
            k: float(check_number(c.get(k), source, f"{where}.{k}", unit="log ratio"))
            for k in ("q05", "q10", "q90", "q95")
        }
        if not q["q05"] <= q["q10"] <= q["q90"] <= q["q95"]:
            raise SpecError(source, where, "quantiles out of order", "refit the table")
        bands[cls.key()] = Band(**q, source=f"{cls.kind}: {cls.label()}", rows=rows)
    pooled, pooled_widening = {}, {}
    for kind, p in (data.get("pooled") or {}).items():
        q = {
            k: float(check_number(p.get(k), source, f"pooled.{kind}.{k}", unit="log ratio"))
            for k in ("q05", "q10", "q90", "q95")
        }
        pooled[kind] = Band(**q, source=f"{kind}: all", rows=int(p.get("rows", 0)))
        if "widening" in p:
            pooled_widening[kind] = _factor(p["widening"], source, f"pooled.{kind}.widening")
    drift = {
        kind: (float(d.get("log_per_round", 0.0)), float(d.get("rounds", 0.0)))
        for kind, d in (data.get("drift") or {}).items()
    }
    widening = _widening(data.get("widening", 1.0), source)
    unsized = sorted(({k[0] for k in bands} | set(pooled)) - set(widening))
    if unsized:
        raise SpecError(source, f"widening.{unsized[0]}", "is missing", "give its factor")
    return ClassTable(
        bands,
        counts,
        pooled,
        int(data.get("min_rows", 0)),
        widening,
        dict(data.get("provenance") or {}),
        source,
        drift,
        int(check_number(data.get("min_models", 1), source, "min_models", minimum=1, integer=True)),
        models,
        pooled_widening,
    )


def _factor(value, source: str, where: str) -> float:
    """A widening factor: a number from 1 (a borrowed band no narrower than its source's) to 10."""
    from ..specs.schema import check_number

    return float(check_number(value, source, where, minimum=1.0, maximum=10.0))


def _widening(value, source: str) -> dict[str, tuple[float, ...]]:
    """The table's ``widening``: one factor per dimension for every kind (a number), or per
    kind a factor per dimension or the multipliers at distances 1, 2, ... (a list, growing with
    distance, its last held beyond); as kind -> multipliers up to every dimension."""
    dims = len(DIMENSIONS)

    def of(v, where: str) -> tuple[float, ...]:
        if not isinstance(v, list):
            f = _factor(v, source, where)
            return tuple(f**d for d in range(1, dims + 1))
        if not v:
            raise SpecError(source, where, "is an empty list", "give a multiplier a distance")
        got = [_factor(x, source, f"{where}[{i}]") for i, x in enumerate(v)]
        if any(b < a for a, b in zip(got, got[1:])):
            raise SpecError(source, where, f"is {short(v)}", "multipliers growing with distance")
        return tuple(got + [got[-1]] * (dims - len(got)))

    if not isinstance(value, dict):
        return dict.fromkeys(KINDS, of(value, "widening"))
    unknown = [k for k in value if k not in KINDS]
    if unknown:
        raise SpecError(source, f"widening.{unknown[0]}", "is not a kind", f"one of {KINDS}")
    return {k: of(v, f"widening.{k}") for k, v in value.items()}


#: The scenario a figure of one configuration (``point``, ``frontier``, ``prefill``) is read
#: in: its throughput as a configuration's at its most load (MLPerf's offline); its time per
#: output token as a fixed batch's at steady state, which is what a closed-loop benchmark at
#: that concurrency measures, not a Poisson load's (MLPerf's server); its time to first token
#: as server's, whose residuals bracket a prompt's prefill (the closed-loop runs' first tokens
#: carry a light-load prompt cost the model does not price: docs/validation.md, "The first
#: token at light load"). A run under load says server for every kind, or closed-loop where its
#: clients are a closed loop (``load_where``).
DEFAULT_SCENARIOS = {"throughput": "offline", "TPOT": "closed_loop", "TTFT": "server"}


def engine_variant(family: str, two_batch_overlap, deepep) -> str:
    """A class's engine: the family, marked where its MoE runs two micro-batches a step over
    DeepEP ("+TBO") or DeepEP's exchange alone ("+DeepEP"), which no residual of the family's
    default launch measures."""
    if two_batch_overlap:
        return family + "+TBO"
    return family + "+DeepEP" if deepep else family


def figure_class(
    setting: Setting, kind: str, layout: str = "TP", scenario: str | None = None
) -> CalibrationClass:
    """The calibration class of a figure of ``kind`` of ``setting``. An engine run with
    two-batch overlap, or DeepEP's exchange, is an engine of its own here ("sglang+TBO",
    "vllm+DeepEP"): no residual measures one, so its figures borrow the nearest class's band,
    widened (§F12)."""
    a = setting.assumptions
    engine = engine_variant(engine_family(a.engine), a.two_batch_overlap, a.deepep)
    return CalibrationClass(
        kind,
        "MoE" if setting.model.is_moe else "dense",
        layout,
        generation(setting.gpu.name),
        engine,
        scenario or DEFAULT_SCENARIOS[kind],
        setting.model.name,
    )


def class_bands(setting: Setting, kind: str, layouts, scenario=None) -> list[Band]:
    """The band of each configuration of ``setting`` (one layout class each) by its class's
    support (``ClassTable.band``: drift included)."""
    t = classes()
    found: dict[str, Band] = {}
    out = []
    for layout in np.atleast_1d(layouts):
        key = str(layout)
        if key not in found:
            found[key] = t.band(figure_class(setting, kind, key, scenario))
        out.append(found[key])
    return out


def support_of(setting: Setting, kinds, layout: str = "TP", scenario=None) -> Support:
    """The least-supported of the classes of ``kinds`` of one configuration (fewest
    residuals among the worst status: extrapolating, near, in support)."""
    t = classes()
    found = [t.support(figure_class(setting, k, layout, scenario)) for k in dict.fromkeys(kinds)]
    return min(found, key=lambda s: (STATUS_ORDER.index(s.status), s.rows))


#: Support statuses, the least supported first.
STATUS_ORDER = ("extrapolating", "near", "in support")


#: The degrees of a layout, as ``point``, ``request``, ``prefill``, ``disagg`` and ``prices``
#: state them (``prefill_`` before each for a prefill's own layout beside a decode's).
DEGREES = ("pipeline_degree", "tensor_degree", "attention_degree", "expert_degree")


def row_layouts(columns, n: int, setting: Setting) -> np.ndarray:
    """The layout class of each of ``n`` rows from the degrees a table states
    (``pipeline_degree``; an MoE model's ``attention_degree`` below its ``tensor_degree``,
    data-parallel attention, or ``expert_degree`` above 1: ``layout_class``);
    tensor-parallel where it states none."""
    out = np.full(n, "TP", dtype=object)
    if setting.model.is_moe:
        spread = np.zeros(n, dtype=bool)
        if "attention_degree" in columns and "tensor_degree" in columns:
            attention = np.asarray(columns["attention_degree"], dtype=float)
            spread |= attention < np.asarray(columns["tensor_degree"], dtype=float)
        if "expert_degree" in columns:
            spread |= np.asarray(columns["expert_degree"], dtype=float) > 1
        out[spread] = "DP+EP"
    if "pipeline_degree" in columns:
        out[np.asarray(columns["pipeline_degree"], dtype=float) > 1] = "PP"
    return out


def support_line(s: Support) -> str:
    """The one line a table states under it for a figure whose class is not in support."""
    table = classes()
    has = f"{s.rows} measured {plural(s.rows, 'residual')}" if s.rows else "no measured residual"
    of = table.models.get(s.cls.key())
    if s.rows and of:
        has += f" of {len(of)} {plural(len(of), 'model')}"
    needs = f"{table.min_rows} configurations"
    if table.min_models > 1:
        needs += f" of {table.min_models} models or of the figure's own"
    return (
        f"{s.status.capitalize()}: the class {s.cls.kind}: {s.cls.label()} has {has} (in "
        f"support from {needs}); its intervals are {s.band.source} (docs/model.md §F12)."
    )


def plan_line(s: Support, plan: str = "The plan") -> str:
    """The line a plan sized on a class not in support states: that it extrapolates (its
    class has no residual) or is near the data, not in it, and ``support_line``."""
    how = "extrapolates" if s.status == "extrapolating" else "is near the data, not in it"
    return f"{plan} {how}. {support_line(s)}"
