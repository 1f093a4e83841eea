"""``provgraph stats`` and the analysis clause through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import CONTRACT, RULE_FIXTURES, copy_bundle, write_bundle


def test_stats_shows_reported_beside_recomputed(cli, tmp_path: Path) -> None:
    root = copy_bundle(RULE_FIXTURES / "analysis-positional-join" / "flawed", tmp_path / "b")
    assert cli("-C", str(root), "ingest").code == 0
    r = cli("-C", str(root), "stats")
    assert r.code == 0, r.err
    flat = " ".join(r.out.split())
    assert "recomputed" in flat and "reported values matched, 0 unmatched" in flat
    assert "globally-complete 16 18 3" in flat  # cohort rule, blocks used, of, conditions
    assert "13 positions pair different (case, finding) blocks" in flat
    assert "reference UNCERTAIN excluded by the declared mapping 3" in flat
    assert "POSITIONAL" in flat
    assert (
        "cochran_q (globally-complete): the reported value reproduces the positional-truncation route" in flat
    )
    doc = json.loads(cli("-C", str(root), "stats", "--format", "json").out)
    q = next(row for row in doc["reported"] if row["statistic"] == "cochran_q (globally-complete)")
    assert q["reported"] == "17.20" and q["n"] == 16 and q["cohort"] == "globally-complete"
    assert q["status"] == "POSITIONAL" and q["sensitivity"]["positional-truncation"]["n"] == 16
    assert q["method"].startswith("Cochran's Q over 3 conditions, chi-square(2) reference")
    assert {m["cohort_rule"] for m in doc["matrices"]} == {
        "globally-complete",
        "positional-truncation",
        "pairwise-available",
    }
    assert q["iri"] == "statistic/name%3Dcochran_q/route%3Dglobally-complete"
    listing = cli("-C", str(root), "stats", "--all", "--name", "cochran_q")
    assert "cochran_q (positional-truncation)" in listing.out and "mcnemar" not in listing.out
    every = json.loads(cli("-C", str(root), "stats", "--all", "--format", "json").out)["all"]
    assert len(every) == len({s["iri"] for s in every}) > 100
    # check reads the same statistics and names the defect
    r = cli("-C", str(root), "check", "--clause", "analysis")
    assert r.code == 1
    assert "reproduces the positional-truncation route (17.2, n = 16), not the keyed" in " ".join(
        r.out.split()
    )


def test_stats_unmatched_value_says_why(cli, tmp_path: Path) -> None:
    root = copy_bundle(RULE_FIXTURES / "analysis-reported-unrecomputed" / "flawed", tmp_path / "b")
    cli("-C", str(root), "ingest")
    doc = json.loads(cli("-C", str(root), "stats", "--format", "json").out)
    (row,) = [r for r in doc["reported"] if r["status"] == "no match"]
    assert row["reason"].startswith("provgraph does not recompute 'kappa'")


def test_stats_with_nothing_to_recompute_and_before_ingest(cli, tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    r = cli("-C", str(root), "stats")
    assert r.code == 2 and "no contract in the store" in r.err
    cli("-C", str(root), "ingest")
    r = cli("-C", str(root), "stats")
    assert r.code == 0 and "nothing to recompute" in r.out
