"""Targets of ``lineage`` and ``viz`` that are ordinary text (issue 22 item 7): a space, quote,
``<``, ``>``, backslash, tab or newline is bound as a literal, never written into a query, and
gives either the mentions written so or one "matches no node" line, never an internal error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ingest_bundle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provgraph.lineage.resolve import resolve

sys.path.insert(0, str(FIXTURES))
from make_release import make_bundle

BASE = "https://example.org/cxr-audit/"
HOSTILE = [
    "Claude 3 Sonnet",
    'say "hi"',
    "a<b",
    "a>b",
    "back\\slash",
    "tab\there",
    "new\nline",
    "x y:3",  # FILE:LINE with a space in the path
    "http://x y",  # looks like an IRI, is none
    "} } DROP ALL ; SELECT * WHERE { ?s ?p ?o",
    "bad\udcffbyte",  # an argument byte that is not UTF-8 (surrogateescape)
]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    root = make_bundle(tmp_path_factory.mktemp("targets") / "clean")
    return root


@pytest.fixture(scope="module")
def store(bundle: Path):
    store, _, problems = ingest_bundle(bundle)
    assert not problems
    return store


@pytest.mark.parametrize("target", HOSTILE)
def test_text_targets_resolve_to_nothing(store, target: str) -> None:
    assert resolve(store, target) == []


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=40) | st.sampled_from(HOSTILE).map(lambda t: t + ":1"))
def test_any_text_target_resolves_without_error(store, target: str) -> None:
    assert isinstance(resolve(store, target), list)


def test_a_text_target_finds_the_mentions_written_so(store) -> None:
    assert resolve(store, "five models") == [BASE + "mention/manuscript/main.tex/3/five%20models/1"]
    assert resolve(store, "GPT-4o") == [
        BASE + "mention/README.md/5/GPT-4o/1",
        BASE + "mention/manuscript/main.tex/3/GPT-4o/1",
    ]


@pytest.mark.parametrize("target", ["Claude 3 Sonnet", "tab\there", "new\nline", 'q"<>\\'])
def test_lineage_and_viz_say_matches_no_node(cli, tmp_path: Path, bundle: Path, target: str) -> None:
    root = bundle
    assert cli("-C", str(root), "ingest").code == 0
    r = cli("-C", str(root), "lineage", "--no-check", target)
    assert r.code == 1 and "matches no node" in r.out, (r.code, r.out, r.err)
    assert len(r.out.strip().splitlines()) == 1
    r = cli("-C", str(root), "viz", target, "--format", "dot", "-o", str(tmp_path / "v"))
    assert r.code == 2 and "matches no node" in r.err, (r.code, r.err)
    assert len(r.err.strip().splitlines()) == 1


def test_lineage_and_viz_of_a_model_name(cli, tmp_path: Path, bundle: Path) -> None:
    assert cli("-C", str(bundle), "ingest").code == 0
    r = cli("-C", str(bundle), "lineage", "--no-check", "five models")
    assert r.code == 0 and "five models" in r.out, (r.code, r.out, r.err)
    r = cli("-C", str(bundle), "viz", "five models", "--format", "dot", "-o", str(tmp_path / "v"))
    assert r.code == 0, r.err
    assert "lineage of five models" in (tmp_path / "v.dot").read_text()
