"""EleutherAI lm-evaluation-harness (v0.4) output folders: ``results_<date>.json`` with the
``samples_<task>_<date>.jsonl`` of the same run, as the harness writes them under
``<output_path>/<model_name_sanitized>/`` (``lm_eval/loggers/evaluation_tracker.py``:
``save_results_aggregated``, ``save_results_samples``). The folder is one source, so the
samples of a run are read with the model its results file names.

What the graph gets (shapes from ``lm_eval/evaluator.py`` and ``lm_eval/result_schema.py``):

- the run (``pg:HarnessRun``): ``config.model_args`` as written, the requested model (its
  ``pretrained=``) and, when the revision is a commit or the harness recorded ``model_sha``, the
  resolved model ``<repo>@<sha>``; ``revision=main`` or no revision with no sha recorded leaves
  it unresolved (a Hugging Face repository id is a mutable alias);
- each task (``pg:HarnessTask``, its condition ``condition/<task>``): ``n-samples`` effective
  as ``pg:plannedSamples``, original as ``pg:documentCount``, ``config.limit``;
- each ``metric,filter`` value of ``results`` whose aggregation is the mean (the task config's
  ``metric_list``, or the default metrics of its ``output_type``) as a ``pg:ReportedValue``
  (``pg:statName`` the metric, ``pg:testVariant`` the filter, ``pg:condition`` the task,
  ``pg:requestedModel``), to be compared with the mean of its samples (``provgraph.stats.harness``);
- one ``pg:CallRecord`` per sample line, for call ``<model>--<task>--<doc_id>--<filter>``
  (case ``case/<doc_id>``, condition ``condition/<task>``): the executed prompt is the first
  request's context (``arguments.gen_args_0.arg_0``, hashed with the canonical identity and
  checked against the harness's own ``prompt_hash``), captured at the request; the filtered
  response as output (text responses only); the numeric per-sample metrics as canonical JSON.
"""

from __future__ import annotations

import json
import os
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from provgraph.evidence.identity import Identity, canonical_json, prompt_sha256, sha256_text, write_identity
from provgraph.importers.reported import number_literal
from provgraph.ingest.api import (
    CERTAIN,
    NO,
    PG,
    PROV,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    InputError,
    Problem,
    RecordError,
    Source,
    document_bytes,
    loads_checked,
    read_jsonl,
)

# datetime.now().isoformat().replace(":", "-"), as EvaluationTracker names its files
_DATE = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
RESULTS = re.compile(rf"^results_(?P<date>{_DATE})\.json$")
SAMPLES = re.compile(rf"^samples_(?P<task>.+)_(?P<date>{_DATE})\.jsonl$")
_SHA = re.compile(r"^[0-9a-f]{40}$")
#: metrics a task without ``metric_list`` reports, by output type (lm_eval/api/task.py), all means
DEFAULT_MEAN = {
    "multiple_choice": {"acc", "acc_norm"},
    "loglikelihood": {"acc"},
    "generate_until": {"exact_match"},
}
_NOT_METRIC = {"alias", "name", "sample_len", " "}


def parse_model_args(value: Any) -> dict[str, str]:
    """``pretrained=org/model,revision=main`` (lm_eval.utils.simple_parse_args_string) or a dict."""
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    if not isinstance(value, str) or not value.strip():
        return {}
    out: dict[str, str] = {}
    for part in value.split(","):
        key, sep, val = part.partition("=")
        if sep:
            out[key.strip()] = val.strip()
    return out


def model_identity(results: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(requested, resolved, revision) of a run: ``resolved`` is ``<repo>@<commit>`` when the
    revision is a commit sha or the harness recorded the ``model_sha`` it resolved to."""
    config = results.get("config") if isinstance(results.get("config"), dict) else {}
    args = parse_model_args(config.get("model_args"))
    requested = next(
        (args[k] for k in ("peft", "delta", "pretrained", "model", "path", "engine") if args.get(k)), None
    )
    if requested is None and isinstance(results.get("model_name"), str):
        requested = results["model_name"]
    revision = args.get("revision") or (config.get("model_revision") or None)
    sha = config.get("model_sha") if isinstance(config.get("model_sha"), str) else ""
    resolved = None
    if requested and revision and _SHA.match(str(revision)):
        resolved = f"{requested}@{revision}"
    elif requested and sha and _SHA.match(sha):
        resolved = f"{requested}@{sha}"
    return requested, resolved, str(revision) if revision else None


def mean_metrics(config: Any) -> set[str] | None:
    """The metrics the task aggregates by their mean; None when the config does not say."""
    if not isinstance(config, dict):
        return None
    listed = config.get("metric_list")
    if isinstance(listed, list):
        return {
            str(m.get("metric"))
            for m in listed
            if isinstance(m, dict) and m.get("aggregation", "mean") == "mean"
        }
    return DEFAULT_MEAN.get(str(config.get("output_type")))


#: The harness writes each mean as a float's shortest repr, exact to the double, not rounded to
#: a precision: the tolerance only absorbs a differently ordered sum.
TOLERANCE = Decimal("1e-9")


class LmEvalImporter(Importer):
    name = "lm-eval"
    version = "1"
    description = "lm-evaluation-harness output folder: results_<date>.json and samples_<task>_<date>.jsonl"
    handles = "directory"

    def detect(self, path: Path, bundle: Bundle) -> int:
        try:
            # names first: the planner asks every folder, and a stat per file of a large folder
            # of outputs cost more than the rest of its planning
            with os.scandir(path) as entries:
                named = sorted(e.path for e in entries if RESULTS.match(e.name))
            found = next((Path(p) for p in named if os.path.isfile(p)), None)
            if found is None:
                return NO
            with found.open("rb") as fh:
                head = fh.read(64)
        except OSError:
            return NO
        # EvaluationTracker dumps the results dict, whose first key is "results": '{\n  "results": {'
        return CERTAIN if b'"results"' in head else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        members = {Path(m.rel).name: m.rel for m in source.members if "/" not in m.rel[len(source.rel) + 1 :]}
        runs = {RESULTS.match(n)["date"]: rel for n, rel in members.items() if RESULTS.match(n)}  # type: ignore[index]
        samples: dict[str, list[tuple[str, str]]] = {}
        for n, rel in sorted(members.items()):
            m = SAMPLES.match(n)
            if m is None:
                continue
            if m["date"] not in runs:
                ctx.problems.append(
                    Problem(rel, None, f"no results_{m['date']}.json beside it: the run is unknown")
                )
                continue
            samples.setdefault(m["date"], []).append((m["task"], rel))
        folder = Path(source.rel).name
        for date, rel in sorted(runs.items()):
            try:
                results = self._load(ctx, rel)
            except InputError as err:
                ctx.problems.append(Problem(rel, None, err.reason))
                continue
            run = _Run(ctx, rel, date, folder, results)
            run.write_results()
            for task, srel in samples.get(date, []):
                run.write_samples(task, srel)

    def _load(self, ctx: ImportContext, rel: str) -> dict[str, Any]:
        try:
            text = document_bytes(ctx.bundle.resolve(rel), rel).decode("utf-8")
        except UnicodeDecodeError as err:
            raise InputError(rel, f"not UTF-8 text (byte {err.start})") from None
        try:
            value = loads_checked(text, parse_float=Decimal)
        except (RecordError, json.JSONDecodeError) as err:
            raise InputError(rel, f"not a results file: {err}") from None
        if not isinstance(value, dict) or not isinstance(value.get("results"), dict):
            raise InputError(rel, "not a results file: no 'results' object")
        value["_text"] = text
        return value


class _Run:
    """One run: its results file and the samples files of the same date."""

    def __init__(self, ctx: ImportContext, rel: str, date: str, folder: str, results: dict[str, Any]) -> None:
        self.ctx, self.rel, self.date, self.results = ctx, rel, date, results
        self.model_key = str(results.get("model_name_sanitized") or folder)
        self.requested, self.resolved, self.revision = model_identity(results)
        self.file = ctx.file_iri(rel)
        self.node = ctx.iri("harness-run", rel)
        self.tasks: dict[str, str] = {}
        self.higher: dict[str, dict[str, Any]] = {}

    def task_node(self, task: str) -> str:
        return self.ctx.iri("harness-task", self.rel, task)

    def write_results(self) -> None:
        ctx, add, r = self.ctx, self.ctx.add, self.results
        config = r.get("config") if isinstance(r.get("config"), dict) else {}
        add(self.node, RDF_TYPE, PG.HarnessRun)
        add(self.node, PROV.used, self.file)
        add(self.node, PG.sourceFile, self.file)
        add(self.node, PG.sourceLine, 1)
        add(self.node, PG.requestedModel, self.requested)
        add(self.node, PG.resolvedModel, self.resolved)
        add(self.node, PG.modelRevision, self.revision)
        args = config.get("model_args")
        add(
            self.node,
            PG.modelArgs,
            args if isinstance(args, str) else canonical_json(args).decode() if args else None,
        )
        add(self.node, PG.commitId, r.get("git_hash") if isinstance(r.get("git_hash"), str) else None)
        groups = set(r.get("groups") or {}) | {
            g for g, subs in (r.get("group_subtasks") or {}).items() if subs
        }
        n_samples = r.get("n-samples") if isinstance(r.get("n-samples"), dict) else {}
        configs = r.get("configs") if isinstance(r.get("configs"), dict) else {}
        hib = r.get("higher_is_better") if isinstance(r.get("higher_is_better"), dict) else {}
        text = r["_text"]
        for task, metrics in sorted(r["results"].items()):
            if task in groups or not isinstance(metrics, dict):
                continue
            node = self.task_node(task)
            self.tasks[task] = node
            self.higher[task] = hib.get(task) if isinstance(hib.get(task), dict) else {}
            cond = ctx.iri("condition", task)
            add(node, RDF_TYPE, PG.HarnessTask)
            add(node, PG.key, task)
            add(node, PG.condition, cond)
            add(cond, RDF_TYPE, PG.Condition)
            add(cond, PG.key, task)
            add(node, PG.inRun, self.node)
            add(node, PG.requestedModel, self.requested)
            counts = n_samples.get(task) if isinstance(n_samples.get(task), dict) else {}
            for key, prop in (("effective", PG.plannedSamples), ("original", PG.documentCount)):
                if isinstance(counts.get(key), int):
                    add(node, prop, counts[key])
            if config.get("limit") is not None:
                add(node, PG.sampleLimit, str(config["limit"]))
            add(node, PG.sourceFile, self.file)
            add(node, PG.sourceLine, _line_of(text, f'"{task}"', text.find('"n-samples"')))
            self._reported(task, metrics, mean_metrics(configs.get(task)), text)
            ctx.record()

    def _reported(self, task: str, metrics: dict[str, Any], means: set[str] | None, text: str) -> None:
        ctx, add = self.ctx, self.ctx.add
        start = text.find(f'"{task}"', text.find('"results"'))
        for key, value in sorted(metrics.items()):
            metric, _, filt = key.partition(",")
            if key in _NOT_METRIC or not filt or metric.endswith("_stderr"):
                continue
            if means is not None and metric not in means:
                continue  # aggregated otherwise (perplexity, bleu ...): no mean to compare with
            if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
                continue  # "N/A" and the like
            try:
                number = Decimal(value)
            except InvalidOperation:
                continue
            node = ctx.iri("reported", self.rel, task, key)
            add(node, RDF_TYPE, PG.ReportedValue)
            add(node, PG.statName, metric)
            add(node, PG.value, number_literal(number))  # a bare Decimal may print as 1E-7: not xsd:decimal
            add(node, PG.tolerance, number_literal(TOLERANCE))
            add(node, PG.condition, ctx.iri("condition", task))
            add(node, PG.testVariant, filt)
            add(node, PG.requestedModel, self.requested)
            add(node, PG.inRun, self.node)
            add(node, PROV.wasDerivedFrom, self.file)
            add(node, PG.sourceFile, self.file)
            add(node, PG.sourceLine, _line_of(text, f'"{key}"', start))

    def write_samples(self, task: str, rel: str) -> None:
        ctx = self.ctx
        task_node = self.tasks.get(task)
        if task_node is None:
            ctx.problems.append(Problem(rel, None, f"task {task!r} is not in {self.rel}'s results"))
            return
        file = ctx.file_iri(rel)
        cond = ctx.iri("condition", task)
        higher = self.higher.get(task, {})
        for line, value, error in read_jsonl(ctx.bundle.resolve(rel), rel, ctx.advance):
            if error is None:
                try:
                    self._sample(value, line or 0, task, task_node, cond, file, higher)
                    ctx.record()
                    continue
                except ValueError as err:
                    error = str(err)
            ctx.problems.append(Problem(rel, line, error))

    def _sample(
        self, value: Any, line: int, task: str, task_node: str, cond: str, file: str, higher: dict[str, Any]
    ) -> None:
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object, got {type(value).__name__}")
        doc_id, filt = value.get("doc_id"), value.get("filter")
        if isinstance(doc_id, bool) or not isinstance(doc_id, (int, str)):
            raise ValueError("doc_id must be an integer")
        if not isinstance(filt, str) or not filt:
            raise ValueError("filter must be a non-empty string")
        args = value.get("arguments")
        first = args.get("gen_args_0") if isinstance(args, dict) else None
        context = first.get("arg_0") if isinstance(first, dict) else None
        if not isinstance(context, str):
            raise ValueError("arguments.gen_args_0.arg_0 (the prompt) must be a string")
        given = value.get("prompt_hash")
        if isinstance(given, str) and given != sha256_text(context):
            raise ValueError("prompt_hash is not the SHA-256 of arguments.gen_args_0.arg_0")
        names = value.get("metrics")
        if not isinstance(names, list):
            raise ValueError("metrics must be a list of metric names")
        scores: dict[str, float] = {}
        for name in names:
            v = value.get(name)
            if isinstance(v, (int, float)) and not (isinstance(v, float) and v != v):
                scores[str(name)] = float(v)
        responses = value.get("filtered_resps")
        output = None
        if isinstance(responses, list) and responses and all(isinstance(x, str) for x in responses):
            output = responses[0] if len(responses) == 1 else "\n".join(responses)
        ctx, add = self.ctx, self.ctx.add
        call_id = f"{self.model_key}--{task}--{doc_id}--{filt}"
        call = ctx.iri("call", call_id)
        node = ctx.iri("record", ctx.source.rel, task, str(line))
        add(call, PG.case, ctx.iri("case", str(doc_id)))
        add(call, PG.condition, cond)
        add(node, RDF_TYPE, PG.CallRecord)
        add(node, PG.forCall, call)
        add(node, PG.callId, call_id)
        add(node, PG.status, "ok")
        add(node, PG.inTask, task_node)
        add(node, PG.filterName, filt)
        add(node, PG.docId, str(doc_id))
        add(node, PG.harnessPromptSha256, given if isinstance(given, str) else None)
        doc_hash = value.get("doc_hash")
        add(node, PG.docSha256, doc_hash if isinstance(doc_hash, str) else None)
        add(node, PG.sampleMetrics, canonical_json(scores).decode())
        if output is not None and any(higher.get(m) is True and scores.get(m) == 1.0 for m in scores):
            add(node, PG.scoredCorrect, True)
        identity = Identity(
            requested_model=self.requested,
            resolved_model=self.resolved,
            prompt_sha256=prompt_sha256(None, context),  # the context is the whole user text sent
            capture="request",
            output_text=output,
        )
        write_identity(ctx, node, identity)
        add(node, PG.sourceFile, file)
        add(node, PG.sourceLine, line)


def _line_of(text: str, needle: str, start: int) -> int:
    """Line (1-based) of the first ``needle`` at or after ``start`` (line 1 if absent)."""
    pos = text.find(needle, max(start, 0))
    return text.count("\n", 0, pos) + 1 if pos >= 0 else 1
