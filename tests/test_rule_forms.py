"""Engine forms (issue 21): a rule rewritten for one engine's planner
(``<clause>/<rule-id>.<engine>.rq``) returns the rule's own rows on every fixture, so the plain
rule stays the reference and a fix to it that misses the form fails here. On Virtuoso itself
the forms are compared in ``test_virtuoso.py`` (every fixture pair of the form's clause).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import RULE_FIXTURES, ingest_bundle, rule_bundle

from provgraph.errors import RuleError
from provgraph.lineage.gate import refresh_derived
from provgraph.rules import load_rules
from provgraph.rules.recorded import rules_sha256
from provgraph.rules.runner import run_rule
from provgraph.store import open_store

RULES = load_rules()
FORMED = [r for r in RULES if r.forms]
PAIRS = sorted(p.name for p in RULE_FIXTURES.iterdir() if p.is_dir())


def rows(store, query: str) -> list[tuple[str, str]]:
    return sorted((r["focus"].value, r["message"].value) for r in store.select(query))


def test_the_shipped_rules_have_forms() -> None:
    """(So the comparison below compares something.)"""
    assert {(r.id, e) for r in FORMED for e, _ in r.forms} >= {("model-undeclared", "virtuoso")}


@pytest.mark.parametrize("pair", PAIRS)
def test_every_form_returns_its_rules_rows(pair: str, tmp_path: Path) -> None:
    for twin in ("flawed", "clean"):
        store = ingest_bundle(rule_bundle(pair, twin, tmp_path / twin)).store
        refresh_derived(store)
        for rule in FORMED:
            reference = rows(store, rule.query)
            for engine, query in rule.forms:
                assert rows(store, query) == reference, (rule.id, engine, twin)


# -- which query runs where ---------------------------------------------------------------------

_HEAD = "# id: output-x\n# clause: output\n# severity: info\n# title: t\n# remedy: r\n# why: w\n"
_NONE = "SELECT ?focus ?message WHERE { FILTER(false) }\n"
_ONE = 'SELECT ?focus ?message WHERE { BIND(<urn:x> AS ?focus) BIND("from the form" AS ?message) }\n'


def _rules(tmp_path: Path, forms: dict[str, str]) -> Path:
    folder = tmp_path / "rules" / "output"
    folder.mkdir(parents=True)
    (folder / "output-x.rq").write_text(_HEAD + _NONE)
    for name, text in forms.items():
        (folder / name).write_text(text)
    return tmp_path / "rules"


def test_a_store_runs_its_engines_form(tmp_path: Path) -> None:
    """The embedded store is Oxigraph: it runs an ``oxigraph`` form and the rule's own query
    where the only form is another engine's; a view of some graphs runs what its store runs."""
    root = _rules(tmp_path, {"output-x.oxigraph.rq": "# why: test\n" + _ONE})
    (rule,) = load_rules(root)
    store = open_store(None)
    assert store.engine == "oxigraph"
    assert [v.message for v in run_rule(store, rule).violations] == ["from the form"]
    assert [v.message for v in run_rule(store.within([]), rule).violations] == ["from the form"]
    other = _rules(tmp_path / "b", {"output-x.virtuoso.rq": "# why: test\n" + _ONE})
    (rule,) = load_rules(other)
    assert run_rule(store, rule).outcome == "pass"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("output-x.sparkle.rq", "# why: w\n" + _ONE, "unknown engine 'sparkle'"),
        ("output-y.virtuoso.rq", "# why: w\n" + _ONE, "an engine form of no rule (no output-y.rq beside it)"),
        ("output-x.virtuoso.rq", _ONE, "header needs why:"),
        ("output-x.virtuoso.rq", "# why: w\n# severity: fail\n" + _ONE, ":2: unknown header key 'severity'"),
        ("output-x.virtuoso.rq", "# why: w\n", "no query after the header"),
    ],
)
def test_bad_engine_forms(tmp_path: Path, name: str, text: str, message: str) -> None:
    with pytest.raises(RuleError, match=re.escape(message)):
        load_rules(_rules(tmp_path, {name: text}))


def test_forms_are_listed_and_recorded(cli, tmp_path: Path) -> None:
    """``provgraph rules`` names a rule's forms; the check's record hashes them, so a recorded
    check is stale once a form changes."""
    doc = json.loads(cli("rules", "--format", "json", "--clause", "model").out)
    forms = {r["id"]: r["engine_forms"] for r in doc["rules"]}
    assert forms["model-undeclared"] == ["virtuoso"] and forms["model-family-mismatch"] == []
    root = _rules(tmp_path, {"output-x.virtuoso.rq": "# why: test\n" + _ONE})
    (rule,) = load_rules(root)
    edited = replace(rule, forms=(("virtuoso", _ONE + "# edited\n"),))
    assert len({rules_sha256([rule]), rules_sha256([edited]), rules_sha256([replace(rule, forms=())])}) == 3
