"""Reading the files the measured-results scripts take (``acceptance.py``,
``at_measured_load.py``, ``compare_residuals.py``, ``config_scatter.py``): a measured-rows CSV, a
``compare-measured`` output and the preset and engine its first line names, a table written out.
A file they cannot read is one line on stderr naming the file and what to pass, and exit 2, as
the package's command line does; never a traceback.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import NoReturn

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from inference_econ.errors import InferenceEconError  # noqa: E402
from inference_econ.measured.reading import load_measured  # noqa: E402


def fail(message: str) -> NoReturn:
    """One line on stderr and exit 2."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def measured_rows(path: Path) -> list:
    """The rows of a measured-rows CSV (``load_measured``), or one line and exit 2."""
    if Path(path).is_dir():
        fail(f"{path}: is a folder; pass a measured-rows CSV")
    if not Path(path).is_file():
        fail(f"{path}: no such file; pass a measured-rows CSV")
    try:
        return load_measured(path)
    except InferenceEconError as exc:
        fail(f"{exc} (pass a measured-rows CSV)")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{path}: cannot be read ({exc.__class__.__name__}); pass a measured-rows CSV")


def compare_output(path: Path, columns) -> pd.DataFrame:
    """A ``compare-measured --format csv`` output with every one of ``columns``, or one line
    and exit 2."""
    what = "a compare-measured CSV (write one with --format csv or -o FILE.csv)"
    if Path(path).is_dir():
        fail(f"{path}: is a folder; pass {what}")
    if not Path(path).is_file():
        fail(f"{path}: no such file; pass {what}")
    try:
        frame = pd.read_csv(path, comment="#")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        fail(f"{path}: not readable as CSV ({exc.__class__.__name__}); pass {what}")
    missing = sorted(set(columns) - set(frame.columns))
    if missing:
        fail(f"{path}: not {what}: no column {missing[0]}")
    return frame


def computed_with(path: Path) -> tuple[str, str]:
    """(preset, engine) a ``compare-measured`` output names in its first line (``# Computed
    with: assumptions NAME; measured_rows ...; engine ENGINE``); ("", "") when it names none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            first = f.readline()
    except OSError:
        return "", ""  # the readers say why, naming the file
    m = re.match(r"#\s*Computed with:\s*assumptions\s+(\S+?);", first)
    e = re.search(r";\s*engine\s+(.+?)\s*$", first)
    return (m.group(1) if m else ""), (e.group(1) if e else "")


def write_csv(table: pd.DataFrame, path: Path, **kwargs) -> None:
    """``table`` to ``path`` as CSV, or one line and exit 2 (a folder, no such folder, no
    permission)."""
    try:
        table.to_csv(path, index=False, **kwargs)
    except OSError as exc:
        fail(f"{path}: cannot be written ({exc.strerror or exc.__class__.__name__})")
