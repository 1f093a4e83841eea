"""The README agrees with the code (datasette's ``test_docs.py`` style): its tables of rules,
importers and exit codes are checked against the rule headers, the registered importers and
``ExitCode``, and its "Writing an importer" example against the tested files. Adding a rule or an
importer without its README row fails here, and so does an example that drifted."""

from __future__ import annotations

import re
import tomllib

import pytest
from conftest import REPO, RULE_FIXTURES

from provgraph.errors import ExitCode
from provgraph.ingest.registry import GROUP
from provgraph.rules import load_rules
from provgraph.rules.rule import HEADER_KEYS

README = (REPO / "README.md").read_text(encoding="utf-8")
RULES = load_rules()
EXAMPLE = REPO / "examples" / "plugin_importer"


def section(heading: str) -> str:
    """The README text under ``heading`` up to the next heading of the same or a higher level."""
    level = heading.split(" ", 1)[0]
    start = README.index(f"\n{heading}\n") + len(heading) + 2
    ends = [m.start() for m in re.finditer(rf"^#{{1,{len(level)}}} ", README[start:], re.M)]
    return README[start : start + ends[0]] if ends else README[start:]


def table(text: str, header: str) -> list[list[str]]:
    """The rows (cells stripped) of the Markdown table whose header line starts with ``header``."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[first + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_importers_table_lists_exactly_the_registered_importers() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    registered = set(pyproject["project"]["entry-points"][GROUP])
    rows = table(section("## What gets imported"), "| importer | reads |")
    listed = [name for row in rows for name in re.findall(r"`([^`]+)`", row[0])]
    assert len(listed) == len(set(listed)), "an importer is listed twice"
    assert set(listed) == registered


def test_exit_code_table_matches_exit_code() -> None:
    rows = table(section("### Exit codes"), "| code | meaning |")
    assert [int(row[0]) for row in rows] == [int(code) for code in ExitCode]
    assert all(row[1] for row in rows)


def test_writing_an_importer_shows_the_tested_example() -> None:
    text = section("## Writing an importer")
    blocks = re.findall(r"^```(\w+)\n(.*?)^```$", text, re.M | re.S)
    assert blocks == [
        ("python", (EXAMPLE / "timings.py").read_text(encoding="utf-8")),
        ("toml", (EXAMPLE / "pyproject.toml").read_text(encoding="utf-8")),
        ("python", (EXAMPLE / "test_timings.py").read_text(encoding="utf-8")),
    ]


def test_example_entry_point_names_the_example_importer() -> None:
    pyproject = tomllib.loads((EXAMPLE / "pyproject.toml").read_text(encoding="utf-8"))
    ((name, target),) = pyproject["project"]["entry-points"][GROUP].items()
    module, cls = target.split(":")
    source = (EXAMPLE / f"{module}.py").read_text(encoding="utf-8")
    assert re.search(rf'^class {cls}\(Importer\):\n    name = "{name}"$', source, re.M)


def test_example_test_runs_under_the_default_test_paths() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert EXAMPLE.relative_to(REPO).as_posix() in pyproject["tool"]["pytest"]["ini_options"]["testpaths"]


#: A table row: | `rule-id` (marker) | fires when |
_ROW = re.compile(r"^\| `([a-z0-9-]+)`(?: \(([a-z]+)\))? \| (.+) \|$")


def rules_table() -> dict[str, str | None]:
    """Rule id -> severity marker (None when unmarked), from the table of '## Rules'."""
    rows: dict[str, str | None] = {}
    for line in section("## Rules").splitlines():
        match = _ROW.match(line)
        if match:
            assert match.group(1) not in rows, f"README lists {match.group(1)} twice"
            assert match.group(3).strip(), f"README row {match.group(1)} says nothing"
            rows[match.group(1)] = match.group(2)
    return rows


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_every_rule_has_a_readme_row(rule) -> None:
    rows = rules_table()
    assert rule.id in rows, f"README '## Rules' has no row for {rule.id}"
    # a fail rule is unmarked; any other severity is named after the id, e.g. (restrict)
    assert rows[rule.id] == (None if rule.severity == "fail" else rule.severity), rule.id


def test_no_readme_row_without_a_rule() -> None:
    assert set(rules_table()) - {r.id for r in RULES} == set()


def test_readme_says_where_rules_and_fixtures_live() -> None:
    text = " ".join(section("## Rules").split())
    assert "`provgraph/data/rules/<clause>/<rule-id>.rq`" in text
    assert all(
        r.path.relative_to(REPO).as_posix() == f"provgraph/data/rules/{r.clause}/{r.id}.rq" for r in RULES
    )
    assert "`tests/fixtures/rules/<rule-id>/`" in text
    assert all((RULE_FIXTURES / r.id / "flawed").is_dir() for r in RULES)
    for key in HEADER_KEYS:  # every header key is named
        assert f"`{key}`" in text, key
