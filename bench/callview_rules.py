"""The per-call view and the prompt, model and release rules that read it (issue 21), old
against new in one session.

    .venv/bin/python bench/callview_rules.py oxigraph --store STORE --old /work/main --new .
    .venv/bin/python bench/callview_rules.py virtuoso --bundle BUNDLE --old /work/main --new .

Each round runs, in a child process whose ``PYTHONPATH`` is one source tree (``--old``: the
baseline, main; ``--new``: this branch), on one store ingested once beforehand: the call
evidence view rebuilt from scratch (its slot dropped first; with the file class closure where
the tree has it), then the rules of the prompt and model clauses and the two release rules
rewritten here, each timed. Rounds alternate old, new, old, new, so machine load falls on
both. ``virtuoso`` starts a private Virtuoso 7 (as the tests do), ingests ``BUNDLE`` into it
once and times the model rules there. Figures are printed as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RULES = [
    "prompt-differs-from-declared",
    "prompt-identical-across-conditions",
    "prompt-not-captured-at-request",
    "prompt-recorded-identical",
    "model-alias-unresolved",
    "model-family-mismatch",
    "model-several-snapshots",
    "model-undeclared",
    "release-manifest-mismatch",
    "release-derived-without-build",
]
MODEL_RULES = [r for r in RULES if r.startswith("model-")]


def child(location: str, rules: list[str]) -> dict:
    """One round in this process (the tree on ``PYTHONPATH``): the view, then each rule."""
    import provgraph
    from provgraph.rules import callview, load_rules, run_check
    from provgraph.store import catalog, open_store

    store = open_store(location)
    out: dict = {"tree": str(Path(provgraph.__file__).parent.parent)}
    t0 = time.perf_counter()
    catalog.remove(store, callview.SLOT)
    callview.refresh(store)
    out["view_seconds"] = time.perf_counter() - t0
    try:
        from provgraph.rules import fileview  # (only the new tree has it)
    except ImportError:
        fileview = None
    if fileview is not None:
        t0 = time.perf_counter()
        catalog.remove(store, fileview.SLOT)
        fileview.refresh(store)
        out["fileview_seconds"] = time.perf_counter() - t0
    chosen = [r for r in load_rules() if r.id in rules]
    report = run_check(store, chosen, explicit=True)
    out["rules"] = {r.rule.id: [r.outcome, len(r.violations), round(r.seconds, 2)] for r in report.results}
    out["rules_seconds"] = sum(r.seconds for r in report.results)
    return out


def rounds(location: str, old: Path, new: Path, rules: list[str], n: int, first: str = "old") -> list[dict]:
    figures = []
    for i in range(n):
        for name, tree in (("old", old), ("new", new)) if first == "old" else (("new", new), ("old", old)):
            env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
            argv = [sys.executable, str(Path(__file__).resolve()), "child", location, ",".join(rules)]
            t0 = time.perf_counter()
            done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"{name} round {i}: {done.stderr[-2000:]}")
            fig = {"round": i, "tree": name, "wall": time.perf_counter() - t0, **json.loads(done.stdout)}
            fig["load"] = os.getloadavg()[0]
            print(json.dumps(fig), flush=True)
            figures.append(fig)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("child")
    c.add_argument("location")
    c.add_argument("rules")
    for mode in ("oxigraph", "virtuoso"):
        p = sub.add_parser(mode)
        p.add_argument("--old", type=Path, required=True)
        p.add_argument("--new", type=Path, required=True)
        p.add_argument("--rounds", type=int, default=2)
        p.add_argument("--first", choices=("old", "new"), default="old")
        if mode == "oxigraph":
            p.add_argument("--store", type=Path, required=True)
        else:
            p.add_argument("--bundle", type=Path, required=True)
            p.add_argument("--tmp", type=Path, default=None)
    args = ap.parse_args()
    if args.mode == "child":
        print(json.dumps(child(args.location, args.rules.split(","))))
    elif args.mode == "oxigraph":
        rounds(str(args.store), args.old, args.new, RULES, args.rounds, args.first)
    else:
        sys.path[:0] = [str(HERE.parent / "tests")]
        from virtuoso_server import VirtuosoServer  # (a test helper: tests/ is put on the path here)

        from provgraph.bundle.layout import Bundle
        from provgraph.ingest.run import ingest_paths
        from provgraph.store import open_store

        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            srv = VirtuosoServer(Path(tmp) / "virtuoso").start()
            try:
                bundle = Bundle.open(args.bundle)
                t0 = time.perf_counter()
                ingest_paths(open_store(srv.url), bundle, [bundle.root])
                print(json.dumps({"ingest_seconds": time.perf_counter() - t0}), flush=True)
                rounds(srv.url + "#timeout=3600", args.old, args.new, MODEL_RULES, args.rounds, args.first)
            finally:
                srv.stop()


if __name__ == "__main__":
    main()
