"""git-release-states: results built with canonical build records, the paper in a tagged git repo.

The bundle is a benchmark folder: predictions, scripts, ``results/scores.json`` and Figure 2
each with a canonical build record (``<output>.build.json``, sha256 of output, inputs and
script), a README with the accuracy table, and ``paper/``, the manuscript's git repository (an
Overleaf-style clone) made with real ``git`` commands under fixed author and committer names and
dates, so its commit ids are the same on every run. Its history:

1. ``v1.0.0`` (annotated) and ``arxiv-v1`` (lightweight): the submitted paper, with the Q the
   analysis gave then (now superseded in the registry: a historic state, not the release);
2. ``v1.1.0`` (annotated): the camera-ready paper, the release ``[release].version`` names;
3. ``main`` moves on: an untagged reviewer-response draft (not released).

Sound but unusual: an older tag legitimately carries a value the registry now marks superseded;
a lightweight and an annotated tag; unreleased work after the release tag.

Flawed twin: the README inside the ``v1.1.0`` tree still gives the superseded Q (the paper was
corrected, its README not); Figure 2 was retouched after its build; the README's error analysis
writes "18% (8/47)".
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.calibration.corpus import Planted
from tests.calibration.shapes import _cal_release as common

NAME = "git-release-states"
SOURCE = (
    "git plumbing as git-commit(1)/git-tag(1) document it (GIT_AUTHOR_DATE, GIT_COMMITTER_DATE); "
    "what is read: provgraph/importers/git.py; build records: provgraph/importers/buildrecord.py "
    "docstring; [release]: provgraph README 'Release: lineage of any number, claim status, archives'"
)

REPO = "paper"
SCRIPTS = {
    "scripts/score.py": "import json, sys\n# Cochran Q and accuracy per model\n",
    "scripts/fig_accuracy.py": "import json, sys\n# bar chart of accuracy by model\n",
}
CONTRACT_KEYS = """include = ["README.md", "results/*", "figures/*", "scripts/*", "data/*", "paper/*"]
derived = ["results/*", "figures/*"]
texts = ["README.md", "paper/*.md", "paper/*.tex"]
"""


def _git(repo: Path, when: str, *args: str) -> None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Bench Author",
        "GIT_AUTHOR_EMAIL": "author@example.org",
        "GIT_COMMITTER_NAME": "Bench Author",
        "GIT_COMMITTER_EMAIL": "author@example.org",
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_DATE": when,
        "LC_ALL": "C",
    }
    subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", "-C", str(repo), *args],
        env=env,
        check=True,
        capture_output=True,
    )


def _paper_readme(q: str) -> str:
    return (
        "# Paper sources\n\n"
        "LaTeX sources of the paper; `main.tex` is the manuscript.\n\n"
        f"Headline result: Cochran's Q = {q} across the seven models.\n"
    )


def _commit(repo: Path, when: str, files: dict[str, str], message: str) -> None:
    for rel, text in files.items():
        common.write(repo, rel, text)
    _git(repo, when, "add", "-A")
    _git(repo, when, "commit", "-q", "-m", message)


def _paper_repo(root: Path, figure: bytes, flawed: bool) -> int:
    """The paper's history; returns the README line of the Q (for the planted focus)."""
    repo = root / REPO
    repo.mkdir(parents=True)
    _git(repo, "2024-03-01T09:00:00+00:00", "init", "-q", "-b", "main")
    old_tex, _ = common.manuscript_tex(q=common.Q_SUPERSEDED)
    submitted = {
        "main.tex": old_tex,
        "README.md": _paper_readme(common.Q_SUPERSEDED),
        "tables/table2_mcnemar.tex": common.mcnemar_table_tex(),
        "figures/fig2_accuracy.svg": figure.decode(),
    }
    _commit(repo, "2024-03-01T09:00:00+00:00", submitted, "Submitted version")
    _git(repo, "2024-03-01T09:05:00+00:00", "tag", "-a", "v1.0.0", "-m", "submitted")
    _git(repo, "2024-03-01T09:05:00+00:00", "tag", "arxiv-v1")
    new_tex, _ = common.manuscript_tex()
    stale = common.Q_SUPERSEDED if flawed else common.Q_CURRENT
    _commit(
        repo,
        "2024-05-20T16:30:00+00:00",
        {"main.tex": new_tex, "README.md": _paper_readme(stale)},
        "Camera-ready: Q after removing duplicate studies",
    )
    _git(repo, "2024-05-20T16:35:00+00:00", "tag", "-a", "v1.1.0", "-m", "camera-ready 1.1.0")
    draft = "% reviewer response, draft: not released\nWe thank the reviewers.\n"
    _commit(repo, "2024-06-02T11:00:00+00:00", {"response.tex": draft}, "WIP: response to reviewers")
    return 5


def _build_record(root: Path, output: str, inputs: list[str], script: str, when: str) -> None:
    def entry(rel: str) -> dict:
        data = (root / rel).read_bytes()
        return {"path": rel, "sha256": common.sha256(data), "size": len(data)}

    record = {
        "output": entry(output),
        "inputs": [entry(i) for i in inputs],
        "script": entry(script),
        "parameters": {"dpi": 300} if output.endswith(".svg") else {"bootstrap_seed": 1},
        "time": when,
        "command": f"python {script} {' '.join(inputs)} {output}",
    }
    common.write(root, output + ".build.json", json.dumps(record, indent=2) + "\n")


def _readme(flawed: bool) -> tuple[str, int]:
    missed = "18% (8/47)" if flawed else "17% (8/47)"
    extra = [
        "## Error analysis",
        "",
        f"All seven models missed 47 studies; {missed} of them are portable AP films.",
        "",
        f"The paper is in `{REPO}/` (git); release 1.1.0 is its tag `v1.1.0`.",
        "",
    ]
    text, lines = common.readme_md("CXR VLM benchmark", extra)
    return text, lines["extra"] + 2


def generate(root: Path, twin: str) -> list[Planted]:
    flawed = twin == "flawed"
    w = common.write
    w(root, "provgraph.toml", common.contract("git-cxr-bench", CONTRACT_KEYS))
    w(root, "data/predictions.csv", common.predictions_csv())
    for rel, text in SCRIPTS.items():
        w(root, rel, text)
    w(root, "results/scores.json", common.scores_json())
    _build_record(
        root, "results/scores.json", ["data/predictions.csv"], "scripts/score.py", "2024-05-19T10:00:00Z"
    )
    figure = w(root, "figures/fig2_accuracy.svg", common.accuracy_svg())
    _build_record(
        root,
        "figures/fig2_accuracy.svg",
        ["results/scores.json"],
        "scripts/fig_accuracy.py",
        "2024-05-19T10:02:00Z",
    )
    readme, readme_line = _readme(flawed)
    w(root, "README.md", readme)
    q_line = _paper_repo(root, figure, flawed)
    if not flawed:
        return []
    # retouched by hand after the build (a label moved in an SVG editor)
    w(root, "figures/fig2_accuracy.svg", figure.replace(b'width="420"', b'width="440"'))
    return [
        Planted(
            "release-stale-value",
            common.focus("claim", "git", REPO, "v1.1.0", "README.md", q_line, common.Q_SUPERSEDED, 1),
            "README.md in the tagged release v1.1.0 still gives the superseded Q",
        ),
        Planted(
            "release-derived-without-build",
            common.focus("file", "figures", "fig2_accuracy.svg"),
            "Figure 2 retouched after its build record was written",
        ),
        Planted(
            "release-inconsistent-denominator",
            common.focus("claim", "README.md", readme_line, "18%", 1),
            "18% (8/47): 8/47 is 17.0%",
        ),
    ]
