"""Where the YAML specs live, and finding one by name, alias or path.

The folders ``hardware/``, ``models/`` and ``scenarios/`` sit at the top of the repository and are
copied into the wheel as ``inference_econ/_data/``; a source checkout reads the repository's
folders, an installed wheel its bundled copy. ``INFERENCE_ECON_PATH`` (folders separated by
``os.pathsep``) adds user folders that hold their own ``hardware/``, ``models/`` or
``scenarios/`` subfolders.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..errors import SpecError, UnknownNameError, did_you_mean, short
from .schema import Reader
from .yamlfile import load_yaml

KINDS = ("hardware", "models", "scenarios")


def data_roots() -> tuple[Path, ...]:
    """Folders holding ``hardware/``, ``models/`` and ``scenarios/``, highest priority first."""
    roots: list[Path] = []
    for extra in os.environ.get("INFERENCE_ECON_PATH", "").split(os.pathsep):
        if extra.strip():
            roots.append(Path(extra).expanduser())
    package = Path(__file__).resolve().parent.parent  # inference_econ/
    bundled = package / "_data"
    if (bundled / "hardware").is_dir():
        roots.append(bundled)
    repository = package.parent
    if (repository / "hardware").is_dir() and (repository / "pyproject.toml").is_file():
        roots.append(repository)
    return tuple(roots)


@dataclass(frozen=True)
class Entry:
    """One spec file: its canonical name, aliases and path."""

    name: str
    aliases: tuple[str, ...]
    path: Path
    description: str


@dataclass(frozen=True)
class Skipped:
    """A spec file left out of the catalog, and why."""

    path: Path
    error: SpecError

    @property
    def problem(self) -> str:
        return str(self.error)


@cache
def _index(kind: str, roots: tuple[Path, ...]) -> tuple[tuple[Entry, ...], tuple[Skipped, ...]]:
    entries: dict[str, Entry] = {}
    skipped: list[Skipped] = []
    for root in roots:
        folder = root / kind
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.yaml")):
            try:
                entry = _entry(kind, folder, path)
            except SpecError as exc:  # reported by ``skipped``; never breaks other lookups
                skipped.append(Skipped(path, exc))
                continue
            entries.setdefault(entry.name.lower(), entry)
    return tuple(entries.values()), tuple(skipped)


def _entry(kind: str, folder: Path, path: Path) -> Entry:
    """The catalog entry of one spec file: its name, aliases and description, checked."""
    r = Reader(load_yaml(path), str(path))
    name = r.string("name", None) if kind != "scenarios" else None
    title = r.string("title", None)
    if kind == "scenarios":
        name = path.relative_to(folder).with_suffix("").as_posix()
    aliases = r.text_list("aliases")
    description = r.string("description", None) or title or ""
    return Entry(name=name or path.stem, aliases=aliases, path=path, description=description)


def _kind(kind: str) -> str:
    if kind not in KINDS:
        raise SpecError(
            "argument", "kind", f"unknown kind {short(kind)}", f"choose {', '.join(KINDS)}"
        )
    return kind


def entries(kind: str) -> tuple[Entry, ...]:
    """Every spec of one kind ("hardware", "models", "scenarios"), sorted by name."""
    _kind(kind)
    return tuple(sorted(_index(kind, data_roots())[0], key=lambda e: e.name.lower()))


def skipped(kind: str) -> tuple[Skipped, ...]:
    """Spec files of one kind left out of the catalog (unreadable, or a bad name or aliases)."""
    _kind(kind)
    return _index(kind, data_roots())[1]


def _normalise(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def _existing_file(text: str) -> Path | None:
    """The regular file a user's text names (``~`` expanded), or None (also for names no file
    system accepts: too long, a NUL byte, an unknown user)."""
    try:
        path = Path(text).expanduser()
        return path if path.is_file() else None
    except (OSError, ValueError, RuntimeError):
        return None


def find(kind: str, name_or_path: str | os.PathLike) -> Path:
    """Resolve a name, an alias or a file path to a spec file; unknown names get a hint."""
    text = str(name_or_path)
    candidate = _existing_file(text)
    looks_like_path = text.endswith((".yaml", ".yml")) or os.sep in text or "/" in text
    if looks_like_path and candidate is not None:
        return candidate
    known = entries(kind)
    wanted = _normalise(text)
    for entry in known:
        if _normalise(entry.name) == wanted or any(_normalise(a) == wanted for a in entry.aliases):
            return entry.path
    if candidate is not None:
        return candidate
    names = [e.name for e in known] + [a for e in known for a in e.aliases]
    broken = skipped(kind)
    for entry in broken:  # the user named a file that is in the catalog but broken
        if _normalise(entry.path.stem) == wanted:
            raise entry.error
    hint = did_you_mean(text, names)
    if broken and not hint:
        hint = f"{len(broken)} file(s) were skipped as broken, e.g. {broken[0].problem}"
    singular = {"hardware": "hardware spec", "models": "model", "scenarios": "scenario"}[kind]
    raise UnknownNameError(
        "argument",
        kind,
        f"no {singular} named {short(text)}",
        hint or f"run 'inference-econ list {kind}' to see the names, or give a path to a YAML file",
    )


def clear_cache() -> None:
    """Forget the index (after files were added at run time, e.g. in tests)."""
    _index.cache_clear()
