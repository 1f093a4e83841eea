"""Written statistic names in normal form (provgraph.evidence.statnames.normal_name): the
trailing brackets are matched backwards on the reversed name, tested equal to the regular
expression they replace on random headers, and a header cell of 100,000 brackets (a case
bench/fuzz.py found hanging the texts importer) is read like any other."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from conftest import write_bundle
from hypothesis import example, given, settings
from hypothesis import strategies as st

from provgraph.evidence.statnames import _MARKUP, normal_name, stat_name

_BRACKETS = re.compile(r"\s*[\[(][^\])]*[\])]\s*$")


def reference(written: str) -> str:
    """normal_name as it was written before (quadratic on a long run of brackets)."""
    text = _MARKUP.sub("", written.replace("\\%", "%").replace("_", " ")).strip().lower()
    text = re.sub(r"\s+", " ", text)
    previous = None
    while previous != text:
        previous = text
        text = _BRACKETS.sub("", text).rstrip("% .:").strip()
    return text


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="aB1 ([)]%.:\t\u00a0*_\\-", max_size=24))
@example("**DR (%) [95% CI]**")
@example("a (b (c)")
@example("dr ( x ]  .")
@example("x %\t.")
def test_the_trailing_brackets_go_as_the_regular_expression_removed_them(written: str) -> None:
    assert normal_name(written) == reference(written)


def test_names_with_units_and_brackets() -> None:
    assert stat_name("FPR (%)") == "false_positive_rate"
    assert stat_name("**Detection rate** [95% CI] (%)") == "detection_rate"
    # a header may write the canonical snake_case name, escaped or not, or emphasise with _
    assert stat_name("detection_rate") == "detection_rate"
    assert stat_name("cochran\\_q (p)") == "cochran_q"
    assert stat_name("_FPR_ (%)") == "false_positive_rate"
    nested = "[" * 100_000 + "]" * 100_000  # no group: a group holds no closing bracket
    assert normal_name("Mean rating " + nested) == "mean rating " + nested
    assert normal_name("Mean rating" + " (a)" * 100_000) == "mean rating"  # one group at a time


def test_a_header_of_100000_brackets_is_read_like_any_other(tmp_path: Path) -> None:
    """The README of the release-mean-grim-inconsistent fixture with the second header cell
    replaced by 100,000 nested brackets (bench/fuzz.py's ``nesting`` mutation, case 28 of seed
    20261207): imported, within a bound a linear scan meets a hundred times over (the regular
    expression took minutes)."""
    table = "| Reviewer | n" + "[" * 100_000 + "]" * 100_000 + " | Mean rating |\n|---|---|---|\n"
    rows = "| Panel A | 28 | 5.18 |\n| Panel B | 28 | 5.19 |\n| Panel C | 25 | 4.36 |\n"
    write_bundle(tmp_path, {"README.md": "# Reviewer ratings\n\n" + table + rows})
    done = subprocess.run(
        [sys.executable, "-m", "provgraph", "--store", ":memory:", "ingest", "README.md"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "1 imported" in done.stdout
