"""SARIF 2.1.0 for GitHub code scanning: where each violation sits, relative to the repository.

GitHub reads ``artifactLocation.uri`` as a path from the repository root (codeql-action's
``resolveUriToFile`` in src/fingerprints.ts) and needs a ``region.startLine`` and a
``partialFingerprints`` per result (docs.github.com, "SARIF support for code scanning"). So
every uri here is relative to ``%SRCROOT%`` (the git top-level of the bundle, or
``check --sarif-base``), the bundle root is declared as ``BUNDLE`` in ``originalUriBaseIds``,
and a violation without a line is placed at line 1 of its file (a file-level result).
A violation with no file at all is placed at its clause's section of ``provgraph.toml``.

An archive member (``x.zip!/README.md``) is not a file in the repository: the result points
at the archive, names the member and its line as a logical location, and the member is a
nested artifact (``parentIndex``) of the archive in ``run.artifacts``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from provgraph import __version__
from provgraph.rules.rule import Severity
from provgraph.rules.runner import CheckReport, RuleResult, Violation

LEVEL: dict[Severity, str] = {"fail": "error", "restrict": "warning", "info": "note"}
#: The partialFingerprints key: rule id and focus identity, never a line number that shifts.
FINGERPRINT = "provgraph/focus/v1"
SRCROOT = "%SRCROOT%"
BUNDLE = "BUNDLE"


@dataclass(frozen=True)
class SarifPlace:
    """Where the bundle lies in the repository, and where each clause is in the contract.

    ``prefix`` is the bundle root relative to ``%SRCROOT%`` ('' when they are the same);
    ``clause_lines`` maps a clause to the line of its first section in ``contract``, ``tables``
    each TOML table header (``conditions.claude-A``) to its line.
    """

    prefix: str = ""
    contract: str = "provgraph.toml"
    clause_lines: dict[str, int] = field(default_factory=dict)
    tables: dict[str, int] = field(default_factory=dict)
    #: clause -> the contract sections that put it in force
    sections: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: results per run: GitHub shows the top 5,000 and rejects a run of more than 25,000
    max_results: int = 5000

    def line_for(self, clause: str, focus: str) -> int:
        """The line of the table named after the focus's last segment (``condition/claude-A``
        is ``[conditions.claude-A]``) when the contract has one, else the clause's first section."""
        name = unquote(focus.rstrip("/").rsplit("/", 1)[-1])
        for section in self.sections.get(clause, ()):
            line = self.tables.get(f"{section}.{name}")
            if line is not None:
                return line
        return self.clause_lines.get(clause, 1)


_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_.-]+)?)")


def table_lines(contract_text: str) -> dict[str, int]:
    """TOML table header (``conditions.claude-A``) -> its first line (1-based)."""
    found: dict[str, int] = {}
    for number, text in enumerate(contract_text.splitlines(), start=1):
        m = _HEADER.match(text)
        if m is not None:
            found.setdefault(m.group(1) + m.group(2), number)
    return found


def clause_lines(contract_text: str, sections: dict[str, tuple[str, ...]]) -> dict[str, int]:
    """Clause -> line (1-based) of the first TOML table header of a section that puts it in force.

    ``sections`` maps a section name to its clauses (the section modules' ``CLAUSES``).
    """
    found: dict[str, int] = {}
    for number, text in enumerate(contract_text.splitlines(), start=1):
        m = _HEADER.match(text)
        if m is None:
            continue
        for clause in sections.get(m.group(1), ()):
            found.setdefault(clause, number)
    return found


def to_sarif(report: CheckReport, place: SarifPlace | None = None) -> str:
    place = place or SarifPlace()
    artifacts = _Artifacts(place)
    rules = [_rule(r) for r in report.results]
    results: list[dict[str, Any]] = []
    budget = result_budget(report, place.max_results)
    for index, (r, take) in enumerate(zip(report.results, budget, strict=True)):
        seen: dict[str, int] = {}
        for v in r.violations:
            seen[v.focus] = seen.get(v.focus, 0) + 1
        for v in r.violations[:take]:
            results.append(_result(report, r, index, v, seen[v.focus] > 1, artifacts, place))
        if take < len(r.violations):
            rules[index]["properties"]["omittedResults"] = len(r.violations) - take
    notifications = [
        {
            "level": "error",
            "message": {"text": f"{r.rule.id}: {r.error}"},
            "descriptor": {"id": r.rule.id, "index": i},
        }
        for i, r in enumerate(report.results)
        if r.outcome == "error"
    ]
    omitted = sum(len(r.violations) for r in report.results) - len(results)
    if omitted:
        notifications.append(
            {
                "level": "warning",
                "message": {
                    "text": f"{omitted} violations left out: GitHub keeps {place.max_results} results "
                    "per run and rejects a run of more than 25,000 (--sarif-max-results); "
                    "`provgraph check --format json` lists them all"
                },
            }
        )
    bases: dict[str, Any] = {
        SRCROOT: {"description": {"text": "The repository root (git top-level, or --sarif-base)."}}
    }
    if place.prefix:
        bases[BUNDLE] = {
            "uri": place.prefix.rstrip("/") + "/",
            "uriBaseId": SRCROOT,
            "description": {"text": "The bundle root (the folder holding provgraph.toml)."},
        }
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "provgraph",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": "https://w3id.org/provgraph",
                "rules": rules,
            }
        },
        "originalUriBaseIds": bases,
        "invocations": [
            {
                "executionSuccessful": not any(n["level"] == "error" for n in notifications),
                "toolExecutionNotifications": notifications,
            }
        ],
        "artifacts": artifacts.items,
        "results": results,
        "properties": {"gate": "empty" if report.empty else "pass" if report.passed else "fail"},
    }
    doc = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [run]}
    return json.dumps(doc, indent=2)


_TIERS: tuple[Severity, ...] = ("fail", "restrict", "info")


def result_budget(report: CheckReport, limit: int) -> list[int]:
    """How many violations of each rule go into the SARIF: all while the total stays within
    ``limit``; otherwise ``fail`` rules first, then ``restrict``, then ``info`` (GitHub keeps
    the top results by severity), shared evenly between the rules of a tier so that every
    rule that fired shows."""
    counts = [len(r.violations) for r in report.results]
    take = [0] * len(counts)
    left = limit
    for tier in _TIERS:
        open_ = [i for i, r in enumerate(report.results) if r.rule.severity == tier and counts[i]]
        while left > 0 and open_:
            share = max(1, left // len(open_))
            still = []
            for i in open_:
                add = min(share, counts[i] - take[i], left)
                take[i] += add
                left -= add
                if take[i] < counts[i]:
                    still.append(i)
            open_ = still
    return take


def _rule(r: RuleResult) -> dict[str, Any]:
    rule = r.rule
    why = rule.why or rule.title
    return {
        "id": rule.id,
        "name": _camel(rule.id),
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": why},
        "help": {
            "text": f"Remedy: {rule.remedy}\n\nWhy this severity: {why}",
            "markdown": f"**Remedy:** {rule.remedy}\n\n**Why this severity:** {why}",
        },
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {
            "clause": rule.clause,
            "severity": rule.severity,
            "tags": ["provgraph", f"clause:{rule.clause}", rule.severity],
        },
    }


def _camel(rule_id: str) -> str:
    # reportingDescriptor.name is meant to be an identifier-like word (SARIF 3.49.7).
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", rule_id) if part)


def _result(
    report: CheckReport,
    r: RuleResult,
    index: int,
    v: Violation,
    repeated: bool,
    artifacts: _Artifacts,
    place: SarifPlace,
) -> dict[str, Any]:
    focus = report.short(v.focus)
    logical: list[dict[str, Any]] = [{"fullyQualifiedName": focus, "kind": "resource"}]
    message = v.message
    if v.path is None:
        uri = place.contract
        line = place.line_for(r.rule.clause, v.focus)
        physical = _physical(artifacts.index(uri), uri, place, line)
        message += f" (no source file records {focus}; shown at the [{r.rule.clause}] clause of the contract)"
    elif "!/" in v.path:
        outer, member = v.path.split("!/", 1)
        parent = artifacts.index(outer)
        artifacts.member(parent, member)
        physical = _physical(parent, outer, place, 1)
        where = f"{v.path}:{v.line}" if v.line else v.path
        logical.append({"name": member, "fullyQualifiedName": where, "kind": "resource"})
        message += f" (in {where})"
    else:
        physical = _physical(artifacts.index(v.path), v.path, place, v.line or 1)
    identity = f"{r.rule.id}\0{focus}" + (f"\0{v.message}" if repeated else "")
    return {
        "ruleId": r.rule.id,
        "ruleIndex": index,
        "level": LEVEL[r.rule.severity],
        "message": {"text": message},
        "locations": [{"physicalLocation": physical, "logicalLocations": logical}],
        "partialFingerprints": {FINGERPRINT: hashlib.sha256(identity.encode()).hexdigest()[:32]},
        "properties": {"focus": focus, "fileLevel": v.line is None or "!/" in (v.path or "")},
    }


def _physical(index: int, path: str, place: SarifPlace, line: int) -> dict[str, Any]:
    return {
        "artifactLocation": {"uri": repo_uri(path, place), "uriBaseId": SRCROOT, "index": index},
        "region": {"startLine": max(1, line)},
    }


def repo_uri(path: str, place: SarifPlace) -> str:
    """A bundle path as a URI reference from the repository root (percent-encoded)."""
    joined = f"{place.prefix.strip('/')}/{path}" if place.prefix.strip("/") else path
    return quote(joined, safe="/")


class _Artifacts:
    """``run.artifacts``: each file once; archive members nested under their archive."""

    def __init__(self, place: SarifPlace) -> None:
        self.items: list[dict[str, Any]] = []
        self._place = place
        self._at: dict[tuple[int | None, str], int] = {}

    def index(self, path: str) -> int:
        key = (None, path)
        if key not in self._at:
            self._at[key] = len(self.items)
            loc = {"uri": repo_uri(path, self._place), "uriBaseId": SRCROOT}
            self.items.append({"location": loc})
        return self._at[key]

    def member(self, parent: int, member: str) -> int:
        key = (parent, member)
        if key not in self._at:
            self._at[key] = len(self.items)
            # A nested artifact's uri is its path inside the parent, beginning with "/", and has
            # no uriBaseId (SARIF 2.1.0 sections 3.24.2 and 3.4.4).
            uri = "/" + quote(member.lstrip("/"), safe="/")
            self.items.append({"location": {"uri": uri}, "parentIndex": parent})
        return self._at[key]
