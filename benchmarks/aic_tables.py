"""Reading NVIDIA AIConfigurator's measured per-operation tables (github.com/ai-dynamo/
aiconfigurator, ``aic-core/src/aiconfigurator_core/systems/data/<gpu>/<op>/<engine>/<version>/
*_perf.parquet``), which the fits in this folder read (``gemm_table_fit.py``,
``gemm_weight_stream.py``, ``moe_table_fit.py``, ``custom_allreduce_fit.py``). The tables are
not in the repository: a script takes the downloaded files' paths. Bad input is one line and
exit 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn


def fail(message: str) -> NoReturn:
    """One line on stderr and exit 2, as the package's command line does."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def read_parquet(path: Path, what: str, columns=()):
    """The DataFrame of one AIConfigurator table at ``path`` (``what`` names the file the user
    should pass, e.g. "an AIConfigurator gemm_perf.parquet"), with every one of ``columns``."""
    if not path.is_file():
        fail(f"{path}: no such file; pass {what}")
    try:
        import pandas as pd

        frame = pd.read_parquet(path)
    except ImportError:
        fail("reading parquet needs pandas and pyarrow: pip install pandas pyarrow")
    except (OSError, ValueError) as exc:
        fail(f"{path}: not a readable parquet file ({exc.__class__.__name__}); pass {what}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        fail(f"{path}: no column {', '.join(missing)}; pass {what}")
    return frame


def hbm_bandwidth(flag: str, value: str) -> float:
    """HBM bytes/s of ``--gpu NAME`` (the catalogue's hardware file) or ``--hbm-tb-s X``, the
    bandwidth a table's times are read against; one line and exit 2 for a name or a number
    it cannot read."""
    if flag == "--gpu":
        from inference_econ.errors import InferenceEconError
        from inference_econ.specs.hardware import load_hardware

        try:
            return load_hardware(value).hbm_bandwidth_bytes_per_s
        except InferenceEconError as exc:
            fail(f"--gpu {value}: {exc}")
    try:
        bw = float(value) * 1e12
    except ValueError:
        fail(f"--hbm-tb-s {value}: not a number (TB/s, e.g. 8)")
    if not (bw > 0 and bw != float("inf")):
        fail(f"--hbm-tb-s {value}: expected a bandwidth > 0 in TB/s")
    return bw


def table_at(items: list[str], i: int) -> tuple[Path, str, float, int]:
    """``TABLE --gpu NAME`` (or ``TABLE --hbm-tb-s X``) at ``items[i:]``: (the table's path,
    the part's name as given, HBM bytes/s, the index after them); one line and exit 2 when the
    part is not given after the table."""
    path = Path(items[i])
    if i + 2 >= len(items) or items[i + 1] not in ("--gpu", "--hbm-tb-s"):
        fail(f"{path}: give --gpu NAME or --hbm-tb-s X after it")
    flag, value = items[i + 1], items[i + 2]
    name = value if flag == "--gpu" else f"{value} TB/s"
    return path, name, hbm_bandwidth(flag, value), i + 3
