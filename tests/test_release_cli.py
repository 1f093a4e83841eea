"""`provgraph lineage` and `provgraph release` through the real entry point, and the issue's
acceptance scenario: a stale figure, a stale value in a released zip and a renamed model are
each found and traced, while the clean twin passes and releases byte-identical archives."""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import FIXTURES

sys.path.insert(0, str(FIXTURES))
from make_release import make_bundle

from provgraph.release.builder import write_zip


def with_old_release(root: Path, old_readme: str) -> Path:
    """A previously released zip (with a correct closed manifest) holding ``old_readme``."""
    staging = root.parent / f"{root.name}-old"
    staging.mkdir()
    (staging / "README.md").write_text(old_readme)
    write_zip(
        root / "archive" / "cxr-audit-1.0.zip", [("README.md", staging / "README.md")], (2026, 7, 18, 0, 0, 0)
    )
    (root / "archive" / "SHA256SUMS").unlink()
    return root


@pytest.fixture
def flawed(tmp_path: Path) -> Path:
    root = make_bundle(tmp_path / "flawed", "release-stale-artifact")  # results changed after the figure
    readme = (root / "README.md").read_text()
    with_old_release(root, readme.replace("Q = 182.29", "Q = 154.73"))  # stale value in the released zip
    (root / "README.md").write_text(readme.replace("GPT-4o agreed", "GPT-4V agreed"))  # renamed model
    return root


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    root = make_bundle(tmp_path / "clean")
    return with_old_release(root, (root / "README.md").read_text())


def test_acceptance_flawed_bundle(cli, flawed: Path) -> None:
    assert cli("-C", str(flawed), "ingest").code == 0
    r = cli("-C", str(flawed), "check")
    assert r.code == 1
    flat = " ".join(r.out.split())
    stale = "release-stale-artifact: file/figures/fig1.svg [figures/fig1.svg]: figures/fig1.svg is stale"
    assert stale in flat
    assert (
        "release-stale-value: claim/archive/archive%2Fcxr-audit-1.0.zip/README.md/3/154.73/1 "
        "[archive/cxr-audit-1.0.zip!/README.md:3]: archive/cxr-audit-1.0.zip!/README.md line 3 writes "
        "154.73, a superseded value of cochran_q (current: 182.29)"
    ) in flat
    assert (
        "release-entity-inconsistent: mention/README.md/5/GPT-4V/1 [README.md:5]: "
        "README.md line 5 writes 'GPT-4V' for 'GPT-4o'" in flat
    )

    stale_value = cli("-C", str(flawed), "lineage", "154.73")
    assert stale_value.code == 0
    assert "claim Q = 154.73  [archive/cxr-audit-1.0.zip!/README.md:3]" in stale_value.out
    assert "registry value: registry value cochran_q = 154.73 (superseded)" in stale_value.out
    assert (
        "extracted from: archive archive/cxr-audit-1.0.zip  [archive/cxr-audit-1.0.zip]  <released>"
        in stale_value.out
    )
    assert "status: withdrawn" in stale_value.out

    renamed = cli("-C", str(flawed), "lineage", "README.md:5")
    assert "claim 0.71" in renamed.out and "named entity: mention 'GPT-4V'" in renamed.out
    assert "! fail release-entity-inconsistent" in renamed.out and "status: withdrawn" in renamed.out

    figure = cli("-C", str(flawed), "lineage", "figures/fig1.svg", "--format", "json")
    doc = json.loads(figure.out)
    (match,) = doc["matches"]
    assert match["status"] == "withdrawn"
    labels = {n["label"] for n in match["nodes"]}
    assert {"build figure: python scripts/make_fig.py", "file results/stats.csv"} <= labels

    table = cli("-C", str(flawed), "lineage", "tables/table2.md:3")
    assert "wasGeneratedBy: build tables/table2.md" in table.out and "status: withdrawn" in table.out
    refused = cli("-C", str(flawed), "release", "build")
    assert refused.code == 1
    assert (
        "not released: the gate fails (release-entity-inconsistent, release-stale-artifact, " in refused.err
    )
    assert not (flawed / "dist").exists()


def test_acceptance_clean_twin_releases_identical_bytes(cli, clean: Path) -> None:
    assert cli("-C", str(clean), "ingest").code == 0
    r = cli("-C", str(clean), "check")
    assert r.code == 0, r.out
    lin = cli("-C", str(clean), "lineage", "182.29")
    assert lin.code == 0 and "182.29 matches" in lin.out
    # nothing fired; without the statistics engine the registry's statistic reference is not
    # resolved, so the numbers are unverifiable rather than retained (see test_lineage for retained)
    assert "status: withdrawn" not in lin.out and "! fail" not in lin.out
    assert "names statistic statistic/cochran_q/globally-complete, which is not recomputed" in lin.out
    assert "status: unverifiable" in lin.out
    first = cli("-C", str(clean), "release", "build")
    assert first.code == 0, first.err
    archive = clean / "dist" / "cxr-audit-1.1.0.zip"
    bytes_1 = archive.read_bytes()
    second = cli("-C", str(clean), "release", "build")
    assert second.code == 0, second.err
    assert archive.read_bytes() == bytes_1
    assert f"sha256 {hashlib.sha256(bytes_1).hexdigest()}" in second.out
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
    names = [i.filename for i in infos]
    assert names == sorted(names) and "SHA256SUMS" in names and "README.md" in names
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert {i.external_attr >> 16 for i in infos} == {0o100644}
    assert (
        clean / "dist" / "SHA256SUMS"
    ).read_text() == f"{hashlib.sha256(bytes_1).hexdigest()}  cxr-audit-1.1.0.zip\n"
    ok = cli("-C", str(clean), "release", "verify", str(archive))
    assert ok.code == 0 and "OK (" in ok.out


def test_verify_finds_tampering(cli, clean: Path, tmp_path: Path) -> None:
    assert cli("-C", str(clean), "release", "build").code == 0
    archive = clean / "dist" / "cxr-audit-1.1.0.zip"
    tampered = tmp_path / "t" / archive.name
    tampered.parent.mkdir()
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(tampered, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "README.md":
                data = data.replace(b"182.29", b"154.73")
            dst.writestr(info, data)
        dst.writestr("notes.txt", b"added by hand")
    r = cli(
        "release", "verify", str(tampered), "--manifest", str(clean / "dist" / "SHA256SUMS"), cwd=tmp_path
    )
    assert r.code == 1
    flat = " ".join(r.out.split())
    assert "cxr-audit-1.1.0.zip: archive bytes differ from" in flat
    assert "README.md: differs from SHA256SUMS" in flat
    assert "notes.txt: in the archive but not listed in SHA256SUMS" in flat


def test_verify_refuses_an_unsafe_archive(cli, tmp_path: Path) -> None:
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../../escape.txt", b"x")
    r = cli("release", "verify", str(evil), cwd=tmp_path)
    assert r.code == 2
    assert f"provgraph: error: {evil}: member '../../escape.txt': path traversal" in r.err


def test_privacy_scan_fails_closed(cli, clean: Path) -> None:
    (clean / "results" / "cases.csv").write_text("study,label\ns50414267,1\n")
    from fixtures.make_images import write_dicom

    write_dicom(clean / "results" / "scan.dcm")  # a real DICOM: released images fail the scan
    r = cli("-C", str(clean), "release", "build")
    assert r.code == 1
    assert "not released: the privacy scan found 2 item(s):" in r.err
    assert "results/cases.csv:2: MIMIC subject or study id (s5*******)" in r.err
    assert "s50414267" not in r.err  # identifiers are never printed
    assert not (clean / "dist").exists()


def test_lineage_of_nothing_and_of_several(cli, clean: Path) -> None:
    assert cli("-C", str(clean), "ingest").code == 0
    none = cli("-C", str(clean), "lineage", "999.99")
    assert none.code == 1 and "999.99: matches no node" in none.out
    dot = cli("-C", str(clean), "lineage", "27/45", "--format", "dot", "--no-check")
    assert dot.code == 0 and dot.out.count("digraph lineage {") >= 2


def test_release_needs_a_release_section(cli, tmp_path: Path) -> None:
    root = tmp_path / "b"
    root.mkdir()
    (root / "provgraph.toml").write_text('[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n')
    r = cli("-C", str(root), "release", "build")
    assert r.code == 2 and "no [release] section" in r.err


def test_release_contract_errors_name_the_key(cli, tmp_path: Path) -> None:
    root = tmp_path / "b"
    root.mkdir()
    (root / "provgraph.toml").write_text(
        '[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n\n'
        '[release]\ninclude = ["a"]\nversoin = "1"\n'
    )
    r = cli("-C", str(root), "release", "build")
    assert r.code == 2 and "provgraph.toml:7: release.versoin: unknown key 'versoin'" in r.err
