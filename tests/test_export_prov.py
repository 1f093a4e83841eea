"""PROV exports read back by their real consumer, the prov package, and the check as a SHACL
validation report read by rdflib.

Shapes and readers come from their sources: ``prov.read(format="rdf")`` is prov's PROV-O
decoder (github.com/trungdong/prov, src/prov/serializers/provrdf.py: a node is a record only
if it is typed with a PROV base class, and a relation's object must fall under a declared
namespace); the PROV-XML schema is the W3C's (https://www.w3.org/ns/prov.xsd), vendored in
tests/fixtures/provxml/ from prov's own test schemas (src/prov/tests/schemas/, see the README
there); the report vocabulary is SHACL's (https://www.w3.org/TR/shacl/#validation-report).
The bundle is the radiology pilot replica (examples/cxr_pilot), which has every PROV kind and
subtype provgraph writes, primary sources, and fail and restrict violations.
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

import prov
import pytest
from examples_support import Bundle, generator, prepare
from lxml import etree

from provgraph.errors import MissingExtraError
from provgraph.export import exported_graphs
from provgraph.export.provdoc import xml_escape, xml_unescape

SCHEMAS = Path(__file__).parent / "fixtures" / "provxml"
PROV = "http://www.w3.org/ns/prov#"
#: PROV-O relation properties and the prov record each one is read back as (provrdf.RELATION_MAP;
#: prov:hadPrimarySource is a derivation of type prov:PrimarySource in PROV-DM).
RELATIONS = {
    "used": "ProvUsage",
    "wasGeneratedBy": "ProvGeneration",
    "wasDerivedFrom": "ProvDerivation",
    "hadPrimarySource": "ProvDerivation",
    "wasAssociatedWith": "ProvAssociation",
    "hadMember": "ProvMembership",
    "wasInformedBy": "ProvCommunication",
    "wasAttributedTo": "ProvAttribution",
    "actedOnBehalfOf": "ProvDelegation",
    "wasStartedBy": "ProvStart",
    "wasEndedBy": "ProvEnd",
    "wasInvalidatedBy": "ProvInvalidation",
    "wasInfluencedBy": "ProvInfluence",
    "specializationOf": "ProvSpecialization",
    "alternateOf": "ProvAlternate",
}
KINDS = {"Entity": "ProvEntity", "Activity": "ProvActivity", "Agent": "ProvAgent"}
READER = {"turtle": "rdf", "provn": "provn", "provjson": "json", "provxml": "xml"}


@pytest.fixture(scope="module")
def pilot(tmp_path_factory) -> Bundle:
    bundle = prepare(tmp_path_factory.mktemp("cxr") / "flawed", "flawed", generator("cxr_pilot").generate)
    yield bundle
    bundle.close()


@pytest.fixture(scope="module")
def exported(pilot: Bundle, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("exports")
    paths = {}
    for fmt in READER:
        paths[fmt] = out / f"graph.{fmt}"
        code, text = pilot.cli("export", "--format", fmt, "--output", str(paths[fmt]))
        assert code == 0, text
    return paths


def store_counts(bundle: Bundle) -> collections.Counter:
    """Records per prov class as the store holds them, counted in SPARQL over the store."""
    graphs = " ".join(f"<{g}>" for g in exported_graphs(bundle.store))
    counts: collections.Counter = collections.Counter()
    for kind, record in KINDS.items():
        counts[record] += bundle.count(
            f"""SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE {{ VALUES ?g {{ {graphs} }} GRAPH ?g {{ ?s a ?c }}
            ?c <http://www.w3.org/2000/01/rdf-schema#subClassOf>* <{PROV}{kind}> }}"""
        )
    for prop, record in RELATIONS.items():
        counts[record] += bundle.count(
            f"""SELECT (COUNT(*) AS ?n) WHERE {{ SELECT DISTINCT ?s ?o WHERE {{
            VALUES ?g {{ {graphs} }} GRAPH ?g {{ ?s <{PROV}{prop}> ?o }} FILTER(isIRI(?o)) }} }}"""
        )
    return +counts


_READ: dict[Path, prov.model.ProvDocument] = {}


def read_back(path: Path, fmt: str) -> prov.model.ProvDocument:
    """``prov.read`` of an export (once per file: several tests look at each document)."""
    if path not in _READ:
        _READ[path] = prov.read(str(path), format=READER[fmt])
    return _READ[path]


def record_counts(doc) -> collections.Counter:
    return collections.Counter(type(r).__name__ for r in doc.get_records())


@pytest.mark.parametrize("fmt", list(READER))
def test_prov_reads_every_export_back_with_the_stores_counts(pilot: Bundle, exported, fmt: str) -> None:
    """prov.read on each export yields as many entities, activities, agents and relations of
    each kind as the store holds (the Turtle export fails this without its PROV types)."""
    expected = store_counts(pilot)
    assert expected["ProvEntity"] > 1000 and expected["ProvAgent"] and expected["ProvDerivation"]
    assert record_counts(read_back(exported[fmt], fmt)) == expected


def test_turtle_asserts_prov_classes_and_subtypes(exported) -> None:
    """The Turtle export types nodes with the PROV classes their pg: class specialises."""
    doc = read_back(exported["turtle"], "turtle")
    types = collections.Counter(
        str(t) for r in doc.get_records() for attr, t in r.attributes if str(attr) == "prov:type"
    )
    for subtype in ("prov:Plan", "prov:Collection", "prov:SoftwareAgent"):
        assert types[subtype] > 0, subtype


@pytest.mark.parametrize("fmt", ["provn", "provjson", "provxml"])
def test_prov_formats_declare_a_handful_of_prefixes(pilot: Bundle, exported, fmt: str) -> None:
    """Only the namespaces the graph uses, the bundle's base IRI among them (not one prefix per
    IRI folder: the old export declared 1,503 on this bundle)."""
    namespaces = {ns.prefix: ns.uri for ns in read_back(exported[fmt], fmt).get_registered_namespaces()}
    assert namespaces["bundle"] == "https://example.org/cxr-pilot/"
    assert namespaces["pg"] == "https://w3id.org/provgraph/ns#"
    assert len(namespaces) <= 6, namespaces
    if fmt == "provjson":
        assert set(json.loads(exported[fmt].read_text())["prefix"]) <= set(namespaces) | {"default"}


def test_provxml_validates_against_the_w3c_schema(pilot: Bundle, exported) -> None:
    """PROV-XML valid under prov.xsd, and its escaped identifiers name the store's own nodes."""
    schema = etree.XMLSchema(etree.parse(str(SCHEMAS / "prov.xsd")))
    tree = etree.parse(str(exported["provxml"]))
    assert schema.validate(tree), schema.error_log.last_error
    nsmap = tree.getroot().nsmap
    ids = set()
    for el in tree.getroot().iterfind(f"*[@{{{PROV}}}id]"):  # entities, activities, agents
        prefix, local = el.get(f"{{{PROV}}}id").split(":", 1)
        ids.add(nsmap[prefix] + xml_unescape(local))
    graphs = " ".join(f"<{g}>" for g in exported_graphs(pilot.store))
    nodes = {
        r["s"]
        for r in pilot.select(
            f"SELECT DISTINCT ?s WHERE {{ VALUES ?g {{ {graphs} }} GRAPH ?g {{ ?s a ?c }} "
            f"?c <http://www.w3.org/2000/01/rdf-schema#subClassOf>* ?kind "
            f"VALUES ?kind {{ <{PROV}Entity> <{PROV}Activity> <{PROV}Agent> }} }}"
        )
    }
    assert len(nodes) > 4000 and ids == nodes


@pytest.mark.parametrize(
    "local",
    [
        "call/C001",
        "1",
        "record/calls.jsonl/C002/1",
        "a_x0041_b",
        "_x",
        "50%2F1",
        "ok-name.txt",
        "é/ü",
        "\U0001f600",
    ],
)
def test_xml_escape_gives_an_ncname_that_unescapes_exactly(local: str) -> None:
    name = xml_escape(local)
    assert etree.QName("urn:x", name).localname == name  # lxml refuses a name that is no NCName
    assert xml_unescape(name) == local


def test_provxml_without_lxml_names_the_extra(pilot: Bundle, tmp_path: Path, monkeypatch) -> None:
    """Without lxml the export stops with the extra to install, and writes no file."""
    from provgraph.export import export

    monkeypatch.setitem(sys.modules, "lxml.etree", None)  # import lxml.etree now raises ImportError
    out = tmp_path / "x.provxml"
    with pytest.raises(MissingExtraError, match=r"pip install 'provgraph\[provxml\]'"), out.open("wb") as fh:
        export(pilot.store, "provxml", fh)
    assert out.read_bytes() == b""


SH = "http://www.w3.org/ns/shacl#"
SEVERITY = {"fail": f"{SH}Violation", "restrict": f"{SH}Warning", "info": f"{SH}Info"}


def test_check_as_shacl_report_one_result_per_violation(pilot: Bundle, tmp_path: Path) -> None:
    """rdflib parses ``check --format shacl`` and SPARQL over it returns one sh:ValidationResult
    per violation of the JSON report, with its focus, rule, severity and message."""
    from rdflib import Graph

    shacl, js = tmp_path / "check.ttl", tmp_path / "check.json"
    assert pilot.cli("check", "--no-record", "--format", "shacl", "-o", str(shacl))[0] == 1
    assert pilot.cli("check", "--no-record", "--format", "json", "-o", str(js))[0] == 1
    graph = Graph().parse(shacl, format="turtle")
    rows = graph.query(
        """PREFIX sh: <http://www.w3.org/ns/shacl#> PREFIX pg: <https://w3id.org/provgraph/ns#>
        SELECT ?conforms ?focus ?shape ?severity ?message ?id ?clause WHERE {
          ?report a sh:ValidationReport ; sh:conforms ?conforms ; sh:result ?r .
          ?r a sh:ValidationResult ; sh:focusNode ?focus ; sh:sourceShape ?shape ;
             sh:sourceConstraintComponent sh:SPARQLConstraintComponent ;
             sh:resultSeverity ?severity ; sh:resultMessage ?message ; pg:ruleId ?id ; pg:clause ?clause }"""
    )
    got = collections.Counter(
        (str(r.focus), str(r.shape), str(r.severity), str(r.message), str(r.id), str(r.clause)) for r in rows
    )
    assert {bool(r.conforms.toPython()) for r in rows} == {False}
    report = json.loads(js.read_text())
    base = "https://example.org/cxr-pilot/"
    want = collections.Counter(
        (
            v["focus"],
            f"{base}rule/{rule['id']}",
            SEVERITY[rule["severity"]],
            v["message"],
            rule["id"],
            f"https://w3id.org/provgraph/ns#{rule['clause'].capitalize()}Clause",
        )
        for rule in report["rules"]
        for v in rule["violations"]
    )
    assert got == want and sum(want.values()) == report["counts"]["violations"]
    assert any(k[2] == f"{SH}Warning" for k in want) and any(k[2] == f"{SH}Violation" for k in want)


def test_shacl_report_fails_closed_on_a_rule_that_could_not_run() -> None:
    """A rule that could not run is a sh:Violation result on the rule's node (the gate fails
    closed, so the report does not conform); a report with no violation conforms."""
    import datetime as dt

    from rdflib import Graph, Literal, Namespace, URIRef

    from provgraph.rules import load_rules
    from provgraph.rules.formats import render
    from provgraph.rules.runner import CheckReport, RuleResult

    sh = Namespace(SH)
    rule = next(r for r in load_rules() if r.id == "output-unplanned-record")
    base = "https://example.org/p/"

    def report(result: RuleResult) -> Graph:
        check = CheckReport([result], ["output"], base, "p", dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
        return Graph().parse(data=render(check, "shacl"), format="turtle")

    failed = report(RuleResult(rule, "error", error="query does not parse"))
    (result,) = failed.objects(None, sh.result)
    assert next(failed.objects(None, sh.conforms)) == Literal(False)
    assert failed.value(result, sh.focusNode) == URIRef(f"{base}rule/output-unplanned-record")
    assert failed.value(result, sh.resultSeverity) == sh.Violation
    assert "query does not parse" in str(failed.value(result, sh.resultMessage))
    assert str(failed.value(result, URIRef("https://w3id.org/provgraph/ns#outcome"))) == "error"
    passed = report(RuleResult(rule, "pass"))
    assert next(passed.objects(None, sh.conforms)) == Literal(True) and not list(
        passed.objects(None, sh.result)
    )


@pytest.mark.parametrize("fmt", ["provn", "provjson", "provxml"])
def test_a_namespace_outside_the_declared_ones_gets_one_prefix(fmt: str, tmp_path: Path) -> None:
    """Nodes outside the base IRI and provgraph's vocabularies (an imported external IRI) are
    declared under a prefix named after their folder, and prov reads the relation back."""
    import pyoxigraph as ox

    from provgraph.export import declared_prefixes
    from provgraph.export.provdoc import write_prov

    a = ox.NamedNode("https://example.org/p/import/x/1")
    e = ox.NamedNode("https://data.example.net/dicom/tags/0010")
    rdf_type = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
    triples = [
        ox.Triple(a, rdf_type, ox.NamedNode(PROV + "Activity")),
        ox.Triple(e, rdf_type, ox.NamedNode(PROV + "Entity")),
        ox.Triple(a, ox.NamedNode(PROV + "used"), e),
    ]
    out = tmp_path / f"x.{fmt}"
    with out.open("wb") as fh:
        assert write_prov(triples, fmt, fh, declared_prefixes("https://example.org/p/")) == 3
    doc = read_back(out, fmt)
    namespaces = {ns.prefix: ns.uri for ns in doc.get_registered_namespaces()}
    assert namespaces["dicom_tags"] == "https://data.example.net/dicom/tags/"
    assert record_counts(doc) == {"ProvActivity": 1, "ProvEntity": 1, "ProvUsage": 1}


def test_shacl_report_conforms_to_the_report_structure_of_the_spec(pilot: Bundle, tmp_path: Path) -> None:
    """pySHACL validates the report against the structure SHACL section 3.6 gives a validation
    report (tests/fixtures/shacl/report-shape.ttl, written from the spec; its SPARQL constraint
    also catches a conforms that disagrees with the results)."""
    from pyshacl import validate
    from rdflib import Graph, Literal, Namespace

    shacl = tmp_path / "check.ttl"
    assert pilot.cli("check", "--no-record", "--format", "shacl", "-o", str(shacl))[0] == 1
    shapes = Graph().parse(Path(__file__).parent / "fixtures" / "shacl" / "report-shape.ttl")
    data = Graph().parse(shacl, format="turtle")
    conforms, _, text = validate(data, shacl_graph=shapes, advanced=True)
    assert conforms, text
    sh = Namespace(SH)
    report = next(data.subjects(sh.conforms, None))
    data.set((report, sh.conforms, Literal(True)))  # a report that lies about its results
    assert not validate(data, shacl_graph=shapes, advanced=True)[0]
