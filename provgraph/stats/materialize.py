"""Bring the recomputed statistics in the store up to date, in their own catalog slot.

The statistics graph (the cell grid, keyed matrices, missingness tables, statistics, review sets,
the ``pg:recomputedAs`` links from reported values, the texts' numbers bound to statistics
(:mod:`provgraph.stats.bind`) and the registry's references resolved
(:mod:`provgraph.stats.refs`)) is derived from every imported graph. It
is replaced atomically like an import (:func:`provgraph.store.catalog.replace`) under the key
``analysis:statistics``; its fingerprint is the fingerprints of all import slots, so it is
recomputed exactly when an input or the contract changed. ``provgraph check`` calls
:func:`refresh` before the rules when the analysis clause is in force; ``provgraph stats``
calls it on demand.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import tempfile
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

from provgraph import __version__
from provgraph.bundle.contract.load import apply_defaults
from provgraph.bundle.contract.sections import analysis as analysis_section
from provgraph.errors import UsageError
from provgraph.rdf.terms import IRI, TripleWriter, mint
from provgraph.rdf.vocab import PG, PROV, RDF_TYPE
from provgraph.stats.bind import Binding, bind_texts, write_bindings
from provgraph.stats.cells import build_grid
from provgraph.stats.compute import CellResults, compute
from provgraph.stats.core.grid import CellGrid
from provgraph.stats.harness import harness_statistics
from provgraph.stats.matrices import Matrix
from provgraph.stats.query import PREFIXES, key_of
from provgraph.stats.refs import Resolved, resolve_registry, write_resolved
from provgraph.stats.reviews import ReviewResults, reviewer_statistics
from provgraph.stats.scores import score_statistics
from provgraph.stats.statistic import (
    ADJUSTMENT_ALIASES,
    NAME_ALIASES,
    ROUTE_ALIASES,
    VARIANT_ALIASES,
    Reported,
    Stat,
    StatIndex,
    canonical,
)
from provgraph.store import catalog, scopes
from provgraph.store.base import Store

log = logging.getLogger(__name__)

SLOT = "analysis:statistics"
#: bumped whenever the statistics graph changes shape or a computation changes
ENGINE_VERSION = "5"


@dataclass
class Outcome:
    """What one refresh did (and, when it computed, everything it computed)."""

    status: str  # "computed", "unchanged", "removed", "nothing"
    base: str = ""
    statistics: int = 0
    cells: int = 0
    source: str | None = None  # where the cells came from: labels or reported
    stats: list[Stat] = field(default_factory=list)
    links: list[tuple[Reported, Stat]] = field(default_factory=list)
    unmatched: list[tuple[Reported, str]] = field(default_factory=list)
    matrices: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    bindings: list[Binding] = field(default_factory=list)  # the texts' numbers (bound or not)
    resolved: list[Resolved] = field(default_factory=list)  # the registry's statistic references


def inputs_fingerprint(store: Store) -> str:
    slots = scopes.imported_slots(store)
    text = f"{__version__}/{ENGINE_VERSION}\n" + "".join(f"{s.key}\t{s.fingerprint}\n" for s in slots)
    return hashlib.sha256(text.encode()).hexdigest()


def settings(store: Store) -> tuple[str, dict | None, dict]:
    """Base IRI, the [annotation] section (None if absent) and the [analysis] section with defaults."""
    rows = store.select(
        PREFIXES
        + """SELECT ?base ?annotation ?analysis WHERE {
               ?c a pg:Contract ; pg:project/pg:baseIri ?base .
               OPTIONAL { ?e a pg:Endpoint ; pg:contract ?c ; pg:settings ?annotation }
               OPTIONAL { ?a a pg:AnalysisPlan ; pg:contract ?c ; pg:settings ?analysis } }"""
    )
    if not rows:
        raise UsageError("no contract in the store: run `provgraph ingest` on the bundle first")
    r = rows[0]
    annotation = json.loads(r["annotation"].value) if r["annotation"] else None  # type: ignore[union-attr]
    analysis = json.loads(r["analysis"].value) if r["analysis"] else {}  # type: ignore[union-attr]
    return r["base"].value, annotation, apply_defaults(analysis, analysis_section.SCHEMA)  # type: ignore[union-attr]


def refresh(store: Store, force: bool = False) -> Outcome:
    """Recompute the statistics graph if its inputs changed (or ``force``)."""
    fingerprint = inputs_fingerprint(store)
    slot = catalog.current(store, SLOT)
    if slot is not None and slot.fingerprint == fingerprint and not force:
        return Outcome("unchanged")
    base, annotation, analysis = settings(store)
    grid = build_grid(store, base, annotation, analysis)
    cell_results = compute(grid, analysis, base) if grid is not None else None
    review_results = reviewer_statistics(store, base, analysis)
    score_stats, score_notes = score_statistics(store, base)
    harness = harness_statistics(store, base)
    nothing = cell_results is None and (review_results is None or not review_results.stats)
    if nothing and not harness and not score_stats:
        notes = (review_results.notes if review_results else []) + score_notes
        if slot is not None:
            catalog.remove(store, SLOT)
            store.flush()
            return Outcome("removed", notes=notes)
        return Outcome("nothing", notes=notes)
    stats = (cell_results.stats if cell_results else []) + (review_results.stats if review_results else [])
    stats += harness + score_stats
    index = StatIndex(stats)
    reported = read_reported(store, base, slot.graph if slot else None)
    outcome = Outcome(
        "computed",
        base=base,
        statistics=len(stats),
        cells=grid.cell_count if grid else 0,
        source=grid.source if grid else None,
        stats=stats,
        matrices=cell_results.matrices if cell_results else [],
    )
    for r in reported:
        stat, reason = index.match(r)
        if stat is None:
            outcome.unmatched.append((r, reason))
        else:
            outcome.links.append((r, stat))
    links = outcome.links
    outcome.bindings = bind_texts(store, base, index)
    outcome.resolved = resolve_registry(store, base, stats)
    outcome.notes = (cell_results.notes if cell_results else []) + (
        review_results.notes if review_results else []
    )
    outcome.notes += score_notes
    with tempfile.TemporaryDirectory(prefix="provgraph-stats-") as tmp:
        nt = Path(tmp) / "statistics.nt"
        with nt.open("w", encoding="utf-8") as fh:
            write_graph(TripleWriter(fh), base, grid, cell_results, review_results, stats, links, outcome)
        catalog.replace(store, SLOT, fingerprint, nt)
    log.info("recomputed %d statistics from %d cells", outcome.statistics, outcome.cells)
    return outcome


def drop_if_stale(store: Store) -> None:
    """Remove a statistics graph whose inputs changed (the analysis clause is no longer in force)."""
    slot = catalog.current(store, SLOT)
    if slot is not None and slot.fingerprint != inputs_fingerprint(store):
        catalog.remove(store, SLOT)
        store.flush()


# --- reported values --------------------------------------------------------------------------


def read_reported(store: Store, base: str, own_graph: str | None = None) -> list[Reported]:
    """Reported values as their importers stated them (without a tolerance this engine added
    to its own previous graph)."""
    own = f"<{own_graph}>" if own_graph else "<urn:provgraph:none>"
    rows = store.select(
        PREFIXES
        + """SELECT ?r ?name (STR(?v) AS ?value) ?tol ?n ?cohort ?variant ?adj ?family ?rep ?conf ?cluster
                    ?case ?cond ?a ?b ?model ?path ?line WHERE {
               ?r a pg:ReportedValue ; pg:statName ?name ; pg:value ?v .
               OPTIONAL { GRAPH ?tg { ?r pg:tolerance ?tol } FILTER (?tg != OWN_GRAPH) }
               OPTIONAL { ?r pg:n ?n } OPTIONAL { ?r pg:cohortRule ?cohort }
               OPTIONAL { ?r pg:testVariant ?variant } OPTIONAL { ?r pg:adjustment ?adj }
               OPTIONAL { ?r pg:testFamily ?family } OPTIONAL { ?r pg:replicate ?rep }
               OPTIONAL { ?r pg:confidence ?conf } OPTIONAL { ?r pg:cluster ?cluster }
               OPTIONAL { ?r pg:case ?case } OPTIONAL { ?r pg:condition ?cond }
               OPTIONAL { ?r pg:firstCondition ?a } OPTIONAL { ?r pg:secondCondition ?b }
               OPTIONAL { ?r pg:requestedModel ?model }
               OPTIONAL { ?r pg:sourceFile/pg:path ?path } OPTIONAL { ?r pg:sourceLine ?line } }""".replace(
            "OWN_GRAPH", own
        )
    )
    out: dict[str, Reported] = {}
    for row in rows:
        iri = row["r"].value  # type: ignore[union-attr]
        if iri in out:
            continue

        def v(name: str, row=row) -> str | None:
            term = row[name]
            return None if term is None else term.value

        conditions: tuple[str, ...] = ()
        if v("a") and v("b"):
            conditions = (key_of(v("a"), base, "condition"), key_of(v("b"), base, "condition"))  # type: ignore[arg-type]
        elif v("cond"):
            conditions = (key_of(v("cond"), base, "condition"),)  # type: ignore[arg-type]
        fields: dict[str, object] = {}
        for name, value in (
            ("variant", canonical(v("variant"), VARIANT_ALIASES)),
            ("adjustment", canonical(v("adj"), ADJUSTMENT_ALIASES)),
            ("route", canonical(v("cohort"), ROUTE_ALIASES)),
            ("family", key_of(v("family"), base, "family") if v("family") else None),
            ("replicate", int(v("rep")) if v("rep") else None),  # type: ignore[arg-type]
            ("confidence", v("conf").upper() if v("conf") else None),  # type: ignore[union-attr]
            ("cluster", v("cluster").lower() if v("cluster") else None),  # type: ignore[union-attr]
            ("case", key_of(v("case"), base, "case") if v("case") else None),
            ("model", v("model")),
        ):
            if value is not None:
                fields[name] = value
        lexical = v("value") or ""
        tol = float(v("tol")) if v("tol") else None  # type: ignore[arg-type]
        out[iri] = Reported(
            iri,
            canonical(v("name"), NAME_ALIASES) or "",
            float(lexical),
            tol,
            lexical,
            conditions,
            fields,
            int(v("n")) if v("n") else None,  # type: ignore[arg-type]
            f"{v('path')}:{v('line')}" if v("line") else v("path"),
        )
    return list(out.values())


def tolerance_of(lexical: str) -> float:
    """Half a unit in the last digit of a written number."""
    try:
        exponent = int(Decimal(lexical).as_tuple().exponent)  # type: ignore[arg-type]
    except (InvalidOperation, ValueError):
        return 0.0
    return 0.5 * 10.0**exponent


# --- writing the graph -------------------------------------------------------------------------


def write_graph(
    w: TripleWriter,
    base: str,
    grid: CellGrid | None,
    cell_results: CellResults | None,
    reviews: ReviewResults | None,
    stats: list[Stat],
    links: list[tuple[Reported, Stat]],
    outcome: Outcome,
) -> None:
    """Write the statistics graph: the recomputation, cell grid, matrices, review sets,
    statistics, and the links (with tolerances) from the reported values they match."""
    add = w.add
    run = mint(base, "recomputation", "main")
    add(run, RDF_TYPE, PG.Recomputation)
    add(run, PROV.used, mint(base, "contract", "main"))
    add(run, PROV.endedAtTime, dt.datetime.now(dt.UTC).replace(microsecond=0))
    add(run, PG.version, ENGINE_VERSION)
    for note in outcome.notes:
        add(run, PG.message, note)
    cells = _write_cells(add, base, run, grid) if grid is not None else None
    if cell_results is not None:
        for m in cell_results.matrices:
            _write_matrix(add, base, run, cells, m)
    if reviews is not None:
        for rset in reviews.sets:
            add(rset.iri, RDF_TYPE, PG.ReviewSet)
            add(rset.iri, PROV.wasGeneratedBy, run)
            for member in rset.members:
                add(rset.iri, PROV.hadMember, IRI(member))
    for s in stats:
        _write_stat(add, base, run, s)
    for r, s in links:
        add(IRI(r.iri), PG.recomputedAs, s.iri(base))
        if r.tolerance is None:
            add(IRI(r.iri), PG.tolerance, tolerance_of(r.lexical))
    write_bindings(add, base, outcome.bindings)
    write_resolved(add, base, outcome.resolved)


def _write_cells(add, base: str, run: IRI, grid: CellGrid) -> IRI:
    """One node stands for every cell (see :mod:`provgraph.stats.core.grid`): it derives from each
    label row (or reported cell) a cell was formed from, so lineage reaches every cell."""
    cells = mint(base, "cell-grid", "main")
    add(cells, RDF_TYPE, PG.CellGrid)
    add(cells, PG.cellSource, grid.source)
    add(cells, PG.n, grid.cell_count)
    add(cells, PG.blockCount, grid.block_count)
    add(cells, PG.conditionCount, len(grid.condition_keys))
    labelled = {
        "conditions": grid.labelled_conditions,
        "by_conditions": {str(k): v for k, v in grid.labelled.items()},
    }
    add(cells, PG.labelledBlocks, json.dumps(labelled, sort_keys=True))
    add(cells, PROV.wasGeneratedBy, run)
    for source in grid.used_sources():
        add(cells, PROV.wasDerivedFrom, IRI(source))
    return cells


def _write_matrix(add, base: str, run: IRI, cells: IRI | None, m: Matrix) -> None:
    """A keyed matrix with its columns and its missingness table."""
    add(m.iri, RDF_TYPE, PG.KeyedMatrix)
    add(m.iri, PG.cohortRule, m.route)
    add(m.iri, PG.n, m.n)
    add(m.iri, PG.blockCount, m.block_count)
    add(m.iri, PG.conditionCount, len(m.conditions))
    add(m.iri, PG.keySetSha256, m.keyset)
    add(m.iri, PG.mispairedPositions, m.mispaired)
    add(m.iri, PROV.wasGeneratedBy, run)
    add(m.iri, PROV.wasDerivedFrom, cells)
    for col in m.columns:
        add(m.iri, PROV.hadMember, col.iri)
        add(col.iri, RDF_TYPE, PG.MatrixColumn)
        add(col.iri, PG.condition, mint(base, "condition", col.condition))
        add(col.iri, PG.n, col.n)
        add(col.iri, PG.keySetSha256, col.keyset)
        add(col.iri, PROV.wasDerivedFrom, cells)
    for (cause, cond), count in sorted(m.missing.items()):
        node = mint(base, "missingness", m.route, cause, cond)
        add(m.iri, PG.missingness, node)
        add(node, RDF_TYPE, PG.Missingness)
        add(node, PG.cause, cause)
        add(node, PG.condition, mint(base, "condition", cond))
        add(node, PG.missingCount, count)
    excluded = m.block_count - m.n
    if m.route != "pairwise-available" and excluded:
        node = mint(base, "missingness", m.route, "blocks left out by the cohort rule")
        add(m.iri, PG.missingness, node)
        add(node, RDF_TYPE, PG.Missingness)
        add(node, PG.cause, f"blocks left out by the {m.route} rule")
        add(node, PG.missingCount, excluded)


def _write_stat(add, base: str, run: IRI, s: Stat) -> None:
    node = s.iri(base)
    add(node, RDF_TYPE, PG.Statistic)
    add(node, PG.statName, s.name)
    add(node, PG.value, float(s.value))
    add(node, PG.title, s.title())
    add(node, PG.method, s.method)
    add(node, PG.n, s.n)
    add(node, PG.cohortRule, s.route)
    add(node, PG.testVariant, s.variant)
    add(node, PG.adjustment, s.adjustment)
    if s.family is not None:
        add(node, PG.testFamily, mint(base, "family", s.family))
    add(node, PG.familySize, s.family_size)
    add(node, PG.df, s.df)
    add(node, PG.alpha, s.alpha)
    add(node, PG.cluster, s.cluster)
    add(node, PG.clusterCount, s.cluster_count)
    add(node, PG.resamples, s.resamples)
    add(node, PG.bootstrapSeed, s.seed)
    add(node, PG.level, s.level)
    add(node, PG.replicate, s.replicate)
    add(node, PG.confidence, s.confidence)
    add(node, PG.requestedModel, s.model)
    add(node, PG.analysisRole, s.role)
    add(node, PG.keySetSha256, s.keyset)
    if s.cohort is not None:
        add(node, PG.cohort, IRI(s.cohort))
    if s.case is not None:
        add(node, PG.case, mint(base, "case", s.case))
    if len(s.conditions) == 1:
        add(node, PG.condition, mint(base, "condition", s.conditions[0]))
    elif len(s.conditions) == 2:
        add(node, PG.firstCondition, mint(base, "condition", s.conditions[0]))
        add(node, PG.secondCondition, mint(base, "condition", s.conditions[1]))
    if s.sensitivity_for is not None:
        add(node, PG.sensitivityFor, s.sensitivity_for.iri(base))
    for source in s.inputs:
        add(node, PROV.wasDerivedFrom, IRI(source))
    add(node, PROV.wasGeneratedBy, run)
