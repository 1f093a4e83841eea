"""Sources: hashing a file or a folder's files (with a hash cache beside the store), the no-op
fingerprint of an import, and the catalog keys of imports."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from provgraph.bundle.layout import Bundle
from provgraph.errors import InputError
from provgraph.ingest.base import Importer, Members, Progress, Source, tree_rels
from provgraph.store.base import Store

log = logging.getLogger(__name__)

#: Bumped when the framework's own triples change shape, so old imports are redone.
FRAMEWORK_VERSION = "1"


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
    root = os.fspath(bundle.root) + os.sep
    rels = tree_rels(bundle, path)
    known = hashes.known_under(rel)  # one query for the folder, not one per file
    lookup = hashes.sha256

    def files() -> Iterator[tuple[str, str, int]]:
        for member in rels:
            digest, size = lookup(Path(root + member), member, known)
            if progress:
                progress.advance(size)
            yield member, digest, size

    members = Members(files())
    # The tree digest is the SHA-256 of its SHA256SUMS-style manifest.
    return Source(path, rel, "tree", hashlib.sha256(members.manifest).hexdigest(), members.size, members)


#: Files up to this size are read in one call into a buffer of their own size.
_WHOLE = 4 << 20
_CHUNK = 1 << 20


def hash_file(path: Path) -> tuple[str, int, tuple[int, int, int, int]]:
    """SHA-256 hex digest, byte size and (size, mtime_ns, ctime_ns, inode) of a file, the
    identity taken from the open file. A small file is read in one call whose buffer is its
    size (a fixed 1 MiB buffer per read cost more than the hashing for a bundle's small files);
    a large one in 1 MiB chunks into one reused buffer, so memory stays bounded."""
    try:
        with open(path, "rb", buffering=0) as fh:
            st = os.fstat(fh.fileno())
            key = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            if st.st_size <= _WHOLE:
                data = fh.readall()
                if len(data) <= _WHOLE:
                    return hashlib.sha256(data).hexdigest(), len(data), key
                digest = hashlib.sha256(data)  # it grew while we read: hash on in chunks
                size = len(data)
                del data
            else:
                digest, size = hashlib.sha256(), 0
            buf = bytearray(_CHUNK)
            view = memoryview(buf)
            while n := fh.readinto(buf):
                digest.update(view[:n])
                size += n
            return digest.hexdigest(), size, key
    except OSError as err:
        raise InputError(path, f"cannot read: {err.strerror or err}") from err


def hash_cache_dir(store: Store) -> Path | None:
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

    def sha256(self, path: Path, rel: str, known: CachedRows | None = None) -> tuple[str, int]:
        """Digest and size of the file at ``path`` (bundle path ``rel``); ``known`` holds the
        cached rows of its folder (:meth:`known_under`), sparing a query per file."""
        if self._db is None:
            digest, size, _ = hash_file(path)
            return digest, size
        row = known.get(rel) if known is not None else cached_row(self._db, rel)
        if row is None and known is not None:  # never hashed: no stat
            digest, size, key = hash_file(path)
            self._remember(rel, key, digest)
            return digest, size
        try:
            st = path.stat()
        except OSError as err:
            raise InputError(path, f"cannot read: {err.strerror or err}") from err
        key = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        if row is not None and tuple(row[:4]) == key:
            return row[4], st.st_size
        digest, size, key = hash_file(path)
        self._remember(rel, key, digest)
        return digest, size

    def _remember(self, rel: str, key: tuple[int, int, int, int], digest: str) -> None:
        self._pending.append((rel, *key, digest))
        if len(self._pending) >= 10_000:
            self.commit()

    def known_under(self, folder: str) -> CachedRows | None:
        """The cached rows of the files under the bundle folder ``folder``, by bundle path, for
        look-ups in path order (:class:`CachedRows`); None without a cache."""
        if self._db is None:
            return None
        return CachedRows(self._db, folder)

    def commit(self) -> None:
        if self._db is None or not self._pending:
            return
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


def cached_row(db: sqlite3.Connection, rel: str) -> tuple | None:
    """The hash cache's row of bundle path ``rel`` (size, mtime, ctime, inode, sha256), or None."""
    row = db.execute("SELECT size, mtime, ctime, inode, sha256 FROM hashes WHERE path = ?", (rel,)).fetchone()
    return tuple(row) if row is not None else None


class CachedRows:
    """The hash cache's rows under one bundle folder, read in path order a chunk at a time as
    look-ups ask for increasing paths (a folder's files are hashed in sorted order): memory for
    one chunk, where a dict of the folder's rows held a row per file (10^6 output files at 10^6
    calls). A path asked for out of order is looked up on its own. A path found absent is hashed
    again, so a wrong "absent" costs time, never a stale digest.

    Chunks, not one open cursor: the cache is written on the same connection meanwhile."""

    _CHUNK = 4096

    def __init__(self, db: sqlite3.Connection, folder: str) -> None:
        self._db = db
        # '0' sorts right after '/': the range is exactly the paths under folder/
        self._lo, self._hi = ("", None) if folder == "." else (folder + "/", folder + "0")
        self._rows: list[tuple] = []
        self._at = 0
        self._done = False
        self._last = ""  # the path asked last: the rows before self._at sort before it

    def _fill(self, after: str | None) -> None:
        where, args = ("path > ?", [after]) if after is not None else ("path >= ?", [self._lo])
        if self._hi is not None:
            where, args = where + " AND path < ?", [*args, self._hi]
        self._rows = self._db.execute(
            f"SELECT path, size, mtime, ctime, inode, sha256 FROM hashes WHERE {where} "
            f"ORDER BY path LIMIT {self._CHUNK}",
            args,
        ).fetchall()
        self._at = 0
        self._done = len(self._rows) < self._CHUNK

    def get(self, rel: str) -> tuple | None:
        """The row of ``rel`` (size, mtime, ctime, inode, sha256), or None."""
        if not self._rows and not self._done:
            self._fill(None)
        if rel < self._last:  # the reading has moved past it
            return cached_row(self._db, rel)
        self._last = rel
        while True:
            rows, at = self._rows, self._at
            while at < len(rows) and rows[at][0] < rel:
                at += 1
            self._at = at
            if at < len(rows):
                if rows[at][0] == rel:
                    return tuple(rows[at][1:])
                if at > 0:  # between two cached paths: not cached
                    return None
                return cached_row(self._db, rel)  # before this chunk (the previous one ended below it)
            if self._done or not rows:
                return None
            self._fill(rows[-1][0])


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
