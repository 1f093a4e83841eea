"""Consoles and small display helpers shared by the commands."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)

from provgraph.ingest.base import Progress as ProgressHook


def _width(stream) -> int | None:
    # Logs and pipes get a wide table instead of rich's 80-column default.
    if stream.isatty():
        return None
    return int(os.environ.get("COLUMNS", "120"))


out = Console(soft_wrap=True, highlight=False, width=_width(sys.stdout))
err = Console(stderr=True, soft_wrap=True, highlight=False, width=_width(sys.stderr))


class RichProgress(ProgressHook):
    """Byte progress of long imports, drawn on stderr only when it is a terminal."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task = None

    def start(self, label: str, total: int | None) -> None:
        self.finish()
        self._task = self._progress.add_task(label, total=total)

    def advance(self, amount: int) -> None:
        if self._task is not None:
            self._progress.advance(self._task, amount)

    def finish(self) -> None:
        if self._task is not None:
            self._progress.remove_task(self._task)
            self._task = None


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[RichProgress]:
    active = enabled and sys.stderr.isatty()
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not active,
    )
    with progress:
        yield RichProgress(progress)
