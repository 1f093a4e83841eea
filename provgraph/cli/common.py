"""Consoles and small display helpers shared by the commands (and the cap on rejection lines)."""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)

from provgraph.ingest.base import Problem
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


class GateProgress:
    """What a check is doing, drawn on stderr only when it is a terminal: the evidence step that
    started last, then the rules done out of those to run (at 10^6 calls the views take minutes
    and a rule up to several). Pass :meth:`step` and :meth:`result` to
    :func:`provgraph.lineage.gate.run_gate`; both may be called from reader threads (rich's
    progress takes a lock)."""

    def __init__(self, progress: Progress, rules: int) -> None:
        self._progress, self._rules = progress, rules
        self._task = progress.add_task("reading the store")
        self._started = self._done = 0

    def step(self, name: str) -> None:
        if name == "rules":
            label = f"rules: 0 of {self._rules} done"
        elif name == "recording the check":
            label = name
        else:
            self._started += 1
            label = f"deriving evidence ({self._started} steps started): {name}"
        self._progress.update(self._task, description=label)

    def result(self, _: object) -> None:
        self._done += 1
        self._progress.update(self._task, description=f"rules: {self._done} of {self._rules} done")


@contextmanager
def gate_progress(rules: int, enabled: bool = True) -> Iterator[GateProgress]:
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not (enabled and sys.stderr.isatty()),
    )
    with progress:
        yield GateProgress(progress, rules)


def run_gate_shown(store: Any, rules: list, enabled: bool = True, **options: Any) -> Any:
    """:func:`provgraph.lineage.gate.run_gate` (``options`` are its keywords) with its progress
    drawn on a terminal (:func:`gate_progress`): check, report and lineage run it."""
    from provgraph.lineage.gate import run_gate  # lazy: the engine loads only when a check runs

    with gate_progress(len(rules), enabled) as shown:
        return run_gate(store, rules, on_result=shown.result, on_step=shown.step, **options)


#: Rejection lines printed per file before the rest are counted by reason.
REJECTIONS_SHOWN = 20
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def reason_kind(reason: str) -> str:
    """A rejection reason with its quoted values and numbers blanked: one kind per mistake."""
    return _NUMBER.sub("N", _QUOTED.sub("'…'", reason))


def capped_rejections(
    problems: Iterable[Problem], limit: int | None, verb: str = "rejected"
) -> Iterator[str]:
    """Rejection lines: per file the first ``limit`` (None: all), then one count per reason.

    One systematic error in a generated file rejects every record the same way; the first
    lines show it, the counts say how far it goes. ``verb="note"`` lists the notes on records
    that were imported all the same (``ctx.note``) the same way.
    """
    more = "records rejected" if verb == "rejected" else "notes"
    per_file: dict[str, list[Problem]] = {}
    for p in problems:
        per_file.setdefault(p.path, []).append(p)
    for path, found in per_file.items():
        shown = found if limit is None else found[:limit]
        yield from (f"provgraph: {verb}: {p}" for p in shown)
        rest = Counter(reason_kind(p.reason) for p in found[len(shown) :])
        if not rest:
            continue
        yield (
            f"provgraph: {verb}: {path}: {sum(rest.values())} more {more} "
            "(`provgraph ingest --all-rejections` lists them):"
        )
        for kind, n in rest.most_common(_KINDS):
            yield f"provgraph: {verb}: {path}:   {n} x {kind}"
        if len(rest) > _KINDS:
            others = sum(n for _, n in rest.most_common()[_KINDS:])
            yield f"provgraph: {verb}: {path}:   {others} x {len(rest) - _KINDS} other reasons"


_KINDS = 10


F = TypeVar("F", bound=Callable[..., Any])


def format_option(help_text: str = "table for people, json for scripts.") -> Callable[[F], F]:
    """The ``--format table|json`` option every listing command shares (``fmt`` in the command)."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["table", "json"]),
        default="table",
        show_default=True,
        help=help_text,
    )
