"""Scenario writers for ``tests/test_call_evidence_matrix.py``: one logical description of a run's
calls, written as the files of each importer that writes calls.

A :class:`Scenario` says what happened: which calls were planned, which image and system prompt
each request carried, and what each attempt came to in which batch. :data:`WRITERS` holds one
function per importer that renders it under a bundle root, beside the contract, plan, prompt
files and images they share:

``calls``
    one canonical ``calls.jsonl`` (what :mod:`provgraph.capture.recorder` appends: one record per
    attempt with prompt, ``image`` + ``image_sha256``, ``output`` file, hash and size), a batch
    being a later stretch of records (``ended_at``)
``openai``
    per batch ``batch_NN_input.jsonl`` (chat-completions bodies with a data-URL image),
    ``batch_NN_output.jsonl`` and ``batch_NN_errors.jsonl``
``anthropic``
    per batch ``msgbatch_NN_requests.jsonl`` (base64 image block) and ``msgbatch_NN_results.jsonl``

Provider line shapes come from the calibration builders (``tests/calibration/shapes/_cal_batch.py``,
written from the provider docs). With ``inputs = "dicom"`` every image is a DICOM rendered by the
reference renderer, which writes the ``provgraph.rendering/1`` record beside it.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calibration.shapes import _cal_batch as cb
from fixtures.make_images import write_dicom

from provgraph.capture.renderer import render_file
from provgraph.evidence.identity import prompt_sha256
from provgraph.evidence.renderings import sidecar_for
from provgraph.rdf.terms import escape_key

USER = "Chest radiograph attached. Report the findings and end with one line: IMPRESSION: <text>."
PROMPTS = {
    "A": "You are a board-certified radiologist. Describe the chest radiograph you are shown.",
    "B": "You are a radiologist. Read the film systematically (lines, lungs, pleura, heart, bones).",
}
ANSWER = "Lungs are clear. No pleural effusion or pneumothorax.\nIMPRESSION: No acute process."
MODELS = {
    "calls": "gpt-4o-2024-08-06",
    "openai": "gpt-4o-2024-08-06",
    "anthropic": "claude-3-5-sonnet-20241022",
}
#: logical image name -> seed of its pixels (each name is other bytes)
SEEDS = {"X": 1, "Y": 2, "Z": 3}
#: statuses whose response still carries (partial) text
ANSWERED = ("ok", "length", "refused")

CONTRACT = """\
[project]
name = "call-matrix"
base_iri = "https://example.org/call-matrix/"

[plan]
file = "plan.csv"

[pixel]
inputs = "{inputs}"
same_image_across_conditions = true

[conditions.A]
system_prompt = "prompts/A.txt"
differs_from = ["B"]
model = "m"

[conditions.B]
system_prompt = "prompts/B.txt"
model = "m"

[models.m]
requested = "{model}"
"""


@dataclass(frozen=True)
class Call:
    """One planned call and what its request carried."""

    case: str
    condition: str
    image: str | None  # logical image name (None: the request carries no image)
    system: str | None = None  # system prompt sent (None: the condition's declared prompt)

    @property
    def id(self) -> str:
        return cb.call_id(self.condition, self.case)

    def sent_system(self) -> str:
        return self.system if self.system is not None else PROMPTS[self.condition]


@dataclass(frozen=True)
class Attempt:
    """One attempt at a call: its status in batch ``batch`` (sent ``sends`` times in that batch)."""

    call: str
    status: str = "ok"  # ok | length | refused | error | expired | canceled
    batch: int = 1
    text: str = ANSWER
    sends: int = 1
    #: the model this attempt requested and was answered by (None: the declared one)
    model: str | None = None


@dataclass(frozen=True)
class Scenario:
    calls: tuple[Call, ...]
    #: attempts; a call none names is answered ok once in batch 1
    attempts: tuple[Attempt, ...] = ()
    inputs: str = "images"  # [pixel] inputs
    #: images (dicom inputs) rendered without their rendering record
    unrecorded: frozenset[str] = frozenset()
    #: calls whose output file the record names but which was never written (canonical only)
    missing_output: frozenset[str] = frozenset()
    #: canonical records give the image's sha256 taken at the request (False: only its path)
    image_hash: bool = True

    def history(self) -> list[Attempt]:
        named = {a.call for a in self.attempts}
        default = [Attempt(c.id) for c in self.calls if c.id not in named]
        return sorted([*default, *self.attempts], key=lambda a: a.batch)

    def batches(self) -> dict[int, list[Attempt]]:
        out: dict[int, list[Attempt]] = {}
        for attempt in self.history():
            out.setdefault(attempt.batch, []).append(attempt)
        return out

    def call(self, call_id: str) -> Call:
        return next(c for c in self.calls if c.id == call_id)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _common(root: Path, sc: Scenario, model: str) -> dict[str, tuple[str, bytes]]:
    """Contract, prompt files, plan and images; returns image name -> (bundle path, bytes)."""
    cb.write_text(root / "provgraph.toml", CONTRACT.format(inputs=sc.inputs, model=model))
    for key, text in PROMPTS.items():
        cb.write_text(root / "prompts" / f"{key}.txt", text + "\n")
    rows = [[c.id, c.case, c.condition, 1] for c in sc.calls]
    cb.write_csv(root / "plan.csv", ["call_id", "case", "condition", "replicate"], rows)
    return {name: _image(root, sc, name) for name in sorted({c.image for c in sc.calls if c.image})}


def _image(root: Path, sc: Scenario, name: str) -> tuple[str, bytes]:
    if sc.inputs == "images":
        rel = f"images/{name}.png"
        data = cb.png_bytes(cb.radiograph(SEEDS[name]))
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        return rel, data
    source = write_dicom(root / "dicom" / f"{name}.dcm", patient=f"1000000{SEEDS[name]}", seed=SEEDS[name])
    image = root / "rendered" / f"{name}.png"
    render_file(source, image)
    if name in sc.unrecorded:
        (image.parent / sidecar_for(image.name)).unlink()
    return f"rendered/{name}.png", image.read_bytes()


def _answer_text(attempt: Attempt) -> str:
    return (
        attempt.text[:30]
        if attempt.status == "length"
        else ""
        if attempt.status == "refused"
        else attempt.text
    )


# --- canonical call records ---------------------------------------------------------------------


def write_calls(root: Path, sc: Scenario) -> None:
    cb.write_jsonl(root / "calls.jsonl", _canonical(root, sc, MODELS["calls"]))


def _canonical(root: Path, sc: Scenario, model: str) -> list[dict[str, Any]]:
    """The canonical records of the scenario (output files written), the contract and plan."""
    images = _common(root, sc, model)
    assert not any(a.sends > 1 for a in sc.attempts), "canonical records have no batch to repeat an id in"
    records = []
    for n, attempt in enumerate(sc.history(), 1):
        call = sc.call(attempt.call)
        prompt = {"system": call.sent_system(), "user": USER}
        asked = attempt.model or model
        record: dict[str, Any] = {"call_id": call.id, "status": attempt.status, "requested_model": asked}
        record.update(
            prompt=prompt, prompt_sha256=prompt_sha256(prompt["system"], USER), prompt_source="request"
        )
        if call.image:
            rel, data = images[call.image]
            record.update(image=rel, image_sha256=sha256(data) if sc.image_hash else None)
        record["ended_at"] = f"2024-09-02T10:{attempt.batch:02d}:{n:02d}Z"
        if attempt.status in ANSWERED:
            data = _answer_text(attempt).encode()
            finish = {"ok": "stop", "length": "length", "refused": "content_filter"}[attempt.status]
            output = f"outputs/{call.id}.txt"  # the recorder's name: a later answer replaces the file
            record.update(resolved_model=asked, finish_reason=finish, output=output)
            record.update(output_sha256=sha256(data), output_bytes=len(data))
            if call.id not in sc.missing_output:
                (root / "outputs").mkdir(exist_ok=True)
                (root / output).write_bytes(data)
        else:
            record["error"] = f"{attempt.status}: no response"
        records.append(record)
    return records


# --- declared records ([[ingest.records]]) ------------------------------------------------------

#: a harness's own words for the final states (the declaration's value map turns them back)
STATES = {"ok": "answered", "length": "cut", "refused": "declined", "error": "crashed"}
STATES |= {"expired": "too_late", "canceled": "withdrawn", "timeout": "no_answer_in_time"}
DECLARATION = """
[[ingest.records]]
glob = "harness/*.jsonl"
where = { kind = "attempt" }
[ingest.records.fields]
call_id = "{condition}--{case}--1"
status = { path = "outcome.state", map = { STATE_MAP } }
requested_model = "request.model"
prompt.system = "request.messages[0].content"
prompt.user = "request.messages[1].content"
image = { path = "request.image.path", optional = true }
image_sha256 = { path = "request.image.sha256", optional = true }
ended_at = "outcome.at"
resolved_model = { path = "outcome.model", optional = true }
finish_reason = { path = "outcome.finish", optional = true }
output = { path = "outcome.file", optional = true }
output_sha256 = { path = "outcome.sha256", optional = true }
output_bytes = { path = "outcome.bytes", optional = true }
error = { path = "outcome.error", optional = true }
[ingest.records.constants]
prompt_source = "request"
""".replace("STATE_MAP", ", ".join(f'{w} = "{s}"' for s, w in STATES.items()))


def write_declared(root: Path, sc: Scenario) -> None:
    """The canonical records in a harness's own nested shape (one ``attempt`` event per record
    among events of other kinds), read by an ``[[ingest.records]]`` declaration."""
    records = _canonical(root, sc, MODELS["calls"])
    cb.write_text(root / "provgraph.toml", (root / "provgraph.toml").read_text() + DECLARATION)
    events: list[dict[str, Any]] = [{"kind": "start", "spec": {"eval": "cxr-findings"}}]
    for r in records:
        condition, case, _ = r["call_id"].split("--")
        request: dict[str, Any] = {"model": r["requested_model"]}
        request["messages"] = [
            {"role": "system", "content": r["prompt"]["system"]},
            {"role": "user", "content": r["prompt"]["user"]},
        ]
        if "image" in r:
            request["image"] = {"path": r["image"], "sha256": r["image_sha256"]}
        outcome = {"state": STATES[r["status"]], "at": r["ended_at"]}
        for key, theirs in (("resolved_model", "model"), ("finish_reason", "finish"), ("output", "file")):
            if key in r:
                outcome[theirs] = r[key]
        for key, theirs in (("output_sha256", "sha256"), ("output_bytes", "bytes"), ("error", "error")):
            if key in r:
                outcome[theirs] = r[key]
        events.append(
            {"kind": "attempt", "condition": condition, "case": case, "request": request, "outcome": outcome}
        )
    events.append({"kind": "summary", "attempts": len(records)})
    cb.write_jsonl(root / "harness" / "log.jsonl", events)


# --- OpenAI Batch API ---------------------------------------------------------------------------


def _openai_body(call: Call, images: dict[str, tuple[str, bytes]], model: str) -> dict[str, Any]:
    user: list[dict[str, Any]] = [{"type": "text", "text": USER}]
    if call.image:
        user.append({"type": "image_url", "image_url": {"url": cb.data_url(images[call.image][1])}})
    messages = [{"role": "system", "content": call.sent_system()}, {"role": "user", "content": user}]
    return {"model": model, "messages": messages, "temperature": 0, "max_completion_tokens": 600}


def _openai_result(attempt: Attempt, batch: str, model: str) -> dict[str, Any]:
    cid, status = attempt.call, attempt.status
    if status in ANSWERED:
        finish = {"ok": "stop", "length": "length", "refused": "content_filter"}[status]
        text = None if status == "refused" else _answer_text(attempt)
        return cb.openai_answer(cid, batch, model, text, finish, usage=(1105, 48))
    if status == "error":
        message = "The server had an error while processing your request. Sorry about that!"
        return cb.openai_http_error(cid, batch, 500, "server_error", message)
    if status == "expired":
        message = "This request could not be executed before the completion window expired."
        return cb.openai_failed(cid, batch, "batch_expired", message)
    assert status == "canceled", status
    return cb.openai_failed(cid, batch, "batch_cancelled", "This request was cancelled before it completed.")


def write_openai(root: Path, sc: Scenario) -> None:
    model = MODELS["openai"]
    images = _common(root, sc, model)
    assert not sc.missing_output and sc.image_hash, "batch outputs are inline, images sent as bytes"
    for b, attempts in sc.batches().items():
        requests = [
            cb.openai_request(a.call, _openai_body(sc.call(a.call), images, a.model or model))
            for a in attempts
            for _ in range(a.sends)
        ]
        results = [_openai_result(a, f"b{b}", a.model or model) for a in attempts]
        answered = [r for r in results if r["response"] and r["response"]["status_code"] == 200]
        folder = root / "batches"
        cb.write_jsonl(folder / f"batch_{b:02d}_input.jsonl", requests)
        _write_nonempty(folder / f"batch_{b:02d}_output.jsonl", answered)
        _write_nonempty(folder / f"batch_{b:02d}_errors.jsonl", [r for r in results if r not in answered])


def _write_nonempty(path: Path, rows: list[dict[str, Any]]) -> None:
    if rows:  # the Batch API writes no error file when nothing failed
        cb.write_jsonl(path, rows)


# --- Anthropic Message Batches ------------------------------------------------------------------


def _anthropic_request(call: Call, images: dict[str, tuple[str, bytes]], model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if call.image:
        data = base64.b64encode(images[call.image][1]).decode("ascii")
        content.append(
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
        )
    content.append({"type": "text", "text": USER})
    params = {
        "model": model,
        "max_tokens": 1024,
        "temperature": 0,
        "system": call.sent_system(),
        "messages": [{"role": "user", "content": content}],
    }
    return {"custom_id": call.id, "params": params}


def _anthropic_result(attempt: Attempt, batch: str, model: str) -> dict[str, Any]:
    cid, status = attempt.call, attempt.status
    if status in ANSWERED:
        stop = {"ok": "end_turn", "length": "max_tokens", "refused": "refusal"}[status]
        return cb.anthropic_succeeded(cid, batch, model, _answer_text(attempt), stop, usage=(1650, 41))
    if status == "error":
        return cb.anthropic_errored(cid, "overloaded_error", "Overloaded")
    assert status in ("expired", "canceled"), status
    return cb.anthropic_ended(cid, status)


def write_anthropic(root: Path, sc: Scenario) -> None:
    model = MODELS["anthropic"]
    images = _common(root, sc, model)
    assert not sc.missing_output and sc.image_hash, "batch outputs are inline, images sent as bytes"
    for b, attempts in sc.batches().items():
        requests = [
            _anthropic_request(sc.call(a.call), images, a.model or model)
            for a in attempts
            for _ in range(a.sends)
        ]
        results = [_anthropic_result(a, f"b{b}", a.model or model) for a in attempts]
        results.sort(key=lambda r: cb.digest(r["custom_id"]))  # results arrive in any order
        cb.write_jsonl(root / "batches" / f"msgbatch_{b:02d}_requests.jsonl", requests)
        cb.write_jsonl(root / "batches" / f"msgbatch_{b:02d}_results.jsonl", results)


WRITERS = {
    "calls": write_calls,
    "openai": write_openai,
    "anthropic": write_anthropic,
    "declared": write_declared,
}


def record_focus(importer: str, sc: Scenario, call_id: str, nth: int = 1) -> str:
    """The record node of the ``nth`` attempt at ``call_id``, as ``importer`` mints it."""
    mine = [a for a in sc.history() if a.call == call_id]
    attempt = mine[nth - 1]
    if importer in ("calls", "declared"):
        rel = "calls.jsonl" if importer == "calls" else "harness/log.jsonl"
        return cb.record_focus(rel, call_id, nth)
    assert sum(a.batch == attempt.batch for a in mine) == 1, "one attempt per batch"
    b = attempt.batch
    if importer == "anthropic":
        return cb.record_focus(f"batches/msgbatch_{b:02d}_results.jsonl", call_id)
    kind = "output" if attempt.status in ANSWERED else "errors"
    return cb.record_focus(f"batches/batch_{b:02d}_{kind}.jsonl", call_id)


def request_focus(importer: str, sc: Scenario, call_id: str, nth: int = 1) -> str:
    """The node that sent the ``nth`` attempt at ``call_id``: its batch request (one per batch),
    or the canonical record, which states its own request."""
    if importer in ("calls", "declared"):
        return record_focus(importer, sc, call_id, nth)
    b = [a for a in sc.history() if a.call == call_id][nth - 1].batch
    name = f"msgbatch_{b:02d}_requests" if importer == "anthropic" else f"batch_{b:02d}_input"
    return f"request/{escape_key(f'batches/{name}.jsonl')}/{escape_key(call_id)}/1"
