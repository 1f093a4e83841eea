"""The Inspect AI log importer on real logs and on broken ones, and the metrics recomputed from
the samples.

The four logs in ``tests/fixtures/inspect_ai/`` are real logs written by Inspect AI itself, from
UKGovernmentBEIS/inspect_ai (commit 499e6152): ``tests/analysis/test_logs_choices/
mmlu-summary-choices.eval`` (inspect_evals/mmlu_0_shot on openai/gpt-4o),
``tests/scorer/logs/2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval`` (as
``popularity.eval``: 10 samples on openai/gpt-4o-mini), ``tests/log/test_eval_log/
log_read_sample.eval`` (ollama/gemma3) and ``tests/log/test_eval_log/log_formats.json`` (a 2024
``.json`` EvalLog, before ``eval_id`` and ``dataset.sample_ids`` existed).
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sys
import zipfile
from decimal import Decimal
from pathlib import Path

import pytest

from provgraph.evidence.inspect_log import condition_key, score_float
from provgraph.ingest.testing import CONTRACT, ingest_bundle, write_bundle
from provgraph.stats.materialize import refresh

REAL = Path(__file__).parent / "fixtures" / "inspect_ai"


def _shape():
    """The calibration shape, which writes logs in the real layout."""
    sys.path.insert(0, str(Path(__file__).parent / "calibration"))
    import corpus  # the corpus harness lives beside the calibration test, not in a package

    return corpus.shapes()["inspect-ai-task-variants"]


def _bundle(tmp_path: Path, files: dict[str, Path | bytes | str], contract: str = "") -> Path:
    root = write_bundle(tmp_path / "b", {}, contract=CONTRACT + contract)
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copy(content, target)
        else:
            target.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


def test_real_logs_ingest_without_rejects(tmp_path: Path) -> None:
    root = _bundle(tmp_path, {p.name: p for p in REAL.iterdir()})
    ingested = ingest_bundle(root)
    assert {p.name: ingested.result(p.name).importer for p in REAL.iterdir()} == dict.fromkeys(
        ("mmlu-summary-choices.eval", "popularity.eval", "log_read_sample.eval", "log_formats.json"),
        "inspect-log",
    )
    assert ingested.rejected == [] and ingested.problems == []
    rows = ingested.select(
        "SELECT ?cond (COUNT(?r) AS ?n) WHERE { ?r a pg:CallRecord ; pg:forCall/pg:condition/pg:key ?cond }"
        " GROUP BY ?cond"
    )
    assert {r["cond"]: int(r["n"]) for r in rows} == {
        "mmlu_0_shot.gpt-4o": 1,
        "popularity.gpt-4o-mini": 10,
        "popularity.gemma3": 1,
        "popularity.llama3.1": 1,
    }
    mmlu = ingested.select(
        """SELECT ?status ?resolved ?prompt ?finish ?in WHERE { ?r a pg:CallRecord ;
           pg:callId "mmlu_0_shot.gpt-4o--1--1" ; pg:status ?status ; pg:resolvedModel ?resolved ;
           pg:promptSha256 ?prompt ; pg:finishReason ?finish ; pg:inputTokens ?in }"""
    )
    assert mmlu[0]["status"] == "ok" and mmlu[0]["resolved"] == "gpt-4o-2024-08-06"
    assert mmlu[0]["finish"] == "stop" and mmlu[0]["in"] == "153"
    spec = ingested.select(
        """SELECT ?task ?model ?dataset ?count ?commit WHERE { ?e a pg:EvalRun ; pg:name ?task ;
           pg:requestedModel ?model ; pg:datasetName ?dataset ; pg:datasetSampleCount ?count ;
           pg:commitId ?commit FILTER (?task = "inspect_evals/mmlu_0_shot") }"""
    )
    assert spec == [
        {
            "task": "inspect_evals/mmlu_0_shot",
            "model": "openai/gpt-4o",
            "dataset": "cais/mmlu",
            "count": "14042",
            "commit": "de1d065be",
        }
    ]
    # the mmlu run selected one sample of 14042 (limit=1): one planned call, not 14042
    planned = ingested.select(
        'SELECT ?id WHERE { ?c a pg:PlannedCall ; pg:callId ?id FILTER STRSTARTS(?id, "mmlu") }'
    )
    assert planned == [{"id": "mmlu_0_shot.gpt-4o--1--1"}]
    score = ingested.select(
        'SELECT ?t ?v WHERE { ?s a pg:SampleScore ; pg:scorer "choice" ; pg:scoreText ?t ; pg:scoreValue ?v }'
    )
    assert score == [{"t": "I", "v": "0"}]


def test_reported_metrics_of_real_logs_are_recomputed(tmp_path: Path) -> None:
    """The real logs' accuracy and stderr agree with their samples' recomputation."""
    root = _bundle(tmp_path, {p.name: p for p in REAL.iterdir() if p.suffix == ".eval"}, "\n[analysis]\n")
    ingested = ingest_bundle(root)
    outcome = refresh(ingested.store)
    links = {(r.name, r.conditions[0]): (r.value, s.value) for r, s in outcome.links}
    assert links == {
        ("accuracy", "mmlu_0_shot.gpt-4o"): (0.0, 0.0),
        ("stderr", "mmlu_0_shot.gpt-4o"): (0.0, 0.0),
        ("accuracy", "popularity.gemma3"): (1.0, 1.0),
        ("stderr", "popularity.gemma3"): (0.0, 0.0),
    }
    assert outcome.unmatched == []


def test_stderr_is_inspects_sample_stderr(tmp_path: Path) -> None:
    """Epochs are averaged per sample first; stderr is std(ddof=1)/sqrt(n) over the samples."""
    root = tmp_path / "shape"
    _shape().generate(root, "clean")
    ingested = ingest_bundle(root)
    outcome = refresh(ingested.store)
    by = {(s.name, s.conditions, s.variant): s for s in outcome.stats if s.variant == "choice"}
    cot = by[("accuracy", ("mcq_cot.gpt-4o",), "choice")]
    # mcq_cot: sample 4 is right in one epoch of two, the other five in both
    assert cot.value == pytest.approx(5.5 / 6) and cot.n == 6
    stderr = by[("stderr", ("mcq_cot.gpt-4o",), "choice")].value
    means = [1, 1, 1, 0.5, 1, 1]
    mu = sum(means) / 6
    assert stderr == pytest.approx((sum((m - mu) ** 2 for m in means) / 5) ** 0.5 / 6**0.5)
    assert len(outcome.links) == 4 and outcome.unmatched == []


def test_a_bad_sample_costs_only_itself(tmp_path: Path) -> None:
    """A malformed sample member and one with a non-integer epoch are one line each; the rest
    of the log imports."""
    src = REAL / "popularity.eval"
    broken = tmp_path / "broken.eval"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(broken, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "samples/3_epoch_1.json":
                data = data[:40]
            if info.filename == "samples/4_epoch_1.json":
                sample = json.loads(data)
                sample["epoch"] = "one"
                data = json.dumps(sample).encode()
            zout.writestr(info, data)
    ingested = ingest_bundle(_bundle(tmp_path, {"logs/broken.eval": broken}))
    reasons = sorted(str(p) for p in ingested.rejected)
    assert len(reasons) == 2
    assert reasons[0].startswith("logs/broken.eval: samples/3_epoch_1.json: malformed JSON:")
    assert (
        reasons[1] == "logs/broken.eval: samples/4_epoch_1.json: epoch must be a whole number >= 1, got 'one'"
    )
    count = ingested.select("SELECT (COUNT(?r) AS ?n) WHERE { ?r a pg:CallRecord }")
    assert count == [{"n": "8"}]


def test_unreadable_logs_fail_alone(tmp_path: Path) -> None:
    root = _bundle(
        tmp_path,
        {"a.eval": b"PK\x03\x04 not really a zip", "b.eval": REAL / "log_read_sample.eval"},
    )
    ingested = ingest_bundle(root)
    failed = ingested.result("a.eval")
    assert failed.importer == "inspect-log" and failed.outcome == "failed"
    assert "a.eval: not a readable .eval zip" in str(failed.error)
    assert ingested.select("SELECT (COUNT(?r) AS ?n) WHERE { ?r a pg:CallRecord }") == [{"n": "1"}]


def test_a_json_that_is_not_a_log_is_not_claimed(tmp_path: Path) -> None:
    root = _bundle(tmp_path, {"config.json": json.dumps({"eval": {"task": "x"}, "other": 1})})
    assert ingest_bundle(root).result("config.json").importer == "files"


def test_score_values_as_value_to_float_reads_them() -> None:
    """scorer/_metric.py value_to_float: C 1, P 0.5, I 0, N 0, yes/true 1, numbers as numbers."""
    got = [score_float(v) for v in ("C", "P", "I", "N", "yes", "False", "0.25", 3, True, Decimal("0.5"))]
    assert got == [1.0, 0.5, 0.0, 0.0, 1.0, 0.0, 0.25, 3.0, 1.0, 0.5]
    assert score_float({"a": 1}) is None and score_float("maybe") is None


def test_condition_is_metadata_else_task_and_model() -> None:
    assert condition_key({"task": "inspect_evals/gpqa", "model": "openai/gpt-4o-2024-08-06"}) == "gpqa.gpt-4o"
    assert condition_key({"task": "t", "model": "m", "metadata": {"condition": "B arm"}}) == "B_arm"


def test_a_lone_surrogate_costs_only_its_sample(tmp_path: Path) -> None:
    """A ``.json`` log with two samples, one holding a lone surrogate escape in a field that is
    stored (its score): that sample is one line, the other imports."""
    log = json.loads((REAL / "log_formats.json").read_text(encoding="utf-8"))
    second = json.loads(json.dumps(log["samples"][0]))
    second["id"] = 2
    log["samples"].append(second)
    log["samples"][0]["scores"]["match"]["value"] = "SURROGATE"
    text = json.dumps(log).replace('"SURROGATE"', '"C\\udc80"', 1)
    ingested = ingest_bundle(_bundle(tmp_path, {"log.json": text}))
    assert [str(p) for p in ingested.rejected] == [
        "log.json: samples[0]: lone surrogate \\udc80 in scores.match.value: not storable as UTF-8 text"
    ]
    assert ingested.select("SELECT ?id WHERE { ?r a pg:CallRecord ; pg:callId ?id }") == [
        {"id": "popularity.llama3.1--2--1"}
    ]


def test_a_corrupt_compressed_member_is_one_line(tmp_path: Path) -> None:
    """Bytes flipped inside one deflated sample: zlib's error is that member's line."""
    data = bytearray((REAL / "popularity.eval").read_bytes())
    with zipfile.ZipFile(REAL / "popularity.eval") as zf:
        info = zf.getinfo("samples/7_epoch_1.json")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + 40 : start + 48] = b"\xff" * 8
    ingested = ingest_bundle(_bundle(tmp_path, {"p.eval": bytes(data)}))
    reasons = [str(p) for p in ingested.rejected]
    assert len(reasons) == 1 and reasons[0].startswith(
        "p.eval: samples/7_epoch_1.json: cannot read the member"
    )
    assert ingested.select("SELECT (COUNT(?r) AS ?n) WHERE { ?r a pg:CallRecord }") == [{"n": "9"}]


REAL_CONTRACT = """
[plan]
[analysis]
[models.gpt4o]
requested = "openai/gpt-4o"
alias_ok = true
[models.mini]
requested = "openai/gpt-4o-mini"
alias_ok = true
[models.gemma]
requested = "ollama/gemma3"
alias_ok = true
[models.llama]
requested = "ollama/llama3.1"
alias_ok = true
"""


def test_the_gate_passes_on_the_real_logs(tmp_path: Path) -> None:
    """No false alarm on four real runs: the 2024 ``.json`` log has no ``completion`` (its text is
    the first choice's message) and no ``sample_ids`` (its samples plan their own calls)."""
    from provgraph.cli import main  # the CLI is what a user runs; imported here as only this test needs it

    root = _bundle(tmp_path, {p.name: p for p in REAL.iterdir()}, REAL_CONTRACT)
    out = tmp_path / "check.json"
    for args in (["ingest"], ["check", "--all-violations", "--format", "json", "-o", str(out)]):
        quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
        with quiet[0], quiet[1], contextlib.suppress(SystemExit):
            main(["-C", str(root), *args])
    report = json.loads(out.read_text(encoding="utf-8"))
    fired = {r["id"]: r["violations"] for r in report["rules"] if r["violations"]}
    assert fired == {} and report["gate"] == "pass"
    ran = {r["id"] for r in report["rules"] if r["outcome"] == "pass"}
    assert {"output-ok-without-output", "output-unplanned-record", "model-alias-unresolved"} <= ran
    assert {"analysis-reported-differs", "output-planned-without-terminal"} <= ran
