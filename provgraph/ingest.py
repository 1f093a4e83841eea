"""The import framework: importer base class, sources, detection and atomic ingest.

An import reads one *source* (a file, or a folder read as a whole) with one importer and
writes one named graph: the importer's triples plus a ``pg:Import`` activity that
``prov:used`` the source (path, sha256, size) and is associated with the importer (name,
version). The graph is swapped in atomically (see :mod:`provgraph.catalog`); importing the
same bytes again with the same importer and contract settings is a no-op.

Importers report bad records with :meth:`ImportContext.problem` and carry on; a fatal
:class:`~provgraph.errors.InputError` abandons the source and leaves its old graph in place.
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, ClassVar, Literal

from provgraph import catalog, registry
from provgraph.bundle import Bundle, sha256_file
from provgraph.errors import ImporterError, InputError, ProvgraphError, StoreUnavailable
from provgraph.store.base import Store
from provgraph.terms import IRI, TripleWriter, mint
from provgraph.vocab import PG, PG_NS, PROV, RDF_TYPE

log = logging.getLogger(__name__)

# Scores an importer's detect() returns. 0 = not mine, FALLBACK = anything no one else claims.
NO = 0
FALLBACK = 1
MAYBE = 50
LIKELY = 80
CERTAIN = 100

#: A relative POSIX path with no empty, '.' or '..' segment: already normalised.
_PLAIN_REL = re.compile(r"(?!\.\.?(?:/|$))[^/\\]+(?:/(?!\.\.?(?:/|$))[^/\\]+)*")

#: Bumped when the framework's own triples change shape, so old imports are redone.
FRAMEWORK_VERSION = "1"


@dataclass(frozen=True)
class Member:
    """One file inside a source tree."""

    rel: str
    sha256: str
    size: int


@dataclass(frozen=True)
class Source:
    """A file, or a folder read as a whole, with the digest of its exact bytes."""

    path: Path
    rel: str
    kind: Literal["file", "tree"]
    sha256: str
    size: int
    members: tuple[Member, ...] = ()


@dataclass(frozen=True)
class Problem:
    """A record an importer rejected (or a path it could not read)."""

    path: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.reason}"


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


class Progress:
    """Progress callbacks; the CLI supplies a rich progress bar, the API a silent one."""

    def start(self, label: str, total: int | None) -> None:
        """A new unit of work of ``total`` bytes (None when unknown)."""

    def advance(self, amount: int) -> None:
        """``amount`` more bytes are done."""

    def finish(self) -> None:
        """The current unit is done."""


class Importer:
    """Base class of importers. Subclasses set the class attributes and implement both methods.

    ``detect`` must be cheap (look at a name, sniff a header); it never raises for files that
    are not its own. ``ingest`` emits triples through ``ctx`` and reports bad records with
    ``ctx.problem``.
    """

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    description: ClassVar[str] = ""
    #: "file", "directory" or "any": what kind of path this importer reads.
    handles: ClassVar[str] = "file"
    #: Contract sections whose content changes this importer's output (part of the no-op key).
    uses_sections: ClassVar[tuple[str, ...]] = ()
    #: File name suffixes (lower case, with the dot; "" for none) outside which ``detect`` never
    #: claims a *file*: a hint that spares asking for every file of a large bundle. None: ask.
    suffixes: ClassVar[frozenset[str] | None] = None

    def detect(self, path: Path, bundle: Bundle) -> int:
        """How sure this importer is that ``path`` is its format: NO, FALLBACK..CERTAIN."""
        raise NotImplementedError

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        """Read ``source`` and emit triples through ``ctx``."""
        raise NotImplementedError

    def state_key(self, source: Source) -> str | None:
        """Extra state that makes a re-import necessary although the source's files are unchanged.

        Most importers return None. A git repository's history lives in its hidden ``.git``
        folder, which the source digest does not cover, so the git importer returns its refs.
        """
        return None

    def accepts(self, path: Path) -> bool:
        if self.handles == "any":
            return True
        return path.is_dir() if self.handles == "directory" else path.is_file()


class ImportContext:
    """Everything an importer needs while reading one source."""

    def __init__(
        self,
        bundle: Bundle,
        source: Source,
        importer: Importer,
        writer: TripleWriter,
        progress: Progress,
    ) -> None:
        self.bundle = bundle
        self.source = source
        self.importer = importer
        self.base = bundle.contract.base_iri
        self._writer = writer
        self.add = writer.add
        self.problems: list[Problem] = []
        self.records = 0
        self._progress = progress
        self.source_iri = self.file_iri(source.rel)
        self.contract_iri = self.iri("contract", "main")
        self.import_iri = self.iri("import", importer.name, *source.rel.split("/"))

    def iri(self, kind: str, *keys: object) -> IRI:
        """Mint a node IRI under the project's base IRI (see :func:`provgraph.terms.mint`)."""
        return mint(self.base, kind, *keys)

    def file_iri(self, rel: str) -> IRI:
        """The node of a file or folder, from its bundle-relative POSIX path."""
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        return mint(self.base, "file", *parts) if parts else mint(self.base, "file", ".")

    def bundle_rel(self, written: str) -> str | None:
        """A path as a record wrote it (relative to the bundle root) in bundle POSIX form.

        None when it points outside the bundle: such a file can never be verified.
        """
        if _PLAIN_REL.fullmatch(written):  # already a clean bundle path (the usual case)
            return written
        path = written if os.path.isabs(written) else os.path.join(self.bundle.root, written)
        try:
            return self.bundle.relpath(path)
        except ProvgraphError:
            return None

    def problem(self, line: int | None, reason: str) -> None:
        """Reject one record: it is reported and recorded, and the import carries on."""
        self.problems.append(Problem(self.source.rel, line, reason))

    def record(self) -> None:
        """Count one accepted record."""
        self.records += 1

    def advance(self, nbytes: int) -> None:
        self._progress.advance(nbytes)


def tree_rels(bundle: Bundle, folder: Path) -> list[str]:
    """Bundle paths of the files under ``folder`` that are not excluded, sorted.

    While a bundle is being planned (:func:`plan_bundle`) the whole bundle is listed once and
    every folder's files are a slice of that listing: detectors that sniff a folder, and the
    descent into its subfolders, do not walk it again.
    """
    listing: list[str] | None = getattr(bundle, "_listing", None)
    rel = bundle.relpath(folder)
    if listing is None:
        return _walk(bundle, folder, rel)
    if rel == ".":
        return listing
    lo = bisect.bisect_left(listing, rel + "/")
    hi = bisect.bisect_left(listing, rel + "0")  # '0' sorts right after '/'
    return listing[lo:hi]


def _walk(bundle: Bundle, folder: Path, rel: str) -> list[str]:
    found: list[str] = []
    prefix = "" if rel == "." else rel + "/"
    stack = [(os.fspath(folder), prefix)]
    while stack:
        path, base = stack.pop()
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue
        for entry in entries:
            member = base + entry.name
            if bundle.excluded(member):
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, member + "/"))
            elif entry.is_file():
                found.append(member)
    found.sort()
    return found


def tree_members(bundle: Bundle, folder: Path) -> list[Path]:
    """Files under ``folder`` that are not excluded, sorted by path."""
    return [bundle.resolve(r) for r in tree_rels(bundle, folder)]


def describe_source(
    bundle: Bundle, path: Path, progress: Progress | None = None, hashes: HashCache | None = None
) -> Source:
    """Hash a file, or every file in a folder, to identify the source's exact bytes.

    ``hashes`` remembers the digests of files whose size, times and inode have not changed
    since they were last hashed, so re-ingesting an unchanged bundle reads no file twice.
    """
    rel = bundle.relpath(path)
    hashes = hashes or HashCache(None)
    if path.is_file():
        digest, size = hashes.sha256(path, rel)
        return Source(path, rel, "file", digest, size)
    if not path.is_dir():
        raise InputError(path, "no such file or folder")
    members = []
    root = os.fspath(bundle.root)
    for member in tree_rels(bundle, path):
        digest, size = hashes.sha256(Path(root, member), member)
        members.append(Member(member, digest, size))
        if progress:
            progress.advance(size)
    # The tree digest is the SHA-256 of its SHA256SUMS-style manifest.
    manifest = "".join(f"{m.sha256}  {m.rel}\n" for m in members).encode()
    return Source(
        path,
        rel,
        "tree",
        hashlib.sha256(manifest).hexdigest(),
        sum(m.size for m in members),
        tuple(members),
    )


def _hash_cache_dir(store: Store) -> Path | None:
    """Beside an on-disk store (``.provgraph/`` for the default one), never inside the bundle
    when the store lives elsewhere: a bundle may be read-only or under version control."""
    path = getattr(store, "path", None)
    return Path(path).parent / f"{Path(path).name}.cache" if path is not None else None


class HashCache:
    """SHA-256 of files by (bundle path, size, mtime_ns, ctime_ns, inode), kept beside the
    store (``.provgraph/store.cache/hashes.sqlite``) so that an unchanged file is not read again.

    A file whose bytes change gets a new ctime (which no program can set back), so a stale
    entry is never used. ``None`` as the folder keeps nothing.
    """

    def __init__(self, folder: Path | None) -> None:
        self._db = None
        self._pending: list[tuple] = []
        if folder is None:
            return
        import sqlite3

        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(folder / "hashes.sqlite")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS hashes (path TEXT PRIMARY KEY, size INTEGER, mtime INTEGER, "
                "ctime INTEGER, inode INTEGER, sha256 TEXT)"
            )
        except (OSError, sqlite3.Error) as err:  # a read-only bundle: hash without remembering
            log.info("no hash cache in %s: %s", folder, err)
            self._db = None

    def sha256(self, path: Path, rel: str) -> tuple[str, int]:
        if self._db is None:
            return sha256_file(path)
        try:
            st = path.stat()
        except OSError as err:
            raise InputError(path, f"cannot read: {err.strerror or err}") from err
        key = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        row = self._db.execute(
            "SELECT size, mtime, ctime, inode, sha256 FROM hashes WHERE path = ?", (rel,)
        ).fetchone()
        if row is not None and tuple(row[:4]) == key:
            return row[4], st.st_size
        digest, size = sha256_file(path)
        self._pending.append((rel, *key, digest))
        if len(self._pending) >= 10_000:
            self.commit()
        return digest, size

    def commit(self) -> None:
        if self._db is None or not self._pending:
            return
        import sqlite3

        try:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO hashes VALUES (?, ?, ?, ?, ?, ?)", self._pending)
        except sqlite3.Error as err:
            log.info("could not update the hash cache: %s", err)
        self._pending.clear()

    def close(self) -> None:
        self.commit()
        if self._db is not None:
            self._db.close()
            self._db = None


def fingerprint(bundle: Bundle, source: Source, importer: Importer) -> str:
    """What must be equal for a re-import to be a no-op."""
    sections = {s: bundle.contract.section(s) for s in importer.uses_sections}
    key = {
        "framework": FRAMEWORK_VERSION,
        "source": source.sha256,
        "path": source.rel,
        "importer": importer.name,
        "version": importer.version,
        "base_iri": bundle.contract.base_iri,
        "sections": sections,
    }
    extra = importer.state_key(source)
    if extra is not None:
        key["state"] = extra
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


IMPORT_PREFIX = "import:"


def source_key(importer: Importer, rel: str) -> str:
    """Catalog key of an import: one current graph per (importer, path)."""
    return f"{IMPORT_PREFIX}{importer.name}:{rel}"


def split_source_key(key: str) -> tuple[str, str] | None:
    """(importer, path) of an import's catalog key; None for other slots (checks, ontology)."""
    if not key.startswith(IMPORT_PREFIX):
        return None
    name, _, rel = key[len(IMPORT_PREFIX) :].partition(":")
    return name, rel


def overlaps(a: str, b: str) -> bool:
    """Whether two bundle paths are the same or one contains the other."""
    if a == "." or b == ".":
        return True
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def choose_importer(path: Path, bundle: Bundle, explicit: str | None = None) -> Importer:
    """The importer for ``path``: an explicit name wins, then the contract, then detection.

    Detection asks every importer; the best score wins and a tie is an error that lists the
    candidates. No parser is tried-and-swallowed.
    """
    rel = bundle.relpath(path)
    name = explicit or bundle.importer_override(rel)
    if name:
        importer = registry.get(name)
        if not importer.accepts(path):
            kind = "folder" if path.is_dir() else "file"
            raise ImporterError(f"{rel}: importer {name!r} does not read a {kind}")
        return importer
    best = _detect(path, bundle)
    if not best:
        raise ImporterError(f"{rel}: no importer recognises this path")
    if len(best) > 1:
        raise ImporterError(
            f"{rel}: several importers match equally well ({', '.join(i.name for i in best)}); "
            "choose one with --importer or [ingest].importers in the contract"
        )
    return best[0]


def _detect(path: Path, bundle: Bundle, minimum: int = FALLBACK) -> list[Importer]:
    scores: list[tuple[int, Importer]] = []
    is_dir = path.is_dir()
    suffix = path.suffix.lower()
    for importer in registry.all_importers():
        if type(importer).accepts is Importer.accepts:  # the usual case: one stat, not one per importer
            if importer.handles != "any" and (importer.handles == "directory") != is_dir:
                continue
        elif not importer.accepts(path):
            continue
        if not is_dir and importer.suffixes is not None and suffix not in importer.suffixes:
            continue
        try:
            score = importer.detect(path, bundle)
        except Exception:  # detection only sniffs; a failure there means "not mine"
            log.debug("importer %s failed to detect %s", importer.name, path, exc_info=True)
            score = NO
        if score >= minimum:
            scores.append((score, importer))
    if not scores:
        return []
    top = max(s for s, _ in scores)
    return [i for s, i in scores if s == top]


def plan_bundle(
    bundle: Bundle, start: Path | None = None, overrides: dict[str, str] | None = None
) -> tuple[list[tuple[Path, Importer]], list[Problem]]:
    """Decide which importer reads which path under ``start`` (default: the whole bundle).

    A folder that an importer claims is read whole. Otherwise its files are offered one by
    one; a folder in which nothing is claimed becomes one tree source of the fallback
    importer, and unclaimed loose files become single-file sources of it. ``overrides`` maps
    bundle paths to importer names and wins like ``[ingest].importers``.
    """
    bundle._listing = _walk(bundle, bundle.root, ".")  # type: ignore[attr-defined]
    try:
        return _plan(bundle, start, overrides)
    finally:
        del bundle._listing  # type: ignore[attr-defined]


def _plan(
    bundle: Bundle, start: Path | None, overrides: dict[str, str] | None
) -> tuple[list[tuple[Path, Importer]], list[Problem]]:
    problems: list[Problem] = []
    fallback = registry.get("files")
    overrides = overrides or {}
    start = (start or bundle.root).resolve()

    def claim(path: Path) -> Importer | None:
        rel = bundle.relpath(path)
        try:
            override = overrides.get(rel) or bundle.importer_override(rel)
            if override:
                return choose_importer(path, bundle, override)
            best = _detect(path, bundle, minimum=FALLBACK + 1)
        except ImporterError as err:
            problems.append(Problem(rel, None, str(err).split(": ", 1)[-1]))
            return None
        if len(best) > 1:
            names = ", ".join(i.name for i in best)
            problems.append(
                Problem(
                    rel,
                    None,
                    f"several importers match equally well ({names}); choose one in [ingest].importers",
                )
            )
            return None
        return best[0] if best else None

    def visit(folder: Path) -> tuple[list[tuple[Path, Importer]], list[Path], bool]:
        claims: list[tuple[Path, Importer]] = []
        leftovers: list[Path] = []
        flagged = False
        for child in sorted(folder.iterdir()):
            if bundle.excluded(bundle.relpath(child)) or (
                child.is_symlink() and not child.resolve().is_relative_to(bundle.root)
            ):
                continue
            before = len(problems)
            chosen = claim(child)
            if chosen is not None:
                claims.append((child, chosen))
            elif len(problems) > before:
                flagged = True
            elif child.is_dir():
                sub_claims, sub_left, sub_flagged = visit(child)
                if sub_claims or sub_flagged:
                    claims += sub_claims
                    leftovers += sub_left
                    flagged = flagged or sub_flagged
                elif sub_left:
                    leftovers.append(child)  # nothing inside is claimed: read it as one tree
            elif child.is_file():
                leftovers.append(child)
        return claims, leftovers, flagged

    if start.is_file():
        try:
            name = overrides.get(bundle.relpath(start))
            return [(start, choose_importer(start, bundle, name))], problems
        except ImporterError as err:
            return [], [Problem(bundle.relpath(start), None, str(err).split(": ", 1)[-1])]
    first = claim(start) if start != bundle.root else None
    if first is not None:
        return [(start, first)], problems
    claims, leftovers, _ = visit(start)
    claims += [(p, fallback) for p in leftovers]
    # The contract goes first: everything else is minted under its base IRI.
    claims.sort(key=lambda c: (c[1].name != "contract", bundle.relpath(c[0])))
    return claims, problems


def ingest_source(
    store: Store,
    bundle: Bundle,
    path: Path,
    importer: Importer,
    progress: Progress | None = None,
    hashes: HashCache | None = None,
) -> ImportResult:
    """Import one source atomically. Never raises for bad input: the result says what failed.
    A store that cannot be reached raises :class:`StoreUnavailable` (the import is not done).
    ``hashes`` remembers file digests between ingests (see :class:`HashCache`)."""
    progress = progress or Progress()
    rel = bundle.relpath(path)
    t0 = time.perf_counter()
    try:
        size_hint = path.stat().st_size if path.is_file() else None
        progress.start(f"hashing {rel}", size_hint if size_hint is not None else None)
        source = describe_source(bundle, path, progress, hashes)
        progress.finish()
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
            writer = TripleWriter(fh)
            ctx = ImportContext(bundle, source, importer, writer, progress)
            state["writer"], state["ctx"] = writer, ctx
            started = dt.datetime.now(dt.UTC).replace(microsecond=0)
            progress.start(f"reading {rel}", source.size)
            log.info("reading %s with importer %s", rel, importer.name)
            _run_importer(importer, source, ctx)
            progress.finish()
            _write_import(ctx, key, started)

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
        return ImportResult(rel, importer.name, "failed", error=str(err), seconds=time.perf_counter() - t0)


def _run_importer(importer: Importer, source: Source, ctx: ImportContext) -> None:
    try:
        importer.ingest(source, ctx)
    except ProvgraphError:
        raise
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


def recorded_problems(store: Store, graph: str) -> list[Problem]:
    """Problems an earlier import of the same bytes recorded (reported again on a no-op)."""
    import pyoxigraph as ox

    rows = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT ?g ?path ?line ?msg WHERE {{ GRAPH ?g {{
            ?p a pg:ImportProblem ; pg:sourceFile ?f ; pg:message ?msg .
            ?f pg:path ?path . OPTIONAL {{ ?p pg:sourceLine ?line }} }} }}
        ORDER BY ?line""",
        {"g": ox.NamedNode(graph)},
    )
    return [
        Problem(r["path"].value, int(r["line"].value) if r["line"] else None, r["msg"].value)  # type: ignore[union-attr]
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
    hashes = HashCache(_hash_cache_dir(store))
    try:
        for path, importer in selected:
            result = ingest_source(store, bundle, path, importer, progress, hashes)
            results.append(result)
            if on_result:
                on_result(result)
    finally:
        hashes.close()
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
    return results, problems


def describe_importer(importer: Importer) -> dict[str, Any]:
    return {
        "name": importer.name,
        "version": importer.version,
        "handles": importer.handles,
        "description": importer.description,
    }
