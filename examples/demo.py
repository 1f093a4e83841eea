"""The README's main job: the radiology pilot replica, end to end.

Generates ``examples/cxr_pilot`` into ``demo-out/`` (the repository stays clean), then runs the
real CLI on it: ingest, check (the failure classes grouped by clause), stats (keyed against
positional), the lineage of one published number with its claim status, the HTML report and
the picture of the graph; and finally ingest and check on the clean twin. Exits 0 when the
gate blocks the flawed twin and passes the clean one, as it should.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "demo-out"  # --out changes it
CLI = [sys.executable, "-m", "provgraph"]
WIDTH = 100


def heading(number: int, title: str, what: str) -> None:
    print(f"\n{'=' * WIDTH}\n{number}. {title}\n{'=' * WIDTH}")
    print(textwrap.fill(what, WIDTH))


def rel(path: Path | str) -> str:
    """A path as the user would type it from the current folder."""
    path = Path(path)
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def shown(arg: str) -> str:
    if " " not in arg:
        return rel(arg) if arg.startswith("/") else arg
    return "'" + (arg if len(arg) <= 70 else arg[:67] + "...") + "'"


def run(*args: str, show: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``provgraph ARGS``; print the command (and its output when ``show``)."""
    print(f"\n$ provgraph {' '.join(shown(a) for a in args)}", flush=True)
    done = subprocess.run([*CLI, *args], capture_output=True, text=True)
    if show or done.returncode >= 2:
        print(textwrap.indent((done.stdout + done.stderr).rstrip(), "  "))
    if done.returncode >= 2:  # a usage, input or internal error: not what the demo shows
        raise SystemExit(
            f"demo FAILED: provgraph {args[2] if len(args) > 2 else ''} exited {done.returncode}"
        )
    return done


def bullet(text: str, indent: int = 2) -> None:
    print(
        textwrap.fill(text, WIDTH, initial_indent=" " * indent + "- ", subsequent_indent=" " * (indent + 2))
    )


def query(bundle: Path, sparql: str) -> list[dict[str, str]]:
    done = run("-C", str(bundle), "query", "--format", "json", " ".join(sparql.split()))
    return [{k: v["value"] for k, v in row.items()} for row in json.loads(done.stdout)["results"]["bindings"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=OUT, help=f"working folder, replaced (default: {rel(OUT)})"
    )
    out = parser.parse_args(argv).out.resolve()
    started = time.monotonic()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    flawed, clean = out / "cxr_pilot" / "flawed", out / "cxr_pilot" / "clean"

    heading(
        1,
        "Generate the radiology pilot replica",
        "A small, fully synthetic copy of the chest-radiograph VLM pilot whose forensic audit "
        "found a prompt that never changed, images shown with reversed polarity, empty outputs "
        "logged ok, truncated label extraction, a positional join and stale released numbers. "
        "flawed/ is the pilot as audited, clean/ the same pilot with every defect repaired. "
        "Nothing below reads the generator: every number comes from provgraph's graph.",
    )
    print(f"\n$ python {rel(HERE / 'cxr_pilot' / 'generate.py')} --out {rel(out / 'cxr_pilot')}")
    generate = [sys.executable, str(HERE / "cxr_pilot" / "generate.py"), "--out", str(out / "cxr_pilot")]
    subprocess.run(generate, check=True, stdout=subprocess.DEVNULL)

    heading(
        2,
        "Ingest the flawed twin",
        "Every artifact (MIMIC tables, cohort manifest, DICOM headers, rendering records, "
        "prompts, call plan and records, label cache, reference labels, reported statistics, "
        "manuscript, build records, the released zip) becomes one PROV graph.",
    )
    done = run("-C", str(flawed), "ingest")
    print("  " + done.stdout.strip().splitlines()[-1])
    (cohort,) = query(
        flawed,
        """SELECT (COUNT(DISTINCT ?case) AS ?studies) (COUNT(DISTINCT ?patient) AS ?patients) WHERE {
             ?e a pg:CohortEntry ; pg:included true ; pg:case ?case ; pg:patient ?patient }""",
    )
    views = query(
        flawed,
        """SELECT ?view (COUNT(?d) AS ?n) WHERE { ?d a pg:DicomFile ; pg:viewPosition ?view }
           GROUP BY ?view ORDER BY DESC(?n)""",
    )
    outputs = query(
        flawed,
        """SELECT ?state (COUNT(?call) AS ?n) WHERE {
             ?call a pg:PlannedCall . ?r pg:forCall ?call ; pg:status "ok" ; pg:outputFile ?f .
             OPTIONAL { ?f pg:byteSize ?size }
             BIND(IF(!BOUND(?size), "missing", IF(?size = 0, "zero-byte", "nonempty")) AS ?state)
           } GROUP BY ?state ORDER BY DESC(?n)""",
    )
    print("\n  What the graph holds (SPARQL over the store; look for the audit's counts):")
    bullet(f"{cohort['studies']} included studies from {cohort['patients']} patients")
    bullet("DICOM view positions: " + ", ".join(f"{r['n']} {r['view'] or 'blank'}" for r in views))
    bullet("planned calls logged ok, by output file: " + ", ".join(f"{r['n']} {r['state']}" for r in outputs))

    heading(
        3,
        "Check the contract: the release gate",
        "provgraph.toml states the intended protocol, one section per clause. Each rule is a "
        "SPARQL query for one failure class; a `fail` rule that fires blocks the release. Look "
        "for one failure class per link of the audit's chain, each naming what it found.",
    )
    report_json = out / "flawed-check.json"
    check = run("-C", str(flawed), "check", "--format", "json", "--output", str(report_json))
    report = json.loads(report_json.read_text())
    for clause in ("cohort", "pixel", "prompt", "model", "output", "annotation", "analysis", "release"):
        fired = [r for r in report["rules"] if r["clause"] == clause and r["violations"]]
        print(f"\n  {clause}: " + ("no failure" if not fired else f"{len(fired)} failure class(es)"))
        for rule in fired:
            first = rule["violations"][0]["message"]
            note = (
                ""
                if rule["severity"] == "fail"
                else f" [{rule['severity']}: restricts claims, does not block]"
            )
            bullet(f"{rule['id']} x{len(rule['violations'])}{note}: {first}", indent=4)
    print(
        f"\n  gate: {report['gate'].upper()} (exit {check.returncode}); "
        f"full listing: provgraph -C {rel(flawed)} check"
    )

    heading(
        4,
        "Statistics: keyed against positional",
        "provgraph recomputes every statistic from cells joined by (case, finding) keys. The "
        "pilot dropped missing cells per condition and cut every column to the shortest, pairing "
        "different blocks by position. Look at n (369 keyed vs 383 positional) and at which "
        "route the reported Q reproduces.",
    )
    stats = json.loads(run("-C", str(flawed), "stats", "--format", "json").stdout)
    for m in stats["matrices"]:
        extra = ""
        if m["mispaired_positions"]:
            extra = f", {m['mispaired_positions']} positions pair different blocks"
        elif m["cohort_rule"] == "pairwise-available":
            extra = " (each pair of conditions has its own blocks; the largest pair shown)"
        bullet(f"{m['cohort_rule']}: n = {m['n']} of {m['blocks']} blocks{extra}")
    for row in stats["reported"]:
        pos = row["sensitivity"].get("positional-truncation")
        bullet(
            f"reported {row['statistic']} = {row['reported']} [{row['where']}]: keyed recomputation "
            f"{row['recomputed']:.5g} (n = {row['n']})"
            + (f", positional route {pos['value']:.5g} (n = {pos['n']})" if pos else "")
            + f" -> {row['status']}"
        )

    heading(
        5,
        "Lineage of a published number, and its claim status",
        "Where does the manuscript's Cochran Q come from, and can it stand? The status is the "
        "strongest limitation found upstream: retained < restricted < unverifiable < withdrawn.",
    )
    (claim,) = query(
        flawed,
        """SELECT ?line ?text WHERE { ?c a pg:Claim ; pg:statName "cochran_q" ; pg:text ?text ;
             pg:sourceLine ?line ; pg:sourceFile/pg:path "manuscript/main.tex" }""",
    )
    target = f"manuscript/main.tex:{claim['line']}"
    lineage = json.loads(run("-C", str(flawed), "lineage", "--no-check", "--format", "json", target).stdout)
    for match in lineage["matches"]:
        if "/claim/" not in match["root"]:
            continue
        print(f"\n  Q = {claim['text']} ({target}): {match['status'].upper()}")
        for reason in match["reasons"]:
            bullet(reason["text"], indent=4)
    print(f"  (the whole chain: provgraph -C {rel(flawed)} lineage {target})")

    heading(
        6,
        "The audit report and the picture of the graph",
        "report.html is self-contained (open it offline): gate by clause, each clause a section "
        "that folds (open when it fails) with a picture of the nodes its violations touch, a "
        "filter box, the first 10 violations of each rule with 'show all', the accounting "
        "panels (views, outputs, complete blocks), reported against recomputed statistics and "
        "every claim's status with its reason. graph.svg draws the whole graph by state "
        "(intended, executed, observed, analyzed, reported, released), failing nodes in red.",
    )
    report_html = out / "report.html"
    run("-C", str(flawed), "report", "--no-record", "-o", str(report_html))
    print(f"  wrote {rel(report_html)}")
    if shutil.which("dot"):
        run("-C", str(flawed), "viz", "--format", "svg", "-o", str(out / "graph"))
        print(f"  wrote {rel(out / 'graph.svg')}")
    else:
        print("  graphviz's `dot` is not installed, so no graph.svg (apt-get install graphviz); the DOT")
        run("-C", str(flawed), "viz", "--format", "dot", "-o", str(out / "graph"))
        print(f"  source is in {rel(out / 'graph.dot')}")

    heading(
        7,
        "The clean twin passes",
        "The same pilot with every defect repaired: the same gate must let it through. A gate "
        "that blocks everything would be as useless as one that blocks nothing.",
    )
    print("  " + run("-C", str(clean), "ingest").stdout.strip().splitlines()[-1])
    clean_check = run("-C", str(clean), "check")
    print("  " + clean_check.stdout.strip().splitlines()[-1])

    codes = {"flawed": check.returncode, "clean": clean_check.returncode}
    print(f"\n{'=' * WIDTH}\nResult ({time.monotonic() - started:.0f} s)")
    print(f"  flawed twin: gate exit {codes['flawed']} (1 = blocked, as it should be)")
    print(f"  clean twin:  gate exit {codes['clean']} (0 = passes)")
    ok = codes == {"flawed": 1, "clean": 0}
    print(
        "demo OK: the gate blocks the audited pilot and passes the repaired one"
        if ok
        else "demo FAILED: the gate did not separate the twins"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
