"""The reference renderer on DICOM files pydicom writes here: polarity checked numerically,
windowing and LUTs against pydicom's own transforms, the record beside each image, and the
`render` command with bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pydicom
import pytest
from fixtures.make_images import ramp, sha256, write_dicom
from PIL import Image
from pydicom.dataset import Dataset
from pydicom.pixels import apply_modality_lut, apply_voi, apply_windowing
from pydicom.sequence import Sequence

from provgraph.capture.renderer import RenderError, render_file
from provgraph.evidence.renderings import FORMAT, check_record


def png(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        assert im.mode == "L"
        return np.asarray(im)


def render(tmp_path: Path, name: str, **dicom) -> tuple[np.ndarray, dict]:
    source = write_dicom(tmp_path / "dicom" / f"{name}.dcm", **dicom)
    record = render_file(source, tmp_path / "out" / f"{name}.png")
    return png(tmp_path / "out" / f"{name}.png"), record


def test_monochrome2_is_not_inverted_and_monochrome1_is(tmp_path: Path) -> None:
    m2, r2 = render(tmp_path, "m2", photometric="MONOCHROME2")
    m1, r1 = render(tmp_path, "m1", photometric="MONOCHROME1")
    # the same stored ramp: MONOCHROME2 shows low values dark, MONOCHROME1 shows them bright
    assert m2[0, 0] == 0 and m2[-1, -1] == 255
    assert m1[0, 0] == 255 and m1[-1, -1] == 0
    assert np.array_equal(m1, 255 - m2)
    assert np.all(np.diff(m2.ravel().astype(int)) >= 0)
    assert (r2["inverted"], r1["inverted"]) == (False, True)
    assert r1["voi_transform"] == r2["voi_transform"] == "minmax"


def test_one_scene_in_both_encodings_renders_alike(tmp_path: Path) -> None:
    # A radiograph-like scene: dark air (low attenuation) left, bright bone right, in
    # MONOCHROME2 encoding, and the same scene encoded as MONOCHROME1 (max - value).
    scene = np.tile(np.linspace(100, 3900, 16).round().astype(np.uint16), (4, 1))
    m2, _ = render(tmp_path, "m2", photometric="MONOCHROME2", pixels=scene)
    m1, _ = render(tmp_path, "m1", photometric="MONOCHROME1", pixels=(4095 - scene).astype(np.uint16))
    assert np.abs(m1.astype(int) - m2.astype(int)).max() <= 1  # rounding only
    assert m1[:, 0].max() < 10 and m1[:, -1].min() > 245  # air black, bone white


@pytest.mark.parametrize("photometric", ["MONOCHROME2", "MONOCHROME1"])
def test_header_window_matches_pydicom(tmp_path: Path, photometric: str) -> None:
    image, record = render(tmp_path, "w", photometric=photometric, window=(1000, 500))
    ds = pydicom.dcmread(tmp_path / "dicom" / "w.dcm")
    reference = apply_windowing(apply_modality_lut(ds.pixel_array, ds), ds)  # range 0..4095
    expected = np.rint(reference / 4095 * 255).astype(np.uint8)
    if photometric == "MONOCHROME1":
        expected = 255 - expected
    assert np.array_equal(image, expected)
    stored = ramp()
    below, above = stored <= 750, stored > 1250
    dark, bright = (0, 255) if photometric == "MONOCHROME2" else (255, 0)
    assert np.all(image[below] == dark) and np.all(image[above] == bright)
    assert record["voi_transform"] == "window"
    assert (record["window_center"], record["window_width"]) == (1000.0, 500.0)


def test_rescale_then_window_in_output_units(tmp_path: Path) -> None:
    # CT-like: stored 0..4095, HU = stored - 1024, soft-tissue window 40/400
    image, record = render(tmp_path, "ct", rescale=(1.0, -1024.0), window=(40, 400))
    ds = pydicom.dcmread(tmp_path / "dicom" / "ct.dcm")
    hu = apply_modality_lut(ds.pixel_array, ds)
    assert record["modality_transform"] == "rescale"
    assert np.all(image[hu <= -160.5] == 0) and np.all(image[hu > 239.5] == 255)
    reference = apply_windowing(hu, ds)
    assert np.array_equal(image, np.rint((reference + 1024) / 4095 * 255).astype(np.uint8))


def test_voi_lut_sequence_wins_and_matches_pydicom(tmp_path: Path) -> None:
    lut = Dataset()
    lut.LUTDescriptor = [4096, 0, 12]
    lut.LUTData = [min(4095, 2 * v) for v in range(4096)]  # a steeper curve than identity
    lut["LUTData"].VR = "US"
    path = write_dicom(tmp_path / "lut.dcm", window=(2048, 4096), attrs={"VOILUTSequence": Sequence([lut])})
    record = render_file(path, tmp_path / "lut.png")
    ds = pydicom.dcmread(path)
    expected = np.rint(apply_voi(ds.pixel_array, ds) / 4095 * 255).astype(np.uint8)
    assert np.array_equal(png(tmp_path / "lut.png"), expected)
    assert record["voi_transform"] == "lut" and record["window_center"] is None


def test_explicit_window_replaces_the_header(tmp_path: Path) -> None:
    path = write_dicom(tmp_path / "a.dcm", window=(2048, 4096))
    record = render_file(path, tmp_path / "a.png", window=(1000, 500))
    assert (record["window_center"], record["window_width"]) == (1000.0, 500.0)
    assert png(tmp_path / "a.png")[0, 0] == 0 and png(tmp_path / "a.png")[-1, -1] == 255


def test_record_is_valid_and_true_to_the_files(tmp_path: Path) -> None:
    source = write_dicom(tmp_path / "dicom" / "s1" / "x.dcm", photometric="MONOCHROME1", bits_stored=10)
    image = tmp_path / "rendered" / "x.png"
    record = render_file(source, image)
    sidecar = json.loads((tmp_path / "rendered" / "x.png.render.json").read_text())
    assert sidecar == record
    assert check_record(record) is None
    assert record["format"] == FORMAT
    assert (image.parent / record["source"]).resolve() == source.resolve()
    assert record["image"] == "x.png"
    assert record["source_sha256"] == sha256(source)
    assert record["image_sha256"] == sha256(image)
    assert record["photometric"] == "MONOCHROME1" and record["bits_stored"] == 10
    assert record["output_bits"] == 8 and record["renderer"] == "provgraph render"
    assert set(record["libraries"]) == {"numpy", "Pillow", "pydicom"}
    # nothing identifying travels with the image
    assert "10000001" not in json.dumps(record) and "Doe" not in json.dumps(record)


def test_rendering_is_deterministic(tmp_path: Path) -> None:
    source = write_dicom(tmp_path / "a.dcm")
    first = render_file(source, tmp_path / "one.png")
    second = render_file(source, tmp_path / "two.png")
    assert first["image_sha256"] == second["image_sha256"]


@pytest.mark.parametrize("implicit", [True, False])
def test_a_bare_data_set_renders_as_its_file_does(tmp_path: Path, implicit: bool) -> None:
    """A data set saved without preamble and file meta (``enforce_file_format=False``, as old
    ACR-NEMA-style files are) has no Transfer Syntax UID; its pixels are native in the encoding
    its elements were read in, so it renders to the same pixels as the same data set with meta."""
    whole, _ = render(tmp_path, "whole", photometric="MONOCHROME1")
    ds = pydicom.dcmread(tmp_path / "dicom" / "whole.dcm")
    del ds.file_meta
    ds.preamble = None
    bare = tmp_path / "dicom" / "bare.dcm"
    ds.save_as(bare, implicit_vr=implicit, little_endian=True, enforce_file_format=False)
    assert bare.read_bytes()[128:132] != b"DICM"
    render_file(bare, tmp_path / "out" / "bare.png")
    assert np.array_equal(png(tmp_path / "out" / "bare.png"), whole)


def test_what_cannot_be_rendered(tmp_path: Path) -> None:
    (tmp_path / "notes.dcm").write_text("not dicom")
    with pytest.raises(RenderError, match=r"notes.dcm: not a DICOM file"):
        render_file(tmp_path / "notes.dcm", tmp_path / "n.png")
    rgb = write_dicom(tmp_path / "rgb.dcm", photometric="RGB")
    with pytest.raises(
        RenderError, match=r"colour image \(PhotometricInterpretation RGB\): only MONOCHROME1/2"
    ):
        render_file(rgb, tmp_path / "rgb.png")
    assert not (tmp_path / "n.png").exists() and not (tmp_path / "rgb.png").exists()


def test_render_command(cli, tmp_path: Path) -> None:
    src = tmp_path / "dicom"
    write_dicom(src / "p1" / "a.dcm")
    write_dicom(src / "p2" / "b.dcm", photometric="MONOCHROME1")
    (src / "p2" / "broken.dcm").write_bytes(b"\x00" * 200)
    (src / "p2" / "report.txt").write_text("not an image, not rendered")
    write_dicom(src / ".cache" / "hidden.dcm")
    out = tmp_path / "out"
    r = cli("render", str(src), "-o", str(out))
    assert r.code == 2
    assert r.err.strip().splitlines() == [
        f"provgraph: error: {src / 'p2' / 'broken.dcm'}: not a DICOM file (no 'DICM' marker at byte 128, "
        "and pydicom reads no data set with a SOP Class UID from it)"
    ]
    assert "rendered 2 images" in r.out and "(1 MONOCHROME1 inverted); 1 failed" in r.out
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "p1/a.png",
        "p1/a.png.render.json",
        "p2/b.png",
        "p2/b.png.render.json",
    ]
    r = cli("render", str(src / "p1" / "a.dcm"), "-o", str(tmp_path / "single"), "--window", "1000", "500")
    assert r.code == 0
    record = json.loads((tmp_path / "single" / "a.png.render.json").read_text())
    assert record["voi_transform"] == "window" and record["window_width"] == 500.0
