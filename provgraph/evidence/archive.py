"""Reading zip, tar and tar.gz archives safely, member by member.

Every member name is checked before any byte is used: absolute paths, ``..`` components,
backslashes, NUL bytes, duplicate names, special files (devices, FIFOs) and links whose
target leaves the archive's tree are rejected, each with an :class:`ArchiveError` naming the
archive and the member. Links are resolved against the members the archive has laid out so
far, never against the file system, and no path may run through a symbolic link (see
:class:`_Tree`). Decompression bombs are stopped by limits on the number of members,
the size of one member, the total size and the compression ratio; sizes are enforced while
the bytes stream, so a header that lies about its size is caught too; the copies hard links
make count against the total and the ratio as well. Nothing is ever
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
import zlib
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


_LEAVES = "link to {!r} leaves the archive tree"


class _Tree:
    """The paths an archive has laid out so far, to resolve its links without the file system.

    The rule, the simplest sound one: no member path and no link target may run through a
    symbolic link (or through a file). Then every path means what it says: a link's target,
    resolved component by component from the link's folder, never meets another link, so its
    lexical resolution is its real one, and it is checked to stay inside the tree. Archives
    stream (a tar cannot look ahead), so each path a target walks through is remembered, and a
    symbolic link arriving there later is refused too. A chain such as ``a -> .``,
    ``a/b -> ..`` is refused at ``a/b`` (it lies under the link ``a``).
    """

    def __init__(self, archive: str | Path) -> None:
        self.archive = archive
        self.kinds: dict[str, str] = {}  # non-directory member -> its kind
        self.sizes: dict[str, int] = {}  # file (or hard link) member -> its size
        self.dirs: set[str] = set()  # directories, listed or implied by a member under them
        self.walked: set[str] = set()  # paths a link target runs through: never a link later

    def add(self, member: str, raw: str, kind: str, size: int = 0) -> None:
        """Record a member, refusing duplicates and any path under a non-directory."""
        if kind != "dir" and member in self.kinds:
            raise ArchiveError(self.archive, "appears twice in the archive", raw)
        if (kind == "dir" and member in self.kinds) or (kind != "dir" and member in self.dirs):
            raise ArchiveError(self.archive, "is both a directory and a file or link", raw)
        if kind == "symlink" and member in self.walked:
            raise ArchiveError(
                self.archive,
                "symbolic link on the path of an earlier link's target (links may not chain)",
                raw,
            )
        parts = member.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            if parent in self.kinds:
                raise ArchiveError(
                    self.archive,
                    f"lies under {parent!r}, a {self.kinds[parent]}, not a directory "
                    "(paths may not run through links)",
                    raw,
                )
            self.dirs.add(parent)
        if kind == "dir":
            self.dirs.add(member)
        else:
            self.kinds[member] = kind
            self.sizes[member] = size

    def resolve(self, member: str, raw: str, target: str, hard: bool) -> str:
        """The in-tree path a link points to (tar hard links are relative to the root)."""
        if not target or target.startswith("/") or re.match(r"^[A-Za-z]:", target) or "\\" in target:
            raise ArchiveError(self.archive, _LEAVES.format(target), raw)
        stack = [] if hard else member.split("/")[:-1]
        for part in target.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not stack:
                    raise ArchiveError(self.archive, _LEAVES.format(target), raw)
                stack.pop()  # safe: every component on the stack is known not to be a link
                continue
            stack.append(part)
            here = "/".join(stack)
            if self.kinds.get(here) == "symlink":
                raise ArchiveError(
                    self.archive,
                    f"link to {target!r} goes through the symbolic link {here!r} (links may not chain)",
                    raw,
                )
            self.walked.add(here)
        resolved = "/".join(stack)
        if hard and self.kinds.get(resolved) not in ("file", "hardlink"):
            raise ArchiveError(self.archive, f"hard link to {target!r}, which is not an earlier file", raw)
        return resolved or "."

    def link(self, member: str, raw: str, target: str, hard: bool) -> Entry:
        """Record a link member and return its entry (a hard link's size is its target's)."""
        kind: Literal["symlink", "hardlink"] = "hardlink" if hard else "symlink"
        self.add(member, raw, kind)
        resolved = self.resolve(member, raw, target, hard)
        size = self.sizes.get(resolved, 0) if hard else 0
        self.sizes[member] = size
        return Entry(member, kind, size, resolved)


def _zlib_reason(err: zlib.error) -> str:
    """``Error -3 while decompressing data: invalid code lengths set`` -> a plain reason."""
    detail = str(err).rpartition(": ")[2]
    return f"corrupt compressed data ({detail})" if detail else "corrupt compressed data"


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

    def _add(self, name: str, size: int) -> None:
        self.total += size
        if self.total > self.limits.max_total_bytes:
            raise ArchiveError(
                self.archive,
                f"the archive expands to more than {self.limits.max_total_bytes} bytes (limit; "
                "decompression bomb?)",
                name,
            )

    def _ratio(self, name: str, what: str) -> None:
        if self.total > RATIO_FLOOR and self.total > self.limits.max_ratio * self.compressed:
            raise ArchiveError(
                self.archive,
                f"{what} more than {self.limits.max_ratio:.0f} times its compressed size "
                "(decompression bomb?)",
                name,
            )

    def copied(self, name: str, size: int) -> None:
        """A hard link's copy: bytes written that take no room in the archive, so they count
        against the total and, whatever the format, against the whole-archive ratio."""
        self._add(name, size)
        self._ratio(name, "with its hard-link copies, the archive expands")

    def guard(self, name: str, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """The member's bytes, with decoding failures turned into :class:`ArchiveError`."""
        try:
            yield from chunks
        except zlib.error as err:
            raise ArchiveError(self.archive, _zlib_reason(err), name) from err
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, ValueError) as err:
            raise ArchiveError(self.archive, f"corrupt member data: {err}", name) from err

    def stream(self, name: str, chunks: Iterator[bytes], declared: int, whole_ratio: bool) -> Iterator[bytes]:
        seen = 0
        for chunk in self.guard(name, chunks):
            seen += len(chunk)
            if seen > declared:
                raise ArchiveError(
                    self.archive, f"holds more bytes than its header declares ({declared})", name
                )
            self._add(name, len(chunk))
            if whole_ratio:
                self._ratio(name, "the archive expands")
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
    tree = _Tree(label)
    try:
        if kind == "zip":
            yield from _walk_zip(path, label, limits, budget, tree)
        else:
            yield from _walk_tar(path, label, budget, tree, gz=kind == "tar.gz")
    except zlib.error as err:
        raise ArchiveError(label, _zlib_reason(err)) from err
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as err:
        raise ArchiveError(label, f"corrupt archive: {err}") from err
    except (ValueError, NotImplementedError) as err:  # zlib/zipfile complaints about the data
        raise ArchiveError(label, f"cannot read: {err}") from err


def _zip_chunks(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Iterator[bytes]:
    with zf.open(info) as fh:
        while chunk := fh.read(_CHUNK):
            yield chunk


def _walk_zip(path: Path, label: str, limits: Limits, budget: _Budget, tree: _Tree) -> Iterator[Entry]:
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        if len(infos) > limits.max_members:
            raise ArchiveError(label, f"{len(infos)} members, more than the limit {limits.max_members}")
        for info in infos:
            budget.member(info.filename)
            # zipfile cuts a name at its first NUL; the name as the central directory holds it
            # is orig_filename, so a NUL is refused instead of silently naming another member.
            if "\x00" in info.orig_filename:
                raise ArchiveError(label, "NUL byte in the member name", info.orig_filename)
            mode = info.external_attr >> 16
            if info.is_dir():
                if (member := _dir_path(info.filename, label)) is not None:
                    tree.add(member, info.filename, "dir")
                    yield Entry(member, "dir", 0)
                continue
            member = safe_member_path(info.filename, label)
            if info.flag_bits & 0x1:
                raise ArchiveError(label, "encrypted member: its bytes cannot be verified", info.filename)
            if mode and (
                stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
            ):
                raise ArchiveError(label, "special file (device, FIFO or socket)", info.filename)
            if mode and stat.S_ISLNK(mode):
                if info.file_size > 4096:
                    raise ArchiveError(label, "symbolic link target longer than 4096 bytes", info.filename)
                raw = b"".join(budget.guard(info.filename, _zip_chunks(zf, info)))
                yield tree.link(member, info.filename, raw.decode("utf-8", errors="replace"), hard=False)
                continue
            tree.add(member, info.filename, "file", info.file_size)
            budget.declared(info.filename, info.file_size, info.compress_size)
            chunks = budget.stream(info.filename, _zip_chunks(zf, info), info.file_size, False)
            yield Entry(member, "file", info.file_size, None, chunks)


def _walk_tar(path: Path, label: str, budget: _Budget, tree: _Tree, gz: bool) -> Iterator[Entry]:
    with path.open("rb") as raw, tarfile.open(fileobj=raw, mode="r|gz" if gz else "r|") as tf:
        for info in tf:
            budget.member(info.name)
            if info.isdir():
                if (member := _dir_path(info.name, label)) is not None:
                    tree.add(member, info.name, "dir")
                    yield Entry(member, "dir", 0)
                continue
            member = safe_member_path(info.name, label)
            if info.issym() or info.islnk():
                entry = tree.link(member, info.name, info.linkname, hard=info.islnk())
                if info.islnk():
                    budget.copied(info.name, entry.size)
                yield entry
                continue
            if not info.isfile():
                raise ArchiveError(label, "special file (device, FIFO or socket)", info.name)
            tree.add(member, info.name, "file", info.size)
            budget.declared(info.name, info.size)
            fh = tf.extractfile(info)

            def chunks(fh: IO[bytes] | None = fh) -> Iterator[bytes]:
                if fh is None:
                    return
                while chunk := fh.read(_CHUNK):
                    yield chunk

            yield Entry(member, "file", info.size, None, budget.stream(info.name, chunks(), info.size, gz))


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _copy(source: Path, target: Path) -> None:
    """Copy an extracted file for a hard link, following no link at either end."""
    fd = os.open(source, os.O_RDONLY | _NOFOLLOW)
    with os.fdopen(fd, "rb") as src, open(target, "xb") as out:
        while chunk := src.read(_CHUNK):
            out.write(chunk)


def extract(path: Path, dest: Path, limits: Limits | None = None, name: str | None = None) -> list[Entry]:
    """Extract an archive into the empty folder ``dest`` after checking every member.

    In-tree symbolic links become symbolic links, hard links become copies. No path is
    followed through a link (:class:`_Tree` refuses such archives; the checks here are a
    second line), so nothing is read or written outside ``dest``. Returns the entries
    (their chunk streams consumed).
    """
    label = name or path
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise ArchiveError(label, f"extraction folder {dest} is not empty")
    entries = []
    root = dest.resolve()
    for entry in walk(path, limits, name):
        target = root / entry.path
        if not target.parent.resolve().is_relative_to(root) or target.is_symlink():
            raise ArchiveError(label, "would be written outside the extraction folder", entry.path)
        try:
            if entry.kind == "dir":
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if entry.kind == "file":
                with open(target, "xb") as fh:  # x: never through an existing link
                    for chunk in entry.chunks():
                        fh.write(chunk)
            elif entry.kind == "symlink":
                os.symlink(posixpath.relpath(entry.link or ".", posixpath.dirname(entry.path) or "."), target)
            else:  # hardlink: a copy of an earlier member
                source = root / (entry.link or "")
                if source.is_symlink() or not source.parent.resolve().is_relative_to(root):
                    raise ArchiveError(
                        label, f"hard link to {entry.link!r} leaves the extraction folder", entry.path
                    )
                _copy(source, target)
        except OSError as err:
            raise ArchiveError(label, f"cannot extract: {err.strerror or err}", entry.path) from err
        entries.append(entry)
    return entries
