"""Write the measured kernel tables under ``kernels/`` from NVIDIA AIConfigurator's silicon
database (github.com/ai-dynamo/aiconfigurator, Apache-2.0): for each GPU folder of
``GPUS``, each table of ``TABLES`` read from a git checkout or mirror of that repository
(``git show COMMIT:PATH``, so a mirror without a work tree will do) and written as
``kernels/<gpu>/<engine>-<version>/<name>.csv.gz``; SGLang's DeepEP tables
(``DEEPEP_TABLES``), from each GPU's own release folder; and ``kernels/<gpu>/every-engine/
gemm.csv.gz``, the fastest rows of every GEMM table of the GPU's folder (every engine and
version, ``fastest_gemm_rows``), which hold the roofline's GEMM ceilings.

A file's first line is ``# `` and a JSON object: where the rows come from (repository, commit,
path, licence) and the value of each column that was the same on every row and so left out
(framework, version, device, op_name, kernel_source). The rest is CSV with units in the column
names: ``latency`` in milliseconds becomes ``latency_ms`` (AIConfigurator's loader reads it as
ms; the DeepEP tables' times are already ``*_us``), an all-reduce's ``message_size`` (elements of its dtype, the loader's
``tokens x hidden_size``) becomes ``message_elements``. Latencies keep seven significant
digits; integers and names are as measured.

    python benchmarks/import_kernel_tables.py /work/.mirror/ai-dynamo+aiconfigurator/repo \\
        [--commit 095f58a51] [--out kernels]

Needs pandas and pyarrow (the test extra installs both).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package (the every-engine file's rates)
DATA = "aic-core/src/aiconfigurator_core/systems/data"
COMMIT = "095f58a51"
#: AIConfigurator's system folders taken.
GPUS = ("h100_sxm", "h200_sxm", "b200_sxm", "gb200", "b300_sxm", "gb300")
#: (path under a GPU's folder, the folder written under kernels/<gpu>/, the file's name).
TABLES = (
    ("gemm/trtllm/1.3.0rc20/gemm_perf.parquet", "trtllm-1.3.0rc20", "gemm"),
    (
        "attention/trtllm/1.3.0rc20/generation_attention_perf.parquet",
        "trtllm-1.3.0rc20",
        "generation_attention",
    ),
    (
        "attention/trtllm/1.3.0rc20/context_attention_perf.parquet",
        "trtllm-1.3.0rc20",
        "context_attention",
    ),
    ("comm/trtllm/1.3.0rc20/custom_allreduce_perf.parquet", "trtllm-1.3.0rc20", "custom_allreduce"),
    ("comm/nccl/2.29.2/nccl_perf.parquet", "nccl-2.29.2", "nccl"),
    ("moe/trtllm/1.3.0rc20/moe_perf.parquet", "trtllm-1.3.0rc20", "moe"),
    ("mla/trtllm/1.3.0rc20/generation_mla_perf.parquet", "trtllm-1.3.0rc20", "generation_mla"),
    ("mla/trtllm/1.3.0rc20/context_mla_perf.parquet", "trtllm-1.3.0rc20", "context_mla"),
)
#: SGLang's DeepEP dispatch and combine as AIConfigurator timed them, by GPU folder: the
#: SGLang release folder each GPU's tables sit in (their rows may name another), and the
#: (file, name) pairs written under ``kernels/<gpu>/sglang-<release>/``. Times are in µs.
DEEPEP_RELEASES = {
    "h100_sxm": "0.5.6.post2",
    "h200_sxm": "0.5.6.post2",
    "b200_sxm": "0.5.12",
    "gb200": "0.5.12",
    "b300_sxm": "0.5.12",
    "gb300": "0.5.12",
}
DEEPEP_TABLES = (
    ("wideep_deepep_ll_perf.parquet", "deepep_low_latency"),
    ("wideep_deepep_normal_perf.parquet", "deepep_normal"),
)
#: Rows kept of each engine, version and format of a GEMM table in the every-engine file: the
#: most FLOP/s, and the most bytes/s of the rows whose working set fits in L2 and of the others.
FASTEST = 8
#: The every-engine file's columns.
EVERY_ENGINE_COLUMNS = ["framework", "version", "gemm_dtype", "m", "n", "k", "latency_ms"]
#: Columns left out where every row holds one value (the value goes to the first line).
CONSTANT = ("framework", "version", "device", "op_name", "kernel_source")
RENAME = {"latency": "latency_ms", "message_size": "message_elements"}


def git_blob(repo: Path, commit: str, path: str) -> bytes:
    """The bytes of ``path`` at ``commit`` in the git repository ``repo``."""
    done = subprocess.run(
        ["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"error: {repo}: {commit}:{path}: {done.stderr.decode().strip()}")
    return done.stdout


def full_commit(repo: Path, commit: str) -> str:
    """The 40-digit name of ``commit`` (files record the full name, not the prefix given)."""
    done = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", f"{commit}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"error: {repo}: no commit {commit}")
    return done.stdout.strip()


def trimmed(frame, header: dict):
    """``frame`` without the constant bookkeeping columns (recorded in ``header``), with units
    in the column names and latencies at seven significant digits."""
    for column in CONSTANT:
        if column in frame.columns and frame[column].nunique(dropna=False) == 1:
            header[column] = str(frame[column].iloc[0])
            frame = frame.drop(columns=column)
    frame = frame.rename(columns=RENAME)
    times = [c for c in frame.columns if c == "latency_ms" or c.endswith("_us")]
    if not times or (frame[times] < 0).any().any() or (frame[times].sum(axis=1) <= 0).any():
        raise SystemExit("error: a time below 0, or none above it on a row")
    return frame


def write_table(frame, header: dict, out: Path) -> None:
    """``# {header}`` then the CSV, gzip-compressed with no timestamp (the bytes depend on the
    rows alone, so a rerun leaves the file unchanged)."""
    text = io.StringIO()
    text.write("# " + json.dumps(header, sort_keys=True) + "\n")
    frame.to_csv(text, index=False, float_format="%.7g", lineterminator="\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(text.getvalue().encode("utf-8"))


def gemm_tables(repo: Path, commit: str, gpu: str) -> list[str]:
    """The paths of every GEMM table of ``gpu``'s folder at ``commit`` (every engine and
    version)."""
    done = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", commit, f"{DATA}/{gpu}/gemm/"],
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted(p for p in done.stdout.split() if p.endswith("/gemm_perf.parquet"))


def fastest_gemm_rows(frame, gpu: str):
    """The rows of a GEMM table (one engine and version) that can set a roofline ceiling: of
    each format the model reads, the ``FASTEST`` with the most FLOP/s and those with the most
    bytes/s among the rows whose working set fits in the part's L2 and among the others (the
    work as ``kernel_rows.gemm_work`` counts it; ``machine.l2_resident``). Every other row
    runs slower on both rates than a kept one, so the kept rows' best figures are the
    table's."""
    import numpy as np
    import pandas as pd

    import inference_econ as ie
    from inference_econ.measured.kernel_rows import GEMM_FORMATS, gemm_work
    from inference_econ.model.machine import l2_resident
    from inference_econ.specs.kernel_tables import KERNEL_FOLDERS

    part = ie.load_hardware(next(n for n, f in KERNEL_FOLDERS.items() if f == gpu))
    frame = frame[(frame["m"] > 0) & frame["gemm_dtype"].isin(list(GEMM_FORMATS))]
    kept = []
    for fmt, rows in frame.groupby("gemm_dtype"):
        flop, nbytes = gemm_work(rows["m"], rows["n"], rows["k"], str(fmt))
        seconds = rows["latency"].to_numpy() * 1e-3
        resident = l2_resident(part, nbytes)
        kept.append(rows.iloc[np.argsort(-flop / seconds, kind="stable")[:FASTEST]])
        for side in (resident, ~resident):
            at = np.flatnonzero(side)
            order = at[np.argsort(-(nbytes / seconds)[at], kind="stable")[:FASTEST]]
            kept.append(rows.iloc[order])
    return pd.concat(kept).drop_duplicates() if kept else frame.iloc[:0]


def write_every_engine(repo: Path, commit: str, gpu: str, out: Path) -> None:
    """``kernels/<gpu>/every-engine/gemm.csv.gz``: ``fastest_gemm_rows`` of every GEMM table."""
    import pandas as pd

    paths = gemm_tables(repo, commit, gpu)
    frames = [
        fastest_gemm_rows(pd.read_parquet(io.BytesIO(git_blob(repo, commit, p))), gpu)
        for p in paths
    ]
    frame = pd.concat(frames).rename(columns=RENAME)[EVERY_ENGINE_COLUMNS]
    frame = frame.sort_values(EVERY_ENGINE_COLUMNS[:6], kind="stable")
    header = {
        "source": "github.com/ai-dynamo/aiconfigurator",
        "commit": commit,
        "path": f"{DATA}/{gpu}/gemm/*/*/gemm_perf.parquet",
        "tables": [p.split("/gemm/")[1].rsplit("/", 1)[0] for p in paths],
        "licence": "Apache-2.0 (kernels/LICENSE-aiconfigurator)",
        "rows": f"of each table and format, the {FASTEST} with the most FLOP/s and the "
        f"{FASTEST} with the most bytes/s in L2 and beyond it (m > 0)",
    }
    target = out / gpu / "every-engine" / "gemm.csv.gz"
    write_table(frame, header, target)
    print(f"{target.relative_to(out)}: {len(frame)} rows of {len(paths)} tables")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path, help="a git checkout or mirror of aiconfigurator")
    parser.add_argument("--commit", default=COMMIT, help=f"the commit read (default {COMMIT})")
    parser.add_argument("--out", type=Path, default=ROOT / "kernels", help="default kernels/")
    args = parser.parse_args(argv)
    import pandas as pd

    full = full_commit(args.repo, args.commit)
    for gpu in GPUS:
        release = DEEPEP_RELEASES[gpu]
        deepep = [
            (f"comm/sglang/{release}/{file}", f"sglang-{release}", name)
            for file, name in DEEPEP_TABLES
        ]
        for path, folder, name in (*TABLES, *deepep):
            source = f"{DATA}/{gpu}/{path}"
            frame = pd.read_parquet(io.BytesIO(git_blob(args.repo, full, source)))
            header = {
                "source": "github.com/ai-dynamo/aiconfigurator",
                "commit": full,
                "path": source,
                "licence": "Apache-2.0 (kernels/LICENSE-aiconfigurator)",
            }
            frame = trimmed(frame, header)
            out = args.out / gpu / folder / f"{name}.csv.gz"
            write_table(frame, header, out)
            print(f"{out.relative_to(args.out)}: {len(frame)} rows, {out.stat().st_size:,} bytes")
        write_every_engine(args.repo, full, gpu, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
