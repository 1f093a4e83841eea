"""Contract loading: defaults, and a clear file:line: key: reason for every mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from provgraph.bundle.contract import contract_schema, load_contract
from provgraph.errors import ContractError, InputError
from provgraph.rules.rule import CLAUSES

GOOD = """[project]
name = "pilot"
base_iri = "https://example.org/pilot/"

[plan]
replicates = 2
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "provgraph.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_valid_contract_gets_defaults(tmp_path: Path) -> None:
    c = load_contract(write(tmp_path, GOOD))
    assert c.name == "pilot"
    assert c.base_iri == "https://example.org/pilot/"
    assert c.section("plan") == {"replicates": 2, "file": "plan.csv", "accept_statuses": []}
    assert c.clauses() == ["output"]
    assert len(c.sha256) == 64


def error_for(tmp_path: Path, text: str) -> ContractError:
    with pytest.raises(ContractError) as info:
        load_contract(write(tmp_path, text))
    return info.value


def test_unknown_section_names_file_line_and_allowed(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD + "\n[cohrt]\nunit = 'study'\n")
    text = str(err)
    assert text.startswith(f"{tmp_path / 'provgraph.toml'}:8: cohrt: unknown section 'cohrt'")
    assert "allowed:" in text and "project" in text


def test_unknown_key_in_section(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD + "fiel = 'plan.csv'\n")
    assert err.line == 7
    assert err.key == "plan.fiel"
    allowed = "accept_statuses, cases, conditions, decoding, file, replicates"
    assert (
        f"unknown key 'fiel' in [plan] (allowed: {allowed}; `provgraph contract plan` describes them)"
        in str(err)
    )


def test_wrong_type(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD.replace("replicates = 2", 'replicates = "two"'))
    assert err.key == "plan.replicates"
    assert err.line == 6
    assert "expected integer, got str 'two'" in str(err)


def test_missing_required_key(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD.replace('name = "pilot"\n', ""))
    assert err.key == "project.name"
    assert "missing required key" in str(err)
    assert err.line == 1


def test_missing_project_section(tmp_path: Path) -> None:
    err = error_for(tmp_path, "[plan]\n")
    assert err.key == "project"


@pytest.mark.parametrize("iri", ["example.org/x/", "https://example.org/x", "https://e.org/a b/"])
def test_base_iri_must_be_absolute_and_end_in_separator(tmp_path: Path, iri: str) -> None:
    err = error_for(tmp_path, GOOD.replace("https://example.org/pilot/", iri))
    assert err.key == "project.base_iri"
    assert err.line == 3


def test_toml_syntax_error_has_line(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD + "oops = \n")
    assert err.line == 7
    assert "invalid TOML" in str(err)


def test_every_error_is_reported_one_per_line(tmp_path: Path) -> None:
    err = error_for(tmp_path, GOOD.replace("replicates = 2", "replicates = 0\nextra = 1"))
    lines = str(err).splitlines()
    assert len(lines) == 2
    assert all(line.startswith(str(tmp_path)) for line in lines)


def test_unreadable_and_non_utf8(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        load_contract(tmp_path / "missing.toml")
    path = tmp_path / "provgraph.toml"
    path.write_bytes(b'[project]\nname = "\xff"\n')
    with pytest.raises(InputError, match="not UTF-8"):
        load_contract(path)


def test_schema_sections_and_clauses_are_consistent() -> None:
    from provgraph.bundle.contract.sections import section_modules

    schema = contract_schema()
    assert schema["additionalProperties"] is False
    for name, module in section_modules().items():
        assert module.SCHEMA.get("additionalProperties") is False, name
        assert set(module.CLAUSES) <= set(CLAUSES), name
        assert name in schema["properties"]
