"""A non-editable `pip install .` still finds its importers, ontology and rules."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO


@pytest.mark.slow
def test_wheel_install_works_outside_the_repository(tmp_path: Path) -> None:
    # Build from a copy so the build leaves nothing behind in the checkout.
    # "out": benchmark and example outputs, gigabytes after a scale run
    junk = (".git", ".venv", "build", "dist", "*.egg-info", ".provgraph", "demo-out", "out", "__pycache__")
    source = shutil.copytree(REPO, tmp_path / "src", ignore=shutil.ignore_patterns(*junk))
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("provgraph-*.whl")
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "provgraph/data/ontology/provgraph.ttl" in names
    assert "provgraph/data/rules/output/output-unplanned-record.rq" in names
    assert "provgraph/importers/plan.py" in names
    assert "provgraph/report/report.css" in names  # read by report.markup.stylesheet()
    assert "provgraph/report/filter.js" in names  # read by report.violations.script()
    assert not any(n.startswith(("tests/", "examples/", "bench/")) for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = venv / "bin" / "pip"
    subprocess.run([str(pip), "install", "-q", str(wheel)], check=True, capture_output=True)
    exe = str(venv / "bin" / "provgraph")
    work = tmp_path / "elsewhere"
    shutil.copytree(REPO / "examples" / "output_gate", work)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([exe, *args], cwd=tmp_path, capture_output=True, text=True)

    importers = run("importers")
    assert importers.returncode == 0
    assert all(n in importers.stdout for n in ("contract", "plan", "calls", "files"))
    assert "output-unplanned-record" in run("rules").stdout
    assert run("-C", str(work / "flawed"), "ingest").returncode == 0
    assert run("-C", str(work / "flawed"), "check").returncode == 1
    assert run("-C", str(work / "clean"), "ingest").returncode == 0
    assert run("-C", str(work / "clean"), "check").returncode == 0
