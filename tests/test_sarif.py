"""SARIF for GitHub code scanning: the OASIS schema, and GitHub's own constraints one by one.

The schema is OASIS's SARIF 2.1.0 JSON schema, vendored from oasis-tcs/sarif-spec
(sarif-2.1/schema/sarif-schema-2.1.0.json at commit e0583813964e, whitespace removed; the
original's sha256 is c3b4bb2d...2682e). GitHub's constraints are those of
https://docs.github.com/en/code-security/code-scanning/integrating-with-code-scanning/sarif-support-for-code-scanning
("SARIF support for code scanning": a physicalLocation with artifactLocation.uri and
region.startLine per result, uri relative to the repository root, partialFingerprints, rules
with shortDescription/fullDescription/help) and of github/codeql-action src/fingerprints.ts
(``resolveUriToFile``: a relative uri is read from the repository root, uriBaseId ignored).

Every bundle here lies in a subfolder of a real git repository, as a benchmark inside a
code repository does.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import subprocess
import zipfile
from pathlib import Path
from urllib.parse import unquote

import jsonschema
import pytest
from conftest import FIXTURES, REPO, copy_bundle, rule_bundle

from provgraph.cli import main
from provgraph.rules.rule import Rule
from provgraph.rules.runner import CheckReport, RuleResult, Violation
from provgraph.rules.sarif import FINGERPRINT, SarifPlace, clause_lines, table_lines, to_sarif

SCHEMA = json.loads((FIXTURES / "sarif" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def _zip_bundle(dst: Path) -> Path:
    """release-stale-value's flawed twin with its README moved into a released zip."""
    root = rule_bundle("release-stale-value", "flawed", dst)
    (root / "release").mkdir()
    with zipfile.ZipFile(root / "release" / "x.zip", "w") as z:
        z.write(root / "README.md", "README.md")
    (root / "README.md").unlink()
    return root


@pytest.fixture(scope="module")
def sarifs(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    """name -> (repository root, SARIF) for three bundles under ``repo/bench/``."""
    # module scope (the cli fixture is per test): ingest and check once, the tests only read

    base = tmp_path_factory.mktemp("sarif")
    repo = _repo(base)
    bundles = {
        "output": copy_bundle(REPO / "examples" / "output_gate" / "flawed", repo / "bench" / "output"),
        "archive": _zip_bundle(repo / "bench" / "archive"),
        "prompt": rule_bundle("prompt-differs-from-declared", "flawed", repo / "bench" / "prompt"),
    }
    out: dict[str, tuple[Path, dict]] = {}
    for name, root in bundles.items():
        target = base / f"{name}.sarif"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            for args in (["ingest"], ["check", "--format", "sarif", "-o", str(target)]):
                with contextlib.suppress(SystemExit):
                    main(["-C", str(root), *args])
        out[name] = (repo, json.loads(target.read_text(encoding="utf-8")))
    return out


def _results(sarifs) -> list[tuple[Path, dict, dict]]:
    return [(repo, doc["runs"][0], r) for repo, doc in sarifs.values() for r in doc["runs"][0]["results"]]


def test_every_bundle_gives_results(sarifs) -> None:
    assert {name: len(doc["runs"][0]["results"]) > 0 for name, (_, doc) in sarifs.items()} == {
        "output": True,
        "archive": True,
        "prompt": True,
    }


@pytest.mark.parametrize("name", ["output", "archive", "prompt"])
def test_validates_against_the_oasis_schema(sarifs, name: str) -> None:
    jsonschema.Draft4Validator(SCHEMA).validate(sarifs[name][1])


def test_schema_rejects_a_broken_log() -> None:
    """The vendored schema is the real one: a result without a message fails it."""
    broken = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "r"}]}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(SCHEMA).validate(broken)


def test_github_every_result_has_a_physical_location_with_uri(sarifs) -> None:
    for _, _, r in _results(sarifs):
        loc = r["locations"][0]["physicalLocation"]["artifactLocation"]
        assert isinstance(loc["uri"], str) and loc["uri"], r


def test_github_uri_is_a_file_from_the_repository_root(sarifs) -> None:
    """codeql-action reads a relative uri from the repository root, so the bundle's subfolder
    must be part of it and the file must exist there."""
    for repo, _, r in _results(sarifs):
        uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert "://" not in uri and not uri.startswith("/") and "!" not in uri, uri
        assert uri.startswith("bench/"), uri
        assert (repo / unquote(uri)).is_file(), uri


def test_github_every_result_has_a_start_line(sarifs) -> None:
    for _, _, r in _results(sarifs):
        line = r["locations"][0]["physicalLocation"]["region"]["startLine"]
        assert isinstance(line, int) and line >= 1, r


def test_github_uri_base_ids_are_declared(sarifs) -> None:
    for _, doc in sarifs.values():
        run = doc["runs"][0]
        bases = run["originalUriBaseIds"]
        assert bases["BUNDLE"]["uriBaseId"] == "%SRCROOT%" and bases["BUNDLE"]["uri"].endswith("/")
        for art in [a["location"] for a in run["artifacts"]] + [
            r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]
        ]:
            assert art.get("uriBaseId", "%SRCROOT%") in bases


def test_github_partial_fingerprints_are_unique_per_run(sarifs) -> None:
    for _, doc in sarifs.values():
        prints = [r["partialFingerprints"][FINGERPRINT] for r in doc["runs"][0]["results"]]
        assert len(prints) == len(set(prints)) and all(prints)


def test_github_rule_ids_resolve_to_rules_with_help(sarifs) -> None:
    for _, doc in sarifs.values():
        run = doc["runs"][0]
        rules = run["tool"]["driver"]["rules"]
        assert run["tool"]["driver"]["name"] == "provgraph"
        for r in run["results"]:
            rule = rules[r["ruleIndex"]]
            assert rule["id"] == r["ruleId"]
            assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
            assert rule["help"]["text"].startswith("Remedy: ")
            assert r["message"]["text"]


def test_github_limits(sarifs) -> None:
    """Documented upload limits: 25,000 rules and results per run, 10 logical locations kept,
    20 tags per rule."""
    for _, doc in sarifs.values():
        run = doc["runs"][0]
        assert len(run["results"]) <= 25_000 and len(run["tool"]["driver"]["rules"]) <= 25_000
        assert all(len(rule["properties"]["tags"]) <= 20 for rule in run["tool"]["driver"]["rules"])


def test_archive_member_is_the_archive_with_a_nested_artifact(sarifs) -> None:
    _, doc = sarifs["archive"]
    run = doc["runs"][0]
    r = next(r for r in run["results"] if r["ruleId"] == "release-stale-value")
    physical = r["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "bench/archive/release/x.zip"
    assert r["locations"][0]["logicalLocations"][1]["fullyQualifiedName"] == "release/x.zip!/README.md:3"
    assert "(in release/x.zip!/README.md:3)" in r["message"]["text"]
    nested = [a for a in run["artifacts"] if "parentIndex" in a]
    assert [
        (a["location"]["uri"], run["artifacts"][a["parentIndex"]]["location"]["uri"]) for a in nested
    ] == [("/README.md", "bench/archive/release/x.zip")]
    assert all("uriBaseId" not in a["location"] for a in nested)  # SARIF 3.4.4: absent when nested


def test_file_focus_is_located_at_the_file(sarifs) -> None:
    """release-manifest-mismatch's focus is the archive file itself: placed there, line 1."""
    _, doc = sarifs["archive"]
    r = next(r for r in doc["runs"][0]["results"] if r["ruleId"] == "release-manifest-mismatch")
    assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "bench/archive/release/x.zip"
    assert r["properties"]["fileLevel"] is True


def test_unsourced_focus_is_placed_at_its_clause_in_the_contract(sarifs) -> None:
    repo, doc = sarifs["prompt"]
    r = doc["runs"][0]["results"][0]
    physical = r["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "bench/prompt/provgraph.toml"
    lines = (repo / "bench" / "prompt" / "provgraph.toml").read_text().splitlines()
    assert r["properties"]["focus"] == "condition/B"
    assert lines[physical["region"]["startLine"] - 1] == "[conditions.B]"  # its own table, not [conditions.A]


def test_fingerprint_ignores_lines_and_paths() -> None:
    """The same violation moved to another line (or file) keeps its fingerprint; another
    focus gets another one."""
    rule = Rule("x-rule", "output", "fail", "t", "r", "ASK {}", Path("x-rule.rq"), why="w")

    def fingerprint(focus: str, path: str, line: int) -> str:
        result = RuleResult(rule, "violated", [Violation(focus, "m", path, line)])
        report = CheckReport([result], ["output"], "https://e.org/", "p", dt.datetime.now(dt.UTC))
        return json.loads(to_sarif(report))["runs"][0]["results"][0]["partialFingerprints"][FINGERPRINT]

    assert fingerprint("https://e.org/a", "calls.jsonl", 4) == fingerprint(
        "https://e.org/a", "calls.jsonl", 9
    )
    assert fingerprint("https://e.org/a", "calls.jsonl", 4) == fingerprint("https://e.org/a", "x.jsonl", 4)
    assert fingerprint("https://e.org/a", "calls.jsonl", 4) != fingerprint(
        "https://e.org/b", "calls.jsonl", 4
    )


def test_sarif_base_outside_the_bundle_is_a_usage_error(cli, tmp_path: Path) -> None:
    bundle = copy_bundle(REPO / "examples" / "output_gate" / "flawed", tmp_path / "b")
    other = tmp_path / "elsewhere"
    other.mkdir()
    cli("-C", str(bundle), "ingest")
    r = cli("-C", str(bundle), "check", "--format", "sarif", "--sarif-base", str(other))
    assert r.code == 2 and "is not inside it" in r.err


def test_sarif_base_sets_the_prefix(cli, tmp_path: Path) -> None:
    bundle = copy_bundle(REPO / "examples" / "output_gate" / "flawed", tmp_path / "a" / "b")
    cli("-C", str(bundle), "ingest")
    r = cli("-C", str(bundle), "check", "--format", "sarif", "--sarif-base", str(tmp_path / "a"))
    uris = {
        x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for x in json.loads(r.out)["runs"][0]["results"]
    }
    assert uris == {"b/plan.csv", "b/calls.jsonl"}


def test_a_focus_named_like_a_table_is_placed_at_that_table() -> None:
    text = '[project]\n[conditions.A]\nprompt = "a"\n[conditions.B]\n[models.B]\n'
    place = SarifPlace(
        clause_lines={"prompt": 2, "model": 5},
        tables=table_lines(text),
        sections={"prompt": ("conditions",), "model": ("models",)},
    )
    assert place.line_for("prompt", "https://e.org/condition/B") == 4
    assert place.line_for("model", "https://e.org/model/B") == 5
    assert place.line_for("prompt", "https://e.org/condition/C") == 2  # no such table: the clause


def test_clause_lines_reads_table_headers() -> None:
    text = '[project]\nname = "x"\n\n[[release.values]]\nname = "q"\n[conditions.a]\n'
    sections = {"release": ("release",), "conditions": ("prompt",), "project": ()}
    assert clause_lines(text, sections) == {"release": 4, "prompt": 6}


def test_fingerprints_survive_a_fresh_store_and_shifted_lines(cli, tmp_path: Path) -> None:
    """The same bundle checked in a new store, its calls.jsonl with two records moved down a line
    (an empty first line), gives the same fingerprints while the startLines move."""
    runs = []
    for name, shift in (("a", ""), ("b", "\n")):
        bundle = copy_bundle(REPO / "examples" / "output_gate" / "flawed", tmp_path / name)
        calls = bundle / "calls.jsonl"
        calls.write_text(shift + calls.read_text(encoding="utf-8"), encoding="utf-8")
        assert cli("-C", str(bundle), "ingest").code == 0
        r = cli("-C", str(bundle), "check", "--format", "sarif")
        runs.append(
            {x["partialFingerprints"][FINGERPRINT]: x for x in json.loads(r.out)["runs"][0]["results"]}
        )
    assert set(runs[0]) == set(runs[1]) and len(runs[0]) == 4
    lines = {
        fp: (
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            runs[1][fp]["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for fp, r in runs[0].items()
        if r["ruleId"] == "output-unplanned-record"
    }
    assert list(lines.values()) == [(5, 6)]


def _report(*rules: tuple[str, str, int]) -> CheckReport:
    results = []
    for rule_id, severity, n in rules:
        rule = Rule(rule_id, "output", severity, "t", "r", "ASK {}", Path(f"{rule_id}.rq"), why="w")  # type: ignore[arg-type]
        violations = [Violation(f"https://e.org/{rule_id}/{i}", "m", "calls.jsonl", i + 1) for i in range(n)]
        results.append(RuleResult(rule, "violated", violations))
    return CheckReport(results, ["output"], "https://e.org/", "p", dt.datetime.now(dt.UTC))


def test_results_are_capped_for_github_fail_rules_first_every_rule_shown() -> None:
    """GitHub rejects a run of more than 25,000 results and shows the top 5,000 by severity
    (docs.github.com, "SARIF results exceed one or more limits")."""
    report = _report(("a-fail", "fail", 10), ("b-fail", "fail", 3), ("c-restrict", "restrict", 10))
    doc = json.loads(to_sarif(report, SarifPlace(max_results=10)))
    jsonschema.Draft4Validator(SCHEMA).validate(doc)
    run = doc["runs"][0]
    kept = [r["ruleId"] for r in run["results"]]
    assert (kept.count("a-fail"), kept.count("b-fail"), kept.count("c-restrict")) == (7, 3, 0)
    omitted = {r["id"]: r["properties"].get("omittedResults") for r in run["tool"]["driver"]["rules"]}
    assert omitted == {"a-fail": 3, "b-fail": None, "c-restrict": 10}
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "warning" and note["message"]["text"].startswith("13 violations left out")
    assert run["invocations"][0]["executionSuccessful"] is True


def test_no_cap_below_the_limit() -> None:
    doc = json.loads(to_sarif(_report(("a-fail", "fail", 4), ("c-info", "info", 2))))
    run = doc["runs"][0]
    assert len(run["results"]) == 6 and run["invocations"][0]["toolExecutionNotifications"] == []


def test_sarif_max_results_option(cli, tmp_path: Path) -> None:
    bundle = copy_bundle(REPO / "examples" / "output_gate" / "flawed", tmp_path / "b")
    cli("-C", str(bundle), "ingest")
    r = cli("-C", str(bundle), "check", "--format", "sarif", "--sarif-max-results", "2")
    run = json.loads(r.out)["runs"][0]
    assert r.code == 1 and len(run["results"]) == 2  # the gate still counts all four
