"""The numbers behind the report's accounting panels, read from the graph (never from files).

Each function returns None when the graph has no evidence for its panel, and the report says
what is absent instead of drawing an empty chart. The panels follow Figure 2 of the audit
(view positions, output files, complete blocks), then reported against recomputed statistics
and claim statuses.

Terms of clauses that are still being built are named here in one place:
``VIEW_POSITION`` (DICOM ViewPosition of an image or study, cohort clause). Everything else
uses the shared vocabulary (pg:PlannedCall, pg:CallRecord, pg:CellGrid, pg:case,
pg:finding, pg:condition, pg:ReportedValue, pg:recomputedAs, pg:Statistic, pg:Claim...).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from provgraph.lineage.claims import NumberStatus, claim_statuses
from provgraph.lineage.model import STATUSES
from provgraph.rdf.vocab import PG_NS, RDFS_NS
from provgraph.store.base import Store

PREFIXES = f"PREFIX pg: <{PG_NS}> PREFIX rdfs: <{RDFS_NS}>\n"

#: DICOM ViewPosition as the cohort clause's importers record it (PA, AP, LL...; "" = blank).
VIEW_POSITION = PG_NS + "viewPosition"

#: Output states of a planned call, best first; a call with several records takes its best.
OUTPUT_STATES = ("nonempty", "zero-byte", "missing", "failed", "no terminal record")
_OUTPUT_CODES = {4: "nonempty", 3: "zero-byte", 2: "missing", 1: "failed", 0: "no terminal record"}

#: Claim statuses of the audit, in order of severity (decided by lineage).
CLAIM_STATUSES = STATUSES


def _int(term) -> int:
    return int(term.value) if term is not None else 0


@dataclass
class OutputStates:
    """Planned calls by the state of their output (the audit's 297 nonempty of 300)."""

    counts: dict[str, int]
    planned: int
    unplanned_records: int

    @property
    def nonempty(self) -> int:
        return self.counts.get("nonempty", 0)


def output_states(store: Store) -> OutputStates | None:
    rows = store.select(
        PREFIXES
        # sub-selects: Oxigraph evaluates each once and hash-joins them (2x faster at 100k calls)
        + """SELECT ?code (COUNT(*) AS ?n) WHERE {
          { SELECT ?call (MAX(COALESCE(?c, 0)) AS ?code) WHERE {
              { SELECT ?call WHERE { ?call a pg:PlannedCall } }
              OPTIONAL { { SELECT ?call ?c WHERE {
                  ?r pg:forCall ?call ; pg:terminal true ; pg:status ?status .
                  OPTIONAL { { SELECT ?r ?size WHERE { ?r pg:outputFile ?f . ?f pg:byteSize ?size } } }
                  BIND(IF(?status != "ok", 1, IF(!BOUND(?size), 2, IF(?size = 0, 3, 4))) AS ?c)
              } } }
          } GROUP BY ?call }
        } GROUP BY ?code"""
    )
    if not rows:
        return None
    counts = {name: 0 for name in OUTPUT_STATES}
    for r in rows:
        counts[_OUTPUT_CODES[_int(r["code"])]] += _int(r["n"])
    unplanned = store.select(
        PREFIXES
        + """SELECT (COUNT(DISTINCT ?r) AS ?n) WHERE {
          ?r a pg:CallRecord ; pg:forCall ?call . FILTER NOT EXISTS { ?call a pg:PlannedCall } }"""
    )
    return OutputStates(counts, sum(counts.values()), _int(unplanned[0]["n"]))


def view_positions(store: Store) -> dict[str, int] | None:
    """Images by view position; a blank value counts as "undocumented".

    One source is counted, the most direct one present: DICOM headers, else the MIMIC metadata
    table, else whatever else records a view (a cohort manifest). Counting every source would
    count one study once per table that names its view.
    """
    for where in (
        f"?x a <{PG_NS}DicomFile> .",
        f"?x a <{PG_NS}ImageMetadata> .",
        "",
    ):
        rows = store.select(
            f"SELECT ?v (COUNT(DISTINCT ?x) AS ?n) WHERE {{ {where} ?x <{VIEW_POSITION}> ?v }} GROUP BY ?v"
        )
        if rows:
            break
    if not rows:
        return None
    out: dict[str, int] = {}
    for r in rows:
        view = r["v"].value.strip() or "undocumented"  # type: ignore[union-attr]
        out[view] = out.get(view, 0) + _int(r["n"])
    return dict(sorted(out.items(), key=lambda kv: (kv[0] == "undocumented", -kv[1], kv[0])))


@dataclass
class Blocks:
    """(case, finding) blocks by how many conditions labelled them."""

    conditions: int
    by_conditions: dict[int, int]  # number of conditions with a label -> blocks

    @property
    def total(self) -> int:
        return sum(self.by_conditions.values())

    @property
    def complete(self) -> int:
        return self.by_conditions.get(self.conditions, 0)

    @property
    def incomplete(self) -> int:
        return self.total - self.complete


def blocks(store: Store) -> Blocks | None:
    """Globally complete blocks: labelled under every condition that labelled anything.

    Read from the statistics engine's cell grid (``pg:labelledBlocks``), which resolves every
    label row to its (case, condition) once; None before statistics were computed.
    """
    rows = store.select(PREFIXES + "SELECT ?j WHERE { ?g a pg:CellGrid ; pg:labelledBlocks ?j } LIMIT 1")
    if not rows:
        return None
    doc = json.loads(rows[0]["j"].value)  # type: ignore[union-attr]
    if not doc["conditions"]:
        return None
    by = {int(k): int(v) for k, v in doc["by_conditions"].items()}
    return Blocks(int(doc["conditions"]), dict(sorted(by.items())))


@dataclass
class StatRow:
    """A reported value and, when it has one, the statistic that recomputes it."""

    reported: str
    name: str
    reported_value: str
    reported_n: int | None
    statistic: str | None = None
    recomputed_value: str | None = None
    recomputed_n: int | None = None
    cohort_rule: str | None = None
    test_variant: str | None = None
    adjustment: str | None = None

    @property
    def label(self) -> str:
        """The statistic's name with what tells same-named rows apart (variant, adjustment)."""
        extra = [x for x in (self.test_variant, self.adjustment) if x]
        return self.name + (f" ({', '.join(extra)})" if extra else "")

    @property
    def recomputed_shown(self) -> str | None:
        """The recomputed value at two digits beyond the reported precision (whole when whole)."""
        if self.recomputed_value is None:
            return None
        try:
            rec = float(self.recomputed_value)
        except ValueError:
            return self.recomputed_value
        if rec.is_integer():
            return str(int(rec))
        decimals = len(self.reported_value.partition(".")[2]) if "." in self.reported_value else 0
        return f"{rec:.{decimals + 2}f}" if decimals else f"{rec:.4g}"

    @property
    def difference(self) -> float | None:
        """Relative difference (recomputed - reported) / |reported|; None when not comparable."""
        try:
            rep, rec = float(self.reported_value), float(self.recomputed_value or "")
        except ValueError:
            return None
        if rep == 0:
            return 0.0 if rec == 0 else None
        return (rec - rep) / abs(rep)

    @property
    def agrees(self) -> bool | None:
        """Whether the recomputed value rounds to the reported one at its written precision."""
        if self.recomputed_value is None:
            return None
        try:
            rec = float(self.recomputed_value)
            float(self.reported_value)
        except ValueError:
            return None
        decimals = len(self.reported_value.partition(".")[2]) if "." in self.reported_value else 0
        same_value = f"{rec:.{decimals}f}" == f"{float(self.reported_value):.{decimals}f}"
        same_n = self.reported_n is None or self.recomputed_n is None or self.reported_n == self.recomputed_n
        return same_value and same_n


@dataclass
class Statistics:
    rows: list[StatRow] = field(default_factory=list)
    recomputed_only: int = 0

    @property
    def paired(self) -> list[StatRow]:
        return [r for r in self.rows if r.statistic is not None]


def statistics(store: Store) -> Statistics | None:
    """Reported values (claims excluded: they have their own panel) beside their recomputation."""
    rows = store.select(
        PREFIXES
        + """SELECT ?rv ?name ?rvalue ?rn ?adj ?stat ?svalue ?sn ?cohort ?variant WHERE {
          ?rv a/rdfs:subClassOf* pg:ReportedValue .
          FILTER NOT EXISTS { ?rv a/rdfs:subClassOf* pg:Claim }
          OPTIONAL { ?rv pg:statName ?name } OPTIONAL { ?rv pg:value ?rvalue } OPTIONAL { ?rv pg:n ?rn }
          OPTIONAL { ?rv pg:adjustment ?adj }
          OPTIONAL {
            ?rv pg:recomputedAs ?stat .
            OPTIONAL { ?stat pg:value ?svalue } OPTIONAL { ?stat pg:n ?sn }
            OPTIONAL { ?stat pg:cohortRule ?cohort } OPTIONAL { ?stat pg:testVariant ?variant }
          }
        } ORDER BY ?name ?rv ?stat"""
    )
    alone = _int(
        store.select(
            PREFIXES
            + """SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE {
              ?s a/rdfs:subClassOf* pg:Statistic . FILTER NOT EXISTS { ?rv pg:recomputedAs ?s } }"""
        )[0]["n"]
    )
    if not rows and not alone:
        return None
    out = Statistics(recomputed_only=alone)
    seen = set()
    for r in rows:
        key = (r["rv"].value, r["stat"].value if r["stat"] else None)  # type: ignore[union-attr]
        if key in seen:
            continue
        seen.add(key)
        out.rows.append(
            StatRow(
                reported=key[0],
                name=_text(r["name"]) or "value",
                reported_value=_text(r["rvalue"]) or "",
                reported_n=_int(r["rn"]) if r["rn"] is not None else None,
                statistic=key[1],
                recomputed_value=_text(r["svalue"]),
                recomputed_n=_int(r["sn"]) if r["sn"] is not None else None,
                cohort_rule=_text(r["cohort"]),
                test_variant=_text(r["variant"]),
                adjustment=_text(r["adj"]),
            )
        )
    return out


def _text(term) -> str | None:
    return term.value if term is not None else None


def claims(store: Store) -> list[NumberStatus] | None:
    """Every number of the declared texts with the status lineage gives it and the reason that
    decides it (all at once: :func:`provgraph.lineage.claims.claim_statuses`); None when the
    graph has no claims."""
    rows = claim_statuses(store)
    return rows or None
