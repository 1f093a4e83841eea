"""Every rule against its flawed and clean fixture (pySHACL-style pairs), the fail-closed
behaviour of the runner, and meta-tests that keep rules, fixtures and ontology in step.

A pair is the flawed bundle plus a clean overlay (``tests/fixtures/rulepairs.py``); the
flawed twin's ``expected.json`` pins every violation's focus, severity and message, written by
``tests/fixtures/pin_rules.py``: a rule whose output changes fails here until it is re-pinned.
"""

from __future__ import annotations

import gc
import json
import re
import time
from pathlib import Path

import pytest
from conftest import RULE_FIXTURES, ingest_bundle, rule_bundle, write_bundle
from fixtures import rulepairs

from provgraph.errors import RuleError, StoreUnavailable, UsageError
from provgraph.lineage.gate import run_gate
from provgraph.rdf.vocab import PG_NS, defined_terms
from provgraph.rules import load_rules, parse_rule, run_check
from provgraph.rules.formats import gate_line
from provgraph.rules.rule import APPLIES
from provgraph.rules.runner import _FACTS, select_rules
from provgraph.store.parallel import in_parallel

RULES = load_rules()
RULE_IDS = [r.id for r in RULES]


def check(root: Path, rules=None):
    store, results, problems = ingest_bundle(root)
    assert not problems and all(not r.problems and r.outcome == "imported" for r in results), [
        str(p) for r in results for p in r.problems
    ] + [r.error for r in results if r.error]
    return run_gate(store, rules or RULES, record=False)


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_rule_fires_on_its_flawed_fixture(rule_id: str, tmp_path: Path) -> None:
    expected = rulepairs.expected(rule_id)["violations"]
    report = check(rule_bundle(rule_id, "flawed", tmp_path / "flawed"))
    (result,) = [r for r in report.results if r.rule.id == rule_id]
    assert result.outcome == "violated", result.error
    found = [
        {"focus": report.short(v.focus), "severity": result.rule.severity, "message": v.message}
        for v in result.violations
    ]
    assert rulepairs.unpinned(expected, found) == [], "re-pin: python tests/fixtures/pin_rules.py " + rule_id
    assert all(v.message and not v.message.startswith("?") for v in result.violations)
    # a fail rule closes the gate; restrict and info rules mark claims but let it pass
    assert report.passed is (result.rule.severity != "fail")


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_rule_is_silent_on_its_clean_twin(rule_id: str, tmp_path: Path) -> None:
    report = check(rule_bundle(rule_id, "clean", tmp_path / "clean"))
    (result,) = [r for r in report.results if r.rule.id == rule_id]
    assert result.outcome == "pass", [v.message for v in result.violations] or result.error
    # no false positives from any other rule either: the clean twin passes the whole gate
    fired = {
        r.rule.id: [v.message for v in r.violations]
        for r in report.results
        if r.outcome not in ("pass", "skipped", "not-applicable")
    }
    assert fired == {}
    assert report.passed


def test_every_rule_has_a_fixture_pair() -> None:
    for rule in RULES:
        folder = RULE_FIXTURES / rule.id
        assert (folder / "flawed" / "provgraph.toml").is_file(), rule.id
        assert {p.name for p in folder.iterdir()} <= {"flawed", "clean", rulepairs.REMOVED, "expected.json"}
        assert (folder / "clean").is_dir() or rulepairs.removed(folder), f"{rule.id}: twins are identical"
        flawed = rulepairs.files(folder / "flawed")
        overlay = rulepairs.files(folder / "clean") if (folder / "clean").is_dir() else {}
        # the overlay holds only what differs, and removes only what the flawed twin has
        assert [rel for rel, content in overlay.items() if flawed.get(rel) == content] == [], rule.id
        assert set(rulepairs.removed(folder)) <= set(flawed) - set(overlay), rule.id
        pins = json.loads((folder / "expected.json").read_text())
        assert set(pins) == {"rule", "violations"} and pins["rule"] == rule.id
        assert pins["violations"] and {p["severity"] for p in pins["violations"]} == {rule.severity}
    assert {p.name for p in RULE_FIXTURES.iterdir() if p.is_dir()} == set(RULE_IDS)


def test_a_changed_message_fails_its_pins() -> None:
    pinned = [{"focus": "call/C1", "severity": "fail", "message": "call C1 has no result"}]
    pattern = [{"focus": "call/C1", "severity": "fail", "message_pattern": r"call C1 has no \w+"}]
    same = [{"focus": "call/C1", "severity": "fail", "message": "call C1 has no result"}]
    reworded = [{"focus": "call/C1", "severity": "fail", "message": "call C1 lacks a result"}]
    assert rulepairs.unpinned(pinned, same) == rulepairs.unpinned(pattern, same) == []
    assert rulepairs.unpinned(pinned, reworded) and rulepairs.unpinned(pattern, reworded)
    assert rulepairs.unpinned(pinned, [{**same[0], "severity": "restrict"}])
    assert rulepairs.unpinned(pinned, same + same)


def test_every_pg_term_in_rules_is_defined() -> None:
    defined = defined_terms()
    for rule in RULES:
        text = rule.path.read_text()
        used = set(re.findall(r"\bpg:([A-Za-z][\w]*)", text))
        used |= set(re.findall(re.escape(PG_NS) + r"([A-Za-z]\w*)", text))
        assert used <= defined, f"{rule.id} uses undefined pg: terms {sorted(used - defined)}"


def test_rules_are_distinct_selects() -> None:
    for rule in RULES:
        body = re.sub(r"#[^\n]*", "", rule.query)
        assert re.search(r"SELECT\s+DISTINCT\s+\?focus\s+\?message", body), (
            f"{rule.id}: rules must be SELECT DISTINCT ?focus ?message (the default graph is a "
            "union of named graphs, so a fact stated twice would otherwise count twice)"
        )


def test_missing_evidence_fails_closed(tmp_path: Path) -> None:
    # A contract that declares the output clause, but no call log at all.
    root = write_bundle(tmp_path / "b", {"plan.csv": "call_id,case,condition\nC1,s1,A\n"})
    report = check(root)
    in_force = [r for r in report.results if r.rule.clause == "output"]
    assert {r.outcome for r in in_force} == {"error"}
    assert {r.outcome for r in report.results if r.rule.clause != "output"} <= {"skipped"}
    assert "missing evidence: the graph has no pg:CallRecord nodes" in in_force[0].error
    assert not report.passed


def test_every_applies_fact_is_read_from_the_contract() -> None:
    assert set(_FACTS) == set(APPLIES)
    assert {a for r in RULES for a in r.applies} == set(APPLIES)  # each fact is used by a rule


def test_clause_not_in_contract_is_skipped_and_an_empty_gate_does_not_pass(tmp_path: Path) -> None:
    """Issue 14: a contract that puts no clause in force checks nothing, which is no pass."""
    contract = '[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n'
    root = write_bundle(tmp_path / "b", {}, contract)
    report = check(root)
    assert {r.outcome for r in report.results} == {"skipped"}
    assert report.empty and not report.passed
    assert gate_line(report).startswith("gate: EMPTY (no rule ran, so nothing was shown to hold")


def test_a_rule_whose_evidence_the_contract_rules_out_is_not_applicable(tmp_path: Path) -> None:
    """Issue 14: PNG images from the start have no DICOM and no rendering: the rendering rules
    do not apply (neither pass nor fail), while the comparison across conditions still runs."""
    root = rule_bundle("pixel-conditions-differ-in-image", "clean", tmp_path / "b")
    contract = (root / "provgraph.toml").read_text()
    (root / "provgraph.toml").write_text(contract.replace("[pixel]\n", '[pixel]\ninputs = "images"\n'))
    report = check(root)
    by_id = {r.rule.id: r for r in report.results}
    for rule_id in (
        "pixel-image-without-rendering",
        "pixel-monochrome-polarity",
        "pixel-rendered-hash-mismatch",
    ):
        assert by_id[rule_id].outcome == "not-applicable", rule_id
        assert "DICOM sources" in by_id[rule_id].error
    assert by_id["pixel-conditions-differ-in-image"].outcome == "pass"
    assert report.passed


def test_broken_rule_fails_closed(tmp_path: Path) -> None:
    folder = tmp_path / "rules" / "output"
    folder.mkdir(parents=True)
    (folder / "output-broken.rq").write_text(
        "# id: output-broken\n# clause: output\n# severity: info\n"
        + _TRW
        + "SELECT DISTINCT ?focus ?message WHERE { ?focus ?p }\n"
    )
    (folder / "output-noproj.rq").write_text(
        "# id: output-noproj\n# clause: output\n# severity: info\n"
        + _TRW
        + "SELECT DISTINCT ?s WHERE { ?s ?p ?o }\n"
    )
    rules = load_rules(tmp_path / "rules")
    report = check(rule_bundle("output-unplanned-record", "clean", tmp_path / "clean"), rules)
    by_id = {r.rule.id: r for r in report.results}
    assert by_id["output-broken"].outcome == "error"
    assert by_id["output-broken"].error.startswith("query does not parse")
    assert by_id["output-noproj"].outcome == "error"
    assert "?focus and ?message" in by_id["output-noproj"].error
    assert not report.passed  # an info rule that cannot run still closes the gate


_TRW = "# title: t\n# remedy: r\n# why: w\n"  # the required keys every test header shares


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("# id: x\n", "rule header lacks clause, severity, title, remedy, why"),
        (
            "# id: other\n# clause: output\n# severity: fail\n" + _TRW,
            "must equal the file name",
        ),
        (
            "# id: x\n# clause: cohrt\n# severity: fail\n" + _TRW,
            "unknown clause 'cohrt'",
        ),
        (
            "# id: x\n# clause: output\n# severity: fatal\n" + _TRW,
            "unknown severity 'fatal'",
        ),
        (
            "# id: x\n# clause: output\n# severity: fail\n" + _TRW + "# owner: me\n",
            ":7: unknown header key 'owner'",
        ),
        (
            "# id: x\n# clause: pixel\n# severity: fail\n" + _TRW,
            "must live in a folder named pixel/",
        ),
        (
            "# id: x\n# clause: output\n# severity: fail\n" + _TRW + "# lineage: lost\n",
            "unknown lineage status 'lost'",
        ),
        (
            "# id: x\n# clause: output\n# severity: fail\n" + _TRW + "# applies: dicom\n",
            "unknown applies fact 'dicom'",
        ),
    ],
)
def test_bad_rule_headers(tmp_path: Path, header: str, message: str) -> None:
    path = tmp_path / "output" / "x.rq"
    path.parent.mkdir()
    path.write_text(header + "SELECT DISTINCT ?focus ?message WHERE { ?focus ?p ?message }\n")
    with pytest.raises(RuleError, match=re.escape(message)):
        parse_rule(path)


def test_header_continuation_lines() -> None:
    rule = next(r for r in RULES if r.id == "output-ok-without-output")
    assert rule.remedy.startswith("Treat the call as failed: re-run it, or log it with an error status.")
    assert "(the audit's 299 instead of 297)" in rule.remedy
    assert rule.requires == (PG_NS + "PlannedCall", PG_NS + "CallRecord")


def test_selection_errors() -> None:
    with pytest.raises(UsageError, match="unknown clause 'outptu'"):
        select_rules(RULES, ["outptu"])
    with pytest.raises(UsageError, match="unknown rule 'nope'"):
        select_rules(RULES, rule_ids=["nope"])
    assert [r.id for r in select_rules(RULES, rule_ids=["output-unplanned-record"])] == [
        "output-unplanned-record"
    ]


def test_no_contract_in_store_is_a_usage_error(memory_store) -> None:
    with pytest.raises(UsageError, match="no contract in the store"):
        run_check(memory_store, RULES)


def test_rules_in_parallel_keep_their_order_and_stop_at_a_store_failure() -> None:
    # results come back in the rules' order though later ones finish first; a rule whose
    # store stops answering ends the run, and the rules not yet started never start
    started: list[int] = []

    def run(i: int) -> int:
        started.append(i)
        time.sleep((10 - i) * 0.002 if i < 10 else 0.01)
        if i == 12:
            raise StoreUnavailable("gone")
        return i

    assert list(in_parallel(run, range(10), 2)) == list(range(10))
    started.clear()
    with pytest.raises(StoreUnavailable):
        list(in_parallel(run, range(200), 2))
    assert len(started) < 200


def test_a_step_failing_on_a_worker_frees_its_open_result_stream_there(memory_store, monkeypatch) -> None:
    # A result stream pyoxigraph opened on a worker thread must be freed on that thread: freed
    # on the caller's (through the traceback the error carries there), pyo3 leaks it and
    # reports it as unraisable ("PyQuerySolutions is unsendable, but is being dropped on
    # another thread"), as two server tests did at random before the worker cleared its frames.
    unraisable: list[str] = []
    monkeypatch.setattr("sys.unraisablehook", lambda u: unraisable.append(str(u.exc_value)))
    memory_store.update("INSERT DATA { <http://x/a> <http://x/p> 1, 2, 3 }")

    def half_read(_: int) -> None:
        rows = memory_store.stream("SELECT ?o WHERE { ?s ?p ?o }")
        next(rows)
        raise ValueError("the step failed half-way through its answer")

    with pytest.raises(ValueError, match="half-way"):
        list(in_parallel(half_read, range(2), 2))
    gc.collect()
    assert unraisable == []
