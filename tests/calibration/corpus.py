"""The calibration corpus (issue 14): whole benchmark bundles, one twin pair per realistic shape,
written by deterministic generators from each format's public documentation, not against the
rule fixtures.

Each module in ``shapes/`` defines::

    NAME = "openai-batch-vlm-png"        # the bundle's name in the table
    SOURCE = "where each file's shape comes from (documentation URL, harness code path)"

    def generate(root: Path, twin: str) -> list[Planted]:
        '''Write the ``clean`` or ``flawed`` twin into ``root`` (contract included); return the
        defects planted (none for the clean twin).'''

A clean twin is a truly sound benchmark (sound but unusual choices included); a flawed twin
plants 3 to 7 defects of different clauses, each named by the rule that must catch it and the
focus node it must report (an IRI relative to the contract's ``base_iri``).

:func:`judge` ingests a twin with the real CLI, runs the whole gate, and scores it: a planted
defect is *caught* when its rule reports a violation at its focus; on a clean twin every
``fail`` violation, every rule that could not run (outcome ``error``) and a failed gate are
false alarms. ``python tests/calibration/corpus.py`` prints the table the README's
"Calibration" section holds.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
SHAPES = HERE / "shapes"
TWINS = ("clean", "flawed")
#: The pseudonymisation secret of every calibration run (as the test suite's).
SECRET = "provgraph-calibration-secret-0123456789"


@dataclass(frozen=True)
class Planted:
    rule: str  # the rule id that must catch it
    focus: str  # the focus node, relative to the contract's base_iri
    what: str  # the defect, in a few words


@dataclass
class Verdict:
    """What the gate made of one twin."""

    shape: str
    twin: str
    gate: str
    planted: list[Planted]
    caught: list[Planted] = field(default_factory=list)
    missed: list[Planted] = field(default_factory=list)
    #: fail violations and rules that could not run, as "rule: focus: message" lines
    false_alarms: list[str] = field(default_factory=list)
    ingest_code: int = 0
    check_code: int = 0


def shapes() -> dict[str, ModuleType]:
    """Every shape module, by its NAME."""
    found = {}
    for path in sorted(SHAPES.glob("*.py")):
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(f"calibration_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[spec.name] = module  # type: ignore[union-attr]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        found[module.NAME] = module
    return found


def _provgraph(*args: str) -> tuple[int, str, str]:
    """``provgraph ARGS`` in-process (the real CLI): exit code, stdout, stderr."""
    from provgraph.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def judge(module: ModuleType, twin: str, root: Path) -> Verdict:
    """Generate ``twin`` of ``module`` into ``root``, ingest it, run the gate, score it."""
    os.environ["PROVGRAPH_SECRET"] = SECRET
    planted = module.generate(root, twin)
    base = _base_iri(root)
    ingest_code, _, ingest_err = _provgraph("-C", str(root), "ingest")
    report_file = root.parent / f"{root.name}-check.json"
    check_code, out, err = _provgraph(
        "-C", str(root), "check", "--all-violations", "--format", "json", "-o", str(report_file)
    )
    verdict = Verdict(module.NAME, twin, "error", planted, ingest_code=ingest_code, check_code=check_code)
    if not report_file.is_file():
        verdict.false_alarms.append(
            f"check wrote no report (exit {check_code}): {(err or out).strip()[:300]}"
        )
        verdict.missed = list(planted)
        return verdict
    report = json.loads(report_file.read_text(encoding="utf-8"))
    verdict.gate = report["gate"]
    seen = {
        (rule["id"], v["focus"].removeprefix(base)) for rule in report["rules"] for v in rule["violations"]
    }
    for p in planted:
        (verdict.caught if (p.rule, p.focus) in seen else verdict.missed).append(p)
    if twin == "clean":
        for rule in report["rules"]:
            if rule["outcome"] == "error":
                verdict.false_alarms.append(f"{rule['id']}: could not run: {rule['error']}")
            elif rule["severity"] == "fail":
                verdict.false_alarms += [
                    f"{rule['id']}: {v['focus'].removeprefix(base)}: {v['message']}"
                    for v in rule["violations"]
                ]
        if report["gate"] != "pass" and not verdict.false_alarms:
            verdict.false_alarms.append(f"gate {report['gate']} (exit {check_code})")
        if ingest_code != 0:
            verdict.false_alarms.append(f"ingest exit {ingest_code}: {ingest_err.strip()[:300]}")
    return verdict


def _base_iri(root: Path) -> str:
    import tomllib

    return tomllib.loads((root / "provgraph.toml").read_text(encoding="utf-8"))["project"]["base_iri"]


def table(verdicts: list[Verdict]) -> str:
    """The Markdown table of the README's "Calibration" section."""
    rows = ["| bundle | planted | caught | false alarms (clean twin) | clean gate |", "|---|---|---|---|---|"]
    by_shape: dict[str, dict[str, Verdict]] = {}
    for v in verdicts:
        by_shape.setdefault(v.shape, {})[v.twin] = v
    totals = [0, 0, 0]
    for name in sorted(by_shape):
        flawed, clean = by_shape[name].get("flawed"), by_shape[name].get("clean")
        planted = len(flawed.planted) if flawed else 0
        caught = len(flawed.caught) if flawed else 0
        alarms = len(clean.false_alarms) if clean else 0
        totals = [totals[0] + planted, totals[1] + caught, totals[2] + alarms]
        rows.append(f"| `{name}` | {planted} | {caught} | {alarms} | {clean.gate if clean else '-'} |")
    rows.append(f"| **all** ({len(by_shape)} pairs) | {totals[0]} | {totals[1]} | {totals[2]} | |")
    return "\n".join(rows)


def main() -> None:
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="provgraph-calibration-") as tmp:
        for name, module in shapes().items():
            for twin in TWINS:
                v = judge(module, twin, Path(tmp) / f"{name}-{twin}")
                verdicts.append(v)
                for p in v.missed:
                    print(f"MISSED {name}: {p.rule} at {p.focus} ({p.what})", file=sys.stderr)
                for alarm in v.false_alarms:
                    print(f"FALSE ALARM {name}: {alarm}", file=sys.stderr)
    print(table(verdicts))


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent.parent))
    main()
