"""Reading input files safely, and remembering which files a command read.

Inputs are regular files of bounded size decoded as UTF-8 (gzip-compressed ones expanded first,
the size bound holding on what they expand to), so a device, a FIFO, a huge file, a
decompression bomb or a file in another encoding is one clear error, never a hang or a
traceback. Inside
``tracking()`` (the command line wraps every command in it) each file read is remembered by
its device and inode, so ``output.files.write_atomic`` can refuse to overwrite an input of the
same command, whatever path or symlink names it (docs/errors.md).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError, _shown, expect, plural, warn

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


def file_path(path) -> str | os.PathLike:
    """``path`` when it names a file (text or a path object); anything else (None, a number,
    a list: a Python caller's slip) is one ``SpecError`` naming it, not a TypeError from deep
    inside pathlib."""
    fix = "give a file's path as text or a pathlib.Path"
    return expect(path, (str, os.PathLike), "path", "the path of a file", fix)


def read_bytes(
    path: str | os.PathLike, limit: int = MAX_INPUT_BYTES, remember: bool = True
) -> bytes:
    """The bytes of a regular input file of at most ``limit`` bytes; recorded as an input
    (unless ``remember`` is false: a file the command itself may replace, such as a cached
    cell).

    The file is opened without blocking and checked on the open descriptor, so a FIFO (which
    would wait for a writer), a device (``/dev/zero`` never ends) or a directory is refused at
    once, even one swapped in after a check by name; the size limit holds before anything is
    read, and again while reading (a file that grows)."""
    path = Path(file_path(path))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise SpecError(
            str(path), "", "cannot read the file: no such file", "check the path"
        ) from None
    except OSError as exc:
        raise SpecError(str(path), "", f"cannot read the file: {exc.strerror}") from None
    except ValueError:  # a NUL in the path
        raise SpecError(str(path), "", "is not a valid path", "give the path of a file") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SpecError(
                str(path), "", f"is {kind_of(st.st_mode)}", "give the path of a regular file"
            )
        if st.st_size > limit:
            raise SpecError(
                str(path),
                "",
                f"is {_megabytes(st.st_size)}, larger than the {_megabytes(limit)} read",
                "input files are small text files; check the path",
            )
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(limit + 1 - size, 2**24))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise SpecError(str(path), "", f"cannot read the file: {exc.strerror}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise SpecError(str(path), "", f"is larger than the {_megabytes(limit)} read")
    if remember:
        record(path)
    return b"".join(chunks)


def _megabytes(size: float) -> str:
    """A size as a message says it: 230 MB, 0.5 MB."""
    return f"{size / 2**20:.{0 if size >= 2**20 else 1}f} MB"


def decode(data: bytes, source: str) -> str:
    """Bytes of an input decoded as UTF-8 (a byte-order mark is dropped); anything else is one
    error naming the byte and the line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SpecError(
            source,
            "",
            f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line})",
            "save the file as UTF-8",
        ) from None


def read_text(path: str | os.PathLike, limit: int = MAX_INPUT_BYTES, remember: bool = True) -> str:
    """A regular input file decoded as UTF-8 (a byte-order mark is dropped); a
    gzip-compressed one (``.csv.gz``, as the project's larger data files ship) expanded first,
    to at most ``limit`` bytes."""
    data = read_bytes(path, limit, remember)
    if data[:2] == GZIP_MAGIC:
        data = gunzipped(data, str(path), limit)
    elif os.fspath(path).lower().endswith(".gz"):  # not what its name says: not read as text
        raise SpecError(
            str(path),
            "",
            "is named .gz but is not gzip-compressed",
            "compress it with gzip, or name it without .gz",
        )
    return decode(data, str(path))


#: The first two bytes of every gzip member (RFC 1952).
GZIP_MAGIC = b"\x1f\x8b"


def gunzipped(data: bytes, source: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes gzip-compressed ``data`` holds (every member, as ``gzip`` writes them when
    files are concatenated), expanded to at most ``limit`` bytes: a file that expands further
    (a decompression bomb), is damaged or cut short is one error naming ``source``."""
    out: list[bytes] = []
    size, rest = 0, data
    while rest:
        if rest[:2] != GZIP_MAGIC:
            raise SpecError(source, "", "has bytes after its gzip data", "check the file is whole")
        member = zlib.decompressobj(wbits=31)  # 16 + 15: a gzip header and trailer
        try:
            chunk = member.decompress(rest, limit + 1 - size)
        except zlib.error as exc:
            raise SpecError(
                source, "", f"is gzip-compressed but damaged ({exc})", "check the file is whole"
            ) from None
        size += len(chunk)
        out.append(chunk)
        if size > limit or member.unconsumed_tail:
            raise SpecError(
                source,
                "",
                f"expands to more than the {_megabytes(limit)} read",
                "input files are small text files; check the path",
            )
        if not member.eof:
            raise SpecError(
                source, "", "is gzip-compressed but cut short", "check the file is whole"
            )
        rest = member.unused_data
    return b"".join(out)


#: A JSON or YAML escape of a UTF-16 surrogate (``\\ud800``-``\\udfff``): half a character,
#: which no UTF-8 text can hold and every writer of it refuses.
_SURROGATE_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def refuse_surrogates(data: Any, text: str, source: str, field: str = "") -> Any:
    """``data`` parsed from ``text``, refused by the field that holds a lone surrogate (an
    escape such as ``\\ud800``, or a YAML pair of them): read in, it would fail the first
    write or table that encodes it. Only texts with such an escape are walked."""
    if not _SURROGATE_ESCAPE.search(text):
        return data
    stack: list[tuple[str, Any]] = [(field, data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and _SURROGATE.search(key):  # named by its mapping
                    raise _surrogate_error(source, where)
                stack.append((f"{where}.{key}" if where else str(key), item))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in enumerate(value))
        elif isinstance(value, str) and _SURROGATE.search(value):
            raise _surrogate_error(source, where)
    return data


def _surrogate_error(source: str, field: str) -> SpecError:
    return SpecError(
        source,
        field,
        "holds a \\u escape of half a character (a UTF-16 surrogate, \\ud800-\\udfff)",
        "write the character itself, or drop the escape",
    )


class NotJSON(SpecError):
    """Text that is not JSON at all (a syntax error), as opposed to JSON the parser cannot
    take (nested too deeply, an integer of too many digits): a reader that also accepts other
    formats tries them on this one only. ``detail``: the parser's words and the column, for a
    reader that names the line itself (one line of a JSON-lines file)."""

    detail = ""


def parse_json(text: str, source: str, field: str = "") -> Any:
    """JSON text of ``source`` parsed; a syntax error (``NotJSON``), nesting too deep for the
    parser or a number Python cannot convert is one error naming the source and the line. The
    caller checks the shape."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        error = NotJSON(source, field, f"not valid JSON at line {exc.lineno}: {exc.msg}")
        error.detail = f"{exc.msg} (column {exc.colno})"
        raise error from None
    except RecursionError:
        raise SpecError(
            source, field, "not valid JSON: nested too deeply", "flatten the file"
        ) from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise SpecError(source, field, f"not valid JSON: {str(exc)[:120]}") from None
    return refuse_surrogates(data, text, source, field)


def read_json(path: str | os.PathLike, limit: int = MAX_INPUT_BYTES, remember: bool = True) -> Any:
    """A regular input file parsed as JSON (``parse_json``). The caller checks the shape."""
    return parse_json(read_text(path, limit, remember), str(path))


def csv_stream(path: str | os.PathLike, limit: int = MAX_INPUT_BYTES) -> io.StringIO:
    """A regular input file as a text stream for ``csv`` or ``pandas.read_csv`` (newlines kept
    as written, so quoted cells may hold them)."""
    return io.StringIO(read_text(path, limit), newline="")


def csv_rows(
    path: str | os.PathLike,
    limit: int = MAX_INPUT_BYTES,
    skipinitialspace: bool = False,
    comments: bool = False,
) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """A CSV file's header (names stripped) and its rows as ``(line, cells)``: the line each
    row starts on (the header is line 1), blank rows (no cell but spaces) left out (and, with
    ``comments``, lines starting with ``#``). Read with the ``csv`` module, so a row of more
    cells than the header is that row's problem (``row_cells``), never the file's end or a
    silent shift of its columns (pandas takes a first row of one cell too many as an index).
    A file ``csv`` cannot split is one error (an unclosed quote runs to the end: one row)."""
    source = str(path)
    text = read_text(path, limit)
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=skipinitialspace)
    try:
        every = list(reader)  # at C speed; [] for an empty line
    except csv.Error as exc:
        raise SpecError(
            source,
            "",
            f"is not valid CSV at line {reader.line_num}: {exc}",
            "close every quote; quote cells that hold commas",
        ) from None
    lines = text.count("\n") + (not text.endswith("\n"))
    if len(every) == lines:  # no row spans lines (a quoted newline): row i is on line i + 1
        starts: Iterable[int] = range(1, len(every) + 1)
    else:  # read again, noting where each row starts
        reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=skipinitialspace)
        starts = [1]
        for _ in reader:
            starts.append(reader.line_num + 1)
    kept = [
        (line, cells)
        for line, cells in zip(starts, every)
        if (cells and cells[0].strip() or any(c.strip() for c in cells))
        and not (comments and cells[0].lstrip().startswith("#"))
    ]
    if not kept:
        return [], []
    return [h.strip() for h in kept[0][1]], kept[1:]


def too_many_cells(where: str, cells: int, width: int) -> SpecError:
    """The error of a CSV row of more cells than its header's ``width`` columns: its cells
    cannot be matched to the columns (an unquoted comma shifts them). Every CSV reader of the
    package reports such a row with it; a shorter row is read with "" in the cells it lacks."""
    return SpecError(
        where,
        "",
        f"has {cells} cells for the header's {width} columns",
        "quote cells that hold commas",
    )


def row_cells(source: str, line: int, cells: list[str], width: int, at: list[int]) -> list[str]:
    """The cells of a row at the columns ``at`` (stripped; "" where the row is short); a row of
    more cells than the header's ``width`` is refused (``too_many_cells``)."""
    if len(cells) > width:
        raise too_many_cells(f"{source}: line {line}", len(cells), width)
    return [cells[i].strip() if i < len(cells) else "" for i in at]


#: Unreadable rows of a file reported one line each; past these, one line counts the rest.
MAX_ROW_WARNINGS = 5


@dataclass(frozen=True)
class LeftOut:
    """Rows of an input file that could not be read and were left out: the file, what its
    rows are (``trace row``), how many rows it has, and each left-out row's line and reason."""

    source: str
    noun: str
    rows: int
    reasons: tuple[tuple[int, str], ...]

    def __len__(self) -> int:
        return len(self.reasons)

    def note(self) -> str:
        """One line for a result's notes: "2 of 500 trace rows left out: line 7: ...; ..."."""
        shown = "; ".join(f"line {line}: {why}" for line, why in self.reasons[:3])
        more = f"; and {len(self) - 3} more" if len(self) > 3 else ""
        return (
            f"{len(self)} of {self.rows} {plural(self.rows, self.noun)} of "
            f"{_shown(self.source)} left out (unreadable): {shown}{more}"
        )


def left_out(
    source: str, noun: str, rows: int, problems: list[tuple[int, SpecError]], need: int = 1
) -> LeftOut | None:
    """Report the rows of ``source`` that could not be read and go on with the others: one
    warning line per row (``MAX_ROW_WARNINGS``, then one line counting the rest), each naming
    the file, the line, the field and the fix. ``rows``: the rows the file has (read and not);
    ``problems``: each unreadable row's line and error. Fewer than ``need`` readable rows is
    one error instead (the first unreadable row's, with how many could be read).

    Returns
    -------
    LeftOut or None
        The rows left out (its ``note()`` for the result's notes); None when every row was
        read.

    Raises
    ------
    SpecError
        Fewer than ``need`` rows could be read.
    """
    if not problems:
        return None
    kept = rows - len(problems)
    first = problems[0][1]
    if kept < need:
        readable = (
            f"none of its {rows} {plural(rows, noun)} can be read"
            if kept == 0
            else f"only {kept} of its {rows} {plural(rows, noun)} can be read, {need} are needed"
        )
        raise SpecError(first.source, first.field, f"{first.problem}; {readable}", first.fix)
    for _, exc in problems[:MAX_ROW_WARNINGS]:
        warn(f"{exc}; the row is left out")
    if len(problems) > MAX_ROW_WARNINGS:
        warn(
            f"{_shown(source)}: {len(problems) - MAX_ROW_WARNINGS} more unreadable "
            f"{plural(len(problems) - MAX_ROW_WARNINGS, noun)} left out"
        )
    reasons = tuple(
        (line, f"{exc.field}: {exc.problem}" if exc.field else exc.problem)
        for line, exc in problems
    )
    return LeftOut(str(source), noun, rows, reasons)


class Rows(tuple):
    """The rows read from a file (a tuple), with the rows left out as unreadable
    (``left_out``: a ``LeftOut``, None when every row was read)."""

    left_out: LeftOut | None

    def __new__(cls, rows, left_out: LeftOut | None = None):
        out = super().__new__(cls, rows)
        out.left_out = left_out
        return out

    def notes(self) -> tuple[str, ...]:
        """What a result of these rows must say: the rows left out."""
        return (self.left_out.note(),) if self.left_out else ()
