"""Reviewer-benchmark statistics from ``pg:Review`` and ``pg:AnswerKeyEntry`` nodes.

Per condition: every metric for each run on its own (``single-run``), and with several runs
also over all runs (``pooled-runs``) and on the per-script majority vote (``majority-vote``),
each with a cluster-bootstrap interval resampling flaw categories; the per-script vote counts;
and accuracy by confidence tier. Each statistic derives from a ``pg:ReviewSet`` whose members
are exactly the reviews (with a verdict) and answer-key entries it used.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from provgraph.rdf.terms import IRI, mint
from provgraph.stats.core import verdicts
from provgraph.stats.core.cluster import seed_for
from provgraph.stats.query import PREFIXES, key_of
from provgraph.stats.statistic import Stat, bootstrap_settings
from provgraph.store.base import Store

METRIC_METHOD = {
    "detection_rate": "flawed scripts flagged FAIL / flawed scripts with a verdict",
    "false_positive_rate": "sound scripts flagged FAIL / sound scripts with a verdict",
    "precision": "FAIL verdicts on flawed scripts / all FAIL verdicts",
    "f1": "2 TP / (2 TP + FP + FN)",
    "accuracy": "correct verdicts / verdicts",
    "category_detection_rate": "categories with more than half of their flawed variants flagged FAIL"
    " / categories",
}
VARIANT_TEXT = {
    "single-run": "one run",
    "pooled-runs": "all runs pooled (reviews as units)",
    "majority-vote": "majority vote of the runs per script",
}


@dataclass
class ReviewSet:
    iri: IRI
    members: list[str] = field(default_factory=list)


@dataclass
class ReviewResults:
    stats: list[Stat]
    sets: list[ReviewSet]
    notes: list[str]


@dataclass
class _Context:
    """The answer key as arrays (scripts in key order) and the bootstrap settings."""

    base: str
    key: dict[str, tuple[str, bool, str]]  # script -> (entry IRI, flawed, category)
    resamples: int
    seed: int
    level: float
    scripts: list[str] = field(init=False)
    script_code: dict[str, int] = field(init=False)
    flawed: np.ndarray = field(init=False)
    category: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.scripts = sorted(self.key)
        self.script_code = {s: i for i, s in enumerate(self.scripts)}
        categories = sorted({v[2] for v in self.key.values()})
        category_code = {c: i for i, c in enumerate(categories)}
        self.flawed = np.array([self.key[s][1] for s in self.scripts])
        self.category = np.array([category_code[self.key[s][2]] for s in self.scripts])

    def summary(self, cond: str, variant: str, run: int | None, idx, verdict, rset: ReviewSet) -> list[Stat]:
        """Every metric of the verdicts ``verdict`` on scripts ``idx``."""
        return _summary(
            cond, variant, run, verdict, self.flawed[idx], self.category[idx], rset, *self.bootstrap
        )

    @property
    def bootstrap(self) -> tuple[int, int, float]:
        return self.resamples, self.seed, self.level


#: condition -> run -> script -> (review IRI, verdict code, confidence tier)
Runs = dict[int, dict[str, tuple[str, int, str]]]


def reviewer_statistics(store: Store, base: str, analysis: dict) -> ReviewResults | None:
    """Reviewer statistics per condition, or None when the graph holds no reviews."""
    reviews = store.select(
        PREFIXES
        + """SELECT ?review ?case ?condition ?replicate ?verdict ?confidence WHERE {
               ?review a pg:Review ; pg:case ?case ; pg:condition ?condition .
               OPTIONAL { ?review pg:replicate ?replicate } OPTIONAL { ?review pg:verdict ?verdict }
               OPTIONAL { ?review pg:confidence ?confidence } }"""
    )
    if not reviews:
        return None
    key = _read_answer_key(store, base)
    if not key:
        return ReviewResults(
            [], [], ["reviews found but no answer key (pg:AnswerKeyEntry): no reviewer statistics"]
        )
    notes: list[str] = []
    by_condition, unkeyed = _by_condition(reviews, base, key)
    if unkeyed:
        notes.append(f"{unkeyed} review(s) of scripts the answer key does not list are left out")
    ctx = _Context(base, key, *bootstrap_settings(analysis))
    stats: list[Stat] = []
    sets: list[ReviewSet] = []
    for cond in sorted(by_condition):
        runs = by_condition[cond]
        stats += _run_stats(ctx, cond, runs, sets)
        if len(runs) > 1:
            stats += _pooled_stats(ctx, cond, runs, sets)
        stats += _tier_stats(ctx, cond, runs, sets)
    return ReviewResults(stats, sets, notes)


def _read_answer_key(store: Store, base: str) -> dict[str, tuple[str, bool, str]]:
    """Script (case key) -> (answer-key entry IRI, flawed, flaw category)."""
    entries = store.select(
        PREFIXES
        + """SELECT ?entry ?case ?flawed ?category WHERE {
               ?entry a pg:AnswerKeyEntry ; pg:case ?case ; pg:isFlawed ?flawed ; pg:category ?category }"""
    )
    key: dict[str, tuple[str, bool, str]] = {}
    for r in entries:
        case = key_of(r["case"].value, base, "case")  # type: ignore[union-attr]
        key[case] = (r["entry"].value, r["flawed"].value == "true", r["category"].value)  # type: ignore[union-attr]
    return key


def _by_condition(reviews, base: str, key: dict) -> tuple[dict[str, Runs], int]:
    """Reviews of scripts in the key by condition and run; the count of the others."""
    by_condition: dict[str, Runs] = defaultdict(lambda: defaultdict(dict))
    unkeyed = 0
    for r in reviews:
        case = key_of(r["case"].value, base, "case")  # type: ignore[union-attr]
        if case not in key:
            unkeyed += 1
            continue
        cond = key_of(r["condition"].value, base, "condition")  # type: ignore[union-attr]
        run = int(r["replicate"].value) if r["replicate"] else 1  # type: ignore[union-attr]
        verdict = r["verdict"].value.strip().upper() if r["verdict"] else ""  # type: ignore[union-attr]
        code = verdicts.FAIL if verdict == "FAIL" else verdicts.PASS if verdict == "PASS" else verdicts.NONE
        confidence = r["confidence"].value.strip().upper() if r["confidence"] else ""  # type: ignore[union-attr]
        by_condition[cond][run][case] = (r["review"].value, code, confidence)  # type: ignore[union-attr]
    return by_condition, unkeyed


def _run_stats(ctx: _Context, cond: str, runs: Runs, sets: list[ReviewSet]) -> list[Stat]:
    """Every metric of each run on its own."""
    stats: list[Stat] = []
    for run in sorted(runs):
        chosen = runs[run]
        idx = np.array([ctx.script_code[s] for s in chosen], dtype=np.int64)
        verdict = np.array([chosen[s][1] for s in chosen], dtype=np.int64)
        rset = _set(ctx.base, cond, "single-run", run, [chosen[s] for s in chosen], ctx.key, list(chosen))
        sets.append(rset)
        stats += ctx.summary(cond, "single-run", run, idx, verdict, rset)
    return stats


def _pooled_stats(ctx: _Context, cond: str, runs: Runs, sets: list[ReviewSet]) -> list[Stat]:
    """Every metric over all runs pooled and on the majority vote, and the per-script votes."""
    all_rows = [(s, run, v) for run, chosen in runs.items() for s, v in chosen.items()]
    idx = np.array([ctx.script_code[s] for s, _, _ in all_rows], dtype=np.int64)
    verdict = np.array([v[1] for _, _, v in all_rows], dtype=np.int64)
    rset = _set(
        ctx.base, cond, "pooled-runs", None, [v for _, _, v in all_rows], ctx.key, [s for s, _, _ in all_rows]
    )
    sets.append(rset)
    stats = ctx.summary(cond, "pooled-runs", None, idx, verdict, rset)
    votes = verdicts.majority_vote(idx, verdict, len(ctx.scripts))
    present = np.flatnonzero(np.bincount(idx, minlength=len(ctx.scripts)) > 0)
    stats += ctx.summary(cond, "majority-vote", None, present, votes.majority[present], rset)
    for p in present:
        case = ctx.scripts[int(p)]
        per_script = ReviewSet(mint(ctx.base, "review-set", cond, "script", case))
        per_script.members = [
            runs[run][case][0] for run in runs if case in runs[run] and runs[run][case][1] != verdicts.NONE
        ]
        per_script.members.append(ctx.key[case][0])
        sets.append(per_script)
        stats += _vote_stats(votes, int(p), cond, case, per_script)
    return stats


def _vote_stats(votes: verdicts.Votes, p: int, cond: str, case: str, per_script: ReviewSet) -> list[Stat]:
    """The vote counts of script ``p``."""
    majority = votes.majority[p]
    fail = 1.0 if majority == verdicts.FAIL else 0.0 if majority == verdicts.PASS else float("nan")
    n = int(votes.valid[p])
    return [
        Stat(name, value, text, n=n, conditions=(cond,), case=case, inputs=(per_script.iri,))
        for name, value, text in (
            ("fail_votes", float(votes.fail_votes[p]), "runs with a FAIL verdict"),
            (
                "agreement_rate",
                float(votes.agreement[p]),
                "share of the runs' verdicts that agree with the majority",
            ),
            (
                "majority_verdict_fail",
                fail,
                "1 when more than half of the runs said FAIL, 0 when fewer, undefined on a tie",
            ),
        )
    ]


def _tier_stats(ctx: _Context, cond: str, runs: Runs, sets: list[ReviewSet]) -> list[Stat]:
    """Accuracy by confidence tier over every review of the condition, and reviews without a verdict."""
    stats: list[Stat] = []
    all_rows = [(s, v) for chosen in runs.values() for s, v in chosen.items()]
    idx = np.array([ctx.script_code[s] for s, _ in all_rows], dtype=np.int64)
    verdict = np.array([v[1] for _, v in all_rows], dtype=np.int64)
    tiers = np.array([v[2] for _, v in all_rows], dtype=object)
    for tier, (n, correct, fps) in verdicts.accuracy_by_tier(verdict, ctx.flawed[idx], tiers).items():
        tset = ReviewSet(mint(ctx.base, "review-set", cond, "confidence", tier))
        tset.members = [v[0] for _, v in all_rows if v[2] == tier and v[1] != verdicts.NONE]
        tset.members += sorted({ctx.key[s][0] for s, v in all_rows if v[2] == tier and v[1] != verdicts.NONE})
        sets.append(tset)
        common = {"n": n, "variant": "by-confidence", "conditions": (cond,), "confidence": tier}
        stats.append(
            Stat(
                "accuracy",
                correct / n,
                f"correct verdicts / verdicts given with {tier} confidence",
                inputs=(tset.iri,),
                **common,  # type: ignore[arg-type]
            )
        )
        stats.append(
            Stat(
                "false_positive_count",
                float(fps),
                f"FAIL verdicts on sound scripts given with {tier} confidence",
                inputs=(tset.iri,),
                **common,  # type: ignore[arg-type]
            )
        )
    missing = int((verdict == verdicts.NONE).sum())
    stats.append(
        Stat(
            "reviews_without_verdict",
            float(missing),
            "reviews whose call failed or could not be parsed",
            n=int(verdict.size),
            conditions=(cond,),
        )
    )
    return stats


def _set(base, cond, variant, run, values, key, scripts) -> ReviewSet:
    keys = [cond, variant] + ([f"run={run}"] if run is not None else [])
    rset = ReviewSet(mint(base, "review-set", *keys))
    rset.members = [v[0] for v in values if v[1] != verdicts.NONE]
    rset.members += sorted({key[s][0] for s, v in zip(scripts, values, strict=True) if v[1] != verdicts.NONE})
    return rset


def _summary(cond, variant, run, verdict, flawed, category, rset, resamples, seed, level) -> list[Stat]:
    summary = verdicts.summarise(
        verdict, flawed, category, resamples, seed_for(seed, cond, variant, run), level
    )
    out = []
    where = VARIANT_TEXT[variant] + (f" {run}" if run is not None else "")
    names = [*verdicts.METRICS, "category_detection_rate"]
    for col, name in enumerate(names):
        value, n = summary.values[name]
        common = {"variant": variant, "replicate": run, "conditions": (cond,), "inputs": (rset.iri,)}
        out.append(Stat(name, value, f"{METRIC_METHOD[name]}; {where}", n=n, **common))  # type: ignore[arg-type]
        if summary.ci is not None:
            for suffix, bound in (("ci_low", summary.ci.low[col]), ("ci_high", summary.ci.high[col])):
                out.append(
                    Stat(
                        f"{name}_{suffix}",
                        float(bound),
                        f"{level:.0%} percentile interval, cluster bootstrap resampling flaw categories "
                        f"({resamples} resamples, seed {seed}); {where}",
                        n=n,
                        cluster="category",
                        cluster_count=summary.ci.clusters,
                        resamples=resamples,
                        seed=seed,
                        level=level,
                        **common,
                    )  # type: ignore[arg-type]
                )
    return out
