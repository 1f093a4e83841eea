"""Each call rule against each importer that writes calls, flawed and clean (issue 14, item 2).

The rules read a call's evidence from one place, the per-call evidence view
(``provgraph/rules/callview.py``), whichever importer wrote the call. This matrix holds them to
it: every scenario is one logical description (:data:`SCENARIOS`, e.g. "case s1: condition A
sent image X, condition B sent image Y"), written by ``tests/call_matrix_writers.py`` as each
importer's files, then ingested and gated for real. A flawed twin must give the rule's violation
at exactly the expected foci; a clean twin must leave the rule passing (or not applicable where
the contract says so) and no rule unable to run. Every cell is a parameter
``(rule, importer, twin)``.

Where each cell's evidence lives, and the cells that cannot carry it (NO; :data:`UNSUPPORTED`):

================================== ==================== ==================== ====================
rule                               calls (calls.jsonl)  openai (in/out/err)  anthropic (req/res)
================================== ==================== ==================== ====================
pixel-conditions-differ-in-image   record sha; file (3) request data URL     request base64 block
pixel-image-without-rendering      record image + sha   request image sha    request image sha
output-call-not-successful         record status        finish; error file   type; stop_reason
                                   (timeout (4))        (NO timeout (4))     (NO timeout (4))
output-duplicate-terminal          two ok records       ok in two batches    ok in two batches
output-duplicate-custom-id         NO: not a batch (1)  id twice in 1 file   id twice in 1 file
prompt-identical-across-conditions record prompt        request messages     request system
output-ok-without-output           empty; missing file  empty; NO file (2)   empty; NO file (2)
================================== ==================== ==================== ====================

(1) Canonical records have no batch, so no uniqueness scope to break: a ``call_id`` recorded
twice is the call's history (a retry) or a second ``ok`` answer (``output-duplicate-terminal``).
(2) A batch answer is inline in its result line: there is no output file to be missing (twin
``missing``); an empty answer is the ``flawed`` twin. (3) Twin ``file-only`` (records name the
image file without its hash, so the view hashes the file) exists for canonical records only: a
batch request carries the image bytes themselves. (4) Twin ``timeout`` is canonical only:
OpenAI's ``request_timeout`` error line is imported as status ``error`` (which the flawed twin
covers) and Anthropic results have no timeout type.

The ``declared`` writer writes the canonical records in a harness's own nested JSON Lines shape
(its own words for the final states, among events of other kinds), read through an
``[[ingest.records]]`` declaration: its cells are the ``calls`` column's.

Anthropic results carry no image and OpenAI output lines no prompt: the image and prompt cells
read the request, as the view does. A refusal is a ``content_filter`` finish (OpenAI) or a
``succeeded`` message with ``stop_reason: refusal`` (Anthropic), status ``refused`` in both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from call_matrix_writers import PROMPTS, WRITERS, Attempt, Call, Scenario, record_focus, request_focus
from conftest import ingest_bundle

from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules

RULES = load_rules()
IMAGE_OF = {"s1": "X", "s2": "Y", "s3": "Z"}
A1, B1, A2, B2, A3, B3 = (f"{c}--{s}--1" for s in ("s1", "s2", "s3") for c in ("A", "B"))


def plan(cases: tuple[str, ...] = ("s1", "s2"), changes: dict[str, dict] | None = None) -> tuple[Call, ...]:
    """Conditions A and B on every case, each sending its case's image; ``changes`` per call id."""
    calls = [Call(case, condition, IMAGE_OF[case]) for condition in ("A", "B") for case in cases]
    return tuple(replace(c, **(changes or {}).get(c.id, {})) for c in calls)


@dataclass(frozen=True)
class Expect:
    outcome: str  # violated | pass | not-applicable
    #: foci relative to the base IRI; "record:<call id>" is the record of the call's first attempt
    foci: tuple[str, ...] = ()
    #: what the messages must say (each phrase in some message): they cite the evidence
    says: tuple[str, ...] = ()
    #: other rules the planted defect also (rightly) trips; any other violation is a false alarm
    also: tuple[str, ...] = ()


PASS = Expect("pass")
FAILED = (Attempt(A1, "length"), Attempt(B1, "refused"), Attempt(A2, "error"), Attempt(B2, "expired"))
FAILED += (Attempt(A3, "canceled"),)
RETRY = (Attempt(A1, "error"), Attempt(A1, batch=2))
NOT_SUCCESSFUL = ("token limit", "refused or blocked", "failed (error)", "never answered (expired)")
NOT_SUCCESSFUL += ("never answered (canceled)",)

#: rule -> twin -> (what happened, what the rule must say)
SCENARIOS: dict[str, dict[str, tuple[Scenario, Expect]]] = {
    "pixel-conditions-differ-in-image": {
        # case s1: condition A sent image X, condition B sent image Y (case s2's)
        "flawed": (
            Scenario(plan(changes={B1: {"image": "Y"}})),
            Expect("violated", ("case/s1",), ("case s1", "fed 2 different images")),
        ),
        # the same, the records naming each image file without its hash (the view hashes the file)
        "file-only": (
            Scenario(plan(changes={B1: {"image": "Y"}}), image_hash=False),
            Expect("violated", ("case/s1",), ("case s1", "fed 2 different images")),
        ),
        "clean": (Scenario(plan()), PASS),
    },
    "pixel-image-without-rendering": {
        # image Y (cases s2) was rendered from its DICOM but its rendering record was not kept
        "flawed": (
            Scenario(plan(), inputs="dicom", unrecorded=frozenset({"Y"})),
            Expect(
                "violated",
                (f"call/{A2}", f"call/{B2}"),
                ("which no rendering record describes",),
                # with no record (and no case key in its path) nothing links Y to its DICOM either,
                # so its pixels cannot be judged
                also=("pixel-polarity-from-pixels",),
            ),
        ),
        # PNG inputs from the start: no DICOM, no rendering record is owed
        "inputs-images": (Scenario(plan()), Expect("not-applicable")),
        "clean": (Scenario(plan(), inputs="dicom"), PASS),
    },
    "pixel-image-not-recorded": {
        # call B--s2 was answered, but its request carried no image (PNG inputs)
        "flawed": (
            Scenario(plan(changes={B2: {"image": None}})),
            Expect("violated", (f"call/{B2}",), (f"call {B2} was answered", "names an image")),
        ),
        # the same with DICOM-rendered inputs
        "dicom": (
            Scenario(plan(changes={B2: {"image": None}}), inputs="dicom"),
            Expect("violated", (f"call/{B2}",), (f"call {B2} was answered", "names an image")),
        ),
        "clean": (Scenario(plan()), PASS),
    },
    "output-call-not-successful": {
        # five calls end length, refused, error, expired, canceled; B--s3 failed, then was answered
        "flawed": (
            Scenario(plan(("s1", "s2", "s3")), (*FAILED, Attempt(B3, "error"), Attempt(B3, batch=2))),
            Expect("violated", tuple(f"call/{a.call}" for a in FAILED), NOT_SUCCESSFUL),
        ),
        # a call that timed out (canonical records only: see the table)
        "timeout": (
            Scenario(plan(), (Attempt(A1, "timeout"),)),
            Expect("violated", (f"call/{A1}",), ("never answered (timeout)",)),
        ),
        # every one of those failures was re-submitted in batch 2 and answered there
        "clean": (
            Scenario(plan(("s1", "s2", "s3")), (*FAILED, *(Attempt(a.call, batch=2) for a in FAILED))),
            PASS,
        ),
    },
    "output-duplicate-terminal": {
        # call A--s1 answered ok in batch 1 and again in batch 2
        "flawed": (
            Scenario(plan(), (Attempt(A1), Attempt(A1, batch=2))),
            Expect("violated", (f"call/{A1}",), ("has 2 records logged ok",)),
        ),
        # call A--s1 failed in batch 1, answered in batch 2
        "clean": (Scenario(plan(), RETRY), PASS),
    },
    "output-duplicate-custom-id": {
        # custom_id A--s1 sent twice in batch 1's input file
        "flawed": (
            Scenario(plan(), (Attempt(A1, sends=2),)),
            Expect("violated", (f"call/{A1}",), (f"custom_id {A1} was sent 2 times in one batch",)),
        ),
        # sent once in batch 1 (failed) and once in batch 2 (answered): a retry
        "clean": (Scenario(plan(), RETRY), PASS),
    },
    "prompt-identical-across-conditions": {
        # A and B are declared to differ, but B's requests carried A's system prompt
        "flawed": (
            Scenario(plan(changes={B1: {"system": PROMPTS["A"]}, B2: {"system": PROMPTS["A"]}})),
            Expect(
                "violated", ("condition-pair/A/B",), ("on 2 of 2 cases",), ("prompt-differs-from-declared",)
            ),
        ),
        "clean": (Scenario(plan()), PASS),
    },
    "output-ok-without-output": {
        # call A--s1 logged ok with an empty answer
        "flawed": (
            Scenario(plan(), (Attempt(A1, text=""),)),
            Expect("violated", (f"record:{A1}",), ("empty",)),
        ),
        # call A--s1 logged ok, its record names an output file that was never written
        "missing": (
            Scenario(plan(), missing_output=frozenset({A1})),
            Expect("violated", (f"record:{A1}",), ("does not exist",)),
        ),
        "clean": (Scenario(plan()), PASS),
    },
}

#: (rule, importer, twin or "*") -> why that importer cannot carry the evidence (docstring table)
UNSUPPORTED = {
    ("output-duplicate-custom-id", "calls", "*"): "canonical records have no batch (1)",
    ("output-duplicate-custom-id", "declared", "*"): "declared records are canonical records (1)",
    ("pixel-conditions-differ-in-image", "openai", "file-only"): "a request carries the bytes (3)",
    ("output-call-not-successful", "openai", "timeout"): "request_timeout is recorded as error (4)",
    ("output-call-not-successful", "anthropic", "timeout"): "no timeout result type (4)",
    ("pixel-conditions-differ-in-image", "anthropic", "file-only"): "a request carries the bytes (3)",
    ("output-ok-without-output", "openai", "missing"): "batch answers are inline: no file to miss (2)",
    ("output-ok-without-output", "anthropic", "missing"): "batch answers are inline: no file to miss (2)",
}


def _supported(rule: str, importer: str, twin: str) -> bool:
    return (rule, importer, "*") not in UNSUPPORTED and (rule, importer, twin) not in UNSUPPORTED


CELLS = [
    pytest.param(rule, importer, twin, id=f"{rule}-{importer}-{twin}")
    for rule, twins in SCENARIOS.items()
    for importer in WRITERS
    for twin in twins
    if _supported(rule, importer, twin)
]


def gate(root: Path):
    """Ingest the bundle for real (every file imported cleanly) and run the gate, unrecorded."""
    store, results, problems = ingest_bundle(root)
    assert not problems and all(not r.problems and r.outcome == "imported" for r in results), [
        str(p) for r in results for p in r.problems
    ] + [r.error for r in results if r.error]
    return run_gate(store, RULES, record=False)


def _resolve(focus: str, importer: str, sc: Scenario) -> str:
    return record_focus(importer, sc, focus.removeprefix("record:")) if focus.startswith("record:") else focus


@pytest.mark.parametrize(("rule_id", "importer", "twin"), CELLS)
def test_call_rule_reads_every_importer(rule_id: str, importer: str, twin: str, tmp_path: Path) -> None:
    scenario, expect = SCENARIOS[rule_id][twin]
    WRITERS[importer](tmp_path / "bundle", scenario)
    report = gate(tmp_path / "bundle")
    (result,) = [r for r in report.results if r.rule.id == rule_id]
    # no rule may fail closed: one that cannot run hides what it would say
    assert [(r.rule.id, r.error) for r in report.results if r.outcome == "error"] == []
    found = sorted(report.short(v.focus) for v in result.violations)
    messages = [v.message for v in result.violations]
    assert result.outcome == expect.outcome, messages
    assert found == sorted(_resolve(f, importer, scenario) for f in expect.foci), messages
    assert all(m and not m.startswith("?") for m in messages)
    assert [p for p in expect.says if not any(p in m for m in messages)] == [], messages
    # one planted defect per twin: every other violation is a false alarm (clean: the gate passes)
    fired = {r.rule.id: [v.message for v in r.violations] for r in report.results if r.violations}
    assert set(fired) - {rule_id, *expect.also} == set(), fired
    assert report.passed is (expect.outcome != "violated")


def test_every_cell_is_run_or_explained() -> None:
    """Each rule x importer x twin is a parameter or an :data:`UNSUPPORTED` entry with a reason."""
    run = {(p.values[0], p.values[1], p.values[2]) for p in CELLS}
    for rule, twins in SCENARIOS.items():
        for importer in WRITERS:
            for twin in twins:
                assert ((rule, importer, twin) in run) != (not _supported(rule, importer, twin))
    assert {r for r, _, _ in UNSUPPORTED} <= set(SCENARIOS)
    assert set(SCENARIOS) <= {r.id for r in RULES}
    assert all(reason.strip() for reason in UNSUPPORTED.values())


#: the model call A--s1's retry requested instead of the declared one, per importer
OTHER_MODEL = {
    "calls": "gpt-4.1-2025-04-14",
    "declared": "gpt-4.1-2025-04-14",
    "openai": "gpt-4.1-2025-04-14",
    "anthropic": "claude-3-7-sonnet-20250219",
}


@pytest.mark.parametrize("importer", WRITERS)
def test_retry_that_requested_another_model(importer: str, tmp_path: Path) -> None:
    """Call A--s1 failed in batch 1 (declared model); its retry in batch 2 asked for another one.
    model-undeclared blames the attempt that asked for it and counts calls, not attempts; the
    declared model's rules do not count that answer as the declared model's (issue 14)."""
    other = OTHER_MODEL[importer]
    sc = Scenario(plan(), (Attempt(A1, "error"), Attempt(A1, batch=2, model=other)))
    WRITERS[importer](tmp_path / "bundle", sc)
    report = gate(tmp_path / "bundle")
    fired = {
        r.rule.id: [(report.short(v.focus), v.message) for v in r.violations]
        for r in report.results
        if r.violations
    }
    assert set(fired) == {"model-undeclared"}, fired
    ((focus, message),) = fired["model-undeclared"]
    assert focus == request_focus(importer, sc, A1, 2)
    assert message.startswith(f"1 call requests model {other}, which no [models] entry declares"), message
