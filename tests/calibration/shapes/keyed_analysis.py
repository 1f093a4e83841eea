"""A paired analysis of binary correct/incorrect cells: four prompting conditions of one VLM
scored per (study, finding) against reference labels, Cochran's Q over the conditions and the
six pairwise McNemar tests adjusted with Holm as one declared family, released with its README
and manuscript table.

The bundle is what the run and the analysis script leave: ``plan.csv`` (one call per study and
condition) and the harness's canonical call log ``calls.jsonl`` (README "Prompt, model and
output identity": prompt captured at the request, requested and resolved model, decoding,
output file with its sha256 and size) with each answer in ``outputs/<call_id>.json``;
``results/cells.csv`` (provgraph's ``reported-cells`` format: ``case, finding, condition, cell``
with TP/TN/FN/FP, a blank cell a missing one) and ``results/stats.json`` (``reported-stats``:
``{"statistics": [...]}``), whose numbers the generator computes with statsmodels
(``cochrans_q``, ``mcnemar(exact=True)``, ``multipletests(method="holm")``) from the keyed
matrix, as the analysis script would; ``README.md`` (accuracy k/n per condition, Q) and
``paper/results.tex`` (the McNemar table), whose numbers the ``[release]`` registry names.

Sound but unusual (clean): the ``retrieval`` condition has no cells for four blocks (its
retrieval index returned nothing for one study and one finding of another; the answer files
hold ``null`` there), and the analysis declares the complete-case cohort (``cohort_rule =
"globally-complete"``): Q and every McNemar test use the 116 blocks scored under all four
conditions, and each reported value says so. Two retrieval calls timed out and were re-sent in
a second pass with the same call id (their history: ``timeout``, then ``ok``). The registry
keeps the withdrawn asymptotic p of one pair (the protocol says exact) so no text can bring it
back.

Flawed (six defects of three clauses):

1. the reported Q (and its p) was computed the historical way: missing cells dropped per
   condition and columns paired by position, still labelled globally-complete with n = 116
   (``analysis-positional-join``);
2. the Holm family was adjusted over 5 pairs (one dropped after seeing the results), though the
   contract declares 6 (``analysis-family-size``);
3. one unadjusted McNemar p-value was transcribed with two digits swapped
   (``analysis-reported-differs``);
4. the manuscript table still carries the withdrawn asymptotic p of zero-shot vs cot, pasted
   from the first analysis run (``release-stale-value``, a withdrawn value in a LaTeX cell);
5. a resumed run re-sent a cot call that had already been answered: two ``ok`` records for one
   planned call (``output-duplicate-terminal``);
6. one cot answer ran into ``max_tokens`` in its trailing reasoning and the harness logged it
   ``ok`` anyway (``output-ok-with-failed-finish``).
"""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path

import numpy as np
from statsmodels.stats.contingency_tables import cochrans_q, mcnemar
from statsmodels.stats.multitest import multipletests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cal_analysis import focus, fresh, write, write_csv, write_json
from _cal_cross import clock, record, write_jsonl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from corpus import Planted

NAME = "keyed-analysis"
SOURCE = (
    "provgraph README 'Annotation and analysis: keyed recomputation' and 'What gets imported' "
    "(reported-cells, reported-stats); statsmodels.stats.contingency_tables.cochrans_q / mcnemar, "
    "statsmodels.stats.multitest.multipletests (https://www.statsmodels.org/stable/); "
    "README 'Prompt, model and output identity' (canonical calls.jsonl records, plan.csv) and "
    "'Release: lineage of any number' ([release] registry, texts as claims)"
)
BASE = "https://example.org/keyed-analysis/"
STATS = "results/stats.json"
FAMILY = "mcnemar-all-pairs"
CONDITIONS = ("zero-shot", "few-shot", "cot", "retrieval")
ACCURACY = {"zero-shot": 0.70, "few-shot": 0.78, "cot": 0.84, "retrieval": 0.80}
FINDINGS = ("Atelectasis", "Cardiomegaly", "Edema", "Pleural Effusion", "Pneumothorax")
CASES = tuple(str(50200000 + 137 * i) for i in range(24))
#: blocks retrieval could not score: all but two findings of the second study, one of the fifth
MISSING = {(CASES[1], f) for f in FINDINGS[:3]} | {(CASES[4], "Edema")}
DROPPED_PAIR = ("few-shot", "cot")  # flawed: left out of the Holm family after the fact
SLIPPED = ("cot", "retrieval")  # flawed: its unadjusted p transcribed with two digits swapped
WITHDRAWN = ("zero-shot", "cot")  # flawed: the manuscript keeps its withdrawn asymptotic p
MODEL = ("gpt-4o-2024-08-06", "gpt-4o-2024-08-06")  # (requested, resolved): a pinned snapshot
DECODING = {"temperature": 0, "max_tokens": 1024}
RETRIED = {f"retrieval--{CASES[1]}", f"retrieval--{CASES[4]}"}  # timed out, re-sent in a second pass
RESUMED = f"cot--{CASES[9]}"  # flawed: re-sent by a resumed run after its ok
CUT = f"cot--{CASES[15]}"  # flawed: hit max_tokens in its trailing reasoning, logged ok
ANSWER = {"TP": "present", "FP": "present", "TN": "absent", "FN": "absent", "": None}
SYSTEM = {
    "zero-shot": "You are a thoracic radiologist. For each listed finding answer present or absent.",
    "few-shot": "You are a thoracic radiologist. For each listed finding answer present or absent. "
    "Three solved examples follow the question.",
    "cot": "You are a thoracic radiologist. Reason step by step about each listed finding, then "
    "answer present or absent.",
    "retrieval": "You are a thoracic radiologist. Use the retrieved reports of similar studies "
    "below; for each listed finding answer present or absent.",
}


def cells() -> dict[tuple[str, str], dict[str, str]]:
    """(case, finding) -> condition -> TP/TN/FN/FP ('' where retrieval has no cell)."""
    rng = random.Random(20260414)
    out: dict[tuple[str, str], dict[str, str]] = {}
    for case, finding in itertools.product(CASES, FINDINGS):
        positive = rng.random() < 0.35
        difficulty = rng.random()
        row = {}
        for cond in CONDITIONS:
            correct = rng.random() * 0.6 + difficulty * 0.4 < ACCURACY[cond]
            row[cond] = ("TP" if positive else "TN") if correct else ("FN" if positive else "FP")
        if (case, finding) in MISSING:
            row["retrieval"] = ""
        out[(case, finding)] = row
    return out


def matrix(grid: dict[tuple[str, str], dict[str, str]]) -> np.ndarray:
    """Blocks (file order) x conditions, 1 correct, 0 incorrect, NaN missing."""
    code = {"TP": 1.0, "TN": 1.0, "FN": 0.0, "FP": 0.0, "": np.nan}
    return np.array([[code[grid[b][c]] for c in CONDITIONS] for b in grid])


def positional(values: np.ndarray) -> np.ndarray:
    """The historical route: drop each column's missing cells, cut to the shortest, pair by position."""
    kept = [values[~np.isnan(values[:, j]), j] for j in range(values.shape[1])]
    n = min(len(k) for k in kept)
    return np.stack([k[:n] for k in kept], axis=1)


def pair_p(y: np.ndarray, a: int, b: int) -> float:
    table = [
        [int(((y[:, a] == 1) & (y[:, b] == 1)).sum()), int(((y[:, a] == 1) & (y[:, b] == 0)).sum())],
        [int(((y[:, a] == 0) & (y[:, b] == 1)).sum()), int(((y[:, a] == 0) & (y[:, b] == 0)).sum())],
    ]
    return float(mcnemar(table, exact=True).pvalue)


def reported(values: np.ndarray, flawed: bool) -> list[dict]:
    """The statistics the analysis script wrote."""
    complete = values[~np.isnan(values).any(axis=1)]
    q_input = positional(values) if flawed else complete
    q = cochrans_q(q_input)
    common = {"n": int(complete.shape[0]), "cohort_rule": "globally-complete"}
    out = [
        {"name": "cochran_q", "value": round(float(q.statistic), 3), "df": 3, **common},
        {"name": "cochran_q_p", "value": round(float(q.pvalue), 5), **common},
    ]
    pairs = list(itertools.combinations(range(len(CONDITIONS)), 2))
    family = [p for p in pairs if not (flawed and tuple(CONDITIONS[i] for i in p) == DROPPED_PAIR)]
    raw, ns = [], []
    for a, b in family:
        raw.append(pair_p(complete, a, b))
        ns.append(int(complete.shape[0]))
    adjusted = multipletests(raw, method="holm")[1]
    for (a, b), p, p_adj, n in zip(family, raw, adjusted, ns, strict=True):
        pair = [CONDITIONS[a], CONDITIONS[b]]
        written = f"{p:.4f}"
        if flawed and pair == list(SLIPPED):
            written = written[:-3] + written[-1] + written[-2:-1] + written[-3]  # a transcription slip
            assert written != f"{p:.4f}", written
        rule = {"test_variant": "exact", "cohort_rule": "globally-complete", "n": n}
        out.append({"name": "mcnemar_p", "conditions": pair, "value": float(written), **rule})
        out.append(
            {
                "name": "mcnemar_p_adjusted",
                "conditions": pair,
                "value": round(float(p_adj), 4),
                "adjustment": "holm",
                "family": FAMILY,
                "family_size": len(family),
                **rule,
            }
        )
    return out


def asymptotic_p(values: np.ndarray, pair: tuple[str, str]) -> str:
    """The withdrawn first-run value: the pair's continuity-corrected asymptotic McNemar p."""
    y = values[~np.isnan(values).any(axis=1)]
    a, b = (CONDITIONS.index(c) for c in pair)
    table = [[int(((y[:, a] == i) & (y[:, b] == j)).sum()) for j in (1, 0)] for i in (1, 0)]
    return f"{float(mcnemar(table, exact=False, correction=True).pvalue):.4f}"


def calls(root: Path, grid: dict[tuple[str, str], dict[str, str]], flawed: bool) -> None:
    """plan.csv, the answers in outputs/ and the harness's call log, retries in a second pass."""
    times = clock("2026-03-02T09:00:00+00:00")
    plan: list[list[object]] = []
    lines, again = [], []
    for case in CASES:
        for cond in CONDITIONS:
            call_id = f"{cond}--{case}"
            plan.append([call_id, case, cond])
            out = f"outputs/{call_id}.json"
            answers = {f: ANSWER[grid[(case, f)][cond]] for f in FINDINGS}
            write_json(root, out, {"case": case, "condition": cond, "answers": answers})
            user = f"Study {case}. Findings: {', '.join(FINDINGS)}. Answer as JSON."
            kw = {"prompt": {"system": SYSTEM[cond], "user": user}, "models": MODEL, "decoding": DECODING}
            if call_id in RETRIED:
                lines.append(
                    record(
                        root, call_id, times, status="timeout", finish=None, error="Request timed out.", **kw
                    )
                )
                again.append((call_id, out, kw))
                continue
            finish = "length" if flawed and call_id == CUT else "stop"
            lines.append(record(root, call_id, times, output=out, finish=finish, **kw))
            if flawed and call_id == RESUMED:
                again.append((call_id, out, kw))  # the resume checked the wrong folder for answers
    lines += [record(root, c, times, output=out, attempt=2, **kw) for c, out, kw in again]
    write_csv(root, "plan.csv", ["call_id", "case", "condition"], plan)
    write_jsonl(root, "calls.jsonl", lines)


def texts(root: Path, values: np.ndarray, stats: list[dict], flawed: bool) -> str:
    """README.md and paper/results.tex from the clean statistics; returns the withdrawn value."""
    complete = values[~np.isnan(values).any(axis=1)]
    n = complete.shape[0]
    rows = [
        f"| {c} | {100 * k / n:.1f}% ({k}/{n}) |"
        for c, k in zip(CONDITIONS, complete.sum(axis=0).astype(int), strict=True)
    ]
    q = {s["name"]: s["value"] for s in stats if s["name"].startswith("cochran")}
    write(root, "README.md", "\n".join([
        "# Four prompting conditions of one VLM", "",
        f"{len(CASES)} studies, {len(FINDINGS)} findings each; the analysis uses the blocks scored "
        "under every condition (complete case).", "",
        "| condition | correct |", "|---|---|", *rows, "",
        f"Cochran's Q = {q['cochran_q']:.3f} (df = 3), p = {q['cochran_q_p']:.5f}.",
        "Pairwise exact McNemar tests, Holm-adjusted as one family: `paper/results.tex`.", "",
    ]))  # fmt: skip
    withdrawn = asymptotic_p(values, WITHDRAWN)
    table = []
    for s in stats:
        if s["name"] != "mcnemar_p":
            continue
        pair = tuple(s["conditions"])
        adj = next(t for t in stats if t["name"] == "mcnemar_p_adjusted" and tuple(t["conditions"]) == pair)
        p = withdrawn if flawed and pair == WITHDRAWN else f"{s['value']:.4f}"
        table.append(f"{pair[0]} & {pair[1]} & {p} & {adj['value']:.4f} \\\\")
    if not flawed:  # the withdrawn value appears in no clean text
        assert not any(withdrawn in line for line in [*table, *rows]), withdrawn
    write(root, "paper/results.tex", "\n".join([
        r"\begin{table}", r"\caption{Pairwise exact McNemar tests, complete-case blocks, Holm-adjusted.}",
        r"\begin{tabular}{llrr}", r"A & B & $p$ & $p_{\mathrm{Holm}}$ \\", *table,
        r"\end{tabular}", r"\end{table}", "",
    ]))  # fmt: skip
    return withdrawn


def contract(stats: list[dict], withdrawn: str) -> str:
    exact = next(s for s in stats if s["name"] == "mcnemar_p" and tuple(s["conditions"]) == WITHDRAWN)
    q = next(s for s in stats if s["name"] == "cochran_q")
    pair = "_".join(WITHDRAWN)
    return f"""# Paired analysis of four prompting conditions (written from the README).
[project]
name = "keyed-analysis"
base_iri = "{BASE}"

[plan]
file = "plan.csv"
decoding = {{ temperature = 0, max_tokens = 1024 }}

[analysis]
cells = "reported"                    # the analysis script's confusion-cell matrix
conditions = {list(CONDITIONS)}
cohort_rule = "globally-complete"     # complete-case: retrieval misses four blocks
sensitivity = ["positional-truncation", "pairwise-available"]
clusters = []
bootstrap = {{ resamples = 0 }}

[[analysis.family]]
name = "{FAMILY}"
size = 6
adjustments = ["holm"]
denominator = "fixed"

[release]
name = "keyed-analysis"
version = "1.0.0"
include = ["README.md", "paper/*", "results/*"]
texts = ["*.md", "*.tex"]

[[release.values]]
name = "cochran_q"
value = "{q["value"]:.3f}"
aliases = ["Q"]

[[release.values]]
name = "mcnemar_p_{pair}"
value = "{exact["value"]:.4f}"

[[release.values]]                    # the first run's asymptotic test; the protocol says exact
name = "mcnemar_p_{pair}"
value = "{withdrawn}"
status = "withdrawn"
"""


def generate(root: Path, twin: str) -> list[Planted]:
    flawed = twin == "flawed"
    fresh(root)
    grid = cells()
    rows = [
        [case, finding, cond, grid[(case, finding)][cond]] for (case, finding) in grid for cond in CONDITIONS
    ]
    write_csv(root, "results/cells.csv", ["case", "finding", "condition", "cell"], rows)
    values = matrix(grid)
    write_json(root, STATS, {"statistics": reported(values, flawed)})
    calls(root, grid, flawed)
    clean = reported(values, False)
    withdrawn = texts(root, values, clean, flawed)
    write(root, "provgraph.toml", contract(clean, withdrawn))
    if not flawed:
        return []
    rule = ["test_variant=exact", "cohort_rule=globally-complete"]
    slip = ["name=mcnemar_p", *(f"condition={c}" for c in SLIPPED), *rule]
    line = 5 + [s["conditions"] for s in clean if s["name"] == "mcnemar_p"].index(list(WITHDRAWN))
    return [
        Planted(
            "analysis-positional-join",
            focus(BASE, "reported", STATS, "name=cochran_q", "cohort_rule=globally-complete"),
            "Q computed from positionally paired columns, labelled globally-complete",
        ),
        Planted("analysis-family-size", focus(BASE, "family", FAMILY), "Holm over 5 pairs, 6 declared"),
        Planted("analysis-reported-differs", focus(BASE, "reported", STATS, *slip), "p with swapped digits"),
        Planted(
            "release-stale-value",
            focus(BASE, "claim", "paper", "results.tex", line, withdrawn, 1),
            "manuscript table keeps the withdrawn asymptotic p",
        ),
        Planted("output-duplicate-terminal", focus(BASE, "call", RESUMED), "resumed run: two ok records"),
        Planted(
            "output-ok-with-failed-finish", focus(BASE, "record", "calls.jsonl", CUT, 1), "length logged ok"
        ),
    ]
