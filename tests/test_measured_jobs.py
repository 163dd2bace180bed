"""``compare-measured --jobs N`` replays the rows under load on worker processes, one batch a
configuration, the largest first: the table is the one a single process gives, row for row."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from inference_econ.measured import comparison

SAMPLE = Path(__file__).parent / "data" / "measured_public_sample.csv"


def test_worker_processes_give_one_processs_table(tmp_path):
    """NVIDIA NIM's concurrency sweep (docs.nvidia.com NIM benchmarking, v1.8.0) and the same
    sweep at other lengths: two configurations, each a batch of its own."""
    with open(SAMPLE, newline="") as f:
        rows = list(csv.DictReader(f))
    shorter = [dict(r, input_len="1000", output_len="200") for r in rows]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows + shorter)
    path = tmp_path / "two-sweeps.csv"
    path.write_text(out.getvalue())
    one = comparison.compare(path, "achievable").table
    two = comparison.compare(path, "achievable", jobs=2).table
    assert len(one) == 2 * len(rows) and (one.status == "ok").all(), list(one.status)
    pd.testing.assert_frame_equal(one, two)
    # the two configurations are told apart: the shorter sweep's latencies are not the same
    assert not one.predicted.iloc[: len(rows)].equals(
        one.predicted.iloc[len(rows) :].reset_index(drop=True)
    )
