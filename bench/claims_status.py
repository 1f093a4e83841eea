"""Claim statuses of every number of a text of 10,000 numbers, in one pass.

    .venv/bin/python bench/claims_status.py [--numbers 10000] [--sample 100] [--rounds 3]

Generates the clean twin of the LLM-reviewer benchmark (examples/llm_review: its statistics
recomputed from the reviews), repeats its README's results rows until the README writes
``--numbers`` numbers (five cells per row: the runs, left unbound, and four rates the binding
ties to their statistics), ingests it and records a check. Measured in the same run: the
statuses of all the README's numbers at once (:func:`provgraph.lineage.claims.claim_statuses`),
and the baseline, one :func:`provgraph.lineage.trace.trace` per claim on ``--sample`` claims
spread over the text, extrapolated to all of them. Both give the same status for every sampled
claim (checked).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def generator():
    spec = importlib.util.spec_from_file_location(
        "review_generate", REPO / "examples" / "llm_review" / "generate.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def grow_readme(root: Path, numbers: int) -> None:
    """Repeat the README's results rows until it writes ``numbers`` numbers (each row's cells:
    runs, detection rate, FPR, precision, F1)."""
    readme = root / "README.md"
    lines = readme.read_text(encoding="utf-8").splitlines()
    rows = [x for x in lines if x.startswith("| Claude") or x.startswith("| GPT")]
    per_row = len(rows[0].strip("|").split("|")) - 1  # every cell but the row label is a number
    end = max(i for i, x in enumerate(lines) if x in rows)
    extra = [rows[i % len(rows)] for i in range(numbers // per_row - len(rows))]
    readme.write_text("\n".join(lines[: end + 1] + extra + lines[end + 1 :]) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--numbers", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("PROVGRAPH_SECRET", "bench-secret-0123456789abcdef0123456789")
    from provgraph.cli import main as cli
    from provgraph.lineage.claims import claim_statuses
    from provgraph.lineage.trace import trace
    from provgraph.store import open_store

    with tempfile.TemporaryDirectory() as tmp:
        root = generator().generate(Path(tmp) / "clean", "clean")
        grow_readme(root, args.numbers)
        t0 = time.perf_counter()
        for command in (["ingest"], ["check", "--format", "json", "-o", str(Path(tmp) / "c.json")]):
            try:
                cli(["-q", "-C", str(root), *command])
            except SystemExit as exc:
                assert exc.code in (0, None), exc.code
        setup = time.perf_counter() - t0
        store = open_store(root / ".provgraph" / "store")
        batch, rows = [], []
        for _ in range(args.rounds):
            t = time.perf_counter()
            rows = claim_statuses(store, "README.md")
            batch.append(time.perf_counter() - t)
        step = max(1, len(rows) // args.sample)
        sample = rows[::step][: args.sample]
        t = time.perf_counter()
        traced = {r.iri: trace(store, r.iri).status for r in sample}
        per_claim = (time.perf_counter() - t) / len(sample)
        assert traced == {r.iri: r.status for r in sample}, "one pass and trace disagree"
        one_pass = statistics.median(batch)
        baseline = per_claim * len(rows)
        counts = {
            s: sum(r.status == s for r in rows)
            for s in ("retained", "restricted", "unverifiable", "withdrawn")
        }
        print(f"numbers in the text        {len(rows):,} ({counts})")
        print(f"ingest + check             {setup:.1f} s")
        runs = ", ".join(f"{x:.2f}" for x in batch)
        print(f"one pass, all numbers      {one_pass:.2f} s (median of {args.rounds}: {runs})")
        print(f"trace per claim            {per_claim * 1000:.1f} ms on {len(sample)} claims")
        print(f"trace, all (extrapolated)  {baseline:.1f} s")
        print(f"speed-up                   {baseline / one_pass:.0f}x")
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
