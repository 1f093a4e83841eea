"""The scale benchmark: every step of provgraph on bundles of 10^3 to 10^6 calls, on the embedded
on-disk Oxigraph store and on an rdflib in-memory backend, with same-run baselines.

    .venv/bin/python bench/scale.py                          # 10^3, 10^4, 10^5 calls
    .venv/bin/python bench/scale.py --sizes 1000000          # one size (generation is cached)
    .venv/bin/python bench/scale.py --sizes 1000 --rdflib-sizes 1000 --rdflib-timeout 3600

For each size, the proportional bundle of ``bench/bundles.py`` (10 conditions, one DICOM per
case, 14 candidate labels per call, reference labels, cohort tables, the reported Cochran's Q
and a manuscript quoting it) is generated once under ``--out``. Then each step runs in its own
child process, as the CLI would run it, on a fresh on-disk store; the parent records the wall
time of the step (measured in the child, without interpreter start-up) and the child's peak
resident memory (``os.wait4``):

  ingest     the whole bundle into an empty store (no hash cache)
  reingest   the same again: every source unchanged
  check      the full rule set, first time (includes recomputing the statistics)
  stats      recomputing the statistics (``provgraph stats``)
  lineage    resolve the quoted Q and trace it, with its status (``provgraph lineage Q --no-check``)
  viz        the collapsed whole-graph view, DOT and SVG (``provgraph viz``)
  report     the HTML report (``provgraph report``: the check recorded by ``check`` when it is
             current, else it runs and records it; then the page)
  bulkload   baseline: a bare pyoxigraph bulk load of the same triples (each import graph's
             N-Triples into a fresh on-disk store), the ingest's throughput is compared to it
  bootstrap  once per run, not per size: the cluster bootstrap of 10^4 resamples over 10^6
             clusters, median of 3, beside the whole-row sort it replaced (same run)

Sizes of 10^6 calls and more run ``--large-steps`` (default ingest, check, lineage: what issue
21's targets name at that size). At the end, issue 21's targets are printed met or missed from
this run's figures alone, and written to ``--out/targets.md``.

The rdflib backend (``bench/rdflib_store.py``) runs the same steps in one child process (its
store lives in memory), each step's peak memory taken by resetting the kernel's high-water mark;
it is stopped at ``--rdflib-timeout`` and the steps it finished are reported. Its rule outcomes
are compared with Oxigraph's. Results go to ``--out/results.json`` (appended per run) and are
printed with the machine, the load average around every step, ratios and growth.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import itertools
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
SECRET = "bench-secret-0123456789abcdef0123456789"
STEPS = ("ingest", "reingest", "check", "stats", "lineage", "viz", "report")
LARGE = 1_000_000


# --- steps (run in a child process) -----------------------------------------------------------


def _open(backend: str, store_path: Path):
    if backend == "rdflib":
        from rdflib_store import open_rdflib_store

        return open_rdflib_store()
    from provgraph.store import open_store

    return open_store(store_path)


def run_step(step: str, bundle_root: Path, store, info: dict) -> dict:
    """One step on an open store; returns figures (seconds is the step's own wall time)."""
    from provgraph.bundle.layout import Bundle

    bundle = Bundle.open(bundle_root)
    out: dict = {}
    t0 = time.perf_counter()
    if step in ("ingest", "reingest"):
        from provgraph.ingest.run import ingest_paths

        results, problems = ingest_paths(store, bundle, [bundle.root])
        out["triples"] = sum(r.triples for r in results)
        out["outcomes"] = sorted({r.outcome for r in results})
        out["problems"] = len(problems) + sum(len(r.problems) for r in results)
        out["failed"] = [r.rel for r in results if r.outcome == "failed"]
        if out["failed"]:  # timing a store with sources missing would read as an ingest done
            out["error"] = f"{len(out['failed'])} source(s) failed to import: {', '.join(out['failed'][:3])}"
    elif step == "check":
        from provgraph.lineage.gate import record_check_and_hubs, refresh_derived
        from provgraph.rules import load_rules, run_check

        s0 = time.perf_counter()
        _reset_peak()
        refresh_derived(store)
        out["stats_seconds"] = time.perf_counter() - s0
        out["refresh_peak_mib"] = _peak_mib()  # each phase's own high-water mark
        _reset_peak()
        r0 = time.perf_counter()
        report = run_check(store, load_rules())
        out["rules_seconds"] = time.perf_counter() - r0
        out["rules_peak_mib"] = _peak_mib()
        _reset_peak()
        h0 = time.perf_counter()
        record_check_and_hubs(store, report)  # also walks what lies upstream of each large hub
        out["record_seconds"] = time.perf_counter() - h0
        out["record_peak_mib"] = _peak_mib()
        # resetting the high-water mark also resets the one the kernel reports at exit
        out["phase_peak_mib"] = max(out["refresh_peak_mib"], out["rules_peak_mib"], out["record_peak_mib"])
        out["passed"] = report.passed
        out["rules"] = {
            r.rule.id: [r.outcome, len(r.violations), round(r.seconds, 3)] for r in report.results
        }
    elif step == "stats":
        from provgraph.stats.materialize import refresh

        outcome = refresh(store, force=True)
        out["statistics"] = outcome.statistics
        out["cells"] = outcome.cells
    elif step == "lineage":
        from provgraph.lineage.resolve import resolve
        from provgraph.lineage.show import render_tree
        from provgraph.lineage.trace import trace_many
        from provgraph.store.catalog import base_iri

        # seconds counts the modules' first import too (a fresh process); this does not
        w0 = time.perf_counter()
        base = base_iri(store)
        matches = resolve(store, info["q"], base)
        lineages = trace_many(store, matches)  # as `provgraph lineage` traces a number's matches
        text = "".join(render_tree(lin, base) for lin in lineages)
        out["matches"] = len(matches)
        out["statuses"] = [lin.status for lin in lineages]
        out["nodes"] = [len(lin.nodes) for lin in lineages]
        out["lines"] = text.count("\n")
        out["work_seconds"] = time.perf_counter() - w0
    elif step == "viz":
        from provgraph.views import dot
        from provgraph.views import whole as views

        view = views.whole_graph(store)
        text = dot.to_dot(view)
        if dot.dot_program() is not None:
            dot.render(text, "svg")
        out["boxes"] = len(view.boxes)
        out["dot"] = dot.dot_program() is not None
    elif step == "report":
        from provgraph.lineage.gate import run_gate
        from provgraph.report.html import ReportOptions, build_report
        from provgraph.rules import load_rules
        from provgraph.rules.recorded import read_recorded

        rules = load_rules()
        check = read_recorded(store, rules).report  # as `provgraph report`: the recorded check if current
        out["recorded_check"] = check is not None
        if check is None:
            check = run_gate(store, rules)
        r0 = time.perf_counter()
        page = build_report(store, check, ReportOptions())
        out["page_seconds"] = time.perf_counter() - r0
        out["kib"] = len(page.encode()) // 1024
    else:
        raise SystemExit(f"unknown step {step}")
    out["seconds"] = time.perf_counter() - t0
    return out


def child_main(args: argparse.Namespace) -> None:
    os.environ.setdefault("PROVGRAPH_SECRET", SECRET)
    info = json.loads(args.info) if args.info else {}
    if args.backend == "rdflib":
        # one process for every step: the store lives in memory
        store = _open("rdflib", Path())
        for step in args.step.split(","):
            _reset_peak()
            load = os.getloadavg()
            try:
                out = run_step(step, args.bundle, store, info)
            except Exception as err:
                out = {"error": f"{type(err).__name__}: {err}"[:300]}
            out.update(step=step, peak_mib=_peak_mib(), load=[*load, *os.getloadavg()])
            print(json.dumps(out), flush=True)
        return
    store = _open("oxigraph", args.store)
    load = os.getloadavg()
    out = run_step(args.step, args.bundle, store, info)
    c0 = time.perf_counter()
    store.close()
    out["close_seconds"] = time.perf_counter() - c0
    out.update(step=args.step, load=[*load, *os.getloadavg()])
    print(json.dumps(out), flush=True)


def _reset_peak() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return float("nan")


def bulkload_main(args: argparse.Namespace) -> None:
    """Baseline: load the N-Triples files of ``--nt-dir`` into a fresh store at ``--target``."""
    import pyoxigraph as ox

    target = Path(args.target)
    if target.exists() and any(target.iterdir()):
        # removed after the run: never a folder that holds something else (a bundle, a store)
        sys.exit(f"bulkload: {target} is not empty; give a new folder for the baseline store")
    files = sorted(Path(args.nt_dir).glob("*.nt"))
    if not files:
        sys.exit(f"bulkload: no *.nt files in {args.nt_dir}")
    store = ox.Store(str(target))
    load = os.getloadavg()
    t0 = time.perf_counter()
    for i, nt in enumerate(files):
        store.bulk_load(
            path=str(nt), format=ox.RdfFormat.N_TRIPLES, to_graph=ox.NamedNode(f"urn:g:{i}"), lenient=True
        )
    store.flush()
    seconds = time.perf_counter() - t0
    triples = len(store)
    print(
        json.dumps(
            {"step": "bulkload", "seconds": seconds, "triples": triples, "load": [*load, *os.getloadavg()]}
        )
    )
    del store
    shutil.rmtree(target, ignore_errors=True)


def bootstrap_main(args: argparse.Namespace) -> None:
    """Baseline and target: the cluster bootstrap over 10^6 clusters (bench/stats_bench.py's [3])."""
    import numpy as np
    from stats_bench import _boot, _rows_unique_bootstrap, timed

    rng = np.random.default_rng(2021)
    sizes = rng.integers(1, 15, size=1_000_000)
    successes = rng.binomial(sizes, 0.72)
    load = os.getloadavg()
    old_s, (low, high) = timed(lambda: _rows_unique_bootstrap(successes, sizes, 10_000, 7))
    new_s, new = timed(lambda: _boot(successes, sizes, 10_000, "auto"))
    same = low.tobytes() == new.low.tobytes() and high.tobytes() == new.high.tobytes()
    print(
        json.dumps(
            {
                "step": "bootstrap",
                "seconds": new_s,
                "baseline_seconds": old_s,
                "identical": same,
                "load": [*load, *os.getloadavg()],
            }
        )
    )


# --- the parent -------------------------------------------------------------------------------


def spawn(
    argv: list[str], timeout: float | None = None, env: dict[str, str] | None = None
) -> tuple[list[dict], float, float, int]:
    """Run a child; returns (its JSON lines, parent-side wall seconds, peak RSS MiB, status)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), *argv], stdout=subprocess.PIPE, text=True, env=env
    )
    lines: list[dict] = []
    deadline = time.monotonic() + timeout if timeout else None
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
    buf = ""
    while True:
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        if deadline is not None and wait == 0.0:
            proc.kill()
            break
        events = sel.select(timeout=min(wait, 5.0) if wait is not None else 5.0)
        if not events:
            if proc.poll() is not None:
                break
            continue
        chunk = os.read(proc.stdout.fileno(), 65536).decode()  # type: ignore[union-attr]
        if not chunk:
            break
        buf += chunk
        while "\n" in buf:
            line, buf = buf.split("\n", 1)
            if line.strip().startswith("{"):
                lines.append(json.loads(line))
    _, status, usage = os.wait4(proc.pid, 0)
    return lines, time.perf_counter() - t0, usage.ru_maxrss / 1024, status


def machine() -> dict:
    import pyoxigraph
    import rdflib

    mem = next(
        (
            int(line.split()[1]) // 1024
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        ),
        0,
    )
    df = (
        subprocess.run(["df", "-hT", str(HERE)], capture_output=True, text=True)
        .stdout.splitlines()[-1]
        .split()
    )
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "ram_mib": mem,
        "disk": f"{df[1]} {df[2]} total, {df[4]} free" if len(df) > 4 else "?",
        "python": platform.python_version(),
        "pyoxigraph": pyoxigraph.__version__,
        "rdflib": rdflib.__version__,
        "platform": platform.platform(),
    }


def generate(root: Path, calls: int, pixel: bool) -> dict:
    marker = root / ".generated.json"
    if marker.is_file():
        return json.loads(marker.read_text())
    from bundles import scale_bundle

    shutil.rmtree(root, ignore_errors=True)
    t0 = time.perf_counter()
    summary = scale_bundle(root, calls, pixel=pixel, log=lambda m: print(m, flush=True))
    summary["generate_seconds"] = time.perf_counter() - t0
    summary["files"] = sum(1 for _ in root.rglob("*") if _.is_file())
    summary["bytes"] = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    marker.write_text(json.dumps(summary))
    return summary


def dump_graphs(store_path: Path, folder: Path) -> int:
    """Write each current import graph of the store as N-Triples (for the bulk-load baseline)."""
    import pyoxigraph as ox

    from provgraph.store import catalog
    from provgraph.store.oxigraph import OxigraphStore

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    store = OxigraphStore(store_path)
    n = 0
    for i, slot in enumerate(s for s in catalog.slots(store) if s.key.startswith("import:")):
        with (folder / f"{i:04d}.nt").open("wb") as fh:
            store._ox.dump(fh, format=ox.RdfFormat.N_TRIPLES, from_graph=ox.NamedNode(slot.graph))
        n += 1
    store.close()
    return n


def run_size(calls: int, args: argparse.Namespace, results: dict) -> None:
    out = args.out
    root = out / f"bundle-{calls}"
    print(f"\n=== {calls} calls", flush=True)
    summary = generate(root, calls, not args.no_pixel)
    print(f"bundle: {summary}", flush=True)
    info = json.dumps({"q": summary["q"]})
    entry: dict = {"calls": summary["calls"], "bundle": summary, "oxigraph": {}, "rdflib": {}}
    results["sizes"][str(calls)] = entry
    store = out / f"store-{calls}"
    shutil.rmtree(store, ignore_errors=True)
    shutil.rmtree(root / ".provgraph", ignore_errors=True)  # no hash cache: a cold first ingest
    for step in args.large_steps if calls >= LARGE else args.steps:
        lines, wall, peak, status = spawn(
            ["step", step, "--bundle", str(root), "--store", str(store), "--info", info]
        )
        fig = lines[-1] if lines else {"error": f"exit status {status}"}
        fig.update(process_seconds=wall, peak_mib=max(peak, fig.get("phase_peak_mib", 0)))
        entry["oxigraph"][step] = fig
        print(_line("oxigraph", step, fig), flush=True)
        save(args, results)
        if step == "ingest" and "error" in fig:
            print(f"ingest failed, the other steps of {calls} calls are not run: {fig['error']}", flush=True)
            return
    entry["store_bytes"] = _du(store)
    entry["quads"] = _quads(store)
    # the bare bulk-load baseline over the same triples
    nts = out / f"nt-{calls}"
    dump_graphs(store, nts)
    shutil.rmtree(out / f"bare-{calls}", ignore_errors=True)  # a stopped run's leftover
    lines, wall, peak, status = spawn(
        ["bulkload", "--target", str(out / f"bare-{calls}"), "--nt-dir", str(nts)]
    )
    fig = lines[-1] if lines else {"error": f"exit status {status}"}
    fig.update(process_seconds=wall, peak_mib=peak)
    entry["oxigraph"]["bulkload"] = fig
    print(_line("oxigraph", "bulkload", fig), flush=True)
    shutil.rmtree(nts, ignore_errors=True)
    if not args.keep:
        shutil.rmtree(store, ignore_errors=True)
        shutil.rmtree(root / ".provgraph", ignore_errors=True)
    if calls in args.rdflib_sizes:
        shutil.rmtree(root / ".provgraph", ignore_errors=True)  # no hash cache: a cold ingest
        print(f"rdflib (timeout {args.rdflib_timeout:.0f} s)...", flush=True)
        lines, wall, peak, status = spawn(
            [
                "step",
                ",".join(STEPS),
                "--backend",
                "rdflib",
                "--bundle",
                str(root),
                "--store",
                "-",
                "--info",
                info,
            ],
            timeout=args.rdflib_timeout,
        )
        for fig in lines:
            entry["rdflib"][fig["step"]] = fig
            print(_line("rdflib", fig["step"], fig), flush=True)
        entry["rdflib_process"] = {
            "seconds": wall,
            "peak_mib": peak,
            "status": status,
            "finished": len(lines),
        }
        if len(lines) < len(STEPS):
            print(
                f"rdflib stopped after {wall:.0f} s: {len(lines)} of {len(STEPS)} steps finished", flush=True
            )
        shutil.rmtree(root / ".provgraph", ignore_errors=True)
    save(args, results)


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _quads(store: Path) -> int | None:
    try:
        import pyoxigraph as ox

        return len(ox.Store.read_only(str(store)))
    except (OSError, ValueError):
        return None


def _line(backend: str, step: str, fig: dict) -> str:
    if "error" in fig:
        return f"  {backend:8} {step:9} ERROR {fig['error']}"
    extra = {
        k: v
        for k, v in fig.items()
        if k not in ("step", "seconds", "load", "rules", "process_seconds", "peak_mib")
    }
    load = fig.get("load", [0, 0, 0, 0, 0, 0])
    return (
        f"  {backend:8} {step:9} {fig['seconds']:9.2f} s  peak {fig.get('peak_mib', 0):7.0f} MiB  "
        f"load {load[0]:.2f}->{load[3]:.2f}  {json.dumps(extra)[:160]}"
    )


def save(args: argparse.Namespace, results: dict) -> None:
    path = args.out / "results.json"
    runs = json.loads(path.read_text()) if path.is_file() else []
    runs = [r for r in runs if r.get("started") != results["started"]] + [results]
    path.write_text(json.dumps(runs, indent=1))


def summarise(results: dict) -> None:
    sizes = sorted(results["sizes"].values(), key=lambda e: e["calls"])
    print("\n=== summary (seconds; peak MiB; x = rdflib / oxigraph, same run)")
    print(f"machine: {json.dumps(results['machine'])}")
    for e in sizes:
        ox_ = e["oxigraph"]
        print(
            f"\n{e['calls']} calls, {e.get('quads')} quads, store {e.get('store_bytes', 0) / 2**30:.2f} GiB"
        )
        ingest, bare = ox_.get("ingest", {}), ox_.get("bulkload", {})
        if "triples" in ingest and "triples" in bare:
            rate, bare_rate = ingest["triples"] / ingest["seconds"], bare["triples"] / bare["seconds"]
            print(
                f"  ingest {rate:,.0f} triples/s end to end; bare bulk load {bare_rate:,.0f} triples/s; "
                f"ratio {rate / bare_rate:.2f}"
            )
        if "check" in ox_ and "seconds" in ox_["check"]:
            c = ox_["check"]
            print(
                f"  full check {c['seconds']:.1f} s (statistics {c.get('stats_seconds', 0):.1f} s, "
                f"recording and hub summaries {c.get('record_seconds', 0):.1f} s, rules "
                f"{c['seconds'] - c.get('stats_seconds', 0) - c.get('record_seconds', 0):.1f} s)"
            )
        for step in (*STEPS, "bulkload"):
            a, b = ox_.get(step, {}), e["rdflib"].get(step, {})
            if "seconds" not in a:
                continue
            ratio = f"x{b['seconds'] / a['seconds']:.1f}" if "seconds" in b else "-"
            rb = f"{b['seconds']:9.2f} {b.get('peak_mib', 0):6.0f}" if "seconds" in b else " " * 16
            print(f"  {step:9} {a['seconds']:9.2f} {a.get('peak_mib', 0):6.0f}   rdflib {rb}  {ratio}")
        if "check" in e["rdflib"] and "rules" in e["rdflib"]["check"] and "rules" in ox_.get("check", {}):
            a, b = ox_["check"]["rules"], e["rdflib"]["check"]["rules"]
            diff = [k for k in a if k in b and a[k][:2] != b[k][:2]]
            print(f"  rule outcomes that differ between the backends: {diff or 'none'}")
    for a, b in itertools.pairwise(sizes):
        f = b["calls"] / a["calls"]
        growth = {
            s: round(b["oxigraph"][s]["seconds"] / a["oxigraph"][s]["seconds"] / f, 2)
            for s in (*STEPS, "bulkload")
            if "seconds" in a["oxigraph"].get(s, {}) and "seconds" in b["oxigraph"].get(s, {})
        }
        print(f"growth {a['calls']} -> {b['calls']} (time ratio / size ratio, 1.0 = linear): {growth}")


def _fig(results: dict, calls: int, step: str) -> dict:
    return results["sizes"].get(str(calls), {}).get("oxigraph", {}).get(step, {})


def _ingest_ratio(results: dict, calls: int) -> float | None:
    ingest, bare = _fig(results, calls, "ingest"), _fig(results, calls, "bulkload")
    if "triples" not in ingest or "triples" not in bare:
        return None
    return (ingest["triples"] / ingest["seconds"]) / (bare["triples"] / bare["seconds"])


def _growth(results: dict, step: str, small: int, large: int) -> float | None:
    a, b = _fig(results, small, step), _fig(results, large, step)
    if "seconds" not in a or "seconds" not in b:
        return None
    return b["seconds"] / a["seconds"] / (large / small)


def targets_table(results: dict) -> str:
    """Issue 21's targets, each met or missed from this run's figures (n/m: not measured).

    "Linear" is read as a growth of at most 1.25 (time ratio over size ratio, 10^4 -> 10^5)."""

    def mark(ok: bool | None) -> str:
        return "not measured" if ok is None else ("**met**" if ok else "**missed**")

    rows = []
    for calls in (100_000, 1_000_000):
        r = _ingest_ratio(results, calls)
        rows.append(
            (
                f"ingest >= 0.8x bare bulk load at {calls:,}",
                "-" if r is None else f"{r:.2f}x",
                mark(None if r is None else r >= 0.8),
            )
        )
    c5, c6 = _fig(results, 100_000, "check"), _fig(results, 1_000_000, "check")
    rows.append(
        (
            "check at 100,000 <= 60 s",
            f"{c5['seconds']:.1f} s" if "seconds" in c5 else "-",
            mark(c5["seconds"] <= 60 if "seconds" in c5 else None),
        )
    )
    rows.append(
        (
            "check at 1,000,000 <= 600 s, peak <= 2 GiB",
            f"{c6['seconds']:.0f} s, {c6['peak_mib'] / 1024:.2f} GiB" if "seconds" in c6 else "-",
            mark(c6["seconds"] <= 600 and c6["peak_mib"] <= 2048 if "seconds" in c6 else None),
        )
    )
    for step in ("report", "viz"):
        f, g = _fig(results, 100_000, step), _growth(results, step, 10_000, 100_000)
        shown = f"{f['seconds']:.1f} s" if "seconds" in f else "-"
        shown += f", growth {g:.2f}" if g is not None else ""
        rows.append(
            (
                f"{step} at 100,000 <= 30 s and linear",
                shown,
                mark(f["seconds"] <= 30 and (g is None or g <= 1.25) if "seconds" in f else None),
            )
        )
    lin = _fig(results, 1_000_000, "lineage")
    rows.append(
        (
            "lineage of one number at 1,000,000 <= 0.2 s",
            f"{lin['seconds']:.3f} s" if "seconds" in lin else "-",
            mark(lin["seconds"] <= 0.2 if "seconds" in lin else None),
        )
    )
    boot = results.get("bootstrap", {})
    rows.append(
        (
            "cluster bootstrap 10^4 x 10^6 <= 0.5 s",
            f"{boot['seconds']:.3f} s (whole-row sort {boot['baseline_seconds']:.2f} s)"
            if "seconds" in boot
            else "-",
            mark(boot["seconds"] <= 0.5 if "seconds" in boot else None),
        )
    )
    out = [f"Issue 21 targets, run of {results['started']}", "", "| target | measured | |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    step = sub.add_parser("step")
    step.add_argument("step")
    step.add_argument("--bundle", type=Path, required=True)
    step.add_argument("--store", type=Path, required=True)
    step.add_argument("--backend", default="oxigraph", choices=("oxigraph", "rdflib"))
    step.add_argument("--info", default="")
    bulk = sub.add_parser("bulkload")
    bulk.add_argument("--nt-dir", required=True, help="a folder of N-Triples files, one per graph")
    bulk.add_argument("--target", required=True, help="a new folder for the baseline store (removed after)")
    sub.add_parser("bootstrap")
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--rdflib-sizes", default="1000,10000")
    ap.add_argument("--rdflib-timeout", type=float, default=1800)
    ap.add_argument("--out", type=Path, default=HERE / "out" / "scale")
    ap.add_argument("--no-pixel", action="store_true", help="no DICOM, renderings or pixel clause")
    ap.add_argument("--keep", action="store_true", help="keep the stores")
    ap.add_argument(
        "--large-steps",
        default="ingest,check,lineage",
        help=f"steps at {LARGE:,} calls and more (default ingest,check,lineage)",
    )
    ap.add_argument("--no-bootstrap", action="store_true", help="leave out the bootstrap step")
    ap.add_argument(
        "--steps",
        default=",".join(STEPS),
        help=f"steps on the Oxigraph store, in order (default {','.join(STEPS)}; ingest is needed first)",
    )
    args = ap.parse_args()
    if args.cmd == "step":
        return child_main(args)
    if args.cmd == "bulkload":
        return bulkload_main(args)
    if args.cmd == "bootstrap":
        return bootstrap_main(args)
    args.out.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    args.steps = [s for s in args.steps.split(",") if s]
    args.large_steps = [s for s in args.large_steps.split(",") if s]
    if unknown := set(args.steps + args.large_steps) - set(STEPS):
        ap.error(f"unknown steps: {', '.join(sorted(unknown))}")
    args.rdflib_sizes = [int(s) for s in args.rdflib_sizes.split(",") if s]
    results = {
        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "sizes": {},
    }
    print(json.dumps(results["machine"]), flush=True)
    for calls in sizes:
        run_size(calls, args, results)
    if not args.no_bootstrap:
        lines, wall, peak, status = spawn(["bootstrap"])
        results["bootstrap"] = lines[-1] if lines else {"error": f"exit status {status}"}
        results["bootstrap"].update(process_seconds=wall, peak_mib=peak)
        save(args, results)
    summarise(results)
    text = targets_table(results)
    print("\n" + text)
    (args.out / "targets.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
