"""A bundle: a folder with a contract file at its root, and the store that belongs to it."""

from __future__ import annotations

import bisect
import fnmatch
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from provgraph.bundle.contract import CONTRACT_FILE, Contract, load_contract
from provgraph.errors import InputError, UsageError

STORE_DIR = ".provgraph"
_CHUNK = 1 << 20


def sha256_file(path: Path) -> tuple[str, int]:
    """SHA-256 hex digest and byte size of a file's exact bytes."""
    digest = hashlib.sha256()
    size = 0
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
    except OSError as err:
        raise InputError(path, f"cannot read: {err.strerror or err}") from err
    return digest.hexdigest(), size


def find_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that holds a contract file."""
    start = start.resolve()
    here = start if start.is_dir() else start.parent
    for folder in (here, *here.parents):
        if (folder / CONTRACT_FILE).is_file():
            return folder
    return None


@dataclass
class Bundle:
    """The bundle root and its validated contract."""

    root: Path
    contract: Contract
    #: The whole bundle's file listing while :meth:`listed` holds it, else None.
    _listing: list[str] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def open(cls, root: Path) -> Bundle:
        root = root.resolve()
        path = root / CONTRACT_FILE
        if not path.is_file():
            raise UsageError(f"{root}: no {CONTRACT_FILE} here; run `provgraph init` to create one")
        return cls(root, load_contract(path))

    @classmethod
    def find(cls, start: Path) -> Bundle:
        """Open the bundle that contains ``start`` (searching upwards, like git)."""
        root = find_root(start)
        if root is None:
            raise UsageError(
                f"{start}: not inside a bundle (no {CONTRACT_FILE} here or above); "
                "run `provgraph init` or pass --bundle"
            )
        return cls.open(root)

    @property
    def default_store(self) -> Path:
        return self.root / STORE_DIR / "store"

    @property
    def state_dir(self) -> Path:
        return self.root / STORE_DIR

    def relpath(self, path: Path | str) -> str:
        """POSIX path of ``path`` relative to the bundle root; error if it lies outside."""
        # String operations, not pathlib: ingest calls this for every file of a bundle.
        text = os.path.abspath(path)
        root = self._root_text
        if text == root:
            return "."
        prefix = root if root.endswith(os.sep) else root + os.sep
        if not text.startswith(prefix):
            raise UsageError(f"{path}: outside the bundle {self.root}")
        rel = text[len(prefix) :]
        return rel.replace(os.sep, "/") if os.sep != "/" else rel

    @property
    def _root_text(self) -> str:
        cached = self.__dict__.get("_root_cache")
        if cached is None or cached[0] is not self.root:
            cached = self.__dict__["_root_cache"] = (self.root, str(self.root))
        return cached[1]

    def resolve(self, rel: str) -> Path:
        """Absolute path for a bundle-relative POSIX path."""
        return self.root / PurePosixPath(rel)

    def excluded(self, rel: str) -> bool:
        """Hidden paths, the store folder and ``[ingest].exclude`` globs are never imported."""
        if (
            (rel.startswith(".") and rel != ".")
            or "/." in rel
            or ("__pycache__" in rel and any(p == "__pycache__" for p in rel.split("/")))
        ):
            return True
        patterns = (self.contract.section("ingest") or {}).get("exclude", [])
        return any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(rel + "/", pat) for pat in patterns)

    def importer_override(self, rel: str) -> str | None:
        overrides = (self.contract.section("ingest") or {}).get("importers", {})
        for pattern, name in overrides.items():
            if rel == pattern.rstrip("/") or fnmatch.fnmatch(rel, pattern):
                return str(name)
        return None

    @contextmanager
    def listed(self) -> Iterator[None]:
        """List the whole bundle once; until the block ends, :meth:`files_under` answers from
        that listing (planning asks for many folders' files: detectors that sniff a folder,
        and the descent into its subfolders, do not walk it again). Inside an enclosing
        block (an ingest plans, hashes and imports from one listing) the listing is kept."""
        if self._listing is not None:
            yield
            return
        self._listing = self._walk(self.root, ".")
        try:
            yield
        finally:
            self._listing = None

    def files_under(self, folder: Path) -> list[str]:
        """Bundle paths of the files under ``folder`` that are not excluded, sorted."""
        rel = self.relpath(folder)
        listing = self._listing
        if listing is None:
            return self._walk(folder, rel)
        if rel == ".":
            return listing
        lo = bisect.bisect_left(listing, rel + "/")
        hi = bisect.bisect_left(listing, rel + "0")  # '0' sorts right after '/'
        return listing[lo:hi]

    def _walk(self, folder: Path, rel: str) -> list[str]:
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
                if self.excluded(member):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, member + "/"))
                elif entry.is_file():
                    found.append(member)
        found.sort()
        return found
