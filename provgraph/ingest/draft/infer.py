"""What a bundle's artifacts say about its protocol, read through the importers themselves.

The folder is planned and ingested exactly as ``provgraph ingest`` would (same planner, same
importers) into a throwaway in-memory store; the draft is then read from the graph, so a file is
understood the way the gate will understand it. Only the request side is used for the plan:
batch input lines, the answer key crossed with the harness's result keys and their ``n_runs``,
or a plan file the bundle already holds. A plan inferred from outputs hides the missing ones.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from provgraph.bundle.layout import Bundle
from provgraph.evidence.identity import is_pinned
from provgraph.ingest.planner import plan_bundle
from provgraph.ingest.run import ingest_paths
from provgraph.rdf.vocab import PG_NS
from provgraph.store import open_store

_PREFIX = f"PREFIX pg: <{PG_NS}>\n"
#: MIMIC-CXR tables and cohort manifests, by the importer that reads them
COHORT_IMPORTERS = ("cohort", "mimic-metadata", "mimic-split", "mimic-reference")
TEXT_SUFFIXES = (".md", ".tex", ".txt", ".rst")


@dataclass
class Draft:
    """What the draft contract will say, with what could not be inferred."""

    detected: dict[str, list[str]] = field(default_factory=dict)  # importer -> paths
    plan_file: str | None = None  # an existing plan file of the bundle
    plan_rows: list[tuple[str, str, str, int]] = field(default_factory=list)  # frozen plan
    plan_source: str = ""
    conditions: dict[str, str | None] = field(default_factory=dict)  # condition -> model key
    models: dict[str, str] = field(default_factory=dict)  # key -> requested id
    cohort_files: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    def aliases(self) -> list[str]:
        return [k for k, m in self.models.items() if not is_pinned(m)]


def infer(folder: Path) -> Draft:
    """Read ``folder`` (which holds a bootstrap contract) and return what it says."""
    bundle = Bundle.open(folder)
    draft = Draft()
    plan, _ = plan_bundle(bundle)
    for path, importer in plan:
        draft.detected.setdefault(importer.name, []).append(bundle.relpath(path))
    with tempfile.TemporaryDirectory(prefix="provgraph-draft-") as scratch:
        store = open_store(Path(scratch) / "store")  # on disk: memory stays bounded on big folders
        try:
            results, problems = ingest_paths(store, bundle, [bundle.root])
            _unread(draft, results, problems)
            base = bundle.contract.base_iri
            _plan(draft, store, base)
            _models_and_conditions(draft, store, base)
        finally:
            store.close()
    draft.cohort_files = sorted(p for n in COHORT_IMPORTERS for p in draft.detected.get(n, []))
    draft.texts = _texts(folder)
    return draft


def _unread(draft: Draft, results: list, problems: list) -> None:
    """What the draft could not read: planning problems, failed sources, rejected records."""
    for problem in problems:
        draft.unknown.append(f"not read: {problem}")
    for result in results:
        if result.outcome == "failed":
            draft.unknown.append(f"not read: {result.error or result.rel}")
        rejected = [p for p in result.problems if not p.kept]
        if rejected:
            more = f" (+{len(rejected) - 1} more)" if len(rejected) > 1 else ""
            draft.unknown.append(f"records left out of the draft: {rejected[0]}{more}")


def _select(store, query: str) -> list[dict[str, str]]:
    return [{k: v.value for k, v in row.items() if v is not None} for row in store.select(_PREFIX + query)]


def _key(iri: str, base: str, kind: str) -> str:
    prefix = f"{base}{kind}/"
    return unquote(iri[len(prefix) :]) if iri.startswith(prefix) else iri


def _plan(draft: Draft, store, base: str) -> None:
    files = draft.detected.get("plan", [])
    if len(files) == 1:
        draft.plan_file, draft.plan_source = files[0], f"the bundle's own plan file {files[0]}"
        return
    if draft.detected.get("inspect-log"):
        draft.plan_source = "the eval logs' own plan (eval.dataset.sample_ids x epochs, as requested)"
        return
    query = "SELECT DISTINCT ?cid WHERE { ?r a pg:BatchRequest ; pg:customId ?cid }"
    ids = [r["cid"] for r in _select(store, query)]
    if ids:
        draft.plan_source = "the custom_ids of the batch input files (<condition>--<case>--<replicate>)"
        for cid in sorted(ids):
            parts = cid.split("--")
            if len(parts) == 3 and parts[2].isdigit():
                draft.plan_rows.append((cid, parts[1], parts[0], int(parts[2])))
            else:
                draft.plan_rows.append((cid, cid, "default", 1))
        return
    cases = sorted(
        _key(r["case"], base, "case")
        for r in _select(store, "SELECT DISTINCT ?case WHERE { ?a a pg:AnswerKeyEntry ; pg:case ?case }")
    )
    runs = _select(store, "SELECT ?c ?n WHERE { ?r a pg:ReviewRun ; pg:condition ?c ; pg:replicates ?n }")
    if cases and runs:
        draft.plan_source = "the answer key's scripts x each results file's key and its n_runs"
        for run in sorted(runs, key=lambda r: r["c"]):
            key = _key(run["c"], base, "condition")
            for case in cases:
                for rep in range(1, int(run["n"]) + 1):
                    draft.plan_rows.append((f"{key}--{case}--{rep}", case, key, rep))
        return
    draft.unknown.append(
        "[plan]: no plan file, batch input or answer key: write plan.csv from what you meant to run "
        "(call records are outputs; a plan built from them cannot show a missing call)"
    )


def _models_and_conditions(draft: Draft, store, base: str) -> None:
    rows = _select(store, "SELECT DISTINCT ?m WHERE { ?x pg:requestedModel ?m }")
    keys: dict[str, str] = {}
    for model in sorted(r["m"] for r in rows):
        key = _model_key(model, set(keys.values()))
        keys[model] = key
        draft.models[key] = model
    if not draft.models:
        draft.unknown.append("[models]: no request names a model; declare each one you called")
    by_condition: dict[str, set[str]] = defaultdict(set)
    if draft.plan_rows:
        for row in draft.plan_rows:
            by_condition.setdefault(row[2], set())
        query = "SELECT ?cid ?m WHERE { ?r a pg:BatchRequest ; pg:customId ?cid ; pg:requestedModel ?m }"
        cond_of = {row[0]: row[2] for row in draft.plan_rows}
        for r in _select(store, query):
            if r["cid"] in cond_of:
                by_condition[cond_of[r["cid"]]].add(r["m"])
    else:
        query = """SELECT DISTINCT ?c ?m WHERE { ?p a pg:PlannedCall ; pg:condition ?c ; pg:callId ?id .
            OPTIONAL { ?r a pg:CallRecord ; pg:callId ?id ; pg:requestedModel ?m } }"""
        for r in _select(store, query):
            models = by_condition[_key(r["c"], base, "condition")]
            if "m" in r:
                models.add(r["m"])
    if _prompts_at_request(store):
        for condition, models in sorted(by_condition.items()):
            draft.conditions[condition] = keys[next(iter(models))] if len(models) == 1 else None
    elif by_condition:
        draft.unknown.append(
            "[conditions]: the calls record no prompt captured at the request, so the draft "
            "cannot say which conditions must differ; declare them yourself"
        )


def _prompts_at_request(store) -> bool:
    return store.ask(_PREFIX + "ASK { ?r pg:promptCapture ?s FILTER(STR(?s) = 'request') }")


def _model_key(model: str, taken: set[str]) -> str:
    stem = model.split("/")[-1].lower()
    key = "".join(ch if ch.isalnum() else "-" for ch in stem).strip("-") or "model"
    n, out = 2, key
    while out in taken:
        out, n = f"{key}-{n}", n + 1
    return out


def _texts(folder: Path) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if rel.startswith(".") or not path.is_file() or path.suffix.lower() not in TEXT_SUFFIXES:
            continue
        if path.stem.lower() in ("readme", "paper", "main", "manuscript") or rel.startswith("manuscript/"):
            found.append(rel)
    return found
