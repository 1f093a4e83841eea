"""Rule files: ``data/rules/<clause>/<rule-id>.rq``, a SPARQL SELECT with a metadata header.

The header is a block of ``# key: value`` comment lines before the query (so the file is
plain SPARQL that any tool can run). Indented ``#`` lines continue the previous value::

    # id: output-planned-without-terminal
    # clause: output
    # severity: fail
    # title: Planned call has no terminal record
    # remedy: Re-run the call or record why it is missing ...
    # requires: pg:PlannedCall, pg:CallRecord
    # lineage: unverifiable

``applies`` is optional: contract facts without which the rule does not apply (see
:data:`APPLIES`). A rule whose facts the contract does not declare is *not applicable*: the
benchmark legitimately lacks its evidence (a cohort checked before any call has no plan; PNG
images from the start have no DICOM). Evidence the contract does promise but the graph lacks
(``requires``) still fails closed.

``why`` is required: the rule's severity argued from the audit's repair boundary (seed 000,
Table 2 and section 3.6): a documented mismatch fails; missing identity evidence restricts the
claims downstream (and blocks only under ``[project] strict = true``).

``lineage`` is optional: the claim status a violation gives the claims downstream of its focus
when it is not the severity's default (``fail`` -> withdrawn, ``restrict`` -> restricted,
``info`` -> none; see :mod:`provgraph.lineage`). :func:`provgraph.rules.record_check` writes it
on each recorded violation, so lineage reads it from the graph.

The query returns one row per violation, projecting at least ``?focus`` (the node the
violation is about) and ``?message`` (one sentence a researcher understands).

A rule may have an *engine form*: ``<clause>/<rule-id>.<engine>.rq`` beside it, the same
rule written for one SPARQL engine (a store preset, :data:`provgraph.store.endpoint.PRESETS`)
whose planner the plain query defeats. Its header holds one key, ``why:`` (what the plain
form cost there). The plain file stays the rule's reference: the tests check that every form
returns the reference's rows on every fixture, so a fix to the rule must reach both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, get_args

from provgraph.errors import RuleError
from provgraph.rdf.resources import queries_dir
from provgraph.rdf.vocab import PG_NS
from provgraph.store.endpoint import PRESETS

CLAUSES = ("cohort", "pixel", "prompt", "model", "output", "annotation", "analysis", "release")
Severity = Literal["fail", "restrict", "info"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
#: Claim statuses a rule's ``lineage:`` key may name (the limiting ones; "retained" limits nothing).
LineageStatus = Literal["restricted", "unverifiable", "withdrawn"]
LINEAGE_STATUSES: tuple[LineageStatus, ...] = get_args(LineageStatus)
#: Contract facts a rule's ``applies:`` key may name, with what the contract says for each.
APPLIES: dict[str, str] = {
    "plan": "call plan (neither [plan] nor a plan file)",
    "dicom-images": 'DICOM sources for its images ([pixel] inputs = "images")',
    "harness": "benchmark harness output ([analysis] harness)",
}
_REQUIRED = ("id", "clause", "severity", "title", "remedy", "why")
_OPTIONAL = ("requires", "lineage", "applies")
#: Every key a header may hold (the README's rules section names each).
HEADER_KEYS = _REQUIRED + _OPTIONAL
_ID = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass(frozen=True)
class Rule:
    id: str
    clause: str
    severity: Severity
    title: str
    remedy: str
    query: str
    path: Path
    requires: tuple[str, ...] = field(default=())
    #: Contract facts (keys of :data:`APPLIES`) without which the rule does not apply.
    applies: tuple[str, ...] = field(default=())
    #: Why the severity is what it is (the audit's repair boundary).
    why: str = ""
    #: The claim status its violations imply when not the severity's default (header ``lineage:``).
    lineage: LineageStatus | None = None
    #: Engine forms: (engine, query) pairs from ``<rule-id>.<engine>.rq`` files.
    forms: tuple[tuple[str, str], ...] = field(default=())

    @property
    def blocks_gate(self) -> bool:
        return self.severity == "fail"

    def query_for(self, engine: str) -> str:
        """The query to run on ``engine``: its engine form if the rule has one, else the rule's."""
        return dict(self.forms).get(engine, self.query)


def _header(path: Path, lines: list[str], keys: tuple[str, ...]) -> tuple[dict[str, str], int]:
    """The ``# key: value`` header of a rule file (only ``keys`` allowed) and the index of the
    query's first line; a bad header is a :class:`RuleError` naming file and line."""
    meta: dict[str, str] = {}
    last: str | None = None
    for number, line in enumerate(lines, start=1):
        if not line.startswith("#"):
            return meta, number - 1
        content = line[1:]
        match = re.match(r"^ ?([a-z]+):\s*(.*)$", content)
        if match and not content.startswith("  "):
            key, value = match.group(1), match.group(2).strip()
            if key not in keys:
                raise RuleError(f"{path}:{number}: unknown header key {key!r}")
            if key in meta:
                raise RuleError(f"{path}:{number}: header key {key!r} given twice")
            meta[key] = value
            last = key
        elif content.strip() and last is not None and content.startswith("  "):
            meta[last] += " " + content.strip()
        elif content.strip():
            raise RuleError(f"{path}:{number}: header lines are '# key: value' (got {line!r})")
    return meta, len(lines)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise RuleError(f"{path}: cannot read rule file: {err}") from err


def parse_rule(path: Path, text: str | None = None) -> Rule:
    """Parse one rule file; a bad header is a :class:`RuleError` naming file and line."""
    lines = (_read(path) if text is None else text).splitlines()
    meta, body_start = _header(path, lines, _REQUIRED + _OPTIONAL)
    missing = [k for k in _REQUIRED if not meta.get(k)]
    if missing:
        raise RuleError(f"{path}:1: rule header lacks {', '.join(missing)}")
    if meta["id"] != path.stem:
        raise RuleError(f"{path}:1: id {meta['id']!r} must equal the file name {path.stem!r}")
    if not _ID.match(meta["id"]):
        raise RuleError(f"{path}:1: id {meta['id']!r} must be lower-case words joined by '-'")
    if meta["clause"] not in CLAUSES:
        raise RuleError(f"{path}:1: unknown clause {meta['clause']!r} (one of {', '.join(CLAUSES)})")
    if path.parent.name != meta["clause"]:
        raise RuleError(f"{path}:1: a {meta['clause']} rule must live in a folder named {meta['clause']}/")
    if meta["severity"] not in SEVERITIES:
        raise RuleError(f"{path}:1: unknown severity {meta['severity']!r} (one of {', '.join(SEVERITIES)})")
    lineage = meta.get("lineage") or None
    if lineage is not None and lineage not in LINEAGE_STATUSES:
        raise RuleError(
            f"{path}:1: unknown lineage status {lineage!r} (one of {', '.join(LINEAGE_STATUSES)})"
        )
    requires = tuple(
        PG_NS + r.strip().removeprefix("pg:") for r in meta.get("requires", "").split(",") if r.strip()
    )
    applies = tuple(a.strip() for a in meta.get("applies", "").split(",") if a.strip())
    unknown = [a for a in applies if a not in APPLIES]
    if unknown:
        raise RuleError(f"{path}:1: unknown applies fact {unknown[0]!r} (one of {', '.join(APPLIES)})")
    query = "\n".join(lines[body_start:]).strip()
    if not query:
        raise RuleError(f"{path}: no query after the header")
    return Rule(
        id=meta["id"],
        clause=meta["clause"],
        severity=meta["severity"],  # type: ignore[arg-type]  # checked against SEVERITIES above
        title=meta["title"],
        remedy=meta["remedy"],
        query=query,
        path=path,
        requires=requires,
        applies=applies,
        why=meta["why"],
        lineage=lineage,  # type: ignore[arg-type]  # checked against LINEAGE_STATUSES above
    )


def parse_form(path: Path) -> tuple[str, str, str]:
    """An engine form ``<rule-id>.<engine>.rq``: its rule id, engine and query."""
    rule_id, _, engine = path.stem.rpartition(".")
    if engine not in PRESETS:
        raise RuleError(f"{path}:1: unknown engine {engine!r} in the file name (one of {', '.join(PRESETS)})")
    lines = _read(path).splitlines()
    meta, body_start = _header(path, lines, ("why",))
    if not meta.get("why"):
        raise RuleError(
            f"{path}:1: an engine form's header needs why: (what the rule's own query cost there)"
        )
    query = "\n".join(lines[body_start:]).strip()
    if not query:
        raise RuleError(f"{path}: no query after the header")
    return rule_id, engine, query


def load_rules(root: Path | None = None) -> list[Rule]:
    """Every rule under ``root`` (default: the shipped ``data/rules/``) with its engine forms,
    ordered by clause and id."""
    root = root or queries_dir()
    files = sorted(root.glob("*/*.rq"))
    rules = [parse_rule(p) for p in files if "." not in p.stem]
    seen: dict[str, Path] = {}
    for rule in rules:
        if rule.id in seen:
            raise RuleError(f"{rule.path}: rule id {rule.id!r} also used by {seen[rule.id]}")
        seen[rule.id] = rule.path
    forms: dict[str, list[tuple[str, str]]] = {}
    for path in files:
        if "." in path.stem:
            rule_id, engine, query = parse_form(path)
            if path.parent / f"{rule_id}.rq" not in seen.values():
                raise RuleError(f"{path}:1: an engine form of no rule (no {rule_id}.rq beside it)")
            forms.setdefault(rule_id, []).append((engine, query))
    rules = [replace(r, forms=tuple(forms[r.id])) if r.id in forms else r for r in rules]
    return sorted(rules, key=lambda r: (CLAUSES.index(r.clause), r.id))
