"""Which kind of spec a YAML file holds - a model, a GPU or an engine profile - so that a
command given a file (``show FILE.yaml``) reads it with the right loader and reports its
errors in that loader's words (docs/errors.md)."""

from __future__ import annotations

import dataclasses
import difflib
from pathlib import Path

from ..errors import SpecError
from . import catalog
from .architecture import MODEL_FIELDS
from .engine_terms import BY_TERM
from .hardware import GPU
from .yamlfile import load_yaml

#: The kinds a file may hold, in the order ties are broken.
FILE_KINDS = ("models", "hardware", "engines")
#: Fields every kind has: they say nothing about which one a file is.
_SHARED = {"name", "aliases", "description", "source", "derive_from", "source_file"}


def _fields(kind: str) -> set[str]:
    if kind == "models":
        return set(MODEL_FIELDS)
    if kind == "hardware":
        return {f.name for f in dataclasses.fields(GPU)} | {"scale", "link_bandwidth_bytes_per_s"}
    return set(BY_TERM) | {"kv_cache_fraction_of", "parallelism", "standard_errors", "fit"}


def _folder_kind(path: Path) -> str | None:
    """The kind of a catalog folder (``models/``, ``hardware/``, ``engines/``) holding the
    file, or None for a file elsewhere."""
    resolved = path.resolve()
    for root in catalog.data_roots():
        for kind in FILE_KINDS:
            if resolved.is_relative_to((root / kind).resolve()):
                return kind
    return None


def _base_kind(base) -> str | None:
    """The kind of the spec a ``derive_from`` names (GPUs and engine profiles derive)."""
    if not isinstance(base, str):
        return None
    for kind in ("hardware", "engines"):
        if catalog._match(kind, base) is not None:
            return kind
    path = catalog._existing_file(base)
    return spec_kind(path) if path is not None and base.endswith((".yaml", ".yml")) else None


def spec_kind(path: str | Path) -> str:
    """``models``, ``hardware`` or ``engines``: the catalog folder the file lies in, else the
    kind of the spec its ``derive_from`` names, else the kind most of its fields belong to
    (a misspelt field counts for the kind of the field it resembles). A file that matches no
    kind is refused with the fields that would tell."""
    path = Path(path)
    kind = _folder_kind(path)
    if kind is not None:
        return kind
    data = load_yaml(path)
    if not isinstance(data, dict):
        return "models"  # the model loader says what a spec file must be
    with catalog.deriving("kinds", path.resolve()):  # a file deriving from itself: one line
        kind = _base_kind(data.get("derive_from"))
    if kind is not None:
        return kind
    keys = [str(k) for k in data if str(k) not in _SHARED]
    scores = {k: _score(keys, _fields(k)) for k in FILE_KINDS}
    best = max(scores.values())
    winners = [k for k in FILE_KINDS if scores[k] == best]
    if best == 0 or len(winners) > 1:
        raise SpecError(
            str(path),
            "kind",
            "is not recognisably a model, a GPU or an engine-profile file",
            "a model has d_model, vocab_size, attention and layers; a GPU "
            "hbm_bandwidth_bytes_per_s and flop_per_s (or derive_from: a GPU); an engine "
            "profile efficiency terms such as hbm_efficiency (or derive_from: trtllm)",
        )
    return winners[0]


def _score(keys: list[str], fields: set[str]) -> float:
    """Fields of a kind among ``keys``: 1 for each exact one, 1/2 for a close misspelling."""
    exact = sum(1.0 for k in keys if k in fields)
    near = sum(
        0.5 for k in keys if k not in fields and difflib.get_close_matches(k, fields, 1, 0.8)
    )
    return exact + near
