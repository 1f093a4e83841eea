"""The report as a reader sees it: rendered by real headless Chromium, read back through the
DOM and a screenshot.

Chromium is Debian's ``chromium``; when it is missing and the tests run as root, the session
fixture installs it with apt-get (as .ci/run does). The test is skipped, with the reason, only
when it cannot be installed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from viewtools import generated_flawed_bundle

from provgraph.views import dot

# What Chromium needs on this kind of machine: no sandbox as root, no GPU, and nothing that
# reaches out to the network on its own.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
LAPTOP = (1366, 768)


def _find() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def _install() -> str:
    """Try apt-get; return what went wrong (empty when it worked)."""
    if os.name != "posix" or os.geteuid() != 0:
        return "not running as root, so apt-get cannot install it"
    if shutil.which("apt-get") is None:
        return "apt-get is not available on this machine"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium", "fonts-dejavu-core"]
    for steps in ([install], [["apt-get", "update", "-q"], install]):
        try:
            runs = (subprocess.run(s, env=env, capture_output=True, timeout=1200) for s in steps)
            if all(p.returncode == 0 for p in runs):
                return ""
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"apt-get failed: {err}"
    return "apt-get install chromium failed"


@pytest.fixture(scope="session")
def chromium() -> str:
    exe = _find()
    if exe is None:
        problem = _install()
        exe = _find()
        if exe is None:
            pytest.skip(f"headless Chromium is not installed and could not be installed: {problem}")
    return exe


def run_chromium(exe: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [exe, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


class Dom(HTMLParser):
    """Elements by id with their text, and the classes of graphviz's SVG groups."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: dict[str, list[str]] = {}
        self.open: list[tuple[str, str | None]] = []
        self.svg_groups: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids[a["id"]] = []
        if tag == "g" and any(i == "picture-output" for _, i in self.open):
            self.svg_groups.append(a.get("class") or "")
        self.open.append((tag, a.get("id")))

    def handle_endtag(self, tag):
        while self.open:
            t, _ = self.open.pop()
            if t == tag:
                break

    def handle_data(self, data):
        for _, i in self.open:
            if i is not None:
                self.ids[i].append(data)

    def text(self, element_id: str) -> str:
        return " ".join(" ".join(self.ids.get(element_id, [])).split())


@pytest.mark.slow
def test_report_renders_in_chromium(cli, chromium: str, tmp_path: Path) -> None:
    from PIL import Image, ImageStat

    root = generated_flawed_bundle(tmp_path / "bundle")
    assert cli("-C", str(root), "ingest").code == 0
    report = tmp_path / "report.html"
    r = cli("-C", str(root), "report", "-o", str(report))
    assert r.code == 0, r.err
    url = report.as_uri()

    # the DOM Chromium built from the file
    done = run_chromium(chromium, tmp_path / "profile-dom", "--dump-dom", url)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    dom = Dom(done.stdout.decode("utf-8"))
    assert dom.text("gate-badge") == "GATE FAIL"
    gate = dom.text("gate-table")
    from provgraph.rules import load_rules

    n = sum(r.clause == "output" for r in load_rules())
    # 4 rules fired, 6 violations (the failed call C001 is also a non-success final state)
    assert f"output in force {n} {n - 4} 4 0 0 6 FAIL" in gate
    cohort = sum(r.clause == "cohort" for r in load_rules())
    assert f"cohort not declared {cohort} 0 0 0 {cohort} 0" in gate
    assert "2 nonempty" not in dom.text("panel-outputs")  # the generated bundle: 25 of 30
    assert "25 nonempty of 30 planned" in dom.text("panel-outputs")
    if dot.dot_program() is not None:  # the output clause's lineage picture
        assert sum(c.startswith("node") for c in dom.svg_groups) >= 4, dom.svg_groups
        assert any("flagged" in c for c in dom.svg_groups)
    else:
        assert "apt-get install graphviz" in dom.text("picture-output")

    # what a reader sees on a laptop: the top of the page, then the whole page
    top = tmp_path / "top.png"
    size = f"--window-size={LAPTOP[0]},{LAPTOP[1]}"
    done = run_chromium(chromium, tmp_path / "profile-top", size, f"--screenshot={top}", url)
    assert done.returncode == 0 and top.is_file(), done.stderr.decode(errors="replace")[-2000:]
    with Image.open(top) as im:
        assert im.size == LAPTOP
        grey = im.convert("L")
        assert ImageStat.Stat(grey).stddev[0] > 20, "the first screen is blank"
        rgb = im.convert("RGB")
        # the red FAIL badge is on the first screen
        assert _count(rgb, (179, 38, 30)) > 200

    whole = tmp_path / "whole.png"
    done = run_chromium(
        chromium, tmp_path / "profile-whole", f"--window-size={LAPTOP[0]},6000", f"--screenshot={whole}", url
    )
    assert done.returncode == 0 and whole.is_file()
    with Image.open(whole) as im:
        rgb = im.convert("RGB")
        assert ImageStat.Stat(rgb.convert("L")).stddev[0] > 20
        if dot.dot_program() is not None:
            # the clause picture is drawn: PROV-yellow entity fills and red violation outlines
            assert _count(rgb, (255, 252, 135)) > 1000
            assert _count(rgb, (192, 0, 0)) > 100
        # the output plot is drawn: its green nonempty bar
        assert _count(rgb, (58, 125, 68)) > 500


def _count(image, colour: tuple[int, int, int], tolerance: int = 12) -> int:
    """Pixels within ``tolerance`` of ``colour`` (per channel)."""
    import numpy as np

    a = np.asarray(image, dtype=np.int16)
    return int((np.abs(a - np.array(colour, dtype=np.int16)) <= tolerance).all(axis=2).sum())


# --- navigating the report of the radiology pilot's flawed twin, through Playwright ----------
#
# Playwright drives the system Chromium (executable_path), never a downloaded browser. The
# bundle is examples/cxr_pilot's flawed twin: 415 violations in 8 clauses, 302 of them in the
# annotation clause, and 36 claims in its texts.

PILOT_FLAGS = [f for f in FLAGS if f != "--headless"]  # Playwright adds its own headless flag
ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


@pytest.fixture(scope="module")
def pilot(tmp_path_factory) -> tuple[Path, dict]:
    """The flawed twin's report (written by `provgraph report`) and its check as JSON."""
    from examples_support import generator, prepare, run_cli

    root = tmp_path_factory.mktemp("pilot") / "flawed"
    bundle = prepare(root, "flawed", generator("cxr_pilot").generate)
    claims = bundle.count(
        "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> "
        "SELECT (COUNT(DISTINCT ?c) AS ?n) WHERE { ?c a/rdfs:subClassOf* pg:Claim }"
    )
    bundle.close()
    out = root.parent / "report.html"
    code, _ = run_cli("-C", str(root), "report", "-o", str(out), "--no-record")
    assert code == 0 and out.is_file()
    return out, {**bundle.check, "claims": claims}


@pytest.fixture(scope="module")
def browser(chromium: str):
    from playwright.sync_api import sync_playwright  # test extra; loaded only by the browser tests

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=PILOT_FLAGS)
        yield b
        b.close()


def _visible_rows(page, selector: str) -> int:
    return page.locator(f"{selector} tr.v").evaluate_all(
        "rows => rows.filter(r => r.checkVisibility()).length"
    )


def _no_overflow(page) -> None:
    wide = page.evaluate(
        """() => {
        const doc = document.scrollingElement;
        const out = [];
        if (doc.scrollWidth > doc.clientWidth) out.push(['page', doc.scrollWidth, doc.clientWidth]);
        for (const el of document.querySelectorAll('pre.lineage, .picture, table')) {
          if (!el.checkVisibility()) continue;
          const right = el.getBoundingClientRect().right;
          if (el.scrollWidth > el.clientWidth + 1 || right > doc.clientWidth + 1)
            out.push([el.tagName + '.' + el.className, el.scrollWidth, el.clientWidth, right]);
        }
        return out;
      }"""
    )
    assert wide == [], wide


@pytest.mark.slow
def test_pilot_report_navigates_in_chromium(pilot, browser, tmp_path: Path) -> None:
    """Clauses collapse and expand, "show all" reveals the rest, the filter hides what does not
    match, a focus link opens its node, headings read without %-escapes, and the claims table
    is visible."""
    report, check = pilot
    page = browser.new_page(viewport={"width": LAPTOP[0], "height": LAPTOP[1]})
    page.goto(report.as_uri())
    per_rule = {r["id"]: len(r["violations"]) for r in check["rules"] if r["violations"]}
    assert sum(per_rule.values()) == 415  # 375 + 40 calls sent a reversed film (pixels)

    # a failing clause is open, one with only non-blocking findings is closed; both toggle
    annotation, model = page.locator("#clause-annotation"), page.locator("#clause-model")
    assert annotation.evaluate("d => d.open") and not model.evaluate("d => d.open")
    first = page.locator("#rule-annotation-raw-response-missing")
    assert first.is_visible() and not page.locator("#rule-model-alias-unresolved").is_visible()
    annotation.locator("summary").first.click()
    assert not first.is_visible()
    annotation.locator("summary").first.click()
    model.locator("summary").first.click()
    assert first.is_visible() and page.locator("#rule-model-alias-unresolved").is_visible()

    # the first 10 of a rule are shown; "show all (k more)" reveals the other k
    rule = "#rule-annotation-raw-response-missing"
    n = per_rule["annotation-raw-response-missing"]
    assert n > 200 and _visible_rows(page, rule) == 10
    more = page.locator(f"{rule} details.more > summary")
    assert more.inner_text() == "show all (190 more)"  # 200 listed per rule by default
    more.click()
    assert _visible_rows(page, rule) == 200
    assert f"{n - 200} more not in this page" in page.locator(rule).inner_text()

    # the filter: one rule id, then a study number, then cleared
    box = page.locator("#filter")
    assert box.is_visible()
    box.fill("cohort-view-undocumented")
    assert _visible_rows(page, "#violations") == per_rule["cohort-view-undocumented"]
    assert not page.locator("#clause-annotation").is_visible()
    if dot.dot_program() is not None:  # the pictures step aside while filtering
        assert not page.locator("#picture-cohort").is_visible()
    listed = sum(min(k, 200) for k in per_rule.values())
    k = per_rule["cohort-view-undocumented"]
    assert page.locator("#filter-count").inner_text() == f"{k} of {listed} listed violations match"
    box.fill("54093239")
    texts = page.locator("#violations tr.v").evaluate_all(
        "rows => rows.filter(r => r.checkVisibility()).map(r => r.textContent)"
    )
    assert texts and all("54093239" in t for t in texts)
    assert page.locator("#clause-pixel").is_visible() and page.locator("#clause-cohort").is_visible()
    box.fill("")
    assert _visible_rows(page, "#clause-cohort") > 0 and not model.evaluate("d => d.open")
    assert dot.dot_program() is None or page.locator("#picture-cohort").is_visible()

    # a focus link opens the node's collapsed section
    link = page.locator("#rule-cohort-repeated-patient a[href^='#node-']").first
    target = link.get_attribute("href")[1:]
    assert not page.locator(f"[id='{target}']").evaluate("d => d.open")
    link.click()
    assert page.locator(f"[id='{target}']").evaluate("d => d.open")

    # headings are labels, not percent-encoded IRIs
    headings = page.locator("h1, h2, h3, h4, summary").all_inner_texts()
    assert len(headings) > 200 and not [h for h in headings if ESCAPE.search(h)]
    assert "extraction/labels/extractor_cache.jsonl/outputs/claude-A/51387829.txt" in headings

    # every claim of the texts with its status and reason
    claims = page.locator("#claims-table")
    claims.scroll_into_view_if_needed()
    assert claims.is_visible()
    rows = claims.locator("tbody tr").evaluate_all("rs => rs.map(r => [...r.cells].map(c => c.textContent))")
    assert len(rows) == check["claims"] > 10
    assert {r[3] for r in rows} <= {"retained", "restricted", "unverifiable", "withdrawn"}
    assert all(r[4] != "—" for r in rows if r[3] != "retained")
    assert any(r[3] == "withdrawn" and "(fail)" in r[4] for r in rows)
    # grouped by file, each with its number of numbers; a file with a withdrawn number is open
    files = claims.locator("details.claims-file")
    paths = files.evaluate_all(
        "ds => ds.map(d => [d.dataset.path, d.open, d.querySelectorAll('tbody tr').length])"
    )
    assert sum(n for _, _, n in paths) == len(rows) and len(paths) == len({p for p, _, _ in paths}) > 3
    assert ["manuscript/main.tex", True, 7] in paths
    assert all(r[1].startswith(tuple(p for p, _, _ in paths)) for r in rows)
    page.screenshot(path=str(tmp_path / "claims.png"))
    page.close()


@pytest.mark.slow
@pytest.mark.parametrize("width", [1366, 800])
def test_pilot_report_has_no_horizontal_overflow(pilot, browser, width: int) -> None:
    """Nothing runs off the side at laptop and narrow widths, with every section open (the
    lineage blocks wrap)."""
    report, _ = pilot
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(report.as_uri())
    _no_overflow(page)
    page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
    assert page.locator("pre.lineage").count() >= 30
    _no_overflow(page)
    page.close()


@pytest.mark.slow
def test_pilot_report_reads_without_scripts_and_prints_short(pilot, browser, tmp_path: Path) -> None:
    """With scripts off the filter box stays hidden and the sections still open by click; the
    page prints in far fewer pages than the 147 of the report before clauses collapsed."""
    report, _ = pilot
    context = browser.new_context(java_script_enabled=False, viewport={"width": LAPTOP[0], "height": 900})
    page = context.new_page()
    page.goto(report.as_uri())
    assert not page.locator("#filter").is_visible()
    model = page.locator("#clause-model")
    assert not page.locator("#rule-model-alias-unresolved").is_visible()
    model.locator("summary").first.click()
    assert page.locator("#rule-model-alias-unresolved").is_visible()
    page.locator("#rule-annotation-raw-response-missing details.more > summary").click()
    assert _visible_rows(page, "#rule-annotation-raw-response-missing") == 200
    context.close()

    page = browser.new_page()
    page.goto(report.as_uri())
    pdf = page.pdf(format="A4")
    page.close()
    pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
    assert 5 < pages < 50, pages
