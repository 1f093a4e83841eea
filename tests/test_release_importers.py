"""Build-record, text and git importers on files the tests write (and repositories they create)."""

from __future__ import annotations

import hashlib
import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from conftest import git, ingest_bundle, write_bundle

from provgraph.evidence.claims import Registry, numbers
from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules

RELEASE = '[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n\n[release]\ninclude = ["*.md"]\n'
PG = "PREFIX pg: <https://w3id.org/provgraph/ns#>\nPREFIX prov: <http://www.w3.org/ns/prov#>\n"


def md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def stale(store) -> list[str]:
    report = run_gate(store, load_rules(), explicit=True, record=False)
    (result,) = [r for r in report.results if r.rule.id == "release-stale-artifact"]
    return [v.message for v in result.violations]


SCRIPT_MD5 = md5(b"print()\n")


def dvc_lock(data_md5: str, extra: str = "") -> str:
    return f"""schema: '2.0'
stages:
  plot:
    cmd: python plot.py --dpi 300
    deps:
    - path: data.csv
      md5: {data_md5}
      size: 4
    - path: plot.py
      hash: md5
      md5: {SCRIPT_MD5}
    outs:
    - path: fig.png
      md5: {md5(b"PNG")}
{extra}"""


def test_dvc_lock_stages_become_builds_and_md5_is_checked(tmp_path: Path) -> None:
    files = {
        "data.csv": "a,b\n",
        "plot.py": "print()\n",
        "fig.png": "PNG",
        "dvc.lock": dvc_lock(md5(b"a,b\n")),
    }
    root = write_bundle(tmp_path / "b", files, RELEASE)
    store, results, _ = ingest_bundle(root)
    assert {r.rel: r.importer for r in results}["dvc.lock"] == "dvclock"
    rows = store.select(
        PG
        + "SELECT ?cmd ?line ?script ?used WHERE { ?b a pg:Build ; pg:command ?cmd ; pg:sourceLine ?line ; "
        "pg:script/pg:path ?script ; prov:used/pg:path ?used . <https://example.org/t/file/fig.png> "
        "prov:wasGeneratedBy ?b }"
    )
    assert [(r["cmd"].value, r["line"].value, r["script"].value, r["used"].value) for r in rows] == [
        ("python plot.py --dpi 300", "3", "plot.py", "data.csv")
    ]
    assert stale(store) == []
    # the data changes after the import of dvc.lock: dvc.lock is unchanged (a no-op re-import)
    (root / "data.csv").write_text("a,b\n1,2\n")
    store, results, _ = ingest_bundle(root, store)
    assert {r.rel: r.outcome for r in results}["dvc.lock"] == "unchanged"
    (message,) = stale(store)
    assert message.startswith("fig.png is stale: its input data.csv changed since the build")
    assert message.endswith("(build record dvc.lock:3)")


def test_dvc_lock_md5_mismatch_and_directory_hash(tmp_path: Path) -> None:
    extra = (
        "  prep:\n    cmd: python prep.py\n    deps:\n    - path: raw\n      md5: abc.dir\n"
        "    outs:\n    - path: t.csv\n"
    )
    files = {"data.csv": "a,b\n", "plot.py": "print()\n", "fig.png": "PNG", "raw/x": "1", "t.csv": "t"}
    files["dvc.lock"] = dvc_lock("0" * 32, extra)
    store, _, _ = ingest_bundle(write_bundle(tmp_path / "b", files, RELEASE))
    assert sorted(stale(store)) == [
        "fig.png is stale: its input data.csv no longer matches the recorded md5 "
        "(dvc status: changed deps: data.csv modified) (build record dvc.lock:3)",
        "t.csv is stale: the files of its input folder raw no longer hash to the recorded .dir md5 "
        "(one was added, removed or changed since the build; DVC's cached listing "
        ".dvc/cache/files/md5/ab/c.dir, which would say which, is not in the bundle) "
        "(dvc status: changed deps: raw modified) (build record dvc.lock:15)",
    ]


def dir_md5(files: dict[str, bytes]) -> tuple[str, bytes]:
    """DVC's .dir hash of a folder's files, and the listing it is the md5 of."""
    listing = [{"md5": md5(files[name]), "relpath": name} for name in sorted(files)]
    data = json.dumps(listing, sort_keys=True).encode()
    return md5(data) + ".dir", data


FOLDER_RELEASE = RELEASE + 'derived = ["out/*"]\n'
FOLDER_FILES = {"a.csv": b"x,1\n", "sub/b.csv": b"y,2\n"}


def folder_bundle(tmp_path: Path, cache: str | None = None) -> Path:
    """A stage reading folder raw/ and writing folder out/ (both .dir), files as recorded."""
    digest, listing = dir_md5(FOLDER_FILES)
    lock = (
        "schema: '2.0'\nstages:\n  split:\n    cmd: python split.py raw out\n    deps:\n"
        f"    - path: raw\n      hash: md5\n      md5: {digest}\n      nfiles: 2\n"
        f"    - path: split.py\n      md5: {SCRIPT_MD5}\n"
        f"    outs:\n    - path: out\n      hash: md5\n      md5: {digest}\n      nfiles: 2\n"
    )
    files = {"split.py": "print()\n", "dvc.lock": lock}
    for name, data in FOLDER_FILES.items():
        files[f"raw/{name}"] = files[f"out/{name}"] = data.decode()
    if cache:
        d = digest.removesuffix(".dir")
        files[cache.format(d[:2], d[2:])] = listing.decode()
    return write_bundle(tmp_path / "b", files, FOLDER_RELEASE)


def derived(store) -> list[str]:
    report = run_gate(store, load_rules(), explicit=True, record=False)
    (result,) = [r for r in report.results if r.rule.id == "release-derived-without-build"]
    return sorted(v.message for v in result.violations)


def test_dvc_folder_dep_and_out_are_checked_file_by_file(tmp_path: Path) -> None:
    # a sound stage reading and writing folders: every file hashes to the recorded .dir md5
    root = folder_bundle(tmp_path)
    store, _, _ = ingest_bundle(root)
    assert stale(store) == [] and derived(store) == []
    built = store.select(PG + "SELECT ?p WHERE { ?f prov:wasGeneratedBy ?b ; pg:path ?p }")
    assert sorted(r["p"].value for r in built) == ["out/a.csv", "out/sub/b.csv"]
    # an output file edited after that import: the sha256 it was verified at names it
    (root / "out/a.csv").write_text("x,9\n")
    assert derived(ingest_bundle(root, store).store) == [
        "out/a.csv differs from the bytes its build recorded in dvc.lock (edited after the build, "
        "or built by something else)"
    ]
    # imported afresh, with no cached listing: the folder is named as changed, not unbuilt
    store, _, _ = ingest_bundle(root)
    listing = ".dvc/cache/files/md5/" + dir_md5(FOLDER_FILES)[0][:2]
    messages = derived(store)
    assert [m.split(" is in the folder ")[0] for m in messages] == ["out/a.csv", "out/sub/b.csv"]
    assert all("which one cannot be told without DVC's cached listing (" + listing in m for m in messages)


@pytest.mark.parametrize("cache", [".dvc/cache/files/md5/{}/{}.dir", ".dvc/cache/{}/{}.dir"])
def test_dvc_folder_with_cached_listing_names_the_changed_file(tmp_path: Path, cache: str) -> None:
    root = folder_bundle(tmp_path, cache)
    (root / "out/a.csv").write_text("x,9\n")
    (root / "raw/sub/b.csv").write_text("y,9\n")
    store, _, _ = ingest_bundle(root)
    assert derived(store) == [
        "out/a.csv differs from the bytes its build recorded in dvc.lock (edited after the build, "
        "or built by something else)"
    ]
    assert sorted(stale(store)) == [
        f"out/{name} is stale: its input raw/sub/b.csv no longer matches the recorded md5 "
        "(dvc status: changed deps: raw modified) "
        "(build record dvc.lock:3)"
        for name in ("a.csv", "sub/b.csv")
    ]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("stages: [1, 2", "dvc.lock:1: invalid YAML"),
        ("schema: '2.0'\n", "dvc.lock:1: expected a mapping with 'stages'"),
    ],
)
def test_dvc_lock_unreadable(tmp_path: Path, text: str, error: str) -> None:
    _, results, _ = ingest_bundle(write_bundle(tmp_path / "b", {"dvc.lock": text}, RELEASE))
    (result,) = [r for r in results if r.rel == "dvc.lock"]
    assert result.outcome == "failed" and result.error.startswith(error)


def test_dvc_lock_bad_stage_is_a_problem(tmp_path: Path) -> None:
    text = "schema: '2.0'\nstages:\n  a:\n    deps: []\n  b:\n    cmd: x\n    outs:\n    - nopath: 1\n"
    _, results, _ = ingest_bundle(write_bundle(tmp_path / "b", {"dvc.lock": text}, RELEASE))
    (result,) = [r for r in results if r.rel == "dvc.lock"]
    assert [str(p) for p in result.problems] == [
        "dvc.lock:3: stage 'a': expected a mapping with 'cmd'",
        "dvc.lock:5: stage 'b': outs entry {'nopath': 1}: expected a mapping with a 'path'",
    ]


def test_build_record_problems_name_the_line(tmp_path: Path) -> None:
    good = {
        "output": {"path": "o.txt", "sha256": "a" * 64},
        "inputs": [],
        "script": {"path": "s.py", "sha256": "b" * 64},
        "time": "2026-07-28T10:00:00Z",
    }
    lines = [
        json.dumps(good),
        json.dumps({**good, "ouput": 1}),
        json.dumps({**good, "inputs": [{"path": "i", "sha256": "XYZ"}]}),
        json.dumps({**good, "time": "yesterday"}),
        "{broken",
    ]
    root = write_bundle(tmp_path / "b", {"builds.build.jsonl": "\n".join(lines) + "\n"}, RELEASE)
    _, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "builds.build.jsonl"]
    assert result.records == 1
    assert [str(p) for p in result.problems] == [
        "builds.build.jsonl:2: unknown key(s) ouput (allowed: command, inputs, output, outputs, parameters, "
        "script, time)",
        "builds.build.jsonl:3: inputs[0] i: sha256 must be 64 lower-case hex digits, got 'XYZ'",
        "builds.build.jsonl:4: time is not an ISO 8601 timestamp: 'yesterday'",
        "builds.build.jsonl:5: malformed JSON: Expecting property name enclosed in double quotes (column 2)",
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Cochran Q = 154.73 changed to 182.29", [("154.73", "Q", None), ("182.29", None, None)]),
        ("p < 0.05 in 26/45 (57.8%)", [("0.05", "p", None), ("26/45", None, 45), ("57.8%", None, 45)]),
        ("17% of 45 pairs; 0.90 threshold", [("17%", None, 45), ("0.90", None, None)]),
        ("v1.1.0 on 2026-07-28, doi:10.5281/zenodo.21427298, GPT-4o, arXiv:2607.25589", []),
        ("n = 369 blocks from 30 studies", [("369", "n", None)]),
        ("| GPT-4o | 0.71 |", [("0.71", "GPT-4o", None)]),
    ],
)
def test_numbers_as_written(line: str, expected: list) -> None:
    assert [(n.text, n.label, n.n) for n in numbers(line)] == expected


def test_latex_numbers_and_precision() -> None:
    found = numbers(r"$Q = 182.29$ and 44.4\% (20/45) % 99.9 in a comment \vspace{2.5em}", latex=True)
    assert [(n.text, n.resolution, n.numerator) for n in found] == [
        ("182.29", Decimal("0.01"), None),
        ("44.4%", Decimal("0.1"), 20),
        ("20/45", Decimal("1"), 20),
    ]


def test_registry_mentions_and_matches() -> None:
    registry = Registry(
        {
            "values": [{"name": "q", "value": "182.29", "aliases": ["Q"]}],
            "entities": [
                {"key": "b", "canonical": "GPT-4o", "variants": ["GPT-4V"]},
                {"key": "models", "count": 5, "nouns": ["models"]},
            ],
        }
    )
    assert [
        (m.text, m.value) for m in registry.mentions("GPT-4o, gpt 4o, GPT-4V, GPT-4o-mini, four models")
    ] == [
        ("GPT-4o", None),
        ("gpt 4o", None),
        ("GPT-4V", None),
        ("four models", 4),
    ]
    (number,) = numbers("Q = 182.29")
    assert [v.name for v in registry.match(number)] == ["q"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git program")
def test_git_commits_and_tags_with_blobs(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {}, RELEASE)
    repo = root / "upstream"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("Q = 154.73\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    git(repo, "tag", "-a", "v1.0", "-m", "release 1.0")
    (repo / "README.md").write_text("Q = 182.29\n")
    git(repo, "commit", "-q", "-am", "correct Q")
    store, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "upstream"]
    assert (result.importer, result.outcome, result.records) == ("git", "imported", 3)
    rows = store.select(
        PG + "SELECT ?tag ?sha WHERE { ?t a pg:Tag ; pg:name ?tag ; pg:tagOf ?c . ?c pg:containsMember ?e . "
        "?e pg:memberPath 'README.md' ; pg:sha256 ?sha }"
    )
    assert [(r["tag"].value, r["sha"].value) for r in rows] == [
        ("v1.0", hashlib.sha256(b"Q = 154.73\n").hexdigest())
    ]
    assert len(store.select(PG + "SELECT ?c WHERE { ?c a pg:Commit ; pg:parentCommit ?p }")) == 1
    emails = store.select(
        'SELECT ?s WHERE { ?s ?p ?o FILTER(CONTAINS(STR(?o), "example.org") && isLiteral(?o)) }'
    )
    assert [r for r in emails if "a@example.org" in str(r)] == []
    # a new commit changes only the hidden .git folder: the import is redone, not skipped
    (repo / "notes.md").write_text("x\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "notes")
    (repo / "notes.md").unlink()
    git(repo, "commit", "-q", "-am", "drop notes")
    _, again, _ = ingest_bundle(root, store)
    assert {r.rel: r.outcome for r in again}["upstream"] == "imported"


def test_texts_at_the_release_tag_are_released_texts_older_tags_are_not(tmp_path: Path) -> None:
    contract = RELEASE.replace("[release]\n", '[release]\nversion = "1.1"\n') + (
        'texts = ["README.md"]\n\n[[release.values]]\nname = "q"\nvalue = "182.29"\n\n'
        '[[release.values]]\nname = "q"\nvalue = "154.73"\nstatus = "superseded"\n'
    )
    root = write_bundle(tmp_path / "b", {}, contract)
    repo = root / "paper"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# Paper\nQ = 154.73\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "submitted")
    git(repo, "tag", "-a", "v1.0", "-m", "1.0: then current")  # historic: its Q is legitimate
    (repo / "notes.tex").write_text("x\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "camera-ready, README not corrected")
    git(repo, "tag", "v1.1")  # the release [release].version names
    (repo / "README.md").write_text("# Paper\nQ = 182.29\n")
    git(repo, "commit", "-q", "-am", "after the release")
    store, _, _ = ingest_bundle(root)
    report = run_gate(store, load_rules(), explicit=True, record=False)
    (result,) = [r for r in report.results if r.rule.id == "release-stale-value"]
    assert [(v.focus.removeprefix("https://example.org/t/"), v.message) for v in result.violations] == [
        (
            "claim/git/paper/v1.1/README.md/2/154.73/1",
            "paper/README.md@v1.1 line 2 writes 154.73, a superseded value of q (current: 182.29)",
        )
    ]
    claims = store.select(PG + "SELECT ?c WHERE { ?c a pg:Claim }")
    assert sorted(r["c"].value.split("/t/")[1] for r in claims) == [
        "claim/git/paper/v1.1/README.md/2/154.73/1"
    ]


def test_a_bundle_root_that_is_a_repository_is_read_when_the_contract_names_it(tmp_path: Path) -> None:
    contract = RELEASE + '\n[ingest]\nimporters = { "." = "git" }\n'
    root = write_bundle(tmp_path / "b", {"README.md": "hi\n"}, contract)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    store, results, _ = ingest_bundle(root)
    assert {r.rel: r.importer for r in results if r.rel in (".", "README.md")} == {
        ".": "git",
        "README.md": "texts",
    }
    assert len(store.select(PG + "SELECT ?c WHERE { ?c a pg:Commit }")) == 1


def test_version_numbers_inside_registry_names_are_not_claims(tmp_path: Path) -> None:
    contract = RELEASE + '\n[[release.entities]]\nkey = "claude"\ncanonical = "Claude 3.5 Sonnet"\n'
    contract += 'variants = ["Claude 3 Sonnet"]\n'
    root = write_bundle(
        tmp_path / "b",
        {
            "README.md": "Claude 3.5 Sonnet agreed in 0.71 of blocks; "
            "Claude 3 Sonnet in 0.64, Llama 3.2 in 0.52.\n"
        },
        contract=contract,
    )
    store, _, _ = ingest_bundle(root)
    claims = sorted(r["t"].value for r in store.select(PG + "SELECT ?t WHERE { ?c a pg:Claim ; pg:text ?t }"))
    # a name the registry knows is not a number; an unregistered one ("Llama 3.2") still reads as one
    assert claims == ["0.52", "0.64", "0.71", "3.2"]
