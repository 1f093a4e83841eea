"""The ``dicom`` importer on DICOM files no one here wrote: pydicom's own test files and the
``pydicom-data`` distribution.

Where the files come from: the installed pydicom package's ``pydicom/data`` folder
(``test_files``, ``charset_files``, ``palettes``; github.com/pydicom/pydicom,
``src/pydicom/data``) and PyPI's ``pydicom-data`` 1.0.0, the ``data_store/data`` folder of
github.com/pydicom/pydicom-data (installed by the ``test`` extra; nothing is downloaded at test
time). Together 273 files, every transfer syntax those files use: implicit and explicit VR,
big endian, deflated, RLE, JPEG baseline / extended / lossless, JPEG-LS, JPEG 2000, files
without file meta (pydicom reads them with ``force=True``), and non-image objects (SR, RT
plan / structure set / dose, DICOMDIR, ECG, colour palettes).

Each file is imported, or refused with the reason pinned below; the only "truncated" ones are
the three the corpus ships truncated. Then copies cut inside an element header, inside a value,
inside a fragment, inside a sequence and before the sequence delimiter are all caught.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import data_store  # the test extra's pydicom-data distribution
import pydicom
import pytest
from fixtures.make_images import write_dicom
from pydicom.encaps import parse_fragments
from pydicom.filereader import data_element_generator

from provgraph.importers.dicom import must_be_dicom, quiet_pydicom
from provgraph.importers.dicom_read import read_header
from provgraph.ingest.testing import ingest_bundle, write_bundle

PYDICOM = Path(pydicom.__file__).parent / "data"
PYDICOM_DATA = Path(data_store.__file__).parent / "data"
CONTRACT = '[project]\nname = "corpus"\nbase_iri = "https://example.org/c/"\n'

#: The files refused, each with its reason (everything else that must be DICOM is imported).
REFUSED = {
    # 62 bytes of its 8192-byte Pixel Data are missing (the file's name says so)
    "pydicom/test_files/MR_truncated.dcm": "truncated: Pixel Data declares 8192 bytes but only 8130 remain",
    # cut inside the RT plan's beam sequence
    "pydicom/test_files/rtplan_truncated.dcm": (
        "truncated inside element (300A,00B0): it declares 976 bytes, 711 are present"
    ),
    # the JPEG 2000 codestream ends the file: no sequence delimiter after its last fragment
    "pydicom-data/emri_small_jpeg_2k_lossless_too_short.dcm": (
        "truncated: encapsulated Pixel Data ends without its sequence delimiter"
    ),
    # CT_small without file meta and with one stray leading byte: pydicom itself reads a single
    # bogus element (0820,0500) from it
    "pydicom/test_files/no_meta.dcm": (
        "not a DICOM file (no 'DICM' marker at byte 128, and pydicom reads no data set with a SOP "
        "Class UID from it)"
    ),
    # a suffix-less text file beside the DICOMDIR test images
    "pydicom/test_files/dicomdirtests/TINY_ALPHA/README": (
        "not a DICOM file (no 'DICM' marker at byte 128, and pydicom reads no data set with a SOP "
        "Class UID from it)"
    ),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_bundle(tmp_path_factory.mktemp("corpus") / "b", {}, CONTRACT)
    shutil.copytree(PYDICOM, root / "pydicom", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    shutil.copytree(PYDICOM_DATA, root / "pydicom-data")
    return root


@pytest.fixture(scope="module")
def ingested(corpus: Path):
    result = ingest_bundle(corpus)
    yield result
    result.close()


def _dicom_paths(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.parts[len(root.parts)] in ("pydicom", "pydicom-data") and must_be_dicom(p.name)
    )


def test_every_file_is_imported_or_refused_with_its_reason(corpus: Path, ingested) -> None:
    refused = {p.reason.split(": ", 1)[0]: p.reason.split(": ", 1)[1] for p in ingested.rejected}
    assert refused == REFUSED
    imported = {
        r["path"] for r in ingested.select("SELECT ?path WHERE { ?f a pg:DicomFile ; pg:path ?path }")
    }
    paths = _dicom_paths(corpus)
    assert len(paths) == 261  # of 273: the rest are JSON, text, dumps, an ICC profile, a gzip
    assert imported == set(paths) - set(REFUSED)
    assert not [n for n in ingested.notes if "truncated" in n.reason]


def test_non_image_objects_are_imported_as_what_they_are(ingested) -> None:
    rows = ingested.select(
        "SELECT ?path ?name WHERE { ?f a pg:DicomFile ; pg:path ?path ; pg:hasPixelData false ; "
        "pg:sopClassName ?name }"
    )
    names = {r["path"].rsplit("/", 1)[-1]: r["name"] for r in rows}
    assert names["rtplan.dcm"] == "RT Plan Storage"
    assert names["rtstruct.dcm"] == "RT Structure Set Storage"  # no file meta: read with force
    assert names["test-SR.dcm"] == "Comprehensive SR Storage"
    assert names["reportsi.dcm"] == "Basic Text SR Storage"
    assert names["DICOMDIR"] == "Media Storage Directory Storage"  # from the file meta
    assert names["waveform_ecg.dcm"] == "12-lead ECG Waveform Storage"
    assert names["hotiron.dcm"] == "Color Palette Storage"
    # no message about a missing image attribute for any of them, and no blank view position
    quiet = ("rtplan.dcm", "rtstruct.dcm", "test-SR.dcm", "DICOMDIR", "waveform_ecg.dcm", "hotiron.dcm")
    assert not [n for n in ingested.notes if n.reason.split(": ")[0].rsplit("/", 1)[-1] in quiet]
    assert not ingested.select("SELECT ?f WHERE { ?f pg:hasPixelData false ; pg:viewPosition ?v }"), (
        "a DICOM object without an image has no view position"
    )


def test_every_transfer_syntax_of_the_corpus_is_read(ingested) -> None:
    syntaxes = {
        r["ts"]
        for r in ingested.select("SELECT DISTINCT ?ts WHERE { ?f a pg:DicomFile ; pg:transferSyntax ?ts }")
    }
    expected = {
        "1.2.840.10008.1.2",  # implicit VR little endian
        "1.2.840.10008.1.2.1",  # explicit VR little endian
        "1.2.840.10008.1.2.2",  # explicit VR big endian
        "1.2.840.10008.1.2.1.99",  # deflated
        "1.2.840.10008.1.2.5",  # RLE lossless
        "1.2.840.10008.1.2.4.50",  # JPEG baseline
        "1.2.840.10008.1.2.4.51",  # JPEG extended
        "1.2.840.10008.1.2.4.70",  # JPEG lossless SV1
        "1.2.840.10008.1.2.4.80",  # JPEG-LS lossless
        "1.2.840.10008.1.2.4.81",  # JPEG-LS near-lossless
        "1.2.840.10008.1.2.4.90",  # JPEG 2000 lossless
        "1.2.840.10008.1.2.4.91",  # JPEG 2000
    }
    assert expected <= syntaxes, expected - syntaxes
    # files carrying elements after Pixel Data (data set trailing padding) are not "truncated"
    with_trailer = ("CT_small.dcm", "MR_small_RLE.dcm", "MR_small_jp2klossless.dcm", "US1_UNCR.dcm")
    got = ingested.select("SELECT ?path WHERE { ?f a pg:DicomFile ; pg:hasPixelData true ; pg:path ?path }")
    assert set(with_trailer) <= {r["path"].rsplit("/", 1)[-1] for r in got}


#: Files whose truncated copies are checked: native and encapsulated pixels with elements after
#: them, an encapsulated stream holding the delimiter's bytes inside a fragment, big endian,
#: implicit VR, sequences (RT plan, SR), a waveform, a DICOMDIR and a deflated data set.
CUT_FROM = [
    "pydicom/test_files/CT_small.dcm",
    "pydicom/test_files/MR_small_RLE.dcm",
    "pydicom/test_files/MR_small_jp2klossless.dcm",
    "pydicom/test_files/JPEG2000-embedded-sequence-delimiter.dcm",
    "pydicom/test_files/SC_rgb_jpeg.dcm",
    "pydicom/test_files/MR_small_bigendian.dcm",
    "pydicom/test_files/MR_small_implicit.dcm",
    "pydicom/test_files/rtplan.dcm",
    "pydicom/test_files/test-SR.dcm",
    "pydicom/test_files/waveform_ecg.dcm",
    "pydicom/test_files/dicomdirtests/DICOMDIR",
    "pydicom-data/JPGLosslessP14SV1_1s_1f_8b.dcm",
]


def _cuts(data: bytes, implicit: bool, little: bool, start: int) -> list[tuple[str, int]]:
    """Cut points inside the top-level elements (as pydicom's parser walks them) and the fragments."""
    fp = io.BytesIO(data)
    fp.seek(start)
    gen = data_element_generator(fp, implicit, little, defer_size=16)
    cuts = []
    while True:
        at = fp.tell()
        try:
            elem = next(gen)
        except StopIteration:
            break
        cuts.append(("inside an element header", at + 3))
        length = getattr(elem, "length", None)
        if length is None:  # an undefined-length sequence, read whole
            cuts.append(("inside a sequence", (at + fp.tell()) // 2))
        elif length not in (0, 1, 0xFFFFFFFF):
            cuts.append(("inside a value", elem.value_tell + length // 2))
        if int(elem.tag) == 0x7FE00010 and length == 0xFFFFFFFF:
            frag = io.BytesIO(data)
            frag.seek(elem.value_tell)
            _, offsets = parse_fragments(frag, endianness="<" if little else ">")
            for o in offsets:
                size = int.from_bytes(data[o + 4 : o + 8], "little")
                cuts += [("inside a fragment item header", o + 5), ("inside a fragment", o + 8 + size // 2)]
            last = offsets[-1] + 8 + int.from_bytes(data[offsets[-1] + 4 : offsets[-1] + 8], "little")
            cuts.append(("inside the sequence delimiter", last + 3))
    return cuts


@pytest.mark.parametrize("rel", CUT_FROM)
def test_truncated_copies_are_caught(rel: str, corpus: Path, tmp_path: Path) -> None:
    data = (corpus / rel).read_bytes()
    with quiet_pydicom():
        parsed, reason = read_header(str(corpus / rel), len(data))
        assert parsed is not None, reason
        first = next(iter(parsed.ds._dict.values()))  # the encoding pydicom read the data set with
        implicit, little = first.is_implicit_VR, first.is_little_endian
        fp = io.BytesIO(data)
        fp.seek(132)
        for _ in data_element_generator(fp, False, True, stop_when=lambda t, vr, n: t >> 16 != 2):
            pass
        meta_end = fp.tell()
        cut = tmp_path / "cut.dcm"
        cuts = _cuts(data, implicit, little, meta_end)
        assert len(cuts) >= 10
        for where, at in cuts:
            cut.write_bytes(data[:at])
            got, why = read_header(str(cut), at)
            assert got is None and why is not None and "truncated" in why, (where, at, why)


def test_a_deflated_copy_cut_short_is_caught(corpus: Path, tmp_path: Path) -> None:
    data = (corpus / "pydicom/test_files/image_dfl.dcm").read_bytes()
    cut = tmp_path / "cut.dcm"
    with quiet_pydicom():
        for at in (len(data) // 3, len(data) - 10):
            cut.write_bytes(data[:at])
            assert read_header(str(cut), at) == (
                None,
                "truncated or corrupt: the deflated data set does not inflate",
            )


def test_cut_copies_in_a_bundle_are_rejected_and_the_rest_imports(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    d = root / "dicom"
    d.mkdir()
    rle = (PYDICOM / "test_files" / "MR_small_RLE.dcm").read_bytes()
    frag = rle.rfind(b"\xfe\xff\x00\xe0")  # the last fragment item
    (d / "mid-fragment.dcm").write_bytes(rle[: frag + 100])
    (d / "trailer-cut.dcm").write_bytes(rle[:-5])  # cut inside the element after Pixel Data
    plan = (PYDICOM / "test_files" / "rtplan.dcm").read_bytes()
    (d / "mid-element.dcm").write_bytes(plan[: len(plan) // 2])
    shutil.copy(PYDICOM / "test_files" / "MR_small_RLE.dcm", d / "whole.dcm")
    ingested = ingest_bundle(root)
    try:
        assert sorted(str(p) for p in ingested.rejected) == [
            "dicom: dicom/mid-element.dcm: truncated inside element (300A,0070): it declares 180 bytes, "
            "106 are present",
            "dicom: dicom/mid-fragment.dcm: truncated inside Pixel Data fragment item 2: it declares "
            "6108 bytes, 92 are present",
            "dicom: dicom/trailer-cut.dcm: truncated inside element (FFFC,FFFC): it declares 126 bytes, "
            "121 are present",
        ]
        rows = ingested.select("SELECT ?path WHERE { ?f a pg:DicomFile ; pg:path ?path }")
        assert [r["path"] for r in rows] == ["dicom/whole.dcm"]
    finally:
        ingested.close()


def _facts(ingested) -> set[tuple[str, str, str]]:
    """Every triple but the import activities' clocks and the catalog's graph names."""
    rows = ingested.select(
        "SELECT ?s ?p ?o WHERE { ?s ?p ?o "
        "FILTER(?p NOT IN (prov:startedAtTime, prov:endedAtTime)) "
        "FILTER(!STRSTARTS(STR(?s), 'urn:provgraph:') && !STRSTARTS(STR(?o), 'urn:provgraph:')) }"
    )
    return {(r["s"], r["p"], r["o"]) for r in rows}


def test_worker_processes_import_exactly_what_one_process_does(corpus: Path, monkeypatch) -> None:
    """A folder of at least MIN_FILES members is read by forked workers
    (:mod:`provgraph.importers.dicom_pool`); the graph, the counts and every message, in order,
    are those of the serial loop."""
    runs = {}
    for workers in ("1", "2"):
        monkeypatch.setenv("PROVGRAPH_WORKERS", workers)
        ingested = ingest_bundle(corpus)
        try:
            results = sorted((r.rel, r.records, r.triples) for r in ingested.results if "pydicom" in r.rel)
            messages = [(str(p), p.kept) for r in ingested.results for p in r.problems]
            runs[workers] = (_facts(ingested), results, messages)
        finally:
            ingested.close()
    assert len(runs["1"][0]) > 5000 and len(runs["1"][2]) == 5 + 82
    assert runs["1"] == runs["2"]


@pytest.mark.parametrize(
    "syntax",
    [
        "1.2.840.10008.1.2.4.57",  # JPEG lossless, non-hierarchical
        "1.2.840.10008.1.2.4.92",  # JPEG 2000 Part 2 multi-component, lossless
        "1.2.840.10008.1.2.4.93",  # JPEG 2000 Part 2 multi-component
        "1.2.840.10008.1.2.4.201",  # HTJ2K lossless
        "1.2.840.10008.1.2.4.202",  # HTJ2K lossless RPCL
        "1.2.840.10008.1.2.4.203",  # HTJ2K
    ],
)
def test_encapsulated_syntaxes_the_corpus_lacks(syntax: str, tmp_path: Path) -> None:
    """pydicom-data 1.0.0 has no file in these syntaxes; a corpus JPEG 2000 file relabelled
    with pydicom (same encapsulated items, another transfer syntax UID) stands in: the importer
    only walks the fragments, so the codestream's codec does not matter to it."""
    from pydicom import dcmread

    ds = dcmread(PYDICOM / "test_files" / "MR_small_jp2klossless.dcm")
    ds.file_meta.TransferSyntaxUID = syntax
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    (root / "dicom").mkdir()
    ds.save_as(root / "dicom" / "a.dcm", enforce_file_format=True)
    data = (root / "dicom" / "a.dcm").read_bytes()
    # 200 bytes off: the 138-byte trailer, the delimiter and 54 bytes of the last fragment
    (root / "dicom" / "cut.dcm").write_bytes(data[: len(data) - 200])
    ingested = ingest_bundle(root)
    try:
        assert [str(p) for p in ingested.rejected] == [
            "dicom: dicom/cut.dcm: truncated inside Pixel Data fragment item 2: it declares 4314 bytes, "
            "4260 are present"
        ]
        rows = ingested.select(
            "SELECT ?path ?ts WHERE { ?f a pg:DicomFile ; pg:path ?path ; pg:transferSyntax ?ts }"
        )
        assert rows == [{"path": "dicom/a.dcm", "ts": syntax}]
    finally:
        ingested.close()


def test_zero_padding_after_the_last_element_is_not_a_cut(tmp_path: Path) -> None:
    """pydicom skips fewer than 8 bytes after the last element; zeros there are padding, while
    the first bytes of another element header mean the file was cut inside it."""
    whole = (PYDICOM / "test_files" / "CT_small.dcm").read_bytes()  # ends with (FFFC,FFFC) padding
    cut = tmp_path / "x.dcm"
    with quiet_pydicom():
        cut.write_bytes(whole + b"\x00\x00")
        assert read_header(str(cut), len(whole) + 2)[1] is None
        cut.write_bytes(whole + b"\xfc\xff\xfc")
        assert read_header(str(cut), len(whole) + 3) == (
            None,
            "truncated or corrupt: the 3 bytes after element (FFFC,FFFC) are not a whole data element "
            "(cut inside one, or stray bytes)",
        )


def test_a_long_header_value_is_skipped_not_read(tmp_path: Path) -> None:
    """A private OB element of 4 MiB before Pixel Data: its declared length is checked, its
    bytes are not loaded (memory stays bounded by the attributes the importer reads)."""
    from pydicom import dcmread

    ds = dcmread(PYDICOM / "test_files" / "CT_small.dcm")
    ds.add_new(0x00091010, "LO", "PRIVATE CREATOR")
    ds.add_new(0x00091011, "OB", b"\x01" * (4 << 20))
    path = tmp_path / "long.dcm"
    ds.save_as(path, enforce_file_format=True)
    with quiet_pydicom():
        parsed, reason = read_header(str(path), path.stat().st_size)
        assert reason is None and parsed is not None
        assert parsed.ds._dict[0x00091011].value is None  # deferred by pydicom: never read
        data = path.read_bytes()
        at = data.find(b"\x01" * 64) + 1000
        path.write_bytes(data[:at])
        assert read_header(str(path), at) == (
            None,
            f"truncated inside element (0009,1011): it declares {4 << 20} bytes, 1000 are present",
        )


def _meta_end(data: bytes) -> int:
    fp = io.BytesIO(data)
    fp.seek(132)
    for _ in data_element_generator(fp, False, True, stop_when=lambda t, vr, n: t >> 16 != 2):
        pass
    return fp.tell()


def test_a_data_set_in_implicit_vr_under_an_explicit_transfer_syntax(tmp_path: Path) -> None:
    """pydicom's fallback (``filereader._is_implicit_vr``): the file meta says explicit VR little
    endian, the data set is implicit; pydicom reads it as implicit, and so does the importer.
    Built from two corpus files holding the same data set: MR_small.dcm's file meta, then
    MR_small_implicit.dcm's data set."""
    explicit = (PYDICOM / "test_files" / "MR_small.dcm").read_bytes()
    implicit = (PYDICOM / "test_files" / "MR_small_implicit.dcm").read_bytes()
    data = explicit[: _meta_end(explicit)] + implicit[_meta_end(implicit) :]
    path = tmp_path / "mixed.dcm"
    path.write_bytes(data)
    with quiet_pydicom():
        assert pydicom.dcmread(path).Rows == 64  # pydicom itself reads it
        parsed, reason = read_header(str(path), len(data))
        assert reason is None and parsed is not None and parsed.pixels
        assert parsed.transfer_syntax == "1.2.840.10008.1.2.1"
        first = next(iter(parsed.ds._dict.values()))
        assert first.is_implicit_VR
        assert parsed.ds.Rows == 64 and parsed.ds.PatientID == pydicom.dcmread(path).PatientID
        path.write_bytes(data[:-200])  # Pixel Data ends this file: 200 of its bytes are gone
        assert read_header(str(path), len(data) - 200)[1] == (
            "truncated: Pixel Data declares 8192 bytes but only 7992 remain"
        )


def test_a_malformed_number_of_frames_is_a_note_and_not_stored(tmp_path: Path) -> None:
    """badVR.dcm (pydicom's test file with values invalid for their VR) has a NumberOfFrames
    that is not a number; a pydicom-written file says 0 frames. Both import with a note."""
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    shutil.copy(PYDICOM / "test_files" / "badVR.dcm", root / "bad.dcm")
    write_dicom(root / "zero.dcm", attrs={"NumberOfFrames": "0"})
    ingested = ingest_bundle(root)
    try:
        assert sorted(str(p) for p in ingested.notes) == [
            "bad.dcm: NumberOfFrames is not a number; ignored",
            "zero.dcm: NumberOfFrames is not a whole number of at least 1; ignored",
        ]
        assert ingested.rejected == []
        assert not ingested.select("SELECT ?f WHERE { ?f pg:numberOfFrames ?n }")
    finally:
        ingested.close()


def test_stray_bytes_are_called_corrupt_not_truncated(tmp_path: Path) -> None:
    """Bytes inserted between two elements are read by pydicom as an element with a tag no
    dictionary has, declaring far more bytes than the file holds: that is not a cut."""
    data = (PYDICOM / "test_files" / "CT_small.dcm").read_bytes()
    at = data.find(b"\x10\x00\x10\x00PN")  # (0010,0010) Patient's Name, explicit VR LE
    path = tmp_path / "x.dcm"
    path.write_bytes(data[:at] + b"[" * 5000 + data[at:])
    with quiet_pydicom():
        parsed, reason = read_header(str(path), len(data) + 5000)
    assert parsed is None and reason is not None
    assert reason.startswith("corrupt: bytes read as element (5B5B,5B5B), a tag no dictionary has, declare ")
