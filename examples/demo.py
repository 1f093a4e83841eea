"""The README's main job: run the release gate on the bundled example and its clean twin.

Copies ``examples/output_gate/{flawed,clean}`` to ``demo-out/`` (so the repository stays
clean), then runs the real CLI on each: ingest, check, and a query that shows the evidence.
Exits 0 when the gate fails the flawed twin and passes the clean twin, as it should.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "demo-out"
CLI = [sys.executable, "-m", "provgraph"]

STATES = """
SELECT ?call ?status ?output ?bytes WHERE {
  ?r a pg:CallRecord ; pg:callId ?call ; pg:status ?status .
  OPTIONAL { ?r pg:outputPath ?output . ?r pg:outputFile ?f . OPTIONAL { ?f pg:byteSize ?bytes } }
} ORDER BY ?call ?status
"""


def step(title: str, *args: str) -> int:
    shown = " ".join("'<SPARQL>'" if "\n" in a else a for a in args)
    print(f"\n$ provgraph {shown}    # {title}", flush=True)
    return subprocess.run([*CLI, *args]).returncode


def main() -> int:
    shutil.rmtree(OUT, ignore_errors=True)
    codes = {}
    for twin in ("flawed", "clean"):
        bundle = OUT / twin
        shutil.copytree(HERE / "output_gate" / twin, bundle)
        print(f"\n=== {twin} twin: {bundle} ===")
        step("import every artifact into the PROV graph", "-C", str(bundle), "ingest")
        step("what the call log says, next to what is on disk", "-C", str(bundle), "query", STATES)
        codes[twin] = step("run the contract as a release gate", "-C", str(bundle), "check")
    print("\n=== result ===")
    print(f"flawed twin: gate exit {codes['flawed']} (1 = blocked, as it should be)")
    print(f"clean twin:  gate exit {codes['clean']} (0 = passes)")
    ok = codes == {"flawed": 1, "clean": 0}
    print(
        "demo OK: the gate blocks every planted defect and passes the repaired bundle"
        if ok
        else "demo FAILED: the gate did not separate the twins"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
