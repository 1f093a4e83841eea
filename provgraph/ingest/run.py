"""Running an import: one source read by one importer into its own named graph, swapped in
atomically; and bringing the store in line with a bundle.

An import reads one *source* (a file, or a folder read as a whole) with one importer and
writes one named graph: the importer's triples plus a ``pg:Import`` activity that
``prov:used`` the source (path, sha256, size) and is associated with the importer (name,
version). The graph is swapped in atomically (see :mod:`provgraph.store.catalog`); importing the
same bytes again with the same importer and contract settings is a no-op.

Importers report bad records with :meth:`ImportContext.problem` and carry on; a fatal
:class:`~provgraph.errors.InputError` abandons the source and leaves its old graph in place.
"""

from __future__ import annotations

import datetime as dt
import logging
import shlex
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import pyoxigraph as ox

from provgraph.bundle.layout import Bundle
from provgraph.errors import InputError, ProvgraphError, StoreError, StoreUnavailable
from provgraph.ingest.base import ImportContext, Importer, Problem, Progress, Source
from provgraph.ingest.planner import choose_importer, plan_bundle
from provgraph.ingest.prefetch import Prefetch
from provgraph.ingest.sources import (
    HashCache,
    describe_source,
    fingerprint,
    hash_cache_dir,
    overlaps,
    source_key,
    split_source_key,
)
from provgraph.rdf.terms import BatchWriter, UnstorableValue
from provgraph.rdf.vocab import PG, PG_NS, PROV, RDF_TYPE
from provgraph.store import catalog
from provgraph.store.base import Store

log = logging.getLogger(__name__)


@dataclass
class ImportResult:
    """What happened to one source."""

    rel: str
    importer: str
    outcome: Literal["imported", "unchanged", "failed", "removed"]
    records: int = 0
    triples: int = 0
    seconds: float = 0.0
    problems: list[Problem] = field(default_factory=list)
    error: str | None = None


def ingest_source(
    store: Store,
    bundle: Bundle,
    path: Path,
    importer: Importer,
    progress: Progress | None = None,
    hashes: HashCache | None = None,
    described: Callable[[], Source] | None = None,
) -> ImportResult:
    """Import one source atomically. Never raises for bad input: the result says what failed.
    A store that cannot be reached raises :class:`StoreUnavailable` (the import is not done).
    ``hashes`` remembers file digests between ingests (see :class:`HashCache`); ``described``
    gives the source already hashed (by :class:`~provgraph.ingest.prefetch.Prefetch`)."""
    progress = progress or Progress()
    rel = bundle.relpath(path)
    t0 = time.perf_counter()
    try:
        source = _described(bundle, path, rel, progress, hashes, described)
        fp = fingerprint(bundle, source, importer)
        key = source_key(importer, rel)
        slot = catalog.current(store, key)
        if slot is not None and slot.fingerprint == fp:
            return ImportResult(
                rel,
                importer.name,
                "unchanged",
                seconds=time.perf_counter() - t0,
                problems=recorded_problems(store, slot.graph),
            )
        state: dict[str, Any] = {}

        def produce(fh: IO[str]) -> None:
            writer = BatchWriter(fh)
            ctx = ImportContext(bundle, source, importer, writer, progress)
            state["writer"], state["ctx"] = writer, ctx
            started = dt.datetime.now(dt.UTC).replace(microsecond=0)
            progress.start(f"reading {rel}", source.size)
            log.info("reading %s with importer %s", rel, importer.name)
            _run_importer(importer, source, ctx)
            progress.finish()
            ctx.problems[:] = [_storable_problem(p) for p in ctx.problems]
            _write_import(ctx, key, started)
            writer.flush()

        # the store loads while the importer writes (see catalog.replace_from)
        catalog.replace_from(store, key, fp, produce)
        writer, ctx = state["writer"], state["ctx"]
        log.info("loaded %d triples from %s and switched to the new graph", writer.count, rel)
        return ImportResult(
            rel,
            importer.name,
            "imported",
            records=ctx.records,
            triples=writer.count,
            seconds=time.perf_counter() - t0,
            problems=ctx.problems,
        )
    except StoreUnavailable:  # the server is gone: every other source would wait for it too
        progress.finish()
        raise
    except ProvgraphError as err:
        progress.finish()
        error = _clip(str(err))
        if isinstance(err, StoreError):  # e.g. the loader refused a segment: the message names the
            error = f"{_clip(rel)}: not imported: {error}"  # store and a staging graph, not the source
        return ImportResult(rel, importer.name, "failed", error=error, seconds=time.perf_counter() - t0)
    except UnstorableValue as err:  # in the import's own triples (a path): the source cannot be stored
        progress.finish()
        error = f"{_clip(rel)}: cannot store this source: {err}"
        return ImportResult(rel, importer.name, "failed", error=error, seconds=time.perf_counter() - t0)
    except (MemoryError, SyntaxError) as err:  # the store's loader refused what was written
        progress.finish()
        log.debug("the store could not load %s", rel, exc_info=True)
        error = f"{_clip(rel)}: the store could not load this source: {type(err).__name__}: {_clip(str(err))}"
        return ImportResult(rel, importer.name, "failed", error=error, seconds=time.perf_counter() - t0)


def _described(
    bundle: Bundle,
    path: Path,
    rel: str,
    progress: Progress,
    hashes: HashCache | None,
    described: Callable[[], Source] | None,
) -> Source:
    if described is not None:  # hashed ahead in the second thread
        progress.start(f"hashing {rel}", None)
        source = described()
    else:
        size_hint = path.stat().st_size if path.is_file() else None
        progress.start(f"hashing {rel}", size_hint)
        source = describe_source(bundle, path, progress, hashes)
    progress.finish()
    return source


#: A rejection's message is cut to this many characters (it may quote a huge value).
MAX_PROBLEM_CHARS = 1000


#: Characters that end a line for ``str.splitlines``: escaped, so a message stays one line.
_LINE_BREAKS = str.maketrans({c: repr(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


def _clip(text: str) -> str:
    """``text`` printable and storable: one line (line breaks escaped), lone surrogates escaped,
    cut to MAX_PROBLEM_CHARS."""
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    text = text.translate(_LINE_BREAKS)
    return text if len(text) <= MAX_PROBLEM_CHARS else text[: MAX_PROBLEM_CHARS - 3] + "..."


def _storable_problem(p: Problem) -> Problem:
    reason = _clip(p.reason)
    return p if reason is p.reason else Problem(p.path, p.line, reason, p.kept)


def _run_importer(importer: Importer, source: Source, ctx: ImportContext) -> None:
    try:
        importer.ingest(source, ctx)
    except ProvgraphError:
        raise
    except UnstorableValue as err:  # the reader should have rejected the record; this is the backstop
        log.debug("importer %s wrote an unstorable value from %s", importer.name, source.rel, exc_info=True)
        raise InputError(source.rel, f"cannot store a value (the source is not imported): {err}") from err
    except RecursionError as err:  # a structure nested too deep for the importer's own code
        raise InputError(source.rel, f"importer {importer.name!r} failed: nested too deeply") from err
    except Exception as err:  # a crashing importer must not leave a traceback or a half graph
        log.debug("importer %s crashed on %s", importer.name, source.rel, exc_info=True)
        raise InputError(
            source.rel,
            f"importer {importer.name!r} failed: {type(err).__name__}: {err} (run with -v for details)",
        ) from err


def _write_import(ctx: ImportContext, key: str, started: dt.datetime) -> None:
    add, src, imp = ctx.add, ctx.source, ctx.import_iri
    importer = ctx.importer
    agent = ctx.iri("importer", importer.name, importer.version)
    ended = dt.datetime.now(dt.UTC).replace(microsecond=0)
    add(imp, RDF_TYPE, PG.Import)
    add(imp, PROV.used, ctx.source_iri)
    add(imp, PROV.wasAssociatedWith, agent)
    add(imp, PROV.startedAtTime, started)
    add(imp, PROV.endedAtTime, ended)
    add(imp, PG.sourceKey, key)
    add(imp, PG.recordCount, ctx.records)
    add(imp, PG.problemCount, len(ctx.problems))
    add(agent, RDF_TYPE, PG.Importer)
    add(agent, PG.name, importer.name)
    add(agent, PG.version, importer.version)
    node = ctx.source_iri
    add(node, RDF_TYPE, PG.SourceTree if src.kind == "tree" else PG.SourceFile)
    add(node, PG.path, src.rel)
    add(node, PG.sha256, src.sha256)
    add(node, PG.byteSize, src.size)
    if src.kind == "tree":
        add(node, PG.memberCount, len(src.members))
    for i, p in enumerate(ctx.problems):
        problem = ctx.iri("problem", importer.name, src.rel, str(i + 1))
        add(problem, RDF_TYPE, PG.ImportProblem)
        add(problem, PROV.wasGeneratedBy, imp)
        add(problem, PG.sourceFile, ctx.file_iri(p.path))
        add(problem, PG.sourceLine, p.line)
        add(problem, PG.message, p.reason)
        if p.kept:
            add(problem, PG.recordKept, True)


def recorded_problems(store: Store, graph: str) -> list[Problem]:
    """Problems an earlier import of the same bytes recorded (reported again on a no-op)."""
    rows = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT ?g ?path ?line ?msg ?kept WHERE {{ GRAPH ?g {{
            ?p a pg:ImportProblem ; pg:sourceFile ?f ; pg:message ?msg .
            ?f pg:path ?path . OPTIONAL {{ ?p pg:sourceLine ?line }}
            OPTIONAL {{ ?p pg:recordKept ?kept }} }} }}
        ORDER BY ?line""",
        {"g": ox.NamedNode(graph)},
    )
    return [
        Problem(
            r["path"].value,  # type: ignore[union-attr]
            int(r["line"].value) if r["line"] else None,  # type: ignore[union-attr]
            r["msg"].value,  # type: ignore[union-attr]
            bool(r["kept"]) and r["kept"].value == "true",  # type: ignore[union-attr]
        )
        for r in rows
    ]


def ingest_paths(
    store: Store,
    bundle: Bundle,
    paths: Iterable[Path],
    importer_name: str | None = None,
    progress: Progress | None = None,
    on_result: Callable[[ImportResult], None] | None = None,
) -> tuple[list[ImportResult], list[Problem]]:
    """Bring the store in line with ``paths`` (files or folders; the root means everything).

    The bundle is always planned as a whole, so a path is read by the same importer and as
    part of the same source whichever path the user names; then the planned sources that
    overlap ``paths`` are imported (each atomically) and imports in that scope that no longer
    correspond to a planned source (deleted files, a folder that is now read differently)
    are removed. ``importer_name`` reads each named path with that importer.
    """
    # the bundle is listed once: the planner, the hashing of folders and the importers share it
    with bundle.listed():
        return _ingest_listed(store, bundle, paths, importer_name, progress, on_result)


def _ingest_listed(
    store: Store,
    bundle: Bundle,
    paths: Iterable[Path],
    importer_name: str | None,
    progress: Progress | None,
    on_result: Callable[[ImportResult], None] | None,
) -> tuple[list[ImportResult], list[Problem]]:
    targets = [bundle.relpath(p) for p in paths] or ["."]
    overrides = {t: importer_name for t in targets} if importer_name else {}
    if importer_name:
        for t in targets:
            choose_importer(bundle.resolve(t), bundle, importer_name)  # fail early on misuse
    plan, problems = plan_bundle(bundle, None, overrides)
    selected = [(p, i) for p, i in plan if any(overlaps(bundle.relpath(p), t) for t in targets)]
    problems = [p for p in problems if any(overlaps(p.path, t) for t in targets)]
    for t in targets:
        if (
            t != "."
            and not any(overlaps(bundle.relpath(p), t) for p, _ in selected)
            and not any(overlaps(p.path, t) for p in problems)
        ):
            problems.append(Problem(t, None, "not imported: hidden, or excluded by [ingest].exclude"))
    results = []
    # recorded before any source changes, cleared once all are done: a kill in between
    # leaves an entry that `info` reports and the gate refuses (see catalog.begin_ingest)
    run = catalog.begin_ingest(store, targets, [source_key(i, bundle.relpath(p)) for p, i in selected])
    catalog.record_root(store, str(bundle.root))
    was_failed = {k for k, _ in catalog.failed_sources(store)}  # read once, not per source
    failed_now: set[str] = set()
    # the next sources are hashed in a second thread while one is imported
    with Prefetch(bundle, [p for p, _ in selected], hash_cache_dir(store)) as ahead:
        for path, importer in selected:
            result = ingest_source(store, bundle, path, importer, progress, described=ahead.take())
            key = source_key(importer, result.rel)
            if result.outcome != "imported":  # an import's switch took it off the list itself
                catalog.settle(store, key)
            if result.outcome == "failed":
                catalog.mark_failed(store, key, result.error or "import failed")
                failed_now.add(key)
            results.append(result)
            if on_result:
                on_result(result)
    planned = {source_key(i, bundle.relpath(p)) for p, i in plan}
    for slot in catalog.slots(store):
        parts = split_source_key(slot.key)
        if parts is None or slot.key in planned:
            continue
        if any(overlaps(parts[1], t) for t in targets):
            catalog.remove(store, slot.key)
            result = ImportResult(parts[1], parts[0], "removed")
            results.append(result)
            if on_result:
                on_result(result)
    # a failure is over when its source imported, or is no longer in the bundle (a source that
    # never imported has no slot, so the removals above do not see it)
    for key in was_failed - failed_now:
        parts = split_source_key(key)
        if parts is not None and any(overlaps(parts[1], t) for t in targets):
            catalog.clear_failed(store, key)
    _complete(store, run, targets)
    return results, problems


def _complete(store: Store, run: str, targets: list[str]) -> None:
    """Clear this run's entry, and those of earlier unfinished ingests whose whole scope this
    one covered: every source in that scope is now up to date, so they are complete too."""

    def covered(path: str) -> bool:
        return any(t == "." or path == t or path.startswith(t + "/") for t in targets)

    runs = catalog.unfinished_ingests(store)
    catalog.finish_ingest(store, [r.iri for r in runs if r.iri == run or all(covered(t) for t in r.scope)])


def describe_unfinished(runs: list[catalog.IngestRun]) -> list[str]:
    """One line per ingest that started and did not complete (killed midway): when, its
    scope, the planned sources it left old and how to finish it; for `info` and the gate."""
    lines = []
    for r in runs:
        names = [_source_name(k) for k in r.pending]
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        left = f"{len(names)} of {r.planned} planned source(s) left old (not re-read yet)"
        left += f" ({shown})" if names else ""
        whole = r.scope == (".",)
        what = "an ingest" if whole else f"an ingest of {' '.join(r.scope)}"
        again = "provgraph ingest" + ("" if whole else " " + " ".join(shlex.quote(t) for t in r.scope))
        when = r.started.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        lines.append(f"{what} started {when} did not finish: {left}; run `{again}` again")
    return lines


def _source_name(key: str) -> str:
    parts = split_source_key(key)
    return f"{parts[1]} ({parts[0]})" if parts else key
