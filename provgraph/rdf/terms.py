"""RDF terms as plain Python values, the one IRI-minting function, and the N-Triples writer.

Importers speak in three kinds of values: :class:`IRI` (a ``str`` subclass) for nodes,
plain Python values (``str``, ``int``, ``float``, ``bool``, ``Decimal``, ``datetime``) for
literals, and :class:`Lit` for a literal with an explicit datatype. Keeping terms as strings
makes the writer fast enough for bulk ingest (no per-term objects from an RDF library).
"""

from __future__ import annotations

import datetime as _dt
import re
from decimal import Decimal
from typing import IO, NamedTuple
from urllib.parse import quote

XSD = "http://www.w3.org/2001/XMLSchema#"

_KIND = re.compile(r"^[a-z][a-z0-9-]*$")
# Percent-encode everything outside RFC 3986 "unreserved": no key can inject '>', quotes,
# spaces, '/', '#', '?' or anything else that could break an IRI or a query.
_SAFE = "-._~"
_PLAIN = re.compile(r"[A-Za-z0-9._~-]+")


class IRI(str):
    """An absolute IRI. Being a ``str`` subclass lets IRIs be used wherever strings are."""

    __slots__ = ()


class Lit(NamedTuple):
    """A literal with an explicit datatype IRI (use plain Python values for the common ones)."""

    lexical: str
    datatype: str


def escape_key(key: object) -> str:
    """Escape one scientific key component for use as an IRI path segment.

    >>> escape_key("s50414267")
    's50414267'
    >>> escape_key("a b/c>")
    'a%20b%2Fc%3E'
    >>> escape_key("..")
    '%2E%2E'
    """
    text = key if type(key) is str else str(key)
    done = _ESCAPED.get(text)
    if done is not None:  # a key repeated on every record (a source path, a condition)
        return done
    if len(_ESCAPED) >= _ESCAPED_MAX:  # bounded: unique keys (ids) only pass through
        _ESCAPED.clear()
    done = _escape(text)
    if len(text) <= 256:  # long text is rare as a key: not kept
        _ESCAPED[text] = done
    return done


_ESCAPED: dict[str, str] = {}
_ESCAPED_MAX = 4096


def _escape(text: str) -> str:
    if _PLAIN.fullmatch(text) and text not in (".", ".."):  # most keys: nothing to escape
        return text
    if text == "":
        raise ValueError("an IRI key component must not be empty")
    if text in (".", ".."):
        # Dot segments would be collapsed by IRI resolution and collide with the parent.
        return text.replace(".", "%2E")
    return quote(text, safe=_SAFE)


def mint(base: str, kind: str, *keys: object) -> IRI:
    """Mint a node IRI from scientific keys. This is the only way node IRIs are made.

    ``kind`` names the node kind (``case``, ``call``, ``file``...); each key is escaped on
    its own, so ``("a/b",)`` and ``("a", "b")`` never collide.

    >>> mint("https://example.org/p/", "case", "s1", "PA")
    'https://example.org/p/case/s1/PA'
    """
    if kind not in _KINDS:
        if not _KIND.match(kind):
            raise ValueError(f"node kind {kind!r} must match {_KIND.pattern}")
        _KINDS.add(kind)  # a handful of kinds: checked once each, not once per node
    if not keys:
        raise ValueError(f"a {kind} IRI needs at least one key")
    # ASCII letters and digits are unreserved: most keys (ids, numbers) skip escape_key's regex
    return IRI(
        base
        + kind
        + "/"
        + "/".join([k if type(k) is str and k.isalnum() and k.isascii() else escape_key(k) for k in keys])
    )


_KINDS: set[str] = set()


_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"})


def _escaped(text: str) -> str:
    """``text`` with N-Triples string escapes; four C-level scans spare the per-character
    ``translate`` for the usual string that holds none of them."""
    if '"' in text or "\\" in text or "\n" in text or "\r" in text:
        return text.translate(_ESCAPES)
    return text


def literal(value: object) -> str:
    """Format a Python value as an N-Triples literal.

    >>> literal('say "hi"')
    '"say \\\\"hi\\\\""'
    >>> literal(3)
    '"3"^^<http://www.w3.org/2001/XMLSchema#integer>'
    >>> literal(Decimal("1E-9"))
    '"0.000000001"^^<http://www.w3.org/2001/XMLSchema#decimal>'
    """
    t = type(value)
    if t is str:
        return '"' + _escaped(value) + '"'  # type: ignore[arg-type]
    if t is bool:
        return f'"{"true" if value else "false"}"^^<{XSD}boolean>'
    if t is int:
        return f'"{value}"^^<{XSD}integer>'
    if t is float:
        if value != value:  # NaN
            lex = "NaN"
        elif value in (float("inf"), float("-inf")):
            lex = "INF" if value > 0 else "-INF"
        else:
            lex = repr(value)
        return f'"{lex}"^^<{XSD}double>'
    if t is Decimal:
        if not value.is_finite():  # type: ignore[attr-defined]
            raise TypeError(f"cannot write {value!r} as xsd:decimal (not a finite number)")
        # str() would give '1E-9', which is not xsd:decimal's lexical form: write it positionally
        return f'"{format(value, "f")}"^^<{XSD}decimal>'
    if t is _dt.datetime:
        return f'"{value.isoformat()}"^^<{XSD}dateTime>'  # type: ignore[attr-defined]
    if t is _dt.date:
        return f'"{value.isoformat()}"^^<{XSD}date>'  # type: ignore[attr-defined]
    if t is Lit:
        return '"' + value.lexical.translate(_ESCAPES) + f'"^^<{value.datatype}>'  # type: ignore[attr-defined]
    raise TypeError(f"cannot write {t.__name__} value {value!r} as an RDF literal")


def term(value: object) -> str:
    """Format an IRI or a literal value in N-Triples form."""
    if type(value) is IRI:
        return f"<{value}>"
    return literal(value)


#: One triple as N-Triples UTF-8: the store's parser holds at most 16 MiB of one term.
MAX_TRIPLE_BYTES = 15 * 1024 * 1024
_SURROGATE = re.compile("[\ud800-\udfff]")


class UnstorableValue(ValueError):
    """A value no store can hold: a lone surrogate (not UTF-8 text) or over :data:`MAX_TRIPLE_BYTES`."""


def storable_problem(line: str) -> str | None:
    """Why the N-Triples ``line`` cannot be stored, or None (the slow path of the writer)."""
    found = _SURROGATE.search(line)
    if found:
        return f"a string holds a lone surrogate \\u{ord(found.group()):04x}: not storable as UTF-8 text"
    if len(line) * 4 > MAX_TRIPLE_BYTES:
        size = len(line.encode("utf-8"))
        if size > MAX_TRIPLE_BYTES:
            limit = MAX_TRIPLE_BYTES >> 20
            return f"a value of {size} bytes: over {limit} MiB, the limit for one stored value"
    return None


class TripleWriter:
    """Streams triples as N-Triples text into a file object and counts them.

    Every triple goes through :meth:`add`, so this is where a value no store can hold is
    refused (:class:`UnstorableValue`, before anything of that triple is written).
    """

    def __init__(self, fh: IO[str]) -> None:
        self._write = fh.write
        self.count = 0

    def add(self, s: IRI, p: IRI, o: object) -> None:
        """Write one triple; ``o`` is an :class:`IRI` or a literal value. ``None`` is skipped."""
        if o is None:
            return
        self._write(_line(s, p, o))
        self.count += 1

    def add_lines(self, text: str, count: int) -> None:
        """Write ``count`` triples another :class:`TripleWriter` formatted (and checked), e.g. in
        a worker process that parsed files in parallel."""
        self._write(text)
        self.count += count

    def flush(self) -> None:
        """Hand on what is held back (nothing: this writer writes each triple at once)."""


class BatchWriter(TripleWriter):
    """A :class:`TripleWriter` that hands its lines to the file object in batches of
    :data:`BATCH` (one ``write`` of the joined text), for a file object whose ``write`` is
    Python code (the store's streaming loader): call :meth:`flush` at the end."""

    def __init__(self, fh: IO[str]) -> None:
        super().__init__(fh)
        self._lines: list[str] = []
        self._append = self._lines.append
        self._written = 0

    @property  # type: ignore[override]
    def count(self) -> int:
        return self._written + len(self._lines)

    @count.setter
    def count(self, value: int) -> None:  # TripleWriter.__init__ sets it
        self._written = value

    def add(self, s: IRI, p: IRI, o: object) -> None:
        """Write one triple; ``o`` is an :class:`IRI` or a literal value. ``None`` is skipped."""
        if o is None:
            return
        # _line's body, inlined: this runs once per triple of every import
        t = type(o)
        if t is IRI:
            line = f"<{s}> <{p}> <{o}> .\n"
        elif t is str:
            if '"' in o or "\\" in o or "\n" in o or "\r" in o:  # type: ignore[operator]
                o = o.translate(_ESCAPES)  # type: ignore[attr-defined]
            line = f'<{s}> <{p}> "{o}" .\n'
        else:
            line = f"<{s}> <{p}> {literal(o)} .\n"
        if not line.isascii() or len(line) > _ASCII_FAST:
            reason = storable_problem(line)
            if reason:
                raise UnstorableValue(reason)
        lines = self._lines
        lines.append(line)
        if len(lines) >= BATCH:
            self.flush()

    def add_lines(self, text: str, count: int) -> None:
        self.flush()
        self._write(text)
        self._written += count

    def flush(self) -> None:
        lines = self._lines
        if lines:
            self._write("".join(lines))
            self._written += len(lines)
            lines.clear()


#: Lines a :class:`BatchWriter` holds back (about 100 KiB of usual N-Triples).
BATCH = 1024


def _line(s: IRI, p: IRI, o: object) -> str:
    """One N-Triples line, checked: :class:`UnstorableValue` for a value no store can hold."""
    t = type(o)
    if t is IRI:
        line = f"<{s}> <{p}> <{o}> .\n"
    elif t is str:
        line = f'<{s}> <{p}> "{_escaped(o)}" .\n'  # type: ignore[arg-type]
    else:
        line = f"<{s}> <{p}> {literal(o)} .\n"
    # isascii() and len() are O(1): the usual short ASCII line costs nothing more.
    if not line.isascii() or len(line) > _ASCII_FAST:
        reason = storable_problem(line)
        if reason:
            raise UnstorableValue(reason)
    return line


_ASCII_FAST = MAX_TRIPLE_BYTES // 4  # a line this short cannot be over the limit in UTF-8
