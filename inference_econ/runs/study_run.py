"""Running a study end to end: the cell cache, the computation, and the files it writes.

``run_study`` expands a study, takes every cell it can from the cache (one JSON file per cell,
named by the hash of the cell's inputs, written atomically as soon as the cell finishes), has
the rest computed (``studies.execution``), and writes the tidy tables: ``key_points`` (one row
per cell x key point) and ``frontiers`` (one row per cell x frontier point) as CSV, and as
Parquet when pyarrow is installed; ``study.json`` records what was computed and with which
assumptions; ``summary.png`` is the study's summary figure.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..errors import SpecError, plural
from ..output.files import check_folder, check_owned, write_atomic
from ..output.render import csv_chunks
from ..specs.catalog import display_path
from ..specs.hardware import facts_by_column
from ..specs.inputs import read_json
from ..studies.execution import check_dask, check_work, run_cells
from ..studies.study import (
    Cell,
    Study,
    compact_payload,
    expand,
    load_study,
    package_version,
    payload_problem,
    study_from_dict,
    tables,
)

TABLES = ("key_points", "frontiers")


@dataclass
class StudyResult:
    """The tidy tables of a study and what it took: cells computed, cached and failed."""

    study: Study
    cells: list[Cell]
    key_points: pd.DataFrame
    frontiers: pd.DataFrame
    computed: int = 0
    cached: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    elapsed_s: dict[str, float] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.failed


class CellCache:
    """Finished cells, one JSON file each under ``folder``, named by the cell's key."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The payload of a finished cell, or None: a file that is missing, unreadable, not
        a regular file, too large, or not a payload as ``compute_cell`` writes it (hand-edited,
        damaged, of another format; ``studies.study.payload_problem``) counts as missing, and
        the cell is computed again."""
        path = self.path(key)
        if not os.path.lexists(path):
            return None
        try:
            payload = read_json(path, remember=False)
        except SpecError:
            return None
        return None if payload_problem(payload) else payload

    def put(self, key: str, payload: dict) -> None:
        # the cache's own file (a damaged one is computed again and replaced): not recorded
        write_atomic(self.path(key), json.dumps(payload, allow_nan=True), record=False)


def as_study(spec) -> Study:
    """A Study from a Study, a parsed mapping, or a file path or name."""
    if isinstance(spec, Study):
        return spec
    if isinstance(spec, dict):
        return study_from_dict(spec)
    return load_study(spec)


def run_study(
    spec,
    out_dir: str | os.PathLike | None = None,
    jobs: int | None = None,
    dask: str | None = None,
    progress=None,
    cache_dir: str | os.PathLike | None = None,
    recompute: bool = False,
    yes: bool = False,
) -> StudyResult:
    """Compute a study's cells (cached ones are read back) and write its tables to ``out_dir``.

    The cache lives in ``out_dir/cache`` unless ``cache_dir`` says otherwise; without either,
    nothing is cached; ``recompute`` ignores (and replaces) what is cached. Cells that fail are reported in ``failed`` (and as ``point == "failed"``
    rows); the others are kept, so a rerun computes only what is missing. The cells to compute
    are estimated first: more than ``settings.CONFIRM_SECONDS`` is refused unless ``yes``.
    """
    check_dask(dask)
    study = as_study(spec)
    cells = expand(study)
    folder = Path(out_dir) if out_dir is not None else None
    for place in (folder, cache_dir):  # a folder that cannot be written: before the work
        if place is not None:
            check_folder(place)
    if folder is not None:  # a user's own file of an output's name: refused before the work
        check_owned(folder, (*(f"{t}.csv" for t in TABLES), "study.json", "summary.png"))
    if cache_dir is None and folder is not None:
        cache_dir = folder / "cache"
    cache = CellCache(cache_dir) if cache_dir is not None else None
    payloads: dict[str, dict] = {}
    distinct = {c.key: c for c in cells}
    if cache is not None and not recompute:
        for key in distinct:
            found = cache.get(key)
            if found is not None:
                payloads[key] = compact_payload(found)
    cached = len(payloads)
    todo = [c for k, c in distinct.items() if k not in payloads]
    estimate = check_work(todo, jobs, study.name, yes)
    if progress:
        progress(
            f"{study.name}: {len(cells)} {plural(len(cells), 'cell')}, {cached} cached, {len(todo)} to compute"
            + (f" on Dask ({dask})" if dask and todo else f", {estimate}" if todo else "")
        )
    failed: dict[str, str] = {}

    def done(cell: Cell, payload: dict) -> None:
        if cache is not None:
            cache.put(cell.key, payload)
        payloads[cell.key] = compact_payload(payload)  # kept until the tables are made

    def lost(cell: Cell, reason: str) -> None:
        failed[cell.key] = reason

    run_cells(todo, done, lost, jobs=jobs, dask=dask, progress=progress)
    elapsed = {k: float(p.get("elapsed_s", 0.0)) for k, p in payloads.items()}
    key_points, frontiers = tables(study, cells, payloads, failed)
    payloads.clear()  # the tables hold the frontiers now
    result = StudyResult(
        study,
        cells,
        key_points,
        frontiers,
        computed=len(todo) - len(failed),
        cached=cached,
        failed=failed,
        elapsed_s=elapsed,
    )
    if folder is not None:
        result.files += write_study(result, folder, progress)
    return result


def study_metadata(result: StudyResult) -> dict:
    """What a study's tables were computed with: the study file, its axes and defaults, the
    version; each cell's full setting is in its row's columns (and in study.json)."""
    study = result.study
    meta = {
        "study": study.title,
        "study_file": display_path(study.source),
        "axes": "; ".join(f"{a.name}: {', '.join(map(str, a.labels))}" for a in study.axes),
    }
    meta.update({k: v for k, v in study.defaults.items() if isinstance(v, (str, int, float, bool))})
    # a spec the defaults name (held as its resolved path): stated as every result states it,
    # its name and its file as outputs name one (models/llama-3.1-8b.yaml, a user's in full)
    for key, name in (("model", lambda s: s.model.name), ("hardware", lambda s: s.gpu.name)):
        if key in study.defaults and key not in study.axis_names:
            names = dict.fromkeys(name(c.setting) for c in result.cells)
            meta[key] = ", ".join(names) or display_path(study.defaults[key])
            meta[f"{key}_file"] = display_path(study.defaults[key])
    if "draft" in study.defaults:
        meta["draft"] = display_path(study.defaults["draft"])
    if "assumptions" not in study.axis_names:  # the preset every cell used (the default too)
        presets = dict.fromkeys(c.setting.assumptions.name for c in result.cells)
        meta["assumptions"] = ", ".join(presets)
    # settings no axis or default states but every cell shares, defaults included
    shared = {
        "context_tokens": lambda s: s.context_tokens,
        "price_basis": lambda s: s.gpu.price_basis,
    }
    for name, value in shared.items():
        values = dict.fromkeys(value(c.setting) for c in result.cells)
        if name not in meta and name not in study.axis_names and len(values) == 1:
            meta[name] = next(iter(values))
    meta["prices"] = (
        "usd_per_mtok is decode-only (prefill and idle time not charged, docs/glossary.md), each "
        "GPU at its file's price on the basis above"
    )
    meta["cells"] = f"{len(result.cells)}, each with its setting in its row and in study.json"
    meta["inference_econ"] = package_version()
    return meta


def write_table(df: pd.DataFrame, stem: Path, progress=None, meta=None) -> list[Path]:
    """A table as CSV (after '#' lines saying what it was computed with, as every CSV of the
    toolkit), and as Parquet when pyarrow is installed."""
    written = [write_atomic(stem.with_suffix(".csv"), csv_chunks(df, meta, float_format=None))]
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        if progress:
            progress(
                f"pyarrow is not installed: wrote {stem.name}.csv only (inference-econ[parquet])"
            )
        return written
    written.append(write_atomic(stem.with_suffix(".parquet"), df.to_parquet(None, index=False)))
    return written


def manifest(result: StudyResult) -> dict:
    """What ``study.json`` records: the study, each cell, and every assumption used."""
    study = result.study
    models, presets = {}, {}
    gpus = facts_by_column(cell.setting.gpu for cell in result.cells)
    for cell in result.cells:
        s = cell.setting
        models.setdefault(s.model.name, _model_facts(s.model))
        if s.spec is not None:
            models.setdefault(s.spec.draft.name, _model_facts(s.spec.draft))
        presets.setdefault(s.assumptions.name, dataclasses.asdict(s.assumptions))
    return {
        "title": study.title,
        "description": study.description,
        "source": display_path(study.source),
        "package_version": package_version(),
        "axes": {a.name: list(a.labels) for a in study.axes},
        "exclude": [{k: list(v) for k, v in rule.items()} for rule in study.exclude],
        "defaults": study.defaults,
        "at_speeds": list(study.at_speeds),
        "preference_k": study.preference_k,
        "summary": study.summary,
        "complete": result.complete,
        "computed": result.computed,
        "cached": result.cached,
        "cells": [
            {
                "cell": c.index,
                "key": c.key,
                "label": c.label,
                "values": c.values,
                "status": "failed" if c.key in result.failed else "done",
                "error": result.failed.get(c.key, ""),
                "elapsed_s": result.elapsed_s.get(c.key),
            }
            for c in result.cells
        ],
        "assumptions": presets,
        "hardware": gpus,
        "models": models,
    }


def _model_facts(arch) -> dict:
    return {
        "name": arch.name,
        "source": arch.source,
        "layers": arch.layers,
        "d_model": arch.d_model,
        "attention": arch.attention.kind,
        "precision": arch.precision.label(),
        "published_total_params": arch.published_total_params,
        "published_active_params": arch.published_active_params,
    }


def write_study(result: StudyResult, folder: Path, progress=None) -> list[Path]:
    """The tables, ``study.json`` and the summary figure of a study, into ``folder``."""
    from ..output import study_plots
    from ..output.plots import save

    meta = study_metadata(result)
    written = write_table(result.key_points, folder / "key_points", progress, meta)
    written += write_table(result.frontiers, folder / "frontiers", progress, meta)
    text = json.dumps(_plain(manifest(result)), indent=1, allow_nan=False)
    written.append(write_atomic(folder / "study.json", text + "\n"))
    fig = study_plots.summary_figure(result.key_points, result.study)
    written += save(fig, folder / "summary", ("png",))
    return written


def _plain(value):
    """JSON-ready data: non-finite numbers as text ("inf"), numpy scalars as Python ones."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value
