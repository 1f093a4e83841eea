"""The release history and ``provgraph diff A B``.

The Done-when of issue 19: between the two releases of examples/cxr_pilot, the flawed twin's
stale released zip (release/reproducibility_bundle_REVISED.zip, kept in the flawed bundle) and
the clean twin's corrected zip (release/cxr-pilot-1.1.0.zip, published next to it), ``diff``
lists exactly the values and names that changed. The expected sets are computed here from the
two zips' own texts (a regex for the decimals, percentages and k/n counts a manuscript writes,
the generator's model names) and their members' bytes, never from provgraph's graph.

Git releases are tags of repositories the tests create with the ``git`` program; zips are
written with :mod:`zipfile` as a release archive is.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import re
import shutil
import tomllib
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from conftest import git, write_bundle
from examples_support import generator, run_cli

gen = generator("cxr_pilot")
STALE_ZIP = "release/reproducibility_bundle_REVISED.zip"
CORRECTED_ZIP = "release/cxr-pilot-1.1.0.zip"
#: what a manuscript writes as a result: 123.02, 71.1%, 71.1\%, 32/45 (a bare integer is a count)
NUMBER = re.compile(r"\d+/\d+|\d+(?:\.\d+)?\\?%|\d+\.\d+")
MODEL_NAMES = sorted(
    {f.name for f in gen.FAMILIES} | {f.stale for f in gen.FAMILIES if f.stale}, key=len, reverse=True
)
NEEDS_GIT = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git program")


@pytest.fixture(scope="module")
def pilot(tmp_path_factory) -> Path:
    """The flawed twin's bundle with the clean twin's corrected zip published beside its stale one."""
    base = tmp_path_factory.mktemp("history")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PROVGRAPH_SECRET", "provgraph-test-secret-0123456789abcdef")
        root = gen.generate(base / "flawed", "flawed")
        clean = gen.generate(base / "clean", "clean")
        shutil.copy(clean / CORRECTED_ZIP, root / CORRECTED_ZIP)
        code, text = run_cli(
            "-C", str(root), "-q", "ingest", str(root / "provgraph.toml"), str(root / "release")
        )
    assert code == 0, text
    return root


def zip_texts(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def written(members: dict[str, bytes]) -> tuple[Counter, Counter, dict]:
    """(member, number) and (member, model name) occurrences, and each member's lines."""
    numbers: Counter = Counter()
    names: Counter = Counter()
    lines: dict[str, list[str]] = {}
    for member, data in members.items():
        if not member.endswith((".md", ".tex")):  # the contract's [release].texts
            continue
        lines[member] = data.decode().replace("\\%", "%").splitlines()
        for line in lines[member]:
            for name in MODEL_NAMES:  # longest first: "Claude 3.5 Sonnet" is no "3.5"
                names[(member, name)] += line.count(name)
                line = line.replace(name, " ")
            numbers.update((member, n.replace("\\", "")) for n in NUMBER.findall(line))
    return +numbers, +names, lines


def test_diff_of_the_stale_and_the_corrected_release_lists_exactly_what_changed(pilot: Path) -> None:
    old, new = zip_texts(pilot / STALE_ZIP), zip_texts(pilot / CORRECTED_ZIP)
    (old_numbers, old_names, old_lines), (new_numbers, new_names, new_lines) = written(old), written(new)
    code, text = run_cli("-C", str(pilot), "diff", STALE_ZIP, "cxr-pilot-1.1.0", "--format", "json")
    assert code == 0
    doc = json.loads(text)
    assert (doc["a"]["id"], doc["b"]["id"]) == (f"archive:{STALE_ZIP}", f"archive:{CORRECTED_ZIP}")
    for section, before, after in (("numbers", old_numbers, new_numbers), ("names", old_names, new_names)):
        gone = Counter((c["member"], c["a"]["text"]) for c in doc[section] if c["a"])
        came = Counter((c["member"], c["b"]["text"]) for c in doc[section] if c["b"])
        assert gone == before - after, section
        assert came == after - before, section
        for c in doc[section]:  # file:line on both sides: the text is on that line of that file
            for side, zip_name, lines in (("a", STALE_ZIP, old_lines), ("b", CORRECTED_ZIP, new_lines)):
                if c[side]:
                    assert c[side]["file"] == f"{zip_name}!/{c['member']}"
                    assert c[side]["text"] in lines[c["member"]][c[side]["line"] - 1]
    # each stale name is paired with the name that replaced it, in both texts that write them
    renamed = Counter((c["a"]["text"], c["b"]["text"]) for c in doc["names"] if c["change"] == "changed")
    assert renamed == Counter({(f.stale, f.name): 2 for f in gen.FAMILIES if f.stale})
    # the stale release writes the values the registry marks superseded, and says so
    registry = tomllib.loads((pilot / "provgraph.toml").read_text())["release"]["values"]
    superseded = {v["value"] for v in registry if v.get("status") == "superseded"}
    stale_sides = [c["a"] for c in doc["numbers"] if c["a"]]
    assert {s["text"] for s in stale_sides if s["registry"] == "superseded"} == superseded
    # and lineage withdraws a claim of a superseded value (README "Release": claim status)
    assert {s["status"] for s in stale_sides if s["registry"] == "superseded"} == {"withdrawn"}
    # files: the members whose bytes differ, and the SHA256SUMS only the corrected zip has
    digest = {k: hashlib.sha256(v).hexdigest() for k, v in old.items()}
    digest_new = {k: hashlib.sha256(v).hexdigest() for k, v in new.items()}
    expected = {p: (digest.get(p), digest_new.get(p)) for p in digest.keys() | digest_new.keys()}
    assert {f["path"]: (f["a"], f["b"]) for f in doc["files"]} == {
        p: ab for p, ab in expected.items() if ab[0] != ab[1]
    }
    assert {f["path"]: f["change"] for f in doc["files"]}["SHA256SUMS"] == "appeared"


def test_the_table_names_both_releases_and_an_unknown_name_lists_the_known_ones(pilot: Path, cli) -> None:
    code, text = run_cli("-C", str(pilot), "diff", "reproducibility_bundle_REVISED.zip", CORRECTED_ZIP)
    assert code == 0
    assert f"A = archive:{STALE_ZIP}, B = archive:{CORRECTED_ZIP}" in text
    assert "files: 5 changed, appeared or disappeared" in text
    done = cli("-C", str(pilot), "diff", "1.0", CORRECTED_ZIP)
    assert (done.code, done.out) == (2, "")
    assert done.err.strip().splitlines() == [
        "provgraph: error: 1.0: no such release; known releases: "
        f"archive:{CORRECTED_ZIP}, archive:{STALE_ZIP}"
    ]


CONTRACT = (
    '[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n\n[release]\nversion = "1.1"\n'
    'include = ["*.md"]\ntexts = ["*.md"]\narchives = ["*.zip"]\n'
)


def a_zip(members: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return buf.getvalue()


@NEEDS_GIT
def test_tags_of_a_nested_repository_are_releases_compared_with_an_archive(tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "b",
        {"paper-1.0.zip": a_zip({"README.md": "# Paper\nWe report Q = 154.73 here.\n", "notes.md": "x\n"})},
        CONTRACT,
    )
    repo = root / "paper"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# Paper\nWe report Q = 154.73 here.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "submitted")
    git(repo, "tag", "v1.0")
    (repo / "README.md").write_text("# Paper\n\nWe report Q = 182.29 here.\n")  # a line moved too
    git(repo, "commit", "-q", "-am", "corrected")
    git(repo, "tag", "v1.1")  # the release tag: [release].version
    code, text = run_cli("-C", str(root), "-q", "ingest")
    assert code == 0, text
    code, text = run_cli("-C", str(root), "diff", "paper-1.0", "paper@v1.1", "--format", "json")
    assert code == 0
    doc = json.loads(text)
    assert doc["b"] == {"id": "tag:paper@v1.1", "kind": "tag", "label": "paper@v1.1"}
    # the number moved from line 2 to line 3: paired by the statistic it is written as
    assert [(c["change"], c["a"]["file"], c["a"]["line"], c["a"]["text"]) for c in doc["numbers"]] == [
        ("changed", "paper-1.0.zip!/README.md", 2, "154.73")
    ]
    assert (doc["numbers"][0]["b"]["file"], doc["numbers"][0]["b"]["line"]) == ("paper/README.md@v1.1", 3)
    assert [(f["change"], f["path"]) for f in doc["files"]] == [
        ("changed", "README.md"),
        ("disappeared", "notes.md"),
    ]
    # an older tag's texts were not read (its values were current then): files only
    code, text = run_cli("-C", str(root), "diff", "v1.0", "tag:paper@v1.1", "--format", "json")
    doc = json.loads(text)
    assert (code, doc["texts_not_read"], doc["numbers"]) == (0, ["tag:paper@v1.0"], [])
    assert doc["files"] == [
        {
            "change": "changed",
            "path": "README.md",
            "a": hashlib.sha256(b"# Paper\nWe report Q = 154.73 here.\n").hexdigest(),
            "b": hashlib.sha256(b"# Paper\n\nWe report Q = 182.29 here.\n").hexdigest(),
        }
    ]
    # the report's release section: the contract's release (v1.1) against the tag before it
    page = tmp_path / "report.html"
    code, _ = run_cli("-C", str(root), "report", "-o", str(page), "--no-record")
    shown = page.read_text()
    assert code == 0
    assert "From <code>tag:paper@v1.0</code> (A) to <code>tag:paper@v1.1</code> (B)" in shown
    assert [r[:2] for r in release_rows(shown, "files")] == [["changed", "README.md"]]


@NEEDS_GIT
def test_ingest_importer_git_dot_reads_the_history_of_a_root_repository(tmp_path: Path, cli) -> None:
    """The issue's ``provgraph ingest --importer git .`` in the bundle folder: the root's
    history is read besides its files (it once was a plain ingest), and its tag is a release."""
    root = write_bundle(tmp_path / "b", {"README.md": "Q = 1.50\n"}, CONTRACT)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    git(root, "tag", "v1.1")
    done = cli("ingest", "--importer", "git", ".", "--format", "json", cwd=root)
    assert done.code == 0, done.err
    sources = {s["source"]: s["importer"] for s in json.loads(done.out)["sources"]}
    assert (sources["."], sources["README.md"]) == ("git", "texts")
    code, text = run_cli("-C", str(root), "diff", "v1.1", "tag:v1.1", "--format", "json")
    assert (code, json.loads(text)["files"], json.loads(text)["texts_not_read"]) == (0, [], [])


def test_lineage_at_a_release_traces_only_what_that_release_writes(pilot: Path) -> None:
    """``lineage --at``: the stale Q of the audit's zip is in that release and not in the next."""
    registry = tomllib.loads((pilot / "provgraph.toml").read_text())["release"]["values"]
    stale_q = next(
        v["value"] for v in registry if v["name"] == "cochran_q" and v.get("status") == "superseded"
    )
    old = zip_texts(pilot / STALE_ZIP)
    where = sorted(
        f"{STALE_ZIP}!/{member}:{n}"
        for member, data in old.items()
        if member.endswith((".md", ".tex"))
        for n, line in enumerate(data.decode().splitlines(), start=1)
        if stale_q in line
    )
    code, text = run_cli(
        "-C", str(pilot), "lineage", stale_q, "--no-check", "--format", "json", "--at", STALE_ZIP
    )
    doc = json.loads(text)
    located = sorted(next(n["location"] for n in m["nodes"] if n["iri"] == m["root"]) for m in doc["matches"])
    assert (code, doc["release"], located) == (0, f"archive:{STALE_ZIP}", where)
    assert {m["status"] for m in doc["matches"]} == {"withdrawn"}  # a superseded value
    code, everywhere = run_cli("-C", str(pilot), "lineage", stale_q, "--no-check", "--format", "json")
    assert len(json.loads(everywhere)["matches"]) > len(where)  # the registry value too
    code, text = run_cli("-C", str(pilot), "lineage", stale_q, "--no-check", "--at", "cxr-pilot-1.1.0")
    assert (code, text.strip()) == (
        1,
        f"{stale_q} at archive:{CORRECTED_ZIP}: matches no node, claim, reported value or statistic "
        "in the release",
    )


def release_rows(page: str, table: str) -> list[list[str]]:
    """The cells of one of the report's release tables (tags stripped, entities unescaped)."""
    body = page.split(f"id='release-diff-{table}'", 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", body.split("<tbody>", 1)[1], flags=re.S)
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", r)
        ]
        for r in rows
    ]


def test_the_report_shows_the_changes_since_the_previous_release(pilot: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    code, text = run_cli(
        "-C",
        str(pilot),
        "report",
        "-o",
        str(page),
        "--no-record",
        "--since",
        STALE_ZIP,
        "--release",
        "cxr-pilot-1.1.0",
    )
    assert code == 0, text
    code, text = run_cli("-C", str(pilot), "diff", STALE_ZIP, CORRECTED_ZIP, "--format", "json")
    doc = json.loads(text)
    html_page = page.read_text()
    for table in ("numbers", "names"):
        expected = [
            [c["change"], c["member"]]
            + [x for s in ("a", "b") for x in ((str(c[s]["line"]), c[s]["text"]) if c[s] else ("", ""))]
            for c in doc[table]
        ]
        shown = [[cell.split(" (")[0] for cell in row] for row in release_rows(html_page, table)]  # no status
        assert shown == expected, table
    assert [r[:2] for r in release_rows(html_page, "files")] == [
        [f["change"], f["path"]] for f in doc["files"]
    ]
    # without --release, the contract's own release (cxr-pilot-1.0.0) is not among the two zips
    run_cli("-C", str(pilot), "report", "-o", str(page), "--no-record")
    assert (
        "Not shown: the contract's release is not in the store (looked for: cxr-pilot-1.0.0"
        in page.read_text()
    )


def test_a_release_build_output_is_a_release(tmp_path: Path, cli) -> None:
    """``release build`` on the clean twin writes dist/cxr-pilot-1.1.0.zip; once ingested it is
    a release like the zip the generator published, with the same members' bytes."""
    root = gen.generate(tmp_path / "clean", "clean")
    assert cli("-C", str(root), "-q", "release", "build").code == 0
    assert cli("-C", str(root), "-q", "ingest").code == 0
    built, published = "archive:dist/cxr-pilot-1.1.0.zip", f"archive:{CORRECTED_ZIP}"
    done = cli("-C", str(root), "diff", published, built, "--format", "json")
    members = {k: v for k, v in zip_texts(root / CORRECTED_ZIP).items() if k != "SHA256SUMS"}
    assert members == {
        k: v for k, v in zip_texts(root / "dist/cxr-pilot-1.1.0.zip").items() if k != "SHA256SUMS"
    }
    assert (done.code, json.loads(done.out)["counts"]) == (0, {"numbers": 0, "names": 0, "files": 0})
    done = cli("-C", str(root), "diff", "cxr-pilot-1.1.0", built)
    assert (done.code, done.err.strip()) == (
        2,
        f"provgraph: error: cxr-pilot-1.1.0 names several releases: {built}, {published}; use the id",
    )
