"""MIMIC-CXR source tables: the image metadata table and the official split table.

* metadata (``mimic-cxr-2.0.0-metadata.csv``): ``dicom_id, subject_id, study_id,
  ViewPosition`` required; ``Rows, Columns, PerformedProcedureStepDescription,
  ViewCodeSequence_CodeMeaning`` kept when present. ``StudyDate``/``StudyTime`` and the other
  columns are not stored (dates can identify a person and no rule needs them).
* split (``mimic-cxr-2.0.0-split.csv``): ``dicom_id, study_id, subject_id, split`` with split
  one of train, validate, test.

Each row becomes a node keyed by ``dicom_id`` that names its case (``study_id`` exactly as
written, the benchmark's case key) and its patient (``subject_id`` through the keyed hash of
:mod:`provgraph.evidence.pseudonym`; the raw value is never stored or echoed); the case node is linked
to the patient as well. Decompress the
``.csv.gz`` files PhysioNet ships before ingesting them.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from provgraph.ingest.api import (
    IRI,
    LIKELY,
    NO,
    PG,
    PROV,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    Patients,
    Source,
    UsesSecret,
    csv_header,
    read_csv,
)

SPLITS = ("train", "validate", "test")


class _MimicTable(UsesSecret, Importer):
    handles = "file"
    suffixes = frozenset({".csv"})  # detect() claims no other file
    required: ClassVar[tuple[str, ...]]
    kind: ClassVar[str]

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.suffix.lower() != ".csv":
            return NO
        header = csv_header(path)
        return LIKELY if all(c in header for c in self.required) else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        patients = Patients(ctx)
        seen: dict[str, int] = {}
        for line, row, error in read_csv(source.path, self.required, source.rel):
            if error:
                ctx.problem(line, error)
                continue
            empty = [c for c in ("dicom_id", "study_id", "subject_id") if not row[c]]
            if empty:
                ctx.problem(line, f"empty {', '.join(empty)}")
                continue
            dicom_id = row["dicom_id"]
            if dicom_id in seen:
                ctx.problem(line, f"dicom_id {dicom_id!r} is listed twice (first on line {seen[dicom_id]})")
                continue
            reason = self.check(row)
            if reason:
                ctx.problem(line, f"dicom_id {dicom_id!r}: {reason}")
                continue
            seen[dicom_id] = line
            node = ctx.iri(self.kind, dicom_id)
            case = ctx.iri("case", row["study_id"])
            patient = patients.node(row["subject_id"])
            ctx.add(node, PG.dicomId, dicom_id)
            ctx.add(node, PG.case, case)
            ctx.add(node, PG.patient, patient)
            ctx.add(case, PG.patient, patient)  # the study's patient, where analysis looks for it
            ctx.add(node, PROV.wasDerivedFrom, ctx.source_iri)
            ctx.add(node, PG.sourceFile, ctx.source_iri)
            ctx.add(node, PG.sourceLine, line)
            self.write(ctx, node, row)
            ctx.record()

    def check(self, row: dict[str, str]) -> str | None:
        """Why a row is unusable beyond the shared key columns (None when fine)."""
        raise NotImplementedError

    def write(self, ctx: ImportContext, node: IRI, row: dict[str, str]) -> None:
        raise NotImplementedError


class MimicMetadataImporter(_MimicTable):
    name = "mimic-metadata"
    version = "1"
    description = "MIMIC-CXR metadata CSV (dicom_id, subject_id, study_id, ViewPosition, Rows, ...)"
    required = ("dicom_id", "subject_id", "study_id", "ViewPosition")
    kind = "mimic-image"

    def check(self, row: dict[str, str]) -> str | None:
        for column in ("Rows", "Columns"):
            text = row.get(column, "")
            if text and not _whole(text):
                return f"{column} must be a whole number, got {text!r}"
        return None

    def write(self, ctx: ImportContext, node: IRI, row: dict[str, str]) -> None:
        add = ctx.add
        add(node, RDF_TYPE, PG.ImageMetadata)
        add(node, PG.viewPosition, row["ViewPosition"].upper())
        if row.get("Rows"):
            add(node, PG.imageRows, int(float(row["Rows"])))
        if row.get("Columns"):
            add(node, PG.imageColumns, int(float(row["Columns"])))
        add(node, PG.procedureDescription, row.get("PerformedProcedureStepDescription") or None)
        add(node, PG.viewCodeMeaning, row.get("ViewCodeSequence_CodeMeaning") or None)


class MimicSplitImporter(_MimicTable):
    name = "mimic-split"
    version = "1"
    description = "MIMIC-CXR split CSV (dicom_id, study_id, subject_id, split)"
    required = ("dicom_id", "study_id", "subject_id", "split")
    kind = "mimic-split"

    def check(self, row: dict[str, str]) -> str | None:
        if row["split"].lower() not in SPLITS:
            return f"split must be one of {', '.join(SPLITS)}, got {row['split']!r}"
        return None

    def write(self, ctx: ImportContext, node: IRI, row: dict[str, str]) -> None:
        ctx.add(node, RDF_TYPE, PG.SplitAssignment)
        ctx.add(node, PG.split, row["split"].lower())


def _whole(text: str) -> bool:
    """'2544' or pandas' '2544.0'."""
    try:
        value = float(text)
    except ValueError:
        return False
    return value.is_integer() and value >= 0
