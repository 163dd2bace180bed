"""How fast does a part's decode attention read the KV cache, by the cache's format?
(docs/model.md §F3 "KV reads by format": a measured lead, not in the model).

Reads NVIDIA AIConfigurator's measured decode-attention tables
(``generation_attention_perf.parquet``: an engine's attention op for one new token a request,
timed at a grid of batch sizes, cached tokens (``step``) and head shapes, latency in
milliseconds; github.com/ai-dynamo/aiconfigurator, ``aic-core/src/aiconfigurator_core/systems/
data/<system>/attention/<engine>/<version>/``; download the files you want, they are not part of
this repository) and prints, for each file and KV format (bfloat16, fp8), the K and V bytes one
call reads over its measured time as a share of the part's HBM bandwidth (the hardware YAML's,
``--gpu NAME``, or ``--hbm-tb-s X``): the median and quartiles over the grouped-query shapes
of 8B-405B models (``num_heads`` / ``num_key_value_heads`` 32/8, 64/8, 128/8 and the 8/1,
16/2 of their tensor-parallel slices, head_dim 128, no window) with at least ``--min-tokens``
cached tokens in the call (batch x (step + 1)), where the bytes outweigh a launch; and the FP8
share over the BF16 one, shape by shape (median and quartiles: the cost of reading an 8-bit
cache, which the kernel dequantises, beside a 16-bit one). A least-squares line through the
times (as ``gemm_weight_stream.py`` fits) says little here: the share moves with the head shape
and the batch as much as with the bytes. The model reads every cache at the profile's
``kv_read_efficiency`` whatever its format (0.75, engines/trtllm.yaml); charging an FP8 cache
at the median ratio was tried and left out (docs/validation.md, session 20).

    python benchmarks/kv_read_share.py b200_generation_attention_perf.parquet --gpu B200 \
        [h200_generation_attention_perf.parquet --gpu H200 ...] [--min-tokens 32768]

Bytes per cached token and layer: 2 (K and V) x num_key_value_heads x head_dim x (2 for
bfloat16, 1 for fp8).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from aic_tables import fail, read_parquet, table_at  # noqa: E402

BYTES = {"bfloat16": 2.0, "fp8": 1.0}
#: (num_heads, num_key_value_heads) of grouped-query attention: Llama 3.1 8B / 70B / 405B
#: whole (32/8, 64/8, 128/8) and at tensor degree 4 and 8 (their 8/1, 16/2 slices).
GQA = ((32, 8), (64, 8), (128, 8), (8, 1), (16, 2))
COLUMNS = (
    "batch_size",
    "step",
    "num_heads",
    "num_key_value_heads",
    "head_dim",
    "window_size",
    "kv_cache_dtype",
    "latency",
)


def jobs_of(items: list[str]) -> list[tuple[Path, str, float]]:
    """(table, name, HBM bytes/s) from ``TABLE --gpu NAME`` (or ``--hbm-tb-s X``), repeated."""
    jobs, i = [], 0
    while i < len(items):
        path, name, bw, i = table_at(items, i)
        jobs.append((path, name, bw))
    return jobs


def calls(frame, min_tokens: int):
    """The table's grouped-query decode calls with at least ``min_tokens`` cached tokens, one
    row per shape (the fastest kernel where the table has several), with their KV bytes."""
    keep = frame[
        (frame.head_dim == 128)
        & (frame.window_size == 0)
        & frame.kv_cache_dtype.isin(list(BYTES))
        & (frame.batch_size * (frame.step + 1) >= min_tokens)
    ]
    pairs = list(zip(keep.num_heads, keep.num_key_value_heads))
    keep = keep[[p in GQA for p in pairs]]
    key = ["kv_cache_dtype", "num_heads", "num_key_value_heads", "batch_size", "step"]
    fast = keep.groupby(key).latency.min().reset_index()
    per = fast.kv_cache_dtype.map(BYTES)
    fast["bytes"] = 2.0 * fast.num_key_value_heads * 128 * per * fast.batch_size * (fast.step + 1)
    return fast


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pairs", nargs="+", help="TABLE --gpu NAME (or --hbm-tb-s X), repeated")
    parser.add_argument(
        "--min-tokens",
        type=int,
        default=32768,
        help="least cached tokens in a call (batch x (step + 1)) for it to count",
    )
    args, rest = parser.parse_known_args()
    if args.min_tokens < 1:
        fail(f"--min-tokens {args.min_tokens}: expected a whole number >= 1")
    jobs = jobs_of(list(args.pairs) + rest)
    tables = []  # every table read (and refused) before anything is printed
    for path, name, bw in jobs:
        frame = read_parquet(path, "an AIConfigurator generation_attention_perf.parquet", COLUMNS)
        fast = calls(frame, args.min_tokens)
        if fast.empty:
            fail(f"{path}: no grouped-query call with >= {args.min_tokens} cached tokens")
        fast["share"] = fast.bytes / (fast.latency * 1e-3) / bw
        tables.append((path, name, fast))
    print("table\tformat\tshapes\tmedian\tq25\tq75\tfp8/bf16: median\tq25\tq75")
    shape = ["num_heads", "num_key_value_heads", "batch_size", "step"]
    for path, name, fast in tables:
        by_fmt = {f: fast[fast.kv_cache_dtype == f].set_index(shape).share for f in BYTES}
        ratio = (by_fmt["fp8"] / by_fmt["bfloat16"]).dropna()
        for fmt in BYTES:
            part = fast[fast.kv_cache_dtype == fmt]
            if part.empty:
                continue
            q25, q50, q75 = np.percentile(part.share, [25, 50, 75])
            versus = ""
            if fmt == "fp8" and len(ratio):
                r25, r50, r75 = np.percentile(ratio, [25, 50, 75])
                versus = f"\t{r50:.2f}\t{r25:.2f}\t{r75:.2f}"
            print(
                f"{path.name} ({name})\t{fmt}\t{len(part)}\t{q50:.2f}\t{q25:.2f}\t{q75:.2f}{versus}"
            )


if __name__ == "__main__":
    main()
