"""Resolving what a user names (a number as written, ``FILE:LINE``, a bundle path, an IRI) to nodes.

:func:`resolve` gives the node IRIs a target names, best matches first;
:func:`provgraph.lineage.trace.trace` then walks the lineage of each.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

import pyoxigraph as ox

from provgraph.evidence.claims import normal_text
from provgraph.rdf.vocab import PG_NS, RDFS_NS
from provgraph.store import catalog
from provgraph.store.base import Store

RDF_XSD_DECIMAL = "http://www.w3.org/2001/XMLSchema#decimal"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"

_NUMBER = re.compile(r"^-?\d[\d,]*(?:\.\d+)?%?$|^\d+/\d+$")
_FILE_LINE = re.compile(r"^(.+):(\d+)$")
_FILE_LINE_COL = re.compile(r"^(.+):(\d+):(\d+)$")


def resolve(store: Store, target: str, base: str | None = None) -> list[str]:
    """The node IRIs ``target`` names, best matches first (an empty list when none).

    ``target`` is a node IRI (absolute, or relative to the project's base IRI), a number as
    written (``182.29``, ``26/45``, ``17%``: claims writing it, then reported values, registry
    values and statistics equal to it at its precision), ``FILE:LINE`` (the claims and
    mentions on that line; ``ARCHIVE!/MEMBER:LINE`` inside an archive), a bundle path, or
    text as a document writes it (the mentions of a model name: ``Claude 3 Sonnet``). Text
    is only ever bound as a literal, never written into a query, so any character is safe.
    """
    base = base if base is not None else catalog.base_iri(store)
    target = target.strip()
    if not target.isprintable() and any("\ud800" <= ch <= "\udfff" for ch in target):
        return []  # an undecodable argument byte: no stored text holds it (and no literal can)
    found: list[str] = []
    if re.match(r"^[A-Za-z][\w+.-]*:", target) and not _FILE_LINE.match(target) and _valid_iri(target):
        return [target] if _exists(store, target) else []
    if _NUMBER.match(target):
        found += _numbers(store, target)
    elif (match := _FILE_LINE_COL.match(target)) and (
        at := _at_column(store, match.group(1), int(match.group(2)), int(match.group(3)))
    ):
        found += at
    elif match := _FILE_LINE.match(target):
        found += _on_line(store, match.group(1), int(match.group(2)))
    if not found and base and _exists(store, base + target):
        found.append(base + target)
    if not found:  # a bundle path: the file itself (build records and manifests also name it)
        rows = store.select(
            f"""SELECT DISTINCT ?n ?k WHERE {{ ?n <{PG_NS}path> ?p ; a ?c .
                  OPTIONAL {{ ?c <{RDFS_NS}subClassOf>* ?file FILTER(?file = <{PG_NS}File>) }}
                  BIND(IF(BOUND(?file), 0, 1) AS ?k) }} ORDER BY ?k ?n""",
            {"p": ox.Literal(target)},
        )
        files = [r["n"].value for r in rows if r["k"].value == "0"]  # type: ignore[union-attr]
        found += files or [r["n"].value for r in rows]  # type: ignore[union-attr]
    if not found:
        found += _mentions(store, target)
    return list(dict.fromkeys(found))


def _valid_iri(text: str) -> bool:
    """Whether ``text`` is an IRI the store can hold (a space, quote or ``<`` makes it text)."""
    try:
        ox.NamedNode(text)
    except ValueError:
        return False
    return True


def _exists(store: Store, iri: str) -> bool:
    if not _valid_iri(iri):  # base + "Claude 3 Sonnet" is no IRI, so no node
        return False
    node = ox.NamedNode(iri)
    return store.ask("ASK { { ?n ?p ?o } UNION { ?s ?p ?n } }", {"n": node})


def _numbers(store: Store, text: str) -> list[str]:
    written = normal_text(text)
    plain = written.rstrip("%").split("/")[0].replace(",", "")
    try:
        value = Decimal(plain)
    except InvalidOperation:
        return []
    decimals = len(plain.split(".")[1]) if "." in plain else 0
    half = Decimal(1).scaleb(-decimals) / 2
    pg = f"PREFIX pg: <{PG_NS}>\n"
    claims = store.select(
        pg
        + "SELECT DISTINCT ?n WHERE { ?n a pg:Claim ; pg:text ?t . OPTIONAL { ?n pg:sourceFile/pg:path ?p } "
        "OPTIONAL { ?n pg:sourceLine ?l } } ORDER BY ?p ?l ?n",
        {"t": ox.Literal(written)},
    )
    others = store.select(
        pg + "SELECT DISTINCT ?n ?k WHERE { "
        "{ ?n a pg:ReportedValue ; pg:value ?v . BIND(1 AS ?k) } UNION "
        "{ ?n a pg:RegistryValue ; pg:text ?tt . BIND(2 AS ?k) } UNION "
        "{ ?n a pg:Statistic ; pg:value ?v . BIND(3 AS ?k) } "
        # outside the UNION: filters inside a branch would not see the bound ?x, ?h and ?t
        "FILTER((?k = 1 && ?v = ?x) || (?k = 2 && ?tt = ?t) || (?k = 3 && ABS(?v - ?x) <= ?h)) } "
        "ORDER BY ?k ?n",
        {
            "x": ox.Literal(str(value), datatype=ox.NamedNode(RDF_XSD_DECIMAL)),
            "h": ox.Literal(str(half), datatype=ox.NamedNode(RDF_XSD_DECIMAL)),
            "t": ox.Literal(written),
        },
    )
    return [r["n"].value for r in claims] + [r["n"].value for r in others]  # type: ignore[union-attr]


def _on_line(store: Store, path: str, line: int) -> list[str]:
    rows = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT DISTINCT ?n ?k WHERE {{ ?n pg:sourceFile ?f ; pg:sourceLine ?line . ?f pg:path ?path .
          OPTIONAL {{ ?n a pg:Claim . BIND(0 AS ?c) }} BIND(COALESCE(?c, 1) AS ?k) }} ORDER BY ?k ?n""",
        {"path": ox.Literal(path), "line": ox.Literal(str(line), datatype=ox.NamedNode(XSD_INTEGER))},
    )
    return [r["n"].value for r in rows]  # type: ignore[union-attr]


def _at_column(store: Store, path: str, line: int, column: int) -> list[str]:
    """The claims on ``path:line`` whose number starts at 1-based character ``column``."""
    integer = ox.NamedNode(XSD_INTEGER)
    rows = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT DISTINCT ?n WHERE {{ ?n a pg:Claim ; pg:sourceFile ?f ; pg:sourceLine ?line ;
          pg:sourceColumn ?col . ?f pg:path ?path . }} ORDER BY ?n""",
        {
            "path": ox.Literal(path),
            "line": ox.Literal(str(line), datatype=integer),
            "col": ox.Literal(str(column), datatype=integer),
        },
    )
    return [r["n"].value for r in rows]  # type: ignore[union-attr]


def _mentions(store: Store, text: str) -> list[str]:
    """The mentions (a model name, "five models") written as ``text``, in file and line order."""
    rows = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT DISTINCT ?n WHERE {{ ?n a pg:Mention ; pg:text ?t .
          OPTIONAL {{ ?n pg:sourceFile/pg:path ?p }} OPTIONAL {{ ?n pg:sourceLine ?l }} }}
        ORDER BY ?p ?l ?n""",
        {"t": ox.Literal(text)},
    )
    return [r["n"].value for r in rows]  # type: ignore[union-attr]
