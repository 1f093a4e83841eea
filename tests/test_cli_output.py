"""Output people read and scripts parse: capped rejections, quiet check, JSON on every listing
command, report's exit code, and viz of an ambiguous target.

Bundles are the output-gate example (examples/output_gate) and the release-stale-value rule
pair (tests/fixtures/rules/release-stale-value), run through the real CLI.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, copy_bundle, rule_bundle

from provgraph.cli.common import capped_rejections, reason_kind
from provgraph.ingest.base import Problem

EXAMPLE = REPO / "examples" / "output_gate"


@pytest.fixture
def flawed(tmp_path: Path) -> Path:
    return copy_bundle(EXAMPLE / "flawed", tmp_path / "flawed")


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    return copy_bundle(EXAMPLE / "clean", tmp_path / "clean")


@pytest.fixture
def systematic(flawed: Path) -> Path:
    """calls.jsonl with one generator bug repeated: 30 truncated objects and 5 arrays."""
    with (flawed / "calls.jsonl").open("a", encoding="utf-8") as fh:
        fh.writelines(f'{{"call_id": "Z{i}", \n' for i in range(30))
        fh.writelines(f"[{i}]\n" for i in range(5))
    return flawed


def _rejected(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("provgraph: rejected: ")]


def test_rejections_are_capped_per_file_with_counts_per_reason(cli, systematic: Path) -> None:
    r = cli("-C", str(systematic), "ingest")
    assert r.code == 2
    lines = _rejected(r.err)
    listed = [x for x in lines if re.match(r"provgraph: rejected: calls\.jsonl:\d+: ", x)]
    assert len(listed) == 20
    assert "calls.jsonl: 15 more records rejected (`provgraph ingest --all-rejections` lists them):" in r.err
    counts = [x for x in lines if " x " in x]
    assert counts == [
        "provgraph: rejected: calls.jsonl:   10 x malformed JSON: Expecting property name enclosed "
        "in double quotes (column N)",
        "provgraph: rejected: calls.jsonl:   5 x expected a JSON object, got list",
    ]
    assert "35 records rejected" in r.out  # the summary still counts every one


def test_max_rejections_and_all_rejections(cli, systematic: Path) -> None:
    few = cli("-C", str(systematic), "ingest", "--max-rejections", "2")
    assert len([x for x in _rejected(few.err) if re.search(r"calls\.jsonl:\d+: ", x)]) == 2
    assert "33 more records rejected" in few.err
    every = cli("-C", str(systematic), "ingest", "--all-rejections")
    assert len([x for x in _rejected(every.err) if re.search(r"calls\.jsonl:\d+: ", x)]) == 35
    assert "more records rejected" not in every.err


def test_reason_kind_blanks_values_not_words() -> None:
    assert reason_kind("unknown model 'gpt-5' in column 3") == "unknown model '…' in column N"
    problems = [Problem("a.csv", i, f"bad id 'X{i}'") for i in range(4)] + [Problem("b.csv", 1, "empty")]
    assert list(capped_rejections(problems, 1)) == [
        "provgraph: rejected: a.csv:0: bad id 'X0'",
        "provgraph: rejected: a.csv: 3 more records rejected"
        " (`provgraph ingest --all-rejections` lists them):",
        "provgraph: rejected: a.csv:   3 x bad id '…'",
        "provgraph: rejected: b.csv:1: empty",
    ]


def test_ingest_json_carries_every_rejection(cli, systematic: Path) -> None:
    r = cli("-C", str(systematic), "ingest", "--format", "json")
    assert r.code == 2
    doc = json.loads(r.out)
    assert set(doc) == {"store", "sources", "rejections", "notes", "counts", "quads"}
    assert len(doc["rejections"]) == 35 and doc["counts"]["rejected"] == 35
    assert doc["notes"] == [] and doc["counts"]["notes"] == 0  # notes: records imported all the same
    assert set(doc["rejections"][0]) == {"path", "line", "reason"}
    calls = next(s for s in doc["sources"] if s["source"] == "calls.jsonl")
    assert calls["importer"] == "calls" and calls["outcome"] == "imported" and calls["rejected"] == 35
    assert set(calls) == {
        "source",
        "importer",
        "outcome",
        "records",
        "triples",
        "rejected",
        "notes",
        "seconds",
        "error",
    }
    assert doc["quads"] > 0 and not _rejected(r.err)  # scripts read the JSON, not stderr


def test_ingest_dry_run_json(cli, flawed: Path) -> None:
    doc = json.loads(cli("-C", str(flawed), "ingest", "--dry-run", "--format", "json").out)
    assert {"path": "calls.jsonl", "importer": "calls"} in doc["plan"] and doc["problems"] == []


def test_quiet_check_prints_only_the_verdict(cli, flawed: Path) -> None:
    cli("-C", str(flawed), "ingest")
    r = cli("-C", str(flawed), "-q", "check")
    assert r.code == 1
    assert len(r.out.splitlines()) == 1 and r.out.startswith("gate: FAIL (4 blocking rules violated")
    assert r.err == ""


def test_quiet_check_still_names_a_rule_that_could_not_run(cli, flawed: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules" / "output"
    rules.mkdir(parents=True)
    text = (REPO / "provgraph" / "data" / "rules" / "output" / "output-unplanned-record.rq").read_text()
    text = text.replace(
        "# requires: pg:PlannedCall, pg:CallRecord", "# requires: pg:PlannedCall, pg:NoSuchEvidence"
    )
    assert "pg:NoSuchEvidence" in text
    (rules / "output-unplanned-record.rq").write_text(text)
    cli("-C", str(flawed), "ingest")
    r = cli("-C", str(flawed), "-q", "check", "--rules-dir", str(tmp_path / "rules"))
    assert r.code == 1
    assert len(r.out.splitlines()) == 1 and "could not run" in r.out
    assert r.err.startswith("provgraph: error: output-unplanned-record could not run: ")
    assert len(r.err.splitlines()) == 1


def test_rules_json(cli) -> None:
    doc = json.loads(cli("rules", "--format", "json", "--clause", "output").out)
    assert doc["rules"] and {r["clause"] for r in doc["rules"]} == {"output"}
    rule = next(r for r in doc["rules"] if r["id"] == "output-unplanned-record")
    assert set(rule) == {
        "id",
        "clause",
        "severity",
        "title",
        "remedy",
        "why",
        "requires",
        "applies",
        "lineage",
        "engine_forms",
    }
    assert rule["severity"] == "fail" and rule["why"].startswith("documented mismatch")


def test_importers_json(cli) -> None:
    doc = json.loads(cli("importers", "--format", "json").out)
    calls = next(i for i in doc["importers"] if i["name"] == "calls")
    assert set(calls) == {"name", "version", "reads", "description"}


def test_info_json(cli, flawed: Path) -> None:
    cli("-C", str(flawed), "ingest")
    doc = json.loads(cli("-C", str(flawed), "info", "--format", "json").out)
    assert set(doc) == {
        "store",
        "quads",
        "base_iri",
        "graphs",
        "classes",
        "unfinished_ingests",
        "failed_sources",
    }
    assert doc["base_iri"] == "https://example.org/output-gate-flawed/"
    assert any(g["source"] == "import:calls:calls.jsonl" for g in doc["graphs"])


def test_lineage_json(cli, tmp_path: Path) -> None:
    bundle = rule_bundle("release-stale-value", "flawed", tmp_path / "b")
    cli("-C", str(bundle), "ingest")
    r = cli("-C", str(bundle), "lineage", "--format", "json", "154.73")
    assert r.code == 0
    doc = json.loads(r.out)
    assert doc["target"] == "154.73" and len(doc["matches"]) == 2
    assert {m["status"] for m in doc["matches"]} == {"withdrawn"}
    assert {"root", "status", "nodes", "edges"} <= set(doc["matches"][0])
    none = cli("-C", str(bundle), "lineage", "--no-check", "--format", "json", "999.999")
    assert none.code == 1 and json.loads(none.out) == {"target": "999.999", "matches": []}
    assert "matches no node" in none.err


def test_report_exit_code_mirrors_the_gate_only_with_gate(
    cli, flawed: Path, clean: Path, tmp_path: Path
) -> None:
    cli("-C", str(flawed), "ingest")
    cli("-C", str(clean), "ingest")
    assert cli("-C", str(flawed), "report", "--no-graph", "-o", str(tmp_path / "f.html")).code == 0
    assert cli("-C", str(flawed), "report", "--no-graph", "--gate", "-o", str(tmp_path / "g.html")).code == 1
    assert (tmp_path / "g.html").stat().st_size > 0  # written before the exit code says fail
    assert cli("-C", str(clean), "report", "--no-graph", "--gate", "-o", str(tmp_path / "c.html")).code == 0


def test_viz_ambiguous_target_lists_and_draws_every_match(cli, tmp_path: Path) -> None:
    """154.73 is written in the README, in its copy inside a released zip, and is the
    registry's superseded value: three nodes, as `lineage 154.73` lists them."""
    bundle = rule_bundle("release-stale-value", "flawed", tmp_path / "b")
    (bundle / "release").mkdir()
    with zipfile.ZipFile(bundle / "release" / "x.zip", "w") as z:
        z.write(bundle / "README.md", "README.md")
    cli("-C", str(bundle), "ingest")
    lineage = cli("-C", str(bundle), "lineage", "--no-check", "154.73").out
    r = cli("-C", str(bundle), "viz", "154.73", "--format", "dot", "-o", str(tmp_path / "v"))
    assert r.code == 0, r.err
    assert "154.73 matches 3 nodes, all drawn:" in r.err
    listed = [x.strip() for x in r.err.splitlines() if x.startswith("  ")]
    assert listed == [x.strip() for x in lineage.splitlines()[1:4]]
    dot = (tmp_path / "v.dot").read_text()
    assert len(re.findall(r'penwidth="?3\.5', dot)) == 3  # each match drawn as a focus


def test_junit_is_read_back_by_junitparser(cli, flawed: Path, tmp_path: Path) -> None:
    """JUnit XML as CI systems read it (junitparser, the parser GitHub/GitLab report actions use)."""
    from junitparser import Failure, JUnitXml, Skipped  # test extra

    cli("-C", str(flawed), "ingest")
    target = tmp_path / "check.xml"
    assert cli("-C", str(flawed), "check", "--format", "junit", "-o", str(target)).code == 1
    xml = JUnitXml.fromfile(str(target))
    suites = {suite.name: suite for suite in xml}
    output = suites["output"]
    assert output.failures == 4 and output.errors == 0
    cases = {case.name: case for case in output}
    failed = [name for name, case in cases.items() if any(isinstance(x, Failure) for x in case.result)]
    assert sorted(failed) == [
        "output-duplicate-terminal",
        "output-ok-without-output",
        "output-planned-without-terminal",
        "output-unplanned-record",
    ]
    failure = next(x for x in cases["output-unplanned-record"].result if isinstance(x, Failure))
    assert "calls.jsonl:5" in failure.text and "remedy:" in failure.text
    skipped = [c for s in xml for c in s if any(isinstance(x, Skipped) for x in c.result)]
    assert skipped and all(c.classname.startswith("provgraph.") for c in skipped)
