"""Writing output files without destroying anything the command did not create.

``write_atomic`` writes a file so that readers see the old content or the new, never half, and
an interruption (even SIGKILL) leaves no partial or temporary file: on Linux the data goes to
an unnamed file (``O_TMPFILE``) that gets a name only when it is complete. It follows a
symlink and replaces the file it points to (the link stays), keeps an existing file's
permissions, and refuses a target that is not a regular file (a directory, a device such as
``/dev/null``, a FIFO) or that is an input of the running command (``specs.inputs``).

It replaces only a file the toolkit wrote: every folder it writes a file in keeps a record of
the files it wrote there (``MANIFEST``, with each file's size and SHA-256), a name entering it
before its file is written; an existing file the record does not name, or names but which has
changed since, is refused, whether it is a single ``--out`` or a file of an output folder.
Every refusal and every OS error is a ``SpecError`` naming the path (docs/errors.md).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import SpecError
from ..specs import inputs

#: What to do about an OS error while writing, by errno.
_FIXES = {
    errno.EACCES: "check the permissions of the file and its folder, or write elsewhere",
    errno.EPERM: "check the permissions of the file and its folder, or write elsewhere",
    errno.EROFS: "the file system is read-only: write elsewhere",
    errno.ENOSPC: "the disk is full: free some space or write elsewhere",
    errno.EDQUOT: "the disk quota is exhausted: free some space or write elsewhere",
    errno.ENAMETOOLONG: "use a shorter file name",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "give the path of a file, not a folder",
}


#: The table format a file's suffix asks for (no suffix: the text table).
TABLE_SUFFIXES = {
    "": "table",
    "txt": "table",
    "text": "table",
    "csv": "csv",
    "json": "json",
    "md": "markdown",
    "markdown": "markdown",
}


def table_format(path: str | os.PathLike, fmt: str | None = None, where: str = "") -> str:
    """The format a table is written to ``path`` in: ``fmt`` when given (it must agree with
    a suffix that names a format: ``--format csv --out f.json`` is an error), else the
    suffix's (f.json: json; .txt or none: the text table). A suffix that names no table
    format (.xlsx) needs an explicit ``fmt``: guessing would write text under that name."""
    suffix = Path(os.fspath(path)).suffix.lstrip(".").lower()
    known = TABLE_SUFFIXES.get(suffix)
    where = where or str(path)
    if fmt is None:
        if known is None:
            raise SpecError(
                where,
                "",
                f"'.{suffix}' is not a table format",
                "name a .csv, .json, .md or .txt file, or give --format",
            )
        return known
    if known is not None and suffix and known != fmt:
        raise SpecError(
            where,
            "",
            f"'.{suffix}' is {known}, but --format is {fmt}",
            f"give --format {known}, or a file ending in .{_suffix_of(fmt)}",
        )
    return fmt


def _suffix_of(fmt: str) -> str:
    return {"table": "txt", "markdown": "md"}.get(fmt, fmt)


#: Formats matplotlib lists but writes only with other software: pgf runs LaTeX (xelatex).
_NEEDS_OTHER_SOFTWARE = ("pgf",)
#: Formats matplotlib writes through Pillow, and the Pillow feature each needs (``None``:
#: Pillow's own Python writer); a Pillow built without one cannot write it.
_PILLOW_FEATURE = {
    "jpg": "jpg",
    "jpeg": "jpg",
    "webp": "webp",
    "avif": "avif",
    "gif": None,
    "tif": None,
    "tiff": None,
}


@functools.cache
def figure_formats() -> tuple[str, ...]:
    """The suffixes a figure can be written as here (png, svg, pdf, jpg, ...): those matplotlib
    saves with no software beyond it and Pillow (not pgf: LaTeX), each checked once."""
    import warnings

    from matplotlib.backend_bases import FigureCanvasBase
    from PIL import features

    def writes(fmt: str) -> bool:
        if fmt in _NEEDS_OTHER_SOFTWARE:
            return False
        feature = _PILLOW_FEATURE.get(fmt)
        with warnings.catch_warnings():  # an older Pillow does not know "avif": not written
            warnings.simplefilter("ignore")
            return feature is None or bool(features.check(feature))

    return tuple(sorted(f for f in FigureCanvasBase.get_supported_filetypes() if writes(f)))


def _target(path: str | os.PathLike) -> Path:
    """The file a write to ``path`` replaces: the end of its chain of symlinks."""
    return Path(os.path.realpath(os.fspath(path)))


def _os_error(path, exc: OSError) -> SpecError:
    return SpecError(
        str(path), "", f"cannot write: {exc.strerror or exc}", _FIXES.get(exc.errno, "")
    )


def check_output(
    path: str | os.PathLike,
    option: str = "",
    suffixes: tuple[str, ...] | None = None,
    owned: bool = True,
) -> Path:
    """Refuse an output path before anything is computed or written: not a regular file,
    an input of the running command, a folder that cannot be written, (``suffixes``) a
    suffix that is not one of them (``("figure",)``: ``figure_formats``), or
    (``owned``) an existing file the toolkit did not write (``check_owned_file``)."""
    where = f"{option} {path}".strip()
    text = os.fspath(path)
    if not text or text.endswith(os.sep):
        raise SpecError(where, "", "is not a file name", "give the path of a file to write")
    if suffixes:
        allowed = figure_formats() if suffixes == ("figure",) else suffixes
        suffix = Path(text).suffix.lstrip(".").lower()
        if suffix and suffix not in allowed:
            raise SpecError(
                where, "", f"cannot be written as '.{suffix}'", f"use one of .{', .'.join(allowed)}"
            )
    try:
        target = _target(path)
        st = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):  # a file on its path: refused below
        st = None
    except (OSError, ValueError) as exc:
        fix = _FIXES.get(getattr(exc, "errno", None), "")
        raise SpecError(
            where, "", f"cannot be used: {getattr(exc, 'strerror', exc)}", fix
        ) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise SpecError(
            where,
            "",
            f"is {inputs.kind_of(st.st_mode)}, not a regular file",
            "give the path of a regular file to create or replace",
        )
    same = inputs.input_named(target) if st is not None else None
    if same is not None:
        raise SpecError(
            where,
            "",
            f"is an input of this command ({same}): writing it would destroy it",
            "write the output to another file",
        )
    if st is not None and not st.st_mode & 0o222:  # root writes through permissions
        raise SpecError(
            where,
            "",
            "is read-only: replacing it would destroy it",
            "make it writable (chmod u+w) to replace it, or write elsewhere",
        )
    folder = _existing_parent(target)
    _check_is_folder(folder, where)
    if not os.access(folder, os.W_OK | os.X_OK) or (
        st is not None and not os.access(target, os.W_OK)
    ):
        raise SpecError(where, "", "cannot be written: permission denied", _FIXES[errno.EACCES])
    _check_takes_files(target.parent, where)
    if owned:
        check_owned_file(target, where)
    return target


def check_folder(path: str | os.PathLike, option: str = "") -> Path:
    """Refuse an output folder that exists but is not a folder, or cannot be written."""
    where = f"{option} {path}".strip()
    if not os.fspath(path).strip():  # "" would be the current folder, unasked
        raise SpecError(where or "output", "", "is not a folder name", "give a folder's path")
    folder = Path(os.path.realpath(os.fspath(path)))
    try:  # a name the system refuses (too long) is the option's error, not a traceback
        exists = folder.exists()
        parent = _existing_parent(folder / "x")
    except OSError as exc:
        raise _os_error(where, exc) from None
    if exists and not folder.is_dir():
        raise SpecError(where, "", "is not a folder", "give a folder; it is created if missing")
    _check_is_folder(parent, where)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SpecError(where, "", "cannot be written: permission denied", _FIXES[errno.EACCES])
    _check_takes_files(folder, where)
    return folder


def _check_is_folder(parent: Path, where: str) -> None:
    """Refuse an output whose nearest existing folder on its path is not one (``a/b.csv``
    where ``a`` is a file): the folders it names cannot be created there."""
    if os.path.isdir(parent):
        return
    try:
        mode = os.stat(parent).st_mode
        kind = "a file" if stat.S_ISREG(mode) else inputs.kind_of(mode)
    except OSError:
        kind = "unreadable"
    raise SpecError(
        where,
        "",
        f"cannot be created: {parent} is {kind}, not a folder",
        "give a path whose existing parts are folders; missing folders are created",
    )


def _check_takes_files(folder: Path, where: str) -> None:
    """Refuse a folder in which the system will not create a file, found by trying before
    anything is computed: root passes every permission check, and a file system such as
    /proc refuses to create what ``os.access`` allows. An existing folder gets an unnamed
    file (``O_TMPFILE``: no name appears); a missing one, a folder made and removed in the
    nearest existing folder, where the write would create it."""
    parent = _existing_parent(folder / "x")
    try:
        if parent == folder:
            with tempfile.TemporaryFile(dir=parent):
                pass
        else:
            os.rmdir(tempfile.mkdtemp(prefix=".inference-econ-", dir=parent))
    except OSError as exc:
        raise SpecError(
            where,
            "",
            f"cannot be written: creating in {parent} fails with '{exc.strerror or exc}'",
            _FIXES.get(exc.errno) or "give a path on a file system that takes new files",
        ) from None


def _existing_parent(path: Path) -> Path:
    """The nearest folder of ``path`` that exists (where missing folders would be created)."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent


#: The record of the files the toolkit wrote in a folder, kept in that folder beside them.
MANIFEST = ".inference-econ-files.json"
#: Files this process wrote where their folder's record could not be written: their stamps.
_UNRECORDED: dict[Path, list | None] = {}


def _stamp(path: Path) -> list | None:
    """What tells a file the toolkit wrote from one changed since: [size, SHA-256 of the
    content]. A content hash, not the time: a copy, a ``git clone`` (figures/ is committed
    with its record) or ``touch`` keep a file the toolkit's, and any edit is caught; reading
    an output once more costs little beside computing it."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return [os.stat(path).st_size, digest.hexdigest()]
    except OSError:  # a write-only file: recorded by name only
        return None


def _unchanged(path: Path, stamp: list | None) -> bool:
    """Whether ``path`` is as ``stamp`` says (the size first: most changes need no read)."""
    return stamp is not None and os.stat(path).st_size == stamp[0] and _stamp(path) == stamp


def _read_record(folder: Path) -> dict[str, list | None]:
    """The files a folder's record names, with their stamps (None: recorded by name only, by
    a version before stamps or by a run killed while it wrote the file); {} without a record.
    A file of the record's name that is not a record is refused: it is someone else's."""
    path = folder / MANIFEST
    if not os.path.lexists(path):
        return {}
    try:
        data = inputs.read_json(path, remember=False)
    except SpecError:
        data = None
    ours = isinstance(data, dict) and data.get("written_by") == "inference-econ"
    files = data.get("files") if ours else None
    if not isinstance(files, list):
        raise SpecError(
            str(path),
            "",
            "is not inference-econ's record of the files it wrote in this folder",
            "move it away: inference-econ keeps that record under this name",
        )
    stamps = data.get("stamps")
    stamps = stamps if isinstance(stamps, dict) else {}
    known: dict[str, list | None] = {}
    for name in files:
        if isinstance(name, str):
            s = stamps.get(name)
            ok = isinstance(s, list) and len(s) == 2 and type(s[0]) is int and type(s[1]) is str
            known[name] = s if ok else None
    return known


def _save_record(folder: Path, known: dict[str, list | None]) -> None:
    stamps = {k: v for k, v in sorted(known.items()) if v is not None}
    data = {"written_by": "inference-econ", "files": sorted(known), "stamps": stamps}
    text = json.dumps(data, indent=1)  # a stamp on one line:
    text = re.sub(r"\[\n\s+(\d+),\n\s+(\"\w+\")\n\s+\]", r"[\1, \2]", text)
    write_atomic(folder / MANIFEST, text + "\n", record=False)


def _record_writable(folder: Path) -> bool:
    """Whether the record in ``folder`` (a folder the output can be written in) can be
    written: it is missing, or a regular file writable by mode and by this user (in a shared
    folder with the sticky bit, such as /tmp, only its owner may replace it)."""
    path = _target(folder / MANIFEST)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or not st.st_mode & 0o222 or not os.access(path, os.W_OK):
        return False
    euid = os.geteuid() if hasattr(os, "geteuid") else 0
    sticky = os.stat(path.parent).st_mode & stat.S_ISVTX
    return not sticky or euid == 0 or st.st_uid == euid


def check_owned_file(path: str | os.PathLike, where: str = "") -> None:
    """Refuse, before anything is computed, to replace a file the toolkit did not write: an
    existing file (a symlink's target) may be replaced only if its folder's record
    (``MANIFEST``) names it, unchanged since (same size and SHA-256, ``_stamp``), or this
    process wrote it where the record could not be written."""
    target = _target(path)
    if target.name == MANIFEST:
        raise SpecError(
            where or str(path),
            "",
            "is the name of inference-econ's record of the files it writes in a folder",
            "choose another name",
        )
    known = _read_record(target.parent)
    if not os.path.lexists(target):
        return
    fix = "remove it, or choose another name"
    if target.name in known:
        if known[target.name] is None or _unchanged(target, known[target.name]):
            return
        problem = (
            f"has changed since inference-econ wrote it (its content is not the one in {MANIFEST})"
        )
    elif _unchanged(target, _UNRECORDED.get(target)):
        return
    else:
        problem = f"exists, and inference-econ did not write it (it is not in {MANIFEST})"
        fix += "; a file an earlier version wrote is not recorded: remove it once"
    raise SpecError(where or str(path), "", f"{problem}: replacing it would destroy it", fix)


def check_owned(folder: str | os.PathLike, names: Iterable[str]) -> None:
    """Refuse, before anything is computed, names a run will write in ``folder`` that hold a
    file the toolkit did not write there (``check_owned_file``)."""
    for name in names:
        check_owned_file(Path(os.fspath(folder)) / name)


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """The folder locked (``flock`` on the folder itself, Linux and macOS) while its record is
    read and written, so two commands writing in one folder at once lose no entry."""
    try:
        import fcntl

        fd = os.open(folder, os.O_RDONLY)
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _claim(target: Path) -> bool:
    """Before a file is written: its name enters its folder's record (without a stamp until
    it is whole), so a run killed at any moment leaves every file it wrote recorded. False
    when the record cannot be written (``_record_writable``)."""
    folder = target.parent
    if not _record_writable(folder):
        return False
    with _locked(folder):
        known = _read_record(folder)
        known[target.name] = None
        _save_record(folder, known)
    return True


def _stamped(target: Path, claimed: bool, path) -> None:
    """After a file is written: its stamp in the record (or, where the record cannot be
    written, in this process's memory, with a warning that a later run will refuse it)."""
    stamp = _stamp(target)
    if claimed:
        with _locked(target.parent):
            known = _read_record(target.parent)
            known[target.name] = stamp
            _save_record(target.parent, known)
        return
    _UNRECORDED[target] = stamp
    from ..errors import warn

    warn(
        f"{path}: written, but {target.parent / MANIFEST} cannot be written to record it, "
        "so a later run will refuse to replace it (make that record writable, or write elsewhere)"
    )


def write_atomic(
    path: str | os.PathLike, data: str | bytes | Iterable[bytes], record: bool = True
) -> Path:
    """Write a file so that readers see the old content or the new, never half of it.

    Follows symlinks (the link stays and its target is replaced), keeps an existing file's
    mode, refuses non-regular targets, inputs of the running command and a file the toolkit
    did not write (``check_owned_file``); records the file in its folder's record
    (``MANIFEST``) so a later run may replace it; returns ``path``. ``data`` may be chunks of
    bytes (written as they come: a large file is never all in memory). ``record=False``: a
    file that is the toolkit's by its place and name (the record itself, a study's cache).
    """
    target = check_output(path, owned=record)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _os_error(path, exc) from None
    claimed = _claim(target) if record else False
    if isinstance(data, str):
        payload: bytes | Iterable[bytes] = data.encode("utf-8")
    else:
        payload = data
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    try:
        # chunks are read once: straight to a named temporary file
        if not isinstance(payload, bytes) or not _write_unnamed(target, payload, mode):
            _write_named(target, payload, mode)
    except OSError as exc:
        raise _os_error(path, exc) from None
    if record:
        _stamped(target, claimed, path)
    return Path(path)


def _write_unnamed(target: Path, payload: bytes, mode: int) -> bool:
    """Linux: write into an unnamed file in the target's folder, then give it the target's
    name; an interruption before that leaves nothing. False where O_TMPFILE is missing."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None:
        return False
    try:
        fd = os.open(target.parent, flag | os.O_WRONLY, mode)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return False  # the file system does not support it
        raise
    name = None
    try:
        _write_all(fd, payload)
        os.fchmod(fd, mode)
        name = _free_name(target)
        if not _link_unnamed(fd, name):
            name = None
            return False
        os.replace(name, target)
        name = None
    finally:
        os.close(fd)
        if name is not None:
            Path(name).unlink(missing_ok=True)
    return True


def _link_unnamed(fd: int, name: str) -> bool:
    """Give the unnamed file ``fd`` the name ``name``: through /proc (any user), else
    ``linkat(fd, "", AT_EMPTY_PATH)`` (needs CAP_DAC_READ_SEARCH); False if neither works."""
    try:
        os.link(f"/proc/self/fd/{fd}", name, follow_symlinks=True)
        return True
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.ENOENT, errno.EPERM, errno.EACCES, errno.EINVAL):
            raise
    libc = _libc()
    if libc is None:
        return False
    at_fdcwd, at_empty_path = -100, 0x1000
    return libc.linkat(fd, b"", at_fdcwd, os.fsencode(name), at_empty_path) == 0


@functools.cache
def _libc():
    """The C library's ``linkat`` (Linux), or None."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc if hasattr(libc, "linkat") else None
    except (OSError, AttributeError):
        return None


def _write_named(target: Path, payload: bytes | Iterable[bytes], mode: int) -> None:
    """Elsewhere: a named temporary file beside the target, renamed over it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        _write_all(fd, payload)
        os.fchmod(fd, mode)
        os.close(fd)
        fd = -1
        os.replace(tmp, target)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_all(fd: int, payload: bytes | Iterable[bytes]) -> None:
    for chunk in [payload] if isinstance(payload, bytes) else payload:
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view) :]


def _free_name(target: Path) -> str:
    """A name beside ``target`` that no file has (for the moment between link and rename)."""
    for _ in range(100):
        name = target.parent / f".{target.name}.{os.urandom(6).hex()}.tmp"
        if not os.path.lexists(name):
            return str(name)
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(target.parent))
