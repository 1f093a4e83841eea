"""IRI minting and literal writing: no key can break an IRI or a query, and literals
round-trip exactly through a real N-Triples parser."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provgraph.rdf.sparql import inject_values
from provgraph.rdf.terms import IRI, Lit, TripleWriter, escape_key, literal, mint

BASE = "https://example.org/p/"
keys = st.text(min_size=1, max_size=40)


@given(st.lists(keys, min_size=1, max_size=4))
@settings(max_examples=300)
def test_minted_iris_are_valid_and_parse(parts: list[str]) -> None:
    iri = mint(BASE, "case", *parts)
    node = ox.NamedNode(iri)  # raises on an invalid IRI
    assert node.value == iri
    parsed = list(ox.parse(f'<{iri}> <{BASE}p> "x" .\n', format=ox.RdfFormat.N_TRIPLES))
    assert parsed[0].subject.value == iri


@given(st.lists(keys, min_size=1, max_size=3), st.lists(keys, min_size=1, max_size=3))
@settings(max_examples=300)
def test_minting_is_injective(a: list[str], b: list[str]) -> None:
    if a != b:
        assert mint(BASE, "k", *a) != mint(BASE, "k", *b)


def test_dot_segments_and_separators_are_escaped() -> None:
    assert escape_key("..") == "%2E%2E"
    assert mint(BASE, "file", "a", "..") != mint(BASE, "file", "a")
    assert mint(BASE, "case", "a/b") == BASE + "case/a%2Fb"
    assert mint(BASE, "case", "x> <y") == BASE + "case/x%3E%20%3Cy"


def test_bad_kinds_and_empty_keys_are_refused() -> None:
    with pytest.raises(ValueError):
        mint(BASE, "Case", "x")
    with pytest.raises(ValueError):
        mint(BASE, "case", "")
    with pytest.raises(ValueError):
        mint(BASE, "case")


@given(st.text())
@settings(max_examples=300)
def test_string_literals_round_trip(text: str) -> None:
    line = f"<{BASE}s> <{BASE}p> {literal(text)} .\n"
    (triple,) = ox.parse(line, format=ox.RdfFormat.N_TRIPLES)
    assert triple.object.value == text


@pytest.mark.parametrize(
    ("value", "lexical", "datatype"),
    [
        (3, "3", "integer"),
        (True, "true", "boolean"),
        (1.5, "1.5", "double"),
        (float("nan"), "NaN", "double"),
        (Decimal("154.73"), "154.73", "decimal"),
        (Decimal("1E-9"), "0.000000001", "decimal"),  # str() gives '1E-9': not xsd:decimal
        (Decimal("2.5E+3"), "2500", "decimal"),
        (dt.datetime(2026, 7, 1, 10, 0, tzinfo=dt.UTC), "2026-07-01T10:00:00+00:00", "dateTime"),
        (dt.date(2026, 7, 1), "2026-07-01", "date"),
        (Lit("PT5S", "http://www.w3.org/2001/XMLSchema#duration"), "PT5S", "duration"),
    ],
)
def test_typed_literals(value: object, lexical: str, datatype: str) -> None:
    (triple,) = ox.parse(f"<{BASE}s> <{BASE}p> {literal(value)} .", format=ox.RdfFormat.N_TRIPLES)
    assert triple.object.value == lexical
    assert triple.object.datatype.value.endswith("#" + datatype)


def test_unsupported_values_are_an_error() -> None:
    with pytest.raises(TypeError):
        literal(object())
    with pytest.raises(TypeError, match="not a finite number"):
        literal(Decimal("NaN"))


def test_small_decimals_compare_as_numbers_in_the_store() -> None:
    """A decimal written in exponent form used to be an invalid literal that no comparison matched."""
    store = ox.Store()
    store.load(f"<{BASE}s> <{BASE}p> {literal(Decimal('1E-9'))} .", format=ox.RdfFormat.N_TRIPLES)
    assert store.query(f"ASK {{ <{BASE}s> <{BASE}p> ?v FILTER (?v = 0.000000001) }}")


def test_writer_skips_none_and_counts(tmp_path) -> None:
    path = tmp_path / "x.nt"
    with path.open("w") as fh:
        w = TripleWriter(fh)
        w.add(IRI(BASE + "s"), IRI(BASE + "p"), None)
        w.add(IRI(BASE + "s"), IRI(BASE + "p"), IRI(BASE + "o"))
        w.add(IRI(BASE + "s"), IRI(BASE + "p"), "o")
    assert w.count == 2
    assert len(list(ox.parse(path=str(path), format=ox.RdfFormat.N_TRIPLES))) == 2


@given(st.text())
@settings(max_examples=200)
def test_bound_values_cannot_escape_their_term(text: str) -> None:
    store = ox.Store()
    store.add(ox.Quad(ox.NamedNode(BASE + "s"), ox.NamedNode(BASE + "p"), ox.Literal(text)))
    query = inject_values(f"SELECT ?s WHERE {{ ?s <{BASE}p> ?v }}", {"v": ox.Literal(text)})
    assert [r["s"].value for r in store.query(query)] == [BASE + "s"]
