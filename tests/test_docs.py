"""The README agrees with the code (datasette's ``test_docs.py`` style): the rules table has one
row per rule header, with its severity marker, and the paragraph above it says where rules
and their fixtures live. Adding a rule without its README row fails here."""

from __future__ import annotations

import re

import pytest
from conftest import REPO, RULE_FIXTURES

from provgraph.rules import load_rules
from provgraph.rules.rule import HEADER_KEYS

README = (REPO / "README.md").read_text(encoding="utf-8")
RULES = load_rules()
#: A table row: | `rule-id` (marker) | fires when |
_ROW = re.compile(r"^\| `([a-z0-9-]+)`(?: \(([a-z]+)\))? \| (.+) \|$")


def section(title: str) -> str:
    """The text of the README section ``## title`` (up to the next ``## ``)."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", README, re.S | re.M)
    assert match, f"README has no section '## {title}'"
    return match.group(1)


def rules_table() -> dict[str, str | None]:
    """Rule id -> severity marker (None when unmarked), from the table of '## Rules'."""
    rows: dict[str, str | None] = {}
    for line in section("Rules").splitlines():
        match = _ROW.match(line)
        if match:
            assert match.group(1) not in rows, f"README lists {match.group(1)} twice"
            assert match.group(3).strip(), f"README row {match.group(1)} says nothing"
            rows[match.group(1)] = match.group(2)
    return rows


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_every_rule_has_a_readme_row(rule) -> None:
    rows = rules_table()
    assert rule.id in rows, f"README '## Rules' has no row for {rule.id}"
    # a fail rule is unmarked; any other severity is named after the id, e.g. (restrict)
    assert rows[rule.id] == (None if rule.severity == "fail" else rule.severity), rule.id


def test_no_readme_row_without_a_rule() -> None:
    assert set(rules_table()) - {r.id for r in RULES} == set()


def test_readme_says_where_rules_and_fixtures_live() -> None:
    text = " ".join(section("Rules").split())
    assert "`provgraph/data/rules/<clause>/<rule-id>.rq`" in text
    assert all(
        r.path.relative_to(REPO).as_posix() == f"provgraph/data/rules/{r.clause}/{r.id}.rq" for r in RULES
    )
    assert "`tests/fixtures/rules/<rule-id>/`" in text
    assert all((RULE_FIXTURES / r.id / "flawed").is_dir() for r in RULES)
    for key in HEADER_KEYS:  # every header key is named
        assert f"`{key}`" in text, key
