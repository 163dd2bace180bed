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

from ..errors import UnknownNameError, did_you_mean
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


@cache
def _index(kind: str, roots: tuple[Path, ...]) -> tuple[Entry, ...]:
    entries: dict[str, Entry] = {}
    for root in roots:
        folder = root / kind
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.yaml")):
            try:
                data = load_yaml(path)
            except Exception:  # a broken file is reported when it is loaded by name
                data = {}
            name = str(data.get("name") or data.get("title") or path.stem)
            if kind == "scenarios":
                rel = path.relative_to(folder).with_suffix("")
                name = rel.as_posix()
            aliases = data.get("aliases") or ()
            if isinstance(aliases, str):
                aliases = (aliases,)
            entry = Entry(
                name=name,
                aliases=tuple(str(a) for a in aliases if isinstance(a, (str, int, float))),
                path=path,
                description=str(data.get("description") or data.get("title") or ""),
            )
            entries.setdefault(name.lower(), entry)
    return tuple(entries.values())


def entries(kind: str) -> tuple[Entry, ...]:
    """Every spec of one kind ("hardware", "models", "scenarios"), sorted by name."""
    return tuple(sorted(_index(kind, data_roots()), key=lambda e: e.name.lower()))


def _normalise(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def find(kind: str, name_or_path: str | os.PathLike) -> Path:
    """Resolve a name, an alias or a file path to a spec file; unknown names get a hint."""
    text = str(name_or_path)
    candidate = Path(text).expanduser()
    looks_like_path = candidate.suffix in (".yaml", ".yml") or os.sep in text or "/" in text
    if looks_like_path and candidate.is_file():
        return candidate
    known = entries(kind)
    wanted = _normalise(text)
    for entry in known:
        if _normalise(entry.name) == wanted or any(_normalise(a) == wanted for a in entry.aliases):
            return entry.path
    if candidate.is_file():
        return candidate
    names = [e.name for e in known] + [a for e in known for a in e.aliases]
    hint = did_you_mean(text, names)
    singular = {"hardware": "hardware spec", "models": "model", "scenarios": "scenario"}[kind]
    raise UnknownNameError(
        "argument",
        kind,
        f"no {singular} named {text!r}",
        hint or f"run 'inference-econ list {kind}' to see the names, or give a path to a YAML file",
    )


def display_path(path: str | os.PathLike) -> str:
    """A spec file as outputs name it: relative to its data folder ("models/llama-3-70b.yaml")
    when it is a shipped or INFERENCE_ECON_PATH spec, else as given (a user's own file, or a
    description such as "derived from H100-SXM")."""
    text = str(path)
    if not text:
        return ""
    candidate = Path(text)
    if candidate.is_file():
        resolved = candidate.resolve()
        for root in data_roots():
            try:
                return resolved.relative_to(root.resolve()).as_posix()
            except ValueError:
                continue
    return text


def clear_cache() -> None:
    """Forget the index (after files were added at run time, e.g. in tests)."""
    _index.cache_clear()
