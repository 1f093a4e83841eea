"""Importing a large DICOM folder in worker processes, one per CPU the process may use.

Header parsing is pure Python (pydicom), so one process cannot use a second core. For folders
of at least :data:`MIN_FILES` members the members are split into chunks of :data:`CHUNK`; each
worker (forked, so it shares the loaded modules and the import's pseudonymiser) reads its
chunk's files and formats their triples with its own :class:`TripleWriter`, exactly as the
serial loop does (:func:`provgraph.importers.dicom.import_members` runs in both). The import's
process only appends each chunk's text, in member order, types each patient once and keeps
the problems and notes in order, so the graph and the messages are those of a serial import.

Set ``PROVGRAPH_WORKERS=1`` to read serially (or ``N`` to use N workers). Platforms without
``fork`` read serially.
"""

from __future__ import annotations

import gc
import io
import multiprocessing
from dataclasses import dataclass
from typing import Any

from provgraph.importers.dicom import import_members
from provgraph.ingest.api import ImportContext, Problem
from provgraph.rdf.terms import IRI, TripleWriter, mint  # the worker formats triples itself
from provgraph.store.parallel import worker_count

#: Folders with fewer members are read serially (starting workers costs more than it saves).
MIN_FILES = 64
#: Members per task: large enough that one task's overhead is small against its files.
CHUNK = 64


@dataclass(frozen=True)
class _Job:
    base: str
    root: str
    source_iri: IRI
    tree: bool
    pseudonyms: Any
    members: Any  # inherited by the forked workers: tasks name only index ranges


_JOB: _Job | None = None  # set before the workers fork: they inherit it


def import_in_parallel(ctx: ImportContext, members: Any, tree: bool, patients: Any) -> bool:
    """Import ``members`` with worker processes; False (nothing done) when serial is better."""
    global _JOB
    workers = worker_count()
    if workers < 2 or len(members) < MIN_FILES:
        return False
    try:
        context = multiprocessing.get_context("fork")
    except ValueError:  # no fork on this platform
        return False
    _JOB = _Job(ctx.base, str(ctx.bundle_root), ctx.source_iri, tree, patients.pseudonyms, members)
    chunks = [(i, min(i + CHUNK, len(members))) for i in range(0, len(members), CHUNK)]
    # Objects that exist now are never collected in the workers: a collection there would
    # write to (and so copy) every page of the inherited heap.
    gc.freeze()
    try:
        with context.Pool(min(workers, len(chunks))) as pool:
            for text, count, problems, records, digests, nbytes in pool.imap(_work, chunks):
                ctx.add_lines(text, count)
                for digest in digests:
                    patients.from_digest(digest)
                ctx.problems.extend(Problem(ctx.source.rel, line, why, kept) for line, why, kept in problems)
                ctx.records += records
                ctx.advance(nbytes)
    finally:
        gc.unfreeze()
        _JOB = None
    return True


class _WorkerContext:
    """What :func:`import_members` needs of an :class:`ImportContext`, inside a worker."""

    def __init__(self, job: _Job) -> None:
        self.base, self.bundle_root, self.source_iri = job.base, job.root, job.source_iri
        self.out = io.StringIO()
        self.writer = TripleWriter(self.out)
        self.add = self.writer.add
        self.problems: list[tuple[int | None, str, bool]] = []
        self.records = 0

    def iri(self, kind: str, *keys: object) -> IRI:
        return mint(self.base, kind, *keys)

    def file_iri(self, rel: str) -> IRI:
        return ImportContext.file_iri(self, rel)  # type: ignore[arg-type]  # it only reads .base

    def problem(self, line: int | None, reason: str) -> None:
        self.problems.append((line, reason, False))

    def note(self, line: int | None, reason: str) -> None:
        self.problems.append((line, reason, True))

    def record(self) -> None:
        self.records += 1

    def advance(self, nbytes: int) -> None:
        """Progress is reported by the importing process, per chunk."""


class _WorkerPatients:
    """Patient nodes in a worker: the importing process types each patient once."""

    def __init__(self, ctx: _WorkerContext, pseudonyms: Any) -> None:
        self.ctx, self.pseudonyms = ctx, pseudonyms
        self.digests: list[str] = []

    def node(self, raw: object) -> IRI | None:
        digest = self.pseudonyms.patient(raw)
        if digest is None:
            return None
        self.digests.append(digest)
        return self.ctx.iri("patient", digest)


def _work(span: tuple[int, int]) -> tuple[str, int, list[tuple[int | None, str, bool]], int, list[str], int]:
    job = _JOB
    assert job is not None, "the job is set before the workers fork"
    members = job.members[span[0] : span[1]]
    ctx = _WorkerContext(job)
    patients = _WorkerPatients(ctx, job.pseudonyms)
    import_members(ctx, members, job.tree, patients)
    nbytes = sum(m.size for m in members)
    return (
        ctx.out.getvalue(),
        ctx.writer.count,
        ctx.problems,
        ctx.records,
        sorted(set(patients.digests)),
        nbytes,
    )
