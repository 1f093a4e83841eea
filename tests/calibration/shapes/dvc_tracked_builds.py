"""dvc-tracked-builds: a benchmark whose results, figures and tables are DVC stages.

The bundle is a DVC 3 project as ``dvc repro`` leaves it: ``dvc.yaml``, ``params.yaml``, the
``dvc.lock`` it wrote (schema '2.0'; every dep and out with ``path``, ``hash: md5``, ``md5``,
``size``), the scripts, the inputs and every output, all on disk with the bytes the lock records.
The manuscript (LaTeX) and README write the numbers the ``[release]`` registry names.

Sound but unusual: the scoring and table stages carry ``params`` (``params.yaml`` keys, as DVC
records them under ``params: {params.yaml: {...}}``); the per-model tables are one folder output
(``tables/per_model``, a ``.dir`` md5 with ``nfiles``), whose files the contract's
``derived = ["tables/*"]`` covers.

Flawed twin: the calibration data was corrected after Figure 3 was built (stale figure); Table 3
was written by hand and has no stage; the abstract still gives the superseded Q; the README
counts six VLMs where the registry counts seven.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import yaml

from tests.calibration.corpus import Planted
from tests.calibration.shapes import _cal_release as common

NAME = "dvc-tracked-builds"
SOURCE = (
    "dvc.lock: https://dvc.org/doc/user-guide/project-structure/dvcyaml-files#dvclock-file and "
    "iterative/dvc dvc/stage/serialize.py (schema '2.0', deps/outs path+hash+md5+size, params); "
    "folder outs: iterative/dvc-data hashfile/tree.py (.dir md5 of the JSON md5/relpath listing); "
    "[release] contract: provgraph README 'Release: lineage of any number, claim status, archives'"
)

PARAMS = {"bootstrap": {"seed": 1, "resamples": 10000}, "mcnemar": {"correction": "holm"}}
SCRIPTS = {
    "scripts/score.py": "import json, sys\n# Cochran Q and per-model accuracy from the predictions\n",
    "scripts/fig_accuracy.py": "import json, sys\n# bar chart of accuracy by model\n",
    "scripts/fig_calibration.py": "import csv, sys\n# reliability diagram from model confidences\n",
    "scripts/tables.py": "import csv, sys\n# LaTeX tables of the pairwise McNemar tests and subgroups\n",
    "scripts/per_model.py": "import csv, sys, pathlib\n# one CSV of per-study correctness per model\n",
}


def _confidences(corrected: bool) -> str:
    rng = random.Random(common.SEED + 1)
    rows = ["study_id,model,confidence,correct"]
    for i in range(40):
        key = common.MODELS[i % len(common.MODELS)][0]
        conf = round(rng.uniform(0.35, 0.99), 3)
        if corrected and i == 17:
            conf = round(1 - conf, 3)  # a label-flipped row fixed after the figure was built
        rows.append(f"s{50_000_000 + 7919 * i},{key},{conf},{int(conf > 0.6)}")
    return "\n".join(rows) + "\n"


def _per_model(predictions: str) -> dict[str, bytes]:
    lines = predictions.splitlines()
    head = lines[0].split(",")
    out = {}
    for col, (key, _, _) in enumerate(common.MODELS, start=1):
        assert head[col] == key
        body = [f"{row.split(',')[0]},{row.split(',')[col]}" for row in lines[1:]]
        out[f"{key}.csv"] = ("study_id,correct\n" + "\n".join(body) + "\n").encode()
    return out


def _table3() -> str:
    lines = [r"\begin{tabular}{lrr}", r"Model & PA correct & AP correct \\"]
    for _, name, k in common.MODELS:
        pa = k * 3 // 5
        lines.append(f"{name} & {pa}/247 & {k - pa}/165 \\\\")
    return "\n".join([*lines, r"\end{tabular}"]) + "\n"


def _dep(root: Path, rel: str) -> dict:
    data = (root / rel).read_bytes()
    return {"path": rel, "hash": "md5", "md5": common.md5(data), "size": len(data)}


def _dir_out(rel: str, files: dict[str, bytes]) -> dict:
    listing = [{"md5": common.md5(files[name]), "relpath": name} for name in sorted(files)]
    digest = common.md5(json.dumps(listing, sort_keys=True).encode())
    return {
        "path": rel,
        "hash": "md5",
        "md5": digest + ".dir",
        "size": sum(len(b) for b in files.values()),
        "nfiles": len(files),
    }


def _stage(root: Path, cmd: str, deps: list[str], outs: list, params: dict | None = None) -> dict:
    stage: dict = {"cmd": cmd, "deps": [_dep(root, d) for d in deps]}
    if params:
        stage["params"] = {"params.yaml": params}
    stage["outs"] = [o if isinstance(o, dict) else _dep(root, o) for o in outs]
    return stage


def _stages(root: Path, per_model: dict[str, bytes], with_table3: bool) -> dict:
    s = {
        "score": _stage(
            root,
            "python scripts/score.py data/predictions.csv results/scores.json",
            ["data/predictions.csv", "scripts/score.py"],
            ["results/scores.json"],
            {"bootstrap.resamples": 10000, "bootstrap.seed": 1},
        ),
        "fig2": _stage(
            root,
            "python scripts/fig_accuracy.py results/scores.json figures/fig2_accuracy.svg",
            ["results/scores.json", "scripts/fig_accuracy.py"],
            ["figures/fig2_accuracy.svg"],
        ),
        "fig3": _stage(
            root,
            "python scripts/fig_calibration.py data/confidences.csv figures/fig3_calibration.svg",
            ["data/confidences.csv", "scripts/fig_calibration.py"],
            ["figures/fig3_calibration.svg"],
        ),
        "table2": _stage(
            root,
            "python scripts/tables.py mcnemar data/predictions.csv tables/table2_mcnemar.tex",
            ["data/predictions.csv", "scripts/tables.py"],
            ["tables/table2_mcnemar.tex"],
            {"mcnemar.correction": "holm"},
        ),
        "per_model": _stage(
            root,
            "python scripts/per_model.py data/predictions.csv tables/per_model",
            ["data/predictions.csv", "scripts/per_model.py"],
            [_dir_out("tables/per_model", per_model)],
        ),
    }
    if with_table3:
        s["table3"] = _stage(
            root,
            "python scripts/tables.py subgroups data/predictions.csv tables/table3_subgroups.tex",
            ["data/predictions.csv", "scripts/tables.py"],
            ["tables/table3_subgroups.tex"],
        )
    return s


def _dvc_yaml(stages: dict) -> str:
    spec = {}
    for name, st in stages.items():
        entry = {"cmd": st["cmd"], "deps": [d["path"] for d in st["deps"]]}
        if "params" in st:
            entry["params"] = list(st["params"]["params.yaml"])
        entry["outs"] = [o["path"] for o in st["outs"]]
        spec[name] = entry
    return yaml.safe_dump({"stages": spec}, sort_keys=False)


CONTRACT_KEYS = """include = ["README.md", "manuscript/*", "tables/*", "figures/*", "results/*", "data/*",
           "scripts/*", "dvc.yaml", "dvc.lock", "params.yaml"]
derived = ["figures/*", "tables/*", "results/*"]
texts = ["README.md", "manuscript/*.tex", "tables/*.tex"]
"""


def generate(root: Path, twin: str) -> list[Planted]:
    flawed = twin == "flawed"
    w = common.write
    predictions = common.predictions_csv()
    w(root, "provgraph.toml", common.contract("dvc-cxr-bench", CONTRACT_KEYS))
    w(root, "params.yaml", yaml.safe_dump(PARAMS, sort_keys=False))
    w(root, "data/predictions.csv", predictions)
    for rel, text in SCRIPTS.items():
        w(root, rel, text)
    w(root, "data/confidences.csv", _confidences(corrected=False))
    w(root, "results/scores.json", common.scores_json())
    w(root, "figures/fig2_accuracy.svg", common.accuracy_svg())
    w(root, "figures/fig3_calibration.svg", common.accuracy_svg("Reliability diagram"))
    w(root, "tables/table2_mcnemar.tex", common.mcnemar_table_tex())
    w(root, "tables/table3_subgroups.tex", _table3())
    per_model = _per_model(predictions)
    for name, data in per_model.items():
        w(root, f"tables/per_model/{name}", data)
    stages = _stages(root, per_model, with_table3=not flawed)
    w(root, "dvc.yaml", _dvc_yaml(_stages(root, per_model, with_table3=True)))
    w(root, "dvc.lock", yaml.safe_dump({"schema": "2.0", "stages": stages}, sort_keys=False))
    tex, tex_lines = common.manuscript_tex(q=common.Q_SUPERSEDED if flawed else common.Q_CURRENT)
    w(root, "manuscript/main.tex", tex)
    readme, readme_lines = common.readme_md("DVC CXR benchmark", count_word="6" if flawed else "7")
    w(root, "README.md", readme)
    if not flawed:
        return []
    w(root, "data/confidences.csv", _confidences(corrected=True))  # after dvc repro
    return [
        Planted(
            "release-stale-artifact",
            common.focus("file", "figures", "fig3_calibration.svg"),
            "data/confidences.csv corrected after the fig3 stage ran",
        ),
        Planted(
            "release-derived-without-build",
            common.focus("file", "tables", "table3_subgroups.tex"),
            "Table 3 written by hand: no dvc.lock stage outputs it",
        ),
        Planted(
            "release-stale-value",
            common.focus("claim", "manuscript", "main.tex", tex_lines["q"], common.Q_SUPERSEDED, 1),
            "the abstract gives the superseded Cochran Q",
        ),
        Planted(
            "release-entity-inconsistent",
            common.focus("mention", "README.md", readme_lines["count"], "6 VLMs", 1),
            "README counts six VLMs, the registry seven",
        ),
    ]
