"""Rules read like their clause (issue 21): plain SPARQL of at most about 40 lines, no sub-select
repeated, no sub-select that only wraps one triple pattern (the hash-join trick that made
`prompt-identical-across-conditions` 84 lines of near-copies, where a fix to one copy could
miss the others). Speed comes from the derived evidence views the rules read, not from
rewriting the join by hand.
"""

from __future__ import annotations

import re

import pytest

from provgraph.rules import load_rules
from provgraph.rules.rule import Rule

#: Query lines a rule may have (comments, blank lines and PREFIX lines not counted).
MAX_LINES = 40

_RULES = {r.id: r for r in load_rules()}
_SUBSELECT = re.compile(r"\{\s*SELECT\b", re.IGNORECASE)
_VAR = re.compile(r"[?$]([A-Za-z_][A-Za-z0-9_]*)")


def _code(query: str) -> list[str]:
    """The query's lines without comments, blank lines and PREFIX declarations."""
    out = []
    for line in query.splitlines():
        text = line.strip()
        if not text or text.startswith("#") or text.upper().startswith("PREFIX"):
            continue
        out.append(text)
    return out


def _blocks(text: str) -> list[str]:
    """Every ``{ SELECT ... }`` block of ``text``, brace-balanced (IRIs and strings hold none)."""
    blocks = []
    for m in _SUBSELECT.finditer(text):
        depth = 0
        for i in range(m.start(), len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                blocks.append(text[m.start() : i + 1])
                break
    return blocks


def _normal(block: str) -> str:
    """A sub-select with whitespace collapsed and variables renamed by first appearance, so
    copies that differ only in variable names compare equal."""
    names: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        return "?v" + names.setdefault(m.group(1), str(len(names)))

    return _VAR.sub(rename, " ".join(block.split()))


def _one_pattern(block: str) -> bool:
    """True for ``{ SELECT ?a ?b WHERE { ?a pg:p ?b } }``: a sub-select holding one triple pattern."""
    m = re.search(r"WHERE\s*\{(.*)\}\s*\}\s*$", block, re.IGNORECASE | re.DOTALL)
    if m is None:
        return False
    inner = m.group(1).strip().rstrip(".").strip()
    if any(c in inner for c in "{};.") or re.search(r"\b(FILTER|BIND|OPTIONAL|VALUES)\b", inner, re.I):
        return False
    return len(inner.split()) == 3


def problems(rule: Rule) -> list[str]:
    code = _code(rule.query)
    text = "\n".join(code)
    found = []
    if len(code) > MAX_LINES:
        found.append(f"{len(code)} query lines (at most {MAX_LINES})")
    blocks = _blocks(text)
    seen: set[str] = set()
    for block in blocks:
        key = _normal(block)
        if key in seen:
            found.append(f"repeats a sub-select: {' '.join(block.split())[:80]}")
        seen.add(key)
    wrapped = [b for b in blocks if _one_pattern(b)]
    if wrapped:
        found.append(f"{len(wrapped)} sub-select(s) wrapping one triple pattern")
    return found


@pytest.mark.parametrize("rule_id", sorted(_RULES))
def test_rule_is_plain(rule_id: str) -> None:
    assert problems(_RULES[rule_id]) == [], f"{_RULES[rule_id].path}"


@pytest.mark.parametrize(
    ("rule_id", "engine"), sorted((r.id, engine) for r in _RULES.values() for engine, _ in r.forms)
)
def test_engine_form_is_plain(rule_id: str, engine: str) -> None:
    """An engine form is held to the same measure as the rule it stands in for."""
    rule = _RULES[rule_id]
    assert problems(Rule(**{**rule.__dict__, "query": rule.query_for(engine)})) == [], (rule_id, engine)


def test_checks_see_the_old_style() -> None:
    """The checks catch the shapes they are for (so a passing rule means something)."""
    copy = "{ SELECT ?x ?y WHERE { ?x <p> ?y } }"
    query = "SELECT ?focus ?message WHERE {\n" + f"{copy}\n{copy.replace('?y', '?z')}\n" + "}\n"
    rule = next(iter(_RULES.values()))
    old = Rule(**{**rule.__dict__, "query": query})
    found = problems(old)
    assert any("repeats a sub-select" in p for p in found)
    assert any("wrapping one triple pattern" in p for p in found)
    long = Rule(**{**rule.__dict__, "query": "SELECT * WHERE {\n" + "?s ?p ?o .\n" * 41 + "}\n"})
    assert any("query lines" in p for p in problems(long))
