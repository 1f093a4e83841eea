"""The recorded check read back from the store, and whether it is still current.

:func:`provgraph.rules.record_check` writes each clause's results and violations into its
``check:<clause>`` graph. :func:`write_record` then writes one more graph, ``check:record``,
saying what the check was computed from: the fingerprint of every import (the contract is one
of them) and of the rules' text, when it started and how long it and each rule took, where
each violation was located (file and line, as :func:`~provgraph.rules.runner.locate` found
them), and the few focus values that are not IRIs (``pg:focus`` holds IRIs only). It is
written last, after
the hub summaries, so a check interrupted while recording leaves a record that no longer
matches its clause graphs, and reads as not current.

:func:`read_recorded` rebuilds the :class:`~provgraph.rules.runner.CheckReport` from these
graphs, or says why it cannot: no check recorded, an import or the rules changed since, or the
clause graphs disagree with the record. ``provgraph report`` reads the check this way instead
of running it again.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from provgraph import __version__
from provgraph.rdf.sparql import plain_iri
from provgraph.rdf.terms import TripleWriter, mint
from provgraph.rdf.vocab import PG, PG_NS, PROV_NS, RDF_TYPE
from provgraph.rules.rule import Rule
from provgraph.rules.runner import (
    OUTCOMES,
    CheckReport,
    RuleResult,
    Violation,
    contract_state,
    strict_contract,
)
from provgraph.store import catalog, scopes
from provgraph.store.base import Store

#: The catalog key of the record graph (``check:`` keys are derived, not imports).
RECORD_KEY = "check:record"


@dataclass
class Recorded:
    """The outcome of reading the recorded check: the report when current, else why not."""

    report: CheckReport | None
    reason: str
    started: dt.datetime | None = None

    @property
    def current(self) -> bool:
        return self.report is not None


def inputs_sha256(store: Store) -> str:
    """One hash of every import's fingerprint (derived graphs left out) and provgraph's version."""
    slots = scopes.imported_slots(store)
    text = f"{__version__}\n" + "".join(f"{s.key}\t{s.fingerprint}\n" for s in slots)
    return hashlib.sha256(text.encode()).hexdigest()


def rules_sha256(rules: Sequence[Rule]) -> str:
    """One hash of what each rule says (its header fields, query and engine forms), in rule-id order."""
    h = hashlib.sha256()
    for r in sorted(rules, key=lambda r: r.id):
        fields = (r.id, r.clause, r.severity, r.title, r.remedy, r.why, str(r.lineage), r.query)
        forms = [x for form in r.forms for x in form]
        h.update(("\x1f".join((*fields, *r.requires, "|", *r.applies, "|", *forms)) + "\x1e").encode())
    return h.hexdigest()


def write_record(store: Store, report: CheckReport) -> None:
    """Write ``check:record`` for ``report`` (just recorded by ``record_check``)."""
    base = report.base_iri
    node = mint(base, "check", "record")
    inputs = inputs_sha256(store)
    with tempfile.TemporaryDirectory(prefix="provgraph-record-") as tmp:
        nt = Path(tmp) / "record.nt"
        with nt.open("w", encoding="utf-8") as fh:
            w = TripleWriter(fh)
            w.add(node, RDF_TYPE, PG.CheckRecord)
            w.add(node, PG.inputsSha256, inputs)
            w.add(node, PG.rulesSha256, rules_sha256([r.rule for r in report.results]))
            # (an entity's own property: prov:startedAtTime is for activities, and PROV-XML rejects it here)
            w.add(node, PG.checkStarted, report.started)
            w.add(node, PG.seconds, float(report.seconds))
            w.add(node, PG.strict, report.strict)
            for r in report.results:
                w.add(mint(base, "rule-result", r.rule.id), PG.seconds, float(r.seconds))
                for v in r.violations:
                    node_v = mint(base, "violation", r.rule.id, _key(v))
                    if not plain_iri(v.focus):
                        w.add(node_v, PG.focusText, v.focus)
                    w.add(node_v, PG.focusPath, v.path)  # None writes nothing
                    w.add(node_v, PG.focusLine, v.line)
        catalog.replace(store, RECORD_KEY, inputs, nt)


def _key(v: Violation) -> str:
    return hashlib.sha256(f"{v.focus}\n{v.message}".encode()).hexdigest()[:16]


_P = f"PREFIX pg: <{PG_NS}>\nPREFIX prov: <{PROV_NS}>\n"

_RECORD = (
    _P
    + """SELECT ?inputs ?rules ?started ?seconds ?strict WHERE {
  ?r a pg:CheckRecord ; pg:inputsSha256 ?inputs ; pg:rulesSha256 ?rules ;
     pg:checkStarted ?started ; pg:seconds ?seconds ; pg:strict ?strict }"""
)

_RESULTS = (
    _P
    + """SELECT ?id ?outcome ?count ?error ?seconds ?started WHERE {
  ?check a pg:Check ; pg:result ?res ; prov:startedAtTime ?started .
  ?res pg:rule ?rule ; pg:outcome ?outcome ; pg:violationCount ?count .
  ?rule pg:ruleId ?id .
  OPTIONAL { ?res pg:message ?error }
  OPTIONAL { ?res pg:seconds ?seconds } }"""
)

_VIOLATIONS = (
    _P
    + """SELECT ?id ?focus ?text ?message ?path ?line ?started WHERE {
  ?v a pg:Violation ; pg:rule ?rule ; pg:message ?message ; prov:wasGeneratedBy ?check .
  ?rule pg:ruleId ?id .
  ?check prov:startedAtTime ?started .
  OPTIONAL { ?v pg:focus ?focus }
  OPTIONAL { ?v pg:focusText ?text }
  OPTIONAL { ?v pg:focusPath ?path }
  OPTIONAL { ?v pg:focusLine ?line } }"""
)


def _time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def read_recorded(store: Store, rules: Sequence[Rule]) -> Recorded:
    """The check recorded in ``store`` as a report of ``rules``, if it is current: computed
    from the imports the store holds now and from these rules (same text). Raises
    :class:`~provgraph.errors.UsageError` when the store holds no contract."""
    with store.snapshot():
        project, base, in_force = contract_state(store)  # no contract: UsageError, as a run says
        rows = store.select(_RECORD)
        if len(rows) != 1:
            return Recorded(None, "no check is recorded in the store")
        rec = rows[0]
        started = _time(rec["started"].value)  # type: ignore[union-attr]
        if rec["inputs"].value != inputs_sha256(store):  # type: ignore[union-attr]
            return Recorded(None, "an import changed since the check was recorded", started)
        if rec["rules"].value != rules_sha256(rules):  # type: ignore[union-attr]
            return Recorded(None, "the rules differ from those of the recorded check", started)
        results = _results(store, rules, in_force, started)
        if isinstance(results, str):
            return Recorded(None, results, started)
        strict = strict_contract(store)
    for r in results:
        r.strict = strict
    report = CheckReport(results, in_force, base, project, started, float(rec["seconds"].value))  # type: ignore[union-attr]
    return Recorded(report, f"using the check recorded at {started.isoformat()}", started)


def _results(
    store: Store, rules: Sequence[Rule], in_force: list[str], started: dt.datetime
) -> list[RuleResult] | str:
    """Each rule's recorded result (violations located), or why the record is inconsistent."""
    found: dict[str, tuple[str, int, str | None, float]] = {}
    for r in store.select(_RESULTS):
        if _time(r["started"].value) != started:  # type: ignore[union-attr]
            continue  # a clause graph left from an earlier check
        seconds = float(r["seconds"].value) if r["seconds"] is not None else 0.0
        error = r["error"].value if r["error"] is not None else None
        found[r["id"].value] = (r["outcome"].value, int(r["count"].value), error, seconds)  # type: ignore[union-attr]
    violations: dict[str, list[Violation]] = defaultdict(list)
    if any(count for _, count, _, _ in found.values()):
        for r in store.select(_VIOLATIONS):
            if _time(r["started"].value) != started:  # type: ignore[union-attr]
                continue
            focus = r["focus"] if r["focus"] is not None else r["text"]
            if focus is None:
                return "a recorded violation has no focus"
            path = r["path"].value if r["path"] is not None else None
            line = int(r["line"].value) if r["line"] is not None else None
            violations[r["id"].value].append(Violation(focus.value, r["message"].value, path, line))  # type: ignore[union-attr]
    results = []
    for rule in rules:
        got = found.get(rule.id)
        if rule.clause not in in_force:
            if got is not None:
                return f"the recorded check ran {rule.id}, whose clause the contract does not declare"
            results.append(RuleResult(rule, "skipped", error="clause not declared in the contract"))
            continue
        if got is None or got[0] not in OUTCOMES:
            return f"the recorded check has no result for {rule.id}"
        outcome, count, error, seconds = got
        listed = sorted(violations.get(rule.id, []), key=lambda v: (v.focus, v.message))
        if len(listed) != count:
            return f"the recorded check lists {len(listed)} of the {count} violations of {rule.id}"
        results.append(RuleResult(rule, outcome, listed, error=error, seconds=seconds))  # type: ignore[arg-type]
    return results
