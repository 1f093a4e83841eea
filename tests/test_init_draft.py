"""``provgraph init`` in a folder with artifacts drafts a contract whose check gives the verdict of
the hand-written one.

Each bundle is first checked under its hand-written contract (the verdict to match); then the
contract, the store and, where the harness writes no plan (reviewer harness, batch folders), the
plan are removed and ``init`` drafts them from the artifacts. Shapes: the example generators
(``examples/{output_gate,llm_review,cxr_pilot}``, whose own tests hold them to the Replication
Trap's and the audited pilot's files) and the batch writers of ``tests/call_matrix_writers.py``
(OpenAI Batch API and Anthropic Message Batches lines built by
``tests/calibration/shapes/_cal_batch.py`` from the providers' batch documentation).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from call_matrix_writers import PROMPTS, Call, Scenario, write_anthropic, write_openai
from conftest import REPO
from examples_support import generator

CALLS = (Call("s1", "A", "X"), Call("s1", "B", "X"), Call("s2", "A", "Y"), Call("s2", "B", "Y"))
#: the flawed batch run: condition B sent A's system prompt (the audit's defect)
SAME_PROMPT = tuple(Call(c.case, c.condition, c.image, PROMPTS["A"]) for c in CALLS)


def _verdict(cli, root: Path) -> tuple[str, set[str]]:
    """The gate verdict of ``root`` after a fresh ingest, and the rules that fired."""
    shutil.rmtree(root / ".provgraph", ignore_errors=True)
    assert cli("-C", str(root), "-q", "ingest").code == 0
    r = cli("-C", str(root), "check", "--format", "json")
    report = json.loads(r.out)
    fired = {rule["id"] for rule in report["rules"] if rule["outcome"] == "violated"}
    return report["gate"], fired


def _examples(name: str, twin: str, root: Path) -> None:
    if name == "output_gate":
        shutil.copytree(REPO / "examples" / name / twin, root)
    else:
        generator(name).generate(root, twin)


def _batch(write: Callable[[Path, Scenario], None], calls: tuple[Call, ...]) -> Callable:
    def make(root: Path) -> None:
        write(root, Scenario(calls))

    return make


#: (bundle maker, whether its plan.csv is an artifact of the run rather than hand-written)
CASES = {
    "output_gate-flawed": (lambda r: _examples("output_gate", "flawed", r), True),
    "output_gate-clean": (lambda r: _examples("output_gate", "clean", r), True),
    "llm_review-flawed": (lambda r: _examples("llm_review", "flawed", r), False),
    "llm_review-clean": (lambda r: _examples("llm_review", "clean", r), False),
    "cxr_pilot-flawed": (lambda r: _examples("cxr_pilot", "flawed", r), True),
    "cxr_pilot-clean": (lambda r: _examples("cxr_pilot", "clean", r), True),
    "openai-flawed": (_batch(write_openai, SAME_PROMPT), False),
    "openai-clean": (_batch(write_openai, CALLS), False),
    "anthropic-flawed": (_batch(write_anthropic, SAME_PROMPT), False),
    "anthropic-clean": (_batch(write_anthropic, CALLS), False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_drafted_contract_gives_the_hand_written_verdict(case: str, cli, tmp_path: Path) -> None:
    make, plan_is_artifact = CASES[case]
    root = tmp_path / "bundle"
    make(root)
    expected, _ = _verdict(cli, root)
    assert expected == ("fail" if case.endswith("flawed") else "pass")
    hand_plan = (root / "plan.csv").read_text(encoding="utf-8")
    (root / "provgraph.toml").unlink()
    if not plan_is_artifact:
        (root / "plan.csv").unlink()
    r = cli("init", str(root))
    assert r.code == 0, r.err
    assert "inferred:" in r.out and "could not infer:" in r.out and "confirm: [project] base_iri" in r.out
    drafted, fired = _verdict(cli, root)
    assert drafted == expected, (fired, (root / "provgraph.toml").read_text())
    if not plan_is_artifact:  # frozen from the requests: the same calls as the hand-written plan
        assert _rows(root / "plan.csv") == _rows_text(hand_plan)
        assert "never from outputs" in (root / "provgraph.toml").read_text()
    if case.startswith(("openai-flawed", "anthropic-flawed", "cxr_pilot-flawed")):
        assert "prompt-identical-across-conditions" in fired


def _rows_text(text: str) -> set[tuple[str, ...]]:
    return {tuple(line.split(",")) for line in text.splitlines()[1:] if line}


def _rows(path: Path) -> set[tuple[str, ...]]:
    return _rows_text(path.read_text(encoding="utf-8"))


def test_a_request_without_result_stays_planned(cli, tmp_path: Path) -> None:
    """The plan is frozen from the batch input, so a request the output lacks is a planned call
    with no terminal record; a plan built from the outputs would have hidden it."""
    root = tmp_path / "bundle"
    write_openai(root, Scenario(CALLS))
    output = root / "batches" / "batch_01_output.jsonl"
    lines = output.read_text(encoding="utf-8").splitlines(keepends=True)
    output.write_text("".join(lines[:-1]), encoding="utf-8")
    for name in ("provgraph.toml", "plan.csv"):
        (root / name).unlink()
    assert cli("init", str(root)).code == 0
    verdict, fired = _verdict(cli, root)
    assert verdict == "fail" and "output-planned-without-terminal" in fired
    assert len(_rows(root / "plan.csv")) == 4


def test_reinit_never_overwrites_without_force(cli, tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    write_anthropic(root, Scenario(CALLS))
    (root / "provgraph.toml").unlink()
    (root / "plan.csv").write_text("notes\nnot a plan\n", encoding="utf-8")  # not the plan importer's
    r = cli("init", str(root))
    assert r.code == 2 and r.err.strip().count("\n") == 0 and "plan.csv already exists" in r.err
    assert not (root / "provgraph.toml").exists()  # nothing half-written
    assert (root / "plan.csv").read_text(encoding="utf-8") == "notes\nnot a plan\n"
    assert cli("init", "--force", str(root)).code == 0
    drafted = (root / "provgraph.toml").read_text(encoding="utf-8")
    assert len(_rows(root / "plan.csv")) == 4
    (root / "provgraph.toml").write_text(drafted + "# edited by hand\n", encoding="utf-8")
    r = cli("init", str(root))
    assert r.code == 2 and "provgraph.toml already exists; not overwritten" in r.err
    assert r.err.strip().count("\n") == 0
    assert (root / "provgraph.toml").read_text(encoding="utf-8").endswith("# edited by hand\n")


def test_the_draft_flags_aliases_and_names_what_it_could_not_infer(cli, tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    shutil.copytree(REPO / "examples" / "output_gate" / "flawed", root)
    (root / "provgraph.toml").unlink()
    r = cli("init", str(root))
    assert r.code == 0
    assert "[plan] from the bundle's own plan file plan.csv" in r.out
    assert "[models]: no request names a model" in r.out
    write_openai(other := tmp_path / "batch", Scenario(CALLS))
    text = (other / "provgraph.toml").read_text(encoding="utf-8")
    (other / "provgraph.toml").unlink()
    (other / "plan.csv").unlink()
    assert 'requested = "gpt-4o-2024-08-06"' in text  # the writer's hand-written model, pinned
    r = cli("init", str(other))
    assert r.code == 0 and "mutable alias" not in (other / "provgraph.toml").read_text()
    assert "[conditions] A, B" in r.out


def test_inspect_logs_state_their_own_plan(cli, tmp_path: Path) -> None:
    """Real Inspect AI logs (``tests/fixtures/inspect_ai/``, written by Inspect itself; the
    hand-written contract is the one ``tests/test_inspect_ai.py`` passes the gate with): the
    draft's plan is the logs' own (the selected sample ids x epochs), not a frozen file."""
    from test_inspect_ai import REAL, REAL_CONTRACT  # the hand-written contract of those logs

    root = tmp_path / "bundle"
    root.mkdir()
    for log in REAL.iterdir():
        shutil.copy(log, root / log.name)
    (root / "provgraph.toml").write_text(
        '[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n' + REAL_CONTRACT, encoding="utf-8"
    )
    expected, _ = _verdict(cli, root)
    (root / "provgraph.toml").unlink()
    r = cli("init", str(root))
    assert r.code == 0 and "[plan] from the eval logs' own plan" in r.out
    assert "\n[plan]\n" in (root / "provgraph.toml").read_text() and not (root / "plan.csv").exists()
    assert _verdict(cli, root)[0] == expected == "pass"


def test_a_bad_record_is_named_and_costs_only_itself(cli, tmp_path: Path) -> None:
    """A batch input line that is not JSON is named with its line; the other requests still
    freeze the plan."""
    root = tmp_path / "bundle"
    write_anthropic(root, Scenario(CALLS))
    requests = root / "batches" / "msgbatch_01_requests.jsonl"
    requests.write_text(requests.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    for name in ("provgraph.toml", "plan.csv"):
        (root / name).unlink()
    r = cli("init", str(root))
    assert r.code == 0, r.err
    assert "records left out of the draft: batches/msgbatch_01_requests.jsonl:5:" in r.out
    assert len(_rows(root / "plan.csv")) == 4
