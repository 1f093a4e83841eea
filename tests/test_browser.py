"""The report as a reader sees it: rendered by real headless Chromium, read back through the
DOM and a screenshot.

Chromium is Debian's ``chromium``; when it is missing and the tests run as root, the session
fixture installs it with apt-get (as .ci/run does). The test is skipped, with the reason, only
when it cannot be installed.
"""

from __future__ import annotations

import os
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
        if tag == "g" and any(i == "graph-picture" for _, i in self.open):
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
    if dot.dot_program() is not None:
        assert sum(c.startswith("node") for c in dom.svg_groups) >= 8, dom.svg_groups
        assert any("flagged" in c for c in dom.svg_groups)
    else:
        assert "apt-get install graphviz" in dom.text("graph-picture")

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
            # the graph is drawn: PROV-yellow entity fills and red violation outlines
            assert _count(rgb, (255, 252, 135)) > 2000
            assert _count(rgb, (192, 0, 0)) > 100
        # the output plot is drawn: its green nonempty bar
        assert _count(rgb, (58, 125, 68)) > 500


def _count(image, colour: tuple[int, int, int], tolerance: int = 12) -> int:
    """Pixels within ``tolerance`` of ``colour`` (per channel)."""
    import numpy as np

    a = np.asarray(image, dtype=np.int16)
    return int((np.abs(a - np.array(colour, dtype=np.int16)) <= tolerance).all(axis=2).sum())
