"""A DVC stage's status as ``dvc status`` reports it, and as provgraph computes and records it.

The project is iterative/example-get-started (tests/fixtures/dvc/example-get-started, ORIGIN.md
there says which commit): its real dvc.yaml, dvc.lock and params.yaml. Where the ``dvc``
package is installed, real ``dvc status --json`` in a temporary git+DVC repository is the
reference for each scenario.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, ingest_bundle

from provgraph.importers.dvcstatus import code_dep, dvcfile_status, read_params, stage_status
from provgraph.importers.dvcyaml import load
from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules

PROJECT = FIXTURES / "dvc" / "example-get-started"
RELEASE = '[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n\n[release]\ninclude = ["*.md"]\n'
PG = "PREFIX pg: <https://w3id.org/provgraph/ns#>\n"
DVC = shutil.which("dvc", path=str(Path(sys.executable).parent)) or shutil.which("dvc")

# Tiny stand-ins for the project's scripts (its real ones need scikit-learn and 14 MB of data):
# each writes the outputs its stage in the real dvc.yaml declares.
SCRIPTS = {
    "src/prepare.py": "import os, sys\nos.makedirs('data/prepared', exist_ok=True)\n"
    "rows = open(sys.argv[1]).read().splitlines()\n"
    "open('data/prepared/train.tsv', 'w').write('\\n'.join(rows[1:]))\n"
    "open('data/prepared/test.tsv', 'w').write(rows[0])\n",
    "src/featurization.py": "import os, sys\nos.makedirs(sys.argv[2], exist_ok=True)\n"
    "for n in ('train', 'test'):\n"
    "    open(f'{sys.argv[2]}/{n}.pkl', 'w').write(open(f'{sys.argv[1]}/{n}.tsv').read().upper())\n",
    "src/train.py": "import sys\n"
    "open(sys.argv[2], 'w').write(str(len(open(sys.argv[1] + '/train.pkl').read())))\n",
    "src/evaluate.py": "import os, sys\nos.makedirs('eval', exist_ok=True)\n"
    "open('eval/metrics.json', 'w').write('{\"n\": %s}' % open(sys.argv[1]).read())\n",
}


def provgraph_status(root: Path, project: str = "") -> dict[str, Any]:
    """provgraph's status of every stage of dvc.yaml, in ``dvc status --json``'s shape."""
    stages = read_params(root / "dvc.yaml")["stages"]
    lock_path = root / "dvc.lock"
    locked = load(lock_path.read_text(encoding="utf-8"))[1]["stages"] if lock_path.is_file() else {}
    found = {}
    for name, spec in stages.items():
        status = stage_status(root, "", project, spec, locked.get(name))
        assert not isinstance(status, str), status
        if status.entries:
            found[name] = status.entries
    for path in sorted(root.rglob("*.dvc")):  # what `dvc add` wrote: DVC addresses it by its path
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(".dvc/"):
            status = dvcfile_status(root, rel, project)
            assert not isinstance(status, str), status
            if status.entries:
                found[rel] = status.entries
    return found


def test_real_project_not_pulled_matches_dvc_status(tmp_path: Path) -> None:
    """A fresh clone of iterative/example-get-started (no `dvc pull`; its code is not vendored):
    every input and code dep "deleted" and every output "not in cache", as dvc 3.67.1 said of it
    (dvc-status-not-pulled.json)."""
    shutil.copytree(PROJECT, tmp_path / "p")
    (tmp_path / "p" / ".dvc").mkdir()
    expected = json.loads((PROJECT / "dvc-status-not-pulled.json").read_text(encoding="utf-8"))
    assert provgraph_status(tmp_path / "p") == expected


def test_code_dep_is_the_code_not_the_first_word_of_the_command() -> None:
    """example-get-started's `python src/prepare.py data/data.xml`: the code is src/prepare.py
    (a dep with a code suffix), not data/data.xml; a stage with no code dep has none."""
    assert (
        code_dep(["data/data.xml", "src/prepare.py"], "python src/prepare.py data/data.xml")
        == "src/prepare.py"
    )
    assert code_dep(["data/data.xml"], "python -m pkg data/data.xml") is None
    assert code_dep(["lib/util.py", "src/train.py"], "python src/train.py") == "src/train.py"


def test_not_pulled_project_is_not_stale_and_records_dvc_words(tmp_path: Path) -> None:
    """Ingested, the not-pulled clone carries DVC's words on each stage and out, and the release
    rule calls nothing stale: its data is merely not pulled (issue 19). The code is this
    file's stand-ins (the project's own is not vendored), so the code deps are modified."""
    root = shutil.copytree(PROJECT, tmp_path / "p")
    (root / ".dvc").mkdir()
    for rel, text in SCRIPTS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "provgraph.toml").write_text(RELEASE, encoding="utf-8")
    store = ingest_bundle(root).store
    rows = store.select(
        PG + "SELECT ?name ?word WHERE { ?b a pg:Build ; pg:name ?name ; pg:dvcStatus ?word }"
    )
    words = {(str(r["name"].value), str(r["word"].value)) for r in rows}
    assert ("prepare", "changed deps") in words and ("prepare", "changed outs") in words
    outs = store.select(
        PG + 'SELECT ?p WHERE { ?o a pg:BuildOutput ; pg:path ?p ; pg:dvcStatus "not in cache" }'
    )
    assert {str(r["p"].value) for r in outs} == {"data/prepared", "data/features", "model.pkl", "eval"}
    scripts = store.select(PG + "SELECT ?p WHERE { ?b a pg:Build ; pg:script ?f . ?f pg:path ?p }")
    assert {str(r["p"].value) for r in scripts} == {
        f"src/{n}.py" for n in ("prepare", "featurization", "train", "evaluate")
    }
    report = run_gate(store, load_rules(), explicit=True, record=False)
    (result,) = [r for r in report.results if r.rule.id == "release-stale-artifact"]
    assert result.violations == []


def _run(cwd: Path, *args: str) -> str:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{args}: {done.stderr}"
    return done.stdout


def _dvc_status(cwd: Path) -> dict[str, Any]:
    """``dvc status --json``: every stage of dvc.yaml and every ``.dvc`` file."""
    return json.loads(_run(cwd, DVC, "status", "--json") or "{}")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real pipeline of example-get-started reproduced by real DVC in a git repository."""
    if DVC is None:
        pytest.skip("the dvc package is not installed: `pip install dvc` to compare with `dvc status`")
    root = tmp_path_factory.mktemp("dvc") / "repo"
    root.mkdir()
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy(PROJECT / name, root / name)
    for name, text in SCRIPTS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / "data").mkdir()
    (root / "data" / "data.xml").write_text("<row Id='1'/>\n<row Id='2'/>\n<row Id='3'/>\n", encoding="utf-8")
    _run(root, "git", "init", "-q")
    _run(root, DVC, "init", "-q")
    _run(root, DVC, "add", "-q", "data/data.xml")
    _run(root, DVC, "repro", "-q")
    _run(root, "git", "add", "-A")
    _run(root, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "built")
    return root


def _edit(root: Path, scenario: str) -> Path:
    if scenario == "code changed":
        with (root / "src" / "train.py").open("a", encoding="utf-8") as out:
            out.write("# tuned\n")
    elif scenario == "params changed":
        text = (root / "params.yaml").read_text(encoding="utf-8")
        (root / "params.yaml").write_text(text.replace("n_est: 50", "n_est: 60"), encoding="utf-8")
    elif scenario == "output deleted":
        (root / "model.pkl").unlink()
    elif scenario == "command changed":
        text = (root / "dvc.yaml").read_text(encoding="utf-8")
        (root / "dvc.yaml").write_text(
            text.replace("model.pkl data/features", "model.pkl  data/features"), "utf-8"
        )
    elif scenario == "data not pulled":
        clone = root.parent / "clone"
        _run(root.parent, "git", "clone", "-q", str(root), str(clone))
        return clone
    return root


@pytest.mark.parametrize(
    "scenario",
    ["clean", "code changed", "params changed", "output deleted", "data not pulled", "command changed"],
)
def test_stage_status_equals_dvc_status(built: Path, tmp_path: Path, scenario: str) -> None:
    """Each scenario of issue 19 (and a changed command), on a copy of the reproduced pipeline:
    provgraph's status of every stage equals real `dvc status --json`, and is not empty
    except when clean."""
    root = tmp_path / "repo"
    shutil.copytree(built, root, symlinks=True)
    root = _edit(root, scenario)
    expected = _dvc_status(root)
    assert provgraph_status(root) == expected
    assert bool(expected) == (scenario != "clean")


def test_dvc_lock_of_a_nested_repository_is_read(tmp_path: Path) -> None:
    """example-get-started cloned into a subfolder of the bundle (its own git repository, its
    own .dvc/): the git importer reads the repository and the dvclock importer its dvc.lock,
    with the subfolder as the DVC root (issue 19: the lock was not read)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tmp_path / "provgraph.toml").write_text(RELEASE, encoding="utf-8")
    nested = shutil.copytree(PROJECT, tmp_path / "vendor" / "get-started")
    (nested / ".dvc").mkdir()
    _run(nested, "git", "init", "-q")
    ingested = ingest_bundle(tmp_path)
    importers = {r.rel: r.importer for r in ingested.results}
    assert importers["vendor/get-started/dvc.lock"] == "dvclock"
    assert importers["vendor/get-started"] == "git"
    outs = ingested.store.select(
        PG + 'SELECT ?p WHERE { ?o a pg:BuildOutput ; pg:path ?p ; pg:dvcStatus "not in cache" }'
    )
    assert "vendor/get-started/model.pkl" in {str(r["p"].value) for r in outs}


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        (
            "params changed",
            "model.pkl is stale: changed params: params.yaml train.n_est modified since the build "
            "(dvc status) (build record dvc.lock:",
        ),
        (
            "code changed",
            "model.pkl is stale: its script src/train.py no longer matches the recorded md5 "
            "(dvc status: changed deps: src/train.py modified) (build record dvc.lock:",
        ),
        (
            "command changed",
            "eval/metrics.json is stale: changed command (the cmd of dvc.yaml differs from dvc.lock's; "
            "dvc status) (build record dvc.lock:",
        ),
    ],
)
def test_stale_artifact_says_what_dvc_status_says(
    built: Path, tmp_path: Path, scenario: str, message: str
) -> None:
    """The release rule names the change in `dvc status`'s words, on the pipeline real DVC
    reproduced; a changed param or command makes the stage's outputs stale as DVC says."""
    root = shutil.copytree(built, tmp_path / "repo", symlinks=True)
    _edit(root, scenario)
    (root / "provgraph.toml").write_text(RELEASE, encoding="utf-8")
    store = ingest_bundle(root).store
    report = run_gate(store, load_rules(), explicit=True, record=False)
    (result,) = [r for r in report.results if r.rule.id == "release-stale-artifact"]
    found = [v.message for v in result.violations]
    assert [m for m in found if m.startswith(message)], found
    assert scenario == "code changed" or all("changed deps" not in m for m in found)


def test_unreadable_dvc_yaml_and_foreach_are_problems_not_failures(tmp_path: Path) -> None:
    """A dvc.yaml that is not YAML costs only the status from it (the lock's own deps and outs
    are still checked); a ``foreach`` stage (DVC's dvc.yaml docs, "foreach stages") is named as
    not evaluated. The lock is the real one of example-get-started."""
    root = shutil.copytree(PROJECT, tmp_path / "p")
    (root / ".dvc").mkdir()
    (root / "provgraph.toml").write_text(RELEASE, encoding="utf-8")
    (root / "dvc.yaml").write_text("stages: [1, 2\n", encoding="utf-8")
    ingested = ingest_bundle(root)
    (result,) = [r for r in ingested.results if r.rel == "dvc.lock"]
    assert result.outcome == "imported"
    assert [str(p).split(" (")[0] for p in result.problems] == ["dvc.lock: dvc.yaml beside it is unreadable"]
    outs = ingested.store.select(PG + 'SELECT ?p WHERE { ?o pg:path ?p ; pg:dvcStatus "not in cache" }')
    assert "model.pkl" in {str(r["p"].value) for r in outs}
    spec = {"foreach": ["a", "b"], "do": {"cmd": "echo ${item}"}}
    assert stage_status(root, "", "", spec, None) == "foreach/matrix stages are not expanded"


def test_unreadable_params_file_is_named_in_the_stale_message(tmp_path: Path) -> None:
    """A params.yaml that is not YAML: no recorded value can be confirmed, so the stage's outputs
    are stale and the message names the file and why (example-get-started's real lock, with
    model.pkl present)."""
    root = shutil.copytree(PROJECT, tmp_path / "p")
    (root / ".dvc").mkdir()
    (root / "provgraph.toml").write_text(RELEASE, encoding="utf-8")
    (root / "params.yaml").write_text("train: {seed: [1\n", encoding="utf-8")
    (root / "model.pkl").write_bytes(b"model")
    report = run_gate(ingest_bundle(root).store, load_rules(), explicit=True, record=False)
    (result,) = [r for r in report.results if r.rule.id == "release-stale-artifact"]
    found = [v.message for v in result.violations]
    assert [
        m
        for m in found
        if m.startswith("model.pkl is stale: changed params: params.yaml modified (unreadable: ")
    ]


def test_dvc_import_file_is_not_evaluated(tmp_path: Path) -> None:
    """example-get-started's data/data.xml.dvc (a `dvc import` from iterative/dataset-registry,
    its shape as that repository has it): its status needs the other repository, so none is
    claimed."""
    (tmp_path / "data.xml.dvc").write_text(
        "md5: f5ea021eddd7b1df6de80b904cba1da6\nfrozen: true\ndeps:\n- path: get-started/data.xml\n"
        "  repo:\n    url: https://github.com/iterative/dataset-registry\n"
        "    rev_lock: f59388cd04276e75d70b2136597aaa27e7937cc3\nouts:\n"
        "- md5: 22a1a2931c8370d3aeedd7183606fd7f\n  size: 14445097\n  hash: md5\n  path: data.xml\n",
        encoding="utf-8",
    )
    assert dvcfile_status(tmp_path, "data.xml.dvc", "").startswith("a `dvc import`")
