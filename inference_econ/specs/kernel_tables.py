"""The measured kernel tables of ``kernels/<gpu>/<engine>-<version>/<op>.csv.gz``: one table
read into a column array a field, with where its rows come from.

A table's first line is ``# `` and a JSON object (its source, commit, path, licence and the
values every row shares); then CSV with units in the column names (``latency_ms``,
``message_elements``). ``benchmarks/import_kernel_tables.py`` writes them; kernels/README.md
describes each. The folder is found as the catalogue finds the others (``data_roots``: the
installed wheel's bundled copy, a source checkout's repository, ``INFERENCE_ECON_PATH``).
Numbers are parsed by pandas' C reader (numpy's where a value is not plain); nothing is read
until a table is asked for.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SpecError, did_you_mean

if TYPE_CHECKING:
    import numpy as np

#: The folder of tables (engine and version) read when none is named.
DEFAULT_TABLES = "trtllm-1.3.0rc20"
#: The folder of each part's fastest GEMM rows of every engine and version AIConfigurator timed
#: (kernels/README.md): they hold the roofline's GEMM ceilings, not the engine clock.
EVERY_ENGINE = "every-engine"
#: The folder of the NCCL collectives' tables.
NCCL_TABLES = "nccl-2.29.2"
#: The catalogue's part (its ``name`` in hardware/*.yaml) -> its folder of kernels/.
KERNEL_FOLDERS = {
    "H100-SXM": "h100_sxm",
    "H200-SXM": "h200_sxm",
    "B200-HGX": "b200_sxm",
    "GB200-NVL72": "gb200",
    "B300-HGX": "b300_sxm",
    "GB300-NVL72": "gb300",
}
#: The folders whose parts' measured rows and exports the kernel clock prices unasked (clock
#: ``auto``; ``measured/predicting.py:reads_kernel_tables``): those it was judged better on.
#: B300's and GB300's tables serve the bound, DeepEP's lines and a clock asked for (``--clock
#: kernel``); on the newer MLPerf rows stating TensorRT-LLM 1.x on those two parts the kernel
#: clock erred more than the engine clock (median |error| 0.104 against 0.081, eight rows;
#: docs/model-part-f.md "Which clock prices a measured row").
AUTO_CLOCK_FOLDERS = ("h100_sxm", "h200_sxm", "b200_sxm", "gb200")
#: Folders of parts of one architecture and one memory (B200 and GB200: SM100, 8 TB/s HBM3e;
#: B300 and GB300: SM103, 8 TB/s HBM3e), whose tables time the same kernels a few per cent
#: apart: each reads a fused-MoE series the other times far faster from the other
#: (``kernel_prices.moe_latency_ms``, kernels/README.md).
SIBLING_FOLDERS = {
    "b200_sxm": "gb200",
    "gb200": "b200_sxm",
    "b300_sxm": "gb300",
    "gb300": "b300_sxm",
}
#: The file of the engine clock's fitted physics parameters (kernels/README.md).
ENGINE_CLOCK_FITS = "engine_clock.yaml"
#: The file of the fused MoE's factors for real tokens' routing (kernels/README.md).
MOE_ROUTING = "moe_routing.yaml"
#: The file of the fused MoE's factors for formats with their own kernel (kernels/README.md).
MOE_FORMATS = "moe_formats.yaml"
#: The file of DeepEP's measured lines inside one domain, by part and kernel (kernels/README.md).
DEEPEP_EXCHANGE = "deepep_exchange.yaml"
#: The fields each kind of table must have (its file's name: ``gemm.csv.gz`` is a GEMM table).
REQUIRED: dict[str, tuple[str, ...]] = {
    "gemm": ("gemm_dtype", "m", "n", "k", "latency_ms"),
    "generation_attention": (
        "batch_size", "isl", "step", "num_heads", "num_key_value_heads", "head_dim",
        "window_size", "kv_cache_dtype", "latency_ms",
    ),
    "context_attention": (
        "batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "window_size",
        "attn_dtype", "kv_cache_dtype", "latency_ms",
    ),
    "generation_mla": (
        "batch_size", "isl", "step", "num_heads", "kv_cache_dtype", "latency_ms",
    ),
    "context_mla": ("batch_size", "isl", "num_heads", "kv_cache_dtype", "latency_ms"),
    "custom_allreduce": ("allreduce_dtype", "num_gpus", "message_elements", "latency_ms"),
    "nccl": ("op_name", "nccl_dtype", "num_gpus", "message_elements", "latency_ms"),
    "moe": (
        "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
        "moe_tp_size", "moe_ep_size", "distribution", "latency_ms",
    ),
    # SGLang's DeepEP kernels: ``num_token`` tokens a rank on ``node_num`` nodes of 8 ranks
    "deepep_low_latency": (
        "node_num", "hidden_size", "num_token", "num_topk", "num_experts",
        "dispatch_avg_t_us", "combine_avg_t_us",
    ),
    "deepep_normal": (
        "node_num", "hidden_size", "num_token", "num_topk", "num_experts",
        "dispatch_transmit_us", "combine_transmit_us",
    ),
}  # fmt: skip
#: Text fields must be shorter than this many characters (the longest shipped is 26): numpy's
#: reader reads them into this many bytes and would cut a longer value.
_TEXT_WIDTH = 32
_FIX = "regenerate it with benchmarks/import_kernel_tables.py"


@dataclass(frozen=True)
class KernelTable:
    """One measured table: ``columns`` maps each field to its array (int64, float64 or text),
    all of one length; ``header`` is the first line's mapping (source, commit, path, licence
    and the values every row shares, such as ``device``). A text field is an object array of
    shared ``str`` (``_shared_text``): it compares, sorts and lists as plain strings."""

    path: str
    header: dict[str, Any]
    columns: dict[str, np.ndarray]

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.columns[name]
        except KeyError:
            hint = did_you_mean(name, sorted(self.columns)) or f"one of {', '.join(self.columns)}"
            raise SpecError(self.path, name, "is not a column of this table", hint) from None

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.columns)


def kernel_table(gpu: str, op: str, engine: str = DEFAULT_TABLES) -> KernelTable:
    """The table of ``op`` (``gemm``, ``generation_attention``, ``nccl``...) measured on
    ``gpu`` (a folder of kernels/: ``h100_sxm``, ``b200_sxm``...) under ``engine`` (its folder:
    ``trtllm-1.3.0rc20``, ``nccl-2.29.2``)."""
    return read_kernel_table(table_path(gpu, op, engine))


def kernel_folder(gpu_name: str) -> str | None:
    """The kernels/ folder measured on the catalogue's part ``gpu_name``; None for a part
    without one (a derived part keeps its own name, so it has none)."""
    return KERNEL_FOLDERS.get(gpu_name)


def passes_table(gpu: str) -> KernelTable:
    """The per-token passes measured on ``gpu`` (``kernels/<gpu>/passes.csv``, plain CSV);
    its ``latency_us`` is also given as ``latency_ms`` so every table reads alike."""
    import numpy as np

    path = _data_file(Path("kernels", gpu, "passes.csv"), "kernels/*/passes.csv")
    table = _read_plain(str(path))
    columns = dict(table.columns, latency_ms=np.asarray(table["latency_us"]) * 1e-3)
    return KernelTable(table.path, table.header, columns)


def engine_clock_fits() -> dict[str, Any]:
    """The engine clock's fitted parameters (kernels/engine_clock.yaml, written by
    benchmarks/fit_kernel_prices.py): a mapping of op class -> format -> parameters."""
    from .yamlfile import load_yaml

    return load_yaml(_data_file(Path("kernels", ENGINE_CLOCK_FITS), f"kernels/{ENGINE_CLOCK_FITS}"))


@lru_cache(maxsize=1)
def moe_routing_table() -> dict[str, Any]:
    """The fused MoE's routing factors (kernels/moe_routing.yaml, written by
    benchmarks/moe_clocks.py --routing --write): ``ep_grid``, ``token_grid`` and ``factors``,
    a mapping of family -> routing -> count of experts -> rows of factors."""
    from .yamlfile import load_yaml

    return load_yaml(_data_file(Path("kernels", MOE_ROUTING), f"kernels/{MOE_ROUTING}"))


@lru_cache(maxsize=1)
def deepep_exchange_lines() -> dict[str, dict[str, tuple[float, float]]]:
    """DeepEP's dispatch and combine inside one domain as a line, (seconds a call, share of
    the links' rate), by kernels/ folder and kernel (``low_latency``, ``normal``):
    kernels/deepep_exchange.yaml, fitted by benchmarks/deepep_exchange.py to the tables."""
    from .schema import check_number
    from .yamlfile import load_yaml

    data = load_yaml(_data_file(Path("kernels", DEEPEP_EXCHANGE), f"kernels/{DEEPEP_EXCHANGE}"))
    where = f"kernels/{DEEPEP_EXCHANGE}"
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for folder, kernels in (data.get("lines") or {}).items():
        for kernel, line in kernels.items():
            latency = check_number(line.get("latency_s"), where, f"{folder}.{kernel}.latency_s",
                                   minimum=0.0, maximum=1e-2)  # fmt: skip
            share = check_number(line.get("efficiency"), where, f"{folder}.{kernel}.efficiency",
                                 minimum=0.01, maximum=4.0)  # fmt: skip
            out.setdefault(str(folder), {})[str(kernel)] = (float(latency), float(share))
    return out


@lru_cache(maxsize=1)
def moe_format_table() -> dict[str, Any]:
    """The fused MoE's format factors (kernels/moe_formats.yaml, written by
    benchmarks/moe_clocks.py --factors --write): ``ep_grid``, ``token_grid`` and ``factors``,
    a mapping of family -> format -> expert shape (``"hidden x intermediate x experts x
    top-k"``) -> rows of factors. Read once (each format's grids read it: ``moe.format_grids``)."""
    from .yamlfile import load_yaml

    return load_yaml(_data_file(Path("kernels", MOE_FORMATS), f"kernels/{MOE_FORMATS}"))


def _data_file(relative: Path, pattern: str) -> Path:
    """The first data root's copy of ``relative``; a SpecError when none has it."""
    from .catalog import data_roots

    for root in data_roots():
        if (root / relative).is_file():
            return root / relative
    raise SpecError(relative.as_posix(), "", "is not shipped", f"expected {pattern}")


def table_path(gpu: str, op: str, engine: str = DEFAULT_TABLES) -> Path:
    """The file of ``kernel_table(gpu, op, engine)``; a SpecError naming what is shipped when
    there is none."""
    from .catalog import data_roots

    relative = Path("kernels", gpu, engine, f"{op}.csv.gz")
    for root in data_roots():
        if (root / relative).is_file():
            return root / relative
    shipped = sorted(
        str(p.relative_to(root / "kernels"))
        for root in data_roots()
        for p in (root / "kernels").glob("*/*/*.csv.gz")
    )
    raise SpecError(
        relative.as_posix(), "", "is not shipped", f"one of {', '.join(shipped) or 'none'}"
    )


def read_kernel_table(path: str | Path) -> KernelTable:
    """The table in the file at ``path``, read once a path (its arrays are shared: read them,
    do not write them). A SpecError naming the file, and the field where one is at fault, for
    a file that is not such a table."""
    return _read(str(path))


@lru_cache(maxsize=8)
def _read_plain(source: str) -> KernelTable:
    """A table of plain (not compressed) CSV under the same first line, read once."""
    from .inputs import read_text

    text = read_text(source, remember=False)  # a regular UTF-8 file of at most 64 MiB
    header, names, body = _split(source, text)
    columns = _columns(source, names, body)
    if "latency_us" not in columns:
        raise SpecError(source, "latency_us", "is missing", "the table needs latency_us")
    _check_latency(source, columns["latency_us"], "latency_us")
    return KernelTable(source, header, columns)


@lru_cache(maxsize=64)
def _read(source: str) -> KernelTable:
    from .inputs import GZIP_MAGIC, gunzipped, read_bytes

    if not Path(source).exists():
        raise SpecError(source, "", "no such file", _FIX)
    # a regular file (not a FIFO or device) of at most 64 MiB, expanding to at most 64 MiB
    data = read_bytes(source, remember=False)
    if data[:2] != GZIP_MAGIC:
        raise SpecError(source, "", "is not a gzip-compressed UTF-8 table", _FIX)
    try:
        text = gunzipped(data, source).decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = f"is not a gzip-compressed UTF-8 table ({exc.__class__.__name__})"
        raise SpecError(source, "", problem, _FIX) from None
    header, names, body = _split(source, text)
    columns = _columns(source, names, body)
    required = REQUIRED.get(Path(source).name.removesuffix(".csv.gz"), ("latency_ms",))
    missing = [n for n in required if n not in columns]
    if missing:
        raise SpecError(source, missing[0], "is missing", f"the table needs {', '.join(required)}")
    for name in required:  # each time the table keys by (ms, or µs where its name says so)
        if name == "latency_ms" or name.endswith("_us"):
            _check_latency(source, columns[name], name)
    return KernelTable(source, header, columns)


def _split(source: str, text: str) -> tuple[dict, list[str], str]:
    """(the first line's mapping, the field names, the rows' text) of a table's text."""
    first, _, rest = text.partition("\n")
    head, _, body = rest.partition("\n")
    try:
        header = json.loads(first[2:]) if first.startswith("# ") else None
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        header = None
    if not isinstance(header, dict):
        raise SpecError(source, "", "its first line is not '# ' and a JSON mapping", _FIX)
    names = head.strip().split(",")
    if not body.strip() or not all(names) or len(set(names)) != len(names):
        raise SpecError(source, "", "has no rows under a line of distinct field names", _FIX)
    return header, names, body


def _kind(name: str, value: str) -> str:
    """The numpy type of a field from its first value: whole numbers, other numbers, text
    (a time, ``latency_ms`` or a name ending ``_us``, is always a real number)."""
    for kind, parse in (("i8", int), ("f8", float)):
        if kind == "i8" and (name == "latency_ms" or name.endswith("_us")):
            continue
        try:
            parse(value)
            return kind
        except ValueError:
            pass
    return f"S{_TEXT_WIDTH}"


def _columns(source: str, names: list[str], body: str) -> dict[str, np.ndarray]:
    """Each field's array, with the types of the first row: parsed by pandas' C reader where
    every value is plain (1.4-1.7 times as fast as numpy's on the shipped tables, the same
    arrays), else by numpy's reader, whose refusal names what is wrong."""
    first = body.partition("\n")[0].rstrip("\r").split(",")
    if len(first) != len(names):
        raise SpecError(source, "", f"row 1 has {len(first)} values for {len(names)} fields", _FIX)
    dtype = [(n, _kind(n, v)) for n, v in zip(names, first)]
    fast = _plain_columns(names, dtype, body)
    return fast if fast is not None else _numpy_columns(source, dtype, body)


def _plain_columns(names: list[str], dtype: list, body: str) -> dict | None:
    """``_columns`` by pandas' C reader, each field read as the type of its first value, or
    None where a value does not read so or might read otherwise than by numpy's reader (a NaN,
    text that is not ASCII or is too wide): the numpy reader then reads the table, or refuses
    it with the row at fault."""
    import csv

    import numpy as np
    import pandas as pd

    types = {n: "category" if k.startswith("S") else k for n, k in dtype}
    try:
        frame = pd.read_csv(
            io.StringIO(body), header=None, names=names, dtype=types, na_filter=False,
            quoting=csv.QUOTE_NONE,
        )  # fmt: skip
    except (ValueError, TypeError, OverflowError, pd.errors.ParserError):
        return None
    columns = {}
    for name, kind in dtype:
        column = frame[name]
        if kind.startswith("S"):  # a few distinct values: each once, then by its code
            values = [str(v) for v in column.cat.categories]
            width = max([len(v) for v in values] + [1])
            if width >= _TEXT_WIDTH or not all(v.isascii() for v in values):
                return None
            codes = column.cat.codes.to_numpy()
            if codes.size and codes.min() < 0:  # a row without this field
                return None
            columns[name] = _shared_text(values, codes)
            continue
        array = np.ascontiguousarray(column.to_numpy(dtype=kind))
        if kind == "f8" and np.isnan(array).any():
            return None
        columns[name] = array
    return columns


def _numpy_columns(source: str, dtype: list, body: str) -> dict[str, np.ndarray]:
    """``_columns`` by numpy's reader: a row that does not parse is one clear error."""
    import numpy as np

    try:
        rows = np.loadtxt(io.StringIO(body), delimiter=",", dtype=dtype, comments=None, ndmin=1)
    except ValueError as exc:
        raise SpecError(source, "", f"a row does not parse: {exc}", _FIX) from None
    columns = {}
    for name, kind in dtype:
        column = rows[name]
        if kind.startswith("S"):  # text: as wide as its longest value, not the reading width
            columns[name] = _text(source, name, column)
        else:
            columns[name] = np.ascontiguousarray(column)
    return columns


def _text(source: str, name: str, column: np.ndarray) -> np.ndarray:
    """A text field read as bytes, as ``_shared_text`` of its distinct values; refused where a
    value may have been cut (the reading width) or is not ASCII."""
    import numpy as np

    codes = np.ascontiguousarray(column).view(np.uint8).reshape(len(column), -1)
    used = np.flatnonzero(codes.any(axis=0))  # a value ends at its last byte that is not 0
    width = int(used[-1]) + 1 if used.size else 1
    if width >= _TEXT_WIDTH:  # the reader cuts longer text: refuse it rather
        problem = f"holds text of {_TEXT_WIDTH} characters or more"
        raise SpecError(source, name, problem, "names shorter than that")
    if codes.max(initial=0) >= 128:
        raise SpecError(source, name, "holds text that is not ASCII", _FIX)
    values, inverse = np.unique(column, return_inverse=True)
    return _shared_text([v.decode("ascii") for v in values.tolist()], inverse.reshape(-1))


def _shared_text(values: list[str], codes: np.ndarray) -> np.ndarray:
    """The text column whose row i is ``values[codes[i]]``: an object array of one interned
    ``str`` a distinct value, 8 bytes a row (a fixed-width unicode array took 4 bytes a
    character of the longest value: most of the tables' memory)."""
    import sys

    import numpy as np

    shared = np.empty(len(values), dtype=object)
    shared[:] = [sys.intern(v) for v in values]
    return shared[codes]


def _check_latency(source: str, latency: np.ndarray, name: str = "latency_ms") -> None:
    """Every time of column ``name`` a finite number above 0 (in the unit its name ends with)."""
    import numpy as np

    bad = ~(np.isfinite(latency) & (latency > 0))
    if bad.any():
        row = int(np.argmax(bad)) + 1
        unit = "µs" if name.endswith("_us") else "ms"
        problem = f"row {row} is {latency[row - 1]!r}; every time must be above 0 {unit}"
        raise SpecError(source, name, problem, _FIX)
