"""Memory a finished step freed goes back to the system (``parallel.release_memory``), which the
check calls after each derived view: glibc otherwise keeps it, and the next step's peak lands on
top of it (bench/README.md, ninth run)."""

from __future__ import annotations

import ctypes.util
import sys

import pytest

from provgraph.store import parallel


def _anon_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon in /proc/self/status")


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or "musl" in (ctypes.util.find_library("c") or ""),
    reason="malloc_trim is glibc's",
)
def test_freed_small_objects_are_returned_to_the_system() -> None:
    # objects above pymalloc's 512 bytes come from glibc's heap; every 64th one stays alive, so
    # the freed ones sit between live chunks where glibc keeps them
    kept, freed = [], []
    for i in range(80_000):
        chunk = bytes(1_500) + i.to_bytes(4, "little")
        (kept if i % 64 == 0 else freed).append(chunk)
    held = len(freed) * 1_500 / 2**20  # about 116 MiB
    del freed
    before = _anon_mib()
    assert parallel.release_memory() is True
    after = _anon_mib()
    assert before - after > held / 2, (before, after)
    assert len(kept) == 1_250
