"""PROV-N, PROV-JSON and PROV-XML exports, written by the prov package from the typed graph.

The graph goes to prov as PROV-O through prov's own RDF decoder, with the handful of prefixes
the graph uses declared (:func:`provgraph.export.declared_prefixes`, and one more for any
other namespace met), so every identifier is written
as ``prefix:local`` under one of them.

PROV-XML writes identifiers as ``xsd:QName``, whose local part must be an XML name (no ``/``, no
leading digit). Most provgraph IRIs are paths below the base IRI (``call/C001``,
``record/calls.jsonl/C001/1``), which no choice of namespace makes an XML name. So in PROV-XML
only, a local part that is not an XML name is escaped the way SQL/XML (ISO/IEC 9075-14) maps
names to XML: each character that may not stand there becomes ``_xHHHH_`` (``_x002F_`` for
``/``), and an ``_`` that starts such a sequence becomes ``_x005F_``.
:func:`xml_unescape` gives back the IRI's local part, so the mapping loses nothing.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Iterable
from typing import IO

import pyoxigraph as ox

from provgraph.errors import MissingExtraError
from provgraph.export import prefix_for
from provgraph.rdf.vocab import PROV_NS

log = logging.getLogger(__name__)

PRIMARY_SOURCE = PROV_NS + "hadPrimarySource"
PROVXML_HINT = "PROV-XML export needs lxml: pip install 'provgraph[provxml]'"

# XML 1.0 NameStartChar / NameChar without ':' (an NCName), as the XML spec lists them.
_START = (
    "A-Z_a-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d"
    "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff"
)
_NAME = _START + r"\-.0-9\u00b7\u0300-\u036f\u203f-\u2040"
_NCNAME = re.compile(f"[{_START}][{_NAME}]*")
_IS_START = re.compile(f"[{_START}]")
_IS_NAME = re.compile(f"[{_NAME}]")
_ESCAPE = re.compile(r"_x([0-9A-F]{4}|[0-9A-F]{6})_")


def xml_escape(local: str) -> str:
    """``local`` as an XML name (NCName), escaped like SQL/XML: ``C001/1`` -> ``C001_x002F_1``."""
    if _NCNAME.fullmatch(local) and "_x" not in local:
        return local
    out = []
    for i, ch in enumerate(local):
        ok = (_IS_START if i == 0 else _IS_NAME).fullmatch(ch)
        if ch == "_" and local[i + 1 : i + 2] == "x":
            ok = None  # an "_x" that could read as an escape is itself escaped
        out.append(ch if ok else f"_x{ord(ch):04X}_" if ord(ch) <= 0xFFFF else f"_x{ord(ch):06X}_")
    return "".join(out)


def xml_unescape(name: str) -> str:
    """The local part an :func:`xml_escape` name stands for."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), name)


def write_prov(triples: Iterable[ox.Triple], fmt: str, out: IO[bytes], prefixes: dict[str, str]) -> int:
    """Write ``triples`` (PROV-O, with explicit PROV types) as ``provn``, ``provjson`` or
    ``provxml`` to ``out``; returns the number of triples read."""
    if fmt == "provxml":
        try:
            # lazy: lxml is the optional extra PROV-XML needs (prov's XML writer imports it)
            import lxml.etree  # noqa: F401
        except ImportError as err:
            raise MissingExtraError(PROVXML_HINT) from err
    doc, n = _document(triples, prefixes, escape=fmt == "provxml")
    # prov's writers build the whole text before writing it: the rdflib graph is gone by then
    doc.serialize(out, format={"provn": "provn", "provjson": "json", "provxml": "xml"}[fmt], indent=2)
    return n


def _document(triples: Iterable[ox.Triple], prefixes: dict[str, str], escape: bool):
    """The triples decoded into a prov ``ProvDocument`` by prov's own PROV-O reader."""
    # lazy: prov is loaded only by the PROV formats (start-up time)
    from prov.model import ProvDocument
    from prov.serializers.provrdf import ProvRDFSerializer

    graph, n = _rdflib_graph(triples, prefixes, escape)
    doc = ProvDocument()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ProvRDFSerializer(doc).decode_document(graph, doc)
    for w in caught[:5]:  # prov drops what PROV cannot express; say so on the log
        log.info("PROV export: %s", str(w.message)[:500])
    return doc, n


def _rdflib_graph(triples: Iterable[ox.Triple], prefixes: dict[str, str], escape: bool):
    """The triples as an rdflib graph with the prefixes they use bound (and, for PROV-XML,
    local parts escaped to XML names); returns the graph and the number of triples."""
    # lazy: rdflib is loaded only by the PROV formats (start-up time)
    from rdflib import BNode, Graph, Literal, URIRef

    by_length = sorted(prefixes.items(), key=lambda kv: -len(kv[1]))
    used: dict[str, str] = {}
    extra: dict[str, str] = {}
    iris: dict[str, URIRef] = {}

    def iri(value: str) -> URIRef:
        term = iris.get(value)
        if term is None:
            text = value
            for prefix, ns in by_length:
                if value.startswith(ns) and value != ns:
                    used[prefix] = ns
                    if escape:
                        text = ns + xml_escape(value[len(ns) :])
                    break
            else:  # a namespace outside the declared ones: give it a prefix of its own
                cut = max(value.rfind("/"), value.rfind("#"))
                if cut > 0 and cut < len(value) - 1:
                    ns = value[: cut + 1]
                    prefix = prefix_for(ns, {**prefixes, **extra})
                    extra[prefix] = used[prefix] = ns
                    by_length.append((prefix, ns))
                    by_length.sort(key=lambda kv: -len(kv[1]))  # the longest namespace wins
                    text = ns + xml_escape(value[cut + 1 :]) if escape else value
            term = iris[value] = URIRef(text)
        return term

    def term(node):
        if isinstance(node, ox.NamedNode):
            return iri(node.value)
        if isinstance(node, ox.BlankNode):
            return BNode(node.value)
        if node.language:
            return Literal(node.value, lang=node.language)
        return Literal(node.value, datatype=iri(node.datatype.value))

    graph = Graph(bind_namespaces="none")
    n = 0
    for t in triples:
        if t.predicate.value == PRIMARY_SOURCE:
            continue  # its qualified form (typed_triples) says it as a derivation
        graph.add((term(t.subject), iri(t.predicate.value), term(t.object)))
        n += 1
    for prefix, ns in sorted(used.items()):
        graph.bind(prefix, URIRef(ns))
    return graph, n
