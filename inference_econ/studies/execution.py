"""Running a study's cells: in this process, on local processes, or on a Dask cluster.

Every path calls the same pure function (``study.compute_cell``) and hands each finished cell
to ``on_done`` in the calling process as soon as it arrives, so whatever finished is kept (the
caller caches it) when a worker, the cluster or the run itself fails. Local processes use the
standard library's ``ProcessPoolExecutor`` (spawned, so workers start clean); a cluster uses
``dask.distributed`` (its scheduler retries the tasks of a worker that dies).

Workers stay warm: each imports the package once and is sent batches of cells (``batches``),
a few seconds of work each, cells that share their pass latencies (they differ only in the
acceptance rate or the demand cap) side by side in one batch, so the optimiser's cache serves
them. A worker process searches on one thread: the processes use the cores.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
from collections.abc import Callable, Sequence

from .. import settings as table
from ..columns import SECONDS_PER_HOUR
from ..errors import SpecError, plural, short
from .study import Cell, compute_cell, pass_group

#: Seconds between two progress lines (the last cell always gets one).
PROGRESS_EVERY_S = 2.0
#: How long to wait for a Dask scheduler before giving up.
CONNECT_TIMEOUT = "20s"
#: Estimated CPU seconds of one batch of cells sent to a worker at most (a lost batch loses
#: this much work; shorter batches pay more for sending and collecting).
BATCH_SECONDS = 3.0
#: Batches per worker at least, where there are cells enough (so the workers finish together).
BATCHES_PER_WORKER = 4

Done = Callable[[Cell, dict], None]
Failed = Callable[[Cell, str], None]


#: CPU seconds of one cell: a fixed part (compiling the model, describing the frontier's
#: points, key points, caching and tabling the cell) plus a part per grid point, times
#: ``DRAFT_FACTOR`` with speculation (one pass per draft length). Fitted to the means of 16
#: cells without and 8 with a draft of the worked study at grids of 50 and 100 (refined
#: preset, one search thread, 2026-11-23 on the 2-core development machine: 0.185 / 0.262 s
#: and 0.76 / 1.21 s), with 0.02 s for the study's own work a cell (``bench_study.py
#: --warm``); the paper preset's cells take less (an upper bound for them).
CELL_BASE_SECONDS = 0.19
CELL_SECONDS_PER_POINT = 1.0e-5
DRAFT_FACTOR = 4.5


def cell_seconds(cell: Cell) -> float:
    """Estimated CPU seconds of one cell (``CELL_BASE_SECONDS`` and the rest)."""
    points = float(cell.method.grid_points) ** 2
    draft = cell.setting.spec is not None
    return (CELL_BASE_SECONDS + CELL_SECONDS_PER_POINT * points) * (DRAFT_FACTOR if draft else 1)


def check_work(cells: Sequence[Cell], jobs: int | None, what: str, yes: bool = False) -> str:
    """The estimated time of computing ``cells`` on ``jobs`` processes, as a phrase; above
    ``settings.CONFIRM_SECONDS`` refused with the estimate unless ``yes`` (docs/errors.md)."""
    if not cells:
        return "nothing to compute"
    jobs = default_jobs() if jobs is None else int(jobs)
    cpu = sum(cell_seconds(c) for c in cells)
    seconds = cpu / max(1, min(jobs, len(cells)))
    phrase = (
        f"about {_duration(seconds)} with {jobs} {plural(jobs, 'job')} "
        f"({_duration(cpu)} of CPU, {cpu / len(cells):.2g} s per cell)"
    )
    if seconds > table.CONFIRM_SECONDS and not yes:
        raise SpecError(
            "argument",
            "yes",
            f"{what}: {len(cells):,} {plural(len(cells), 'cell')} to compute, {phrase}, more "
            f"than the {_duration(table.CONFIRM_SECONDS)} run without asking",
            "give --yes (yes=True in Python) to run it, or fewer cells, a coarser grid_points "
            "or more --jobs",
        )
    return phrase


def _duration(seconds: float) -> str:
    """0.29 s, 3.4 s, 14 minutes, 2.5 hours (a cell of 0.29 s was "about 0 s")."""
    if seconds < 10:
        return f"{seconds:.2g} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / SECONDS_PER_HOUR:.1f} hours"


def default_jobs() -> int:
    """The machine's cores (the cores this process may use, where the OS says)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


class _Tracker:
    """Counts finished cells and prints a progress line every few seconds."""

    def __init__(self, total: int, progress, on_done: Done, on_failed: Failed) -> None:
        self.total, self.done, self.progress = total, 0, progress
        self.on_done, self.on_failed = on_done, on_failed
        self.last = time.perf_counter()

    def finished(self, cell: Cell, payload: dict | None, error: str = "") -> None:
        self.done += 1
        if payload is not None:
            self.on_done(cell, payload)
        else:
            self.on_failed(cell, error)
        now = time.perf_counter()
        if self.progress and (now - self.last >= PROGRESS_EVERY_S or self.done == self.total):
            self.last = now
            what = f"{payload['elapsed_s']:.2f} s" if payload is not None else f"failed: {error}"
            self.progress(f"cell {self.done}/{self.total} done: {cell.label} ({what})")


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def batches(cells: Sequence[Cell], workers: int) -> list[list[Cell]]:
    """``cells`` cut into batches for ``workers`` workers, in the study's order: each batch at
    most ``BATCH_SECONDS`` of estimated CPU and at most 1 / ``BATCHES_PER_WORKER`` of a
    worker's share (so that a few go to each worker), and cells that share their pass
    latencies (``study.pass_group``) in one batch unless together they are more than that."""
    groups: dict = {}
    for cell in cells:
        groups.setdefault(pass_group(cell.setting), []).append(cell)
    total = sum(cell_seconds(c) for c in cells)
    limit = min(BATCH_SECONDS, total / max(1, workers * BATCHES_PER_WORKER))
    out: list[list[Cell]] = []
    current: list[Cell] = []
    spent = 0.0
    for group in groups.values():
        cost = sum(cell_seconds(c) for c in group)
        if current and spent + cost > limit:
            out.append(current)
            current, spent = [], 0.0
        if cost <= limit:
            current += group
            spent += cost
            continue
        for cell in group:  # a group too big for one batch: its cells in order
            if current and spent + cell_seconds(cell) > limit:
                out.append(current)
                current, spent = [], 0.0
            current.append(cell)
            spent += cell_seconds(cell)
    if current:
        out.append(current)
    return out


def compute_batch(items: Sequence[tuple]) -> list[tuple[dict | None, str]]:
    """The cells of a batch ((setting, method) pairs), in a worker: ``(payload, "")`` for
    each, or ``(None, reason)`` for a cell that raised (one bad cell does not lose the others
    of its batch). A worker process searches on one thread: the processes use the cores."""
    import multiprocessing

    if multiprocessing.parent_process() is not None:  # a worker process, not this one
        _one_search_thread()
    out: list[tuple[dict | None, str]] = []
    for setting, method in items:
        try:
            out.append((compute_cell(setting, method), ""))
        except Exception as exc:  # reported for this cell; the batch goes on
            out.append((None, _error(exc)))
    return out


def run_cells(
    cells: Sequence[Cell],
    on_done: Done,
    on_failed: Failed,
    jobs: int | None = None,
    dask: str | None = None,
    progress=None,
) -> None:
    """Compute ``cells`` (distinct keys), calling ``on_done(cell, payload)`` for each finished
    one and ``on_failed(cell, reason)`` for each that raised or whose worker was lost."""
    if not cells:
        return
    jobs = default_jobs() if jobs is None else int(jobs)
    tracker = _Tracker(len(cells), progress, on_done, on_failed)
    if dask is not None:
        _run_dask(cells, tracker, dask, jobs, progress)
    elif min(jobs, len(cells)) <= 1:
        with _searching_on_one_thread():
            for cell in cells:
                try:
                    payload = compute_cell(cell.setting, cell.method)
                except Exception as exc:  # one bad cell must not lose the others
                    tracker.finished(cell, None, _error(exc))
                else:
                    tracker.finished(cell, payload)
    else:
        _run_processes(cells, tracker, min(jobs, len(cells)))


def _finish_batch(tracker: _Tracker, batch: Sequence[Cell], result=None, error: str = "") -> None:
    """Hand each cell of a finished batch on (all of them failed with ``error`` if it raised)."""
    for i, cell in enumerate(batch):
        payload, why = result[i] if result is not None else (None, error)
        tracker.finished(cell, payload, why)


def _items(batch: Sequence[Cell]) -> list[tuple]:
    return [(c.setting, c.method) for c in batch]


def _one_search_thread() -> None:
    """A worker process searches its grid on one thread: the processes use the cores."""
    from ..optimise.optimiser import THREADS_VARIABLE

    os.environ[THREADS_VARIABLE] = "1"


@contextlib.contextmanager
def _searching_on_one_thread():
    """Cells computed in this process search on one thread, as a worker's do, unless
    ``INFERENCE_ECON_THREADS`` says otherwise: a study's grids are small (100 x 100 in the
    worked study), and two threads cost ~1/3 more CPU a cell for a little less wall time."""
    from ..optimise.optimiser import THREADS_VARIABLE

    if os.environ.get(THREADS_VARIABLE, "").strip():
        yield
        return
    os.environ[THREADS_VARIABLE] = "1"
    try:
        yield
    finally:
        os.environ.pop(THREADS_VARIABLE, None)


def _run_processes(cells: Sequence[Cell], tracker: _Tracker, jobs: int) -> None:
    """Local worker processes, each sent batches of cells; a dead worker fails only the cells
    not finished yet."""
    from concurrent.futures import as_completed

    with process_pool(jobs) as pool:
        futures = {pool.submit(compute_batch, _items(b)): b for b in batches(cells, jobs)}
        try:
            for future in as_completed(futures):
                try:
                    result = future.result()
                except Exception as exc:
                    _finish_batch(tracker, futures[future], error=_error(exc))
                else:
                    _finish_batch(tracker, futures[future], result)
        except BaseException:
            for future in futures:
                future.cancel()
            raise


#: A Dask scheduler's address: ``local``, ``tcp://host:8786`` (or another of its protocols),
#: or ``host:port``.
DASK_ADDRESS = re.compile(r"^(local|(tcp|tls|inproc|ucx|ws|wss)://\S+|[\w.-]+:\d{1,5})$")


def check_dask(address) -> None:
    """Refuse a ``--dask`` that cannot name a scheduler, or without dask.distributed, before
    any cell is looked up (with every cell cached it was never used, so never checked)."""
    if address is None:
        return
    if not isinstance(address, str) or not DASK_ADDRESS.match(address):
        raise SpecError(
            "command line",
            "--dask",
            f"{short(address)} is not a Dask scheduler's address",
            "give the address 'dask scheduler' prints (tcp://host:8786), or 'local'",
        )
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise SpecError(
            "command line",
            "--dask",
            "needs dask.distributed, which is not installed",
            "pip install 'inference-econ[dask]'",
        ) from None


def refuse_jobs_beside(dask, shown: str, work: str) -> None:
    """Refuse a process count given (``shown``: its words) beside a running Dask scheduler's
    address, whose workers do the ``work`` instead (``--jobs`` would be ignored)."""
    if dask not in (None, "local"):
        raise SpecError(
            "argument",
            "jobs",
            f"is {shown} with the Dask scheduler {short(dask)}, whose workers {work}",
            "drop jobs (--jobs), or give dask='local' (--dask local) for a local cluster of that "
            "many workers",
        )


def process_pool(jobs: int):
    """A pool of ``jobs`` local worker processes, spawned (each starts clean and imports the
    package once), each searching on one thread: the processes use the cores."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_one_search_thread)


def _client(address: str, jobs: int):
    """A Dask client: of a new local cluster (``local``) or of a running scheduler."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise SpecError(
            "command line",
            "--dask",
            "needs dask.distributed, which is not installed",
            "pip install 'inference-econ[dask]'",
        ) from None
    if address == "local":
        cluster = LocalCluster(
            n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None
        )
        try:
            return Client(cluster), cluster
        except BaseException:
            cluster.close()
            raise
    try:
        return Client(address, timeout=CONNECT_TIMEOUT), None
    except (OSError, TimeoutError, ValueError) as exc:
        raise SpecError(
            "command line",
            "--dask",
            f"cannot reach the Dask scheduler at {address!r} ({exc})",
            "give the address 'dask scheduler' prints (tcp://host:8786), or 'local'",
        ) from None


@contextlib.contextmanager
def dask_client(address: str, jobs: int, progress=None):
    """A Dask client of a new local cluster of ``jobs`` worker processes (``local``) or of the
    running scheduler at ``address``, closed (its cluster too) on leaving; ``progress`` is told
    the cluster's address and workers."""
    client, cluster = _client(address, jobs)
    try:
        if progress:
            workers = len(client.scheduler_info().get("workers", {}))
            progress(f"Dask cluster at {client.scheduler.address}: {workers} workers")
        yield client
    finally:
        try:
            client.close()
        finally:
            if cluster is not None:
                cluster.close()


def _run_dask(cells: Sequence[Cell], tracker: _Tracker, address, jobs: int, progress) -> None:
    """Batches of cells as Dask tasks, collected as they complete (a lost worker's tasks are
    retried by the scheduler; a cell that keeps failing is reported and the others are kept)."""
    from distributed import as_completed

    with dask_client(address, jobs, progress) as client:
        workers = len(client.scheduler_info().get("workers", {}))
        futures = {
            client.submit(compute_batch, _items(b), key=_batch_key(b), pure=False): b
            for b in batches(cells, max(workers, 1))
        }
        for future in as_completed(futures):
            try:
                result = future.result()
            except Exception as exc:
                _finish_batch(tracker, futures[future], error=_error(exc))
            else:
                _finish_batch(tracker, futures[future], result)
            future.release()


def _batch_key(batch: Sequence[Cell]) -> str:
    """A Dask task key naming a batch by its cells' keys."""
    digest = hashlib.sha256("".join(c.key for c in batch).encode()).hexdigest()[:24]
    return f"inference-econ-cells-{len(batch)}-{digest}"
