"""Scans of one triple pattern, joined in numpy on integer keys of their IRIs.

A SPARQL join of millions of solutions makes the engine hold a hash table per sub-select: at
10^5 calls the candidate-label-row query alone raised the refresh's resident memory by 350 MB,
and the plan query by 140 MB, growing with the calls. A scan of one pattern streams in
constant memory, so the statistics engine reads each property it needs as columns and joins
them here.

Each IRI (or literal) becomes a pair of 64-bit keys: Python's string hash and the hash of the
string with a separator appended (keyed SipHash, two independent values). Joins match on the
first key and check the second, so two strings sharing a first key raise
:class:`CannotScan` instead of being joined; the caller then reads the store by the join.
The strings themselves are only kept where a caller needs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from provgraph.stats.query import stream
from provgraph.store.base import Store

SALT = "\x1f"
BATCH = 1 << 14  # rows hashed at a time (bounds the strings held while hashing: 45 MiB at 1 << 16)


class CannotScan(Exception):
    """The scans cannot stand for the join: two different strings share a first key, or a
    value the join would only meet on some rows does not convert."""


@dataclass
class Keys:
    """First and second keys of a column of strings."""

    a: np.ndarray
    b: np.ndarray

    def __len__(self) -> int:
        return int(self.a.size)

    def take(self, idx: np.ndarray) -> Keys:
        return Keys(self.a[idx], self.b[idx])


def keys_of(strings: list[str]) -> Keys:
    return Keys(
        np.fromiter(map(hash, strings), dtype=np.int64, count=len(strings)),
        np.fromiter((hash(s + SALT) for s in strings), dtype=np.int64, count=len(strings)),
    )


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def scan(
    store: Store, query: str, values: Callable[[str], int] | None = None
) -> tuple[Keys, Keys | np.ndarray]:
    """Rows ``(?s ?o)`` of a one-pattern query: the subjects' keys, and the objects' keys
    (``values`` None) or ``values(object)`` (an integer code; rows with an unbound object are
    skipped)."""
    sa: list[np.ndarray] = []
    sb: list[np.ndarray] = []
    oa: list[np.ndarray] = []
    ob: list[np.ndarray] = []
    for subjects, objects in _batches(stream(store, query)):
        s = keys_of(subjects)
        sa.append(s.a)
        sb.append(s.b)
        if values is None:
            o = keys_of(objects)
            oa.append(o.a)
            ob.append(o.b)
        else:
            oa.append(np.fromiter(map(values, objects), dtype=np.int64, count=len(objects)))
    subject = Keys(_concat(sa), _concat(sb))
    return subject, (Keys(_concat(oa), _concat(ob)) if values is None else _concat(oa))


def _batches(rows: Iterator[tuple[str | None, ...]]) -> Iterator[tuple[list[str], list[str]]]:
    subjects: list[str] = []
    objects: list[str] = []
    for s, o in rows:
        if s is None or o is None:
            continue
        subjects.append(s)
        objects.append(o)
        if len(subjects) == BATCH:
            yield subjects, objects
            subjects, objects = [], []
    if subjects:
        yield subjects, objects


class Table:
    """A set of distinct keys to look other keys up in (duplicates of one string are merged)."""

    def __init__(self, keys: Keys) -> None:
        order = np.argsort(keys.a, kind="stable")
        a, b = keys.a[order], keys.b[order]
        same = a[1:] == a[:-1]
        if np.any(same & (b[1:] != b[:-1])):
            raise CannotScan("two strings share a first key")
        first = np.concatenate([[True], ~same]) if a.size else np.zeros(0, dtype=bool)
        self.a, self.b = a[first], b[first]
        self.first = order[first]  # position in ``keys`` of each distinct key's first row

    def find(self, keys: Keys) -> np.ndarray:
        """For each key, the row of the table's keys where its string first occurs; -1 where
        it does not occur."""
        if not self.a.size:
            return np.full(len(keys), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.a, keys.a), self.a.size - 1)
        hit = self.a[pos] == keys.a
        if np.any(hit & (self.b[pos] != keys.b)):
            raise CannotScan("two strings share a first key")
        return np.where(hit, self.first[pos], -1)


def column(store: Store, query: str) -> tuple[list[str], Keys]:
    """The values of a one-variable query and their keys."""
    values = [v for (v,) in stream(store, query) if v is not None]
    return values, keys_of(values)


def first_value(ids: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per id 0..n-1, the value of its first row (-1 where it has none)."""
    out = np.full(n, -1, dtype=np.int64)
    rows = np.flatnonzero(ids >= 0)
    found, first = np.unique(ids[rows], return_index=True)
    out[found] = values[rows[first]]
    return out


def pairs(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (i, j) with ``left[i] == right[j] >= 0``, i ascending (a many-to-many join of
    table positions)."""
    keep = np.flatnonzero(right >= 0)
    order = keep[np.argsort(right[keep], kind="stable")]
    sorted_right = right[order]
    lo = np.searchsorted(sorted_right, left, side="left")
    hi = np.searchsorted(sorted_right, left, side="right")
    hi = np.where(left >= 0, hi, lo)
    count = hi - lo
    i = np.repeat(np.arange(left.size), count)
    start = np.repeat(lo - np.cumsum(count) + count, count)
    j = order[start + np.arange(i.size)] if i.size else np.empty(0, dtype=np.int64)
    return i, j


class Codes:
    """Strings to dense integer codes, in first-seen order, each string kept once."""

    def __init__(self, convert: Callable[[str], str] | None = None) -> None:
        self.code: dict[str, int] = {}
        self.names: list[str] = []
        self._convert = convert
        self._raw: dict[str, int] = {}

    def __call__(self, raw: str) -> int:
        code = self._raw.get(raw)
        if code is None:
            name = self._convert(raw) if self._convert else raw
            code = self.code.get(name)
            if code is None:
                code = self.code[name] = len(self.names)
                self.names.append(name)
            self._raw[raw] = code
        return code


# --- (case, condition, replicate) keys of nodes ---------------------------------------------------


@dataclass
class KeyScans:
    """Every ``pg:case``, ``pg:condition`` and ``pg:replicate`` statement: subject keys and the
    object's code (case and condition codes index their :class:`Codes`; replicates as numbers)."""

    cases: Codes
    conditions: Codes
    case: tuple[Keys, np.ndarray]
    condition: tuple[Keys, np.ndarray]
    replicate: tuple[Keys, np.ndarray]


def key_scans(store: Store, case_key: Callable[[str], str], cond_key: Callable[[str], str]) -> KeyScans:
    cases, conditions = Codes(case_key), Codes(cond_key)
    case = scan(store, "SELECT ?s ?o WHERE { ?s pg:case ?o }", cases)
    condition = scan(store, "SELECT ?s ?o WHERE { ?s pg:condition ?o }", conditions)
    replicate = scan(store, "SELECT ?s ?o WHERE { ?s pg:replicate ?o }", _replicate)
    return KeyScans(cases, conditions, case, condition, replicate)  # type: ignore[arg-type]


def _replicate(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        # the join converts only the replicates of the nodes it reaches
        raise CannotScan(f"replicate {value!r} is not a whole number") from None


def slots_of(ks: KeyScans, table: Table, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every (id, case, condition, replicate) combination of the nodes 0..n-1 of ``table`` that
    have a case and a condition, as a join of the three patterns would give it (replicate 1
    for a node without one)."""
    case_ids = table.find(ks.case[0])
    cond_ids = table.find(ks.condition[0])
    rep_ids = table.find(ks.replicate[0])
    i, jc = pairs(np.arange(n), case_ids)
    t, jd = pairs(i, cond_ids)
    ids, case, cond = i[t], ks.case[1][jc[t]], ks.condition[1][jd]
    u, jr = pairs(ids, rep_ids)
    has_rep = np.zeros(n, dtype=bool)
    has_rep[rep_ids[rep_ids >= 0]] = True
    bare = np.flatnonzero(~has_rep[ids])
    return (
        np.concatenate([ids[u], ids[bare]]),
        np.concatenate([case[u], case[bare]]),
        np.concatenate([cond[u], cond[bare]]),
        np.concatenate([ks.replicate[1][jr], np.ones(bare.size, dtype=np.int64)]),
    )
