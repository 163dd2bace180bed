"""Python's cyclic garbage collector around work that builds many long-lived objects.

A 100,000-row benchmark log is read into 100,000 rows that live until the comparison ends, and
a load simulation makes and drops hundreds of thousands of small lists and tuples that never
form reference cycles. The collector's passes over them free nothing (CPython frees them by
reference counting) and cost a few per cent of a ``compare-measured`` run. Lowest layer: the
readers of ``studies`` and the simulator of ``serving`` both use it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector paused for a block whose objects make no reference cycles (the
    rows of a log being read, a simulation's per-request lists): memory is still freed as
    objects are released, and the collector runs as before after the block (it was already
    off: it stays off)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def gc_frozen() -> Iterator[None]:
    """The objects alive at the start of a block left out of the collector's passes during
    it (``gc.freeze``, thawed after): rows that live to the end of a comparison, which every
    full pass would otherwise walk again. Objects made in the block are collected as usual; a
    process that froze objects itself keeps its own freeze."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
