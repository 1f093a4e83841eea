"""What a DVC folder hash (``md5: <hex>.dir``) says about the files of a folder dep or out.

DVC hashes a folder as the MD5 of its ``.dir`` listing, the JSON list of ``{"md5", "relpath"}``
of its files sorted by relpath (``json.dumps(..., sort_keys=True)``, iterative/dvc-data
``hashfile/tree.py``), and keeps that listing in its cache as ``.dvc/cache/files/md5/xx/yyyy.dir``
(DVC 3) or ``.dvc/cache/xx/yyyy.dir`` (DVC 2). :func:`folder_listing` gives the md5 the build
recorded for each file: from the cached listing when the bundle holds it (its own md5 must be
the recorded one), else from the folder as it is, when its files hash to the recorded folder
hash (then every file is as the build left it). When neither holds, the folder changed since
the build and, without the cached listing, which of its files changed cannot be told.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

#: Largest cached ``.dir`` listing read (about 100 bytes a file: a million files).
MAX_LISTING_BYTES = 128 << 20
#: Folders DVC itself never hashes into a folder output.
_SKIP = frozenset({".git", ".dvc", ".hg"})


@dataclass(frozen=True)
class FolderListing:
    """The recorded md5 of each file of one folder (bundle-relative paths), or why not known."""

    #: bundle path -> md5 as the build recorded it; None when the build's listing is unknown
    members: dict[str, str] | None
    #: "cache" (the cached .dir listing), "files" (the files hash to the folder hash) or "changed"
    source: str
    #: where the cached listing was looked for first (bundle path), for messages
    cache_path: str
    #: the files now in the folder (bundle paths)
    present: tuple[str, ...]


def _md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def _digest(listing: list[dict[str, str]]) -> str:
    return _md5(json.dumps(listing, sort_keys=True).encode())


def _cached(root: Path, base: str, digest: str) -> tuple[list[dict[str, str]] | None, str]:
    """The cached listing of ``digest`` in the DVC project at or above ``base``, if any."""
    names = (f"files/md5/{digest[:2]}/{digest[2:]}.dir", f"{digest[:2]}/{digest[2:]}.dir")
    parts = base.split("/") if base else []
    projects = ["/".join(parts[:i]) for i in range(len(parts), -1, -1)]
    first = ""
    for project in projects:
        for name in names:
            rel = posixpath.join(project, ".dvc/cache", name) if project else f".dvc/cache/{name}"
            first = first or rel
            path = root / PurePosixPath(rel)
            if not path.is_file() or path.stat().st_size > MAX_LISTING_BYTES:
                continue
            data = path.read_bytes()
            if _md5(data) != digest:
                continue  # not the listing the build recorded (a corrupt or foreign cache)
            try:
                listing = json.loads(data)
            except ValueError:
                continue
            if isinstance(listing, list) and all(
                isinstance(e, dict) and isinstance(e.get("md5"), str) and isinstance(e.get("relpath"), str)
                for e in listing
            ):
                return listing, rel
    return None, first


def _files(top: Path) -> list[str]:
    """Paths (relative to ``top``) of the files in it as DVC would hash them, sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d not in _SKIP]
        rel = os.path.relpath(dirpath, top)
        for name in filenames:
            found.append(name if rel == "." else posixpath.join(rel.replace(os.sep, "/"), name))
    return sorted(found)


def folder_listing(root: Path, base: str, folder: str, dir_md5: str) -> FolderListing:
    """What the build recorded for the files of ``folder`` with hash ``dir_md5``.

    Paths are relative to the bundle ``root``; ``base`` is the folder of the build record (the
    DVC project is there or above it)."""
    digest = dir_md5.lower().removesuffix(".dir")
    top = root / PurePosixPath(folder)
    present = _files(top)
    paths = tuple(posixpath.join(folder, p) for p in present)
    listing, cache_path = _cached(root, base, digest)
    if listing is not None:
        members = {posixpath.join(folder, e["relpath"]): e["md5"].lower() for e in listing}
        return FolderListing(members, "cache", cache_path, paths)
    plain, text = [], []
    for name in present:
        data = (top / PurePosixPath(name)).read_bytes()
        plain.append({"md5": _md5(data), "relpath": name})
        # DVC 2 hashed text files with CRLF turned into LF
        lf = data.replace(b"\r\n", b"\n") if b"\x00" not in data[:8000] else data
        text.append({"md5": _md5(lf), "relpath": name})
    for variant in (plain, text):
        if _digest(variant) == digest:
            members = {posixpath.join(folder, e["relpath"]): e["md5"] for e in variant}
            return FolderListing(members, "files", cache_path, paths)
    return FolderListing(None, "changed", cache_path, paths)


def file_md5s(data: bytes) -> set[str]:
    """MD5 of a file's bytes, and of them with CRLF turned into LF (DVC 2's ``md5-dos2unix``)."""
    found = {_md5(data)}
    if b"\x00" not in data[:8000] and b"\r\n" in data:
        found.add(_md5(data.replace(b"\r\n", b"\n")))
    return found


def folder_md5s(top: Path) -> set[str]:
    """The ``.dir`` md5 of a folder as it is now (DVC 3's, and DVC 2's text-normalised one)."""
    plain, text = [], []
    for name in _files(top):
        data = (top / PurePosixPath(name)).read_bytes()
        plain.append({"md5": _md5(data), "relpath": name})
        lf = data.replace(b"\r\n", b"\n") if b"\x00" not in data[:8000] else data
        text.append({"md5": _md5(lf), "relpath": name})
    return {_digest(plain) + ".dir", _digest(text) + ".dir"}


def in_cache(project: Path, md5: str) -> bool:
    """Whether DVC's cache of the project at ``project`` holds the object ``md5`` (a folder's
    ``.dir`` listing and every file it names), as ``dvc status`` checks an output."""
    digest = md5.lower().removesuffix(".dir")
    suffix = ".dir" if md5.endswith(".dir") else ""

    def find(value: str, end: str = "") -> Path | None:
        for name in (f"files/md5/{value[:2]}/{value[2:]}{end}", f"{value[:2]}/{value[2:]}{end}"):
            path = project / ".dvc" / "cache" / name
            if path.is_file():
                return path
        return None

    found = find(digest, suffix)
    if found is None or not suffix:
        return found is not None
    if found.stat().st_size > MAX_LISTING_BYTES:
        return False
    try:
        listing = json.loads(found.read_bytes())
    except ValueError:
        return False
    return isinstance(listing, list) and all(
        isinstance(e, dict) and isinstance(e.get("md5"), str) and find(e["md5"]) is not None for e in listing
    )
