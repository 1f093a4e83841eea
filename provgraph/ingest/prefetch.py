"""Hashing ahead: the planned sources of an ingest described (every file hashed) in a second
thread while the importers read the sources before them.

Reading and hashing files is system calls and C code that release the GIL, so it overlaps with
the importers' Python and the store's loader. The thread owns the hash cache (a SQLite
connection belongs to the thread that made it) and stays at most :data:`AHEAD` sources ahead,
so memory is a few sources' member lists, whatever the bundle's size.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path

from provgraph.bundle.layout import Bundle
from provgraph.ingest.base import Source
from provgraph.ingest.sources import HashCache, describe_source

#: Sources described ahead of the one being imported.
AHEAD = 2
_DONE = object()


class Prefetch:
    """Describes ``paths`` in order in a background thread; :meth:`take` returns the next one's
    :class:`Source` (or raises what describing it raised). Use as a context manager."""

    def __init__(self, bundle: Bundle, paths: list[Path], cache_dir: Path | None) -> None:
        self._bundle, self._paths, self._cache_dir = bundle, paths, cache_dir
        self._queue: queue.Queue = queue.Queue(maxsize=AHEAD)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="provgraph-hash", daemon=True)

    def __enter__(self) -> Prefetch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> None:
        hashes = HashCache(self._cache_dir)
        try:
            for path in self._paths:
                if self._stop.is_set():
                    return
                try:
                    item: object = describe_source(self._bundle, path, None, hashes)
                except Exception as err:  # handed to the importing thread, which reports it
                    item = err
                if not self._put(item):
                    return
        finally:
            hashes.close()
            self._put(_DONE)

    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def take(self) -> Callable[[], Source]:
        """The next planned source's description, as a call that returns it or raises."""
        item = self._queue.get()
        if item is _DONE:
            raise RuntimeError("no more planned sources to describe")

        def described() -> Source:
            if isinstance(item, Exception):
                raise item
            return item  # type: ignore[return-value]

        return described

    def close(self) -> None:
        """Stop describing (the imports ended, or failed) and wait for the thread."""
        self._stop.set()  # a put waiting for room gives up within its 0.1 s timeout
        self._thread.join()
