"""The per-call evidence view (provgraph/rules/callview.py) on small bundles: what it derives
for one call from several records (the rule-level matrix is tests/test_call_evidence_matrix.py)."""

from __future__ import annotations

import json
from pathlib import Path

from call_matrix_writers import WRITERS, Attempt, Call, Scenario
from conftest import ingest_bundle, write_bundle

from provgraph.lineage.gate import refresh_derived
from provgraph.rdf.vocab import PG_NS

PLAN = "call_id,case,condition,replicate\nC1,s1,A,1\n"


def view(store, call: str, prop: str) -> list[str]:
    rows = store.select(
        f"SELECT ?v WHERE {{ ?c <{PG_NS}callId> {json.dumps(call)} ; <{PG_NS}{prop}> ?v }} ORDER BY ?v"
    )
    return [r["v"].value for r in rows]


def test_a_retry_keeps_its_history_and_every_image_it_sent(tmp_path: Path) -> None:
    """C1 failed with image a.png and was answered with image b.png (no hash taken at the
    request): the call's final state is its ok record, its history keeps the error, and both
    files' bytes count as what it sent (the first file alone hid the second)."""
    answered = "2026-07-01T11:00:00Z"
    records = [
        {"call_id": "C1", "status": "error", "image": "a.png", "ended_at": "2026-07-01T10:00:00Z"},
        {
            "call_id": "C1",
            "status": "ok",
            "image": "b.png",
            "output": "out.txt",
            "ended_at": "2026-07-01T11:00:00Z",
        },
    ]
    records[1]["ended_at"] = answered
    files = {
        "plan.csv": PLAN,
        "calls.jsonl": "".join(json.dumps(r) + "\n" for r in records),
        "a.png": b"\x89PNG first",
        "b.png": b"\x89PNG second",
        "out.txt": "an answer\n",
    }
    store, _, _ = ingest_bundle(write_bundle(tmp_path / "b", files))
    refresh_derived(store)
    assert view(store, "C1", "finalStatus") == ["ok"]
    assert view(store, "C1", "failedStatus") == ["error"]
    assert view(store, "C1", "attemptCount") == ["2"] and view(store, "C1", "okCount") == ["1"]
    assert len(view(store, "C1", "sentImageSha256")) == 2
    assert len(view(store, "C1", "sentImage")) == 2


def _facts(store, call_id: str) -> dict[str, list[str]]:
    """The identity facts the view wrote for call ``call_id`` and its records' attempt models."""
    pg = f"PREFIX pg: <{PG_NS}>\n"
    call = f"?c pg:callId {json.dumps(call_id)} ."
    rows = store.select(
        pg + f"SELECT ?p ?v WHERE {{ {call} VALUES ?p {{ pg:callCondition pg:callCase }} ?c ?p ?v }}"
    )
    facts: dict[str, list[str]] = {}
    for r in rows:
        facts.setdefault(r["p"].value.rsplit("#", 1)[-1], []).append(r["v"].value.rsplit("/", 1)[-1])
    rows = store.select(
        pg + f"SELECT ?at ?h WHERE {{ {call} ?c pg:promptEvidence ?e . ?e pg:capturedAt ?at ; "
        "pg:executedPromptSha256 ?h ; pg:executedSystemSha256 ?s }"
    )
    facts["captured"] = sorted(r["at"].value for r in rows)
    rows = store.select(
        pg + f"SELECT ?m ?line WHERE {{ ?r a pg:CallRecord ; pg:callId {json.dumps(call_id)} ; "
        "pg:attemptModel ?m ; pg:sourceFile/pg:path ?line }"
    )
    facts["attempt"] = sorted(f"{r['line'].value}:{r['m'].value}" for r in rows)
    return {k: sorted(v) for k, v in facts.items()}


def test_identity_facts_resolve_a_batch_retry_that_asked_for_another_model(tmp_path: Path) -> None:
    """OpenAI Batch files (shapes: tests/call_matrix_writers.py, from the calibration builders
    written from the OpenAI Batch guide): call A--s1 failed in batch 1 (the declared model) and
    was answered in batch 2 by another model it asked for. The result lines name no requested
    model: the view resolves each attempt through the requests of its call: the answered one
    asked for the model that answered it, the failed one (no resolved model) for either. The
    call's condition and case come from the plan; its prompt was captured at the request."""
    other = "gpt-4.1-2025-04-14"
    calls = (Call("s1", "A", "X"), Call("s1", "B", "X"))
    sc = Scenario(calls, (Attempt("A--s1--1", "error"), Attempt("A--s1--1", batch=2, model=other)))
    WRITERS["openai"](tmp_path / "b", sc)
    store, _, _ = ingest_bundle(tmp_path / "b")
    refresh_derived(store)
    facts = _facts(store, "A--s1--1")
    assert facts["callCondition"] == ["A"] and facts["callCase"] == ["s1"]
    assert facts["captured"] == ["request"]  # one prompt, sent twice: one evidence node
    assert facts["attempt"] == [
        f"batches/batch_01_errors.jsonl:{other}",
        "batches/batch_01_errors.jsonl:gpt-4o-2024-08-06",
        f"batches/batch_02_output.jsonl:{other}",
    ]


def test_the_view_folded_in_partitions_is_the_view_folded_at_once(tmp_path: Path) -> None:
    """The refresh folds calls one partition at a time (bounded memory at 10^6 calls): every
    call lands in one partition, and the evidence folded per partition is the evidence folded
    from every row at once, for calls with retries, file-only images and unplanned ids."""
    from provgraph.rules import callview

    plan = "call_id,case,condition,replicate\n" + "".join(
        f"C{i},s{i % 7},{'AB'[i % 2]},1\n" for i in range(40)
    )
    records, files = [], {}
    for i in range(46):  # C40-C45 are in no plan: their ids come from the records
        image = f"img{i % 5}.png"
        files[image] = f"\x89PNG {i % 5}".encode()
        if i % 3 == 0:  # a failed first attempt, retried
            records.append(
                {"call_id": f"C{i}", "status": "error", "image": image, "ended_at": "2026-07-01T10:00:00Z"}
            )
        records.append(
            {
                "call_id": f"C{i}",
                "status": "ok",
                "image": image,
                "output": f"out{i}.txt",
                "ended_at": "2026-07-01T11:00:00Z",
            }
        )
        files[f"out{i}.txt"] = f"answer {i}\n"
    files |= {"plan.csv": plan, "calls.jsonl": "".join(json.dumps(r) + "\n" for r in records)}
    store, _, _ = ingest_bundle(write_bundle(tmp_path / "b", files))
    whole = callview.gather(store)
    folded: dict = {}
    for path in callview.gather_partitioned(store, tmp_path, partitions=4):
        part = callview.read_partition(path, callview.record_paths(store))
        assert not set(part) & set(folded), "a call was split between partitions"
        folded |= part
    assert len(whole) == 46
    assert {c: _slots(e) for c, e in folded.items()} == {c: _slots(e) for c, e in whole.items()}
    assert sum(1 for e in whole.values() if len(e.records) == 2) == 16
    # a call with several records has their files' paths (they order its history); one with a
    # single record is not looked up
    assert all(r.path == "calls.jsonl" for e in whole.values() if len(e.records) == 2 for r in e.records)
    assert all(r.path == "" for e in whole.values() if len(e.records) == 1 for r in e.records)


def test_records_with_no_end_time_are_ordered_by_file_then_line(tmp_path: Path) -> None:
    """C1 failed in two logs and C2 in one log twice, none with an end time: the call's final
    state is its last record by file path, then by line. The path is looked up only for calls
    with several records; the records' own IRIs sort the other way here (``/`` is escaped as
    ``%2F``, which sorts before ``-``), so only the path gives this order."""
    plan = "call_id,case,condition,replicate\nC1,s1,A,1\nC2,s2,A,1\n"

    def log(*records: tuple[str, str]) -> str:
        return "".join(json.dumps({"call_id": c, "status": s}) + "\n" for c, s in records)

    files = {
        "plan.csv": plan,
        "logs/z.jsonl": log(("C1", "expired")),
        "logs-a.jsonl": log(("C1", "error"), ("C2", "expired"), ("C2", "error")),
    }
    store, _, _ = ingest_bundle(write_bundle(tmp_path / "b", files))
    refresh_derived(store)
    assert view(store, "C1", "finalStatus") == ["expired"]  # logs/z.jsonl sorts after logs-a.jsonl
    assert view(store, "C2", "finalStatus") == ["error"]  # line 3 after line 2
    assert view(store, "C1", "failedStatus") == ["error", "expired"]


def _slots(ev) -> tuple:
    return (sorted(ev.records), sorted(ev.images), sorted(ev.files), sorted(ev.prompts), sorted(ev.ids))
