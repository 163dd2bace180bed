"""Reading input files safely, and remembering which files a command read.

Inputs are regular files of bounded size decoded as UTF-8, so a device, a FIFO, a huge file or
a file in another encoding is one clear error, never a hang or a traceback. Inside
``tracking()`` (the command line wraps every command in it) each file read is remembered by
its device and inode, so ``output.files.write_atomic`` can refuse to overwrite an input of the
same command, whatever path or symlink names it (docs/errors.md).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from ..errors import SpecError

#: The largest input file read (spec files are a few kB; measured CSVs a few MB).
MAX_INPUT_BYTES = 64 * 2**20

_READ: ContextVar[dict | None] = ContextVar("inference_econ_inputs", default=None)


@contextmanager
def tracking() -> Iterator[dict]:
    """Remember the files read inside the block: {(device, inode): path}."""
    token = _READ.set({})
    try:
        yield _READ.get()
    finally:
        _READ.reset(token)


def identity(path: str | os.PathLike) -> tuple[int, int] | None:
    """(device, inode) of the file a path names (after symlinks), or None if there is none."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def record(path: str | os.PathLike) -> None:
    """Remember ``path`` as an input of the running command (nothing outside ``tracking``)."""
    seen = _READ.get()
    if seen is None:
        return
    key = identity(path)
    if key is not None:
        seen.setdefault(key, str(path))


def input_named(path: str | os.PathLike) -> str | None:
    """The input of the running command that ``path`` is (by device and inode), or None."""
    seen = _READ.get()
    key = identity(path)
    if not seen or key is None:
        return None
    return seen.get(key)


def kind_of(mode: int) -> str:
    """'a directory', 'a device', ... for a file mode that is not a regular file."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_bytes(path: str | os.PathLike, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a regular input file of at most ``limit`` bytes; recorded as an input."""
    path = Path(path)
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise SpecError(
                str(path), "", f"is {kind_of(st.st_mode)}", "give the path of a regular file"
            )
        if st.st_size > limit:
            raise SpecError(
                str(path),
                "",
                f"is {st.st_size / 2**20:.0f} MB, larger than the {limit / 2**20:.0f} MB read",
                "input files are small text files; check the path",
            )
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise SpecError(str(path), "", f"cannot read the file: {exc.strerror}") from None
    if len(data) > limit:
        raise SpecError(str(path), "", f"is larger than the {limit / 2**20:.0f} MB read")
    record(path)
    return data


def read_text(path: str | os.PathLike, limit: int = MAX_INPUT_BYTES) -> str:
    """A regular input file decoded as UTF-8 (a byte-order mark is dropped)."""
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SpecError(
            str(path),
            "",
            f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line})",
            "save the file as UTF-8",
        ) from None
