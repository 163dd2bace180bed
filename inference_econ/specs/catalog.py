"""Where the YAML specs live, and finding one by name, alias or path.

The folders ``hardware/``, ``models/``, ``scenarios/``, ``engines/`` and ``costs/`` sit at the top of the repository and are
copied into the wheel as ``inference_econ/_data/``; a source checkout reads the repository's
folders, an installed wheel its bundled copy. ``INFERENCE_ECON_PATH`` (folders separated by
``os.pathsep``) adds user folders that hold their own ``hardware/``, ``models/`` or
``scenarios/`` subfolders.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from ..errors import SpecError, UnknownNameError, did_you_mean, display_sources_with, short
from .inputs import kind_of, read_text
from .schema import Reader
from .yamlfile import MAX_YAML_BYTES, load_yaml, parse_yaml

KINDS = ("hardware", "models", "scenarios", "engines", "costs")


def data_roots() -> tuple[Path, ...]:
    """Folders holding ``hardware/``, ``models/`` and ``scenarios/``, highest priority first."""
    return _user_roots() + _package_roots()


@cache
def _package_roots() -> tuple[Path, ...]:
    """The installed wheel's bundled copy and, in a source checkout, the repository (they do
    not move while the package runs; ``clear_cache`` looks again)."""
    roots: list[Path] = []
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


#: Top-level fields the catalog reads; the rest of a file is read when the spec is loaded.
_HEADER_FIELDS = ("name", "aliases", "description", "title")
_HEADER_LINE = re.compile(rf"^({'|'.join(_HEADER_FIELDS)})\s*:")


@cache
def _index(kind: str, roots: tuple[Path, ...]) -> tuple[tuple[Entry, ...], tuple[Skipped, ...]]:
    """The entries of one kind, from each file's header fields only (fast: a name lookup does
    not parse every spec), and the files whose header is broken."""
    entries: dict[str, Entry] = {}
    skipped: list[Skipped] = []
    for _, folder, path in _files(kind, roots):
        try:
            entry = _entry(kind, folder, path, _header(path))
        except SpecError as exc:  # reported by ``skipped``; never breaks other lookups
            skipped.append(Skipped(path, exc))
            continue
        entries.setdefault(entry.name.lower(), entry)
    return tuple(entries.values()), tuple(skipped)


def _files(kind: str, roots: tuple[Path, ...]):
    for root in roots:
        folder = root / kind
        if folder.is_dir():
            for path in sorted(folder.rglob("*.yaml")):
                yield root, folder, path


def _header(path: Path) -> dict:
    """The header fields of a spec file (name, aliases, description, title) with their
    continuation lines, parsed as YAML on their own by the spec files' loader (libyaml within
    its bounds, the strict loader past them: no alias bomb, nesting or repeated key gets
    through); a file broken elsewhere is reported when it is loaded (and by ``skipped``)."""
    lines, keep = [], False
    for line in read_text(path, MAX_YAML_BYTES).splitlines():
        if line[:1] not in ("", " ", "\t", "-", "#"):
            keep = bool(_HEADER_LINE.match(line))
        if keep:
            lines.append(line)
    data = parse_yaml("\n".join(lines), str(path)) if lines else {}
    return data if isinstance(data, dict) else {}


@cache
def _broken(kind: str, roots: tuple[Path, ...]) -> tuple[Skipped, ...]:
    """Files of one kind that do not parse as a whole (slow: every file is read in full)."""
    broken = []
    for _, _, path in _files(kind, roots):
        try:
            load_yaml(path)
        except SpecError as exc:
            broken.append(Skipped(path, exc))
    return tuple(broken)


def _entry(kind: str, folder: Path, path: Path, data: dict) -> Entry:
    """The catalog entry of one spec file: its name, aliases and description, checked."""
    r = Reader(data, str(path))
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
    return _sorted_entries(kind, data_roots())


@cache
def _sorted_entries(kind: str, roots: tuple[Path, ...]) -> tuple[Entry, ...]:
    return tuple(sorted(_index(kind, roots)[0], key=lambda e: e.name.lower()))


@cache
def _by_name(kind: str, roots: tuple[Path, ...]) -> dict[str, Entry]:
    """Each normalised name and alias -> the first entry (by name) that has it."""
    found: dict[str, Entry] = {}
    for entry in _sorted_entries(kind, roots):
        for text in (entry.name, *entry.aliases):
            found.setdefault(_normalise(text), entry)
    return found


def skipped(kind: str) -> tuple[Skipped, ...]:
    """Spec files of one kind that are broken: left out of the catalog (unreadable, or a bad
    name or aliases) or not loadable (invalid YAML elsewhere in the file)."""
    _kind(kind)
    roots = data_roots()
    header = _index(kind, roots)[1]
    seen = {s.path for s in header}
    return header + tuple(s for s in _broken(kind, roots) if s.path not in seen)


def _normalise(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def _match(kind: str, text: str) -> Entry | None:
    """The entry whose name or an alias equals ``text`` up to case and punctuation."""
    wanted = _normalise(text)
    if not wanted:
        return None
    return _by_name(_kind(kind), data_roots()).get(wanted)


def _existing_file(text: str) -> Path | None:
    """The regular file a user's text names (``~`` expanded), or None (also for names no file
    system accepts: too long, a NUL byte, an unknown user)."""
    try:
        path = Path(text).expanduser()
        return path if path.is_file() else None
    except (OSError, ValueError, RuntimeError):
        return None


def find(kind: str, name_or_path: str | os.PathLike) -> Path:
    """Resolve a name, an alias or a file path to a spec file; unknown names get a hint.

    Hardware names may also be benchmark system names ("8xMI325X_2xEPYC_9575F", "NVIDIA
    B200-SXM-180GB"): see ``resolve_system_name``.
    """
    if not isinstance(name_or_path, (str, os.PathLike)):  # not "no model named '5'"
        raise SpecError(
            "argument",
            kind,
            f"expected a name or a YAML file's path, got {short(name_or_path)}",
            f"give one name as text, e.g. a name from ie.list_specs({kind!r})",
        )
    text = str(name_or_path)
    yaml_name = text.endswith((".yaml", ".yml"))
    looks_like_path = yaml_name or os.sep in text or "/" in text
    if not looks_like_path:  # a name the catalog holds is its entry, whatever files are here
        entry = _match(kind, text)
        if entry is not None:
            return entry.path
    candidate = _existing_file(text)
    if looks_like_path and candidate is not None:
        return _given_as(candidate, text)
    entry = _match(kind, text)
    if entry is not None:
        return entry.path
    if candidate is not None:
        return _given_as(candidate, text)
    if kind == "models" and not yaml_name and REPOSITORY_ID.match(text):
        return _by_repository(text)
    _refuse_other_files(text, looks_like_path)
    if kind == "hardware" and not yaml_name:
        try:
            return resolve_system_name(text).entry.path
        except UnknownNameError:
            if not looks_like_path:
                raise
    # a path that is not there is that, not an unknown name (a scenario's name has a slash)
    if yaml_name or (looks_like_path and kind != "scenarios"):
        raise _no_file(kind, text)
    raise _unknown(kind, text)


#: A Hugging Face repository id ("deepseek-ai/DeepSeek-V3"), its organisation no folder here.
REPOSITORY_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/([\w.-]+)$")


def _by_repository(text: str) -> Path:
    """The model a repository id names by its own name ("deepseek-ai/DeepSeek-V3": DeepSeek-V3),
    the name as the catalog spells a model (a release whose name adds a format, "...-FP4", is
    another checkpoint: ``import-hf`` reads it); a folder of that organisation's name here makes
    the text a path."""
    organisation, name = text.split("/", 1)
    entry = None if Path(organisation).is_dir() else _match("models", name)
    if entry is not None:
        return entry.path
    if Path(organisation).is_dir():
        raise _no_file("models", text)
    hint = did_you_mean(name, [e.name for e in entries("models")])
    raise UnknownNameError(
        "argument",
        "models",
        f"no model named {short(text)} (a repository id, read by its name)",
        hint or f"import its checkpoint: inference-econ import-hf {text}",
    )


#: The longest path a missing-file error shows whole (a longer one is cut, as names are).
MAX_PATH_SHOWN = 300


def _no_file(kind: str, text: str) -> UnknownNameError:
    """A name written as a path (a .yaml or .yml ending, a slash) that no file has and no spec
    is named: the file is missing, and the fix is its path (or a close name, where one is)."""
    known = entries(kind)
    hint = did_you_mean(text, [e.name for e in known] + [a for e in known for a in e.aliases])
    return UnknownNameError(
        "argument",
        kind,
        f"file {repr(text) if len(text) <= MAX_PATH_SHOWN else short(text)} not found",
        hint or f"check the path, or give a name that 'inference-econ list {kind}' shows",
    )


def _refuse_other_files(text: str, looks_like_path: bool) -> None:
    """A name that is no spec but names a device, a FIFO or (written as a path) a directory
    is that error ("/dev/null: is a device"), not "no model named '/dev/null'"."""
    try:
        mode = Path(text).expanduser().stat().st_mode
    except (OSError, ValueError, RuntimeError):
        return
    kind = kind_of(mode)
    if kind != "a directory" or looks_like_path:
        raise SpecError(text, "", f"is {kind}", "give the path of a regular YAML file")


def _unknown(kind: str, text: str, tried: str = "") -> UnknownNameError:
    known = entries(kind)
    names = [e.name for e in known] + [a for e in known for a in e.aliases]
    broken = skipped(kind)
    wanted = _normalise(text)
    for entry in broken:  # the user named a file that is in the catalog but broken
        if _normalise(entry.path.stem) == wanted:
            raise entry.error
    hint = did_you_mean(tried or text, names)
    if kind == "engines" and not hint:  # a handful: named here rather than behind a command
        listed = ", ".join(e.name for e in known)
        hint = f"the engine profiles are {listed}, or give a path to a YAML file"
    if broken and not hint:
        hint = f"{len(broken)} file(s) were skipped as broken, e.g. {broken[0].problem}"
    singular = {
        "hardware": "hardware spec",
        "models": "model",
        "scenarios": "scenario",
        "engines": "engine profile",
        "costs": "cost file",
    }[kind]
    also = f" (read as {tried!r})" if tried and tried != text else ""
    return UnknownNameError(
        "argument",
        kind,
        f"no {singular} named {short(text)}{also}",
        hint or f"run 'inference-econ list {kind}' to see the names, or give a path to a YAML file",
    )


# --- benchmark system names ------------------------------------------------------------------

#: Words that name a vendor or product line, or how the part is offered, not a part (NVIDIA's
#: DGX and HGX systems carry the SXM part their name gives: "DGX H200" is eight H200 SXM).
_VENDOR_WORDS = {
    "nvidia",
    "dgx",
    "hgx",
    "amd",
    "instinct",
    "google",
    "cloud",
    "tesla",
    "geforce",
    "virtualized",
    "virtualised",
    "virtual",
    "gpu",  # "NVIDIA B200 GPU", "AMD Instinct MI355X GPUs", "GB200 NVL72 rack"
    "gpus",
    "rack",
    "hopper",  # the architecture named before the part: "Blackwell Ultra B300"
    "blackwell",
    "ultra",
}
#: Words naming a system of several GPUs: a count written beside them counts systems.
_SYSTEM_WORDS = ("dgx", "hgx")
#: Tokens that describe a configuration of a part rather than the part: memory size, power,
#: AMD partition modes (NPS1, SPX), NVIDIA's custom thermal solution (CTS), memory kind,
#: module form factor, a trailing count (x8).
_DECORATION = re.compile(
    r"^(\d+(\.\d+)?(gb|gib|tb)(x\d+)?|\d+w|nps\d+|[scdq]px|cts|hbm\d*e?|oam|x\d+)$",
    re.IGNORECASE,
)
#: A part of an underscore-separated system name that describes the host, not the accelerator.
_HOST = re.compile(
    r"epyc|xeon|aarch64|grace|x86|turin|genoa|sapphire|emerald|granite", re.IGNORECASE
)
_COUNT = re.compile(r"^\s*(\d+)\s*[x×]\s*(?=[a-z])|\s[x×]\s*(\d+)\s*$", re.IGNORECASE)
#: A count in parentheses: "NVIDIA H200-SXM-141GB (x8)", "(8x)".
_PAREN_COUNT = re.compile(r"\(\s*(?:[x×]\s*(\d+)|(\d+)\s*[x×])\s*\)", re.IGNORECASE)


def is_host_part(text: str) -> bool:
    """Whether a part of a system name describes the host (CPU), not an accelerator."""
    return bool(_HOST.search(str(text)))


@dataclass(frozen=True)
class SystemName:
    """A benchmark's system or accelerator name resolved to a hardware spec."""

    text: str
    entry: Entry
    #: Accelerators the name counts ("8xMI325X_...": 8), or None when it gives no count.
    accelerators: int | None

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def path(self) -> Path:
        return self.entry.path


def system_name_candidates(text: str) -> tuple[list[str], int | None]:
    """The part names a system name may stand for, most specific first, and its count.

    MLPerf-style names are ``<count>x<accelerator>_<count>x<host CPU>`` or vendor strings with
    memory, power and partition suffixes: parenthesised notes are dropped, the name is split at
    underscores, host parts are dropped, and from each remaining part a leading or trailing
    count (also "(x8)" and "8x" inside the name), vendor words (and "Virtualized") and
    configuration tokens are removed ("AMD Instinct
    MI300X-NPS1-SPX-192GB-750W" -> "MI300X"; "NVIDIA H200-SXM-141GB-CTS" -> "H200 SXM").
    Identifying words (SXM, PCIe, NVL) are kept, so "H100-NVL-94GB" never becomes "H100".
    """
    found = _PAREN_COUNT.search(str(text))
    count = int(found.group(1) or found.group(2)) if found else None
    cleaned = re.sub(r"\([^)]*\)", " ", str(text))
    cleaned = re.sub(r"(\d)\s+(gb|gib|tb)\b", r"\1\2", cleaned, flags=re.IGNORECASE)  # "40 GB"
    out: list[str] = []
    for part in cleaned.split("_"):
        if not part.strip() or (_HOST.search(part) and out):
            continue
        found = _COUNT.search(part)
        if found:
            count = count or int(found.group(1) or found.group(2))
            part = _COUNT.sub(" ", part)
        tokens = [t for t in re.split(r"[\s\-]+", part) if t]
        for k, t in enumerate(tokens):
            per_gpu = re.match(r"^\d+(?:gb|gib)x(\d+)$", t, re.IGNORECASE)  # "192GBx8": eight
            if per_gpu and count is None:
                count = int(per_gpu.group(1))
            leading = re.match(r"^(\d+)[x×]([a-z].*)$", t, re.IGNORECASE)  # "Virtualized 8xH200"
            if leading:
                count = count or int(leading.group(1))
                tokens[k] = leading.group(2)
        if any(t.lower() in _SYSTEM_WORDS for t in tokens):
            count = None  # "2x DGX H100" counts systems of eight GPUs, not GPUs
        kept = [t for t in tokens if t.lower() not in _VENDOR_WORDS and not _DECORATION.match(t)]
        for name in (" ".join(kept), part.strip()):
            if name and name not in out:
                out.append(name)
    return out, count


def resolve_system_name(text: str) -> SystemName:
    """Resolve a benchmark system or accelerator name to a hardware spec (aliases first, then
    ``system_name_candidates``); an unknown part raises with the stripped name and a hint."""
    if not isinstance(text, str):  # a Python caller's None or number: the package's error
        raise SpecError(
            "argument", "text", f"expected a system or GPU name, got {short(text)}", "give text"
        )
    entry = _match("hardware", text)
    candidates, count = system_name_candidates(text)
    if entry is None:
        entry = next(filter(None, (_match("hardware", name) for name in candidates)), None)
        family = candidates[0] if candidates else ""
        if entry is None:  # "B200 NVL8": the part, its domain word dropped
            entry, family = _by_domain_word(str(text), candidates) or (None, family)
        memory = stated_memory_gb(text)
        if entry is not None and memory is not None and not _holds(entry, memory):
            entry = _with_memory(str(text), family, entry, memory)
    if entry is None:
        raise _unknown("hardware", str(text), candidates[0] if candidates else "")
    return SystemName(text=str(text), entry=entry, accelerators=count)


#: A word naming a system's NVLink domain ("NVL", "NVL8", "NVL72"), as NVIDIA and TensorRT-LLM
#: write it after a part ("B200 NVL8", TensorRT-LLM's "B200_NVL").
_DOMAIN_WORD = re.compile(r"^nvl(\d+)?$", re.IGNORECASE)


def _by_domain_word(text: str, candidates: list[str]) -> tuple[Entry, str] | None:
    """The part a name stands for once a word naming its NVLink domain is dropped ("B200 NVL8":
    B200-HGX), and the name without it, where no part is named with that word (H100 NVL and H200 NVL are cards of their
    own, found before this). A domain size the part's file does not state ("GB200 NVL4", the
    four-GPU board, against GB200-NVL72's 72) is refused rather than read as another system."""
    for name in candidates:
        joined = re.sub(r"\b(nvl)[\s\-]+(\d+)\b", r"\1\2", name, flags=re.IGNORECASE)  # "NVL 8"
        tokens = [t for t in re.split(r"[\s\-]+", joined) if t]
        words = [t for t in tokens if _DOMAIN_WORD.match(t)]
        rest = [t for t in tokens if not _DOMAIN_WORD.match(t)]
        if len(words) != 1 or not rest:
            continue
        entry = _match("hardware", " ".join(rest))
        if entry is None or _match("hardware", " ".join(rest) + " NVL") is not None:
            continue  # "H200 NVL8": the part has an NVL card of its own, so the word is unclear
        domain = int(_stated(entry, "scale_up_domain_gpus", 0) or 0)
        switched = _stated(entry, "interconnect", "switch") == "switch"
        if domain < 2 or not switched or "nvidia" not in str(entry.description).lower():
            continue  # no NVLink domain of several GPUs: "GH200 NVL", "L40S NVL", "MI300X NVL8"
        size = _DOMAIN_WORD.match(words[0]).group(1)  # type: ignore[union-attr]
        if size is not None and domain and int(size) != domain:
            raise SpecError(
                "argument",
                "hardware",
                f"{short(text)} names an NVLink domain of {int(size)} GPUs; the {entry.name} "
                f"spec's is {domain}",
                f"give a YAML file for that system (derive_from: {entry.name}, with its "
                "scale_up_domain_gpus and the figures that differ)",
            )
        return entry, " ".join(rest)
    return None


def _stated(entry: Entry, key: str, default, depth: int = 0):
    """A top-level field a part's file states, else its ``derive_from`` base's, else
    ``default``."""
    data = load_yaml(entry.path)
    data = data if isinstance(data, dict) else {}
    if key in data:
        return data[key]
    base = _match("hardware", str(data.get("derive_from") or ""))
    return _stated(base, key, default, depth + 1) if base and depth < MAX_DERIVE_DEPTH else default


#: A memory size a name states: "40GB", "40 GB", "192GBx8", "1.5TB" (GB, GiB or TB).
_MEMORY = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)\s*(gb|gib|tb)(?![a-wyz])", re.IGNORECASE)


def stated_memory_gb(text: str) -> float | None:
    """The memory size (GB) a part's name states ("A100-40GB": 40), or None."""
    found = _MEMORY.search(str(text))
    if found is None:
        return None
    return float(found.group(1)) * (1000.0 if found.group(2).lower() == "tb" else 1.0)


def _memory_bytes(entry: Entry, depth: int = 0) -> float:
    """The memory a part's file states (``hbm_capacity_bytes``, times its ``scale``), else
    its ``derive_from`` base's; 0 for a file that states none readable (it holds no size)."""
    data = load_yaml(entry.path)
    data = data if isinstance(data, dict) else {}
    scale = data.get("scale") if isinstance(data.get("scale"), dict) else {}
    value = data.get("hbm_capacity_bytes")
    if value is None:
        base = _match("hardware", str(data.get("derive_from") or ""))
        value = _memory_bytes(base, depth + 1) if base and depth < MAX_DERIVE_DEPTH else 0
    try:
        return float(value) * float(scale.get("hbm_capacity_bytes", 1))
    except (TypeError, ValueError):
        return 0.0


def _holds(entry: Entry, gb: float) -> bool:
    """Whether a part has the memory a name states, read as GB or GiB (datasheets round:
    an "80GB" H100 has 79.6 GiB, a "180GB" B200 179 GiB) within 5 %."""
    size = _memory_bytes(entry)
    return any(0.95 <= size / (gb * unit) <= 1.05 for unit in (1e9, 2**30))


def _with_memory(text: str, family: str, found: Entry, gb: float) -> Entry:
    """The one part of ``family`` (names and aliases that start with it) with the memory a
    name states; none or several: an error naming the family's parts with their memory (a
    name that states a size never runs a part of another size)."""
    wanted = _normalise(family)
    parts = [found] + [
        e
        for e in _sorted_entries("hardware", data_roots())
        if e is not found and any(_normalise(n).startswith(wanted) for n in (e.name, *e.aliases))
    ]
    fitting = [e for e in parts if _holds(e, gb)]
    if len(fitting) == 1:
        return fitting[0]
    listed = ", ".join(f"{e.name} ({_memory_bytes(e) / 2**30:,.0f} GiB)" for e in parts)
    problem = "none of which has" if not fitting else "several of which have"
    raise SpecError(  # not an unknown name: no other kind of spec is looked for
        "argument",
        "hardware",
        f"no hardware spec named {short(text)}: it states {gb:g} GB, and the {family} parts "
        f"are {listed}, {problem} it",
        "name one of those parts, or give a YAML file for the part you mean",
    )


def shipped_roots() -> tuple[Path, ...]:
    """The data folders that ship with the package (its bundled copy, or the checkout's)."""
    return tuple(r for r in data_roots() if r not in _user_roots())


def _user_roots() -> tuple[Path, ...]:
    return tuple(
        Path(extra).expanduser()
        for extra in os.environ.get("INFERENCE_ECON_PATH", "").split(os.pathsep)
        if extra.strip()
    )


def unread_user_roots() -> tuple[str, ...]:
    """Why an INFERENCE_ECON_PATH entry gives nothing, one sentence each: a path that is not a
    folder (a typo), or a folder without any of the kinds' subfolders (``hardware/`` itself
    named instead of the folder above it). ``list`` warns with them."""
    out = []
    for root in _user_roots():
        if not root.is_dir():
            out.append(
                f"INFERENCE_ECON_PATH: {str(root)!r} is not a folder: nothing is read from it"
            )
        elif not any((root / kind).is_dir() for kind in KINDS):
            folders = ", ".join(f"{k}/" for k in KINDS)
            out.append(
                f"INFERENCE_ECON_PATH: {str(root)!r} holds none of {folders}: nothing is read "
                "from it (name the folder above those)"
            )
    return tuple(out)


def resolved(path: Path) -> Path:
    """``path.resolve()``, an absolute path's kept for the process: a search loads the same
    few spec files thousands of times, each resolve a system call a folder."""
    return _resolved_absolute(path) if path.is_absolute() else path.resolve()


@lru_cache(maxsize=1024)
def _resolved_absolute(path: Path) -> Path:
    return path.resolve()


#: The files users named by a path (resolved path -> the text they gave), for display_path.
_GIVEN: dict[Path, str] = {}


def _given_as(path: Path, text: str) -> Path:
    """``path``, remembering that the user named it ``text`` (how outputs show it)."""
    with contextlib.suppress(OSError, RuntimeError):
        _GIVEN[path.resolve()] = text
    return path


def display_path(path: str | os.PathLike) -> str:
    """A spec file as outputs and errors name it: a shipped spec relative to the package's
    data ("hardware/h100_sxm.yaml", wherever the package is installed); a user's spec by its
    real path: an INFERENCE_ECON_PATH file in full (so it never looks shipped), a file given on
    the command line as given (not made absolute). Other text (e.g. "derived from H100-SXM")
    is kept."""
    text = str(path)
    if not text:
        return ""
    try:
        candidate = Path(text)
        if not candidate.is_file():
            return text
        resolved = candidate.resolve()
    except (OSError, ValueError, RuntimeError):  # not a name the file system accepts
        return text
    for root in shipped_roots():
        try:
            return resolved.relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
    for root in _user_roots():
        if resolved.is_relative_to(root.resolve()):
            return str(resolved)
    return _GIVEN.get(resolved, text)


display_sources_with(display_path)  # every error names spec files this way (errors.py)


#: Longest chain of ``derive_from`` files (a spec, its base, its base's base, ...).
MAX_DERIVE_DEPTH = 16
#: The spec files being read, by kind, from the first one to its base being read now.
_DERIVING = threading.local()


class DeriveChainError(SpecError):
    """A ``derive_from`` chain that returns to a file or runs too deep: complete as raised,
    so the files the chain passed through pass it on as it is (not each adding its own
    "field 'derive_from'")."""


def _chain_text(paths: list[Path]) -> str:
    """``a.yaml -> b.yaml -> a.yaml``, long chains cut to their two ends."""
    names = [p.name for p in paths]
    if len(names) > 6:
        names = [*names[:2], "...", *names[-2:]]
    return " -> ".join(names)


@contextlib.contextmanager
def deriving(kind: str, path: Path) -> Iterator[None]:
    """Read the spec file ``path`` (resolved) of ``kind`` inside this block, following a
    ``derive_from`` (``hardware``, ``engines``, or ``kinds`` for ``spec_kind``). A file met
    again while its bases are read, or a chain deeper than ``MAX_DERIVE_DEPTH``, is refused
    with one line (``DeriveChainError``) instead of recursing without end."""
    chain = _DERIVING.__dict__.setdefault("chains", {}).setdefault(kind, [])
    if path in chain:
        start = chain.index(path)
        raise DeriveChainError(
            str(path),
            "derive_from",
            f"derives from itself: {_chain_text([*chain[start:], path])}",
            "point derive_from at a spec that does not lead back to this file",
        )
    if len(chain) >= MAX_DERIVE_DEPTH:
        raise DeriveChainError(
            str(chain[0]),
            "derive_from",
            f"chain of more than {MAX_DERIVE_DEPTH} files: {_chain_text([*chain, path])}",
            f"a spec may derive from another one at most {MAX_DERIVE_DEPTH} deep: shorten "
            "the chain, e.g. by merging files into one",
        )
    chain.append(path)
    try:
        yield
    finally:
        chain.pop()


def clear_cache() -> None:
    """Forget the index (after files were added at run time, e.g. in tests)."""
    for cached in (_index, _broken, _sorted_entries, _by_name, _package_roots):
        cached.cache_clear()
