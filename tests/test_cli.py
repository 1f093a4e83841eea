"""Every command through the real entry point: exit codes, output, one-line errors."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pyoxigraph as ox
import pytest
from conftest import REPO, copy_bundle, write_bundle

EXAMPLE = REPO / "examples" / "output_gate"


@pytest.fixture
def flawed(tmp_path: Path) -> Path:
    return copy_bundle(EXAMPLE / "flawed", tmp_path / "flawed")


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    return copy_bundle(EXAMPLE / "clean", tmp_path / "clean")


def test_help_lists_commands(cli) -> None:
    r = cli("--help")
    assert r.code == 0
    for name in ("init", "ingest", "check", "query", "export", "info", "importers", "rules"):
        assert name in r.out


def test_flawed_example_fails_the_gate_naming_four_violations(cli, flawed: Path) -> None:
    assert cli("-C", str(flawed), "ingest").code == 0
    r = cli("-C", str(flawed), "check")
    assert r.code == 1
    # other clauses' rules are skipped (not declared), so only the counts that matter are pinned
    assert re.search(r"gate: FAIL \(4 blocking rules violated\b.*; 4 violations\)", r.out), r.out
    expected = [
        "output-duplicate-terminal: call/C003 [plan.csv:4]: call C003 has 2 records logged ok; "
        "which one is the result is ambiguous",
        "output-ok-without-output: record/calls.jsonl/C002/1 [calls.jsonl:2]: call C002 is logged ok "
        "but its output outputs/C002.txt is empty (0 bytes)",
        "output-planned-without-terminal: call/C004 [plan.csv:5]: planned call C004 (case study-2, "
        "condition gpt-B) has no terminal record in the call log",
        "output-unplanned-record: record/calls.jsonl/C099/1 [calls.jsonl:5]: record for call C099 "
        "(status ok) does not match any planned call",
    ]
    flat = " ".join(r.out.split())
    for line in expected:
        assert " ".join(line.split()) in flat


def test_clean_example_passes(cli, clean: Path) -> None:
    assert cli("-C", str(clean), "ingest").code == 0
    r = cli("-C", str(clean), "check")
    assert r.code == 0, r.out
    assert re.search(r"gate: PASS \(\d+ rules passed\b.*; 0 violations\)", r.out), r.out


def test_reingest_keeps_the_quad_count(cli, clean: Path) -> None:
    cli("-C", str(clean), "ingest")
    first = json.loads(cli("-C", str(clean), "info", "--format", "json").out)["quads"]
    r = cli("-C", str(clean), "ingest")
    assert "0 imported, 4 unchanged, 0 failed" in r.out
    assert json.loads(cli("-C", str(clean), "info", "--format", "json").out)["quads"] == first


def test_ingest_finds_the_bundle_from_its_path(cli, clean: Path, tmp_path: Path) -> None:
    r = cli("ingest", str(clean / "plan.csv"), cwd=tmp_path)
    assert r.code == 0
    assert "plan.csv" in r.out and "plan" in r.out


def test_ingest_reports_rejected_records_and_exits_2(cli, clean: Path) -> None:
    with (clean / "calls.jsonl").open("a") as fh:
        fh.write('{"call_id": "C010", "status": 3}\n')
    r = cli("-C", str(clean), "ingest")
    assert r.code == 2
    assert "provgraph: rejected: calls.jsonl:5: status must be str, got int" in r.err
    assert "1 records rejected" in r.out


def test_dry_run_imports_nothing(cli, clean: Path) -> None:
    r = cli("-C", str(clean), "ingest", "--dry-run")
    assert r.code == 0
    assert "calls.jsonl" in r.out and "calls" in r.out
    assert not (clean / ".provgraph").exists()


@pytest.mark.parametrize("fmt", ["json", "junit", "sarif", "markdown", "text"])
def test_check_formats(cli, flawed: Path, tmp_path: Path, fmt: str) -> None:
    cli("-C", str(flawed), "ingest")
    out = tmp_path / f"report.{fmt}"
    r = cli("-C", str(flawed), "check", "--format", fmt, "--output", str(out))
    assert r.code == 1
    assert "gate: FAIL" in r.out  # the table still prints
    text = out.read_text()
    if fmt == "json":
        doc = json.loads(text)
        assert doc["gate"] == "fail"
        assert sum(len(x["violations"]) for x in doc["rules"]) == 4
        v = next(x for x in doc["rules"] if x["id"] == "output-unplanned-record")["violations"][0]
        assert v["path"] == "calls.jsonl" and v["line"] == 5
    elif fmt == "junit":
        root = ET.fromstring(text)
        suite = next(s for s in root.findall("testsuite") if s.get("name") == "output")
        assert suite.get("failures") == "4"
        assert len(root.findall(".//failure")) == 4
    elif fmt == "sarif":
        doc = json.loads(text)
        run = doc["runs"][0]
        assert doc["version"] == "2.1.0"
        assert len(run["results"]) == 4
        assert {r["level"] for r in run["results"]} == {"error"}
        loc = next(r for r in run["results"] if r["ruleId"] == "output-unplanned-record")["locations"][0]
        physical = loc["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == "calls.jsonl"  # tmp_path is no git repository
        assert physical["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert physical["region"] == {"startLine": 5}
    elif fmt == "markdown":
        assert text.startswith("# provgraph check: output-gate-flawed")
        assert "| `output-unplanned-record` | fail | VIOLATED | 1 |" in text
    else:
        assert "VIOLATED  fail     output-unplanned-record  (1)" in text


def test_json_to_stdout(cli, clean: Path) -> None:
    cli("-C", str(clean), "ingest")
    r = cli("-C", str(clean), "check", "--format", "json")
    assert r.code == 0
    assert json.loads(r.out)["gate"] == "pass"


def test_check_selection_and_recording(cli, flawed: Path) -> None:
    cli("-C", str(flawed), "ingest")
    r = cli("-C", str(flawed), "check", "--rule", "output-unplanned-record")
    assert r.code == 1 and "output-ok-without-output" not in r.out
    cli("-C", str(flawed), "check")
    q = cli(
        "-C",
        str(flawed),
        "query",
        "--format",
        "csv",
        "SELECT ?rule ?focus WHERE { ?v a pg:Violation ; pg:rule/pg:ruleId ?rule ; pg:focus ?focus } "
        "ORDER BY ?rule",
    )
    lines = q.out.strip().splitlines()
    assert lines[0] == "rule,focus"
    assert len(lines) == 5
    # checking twice replaces the clause's check graph instead of adding to it
    before = json.loads(cli("-C", str(flawed), "info", "--format", "json").out)["quads"]
    cli("-C", str(flawed), "check")
    assert json.loads(cli("-C", str(flawed), "info", "--format", "json").out)["quads"] == before


def test_check_before_ingest_is_a_usage_error(cli, tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {})
    r = cli("-C", str(root), "check")
    assert r.code == 2
    assert (
        r.err.strip()
        == "provgraph: error: no contract in the store: run `provgraph ingest` on the bundle first"
    )


def test_bad_contract_is_one_line_per_problem(cli, tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "b", {}, '[project]\nname = "x"\nbase_iri = "https://e.org/x/"\ncolour = 1\n'
    )
    r = cli("-C", str(root), "ingest")
    assert r.code == 2
    assert r.err.splitlines() == [
        f"provgraph: error: {root / 'provgraph.toml'}:4: project.colour: unknown key 'colour' in "
        "[project] (allowed: base_iri, description, name, strict, version; "
        "`provgraph contract project` describes them)"
    ]
    assert "Traceback" not in r.err


def test_not_in_a_bundle(cli, tmp_path: Path) -> None:
    r = cli("check", cwd=tmp_path)
    assert r.code == 2
    assert "not inside a bundle" in r.err and len(r.err.strip().splitlines()) == 1


def test_query_forms_and_formats(cli, clean: Path) -> None:
    cli("-C", str(clean), "ingest")
    r = cli(
        "-C", str(clean), "query", "SELECT ?id WHERE { ?c a pg:PlannedCall ; pg:callId ?id } ORDER BY ?id"
    )
    assert r.code == 0 and "C001" in r.out and "4 rows" in r.out
    r = cli(
        "-C",
        str(clean),
        "query",
        "--format",
        "json",
        "--param",
        "id=C002",
        "SELECT ?c WHERE { ?c a pg:PlannedCall ; pg:callId ?id }",
    )
    doc = json.loads(r.out)
    assert doc["head"]["vars"] == ["c"]
    assert doc["results"]["bindings"] == [
        {"c": {"type": "uri", "value": "https://example.org/output-gate-clean/call/C002"}}
    ]
    r = cli("-C", str(clean), "query", "ASK { ?c a pg:PlannedCall }")
    assert r.out.strip() == "true"
    r = cli("-C", str(clean), "query", "CONSTRUCT { ?c a pg:PlannedCall } WHERE { ?c a pg:PlannedCall }")
    assert len(list(ox.parse(r.out.encode(), format=ox.RdfFormat.N_TRIPLES))) == 4
    rq = REPO / "provgraph" / "data" / "rules" / "output" / "output-unplanned-record.rq"
    r = cli("-C", str(clean), "query", str(rq))
    assert r.code == 0 and "0 rows" in r.out
    # query text longer than a file name may be is text, not a path (it was an internal error)
    long = (
        "SELECT ?id WHERE { ?c a pg:PlannedCall ; pg:callId ?id . "
        + " ".join(f"OPTIONAL {{ ?c pg:case ?case{i} }}" for i in range(12))
        + " } ORDER BY ?id"
    )
    assert len(long) > 255
    r = cli("-C", str(clean), "query", long)
    assert r.code == 0 and "4 rows" in r.out
    r = cli("-C", str(clean), "query", "missing.rq")
    assert (
        r.code == 2
        and r.err.strip() == "provgraph: error: cannot read query file missing.rq: No such file or directory"
    )
    r = cli("-C", str(clean), "query", "DELETE WHERE { ?s ?p ?o }")
    assert r.code == 2 and "only reads the store" in r.err
    r = cli("-C", str(clean), "query", "SELECT ?x WHERE { ?x }")
    assert r.code == 2 and "query does not parse" in r.err


@pytest.mark.parametrize("fmt", ["turtle", "nt", "nquads", "trig", "jsonld", "provn", "provjson"])
def test_export_formats(cli, clean: Path, tmp_path: Path, fmt: str) -> None:
    cli("-C", str(clean), "ingest")
    out = tmp_path / f"export.{fmt}"
    r = cli("-C", str(clean), "export", "--format", fmt, "--output", str(out))
    assert r.code == 0
    data = out.read_bytes()
    rdf = {
        "turtle": ox.RdfFormat.TURTLE,
        "nt": ox.RdfFormat.N_TRIPLES,
        "nquads": ox.RdfFormat.N_QUADS,
        "trig": ox.RdfFormat.TRIG,
        "jsonld": ox.RdfFormat.JSON_LD,
    }
    if fmt in rdf:
        parsed = list(ox.parse(data, format=rdf[fmt]))
        assert len(parsed) > 50
        assert not any("urn:provgraph:catalog" in str(q) for q in parsed)
    elif fmt == "provn":
        text = data.decode()
        assert text.startswith("document") and "activity(bundle:import/plan/plan.csv" in text
        assert "agent(bundle:importer/plan/1" in text
        assert text.count("  prefix ") <= 6  # the namespaces used, not one per IRI folder
    else:
        doc = json.loads(data)
        assert len(doc["entity"]) > 10 and len(doc["activity"]) == 4 and doc["used"]


def test_info_and_importers_and_rules(cli, clean: Path) -> None:
    cli("-C", str(clean), "ingest")
    info = json.loads(cli("-C", str(clean), "info", "--format", "json").out)
    assert {g["source"] for g in info["graphs"]} == {
        "ontology",
        "import:contract:provgraph.toml",
        "import:plan:plan.csv",
        "import:calls:calls.jsonl",
        "import:files:outputs",
    }
    counts = {c["class"].rsplit("#", 1)[-1]: c["count"] for c in info["classes"]}
    assert counts["PlannedCall"] == 4 and counts["CallRecord"] == 4
    r = cli("-C", str(clean), "info")
    assert "pg:PlannedCall" in r.out
    r = cli("importers")
    assert r.code == 0 and all(n in r.out for n in ("contract", "plan", "calls", "files"))
    r = cli("rules", "--clause", "output")
    assert r.code == 0 and "output-unplanned-record" in r.out
    r = cli("rules", "--clause", "pixel", "--why")
    assert r.code == 0 and "documented mismatch" in r.out and "dicom-images" in r.out


def test_init_creates_a_bundle(cli, tmp_path: Path) -> None:
    folder = tmp_path / "My Study"
    r = cli("init", str(folder))
    assert r.code == 0
    text = (folder / "provgraph.toml").read_text()
    assert 'name = "My Study"' in text and 'base_iri = "https://example.org/my-study/"' in text
    assert (folder / ".provgraph" / ".gitignore").read_text() == "*\n"
    again = cli("init", str(folder))  # never overwrites: one line, exit 2
    assert again.code == 2 and "already exists; not overwritten" in again.err
    assert cli("-C", str(folder), "ingest").code == 0
    # a fresh contract puts no clause in force: the gate is EMPTY, no pass, and says what to add
    r = cli("-C", str(folder), "check")
    assert r.code == 1 and "gate: EMPTY (no rule ran" in r.out and "[plan], [cohort]" in r.out


def test_every_command_is_tested() -> None:
    from provgraph.cli import cli as group

    text = "".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py"))
    for name in group.commands:
        assert f'"{name}"' in text, f"command {name!r} has no CLI test"
