"""A paired analysis of binary correct/incorrect cells: four prompting conditions of one VLM
scored per (study, finding) against reference labels, Cochran's Q over the conditions and the
six pairwise McNemar tests adjusted with Holm as one declared family.

The bundle is what the analysis script leaves: ``results/cells.csv`` (provgraph's
``reported-cells`` format: ``case, finding, condition, cell`` with TP/TN/FN/FP, a blank cell a
missing one) and ``results/stats.json`` (``reported-stats``: ``{"statistics": [...]}``), whose
numbers the generator computes with statsmodels (``cochrans_q``, ``mcnemar(exact=True)``,
``multipletests(method="holm")``) from the keyed matrix, as the analysis script would.

Sound but unusual (clean): the ``retrieval`` condition has no cells for four blocks (its
retrieval index returned nothing for one study and one finding of another), and the analysis
declares the complete-case cohort (``cohort_rule = "globally-complete"``): Q and every McNemar
test use the 116 blocks scored under all four conditions, and each reported value says so.

Flawed (four defects of the analysis clause):

1. the reported Q (and its p) was computed the historical way: missing cells dropped per
   condition and columns paired by position, still labelled globally-complete with n = 116
   (``analysis-positional-join``);
2. the Holm family was adjusted over 5 pairs (one dropped after seeing the results), though the
   contract declares 6 (``analysis-family-size``);
3. one unadjusted McNemar p-value was transcribed with two digits swapped
   (``analysis-reported-differs``);
4. the pairs without ``retrieval`` were tested on all 120 blocks they share, the others on 116,
   though the family declares a fixed denominator (``analysis-denominator-varies``).
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from corpus import Planted

NAME = "keyed-analysis"
SOURCE = (
    "provgraph README 'Annotation and analysis: keyed recomputation' and 'What gets imported' "
    "(reported-cells, reported-stats); statsmodels.stats.contingency_tables.cochrans_q / mcnemar, "
    "statsmodels.stats.multitest.multipletests (https://www.statsmodels.org/stable/)"
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
        y = complete
        if flawed and "retrieval" not in (CONDITIONS[a], CONDITIONS[b]):
            y = values[:, [a, b]][~np.isnan(values[:, [a, b]]).any(axis=1)]
            a, b = 0, 1
        raw.append(pair_p(y, a, b))
        ns.append(int(y.shape[0]))
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


CONTRACT = f"""# Paired analysis of four prompting conditions (written from the README).
[project]
name = "keyed-analysis"
base_iri = "{BASE}"

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
    write(root, "provgraph.toml", CONTRACT)
    if not flawed:
        return []
    rule = ["test_variant=exact", "cohort_rule=globally-complete"]
    slip = ["name=mcnemar_p", *(f"condition={c}" for c in SLIPPED), *rule]
    return [
        Planted(
            "analysis-positional-join",
            focus(BASE, "reported", STATS, "name=cochran_q", "cohort_rule=globally-complete"),
            "Q computed from positionally paired columns, labelled globally-complete",
        ),
        Planted("analysis-family-size", focus(BASE, "family", FAMILY), "Holm over 5 pairs, 6 declared"),
        Planted("analysis-reported-differs", focus(BASE, "reported", STATS, *slip), "p with swapped digits"),
        Planted(
            "analysis-denominator-varies",
            focus(BASE, "family", FAMILY),
            "pairs without retrieval tested on 120 blocks, the others on 116",
        ),
    ]
