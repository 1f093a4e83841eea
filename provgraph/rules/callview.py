"""The per-call evidence view: where each kind of evidence about a call lives, defined once.

Importers record what they saw where they saw it: a batch importer puts the prompt and image
hashes on the request node and the status on the result node; canonical call records put all of
it on one record; a retried call has several records. Rules must not each guess where to look
(a rule that read the image hash only on result nodes missed a real difference of image bytes
between conditions). This module derives, for every call node (``call/<id>``, what
``pg:forCall`` points at and what a plan names), one summary in the catalog slot
:data:`SLOT`, which the rules read:

``pg:attemptCount``
    records (``pg:CallRecord``) answering the call, in any file or batch; a harness's review
    of a call (``pg:Review``) counts only when no record of the request itself (a recorder's
    call record, a batch result) answers the call: otherwise it is the harness's reading of
    that attempt, not another one (seed 002's reviews.json beside a recorder's calls.jsonl)
``pg:okCount``
    those with status ``ok``
``pg:finalRecord`` / ``pg:finalStatus``
    the record that decides the call: its one ``ok`` record if it has one (a failed request
    re-submitted in a later batch and answered is closed: OpenAI requires a ``custom_id`` to be
    unique within one batch only); otherwise its last record (by ``pg:endedAt``, else file and
    line), whose status is the call's final non-success state
``pg:failedStatus``
    every non-success status in the call's history (messages name them)
``pg:sentImageSha256`` / ``pg:sentImage``
    the image bytes sent: the hash taken at the request (on a request or a record), else the
    sha256 of the image file a record names; and those files
``pg:sentPromptSha256``
    the executed prompt hashes recorded for the call (request or record)
``pg:callId``
    the call id its records give, for a call no plan names (a planned call has its own)

The view is recomputed when any imported graph changed (its fingerprint is theirs), like the
statistics; :func:`provgraph.lineage.gate.run_gate` refreshes it before the rules run.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from provgraph import __version__
from provgraph.rdf.terms import IRI, TripleWriter
from provgraph.rdf.vocab import PG, PG_NS
from provgraph.store import catalog
from provgraph.store.base import Store

log = logging.getLogger(__name__)

SLOT = "derived:call-evidence"
#: bumped whenever the view changes shape
VIEW_VERSION = "2"
#: Slots that are derived, not imported: no input of the view (nor of the statistics).
DERIVED_PREFIXES = ("check:", "analysis:", "derived:")

_P = f"PREFIX pg: <{PG_NS}>\n"
# One query per kind of evidence: a node pointing at the call (request or record) and one value.
_EVIDENCE = {
    "image": "SELECT ?call ?v WHERE { ?n pg:forCall ?call ; pg:imageSha256 ?v }",
    "file": "SELECT ?call ?f ?v WHERE { ?n pg:forCall ?call ; pg:inputImage ?f "
    "OPTIONAL { ?f pg:sha256 ?v } }",
    "prompt": "SELECT ?call ?v WHERE { ?n pg:forCall ?call ; pg:promptSha256 ?v }",
    # a planned call has its id from the plan: only unplanned calls need one (no duplicates)
    "id": "SELECT DISTINCT ?call ?v WHERE { ?n pg:forCall ?call ; pg:callId ?v "
    "FILTER NOT EXISTS { ?call a pg:PlannedCall } }",
}
_RECORDS = """SELECT ?call ?rec ?status ?ended ?path ?line ?review WHERE {
  ?rec a pg:CallRecord ; pg:forCall ?call .
  BIND(EXISTS { ?rec a pg:Review } AS ?review)
  OPTIONAL { ?rec pg:status ?status }
  OPTIONAL { ?rec pg:endedAt ?ended }
  OPTIONAL { ?rec pg:sourceFile/pg:path ?path }
  OPTIONAL { ?rec pg:sourceLine ?line } }"""


class Attempt(NamedTuple):
    """One record of a call, ordered as its history: end time, then file and line."""

    ended: str
    path: str
    line: int
    record: str
    status: str


@dataclass
class CallEvidence:
    """What the graph says about one call, gathered from every node that points at it."""

    records: list[Attempt] = field(default_factory=list)
    images: set[str] = field(default_factory=set)
    files: set[str] = field(default_factory=set)
    prompts: set[str] = field(default_factory=set)
    ids: set[str] = field(default_factory=set)

    def final(self) -> tuple[str, str] | None:
        """(record, status) that decides the call, or None when it has no record."""
        if not self.records:
            return None
        ok = [r for r in self.records if r.status == "ok"]
        chosen = max(ok or self.records)
        return chosen.record, chosen.status


def fingerprint(store: Store) -> str:
    slots = [s for s in catalog.slots(store) if not s.key.startswith(DERIVED_PREFIXES)]
    text = f"{__version__}/{VIEW_VERSION}\n" + "".join(f"{s.key}\t{s.fingerprint}\n" for s in slots)
    return hashlib.sha256(text.encode()).hexdigest()


def gather(store: Store) -> dict[str, CallEvidence]:
    """Every call's evidence, keyed by the call node's IRI."""
    calls: dict[str, CallEvidence] = defaultdict(CallEvidence)
    reviews: dict[str, list[Attempt]] = defaultdict(list)
    for r in store.select(_P + _RECORDS):
        attempt = Attempt(
            r["ended"].value if r["ended"] else "",  # type: ignore[union-attr]
            r["path"].value if r["path"] else "",  # type: ignore[union-attr]
            int(r["line"].value) if r["line"] else 0,  # type: ignore[union-attr]
            r["rec"].value,  # type: ignore[union-attr]
            r["status"].value if r["status"] else "",  # type: ignore[union-attr]
        )
        if r["review"] is not None and r["review"].value == "true":
            reviews[r["call"].value].append(attempt)  # type: ignore[union-attr]
        else:
            calls[r["call"].value].records.append(attempt)  # type: ignore[union-attr]
    for call, read in reviews.items():
        if not calls[call].records:  # no record of the request: the review is the attempt
            calls[call].records.extend(read)
    for r in store.select(_P + _EVIDENCE["image"]):
        calls[r["call"].value].images.add(r["v"].value)  # type: ignore[union-attr]
    file_shas: dict[str, set[str]] = defaultdict(set)
    for r in store.select(_P + _EVIDENCE["file"]):
        calls[r["call"].value].files.add(r["f"].value)  # type: ignore[union-attr]
        if r["v"] is not None:
            file_shas[r["call"].value].add(r["v"].value)  # type: ignore[union-attr]
    for call, shas in file_shas.items():
        if not calls[call].images:  # no hash taken at the request: the files' bytes stand in
            calls[call].images |= shas
    for r in store.select(_P + _EVIDENCE["prompt"]):
        calls[r["call"].value].prompts.add(r["v"].value)  # type: ignore[union-attr]
    for r in store.select(_P + _EVIDENCE["id"]):
        calls[r["call"].value].ids.add(r["v"].value)  # type: ignore[union-attr]
    return calls


def write_view(w: TripleWriter, calls: dict[str, CallEvidence]) -> None:
    add = w.add
    for iri, ev in sorted(calls.items()):
        call = IRI(iri)
        for cid in sorted(ev.ids):
            add(call, PG.callId, cid)
        if ev.records:
            add(call, PG.attemptCount, len(ev.records))
            add(call, PG.okCount, sum(1 for r in ev.records if r.status == "ok"))
            record, status = ev.final()  # type: ignore[misc]
            add(call, PG.finalRecord, IRI(record))
            add(call, PG.finalStatus, status)
            for failed in sorted({r.status for r in ev.records if r.status not in ("", "ok")}):
                add(call, PG.failedStatus, failed)
        for sha in sorted(ev.images):
            add(call, PG.sentImageSha256, sha)
        for file in sorted(ev.files):
            add(call, PG.sentImage, IRI(file))
        for sha in sorted(ev.prompts):
            add(call, PG.sentPromptSha256, sha)


def refresh(store: Store) -> bool:
    """Bring the view up to date; True when it was recomputed."""
    current = fingerprint(store)
    slot = catalog.current(store, SLOT)
    if slot is not None and slot.fingerprint == current:
        return False
    calls = gather(store)
    with tempfile.TemporaryDirectory(prefix="provgraph-callview-") as tmp:
        nt = Path(tmp) / "calls.nt"
        with nt.open("w", encoding="utf-8") as fh:
            write_view(TripleWriter(fh), calls)
        catalog.replace(store, SLOT, current, nt)
    log.info("call evidence view: %d calls", len(calls))
    return True
