"""Cohort and pixel rules on a large generated bundle, against the output rules in the same run.

    .venv/bin/python bench/cohort_pixel_rules.py [--cases 10000] [--dicom]

A MIMIC-style bundle with ``--cases`` studies (two per patient, so every case is a repeated
patient and the repeated-patient rule reports all of them), 3 metadata and split rows per
study, 2 conditions per case, a call record per planned call and, with ``--dicom``, one
pydicom-written DICOM and one rendered PNG per case, linked through rendering records. The
baselines, same run and store: the four output-clause rules (the foundation's), and the
ingest of the bundle.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from fixtures.make_images import build  # noqa: E402


def make_bundle(root: Path, n: int, dicom: bool) -> None:
    root.mkdir(parents=True)
    (root / "provgraph.toml").write_text(
        '[project]\nname = "bench"\nbase_iri = "https://example.org/b/"\n\n[plan]\n\n'
        '[cohort]\nallowed_splits = ["test"]\nallowed_views = ["PA", "AP"]\n'
        + ("\n[pixel]\n" if dicom else "")
    )
    studies = [str(50_000_000 + i) for i in range(n)]
    subject = {s: str(10_000_000 + i // 2) for i, s in enumerate(studies)}
    (root / "cohort.csv").write_text(
        "case_key,patient_key,source,split,view,inclusion,reason\n"
        + "".join(f"{s},{subject[s]},mimic-cxr,test,PA,include,frontal\n" for s in studies)
    )
    rows = [(f"{s}-{k}", s) for s in studies for k in range(3)]
    (root / "metadata.csv").write_text(
        "dicom_id,subject_id,study_id,ViewPosition\n" + "".join(f"{d},{subject[s]},{s},PA\n" for d, s in rows)
    )
    (root / "split.csv").write_text(
        "dicom_id,study_id,subject_id,split\n" + "".join(f"{d},{s},{subject[s]},test\n" for d, s in rows)
    )
    calls = [(f"{s}-{c}", s, c) for s in studies for c in ("A", "B")]
    (root / "plan.csv").write_text(
        "call_id,case,condition\n" + "".join(f"{i},{s},{c}\n" for i, s, c in calls)
    )
    (root / "outputs").mkdir()
    records = []
    for i, s, _ in calls:
        (root / "outputs" / f"{i}.txt").write_text("report")
        record = {"call_id": i, "status": "ok", "output": f"outputs/{i}.txt"}
        if dicom:
            record["image"] = f"png/{s}.png"
        records.append(json.dumps(record) + "\n")
    (root / "calls.jsonl").write_text("".join(records))
    if dicom:
        build(
            root,
            {
                "dicom": [
                    {"path": f"dicom/{s}.dcm", "patient": subject[s], "seed": i % 50}
                    for i, s in enumerate(studies)
                ],
                "render": [{"source": f"dicom/{s}.dcm", "image": f"png/{s}.png"} for s in studies],
            },
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument(
        "--dicom", action="store_true", help="also DICOM files, renderings and the pixel clause"
    )
    args = parser.parse_args()
    os.environ.setdefault("PROVGRAPH_SECRET", "bench-secret-0123456789abcdef0123456789")
    from provgraph.bundle.layout import Bundle
    from provgraph.ingest.run import ingest_paths
    from provgraph.lineage.gate import run_gate
    from provgraph.rules import load_rules
    from provgraph.store import open_store

    with tempfile.TemporaryDirectory(prefix="provgraph-bench-") as tmp:
        root = Path(tmp) / "bundle"
        t0 = time.perf_counter()
        make_bundle(root, args.cases, args.dicom)
        print(f"generated {args.cases} cases in {time.perf_counter() - t0:.1f}s")
        store = open_store(str(Path(tmp) / "store"))
        bundle = Bundle.open(root)
        t0 = time.perf_counter()
        results, problems = ingest_paths(store, bundle, [bundle.root])
        ingest = time.perf_counter() - t0
        assert not problems and all(not r.problems and r.outcome == "imported" for r in results)
        print(f"ingest {ingest:.1f}s, {store.quad_count()} quads")
        clauses = ("output", "cohort", "pixel") if args.dicom else ("output", "cohort")
        report = run_gate(store, [r for r in load_rules() if r.clause in clauses], record=False)
        totals: dict[str, float] = {}
        for r in report.results:
            assert r.outcome in ("pass", "violated"), (r.rule.id, r.error)
            totals[r.rule.clause] = totals.get(r.rule.clause, 0.0) + r.seconds
            print(f"  {r.rule.id:36} {r.outcome:9} {len(r.violations):7} {r.seconds:7.2f}s")
        for clause in clauses:
            print(
                f"{clause:8} {totals[clause]:7.2f}s  ({totals[clause] / totals['output']:.2f}x the output "
                f"rules, {totals[clause] / ingest:.2f}x the ingest)"
            )
        store.close()


if __name__ == "__main__":
    main()
