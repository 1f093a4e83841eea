"""The importer framework's types: the :class:`Importer` base class, the
:class:`ImportContext` it writes through, :class:`Source`/:class:`Member`, :class:`Problem`,
the detection scores and the progress hook the engine drives.

Importer authors import these from :mod:`provgraph.ingest.api`; the engine modules of
``ingest/`` import them from here, so that the facade can re-export helpers (readers,
patients) that themselves build on these types without an import cycle.
"""

from __future__ import annotations

import os
import re
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal, overload

from provgraph.bundle.layout import Bundle
from provgraph.errors import ProvgraphError
from provgraph.rdf.terms import IRI, TripleWriter, mint

# Scores an importer's detect() returns. 0 = not mine, FALLBACK = anything no one else claims.
NO = 0
FALLBACK = 1
MAYBE = 50
LIKELY = 80
CERTAIN = 100

#: A relative POSIX path with no empty, '.' or '..' segment: already normalised.
_PLAIN_REL = re.compile(r"(?!\.\.?(?:/|$))[^/\\]+(?:/(?!\.\.?(?:/|$))[^/\\]+)*")


@dataclass(frozen=True)
class Member:
    """One file inside a source tree."""

    rel: str
    sha256: str
    size: int


class Members(Sequence[Member]):
    """A tree's files, in order, held as its SHA256SUMS-style manifest (``"<sha256>  <rel>\\n"``
    per file, UTF-8) and an array of sizes, and read as :class:`Member` objects on demand.

    A :class:`Member` per file, with its two strings, took about 260 bytes, and at 10^6 calls
    the output folder alone holds a million files (the ingest's peak grew from 436 MiB at 10^5
    to 1,077 MiB); a manifest line and a size take about 130 (bench/README.md, twelfth run).
    """

    __slots__ = ("_sizes", "_starts", "_text")

    def __init__(self, files: Iterable[tuple[str, str, int]] = ()) -> None:
        text, starts, sizes = bytearray(), array("Q"), array("Q")
        for rel, sha256, size in files:
            starts.append(len(text))
            text += f"{sha256}  {rel}\n".encode()
            sizes.append(size)
        starts.append(len(text))
        self._text, self._starts, self._sizes = bytes(text), starts, sizes

    @property
    def manifest(self) -> bytes:
        """The manifest text whose SHA-256 is the tree's digest."""
        return self._text

    @property
    def size(self) -> int:
        """The files' bytes together."""
        return sum(self._sizes)

    def __len__(self) -> int:
        return len(self._sizes)

    def _member(self, i: int) -> Member:
        # (offsets, not a split on line ends: a file name may hold a newline)
        line = self._text[self._starts[i] : self._starts[i + 1] - 1]
        return Member(line[66:].decode(), line[:64].decode("ascii"), self._sizes[i])

    @overload
    def __getitem__(self, i: int) -> Member: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[Member, ...]: ...
    def __getitem__(self, i: int | slice) -> Member | tuple[Member, ...]:
        if isinstance(i, slice):
            return tuple(self._member(j) for j in range(*i.indices(len(self))))
        n = len(self)
        if not -n <= i < n:
            raise IndexError("member index out of range")
        return self._member(i % n)

    def __iter__(self) -> Iterator[Member]:
        return (self._member(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Members):
            return self._text == other._text and self._sizes == other._sizes
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:  # as the equal tuple's (a Source is hashed as a whole, if ever)
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Members({len(self)} files)"


@dataclass(frozen=True)
class Source:
    """A file, or a folder read as a whole, with the digest of its exact bytes."""

    path: Path
    rel: str
    kind: Literal["file", "tree"]
    sha256: str
    size: int
    members: Sequence[Member] = ()


@dataclass(frozen=True)
class Problem:
    """A record an importer rejected (or a path it could not read); with ``kept``, a record it
    imported all the same, with something the reader should know (:meth:`ImportContext.note`)."""

    path: str
    line: int | None
    reason: str
    kept: bool = False

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.reason}"


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
        self.bundle_root = bundle.root
        self.source = source
        self.importer = importer
        self.base = bundle.contract.base_iri
        self._writer = writer
        self.add = writer.add
        #: Triples formatted elsewhere (a worker process's own TripleWriter): text and count.
        self.add_lines = writer.add_lines
        self.problems: list[Problem] = []
        self.records = 0
        self._progress = progress
        self.source_iri = self.file_iri(source.rel)
        self.contract_iri = self.iri("contract", "main")
        self.import_iri = self.iri("import", importer.name, *source.rel.split("/"))

    def iri(self, kind: str, *keys: object) -> IRI:
        """Mint a node IRI under the project's base IRI (see :func:`provgraph.rdf.terms.mint`)."""
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

    def note(self, line: int | None, reason: str) -> None:
        """Report something about a record that is imported all the same (a tag it lacks, text
        that did not decode): listed as a note, it does not make ``ingest`` exit 2."""
        self.problems.append(Problem(self.source.rel, line, reason, kept=True))

    def record(self) -> None:
        """Count one accepted record."""
        self.records += 1

    def advance(self, nbytes: int) -> None:
        self._progress.advance(nbytes)


def tree_rels(bundle: Bundle, folder: Path) -> list[str]:
    """Bundle paths of the files under ``folder`` that are not excluded, sorted
    (:meth:`Bundle.files_under`)."""
    return bundle.files_under(folder)


def tree_members(bundle: Bundle, folder: Path) -> list[Path]:
    """Files under ``folder`` that are not excluded, sorted by path."""
    return [bundle.resolve(r) for r in tree_rels(bundle, folder)]
