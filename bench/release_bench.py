"""Release-clause timings, each against a baseline measured in the same run.

    .venv/bin/python bench/release_bench.py [--texts 200] [--lines 50]

1. Ingest of Markdown texts with the ``texts`` importer (numbers -> claims, registry mentions)
   against the same files inventoried by the ``files`` importer (path, size, sha256 only).
2. ``lineage.trace`` of a claim (BFS over lineage properties, node descriptions, violations,
   status) against one SPARQL property-path query that only lists the reachable nodes.
3. ``release build``'s deterministic zip writer against ``shutil.make_archive`` (stdlib zip,
   not deterministic) over the same files.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "fixtures"))
sys.path.insert(0, str(REPO / "tests"))

from make_release import make_bundle  # noqa: E402

from provgraph.bundle.layout import Bundle  # noqa: E402
from provgraph.ingest.run import ingest_paths  # noqa: E402
from provgraph.lineage.gate import run_gate  # noqa: E402
from provgraph.lineage.model import LINEAGE_ROOTS  # noqa: E402
from provgraph.lineage.resolve import resolve  # noqa: E402
from provgraph.lineage.trace import trace  # noqa: E402
from provgraph.release.builder import write_zip  # noqa: E402
from provgraph.rules import load_rules  # noqa: E402
from provgraph.store import open_store  # noqa: E402

HEAD = '[project]\nname = "bench"\nbase_iri = "https://example.org/bench/"\n'
RELEASE = '\n[release]\ninclude = ["texts/*"]\n[[release.values]]\nname = "cochran_q"\nvalue = "182.29"\n'


def write_texts(root: Path, n: int, lines: int) -> None:
    folder = root / "texts"
    folder.mkdir(parents=True)
    for i in range(n):
        body = [
            f"Section {i}.{j}: Cochran Q = 182.29, p < 0.05 in 27/45 pairs (60.0%), kappa 0.{j:02d}."
            for j in range(lines)
        ]
        (folder / f"t{i:04d}.md").write_text("\n".join(body) + "\n")


def timed(fn, repeat: int = 3) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def bench_ingest(tmp: Path, n: int, lines: int) -> tuple[float, float, int]:
    claims_root, files_root = tmp / "claims", tmp / "files"
    for root, contract in ((claims_root, HEAD + RELEASE), (files_root, HEAD)):
        write_texts(root, n, lines)
        (root / "provgraph.toml").write_text(contract)

    def run(root: Path) -> None:
        store = open_store(None)
        ingest_paths(store, Bundle.open(root), [root])
        store.close()

    store = open_store(None)
    ingest_paths(store, Bundle.open(claims_root), [claims_root])
    count = len(store.select("SELECT ?c WHERE { ?c a <https://w3id.org/provgraph/ns#Claim> }"))
    return timed(lambda: run(claims_root)), timed(lambda: run(files_root)), count


def bench_lineage(tmp: Path) -> tuple[float, float, int]:
    root = make_bundle(tmp / "lineage")
    store = open_store(None)
    ingest_paths(store, Bundle.open(root), [root])
    run_gate(store, load_rules())
    iri = resolve(store, "tables/table2.md:3")[0]
    nodes = len(trace(store, iri).nodes)
    alt = "|".join(f"<{p}>" for p in LINEAGE_ROOTS)
    query = f"SELECT DISTINCT ?n WHERE {{ <{iri}> ({alt})* ?n }}"
    return timed(lambda: trace(store, iri), 20), timed(lambda: store.select(query), 20), nodes


def bench_zip(tmp: Path) -> tuple[float, float, int]:
    src = tmp / "zipsrc"
    src.mkdir()
    payload = ("Q = 182.29\n" * 2000).encode()
    files = []
    for i in range(200):
        path = src / f"f{i:03d}.txt"
        path.write_bytes(payload + str(i).encode())
        files.append((path.name, path))
    total = sum(p.stat().st_size for _, p in files)
    ours = timed(lambda: write_zip(tmp / "out" / "x.zip", files, (1980, 1, 1, 0, 0, 0)))
    base = timed(lambda: shutil.make_archive(str(tmp / "base"), "zip", src))
    return ours, base, total


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--lines", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        claims, files, count = bench_ingest(t, args.texts, args.lines)
        print(
            f"ingest {args.texts} texts x {args.lines} lines ({count} claims): "
            f"texts importer {claims:.2f} s, "
            f"files importer {files:.2f} s, ratio {claims / files:.1f}x ({count / claims:,.0f} claims/s)"
        )
        ours, base, nodes = bench_lineage(t)
        print(
            f"lineage of one table claim ({nodes} nodes): trace {ours * 1000:.1f} ms, reachability query "
            f"{base * 1000:.1f} ms, ratio {ours / base:.1f}x"
        )
        ours, base, total = bench_zip(t)
        print(
            f"release zip of 200 files ({total / 1e6:.1f} MB): deterministic writer {ours * 1000:.0f} ms, "
            f"shutil.make_archive {base * 1000:.0f} ms, ratio {ours / base:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
