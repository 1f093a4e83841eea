"""Numbers in texts bound to the statistics that recompute them, with no hand-written values.

Every ``pg:Claim`` from a table cell (``pg:columnLabel`` / ``pg:rowLabel``, written by the
text importer) is bound by its column header (the statistic name,
:func:`provgraph.evidence.statnames.stat_name`, ``[release.bind].columns`` first) and its row
label (the condition, :func:`provgraph.stats.rowmatch.match_condition`, ``[release.bind].rows``
first); a number in a sentence whose written name (``FPR = 28%``) names a statistic is bound
when its line names exactly one condition. The value is read as the statistic means it (a
percentage of a rate as a proportion, ``17/18`` exactly with its n) and matched with
:meth:`provgraph.stats.statistic.StatIndex.match` on the name, the condition and the variant or
adjustment words of the label and header. Nothing here reads an IRI's spelling: conditions are
the recomputed statistics' keys, claims are read by their properties.

A bound claim gets, in the statistics graph, ``pg:recomputedAs`` (the statistic),
``pg:boundValue``, ``pg:tolerance``, ``pg:boundN`` (a stated denominator), ``pg:boundStatName``,
``pg:boundCondition`` and ``pg:recomputedText`` (the recomputation written as the text writes
its number); a cell that could not be bound gets a ``pg:bindingNote`` with the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from provgraph.evidence.statnames import normal_name, stat_name
from provgraph.rdf.terms import IRI, mint
from provgraph.rdf.vocab import PG
from provgraph.stats.query import key_of, stream
from provgraph.stats.rowmatch import Conditions, Value, tokens, words_fields, written_value
from provgraph.stats.statistic import Reported, Stat, StatIndex
from provgraph.store.base import Store

#: claim property -> field; each read by one query joining the claims to that property, not one
#: row per claim with a dozen OPTIONALs (which Oxigraph evaluated in superlinear time: 2.3 s for
#: 6,000 claims), nor a scan of the property (``pg:sourceLine`` is on every imported row: 97 s
#: of the statistics' refresh at 10^6 calls went to scanning such properties for one claim)
_PROPS = {
    "text": "text", "value": "value", "unit": "unit", "resolution": "res", "label": "label",
    "relation": "rel", "numerator": "num", "n": "n", "context": "ctx", "sourceLine": "line",
    "sourceColumn": "col", "rowLabel": "row", "rowGroup": "group", "columnLabel": "column",
    "columnUnit": "cunit", "tableColumn": "tcol", "sourceFile": "file", "registryValue": "rv",
}  # fmt: skip
_CLAIMS = "SELECT ?c WHERE { ?c a pg:Claim }"
_PATHS = "SELECT ?f ?path WHERE { ?c a pg:Claim ; pg:sourceFile ?f . ?f pg:path ?path }"
_REFS = "SELECT ?rv WHERE { ?rv pg:statisticRef ?ref }"
#: the rare property first: Oxigraph joins in the written order here, and ``pg:condition`` is
#: on every planned call (6.8 s at 10^5 calls the other way round, 0.00 s this way)
_LABELS = """SELECT ?cond ?name WHERE {
  { ?x pg:displayName ?name ; pg:condition ?cond }
  UNION { ?x a pg:ConditionSpec ; pg:condition ?cond ; pg:description ?name } }"""
#: sizes and confusion counts: inputs of the consistency checks, not statistics of their own
_COUNTS = frozenset({"n", "n_positive", "n_negative", "tp", "fp", "fn", "tn"})
_SETTINGS = """SELECT ?settings WHERE { ?spec a pg:ReleaseSpec ; pg:settings ?settings }"""


@dataclass(frozen=True)
class Written:
    """One claim as the text wrote it (the columns of :data:`_CLAIMS`)."""

    iri: str
    text: str
    value: Decimal
    unit: str | None
    resolution: Decimal | None
    label: str | None
    relation: str | None
    numerator: int | None
    n: int | None
    context: str
    where: str  # path:line:column
    row: str | None
    group: str | None
    column: str | None
    column_unit: str | None
    registered: bool = False  # a registry value naming its statistic matches it


@dataclass
class Binding:
    """A claim and what it was bound to (``stat``), or why not (``note``)."""

    claim: Written
    name: str | None = None
    condition: str | None = None
    value: Value | None = None
    stat: Stat | None = None
    note: str = ""
    fields: dict[str, object] = field(default_factory=dict)

    def recomputed_text(self) -> str | None:
        if self.stat is None or self.value is None:
            return None
        return self.value.show(self.stat.value, self.stat.n)


def read_claims(store: Store) -> list[Written]:
    """Every claim with a column header or a written name, once each."""
    registered = {rv for (rv,) in stream(store, _REFS)}
    props: dict[str, dict[str, str]] = {c: {} for (c,) in stream(store, _CLAIMS) if c}
    for prop, key in _PROPS.items():
        for c, o in stream(store, f"SELECT ?c ?o WHERE {{ ?c a pg:Claim ; pg:{prop} ?o }}"):
            r = props.get(c or "")
            if r is None:
                continue
            if key == "rv":  # any registry value naming its statistic
                if o in registered:
                    r["rv"] = "registered"
            else:
                r.setdefault(key, o or "")
    paths = dict(stream(store, _PATHS))
    out: list[Written] = []
    for c, r in props.items():
        if ("column" not in r and "label" not in r) or "line" not in r or "value" not in r:
            continue
        if r.get("tcol") == "1" and r.get("row"):
            continue  # a number in the row's label cell is part of its name ("Claude 3.5 Sonnet")
        try:
            number = Decimal(r["value"])
            resolution = Decimal(r["res"]) if r.get("res") else None
        except InvalidOperation:
            continue
        path = paths.get(r.get("file", "")) or "?"
        where = f"{path}:{r['line']}" + (f":{r['col']}" if r.get("col") else "")
        out.append(Written(
            c, r.get("text", ""), number, r.get("unit"), resolution, r.get("label"), r.get("rel"),
            _int(r.get("num")), _int(r.get("n")), r.get("ctx", ""), where, r.get("row"), r.get("group"),
            r.get("column"), r.get("cunit"), "rv" in r,
        ))  # fmt: skip
    return sorted(out, key=lambda w: _order(w.where))


def condition_names(store: Store, base: str, stats: list[Stat]) -> dict[str, list[str]]:
    """The conditions a single statistic is recomputed for, with the display names recorded."""
    keys = {s.conditions[0] for s in stats if len(s.conditions) == 1}
    names: dict[str, list[str]] = {k: [] for k in sorted(keys)}
    for cond, name in stream(store, _LABELS):
        key = key_of(cond or "", base, "condition")
        if key in names and name and name not in names[key]:
            names[key].append(name)
    return names


def bind_settings(store: Store) -> dict:
    """The contract's ``[release.bind]`` (empty without one)."""
    for (settings,) in stream(store, _SETTINGS):
        if settings:
            return json.loads(settings)
    return {}


def bind_texts(store: Store, base: str, index: StatIndex) -> list[Binding]:
    """Read the texts' claims from the store and bind them (see :func:`bind_claims`)."""
    claims = read_claims(store)
    if not claims:
        return []
    return bind_claims(claims, index, condition_names(store, base, index.stats), bind_settings(store))


def bind_claims(
    claims: list[Written], index: StatIndex, names: dict[str, list[str]], settings: dict
) -> list[Binding]:
    """Bind every table cell and every sentence number that names a statistic and a condition."""
    columns = settings.get("columns") or {}
    conditions = Conditions(names, settings.get("rows") or {})
    per_condition = {s.name for s in index.stats if len(s.conditions) == 1}
    out: list[Binding] = []
    for claim in claims:
        if claim.column is not None:
            cell = _bind_cell(claim, index, conditions, columns)
            if cell is not None:
                out.append(cell)
            continue
        name = stat_name(claim.label, columns)
        if name not in per_condition:
            continue  # no name, or one recomputed over all conditions (Q): the registry binds it
        found = conditions.named(claim.context)
        if len(found) == 1:
            out.append(_bind(Binding(claim, name, found[0]), index, tokens(claim.context)))
        elif len(found) > 1:
            note = f"its line names {len(found)} conditions: {', '.join(found)}"
            out.append(Binding(claim, name, note=note))
    return out


def _bind_cell(claim: Written, index: StatIndex, conditions: Conditions, columns: dict) -> Binding | None:
    """The cell's binding; None for a column or row the contract leaves unbound on purpose."""
    header = claim.column or ""
    name = stat_name(header, columns)
    if name is None:
        if any(normal_name(h) == normal_name(header) for h in columns):
            return None
        return Binding(claim, note=f"column {header!r} names no statistic")
    if not claim.row:
        return Binding(claim, name, note="its row has no label")
    match = conditions.match(claim.row)
    if match.declared and match.key is None:
        return None
    if match.key is None and claim.group and not match.declared and not match.candidates:
        match = conditions.match(f"{claim.group} {claim.row}")  # "Claude" above "Sonnet 4.6"
    if match.key is None:
        return Binding(claim, name, note=f"row {match.reason}")
    return _bind(Binding(claim, name, match.key), index, (*match.leftover, *tokens(header)))


def _bind(b: Binding, index: StatIndex, words: tuple[str, ...]) -> Binding:
    c = b.claim
    assert b.name is not None and b.condition is not None
    b.value = written_value(
        b.name, c.unit, c.value, c.resolution, c.numerator, c.n, c.column_unit, c.relation
    )
    if b.value.value is None:
        b.note = b.value.reason
        return b
    b.fields = words_fields(words)
    reported = Reported(c.iri, b.name, b.value.value, b.value.tolerance, c.text, (b.condition,), b.fields,
                        b.value.n, c.where)  # fmt: skip
    b.stat, reason = index.match(reported)
    if b.stat is None:
        b.note = reason
        if b.name in _COUNTS and f"does not recompute {b.name!r}" in reason:
            b.condition = None  # a size or count: the consistency rules check it, nothing recomputes it
        elif c.registered:
            b.condition = None  # the registry's statistic reference names what it is
            b.note += "; the registry value it matches names its statistic"
    return b


def write_bindings(add, base: str, bindings: list[Binding]) -> None:
    """The bindings into the statistics graph (see the module docstring)."""
    for b in bindings:
        node = IRI(b.claim.iri)
        if b.name is not None:
            add(node, PG.boundStatName, b.name)
        if b.condition is not None and b.value is not None and b.value.value is not None:
            # only a number read as a value: a bound written "< 0.05" is not unrecomputed
            add(node, PG.boundCondition, mint(base, "condition", b.condition))
        if b.note:
            add(node, PG.bindingNote, b.note)
        if b.stat is None or b.value is None or b.value.value is None:
            continue
        add(node, PG.recomputedAs, b.stat.iri(base))
        add(node, PG.boundValue, b.value.value)
        add(node, PG.tolerance, b.value.tolerance)
        add(node, PG.boundN, b.value.n)
        add(node, PG.recomputedText, b.recomputed_text())


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None


def _order(where: str) -> tuple:
    path, _, rest = where.partition(":")
    return (path, *(int(x) if x.isdigit() else 0 for x in rest.split(":")))
