"""The cohort manifest: one row per candidate case and the decision taken about it.

Columns: ``case_key`` and ``inclusion`` (required); ``patient_key``, ``source``, ``split``,
``view`` and ``reason`` (optional). ``case_key`` is the case as every other artifact names it
(for MIMIC-CXR the ``study_id`` exactly as the MIMIC tables write it). ``patient_key`` is the
raw patient identifier the dataset uses (MIMIC ``subject_id`` / DICOM PatientID): it is
replaced by its keyed hash on import (see :mod:`provgraph.evidence.pseudonym`), so the manifest row,
the MIMIC tables and the DICOM headers all name the same patient node (stated on the entry
and on the case node, where clustered analysis looks for it). ``inclusion`` is
include/exclude (also yes/no, true/false, 1/0, included/excluded). A blank ``split`` or
``view`` is kept as blank: the cohort rules treat it as undocumented, never as a default.
"""

from __future__ import annotations

from pathlib import Path

from provgraph.ingest.api import (
    CERTAIN,
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

REQUIRED = ("case_key", "inclusion")
INCLUDE = {"include", "included", "yes", "y", "true", "1"}
EXCLUDE = {"exclude", "excluded", "no", "n", "false", "0"}


class CohortImporter(UsesSecret, Importer):
    name = "cohort"
    version = "1"
    description = "cohort manifest CSV (case_key, patient_key, source, split, view, inclusion, reason)"
    handles = "file"
    suffixes = frozenset({".csv"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.suffix.lower() != ".csv":
            return NO
        if not all(c in csv_header(path) for c in REQUIRED):
            return NO
        cohort = bundle.contract.section("cohort")
        if cohort and bundle.relpath(path) == cohort["manifest"]:
            return CERTAIN
        return LIKELY

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        patients = Patients(ctx)
        add = ctx.add
        seen: dict[str, int] = {}
        for line, row, error in read_csv(source.path, REQUIRED, source.rel):
            if error:
                ctx.problem(line, error)
                continue
            case = row["case_key"]
            if not case:
                ctx.problem(line, "empty case_key")
                continue
            if case in seen:
                ctx.problem(line, f"case {case!r} is listed twice (first on line {seen[case]})")
                continue
            decision = row["inclusion"].lower()
            if decision not in INCLUDE | EXCLUDE:
                ctx.problem(
                    line,
                    f"case {case!r}: inclusion must be include or exclude, got {row['inclusion']!r}",
                )
                continue
            seen[case] = line
            node = ctx.iri("cohort-entry", case)
            case_node = ctx.iri("case", case)
            patient = patients.node(row.get("patient_key"))
            add(node, RDF_TYPE, PG.CohortEntry)
            add(node, PG.key, case)
            add(node, PG.case, case_node)
            add(node, PG.included, decision in INCLUDE)
            add(node, PG.patient, patient)
            # the case itself names its patient too: clustered analysis reads ?case pg:patient
            add(case_node, PG.patient, patient)
            add(node, PG.sourceDataset, row.get("source") or None)
            add(node, PG.split, row.get("split", "").lower() or None)
            if "view" in row:
                add(node, PG.viewPosition, row["view"].upper())
            add(node, PG.inclusionReason, row.get("reason") or None)
            add(node, PROV.wasDerivedFrom, ctx.source_iri)
            add(node, PG.sourceFile, ctx.source_iri)
            add(node, PG.sourceLine, line)
            ctx.record()
