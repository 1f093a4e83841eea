"""The recorded check read back (:mod:`provgraph.rules.recorded`): equal to the check that was
run, and refused once an import, the rules or the record itself no longer match; `provgraph
report` uses it when current and runs the check otherwise.

The bundles are the repository's own: the output-gate example twins (examples/output_gate/),
the report tests' generated bundle with every output defect, and rule fixture pairs
(tests/fixtures/rules/<id>/).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from conftest import copy_bundle, ingest_bundle, rule_bundle
from viewtools import EXAMPLE, generated_flawed_bundle

from provgraph.lineage.gate import run_gate
from provgraph.rdf.resources import queries_dir
from provgraph.rules import CheckReport, load_rules
from provgraph.rules.recorded import read_recorded, rules_sha256
from provgraph.store import catalog


def _flat(report: CheckReport) -> list[tuple]:
    return [
        (
            r.rule.id,
            r.outcome,
            r.error,
            r.strict,
            r.blocks_gate,
            round(r.seconds, 9),
            [(v.focus, v.message, v.path, v.line) for v in r.violations],
        )
        for r in report.results
    ]


def _same(read: CheckReport, ran: CheckReport) -> None:
    assert _flat(read) == _flat(ran)
    assert (read.passed, read.empty, read.counts()) == (ran.passed, ran.empty, ran.counts())
    where = lambda c: (c.project, c.base_iri, c.clauses_in_force)  # noqa: E731
    assert where(read) == where(ran)
    assert read.started == ran.started and read.seconds == pytest.approx(ran.seconds)


BUNDLES = [
    ("output_gate-flawed", lambda dst: copy_bundle(EXAMPLE / "flawed", dst)),
    ("output_gate-clean", lambda dst: copy_bundle(EXAMPLE / "clean", dst)),
    ("generated-flawed", generated_flawed_bundle),
    *(
        (rule, lambda dst, rule=rule: rule_bundle(rule, "flawed", dst))
        for rule in ("cohort-repeated-patient", "analysis-cohort-mismatch", "pixel-image-without-rendering")
    ),
]


@pytest.mark.parametrize("name,make", BUNDLES, ids=[b[0] for b in BUNDLES])
def test_the_recorded_check_reads_back_as_the_one_run(tmp_path: Path, name, make) -> None:
    root = make(tmp_path / name)
    store, _, _ = ingest_bundle(root)
    rules = load_rules()
    ran = run_gate(store, rules)
    recorded = read_recorded(store, rules)
    assert recorded.current, recorded.reason
    assert recorded.reason == f"using the check recorded at {ran.started.isoformat()}"
    _same(recorded.report, ran)  # type: ignore[arg-type]
    if name.endswith("flawed") or name.startswith(("cohort", "analysis", "pixel")):
        assert any(r.violations for r in ran.results)  # the comparison covered violations


def test_no_record_then_a_changed_import_then_changed_rules(tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE / "flawed", tmp_path / "flawed")
    store, _, _ = ingest_bundle(root)
    rules = load_rules()
    assert read_recorded(store, rules).reason == "no check is recorded in the store"
    run_gate(store, rules, record=False)
    assert not read_recorded(store, rules).current
    run_gate(store, rules)
    assert read_recorded(store, rules).current
    # the same rules under another path are the same rules; one changed query is not
    changed = [*rules[:-1], dataclasses.replace(rules[-1], query=rules[-1].query + "\n# edited")]
    assert rules_sha256(changed) != rules_sha256(rules)
    assert read_recorded(store, changed).reason == "the rules differ from those of the recorded check"
    # an import changed after the check
    plan = root / "plan.csv"
    plan.write_text(plan.read_text() + "C999,study-9,cond-A,1\n")
    ingest_bundle(root, store=store)
    late = read_recorded(store, rules)
    assert not late.current and late.reason == "an import changed since the check was recorded"


def test_a_record_that_disagrees_with_its_clause_graphs_is_not_current(tmp_path: Path) -> None:
    """A check interrupted between its clause graphs and its record: the record names a start
    the clause graphs do not carry."""
    root = copy_bundle(EXAMPLE / "flawed", tmp_path / "flawed")
    store, _, _ = ingest_bundle(root)
    rules = load_rules()
    run_gate(store, rules)
    catalog.remove(store, "check:output")
    got = read_recorded(store, rules)
    assert not got.current and got.reason.startswith("the recorded check has no result for output-")


def test_report_uses_the_current_record_and_reruns_otherwise(cli, tmp_path: Path) -> None:
    root = copy_bundle(EXAMPLE / "flawed", tmp_path / "flawed")
    cli("-C", str(root), "ingest")
    first = cli("-C", str(root), "report")
    assert first.code == 0 and "running the check: no check is recorded in the store" in first.err
    page = (root / ".provgraph" / "report.html").read_text()
    again = cli("-C", str(root), "report")
    assert again.code == 0 and "using the check recorded at " in again.err, again.err
    assert "running the check" not in again.err
    reread = (root / ".provgraph" / "report.html").read_text()
    cut = lambda html: html[: html.index("<footer>")]  # noqa: E731 - the footer carries the time
    assert cut(reread) == cut(page)
    rerun = cli("-C", str(root), "report", "--rerun")
    assert rerun.code == 0 and "using the check recorded" not in rerun.err
    # another rule folder: one rule's message edited, so the record is not of these rules
    rules = tmp_path / "rules"
    shutil.copytree(queries_dir(), rules)
    rq = rules / "output" / "output-ok-without-output.rq"
    rq.write_text(rq.read_text().replace("is logged ok but", "is logged OK but"))
    other = cli("-C", str(root), "report", "--rules-dir", str(rules), "-o", str(tmp_path / "r.html"))
    assert other.code == 0 and "running the check: the rules differ" in other.err, other.err
    assert "is logged OK but" in (tmp_path / "r.html").read_text()
    # an import changed after the check: the report runs it again, with the change
    (root / "outputs" / "C002.txt").write_text("now written\n")
    cli("-C", str(root), "ingest")
    late = cli("-C", str(root), "report")
    assert "running the check: an import changed since the check was recorded" in late.err, late.err
    assert "outputs/C002.txt is empty" not in (root / ".provgraph" / "report.html").read_text()
