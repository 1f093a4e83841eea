"""Report labels in the CheXpert family of CSV formats.

* ``chexpert-labels``: the CheXpert labeler's ``labeled_reports.csv`` (``Reports`` holding the
  report text, then 14 finding columns coded 1.0 / 0.0 / -1.0 / blank).
* ``chexbert-labels``: CheXbert's output (``Report Impression`` + 14 findings), either as CheXbert
  writes it (1 / 0 / -1 / blank) or with its raw classes 0-3 (0 blank, 1 positive, 2 negative,
  3 uncertain). The encoding is detected from the whole file and recorded on every extraction
  (``pg:labelEncoding``); a file whose values fit both codings (only 0 and 1) is refused unless
  ``[annotation].chexbert_encoding`` says which it is.
* ``mimic-reference``: the MIMIC-CXR CheXpert / NegBio reference labels
  (``subject_id, study_id`` + 14 findings). The case key is ``study_id`` as written;
  ``subject_id`` identifies a patient and is never stored.
* ``reference-labels``: the canonical reference format, CSV ``case, finding, state``.

Labeller outputs hold report *text*, not paths. Each row becomes a ``pg:Extraction`` with the
SHA-256 of its text (with and without one trailing newline), which the statistics engine
matches against the file inventory to find the output file, and so the call, case and
condition. Optional ``report`` (bundle path), ``case`` and ``condition`` columns name them
explicitly instead.

The labels of a row (or, for the reference formats, of a case) are one label row
(:mod:`provgraph.evidence.labelrows`: ``pg:findingOrder`` and ``pg:labelStates``), not one node per
label: label cells are most of a benchmark's data.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from provgraph.bundle.contract.sections.annotation import CHEXPERT_FINDINGS, STATES
from provgraph.evidence import labelrows
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
    InputError,
    Source,
    csv_header,
    read_csv,
)

#: CheXpert coding (labeler output, MIMIC reference, CheXbert as written)
CHEXPERT_CODES = {
    "1": "POSITIVE",
    "1.0": "POSITIVE",
    "0": "NEGATIVE",
    "0.0": "NEGATIVE",
    "-1": "UNCERTAIN",
    "-1.0": "UNCERTAIN",
    "": "NOT_MENTIONED",
}
#: CheXbert's raw classes before its own conversion
CHEXBERT_RAW = {"0": "NOT_MENTIONED", "1": "POSITIVE", "2": "NEGATIVE", "3": "UNCERTAIN"}
ENCODING_NAMES = {
    "converted": "CheXpert coding 1/0/-1/blank",
    "raw": "CheXbert raw classes 0-3 (0 blank, 1 positive, 2 negative, 3 uncertain)",
}
KEY_COLUMNS = ("report", "case", "condition")


def finding_columns(header: list[str]) -> list[str]:
    return [h for h in header if h in CHEXPERT_FINDINGS]


def text_hashes(text: str) -> list[str]:
    """SHA-256 of a report text as UTF-8 bytes, and of the text with one trailing newline."""
    raw = text.encode("utf-8")
    out = [hashlib.sha256(raw).hexdigest()]
    if not text.endswith("\n"):
        out.append(hashlib.sha256(raw + b"\n").hexdigest())
    return out


def write_row(
    ctx: ImportContext,
    node,
    cls,
    case: str | None,
    labels: list[tuple[str, str]],
    line: int,
) -> None:
    """One label row (see :mod:`provgraph.evidence.labelrows`): the states of every finding, one node."""
    add = ctx.add
    order, states = labelrows.encode(labels)
    add(node, RDF_TYPE, cls)
    if case is not None:
        add(node, PG.case, ctx.iri("case", case))
    add(node, PG.findingOrder, order)
    add(node, PG.labelStates, states)
    add(node, PG.sourceFile, ctx.source_iri)
    add(node, PG.sourceLine, line)


class _LabellerCsv(Importer):
    """A labeller's output CSV: one report text per row, one column per finding."""

    handles = "file"
    suffixes = frozenset({".csv"})  # detect() claims no other file
    text_column: str = ""
    extractor: str = ""
    uses_sections = ("annotation",)

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.suffix.lower() != ".csv":
            return NO
        header = csv_header(path)
        if self.text_column in header and len(finding_columns(header)) >= 1:
            return CERTAIN
        return NO

    def encoding(self, source: Source, ctx: ImportContext, findings: list[str]) -> tuple[str, dict[str, str]]:
        return "converted", CHEXPERT_CODES

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        header = csv_header(source.path)
        findings = finding_columns(header)
        if not findings:
            raise InputError(
                source.rel, f"no CheXpert finding columns in the header ({', '.join(header)})", 1
            )
        encoding, codes = self.encoding(source, ctx, findings)
        add = ctx.add
        seen: dict[tuple[str, ...], tuple[int, tuple[str, ...]]] = {}
        for line, row, error in read_csv(source.path, (self.text_column,), source.rel):
            if error:
                ctx.problem(line, error)
                continue
            text = row[self.text_column]
            states = []
            bad = None
            for f in findings:
                state = codes.get(row[f])
                if state is None:
                    allowed = ", ".join(repr(c) if c else "blank" for c in sorted(codes, key=len))
                    bad = f"{f}: unknown label value {row[f]!r} ({ENCODING_NAMES[encoding]}: {allowed})"
                    break
                states.append(state)
            if bad:
                ctx.problem(line, bad)
                continue
            if not text.strip() and not row.get("report"):
                ctx.problem(line, f"empty {self.text_column}: the labels cannot be tied to a report")
                continue
            report = row.get("report") or None
            report_rel = ctx.bundle_rel(report) if report else None
            if report and report_rel is None:
                ctx.problem(line, f"report path {report!r} lies outside the bundle")
                continue
            digests = text_hashes(text)
            key = (report_rel or digests[0], row.get("case") or "", row.get("condition") or "")
            if key in seen:
                first, prior = seen[key]
                if prior != tuple(states):
                    ctx.problem(line, f"the same report is labelled differently on line {first}")
                continue  # identical text and labels: one extraction serves every copy
            seen[key] = (line, tuple(states))
            extraction = ctx.iri("extraction", source.rel, *(k for k in key if k))
            add(extraction, RDF_TYPE, PG.Extraction)
            add(extraction, PG.extractor, self.extractor)
            add(extraction, PG.labelEncoding, ENCODING_NAMES[encoding])
            add(extraction, PG.inputChars, len(text))
            # The labeller's raw output is this very row of this file.
            add(extraction, PG.rawResponseIn, ctx.source_iri)
            add(extraction, PG.sourceFile, ctx.source_iri)
            add(extraction, PG.sourceLine, line)
            if report_rel:
                add(extraction, PROV.used, ctx.file_iri(report_rel))
            else:
                for digest in digests:
                    add(extraction, PG.reportSha256, digest)
            row_node = ctx.iri("label", source.rel, *(k for k in key if k))
            labels = list(zip(findings, states, strict=True))
            write_row(ctx, row_node, PG.CandidateLabelRow, row.get("case") or None, labels, line)
            add(row_node, PROV.wasGeneratedBy, extraction)
            add(row_node, PROV.wasDerivedFrom, ctx.source_iri)
            if report_rel:
                add(row_node, PROV.wasDerivedFrom, ctx.file_iri(report_rel))
            if row.get("condition"):
                add(row_node, PG.condition, ctx.iri("condition", row["condition"]))
            ctx.record()


class CheXpertLabelsImporter(_LabellerCsv):
    name = "chexpert-labels"
    version = "1"
    description = "CheXpert labeler output CSV (Reports + 14 findings: 1, 0, -1, blank)"
    text_column = "Reports"
    extractor = "chexpert-labeler"


class CheXbertLabelsImporter(_LabellerCsv):
    name = "chexbert-labels"
    version = "1"
    description = "CheXbert output CSV (Report Impression + 14 findings; raw 0-3 or 1/0/-1/blank, detected)"
    text_column = "Report Impression"
    extractor = "chexbert"

    def encoding(self, source: Source, ctx: ImportContext, findings: list[str]) -> tuple[str, dict[str, str]]:
        declared = (ctx.bundle.contract.section("annotation") or {}).get("chexbert_encoding", "auto")
        if declared != "auto":
            return declared, CHEXBERT_RAW if declared == "raw" else CHEXPERT_CODES
        values: set[str] = set()
        for _, row, error in read_csv(source.path, (self.text_column,), source.rel):
            if not error:
                values.update(row[f] for f in findings)
        raw_only = values & {"2", "3", "2.0", "3.0"}
        converted_only = values & {"", "-1", "-1.0"}
        if raw_only and converted_only:
            raise InputError(
                source.rel,
                "mixes CheXbert raw classes (2, 3) with converted values (-1, blank); "
                "one file must use one coding",
            )
        if raw_only:
            return "raw", CHEXBERT_RAW
        if converted_only:
            return "converted", CHEXPERT_CODES
        raise InputError(
            source.rel,
            "only the values 0 and 1 occur, which mean different things in CheXbert's raw classes "
            "(0 = blank) and in its converted output (0 = negative); declare "
            '[annotation].chexbert_encoding = "raw" or "converted"',
        )


class MimicReferenceImporter(Importer):
    name = "mimic-reference"
    version = "1"
    description = (
        "MIMIC-CXR CheXpert/NegBio reference labels (subject_id, study_id + 14 findings; "
        "subject_id is not stored)"
    )
    handles = "file"
    suffixes = frozenset({".csv"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.suffix.lower() != ".csv":
            return NO
        header = csv_header(path)
        if "study_id" in header and finding_columns(header):
            return CERTAIN
        return NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        header = csv_header(source.path)
        findings = finding_columns(header)
        labeller = "negbio" if "negbio" in source.path.name.lower() else "chexpert"
        seen: dict[str, int] = {}
        for line, row, error in read_csv(source.path, ("study_id",), source.rel):
            if error:
                ctx.problem(line, error)
                continue
            study = row["study_id"]
            if not study:
                ctx.problem(line, "empty study_id")
                continue
            if study in seen:
                ctx.problem(line, f"study_id {study} is labelled twice (first on line {seen[study]})")
                continue
            states = [CHEXPERT_CODES.get(row[f]) for f in findings]
            bad = [f for f, s in zip(findings, states, strict=True) if s is None]
            if bad:
                ctx.problem(
                    line, f"{bad[0]}: unknown label value {row[bad[0]]!r} (expected 1.0, 0.0, -1.0 or blank)"
                )
                continue
            seen[study] = line
            node = ctx.iri("label", source.rel, study)
            write_row(ctx, node, PG.ReferenceLabelRow, study, list(zip(findings, states, strict=True)), line)  # type: ignore[arg-type]
            ctx.add(node, PROV.wasDerivedFrom, ctx.source_iri)
            ctx.add(node, PG.extractor, labeller)
            ctx.record()


class ReferenceLabelsImporter(Importer):
    name = "reference-labels"
    version = "1"
    description = "canonical reference labels CSV (case, finding, state[, labeller])"
    handles = "file"
    suffixes = frozenset({".csv"})  # detect() claims no other file
    required = ("case", "finding", "state")

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.suffix.lower() != ".csv":
            return NO
        header = csv_header(path)
        if all(c in header for c in self.required) and "condition" not in header and "report" not in header:
            return LIKELY
        return NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        seen: dict[tuple[str, str], int] = {}
        cases: dict[str, tuple[int, list[tuple[str, str]], set[str]]] = {}
        for line, row, error in read_csv(source.path, self.required, source.rel):
            if error:
                ctx.problem(line, error)
                continue
            empty = [c for c in self.required if not row[c]]
            if empty:
                ctx.problem(line, f"empty {', '.join(empty)}")
                continue
            state = row["state"].upper()
            if state not in STATES:
                ctx.problem(line, f"unknown state {row['state']!r} (one of {', '.join(STATES)})")
                continue
            key = (row["case"], row["finding"])
            if key in seen:
                ctx.problem(
                    line, f"case {key[0]}, finding {key[1]} is labelled twice (first on line {seen[key]})"
                )
                continue
            if labelrows.SEPARATOR in key[1]:
                ctx.problem(line, f"finding {key[1]!r} must not contain {labelrows.SEPARATOR!r}")
                continue
            seen[key] = line
            _, labels, labellers = cases.setdefault(key[0], (line, [], set()))
            labels.append((key[1], state))
            labellers.add(row.get("labeller") or "")
            ctx.record()
        # One row per case (its first line locates it); the lines of one case need not be adjacent.
        for case, (line, labels, labellers) in cases.items():
            node = ctx.iri("label", source.rel, case)
            write_row(ctx, node, PG.ReferenceLabelRow, case, labels, line)
            ctx.add(node, PROV.wasDerivedFrom, ctx.source_iri)
            for name in sorted(labellers - {""}):
                ctx.add(node, PG.extractor, name)
