"""The terms calibration fits and their priors (docs/model.md §F10): the priors of
``priors/calibration.yaml`` (physics and micro-benchmarks, set before any fit), the kernel
factor every engine but the reference has its own value of, the collective terms fitted to
micro-benchmarks first, and the terms a run sets on its engine's profile that no fit touches.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from ..errors import SpecError, did_you_mean
from ..specs.engine import EngineProfile
from ..specs.engine_terms import BY_TERM


@dataclass(frozen=True)
class Prior:
    """A fitted term: its prior (mean, standard deviation, source), bounds, the rows that can
    constrain it, and the engine it belongs to (None: shared by every engine)."""

    term: str
    mean: float
    sd: float
    lower: float
    upper: float
    source: str
    rows: str
    engine: str | None = None

    @property
    def key(self) -> str:
        return f"{self.engine}.{self.term}" if self.engine else self.term


#: The file of the priors (in the package's data; docs/model.md §F10).
PRIORS_FILE = ("priors", "calibration.yaml")
#: The groups of that file: terms every engine shares, the term each engine but the reference
#: has its own value of, and the collective terms fitted to micro-benchmarks first.
PRIOR_GROUPS = ("terms", "engine", "collectives")
_PRIOR_FIELDS = ("mean", "sd", "lower", "upper", "unit", "source", "rows")


def load_priors(path: str | Path | None = None) -> dict[str, tuple[Prior, ...]]:
    """The priors of the fitted terms, by group (``PRIOR_GROUPS``), from the shipped
    ``priors/calibration.yaml`` (or ``path``): physics and micro-benchmarks, set before any fit.
    Each term's unit must be its unit in ``specs.engine_terms.TERMS``, its mean inside its bounds and
    its SD positive; errors name the file and the field."""
    from ..specs.catalog import data_roots
    from ..specs.schema import check_number
    from ..specs.yamlfile import load_yaml

    if path is None:
        found = (r.joinpath(*PRIORS_FILE) for r in data_roots())
        path = next((p for p in found if p.is_file()), None)
        if path is None:
            raise SpecError("/".join(PRIORS_FILE), "", "is missing", "reinstall the package")
    source = str(path)
    data = load_yaml(Path(path))
    out = {}
    for group in PRIOR_GROUPS:
        entries = data.get(group)
        if not isinstance(entries, dict) or not entries:
            raise SpecError(source, group, "is missing or empty", "give a mapping of term: prior")
        priors = []
        for term, spec in entries.items():
            where = f"{group}.{term}"
            if term not in BY_TERM:
                hint = did_you_mean(str(term), sorted(BY_TERM))
                raise SpecError(source, where, "is not an efficiency term", hint or "")
            if not isinstance(spec, dict):
                raise SpecError(source, where, "is not a mapping", "give mean, sd, lower, upper...")
            unknown = sorted(set(spec) - set(_PRIOR_FIELDS))
            missing = [k for k in _PRIOR_FIELDS if k not in spec]
            if unknown or missing:
                bad = unknown[0] if unknown else missing[0]
                raise SpecError(
                    source,
                    f"{where}.{bad}",
                    "is not a field of a prior" if unknown else "is missing",
                    f"give {', '.join(_PRIOR_FIELDS)}",
                )
            unit = BY_TERM[term].unit
            if spec["unit"] != unit:
                raise SpecError(
                    source, f"{where}.unit", f"is {spec['unit']!r}", f"the term is in {unit}"
                )
            n = {
                k: float(check_number(spec[k], source, f"{where}.{k}", unit=unit))
                for k in ("mean", "sd", "lower", "upper")
            }
            if not (n["lower"] <= n["mean"] <= n["upper"] and n["sd"] > 0):
                raise SpecError(
                    source, where, "needs lower <= mean <= upper and sd > 0", "fix the figures"
                )
            for k in ("source", "rows"):
                if not isinstance(spec[k], str) or not spec[k].strip():
                    raise SpecError(source, f"{where}.{k}", "is empty", "say where it comes from")
            priors.append(
                Prior(
                    term, n["mean"], n["sd"], n["lower"], n["upper"], spec["source"], spec["rows"]
                )
            )
        out[group] = tuple(priors)
    if len(out["engine"]) != 1:
        raise SpecError(source, "engine", "holds more than one term", "give step_time_scale only")
    return out


_PRIORS = load_priors()
#: Priors of the fitted terms: physics and micro-benchmarks, set before any fit.
PRIORS = _PRIORS["terms"]
#: A term every engine profile but the reference (the one fitted, ``--engine``) has its own
#: value of, fitted to the rows it serves: its kernels (engine, version, platform) against the
#: reference engine's.
ENGINE_PRIOR = _PRIORS["engine"][0]


def engine_priors(engines, base_name: str) -> tuple[Prior, ...]:
    """``ENGINE_PRIOR`` for every profile of ``engines`` but ``base_name``."""
    return tuple(
        dataclasses.replace(ENGINE_PRIOR, engine=e, rows=f"rows served by {e}")
        for e in sorted(set(engines))
        if e and e != base_name
    )


#: Priors of the collective terms, fitted to all-reduce micro-benchmarks (§F6).
COLLECTIVE_PRIORS = _PRIORS["collectives"]
#: Terms fitted to micro-benchmarks first, by the quantity the rows measure (§F6: all-reduce
#: bus bandwidth; §F1: streaming bandwidth); with such rows the end-to-end fit keeps them fixed.
MICRO_PRIORS = {"busbw": COLLECTIVE_PRIORS, "stream": (PRIORS[0],)}
#: Fewest micro-benchmark rows per term they fit.
MICRO_ROWS_PER_TERM = 2
#: Weight of one prior against one row (a prior counts like a row one prior SD off).
PRIOR_WEIGHT = 0.15


def prior_means() -> dict:
    """Every term the fit can set, at its prior mean (an engine's own kernel factor at 1)."""
    out = {p.term: p.mean for p in PRIORS}
    out[ENGINE_PRIOR.term] = ENGINE_PRIOR.mean
    return out


#: Terms a run sets on its engine's profile and the fit never touches: the share of the host
#: overheads a step waits for, by the runtime the row's harness or version names (§F5), and
#: whether its engine was built with each GEMM and its all-reduce fused (§F6) and the share of
#: memory its KV cache was given (§F8), as the row states them.
RUN_TERMS = ("host_overhead_exposed", "gemm_allreduce_overlap", "kv_cache_memory_fraction")


def with_run_terms(profile: EngineProfile, run: EngineProfile) -> EngineProfile:
    """``profile`` (an engine's, with fitted terms) with the ``RUN_TERMS`` of ``run`` (the same
    engine's profile as one row runs it) and the terms its version sets (``version_terms``)."""
    by_version = (name for _, terms in run.version_terms for name, _ in terms)
    names = dict.fromkeys((*RUN_TERMS, *by_version))
    changes = {t: run.value(t) for t in names if run.value(t) != profile.value(t)}
    return profile.with_terms(**changes) if changes else profile


def engine_specific(term: str, engine: str, base_name: str) -> bool:
    """Whether ``engine`` has its own value of ``term`` (then the shared value is not its)."""
    return term == ENGINE_PRIOR.term and engine != base_name
