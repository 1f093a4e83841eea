"""Peak memory and time of the statistics refresh, this tree against a baseline revision of the
package in the same run (issue 21: statistics keyed by integer codes).

    .venv/bin/python bench/stats_memory.py --calls 100000             # generate + ingest once
    .venv/bin/python bench/stats_memory.py --calls 1000000 --baseline main --rounds 1

The proportional bundle of ``bench/bundles.py`` (``scale_bundle``, without DICOM: the statistics
do not read pixels) is generated and ingested once under ``--out``. Each measurement is
``materialize.refresh(store, force=True)`` (what ``provgraph stats`` runs) in its own child
process: the baseline's package (``git archive`` of ``--baseline``) or this tree's, interleaved
round by round. A child reports the refresh's wall time and its peak resident memory (the
kernel's high-water mark, reset just before the refresh, so interpreter and store start-up are
not counted); a separate child per side takes the Python heap's peak (``tracemalloc``, which
slows the refresh, so its time is not used). Every child also hashes the statistics graph it
wrote (sorted N-Triples without the recomputation's timestamp): the two sides must write the
same graph, and the script fails when they do not.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SECRET = "bench-secret-0123456789abcdef0123456789"


def _peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(args: argparse.Namespace) -> None:
    """One refresh on the store, in this process; prints its figures as one JSON line."""
    import tracemalloc

    import pyoxigraph as ox

    import provgraph
    from provgraph.stats import materialize
    from provgraph.store import catalog, open_store

    store = open_store(args.store)
    if args.tracemalloc:
        tracemalloc.start()
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark
    t0 = time.perf_counter()
    if args.phase == "compute":
        # only reading the grid and computing its statistics (no graph written)
        from provgraph.stats.cells import build_grid
        from provgraph.stats.compute import compute

        base, annotation, analysis = materialize.settings(store)
        grid = build_grid(store, base, annotation, analysis)
        n = len(compute(grid, analysis, base).stats)  # type: ignore[arg-type]
        print(json.dumps({"seconds": time.perf_counter() - t0, "peak_mib": _peak_mib(), "statistics": n}))
        store.close()
        return
    outcome = materialize.refresh(store, force=True)
    seconds = time.perf_counter() - t0
    peak = _peak_mib()
    heap = tracemalloc.get_traced_memory()[1] / 2**20 if args.tracemalloc else None
    tracemalloc.stop()
    slot = catalog.current(store, materialize.SLOT)
    buf = io.BytesIO()
    store.dump(buf, ox.RdfFormat.N_TRIPLES, slot.graph)  # type: ignore[union-attr]
    lines = sorted(x for x in buf.getvalue().split(b"\n") if x and b"endedAtTime" not in x)
    store.close()
    print(
        json.dumps(
            {
                "package": str(Path(provgraph.__file__).parent),
                "seconds": seconds,
                "peak_mib": peak,
                "heap_mib": heap,
                "statistics": outcome.statistics,
                "cells": outcome.cells,
                "triples": len(lines),
                "graph_sha256": hashlib.sha256(b"\n".join(lines)).hexdigest(),
            }
        ),
        flush=True,
    )


def run_child(package_root: Path, store: Path, heap: bool, phase: str = "refresh") -> dict:
    env = dict(os.environ, PYTHONPATH=str(package_root), PROVGRAPH_SECRET=SECRET)
    argv = [sys.executable, str(Path(__file__).resolve()), "child", "--store", str(store), "--phase", phase]
    out = subprocess.run(
        [*argv, *(["--tracemalloc"] if heap else [])], env=env, capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(f"child failed ({package_root}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def prepare(out: Path, calls: int) -> Path:
    """The bundle generated and ingested once (reused while its marker exists)."""
    store = out / f"store-{calls}"
    marker = out / f"store-{calls}.json"
    if marker.is_file():
        return store
    sys.path.insert(0, str(HERE))
    from bundles import scale_bundle

    bundle = out / f"bundle-{calls}"
    shutil.rmtree(bundle, ignore_errors=True)
    shutil.rmtree(store, ignore_errors=True)
    summary = scale_bundle(bundle, calls, pixel=False, log=lambda m: print(m, flush=True))
    env = dict(os.environ, PYTHONPATH=str(REPO), PROVGRAPH_SECRET=SECRET)
    step = [
        sys.executable,
        str(HERE / "scale.py"),
        "step",
        "ingest",
        "--bundle",
        str(bundle),
        "--store",
        str(store),
    ]
    subprocess.run(step, env=env, check=True)
    marker.write_text(json.dumps(summary))
    return store


def baseline_tree(ref: str, into: Path) -> Path:
    """The ``provgraph`` package as it is at ``ref``, extracted under ``into``."""
    data = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", ref, "provgraph"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def examples(ref: str) -> None:
    """Each example twin generated, ingested, and its statistics graph written by both sides:
    the digests must agree."""
    import importlib.util

    os.environ.setdefault("PROVGRAPH_SECRET", SECRET)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with tempfile.TemporaryDirectory(prefix="stats-examples-") as tmp:
        old = baseline_tree(ref, Path(tmp) / "baseline")
        for name in ("cxr_pilot", "llm_review"):
            path = REPO / "examples" / name / "generate.py"
            spec = importlib.util.spec_from_file_location(f"ex_{name}", path)
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            sys.modules[spec.name] = module  # type: ignore[union-attr]
            spec.loader.exec_module(module)  # type: ignore[union-attr]
            for twin in ("flawed", "clean"):
                root = Path(tmp) / f"{name}-{twin}"
                module.generate(root, twin)
                ingest = [sys.executable, "-m", "provgraph", "-C", str(root), "-q", "ingest"]
                subprocess.run(ingest, env=env, check=True, capture_output=True)
                store = root / ".provgraph" / "store"
                a, b = run_child(old, store, heap=False), run_child(REPO, store, heap=False)
                same = a["graph_sha256"] == b["graph_sha256"]
                print(f"  {name} {twin}: {b['statistics']} statistics, {b['triples']} triples, same: {same}")
                if not same:
                    raise SystemExit(f"{name} {twin}: the two sides wrote different statistics graphs")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    c = sub.add_parser("child")
    c.add_argument("--store", type=Path, required=True)
    c.add_argument("--tracemalloc", action="store_true")
    c.add_argument("--phase", default="refresh", choices=("refresh", "compute"))
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--store", type=Path, help="an ingested store to use instead of generating one")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "stats_memory")
    ap.add_argument("--baseline", default="main", help="git revision of the baseline package")
    ap.add_argument("--rounds", type=int, default=2, help="timed rounds per side (interleaved)")
    ap.add_argument("--examples", action="store_true", help="only: the examples' statistics, both sides")
    args = ap.parse_args()
    if args.cmd == "child":
        child(args)
        return
    if args.examples:
        examples(args.baseline)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    store = args.store or prepare(args.out, args.calls)
    print(f"store {store}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory(prefix="stats-baseline-") as tmp:
        sides = {"baseline": baseline_tree(args.baseline, Path(tmp)), "this tree": REPO}
        runs: dict[str, list[dict]] = {name: [] for name in sides}
        heaps: dict[str, dict] = {}
        for _ in range(args.rounds):
            for name, root in sides.items():
                fig = run_child(root, store, heap=False)
                runs[name].append(fig)
                print(f"  {name:10} {fig['seconds']:7.1f} s  peak {fig['peak_mib']:7.0f} MiB", flush=True)
        computing: dict[str, dict] = {}
        for name, root in sides.items():
            computing[name] = fig = run_child(root, store, heap=False, phase="compute")
            print(
                f"  {name:10} grid + statistics only {fig['seconds']:6.1f} s  peak {fig['peak_mib']:6.0f} MiB"
            )
        for name, root in sides.items():
            heaps[name] = run_child(root, store, heap=True)
            print(f"  {name:10} Python heap peak {heaps[name]['heap_mib']:7.0f} MiB", flush=True)
    digests = {f["graph_sha256"] for side in runs.values() for f in side} | {
        h["graph_sha256"] for h in heaps.values()
    }
    best = {name: min(figs, key=lambda f: f["seconds"]) for name, figs in runs.items()}
    peak = {name: min(f["peak_mib"] for f in figs) for name, figs in runs.items()}
    old, new = "baseline", "this tree"
    print(
        f"\nrefresh, {best[new]['cells']:,} cells, {best[new]['statistics']} statistics, "
        f"{best[new]['triples']:,} triples written\n"
        f"  time       {best[old]['seconds']:7.1f} s -> {best[new]['seconds']:7.1f} s  "
        f"({best[new]['seconds'] / best[old]['seconds']:.2f}x)\n"
        f"  peak RSS   {peak[old]:7.0f} MiB -> {peak[new]:7.0f} MiB  ({peak[new] / peak[old]:.2f}x)\n"
        f"  heap peak  {heaps[old]['heap_mib']:7.0f} MiB -> {heaps[new]['heap_mib']:7.0f} MiB  "
        f"({heaps[new]['heap_mib'] / heaps[old]['heap_mib']:.2f}x)\n"
        f"  grid + statistics: {computing[old]['seconds']:.1f} s / {computing[old]['peak_mib']:.0f} MiB -> "
        f"{computing[new]['seconds']:7.1f} s / {computing[new]['peak_mib']:.0f} MiB "
        f"({computing[new]['peak_mib'] / computing[old]['peak_mib']:.2f}x peak)\n"
        f"  same statistics graph: {len(digests) == 1}"
    )
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    (args.out / "results.json").open("a").write(
        json.dumps(
            {
                "calls": args.calls,
                "runs": runs,
                "heaps": heaps,
                "computing": computing,
                "same_graph": len(digests) == 1,
            }
        )
        + "\n"
    )
    if len(digests) != 1:
        raise SystemExit("the two sides wrote different statistics graphs")


if __name__ == "__main__":
    main()
