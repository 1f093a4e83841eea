"""The prompt, model and output-identity rules on generated bundles in every format they
apply to (canonical calls, OpenAI Batch, Anthropic Message Batches, LLM-reviewer results):
each rule fires on its flawed twin with the expected focus nodes and stays silent on its
clean twin. Also: the committed fixture pairs are exactly what the generator writes, and
`provgraph check` names each violation's focus in words a researcher understands."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, RULE_FIXTURES, ingest_bundle
from fixtures import rulepairs

from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules

sys.path.insert(0, str(FIXTURES))
import make_identity as gen

RULES = load_rules()
CASES = [(rule, fmt) for rule, defect in gen.DEFECTS.items() for fmt in defect.formats]


def check(root: Path):
    store, results, problems = ingest_bundle(root)
    assert not problems and all(not r.problems and r.outcome == "imported" for r in results), [
        str(p) for r in results for p in r.problems
    ] + [r.error for r in results if r.error]
    return run_gate(store, RULES, record=False)


@pytest.mark.parametrize(("rule", "fmt"), CASES, ids=[f"{r}[{f}]" for r, f in CASES])
def test_rule_on_generated_twins(tmp_path: Path, rule: str, fmt: str) -> None:
    defect = gen.DEFECTS[rule]
    flawed = check(gen.write_files(tmp_path / "flawed", gen.bundle_files(rule, fmt, "flawed")))
    (result,) = [r for r in flawed.results if r.rule.id == rule]
    assert result.outcome == "violated", result.error
    assert sorted(flawed.short(v.focus) for v in result.violations) == sorted(defect.focus(fmt))
    clean = check(gen.write_files(tmp_path / "clean", gen.bundle_files(rule, fmt, "clean")))
    (result,) = [r for r in clean.results if r.rule.id == rule]
    assert result.outcome == "pass", [v.message for v in result.violations] or result.error


@pytest.mark.parametrize("fmt", gen.FORMATS)
def test_clean_base_of_each_format_passes_the_whole_gate(tmp_path: Path, fmt: str) -> None:
    if fmt == "reviewer":
        files = gen.render_reviewer("base", gen.reviewer_data())
    else:
        files = gen.render("base", fmt, gen.base_calls(fmt))
    report = check(gen.write_files(tmp_path / fmt, files))
    fired = {
        r.rule.id: [v.message for v in r.violations] or r.error
        for r in report.results
        if r.outcome not in ("pass", "skipped")
    }
    assert fired == {}
    in_force = {"canonical": {"output", "prompt", "model"}, "reviewer": {"output", "model"}}
    assert set(report.clauses_in_force) == in_force.get(fmt, {"output", "prompt", "model"})


@pytest.mark.parametrize("fmt", gen.CALL_FORMATS)
def test_decoding_mismatch_blames_the_attempt_that_stated_it(tmp_path: Path, fmt: str) -> None:
    """Call C003 is retried: its first attempt asked for the planned temperature, the retry for
    0.7. Only the retry's request (canonical: its record) is reported, with its file and line;
    the first attempt's nodes are not said to have run hot (issue 14)."""
    first = gen.render("retry", fmt, gen.base_calls(fmt))
    calls = gen.base_calls(fmt)
    gen.DEFECTS["output-decoding-mismatch"].flaw(calls, fmt)
    files = gen.render("retry", fmt, calls)
    for name, text in first.items():
        if name.endswith(".jsonl"):
            earlier = "".join(line for line in text.splitlines(True) if '"C003"' in line)
            if fmt == "canonical":  # the first attempt is the file's earlier record
                files[name] = earlier + files[name]
            else:  # a first batch in its own folder
                files[f"earlier/{name}"] = earlier
    report = check(gen.write_files(tmp_path / fmt, files))
    (result,) = [r for r in report.results if r.rule.id == "output-decoding-mismatch"]
    found = [(report.short(v.focus), v.message) for v in result.violations]
    if fmt == "canonical":
        assert found == [
            (
                "record/calls.jsonl/C003/2",
                "call C003: the record at calls.jsonl:4 ran with temperature 0.7; the plan expects 0",
            )
        ]
    else:
        ((request, message),) = found
        assert request == gen.DEFECTS["output-decoding-mismatch"].focus(fmt)[0]
        assert message.startswith("call C003: the request at ") and "asked for temperature 0.7" in message


def test_committed_fixtures_match_the_generator(tmp_path: Path) -> None:
    for rule, pair in gen.committed().items():
        for twin, files in (("flawed", pair.flawed), ("clean", pair.clean)):
            on_disk = rulepairs.files(rulepairs.twin(RULE_FIXTURES / rule, twin, tmp_path / rule / twin))
            assert on_disk == {rel: text.encode() for rel, text in files.items()}, (
                f"{rule}/{twin} is stale: run python tests/fixtures/make_identity.py"
            )
        pinned = sorted(p["focus"] for p in rulepairs.expected(rule)["violations"])
        assert pinned == pair.focus, f"{rule}: run python tests/fixtures/pin_rules.py {rule}"


def test_check_names_the_focus_of_each_violation(cli, tmp_path: Path) -> None:
    # The audit's failure: condition B executed condition A's prompt, captured at the request.
    root = gen.write_files(
        tmp_path / "b", gen.bundle_files("prompt-identical-across-conditions", "openai", "flawed")
    )
    assert cli("-C", str(root), "ingest").code == 0
    r = cli("-C", str(root), "check", "--format", "json", "--output", str(tmp_path / "r.json"))
    assert r.code == 1
    doc = json.loads((tmp_path / "r.json").read_text())
    found = {v["focus"]: v["message"] for rule in doc["rules"] for v in rule["violations"]}
    assert found["https://example.org/prompt-identical-across-conditions-flawed/condition-pair/A/B"] == (
        "conditions A and B are declared to differ, but executed byte-identical prompts on 2 of 2 "
        "cases they share (e.g. case s1)"
    )
    assert found["https://example.org/prompt-identical-across-conditions-flawed/condition/B"] == (
        "condition B: 2 of 2 calls sent a system prompt that differs from its declared file "
        "prompts/B.txt (e.g. call C002); it is the prompt declared for condition A"
    )
    flat = " ".join(r.out.split())
    assert "prompt-identical-across-conditions: condition-pair/A/B [provgraph.toml:9]" in flat


def test_check_on_reviewer_results_names_script_condition_and_run(cli, tmp_path: Path) -> None:
    root = gen.write_files(
        tmp_path / "b", gen.bundle_files("output-error-with-verdict", "reviewer", "flawed")
    )
    assert cli("-C", str(root), "ingest").code == 0
    r = cli("-C", str(root), "check")
    assert r.code == 1
    flat = " ".join(r.out.split())
    assert (
        "output-error-with-verdict: review/claude_sonnet_4_with_taxonomy/script_02/1 "
        "[results/claude_sonnet_4_with_taxonomy_reviews.json:" in flat
    )
    assert (
        "script script_02 under condition claude_sonnet_4_with_taxonomy, run 1: the call failed "
        "(litellm.ServiceUnavailableError: 503 overloaded) but the results file records verdict PASS"
    ) in flat
