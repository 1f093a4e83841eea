"""``provgraph render`` on DICOM files no one here wrote: every file of pydicom's test data and the
``pydicom-data`` distribution in one run, with the optional decoders and without them.

Where the files come from (as in ``tests/test_dicom_corpus.py``): the installed pydicom package's
``pydicom/data`` folder (github.com/pydicom/pydicom, ``src/pydicom/data``) and PyPI's
``pydicom-data`` 1.0.0 (github.com/pydicom/pydicom-data, ``data_store/data``), both installed by
the ``test`` extra; so are the ``dicom-codecs`` decoders (pylibjpeg with its libjpeg, openjpeg and
rle plugins). The run without them blocks their import in a fresh interpreter, so pydicom's own
plugin discovery (``pydicom.pixels.decoders.pylibjpeg.is_available``) finds them missing.

Each file is rendered (a PNG of Rows x Columns and its record) or named on its own line with the
reason pinned here; each category's reason is checked against the file's header as pydicom reads
it, so a reason can be neither invented nor misplaced.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import data_store  # the test extra's pydicom-data distribution
import libjpeg  # noqa: F401  (the dicom-codecs extra, installed by the test extra)
import numpy as np
import openjpeg  # noqa: F401
import pydicom
import pytest
from fixtures.make_images import sha256, write_dicom
from PIL import Image

import provgraph
from provgraph.importers.dicom import must_be_dicom

PYDICOM = Path(pydicom.__file__).parent / "data"
PYDICOM_DATA = Path(data_store.__file__).parent / "data"
TEST_FILES = PYDICOM / "test_files"
HINT = "pip install 'provgraph[dicom-codecs]'"

#: Files refused for a reason of their own (every other refusal is one of the categories below).
REFUSED = {
    # pydicom's 12-bit JPEG that libjpeg rejects (pydicom decodes it only with GDCM)
    "pydicom/test_files/JPEG-lossy.dcm": (
        "cannot decode 1.2.840.10008.1.2.4.51 'JPEG Extended (Process 2 and 4)' pixel data: Unable to "
        "decode as exceptions were raised by all available plugins: pylibjpeg: libjpeg error code '-1038'"
    ),
    # a 250-byte codestream made to hold the sequence delimiter's bytes: its SIZ declares a
    # 3.8-million-megapixel image
    "pydicom/test_files/JPEG2000-embedded-sequence-delimiter.dcm": (
        "cannot decode 1.2.840.10008.1.2.4.91 'JPEG 2000 Image Compression' pixel data: Unable to decode "
        "as exceptions were raised by all available plugins: pylibjpeg: Error decoding the J2K data: "
        "failed to read the header; pillow: Image size (3811783737344 pixels) exceeds limit"
    ),
    "pydicom/test_files/MR_truncated.dcm": "truncated: Pixel Data declares 8192 bytes but only 8130 remain",
    "pydicom/test_files/badVR.dcm": "malformed NumberOfFrames '1A' (not an integer)",
    "pydicom/test_files/dicomdirtests/TINY_ALPHA/README": (
        "not a DICOM file (no 'DICM' marker at byte 128, and pydicom reads no data set with a SOP "
        "Class UID from it)"
    ),
    "pydicom/test_files/no_meta.dcm": (
        "not a DICOM file (no 'DICM' marker at byte 128, and pydicom reads no data set with a SOP "
        "Class UID from it)"
    ),
    # two bytes of Pixel Data beside one private element: nothing says what the pixels are
    "pydicom/test_files/meta_missing_tsyntax.dcm": (
        "Pixel Data without the image pixel module (PhotometricInterpretation, Rows, Columns, "
        "BitsAllocated missing)"
    ),
    "pydicom/test_files/nested_priv_SQ.dcm": (
        "Pixel Data without the image pixel module (PhotometricInterpretation, Rows, Columns, "
        "BitsAllocated missing)"
    ),
    "pydicom/test_files/rtplan_truncated.dcm": (
        "truncated inside element (300A,00B0): it declares 976 bytes, 711 are present"
    ),
    "pydicom-data/emri_small_jpeg_2k_lossless_too_short.dcm": (
        "truncated: encapsulated Pixel Data ends without its sequence delimiter"
    ),
}
#: How many files fall in each category (the rest of the 261 are rendered).
CATEGORIES = {"rendered": 88, "colour": 69, "no pixels": 58, "not an image": 25, "multi-frame": 11}
COLOUR = re.compile(r"colour image \(PhotometricInterpretation ([A-Z_ 0-9]+)\): only MONOCHROME1/2")
FRAMES = re.compile(r"multi-frame \((\d+) frames\): only single-frame images are rendered")
NO_PIXELS = re.compile(r"no Pixel Data: a (.*Image Storage.*) object stored without its pixels")
NOT_IMAGE = re.compile(r"not an image: a (.+) object has no Pixel Data")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("render-corpus") / "in"
    shutil.copytree(PYDICOM, root / "pydicom", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    shutil.copytree(PYDICOM_DATA, root / "pydicom-data")
    return root


def _errors(stderr: str, root: Path) -> dict[str, str]:
    lines = stderr.strip().splitlines()
    prefix = f"provgraph: error: {root}/"
    assert all(line.startswith(prefix) for line in lines), [x for x in lines if not x.startswith(prefix)]
    pairs = [line[len(prefix) :].split(": ", 1) for line in lines]
    assert len({p for p, _ in pairs}) == len(pairs), "one line per file"
    return dict(pairs)


def _header(path: Path) -> pydicom.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydicom's notes on the corpus's odd files (implicit VR found)
        return pydicom.dcmread(path, force=True)


def _category(rel: str, reason: str, path: Path) -> str:
    """The reason's category, after checking it against the header pydicom reads."""
    ds = _header(path)
    if m := COLOUR.fullmatch(reason):
        assert m[1] == ds.PhotometricInterpretation and "MONOCHROME" not in m[1], rel
        return "colour"
    if m := FRAMES.fullmatch(reason):
        assert int(m[1]) == int(ds.NumberOfFrames) > 1 and ds.PhotometricInterpretation.startswith("MONO"), (
            rel
        )
        return "multi-frame"
    for pattern, name in ((NO_PIXELS, "no pixels"), (NOT_IMAGE, "not an image")):
        if m := pattern.fullmatch(reason):
            assert "PixelData" not in ds, rel
            sop = ds.get("SOPClassUID") or ds.file_meta.get("MediaStorageSOPClassUID")
            assert m[1] == sop.name, rel
            return name
    if reason == "not an image: no Pixel Data (and no SOP Class UID pydicom knows)":
        sop = ds.get("SOPClassUID") or ds.file_meta.get("MediaStorageSOPClassUID")
        assert "PixelData" not in ds and (sop is None or sop.name == sop), rel
        return "not an image"
    raise AssertionError(f"{rel}: unexpected reason {reason!r}")


def test_render_survives_every_file_of_the_corpus(cli, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = cli("render", str(corpus), "-o", str(out))
    assert r.code == 2
    assert "Traceback" not in r.err and "internal error" not in r.err and "WARNING" not in r.err
    errors = _errors(r.err, corpus)
    files = sorted(
        p.relative_to(corpus).as_posix() for p in corpus.rglob("*") if p.is_file() and must_be_dicom(p.name)
    )
    assert len(files) == 261
    special = {rel: reason for rel, reason in errors.items() if rel in REFUSED}
    assert set(special) == set(REFUSED)
    for rel, reason in special.items():
        assert reason.startswith(REFUSED[rel]), (rel, reason)
    counts = Counter(
        _category(rel, reason, corpus / rel) for rel, reason in errors.items() if rel not in REFUSED
    )
    rendered = [rel for rel in files if rel not in errors]
    counts["rendered"] = len(rendered)
    assert dict(counts) == CATEGORIES
    assert f"rendered 88 images into {out} (11 MONOCHROME1 inverted); 173 failed" in r.out
    for rel in rendered:
        image = out / Path(rel).with_suffix(".png")
        record = json.loads(image.with_name(image.name + ".render.json").read_text())
        ds = _header(corpus / rel)
        with Image.open(image) as im:
            assert im.mode == "L" and im.size == (ds.Columns, ds.Rows), rel
        assert (
            record["image_sha256"] == sha256(image) and record["photometric"] == ds.PhotometricInterpretation
        )
    produced = {p.relative_to(out).as_posix() for p in out.rglob("*.png")}
    assert produced == {Path(rel).with_suffix(".png").as_posix() for rel in rendered}


def test_compressed_files_decode_to_the_pixels_of_their_uncompressed_twins(tmp_path: Path) -> None:
    """pydicom ships MR_small in each transfer syntax; each renders to the same PNG with the codecs."""
    from provgraph.capture.renderer import render_file

    twins = ["MR_small.dcm", "MR_small_RLE.dcm", "MR_small_jpeg_ls_lossless.dcm", "MR_small_jp2klossless.dcm"]
    hashes = {render_file(TEST_FILES / name, tmp_path / f"{name}.png")["image_sha256"] for name in twins}
    assert len(hashes) == 1


def test_a_malformed_number_of_frames_does_not_stop_the_files_after_it(cli, tmp_path: Path) -> None:
    src = tmp_path / "dicom"
    write_dicom(src / "a.dcm")
    shutil.copy(TEST_FILES / "badVR.dcm", src / "badVR.dcm")  # NumberOfFrames '1A'
    write_dicom(src / "c.dcm", photometric="MONOCHROME1")
    shutil.copy(TEST_FILES / "CT_small.dcm", src / "d.dcm")
    r = cli("render", str(src), "-o", str(tmp_path / "out"))
    assert r.code == 2
    assert r.err.strip().splitlines() == [
        f"provgraph: error: {src / 'badVR.dcm'}: malformed NumberOfFrames '1A' (not an integer)"
    ]
    assert "rendered 3 images" in r.out and "(1 MONOCHROME1 inverted); 1 failed" in r.out
    assert sorted(p.name for p in (tmp_path / "out").glob("*.png")) == ["a.png", "c.png", "d.png"]


#: Runs ``provgraph render`` in a fresh interpreter where the dicom-codecs modules cannot be
#: imported (what pydicom sees when the extra is not installed).
WITHOUT_CODECS = """
import sys
class Blocker:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] in {"pylibjpeg", "libjpeg", "openjpeg", "rle"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Blocker)
from provgraph.cli import main
main(sys.argv[1:])
"""


def test_without_the_codecs_the_message_names_the_extra(tmp_path: Path) -> None:
    from provgraph.capture.renderer import render_file

    src = tmp_path / "dicom"
    src.mkdir()
    for name in ("MR_small.dcm", "MR_small_RLE.dcm", "MR_small_jpeg_ls_lossless.dcm", "JPGExtended.dcm"):
        shutil.copy(TEST_FILES / name, src / name)
    env = {**os.environ, "PYTHONPATH": str(Path(provgraph.__file__).parents[1])}
    run = subprocess.run(
        [sys.executable, "-c", WITHOUT_CODECS, "render", str(src), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip().splitlines() == [
        f"provgraph: error: {src / 'JPGExtended.dcm'}: cannot decode 1.2.840.10008.1.2.4.51 'JPEG Extended "
        "(Process 2 and 4)' pixel data: Unable to decode as exceptions were raised by all available plugins: "
        "pillow: Pillow does not support 'JPEG Extended' for samples with 12-bit precision; the decoders of "
        f"provgraph[dicom-codecs] are not installed ({HINT})",
        f"provgraph: error: {src / 'MR_small_jpeg_ls_lossless.dcm'}: transfer syntax 1.2.840.10008.1.2.4.80 "
        f"'JPEG-LS Lossless Image Compression' needs a decoder that is not installed: {HINT}",
    ]
    assert "rendered 2 images" in run.stdout and "2 failed" in run.stdout
    # pydicom's own RLE decoder needs no extra, and gives the pixels pylibjpeg-rle gives
    with_codecs = render_file(src / "MR_small_RLE.dcm", tmp_path / "rle.png")
    assert sha256(tmp_path / "out" / "MR_small_RLE.png") == with_codecs["image_sha256"]
    # and with the codecs (this interpreter) both files render
    for name in ("MR_small_jpeg_ls_lossless.dcm", "JPGExtended.dcm"):
        record = render_file(src / name, tmp_path / f"{name}.png")
        with Image.open(tmp_path / f"{name}.png") as im:
            assert np.asarray(im).std() > 0 and record["inverted"] is False


def test_bad_headers_written_here_are_each_named_and_the_rest_rendered(cli, tmp_path: Path) -> None:
    """Headers pydicom writes but the renderer cannot use: each is one line with its reason."""
    src = tmp_path / "dicom"
    write_dicom(src / "a-good.dcm")
    # pydicom refuses to write a malformed DS, so the value is corrupted in the written bytes
    bad = write_dicom(src / "b-window.dcm", window=(1234.5, 400.0))
    assert bad.read_bytes().count(b"1234.5") == 1
    bad.write_bytes(bad.read_bytes().replace(b"1234.5", b"12x4.5"))
    write_dicom(src / "c-width.dcm", window=(2048.0, 0.0))
    write_dicom(src / "d-rows.dcm", drop=("Rows",))
    write_dicom(src / "e-nopixels.dcm", drop=("PixelData",))
    write_dicom(src / "f-good.dcm", photometric="MONOCHROME1")
    r = cli("render", str(src), "-o", str(tmp_path / "out"))
    assert r.code == 2
    errors = _errors(r.err, src)
    assert errors == {
        "b-window.dcm": (
            "malformed modality or VOI transform (ValueError: could not convert string to float: '12x4.5')"
        ),
        "c-width.dcm": (
            "malformed modality or VOI transform (ValueError: The (0028,1051) Window Width must be greater "
            "than or equal to 1 for a 'LINEAR' windowing operation)"
        ),
        "d-rows.dcm": "Rows missing: the pixels cannot be read without it",
        "e-nopixels.dcm": (
            "no Pixel Data: a Digital X-Ray Image Storage - For Presentation object stored without its pixels"
        ),
    }
    assert "rendered 2 images" in r.out and "4 failed" in r.out


def test_a_bug_met_on_one_file_is_named_with_its_type_and_the_others_rendered(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault injected into the real renderer for one file (our own bug, not bad input): exit 3."""
    from provgraph.capture import renderer

    real = renderer.render_file

    def buggy(source: Path, image: Path, **kw: object) -> dict:
        if source.name == "b.dcm":
            raise ZeroDivisionError("injected")
        return real(source, image, **kw)

    monkeypatch.setattr(renderer, "render_file", buggy)
    src = tmp_path / "dicom"
    for name in ("a.dcm", "b.dcm", "c.dcm"):
        write_dicom(src / name)
    r = cli("render", str(src), "-o", str(tmp_path / "out"))
    assert r.code == 3
    assert r.err.strip().splitlines() == [
        f"provgraph: internal error: {src / 'b.dcm'}: ZeroDivisionError: injected "
        "(this is a bug; run with -v to see the traceback)"
    ]
    assert sorted(p.name for p in (tmp_path / "out").glob("*.png")) == ["a.png", "c.png"]
    assert "rendered 2 images" in r.out and "1 failed" in r.out
