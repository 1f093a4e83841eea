"""The per-case evidence view: a case's patient, view position and split, from every source, once.

The cohort rules judge a case by what several sources say about it: its patient may be stated
on the case, on any node of the case (a manifest entry, a MIMIC metadata or split row) or in
the header of a DICOM rendered for its calls; its view in the manifest, in those DICOM headers
or, for its study's images, in the MIMIC metadata table; its split in the manifest or in the
official split table. Each rule used to re-derive these by hand-joined sub-selects; this module
derives them once per check (one scan per kind of evidence, joined in Python) into the catalog
slot :data:`SLOT`, for every case node a source names (``case/<key>``):

``pg:patientEvidence`` / ``pg:viewEvidence`` / ``pg:splitEvidence``
    one evidence node per distinct (value, source, file) of that kind, with
    ``pg:evidenceValue`` (the patient node, the view position as written upper-cased, the
    split as written lower-cased), ``pg:evidenceFrom`` (where it was read, below) and
    ``pg:evidencePath`` (the bundle path of that file, when the source has one). Sources:
    ``case`` (a patient stated on the case node itself), ``node`` (a patient on a node of the
    case: manifest entry or MIMIC row; its file), ``manifest`` (an included cohort entry's view
    or split; the manifest file), ``dicom`` (the header of a DICOM rendered for the case's
    calls: call ``pg:case`` the case, its ``pg:sentImage`` in the call evidence view, that
    image's rendering, the rendering's source; the DICOM's path), ``metadata`` (an image of the
    study in a MIMIC metadata table), ``split-table`` (a row of an official split table)
``pg:casePatient``
    every patient the patient evidence names, distinct (what the rules join on)
``pg:assignedSplit`` / ``pg:assignedSplitFrom``
    the split that stands and where from (``manifest`` or ``split-table``): the manifest's,
    else the official split table's (a disagreement of the two is cohort-split-not-recorded's)
``pg:officialSplits``
    the official split table's splits for the case, distinct, sorted, joined by ``", "``
``pg:metadataImageCount``
    the study's images in a MIMIC metadata table (distinct rows)
``pg:includedEntry`` / ``pg:excludedEntry``
    the cohort manifest entries that include / exclude the case
``pg:plannedCallCount``
    planned calls (``pg:PlannedCall``) on the case

A case no source gives a patient (view, split) has no such evidence node: the rule can say so.
The view is recomputed when any imported graph changed (fingerprint as
:mod:`provgraph.rules.callview`'s), after the call evidence view, which it reads.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import IO

from provgraph.rdf.terms import IRI, TripleWriter
from provgraph.rdf.vocab import PG, PG_NS
from provgraph.rules import callview
from provgraph.store import catalog
from provgraph.store.base import Store

log = logging.getLogger(__name__)

SLOT = "derived:case-evidence"
#: bumped whenever the view changes shape
VIEW_VERSION = "2"

_P = f"PREFIX pg: <{PG_NS}>\nPREFIX prov: <http://www.w3.org/ns/prov#>\n"
# One query per kind of evidence; joins across kinds are Python dicts.
_Q = {
    "entries": "SELECT ?entry ?case ?included ?split ?view ?f WHERE { ?entry a pg:CohortEntry ; "
    "pg:case ?case ; pg:included ?included OPTIONAL { ?entry pg:split ?split } "
    "OPTIONAL { ?entry pg:viewPosition ?view } OPTIONAL { ?entry pg:sourceFile ?f } }",
    # every patient statement: on a case, on a node of a case, on a DICOM (read when rendered)
    "patients": "SELECT ?s ?patient ?case ?f WHERE { ?s pg:patient ?patient "
    "OPTIONAL { ?s pg:case ?case } OPTIONAL { ?s pg:sourceFile ?f } }",
    # counted per case in the engine: Python holds cases, not a million calls
    "planned": "SELECT ?case (COUNT(DISTINCT ?call) AS ?n) WHERE { ?call a pg:PlannedCall ; "
    "pg:case ?case } GROUP BY ?case",
    # the images a call sent (the call evidence view) with the call's case, then the DICOM each
    # image was rendered from
    "sent": "SELECT ?img ?case WHERE { ?call pg:sentImage ?img ; pg:case ?case }",
    "rendered": "SELECT ?img ?dicom WHERE { VALUES ?img { %s } ?img prov:wasGeneratedBy ?r . "
    "?r prov:used ?dicom }",
    "dicom_views": "SELECT ?dicom ?view WHERE { ?dicom pg:viewPosition ?view ; pg:path ?path }",
    "metadata": "SELECT ?img ?case ?view ?f WHERE { ?img a pg:ImageMetadata ; pg:case ?case ; "
    "pg:viewPosition ?view OPTIONAL { ?img pg:sourceFile ?f } }",
    "splits": "SELECT ?case ?split ?f WHERE { ?a a pg:SplitAssignment ; pg:case ?case ; "
    "pg:split ?split OPTIONAL { ?a pg:sourceFile ?f } }",
    # the bundle path of the files evidence was read from (a lookup each, not a join per row)
    "paths": "SELECT ?n ?path WHERE { VALUES ?n { %s } ?n pg:path ?path }",
}

#: one piece of evidence: (value, where it was read, file path or "")
Fact = tuple[str, str, str]


@dataclass
class CaseEvidence:
    """What the graph says about one case, from every source."""

    patients: set[Fact] = field(default_factory=set)
    views: set[Fact] = field(default_factory=set)
    splits: set[Fact] = field(default_factory=set)
    metadata_images: set[str] = field(default_factory=set)
    included: set[str] = field(default_factory=set)
    excluded: set[str] = field(default_factory=set)
    planned: int = 0

    def assigned(self) -> list[Fact]:
        """The split evidence that stands: the manifest's, else the official table's."""
        manifest = [f for f in self.splits if f[1] == "manifest"]
        return sorted(manifest or [f for f in self.splits if f[1] == "split-table"])


def gather(store: Store) -> dict[str, CaseEvidence]:
    """Every case's evidence, keyed by the case node's IRI. A fact's third member is first the
    node whose ``pg:path`` names its file (a source file, a DICOM), then that path.

    Scans are read as value tuples and what Python keeps is per case, per DICOM or per file,
    never per call (a million calls' dictionaries were most of this view's memory).
    """
    cases: dict[str, CaseEvidence] = defaultdict(CaseEvidence)
    shared = callview.interner()  # a source file, a split, a view: kept once, not once per row
    for entry, case, included, split, view, f in store.stream(_P + _Q["entries"]):
        ev, f = cases[case], shared(f or "")  # type: ignore[index, arg-type]
        if included != "true":
            ev.excluded.add(entry)  # type: ignore[arg-type]
            continue
        ev.included.add(entry)  # type: ignore[arg-type]
        if split is not None:
            ev.splits.add((split, "manifest", f))
        if view is not None:
            ev.views.add((view, "manifest", f))
    # every node's patients (the case itself, a DICOM rendered for its calls), by node
    direct: dict[str, set[str]] = defaultdict(set)
    for node, patient, case, f in store.stream(_P + _Q["patients"]):
        patient = shared(patient)  # type: ignore[arg-type]
        if case is not None:
            cases[case].patients.add((patient, "node", shared(f or "")))  # type: ignore[arg-type]
        direct[node].add(patient)  # type: ignore[index]
    for case, n in store.stream(_P + _Q["planned"]):
        cases[case].planned = int(n)  # type: ignore[index, arg-type]
    _rendered(store, cases, direct)
    for img, case, view, f in store.stream(_P + _Q["metadata"]):
        ev = cases[case]  # type: ignore[index]
        ev.metadata_images.add(img)  # type: ignore[arg-type]
        ev.views.add((shared(view), "metadata", shared(f or "")))  # type: ignore[arg-type]
    for case, split, f in store.stream(_P + _Q["splits"]):
        cases[case].splits.add((shared(split), "split-table", shared(f or "")))  # type: ignore[index, arg-type]
    for case, ev in cases.items():
        ev.patients |= {(patient, "case", "") for patient in direct.get(case, ())}
    _resolve_paths(store, cases)
    return cases


def _resolve_paths(store: Store, cases: dict[str, CaseEvidence]) -> None:
    nodes = {f[2] for ev in cases.values() for facts in (ev.patients, ev.views, ev.splits) for f in facts}
    paths = dict(store.stream_values(_P + _Q["paths"], nodes - {""}))
    for ev in cases.values():
        for name in ("patients", "views", "splits"):
            facts = getattr(ev, name)
            setattr(ev, name, {(v, src, paths.get(node, "")) for v, src, node in facts})


def _rendered(store: Store, cases: dict[str, CaseEvidence], direct: dict[str, set[str]]) -> None:
    """The patient and view of each DICOM rendered for a case's calls."""
    sent: dict[str, set[str]] = defaultdict(set)  # image -> the cases of the calls that sent it
    for img, case in store.stream(_P + _Q["sent"]):
        sent[img].add(case)  # type: ignore[index, arg-type]
    sources: dict[str, set[str]] = defaultdict(set)
    for img, dicom in store.stream_values(_P + _Q["rendered"], sent):
        sources[img].add(dicom)  # type: ignore[index, arg-type]
    if not sources:
        return
    views: dict[str, set[str]] = defaultdict(set)
    for dicom, view in store.stream(_P + _Q["dicom_views"]):
        views[dicom].add(view)  # type: ignore[index, arg-type]
    for img, dicoms in sources.items():
        for case in sent[img]:
            ev = cases[case]
            for dicom in dicoms:
                ev.patients |= {(patient, "dicom", dicom) for patient in direct.get(dicom, ())}
                ev.views |= {(view, "dicom", dicom) for view in views.get(dicom, ())}


def _node(case: str, kind: str, fact: Fact) -> IRI:
    digest = hashlib.sha256("\0".join((kind, *fact)).encode()).hexdigest()[:16]
    return IRI(f"{case}#{kind}-{digest}")


def write_view(w: TripleWriter, cases: dict[str, CaseEvidence]) -> None:
    add = w.add
    links = (("patient", PG.patientEvidence), ("view", PG.viewEvidence), ("split", PG.splitEvidence))
    for iri, ev in sorted(cases.items()):
        case = IRI(iri)
        for kind, link in links:
            facts = {"patient": ev.patients, "view": ev.views, "split": ev.splits}[kind]
            for fact in sorted(facts):
                value, source, path = fact
                node = _node(iri, kind, fact)
                add(case, link, node)
                add(node, PG.evidenceValue, IRI(value) if kind == "patient" else value)
                add(node, PG.evidenceFrom, source)
                add(node, PG.evidencePath, path or None)
        for patient in sorted({f[0] for f in ev.patients}):
            add(case, PG.casePatient, IRI(patient))
        assigned = ev.assigned()
        for split in sorted({f[0] for f in assigned}):
            add(case, PG.assignedSplit, split)
        if assigned:
            add(case, PG.assignedSplitFrom, assigned[0][1])
        official = sorted({f[0] for f in ev.splits if f[1] == "split-table"})
        add(case, PG.officialSplits, ", ".join(official) or None)
        if ev.metadata_images:
            add(case, PG.metadataImageCount, len(ev.metadata_images))
        for entry in sorted(ev.included):
            add(case, PG.includedEntry, IRI(entry))
        for entry in sorted(ev.excluded):
            add(case, PG.excludedEntry, IRI(entry))
        if ev.planned:
            add(case, PG.plannedCallCount, ev.planned)


def refresh(store: Store, force: bool = False) -> bool:
    """Bring the view up to date (``force``: recompute it even so); True when it was recomputed."""
    current = callview.fingerprint(store) + f"/case-evidence/{VIEW_VERSION}"
    slot = catalog.current(store, SLOT)
    if not force and slot is not None and slot.fingerprint == current:
        return False
    cases = gather(store)

    def produce(fh: IO[str]) -> None:
        write_view(TripleWriter(fh), cases)

    catalog.replace_from(store, SLOT, current, produce)
    log.info("case evidence view: %d cases", len(cases))
    return True
