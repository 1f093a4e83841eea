"""Fuzzing one record at a time (issue 22): a valid source with one record corrupted the ways
hypothesis draws (cut short, nested deep, a huge number, a lone surrogate, a wrong type, a huge
string, garbage bytes), ingested into a real in-memory store.

For every JSON Lines and CSV importer: no internal error, the other records still import (they
are counted), and every rejection is one line naming the file and the corrupted line. Whole-file
JSON documents (results, reported statistics, build records): a corrupted entry costs only that
entry, and a document that no longer parses fails alone with one line. Sized for CI: a few
seconds per importer (``max_examples`` small, a ``deadline`` set).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import PLAN_CONTRACT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provgraph.ingest.readers import MAX_RECORD_BYTES
from provgraph.ingest.testing import CONTRACT, Ingested, ingest_bundle, write_bundle

FIXTURES = Path(__file__).parent / "fixtures" / "rules"
SHA = "a" * 64
FUZZ = settings(
    max_examples=int(os.environ.get("PROVGRAPH_FUZZ_EXAMPLES", "12")),
    deadline=10_000,  # ms: a hang is a failure, a slow shared CI machine is not
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,  # CI runs the same cases every time; the bench run draws new ones
)
HUGE = 9 << 20  # over the 8 MiB record limit

# --- the valid sources -------------------------------------------------------------------------


def _fixture_lines(rule: str, name: str) -> list[str]:
    return (FIXTURES / rule / "flawed" / name).read_text(encoding="utf-8").splitlines()[:5]


def _anthropic_result(i: int) -> dict[str, Any]:
    message = {
        "id": f"msg_{i}",
        "model": "claude-sonnet-4-5-20250929",
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "fine"}],
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    return {"custom_id": f"C{i}", "result": {"type": "succeeded", "message": message}}


def _anthropic_request(i: int) -> dict[str, Any]:
    params = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "U"}]}
    return {"custom_id": f"C{i}", "params": params}


def _cache(i: int) -> dict[str, Any]:
    return {
        "report": f"outputs/C{i}.txt",
        "finding": "Edema",
        "state": "POSITIVE",
        "extractor": "gpt-x",
        "max_input_chars": 4000,
        "input_chars": 1200,
        "raw_response": '{"Edema": "POSITIVE"}',
    }


def _rendering(i: int) -> dict[str, Any]:
    return {
        "format": "provgraph.rendering/1",
        "source": f"dicom/{i}.dcm",
        "source_sha256": SHA,
        "image": f"png/{i}.png",
        "image_sha256": SHA,
        "photometric": "MONOCHROME2",
        "inverted": False,
        "renderer": "in-house",
        "renderer_version": "2.1",
    }


def _build(i: int) -> dict[str, Any]:
    return {
        "output": {"path": f"o{i}.txt", "sha256": SHA},
        "inputs": [],
        "script": {"path": "s.py", "sha256": "b" * 64},
        "time": "2026-07-28T10:00:00Z",
    }


def _harness_sample(i: int) -> dict[str, Any]:
    """A harness's own sample record, read through an ``[[ingest.records]]`` declaration."""
    return {
        "task": "arc_easy",
        "doc_id": i,
        "model": "gpt-4o-2024-08-06",
        "request": {"messages": [{"role": "user", "content": f"Question {i}?"}]},
        "finish": "stop",
        "response": f"Answer {i}.",
    }


#: The declaration the declared-records cases read their files with (JSONL, JSON, CSV).
RECORDS_CONTRACT = (
    CONTRACT
    + """
[[ingest.records]]
glob = "harness.jsonl"
[ingest.records.fields]
call_id = "{task}--{doc_id}"
status = { path = "finish", map = { stop = "ok", length = "length" } }
requested_model = "model"
prompt.user = "request.messages[0].content"
output_text = "response"

[[ingest.records]]
glob = "samples.json"
records = "$.samples[*]"
[ingest.records.fields]
call_id = "{task}--{doc_id}"
status = { path = "finish", map = { stop = "ok" } }
output_text = "response"

[[ingest.records]]
glob = "scores.csv"
[ingest.records.fields]
call_id = "{variant}--{item}"
status = { path = "state", map = { done = "ok", failed = "error" } }
requested_model = "model"
output_bytes = "answer_bytes"
"""
)


def _dumped(make: Callable[[int], dict[str, Any]]) -> Callable[[], list[str]]:
    return lambda: [json.dumps(make(i)) for i in range(1, 6)]


@dataclass(frozen=True)
class Case:
    importer: str
    rel: str
    lines: Callable[[], list[str]]
    contract: str = CONTRACT

    def __str__(self) -> str:
        return self.importer


JSONL = [
    Case("calls", "calls.jsonl", lambda: _fixture_lines("output-unplanned-record", "calls.jsonl")),
    Case(
        "openai-batch-input",
        "batch_input.jsonl",
        lambda: _fixture_lines("output-request-without-result", "batch_input.jsonl"),
    ),
    Case(
        "openai-batch-output",
        "batch_output.jsonl",
        lambda: _fixture_lines("output-request-without-result", "batch_output.jsonl"),
    ),
    Case("anthropic-batch-requests", "requests.jsonl", _dumped(_anthropic_request)),
    Case("anthropic-batch-results", "results.jsonl", _dumped(_anthropic_result)),
    Case("extractor-cache", "cache.jsonl", _dumped(_cache)),
    Case("renderings", "renderings.jsonl", _dumped(_rendering)),
    Case("buildrecord", "builds.build.jsonl", _dumped(_build)),
    Case("records", "harness.jsonl", _dumped(_harness_sample), RECORDS_CONTRACT),
]

# --- corruptions ---------------------------------------------------------------------------------

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.floats(allow_nan=False), st.text(max_size=8)
)
WRONG = st.one_of(SCALARS, st.lists(SCALARS, max_size=3), st.dictionaries(st.text(max_size=4), SCALARS))


def _paths(value: Any, at: tuple = ()) -> list[tuple]:
    """Every key path inside a parsed record (a corruption replaces what one of them holds)."""
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += [(*at, k), *_paths(v, (*at, k))]
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += [(*at, i), *_paths(v, (*at, i))]
    return out


def _replace(value: Any, path: tuple, raw: str) -> str:
    """The record as JSON text with the value at ``path`` replaced by the JSON text ``raw``
    (raw text: json.dumps cannot write a lone surrogate escape or a too-long integer)."""
    marker = "\u0000MARK\u0000"
    node = value
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = marker
    return json.dumps(value).replace(json.dumps(marker), raw)


@st.composite
def corrupted(draw: st.DrawFn, line: str, allow_wrong: bool = True) -> str:
    """One JSON Lines record, corrupted in one of the ways a hostile or broken writer would."""
    kinds = ["truncate", "deep", "huge-int", "surrogate", "huge-string", "garbage"]
    kind = draw(st.sampled_from([*kinds, "wrong-type"] if allow_wrong else kinds))
    if kind == "truncate":
        return line[: draw(st.integers(1, len(line) - 1))]
    if kind == "garbage":
        blob = draw(st.binary(min_size=1, max_size=64)).replace(b"\n", b" ").replace(b"\r", b" ")
        return blob.decode("latin-1")
    value = json.loads(line)
    path = draw(st.sampled_from(_paths(value)))
    if kind == "deep":
        depth = draw(st.sampled_from([101, 150, 995, 5000, 100_000]))
        raw = "[" * depth + "]" * depth
    elif kind == "huge-int":
        raw = "9" * draw(st.integers(4301, 20_000))
    elif kind == "surrogate":
        code = draw(st.integers(0xD800, 0xDFFF))
        raw = json.dumps(draw(st.text(max_size=4))).replace('"', f'"\\u{code:04x}', 1)
    elif kind == "huge-string":
        raw = json.dumps("x" * draw(st.sampled_from([70_000, 1 << 20, HUGE])))
    else:
        raw = json.dumps(draw(WRONG))
    return _replace(value, path, raw)


# --- what must hold ------------------------------------------------------------------------------


def _ingest(case_rel: str, text: str | bytes, contract: str) -> Ingested:
    with tempfile.TemporaryDirectory(prefix="provgraph-fuzz-") as tmp:
        root = write_bundle(Path(tmp) / "b", {case_rel: text}, contract)
        return ingest_bundle(root)  # an internal error raises here and fails the test


def _one_line_rejections(ingested: Ingested, rel: str, allowed: set[int | None]) -> set[int | None]:
    lines = set()
    for p in ingested.result(rel).problems:
        text = str(p)
        assert text.startswith(f"{rel}:{p.line}: " if p.line is not None else f"{rel}: "), text
        assert "\n" not in text and len(text) < 1200, text[:200]
        assert p.line in allowed, text
        lines.add(p.line)
    return lines


def _baseline(case: Case) -> tuple[list[str], int]:
    lines = case.lines()
    ingested = _ingest(case.rel, "\n".join(lines) + "\n", case.contract)
    result = ingested.result(case.rel)
    assert (result.importer, result.problems) == (case.importer, []), result
    ingested.close()
    return lines, result.records


@pytest.mark.parametrize("case", JSONL, ids=str)
def test_one_corrupted_jsonl_record_costs_only_itself(case: Case) -> None:
    lines, records = _baseline(case)
    assert records == len(lines)

    @FUZZ
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(lines) - 1), label="line")
        # a first record that still parses decides detection: only break it, never retype it
        bad = data.draw(corrupted(lines[index], allow_wrong=index > 0), label="record")
        text = "\n".join([*lines[:index], bad, *lines[index + 1 :]]) + "\n"
        ingested = _ingest(case.rel, text, case.contract)
        result = ingested.result(case.rel)
        assert (result.importer, result.outcome) == (case.importer, "imported"), result.error
        rejected = _one_line_rejections(ingested, case.rel, {index + 1})
        blank = not bad.strip()  # a whitespace-only line is no record (JSON Lines readers skip it)
        assert result.records == len(lines) - len(rejected) - blank
        ingested.close()

    run()


# --- whole-file JSON documents ---------------------------------------------------------------------


def _stats_doc() -> dict[str, Any]:
    return json.loads((FIXTURES / "analysis-reported-differs" / "flawed" / "stats.json").read_text())


def _reviews_doc() -> dict[str, Any]:
    path = next(FIXTURES.glob("*/flawed/results/claude_sonnet_4_reviews.json"))
    return json.loads(path.read_text())


def _builds_doc() -> list[dict[str, Any]]:
    return [_build(i) for i in range(1, 6)]


def _samples_doc() -> dict[str, Any]:
    return {"eval": "arc_easy", "samples": [_harness_sample(i) for i in range(1, 6)]}


DOCUMENTS = [
    ("records", "samples.json", _samples_doc, "samples"),
    ("reported-stats", "stats.json", _stats_doc, "statistics"),
    ("reviews", "results/run_reviews.json", _reviews_doc, "reviews"),
    ("buildrecord", "all.build.json", _builds_doc, None),
]


@pytest.mark.parametrize(("importer", "rel", "make", "key"), DOCUMENTS, ids=[d[0] for d in DOCUMENTS])
def test_one_corrupted_entry_of_a_json_document_costs_only_itself(
    importer: str, rel: str, make: Callable[[], Any], key: str | None
) -> None:
    doc = make()
    entries = doc[key] if key else doc
    contract = RECORDS_CONTRACT if importer == "records" else PLAN_CONTRACT
    baseline = _ingest(rel, json.dumps(doc, indent=1), contract).result(rel)
    assert (baseline.importer, baseline.problems) == (importer, []), baseline

    @FUZZ
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(entries) - 1), label="entry")
        bad = data.draw(corrupted(json.dumps(entries[index])), label="entry text")
        texts = [json.dumps(e) for e in entries]
        texts[index] = bad
        body = "[\n" + ",\n".join(texts) + "\n]"
        if key:
            rest = json.dumps({k: v for k, v in doc.items() if k != key})
            body = rest[:-1] + f', "{key}": ' + body + "}"
        ingested = _ingest(rel, body, contract)
        result = ingested.result(rel)
        assert result.importer == importer
        if result.outcome == "failed":  # the document no longer parses: it fails alone, in one line
            assert result.error and result.error.startswith(f"{rel}") and "\n" not in result.error
        else:
            # a rejected entry is named by its line (when found) or its index, never more than one
            problems = result.problems
            assert len(problems) <= 1, problems
            assert all(str(p).startswith(rel) and "\n" not in str(p) for p in problems)
            assert result.records >= baseline.records - 1
        ingested.close()

    run()


# --- CSV importers ----------------------------------------------------------------------------------

CSV = [
    ("plan", "plan.csv", "output-unplanned-record/flawed/plan.csv", PLAN_CONTRACT),
    ("reference-labels", "reference.csv", "analysis-reported-differs/flawed/reference.csv", CONTRACT),
    ("cohort", "cohort.csv", "cohort-patient-in-two-splits/flawed/cohort.csv", CONTRACT),
    ("reported-cells", "cells.csv", "annotation-reference-missing/flawed/cells.csv", CONTRACT),
    ("records", "scores.csv", "../records/scores.csv", RECORDS_CONTRACT),
]


@st.composite
def corrupted_row(draw: st.DrawFn, row: str) -> str:
    kind = draw(st.sampled_from(["truncate", "extra-field", "nul", "bad-bytes", "huge-field", "quote"]))
    if kind == "truncate":
        return row[: draw(st.integers(1, len(row) - 1))]
    if kind == "extra-field":
        return row + ",x"
    at = draw(st.integers(1, len(row)))
    insert = {
        "nul": "\x00",
        "bad-bytes": "\udcff\udcfe",  # written back as the undecodable bytes \xff\xfe
        "huge-field": "y" * draw(st.sampled_from([200_000, HUGE])),
        "quote": '"',  # a quote inside an unquoted field is a character, not an opening
    }[kind]
    return row[:at] + insert + row[at:]


@pytest.mark.parametrize(("importer", "rel", "fixture", "contract"), CSV, ids=[c[0] for c in CSV])
def test_one_corrupted_csv_row_costs_only_itself(
    importer: str, rel: str, fixture: str, contract: str, pseudonym_secret: None
) -> None:
    header, *rows = (FIXTURES / fixture).read_text(encoding="utf-8").splitlines()
    rows = rows[:6]
    baseline = _ingest(rel, "\n".join([header, *rows]) + "\n", contract).result(rel)
    assert (baseline.importer, baseline.problems) == (importer, []), baseline

    @FUZZ
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(rows) - 1), label="row")
        bad = data.draw(corrupted_row(rows[index]), label="row text")
        text = "\n".join([header, *rows[:index], bad, *rows[index + 1 :]]) + "\n"
        ingested = _ingest(rel, text.encode("utf-8", "surrogateescape"), contract)
        result = ingested.result(rel)
        assert (result.importer, result.outcome) == (importer, "imported"), result.error
        rejected = _one_line_rejections(ingested, rel, {index + 2})
        assert result.records >= baseline.records - 1
        assert result.records + len(rejected) >= baseline.records
        ingested.close()

    run()


# --- what the fuzzing found, as fixed examples (issue 22, items 3 and 4) ---------------------

_GOOD_CALLS = [f'{{"call_id": "C{i}", "status": "ok"}}' for i in range(1, 5)]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 100 levels"),
        (
            '{"call_id": "C9", "status": "ok", "output_bytes": ' + "9" * 5000 + "}",
            "a number with more than 4300 digits",
        ),
        ('{"call_id": "C\\ud800", "status": "ok"}', "lone surrogate \\ud800 in call_id"),
        ('{"call_id": "C9", "status": "ok", "error": "x\\udc00"}', "lone surrogate \\udc00 in error"),
        ('{"call_id": "C9", "status": "ok", "x_a": {"\\ud83d": 1}}', "lone surrogate in a key of x_a"),
        ('{"call_id": "C9", "status": "ok", "error": "' + "x" * (9 << 20) + '"}', "record over 8 MiB"),
    ],
    ids=["deep", "huge-int", "surrogate-id", "surrogate-string", "surrogate-key", "oversize"],
)
def test_one_bad_json_record_is_rejected_on_its_own_line(tmp_path: Path, bad: str, reason: str) -> None:
    calls = "\n".join([*_GOOD_CALLS[:2], bad, *_GOOD_CALLS[2:]]) + "\n"
    root = write_bundle(tmp_path / "b", {"calls.jsonl": calls})
    result = ingest_bundle(root).result("calls.jsonl")
    assert (result.importer, result.outcome, result.records) == ("calls", "imported", 4)
    (problem,) = result.problems
    assert str(problem).startswith(f"calls.jsonl:3: {reason}"), problem


def test_escaped_surrogate_pair_is_one_character_not_a_rejection(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"calls.jsonl": '{"call_id": "C\\ud83d\\ude00", "status": "ok"}\n'})
    ingested = ingest_bundle(root)
    assert ingested.result("calls.jsonl").records == 1 and ingested.rejected == []
    assert ingested.select("SELECT ?id WHERE { ?r pg:callId ?id }") == [{"id": "C\U0001f600"}]


def test_first_call_record_over_64_kib_is_still_a_call_record(tmp_path: Path) -> None:
    first = '{"call_id": "C1", "status": "ok", "error": "' + "e" * 200_000 + '"}'
    root = write_bundle(tmp_path / "b", {"calls.jsonl": first + "\n" + _GOOD_CALLS[1] + "\n"})
    result = ingest_bundle(root).result("calls.jsonl")
    assert (result.importer, result.records, result.problems) == ("calls", 2, [])


def test_a_first_record_over_the_record_limit_does_not_hide_the_format(tmp_path: Path) -> None:
    """Found by this file's fuzzing at 300 examples: a first line just over the 8 MiB record
    limit made detection give up, and the whole file was imported as a plain file."""
    first = '{"call_id": "C1", "status": "ok", "error": "' + "e" * (MAX_RECORD_BYTES + (1 << 20)) + '"}'
    root = write_bundle(tmp_path / "b", {"calls.jsonl": first + "\n" + "\n".join(_GOOD_CALLS[1:]) + "\n"})
    result = ingest_bundle(root).result("calls.jsonl")
    assert (result.importer, result.records) == ("calls", len(_GOOD_CALLS) - 1)
    assert [p.line for p in result.problems] == [1]


def test_a_bad_first_record_does_not_hide_the_format(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"calls.jsonl": "[" * 5000 + "\n" + "\n".join(_GOOD_CALLS) + "\n"})
    result = ingest_bundle(root).result("calls.jsonl")
    assert (result.importer, result.records) == ("calls", 4)
    assert [p.line for p in result.problems] == [1]


@pytest.mark.parametrize(
    ("rel", "content"),
    [
        ("calls.jsonl", ""),
        ("a.build.jsonl", "\n \n"),
        ("b.build.json", ""),
        ("c.build.json", "[]"),
        ("stats.json", '{"statistics": []}'),
        ("models_used.json", '{"models": []}'),
        ("x.png.render.json", ""),
    ],
)
def test_an_empty_json_file_says_no_records(tmp_path: Path, rel: str, content: str) -> None:
    root = write_bundle(tmp_path / "b", {rel: content})
    result = ingest_bundle(root).result(rel)
    assert (result.outcome, result.records) == ("imported", 0)
    assert [str(p) for p in result.problems] == [f"{rel}: no records"]


def test_a_long_model_id_is_read_in_linear_time(tmp_path: Path) -> None:
    import json
    import time

    model = "m" * (4 << 20)  # compiling a regex from it took 12 s, 45 s at 8 MiB
    doc = json.dumps({"models": [{"model_id": model}, {"model_id": "gpt-4o"}]}, indent=1)
    root = write_bundle(tmp_path / "b", {"models_used.json": doc})
    t0 = time.perf_counter()
    result = ingest_bundle(root).result("models_used.json")
    assert time.perf_counter() - t0 < 5
    assert result.records == 2


def test_one_bad_statistic_in_a_json_document_costs_only_itself(tmp_path: Path) -> None:
    stats = (
        '{"statistics": [{"name": "a", "value": 1}, {"name": "b\\udfff", "value": 2}, '
        '{"name": "c", "value": 3}]}'
    )
    root = write_bundle(tmp_path / "b", {"stats.json": stats})
    result = ingest_bundle(root).result("stats.json")
    assert result.records == 2
    assert [str(p) for p in result.problems] == [
        "stats.json: statistics[1]: lone surrogate \\udfff in name: not storable as UTF-8 text"
    ]


def test_a_json_document_nested_too_deep_fails_alone(tmp_path: Path) -> None:
    deep = '{"statistics": ' + "[" * 50_000 + "]" * 50_000 + "}"
    root = write_bundle(tmp_path / "b", {"stats.json": deep, "calls.jsonl": _GOOD_CALLS[0] + "\n"})
    ingested = ingest_bundle(root)
    assert ingested.result("stats.json").error == (
        "stats.json: not a JSON document: nested deeper than 100 levels "
        "(the limit for JSON arrays and objects)"
    )
    assert ingested.result("calls.jsonl").records == 1
