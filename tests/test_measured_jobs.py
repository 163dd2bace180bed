"""``compare-measured --jobs N`` replays the rows under load on worker processes, and ``--dask``
on a Dask cluster's workers, one batch a configuration, the largest first: the table is the one
a single process gives, row for row."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd
import pytest

import inference_econ as ie
from inference_econ.errors import SpecError
from inference_econ.measured import comparison, replay
from inference_econ.measured.predicting import _batch_pairs

DATA = Path(__file__).parent / "data"
SAMPLE = DATA / "measured_public_sample.csv"


def _two_sweeps(tmp_path) -> tuple[Path, int]:
    """NVIDIA NIM's concurrency sweep (docs.nvidia.com NIM benchmarking, v1.8.0) and the same
    sweep at other lengths: two configurations, each a batch of its own (the file, its rows
    a sweep)."""
    with open(SAMPLE, newline="") as f:
        rows = list(csv.DictReader(f))
    shorter = [dict(r, input_len="1000", output_len="200") for r in rows]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows + shorter)
    path = tmp_path / "two-sweeps.csv"
    path.write_text(out.getvalue())
    return path, len(rows)


def test_worker_processes_give_one_processs_table(tmp_path, one_worker_process):
    """``jobs=2``: a pool of two worker processes asked for, one started
    (``one_worker_process``), which replays both configurations' batches."""
    path, n = _two_sweeps(tmp_path)
    one = comparison.compare(path, "achievable").table
    two = comparison.compare(path, "achievable", jobs=2).table
    assert one_worker_process == [2]
    assert len(one) == 2 * n and (one.status == "ok").all(), list(one.status)
    pd.testing.assert_frame_equal(one, two)
    # the two configurations are told apart: the shorter sweep's latencies are not the same
    assert not one.predicted.iloc[:n].equals(one.predicted.iloc[n:].reset_index(drop=True))


def test_a_dask_cluster_gives_one_processs_table(tmp_path):
    """The two sweeps' rows replayed by the workers of a running scheduler (an in-process
    cluster of two threads, whose batches take turns: they share this process's kept runs,
    forgotten first so that the workers replay every row again): the same table, row for
    row."""
    distributed = pytest.importorskip("distributed")
    path, n = _two_sweeps(tmp_path)
    one = comparison.compare(path, "achievable").table
    replay.clear()
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        told: list[str] = []
        table = ie.compare_measured(
            path, "achievable", progress=told.append, dask=cluster.scheduler_address
        ).table
    pd.testing.assert_frame_equal(one, table)
    assert told[0].endswith(": 2 workers"), told
    done, _, total = told[-1].partition(" ")[0].partition("/")
    assert done == total and int(total) > n and told[-1].endswith(" rows under load predicted")


def test_dask_options_are_checked_before_any_row_is_read(tmp_path):
    """A word that names no scheduler, and a process count a running scheduler would ignore,
    are refused by name before the file is read (it does not exist)."""
    missing = tmp_path / "none.csv"
    with pytest.raises(SpecError, match="--dask'?: 'nonsense' is not a Dask scheduler"):
        ie.compare_measured(missing, dask="nonsense")
    with pytest.raises(SpecError, match="'jobs': is 2 with the Dask scheduler 'tcp://host:8786'"):
        ie.compare_measured(missing, jobs=2, dask="tcp://host:8786")
    for jobs in (0, True, 2.5):  # a local cluster of no workers would wait for ever
        with pytest.raises(SpecError, match="'jobs'"):
            ie.compare_measured(missing, jobs=jobs, dask="local")


def _lost_on_the_shorter_sweep(tasks):
    """A worker's batch that raises where it holds the shorter sweep's rows (200 out)."""
    if any(case.output[0] == 200 for task in tasks for _, case in task[4]):
        raise MemoryError("worker ran out of memory")
    return _batch_pairs(tasks)


def test_a_worker_that_fails_leaves_its_rows_unresolved_and_the_others_predicted(
    tmp_path, monkeypatch
):
    """A batch whose worker raises (as a lost worker's does) is reported in its rows' status,
    one line each; the other configuration's rows are predicted as one process predicts
    them."""
    from inference_econ.measured import predicting

    distributed = pytest.importorskip("distributed")
    path, n = _two_sweeps(tmp_path)
    one = comparison.compare(path, "achievable").table
    replay.clear()
    monkeypatch.setattr(predicting, "_batch_pairs", _lost_on_the_shorter_sweep)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        table = comparison.compare(path, "achievable", dask=cluster.scheduler_address).table
    pd.testing.assert_frame_equal(table.iloc[:n], one.iloc[:n])
    lost = table.iloc[n:]
    failed = lost[lost.status.str.startswith("unresolved: the worker")]
    assert len(failed) > 0 and failed.predicted.isna().all(), list(lost.status)
    assert (
        failed.status.iloc[0]
        == "unresolved: the worker replaying it failed (MemoryError: worker ran out of memory); "
        "run it again"
    )


def test_a_lost_replay_outranks_the_rows_other_layouts(tmp_path, monkeypatch):
    """Llama 3.1 405B Offline on 8 H200 (MLPerf v5.0, in the training rounds): some of its
    layouts cannot hold the weights and one is replayed. When the replay's worker fails, the
    row says so, not that its other layouts were infeasible, and carries no prediction."""
    from inference_econ.measured import predicting

    with open(DATA / "benchmarks_train_mlperf_v50.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    row = next(
        r for r in rows
        if "llama3.1-405b Offline" in r["model"] and r["hardware"].startswith("NVIDIA H200")
    )  # fmt: skip
    path = tmp_path / "one.csv"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerow(row)

    def lost(plan):
        by_row: dict = {}
        for (i, j), case in plan.load.items():
            by_row.setdefault(i, []).append((j, case))
        assert by_row and all(i in plan.infeasible for i in by_row)  # the case asked for
        out: dict = {}
        for i, cases in by_row.items():
            out.update(predicting._failed_pairs((i, "", 1.0, "offline", cases), OSError("")))
        return out

    monkeypatch.setattr(comparison, "_load_pairs", lost)
    table = comparison.compare(path, "achievable").table
    assert table.status.iloc[0] == f"{predicting.WORKER_FAILED} (OSError); run it again"
    assert table.predicted.isna().all()
