"""Statistic names as texts write them: a column header or a label -> the canonical name.

One table for everyone who reads a written name: the text importer (which metric a table
column holds, for the consistency checks), the statistics engine (which recomputed statistic a
cell is bound to) and ``provgraph stats``. Canonical names are the statistics engine's
(``detection_rate``, ``false_positive_rate``, ``cochran_q``...); confusion counts are ``tp``,
``fp``, ``fn``, ``tn``; sizes are ``n``, ``n_positive``, ``n_negative``.

>>> stat_name("Detection rate"), stat_name("FPR (%)"), stat_name("**F1**"), stat_name("Runs")
('detection_rate', 'false_positive_rate', 'f1', None)
>>> header_unit("FPR (%)"), header_unit("FPR")
('percent', None)
>>> stat_name("Sens.", {"sens.": "detection_rate"})
'detection_rate'
"""

from __future__ import annotations

import re

_SYNONYMS: dict[str, tuple[str, ...]] = {
    "detection_rate": (
        "detection rate",
        "detection",
        "dr",
        "sensitivity",
        "sens",
        "recall",
        "tpr",
        "true positive rate",
        "hit rate",
    ),
    "false_positive_rate": ("false positive rate", "fpr", "false alarm rate", "fall-out", "fallout"),
    "specificity": ("specificity", "spec", "tnr", "true negative rate", "selectivity"),
    "precision": ("precision", "ppv", "positive predictive value"),
    "npv": ("npv", "negative predictive value"),
    "f1": ("f1", "f1 score", "f1-score", "f-score", "f-measure", "f measure", "f1 measure"),
    "accuracy": ("accuracy", "acc", "overall accuracy", "script-level accuracy"),
    "cochran_q": ("q", "cochran q", "cochran's q", "cochrans q", "cochran's q statistic"),
    "cochran_q_p": ("cochran p", "cochran's q p", "q p"),
    "mcnemar_p": ("mcnemar p", "mcnemar's p", "mcnemar"),
    "mcnemar_p_adjusted": ("adjusted p", "p adjusted", "p (adjusted)", "holm p", "p_adj"),
    "p": ("p", "p-value", "p value"),
    "agreement_rate": ("agreement", "agreement rate"),
    "category_detection_rate": ("category detection rate", "categories detected"),
    "n": ("n", "count", "total"),
    "n_positive": ("n positive", "positives", "n flawed", "flawed"),
    "n_negative": ("n negative", "negatives", "n sound", "sound", "controls"),
    "tp": ("tp", "true positives"),
    "fp": ("fp", "false positives"),
    "fn": ("fn", "false negatives"),
    "tn": ("tn", "true negatives"),
}
#: written form (normalised) -> canonical name
NAMES: dict[str, str] = {
    written: canonical for canonical, forms in _SYNONYMS.items() for written in (canonical, *forms)
}
#: names whose values are proportions (written as 94% or 0.94)
RATES = frozenset(
    {"detection_rate", "false_positive_rate", "specificity", "precision", "npv", "f1", "accuracy",
     "agreement_rate", "category_detection_rate"}
)  # fmt: skip
#: Markup goes; an underscore (emphasis, or a snake_case name) becomes a space instead, so
#: ``detection_rate`` reads as ``detection rate`` rather than ``detectionrate``.
_MARKUP = re.compile(r"\\(?:textbf|textit|emph|mathrm|text|bf|it)\b|[*`{}$\\]")
_UNIT = re.compile(r"\(\s*%\s*\)|\[\s*%\s*\]|\bin\s+%|%$")
_TRAILING = "% .:"
#: A bracketed group read backwards, from its closing bracket: the greedy run stops at the next
#: closing bracket, so each character is read a bounded number of times however often it loops.
_GROUP_REVERSED = re.compile(r"[\])][^\])]*[\[(]")


def normal_name(written: str) -> str:
    """A written name without markup, case, a trailing unit or bracket, dots or extra spaces.

    Trailing brackets go one group at a time (``DR (%) [95% CI]`` -> ``dr``); a group is an
    opening bracket, no closing one, then a closing one (``(`` and ``]`` need not pair).
    They are matched backwards on the reversed name: a regular expression anchored at the end
    tried every opening bracket of a header against the rest of it, and a header cell of
    100,000 brackets took minutes (bench/fuzz.py).
    """
    text = _MARKUP.sub("", written.replace("\\%", "%").replace("_", " ")).strip().lower()
    text = re.sub(r"\s+", " ", text)
    reversed_text = text[::-1]
    end = len(text)
    while end:
        if text[end - 1] in _TRAILING or text[end - 1].isspace():
            end -= 1
            continue
        group = _GROUP_REVERSED.match(reversed_text, len(text) - end)
        if group is None:
            break
        end = len(text) - group.end()  # where the group opens; the spaces before it go next
    return text[:end]


def stat_name(written: str | None, declared: dict[str, str] | None = None) -> str | None:
    """The canonical statistic name a header or label writes, or None when it names none.

    ``declared`` is the contract's mapping (written header -> name), which wins; its keys are
    compared in normal form, so ``"DR"`` in the contract matches ``**DR (%)**`` in a table.
    """
    if not written:
        return None
    key = normal_name(written)
    if declared:
        for header, name in declared.items():
            if normal_name(header) == key:
                return name or None
    return NAMES.get(key) or NAMES.get(key.replace(" ", "_")) or NAMES.get(key.replace("-", " "))


def header_unit(written: str | None) -> str | None:
    """``"percent"`` when a header says its values are percentages (``FPR (%)``, ``DR in %``)."""
    if not written:
        return None
    text = _MARKUP.sub("", written.replace("\\%", "%")).strip()
    return "percent" if _UNIT.search(text) else None
