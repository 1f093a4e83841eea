"""Polarity and image identity judged from the pixels a call sent (issue 18).

Bundles are written by ``tests/calibration/shapes/_cal_pixels.py``: chest-like DX DICOMs in
MIMIC-CXR's folder layout, and provider batch requests carrying each study's image inline, in
the shapes the provider docs show (OpenAI vision: ``image_url`` data URL,
https://platform.openai.com/docs/guides/vision; Anthropic vision: base64 ``image`` block,
https://docs.anthropic.com/en/docs/build-with-claude/vision), with no rendering record. The
gate runs on the real Oxigraph store; sources are re-rendered by the real renderer.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydicom import dcmread

from provgraph.bundle.layout import Bundle
from provgraph.capture.renderer import render_dataset, render_file, write_png
from provgraph.errors import ContractError
from provgraph.evidence import pixels
from provgraph.evidence.renderings import sidecar_for
from provgraph.ingest.testing import ingest_bundle
from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules, pixelview

SHAPES = Path(__file__).resolve().parent / "calibration" / "shapes"
sys.path.insert(0, str(SHAPES))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import _cal_pixels as cp  # noqa: E402
import pixel_thresholds  # noqa: E402

RULE = "pixel-polarity-from-pixels"
FILM = [s for s, _, pi in cp.STUDIES if pi == "MONOCHROME1"]


def gate(root: Path):
    store, results, problems = ingest_bundle(root)
    assert not problems and all(r.outcome == "imported" and not r.problems for r in results), [
        str(p) for r in results for p in r.problems
    ]
    return store, run_gate(store, load_rules(), record=False)


def result(report, rule_id: str = RULE):
    (found,) = [r for r in report.results if r.rule.id == rule_id]
    return found


def verdicts(store) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for v in pixelview.judge_all(store):
        out.setdefault(v.verdict, set()).add(v.call.rsplit("/", 1)[-1])
    return out


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_uninverted_film_fails_on_pixels_its_twins_pass(provider: str, tmp_path: Path) -> None:
    """The Done-when: MONOCHROME1 sent without inversion fails the pixel clause on pixels alone
    (no rendering record anywhere); the correctly rendered twin passes, and so does the twin
    whose images were resized and JPEG-compressed."""
    flawed = tmp_path / "flawed"
    cp.write_benchmark(flawed, provider, {s: "uninverted" for s in FILM})
    assert not list(flawed.rglob("*.render.json"))
    store, report = gate(flawed)
    polarity = result(report)
    assert polarity.outcome == "violated" and not report.passed
    film_calls = {f"call/{c}--{s}--1" for c in cp.CONDITIONS for s in FILM}
    assert {report.short(v.focus) for v in polarity.violations} == film_calls
    assert all("reversed polarity" in v.message for v in polarity.violations)
    assert all("MONOCHROME1 files/p10/" in v.message for v in polarity.violations)
    # nothing but the pixels said so: the record-based rule has no record to read
    assert result(report, "pixel-monochrome-polarity").outcome == "pass"
    # one verdict node per (case, image), linked to the call of every condition that sent it
    (row,) = store.select(
        "PREFIX pg: <https://w3id.org/provgraph/ns#> SELECT (COUNT(DISTINCT ?v) AS ?nodes) "
        "(COUNT(DISTINCT ?call) AS ?calls) WHERE { ?v a pg:PixelVerdict ; pg:verdictFor ?call }"
    )
    assert int(row["nodes"].value) == len(cp.STUDIES)  # type: ignore[union-attr]
    assert int(row["calls"].value) == len(cp.STUDIES) * len(cp.CONDITIONS)  # type: ignore[union-attr]

    for variant, same in (("correct", True), ("resized-jpeg", False)):
        root = tmp_path / variant
        cp.write_benchmark(root, provider, {s: variant for s, _, _ in cp.STUDIES})
        store, report = gate(root)
        failing = [(r.rule.id, r.error, [v.message for v in r.violations]) for r in report.results]
        assert report.passed, [f for f in failing if f[1] or f[2]]
        assert result(report).outcome == "pass"
        judged = pixelview.judge_all(store)
        assert {v.verdict for v in judged} == {"correct"}
        # the reference render's own pixels give r = 1; a resized JPEG does not, and still passes
        assert all((v.correlation == 1.0) is same for v in judged)


def test_a_record_claiming_inversion_is_not_trusted(tmp_path: Path) -> None:
    """A non-inverted PNG whose rendering record claims inversion, with correct hashes, named
    by canonical call records (README 'Rendering records'): the record-based rule passes it,
    the pixels do not."""
    root = tmp_path / "b"
    paths = cp.write_benchmark(root, "openai", {})
    for batch in (root / "batches").iterdir():
        batch.unlink()
    records = []
    for study, _, photometric in cp.STUDIES:
        image = root / "rendered" / f"{study}.png"
        render_file(root / paths[study], image, invert=False if photometric == "MONOCHROME1" else None)
        sidecar = image.with_name(sidecar_for(image.name))
        record = json.loads(sidecar.read_text(encoding="utf-8"))
        record["inverted"] = record["photometric"] == "MONOCHROME1"  # the lie
        sidecar.write_text(json.dumps(record), encoding="utf-8")
        for c in cp.CONDITIONS:
            records.append({"call_id": f"{c}--{study}--1", "status": "ok", "image": f"rendered/{study}.png"})
    (root / "calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    store, report = gate(root)
    assert result(report, "pixel-monochrome-polarity").outcome == "pass"
    polarity = result(report)
    assert {report.short(v.focus) for v in polarity.violations} == {
        f"call/{c}--{s}--1" for c in cp.CONDITIONS for s in FILM
    }
    assert verdicts(store)["inverted"] == {f"{c}--{s}--1" for c in cp.CONDITIONS for s in FILM}


def test_missing_or_changed_source_is_named(tmp_path: Path) -> None:
    """No DICOM for a case, and a DICOM changed after import: each says what is missing."""
    root = tmp_path / "b"
    paths = cp.write_benchmark(root, "anthropic", {})
    gone, changed, odd = cp.STUDIES[0][0], cp.STUDIES[2][0], cp.STUDIES[3][0]
    (root / paths[gone]).unlink()
    ds = dcmread(root / paths[odd])
    ds.SamplesPerPixel = 3  # a header the renderer refuses: named, never a crash
    ds.save_as(root / paths[odd])
    store, _, _ = ingest_bundle(root)
    (root / paths[changed]).write_bytes((root / paths[changed]).read_bytes() + b"\0\0")  # after import
    report = run_gate(store, load_rules(), record=False)
    messages = {report.short(v.focus): v.message for v in result(report).violations}
    for c in cp.CONDITIONS:
        assert f"no DICOM of case {gone} is in the bundle" in messages[f"call/{c}--{gone}--1"]
        assert "has changed since it was imported" in messages[f"call/{c}--{changed}--1"]
        assert (
            "3 samples per pixel: only single-sample greyscale is rendered" in messages[f"call/{c}--{odd}--1"]
        )
    assert len(messages) == 6 and not report.passed


def test_a_source_without_file_meta_is_rendered_as_ingest_read_it(tmp_path: Path) -> None:
    """A source DICOM saved without preamble and file meta (a bare data set, as pydicom writes it
    with ``enforce_file_format=False``; the ``dicom`` importer reads such files with
    ``force=True``) is re-rendered by the pixel view exactly as ingest read it, not named "not a
    readable DICOM file" (which failed the pixel clause for want of evidence)."""
    root = tmp_path / "b"
    paths = cp.write_benchmark(root, "openai", {s: "uninverted" for s in FILM})
    for study, _, _ in cp.STUDIES:
        ds = dcmread(root / paths[study])
        del ds.file_meta
        ds.preamble = None
        ds.save_as(root / paths[study], enforce_file_format=False)
        assert (root / paths[study]).read_bytes()[128:132] != b"DICM"
    store, report = gate(root)
    assert {v.verdict for v in pixelview.judge_all(store)} == {"correct", "inverted"}
    assert {report.short(v.focus) for v in result(report).violations} == {
        f"call/{c}--{s}--1" for c in cp.CONDITIONS for s in FILM
    }


def test_declared_source_pattern_links_a_flat_layout(tmp_path: Path) -> None:
    """``[pixel] sources`` links DICOMs whose path holds no case key; without it they are missing."""
    root = tmp_path / "b"
    paths = cp.write_benchmark(root, "openai", {s: "uninverted" for s in FILM})
    for n, (study, _, _) in enumerate(cp.STUDIES):
        target = root / "sources" / f"img{n}.dcm"
        target.parent.mkdir(exist_ok=True)
        (root / paths[study]).rename(target)
    store, report = gate(root)
    assert {v.verdict for v in pixelview.judge_all(store)} == {"no-source"}
    contract = (root / "provgraph.toml").read_text(encoding="utf-8")
    mapping = {study: n for n, (study, _, _) in enumerate(cp.STUDIES)}
    for study, n in mapping.items():  # a flat layout named by position: declare one folder per case
        (root / "sources" / study).mkdir()
        (root / "sources" / f"img{n}.dcm").rename(root / "sources" / study / "image.dcm")
    (root / "provgraph.toml").write_text(
        contract.replace("[plan]", 'sources = "sources/{case}/*.dcm"\n\n[plan]'), encoding="utf-8"
    )
    store, report = gate(root)
    assert {report.short(v.focus) for v in result(report).violations} == {
        f"call/{c}--{s}--1" for c in cp.CONDITIONS for s in FILM
    }


def test_threshold_keeps_its_margins() -> None:
    """A small run of bench/pixel_thresholds.py: the sign of r never misjudges polarity, the
    pipeline's own copies stay well above MATCH and unrelated images well below it, and under the
    declared rendering SAME separates a source's copies from another patient's film."""
    results, loose = pixel_thresholds.run(4)
    assert all((r.own > 0) == (r.polarity == "right") for r in results)
    assert min(abs(r.own) for r in results) >= pixels.MATCH + 0.15
    assert max(loose) <= pixels.MATCH - 0.1
    # under the declared rendering a copy is the source's; another patient's film only resembles it
    declared = [r for r in results if r.polarity == "right" and not r.variant.startswith("window")]
    assert min(r.own for r in declared) >= pixels.SAME + 0.005
    assert max(r.other_max for r in declared) <= pixels.SAME - 0.005


def test_grids_and_the_reference_png(tmp_path: Path) -> None:
    """Grids of bad bytes and bad literals are refused; the view's PNG is the renderer's PNG."""
    assert pixels.grid_of_bytes(b"not an image") is None
    # a valid 9000 x 9000 PNG (81 M pixels, 80 kB compressed) is refused from its header
    huge = cp.encode(np.zeros((9000, 9000), np.uint8), None, None)
    assert pixels.grid_of_bytes(huge) is None
    assert pixels.grid_of_bytes(cp.encode(np.zeros((2, 2), np.uint8), None, None)) is not None
    assert pixels.grid_from_hex("00" * 10) is None and pixels.grid_from_hex("zz" * 1024) is None
    ds = cp.dicom(cp.chest(7, 64, 56), "MONOCHROME1")
    rendered = render_dataset(ds, "x").pixels
    sha = write_png(rendered, tmp_path / "x.png")
    assert hashlib.sha256(pixelview.png_bytes(rendered)).hexdigest() == sha
    grid = pixels.grid_of_bytes((tmp_path / "x.png").read_bytes())
    assert grid == pixels.grid_of_array(rendered) and len(grid) == pixels.GRID**2
    assert pixels.judge(pixels.grid_of_array(np.full((8, 8), 9, np.uint8)), grid)[0] == "unmatched"


def test_a_hash_alone_is_judged_by_the_reference_png(tmp_path: Path) -> None:
    """Canonical call records (README 'Recording at the request boundary': ``image`` and the
    ``image_sha256`` taken at the request) whose image files are gone: the hash is all there is.
    The reference renderer's own PNG matches it (``exact``); the uninverted film's cannot be
    judged, and says so."""
    root = tmp_path / "b"
    paths = cp.write_benchmark(root, "openai", {})
    for batch in (root / "batches").iterdir():
        batch.unlink()
    records = []
    for study, _, photometric in cp.STUDIES:
        image = tmp_path / "gone" / f"{study}.png"
        render_file(root / paths[study], image, invert=False if photometric == "MONOCHROME1" else None)
        sha = hashlib.sha256(image.read_bytes()).hexdigest()
        for c in cp.CONDITIONS:
            records.append({"call_id": f"{c}--{study}--1", "status": "ok", "image_sha256": sha})
    (root / "calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    store, report = gate(root)
    film = {f"{c}--{s}--1" for c in cp.CONDITIONS for s in FILM}
    assert verdicts(store) == {"exact": {r["call_id"] for r in records} - film, "no-pixels": film}
    messages = [v.message for v in result(report).violations]
    assert len(messages) == 4 and all("the bundle holds only its hash" in m for m in messages)


def test_the_declared_window_is_the_rendering_compared(tmp_path: Path) -> None:
    """A pipeline that rendered with its own window (1400/2000): judged against the header's
    window its PNGs are the right polarity but not the same pixels (r 0.83 to 0.98); declared as
    ``[pixel] window`` they are the reference render exactly (r = 1). A width of 0 is refused."""
    root = tmp_path / "b"
    cp.write_benchmark(root, "anthropic", {})
    requests = root / "batches" / "msgbatch_01_requests.jsonl"
    lines = []
    for line in requests.read_text(encoding="utf-8").splitlines():
        value = json.loads(line)
        study = value["custom_id"].split("--")[1]
        n, (subject, photometric) = next((i, s[1:]) for i, s in enumerate(cp.STUDIES) if s[0] == study)
        ds = cp.dicom(cp.chest(int(study) % 1000 + n, 256, 224), photometric, study, subject)
        png = cp.encode(render_dataset(ds, "own", window=(1400, 2000)).pixels, None, None)
        value["params"]["messages"][0]["content"][0]["source"]["data"] = base64.b64encode(png).decode()
        lines.append(json.dumps(value) + "\n")
    requests.write_text("".join(lines), encoding="utf-8")
    store, report = gate(root)
    # right polarity, not the declared rendering: restricted, not blocked (strict would block)
    assert report.passed and {v.verdict for v in pixelview.judge_all(store)} == {"resembles"}
    assert len(result(report, "pixel-image-not-declared-rendering").violations) == 8
    assert result(report).outcome == "pass"
    # measured 0.83 (MONOCHROME2) and 0.98 (MONOCHROME1: the window falls on film values)
    assert all(0.6 < v.correlation < 0.99 for v in pixelview.judge_all(store))  # type: ignore[operator]
    contract = root / "provgraph.toml"
    text = contract.read_text(encoding="utf-8")
    contract.write_text(text.replace("[plan]", "window = [1400, 2000]\n\n[plan]"), encoding="utf-8")
    store, report = gate(root)
    assert report.passed and all(v.correlation == 1.0 for v in pixelview.judge_all(store))
    assert result(report, "pixel-image-not-declared-rendering").outcome == "pass"
    contract.write_text(text.replace("[plan]", "window = [1400, 0]\n\n[plan]"), encoding="utf-8")
    with pytest.raises(ContractError, match="window"):
        Bundle.open(root)


_SEGMENT = st.sampled_from(
    ["c1", "c10", "s50", "50", "p10", "files", "dicom", "a", "c1.dcm", "50.dcm", "x.dcm"]
)


@settings(max_examples=300, deadline=None)
@given(
    paths=st.lists(st.lists(_SEGMENT, min_size=1, max_size=4).map("/".join), max_size=8),
    cases=st.sets(st.sampled_from(["c1", "c10", "50", "1", "p10", "a"]), max_size=4),
    pattern=st.sampled_from(
        [
            None,
            "dicom/{case}/*.dcm",
            "files/*/s{case}/*",
            "*{case}.dcm",
            "{case}",
            "{case}/*",
            "*/{case}",
            "[cp]{case}*",
        ]
    ),
)
def test_case_index_is_the_scan_it_replaces(paths: list[str], cases: set[str], pattern: str | None) -> None:
    """The index the pixel view looks a case's DICOMs up in holds exactly the DICOMs
    ``case_matches`` accepts, in the same order (the reference form: a scan of every DICOM)."""
    dicoms = [pixelview.Dicom(f"n{i}", path, "", "") for i, path in enumerate(paths)]
    index = pixelview.case_index(dicoms, cases, pattern)
    for case in cases:
        scanned = [d.node for d in dicoms if pixelview.case_matches(d.path, case, pattern)]
        assert index.get(case, []) == scanned
