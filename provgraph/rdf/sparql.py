"""Binding values into SPARQL without formatting user text into it.

Bindings become a ``VALUES`` block placed at the start of the query's WHERE group, built from
RDF terms serialised by pyoxigraph (so a value can never escape its term). This works the same
on every backend, embedded or HTTP, unlike engine-specific substitution APIs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pyoxigraph as ox

Term = ox.NamedNode | ox.BlankNode | ox.Literal


def _tokens(query: str):
    """Yield ``(index, char)`` of the query outside comments, IRIs and string literals."""
    i, n = 0, len(query)
    while i < n:
        ch = query[i]
        if ch == "#":
            nl = query.find("\n", i)
            i = n if nl < 0 else nl + 1
            continue
        if ch == "<":
            end = query.find(">", i + 1)
            if end > 0 and not any(c.isspace() for c in query[i + 1 : end]):
                i = end + 1
                continue
        if ch in "\"'":
            quote = ch * 3 if query.startswith(ch * 3, i) else ch
            j = i + len(quote)
            while j < n and not query.startswith(quote, j):
                j += 2 if query[j] == "\\" else 1
            i = j + len(quote)
            continue
        yield i, ch
        i += 1


def where_brace(query: str) -> int:
    """Index of the ``{`` that opens the query's WHERE group (outside comments, IRIs, strings).

    A CONSTRUCT template (``CONSTRUCT { ... } WHERE { ... }``) is skipped.

    >>> q = 'PREFIX ex: <http://x/#a> SELECT ?a # {not this}\\nWHERE { ?a ?b "{" }'
    >>> q[where_brace(q):][:3]
    '{ ?'
    >>> q = 'CONSTRUCT { ?s a ?c } WHERE { ?s a ?c }'
    >>> where_brace(q)
    28
    """
    construct = re.search(r"\bCONSTRUCT\s*\{", query, re.I)
    depth = 0
    skipping = False
    for i, ch in _tokens(query):
        if ch == "{":
            if construct and i == construct.end() - 1 and depth == 0:
                skipping = True
            if not skipping:
                return i
            depth += 1
        elif ch == "}" and skipping:
            depth -= 1
            if depth == 0:
                skipping = False
    raise SyntaxError("no WHERE group ('{') found in the query")


def inject_values(query: str, bindings: Mapping[str, Term] | None) -> str:
    """``query`` with ``bindings`` as a one-row VALUES block opening its WHERE group.

    >>> inject_values("SELECT ?x WHERE { ?x ?p ?v }", {"v": ox.Literal('a"b')})
    'SELECT ?x WHERE { VALUES (?v) { ("a\\\\"b") } ?x ?p ?v }'
    """
    if not bindings:
        return query
    names = list(bindings)
    for name in names:
        if not name.isidentifier():
            raise ValueError(f"invalid variable name {name!r}")
    at = where_brace(query) + 1
    block = (
        " VALUES ("
        + " ".join(f"?{k}" for k in names)
        + ") { ("
        + " ".join(str(bindings[k]) for k in names)
        + ") }"
    )
    return query[:at] + block + query[at:]


def plain_iri(text: str) -> bool:
    """Whether ``text`` can be written as ``<text>`` in a query without escaping."""
    return bool(text) and not any(ch in text for ch in '<>"{}|\\^` \n')
