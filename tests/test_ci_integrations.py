"""The shipped CI integrations, run by their real consumers on temporary git repositories.

- ``.pre-commit-hooks.yaml``: validated by pre-commit's own manifest check
  (``pre-commit validate-manifest``), then run by pre-commit as an installed git hook. The
  hook is declared ``language: python`` (pre-commit would pip-install provgraph from this
  repository into a fresh environment, which needs the network); the test runs the same
  entry and args as a ``repo: local`` / ``language: system`` hook pointing at this
  interpreter, so what is exercised is the manifest's command line, pre-commit and git.
- ``docs/ci/provgraph-gate.yml``: the GitHub Actions workflow. Its check step is run as
  written on a bundle in a repository subfolder, and the SARIF it writes is checked against
  the OASIS schema and the uri rule code scanning applies (codeql-action src/fingerprints.ts:
  a relative uri is a path from the repository root). upload-sarif's documented needs
  (docs.github.com "Uploading a SARIF file to GitHub": ``security-events: write``, the
  ``sarif_file`` input) are asserted on the YAML.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import jsonschema
import pytest
import yaml  # installed with pre-commit (test extra)
from conftest import FIXTURES, REPO, TEST_SECRET, copy_bundle

HOOKS = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
WORKFLOW = yaml.safe_load((REPO / "docs" / "ci" / "provgraph-gate.yml").read_text(encoding="utf-8"))
EXAMPLE = REPO / "examples" / "output_gate"


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        PROVGRAPH_SECRET=TEST_SECRET,
        PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.org",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.org",
    )
    env.pop("PROVGRAPH_BUNDLE", None)
    return env


def _git(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, text=True)


def _pre_commit(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def test_manifest_is_valid_for_pre_commit(tmp_path: Path) -> None:
    r = _pre_commit(
        "validate-manifest", str(REPO / ".pre-commit-hooks.yaml"), cwd=tmp_path, env=_env(tmp_path)
    )
    assert r.returncode == 0, r.stdout + r.stderr
    (hook,) = HOOKS
    assert hook["id"] == "provgraph-check" and hook["language"] == "python"
    assert hook["pass_filenames"] is False and hook["always_run"] is True


def _hook_repo(tmp_path: Path, twin: str, where: str) -> tuple[Path, dict[str, str]]:
    """A git repository with the ``twin`` bundle at ``where`` and the shipped hook installed."""
    env = _env(tmp_path)
    repo = tmp_path / "repo"
    copy_bundle(EXAMPLE / twin, repo / where if where != "." else repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    (hook,) = HOOKS
    args = list(hook["args"]) if where == "." else ["-C", where, *hook["args"]]
    local = {
        "id": hook["id"],
        "name": hook["name"],
        "entry": f"{shlex.quote(sys.executable)} -m {hook['entry']}",
        "language": "system",
        "args": args,
        "pass_filenames": hook["pass_filenames"],
        "always_run": hook["always_run"],
        "require_serial": hook["require_serial"],
    }
    config = {"repos": [{"repo": "local", "hooks": [local]}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (repo / ".gitignore").write_text(".provgraph/\n", encoding="utf-8")
    assert _pre_commit("install", cwd=repo, env=env).returncode == 0
    assert _git(repo, env, "add", "-A").returncode == 0
    return repo, env


def test_hook_refuses_a_commit_that_fails_the_gate(tmp_path: Path) -> None:
    repo, env = _hook_repo(tmp_path, "flawed", ".")
    r = _git(repo, env, "commit", "-q", "-m", "flawed bundle")
    assert r.returncode != 0
    assert "gate: FAIL (4 blocking rules violated" in r.stdout + r.stderr
    assert _git(repo, env, "rev-parse", "--verify", "HEAD").returncode != 0  # nothing committed


def test_hook_lets_a_passing_bundle_in_a_subfolder_commit(tmp_path: Path) -> None:
    repo, env = _hook_repo(tmp_path, "clean", "bench/pilot")
    r = _git(repo, env, "commit", "-q", "-m", "clean bundle")
    assert r.returncode == 0, r.stdout + r.stderr
    assert _git(repo, env, "rev-parse", "--verify", "HEAD").returncode == 0


def test_workflow_uploads_the_sarif_its_check_writes_even_on_failure() -> None:
    assert WORKFLOW["permissions"]["security-events"] == "write"
    steps = WORKFLOW["jobs"]["gate"]["steps"]
    check = next(s for s in steps if s.get("id") == "gate")
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@"))
    words = shlex.split(check["run"])
    assert words[words.index("-o") + 1] == upload["with"]["sarif_file"]
    assert upload["if"] == "always()"
    assert steps.index(upload) > steps.index(check)


@pytest.mark.parametrize("twin", ["flawed", "clean"])
def test_workflow_check_step_writes_sarif_code_scanning_reads(tmp_path: Path, twin: str) -> None:
    env = _env(tmp_path)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    copy_bundle(EXAMPLE / twin, repo / "bench" / twin)
    env["BUNDLE"] = f"bench/{twin}"
    check = next(s for s in WORKFLOW["jobs"]["gate"]["steps"] if s.get("id") == "gate")
    words = shlex.split(check["run"].replace('"$BUNDLE"', env["BUNDLE"]))
    assert words[0] == "provgraph"
    r = subprocess.run(
        [sys.executable, "-m", "provgraph", *words[1:]], cwd=repo, env=env, capture_output=True, text=True
    )
    assert r.returncode == (1 if twin == "flawed" else 0), r.stdout + r.stderr
    doc = json.loads((repo / "provgraph.sarif").read_text(encoding="utf-8"))
    schema = json.loads((FIXTURES / "sarif" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(doc)
    results = doc["runs"][0]["results"]
    assert len(results) == (4 if twin == "flawed" else 0)
    for result in results:
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert (repo / unquote(uri)).is_file() and uri.startswith(f"bench/{twin}/")
