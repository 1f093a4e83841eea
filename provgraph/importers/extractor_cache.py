"""The canonical extractor cache: JSON Lines, one record per (report, finding).

Required: ``report`` (the labelled model output, a bundle path), ``finding``, ``state``
(POSITIVE, NEGATIVE, UNCERTAIN, NOT_MENTIONED). Optional, about the extraction of that report
(equal on every line of one report): ``extractor`` (model), ``max_input_chars``,
``input_chars`` (length of the report text before any cut), ``raw_response`` (verbatim) or
``raw_response_sha256``, ``decoding`` (object of decoding settings). Optional explicit keys:
``case``, ``condition``, ``replicate``; without them the statistics engine finds case and
condition through the call record that names the report as its output. ``x_*`` keys are free;
any other key is an error, so a typo cannot silently drop evidence.

Each report becomes one ``pg:Extraction`` that ``prov:used`` the report file, and one
``pg:CandidateLabelRow`` holding all its labels (:mod:`provgraph.evidence.labelrows`), located at the
report's first line, ``prov:wasGeneratedBy`` that extraction and ``prov:wasDerivedFrom`` the
report file. A verbatim raw response is hashed and recorded as kept in this cache file.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from provgraph.bundle.contract.sections.annotation import STATES
from provgraph.evidence import labelrows
from provgraph.ingest.api import (
    LIKELY,
    NO,
    PG,
    PROV,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    Source,
    first_json_object,
    read_jsonl,
    record_problem,
)

_SHA256 = re.compile(r"[0-9a-f]{64}")
FIELDS: dict[str, tuple[type, ...]] = {
    "report": (str,),
    "finding": (str,),
    "state": (str,),
    "extractor": (str, type(None)),
    "max_input_chars": (int, type(None)),
    "input_chars": (int, type(None)),
    "raw_response": (str, type(None)),
    "raw_response_sha256": (str, type(None)),
    "decoding": (dict, type(None)),
    "case": (str, type(None)),
    "condition": (str, type(None)),
    "replicate": (int, type(None)),
}
#: Fields that describe the extraction of a report, not one label: equal on all its lines.
PER_REPORT = (
    "extractor",
    "max_input_chars",
    "input_chars",
    "raw_response",
    "raw_response_sha256",
    "decoding",
    "case",
    "condition",
    "replicate",
)


class ExtractorCacheImporter(Importer):
    name = "extractor-cache"
    version = "1"
    description = "canonical extractor cache JSONL (report, finding, state, input limits, raw response)"
    handles = "file"
    suffixes = frozenset({".jsonl", ".ndjson"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.suffix.lower() not in (".jsonl", ".ndjson"):
            return NO
        first = first_json_object(path)
        return LIKELY if first and {"report", "finding", "state"} <= set(first) else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        reports: dict[str, tuple[int, dict[str, Any]]] = {}
        labels: dict[tuple[str, str], int] = {}
        rows: dict[str, list[tuple[str, str]]] = {}
        for line, value, error in read_jsonl(source.path, source.rel):
            if error:
                ctx.problem(line, error)
                continue
            reason = check(value)
            if reason:
                ctx.problem(line, reason)
                continue
            rel = ctx.bundle_rel(value["report"])
            if rel is None:
                ctx.problem(line, f"report {value['report']!r} lies outside the bundle")
                continue
            finding, state = value["finding"], value["state"].upper()
            if (rel, finding) in labels:
                ctx.problem(
                    line,
                    f"report {rel}, finding {finding} is labelled twice "
                    f"(first on line {labels[rel, finding]})",
                )
                continue
            per_report = {k: value.get(k) for k in PER_REPORT}
            if rel in reports:
                first, prior = reports[rel]
                changed = [k for k in PER_REPORT if prior[k] != per_report[k]]
                if changed:
                    ctx.problem(line, f"{changed[0]} differs from line {first} for the same report {rel}")
                    continue
            else:
                reports[rel] = (line, per_report)
                self._extraction(ctx, rel, per_report, line)
            labels[rel, finding] = line
            rows.setdefault(rel, []).append((finding, state))
            ctx.record()
        for rel, found in rows.items():
            line, per_report = reports[rel]
            self._row(ctx, rel, found, per_report, line)

    def _extraction(self, ctx: ImportContext, rel: str, value: dict[str, Any], line: int) -> None:
        add = ctx.add
        node = ctx.iri("extraction", ctx.source.rel, rel)
        add(node, RDF_TYPE, PG.Extraction)
        add(node, PROV.used, ctx.file_iri(rel))
        add(node, PG.extractor, value["extractor"])
        add(node, PG.maxInputChars, value["max_input_chars"])
        add(node, PG.inputChars, value["input_chars"])
        raw = value["raw_response"]
        if raw is not None:
            add(node, PG.rawResponseSha256, hashlib.sha256(raw.encode("utf-8")).hexdigest())
            add(node, PG.rawResponseIn, ctx.source_iri)
        else:
            add(node, PG.rawResponseSha256, value["raw_response_sha256"])
        if value["decoding"] is not None:
            add(node, PG.decoding, json.dumps(value["decoding"], sort_keys=True, separators=(",", ":")))
        add(node, PG.sourceFile, ctx.source_iri)
        add(node, PG.sourceLine, line)

    def _row(
        self, ctx: ImportContext, rel: str, labels: list[tuple[str, str]], value: dict[str, Any], line: int
    ) -> None:
        """The report's label row (:mod:`provgraph.evidence.labelrows`), located at its first line."""
        add = ctx.add
        node = ctx.iri("label", ctx.source.rel, rel)
        order, states = labelrows.encode(labels)
        add(node, RDF_TYPE, PG.CandidateLabelRow)
        add(node, PG.findingOrder, order)
        add(node, PG.labelStates, states)
        add(node, PROV.wasGeneratedBy, ctx.iri("extraction", ctx.source.rel, rel))
        add(node, PROV.wasDerivedFrom, ctx.file_iri(rel))
        add(node, PROV.wasDerivedFrom, ctx.source_iri)
        if value["case"]:
            add(node, PG.case, ctx.iri("case", value["case"]))
        if value["condition"]:
            add(node, PG.condition, ctx.iri("condition", value["condition"]))
        add(node, PG.replicate, value["replicate"])
        add(node, PG.sourceFile, ctx.source_iri)
        add(node, PG.sourceLine, line)


def check(value: Any) -> str | None:
    """Why a cache record is unusable, or None."""
    reason = record_problem(value, FIELDS, ("report", "finding", "state"))
    if reason:
        return reason
    for key in ("report", "finding", "state"):
        if not value[key].strip():
            return f"empty {key}"
    if "|" in value["finding"]:
        return f"finding {value['finding']!r} must not contain '|'"
    if value["state"].upper() not in STATES:
        return f"unknown state {value['state']!r} (one of {', '.join(STATES)})"
    for key in ("max_input_chars", "input_chars"):
        if value.get(key) is not None and value[key] < 0:
            return f"{key} must not be negative, got {value[key]}"
    digest = value.get("raw_response_sha256")
    if digest is not None and not _SHA256.fullmatch(digest):
        return f"raw_response_sha256 must be 64 lower-case hex digits, got {digest!r}"
    if value.get("raw_response") is not None and digest is not None:
        actual = hashlib.sha256(value["raw_response"].encode("utf-8")).hexdigest()
        if actual != digest:
            return "raw_response_sha256 does not match the raw_response text"
    return None
