"""The release history in the store: every named release and what it holds.

A release is a released archive (a zip or tar the archives importer read: a ``release build``
output in ``dist/`` as much as an archive someone published by hand) or a git tag (the git
importer's ``pg:Tag``, peeled to its commit). Each is read from the graph its importer wrote:
its files (member path and SHA-256), the numbers its texts write (``pg:Claim``, with the
registry status of the value each matches) and the registry names they mention
(``pg:Mention``), each with its line. Only texts ``[release].texts`` matches were read for
claims; a git tag's texts are read at the release tag the contract's version names (see
:mod:`provgraph.importers.git`), so older tags contribute their files only.

A release is named by its id (``archive:PATH``, ``tag:NAME`` or ``tag:REPO@NAME``), its
archive path, file name or file name without suffix, or its tag name (``REPO@NAME`` in a nested
repository).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

import pyoxigraph as ox

from provgraph.errors import UsageError
from provgraph.evidence.archive import ARCHIVE_SUFFIXES
from provgraph.rdf.vocab import PG_NS
from provgraph.store.base import Store

_PREFIX = f"PREFIX pg: <{PG_NS}>\n"
_STATUS_ORDER = ("current", "withdrawn", "superseded")


@dataclass(frozen=True)
class Release:
    id: str
    kind: str  # "archive" or "tag"
    label: str  # the archive's bundle path, or the tag name (REPO@NAME when nested)
    holder: str  # IRI of the node whose pg:containsMember are the release's files
    names: frozenset[str] = field(default_factory=frozenset)
    tag: str = ""  # the tag name alone
    repository: str = ""  # the repository's bundle path ("" for an archive, "." at the root)

    def location(self, member: str) -> str:
        """How the release's file ``member`` is written in messages (as the importers write it)."""
        if self.kind == "archive":
            return f"{self.label}!/{member}"
        path = member if self.repository in ("", ".") else posixpath.join(self.repository, member)
        return f"{path}@{self.tag}"


@dataclass(frozen=True)
class Item:
    """One number or name a release's text writes."""

    member: str  # the file's path inside the release
    line: int
    text: str
    column: int  # where on the line (orders the items of a line)
    key: str | None  # a number's statistic name, a name's registry entity key
    registry: str | None = None  # a number's registry status: current, superseded, unregistered
    iri: str = ""  # the claim or mention node


@dataclass
class Contents:
    release: Release
    files: dict[str, str | None]  # member path -> sha256 (None for a link)
    numbers: list[Item]
    names: list[Item]
    texts_read: bool  # False for a git tag other than the release tag: its texts were not read


def releases(store: Store) -> list[Release]:
    """Every release in the store, archives first, each sorted by label."""
    found: list[Release] = []
    for row in store.select(_PREFIX + "SELECT ?a ?path WHERE { ?a a pg:Archive ; pg:path ?path }"):
        path = row["path"].value  # type: ignore[union-attr]
        name = posixpath.basename(path)
        stem = next((name[: -len(s)] for s in ARCHIVE_SUFFIXES if name.lower().endswith(s)), name)
        ident = f"archive:{path}"
        found.append(
            Release(ident, "archive", path, row["a"].value, frozenset({ident, path, name, stem}))  # type: ignore[union-attr]
        )
    tags = store.select(
        _PREFIX + "SELECT ?name ?c ?repo WHERE { ?t a pg:Tag ; pg:name ?name ; pg:tagOf ?c ; "
        "pg:repository ?r . OPTIONAL { ?r pg:path ?repo } }"
    )
    for row in tags:
        tag = row["name"].value  # type: ignore[union-attr]
        repo = row["repo"].value if row["repo"] else "."  # type: ignore[union-attr]
        label = tag if repo == "." else f"{repo}@{tag}"
        ident = f"tag:{label}"
        names = frozenset({ident, label, tag})
        found.append(Release(ident, "tag", label, row["c"].value, names, tag, repo))  # type: ignore[union-attr]
    found.sort(key=lambda r: (r.kind != "archive", r.label))
    return found


def find_release(store: Store, name: str) -> Release:
    """The one release ``name`` names; an unknown or ambiguous name is one clear error."""
    known = releases(store)
    hits = [r for r in known if name in r.names]
    exact = [r for r in hits if name in (r.id, r.label)]
    if len(exact) == 1:
        return exact[0]
    if len(hits) == 1:
        return hits[0]
    shown = name if name.isprintable() else repr(name)
    if hits:
        raise UsageError(f"{shown} names several releases: {', '.join(r.id for r in hits)}; use the id")
    listing = ", ".join(r.id for r in known) or "none (ingest the bundle's archives or git repositories)"
    raise UsageError(f"{shown}: no such release; known releases: {listing}")


def contract_release(store: Store) -> tuple[Release | None, list[str]]:
    """The release the contract's ``[release]`` names, and the names it was looked for by: the
    archive ``release build`` writes (``NAME-VERSION``, the name made safe as the builder does),
    else the tag ``vVERSION`` or ``VERSION``."""
    rows = store.select(
        _PREFIX + "SELECT ?n ?v WHERE { ?s a pg:ReleaseSpec ; pg:version ?v OPTIONAL { ?s pg:name ?n } }"
    )
    if not rows:
        return None, []
    name = rows[0]["n"].value if rows[0]["n"] else ""  # type: ignore[union-attr]
    version = rows[0]["v"].value  # type: ignore[union-attr]
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in name)
    wanted = ([f"{safe}-{version}"] if safe else []) + [f"v{version}", version]
    known = releases(store)
    for want in wanted:
        hits = [r for r in known if want in r.names]
        if len(hits) == 1:
            return hits[0], wanted
    return None, wanted


def previous_release(store: Store, current: Release) -> Release | None:
    """The nearest tag of the same repository whose commit is an ancestor of ``current``'s
    (None for an archive: nothing in the store orders archives; name one with ``report --since``).

    Ancestry, not commit time: two commits of one scripted session share their second."""
    if current.kind != "tag":
        return None
    ancestry = _PREFIX + "SELECT DISTINCT ?a WHERE { ?c pg:parentCommit+ ?a }"
    before = {r["a"].value for r in store.select(ancestry, {"c": ox.NamedNode(current.holder)})}  # type: ignore[union-attr]
    earlier = [
        r
        for r in releases(store)
        if r.kind == "tag" and r.repository == current.repository and r.holder in before
    ]
    # the nearest has the most ancestors of its own (each earlier candidate is among them)
    depth = {r.holder: len(store.select(ancestry, {"c": ox.NamedNode(r.holder)})) for r in earlier}
    return max(earlier, key=lambda r: (depth[r.holder], r.tag), default=None)


def contents(store: Store, release: Release) -> Contents:
    """The files, numbers and names of one release, read from the store."""
    bind = {"h": ox.NamedNode(release.holder)}
    files: dict[str, str | None] = {}
    for row in store.select(
        _PREFIX + "SELECT ?p ?s WHERE { ?h pg:containsMember ?m . ?m pg:memberPath ?p "
        "OPTIONAL { ?m pg:sha256 ?s } }",
        bind,
    ):
        files[row["p"].value] = row["s"].value if row["s"] else None  # type: ignore[union-attr]
    read = release.kind == "archive" or store.ask(
        _PREFIX + "ASK { ?h pg:containsMember ?m . ?m pg:path ?p FILTER(STRENDS(?p, ?at)) }",
        {**bind, "at": ox.Literal(f"@{release.tag}")},
    )
    if not read:
        return Contents(release, files, [], [], False)
    return Contents(release, files, _numbers(store, bind), _names(store, bind), True)


def holds(store: Store, release: Release, iri: str) -> bool:
    """Whether the node ``iri`` is one of the release's files, or a claim or mention in one."""
    return store.ask(
        _PREFIX + "ASK { ?h pg:containsMember ?m . FILTER(?m = ?x || EXISTS { ?x pg:sourceFile ?m }) }",
        {"h": ox.NamedNode(release.holder), "x": ox.NamedNode(iri)},
    )


def _numbers(store: Store, bind: dict) -> list[Item]:
    rows = store.select(
        _PREFIX + "SELECT ?c ?p ?l ?t ?ctx ?sn ?st WHERE { ?h pg:containsMember ?m . "
        "?m pg:memberPath ?p . ?c a pg:Claim ; pg:sourceFile ?m ; pg:sourceLine ?l ; pg:text ?t . "
        "OPTIONAL { ?c pg:context ?ctx } OPTIONAL { ?c pg:statName ?sn } "
        "OPTIONAL { ?c pg:registryValue ?rv . ?rv pg:registryStatus ?st } }",
        bind,
    )
    claims: dict[str, tuple[str, int, str, str, str | None, set[str]]] = {}
    for r in rows:
        key = r["c"].value  # type: ignore[union-attr]
        if key not in claims:
            claims[key] = (
                r["p"].value,  # type: ignore[union-attr]
                int(r["l"].value),  # type: ignore[union-attr]
                r["t"].value,  # type: ignore[union-attr]
                r["ctx"].value if r["ctx"] else "",  # type: ignore[union-attr]
                r["sn"].value if r["sn"] else None,  # type: ignore[union-attr]
                set(),
            )
        if r["st"]:
            claims[key][5].add(r["st"].value)  # type: ignore[union-attr]
    items = []
    for iri, (member, line, text, context, stat, statuses) in claims.items():
        # a value both current and superseded under two names is current; withdrawn outranks superseded
        status = next((s for s in _STATUS_ORDER if s in statuses), min(statuses, default="unregistered"))
        items.append(Item(member, line, text, _column(context, text, iri), stat, status, iri))
    return sorted(items, key=lambda i: (i.member, i.line, i.column))


def _names(store: Store, bind: dict) -> list[Item]:
    rows = store.select(
        _PREFIX + "SELECT ?c ?p ?l ?t ?ctx ?k ?e WHERE { ?h pg:containsMember ?m . ?m pg:memberPath ?p . "
        "?c a pg:Mention ; pg:sourceFile ?m ; pg:sourceLine ?l ; pg:text ?t ; pg:entity ?e . "
        "OPTIONAL { ?c pg:context ?ctx } OPTIONAL { ?e pg:key ?k } }",
        bind,
    )
    items = [
        Item(
            r["p"].value,  # type: ignore[union-attr]
            int(r["l"].value),  # type: ignore[union-attr]
            r["t"].value,  # type: ignore[union-attr]
            _column(r["ctx"].value if r["ctx"] else "", r["t"].value, r["c"].value),  # type: ignore[union-attr]
            r["k"].value if r["k"] else r["e"].value,  # type: ignore[union-attr]
            iri=r["c"].value,  # type: ignore[union-attr]
        )
        for r in rows
    ]
    return sorted(items, key=lambda i: (i.member, i.line, i.column))


def _column(context: str, text: str, iri: str) -> int:
    """Where the ``n``-th ``text`` of the line starts (the claim's IRI ends in ``n``); the
    line's context is the stripped line, so this orders the items of one line."""
    nth = int(iri.rsplit("/", 1)[-1]) if iri.rsplit("/", 1)[-1].isdigit() else 1
    at = -1
    for _ in range(max(nth, 1)):
        at = context.find(text, at + 1)
        if at < 0:
            return len(context)  # past the context's 300 characters: after everything it shows
    return at
