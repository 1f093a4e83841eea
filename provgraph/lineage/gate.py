"""The check as the commands run it: derived evidence first, then the rules, then the record.

``provgraph check``, ``lineage``, ``report`` and ``release`` run the same three steps, in this
order (:func:`run_gate` does all three):

1. :func:`refresh_derived`: after an import changed, the store is compacted (the bulk loads
   left segments every look-up would consult); the per-call evidence view
   (:mod:`provgraph.rules.callview`) is brought up to date first, alone; then, side by side,
   the per-case evidence view (:mod:`provgraph.rules.caseview`) and the pixel verdicts
   (:mod:`provgraph.rules.pixelview`) that read it, the statistics the analysis clause checks
   (or a stale statistics graph is dropped), the file class closure
   (:mod:`provgraph.rules.fileview`) and the decoding settings
   (:mod:`provgraph.rules.decodingview`), so the rules read current derived evidence;
2. :func:`provgraph.rules.run_check`: the rules, all against one state of the store;
3. :func:`record_check_and_hubs`: the check is written into the store, then what lies upstream
   of each large lineage hub, which reads the violations just written.

The sequence lives here because lineage is the lowest layer that sees all three (statistics
and rules lie below it). Before step 1, :func:`require_complete_ingest` fails closed on a store
that an ingest killed midway left half-updated.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from provgraph.errors import StoreError
from provgraph.ingest.run import describe_unfinished
from provgraph.lineage.hubs import record_hubs
from provgraph.rules import callview, caseview, decodingview, fileview, pixelview
from provgraph.rules.recorded import write_record
from provgraph.rules.rule import Rule
from provgraph.rules.runner import CheckReport, RuleResult, contract_state, record_check, run_check
from provgraph.stats import materialize
from provgraph.store import catalog, parallel
from provgraph.store.base import Store

log = logging.getLogger(__name__)


def require_complete_ingest(store: Store) -> None:
    """Raise :class:`StoreError` (exit 2, no report) when an ingest started and did not finish,
    or when a source's last import failed (its evidence would read as absent).

    Some sources would be new and others old, so no rule result could be trusted: as when
    the store changes under a check, the gate cannot decide, and says how to repair the store.
    """
    lines = describe_unfinished(catalog.unfinished_ingests(store))
    if lines:
        raise StoreError(f"{store.location}: the store is half-updated: {'; '.join(lines)}")
    failed = catalog.failed_sources(store)
    if failed:
        shown = "; ".join(error for _, error in failed[:3]) + (
            f"; and {len(failed) - 3} more" if len(failed) > 3 else ""
        )
        raise StoreError(
            f"{store.location}: {len(failed)} source(s) could not be imported, so the rules would read "
            f"their evidence as absent: {shown}. Fix them, or leave them out with [ingest].exclude, "
            "and ingest again"
        )


#: What :func:`refresh_derived` names each step (``on_step``), in the order they start.
STEPS = {
    callview.refresh: "per-call evidence",
    caseview.refresh: "per-case evidence",
    pixelview.refresh: "pixel verdicts",
    fileview.refresh: "file classes",
    decodingview.refresh: "decoding settings",
}


def refresh_derived(
    store: Store, readers: int | None = None, on_step: Callable[[str], None] | None = None
) -> None:
    """Bring the derived evidence up to date before the rules read it.

    When an import changed since the views were derived, the store is compacted first
    (:meth:`Store.compact`: the bulk loads left segments every look-up below would consult).
    The statistics are recomputed when the contract declares the analysis clause (unchanged
    inputs cost one fingerprint comparison); otherwise a statistics graph whose inputs changed
    is dropped. The derived views (per call, file classes, per case, pixel verdicts, decoding)
    are recomputed when any import changed. The call view comes first, alone (it reads its
    two halves side by side); then, on a store that answers several queries at once, the rest
    run side by side on ``readers`` threads (default one per core, up to 4; 1 runs them in
    turn): the per-case view and the pixel verdicts (which read the call view), the
    statistics, the file classes and the decoding settings. The views write one at a time
    (:mod:`provgraph.store.catalog`); after each step, the memory it freed goes back to the
    system (:func:`provgraph.store.parallel.release_memory`). ``on_step`` is told the name of
    each step as it starts (from the thread that runs it): "compacting the store", then the
    names of :data:`STEPS` and "statistics". Raises :class:`~provgraph.errors.UsageError` when
    the store holds no contract.
    """
    _, _, in_force = contract_state(store)
    started = on_step or (lambda name: None)
    if not callview.is_current(store):
        # imports changed since the views were derived: what the loader wrote is compacted
        # first, as every step below reads it (a few seconds at 10^5 calls; bench/README.md)
        log.info("compacting the store after the imports changed")
        started("compacting the store")
        store.compact()

    def statistics(store: Store) -> None:
        started("statistics")
        if "analysis" in in_force:
            materialize.refresh(store)
        else:
            materialize.drop_if_stale(store)

    threads = parallel.readers(store, readers)

    def run(step: Callable[[Store], object], name: str | None = None) -> object:
        name = name or STEPS.get(step)
        if name:
            started(name)
        try:
            return step(store)
        finally:  # what the step freed goes back to the system, not to the next step's peak
            parallel.release_memory()

    # The call view first, alone: its identity half holds a fact per call, and when it ran beside
    # the statistics a check at 10^6 calls peaked at 4.0 GiB. It reads on `threads` itself, so
    # the phase keeps both cores busy (at 10^5 calls the steps side by side had saved 3 s of
    # 103: bench/README.md).
    run(lambda store: callview.refresh(store, readers=threads), STEPS[callview.refresh])
    steps = [caseview.refresh, pixelview.refresh, statistics, fileview.refresh, decodingview.refresh]
    list(parallel.in_parallel(run, steps, threads))


def record_check_and_hubs(store: Store, report: CheckReport) -> list[str]:
    """Record ``report`` (:func:`provgraph.rules.record_check`), then the hub summaries lineage
    reads from it (:func:`provgraph.lineage.hubs.record_hubs`), then what it was computed from
    (:func:`provgraph.rules.recorded.write_record`, last: it marks the record complete).
    Returns the clauses recorded."""
    written = record_check(store, report)
    record_hubs(store)
    write_record(store, report)
    return written


def run_gate(
    store: Store,
    rules: list[Rule],
    *,
    explicit: bool = False,
    record: bool = True,
    on_result: Callable[[RuleResult], None] | None = None,
    on_step: Callable[[str], None] | None = None,
) -> CheckReport:
    """Refresh the statistics, run ``rules`` and, if ``record``, record the check and hub summaries.

    ``explicit`` and ``on_result`` are passed to :func:`provgraph.rules.run_check`. ``on_step``
    is told each step's name as it starts: those of :func:`refresh_derived`, then "rules", then
    "recording the check". A store an interrupted ingest left half-updated fails first
    (:func:`require_complete_ingest`).
    """
    require_complete_ingest(store)
    refresh_derived(store, on_step=on_step)
    if on_step:
        on_step("rules")
    report = run_check(store, rules, explicit=explicit, on_result=on_result)
    if record:
        if on_step:
            on_step("recording the check")
        record_check_and_hubs(store, report)
    return report
