"""Namespaces. ``PG`` only hands out terms that ``ontology/provgraph.ttl`` defines."""

from __future__ import annotations

from functools import cache

from provgraph.rdf.resources import ontology_path
from provgraph.rdf.terms import IRI

PG_NS = "https://w3id.org/provgraph/ns#"
PROV_NS = "http://www.w3.org/ns/prov#"
RDF_NS = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS_NS = "http://www.w3.org/2000/01/rdf-schema#"
XSD_NS = "http://www.w3.org/2001/XMLSchema#"

PREFIXES = {
    "pg": PG_NS,
    "prov": PROV_NS,
    "rdf": RDF_NS,
    "rdfs": RDFS_NS,
    "xsd": XSD_NS,
}


def short(iri: str, base: str = "") -> str:
    """An IRI for display: relative to the project's ``base``, else as ``prefix:name``."""
    if base and iri.startswith(base):
        return iri[len(base) :]
    for prefix, ns in PREFIXES.items():
        if iri.startswith(ns):
            return f"{prefix}:{iri[len(ns) :]}"
    return iri


RDF_TYPE = IRI(RDF_NS + "type")
RDFS_LABEL = IRI(RDFS_NS + "label")


@cache
def defined_terms() -> frozenset[str]:
    """Local names of every ``pg:`` term the ontology defines (is the subject of a triple)."""
    import pyoxigraph as ox

    names = set()
    for triple in ox.parse(path=str(ontology_path()), format=ox.RdfFormat.TURTLE):
        s = triple.subject
        if isinstance(s, ox.NamedNode) and s.value.startswith(PG_NS):
            names.add(s.value[len(PG_NS) :])
    return frozenset(names)


class _Namespace:
    def __init__(self, base: str) -> None:
        self._base = base

    def __getattr__(self, name: str) -> IRI:
        if name.startswith("_"):
            raise AttributeError(name)
        iri = IRI(self._base + name)
        setattr(self, name, iri)  # importers ask millions of times: the next lookup is a plain attribute
        return iri

    def __getitem__(self, name: str) -> IRI:
        return IRI(self._base + name)


class _CheckedNamespace(_Namespace):
    """A namespace that refuses terms the ontology does not define."""

    def __getattr__(self, name: str) -> IRI:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in defined_terms():
            raise AttributeError(f"pg:{name} is not defined in ontology/provgraph.ttl")
        iri = IRI(self._base + name)
        setattr(self, name, iri)
        return iri

    def __getitem__(self, name: str) -> IRI:
        return self.__getattr__(name)


PG = _CheckedNamespace(PG_NS)
PROV = _Namespace(PROV_NS)
RDF = _Namespace(RDF_NS)
RDFS = _Namespace(RDFS_NS)
XSD = _Namespace(XSD_NS)
