"""Run contract rules against a store, decide the gate, and record the check in the graph.

Fail closed: a rule whose query does not run, whose result lacks ``?focus``/``?message``, or
whose required evidence is absent from the graph counts as an error, and an error blocks the
gate whatever the rule's severity. A rule that does not apply to the benchmark as its contract
describes it (header ``applies:``) is *not applicable*: neither a pass nor a failure. A check
in which no rule ran at all is *empty*, and an empty gate does not pass. A store that stops
answering (a server that is down, dies or times out) ends the whole check with
:class:`~provgraph.errors.StoreUnavailable`: no report is produced, so nothing can read as a
pass. Rules of clauses the contract does not declare are skipped unless asked for by name.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

import pyoxigraph as ox

from provgraph.errors import StoreError, StoreUnavailable, UsageError
from provgraph.rdf.sparql import plain_iri
from provgraph.rdf.terms import IRI, TripleWriter, mint
from provgraph.rdf.vocab import PG, PG_NS, PROV, RDF_TYPE, short
from provgraph.rules.rule import APPLIES, CLAUSES, Rule
from provgraph.store import catalog, parallel
from provgraph.store.base import Store

log = logging.getLogger(__name__)

#: What running one rule came to (also written as ``pg:outcome`` of its ``pg:RuleResult``).
Outcome = Literal["pass", "violated", "error", "skipped", "not-applicable"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)


@dataclass
class Violation:
    focus: str
    message: str
    path: str | None = None
    line: int | None = None

    @property
    def location(self) -> str | None:
        if self.path is None:
            return None
        return f"{self.path}:{self.line}" if self.line is not None else self.path


@dataclass
class RuleResult:
    rule: Rule
    outcome: Outcome
    violations: list[Violation] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    #: ``[project] strict = true``: restrict violations block too
    strict: bool = False

    @property
    def blocks_gate(self) -> bool:
        if self.outcome == "error":
            return True
        if self.outcome != "violated":
            return False
        return self.rule.blocks_gate or (self.strict and self.rule.severity == "restrict")

    @property
    def ran(self) -> bool:
        return self.outcome in ("pass", "violated", "error")


@dataclass
class CheckReport:
    results: list[RuleResult]
    clauses_in_force: list[str]
    base_iri: str
    project: str
    started: dt.datetime
    seconds: float = 0.0

    @property
    def empty(self) -> bool:
        """No rule ran: no clause in force, or every rule skipped or not applicable."""
        return not any(r.ran for r in self.results)

    @property
    def passed(self) -> bool:
        return not self.empty and not any(r.blocks_gate for r in self.results)

    @property
    def strict(self) -> bool:
        """``[project] strict = true``: restrict violations blocked too."""
        return any(r.strict for r in self.results)

    def by_clause(self) -> dict[str, list[RuleResult]]:
        grouped: dict[str, list[RuleResult]] = {}
        for r in self.results:
            grouped.setdefault(r.rule.clause, []).append(r)
        return {c: grouped[c] for c in CLAUSES if c in grouped}

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys((*OUTCOMES, "violations"), 0)
        for r in self.results:
            out[r.outcome] += 1
            out["violations"] += len(r.violations)
        return out

    def short(self, iri: str) -> str:
        """An IRI relative to the project's base, for display."""
        return short(iri, self.base_iri or "")


def contract_state(store: Store) -> tuple[str, str, list[str]]:
    """Project name, base IRI and clauses in force, read from the imported contract."""
    rows = store.select(
        f"""PREFIX pg: <{PG_NS}>
        SELECT DISTINCT ?name ?base ?clause WHERE {{
          ?c a pg:Contract ; pg:project ?p . ?p pg:name ?name ; pg:baseIri ?base .
          OPTIONAL {{ ?c pg:declaresClause ?clause }} }}"""
    )
    if not rows:
        raise UsageError("no contract in the store: run `provgraph ingest` on the bundle first")
    names = {r["name"].value for r in rows}  # type: ignore[union-attr]
    if len(names) > 1:
        raise UsageError(f"the store holds several contracts ({', '.join(sorted(names))})")
    declared = {r["clause"].value for r in rows if r["clause"] is not None}  # type: ignore[union-attr]
    in_force = [c for c in CLAUSES if f"{PG_NS}{c.capitalize()}Clause" in declared]
    return rows[0]["name"].value, rows[0]["base"].value, in_force  # type: ignore[union-attr]


#: How each ``applies:`` fact is read from the imported contract.
_FACTS: dict[str, str] = {
    "plan": "ASK { { ?p a pg:CallPlan } UNION { ?c a pg:PlannedCall } }",  # a plan file counts too
    "dicom-images": 'ASK { ?p a pg:PixelProtocol FILTER NOT EXISTS { ?p pg:imageInputs "images" } }',
    "harness": "ASK { ?a a pg:AnalysisPlan ; pg:harness ?h }",
}


def contract_facts(store: Store) -> set[str]:
    """The ``applies:`` facts the imported contract declares."""
    return {name for name, ask in _FACTS.items() if store.ask(f"PREFIX pg: <{PG_NS}>\n{ask}")}


def strict_contract(store: Store) -> bool:
    return store.ask(f"PREFIX pg: <{PG_NS}> ASK {{ ?p a pg:Project ; pg:strict true }}")


def not_applicable(rule: Rule, facts: set[str]) -> RuleResult | None:
    """The result of a rule whose ``applies:`` facts the contract lacks, else None."""
    lacking = [a for a in rule.applies if a not in facts]
    if not lacking:
        return None
    return RuleResult(
        rule,
        "not-applicable",
        error="not applicable: the benchmark has no " + " and no ".join(APPLIES[a] for a in lacking),
    )


def run_rule(store: Store, rule: Rule) -> RuleResult:
    t0 = time.perf_counter()
    try:
        for cls in rule.requires:
            if not store.ask("ASK { ?x a ?cls }", {"cls": ox.NamedNode(cls)}):
                short = "pg:" + cls[len(PG_NS) :] if cls.startswith(PG_NS) else cls
                return RuleResult(
                    rule,
                    "error",
                    seconds=time.perf_counter() - t0,
                    error=f"missing evidence: the graph has no {short} nodes, so this rule "
                    "cannot show the clause holds",
                )
        rows = store.select(rule.query_for(store.engine))
    except SyntaxError as err:
        return RuleResult(
            rule, "error", error=f"query does not parse: {err}", seconds=time.perf_counter() - t0
        )
    except StoreUnavailable:
        raise
    except StoreError as err:
        return RuleResult(rule, "error", error=str(err), seconds=time.perf_counter() - t0)
    if rows and not {"focus", "message"} <= set(rows[0]):
        return RuleResult(
            rule, "error", error="query must project ?focus and ?message", seconds=time.perf_counter() - t0
        )
    violations = []
    for row in rows:
        focus, message = row.get("focus"), row.get("message")
        if focus is None or message is None:
            return RuleResult(
                rule,
                "error",
                error="a result row has no ?focus or ?message",
                seconds=time.perf_counter() - t0,
            )
        violations.append(Violation(focus.value, message.value))
    violations.sort(key=lambda v: (v.focus, v.message))
    locate(store, violations)
    outcome: Outcome = "violated" if violations else "pass"
    return RuleResult(rule, outcome, violations, seconds=time.perf_counter() - t0)


def locate(store: Store, violations: list[Violation], chunk: int = 500) -> None:
    """Fill in the source file and line of focus nodes that carry them; a focus that is itself
    a file (it has a ``pg:path``) is located at that file."""
    foci = sorted({v.focus for v in violations})
    where: dict[str, tuple[str, int | None]] = {}
    for i in range(0, len(foci), chunk):
        values = " ".join(f"<{f}>" for f in foci[i : i + chunk] if plain_iri(f))
        if not values:
            continue
        # VALUES inside each branch: Oxigraph joins a VALUES outside a UNION only after
        # evaluating both branches over every node (10 s against 0.015 s for 202 foci at 10^5)
        rows = store.select(
            f"""PREFIX pg: <{PG_NS}>
            SELECT ?focus ?path ?line WHERE {{
              {{ VALUES ?focus {{ {values} }}
                 ?focus pg:sourceFile ?f . ?f pg:path ?path . OPTIONAL {{ ?focus pg:sourceLine ?line }} }}
              UNION {{ VALUES ?focus {{ {values} }}
                       ?focus pg:path ?path FILTER NOT EXISTS {{ ?focus pg:sourceFile ?any }} }} }}"""
        )
        for r in rows:
            line = r["line"]
            where[r["focus"].value] = (r["path"].value, int(line.value) if line else None)  # type: ignore[union-attr]
    for v in violations:
        if v.focus in where:
            v.path, v.line = where[v.focus]


def select_rules(
    rules: Iterable[Rule], clauses: Iterable[str] = (), rule_ids: Iterable[str] = ()
) -> list[Rule]:
    rules = list(rules)
    clauses, rule_ids = list(clauses), list(rule_ids)
    unknown = [c for c in clauses if c not in CLAUSES]
    if unknown:
        raise UsageError(f"unknown clause {unknown[0]!r}; clauses: {', '.join(CLAUSES)}")
    known_ids = {r.id for r in rules}
    missing = [i for i in rule_ids if i not in known_ids]
    if missing:
        raise UsageError(f"unknown rule {missing[0]!r}; see `provgraph rules` for the list")
    if clauses:
        rules = [r for r in rules if r.clause in clauses]
    if rule_ids:
        rules = [r for r in rules if r.id in rule_ids]
    return rules


def run_check(
    store: Store,
    rules: list[Rule],
    explicit: bool = False,
    on_result: Callable[[RuleResult], None] | None = None,
    readers: int | None = None,
) -> CheckReport:
    """Run ``rules``. Unless ``explicit``, rules of clauses not in force are skipped.

    On a store that answers several queries at once (:attr:`Store.concurrent_reads`) up to
    ``readers`` rules run side by side (default :func:`provgraph.store.parallel.readers`); the
    report lists the results in the order of ``rules`` either way, and ``on_result`` sees them
    in that order.

    All rules read one state of the store (:meth:`Store.snapshot`): on a shared server whose
    graphs another client replaces meanwhile, the check raises StoreChanged instead. Derived
    evidence is not brought up to date here: the commands refresh the statistics first
    (:func:`provgraph.lineage.gate.run_gate`).
    """
    started = dt.datetime.now(dt.UTC).replace(microsecond=0)
    t0 = time.perf_counter()
    project, base, in_force = contract_state(store)
    with store.snapshot():
        facts, strict = contract_facts(store), strict_contract(store)

        def run_one(rule: Rule) -> RuleResult:
            if rule.clause not in in_force and not explicit:
                return RuleResult(rule, "skipped", error="clause not declared in the contract")
            return not_applicable(rule, facts) or run_rule(store, rule)

        results = []
        for result in parallel.in_parallel(run_one, rules, parallel.readers(store, readers)):
            result.strict = strict
            results.append(result)
            if on_result:
                on_result(result)
    return CheckReport(results, in_force, base, project, started, time.perf_counter() - t0)


def record_check(store: Store, report: CheckReport) -> list[str]:
    """Write each clause's results into its own named graph (replacing the previous check).

    What lineage reads from the check about large hubs is written after this, by
    :func:`provgraph.lineage.hubs.record_hubs`.
    """
    written = []
    base = report.base_iri
    ended = report.started + dt.timedelta(seconds=round(report.seconds))
    contract = mint(base, "contract", "main")
    for clause, results in report.by_clause().items():
        if all(r.outcome == "skipped" for r in results):
            continue
        with tempfile.TemporaryDirectory(prefix="provgraph-check-") as tmp:
            nt = Path(tmp) / "check.nt"
            with nt.open("w", encoding="utf-8") as fh:
                w = TripleWriter(fh)
                _write_clause(w, base, contract, clause, results, report.started, ended)
            catalog.replace(store, f"check:{clause}", uuid.uuid4().hex, nt)
        written.append(clause)
    return written


def _write_clause(
    w: TripleWriter,
    base: str,
    contract: IRI,
    clause: str,
    results: list[RuleResult],
    started: dt.datetime,
    ended: dt.datetime,
) -> None:
    add = w.add
    check = mint(base, "check", clause)
    clause_iri = PG[f"{clause.capitalize()}Clause"]
    add(check, RDF_TYPE, PG.Check)
    add(check, PG.clause, clause_iri)
    add(check, PROV.used, contract)
    add(check, PROV.startedAtTime, started)
    add(check, PROV.endedAtTime, ended)
    blocked = any(r.blocks_gate for r in results)
    add(check, PG.outcome, "fail" if blocked else "pass")
    for r in results:
        rule = mint(base, "rule", r.rule.id)
        add(rule, RDF_TYPE, PG.Rule)
        add(rule, PG.ruleId, r.rule.id)
        add(rule, PG.clause, clause_iri)
        add(rule, PG.severity, r.rule.severity)
        add(rule, PG.title, r.rule.title)
        add(rule, PG.remedy, r.rule.remedy)
        res = mint(base, "rule-result", r.rule.id)
        add(check, PG.result, res)
        add(res, RDF_TYPE, PG.RuleResult)
        add(res, PG.rule, rule)
        add(res, PROV.wasGeneratedBy, check)
        add(res, PG.outcome, r.outcome)
        add(res, PG.violationCount, len(r.violations))
        add(res, PG.message, r.error)
        for v in r.violations:
            key = hashlib.sha256(f"{v.focus}\n{v.message}".encode()).hexdigest()[:16]
            node = mint(base, "violation", r.rule.id, key)
            add(node, RDF_TYPE, PG.Violation)
            add(node, PG.rule, rule)
            add(node, PG.focus, IRI(v.focus) if plain_iri(v.focus) else None)
            add(node, PG.message, v.message)
            add(node, PG.severity, r.rule.severity)
            add(node, PG.lineageStatus, r.rule.lineage)  # None (the severity's default) writes nothing
            add(node, PROV.wasGeneratedBy, check)
