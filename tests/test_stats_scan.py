"""The statistics engine's reads by one-pattern scans joined on integer keys (issue 21): the
same candidate rows, targets, unresolved counts and plan as the SPARQL joins they replace, on
real ingested bundles; and the fallback to the joins when the scans cannot stand for them.

The bundles are the statistics engine tests' own (tests/test_stats_engine.py: the radiology
bundle tied through call records, the CheXpert labeller CSV tied by the report text's
SHA-256); the label-row nodes of the last test use the label-row shape of
provgraph/evidence/labelrows.py and the keys of provgraph/importers/labels.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import ingest_bundle, write_bundle
from hypothesis import given, settings
from hypothesis import strategies as st
from test_stats_engine import BASE, FINDINGS, contract, load_turtle, radiology_bundle

from provgraph.rdf.vocab import PG_NS
from provgraph.stats import cells, materialize, read_labels, scan


def _rows(result) -> tuple[list, dict]:
    rows, unresolved = result
    listed = zip(rows.iris, rows.orders, rows.states, [tuple(t) for t in rows.targets], strict=True)
    return sorted(listed), dict(unresolved)


def _plan(plan: cells.Plan) -> tuple:
    return (
        plan.cases,
        plan.conditions,
        plan.case_code,
        plan.cond_code,
        plan.replicates.tolist(),
        plan.slot_keys.tolist(),
    )


def assert_scans_equal_joins(store) -> None:
    base = materialize.settings(store)[0]
    joined = _rows(read_labels._joined_candidates(store, base))
    assert _rows(read_labels._scanned_candidates(store, base, None)) == joined
    assert _rows(read_labels.read_candidates(store, base)) == joined
    assert _plan(cells.read_plan(store, base)) == _plan(cells._joined_plan(store, base))


def test_scans_equal_the_joins_through_call_records(tmp_path: Path) -> None:
    truth = radiology_bundle(tmp_path / "b", seed=3, cases=9, conditions=("A", "B", "C"))
    store, _, problems = ingest_bundle(tmp_path / "b")
    assert not problems
    assert_scans_equal_joins(store)
    base = materialize.settings(store)[0]
    rows, _ = read_labels.read_candidates(store, base)
    assert rows.iris and all(len(t) == 1 for t in rows.targets)
    plan = cells.read_plan(store, base)
    assert plan.conditions == ["A", "B", "C"] and set(plan.cases) == set(truth["cases"])
    planned = [(c, d, int(r) if r else 1) for _, c, d, *r in truth["calls"]]
    assert plan.planned(planned).all()
    assert not plan.planned([("s01", "Z", 1), ("nobody", "A", 1), (truth["cases"][0], "A", 7)]).any()


def test_scans_equal_the_joins_by_report_text_hash(tmp_path: Path) -> None:
    reports = {"C1": "No acute cardiopulmonary process.", "C2": "Moderate cardiomegaly. Mild edema.\n"}
    plan = "call_id,case,condition,replicate\nC1,s1,A,1\nC2,s1,B,2\n"
    calls = "".join(f'{{"call_id": "{c}", "status": "ok", "output": "out/{c}.txt"}}\n' for c in reports)
    csv = "Reports,Edema,Cardiomegaly\n"
    csv += '"No acute cardiopulmonary process.",0.0,\n"Moderate cardiomegaly. Mild edema.",1.0,1.0\n'
    files = {"plan.csv": plan, "calls.jsonl": calls, "labeled_reports.csv": csv}
    files.update({f"out/{c}.txt": text for c, text in reports.items()})
    files["reference.csv"] = "case,finding,state\ns1,Edema,POSITIVE\ns1,Cardiomegaly,NEGATIVE\n"
    import json  # only this test writes the contract's finding list

    root = write_bundle(
        tmp_path / "b", files, contract().replace(json.dumps(FINDINGS), '["Edema", "Cardiomegaly"]')
    )
    store, _, _ = ingest_bundle(root)
    assert_scans_equal_joins(store)
    rows, _ = read_labels.read_candidates(store, materialize.settings(store)[0])
    assert sorted(t for ts in rows.targets for t in ts) == [("s1", "A", 1), ("s1", "B", 2)]


ROWS = """@prefix pg: <{pg}> .
<{b}row/explicit> a pg:CandidateLabelRow ; pg:findingOrder "|Edema|Cardiomegaly|" ;
    pg:labelStates "PN" ; pg:case <{b}case/s01> ; pg:condition <{b}condition/A> ; pg:replicate 2 .
<{b}row/case-only> a pg:CandidateLabelRow ; pg:findingOrder "|Edema|" ; pg:labelStates "U" ;
    pg:case <{b}case/s02> .
<{b}row/nothing> a pg:CandidateLabelRow ; pg:findingOrder "|Edema|" ; pg:labelStates "M" .
<{b}row/no-states> a pg:CandidateLabelRow ; pg:findingOrder "|Edema|" ; pg:case <{b}case/s01> ;
    pg:condition <{b}condition/B> .
"""


def test_scans_equal_the_joins_on_explicit_partial_and_untied_rows(tmp_path: Path) -> None:
    radiology_bundle(tmp_path / "b", seed=5, cases=4, conditions=("A", "B"))
    store, _, _ = ingest_bundle(tmp_path / "b")
    load_turtle(store, "labels:fixture", ROWS.format(pg=PG_NS, b=BASE))
    assert_scans_equal_joins(store)
    rows, unresolved = read_labels.read_candidates(store, materialize.settings(store)[0])
    by_iri = dict(zip(rows.iris, rows.targets, strict=True))
    assert by_iri[f"{BASE}row/explicit"] == [("s01", "A", 2)]
    assert f"{BASE}row/no-states" not in by_iri and f"{BASE}row/nothing" not in by_iri
    assert unresolved == {"candidate label row tied to no report file and no case/condition": 2}


def test_a_replicate_the_scans_cannot_read_falls_back_to_the_join(tmp_path: Path) -> None:
    radiology_bundle(tmp_path / "b", seed=6, cases=3, conditions=("A", "B"))
    store, _, _ = ingest_bundle(tmp_path / "b")
    # a node no label row reaches: the join never converts its replicate, the scans would
    load_turtle(store, "x:fixture", f'<{BASE}other/x> <{PG_NS}replicate> "first" .\n')
    base = materialize.settings(store)[0]
    with pytest.raises(scan.CannotScan):
        read_labels._scanned_candidates(store, base, None)
    joined = _rows(read_labels._joined_candidates(store, base))
    assert _rows(read_labels.read_candidates(store, base)) == joined
    assert _plan(cells.read_plan(store, base)) == _plan(cells._joined_plan(store, base))


def test_two_strings_sharing_a_first_key_are_not_joined() -> None:
    keys = scan.Keys(np.array([5, 7, 5]), np.array([1, 2, 3]))
    with pytest.raises(scan.CannotScan):
        scan.Table(keys)
    table = scan.Table(scan.Keys(np.array([5, 7, 5]), np.array([1, 2, 1])))
    assert table.find(scan.Keys(np.array([7, 5, 9]), np.array([2, 1, 0]))).tolist() == [1, 0, -1]
    with pytest.raises(scan.CannotScan):
        table.find(scan.Keys(np.array([7]), np.array([4])))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(-1, 6), max_size=30),
    st.lists(st.integers(-1, 6), max_size=30),
)
def test_pairs_is_the_many_to_many_join(left: list[int], right: list[int]) -> None:
    i, j = scan.pairs(np.array(left, dtype=np.int64), np.array(right, dtype=np.int64))
    brute = [(a, b) for a, x in enumerate(left) for b, y in enumerate(right) if x == y >= 0]
    assert sorted(zip(i.tolist(), j.tolist(), strict=True)) == brute
    assert i.tolist() == sorted(i.tolist())


# --- keys held as integer codes ------------------------------------------------------------------


def _grid(cases: list[str], findings: list[str], patients: dict[str, str]):
    from provgraph.stats.core.grid import CellGrid  # the grid is only built by hand here

    n = len(cases) * len(findings)
    grid = CellGrid(
        "labels",
        cases,
        findings,
        ["A", "B"],
        np.repeat(np.arange(len(cases)), len(findings)),
        np.tile(np.arange(len(findings)), len(cases)),
        np.ones((n, 2)),
        np.zeros((n, 2), dtype=np.int8),
        np.full((n, 2), -1, dtype=np.int64),
        np.full(n, -1, dtype=np.int64),
        [],
    )
    grid.patients = patients
    return grid


def test_keyset_is_the_sha256_of_the_sorted_lines() -> None:
    from provgraph.stats.matrices import keyset_sha256  # the reference: the joined text

    cases = ["s10", "s2", "ß7", "s1", "a b"]
    findings = ["Edema", "Cardiomegaly", "Pleural Other"]
    grid = _grid(cases, findings, {})
    rng = np.random.default_rng(4)
    for size in (0, 1, 5, 15):
        for _ in range(4):
            rows = rng.choice(grid.block_count, size=size, replace=False)
            assert grid.keyset(rows) == keyset_sha256([grid.block(int(i)) for i in rows])


def test_cluster_codes_are_those_of_the_sorted_names() -> None:
    from provgraph.stats.compute import _cluster_codes  # the function under test is private

    cases = ["s9", "s10", "s1", "s5"]
    patients = {"s9": "p/b", "s10": "p/a", "s1": "p/b", "s5": "p/c"}
    grid = _grid(cases, ["Edema", "Cardiomegaly"], patients)
    rows = np.array([7, 0, 3, 2, 5, 6])
    names = np.array(cases, dtype=object)[grid.block_case[rows]]
    study = _cluster_codes(grid, rows, "study", [])
    assert study.tolist() == np.unique(names, return_inverse=True)[1].tolist()
    by_patient = np.array([patients[c] for c in names], dtype=object)
    patient = _cluster_codes(grid, rows, "patient", [])
    assert patient.tolist() == np.unique(by_patient, return_inverse=True)[1].tolist()
    notes: list[str] = []
    del grid.patients["s5"]
    assert _cluster_codes(grid, rows, "patient", notes) is None and "s5" in notes[0]


def _placed_one_by_one(iris, slots, codes, shape, replicate):
    """The reference for :func:`grid.candidate_states`: each target placed in turn (the loop the
    array form replaced)."""
    state = np.full(shape, -1, dtype=np.int8)
    row = np.full(shape[:2], -1, dtype=np.int64)
    extra: dict = {}
    sources: list[str] = []
    other = 0
    for k, i, j, rep in zip(*(s.tolist() for s in slots), strict=True):
        if rep != replicate:
            other += 1
            continue
        if j < 0:
            continue
        source = len(sources)
        sources.append(iris[k])
        if row[i, j] < 0:
            row[i, j], state[i, j] = source, codes[k]
            continue
        extra[(i, j)] = (*extra.get((i, j), (int(row[i, j]),)), source)
        mine, prior = codes[k], state[i, j]
        clash = (mine >= 0) & (prior >= 0) & (mine != prior)
        state[i, j] = np.where(clash, -2, np.where(prior == -1, mine, prior))
    return state, row, extra, other, sources


@settings(max_examples=120, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 2), st.integers(-1, 2), st.integers(1, 2)), max_size=25
    ),
    st.integers(0, 2**32 - 1),
)
def test_candidate_states_in_arrays_place_rows_as_one_by_one(targets: list, seed: int) -> None:
    """Rows placed at their slots in arrays: the same states (agreeing, conflicting, partial
    labels), first rows, further rows, other replicates and sources as placing them in turn."""
    from provgraph.stats.core import grid  # the function under test

    rng = np.random.default_rng(seed)
    iris = [f"row/{k}" for k in range(6)]
    codes = rng.integers(-1, 4, size=(6, 3)).astype(np.int8)  # -1: a finding the row leaves out
    targets.sort(key=lambda t: t[0])  # targets come ordered by row
    slots = tuple(np.array([t[c] for t in targets], dtype=np.int64) for c in range(4))
    shape = (3, 3, 3)
    sources: list[str] = []
    got = grid.candidate_states(iris, slots, codes, shape, 1, sources)
    state, row, extra, other, want_sources = _placed_one_by_one(iris, slots, codes, shape, 1)
    assert got.state.tolist() == state.tolist() and got.row.tolist() == row.tolist()
    assert got.extra == extra and got.other_replicates == other and sources == want_sources


def test_used_sources_are_the_rows_of_present_cells() -> None:
    """The sources marked a condition at a time: the rows of every present cell, of its block's
    reference, and the further rows of a slot labelled twice, once each, in source order."""
    rng = np.random.default_rng(11)
    grid = _grid(["s1", "s2", "s3"], ["Edema", "Cardiomegaly"], {})
    grid.sources = [f"row/{k % 9}" for k in range(12)]  # rows 9..11 repeat rows 0..2
    grid.category = rng.integers(-1, 4, size=grid.category.shape).astype(np.int8)
    grid.cell_source = np.where(grid.category >= 0, rng.integers(0, 12, size=grid.category.shape), -1)
    grid.block_source = np.array([3, -1, 5, 10, 7, -1])
    grid.extra_sources = {(0, 1): (4, 11), (2, 0): (8,)}
    present = grid.category >= 0
    want = set(grid.cell_source[present].tolist())
    want |= {int(b) for b, any_cell in zip(grid.block_source, present.any(axis=1), strict=True) if any_cell}
    for (c, j), extra in grid.extra_sources.items():
        if present[grid.block_case == c, j].any():
            want |= set(extra)
    want.discard(-1)
    expected = list(dict.fromkeys(grid.sources[k] for k in sorted(want)))
    assert grid.used_sources() == expected and len(expected) == len(set(expected))
