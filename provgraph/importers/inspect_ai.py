"""Inspect AI eval logs: ``.eval`` (a zip) and ``.json`` (one EvalLog document).

Read from the documented format itself, not with the ``inspect-ai`` package (its reader pulls
in 80 wheels, 89 MB: boto3, fastapi, textual...). Shapes: UKGovernmentBEIS/inspect_ai
``src/inspect_ai/log/_log.py`` (EvalLog, EvalSpec, EvalSample, EvalPlan, EvalResults),
``log/_recorders/eval.py`` (the zip: ``header.json``, ``samples/<id>_epoch_<n>.json``,
``summaries.json``, ``reductions.json``, ``_journal/``), ``model/_model_output.py``
(ModelOutput, stop_reason) and ``scorer/_metric.py`` (Score, value_to_float).

What one log becomes:

* a ``pg:EvalRun`` (task, task version, model, model args, generate config, dataset name,
  location and size, epochs and reducer, git revision, status);
* the plan the log states: one ``pg:PlannedCall`` per selected sample id x epoch, call id
  ``<condition>--<sample id>--<epoch>`` (``pg:case`` the sample id, ``pg:replicate`` the epoch).
  The condition is the eval's ``metadata.condition`` when given (``inspect eval --metadata
  condition=B``), else the task name without its package prefix;
* each sample a ``pg:CallRecord`` of that call, with the canonical identity of
  :mod:`provgraph.evidence.identity` (the system and user messages it sent as the executed
  prompt, captured at the request; the requested and resolved model; decoding; the completion;
  the error), its finish state from ``stop_reason`` or the limit it hit, its usage; each
  earlier attempt in ``error_retries`` a failed record before it;
* each score of a sample that did not fail a ``pg:SampleScore`` (the score as Inspect's
  ``value_to_float`` reads it); a failed sample's score is kept apart as ``pg:writtenVerdict``,
  which is never counted;
* each metric of ``results.scores[]`` a ``pg:ReportedValue`` (name, scorer as ``pg:testVariant``,
  scored samples as ``pg:n``), for the statistics engine to compare with the mean of its samples.
"""

from __future__ import annotations

import json
import re
import zipfile
import zlib
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

from provgraph.evidence.identity import Identity, canonical_json, write_identity
from provgraph.evidence.inspect_log import (
    LIMIT_STATUS,
    STOP_STATUS,
    completion_text,
    condition_key,
    log_time,
    plain_json,
    resolve_attachments,
    sample_prompt,
    score_float,
)
from provgraph.importers.reported import number_literal
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
    loads_checked,
    lone_surrogate,
    sniff_text,
)
from provgraph.ingest.readers import MAX_DOCUMENT_BYTES

HEADER = "header.json"
START = "_journal/start.json"
_SAMPLE = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")
#: the sample fields whose text is stored (messages and attachments are only hashed; events,
#: store and metadata are not read)
STORED = ("id", "epoch", "uuid", "output", "scores", "error", "error_retries", "limit")
#: metric values in a log are machine floats: compared to 1e-9, not to their last digit
TOLERANCE = Decimal("1e-9")


def _loads(text: str, where: str, rel: str) -> Any:
    # a lone surrogate is refused sample by sample (write_sample), not for the whole log
    try:
        return loads_checked(text, parse_float=Decimal, surrogates=False)
    except json.JSONDecodeError as err:
        raise InputError(
            rel, f"{where}malformed JSON: {err.msg} (line {err.lineno}, column {err.colno})"
        ) from err
    except RecordError as err:
        raise InputError(rel, f"{where}{err}") from err


class _Zip:
    """The members of a ``.eval`` log, each read whole but never past the document limit."""

    def __init__(self, source: Source) -> None:
        self.rel = source.rel
        try:
            self.zip = zipfile.ZipFile(source.path)
        except (zipfile.BadZipFile, OSError) as err:
            raise InputError(source.rel, f"not a readable .eval zip: {err}") from err

    def read(self, info: zipfile.ZipInfo) -> Any:
        if info.file_size > MAX_DOCUMENT_BYTES:  # the declared size; the read below is capped too
            raise RecordError(f"{info.file_size} bytes: over the 256 MiB limit for one JSON document")
        try:
            with self.zip.open(info) as fh:
                data = fh.read(MAX_DOCUMENT_BYTES + 1)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as err:
            raise RecordError(f"cannot read the member: {err}") from err
        if len(data) > MAX_DOCUMENT_BYTES:
            raise RecordError("expands past the 256 MiB limit for one JSON document")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise RecordError(f"not UTF-8 text (byte {err.start})") from err
        try:  # a lone surrogate is looked for only where it would be stored (write_sample)
            return loads_checked(text, parse_float=Decimal, surrogates=False)
        except json.JSONDecodeError as err:
            raise RecordError(f"malformed JSON: {err.msg} (line {err.lineno}, column {err.colno})") from err

    def header(self) -> dict[str, Any]:
        names = set(self.zip.namelist())
        name = HEADER if HEADER in names else START if START in names else None
        if name is None:
            raise InputError(self.rel, "an .eval log without header.json (or _journal/start.json)")
        try:
            data = self.read(self.zip.getinfo(name))
        except RecordError as err:
            raise InputError(self.rel, f"{name}: {err}") from err
        if not isinstance(data, dict) or not isinstance(data.get("eval"), dict):
            raise InputError(self.rel, f"{name}: expected an EvalLog object with 'eval'")
        return data

    def samples(self) -> Iterator[tuple[str, Any]]:
        for info in self.zip.infolist():
            if _SAMPLE.match(info.filename):
                try:
                    yield info.filename, self.read(info)
                except RecordError as err:
                    yield info.filename, err


class InspectLogImporter(Importer):
    name = "inspect-log"
    version = "1"
    description = "Inspect AI eval logs (.eval zip, .json EvalLog): spec, plan, samples, scores, metrics"
    handles = "file"
    suffixes = frozenset({".eval", ".json"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        if path.suffix == ".eval":
            try:
                with zipfile.ZipFile(path) as zf:
                    names = set(zf.namelist())
            except (zipfile.BadZipFile, OSError):
                return LIKELY  # an .eval that is not a zip is still a log: it is reported
            return CERTAIN if HEADER in names or START in names else NO
        if path.suffix == ".json":
            head = sniff_text(path, 4096).lstrip()
            run = '"eval_id"' in head or '"run_id"' in head
            if head.startswith("{") and '"eval"' in head and '"task"' in head and run:
                return CERTAIN
        return NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        if source.path.suffix == ".eval":
            zf = _Zip(source)
            with zf.zip:
                log = zf.header()
                self._ingest(ctx, log, zf.samples())
            return
        try:
            text = source.path.read_bytes()
        except OSError as err:
            raise InputError(source.rel, f"cannot read: {err.strerror or err}") from err
        if len(text) > MAX_DOCUMENT_BYTES:
            raise InputError(source.rel, f"{len(text)} bytes: over 256 MiB, the limit for one JSON document")
        try:
            log = _loads(text.decode("utf-8"), "", source.rel)
        except UnicodeDecodeError as err:
            raise InputError(source.rel, f"not UTF-8 text (byte {err.start})") from err
        if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
            raise InputError(source.rel, "expected an EvalLog object with 'eval'")
        samples = log.get("samples") or []
        if not isinstance(samples, list):
            raise InputError(source.rel, "samples must be a list")
        self._ingest(ctx, log, ((f"samples[{i}]", s) for i, s in enumerate(samples)))

    def _ingest(self, ctx: ImportContext, log: dict[str, Any], samples: Iterator[tuple[str, Any]]) -> None:
        spec = log["eval"]
        bad = lone_surrogate({k: v for k, v in log.items() if k != "samples"})
        if bad:
            raise InputError(ctx.source.rel, bad)
        run = _Run(ctx, log)
        run.write_spec()
        run.write_plan()
        seen = 0
        for where, sample in samples:
            seen += 1
            if isinstance(sample, Exception):
                ctx.problem(None, f"{where}: {sample}")
                continue
            reason = run.write_sample(where, sample)
            if reason:
                ctx.problem(None, f"{where}: {reason}")
        if not seen and spec.get("config", {}).get("log_samples") is not False:
            ctx.add(run.node, PG.message, "the log holds no samples")
        run.write_metrics()


class _Run:
    """One log's triples: its spec, plan, samples and reported metrics."""

    def __init__(self, ctx: ImportContext, log: dict[str, Any]) -> None:
        self.ctx = ctx
        self.log = log
        self.spec: dict[str, Any] = log["eval"]
        self.cond = condition_key(self.spec)
        eval_id = self.spec.get("eval_id") or self.spec.get("run_id") or ctx.source.rel
        self.eval_id = str(eval_id)
        self.node = ctx.iri("eval-run", self.eval_id)
        self.model = self.spec.get("model") if isinstance(self.spec.get("model"), str) else None
        plan = log.get("plan") if isinstance(log.get("plan"), dict) else {}
        decoding: dict[str, Any] = {}
        for config in (self.spec.get("model_generate_config"), plan.get("config")):
            if isinstance(config, dict):
                decoding.update({k: v for k, v in config.items() if not isinstance(v, (dict, list))})
        self.decoding = {k: float(v) if isinstance(v, Decimal) else v for k, v in decoding.items()}
        config = self.spec.get("config") if isinstance(self.spec.get("config"), dict) else {}
        epochs = config.get("epochs")
        self.epochs = epochs if isinstance(epochs, int) and not isinstance(epochs, bool) and epochs > 0 else 1
        self.reducer = config.get("epochs_reducer")
        #: samples planned from the samples themselves (None: the log states its plan)
        self.planned: set[tuple[str, int]] | None = None

    def write_spec(self) -> None:
        add, s, node = self.ctx.add, self.spec, self.node
        add(node, RDF_TYPE, PG.EvalRun)
        add(node, PG.name, str(s.get("task")))
        add(node, PG.version, str(s.get("task_version", 0)))
        add(node, PG.condition, self.ctx.iri("condition", self.cond))
        add(node, PG.requestedModel, self.model)
        add(node, PG.epochs, self.epochs)
        if isinstance(self.reducer, list) and self.reducer:
            add(node, PG.epochsReducer, ",".join(str(r) for r in self.reducer))
        for key, prop in (("task_args", PG.taskArgs), ("model_args", PG.modelArgs)):
            if isinstance(s.get(key), dict):
                add(node, prop, canonical_json(plain_json(s[key])).decode("utf-8"))
        if self.decoding:
            add(node, PG.decodingJson, canonical_json(self.decoding).decode("utf-8"))
        dataset = s.get("dataset") if isinstance(s.get("dataset"), dict) else {}
        for key, prop in (("name", PG.datasetName), ("location", PG.datasetLocation)):
            add(node, prop, dataset.get(key) if isinstance(dataset.get(key), str) else None)
        count = dataset.get("samples")
        add(
            node,
            PG.datasetSampleCount,
            count if isinstance(count, int) and not isinstance(count, bool) else None,
        )
        revision = s.get("revision") if isinstance(s.get("revision"), dict) else {}
        add(node, PG.commitId, revision.get("commit") if isinstance(revision.get("commit"), str) else None)
        add(
            node,
            PG.revisionOrigin,
            revision.get("origin") if isinstance(revision.get("origin"), str) else None,
        )
        status = self.log.get("status")
        add(node, PG.runStatus, status if isinstance(status, str) else None)
        add(node, PG.startedAt, log_time(s.get("created")))
        add(node, PROV.used, self.ctx.source_iri)
        add(node, PG.sourceFile, self.ctx.source_iri)
        add(self.ctx.iri("condition", self.cond), RDF_TYPE, PG.Condition)
        add(self.ctx.iri("condition", self.cond), PG.key, self.cond)

    def call_id(self, sample_id: Any, epoch: int) -> str:
        return f"{self.cond}--{sample_id}--{epoch}"

    def write_plan(self) -> None:
        """Planned calls: the sample ids the run selected, times its epochs. A log older than
        ``dataset.sample_ids`` states no plan: each sample it holds plans its own call, and a
        missing sample cannot be seen (said on the run)."""
        dataset = self.spec.get("dataset") if isinstance(self.spec.get("dataset"), dict) else {}
        ids = dataset.get("sample_ids")
        if not isinstance(ids, list):
            self.planned = set()
            self.ctx.add(self.node, PG.message, "the log lists no sample ids: planned = the samples it holds")
            return
        for sample_id in dict.fromkeys(str(i) for i in ids if isinstance(i, (str, int))):
            for epoch in range(1, self.epochs + 1):
                self._planned_call(sample_id, epoch)

    def _planned_call(self, sample_id: str, epoch: int) -> None:
        add, plan = self.ctx.add, self.ctx.iri("plan", "main")
        case = self.ctx.iri("case", sample_id)
        add(case, RDF_TYPE, PG.Case)
        add(case, PG.key, sample_id)
        cid = self.call_id(sample_id, epoch)
        call = self.ctx.iri("call", cid)
        add(call, RDF_TYPE, PG.PlannedCall)
        add(call, PG.callId, cid)
        add(call, PG.case, case)
        add(call, PG.condition, self.ctx.iri("condition", self.cond))
        add(call, PG.replicate, epoch)
        add(call, PG.inPlan, plan)
        add(call, PG.sourceFile, self.ctx.source_iri)

    def write_sample(self, where: str, sample: Any) -> str | None:
        """The records and scores of one sample, or why it cannot be read."""
        if not isinstance(sample, dict):
            return "a sample must be an object"
        bad = lone_surrogate({k: sample[k] for k in STORED if k in sample})
        if bad:
            return bad
        sample_id, epoch = sample.get("id"), sample.get("epoch", 1)
        if isinstance(sample_id, bool) or not isinstance(sample_id, (str, int)) or str(sample_id) == "":
            return f"id must be a string or an integer, got {sample_id!r}"
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
            return f"epoch must be a whole number >= 1, got {epoch!r}"
        attachments = sample.get("attachments") if isinstance(sample.get("attachments"), dict) else {}
        try:
            prompt = sample_prompt(
                resolve_attachments(sample.get("messages") or [], attachments),
                sample.get("input"),
                attachments,
            )
        except ValueError as err:
            return f"messages: {err}"
        sid, cid = str(sample_id), self.call_id(sample_id, epoch)
        if self.planned is not None and (sid, epoch) not in self.planned:
            self.planned.add((sid, epoch))
            self._planned_call(sid, epoch)
        key = sample.get("uuid") if isinstance(sample.get("uuid"), str) else where
        retries = sample.get("error_retries") if isinstance(sample.get("error_retries"), list) else []
        for n, retry in enumerate(retries, start=1):
            message = retry.get("message") if isinstance(retry, dict) else None
            self._record(f"{key}#retry{n}", cid, "error", prompt, None, str(message or "error"))
        error = sample.get("error")
        status, message, output = self._outcome(sample, error)
        node = self._record(key, cid, status, prompt, output, message)
        out = sample.get("output") if isinstance(sample.get("output"), dict) else {}
        usage = out.get("usage") if isinstance(out.get("usage"), dict) else {}
        for name, prop in (("input_tokens", PG.inputTokens), ("output_tokens", PG.outputTokens)):
            if isinstance(usage.get(name), int) and not isinstance(usage.get(name), bool):
                self.ctx.add(node, prop, usage[name])
        self._scores(node, sample, sid, epoch, failed=error is not None)
        self.ctx.record()
        return None

    def _outcome(self, sample: dict[str, Any], error: Any) -> tuple[str, str | None, dict[str, Any]]:
        out = sample.get("output") if isinstance(sample.get("output"), dict) else {}
        if error is not None:
            message = error.get("message") if isinstance(error, dict) else error
            return "error", " ".join(str(message).split()) or "error", out
        limit = sample.get("limit")
        if isinstance(limit, dict) and isinstance(limit.get("type"), str):
            return LIMIT_STATUS.get(limit["type"], "length"), f"{limit['type']} limit reached", out
        choices = out.get("choices") if isinstance(out.get("choices"), list) else []
        reason = choices[0].get("stop_reason") if choices and isinstance(choices[0], dict) else None
        return STOP_STATUS.get(str(reason or "stop"), "ok"), None, out

    def _record(self, key, cid, status, prompt, out, error) -> str:
        ctx, add = self.ctx, self.ctx.add
        node = ctx.iri("record", "inspect", self.eval_id, key)
        add(node, RDF_TYPE, PG.CallRecord)
        add(node, PG.forCall, ctx.iri("call", cid))
        add(node, PG.callId, cid)
        # (case, condition and epoch are the planned call's: a record that named them too would be
        # described as a reviewer's script by the rules that tell the two apart)
        add(node, PG.status, status)
        add(node, PG.terminal, True)
        add(node, PG.evalRun, self.node)
        completion, resolved = None, None
        if out:
            completion = completion_text(out)
            resolved = out.get("model") if isinstance(out.get("model"), str) else None
            choices = out.get("choices") if isinstance(out.get("choices"), list) else []
            reason = choices[0].get("stop_reason") if choices and isinstance(choices[0], dict) else None
            add(node, PG.finishReason, reason if isinstance(reason, str) else None)
        write_identity(
            ctx,
            node,
            Identity(
                requested_model=self.model,
                resolved_model=resolved,
                prompt=prompt,
                capture="request",
                decoding=self.decoding or None,
                output_text=completion if status == "ok" or completion else None,
                error=error,
            ),
        )
        add(node, PROV.wasDerivedFrom, ctx.source_iri)
        add(node, PG.sourceFile, ctx.source_iri)
        return node

    def _scores(self, record: str, sample: dict[str, Any], sid: str, epoch: int, failed: bool) -> None:
        scores = sample.get("scores") if isinstance(sample.get("scores"), dict) else {}
        add = self.ctx.add
        for name, score in scores.items():
            value = score.get("value") if isinstance(score, dict) else None
            text = value if isinstance(value, str) else json.dumps(plain_json(value))
            if failed:
                add(record, PG.writtenVerdict, f"{name}={text}")
                continue
            number = score_float(value)
            if number is None:
                continue  # a dict or list value: per-key metrics this engine does not recompute
            node = self.ctx.iri("sample-score", self.eval_id, sid, str(epoch), name)
            add(node, RDF_TYPE, PG.SampleScore)
            add(node, PG.scorer, name)
            add(node, PG.scoreValue, number)
            add(node, PG.scoreText, text)
            add(node, PG.case, self.ctx.iri("case", sid))
            add(node, PG.condition, self.ctx.iri("condition", self.cond))
            add(node, PG.replicate, epoch)
            add(node, PG.evalRun, self.node)
            add(node, PROV.wasDerivedFrom, record)

    def write_metrics(self) -> None:
        results = self.log.get("results") if isinstance(self.log.get("results"), dict) else {}
        add = self.ctx.add
        for i, score in enumerate(results.get("scores") or []):
            if not isinstance(score, dict) or not isinstance(score.get("metrics"), dict):
                self.ctx.problem(None, f"results.scores[{i}]: expected an object with metrics")
                continue
            scorer = str(score.get("name") or score.get("scorer"))
            scored = score.get("scored_samples")
            for key, metric in score["metrics"].items():
                value = metric.get("value") if isinstance(metric, dict) else None
                if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
                    continue  # NaN is written as a string, a grouped metric as a dict: not a value
                name = str(metric.get("name") or key)
                node = self.ctx.iri("reported", "inspect", self.eval_id, scorer, key)
                add(node, RDF_TYPE, PG.ReportedValue)
                add(node, PG.statName, name)
                add(node, PG.value, number_literal(Decimal(value)))
                add(node, PG.tolerance, number_literal(TOLERANCE))
                add(node, PG.testVariant, scorer)
                add(node, PG.scorer, scorer)
                add(node, PG.condition, self.ctx.iri("condition", self.cond))
                add(node, PG.n, scored if isinstance(scored, int) and not isinstance(scored, bool) else None)
                add(node, PG.evalRun, self.node)
                add(node, PROV.wasDerivedFrom, self.ctx.source_iri)
                add(node, PG.sourceFile, self.ctx.source_iri)
