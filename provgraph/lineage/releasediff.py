"""What changed between two releases: numbers, names and files, with file:line on both sides.

Read from the store (:mod:`provgraph.lineage.history`), never from the files again. Within one
file of the release (the same member path in both), numbers and names written in both are
unchanged (one occurrence each, the same line first); what is left is paired on the same line
in reading order (a changed value: ``123.02`` became ``121.95``; a changed name: ``GPT-4V``
became ``GPT-4o``, names paired by their registry entity), then by the statistic name a number
is labelled with; anything still unpaired appeared in B or disappeared from A. A file is
changed when its SHA-256 differs. A diff is a listing, not a gate.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from provgraph.lineage.history import Contents, Item, Release, contents, find_release
from provgraph.lineage.trace import trace
from provgraph.store.base import Store


@dataclass(frozen=True)
class Change:
    change: str  # changed, appeared, disappeared
    member: str
    a: Item | None
    b: Item | None


@dataclass(frozen=True)
class FileChange:
    change: str
    path: str
    a: str | None  # sha256 in A
    b: str | None


@dataclass
class Diff:
    a: Release
    b: Release
    numbers: list[Change]
    names: list[Change]
    files: list[FileChange]
    unread: list[str]  # ids of the releases whose texts were not read: numbers and names not compared
    statuses: dict[str, str] = field(default_factory=dict)  # claim IRI -> its lineage claim status

    def to_dict(self) -> dict[str, Any]:
        """The documented ``diff --format json`` document."""

        def side(release: Release, item: Item | None, number: bool) -> dict[str, Any] | None:
            if item is None:
                return None
            doc: dict[str, Any] = {
                "file": release.location(item.member),
                "line": item.line,
                "text": item.text,
            }
            if number:
                doc.update(registry=item.registry, status=self.statuses.get(item.iri), statistic=item.key)
            else:
                doc["entity"] = item.key
            return doc

        def changes(found: list[Change], number: bool) -> list[dict[str, Any]]:
            return [
                {
                    "change": c.change,
                    "member": c.member,
                    "a": side(self.a, c.a, number),
                    "b": side(self.b, c.b, number),
                }
                for c in found
            ]

        return {
            "a": {"id": self.a.id, "kind": self.a.kind, "label": self.a.label},
            "b": {"id": self.b.id, "kind": self.b.kind, "label": self.b.label},
            "numbers": changes(self.numbers, True),
            "names": changes(self.names, False),
            "files": [{"change": f.change, "path": f.path, "a": f.a, "b": f.b} for f in self.files],
            "texts_not_read": self.unread,
            "counts": {
                "numbers": len(self.numbers),
                "names": len(self.names),
                "files": len(self.files),
            },
        }


def diff_releases(store: Store, a: str, b: str) -> Diff:
    """Compare the releases ``a`` and ``b`` name (see :func:`find_release`)."""
    left, right = contents(store, find_release(store, a)), contents(store, find_release(store, b))
    found = compare(left, right)
    found.statuses = claim_statuses(store, found)
    return found


def claim_statuses(store: Store, found: Diff) -> dict[str, str]:
    """The lineage claim status (retained .. withdrawn) of every number the diff lists, from
    the last recorded check, as ``provgraph lineage --no-check`` gives it; one trace per listed
    number, so the cost follows what changed, not the size of the releases."""
    listed = {i.iri for c in found.numbers for i in (c.a, c.b) if i is not None}
    return {iri: trace(store, iri).status for iri in sorted(listed)}


def compare(left: Contents, right: Contents) -> Diff:
    """The changes from ``left`` to ``right``; numbers and names only when both texts were read
    (an older git tag's were not: every number would look as if it appeared)."""
    unread = [c.release.id for c in (left, right) if not c.texts_read]
    if unread:
        left = Contents(left.release, left.files, [], [], False)
        right = Contents(right.release, right.files, [], [], False)
    numbers = _items(left.numbers, right.numbers, lambda i: i.text, lambda i: (i.line, _shape(i.text)))
    names = _items(left.names, right.names, lambda i: (i.key, i.text), lambda i: (i.line, i.key))
    files = []
    for path in sorted(left.files.keys() | right.files.keys()):
        x, y = left.files.get(path, "-"), right.files.get(path, "-")
        if path not in right.files:
            files.append(FileChange("disappeared", path, x, None))
        elif path not in left.files:
            files.append(FileChange("appeared", path, None, y))
        elif x != y:
            files.append(FileChange("changed", path, x, y))
    return Diff(left.release, right.release, numbers, names, files, unread)


def _shape(text: str) -> str:
    """A percentage pairs with a percentage, a count k/n with a count: not 44.4% with 21/45."""
    return "%" if text.endswith("%") else "k/n" if "/" in text else "x"


def _items(
    a: list[Item],
    b: list[Item],
    same: Callable[[Item], object],
    on_line: Callable[[Item], object],
) -> list[Change]:
    """The changes between two lists of items, file by file (see the module docstring)."""
    by_member: dict[str, tuple[list[Item], list[Item]]] = defaultdict(lambda: ([], []))
    for item in a:
        by_member[item.member][0].append(item)
    for item in b:
        by_member[item.member][1].append(item)
    found: list[Change] = []
    for member in sorted(by_member):
        left, right = _drop_common(*by_member[member], same)
        pairs, left, right = _pair(left, right, on_line)
        # a line moved: a number labelled with the same statistic, a name of the same entity
        more, left, right = _pair(left, right, lambda i: i.key or object())
        found += [Change("changed", member, x, y) for x, y in pairs + more]
        found += [Change("disappeared", member, x, None) for x in left]
        found += [Change("appeared", member, None, y) for y in right]
    order = {"changed": 0, "disappeared": 1, "appeared": 2}
    found.sort(key=lambda c: (c.member, (c.a or c.b).line, order[c.change], (c.a or c.b).column))  # type: ignore[union-attr]
    return found


def _drop_common(
    a: list[Item], b: list[Item], same: Callable[[Item], object]
) -> tuple[list[Item], list[Item]]:
    """``a`` and ``b`` without the items both write (each paired once, the same line first)."""
    left: dict[object, list[Item]] = defaultdict(list)
    for item in a:
        left[same(item)].append(item)
    kept_b: list[Item] = []
    dropped: set[int] = set()
    pending: list[Item] = []
    for item in b:  # first pass: the same text on the same line
        match = next((x for x in left[same(item)] if x.line == item.line and id(x) not in dropped), None)
        if match is None:
            pending.append(item)
        else:
            dropped.add(id(match))
    for item in pending:  # then the same text anywhere in the file (a line moved)
        match = next((x for x in left[same(item)] if id(x) not in dropped), None)
        if match is None:
            kept_b.append(item)
        else:
            dropped.add(id(match))
    kept_a = [x for x in a if id(x) not in dropped]
    kept_b.sort(key=lambda i: (i.line, i.column))
    return kept_a, kept_b


def _pair(
    a: list[Item], b: list[Item], group: Callable[[Item], object]
) -> tuple[list[tuple[Item, Item]], list[Item], list[Item]]:
    """Pair the items of ``a`` and ``b`` with the same ``group`` in reading order."""
    groups: dict[object, list[Item]] = defaultdict(list)
    for item in b:
        groups[group(item)].append(item)
    pairs: list[tuple[Item, Item]] = []
    rest_a: list[Item] = []
    for item in a:
        bucket = groups.get(group(item))
        if bucket:
            pairs.append((item, bucket.pop(0)))
        else:
            rest_a.append(item)
    paired = {id(y) for _, y in pairs}
    return pairs, rest_a, [y for y in b if id(y) not in paired]
