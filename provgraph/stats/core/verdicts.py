"""Reviewer-benchmark metrics: a reviewer says FAIL (flawed) or PASS for each script; the
answer key says which scripts are flawed and which flaw category (cluster) each belongs to.

Verdicts are coded 1 = FAIL, 0 = PASS, -1 = no verdict (a failed or unparsable call: it is
left out of every denominator and counted separately). Every metric is a ratio of sums, so one
cluster bootstrap over categories gives intervals for all of them:

* detection rate (sensitivity) TP / (TP + FN), false-positive rate FP / (FP + TN),
  precision TP / (TP + FP), F1 2 TP / (2 TP + FP + FN), accuracy (TP + TN) / N;
* category-level detection (the benchmark's primary metric): a category is detected when more
  than half of its flawed variants were flagged FAIL (a variant with no verdict counts as not
  flagged); the rate is detected categories / categories;
* majority vote over runs per script: FAIL when more than half of the script's verdicts are
  FAIL, PASS when fewer, no verdict on a tie.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from provgraph.stats.core.cluster import BootstrapResult, cluster_bootstrap_ratios

FAIL, PASS, NONE = 1, 0, -1
METRICS = ("detection_rate", "false_positive_rate", "precision", "f1", "accuracy")


@dataclass(frozen=True)
class Confusion:
    tp: int
    fn: int
    fp: int
    tn: int
    missing: int

    @property
    def n(self) -> int:
        return self.tp + self.fn + self.fp + self.tn


def confusion(verdict: np.ndarray, flawed: np.ndarray) -> Confusion:
    verdict = np.asarray(verdict)
    flawed = np.asarray(flawed, dtype=bool)
    fail, ok = verdict == FAIL, verdict == PASS
    return Confusion(
        int((fail & flawed).sum()),
        int((ok & flawed).sum()),
        int((fail & ~flawed).sum()),
        int((ok & ~flawed).sum()),
        int((verdict == NONE).sum()),
    )


def _ratio_parts(tp, fn, fp, tn) -> tuple[np.ndarray, np.ndarray]:
    """Numerators and denominators of the five metrics (columns in METRICS order)."""
    tp, fn, fp, tn = (np.asarray(x, dtype=np.float64) for x in (tp, fn, fp, tn))
    num = np.stack([tp, fp, tp, 2 * tp, tp + tn], axis=-1)
    den = np.stack([tp + fn, fp + tn, tp + fp, 2 * tp + fp + fn, tp + fn + fp + tn], axis=-1)
    return num, den


def metrics(c: Confusion) -> dict[str, tuple[float, int]]:
    """``{metric: (value, denominator)}``; the value is NaN when its denominator is 0."""
    num, den = _ratio_parts(c.tp, c.fn, c.fp, c.tn)
    out = {}
    for name, a, b in zip(METRICS, num, den, strict=True):
        out[name] = (float(a / b) if b else float("nan"), int(b))
    return out


@dataclass(frozen=True)
class Votes:
    fail_votes: np.ndarray  # per script
    valid: np.ndarray  # verdicts that exist
    majority: np.ndarray  # FAIL / PASS / NONE
    agreement: np.ndarray  # share of valid verdicts that agree with the majority (NaN if none)


def majority_vote(script: np.ndarray, verdict: np.ndarray, n_scripts: int) -> Votes:
    """Per-script FAIL votes, valid votes and majority verdict over runs."""
    script = np.asarray(script)
    verdict = np.asarray(verdict)
    valid = np.bincount(script, weights=(verdict != NONE), minlength=n_scripts).astype(np.int64)
    fails = np.bincount(script, weights=(verdict == FAIL), minlength=n_scripts).astype(np.int64)
    passes = valid - fails
    majority = np.where(fails > passes, FAIL, np.where(passes > fails, PASS, NONE))
    with np.errstate(invalid="ignore", divide="ignore"):
        agreement = np.where(valid > 0, np.maximum(fails, passes) / np.maximum(valid, 1), np.nan)
    return Votes(fails, valid, majority, agreement)


def category_detection(verdict: np.ndarray, flawed: np.ndarray, category: np.ndarray) -> np.ndarray:
    """1/0 per category code (0..max): were more than half its flawed variants flagged FAIL?

    One verdict per script (a single run or the majority vote). Categories without flawed
    scripts get -1.
    """
    verdict = np.asarray(verdict)
    flawed = np.asarray(flawed, dtype=bool)
    category = np.asarray(category)
    size = int(category.max()) + 1 if category.size else 0
    variants = np.bincount(category, weights=flawed, minlength=size)
    flagged = np.bincount(category, weights=flawed & (verdict == FAIL), minlength=size)
    return np.where(variants > 0, (flagged > variants / 2.0).astype(np.int64), -1)


@dataclass(frozen=True)
class Summary:
    """Every reviewer metric for one set of verdicts (one per script), with cluster CIs."""

    confusion: Confusion
    values: dict[str, tuple[float, int]]  # METRICS + category_detection_rate
    categories: int
    detected: int
    ci: BootstrapResult | None


def summarise(
    verdict: np.ndarray,
    flawed: np.ndarray,
    category: np.ndarray,
    resamples: int,
    seed: np.random.SeedSequence | int,
    level: float = 0.95,
) -> Summary:
    """Metrics for verdicts aligned with ``flawed`` and ``category`` (one row per review).

    Intervals resample categories (clusters) with replacement; column order is METRICS then
    category_detection_rate.
    """
    verdict = np.asarray(verdict)
    flawed = np.asarray(flawed, dtype=bool)
    category = np.asarray(category)
    c = confusion(verdict, flawed)
    values = metrics(c)
    size = int(category.max()) + 1 if category.size else 0
    fail, ok = verdict == FAIL, verdict == PASS
    per = [
        np.bincount(category, weights=m, minlength=size)
        for m in (fail & flawed, ok & flawed, fail & ~flawed, ok & ~flawed)
    ]
    num, den = _ratio_parts(*per)
    detected = category_detection(verdict, flawed, category)
    has = detected >= 0
    cat_num = np.where(has, detected, 0).astype(np.float64)
    cat_den = has.astype(np.float64)
    values["category_detection_rate"] = (
        float(cat_num.sum() / cat_den.sum()) if cat_den.sum() else float("nan"),
        int(cat_den.sum()),
    )
    ci = None
    if resamples and size:
        ci = cluster_bootstrap_ratios(
            np.concatenate([num, cat_num[:, None]], axis=1),
            np.concatenate([den, cat_den[:, None]], axis=1),
            resamples,
            seed,
            level,
        )
    return Summary(c, values, int(cat_den.sum()), int(cat_num.sum()), ci)


def accuracy_by_tier(
    verdict: np.ndarray, flawed: np.ndarray, tier: np.ndarray
) -> dict[str, tuple[int, int, int]]:
    """``{tier: (reviews, correct, false positives)}`` over reviews with a verdict."""
    verdict = np.asarray(verdict)
    flawed = np.asarray(flawed, dtype=bool)
    tier = np.asarray(tier, dtype=object)
    out = {}
    has = verdict != NONE
    correct = ((verdict == FAIL) & flawed) | ((verdict == PASS) & ~flawed)
    fp = (verdict == FAIL) & ~flawed
    for name in sorted({t for t in tier[has] if t}):
        sel = has & (tier == name)
        out[str(name)] = (int(sel.sum()), int((correct & sel).sum()), int((fp & sel).sum()))
    return out
