"""The gate on whole benchmark bundles it was not written for (issue 14): sensitivity and
specificity over the calibration corpus (see ``corpus.py``), and the README's table of both.

Sensitivity: every defect planted in a flawed twin is reported by its intended rule at its
focus. Specificity: every clean twin's gate passes, with no ``fail`` violation and no rule that
could not run. A false alarm counts as much as a miss.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # the corpus harness lives beside this test, not in a package

README = Path(__file__).resolve().parents[2] / "README.md"
SHAPES = corpus.shapes()


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict[tuple[str, str], corpus.Verdict]:
    """Every twin of every shape, judged once by the real CLI (about 25 s)."""
    out = {}
    for name, module in SHAPES.items():
        for twin in corpus.TWINS:
            out[name, twin] = corpus.judge(module, twin, tmp_path_factory.mktemp(name) / twin)
    return out


def test_the_corpus_is_large_enough() -> None:
    assert len(SHAPES) >= 12


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_planted_defect_is_caught(verdicts, name: str) -> None:
    v = verdicts[name, "flawed"]
    assert 3 <= len(v.planted) <= 7, name
    assert v.missed == [], [f"{p.rule} at {p.focus}: {p.what}" for p in v.missed]
    assert v.gate == "fail"


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_clean_twin_passes_without_false_alarms(verdicts, name: str) -> None:
    v = verdicts[name, "clean"]
    assert v.planted == []
    assert v.false_alarms == []
    assert v.gate == "pass" and v.check_code == 0 and v.ingest_code == 0


def test_readme_calibration_table_is_the_corpus_table(verdicts) -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Calibration", 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
    hint = "update the README with the table `python tests/calibration/corpus.py` prints"
    assert table == corpus.table(list(verdicts.values())), hint
    assert re.search(rf"\b{len(SHAPES)} twin pairs\b", section)
