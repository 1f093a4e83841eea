"""The navigable HTML report (issue 20) against the report before it, in one run: time, peak
memory, page size and printed pages of `provgraph report`, and screenshots to look at.

    .venv/bin/python bench/report_nav.py                        # baseline: --baseline-ref
    .venv/bin/python bench/report_nav.py --baseline-ref main --out /tmp/report-nav

Bundles: examples/cxr_pilot's flawed twin (375 violations); the 10^4-call bundle of
``bench/bundles.py`` (as ``bench/scale.py`` writes it: 32 violations, its planted output
defects); and the same bundle under a contract that plans temperature 0.7 and allows only PA
views, so that every call record and every AP study violates it (about 10^4 violations).

Each bundle is ingested and checked (the check recorded) once with this tree. Then `provgraph
report --no-record` runs in a child process with the baseline tree (``git archive`` of
``--baseline-ref``, unpacked under ``--out``) and with this tree, in turn, ``--repeat`` times;
wall time and peak resident memory are the child's (``os.wait4``). Each page is printed with
Chromium's ``--print-to-pdf`` (its default paper, Letter) and its pages counted; this tree's
page is screenshot at 1366 x 768 (top, violations, claims) by Playwright driving the system
Chromium. Results go to ``--out/results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
sys.path.insert(0, str(HERE))
SECRET = "bench-secret-0123456789abcdef0123456789"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
#: The last commit of main before the navigable report.
BEFORE = "19f7bb0"


def _env(tree: Path) -> dict[str, str]:
    path = os.pathsep.join([str(tree), *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, "PYTHONPATH": path, "PROVGRAPH_SECRET": SECRET}


def provgraph(tree: Path, *args: str) -> tuple[float, float, int]:
    """``provgraph ARGS`` with ``tree`` first on the path: seconds, peak GiB, exit code."""
    code = "import sys; from provgraph.cli import main; sys.exit(main())"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=_env(tree),
        cwd=tree,  # `python -c` puts the working directory first on the path: make it the tree
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"provgraph {' '.join(args)} failed:\n{err[-3000:]}")
    return seconds, usage.ru_maxrss / 2**20, os.waitstatus_to_exitcode(status)


def printed_pages(html: Path, out: Path) -> int:
    """Pages of Chromium's own print of the page (``--print-to-pdf``)."""
    profile = out.parent / f"profile-{out.stem}"
    shutil.rmtree(profile, ignore_errors=True)
    subprocess.run(
        ["/usr/bin/chromium", "--headless", *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
         f"--print-to-pdf={out}", html.as_uri()],
        capture_output=True, timeout=600, check=True,
    )  # fmt: skip
    return len(re.findall(rb"/Type\s*/Page[^s]", out.read_bytes()))


def screenshots(html: Path, stem: Path) -> list[str]:
    from playwright.sync_api import sync_playwright  # the test extra; only this step needs it

    shots = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.goto(html.as_uri())
        for where in ("top", "violations", "claims"):
            if where != "top":
                page.evaluate(f"document.getElementById('{where}').scrollIntoView()")
            path = f"{stem}-{where}.png"
            page.screenshot(path=path)
            shots.append(path)
        browser.close()
    return shots


def bundles(out: Path) -> dict[str, Path]:
    from bundles import scale_bundle

    made = {}
    pilot = out / "pilot"
    if not (pilot / "flawed").is_dir():
        generate = TREE / "examples/cxr_pilot/generate.py"
        command = [sys.executable, str(generate), "--twin", "flawed", "--out", str(pilot)]
        subprocess.run(command, check=True, env=_env(TREE), stdout=subprocess.DEVNULL)
    made["pilot-flawed"] = pilot / "flawed"
    scale = out / "scale-10k"
    if not (scale / "provgraph.toml").is_file():
        scale_bundle(scale, 10_000, pixel=True, log=lambda m: None)
    made["scale-10k"] = scale
    strict = out / "scale-10k-strict"
    if not strict.is_dir():
        shutil.copytree(scale, strict, ignore=shutil.ignore_patterns(".provgraph"))
        contract = strict / "provgraph.toml"
        text = contract.read_text().replace("temperature = 0,", "temperature = 0.7,")
        contract.write_text(text.replace('allowed_views = ["PA", "AP"]', 'allowed_views = ["PA"]'))
    made["scale-10k-strict"] = strict
    return made


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "out" / "report_nav")
    ap.add_argument("--baseline-ref", default=BEFORE, help=f"git ref of the report before (default {BEFORE})")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    baseline = out / f"baseline-{args.baseline_ref}"
    if not baseline.is_dir():  # the tree at the ref, unpacked (no worktree registered in the repository)
        baseline.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(TREE), "archive", args.baseline_ref], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(baseline)], input=archive, check=True)
    results = {"baseline_ref": args.baseline_ref, "loadavg": os.getloadavg(), "bundles": {}}
    for name, root in bundles(out).items():
        seconds, gib, _ = provgraph(TREE, "-C", str(root), "ingest")
        row: dict = {"ingest_seconds": round(seconds, 2)}
        provgraph(TREE, "-C", str(root), "check")  # recorded once, so claims trace to a check
        for _ in range(args.repeat):
            for label, tree in (("before", baseline), ("after", TREE)):
                html = out / f"{name}-{label}.html"
                seconds, gib, _ = provgraph(tree, "-C", str(root), "report", "--no-record", "-o", str(html))
                row.setdefault(label, []).append({"seconds": round(seconds, 2), "gib": round(gib, 3)})
        for label in ("before", "after"):
            html = out / f"{name}-{label}.html"
            row[f"{label}_kib"] = html.stat().st_size // 1024
            row[f"{label}_pages"] = printed_pages(html, out / f"{name}-{label}.pdf")
        row["screenshots"] = screenshots(out / f"{name}-after.html", out / name)
        results["bundles"][name] = row
        print(name, json.dumps(row), flush=True)
    with (out / "results.json").open("a") as f:
        f.write(json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
