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

Identity facts (the prompt and model clauses read these; :func:`write_identity`):

``pg:callCondition`` / ``pg:callCase``
    the call's condition and case, as the call node or any node pointing at it states them
``pg:promptEvidence``
    one node per (capture point, executed prompt hash) recorded for the call, on a request or
    a record: ``pg:capturedAt`` (``request``, ``constant``, ``config``, ``summary``,
    ``unknown``), ``pg:executedPromptSha256`` and, when the text was seen,
    ``pg:executedSystemSha256`` / ``pg:executedUserSha256``
``pg:requestPromptCondition`` (on the case) / ``pg:collisionCase``, ``pg:collisionPrompt``,
``pg:collisionMember``
    the prompts of each case grouped for comparing conditions (:class:`Prompts`)
``pg:attemptModel`` (on each record, not the call)
    the model the attempt asked for: a record's own requested model; for a batch result,
    the request of its call that named the model it resolved to (a retry may have asked for
    another), else every request of its call (an alias resolves to another name)

The view is recomputed when any imported graph changed (its fingerprint is theirs), like the
statistics; :func:`provgraph.lineage.gate.run_gate` refreshes it before the rules run.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
import tempfile
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, NamedTuple

from provgraph import __version__
from provgraph.rdf.terms import IRI, TripleWriter
from provgraph.rdf.vocab import PG, PG_NS
from provgraph.store import catalog, parallel, scopes
from provgraph.store.base import Store

log = logging.getLogger(__name__)

SLOT = "derived:call-evidence"
#: bumped whenever the view changes shape
VIEW_VERSION = "4"

_P = f"PREFIX pg: <{PG_NS}>\n"
# One query per kind of evidence: a node pointing at the call (request or record) and one value.
_EVIDENCE = {
    # (the rare property first: Oxigraph joins in the order written, and read every pg:forCall
    # for no image hash at 10^5 calls: 1.2 s)
    "image": "SELECT ?call ?v WHERE { ?n pg:imageSha256 ?v ; pg:forCall ?call }",
    "file": "SELECT ?call ?f ?v WHERE { ?n pg:forCall ?call ; pg:inputImage ?f "
    "OPTIONAL { ?f pg:sha256 ?v } }",
    "prompt": "SELECT ?call ?v WHERE { ?n pg:forCall ?call ; pg:promptSha256 ?v }",
    # a planned call has its id from the plan: only unplanned calls need one (no duplicates)
    "id": "SELECT DISTINCT ?call ?v WHERE { ?n pg:forCall ?call ; pg:callId ?v "
    "FILTER NOT EXISTS { ?call a pg:PlannedCall } }",
}
# (a record's file path orders a call's records only when it has several: it is looked up for
# those alone, :data:`_PATHS`; on every record it was a third of this scan, 10.5 s at 10^5 calls)
_RECORDS = """SELECT ?call ?rec ?status ?ended ?line ?review WHERE {
  ?rec a pg:CallRecord ; pg:forCall ?call .
  BIND(EXISTS { ?rec a pg:Review } AS ?review)
  OPTIONAL { ?rec pg:status ?status }
  OPTIONAL { ?rec pg:endedAt ?ended }
  OPTIONAL { ?rec pg:sourceLine ?line } }"""
_PATHS = "SELECT ?rec ?path WHERE { VALUES ?rec { %s } ?rec pg:sourceFile/pg:path ?path }"


class Attempt(NamedTuple):
    """One record of a call, ordered as its history: end time, then file and line."""

    ended: str
    path: str
    line: int
    record: str
    status: str


class CallEvidence:
    """What the graph says about one call, gathered from every node that points at it.

    Slots and tuples, not a dataclass of sets: a partition's calls are held at once (every call
    was, before :func:`gather_partitioned`), and four empty sets per call were 0.9 KB of the
    3.6-4.6 GiB the view took at 10^6 calls.
    """

    __slots__ = ("files", "ids", "images", "prompts", "records")

    def __init__(self) -> None:
        self.records: tuple[Attempt, ...] = ()
        self.images: tuple[str, ...] = ()
        self.files: tuple[str, ...] = ()
        self.prompts: tuple[str, ...] = ()
        self.ids: tuple[str, ...] = ()

    def final(self) -> tuple[str, str] | None:
        """(record, status) that decides the call, or None when it has no record."""
        if not self.records:
            return None
        ok = [r for r in self.records if r.status == "ok"]
        chosen = max(ok or self.records)
        return chosen.record, chosen.status


def interner() -> Callable[[str], str]:
    """One object per distinct value: a value many rows repeat (a file's path, a status, a
    case's image, a condition) is kept once, not once per row."""
    kept: dict[str, str] = {}
    return lambda value: kept.setdefault(value, value)


def _with(values: tuple[str, ...], value: str) -> tuple[str, ...]:
    return values if value in values else (*values, value)


def fingerprint(store: Store) -> str:
    slots = scopes.imported_slots(store)
    text = f"{__version__}/{VIEW_VERSION}\n" + "".join(f"{s.key}\t{s.fingerprint}\n" for s in slots)
    return hashlib.sha256(text.encode()).hexdigest()


#: Partitions of the calls, folded one at a time: at 10^6 calls holding every call's evidence at
#: once took 1.1 GiB (and kept most of it resident after), a sixteenth of it stays well below.
PARTITIONS = 16
_BATCH = 4_096  # rows pickled per partition at a time: the spill holds 16 x 4,096 rows at most
_KINDS = ("records", "image", "file", "prompt", "id")


def gather(store: Store) -> dict[str, CallEvidence]:
    """Every call's evidence, keyed by the call node's IRI, all calls held at once: the reference
    the refresh's :func:`gather_partitioned` is tested against."""
    return fold({kind: store.stream(_P + _query(kind)) for kind in _KINDS}, record_paths(store))


def record_paths(store: Store) -> Callable[[Iterable[str]], dict[str, str]]:
    """A look-up of records' file paths (the least, for a record named by two files)."""

    def lookup(records: Iterable[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for rec, path in store.stream_values(_P + _PATHS, records):
            if rec not in found or path < found[rec]:  # type: ignore[operator]
                found[rec] = path  # type: ignore[index, assignment]
        return found

    return lookup


def _query(kind: str) -> str:
    return _RECORDS if kind == "records" else _EVIDENCE[kind]


def gather_partitioned(store: Store, folder: Path, partitions: int = PARTITIONS) -> list[Path]:
    """Every call's evidence rows, spilled into ``partitions`` files by call, so that each call's
    rows are in one file (in the order :func:`fold` reads them): fold each with
    :func:`read_partition`."""
    paths = [folder / f"calls-{i:02d}.pickle" for i in range(partitions)]
    files = [path.open("wb") for path in paths]
    pending: list[list[tuple[str, tuple]]] = [[] for _ in paths]
    try:
        for kind in _KINDS:
            for row in store.stream(_P + _query(kind)):
                # crc32, not hash(): the same call lands in the same file in every process
                i = zlib.crc32(row[0].encode()) % partitions  # type: ignore[union-attr]
                rows = pending[i]
                rows.append((kind, row))
                if len(rows) >= _BATCH:
                    pickle.dump(rows, files[i], pickle.HIGHEST_PROTOCOL)
                    rows.clear()
        for rows, fh in zip(pending, files, strict=True):
            if rows:
                pickle.dump(rows, fh, pickle.HIGHEST_PROTOCOL)
    finally:
        for fh in files:
            fh.close()
    return paths


def read_partition(path: Path, paths: Callable[[Iterable[str]], dict[str, str]]) -> dict[str, CallEvidence]:
    """The evidence of the calls one partition of :func:`gather_partitioned` holds (``paths``:
    :func:`record_paths`)."""
    by_kind: dict[str, list[tuple]] = {kind: [] for kind in _KINDS}
    with path.open("rb") as fh:
        while True:
            try:
                batch = pickle.load(fh)
            except EOFError:
                break
            for kind, row in batch:
                by_kind[kind].append(row)
    return fold(by_kind, paths)


def fold(
    rows: dict[str, Iterable[tuple]], paths: Callable[[Iterable[str]], dict[str, str]]
) -> dict[str, CallEvidence]:
    """Calls' evidence from the rows of each kind's query, read in the order of :data:`_KINDS`
    (a kind's fallback, reviews or files' bytes, is decided once that kind is complete).
    ``paths`` looks up the file paths of the records of calls with several (:func:`record_paths`)."""
    calls: dict[str, CallEvidence] = defaultdict(CallEvidence)
    reviews: dict[str, tuple[Attempt, ...]] = {}
    shared = interner()
    # (values as tuples, not rows of terms: a third of a scan's time at 10^5 calls)
    for call, rec, status, ended, line, review in rows["records"]:
        attempt = Attempt(
            ended or "",
            "",  # the file path, looked up below for calls with several records
            int(line) if line else 0,
            rec,
            shared(status) if status else "",
        )
        if review == "true":
            reviews[call] = (*reviews.get(call, ()), attempt)
        else:
            ev = calls[call]
            ev.records = (*ev.records, attempt)
    for call, read in reviews.items():
        ev = calls[call]
        if not ev.records:  # no record of the request: the review is the attempt
            ev.records = read
    del reviews
    several = [ev for ev in calls.values() if len(ev.records) > 1]
    if several:
        found = paths(r.record for ev in several for r in ev.records)
        for ev in several:
            ev.records = tuple(r._replace(path=shared(found.get(r.record, ""))) for r in ev.records)
    for call, v in rows["image"]:
        ev = calls[call]
        ev.images = _with(ev.images, shared(v))
    file_shas: dict[str, tuple[str, ...]] = {}
    for call, f, v in rows["file"]:
        ev = calls[call]
        ev.files = _with(ev.files, shared(f))
        if v is not None:
            file_shas[call] = _with(file_shas.get(call, ()), shared(v))
    for call, shas in file_shas.items():
        ev = calls[call]
        if not ev.images:  # no hash taken at the request: the files' bytes stand in
            ev.images = shas
    del file_shas
    for call, v in rows["prompt"]:
        ev = calls[call]
        ev.prompts = _with(ev.prompts, shared(v))
    for call, v in rows["id"]:
        ev = calls[call]
        ev.ids = _with(ev.ids, v)
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


def is_current(store: Store) -> bool:
    """Whether the view was derived from the imports the store holds now."""
    slot = catalog.current(store, SLOT)
    return slot is not None and slot.fingerprint == fingerprint(store)


def refresh(store: Store, readers: int | None = None) -> bool:
    """Bring the view up to date; True when it was recomputed. Its two halves are read side by
    side on a store that allows it (``readers``: see :func:`provgraph.store.parallel.readers`)."""
    current = fingerprint(store)
    slot = catalog.current(store, SLOT)
    if slot is not None and slot.fingerprint == current:
        return False
    with tempfile.TemporaryDirectory(prefix="provgraph-callview-") as tmp:
        identity = Path(tmp) / "identity.nt"

        def write_identity_file() -> None:
            with identity.open("w", encoding="utf-8") as fh:
                write_identity(TripleWriter(fh), store)

        # the two halves read different facts: on two cores they are asked at once
        jobs = [lambda: gather_partitioned(store, Path(tmp)), write_identity_file]
        partitions, _ = parallel.in_parallel(lambda job: job(), jobs, parallel.readers(store, readers))
        count = 0

        def produce(fh: IO[str]) -> None:
            nonlocal count
            w = TripleWriter(fh)
            paths = record_paths(store)
            for path in partitions:  # type: ignore[union-attr]
                calls = read_partition(path, paths)
                count += len(calls)
                write_view(w, calls)
                del calls  # freed before the next partition is read, not beside it
                path.unlink()
            catalog.copy_lines(identity, fh)

        catalog.replace_from(store, SLOT, current, produce)
    log.info("call evidence view: %d calls", count)
    return True


# -- identity facts: condition and case, prompt evidence, the model each attempt asked for -------
# Written row by row as each scan answers (memory bounded by one answer, not by every call):
# only batch results, whose requested model lives on another node, are joined in Python.

# (one query per property, each a whole join: a UNION under a shared pattern, or a predicate
# variable, made Oxigraph scan every triple at 10^5 calls)
_CALL_FACTS = """SELECT DISTINCT ?call ?v WHERE {
  { ?n pg:forCall ?call ; pg:PROP ?v } UNION { ?n pg:forCall ?call . ?call pg:PROP ?v } }"""
_PROMPTS = """SELECT DISTINCT ?call ?capture ?h ?sys ?user WHERE {
  ?n pg:forCall ?call ; pg:promptCapture ?capture ; pg:promptSha256 ?h .
  OPTIONAL { ?n pg:systemPromptSha256 ?sys }
  OPTIONAL { ?n pg:userPromptSha256 ?user } }"""
_OWN_MODELS = "SELECT ?rec ?v WHERE { ?rec a pg:CallRecord ; pg:requestedModel ?v }"
# records that state no requested model (batch results): their call and what answered them
# (MINUS, not a look-up per record with FILTER NOT EXISTS: 2.6 s against 1.3 s at 10^5 calls)
_OTHER_RECORDS = """SELECT ?rec ?call ?res WHERE {
  { ?rec a pg:CallRecord ; pg:forCall ?call . MINUS { ?rec pg:requestedModel ?own } }
  OPTIONAL { ?rec pg:resolvedModel ?res } }"""
_REQUEST_MODELS = "SELECT ?call ?v WHERE { ?q a pg:BatchRequest ; pg:forCall ?call ; pg:requestedModel ?v }"


def attempt_models(resolved: set[str], asked: set[str]) -> set[str]:
    """The model(s) an attempt with no requested model of its own asked for: the request of its
    call that named the model it resolved to (a retry may have asked for another), else every
    request of its call (an alias resolves to another name)."""
    return (asked & resolved) or asked


def write_identity(w: TripleWriter, store: Store) -> None:
    """Condition, case, prompt evidence and attempt models (see the module docstring)."""
    add = w.add
    shared = interner()  # a condition, a case: kept once, not once per call
    # call -> (its conditions, its cases): one entry per call for both facts
    facts: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for prop, fact in (("condition", PG.callCondition), ("case", PG.callCase)):
        for call, value in store.stream(_P + _CALL_FACTS.replace("PROP", prop)):
            add(IRI(call), fact, IRI(value))  # type: ignore[arg-type]
            conditions, cases = facts.get(call, ((), ()))  # type: ignore[arg-type]
            value = shared(value)  # type: ignore[arg-type]
            if prop == "condition":
                facts[call] = (_with(conditions, value), cases)  # type: ignore[index]
            else:
                facts[call] = (conditions, _with(cases, value))  # type: ignore[index]
    prompts = Prompts(facts)
    for call, capture, sha, system, user in store.stream(_P + _PROMPTS):
        # one node per (call, capture, prompt): the hash says which prompt, so it is unique
        node = f"{call}#prompt-{hashlib.sha256(f'{capture} {sha}'.encode()).hexdigest()[:16]}"
        add(IRI(call), PG.promptEvidence, IRI(node))  # type: ignore[arg-type]
        add(IRI(node), PG.capturedAt, capture)
        add(IRI(node), PG.executedPromptSha256, sha)
        add(IRI(node), PG.executedSystemSha256, system or None)
        add(IRI(node), PG.executedUserSha256, user or None)
        prompts.add(call, shared(capture), shared(sha), node)  # type: ignore[arg-type]
    prompts.write(w)
    del prompts, facts
    for rec, v in store.stream(_P + _OWN_MODELS):
        add(IRI(rec), PG.attemptModel, v)  # type: ignore[arg-type]
    asked: dict[str, set[str]] = defaultdict(set)
    for call, v in store.stream(_P + _REQUEST_MODELS):
        asked[call].add(v)  # type: ignore[index, arg-type]
    others: dict[str, tuple[str, set[str]]] = {}
    for rec, call, res in store.stream(_P + _OTHER_RECORDS):
        _, resolved = others.setdefault(rec, (call, set()))  # type: ignore[arg-type]
        if res is not None:
            resolved.add(res)
    for rec, (call, resolved) in sorted(others.items()):
        for model in sorted(attempt_models(resolved, asked.get(call, set()))):
            add(IRI(rec), PG.attemptModel, model)


class Prompts:
    """The prompts of each case, grouped so that rules comparing conditions need not join every
    call of one condition with every call of the other on the case (a nested loop per pair of
    conditions: 62 s at 10^4 calls):

    - ``?case pg:requestPromptCondition ?c``: a call of condition ``c`` on the case executed a
      prompt captured at the request;
    - ``?g pg:collisionCase ?case ; pg:collisionPrompt ?sha ; pg:collisionMember ?evidence``:
      one node per (case, executed prompt) sent under two or more conditions, linking each
      prompt evidence node of that prompt on the case.
    """

    def __init__(self, facts: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> None:
        self.facts = facts  # call -> (its conditions, its cases)
        self.requested: set[tuple[str, str]] = set()
        # (case, prompt) -> [condition, node, condition, node, ...]: flat, no pair per call
        self.members: dict[tuple[str, str], list[str]] = defaultdict(list)

    def add(self, call: str, capture: str, sha: str, node: str) -> None:
        conditions, cases = self.facts.get(call, ((), ()))
        for case in cases:
            if capture == "request":
                self.requested.update((case, c) for c in conditions)
            for c in conditions:
                self.members[(case, sha)] += (c, node)

    def write(self, w: TripleWriter) -> None:
        for case, condition in sorted(self.requested):
            w.add(IRI(case), PG.requestPromptCondition, IRI(condition))
        for (case, sha), members in sorted(self.members.items()):
            if len(set(members[0::2])) < 2:
                continue
            group = IRI(f"{case}#prompt-group-{sha[:32]}")
            w.add(group, PG.collisionCase, IRI(case))
            w.add(group, PG.collisionPrompt, sha)
            for node in sorted(set(members[1::2])):
                w.add(group, PG.collisionMember, IRI(node))
