"""The decoding view (provgraph/rules/decodingview.py) and the rule that reads it,
``output-decoding-mismatch``, on a retried call, a number written another way and a call
recording no settings.

The bundle is the rule's flawed fixture (tests/fixtures/rules/output-decoding-mismatch/flawed:
call records in the shape of ``provgraph.importers.calls``, a plan declaring ``decoding =
{ temperature = 0, max_tokens = 512 }``) with its records rewritten per case.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ingest_bundle, rule_bundle

from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules
from provgraph.rules.decodingview import gather

RULE = [r for r in load_rules() if r.id == "output-decoding-mismatch"]


def _bundle(tmp_path: Path) -> Path:
    root = rule_bundle("output-decoding-mismatch", "flawed", tmp_path / "b")
    calls = root / "calls.jsonl"
    records = {r["call_id"]: r for r in map(json.loads, calls.read_text().splitlines())}
    first = dict(records["C001"], decoding={"temperature": 0.0, "max_tokens": 512})
    # C002 retried: its first attempt logged no settings, its second did (the call states them)
    retry = dict(records["C002"], status="error", decoding=None)
    answered = dict(records["C002"], decoding={"temperature": 0, "max_tokens": 512})
    off = dict(records["C003"], decoding={"temperature": 0.7, "max_tokens": 512})
    silent = dict(records["C004"], decoding=None)
    lines = [first, retry, answered, off, silent]
    calls.write_text("".join(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n" for r in lines))
    return root


def test_view_compares_values_and_reads_the_whole_call(tmp_path: Path) -> None:
    store, results, problems = ingest_bundle(_bundle(tmp_path))
    assert not problems and all(r.outcome == "imported" for r in results)
    off, unstated = gather(store)
    short = sorted((n.split("/record/")[1], s.rsplit("#", 1)[1]) for n, s in off)
    assert short == [("calls.jsonl/C003/1", "temperature")]  # 0.0 is the plan's 0
    short = sorted((n.split("/record/")[1], s.rsplit("#", 1)[1]) for n, s in unstated)
    # the retry's first attempt is covered by its second; C004 states nothing anywhere
    assert short == [("calls.jsonl/C004/1", "maxTokens"), ("calls.jsonl/C004/1", "temperature")]


def test_rule_reports_what_the_view_found(tmp_path: Path) -> None:
    store, _, _ = ingest_bundle(_bundle(tmp_path))
    (result,) = run_gate(store, RULE, record=False).results
    assert sorted(v.message for v in result.violations) == [
        "call C003: the record at calls.jsonl:4 ran with temperature 0.7; the plan expects 0",
        "call C004 records no max_tokens; the plan expects 512",
        "call C004 records no temperature; the plan expects 0",
    ]
