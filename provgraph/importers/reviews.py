"""The LLM-reviewer benchmark (results/<key>_reviews.json, the answer key, the reviewed
scripts and models_used.json), as written by its evaluation harness.

Vocabulary shared with the analysis clause (which computes detection and false-positive
rates from these nodes): one ``pg:Review`` per (results key, script, run) with ``pg:case
<case/<script stem>>``, ``pg:condition <condition/<key>>``, ``pg:replicate <run>`` (1 for
single-run files), ``pg:verdict`` "PASS"/"FAIL" and ``pg:confidence``. A review whose call
failed (``_error``) or whose answer could not be parsed (``_parse_error``) has status
``error`` / ``parse_error`` and NO ``pg:verdict``: a verdict the harness wrote next to the
failure is kept apart as ``pg:writtenVerdict``. Each review is also the ``pg:CallRecord`` of
call ``<key>--<stem>--<run>``, so the output clause reconciles it with the plan. Aggregates a
multi-run file reports (``fail_votes``, ``agreement_rate``, the majority verdict) become
``pg:ReportedValue`` nodes, to be compared with a recomputation, never trusted.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any

from provgraph.evidence.identity import Identity, Prompt, model_family, write_identity
from provgraph.ingest.api import (
    CERTAIN,
    LIKELY,
    NO,
    PG,
    PROV,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    InputError,
    RecordError,
    Source,
    document_bytes,
    loads_checked,
    lone_surrogate,
    sniff_text,
)

SUFFIX = "_reviews.json"
#: the file the harness's README asks a reviewer to write, and its folder
AUDIT_REVIEWS, AUDIT_DIR = "reviews.json", "audit_results"
VERDICTS = ("PASS", "FAIL")


def results_key(path: Path, root: Path) -> str | None:
    """The results key (condition) of a reviews file: ``<key>`` of ``results/<key>_reviews.json``;
    for the harness's own ``audit_results/reviews.json`` (and its ``audit_report.md``), the
    folder holding ``audit_results/``, or ``audit`` when that is the bundle root."""
    if path.name.endswith(SUFFIX) and len(path.name) > len(SUFFIX):
        return path.name[: -len(SUFFIX)]
    if path.name in (AUDIT_REVIEWS, "audit_report.md") and path.parent.name == AUDIT_DIR:
        holder = path.parent.parent
        return "audit" if holder.resolve() == root.resolve() else holder.name
    return None


def call_id(key: str, case: str, run: int) -> str:
    """The plan call id of one review: ``<results key>--<script stem>--<run>``."""
    return f"{key}--{case}--{run}"


def load_json(source: Source) -> Any:
    """The whole JSON document (floats as Decimal, keeping their written precision), within the
    readers' limits; a lone surrogate is left for the caller to reject entry by entry."""
    try:
        text = document_bytes(source.path, source.rel).decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(source.rel, f"not UTF-8 text (byte {err.start})") from err
    try:
        return loads_checked(text, parse_float=Decimal, surrogates=False)
    except json.JSONDecodeError as err:
        raise InputError(source.rel, f"malformed JSON: {err.msg} (column {err.colno})", err.lineno) from err
    except RecordError as err:
        raise InputError(source.rel, str(err)) from err


def _check_top(ctx: ImportContext, data: dict[str, Any], entries: str) -> None:
    """Refuse the document when a field outside its ``entries`` list holds a lone surrogate;
    an empty list is reported as "no records"."""
    where = lone_surrogate({k: v for k, v in data.items() if k != entries})
    if where:
        raise InputError(ctx.source.rel, where)
    if not data[entries]:
        ctx.problem(None, "no records")


class _Lines:
    """Approximate source lines of successive ``"<key>": <value>`` entries in a JSON file.

    The value is found with ``str.find`` (not a regex made from it: compiling an 8 MiB model id
    took 45 s) and lines are counted on from the last entry, so a file is scanned once.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self._line = 1  # the line at self.pos

    def next(self, value: Any, key: str = "script") -> int | None:
        text, needle = self.text, json.dumps(value)
        at = text.find(needle, self.pos)
        while at >= 0 and not _follows_key(text, at, key):
            at = text.find(needle, at + 1)
        if at < 0:
            return None
        self._line += text.count("\n", self.pos, at)
        line = self._line
        self._line += needle.count("\n")
        self.pos = at + len(needle)
        return line


def _follows_key(text: str, at: int, key: str) -> bool:
    """Whether ``text[at:]`` is the value of ``"<key>":`` (whitespace allowed around the colon)."""
    head = text[max(0, at - 256) : at].rstrip()
    if not head.endswith(":"):
        return False
    return head[:-1].rstrip().endswith(f'"{key}"')


def _stem(script: Any) -> str | None:
    if not isinstance(script, str) or not script.strip() or "/" in script or "\\" in script:
        return None
    return PurePosixPath(script).stem or None


class ReviewsImporter(Importer):
    name = "reviews"
    version = "2"
    description = "LLM-reviewer results/<key>_reviews.json (single/multi-run) and audit_results/reviews.json"
    handles = "file"
    suffixes = frozenset({".json"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        if results_key(path, bundle.root) is None or path.suffix != ".json":
            return NO
        head = sniff_text(path).lstrip()
        if not head:
            return LIKELY  # an empty results file is still a results file: it is reported
        return CERTAIN if head.startswith("{") and '"reviews"' in head else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        key = results_key(source.path, ctx.bundle.root) or source.path.stem
        add = ctx.add
        run_node = ctx.iri("review-run", key)
        condition = ctx.iri("condition", key)
        add(run_node, RDF_TYPE, PG.ReviewRun)
        add(run_node, PG.condition, condition)
        add(run_node, PROV.wasDerivedFrom, ctx.source_iri)
        add(run_node, PG.sourceFile, ctx.source_iri)
        if source.size == 0:
            add(run_node, PG.memberCount, 0)
            ctx.record()
            return
        data = load_json(source)
        if not isinstance(data, dict) or not isinstance(data.get("reviews"), list):
            raise InputError(source.rel, "expected an object with a 'reviews' list")
        _check_top(ctx, data, "reviews")
        model = data.get("model") if isinstance(data.get("model"), str) else None
        system = data.get("system_prompt") if isinstance(data.get("system_prompt"), str) else None
        add(run_node, PG.requestedModel, model)
        add(run_node, PG.requestedFamily, model_family(model) if model else None)
        add(
            run_node,
            PG.displayName,
            data.get("display_name") if isinstance(data.get("display_name"), str) else None,
        )
        if isinstance(data.get("with_taxonomy"), bool):
            add(run_node, PG.withTaxonomy, data["with_taxonomy"])
        n_runs = data.get("n_runs", 1)
        if not isinstance(n_runs, int) or isinstance(n_runs, bool) or n_runs < 1:
            raise InputError(source.rel, f"n_runs must be a whole number >= 1, got {n_runs!r}")
        add(run_node, PG.replicates, n_runs)
        add(run_node, PG.recordedAt, _timestamp(data.get("timestamp")))
        prompt = Prompt(system, None) if system is not None else None
        if prompt is not None:
            add(run_node, PG.systemPromptSha256, prompt.system_sha256)
            add(run_node, PG.promptCapture, "summary")
        add(run_node, PG.memberCount, len(data["reviews"]))
        lines = _Lines(source.path.read_text(encoding="utf-8"))
        seen: dict[str, int] = {}
        scripts_dir = PurePosixPath(source.rel).parent.parent / "audit_scripts"
        for index, review in enumerate(data["reviews"]):
            script = review.get("script") if isinstance(review, dict) else None
            line = lines.next(script) if isinstance(script, str) else None
            case = _stem(script)
            bad = lone_surrogate(review)
            if bad:
                ctx.problem(line, f"reviews[{index}]: {bad}")
                continue
            if case is None:
                ctx.problem(line, f"reviews[{index}]: script must be a file name, got {script!r}")
                continue
            if case in seen:
                ctx.problem(
                    line, f"script {script} is reviewed twice in this file (first: reviews[{seen[case]}])"
                )
                continue
            seen[case] = index
            shared = {
                "key": key,
                "case": case,
                "model": model,
                "prompt": prompt,
                "script_file": ctx.file_iri(str(scripts_dir / script)),
            }
            runs = review.get("runs")
            if runs is None:
                self._review(ctx, review, 1, line, shared)
                continue
            if not isinstance(runs, list) or not runs:
                ctx.problem(line, f"script {script}: runs must be a non-empty list")
                continue
            for number, run in enumerate(runs, start=1):
                run_line = lines.next(script) or line
                if not isinstance(run, dict):
                    ctx.problem(run_line, f"script {script}: runs[{number - 1}] must be an object")
                    continue
                self._review(ctx, run, number, run_line, shared)
            self._reported(ctx, review, len(runs), line, shared)

    def _review(self, ctx: ImportContext, r: dict[str, Any], run: int, line: int | None, s: dict) -> None:
        add = ctx.add
        key, case = s["key"], s["case"]
        node = ctx.iri("review", key, case, str(run))
        cid = call_id(key, case, run)
        failure = "_error" if "_error" in r else "_parse_error" if "_parse_error" in r else None
        status = {"_error": "error", "_parse_error": "parse_error", None: "ok"}[failure]
        verdict = r.get("verdict")
        verdict = verdict.strip().upper() if isinstance(verdict, str) else verdict
        if failure is None and verdict not in VERDICTS:
            ctx.problem(line, f"script {case}, run {run}: verdict must be PASS or FAIL, got {verdict!r}")
            return
        add(node, RDF_TYPE, PG.Review)
        add(node, RDF_TYPE, PG.CallRecord)
        add(node, PG.case, ctx.iri("case", case))
        add(node, PG.condition, ctx.iri("condition", key))
        add(node, PG.replicate, run)
        add(node, PG.forCall, ctx.iri("call", cid))
        add(node, PG.callId, cid)
        add(node, PG.status, status)
        add(node, PG.terminal, True)
        if failure is None:
            add(node, PG.verdict, verdict)
            confidence = r.get("confidence")
            add(node, PG.confidence, confidence.strip().upper() if isinstance(confidence, str) else None)
            flaw = r.get("flaw_identified")
            add(node, PG.flawIdentified, flaw if isinstance(flaw, str) else None)
        elif verdict is not None:
            add(node, PG.writtenVerdict, str(verdict))
        raw = r.get("raw_response")
        latency = r.get("latency_ms")
        if isinstance(latency, int) and not isinstance(latency, bool):
            add(node, PG.latencyMs, latency)
        usage = r.get("usage") if isinstance(r.get("usage"), dict) else {}
        for name, prop in (("input_tokens", PG.inputTokens), ("output_tokens", PG.outputTokens)):
            if isinstance(usage.get(name), int) and not isinstance(usage.get(name), bool):
                add(node, prop, usage[name])
        message = r.get(failure) if failure else None
        write_identity(
            ctx,
            node,
            Identity(
                requested_model=s["model"],
                prompt=s["prompt"],
                capture="summary",
                output_text=raw if isinstance(raw, str) else None,
                error=" ".join(str(message).split()) if message is not None else None,
            ),
        )
        add(node, PG.reviewedScript, s["script_file"])
        add(node, PROV.wasDerivedFrom, ctx.source_iri)
        add(node, PG.sourceFile, ctx.source_iri)
        add(node, PG.sourceLine, line)
        ctx.record()

    def _reported(self, ctx: ImportContext, r: dict[str, Any], n: int, line: int | None, s: dict) -> None:
        verdict = r.get("verdict")
        values = {
            "fail_votes": r.get("fail_votes"),
            "agreement_rate": r.get("agreement_rate"),
            "majority_verdict_fail": (
                (1 if verdict.strip().upper() == "FAIL" else 0) if isinstance(verdict, str) else None
            ),
        }
        for stat, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
                continue
            node = ctx.iri("reported", "reviews", s["key"], s["case"], stat)
            add = ctx.add
            add(node, RDF_TYPE, PG.ReportedValue)
            add(node, PG.statName, stat)
            add(node, PG.value, Decimal(value))
            add(node, PG.n, n)
            add(node, PG.case, ctx.iri("case", s["case"]))
            add(node, PG.condition, ctx.iri("condition", s["key"]))
            add(node, PROV.wasDerivedFrom, ctx.source_iri)
            add(node, PG.sourceFile, ctx.source_iri)
            add(node, PG.sourceLine, line)


def _timestamp(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


class AnswerKeyImporter(Importer):
    name = "answer-key"
    version = "1"
    description = "LLM-reviewer audit_answer_key/answer_key.json (script -> is_flawed, category)"
    handles = "file"
    suffixes = frozenset({".json"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.name != "answer_key.json":
            return NO
        head = sniff_text(path)
        return CERTAIN if '"is_flawed"' in head else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        data = load_json(source)
        if not isinstance(data, dict):
            raise InputError(source.rel, "expected an object mapping script file names to entries")
        if not data:
            ctx.problem(None, "no records")
        lines = source.path.read_text(encoding="utf-8").splitlines()
        add = ctx.add
        for script, entry in data.items():
            line = next((i + 1 for i, t in enumerate(lines) if json.dumps(script) in t), None)
            bad = lone_surrogate({script: entry})
            if bad:
                ctx.problem(line, bad)
                continue
            case = _stem(script)
            if case is None:
                ctx.problem(line, f"{script!r} is not a script file name")
                continue
            if not isinstance(entry, dict):
                ctx.problem(line, f"{script}: expected an object with is_flawed, category, description")
                continue
            if not isinstance(entry.get("is_flawed"), bool):
                ctx.problem(
                    line, f"{script}: is_flawed must be true or false, got {entry.get('is_flawed')!r}"
                )
                continue
            if not isinstance(entry.get("category"), str) or not entry["category"].strip():
                ctx.problem(line, f"{script}: category must be a non-empty string")
                continue
            node = ctx.iri("answer", case)
            add(node, RDF_TYPE, PG.AnswerKeyEntry)
            add(node, PG.case, ctx.iri("case", case))
            add(node, PG.isFlawed, entry["is_flawed"])
            add(node, PG.category, entry["category"])
            description = entry.get("description")
            add(node, PG.description, description if isinstance(description, str) else None)
            add(node, PROV.wasDerivedFrom, ctx.source_iri)
            add(node, PG.sourceFile, ctx.source_iri)
            add(node, PG.sourceLine, line)
            ctx.record()


class AuditScriptsImporter(Importer):
    name = "audit-scripts"
    version = "1"
    description = "LLM-reviewer audit_scripts/ folder: every reviewed script's path, size, sha256"
    handles = "directory"

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.name != "audit_scripts":
            return NO
        return LIKELY if any(p.suffix == ".py" for p in path.iterdir()) else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        add = ctx.add
        for member in source.members:
            node = ctx.file_iri(member.rel)
            add(ctx.source_iri, PROV.hadMember, node)
            add(node, RDF_TYPE, PG.File)
            add(node, PG.path, member.rel)
            add(node, PG.sha256, member.sha256)
            add(node, PG.byteSize, member.size)
            if member.rel.endswith(".py"):
                add(node, RDF_TYPE, PG.ReviewedScript)
                add(node, PG.case, ctx.iri("case", PurePosixPath(member.rel).stem))
            ctx.record()


class ModelsUsedImporter(Importer):
    name = "models-used"
    version = "1"
    description = "LLM-reviewer models_used.json (model_id, display_name, with_taxonomy, n_runs)"
    handles = "file"
    suffixes = frozenset({".json"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        return CERTAIN if path.name == "models_used.json" and '"models"' in sniff_text(path) else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        data = load_json(source)
        if not isinstance(data, dict) or not isinstance(data.get("models"), list):
            raise InputError(source.rel, "expected an object with a 'models' list")
        _check_top(ctx, data, "models")
        lines = _Lines(source.path.read_text(encoding="utf-8"))
        add = ctx.add
        for index, entry in enumerate(data["models"]):
            if not isinstance(entry, dict):
                ctx.problem(None, f"models[{index}] must be an object")
                continue
            model = entry.get("model_id")
            line = lines.next(model, "model_id")
            bad = lone_surrogate(entry)
            if bad:
                ctx.problem(line, f"models[{index}]: {bad}")
                continue
            taxonomy = entry.get("with_taxonomy", False)
            n_runs = entry.get("n_runs", 1)
            if not isinstance(model, str) or not model.strip():
                ctx.problem(line, f"models[{index}]: model_id must be a non-empty string")
                continue
            if not isinstance(taxonomy, bool):
                ctx.problem(line, f"models[{index}]: with_taxonomy must be true or false")
                continue
            if not isinstance(n_runs, int) or isinstance(n_runs, bool) or n_runs < 1:
                ctx.problem(line, f"models[{index}]: n_runs must be a whole number >= 1")
                continue
            node = ctx.iri("model-selection", model, "taxonomy" if taxonomy else "plain", str(n_runs))
            add(node, RDF_TYPE, PG.ModelSelection)
            add(node, PG.requestedModel, model)
            add(node, PG.requestedFamily, model_family(model))
            name = entry.get("display_name")
            add(node, PG.displayName, name if isinstance(name, str) else None)
            provider = entry.get("provider")
            add(node, PG.name, provider if isinstance(provider, str) else None)
            add(node, PG.withTaxonomy, taxonomy)
            add(node, PG.replicates, n_runs)
            add(node, PROV.wasDerivedFrom, ctx.source_iri)
            add(node, PG.sourceFile, ctx.source_iri)
            add(node, PG.sourceLine, line)
            ctx.record()
