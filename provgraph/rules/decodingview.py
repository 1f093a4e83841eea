"""The decoding view: each call's decoding settings held against the plan's, flattened once.

The plan declares decoding settings (``[plan] decoding``: temperature, top_p, max_tokens,
seed); a batch request states what was asked for, a call record what ran. The rule
``output-decoding-mismatch`` reports a node that states another value than the plan's, and a
record of a call of which no node (request or record) states the setting at all. As plain
SPARQL both need, per node and setting, a look-up of the node's value and of its call's other
nodes: Oxigraph evaluates those per row (at 10^4 calls a ``NOT EXISTS`` form took 441 s against
7.5 s for the hash-joined form). This module scans each setting once and writes, in the catalog
slot :data:`SLOT`:

``pg:offPlanSetting``
    on a node (``pg:forCall`` some call) stating a planned setting with another value than the
    plan's: the setting's property (its value is the node's own triple)
``pg:unstatedSetting``
    on a call record whose call no node states the planned setting for: the setting's property

Values compare as SPARQL's ``!=`` does: numbers by value (``0`` equals ``0.0``), other
literals of one datatype by their text; values of two incomparable types are not reported
(``!=`` raises a type error there). The view is recomputed when any import changed, like the
call evidence view (:mod:`provgraph.rules.callview`).
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from typing import IO, Any

from provgraph.rdf.terms import IRI, TripleWriter
from provgraph.rdf.vocab import PG, PG_NS
from provgraph.rules import callview
from provgraph.store import catalog
from provgraph.store.base import Store

log = logging.getLogger(__name__)

SLOT = "derived:decoding"
VIEW_VERSION = "1"
#: the plan's decoding settings a rule holds the calls to (``[plan] decoding``)
SETTINGS = ("temperature", "topP", "maxTokens", "seed")

_XSD = "http://www.w3.org/2001/XMLSchema#"
_NUMERIC = {
    _XSD + t
    for t in (
        "integer",
        "decimal",
        "double",
        "float",
        "int",
        "long",
        "short",
        "byte",
        "nonNegativeInteger",
        "positiveInteger",
        "negativeInteger",
        "nonPositiveInteger",
        "unsignedInt",
        "unsignedLong",
        "unsignedShort",
        "unsignedByte",
    )
}
_P = f"PREFIX pg: <{PG_NS}>\n"
_PLAN = "SELECT ?setting ?want WHERE { ?plan a pg:CallPlan ; ?setting ?want VALUES ?setting { %s } }"
_STATED = "SELECT ?n ?v WHERE { ?n <%s> ?v }"
# (each a scan of one property, joined here: no look-up per node)
_NODES = "SELECT ?n ?call WHERE { ?n pg:forCall ?call }"
_RECORDS = "SELECT ?n ?call WHERE { ?n a pg:CallRecord ; pg:forCall ?call }"


def differs(got: Any, want: Any) -> bool:
    """SPARQL's ``got != want`` for two literals, an incomparable pair being False.

    >>> import pyoxigraph as ox
    >>> n = lambda v, t: ox.Literal(v, datatype=ox.NamedNode(_XSD + t))
    >>> differs(n("0", "integer"), n("0.0", "double")), differs(n("0.7", "double"), n("0", "integer"))
    (False, True)
    >>> differs(ox.Literal("a"), n("0", "integer"))
    False
    """
    gt, wt = got.datatype.value, want.datatype.value
    if gt in _NUMERIC and wt in _NUMERIC:
        return float(got.value) != float(want.value)
    if gt != wt:
        return False
    return bool(got.value != want.value)


def gather(store: Store) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(node, setting) pairs off the plan, and (record, setting) pairs no node of the call states."""
    values = " ".join(f"pg:{s}" for s in SETTINGS)
    plan = {r["setting"].value: r["want"] for r in store.select(_P + _PLAN % values)}  # type: ignore[union-attr]
    if not plan:
        return [], []
    # streamed, not selected: a million rows of terms held at once were this view's peak
    call_of: dict[str, str] = dict(store.stream(_P + _NODES))  # type: ignore[arg-type]
    off: list[tuple[str, str]] = []
    stated: dict[str, set[str]] = defaultdict(set)
    for setting, want in plan.items():
        for n, v in store.solutions(_STATED % setting):  # terms: the value's datatype decides
            call = call_of.get(n.value)  # type: ignore[union-attr]
            if call is None:
                continue
            stated[setting].add(call)
            if differs(v, want):
                off.append((n.value, setting))  # type: ignore[union-attr]
    del call_of
    unstated = {
        (record, s) for record, call in store.stream(_P + _RECORDS) for s in plan if call not in stated[s]
    }
    return sorted(off), sorted(unstated)


def refresh(store: Store) -> bool:
    """Bring the view up to date; True when it was recomputed."""
    current = hashlib.sha256(f"{VIEW_VERSION}\n{callview.fingerprint(store)}".encode()).hexdigest()
    slot = catalog.current(store, SLOT)
    if slot is not None and slot.fingerprint == current:
        return False
    off, unstated = gather(store)

    def produce(fh: IO[str]) -> None:
        w = TripleWriter(fh)
        for node, setting in off:
            w.add(IRI(node), PG.offPlanSetting, IRI(setting))
        for record, setting in unstated:
            w.add(IRI(record), PG.unstatedSetting, IRI(setting))

    catalog.replace_from(store, SLOT, current, produce)
    log.info("decoding view: %d settings off the plan, %d unstated", len(off), len(unstated))
    return True
