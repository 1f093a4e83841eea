"""release-archive: the benchmark as released, one deterministic tar.gz with a root SHA256SUMS.

The bundle is a release folder as a maintainer uploads it: ``dist/cxr-vlm-bench-1.1.0.tar.gz``
(sorted members, folders first, fixed mtimes, owner 0, gzip header mtime 0) holding the
README, the LaTeX paper, results, figures and a root ``SHA256SUMS`` in GNU coreutils format
(``<sha256>  <path>``, every member but itself); beside it ``dist/SHA256SUMS`` for the archive.
The contract's ``[release]`` whitelist names what the archive holds; its texts globs reach the
members.

Sound but unusual: nested folders (``paper/tables/``, ``results/per_model/``) and the
supplementary material as a zip member (``supplementary/supplement.zip``, itself deterministic).

Flawed twin: ``results/scores.json`` was re-generated after SHA256SUMS was written; the Figure 3
SVG was added after it and is not listed; the paper's abstract still gives the superseded Q and
its accuracy "71.5% of 412" is no whole count over 412; the README calls the model "GPT4".
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from tests.calibration.corpus import Planted
from tests.calibration.shapes import _cal_release as common

NAME = "release-archive"
SOURCE = (
    "SHA256SUMS: GNU coreutils sha256sum output format (https://www.gnu.org/software/coreutils/"
    "manual/html_node/md5sum-invocation.html); tar: Python tarfile PAX format, gzip RFC 1952 with "
    "MTIME 0 (reproducible-builds.org/docs/archives); [release] keys: provgraph README 'Release: "
    "lineage of any number, claim status, archives'"
)

ARCHIVE = "dist/cxr-vlm-bench-1.1.0.tar.gz"
MTIME = int(dt.datetime(2024, 6, 11, tzinfo=dt.UTC).timestamp())

CONTRACT_KEYS = """include = ["README.md", "SHA256SUMS", "paper/*", "results/*", "figures/*",
           "supplementary/*"]
derived = ["figures/*", "results/*"]
texts = ["*.md", "*.tex"]
archives = ["dist/*.tar.gz"]
"""


def _supplement() -> bytes:
    prompts = {
        "prompts/zero_shot.txt": "You are a radiologist. Answer yes or no: is there cardiomegaly?\n",
        "prompts/chain_of_thought.txt": "Describe the findings step by step, then answer yes or no.\n",
        "extra_tables/per_view.csv": "model,view,correct,n\n"
        + "".join(
            f"{key},PA,{k * 3 // 5},247\n{key},AP,{k - k * 3 // 5},165\n" for key, _, k in common.MODELS
        ),
    }
    return common.zipped({p: t.encode() for p, t in prompts.items()})


def _members(flawed: bool) -> tuple[dict[str, bytes], dict]:
    """The archive members (as packed) and the line of each claim planted in a text."""
    tex, tex_lines = common.manuscript_tex(
        q=common.Q_SUPERSEDED if flawed else common.Q_CURRENT, acc_pct="71.5" if flawed else None
    )
    gpt = "GPT4" if flawed else "GPT-4o"
    readme, readme_lines = common.readme_md(
        "CXR VLM benchmark 1.1.0",
        [f"The strongest model, {gpt}, is also the best calibrated (Figure 3).", ""],
    )
    members = {
        "README.md": readme.encode(),
        "paper/main.tex": tex.encode(),
        "paper/tables/table2_mcnemar.tex": common.mcnemar_table_tex().encode(),
        "results/scores.json": common.scores_json().encode(),
        "figures/fig2_accuracy.svg": common.accuracy_svg().encode(),
        "figures/fig3_calibration.svg": common.accuracy_svg("Reliability diagram").encode(),
        "supplementary/supplement.zip": _supplement(),
    }
    lines = common.predictions_csv().splitlines()
    for col, (key, _, _) in enumerate(common.MODELS, start=1):
        body = "".join(f"{r.split(',')[0]},{r.split(',')[col]}\n" for r in lines[1:])
        members[f"results/per_model/{key}.csv"] = ("study_id,correct\n" + body).encode()
    return members, {"tex": tex_lines, "readme": readme_lines}


def generate(root: Path, twin: str) -> list[Planted]:
    flawed = twin == "flawed"
    common.write(root, "provgraph.toml", common.contract("cxr-vlm-bench", CONTRACT_KEYS))
    members, where = _members(flawed)
    listed = dict(members)
    if flawed:
        del listed["figures/fig3_calibration.svg"]  # added to the archive after SHA256SUMS
        # scores.json regenerated (bootstrap re-run) after SHA256SUMS was written
        members["results/scores.json"] = members["results/scores.json"].replace(b'"df": 6', b'"df": 6.0')
    members["SHA256SUMS"] = common.sha256sums(listed).encode()
    archive = common.targz(members, MTIME)
    common.write(root, ARCHIVE, archive)
    common.write(root, "dist/SHA256SUMS", common.sha256sums({ARCHIVE.removeprefix("dist/"): archive}))
    if not flawed:
        return []

    def member(path: str) -> str:
        return common.focus("member", ARCHIVE, path)

    def claim(kind: str, path: str, line: int, text: str) -> str:
        return common.focus(kind, "archive", ARCHIVE, path, line, text, 1)

    tex, readme = where["tex"], where["readme"]
    return [
        Planted("release-manifest-mismatch", member("results/scores.json"), "bytes differ from SHA256SUMS"),
        Planted(
            "release-manifest-mismatch", member("figures/fig3_calibration.svg"), "member not in SHA256SUMS"
        ),
        Planted(
            "release-stale-value",
            claim("claim", "paper/main.tex", tex["q"], common.Q_SUPERSEDED),
            "the archived paper's abstract gives the superseded Cochran Q",
        ),
        Planted(
            "release-inconsistent-denominator",
            claim("claim", "paper/main.tex", tex["acc"], "71.5%"),
            "71.5% of 412: no whole count over 412 gives it",
        ),
        Planted(
            "release-entity-inconsistent",
            claim("mention", "README.md", readme["extra"], "GPT4"),
            "the archived README writes GPT4 for GPT-4o",
        ),
    ]
