"""The README's importer and exit-code tables, and its "Writing an importer" example, are
checked against the code: registering an importer or adding an exit code without its row
fails, and so does an example in the README that differs from the tested one."""

from __future__ import annotations

import re
import tomllib

from conftest import REPO

from provgraph.errors import ExitCode
from provgraph.ingest.registry import GROUP

README = (REPO / "README.md").read_text(encoding="utf-8")
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
