"""Shared fixtures: real in-memory and on-disk Oxigraph stores, bundles written to tmp_path
(generic helpers from :mod:`provgraph.ingest.testing`), and a CLI runner that goes through the
real entry point (exit codes, stderr lines)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

# The CLI sizes its tables for a pipe from COLUMNS (120 when unset); pytest-xdist's workers
# inherit the controller terminal's width (80 under a CI log), which wraps the tables the tests
# read. Set before any test module imports provgraph.cli.
os.environ["COLUMNS"] = "120"

from fixtures import rulepairs
from fixtures.make_images import SPEC, build

from provgraph.ingest import testing
from provgraph.ingest.testing import CONTRACT, ingest_bundle  # noqa: F401 (tests import them from here)
from provgraph.store import open_store

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
RULE_FIXTURES = FIXTURES / "rules"

PLAN_CONTRACT = CONTRACT + '\n[plan]\nfile = "plan.csv"\n'


def write_bundle(root: Path, files: dict[str, str | bytes], contract: str = PLAN_CONTRACT) -> Path:
    """:func:`provgraph.ingest.testing.write_bundle`, with a contract that names a plan file."""
    return testing.write_bundle(root, files, contract)


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed author, dates and no user configuration; its stdout."""
    env = {
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_EMAIL": "a@example.org",
        "GIT_COMMITTER_NAME": "A",
        "GIT_COMMITTER_EMAIL": "a@example.org",
        "GIT_AUTHOR_DATE": "2026-07-18T00:00:00+00:00",
        "GIT_COMMITTER_DATE": "2026-07-18T00:00:00+00:00",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": str(repo.parent),
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def copy_bundle(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".provgraph"))
    return dst


def ingest_outcomes(root: Path, store) -> dict[str, str]:
    """Ingest the bundle at ``root`` into ``store``: each source's outcome; none may fail."""
    from provgraph.bundle.layout import Bundle
    from provgraph.ingest.run import ingest_paths

    bundle = Bundle.open(root)
    results, problems = ingest_paths(store, bundle, [bundle.root])
    assert not problems and all(r.outcome in ("imported", "unchanged", "removed") for r in results), [
        r.error for r in results
    ]
    return {r.rel: r.outcome for r in results}


def rule_bundle(rule_id: str, twin: str, dst: Path) -> Path:
    """Twin ``twin`` (flawed or clean) of a rule's fixture pair, written to ``dst``.

    The clean twin is the flawed bundle with the clean overlay applied (see
    ``fixtures/rulepairs.py``); an ``images.toml`` is replaced by the DICOM files and
    renderings it lists.
    """
    root = rulepairs.twin(RULE_FIXTURES / rule_id, twin, dst)
    spec = root / SPEC
    if spec.is_file():
        listed = tomllib.loads(spec.read_text(encoding="utf-8"))
        spec.unlink()
        build(root, listed)
    return root


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run ``provgraph ARGS`` in-process through :func:`provgraph.cli.main`."""
    from provgraph.cli import main

    def run(*args: str, cwd: Path | None = None) -> CliResult:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


#: The pseudonymisation secret every test runs with (tests that need another set their own).
TEST_SECRET = "provgraph-test-secret-0123456789abcdef"


@pytest.fixture(autouse=True)
def pseudonym_secret(monkeypatch):
    """A fixed secret, so no test writes ``.provgraph/secret`` into a committed fixture."""
    monkeypatch.setenv("PROVGRAPH_SECRET", TEST_SECRET)
    monkeypatch.delenv("PROVGRAPH_SECRET_FILE", raising=False)


@pytest.fixture(scope="session")
def oxigraph_server(tmp_path_factory):
    """One real ``oxigraph serve`` per test process; a test that uses it clears it first."""
    from oxigraph_server import OxigraphServer

    srv = OxigraphServer(tmp_path_factory.mktemp("oxigraph")).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def virtuoso_server(tmp_path_factory):
    """One real Virtuoso per test process (skipped, saying how to install it, without one)."""
    from virtuoso_server import INSTALL, VirtuosoServer, virtuoso_binaries

    if virtuoso_binaries() is None:
        pytest.skip(f"Virtuoso is not installed: {INSTALL}")
    srv = VirtuosoServer(tmp_path_factory.mktemp("virtuoso")).start()
    yield srv
    srv.stop()


@pytest.fixture
def memory_store():
    store = open_store(None)
    yield store
    store.close()


def python() -> str:
    return sys.executable
