"""The SPARQL server backend against the embedded store, on the same generated bundle.

    .venv/bin/python bench/server.py [--no-oxigraph] [N_CASES ...]  # default 4000 cases x 2 conditions
    .venv/bin/python bench/server.py --scale [--no-oxigraph] [N_CALLS ...]  # bench/bundles.py's scale bundle

Baseline, measured in the same run: the embedded on-disk store. Then a real `oxigraph serve`
on loopback (data on disk): ingest of the whole bundle and the full check with every query
naming its dataset (`dataset=graphs`, the default, safe on a shared server), and the same check
with Oxigraph's union default graph (`#dataset=union`, single-writer only). When Virtuoso is
installed (`virtuoso-t`), the same ingest and check on a private Virtuoso 7 started as the
tests start it (tests/virtuoso_server.py). Reported: wall times and their ratio to the
embedded store, for each size given, and whether each store's verdicts (every rule's outcome
and its number of violations) are the embedded store's.

``--scale`` takes the proportional bundle of ``bench/scale.py`` instead (every clause: cohort
tables, DICOMs and renderings, labels, the statistics), sized in calls; its planned defects
make the gate fail on every store alike.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from bundles import scale_bundle  # noqa: E402  (bench/scale.py's proportional bundle)
from identity import write_bundle  # noqa: E402  (the call-identity bench's bundle generator)
from oxigraph_server import OxigraphServer  # noqa: E402
from virtuoso_server import VirtuosoServer, virtuoso_binaries  # noqa: E402

from provgraph.bundle.layout import Bundle  # noqa: E402
from provgraph.ingest.run import ingest_paths  # noqa: E402
from provgraph.lineage.gate import run_gate  # noqa: E402
from provgraph.rules import load_rules  # noqa: E402
from provgraph.store import open_store  # noqa: E402


def ingest(location: str, root: Path) -> tuple[float, int]:
    store = open_store(location)
    bundle = Bundle.open(root)
    t0 = time.perf_counter()
    results, problems = ingest_paths(store, bundle, [bundle.root])
    took = time.perf_counter() - t0
    assert not problems and all(r.outcome == "imported" for r in results), [r.error for r in results]
    triples = sum(r.triples for r in results)
    store.close()
    return took, triples


#: What a check decided: each rule's outcome and number of violations.
Verdicts = dict[str, tuple[str, int]]


def check(location: str) -> tuple[float, bool, Verdicts]:
    store = open_store(location)
    rules = load_rules()
    t0 = time.perf_counter()
    report = run_gate(store, rules, record=False)
    took = time.perf_counter() - t0
    store.close()
    slowest = sorted(report.results, key=lambda r: r.seconds, reverse=True)[:5]
    print(
        f"{location}: slowest rules " + ", ".join(f"{r.rule.id} {r.seconds:.2f} s" for r in slowest),
        flush=True,
    )
    verdicts = {r.rule.id: (r.outcome, len(r.violations)) for r in report.results}
    return took, report.passed, verdicts


def measure(
    size: int, tmp: Path, oxigraph: bool = True, scale: bool = False
) -> list[tuple[str, float | None, float, bool, str]]:
    root = tmp / "bundle"
    if scale:
        calls = scale_bundle(root, size, log=lambda m: None)["calls"]
    else:
        calls = write_bundle(root, size)
        (root / "baseline" / "calls.jsonl").unlink()  # not part of this comparison
        (root / "baseline").rmdir()
    rows = []
    embedded = str(tmp / "store")
    base_ingest, triples = ingest(embedded, root)
    base_check, passed, base_verdicts = check(embedded)
    rows.append(("embedded (baseline)", base_ingest, base_check, passed, ""))

    def same(verdicts: Verdicts) -> str:
        differ = sorted(r for r in base_verdicts if verdicts.get(r) != base_verdicts[r])
        return "same verdicts" if not differ else "differ: " + ", ".join(differ)

    print(f"embedded: ingest {base_ingest:.2f} s, check {base_check:.2f} s", flush=True)
    if oxigraph:
        server = OxigraphServer(tmp / "oxigraph").start()
        try:
            took, _ = ingest(server.url, root)
            checked, passed_graphs, verdicts = check(server.url)
            rows.append(("oxigraph, dataset=graphs", took, checked, passed_graphs, same(verdicts)))
            checked, passed_union, verdicts = check(server.url + "#dataset=union")
            rows.append(("oxigraph, dataset=union", None, checked, passed_union, same(verdicts)))
        finally:
            server.stop()
    if virtuoso_binaries() is not None:
        virtuoso = VirtuosoServer(tmp / "virtuoso").start()
        try:
            took, _ = ingest(virtuoso.url + "#timeout=3600", root)  # one large source may take minutes
            checked, passed_v, verdicts = check(virtuoso.url + "#timeout=3600")  # a rule may take minutes
            rows.append(("virtuoso 7.2", took, checked, passed_v, same(verdicts)))
        finally:
            virtuoso.stop()
    print(f"{calls} calls, {triples} triples imported")
    print(f"{'store':26s} {'ingest':>9s} {'ratio':>6s} {'check':>9s} {'ratio':>6s}  gate")
    for name, ing, chk, ok, agree in rows:
        ing_text = f"{ing:8.2f}s {ing / base_ingest:5.2f}x" if ing is not None else f"{'':9s} {'':6s}"
        gate = "PASS" if ok else "FAIL"
        print(f"{name:26s} {ing_text} {chk:8.2f}s {chk / base_check:5.2f}x  {gate}  {agree}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Ingest and check one generated bundle on the embedded store (the baseline), "
        "an `oxigraph serve` on loopback and, when installed, a private Virtuoso; print each "
        "store's times, their ratio to the baseline's, and whether its verdicts are the baseline's."
    )
    parser.add_argument(
        "sizes", nargs="*", type=int, default=[4000],
        help="bundle sizes, one run each: cases of the call-identity bundle (x 2 conditions), "
        "or calls with --scale (default: 4000)",
    )  # fmt: skip
    parser.add_argument("--scale", action="store_true", help="bench/scale.py's proportional bundle")
    parser.add_argument("--no-oxigraph", action="store_true", help="leave out the Oxigraph server")
    args = parser.parse_args()
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            measure(size, Path(tmp), not args.no_oxigraph, args.scale)


if __name__ == "__main__":
    main()
