"""The reviewer harness's own files: ``audit_results/reviews.json`` and ``audit_report.md``.

Shapes from jheuer/replication-trap (commit abd52aa): README "Step 2" (the ``reviews.json`` a
reviewer writes: script, verdict, flaw_identified, confidence) and ``score_audit.py`` (which
reads it with the answer key and writes ``audit_report.md``). The files in
``tests/fixtures/replication_trap/`` are that harness's real output: ``answer_key.json`` written
by its ``generate_audit_scripts.py``, ``audit_report.md`` by its ``score_audit.py``, both run
unchanged on a ``reviews.json`` in the README's shape (17 of 18 flaws caught, 5 of 18 controls
flagged).
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from provgraph.ingest.testing import CONTRACT, ingest_bundle, write_bundle
from provgraph.rdf.terms import mint

REAL = Path(__file__).parent / "fixtures" / "replication_trap"
BASE = "https://example.org/t/"
REPORT = "audit_results/audit_report.md"
ROWS = ("category_detection_rate", "accuracy", "detection_rate", "false_positive_rate", "precision", "f1")


def _bundle(tmp_path: Path, name: str = "b") -> Path:
    root = write_bundle(tmp_path / name, {}, CONTRACT + "\n[analysis]\n")
    # the harness's own two folders, as a run leaves them (tables/ holds excerpts of the paper)
    for folder in ("audit_answer_key", "audit_results"):
        shutil.copytree(REAL / folder, root / folder, dirs_exist_ok=True)
    return root


def _check(root: Path) -> dict:
    """``provgraph ingest`` and ``provgraph check --format json`` with the real CLI."""
    from provgraph.cli import main  # the CLI is what a user runs; imported here as the test needs it

    out = root.parent / f"{root.name}-check.json"
    for args in (["ingest"], ["check", "--all-violations", "--format", "json", "-o", str(out)]):
        quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
        with quiet[0], quiet[1], contextlib.suppress(SystemExit):
            main(["-C", str(root), *args])
    return json.loads(out.read_text(encoding="utf-8"))


def _violations(report: dict, rule: str) -> list[tuple[str, str]]:
    found = next(r for r in report["rules"] if r["id"] == rule)
    return [(v["focus"].removeprefix(BASE), v["message"]) for v in found["violations"]]


def test_the_real_files_are_recognised_without_rejects(tmp_path: Path) -> None:
    ingested = ingest_bundle(_bundle(tmp_path))
    importers = {r.rel: (r.importer, r.records) for r in ingested.results if r.rel != "provgraph.toml"}
    assert importers == {
        "audit_answer_key/answer_key.json": ("answer-key", 36),
        "audit_results/reviews.json": ("reviews", 36),
        REPORT: ("audit-report", 9),
    }
    assert ingested.rejected == []
    rows = ingested.select(
        "SELECT ?name ?v ?line WHERE { ?r a pg:ReportedValue ; pg:statName ?name ; pg:value ?v ;"
        " pg:sourceLine ?line "
        "FILTER NOT EXISTS { ?r pg:confidence ?c } }"
    )
    assert {r["name"]: (r["v"], r["line"]) for r in rows} == {
        "category_detection_rate": ("1", "13"),
        "accuracy": ("0.833", "37"),
        "detection_rate": ("0.944", "38"),
        "false_positive_rate": ("0.278", "39"),
        "precision": ("0.773", "40"),
        "f1": ("0.85", "41"),
    }


def test_the_reports_figures_agree_with_the_recomputation(tmp_path: Path) -> None:
    report = _check(_bundle(tmp_path))
    assert _violations(report, "analysis-reported-differs") == []
    assert _violations(report, "analysis-reported-unrecomputed") == []
    assert report["gate"] == "pass"


def test_a_report_left_from_an_earlier_review_differs(tmp_path: Path) -> None:
    """The flawed twin: a reviewer changed one verdict (a flagged control, now PASS) after
    score_audit.py ran, so audit_report.md states the earlier figures."""
    root = _bundle(tmp_path)
    path = root / "audit_results" / "reviews.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    key = json.loads((root / "audit_answer_key" / "answer_key.json").read_text(encoding="utf-8"))
    flipped = next(r for r in data["reviews"] if r["verdict"] == "FAIL" and not key[r["script"]]["is_flawed"])
    flipped.update(verdict="PASS", flaw_identified=None)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    found = dict(_violations(_check(root), "analysis-reported-differs"))
    node = {n: str(mint(BASE, "reported", REPORT, f"name={n}")).removeprefix(BASE) for n in ROWS}
    assert "0.278" in found[node["false_positive_rate"]]
    stale = {n for n, iri in node.items() if iri in found}
    assert stale == {"false_positive_rate", "accuracy", "precision", "f1"}  # the flaws caught did not change


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            ("| Precision | 77.3% |", "| Precision | n/a |"),
            "audit_report.md:40: Precision: value 'n/a' is not",
        ),
    ],
)
def test_a_bad_figure_is_one_line(tmp_path: Path, edit: tuple[str, str], problem: str) -> None:
    root = _bundle(tmp_path)
    path = root / REPORT
    path.write_text(path.read_text(encoding="utf-8").replace(*edit), encoding="utf-8")
    ingested = ingest_bundle(root)
    assert [str(p)[: len(problem) + 14] for p in ingested.rejected] == [f"audit_results/{problem}"]
    assert ingested.result(REPORT).records == 8


def test_reviews_json_outside_audit_results_is_not_claimed(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"notes/reviews.json": json.dumps({"reviews": [{"script": "a.py"}]})})
    ingested = ingest_bundle(root)
    assert [r.rel for r in ingested.results if r.importer == "reviews"] == []
    assert ingested.select("SELECT ?r WHERE { ?r a pg:Review }") == []


def test_each_condition_folder_is_its_own_condition(tmp_path: Path) -> None:
    """``<condition>/audit_results/reviews.json``: the folder names the condition."""
    root = write_bundle(tmp_path / "b", {})
    for cond in ("claw", "sonnet"):
        shutil.copytree(REAL / "audit_results", root / cond / "audit_results")
    ingested = ingest_bundle(root)
    conditions = ingested.select("SELECT DISTINCT ?c WHERE { ?r a pg:Review ; pg:condition ?c }")
    assert sorted(r["c"].removeprefix(BASE) for r in conditions) == ["condition/claw", "condition/sonnet"]
