"""Write an LLM-reviewer benchmark bundle (the Replication Trap format, seeds/002) with planted
provenance defects, and its clean twin.

    python examples/llm_review/generate.py              # -> examples/llm_review/out/{flawed,clean}
    python examples/llm_review/generate.py --out DIR

Deterministic (fixed seeds, fixed timestamps, no network). The bundle is what the benchmark's
harness writes, plus the contract:

- ``audit_scripts/script_01.py`` .. ``script_36.py``: 6 flaw categories x (3 flawed variants +
  3 matched controls), in an order shuffled with ``random.Random(42)``;
- ``audit_answer_key/answer_key.json``: script -> is_flawed, category, description;
- ``results/<key>_reviews.json`` for 7 conditions: Sonnet 4.6, Opus 4.6 and GPT-4o, each
  without and with the flaw taxonomy in the system prompt, and Sonnet 4.6 run 3 times (runs
  with fail votes, agreement rate and the majority verdict);
- ``models_used.json`` (the runs selected for the paper), ``plan.csv`` (one planned call per
  condition, script and run), ``results/summary.json`` (the harness's ``--compare`` metrics)
  and ``README.md`` with the results table. The contract holds no ``[[release.values]]``:
  provgraph binds every cell by its row label (the condition) and column header (the
  statistic) to the statistic it recomputes from the reviews and the answer key
  (``[release.bind]`` only leaves the Runs column unbound and states the 18 flawed scripts and
  18 controls the rates are over).

**flawed/** plants five provenance defects:

1. a failed GPT-4o call (``_error``) kept its verdict PASS, and the harness counted it: its
   detection rate reads 17/18 instead of 17/17 (``output-error-with-verdict``,
   ``analysis-reported-differs``);
2. the Opus taxonomy run recorded the baseline prompt and ``with_taxonomy: false``: the
   taxonomy never reached the model (``output-selected-run-without-results``);
3. the 3-run file's majority verdict flagged a script that only one run of three failed (the
   harness took "any FAIL" as the majority), and the summary's majority FPR followed it
   (``analysis-reported-differs``);
4. the README table keeps a stale FPR for Sonnet 4.6 + taxonomy from an earlier run, copies
   the harness's wrong values above, and writes an F1 for Claude Opus 4.6 that its own row's
   detection rate, FPR and precision at 18/18 cannot give (``analysis-claim-differs``, each
   message with the recomputed value); GPT-4o is requested by its mutable alias with no
   resolved snapshot (``model-alias-unresolved``, restrict).

**clean/** is the same benchmark with each defect repaired (the failed call retried, the
taxonomy in the prompt, a strict majority, the README written from the recomputed values,
GPT-4o pinned to a dated snapshot).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "out"
BASE_IRI = "https://example.org/replication-trap/"
SEED = 42

CATEGORIES = {
    "Data leakage": "fits a preprocessing step on the full data before the train/test split",
    "P-hacking": "tests many outcomes and reports only the significant one, uncorrected",
    "Circular validation": "selects hyperparameters on the test set and reports the same test accuracy",
    "Survivorship bias": "drops the units that failed before summarising the outcome",
    "Wrong test assumptions": "applies Student's t-test to heavily right-skewed data",
    "Pseudoreplication": "treats repeated measurements of one unit as independent observations",
}
CONTROLS = {
    "Data leakage": "fits the scaler on the training fold only",
    "P-hacking": "pre-registers one outcome and corrects the secondary ones (Holm)",
    "Circular validation": "tunes on a validation split and reports an untouched test set",
    "Survivorship bias": "keeps every unit, including failures, in the summary (intent to treat)",
    "Wrong test assumptions": "uses Mann-Whitney U on right-skewed data",
    "Pseudoreplication": "aggregates to one mean per participant before testing",
}
THEMES = ("clinical trial", "ecology survey", "materials testing", "education study", "finance panel",
          "genomics screen")  # fmt: skip

BASELINE = (
    "You are a scientific methods expert reviewing statistical analysis code for methodological soundness."
)
TAXONOMY = "\n\nThe following flaw categories may be present in some scripts:\n" + "\n".join(
    f"- {name}: {what}" for name, what in CATEGORIES.items()
)


@dataclass(frozen=True)
class Condition:
    key: str  # the results key: results/<key>_reviews.json
    display: str  # the README's row label
    provider: str
    model: str
    taxonomy: bool
    runs: int
    false_positives: int  # FAIL verdicts on the 18 controls (per run)
    misses: int  # PASS verdicts on the 18 flawed scripts


_SONNET, _OPUS = "claude-sonnet-4-6", "claude-opus-4-6"
CONDITIONS = (
    Condition("claude_sonnet_4_6", "Claude Sonnet 4.6", "sonnet", _SONNET, False, 1, 7, 0),
    Condition(
        "claude_sonnet_4_6_with_taxonomy", "Claude Sonnet 4.6 + taxonomy", "sonnet", _SONNET, True, 1, 5, 0
    ),
    Condition("claude_opus_4_6", "Claude Opus 4.6", "opus", _OPUS, False, 1, 4, 1),
    Condition("claude_opus_4_6_with_taxonomy", "Claude Opus 4.6 + taxonomy", "opus", _OPUS, True, 1, 4, 0),
    Condition("gpt_4o", "GPT-4o", "gpt4o", "gpt-4o", False, 1, 7, 0),
    Condition("gpt_4o_with_taxonomy", "GPT-4o + taxonomy", "gpt4o", "gpt-4o", True, 1, 3, 1),
    Condition(
        "claude_sonnet_4_6_3runs", "Claude Sonnet 4.6, 3 runs (majority)", "sonnet", _SONNET, False, 3, 8, 0
    ),
)
GPT_SNAPSHOT = "gpt-4o-2024-08-06"
STALE_FPR = "33%"  # Sonnet 4.6 + taxonomy, from an earlier run
#: Claude Opus 4.6's F1 as the flawed README writes it: its row's DR 94%, FPR 22% and precision
#: 81% over 18 flawed scripts and 18 controls give 17 TP, 4 FP, 1 FN, so F1 = 34/39 = 0.87
WRONG_F1 = ("claude_opus_4_6", "0.91")
METRICS = ("detection_rate", "false_positive_rate", "precision", "f1")


@dataclass(frozen=True)
class Script:
    name: str  # script_07.py
    category: str
    flawed: bool
    variant: int  # 0..2 within its category and kind
    code: str

    @property
    def stem(self) -> str:
        return self.name.removesuffix(".py")


def make_scripts() -> list[Script]:
    specs = [(cat, flawed, v) for cat in CATEGORIES for flawed in (True, False) for v in range(3)]
    random.Random(SEED).shuffle(specs)
    out = []
    for number, (cat, flawed, v) in enumerate(specs, start=1):
        theme = THEMES[(list(CATEGORIES).index(cat) + v + (3 if flawed else 0)) % len(THEMES)]
        what = CATEGORIES[cat] if flawed else CONTROLS[cat]
        code = (
            f'"""{theme.capitalize()}: {cat.lower()} {"example" if flawed else "control"} {v + 1}.\n\n'
            f'The analysis {what}.\n"""\n'
            "import numpy as np\nfrom scipy import stats\n\nnp.random.seed(42)\n"
            f"x = np.random.lognormal(mean={0.2 + 0.1 * v:.1f}, sigma=0.6, size={80 + 20 * v})\n"
            f"y = np.random.lognormal(mean={0.3 + 0.1 * v:.1f}, sigma=0.6, size={80 + 20 * v})\n"
            f"# {'planted flaw' if flawed else 'sound step'}: {what}\n"
            f"result = stats.{'ttest_ind' if flawed else 'mannwhitneyu'}(x, y)\n"
            'print(f"p = {result.pvalue:.3f}")\n'
        )
        out.append(Script(f"script_{number:02d}.py", cat, flawed, v, code))
    return out


def fp_order(scripts: list[Script]) -> list[Script]:
    """Controls in the order reviewers over-flag them: survivorship and wrong-test controls first."""
    rank = {"Survivorship bias": 0, "Wrong test assumptions": 1, "Circular validation": 2, "P-hacking": 3,
            "Data leakage": 4, "Pseudoreplication": 5}  # fmt: skip
    controls = [s for s in scripts if not s.flawed]
    return sorted(controls, key=lambda s: (rank[s.category], s.variant, s.name))


def verdicts(cond: Condition, scripts: list[Script]) -> list[dict[str, str]]:
    """One {script: verdict} dict per run."""
    flagged = {s.name for s in fp_order(scripts)[: cond.false_positives]}
    missed = {s.name for s in scripts if s.flawed and s.category == "Survivorship bias" and s.variant == 2}
    missed = set(sorted(missed)[: cond.misses])
    base = {
        s.name: ("FAIL" if (s.flawed and s.name not in missed) or s.name in flagged else "PASS")
        for s in scripts
    }
    runs = [dict(base) for _ in range(cond.runs)]
    if cond.runs == 3:
        # two split votes: the 9th control is flagged by two runs of three (majority FAIL), the
        # 10th by one run only (majority PASS)
        order = fp_order(scripts)
        runs[2][order[8].name] = "PASS"
        runs[0][order[8].name] = runs[1][order[8].name] = "FAIL"
        runs[1][order[9].name] = "FAIL"
    return runs


def majority(votes: list[str]) -> str:
    fails = votes.count("FAIL")
    return "FAIL" if fails > len(votes) - fails else "PASS"


def review(s: Script, verdict: str, cond: Condition, run: int) -> dict:
    correct = (verdict == "FAIL") == s.flawed
    confidence = "HIGH" if verdict == "FAIL" or (s.variant + run) % 3 else "MEDIUM"
    flaw = (
        (CATEGORIES[s.category] if s.flawed else f"possible {s.category.lower()}")
        if verdict == "FAIL"
        else None
    )
    raw = json.dumps({"verdict": verdict, "flaw_identified": flaw, "confidence": confidence})
    return {
        "script": s.name,
        "verdict": verdict,
        "flaw_identified": flaw,
        "confidence": confidence,
        "correct": correct,
        "raw_response": raw,
        "latency_ms": 1800 + 37 * int(s.stem[-2:]) + 11 * run,
        "usage": {"input_tokens": 600 + len(s.code) // 4, "output_tokens": 40 + (30 if flaw else 0)},
    }


# --- metrics the harness reports (plain Python here; provgraph recomputes them) ------------


def metrics(verdict: dict[str, str], scripts: list[Script]) -> dict[str, float]:
    tp = sum(1 for s in scripts if s.flawed and verdict.get(s.name) == "FAIL")
    fn = sum(1 for s in scripts if s.flawed and verdict.get(s.name) == "PASS")
    fp = sum(1 for s in scripts if not s.flawed and verdict.get(s.name) == "FAIL")
    tn = sum(1 for s in scripts if not s.flawed and verdict.get(s.name) == "PASS")
    return {
        "detection_rate": tp / (tp + fn),
        "false_positive_rate": fp / (fp + tn),
        "precision": tp / (tp + fp),
        "f1": 2 * tp / (2 * tp + fp + fn),
    }


def shown(metric: str, value: float) -> str:
    """How the README writes a metric: rates as whole percentages, F1 with two decimals."""
    return f"{value:.2f}" if metric == "f1" else f"{100 * value:.0f}%"


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def generate(root: Path, twin: str) -> Path:
    """Write one twin (``flawed`` or ``clean``) into ``root`` (replaced if it exists)."""
    if twin not in ("flawed", "clean"):
        raise ValueError(f"twin must be flawed or clean, got {twin!r}")
    flawed = twin == "flawed"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    scripts = make_scripts()
    for s in scripts:
        write(root, f"audit_scripts/{s.name}", s.code)
    key = {
        s.name: {
            "is_flawed": s.flawed,
            "category": s.category,
            "description": CATEGORIES[s.category] if s.flawed else f"control: {CONTROLS[s.category]}",
        }
        for s in scripts
    }
    write(root, "audit_answer_key/answer_key.json", json.dumps(key, indent=2) + "\n")

    plan = ["call_id,case,condition,replicate"]
    summary: list[dict] = []
    table: dict[str, dict[str, float]] = {}
    misprinted: dict[tuple[str, str], str] = {}  # what the flawed README writes instead
    errored = next(s for s in scripts if s.flawed and s.category == "P-hacking" and s.variant == 0)
    for cond in CONDITIONS:
        runs = verdicts(cond, scripts)
        model = GPT_SNAPSHOT if cond.key.startswith("gpt") and not flawed else cond.model
        taxonomy_recorded = cond.taxonomy and not (flawed and cond.key == "claude_opus_4_6_with_taxonomy")
        payload: dict = {
            "model": model,
            "display_name": cond.display.split(",")[0].removesuffix(" + taxonomy"),
            "with_taxonomy": taxonomy_recorded,
            "n_runs": cond.runs,
            "timestamp": f"2026-04-0{4 + CONDITIONS.index(cond) % 3}T13:40:00+00:00",
            "system_prompt": BASELINE + (TAXONOMY if taxonomy_recorded else ""),
            "reviews": [],
        }
        counted = [dict(r) for r in runs]  # what the harness scored
        for s in scripts:
            for run in range(1, cond.runs + 1):
                plan.append(f"{cond.key}--{s.stem}--{run},{s.stem},{cond.key},{run}")
            if cond.runs == 1:
                entry = review(s, runs[0][s.name], cond, 1)
                if flawed and cond.key == "gpt_4o" and s.name == errored.name:
                    # the call failed; the harness kept its default verdict and scored it
                    entry = {
                        "script": s.name,
                        "verdict": "PASS",
                        "flaw_identified": None,
                        "confidence": "LOW",
                        "_error": "litellm.RateLimitError: 429 rate limit exceeded, retry after 20s",
                    }
                    counted[0][s.name] = "PASS"
                payload["reviews"].append(entry)
                continue
            votes = [r[s.name] for r in runs]
            fails = votes.count("FAIL")
            written = "FAIL" if flawed and fails >= 1 else majority(votes)  # flawed: "any FAIL"
            counted_majority = written
            payload["reviews"].append(
                {
                    "script": s.name,
                    "verdict": written,
                    "fail_votes": fails,
                    "agreement_rate": round(max(fails, 3 - fails) / 3, 3),
                    "runs": [review(s, v, cond, i) for i, v in enumerate(votes, start=1)],
                }
            )
            counted[0][s.name] = counted_majority
        write(root, f"results/{cond.key}_reviews.json", json.dumps(payload, indent=2) + "\n")
        scored = metrics(counted[0], scripts)
        truth = metrics(
            {s.name: majority([r[s.name] for r in runs]) for s in scripts}
            if cond.runs > 1
            else {
                n: v
                for n, v in runs[0].items()
                if not (flawed and cond.key == "gpt_4o" and n == errored.name)
            },
            scripts,
        )
        variant = {"test_variant": "majority-vote"} if cond.runs > 1 else {}
        for metric in METRICS:
            summary.append(
                {"name": metric, "condition": cond.key, **variant, "value": round(scored[metric], 3)}
            )
        table[cond.key] = truth
        for metric in METRICS:
            if shown(metric, scored[metric]) != shown(metric, truth[metric]):
                misprinted[(cond.key, metric)] = shown(metric, scored[metric])
        if flawed and cond.key == "claude_sonnet_4_6_with_taxonomy":
            misprinted[(cond.key, "false_positive_rate")] = STALE_FPR
        if flawed and cond.key == WRONG_F1[0]:
            misprinted[(cond.key, "f1")] = WRONG_F1[1]
    write(root, "plan.csv", "\n".join(plan) + "\n")
    write(root, "results/summary.json", json.dumps({"statistics": summary}, indent=2) + "\n")

    models = [
        {
            "provider": cond.provider,
            "model_id": GPT_SNAPSHOT if cond.key.startswith("gpt") and not flawed else cond.model,
            "display_name": cond.display.split(",")[0].removesuffix(" + taxonomy"),
            "with_taxonomy": cond.taxonomy,
            "n_runs": cond.runs,
        }
        for cond in CONDITIONS
    ]
    write(
        root,
        "models_used.json",
        json.dumps(
            {"selected_at": "2026-04-04T13:37:33+00:00", "self_review_included": False, "models": models},
            indent=2,
        )
        + "\n",
    )

    # README: the results table as written (the flawed twin keeps the harness's and a stale value)
    rows = []
    for cond in CONDITIONS:
        cells = [misprinted.get((cond.key, m), shown(m, table[cond.key][m])) if flawed else
                 shown(m, table[cond.key][m]) for m in METRICS]  # fmt: skip
        rows.append(f"| {cond.display} | {cond.runs} | " + " | ".join(cells) + " |")
    readme = (
        "# The Replication Trap: LLM reviewers on flawed statistical scripts\n\n"
        "36 scripts (6 flaw categories, each with 3 flawed variants and 3 matched controls) were\n"
        "reviewed by Claude Sonnet 4.6, Claude Opus 4.6 and GPT-4o, with and without the flaw taxonomy\n"
        "in the prompt.\n\n"
        "| Condition | Runs | Detection rate | FPR | Precision | F1 |\n|---|---|---|---|---|---|\n"
        + "\n".join(rows)
        + "\n\nRates are over the 18 flawed scripts (detection) and the 18 controls (FPR).\n"
    )
    write(root, "README.md", readme)

    gpt = "gpt-4o" if flawed else GPT_SNAPSHOT
    write(
        root,
        "provgraph.toml",
        f"""# The contract of the LLM-reviewer benchmark ({twin} twin).
[project]
name = "replication-trap"
base_iri = "{BASE_IRI}"

[plan]
file = "plan.csv"

[models.sonnet]
requested = "claude-sonnet-4-6"
alias = false

[models.opus]
requested = "claude-opus-4-6"
alias = false

[models.gpt4o]
requested = "{gpt}"
alias_ok = true

[analysis]
bootstrap = {{ resamples = 1000, seed = 42 }}

[release]
name = "replication-trap"
version = "1.0.0"
include = ["README.md", "results/*", "audit_scripts/*", "audit_answer_key/*"]
texts = ["README.md"]

[release.bind]
columns = {{ Runs = "" }}   # how many runs: no statistic
positives = 18
negatives = 18

[[release.entities]]
key = "sonnet"
canonical = "Claude Sonnet 4.6"

[[release.entities]]
key = "opus"
canonical = "Claude Opus 4.6"

[[release.entities]]
key = "gpt-4o"
canonical = "GPT-4o"
variants = ["GPT-4", "gpt4o"]
""",
    )
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"target folder (default: {DEFAULT_OUT})"
    )
    parser.add_argument("--twin", choices=["flawed", "clean", "both"], default="both")
    args = parser.parse_args(argv)
    for twin in ("flawed", "clean") if args.twin == "both" else (args.twin,):
        print(f"wrote {generate(args.out / twin, twin)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
