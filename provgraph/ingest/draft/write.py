"""The draft contract's text and its frozen ``plan.csv``, from a :class:`~.infer.Draft`.

Every section the draft puts in force is one the artifacts ground; each carries a ``confirm``
comment saying what the user must check. Sections the artifacts only hint at (the cohort's
allowed splits and views, the release registry) are written commented out: a guessed rule set
would pass or fail for the wrong reason.
"""

from __future__ import annotations

import csv
import io

from provgraph.ingest.draft.infer import Draft

PLAN_FILE = "plan.csv"
PLAN_WHY = (
    "# The plan is frozen from intent (what was requested), never from outputs: a plan inferred\n"
    "# from outputs hides the missing ones, and the gate could no longer see a call that never ran.\n"
)


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _bare(key: str) -> str:
    return key if key.replace("-", "").replace("_", "").isalnum() else _q(key)


def plan_csv(draft: Draft) -> str:
    """The frozen plan as CSV text (``call_id, case, condition, replicate``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["call_id", "case", "condition", "replicate"])
    writer.writerows(draft.plan_rows)
    return buffer.getvalue()


def contract_text(draft: Draft, name: str, base_iri: str) -> str:
    """The commented draft ``provgraph.toml``."""
    out = [
        "# provgraph contract DRAFTED by `provgraph init` from the artifacts in this folder.",
        "# Every section below says where it came from; lines marked `confirm` are guesses.",
        "",
        "[project]",
        f"name = {_q(name)}",
        f"base_iri = {_q(base_iri)}   # confirm: an IRI your project controls",
        "",
    ]
    out += _plan(draft) + _conditions(draft) + _models(draft) + _cohort(draft) + _release(draft)
    return "\n".join(out).rstrip("\n") + "\n"


def _plan(draft: Draft) -> list[str]:
    if draft.plan_file:
        return [f"# from {draft.plan_source}", "[plan]", f"file = {_q(draft.plan_file)}", ""]
    if draft.plan_source and not draft.plan_rows:  # a harness log that states its own plan
        return [f"# from {draft.plan_source}", "[plan]", ""]
    if draft.plan_rows:
        n = len(draft.plan_rows)
        return [
            *PLAN_WHY.splitlines(),
            f"# {PLAN_FILE}: {n} calls, from {draft.plan_source}.",
            "# confirm: nothing you meant to run is absent from it.",
            "[plan]",
            f"file = {_q(PLAN_FILE)}",
            "",
        ]
    return ["# [plan]   # could not infer: see what `provgraph init` printed", '# file = "plan.csv"', ""]


def _conditions(draft: Draft) -> list[str]:
    if not draft.conditions:
        return []
    out = [
        "# Conditions: the plan's condition keys. Conditions of one model are levels of the prompt:",
        "# the draft says their executed prompts must differ. confirm: that is what you meant.",
    ]
    for condition, model in sorted(draft.conditions.items()):
        peers = sorted(c for c, m in draft.conditions.items() if c != condition and m == model and m)
        later = [p for p in peers if p > condition]
        out.append(f"[conditions.{_bare(condition)}]")
        if later:
            out.append("differs_from = [" + ", ".join(_q(p) for p in later) + "]")
        if model:
            out.append(f"model = {_q(model)}")
    return [*out, ""]


def _models(draft: Draft) -> list[str]:
    out: list[str] = []
    aliases = set(draft.aliases())
    for key, requested in sorted(draft.models.items()):
        out += [f"[models.{_bare(key)}]", f"requested = {_q(requested)}   # as the requests name it"]
        if key in aliases:
            out.append(
                "# confirm: a mutable alias (no date or version pin); say `alias_ok = true` if each"
                " call records the snapshot that answered, or `alias = false` if it is pinned"
            )
        out.append("")
    return out


def _cohort(draft: Draft) -> list[str]:
    if not draft.cohort_files:
        return []
    manifest = next((f for f in draft.cohort_files if "cohort" in f.rsplit("/", 1)[-1]), None)
    return [
        "# Cohort tables found: " + ", ".join(draft.cohort_files) + ".",
        "# confirm, then uncomment: which splits and views the protocol admits is intent, not data.",
        "# [cohort]",
        f"# manifest = {_q(manifest or 'cohort.csv')}",
        '# allowed_splits = ["test"]',
        '# allowed_views = ["PA", "AP"]',
        "",
    ]


def _release(draft: Draft) -> list[str]:
    if not draft.texts:
        return []
    return [
        "# Release texts found. confirm, then uncomment and register the reported values and names",
        "# ([[release.values]], [[release.entities]]; `provgraph stats --all` lists the statistics).",
        "# [release]",
        '# name = "..."',
        '# version = "..."',
        "# texts = [" + ", ".join(_q(t) for t in draft.texts) + "]",
        "",
    ]


def sections_to_confirm(draft: Draft) -> list[str]:
    """The sections the user must confirm, for the summary ``init`` prints."""
    names = ["[project] base_iri"]
    if draft.plan_rows:
        names.append(f"[plan] ({PLAN_FILE} frozen from {draft.plan_source})")
    if draft.conditions:
        names.append("[conditions] (which conditions must differ)")
    if draft.aliases():
        names.append("[models] aliases: " + ", ".join(draft.models[k] for k in draft.aliases()))
    if draft.cohort_files:
        names.append("[cohort] (commented out: allowed splits and views)")
    if draft.texts:
        names.append("[release] (commented out: values and names to register)")
    return names
