"""Declared records (``[[ingest.records]]``): files of a harness provgraph has no importer for,
mapped to canonical call records by the contract, on a real harness's output and on bad input.

That every call rule reads declared records as it reads native ones is held by
``tests/test_call_evidence_matrix.py`` (its ``declared`` writer); one corrupted record at a time
by ``tests/test_fuzz_records.py``.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest
from conftest import FIXTURES, ingest_bundle

from provgraph.bundle.contract.sections.records import CONTAINERS, LEAVES
from provgraph.errors import ContractError
from provgraph.importers.calls import FIELDS
from provgraph.ingest.testing import CONTRACT, write_bundle
from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules

PROMPTFOO = FIXTURES / "records" / "promptfoo"


def _gate(root: Path):
    ingested = ingest_bundle(root)
    assert ingested.problems == [] and ingested.rejected == [], [str(p) for p in ingested.rejected]
    assert all(r.outcome == "imported" for r in ingested.results), [r.error for r in ingested.results]
    return ingested, run_gate(ingested.store, load_rules(), record=False)


@pytest.mark.parametrize("twin", ["flawed", "clean"])
def test_promptfoo_output_twins(twin: str, tmp_path: Path) -> None:
    """promptfoo's ``eval --output results.json``, in the shape of promptfoo/promptfoo
    src/types/index.ts (``OutputFile``, ``EvaluateSummaryV3``, ``EvaluateResult``) as
    src/evaluator.ts ``runEval`` fills it (``prompt.raw`` is the rendered prompt handed to
    ``callApi``; ``failureReason`` 0 none, 1 assertion, 2 error), written by
    tests/fixtures/records/make_promptfoo.py. Two prompt variants declared distinct; in the
    flawed twin the second variant lost its instruction and sent the first one's prompt. A failed
    assertion (q3) is an answered call in both twins: no false alarm."""
    root = shutil.copytree(PROMPTFOO / twin, tmp_path / twin)
    ingested, report = _gate(root)
    assert ingested.result("results.json").importer == "records"
    assert ingested.result("results.json").records == 6
    fired = {
        r.rule.id: [(report.short(v.focus), v.message) for v in r.violations]
        for r in report.results
        if r.violations
    }
    if twin == "clean":
        assert fired == {} and report.passed
        return
    assert fired == {
        "prompt-identical-across-conditions": [
            (
                "condition-pair/concise/stepwise",
                "conditions concise and stepwise are declared to differ, but executed byte-identical "
                "prompts on 3 of 3 cases they share (e.g. case q1)",
            )
        ]
    }
    assert not report.passed


@pytest.mark.parametrize("twin", ["flawed", "clean"])
def test_openai_evals_record_log_twins(twin: str, tmp_path: Path) -> None:
    """``oaieval``'s JSON Lines record log, in the shape of openai/evals evals/record.py
    (``LocalRecorder``: a spec line, one ``Event`` per line, a final report), written by
    tests/fixtures/records/make_openai_evals.py; ``where`` reads its sampling events only. In the
    flawed twin one completion came back empty and was logged as sampled: an ``ok`` call with a
    0-byte answer, found at its record's line."""
    root = shutil.copytree(FIXTURES / "records" / "openai_evals" / twin, tmp_path / twin)
    ingested, report = _gate(root)
    (log,) = [r for r in ingested.results if r.rel.startswith("logs/")]
    assert (log.importer, log.records) == ("records", 3)  # 3 of 8 lines: the sampling events
    fired = {
        r.rule.id: [(report.short(v.focus), v.message, v.line) for v in r.violations]
        for r in report.results
        if r.violations
    }
    if twin == "clean":
        assert fired == {} and report.passed
        return
    assert fired == {
        "output-ok-without-output": [
            (
                f"record/{log.rel.replace('/', '%2F')}/test-match.s1.1/1",
                "call test-match.s1.1 is logged ok but its response text is empty (0 bytes)",
                4,
            )
        ]
    }


def test_promptfoo_records_carry_what_the_mapping_says(tmp_path: Path) -> None:
    root = shutil.copytree(PROMPTFOO / "clean", tmp_path / "b")
    ingested = ingest_bundle(root)
    rows = ingested.select(
        """SELECT ?id ?status ?model ?bytes ?capture WHERE {
             ?r a pg:CallRecord ; pg:callId ?id ; pg:status ?status ; pg:requestedModel ?model ;
                pg:outputByteSize ?bytes ; pg:promptCapture ?capture ; pg:sourceFile ?f .
             ?f pg:path "results.json" } ORDER BY ?id"""
    )
    doc = json.loads((root / "results.json").read_text())
    first = doc["results"]["results"][0]
    assert rows[0] == {
        "id": "concise--q1--1",
        "status": "ok",
        "model": "openai:gpt-4o-mini-2024-07-18",
        "bytes": str(len(first["response"]["output"].encode())),
        "capture": "request",
    }
    assert [r["id"] for r in rows] == [f"{c}--q{i}--1" for c in ("concise", "stepwise") for i in (1, 2, 3)]


def test_targets_are_the_canonical_record_fields() -> None:
    """The declaration's targets are the calls importer's fields (plus the inline output text),
    so a field added to canonical records cannot be missing from declarations unnoticed."""
    assert set(LEAVES) | set(CONTAINERS) == set(FIELDS) | {"output_text"}


# --- bad declarations: contract errors with the key and its line ---------------------------------

HEAD = CONTRACT + "\n"
GOOD = """
[[ingest.records]]
glob = "runs/*.jsonl"
[ingest.records.fields]
call_id = "{task}--{doc_id}"
status = { path = "finish", map = { stop = "ok" } }
"""
LINES = [{"task": "arc", "doc_id": i, "finish": "stop"} for i in range(3)]


def _jsonl(rows: list) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def _contract_error(tmp_path: Path, contract: str) -> str:
    write_bundle(tmp_path / "b", {}, contract)
    from provgraph.bundle.contract import load_contract  # here: the test is about loading

    with pytest.raises(ContractError) as err:
        load_contract(tmp_path / "b" / "provgraph.toml")
    return str(err.value).replace(str(tmp_path / "b") + "/", "")


def test_unknown_target_field_names_key_and_line(tmp_path: Path) -> None:
    text = _contract_error(tmp_path, HEAD + GOOD + 'ouput = "response"\n')
    assert text.startswith(
        "provgraph.toml:11: ingest.records[0].fields.ouput: unknown key 'ouput' in [ingest.records.0.fields]"
    ), text


@pytest.mark.parametrize(
    ("extra", "line", "says"),
    [
        ('finish_reason = "{finish"\n', 11, "fields.finish_reason: unpaired '{' in the template '{finish'"),
        ('finish_reason = "a[*]"\n', 11, "fields.finish_reason: [*] is only for the records path"),
        ('finish_reason = "a..b"\n', 11, "fields.finish_reason: cannot read the field path 'a..b'"),
        ('requested_model = { path = "m", template = "{m}" }\n', 11, "exactly one of path and template"),
    ],
)
def test_bad_paths_and_templates_are_contract_errors(
    tmp_path: Path, extra: str, line: int, says: str
) -> None:
    text = _contract_error(tmp_path, HEAD + GOOD + extra)
    assert text.startswith(f"provgraph.toml:{line}: ingest.records[0].") and says in text, text


def test_call_id_and_status_must_be_mapped(tmp_path: Path) -> None:
    contract = HEAD + '[[ingest.records]]\nglob = "runs/*.jsonl"\n[ingest.records.fields]\ncall_id = "id"\n'
    text = _contract_error(tmp_path, contract)
    assert text == (
        "provgraph.toml:7: ingest.records[0].fields: status is not mapped "
        "(give a field path, a template or a constant)"
    ), text


def test_a_target_mapped_twice_and_a_records_path_off_json(tmp_path: Path) -> None:
    twice = HEAD + GOOD + '[ingest.records.constants]\nstatus = "ok"\n'
    assert "constants.status: status is mapped twice" in _contract_error(tmp_path / "1", twice)
    misplaced = HEAD + GOOD.replace('glob = "runs/*.jsonl"', 'glob = "runs/*.jsonl"\nrecords = "$.x[*]"')
    text = _contract_error(tmp_path / "2", misplaced)
    assert text == "provgraph.toml:8: ingest.records[0].records: a records path is only for format json", text


def test_a_template_field_no_record_holds_fails_the_source_naming_key_and_line(tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "b", {"runs/a.jsonl": _jsonl(LINES)}, HEAD + GOOD.replace("{doc_id}", "{doc}")
    )
    result = ingest_bundle(root).result("runs/a.jsonl")
    assert (result.importer, result.outcome) == ("records", "failed")
    assert result.error == (
        "provgraph.toml:9: ingest.records[0].fields.call_id: the template names 'doc', "
        "which no record of runs/a.jsonl holds"
    )


def test_a_glob_matching_nothing_is_a_contract_problem(tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "b", {"runs/a.jsonl": _jsonl(LINES)}, HEAD + GOOD + GOOD.replace("runs/", "rnus/")
    )
    ingested = ingest_bundle(root)
    assert [str(p) for p in ingested.problems] == [
        "provgraph.toml:13: ingest.records[1].glob: 'rnus/*.jsonl' matches no file of the bundle "
        "(none, or only excluded or hidden ones)"
    ]
    assert ingested.result("runs/a.jsonl").records == 3


def test_a_file_claimed_by_two_declarations_names_both(tmp_path: Path) -> None:
    second = GOOD.replace('"runs/*.jsonl"', '"runs/a*.jsonl"')
    root = write_bundle(tmp_path / "b", {"runs/a.jsonl": _jsonl(LINES)}, HEAD + GOOD + second)
    ingested = ingest_bundle(root)
    assert [str(p) for p in ingested.problems] == [
        "runs/a.jsonl: claimed by two [[ingest.records]] declarations: "
        "ingest.records[0].glob (provgraph.toml:7) and ingest.records[1].glob (provgraph.toml:13)"
    ]
    with pytest.raises(KeyError):
        ingested.result("runs/a.jsonl")  # not imported by either


def test_a_declared_glob_wins_over_detection(tmp_path: Path) -> None:
    """A file the calls importer would claim (it has call_id and status) is read as declared."""
    rows = [{"call_id": f"c{i}", "status": "stop"} for i in range(2)]
    contract = HEAD + GOOD.replace("runs/*.jsonl", "calls.jsonl").replace("{task}--{doc_id}", "x-{call_id}")
    contract = contract.replace('path = "finish"', 'path = "status"')
    ingested = ingest_bundle(write_bundle(tmp_path / "b", {"calls.jsonl": _jsonl(rows)}, contract))
    assert ingested.result("calls.jsonl").importer == "records"
    ids = ingested.select("SELECT ?id WHERE { ?r pg:callId ?id } ORDER BY ?id")
    assert ids == [{"id": "x-c0"}, {"id": "x-c1"}]


def test_ingest_importers_naming_another_importer_for_a_declared_file_is_an_error(tmp_path: Path) -> None:
    contract = CONTRACT + '\n[ingest]\nimporters = { "runs/a.jsonl" = "calls" }\n' + GOOD
    ingested = ingest_bundle(write_bundle(tmp_path / "b", {"runs/a.jsonl": _jsonl(LINES)}, contract))
    assert [str(p) for p in ingested.problems] == [
        "runs/a.jsonl: [ingest].importers names 'calls' but ingest.records[0].glob (provgraph.toml:9) "
        "declares it records"
    ]


# --- bad records: one line each, the others imported ----------------------------------------------


def test_bad_records_are_rejected_one_line_each(tmp_path: Path) -> None:
    rows = [
        LINES[0],
        {"task": "arc", "finish": "stop"},  # 2: no doc_id
        {"task": "arc", "doc_id": {"n": 1}, "finish": "stop"},  # 3: an object in a template
        "{not json",  # 4
        [1, 2],  # 5: not an object
        {"task": "arc", "doc_id": 5, "finish": "halted"},  # 6: a status no map or canonical name has
        {"task": "arc", "doc_id": 6, "finish": ["stop"]},  # 7: an array for status
        LINES[1],
    ]
    contract = HEAD + GOOD + 'requested_model = { path = "model", optional = true }\n'
    root = write_bundle(tmp_path / "b", {"runs/a.jsonl": _jsonl(rows)}, contract)
    result = ingest_bundle(root).result("runs/a.jsonl")
    assert (result.outcome, result.records) == ("imported", 2)
    problems = [str(p) for p in result.problems]
    assert problems[:3] == [
        "runs/a.jsonl:2: record: missing field 'doc_id' (ingest.records[0].fields.call_id)",
        "runs/a.jsonl:3: record: field 'doc_id' is an object, the template of "
        "ingest.records[0].fields.call_id needs text or a number",
        "runs/a.jsonl:4: malformed JSON: Expecting property name enclosed in double quotes (column 2)",
    ]
    assert problems[3] == "runs/a.jsonl:5: record: expected an object, got an array"
    assert problems[4].startswith("runs/a.jsonl:6: record: unknown status 'halted'")
    assert problems[5] == (
        "runs/a.jsonl:7: record: field 'finish' is an array, status needs text "
        "(ingest.records[0].fields.status)"
    )


def test_cli_ingest_exits_2_on_a_rejected_record_and_keeps_the_others(cli, tmp_path: Path) -> None:
    rows = [LINES[0], {"task": "arc", "finish": "stop"}, LINES[1]]
    root = write_bundle(tmp_path / "b", {"runs/a.jsonl": _jsonl(rows)}, HEAD + GOOD)
    r = cli("-C", str(root), "ingest")
    assert r.code == 2
    assert "runs/a.jsonl:2: record: missing field 'doc_id' (ingest.records[0].fields.call_id)" in r.err
    q = cli(
        "-C", str(root), "query", "SELECT (COUNT(*) AS ?n) WHERE { ?r a pg:CallRecord }", "--format", "json"
    )
    assert q.code == 0 and '"2"' in q.out.replace(" ", ""), q.out


def test_json_document_records_are_named_by_their_path(tmp_path: Path) -> None:
    doc = {"samples": [{"id": "a", "ok": True}, {"ok": True}, {"id": "c", "ok": False}]}
    contract = HEAD + (
        '[[ingest.records]]\nglob = "out.json"\nrecords = "$.samples[*]"\n'
        '[ingest.records.fields]\ncall_id = "id"\n'
        'status = { path = "ok", map = { true = "ok", false = "error" } }\n'
    )
    result = ingest_bundle(write_bundle(tmp_path / "b", {"out.json": json.dumps(doc)}, contract)).result(
        "out.json"
    )
    assert (result.outcome, result.records) == ("imported", 2)
    assert [str(p) for p in result.problems] == [
        "out.json: $.samples[1]: record: missing field 'id' (ingest.records[0].fields.call_id)"
    ]
    missing = contract.replace("$.samples[*]", "$.results[*]")
    failed = ingest_bundle(write_bundle(tmp_path / "c", {"out.json": json.dumps(doc)}, missing)).result(
        "out.json"
    )
    assert failed.error == "out.json: no '$.results[*]' in this document (ingest.records[0].records)"


def test_csv_rows_with_numbers_as_text(tmp_path: Path) -> None:
    """CSV cells are text: a size written as digits is a whole number (an empty cell records
    none, a non-number is a bad record), an id is text."""
    csv = "item,variant,state,answer_bytes\n1,A,done,12\n2,A,done,x12\n3,B,failed,\n"
    contract = HEAD + (
        '[[ingest.records]]\nglob = "scores.csv"\n[ingest.records.fields]\n'
        'call_id = "{variant}--{item}"\n'
        'status = { path = "state", map = { done = "ok", failed = "error" } }\n'
        'output_bytes = "answer_bytes"\n'
    )
    ingested = ingest_bundle(write_bundle(tmp_path / "b", {"scores.csv": csv}, contract))
    result = ingested.result("scores.csv")
    assert [str(p) for p in result.problems] == [
        "scores.csv:3: record: field 'answer_bytes' is a str, output_bytes needs a whole number "
        "(ingest.records[0].fields.output_bytes)",
    ]
    assert result.records == 2  # row 4's empty cell records no size
    rows = ingested.select("SELECT ?id ?b WHERE { ?r pg:callId ?id ; pg:outputByteSize ?b }")
    assert rows == [{"id": "A--1", "b": "12"}]


def test_changing_the_declaration_re_reads_the_file(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"runs/a.jsonl": _jsonl(LINES)}, HEAD + GOOD)
    ingested = ingest_bundle(root)
    assert ingest_bundle(root, ingested.store).result("runs/a.jsonl").outcome == "unchanged"
    (root / "provgraph.toml").write_text(HEAD + GOOD.replace("{task}--", "{task}/"), encoding="utf-8")
    again = ingest_bundle(root, ingested.store)
    assert again.result("runs/a.jsonl").outcome == "imported"
    ids = again.select("SELECT ?id WHERE { ?r pg:callId ?id } ORDER BY ?id")
    assert ids == [{"id": f"arc/{i}"} for i in range(3)]


def test_the_fixture_contract_is_the_readme_example() -> None:
    """The README's example declaration is the promptfoo fixture's (so it is a tested one)."""
    readme = (FIXTURES.parent.parent / "README.md").read_text(encoding="utf-8")
    contract = (PROMPTFOO / "flawed" / "provgraph.toml").read_text(encoding="utf-8")
    block = contract[contract.index("[[ingest.records]]") :]
    assert block in readme
    assert tomllib.loads(contract)["ingest"]["records"][0]["records"] == "$.results.results[*]"


def test_nested_targets_and_constants(tmp_path: Path) -> None:
    """``decoding`` and ``meta`` targets nest as TOML tables do; a constant's decoding is the
    record's (``prompt.system`` by path, ``decoding.max_tokens`` by path, temperature constant)."""
    rows = [{"task": "arc", "doc_id": 1, "finish": "stop", "sys": "Be brief.", "cfg": {"max_gen": 64}}]
    contract = (
        HEAD
        + GOOD
        + (
            'prompt.system = "sys"\ndecoding.max_tokens = "cfg.max_gen"\n'
            '[ingest.records.constants]\ndecoding = { temperature = 0 }\nprompt_source = "config"\n'
        )
    )
    ingested = ingest_bundle(write_bundle(tmp_path / "b", {"runs/a.jsonl": _jsonl(rows)}, contract))
    assert ingested.rejected == []
    rows = ingested.select(
        "SELECT ?t ?m ?capture WHERE { ?r pg:temperature ?t ; pg:maxTokens ?m ; pg:promptCapture ?capture }"
    )
    assert rows == [{"t": "0", "m": "64", "capture": "config"}], rows


def test_records_importer_named_for_an_undeclared_file(cli, tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"other.jsonl": _jsonl(LINES)}, HEAD + GOOD)
    (root / "runs").mkdir()
    (root / "runs" / "a.jsonl").write_text(_jsonl(LINES), encoding="utf-8")
    r = cli("-C", str(root), "ingest", "--importer", "records", str(root / "other.jsonl"))
    assert r.code == 2
    assert "other.jsonl: no [[ingest.records]] declaration's glob matches this file" in r.err, r.err
