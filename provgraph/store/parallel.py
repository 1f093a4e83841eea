"""Reading a store from several threads: how many, and reads run side by side.

pyoxigraph evaluates a query, row by row, with the interpreter lock released, and a SPARQL
server evaluates it in its own process, so on either two queries run on two cores at once
(:attr:`~provgraph.store.base.Store.concurrent_reads`). The check uses this for its rules and
derived views; writes go through :mod:`provgraph.store.catalog`, which takes one lock.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from provgraph.store.base import Store

T, R = TypeVar("T"), TypeVar("R")

#: Reads at once unless ``$PROVGRAPH_WORKERS`` says otherwise: each holds its own
#: intermediate results, so memory grows with their number.
MAX_READERS = 4


def worker_count() -> int:
    """Workers to use (threads reading a store, processes reading DICOM files):
    ``$PROVGRAPH_WORKERS``, else the CPUs this process may run on."""
    wanted = os.environ.get("PROVGRAPH_WORKERS", "").strip()
    if wanted.isdigit() and int(wanted) >= 1:
        return int(wanted)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not every platform has it
        return os.cpu_count() or 1


def readers(store: Store, wanted: int | None = None) -> int:
    """How many threads may read ``store`` at once: ``wanted`` if given, else
    ``$PROVGRAPH_WORKERS``, else one per core up to :data:`MAX_READERS`; 1 for a store that
    cannot answer several queries at once."""
    if not store.concurrent_reads:
        return 1
    if wanted is not None:
        return max(1, wanted)
    explicit = os.environ.get("PROVGRAPH_WORKERS", "").strip()
    return worker_count() if explicit else min(MAX_READERS, worker_count())


def in_parallel(run: Callable[[T], R], items: Iterable[T], threads: int) -> Iterator[R]:
    """``run`` over ``items`` on up to ``threads`` threads, yielding the results in the items'
    order. An item that raises (a store that stopped answering) ends the whole run: the items
    not started are dropped, the ones running are waited for.

    The items always run on pool threads, one at a time with ``threads`` 1: the caller's thread
    only waits on a lock, which Ctrl-C interrupts at once, where a query the engine evaluates on
    the caller's thread would hold the interrupt until its next row (a rule that counts or
    groups a million rows: minutes). Interrupted (``KeyboardInterrupt``, ``SystemExit``), the
    run does not wait for the items running either: the command ends the process
    (:func:`provgraph.cli.main`), and the store keeps its last complete state.
    """
    items = list(items)
    if not items:
        return
    pool = ThreadPoolExecutor(max(1, min(threads, len(items))), thread_name_prefix="provgraph-read")
    interrupted = False
    try:
        futures = [pool.submit(_freeing_on_error, run, item) for item in items]
        for future in futures:
            yield future.result()
    except (KeyboardInterrupt, SystemExit):
        interrupted = True
        raise
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=True)


def _freeing_on_error(run: Callable[[T], R], item: T) -> R:
    try:
        return run(item)
    except BaseException as err:
        # The traceback's frames hold what the failed step had open (a result stream of the
        # engine's, which must be freed on the thread that opened it, or pyo3 leaks it with an
        # "unsendable" warning): freed here, before the error reaches the caller's thread.
        traceback.clear_frames(err.__traceback__)
        raise


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:  # glibc only (musl and macOS have no malloc_trim)
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def release_memory() -> bool:
    """Hand the memory a finished step freed back to the system; True when the C library can.

    glibc keeps freed chunks in its heaps for reuse, and a step's many small objects (a view's
    per-case and per-image evidence) leave them scattered between live ones, so the resident set
    stays at the step's peak: at 10^5 calls a third of it after the per-case and pixel views
    (615 -> 393 MiB), at 10^6 about 0.9 GiB the statistics then grew on top of. Trimming costs
    a walk of the heaps (milliseconds).
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
