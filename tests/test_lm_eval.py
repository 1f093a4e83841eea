"""lm-evaluation-harness output folders: import, and the gate on flawed and clean twins.

The folders are written by ``tests/lm_eval_writer.py`` in the harness's own shapes: results
keys from ``lm_eval/evaluator.py`` / ``lm_eval/evaluator_utils.py`` / ``lm_eval/result_schema.py``,
file names and sample-line sanitising from ``lm_eval/loggers/evaluation_tracker.py``, model info
from ``lm_eval/models/huggingface.py`` (EleutherAI/lm-evaluation-harness at 4e7e0d47f).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lm_eval_writer import SHA, Task, h, write_run

from provgraph.importers.lm_eval import model_identity, parse_model_args
from provgraph.ingest.testing import ingest_bundle, write_bundle
from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules

CONTRACT = """[project]
name = "lm-eval test"
base_iri = "https://example.org/t/"

[analysis]
harness = "lm-eval"

[models.pythia]
requested = "EleutherAI/pythia-160m"
alias_ok = true

[conditions.gsm8k]
differs_from = ["gsm8k_cot"]
model = "pythia"

[conditions.gsm8k_cot]
model = "pythia"

[conditions.arc_easy]
model = "pythia"
"""
COT = "Q: {q}\nLet's think step by step.\nA:"


def tasks(cot_template: str = COT, shift: float = 0.0, drop: frozenset = frozenset()) -> list[Task]:
    return [
        Task("arc_easy", "multiple_choice", 8, reported_shift=shift, drop=set(drop)),
        Task("gsm8k", "generate_until", 6, filters=("strict-match", "flexible-extract")),
        Task("gsm8k_cot", "generate_until", 6, template=cot_template),
    ]


def gate(
    tmp_path: Path, task_list: list[Task], **run
) -> tuple[dict[str, list[tuple[str, str]]], bool, object]:
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    write_run(root / "output", task_list, **run)
    ingested = ingest_bundle(root)
    assert ingested.rejected == [] and ingested.problems == []
    report = run_gate(ingested.store, load_rules(), record=False)
    fired = {
        r.rule.id: [(report.short(v.focus), v.message) for v in r.violations]
        for r in report.results
        if r.outcome not in ("pass", "skipped", "not-applicable")
    }
    return fired, report.passed, ingested


def test_the_run_imports_with_no_reject_and_its_clean_gate_passes(tmp_path: Path) -> None:
    fired, passed, ingested = gate(tmp_path, tasks())
    assert fired == {} and passed
    (result,) = [r for r in ingested.results if r.importer == "lm-eval"]
    assert result.records == 3 + 8 + 12 + 6  # three tasks and one record per sample line
    rows = ingested.select(
        "SELECT ?model ?res ?hash ?own WHERE {"
        " ?r pg:callId 'EleutherAI__pythia-160m--gsm8k--2--strict-match' ; pg:requestedModel ?model ;"
        " pg:resolvedModel ?res ; pg:promptSha256 ?hash ; pg:harnessPromptSha256 ?own }"
    )
    assert rows[0]["model"] == "EleutherAI/pythia-160m" and rows[0]["res"] == f"EleutherAI/pythia-160m@{SHA}"
    assert rows[0]["own"] == h("Question: Which property of mineral 2 can be observed?\nAnswer:")
    stats = ingested.select(
        "SELECT ?n WHERE { ?t pg:key 'arc_easy' ; pg:plannedSamples ?n ; pg:documentCount 8 }"
    )
    assert stats == [{"n": "8"}]


def test_collapsed_prompt_variants_fail_at_their_pair(tmp_path: Path) -> None:
    fired, passed, _ = gate(tmp_path, tasks(cot_template="Question: {q}\nAnswer:"))
    assert not passed
    assert [f for f, _ in fired["prompt-identical-across-conditions"]] == ["condition-pair/gsm8k/gsm8k_cot"]
    assert set(fired) == {"prompt-identical-across-conditions"}


def test_a_reported_accuracy_that_is_not_its_samples_mean_fails(tmp_path: Path) -> None:
    fired, passed, _ = gate(tmp_path, tasks(shift=0.05))
    assert not passed
    run = "reported/output%2FEleutherAI__pythia-160m%2Fresults_2026-11-20T14-03-11.512340.json"
    assert sorted(fired["analysis-reported-differs"]) == [
        (
            f"{run}/arc_easy/{metric}%2Cnone",
            f"reported {metric} = 0.675 but {metric} arc_easy (none, EleutherAI/pythia-160m) recomputes to "
            "0.625 (n = 8), beyond the written precision of +/-0.000000001",
        )
        for metric in ("acc", "acc_norm")
    ]
    assert set(fired) == {"analysis-reported-differs"}


def test_missing_samples_fail_at_the_task(tmp_path: Path) -> None:
    fired, passed, _ = gate(tmp_path, tasks(drop=frozenset({1, 5})))
    assert not passed and set(fired) == {"analysis-harness-samples-missing"}
    ((focus, message),) = fired["analysis-harness-samples-missing"]
    assert focus.endswith("/arc_easy") and "logged 6 distinct documents" in message and "says 8" in message


def test_a_limit_below_the_task_size_is_only_a_defect_without_a_limit(tmp_path: Path) -> None:
    fired, passed, _ = gate(tmp_path, [Task("arc_easy", "multiple_choice", 8)], limit=8)
    assert fired == {} and passed


@pytest.mark.parametrize("revision, sha", [("main", ""), ("", "")])
def test_an_unpinned_hugging_face_model_is_reported_at_its_spec(
    tmp_path: Path, revision: str, sha: str
) -> None:
    fired, _, _ = gate(tmp_path, tasks(), revision=revision, sha=sha)
    assert set(fired) == {"model-alias-unresolved"}
    ((focus, message),) = fired["model-alias-unresolved"]
    assert focus == "model-spec/pythia" and "record no resolved snapshot" in message


def test_revision_main_with_the_resolved_sha_recorded_is_pinned() -> None:
    doc = {
        "config": {"model_args": "pretrained=org/m,revision=main", "model_revision": "main", "model_sha": SHA}
    }
    assert model_identity(doc) == ("org/m", f"org/m@{SHA}", "main")
    assert model_identity({"config": {"model_args": "pretrained=org/m", "model_sha": ""}}) == (
        "org/m",
        None,
        None,
    )
    assert parse_model_args({"pretrained": "org/m", "dtype": "bfloat16"}) == {
        "pretrained": "org/m",
        "dtype": "bfloat16",
    }


def test_bad_sample_lines_cost_only_themselves(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    folder = write_run(root / "output", [Task("arc_easy", "multiple_choice", 4)])
    path = folder / "samples_arc_easy_2026-11-20T14-03-11.512340.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[1])
    bad["prompt_hash"] = "0" * 64
    lines[1] = json.dumps(bad)
    lines[2] = "{not json"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "samples_arc_easy_2026-01-01T00-00-00.000001.jsonl").write_text("{}\n", encoding="utf-8")
    ingested = ingest_bundle(root)
    rel = "output/EleutherAI__pythia-160m/samples_arc_easy_2026-11-20T14-03-11.512340.jsonl"
    reasons = sorted(str(p) for p in ingested.rejected)
    assert reasons[0] == (
        "output/EleutherAI__pythia-160m/samples_arc_easy_2026-01-01T00-00-00.000001.jsonl: "
        "no results_2026-01-01T00-00-00.000001.json beside it: the run is unknown"
    )
    assert reasons[1] == f"{rel}:2: prompt_hash is not the SHA-256 of arguments.gen_args_0.arg_0"
    assert reasons[2].startswith(f"{rel}:3: ")
    assert ingested.select("SELECT (COUNT(*) AS ?n) WHERE { ?r pg:inTask ?t }") == [{"n": "2"}]


def test_a_declared_harness_without_its_output_fails_closed(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    report = run_gate(ingest_bundle(root).store, load_rules(), record=False)
    harness = {r.rule.id: r for r in report.results if "harness" in r.rule.applies}
    assert len(harness) == 3 and {r.outcome for r in harness.values()} == {"error"}
    assert all("no pg:HarnessTask nodes" in (r.error or "") for r in harness.values())
    assert not report.passed


def test_a_run_without_logged_samples_or_with_a_broken_results_file(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    folder = write_run(root / "output", [Task("arc_easy", "multiple_choice", 4)])
    (folder / "samples_arc_easy_2026-11-20T14-03-11.512340.jsonl").unlink()  # run without --log_samples
    (folder / "results_2026-11-21T09-00-00.000001.json").write_bytes(b'{\n  "results": {"x": \xff}')
    ingested = ingest_bundle(root)
    assert [str(p) for p in ingested.rejected] == [
        "output/EleutherAI__pythia-160m/results_2026-11-21T09-00-00.000001.json: not UTF-8 text (byte 21)"
    ]
    report = run_gate(ingested.store, load_rules(), record=False)
    (missing,) = [r for r in report.results if r.rule.id == "analysis-harness-samples-missing"]
    assert [v.message for v in missing.violations] == [
        "task arc_easy has no samples logged, but n-samples says 4 documents were evaluated: "
        "its reported metrics cannot be recomputed"
    ]


def test_a_folder_of_another_tool_is_not_claimed(tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "b", {"runs/x/results_2026-11-20T14-03-11.json": '[{"loss": 1.0}]\n'}, CONTRACT
    )
    ingested = ingest_bundle(root)
    assert {r.importer for r in ingested.results} == {"contract", "files"}


def test_the_committed_fixture_pairs_are_what_the_generator_writes() -> None:
    from fixtures import make_lm_eval  # the generator is a script beside the fixtures it writes

    for rule, (flaw, _) in make_lm_eval.PAIRS.items():
        folder = make_lm_eval.RULES / rule / "flawed"
        for rel, text in make_lm_eval.bundle(make_lm_eval.tasks(**flaw)).items():
            assert (folder / rel).read_text(encoding="utf-8") == text, f"{rule}: {rel}: run make_lm_eval.py"
