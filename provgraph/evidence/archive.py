"""Reading zip, tar and tar.gz archives safely, member by member.

Every member name is checked before any byte is used: absolute paths, ``..`` components,
backslashes, NUL bytes, duplicate names, special files (devices, FIFOs) and links whose
target leaves the archive's tree are rejected, each with an :class:`ArchiveError` naming the
archive and the member. Decompression bombs are stopped by limits on the number of members,
the size of one member, the total size and the compression ratio; sizes are enforced while
the bytes stream, so a header that lies about its size is caught too. Nothing is ever
written outside a destination folder (:func:`extract`).

>>> safe_member_path("a/./b.txt")
'a/b.txt'
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from provgraph.errors import InputError

_CHUNK = 1 << 16
#: Below this many uncompressed bytes the ratio limit does not apply (tiny files compress well).
RATIO_FLOOR = 1 << 20
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz")


class ArchiveError(InputError):
    """An archive is unsafe or unreadable; the message names the archive and the member."""

    def __init__(self, archive: str | Path, reason: str, member: str | None = None) -> None:
        self.member = member
        super().__init__(archive, f"member {member!r}: {reason}" if member is not None else reason)


@dataclass(frozen=True)
class Limits:
    """What an archive may hold before it is treated as a decompression bomb."""

    max_members: int = 100_000
    max_member_bytes: int = 1 << 30
    max_total_bytes: int = 4 << 30
    max_ratio: float = 200.0

    @classmethod
    def from_section(cls, section: dict | None) -> Limits:
        limits = (section or {}).get("limits", {})
        return cls(
            **{
                k: limits[k]
                for k in ("max_members", "max_member_bytes", "max_total_bytes", "max_ratio")
                if k in limits
            }
        )


@dataclass
class Entry:
    """One member as the archive lists it (after its name was checked)."""

    path: str
    kind: Literal["file", "dir", "symlink", "hardlink"]
    size: int
    link: str | None = None
    _chunks: Iterator[bytes] | None = None

    def chunks(self) -> Iterator[bytes]:
        """The member's bytes (files only); must be consumed before the next member."""
        return self._chunks if self._chunks is not None else iter(())

    def read_hash(self) -> tuple[str, int]:
        digest = hashlib.sha256()
        size = 0
        for chunk in self.chunks():
            digest.update(chunk)
            size += len(chunk)
        return digest.hexdigest(), size


def archive_kind(path: Path) -> Literal["zip", "tar", "tar.gz"] | None:
    """Sniff the archive format from its first bytes (None when it is none of them)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(512)
    except OSError:
        return None
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if head[:2] == b"\x1f\x8b":
        return "tar.gz" if path.name.lower().endswith((".tar.gz", ".tgz")) else None
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    return None


def safe_member_path(name: str, archive: str | Path = "archive") -> str:
    """The normalised POSIX path of a member, or :class:`ArchiveError` when it is unsafe."""
    if not name or name.strip("/") == "":
        raise ArchiveError(archive, "empty member name", name)
    if "\x00" in name:
        raise ArchiveError(archive, "NUL byte in the member name", name)
    if "\\" in name:
        raise ArchiveError(archive, "backslash in the member path (not a POSIX archive path)", name)
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise ArchiveError(archive, "absolute path: members must be relative to the archive root", name)
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ArchiveError(archive, "path traversal: '..' would leave the archive root", name)
    return "/".join(parts)


def _dir_path(name: str, archive: str | Path) -> str | None:
    """A directory member's path; None for the archive root itself (``./``)."""
    if name.strip("/").strip(".") == "" and ".." not in name:
        return None
    return safe_member_path(name, archive)


def _link_inside(member: str, target: str, archive: str | Path, hard: bool) -> str:
    """The normalised in-tree path a link points to, or an error when it leaves the tree."""
    if not target or target.startswith("/") or re.match(r"^[A-Za-z]:", target) or "\\" in target:
        raise ArchiveError(archive, f"link to {target!r} leaves the archive tree", member)
    base = "" if hard else posixpath.dirname(member)
    joined = posixpath.normpath(posixpath.join(base, target))
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        raise ArchiveError(archive, f"link to {target!r} leaves the archive tree", member)
    return joined


class _Budget:
    def __init__(self, archive: str | Path, limits: Limits, compressed: int) -> None:
        self.archive = archive
        self.limits = limits
        self.compressed = max(compressed, 1)
        self.total = 0
        self.members = 0

    def member(self, name: str) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise ArchiveError(self.archive, f"more than {self.limits.max_members} members (limit)", name)

    def declared(self, name: str, size: int, compressed: int | None = None) -> None:
        if size > self.limits.max_member_bytes:
            raise ArchiveError(
                self.archive,
                f"declares {size} bytes, more than the {self.limits.max_member_bytes}-byte member limit "
                "(decompression bomb?)",
                name,
            )
        if (
            compressed is not None
            and size > RATIO_FLOOR
            and size > self.limits.max_ratio * max(compressed, 1)
        ):
            raise ArchiveError(
                self.archive,
                f"compression ratio {size / max(compressed, 1):.0f}:1 exceeds the limit "
                f"{self.limits.max_ratio:.0f}:1 (decompression bomb?)",
                name,
            )

    def _guard(self, name: str, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """The member's bytes, with decoding failures turned into :class:`ArchiveError`."""
        try:
            yield from chunks
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, ValueError) as err:
            raise ArchiveError(self.archive, f"corrupt member data: {err}", name) from err

    def stream(self, name: str, chunks: Iterator[bytes], declared: int, whole_ratio: bool) -> Iterator[bytes]:
        seen = 0
        for chunk in self._guard(name, chunks):
            seen += len(chunk)
            self.total += len(chunk)
            if seen > declared:
                raise ArchiveError(
                    self.archive, f"holds more bytes than its header declares ({declared})", name
                )
            if self.total > self.limits.max_total_bytes:
                raise ArchiveError(
                    self.archive,
                    f"the archive expands to more than {self.limits.max_total_bytes} bytes (limit; "
                    "decompression bomb?)",
                    name,
                )
            if (
                whole_ratio
                and self.total > RATIO_FLOOR
                and self.total > self.limits.max_ratio * self.compressed
            ):
                raise ArchiveError(
                    self.archive,
                    f"the archive expands more than {self.limits.max_ratio:.0f} times its compressed "
                    "size (decompression bomb?)",
                    name,
                )
            yield chunk


def walk(path: Path, limits: Limits | None = None, name: str | None = None) -> Iterator[Entry]:
    """Yield the checked members of a zip, tar or tar.gz archive in archive order.

    Each file entry's :meth:`Entry.chunks` must be consumed (or abandoned) before the next
    entry is requested. Raises :class:`ArchiveError` for any unsafe member.
    """
    limits = limits or Limits()
    label = name or str(path)
    kind = archive_kind(path)
    if kind is None:
        raise ArchiveError(label, "not a zip, tar or tar.gz archive")
    try:
        size = path.stat().st_size
    except OSError as err:
        raise ArchiveError(label, f"cannot read: {err.strerror or err}") from err
    budget = _Budget(label, limits, size)
    seen: set[str] = set()

    def once(member: str, raw: str) -> None:
        if member in seen:
            raise ArchiveError(label, "appears twice in the archive", raw)
        seen.add(member)

    try:
        if kind == "zip":
            yield from _walk_zip(path, label, limits, budget, once)
        else:
            yield from _walk_tar(path, label, budget, once, gz=kind == "tar.gz")
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as err:
        raise ArchiveError(label, f"corrupt archive: {err}") from err
    except (ValueError, NotImplementedError) as err:  # zlib/zipfile complaints about the data
        raise ArchiveError(label, f"cannot read: {err}") from err


def _walk_zip(path: Path, label: str, limits: Limits, budget: _Budget, once) -> Iterator[Entry]:
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        if len(infos) > limits.max_members:
            raise ArchiveError(label, f"{len(infos)} members, more than the limit {limits.max_members}")
        for info in infos:
            budget.member(info.filename)
            mode = info.external_attr >> 16
            if info.is_dir():
                if (member := _dir_path(info.filename, label)) is not None:
                    yield Entry(member, "dir", 0)
                continue
            member = safe_member_path(info.filename, label)
            once(member, info.filename)
            if info.flag_bits & 0x1:
                raise ArchiveError(label, "encrypted member: its bytes cannot be verified", info.filename)
            if mode and (
                stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
            ):
                raise ArchiveError(label, "special file (device, FIFO or socket)", info.filename)
            if mode and stat.S_ISLNK(mode):
                if info.file_size > 4096:
                    raise ArchiveError(label, "symbolic link target longer than 4096 bytes", info.filename)
                target = zf.read(info).decode("utf-8", errors="replace")
                yield Entry(member, "symlink", 0, _link_inside(member, target, label, hard=False))
                continue
            budget.declared(info.filename, info.file_size, info.compress_size)

            def chunks(info=info) -> Iterator[bytes]:
                with zf.open(info) as fh:
                    while chunk := fh.read(_CHUNK):
                        yield chunk

            yield Entry(
                member,
                "file",
                info.file_size,
                None,
                budget.stream(info.filename, chunks(), info.file_size, False),
            )


def _walk_tar(path: Path, label: str, budget: _Budget, once, gz: bool) -> Iterator[Entry]:
    with path.open("rb") as raw, tarfile.open(fileobj=raw, mode="r|gz" if gz else "r|") as tf:
        for info in tf:
            budget.member(info.name)
            if info.isdir():
                if (member := _dir_path(info.name, label)) is not None:
                    yield Entry(member, "dir", 0)
                continue
            member = safe_member_path(info.name, label)
            once(member, info.name)
            if info.issym():
                yield Entry(member, "symlink", 0, _link_inside(member, info.linkname, label, hard=False))
                continue
            if info.islnk():
                yield Entry(member, "hardlink", 0, _link_inside(member, info.linkname, label, hard=True))
                continue
            if not info.isfile():
                raise ArchiveError(label, "special file (device, FIFO or socket)", info.name)
            budget.declared(info.name, info.size)
            fh = tf.extractfile(info)

            def chunks(fh: IO[bytes] | None = fh) -> Iterator[bytes]:
                if fh is None:
                    return
                while chunk := fh.read(_CHUNK):
                    yield chunk

            yield Entry(member, "file", info.size, None, budget.stream(info.name, chunks(), info.size, gz))


def extract(path: Path, dest: Path, limits: Limits | None = None, name: str | None = None) -> list[Entry]:
    """Extract an archive into the empty folder ``dest`` after checking every member.

    In-tree symbolic links become symbolic links, hard links become copies. Returns the
    entries (their chunk streams consumed).
    """
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise ArchiveError(name or path, f"extraction folder {dest} is not empty")
    entries = []
    root = dest.resolve()
    for entry in walk(path, limits, name):
        target = root / entry.path
        if not target.resolve().is_relative_to(root) and entry.kind != "symlink":
            raise ArchiveError(name or path, "would be written outside the extraction folder", entry.path)
        if entry.kind == "dir":
            target.mkdir(parents=True, exist_ok=True)
        elif entry.kind == "file":
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "xb") as fh:
                for chunk in entry.chunks():
                    fh.write(chunk)
        elif entry.kind == "symlink":
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(posixpath.relpath(entry.link or "", posixpath.dirname(entry.path) or "."), target)
        else:  # hardlink: a copy of an earlier member
            source = root / (entry.link or "")
            if not source.is_file():
                raise ArchiveError(
                    name or path, f"hard link to {entry.link!r}, which is not an earlier file", entry.path
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
        entries.append(entry)
    return entries
