"""Throughput of the call-identity importers and rules on a generated OpenAI Batch bundle.

    .venv/bin/python bench/identity.py [N_CASES]     # default 5000 cases x 2 conditions

Baseline, measured in the same run: the foundation's `calls` importer on a calls.jsonl with the
same number of minimal records (call_id, status, output). Reported: records/s of each batch
importer, its time as a ratio of the baseline, and the time of the prompt, model and output
clauses' rules over the resulting graph.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bundles import write_openai_batch

from provgraph.bundle.layout import Bundle
from provgraph.ingest import registry
from provgraph.ingest.run import ingest_source
from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules
from provgraph.store import open_store

SYSTEM = {"A": "Describe every finding.", "B": "List only abnormal findings."}


def write_bundle(root: Path, cases: int) -> int:
    root.mkdir(parents=True)
    (root / "prompts").mkdir()
    for key, text in SYSTEM.items():
        (root / "prompts" / f"{key}.txt").write_text(text + "\n")
    (root / "provgraph.toml").write_text(
        '[project]\nname = "bench"\nbase_iri = "https://example.org/bench/"\n\n'
        '[plan]\nfile = "plan.csv"\ndecoding = { temperature = 0, max_tokens = 512 }\n\n'
        '[conditions.A]\nsystem_prompt = "prompts/A.txt"\ndiffers_from = ["B"]\n\n'
        '[conditions.B]\nsystem_prompt = "prompts/B.txt"\n\n'
        '[models.gpt]\nrequested = "gpt-4o"\nalias_ok = true\n'
    )
    write_openai_batch(root, cases, SYSTEM)
    plan = (root / "plan.csv").read_text().splitlines(keepends=True)
    minimal = [
        json.dumps({"call_id": line.split(",")[0], "status": "ok", "output": "o.txt"}) for line in plan[1:]
    ]
    (root / "baseline").mkdir()
    (root / "baseline" / "calls.jsonl").write_text("\n".join(minimal) + "\n")
    return 2 * cases


def timed(store, bundle: Bundle, rel: str, importer: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    result = ingest_source(store, bundle, bundle.root / rel, registry.get(importer))
    assert result.outcome == "imported" and not result.problems, (result.error, result.problems[:3])
    return time.perf_counter() - t0, result.triples


def main() -> None:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bundle"
        calls = write_bundle(root, cases)
        bundle = Bundle.open(root)
        store = open_store(Path(tmp) / "store")
        for rel, name in (
            ("provgraph.toml", "contract"),
            ("plan.csv", "plan"),
            ("prompts/A.txt", "prompt-file"),
            ("prompts/B.txt", "prompt-file"),
        ):
            timed(store, bundle, rel, name)
        baseline_store = open_store(Path(tmp) / "baseline")
        print(f"{calls} calls ({cases} cases x 2 conditions)")
        base, _ = timed(baseline_store, bundle, "baseline/calls.jsonl", "calls")
        print(f"{'calls (baseline)':22s} {base:6.2f} s  {calls / base:8.0f} records/s")
        for rel, name in (
            ("batch_input.jsonl", "openai-batch-input"),
            ("batch_output.jsonl", "openai-batch-output"),
        ):
            took, triples = timed(store, bundle, rel, name)
            size = (root / rel).stat().st_size / 1e6
            print(
                f"{name:22s} {took:6.2f} s  {calls / took:8.0f} records/s  {triples / took:8.0f} triples/s  "
                f"{size:5.1f} MB  x{took / base:4.1f} the baseline"
            )
        rules = [r for r in load_rules() if r.clause in ("prompt", "model", "output")]
        t0 = time.perf_counter()
        report = run_gate(store, rules, record=False)
        took = time.perf_counter() - t0
        slowest = sorted(report.results, key=lambda r: r.seconds, reverse=True)[:8]
        gate = "PASS" if report.passed else "FAIL"
        print(f"{len(rules)} prompt/model/output rules: {took:.2f} s, gate {gate}")
        for r in slowest:
            print(f"  {r.rule.id:38s} {r.seconds:6.2f} s")
        store.close()
        baseline_store.close()


if __name__ == "__main__":
    main()
