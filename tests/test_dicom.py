"""The DICOM header importer on files pydicom writes here: the attributes it keeps, keyed
hashes instead of identifiers (nowhere in the store, an export, a message or a log), bad files
reported one per line while the rest of the folder imports, and pixels never decoded."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyoxigraph as ox
import pytest
from conftest import CONTRACT, TEST_SECRET, ingest_bundle, write_bundle
from fixtures.make_images import write_dicom
from pydicom import dcmread
from pydicom.encaps import encapsulate

from provgraph.bundle.layout import Bundle
from provgraph.ingest.planner import plan_bundle
from provgraph.rdf.vocab import PG_NS

PREFIX = f"PREFIX pg: <{PG_NS}>\n"

RAW = {
    "patient": "10000032",
    "name": "Kowalska^Anna",
    "birth_date": "19610203",
    "accession": "ACC987654",
}
JPEG2000 = "1.2.840.10008.1.2.4.90"


def patient_digest(raw: str, secret: str = TEST_SECRET) -> str:
    """The documented convention, computed independently of provgraph.evidence.pseudonym."""
    return hmac.new(secret.encode(), b"patient\x00" + raw.encode(), hashlib.sha256).hexdigest()


def identifying_dicom(path: Path, **kw) -> Path:
    return write_dicom(
        path,
        patient=RAW["patient"],
        name=RAW["name"],
        birth_date=RAW["birth_date"],
        accession=RAW["accession"],
        **kw,
    )


def dump(store) -> str:
    buf = io.BytesIO()
    store.dump(buf, ox.RdfFormat.N_QUADS)
    return buf.getvalue().decode()


def uids(path: Path) -> list[str]:
    ds = dcmread(path, stop_before_pixels=True)
    return [str(ds.SOPInstanceUID), str(ds.StudyInstanceUID), str(ds.SeriesInstanceUID)]


def test_headers_are_imported_without_pixels(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    identifying_dicom(root / "dicom" / "a.dcm", window=(1000, 500), rescale=(1.0, -1024.0), view="ap")
    identifying_dicom(root / "dicom" / "b.dcm", photometric="MONOCHROME1", view="", bits_stored=10)
    store, results, problems = ingest_bundle(root)
    assert problems == [] and [(r.importer, r.records, r.problems) for r in results if r.rel == "dicom"] == [
        ("dicom", 2, [])
    ]
    rows = store.select(
        PREFIX
        + """SELECT ?path ?pi ?view ?bits ?wc ?ww ?slope ?icpt ?rows ?voi ?ts ?modality ?patient WHERE {
             ?f a pg:DicomFile ; pg:path ?path ; pg:photometricInterpretation ?pi ; pg:viewPosition ?view ;
                pg:bitsStored ?bits ; pg:imageRows ?rows ; pg:hasVoiLut ?voi ; pg:transferSyntax ?ts ;
                pg:modality ?modality ; pg:patient ?patient ; pg:sha256 ?sha .
             OPTIONAL { ?f pg:windowCenter ?wc ; pg:windowWidth ?ww }
             OPTIONAL { ?f pg:rescaleSlope ?slope ; pg:rescaleIntercept ?icpt } } ORDER BY ?path"""
    )
    got = [{k: (v.value if v is not None else None) for k, v in r.items()} for r in rows]
    patient = f"https://example.org/t/patient/{patient_digest(RAW['patient'])}"
    assert got == [
        {
            "path": "dicom/a.dcm",
            "pi": "MONOCHROME2",
            "view": "AP",
            "bits": "12",
            "wc": "1000",
            "ww": "500",
            "slope": "1",
            "icpt": "-1024",
            "rows": "8",
            "voi": "false",
            "ts": "1.2.840.10008.1.2.1",
            "modality": "DX",
            "patient": patient,
        },
        {
            "path": "dicom/b.dcm",
            "pi": "MONOCHROME1",
            "view": "",
            "bits": "10",
            "wc": None,
            "ww": None,
            "slope": None,
            "icpt": None,
            "rows": "8",
            "voi": "false",
            "ts": "1.2.840.10008.1.2.1",
            "modality": "DX",
            "patient": patient,
        },
    ]


def test_identifiers_never_reach_store_export_messages_or_logs(cli, tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    a = identifying_dicom(root / "dicom" / "a.dcm")
    # a value pydicom would complain about (and quote) if it validated: too long for DA
    identifying_dicom(root / "dicom" / "b.dcm", attrs={"PatientBirthDate": RAW["birth_date"] + "99"})
    (root / "cohort.csv").write_text(
        "case_key,patient_key,split,view,inclusion\n"
        f"s1,{RAW['patient']},test,PA,include\n"
        f"s2,{RAW['patient']},test,PA,maybe\n"  # rejected row: its message must not quote the patient
    )
    # a real process with debug logging, so the log a user would see is checked too
    env = {**os.environ, "PROVGRAPH_SECRET": TEST_SECRET}
    r1 = subprocess.run(
        [sys.executable, "-m", "provgraph", "-vv", "-C", str(root), "ingest"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r1.returncode == 2, r1.stderr
    r2 = cli("-C", str(root), "export", "--format", "nquads")
    r3 = cli("-C", str(root), "export", "--format", "provn")
    text = "\n".join([r1.stdout, r1.stderr, r2.out, r3.out])
    assert "inclusion must be include or exclude" in r1.stderr and "INFO" in r1.stderr
    secrets = [*RAW.values(), RAW["birth_date"] + "99", *uids(a), "Kowalska", "Anna"]
    leaked = [s for s in secrets if s in text]
    assert leaked == []
    assert TEST_SECRET not in text
    assert patient_digest(RAW["patient"]) in r2.out


def test_one_patient_one_node_across_sources(tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "b",
        {
            "cohort.csv": f"case_key,patient_key,inclusion\n50000001, {RAW['patient']} ,include\n",
            "meta.csv": "dicom_id,subject_id,study_id,ViewPosition\n"
            f"d1,{RAW['patient']},50000001,PA\nd2,10000033,50000002,AP\n",
            "split.csv": f"dicom_id,study_id,subject_id,split\nd1,50000001,{RAW['patient']},test\n",
        },
        CONTRACT,
    )
    identifying_dicom(root / "dicom" / "a.dcm")
    store, results, problems = ingest_bundle(root)
    assert problems == [] and all(not r.problems for r in results)
    rows = store.select(
        PREFIX
        + "SELECT ?patient (COUNT(DISTINCT ?who) AS ?n) WHERE { ?who pg:patient ?patient } GROUP BY ?patient "
        "ORDER BY DESC(?n)"
    )
    counts = {r["patient"].value.rsplit("/", 1)[-1]: int(r["n"].value) for r in rows}
    # manifest entry, metadata row, split row, DICOM file and the case all name one node
    assert counts == {patient_digest(RAW["patient"]): 5, patient_digest("10000033"): 2}
    # each case has exactly one patient, which is what clustered analysis reads
    cases = store.select(
        PREFIX
        + "SELECT DISTINCT ?case ?p WHERE { ?case pg:patient ?p . FILTER(CONTAINS(STR(?case), '/case/')) }"
    )
    assert sorted((r["case"].value.rsplit("/", 1)[-1], r["p"].value.rsplit("/", 1)[-1]) for r in cases) == [
        ("50000001", patient_digest(RAW["patient"])),
        ("50000002", patient_digest("10000033")),
    ]


def test_bad_files_are_reported_one_per_line_and_the_rest_imports(cli, tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    d = root / "dicom"
    write_dicom(d / "good.dcm")
    write_dicom(d / "noext")  # suffix-less DICOM, as some archives store them
    (d / "notes.dcm").write_text("radiologist notes, not an image\n" * 10)
    head = write_dicom(d / "short-header.dcm").read_bytes()
    (d / "short-header.dcm").write_bytes(head[: head.find(b"\xe0\x7f\x10\x00") - 20])
    (d / "short-meta.dcm").write_bytes(head[:200])
    full = write_dicom(d / "short-pixels.dcm").read_bytes()
    (d / "short-pixels.dcm").write_bytes(full[:-10])
    write_dicom(d / "missing.dcm", drop=("PatientID", "PhotometricInterpretation"))
    write_dicom(d / "charset.dcm", attrs={"SpecificCharacterSet": "ISO_IR 999"})
    utf8 = write_dicom(d / "undecodable.dcm", attrs={"SpecificCharacterSet": "ISO_IR 192"}).read_bytes()
    (d / "undecodable.dcm").write_bytes(utf8.replace(b"Doe^Jane", b"Jos\xe9^Ann"))
    (d / "report.txt").write_text("FINDINGS: none\n")
    r = cli("-C", str(root), "ingest")
    assert r.code == 2
    lines = sorted(line for line in r.err.splitlines() if line.startswith("provgraph: rejected"))
    expected = [
        r"dicom: dicom/notes\.dcm: not a DICOM file \(no 'DICM' marker at byte 128, and pydicom reads no "
        r"data set with a SOP Class UID from it\)",
        r"dicom: dicom/short-meta\.dcm: truncated: no data elements after the file meta header \(200 bytes\)",
        r"dicom: dicom/short-pixels\.dcm: truncated: Pixel Data declares 128 bytes but only 118 remain",
    ]
    assert len(lines) == len(expected), lines
    for line, pattern in zip(lines, expected, strict=True):
        assert re.fullmatch("provgraph: rejected: " + pattern, line), line
    # files whose header was imported get notes, never "rejected ... imported without it"
    notes = sorted(line for line in r.err.splitlines() if line.startswith("provgraph: note"))
    expected = [
        r"dicom: dicom/charset\.dcm: unknown SpecificCharacterSet 'ISO_IR 999'; text was decoded as ASCII, "
        r"so keyed hashes of names may not match other sources",
        r"dicom: dicom/missing\.dcm: missing PatientID, PhotometricInterpretation; its other header facts "
        r"are imported \(a rule that needs them cannot judge this file\)",
        # cut exactly between two elements: nothing in the file is short, but an image lacks its pixels
        r"dicom: dicom/short-header\.dcm: no Pixel Data \(7FE0,0010\) although its SOP class is Digital "
        r"X-Ray Image Storage - For Presentation: imported as a header without pixels \(written without "
        r"them, or cut at an element boundary\)",
        r"dicom: dicom/undecodable\.dcm: text that does not decode in its declared character set "
        r"\(replacement characters used\); keyed hashes of names may not match other sources",
    ]
    assert len(notes) == len(expected), notes
    for line, pattern in zip(notes, expected, strict=True):
        assert re.fullmatch("provgraph: note: " + pattern, line), line
    assert "3 records rejected, 4 imported with a note" in r.out
    # an unchanged re-ingest reports the recorded problems again, notes still notes
    again = cli("-C", str(root), "ingest", "--format", "json")
    doc = json.loads(again.out)
    assert (doc["counts"]["unchanged"], doc["counts"]["rejected"], doc["counts"]["notes"]) == (2, 3, 4)
    assert again.code == 2  # the three rejections, not the notes
    q = cli(
        "-C",
        str(root),
        "query",
        "--format",
        "csv",
        "SELECT ?path ?dicom WHERE { ?f pg:path ?path . FILTER(STRSTARTS(?path, 'dicom/')) "
        "BIND(EXISTS { ?f a pg:DicomFile } AS ?dicom) } ORDER BY ?path",
    )
    assert q.out.split() == [
        "path,dicom",
        "dicom/charset.dcm,true",
        "dicom/good.dcm,true",
        "dicom/missing.dcm,true",
        "dicom/noext,true",
        "dicom/notes.dcm,false",
        "dicom/report.txt,false",
        "dicom/short-header.dcm,true",
        "dicom/short-meta.dcm,false",
        "dicom/short-pixels.dcm,false",
        "dicom/undecodable.dcm,true",
    ]


def test_compressed_pixels_are_never_decoded(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    path = write_dicom(root / "dicom" / "j2k.dcm")
    ds = dcmread(path)
    ds.file_meta.TransferSyntaxUID = JPEG2000
    ds.PixelData = encapsulate([b"not a JPEG 2000 codestream" * 3])
    ds["PixelData"].VR = "OB"
    ds["PixelData"].is_undefined_length = True
    ds.save_as(path, enforce_file_format=True)
    with pytest.raises(Exception):  # noqa: B017 - whatever the decoder raises
        _ = dcmread(path).pixel_array
    store, results, _ = ingest_bundle(root)
    assert [r.problems for r in results if r.rel == "dicom"] == [[]]
    assert store.ask(PREFIX + f'ASK {{ ?f a pg:DicomFile ; pg:transferSyntax "{JPEG2000}" }}')
    # an encapsulated stream that was cut short is caught from its missing delimiter
    path.write_bytes(path.read_bytes()[:-8])
    _, results, _ = ingest_bundle(root)
    (result,) = [r for r in results if r.rel == "dicom"]
    assert [str(p) for p in result.problems] == [
        "dicom: dicom/j2k.dcm: truncated: encapsulated Pixel Data ends without its sequence delimiter"
    ]


def test_secret_file_is_created_private_and_changes_reimport(cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PROVGRAPH_SECRET")
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    identifying_dicom(root / "dicom" / "a.dcm")
    assert cli("-C", str(root), "ingest").code == 0
    secret = root / ".provgraph" / "secret"
    assert secret.stat().st_mode & 0o777 == 0o600
    assert (root / ".provgraph" / ".gitignore").read_text() == "*\n"
    key = secret.read_text().strip()
    assert re.fullmatch(r"[0-9a-f]{64}", key)
    node = f"patient/{patient_digest(RAW['patient'], key)}"
    q = "SELECT ?p WHERE { ?f a pg:DicomFile ; pg:patient ?p }"
    assert node in cli("-C", str(root), "query", "--format", "csv", q).out
    assert "0 imported, 2 unchanged" in cli("-C", str(root), "ingest").out
    # another secret (from a file named by the environment) re-imports and re-keys
    other = tmp_path / "elsewhere" / "key"
    other.parent.mkdir()
    other.write_text("x" * 40)
    other.chmod(0o600)
    monkeypatch.setenv("PROVGRAPH_SECRET_FILE", str(other))
    r = cli("-C", str(root), "ingest")
    assert "1 imported" in r.out  # the DICOM folder; the contract does not depend on the key
    assert (
        f"patient/{patient_digest(RAW['patient'], 'x' * 40)}"
        in cli("-C", str(root), "query", "--format", "csv", q).out
    )
    other.chmod(0o644)
    r = cli("-C", str(root), "ingest")
    assert r.code == 2
    assert f"{other}: the pseudonymisation secret is accessible to group or others" in r.err
    monkeypatch.setenv("PROVGRAPH_SECRET", "too short")
    r = cli("-C", str(root), "ingest")
    assert r.code == 2 and "must be at least 32 characters (got 9)" in r.err
    assert "too short" not in r.err


def test_detection(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {}, CONTRACT)
    write_dicom(root / "dicom" / "s1" / "a.dcm")
    write_dicom(root / "dicom" / "s1" / "b.dcm")
    (root / "dicom" / "s1.txt").write_text("report")  # MIMIC keeps reports beside study folders
    write_dicom(root / "mixed" / "x.dcm")
    (root / "mixed" / "x.png").write_bytes(b"\x89PNG")
    (root / "mixed" / "x.csv").write_text("a,b\n")
    write_dicom(root / "loose")  # no suffix, found by its DICM marker
    bundle = Bundle.open(root)
    plan, problems = plan_bundle(bundle, root)
    assert problems == []
    got = {bundle.relpath(p): i.name for p, i in plan}
    assert got == {
        "provgraph.toml": "contract",
        "dicom": "dicom",
        "loose": "dicom",
        "mixed/x.dcm": "dicom",
        "mixed/x.png": "files",
        "mixed/x.csv": "files",
    }
    # a single file is its own source: its problems name it once
    (root / "loose").write_bytes(b"\x00" * 128 + b"DICM" + b"\x02")
    _, results, _ = ingest_bundle(root)
    assert [str(p) for r in results if r.rel == "loose" for p in r.problems] == [
        "loose: truncated: no data elements after the file meta header (133 bytes)"
    ]
