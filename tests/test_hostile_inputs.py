"""Hostile and broken inputs (issue 22 items 5, 6 and 8): a dvc.lock alias bomb, a contract
nested too deep or too large, and a store with labels but no plan. Each gives one clear line
or a report, never an internal error (exit 3) or a hang."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TEST_SECRET, ingest_bundle, rule_bundle, write_bundle

from provgraph.bundle.contract.load import MAX_CONTRACT_BYTES, MAX_CONTRACT_DEPTH, MAX_PROBLEMS
from provgraph.importers.dvclock import MAX_ALIAS_NODES, MAX_LOCK_BYTES

RELEASE = '[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n\n[release]\ninclude = ["*.md"]\n'


def run(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``provgraph -C ROOT ARGS`` as a real process: a hang fails the test instead of the suite."""
    env = {**os.environ, "PROVGRAPH_SECRET": TEST_SECRET}
    return subprocess.run(
        [sys.executable, "-m", "provgraph", "-C", str(root), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def billion_laughs() -> str:
    """The classic 9 x 9 alias bomb as a dvc.lock (under 500 bytes, 9^9 nodes expanded)."""
    lines = ["schema: '2.0'", "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for cur, prev in zip("bcdefghi", "abcdefgh", strict=True):
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    lines.append("stages:\n  s:\n    cmd: x\n    params: *i")
    return "\n".join(lines) + "\n"


def test_dvc_lock_alias_bomb_is_refused_in_one_line(tmp_path: Path) -> None:
    bomb = billion_laughs()
    assert len(bomb) < 500
    root = write_bundle(tmp_path / "b", {"dvc.lock": bomb, "notes.md": "Accuracy was 91.2%.\n"}, RELEASE)
    r = run(root, "ingest", timeout=30)
    assert r.returncode == 2, r.stderr
    (line,) = [x for x in r.stderr.splitlines() if "dvc.lock" in x]
    assert f"dvc.lock:6: invalid YAML: aliases expand to more than {MAX_ALIAS_NODES} nodes" in line
    assert "2 imported, 0 unchanged, 1 failed" in r.stdout  # the contract and notes.md are not lost


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "schema: '2.0'\nstages: &s\n  a:\n    cmd: x\n    deps: [*s]\n",
            "dvc.lock:5: invalid YAML: alias *s",
        ),
        ("x: &x {k: 1}\nschema: '2.0'\nstages:\n  a:\n    cmd: x\n    params: *x\n", None),  # a benign alias
    ],
)
def test_dvc_lock_aliases_are_bounded(tmp_path: Path, text: str, error: str | None) -> None:
    _, results, _ = ingest_bundle(write_bundle(tmp_path / "b", {"dvc.lock": text}, RELEASE))
    (result,) = [r for r in results if r.rel == "dvc.lock"]
    if error is None:
        assert result.outcome == "imported" and not result.problems, result.error
    else:
        assert result.outcome == "failed" and result.error.startswith(error), result.error
        assert "refers to itself" in result.error


def test_dvc_lock_over_the_size_limit(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {}, RELEASE)
    with (root / "dvc.lock").open("wb") as fh:
        fh.truncate(MAX_LOCK_BYTES + 1)  # sparse: no 16 MiB written
    _, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "dvc.lock"]
    assert result.outcome == "failed"
    assert (
        result.error == f"dvc.lock: {MAX_LOCK_BYTES + 1} bytes, larger than 16 MiB, the limit for a dvc.lock"
    )


DEPTH = MAX_CONTRACT_DEPTH
CONTRACT = '[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n'


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        (
            "x = " + "[" * 100_000 + "]" * 100_000,
            f"provgraph.toml:4: invalid TOML: nested deeper than {DEPTH}",
        ),
        ("x = " + "[" * 40 + "]" * 40, f"provgraph.toml:4: nested deeper than {DEPTH} levels"),
        ("x = " + "{a=" * 5000 + "1" + "}" * 5000, "provgraph.toml:4: invalid TOML: nested deeper than"),
        (
            'x = "' + "a" * (MAX_CONTRACT_BYTES + 1) + '"',
            "provgraph.toml: larger than 1 MiB, the limit",
        ),
        ("x = " + "9" * 5000, "provgraph.toml:4: invalid TOML: Exceeds the limit (4300 digits)"),
    ],
)
def test_contract_too_deep_or_too_large_is_one_contract_error(tmp_path: Path, extra: str, error: str) -> None:
    root = write_bundle(tmp_path / "b", {}, CONTRACT + extra)
    r = run(root, "ingest")
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("provgraph: error: ") and error in line, line


def test_a_contract_with_thousands_of_problems_lists_the_first_few(tmp_path: Path) -> None:
    # each problem's line is found by scanning the text: 8,000 problems took 22 s, 16,000 minutes
    root = write_bundle(tmp_path / "b", {}, CONTRACT + "[[analysis.family]]\nbogus = 1\n" * 16_000)
    started = time.monotonic()
    r = run(root, "ingest")
    assert time.monotonic() - started < 20
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == MAX_PROBLEMS + 1 and lines[-1].endswith(": ... and 31980 more problems")
    assert all(line.startswith("provgraph: error: ") and "provgraph.toml" in line for line in lines)


FINDINGS = (
    "No Finding,Enlarged Cardiomediastinum,Cardiomegaly,Lung Lesion,Lung Opacity,Edema,Consolidation,"
    "Pneumonia,Atelectasis,Pneumothorax,Pleural Effusion,Pleural Other,Fracture,Support Devices"
)


def test_check_on_labels_without_a_plan_reports_and_fails_closed(cli, tmp_path: Path) -> None:
    root = rule_bundle("analysis-family-size", "flawed", tmp_path / "b")
    contract = (root / "provgraph.toml").read_text()
    assert "[annotation]" in contract and "[analysis" in contract and "[plan]" not in contract
    for name in ("labels.jsonl", "stats.json", "reference.csv"):
        (root / name).unlink()
    (root / "labeled_reports.csv").write_text(
        f"Reports,{FINDINGS}\nHeart normal,1.0,,0.0,,,0.0,,0.0,,,0.0,,,\nEdema,,,1.0,,,1.0,,,1.0,,1.0,,,\n"
    )
    (root / "reference.csv").write_text("case,finding,state\ns1,Edema,POSITIVE\ns2,Edema,NEGATIVE\n")
    assert cli("-C", str(root), "ingest").code == 0
    r = cli("-C", str(root), "check")
    assert r.code == 1, (r.out, r.err)
    assert "gate: FAIL" in r.out
    assert (
        "analysis-family-size could not run: missing evidence: the graph has no pg:Statistic nodes" in r.out
    )
    s = cli("-C", str(root), "stats")
    assert s.code == 0 and "0 condition(s): no paired statistics" in s.out + s.err


def test_dvc_lock_with_a_control_character_is_one_line(tmp_path: Path) -> None:
    """pyyaml's reader error (a control character) is two lines; the rejection is one (found by
    bench/fuzz.py)."""
    text = "schema: '2.0'\nstages:\n  build:\n    cmd: python \x18build.py\n"
    _, results, _ = ingest_bundle(write_bundle(tmp_path / "b", {"dvc.lock": text}, RELEASE))
    (result,) = [r for r in results if r.rel == "dvc.lock"]
    assert result.outcome == "failed"
    assert "\n" not in result.error
    assert result.error.startswith("dvc.lock: invalid YAML: unacceptable character #x0018")


def test_a_text_line_over_the_limit_is_skipped_alone(tmp_path: Path) -> None:
    """A 17 MiB Markdown line hung the texts importer for minutes (bench/fuzz.py): each number
    searched all the text before it. The line is now refused on its own; the others import."""
    from provgraph.evidence.claimnodes import MAX_LINE_CHARS

    contract = RELEASE + 'texts = ["paper.md"]\n'
    long_line = "Q = 154.73 " * (MAX_LINE_CHARS // 11 + 1)
    text = f"Accuracy was 0.81.\n{long_line}\nF1 = 0.77 overall.\n"
    _, results, _ = ingest_bundle(write_bundle(tmp_path / "b", {"paper.md": text}, contract))
    (result,) = [r for r in results if r.rel == "paper.md"]
    assert result.outcome == "imported", result
    (problem,) = map(str, result.problems)
    assert problem.startswith(f"paper.md:2: a line of {len(long_line):,} characters, over the 1 MiB")
    assert result.records == 2  # 0.81 on line 1, F1 on line 3


def test_numbers_on_a_long_line_are_read_as_on_short_ones() -> None:
    """The search window around each number (names, denominators) is bounded; what it finds on
    a long line is what it finds on each of its pieces."""
    from provgraph.evidence.claims import numbers

    piece = "Cochran Q = 182.29 over 26/45 tests, 17% (8/45) of cases; "
    one = [(n.text, n.label, n.n, n.numerator) for n in numbers(piece)]
    many = [(n.text, n.label, n.n, n.numerator) for n in numbers(piece * 2000)]
    assert many == one * 2000


def test_a_registered_value_followed_by_a_fraction_on_one_line(tmp_path: Path) -> None:
    """The texts importer crashed ("too many values to unpack") on a table row naming a model
    whose registered percentage was followed by its k/n: the model-name spans were overwritten by
    the registry names of the first number when two registry values share its text (found by a
    holdout calibration shape)."""
    contract = (
        RELEASE
        + 'texts = ["README.md"]\n\n[[release.values]]\nname = "accuracy_judge1"\nvalue = "100.0%"\n\n'
        + '[[release.values]]\nname = "accuracy_judge2"\nvalue = "100.0%"\n\n'
        + '[[release.entities]]\nkey = "llama"\ncanonical = "Llama 3.1 70B Instruct"\n'
    )
    text = "| Llama 3.1 70B Instruct | 100.0% (8/8) | 87.5% (7/8) |\n"
    _, results, _ = ingest_bundle(write_bundle(tmp_path / "b", {"README.md": text}, contract))
    (result,) = [r for r in results if r.rel == "README.md"]
    assert result.outcome == "imported" and not result.problems, (result.error, result.problems)
    assert result.records == 5  # the mention and four numbers


def test_a_csv_line_over_the_limit_is_one_bad_row(tmp_path: Path) -> None:
    """CSV lines were read whole, however long (a 17 MiB line of commas became millions of
    fields in memory): a line over the record limit is skipped unread, reported alone, and the
    rows after it import."""
    from provgraph.ingest.readers import MAX_RECORD_BYTES

    huge = "C002," + "x" * (MAX_RECORD_BYTES + 10) + ",A,1\n"
    plan = "call_id,case,condition,replicate\nC001,s1,A,1\n" + huge + "C003,s2,A,1\n"
    _, results, _ = ingest_bundle(write_bundle(tmp_path / "b", {"plan.csv": plan}))
    (result,) = [r for r in results if r.rel == "plan.csv"]
    assert [str(p) for p in result.problems] == ["plan.csv:3: line over 8 MiB (the limit for one CSV line)"]
    assert result.records == 2
