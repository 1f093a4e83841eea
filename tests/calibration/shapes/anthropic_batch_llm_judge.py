"""Holdout shape: an LLM-as-judge benchmark run through Anthropic Message Batches (text only).

Three candidate systems (Llama 3.1 70B Instruct, Mistral Large 2, Qwen2.5 72B Instruct)
answered eight short factual questions; three judge models grade every answer against the
reference (CORRECT / INCORRECT / NOT_ATTEMPTED) with one shared grader prompt: Claude Sonnet 4
and Claude 3.5 Haiku by dated snapshot, Claude Opus 4.1 by its alias ``claude-opus-4-1``.
A case is one (question, candidate) answer: 24 cases x 3 judges = 72 planned calls. The README's
results table (accuracy per system and judge, ``k/n`` beside each percentage) is what the
``[release]`` registry names.

Sound but unusual choices of the clean twin:

- The harness writes no plan file: the plan is the contract's matrix (``[plan] cases`` x
  ``conditions``), so each ``custom_id`` is ``<judge>--<case>--1`` (no dots: Anthropic
  custom_ids allow only letters, digits, ``_`` and ``-``).
- Two ``overloaded_error`` results and two ``expired`` results of the first batch were
  re-submitted unchanged, with the same ``custom_id``, in a second batch and answered there.
- The protocol scores a judge refusal (``stop_reason: "refusal"``) as an ungraded item, reported
  as such: ``[plan] accept_statuses = ["refused"]``.
- Results files are in no particular order (the documentation says so).
- Opus is requested by its alias, accepted because each message records the snapshot.

Flawed twin, planted:

- output: one candidate answer was empty, so its judge requests carried an empty text block and
  came back ``invalid_request_error``; nobody re-submitted them;
- output: one Opus verdict stopped at ``max_tokens`` (its JSON cut off), counted anyway;
- prompt: the Haiku requests were built from the stale grader prompt v1;
- model: the retry batch requested ``claude-3-7-sonnet-20250219`` for the Sonnet 4 retries;
- release: the README keeps one accuracy from before the retry batch (registry: superseded);
- release: the README says "4 judge models" where the registry counts 3.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

for _dir in (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))

from _holdout_batch import b62_id, write_csv, write_jsonl, write_text  # noqa: E402
from corpus import Planted  # noqa: E402

from provgraph.rdf.terms import escape_key  # noqa: E402

NAME = "anthropic-batch-llm-judge"
SOURCE = (
    "Anthropic Message Batches (https://docs.anthropic.com/en/docs/build-with-claude/batch-processing "
    "and /en/api/retrieving-message-batch-results: request custom_id/params, results JSONL "
    "custom_id/result.type succeeded|errored|canceled|expired in any order, errored "
    "result.error.error.type invalid_request_error/overloaded_error); Messages API message "
    "(id, model, content text blocks, stop_reason end_turn/max_tokens/refusal, usage); "
    "simple-evals-style grader verdicts CORRECT/INCORRECT/NOT_ATTEMPTED; provgraph README "
    "'The contract', 'Prompt, model and output identity' (matrix plan) and 'Release'"
)

BASE = "https://example.org/judge-bench/"
JUDGES = {  # condition key: (requested, resolved, README name)
    "sonnet4": ("claude-sonnet-4-20250514", "claude-sonnet-4-20250514", "Claude Sonnet 4"),
    "haiku35": ("claude-3-5-haiku-20241022", "claude-3-5-haiku-20241022", "Claude 3.5 Haiku"),
    "opus41": ("claude-opus-4-1", "claude-opus-4-1-20250805", "Claude Opus 4.1"),
}
CANDIDATES = {
    "llama31-70b": "Llama 3.1 70B Instruct",
    "mistral-large2": "Mistral Large 2",
    "qwen25-72b": "Qwen2.5 72B Instruct",
}
QUESTIONS = {  # id: (question, reference)
    "q01": ("Which element has the chemical symbol W?", "Tungsten"),
    "q02": ("In which year did the Treaty of Westphalia get signed?", "1648"),
    "q03": ("What is the SI unit of magnetic flux?", "Weber"),
    "q04": ("Who wrote the novel 'The Master and Margarita'?", "Mikhail Bulgakov"),
    "q05": ("What is the capital of Burkina Faso?", "Ouagadougou"),
    "q06": ("Which enzyme unwinds DNA at the replication fork?", "Helicase"),
    "q07": ("What is the largest moon of Neptune?", "Triton"),
    "q08": ("Which mathematician proved the incompleteness theorems?", "Kurt Goedel"),
}
GRADER = (
    "You grade one answer to a factual question against its reference answer. Reply with JSON "
    '{"verdict": "CORRECT" | "INCORRECT" | "NOT_ATTEMPTED", "rationale": "..."}. An answer that '
    "declines or hedges without committing is NOT_ATTEMPTED."
)
GRADER_V1 = (
    "You grade one answer to a factual question against its reference answer. Reply with JSON "
    '{"verdict": "CORRECT" | "INCORRECT", "rationale": "..."}.'
)
MAX_TOKENS = 512
OVERLOADED = ("sonnet4--q02-qwen25-72b--1", "sonnet4--q05-qwen25-72b--1")
EXPIRED = ("opus41--q02-mistral-large2--1", "opus41--q06-qwen25-72b--1")
REFUSED = "sonnet4--q06-mistral-large2--1"
# planted in the flawed twin
EMPTY_ANSWER = "q05-mistral-large2"
TRUNCATED = "opus41--q02-llama31-70b--1"
RETRY_MODEL = "claude-3-7-sonnet-20250219"


def _cases() -> list[str]:
    return [f"{q}-{c}" for c in CANDIDATES for q in QUESTIONS]


def _cid(judge: str, case: str) -> str:
    return f"{judge}--{case}--1"


def _answers(flawed: bool) -> dict[str, tuple[str, bool]]:
    """Each case's candidate answer and whether it is right."""
    rng = random.Random(20250301)
    answers = {}
    for case in _cases():
        q = case.split("-", 1)[0]
        right = rng.random() < 0.7
        text = QUESTIONS[q][1] if right else rng.choice(["Molybdenum", "1658", "Tesla", "Nereid", "Primase"])
        answers[case] = ("" if flawed and case == EMPTY_ANSWER else f"The answer is {text}.", right)
    return answers


def _verdict(judge: str, case: str, right: bool) -> str:
    """The judge's grade: judges agree except Haiku on two answers."""
    if judge == "haiku35" and case in ("q02-mistral-large2", "q07-llama31-70b"):
        right = not right
    return "CORRECT" if right else "INCORRECT"


def _params(judge: str, case: str, answer: str, flawed: bool, retry: bool) -> dict[str, Any]:
    q = case.split("-", 1)[0]
    question, reference = QUESTIONS[q]
    model = JUDGES[judge][0]
    if flawed and retry and judge == "sonnet4":
        model = RETRY_MODEL  # planted: the retry script's default model
    system = GRADER_V1 if flawed and judge == "haiku35" else GRADER  # planted: stale rubric
    content = [
        {"type": "text", "text": f"Question: {question}"},
        {"type": "text", "text": f"Reference answer: {reference}"},
        {"type": "text", "text": answer},
    ]
    return {
        "model": model,
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
        "system": system,
        "messages": [{"role": "user", "content": content}],
    }


def _message(rng: random.Random, resolved: str, text: str, stop: str) -> dict[str, Any]:
    return {
        "id": b62_id(rng, "msg_"),
        "type": "message",
        "role": "assistant",
        "model": resolved,
        "content": [{"type": "text", "text": text}] if text else [],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": rng.randint(140, 260),
            "output_tokens": MAX_TOKENS if stop == "max_tokens" else rng.randint(30, 120),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _errored(kind: str) -> dict[str, Any]:
    message = {
        "overloaded_error": "Overloaded",
        "invalid_request_error": "messages.0.content.2.text: text content blocks must be non-empty",
    }[kind]
    return {"type": "errored", "error": {"type": "error", "error": {"type": kind, "message": message}}}


def _result(
    rng: random.Random, cid: str, params: dict[str, Any], right: bool, flawed: bool
) -> tuple[dict, str | None]:
    """The result object of one request and the verdict the harness took from it (or None)."""
    judge, case, _ = cid.split("--")
    if flawed and case == EMPTY_ANSWER:
        return _errored("invalid_request_error"), None
    resolved = RETRY_MODEL if params["model"] == RETRY_MODEL else JUDGES[judge][1]
    if cid == REFUSED:
        return {"type": "succeeded", "message": _message(rng, resolved, "", "refusal")}, None
    verdict = _verdict(judge, case, right)
    text = json.dumps({"verdict": verdict, "rationale": f"Compared with the reference for {case}."})
    stop = "end_turn"
    if flawed and cid == TRUNCATED:
        text, stop = text[: len(text) // 2], "max_tokens"  # the harness's regex still finds the verdict
    return {"type": "succeeded", "message": _message(rng, resolved, text, stop)}, verdict


def _batch(
    files: dict[str, list[dict]], folder: str, cids: list[str], flawed: bool, verdicts: dict[str, str]
) -> list[str]:
    """One batch's requests and results (into ``files``); return the custom_ids to re-submit."""
    rng = random.Random(f"{folder}-{flawed}")
    answers = _answers(flawed)
    retry = folder.endswith("02")
    requests, results, again = [], [], []
    for cid in cids:
        judge, case, _ = cid.split("--")
        params = _params(judge, case, answers[case][0], flawed, retry)
        requests.append({"custom_id": cid, "params": params})
        if not retry and cid in OVERLOADED:
            results.append({"custom_id": cid, "result": _errored("overloaded_error")})
            again.append(cid)
        elif not retry and cid in EXPIRED:
            results.append({"custom_id": cid, "result": {"type": "expired"}})
            again.append(cid)
        else:
            result, verdict = _result(rng, cid, params, answers[case][1], flawed)
            results.append({"custom_id": cid, "result": result})
            if verdict:
                verdicts[cid] = verdict
    rng.shuffle(results)
    files[f"batches/{folder}/requests.jsonl"] = requests
    files[f"batches/{folder}/results.jsonl"] = results
    return again


def _run(flawed: bool) -> tuple[dict[str, list[dict]], dict[str, str], dict, dict]:
    """Both batches of one twin: files, final verdicts, the table before and after the retry."""
    files: dict[str, list[dict]] = {}
    verdicts: dict[str, str] = {}
    cids = [_cid(j, case) for j in JUDGES for case in _cases()]
    again = _batch(files, "msgbatch_01", cids, flawed, verdicts)
    first = _table(verdicts)  # what the README said before the retry batch
    _batch(files, "msgbatch_02", again, flawed, verdicts)
    return files, verdicts, first, _table(verdicts)


def _accuracy(verdicts: dict[str, str], judge: str, cand: str) -> tuple[str, int, int]:
    graded = [v for cid, v in verdicts.items() if cid.startswith(f"{judge}--") and f"-{cand}--" in cid]
    k, n = sum(v == "CORRECT" for v in graded), len(graded)
    return f"{100 * k / n:.1f}%", k, n


def _table(verdicts: dict[str, str]) -> dict[tuple[str, str], tuple[str, int, int]]:
    return {(j, c): _accuracy(verdicts, j, c) for j in JUDGES for c in CANDIDATES}


def _readme(table: dict, judges_written: int, ungraded: int, stale: tuple[str, str, str] | None) -> str:
    head = "| System | " + " | ".join(JUDGES[j][2] for j in JUDGES) + " |"
    rows = [head, "|---" * (len(JUDGES) + 1) + "|"]
    for c, name in CANDIDATES.items():
        cells = []
        for j in JUDGES:
            text, k, n = stale[1:] if stale and (j, c) == stale[0] else table[(j, c)]  # type: ignore[misc]
            cells.append(f"{text} ({k}/{n})")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return (
        "# Judge-graded accuracy on eight factual questions\n\n"
        f"Answers of 3 candidate systems, graded by {judges_written} judge models through the Anthropic "
        "Message Batches API (temperature 0, one grader prompt: `judge/grader_system.txt`).\n\n"
        + "\n".join(rows)
        + f"\n\nUngraded: {ungraded} judgement (a judge refusal, scored as ungraded by the protocol).\n"
    )


def _contract(table: dict, superseded: list[tuple[str, str]]) -> str:
    cases = ", ".join(f'"{c}"' for c in _cases())
    lines = [
        "[project]",
        'name = "judge-bench"',
        f'base_iri = "{BASE}"',
        "",
        "[plan]                          # the harness writes no plan file: the matrix is the plan",
        f"cases = [{cases}]",
        f"conditions = [{', '.join(repr(j).replace(chr(39), chr(34)) for j in JUDGES)}]",
        "replicates = 1",
        'accept_statuses = ["refused"]   # protocol 3.2: a judge refusal is an ungraded item',
        f"decoding = {{ temperature = 0, max_tokens = {MAX_TOKENS} }}",
        "",
    ]
    for j in JUDGES:
        lines += [f"[conditions.{j}]", 'system_prompt = "judge/grader_system.txt"', f'model = "{j}"', ""]
    for j, (requested, _, _) in JUDGES.items():
        lines += [f"[models.{j}]", f'requested = "{requested}"']
        lines += (
            ["alias_ok = true                 # each message records the snapshot", ""]
            if j == "opus41"
            else [""]
        )
    lines += [
        "[release]",
        'name = "judge-bench"',
        'version = "1.0.0"',
        'include = ["README.md", "results/*"]',
    ]
    lines += ['texts = ["README.md"]', ""]
    for (j, c), (text, _, _) in table.items():
        lines += ["[[release.values]]", f'name = "accuracy_{j}_{c}"', f'value = "{text}"', ""]
    for name, text in superseded:
        lines += ["[[release.values]]", f'name = "{name}"', f'value = "{text}"', 'status = "superseded"', ""]
    lines += ["[[release.entities]]", 'key = "judges"', "count = 3", 'nouns = ["judge models", "judges"]', ""]
    for j, (_, _, name) in JUDGES.items():
        lines += ["[[release.entities]]", f'key = "judge-{j}"', f'canonical = "{name}"', ""]
    for c, name in CANDIDATES.items():
        lines += ["[[release.entities]]", f'key = "candidate-{c}"', f'canonical = "{name}"', ""]
    return "\n".join(lines)


def generate(root: Path, twin: str) -> list[Planted]:
    flawed = twin == "flawed"
    root.mkdir(parents=True, exist_ok=True)
    write_text(root, "judge/grader_system.txt", GRADER + "\n")
    write_text(root, "judge/grader_system_v1.txt", GRADER_V1 + "\n")
    answers = _answers(flawed)
    for c in CANDIDATES:
        rows = [
            {"question_id": case.split("-", 1)[0], "answer": answers[case][0]}
            for case in _cases()
            if case.endswith(c)
        ]
        write_jsonl(root, f"candidates/{c}.jsonl", rows)
    files, verdicts, first, table = _run(flawed)
    for rel, rows in files.items():
        write_jsonl(root, rel, rows)
    _, _, clean_first, clean_table = _run(False)  # the registry is the sound run's
    stale_key = ("sonnet4", "qwen25-72b")
    superseded = [(f"accuracy_{stale_key[0]}_{stale_key[1]}", clean_first[stale_key][0])]
    assert all(text != cell[0] for _, text in superseded for cell in (*clean_table.values(), *table.values()))
    stale = (stale_key, *first[stale_key]) if flawed else None
    readme = _readme(table, 4 if flawed else 3, 1, stale)  # type: ignore[arg-type]
    write_text(root, "README.md", readme)
    write_text(root, "provgraph.toml", _contract(clean_table, superseded))
    grades = [[cid.split("--")[0], cid.split("--")[1], v] for cid, v in sorted(verdicts.items())]
    write_csv(root, "results/grades.csv", ["judge", "answer", "verdict"], grades)
    if not flawed:
        return []
    line = next(
        i for i, t in enumerate(readme.splitlines(), 1) if t.startswith(f"| {CANDIDATES[stale_key[1]]} |")
    )

    def node(kind: str, *keys: str) -> str:
        return kind + "/" + "/".join(escape_key(k) for k in keys)

    return [
        Planted(
            "output-call-not-successful",
            f"call/{_cid('sonnet4', EMPTY_ANSWER)}",
            "invalid_request_error (empty answer block), never re-submitted",
        ),
        Planted("output-call-not-successful", f"call/{TRUNCATED}", "verdict stopped at max_tokens, counted"),
        Planted("prompt-differs-from-declared", "condition/haiku35", "Haiku requests used grader prompt v1"),
        Planted(
            "model-undeclared",
            node("request", "batches/msgbatch_02/requests.jsonl", OVERLOADED[0], "1"),  # asked for it
            "retry batch requested claude-3-7-sonnet-20250219",
        ),
        Planted(
            "release-stale-value",
            node("claim", "README.md", str(line), first[stale_key][0], "1"),
            "README keeps the pre-retry accuracy",
        ),
        Planted(
            "release-entity-inconsistent",
            node("mention", "README.md", "3", "4 judge models", "1"),
            "README says 4 judge models",
        ),
    ]
