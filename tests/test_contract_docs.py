"""The contract reference (``provgraph contract``, ``docs/contract.md``) is read from the section
schemas: every section and key has a description, the page equals the command's output, the
defaults and examples it shows are what loading a contract does, and the init template's
pointers name commands that exist."""

from __future__ import annotations

import ast
import json
import re
import tomllib
from pathlib import Path

import pytest
from conftest import REPO

from provgraph.bundle.contract import docs
from provgraph.bundle.contract.load import apply_defaults, contract_schema, load_contract, validate
from provgraph.errors import ContractError

SECTIONS_DIR = REPO / "provgraph" / "bundle" / "contract" / "sections"
TEMPLATE = REPO / "provgraph" / "bundle" / "contract" / "template.toml"


def test_every_section_and_key_has_a_description() -> None:
    missing = docs.undescribed(contract_schema())
    assert missing == [], f"add a 'description' to these keys' schemas: {', '.join(missing)}"


def test_undescribed_finds_keys_without_one_at_every_depth() -> None:
    """The check above can fail: a section, a nested key, an array entry's key, a table name
    pattern and a oneOf alternative's key without a description are all found."""
    schema = {
        "properties": {
            "good": {"description": "ok", "properties": {"inner": {"type": "string"}}},
            "bare": {"type": "object"},
            "list": {
                "description": "entries",
                "type": "array",
                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
            "keyed": {
                "description": "by key",
                "patternProperties": {"^x_[a-z]+$": {"type": "string"}, "^[a-z]+$": {"description": "d"}},
            },
            "spec": {"description": "s", "oneOf": [{"type": "string"}, {"properties": {"path": {}}}]},
        }
    }
    assert docs.undescribed(schema) == [
        "good.inner",
        "bare",
        "list[].name",
        "keyed.x_<name>",
        "spec.path",
    ]


def test_docs_page_is_the_generated_reference(cli) -> None:
    r = cli("contract", "--format", "markdown")
    assert r.code == 0, r.err
    page = (REPO / docs.DOCS_PAGE).read_text(encoding="utf-8")
    assert page == r.out, f"{docs.DOCS_PAGE} is out of step with the schemas; refresh it: {docs.REFRESH}"


def _section_names_on_disk() -> set[str]:
    """``NAME = "..."`` of every module file in the sections package, read without importing."""
    names = set()
    for path in SECTIONS_DIR.glob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["NAME"]:
                names.add(ast.literal_eval(node.value))
    return names


def test_reference_covers_every_section_module_file() -> None:
    """No hand-kept list: a section file added to the package is in the reference."""
    names = [s.name for s in docs.sections()]
    assert set(names) == _section_names_on_disk()
    page = docs.markdown()
    for name in names:
        assert f"\n## `[{name}]`\n" in page, name


def _schema_paths(schema: dict, prefix: str = "") -> list[str]:
    """Key paths of a section schema, walked here independently of the generator."""
    out = []
    items = schema.get("items")
    if isinstance(items, dict) and ("properties" in items or "patternProperties" in items):
        return _schema_paths(items, f"{prefix}[]")
    for name, sub in schema.get("properties", {}).items():
        path = f"{prefix}.{name}" if prefix else name
        out += [path, *_schema_paths(sub, path)]
    for sub in schema.get("patternProperties", {}).values():
        path = f"{prefix}.<key>" if prefix else "<key>"
        out += [path, *_schema_paths(sub, path)]
    return out


@pytest.mark.parametrize("section", docs.sections(), ids=lambda s: s.name)
def test_every_key_of_the_schema_is_listed(section: docs.Section) -> None:
    schema = contract_schema()["properties"][section.name]
    listed = [re.sub(r"x_<name>", "<key>", k.path) for k in section.keys]
    assert listed == _schema_paths(schema)
    assert all(k.description and k.type for k in section.keys)


@pytest.mark.parametrize("section", docs.sections(), ids=lambda s: s.name)
def test_shown_defaults_are_what_loading_fills_in(section: docs.Section) -> None:
    """A top-level default in the reference is the value a contract that omits the key gets."""
    schema = contract_schema()["properties"][section.name]
    filled = apply_defaults({}, schema)
    for key in section.keys:
        if "." not in key.path and "[" not in key.path and "<" not in key.path:
            assert (key.path in filled) == key.has_default, key.path
            if key.has_default:  # a table's default gets its own keys' defaults in turn
                sub = schema["properties"][key.path]
                assert filled[key.path] == apply_defaults(key.default, sub), key.path


def test_key_rows_show_type_default_allowed_and_required() -> None:
    keys = {k.path: k for s in docs.sections() for k in s.keys if s.name in ("plan", "analysis", "models")}
    assert (keys["file"].type, keys["file"].default) == ("string", "plan.csv")
    assert keys["alpha"].allowed == "> 0; < 1"
    assert keys["cohort_rule"].allowed == 'one of "globally-complete", "pairwise-available"'
    assert keys["family[].adjustments"].type == "array of string"
    assert keys["family[].adjustments"].default == ["holm"]
    assert keys["<key>.requested"].required and not keys["<key>.alias"].required
    ingest = {k.path: k for k in docs.section("ingest").keys}
    assert ingest["records[].fields.call_id"].type == "string or table"
    assert "records[].constants.x_<name>" in ingest
    assert docs.toml_value({"a": [1, True]}) == "{ a = [1, true] }"
    project = {k.path: k for k in docs.section("project").keys}
    assert "`" in project["base_iri"].allowed  # the pattern refuses backticks ...
    assert docs.code("a`b") == "`` a`b ``"  # ... and a code span holding one takes a longer fence
    assert "matches `` ^[A-Za-z]" in project["base_iri"].allowed


@pytest.mark.parametrize("section", [s for s in docs.sections() if s.example], ids=lambda s: s.name)
def test_section_examples_are_valid_contract_text(section: docs.Section, tmp_path: Path) -> None:
    """The worked example the reference shows (from the section module's docstring) passes
    the schema, so the documentation cannot show a key the contract refuses."""
    text = section.example
    if section.name != "project":
        text = '[project]\nname = "x"\nbase_iri = "https://example.org/x/"\n\n' + text
    validate(tomllib.loads(text), tmp_path / "provgraph.toml", text)


def test_all_examples_together_load_as_one_contract(tmp_path: Path) -> None:
    """The examples also agree with each other (a condition's model is a [models] key) and
    pass each section's own checks, as one contract loaded like any other."""
    examples = {s.name: s.example for s in docs.sections() if s.example}
    assert len(examples) == len(docs.sections()), "a section without an example in its docstring"
    # [factors] states the conditions [conditions] would: a contract holds one of the two
    for instead in ("conditions", "factors"):
        path = tmp_path / f"without-{instead}.toml"
        path.write_text("\n".join(e for n, e in examples.items() if n != instead), encoding="utf-8")
        assert set(load_contract(path).data) >= {n for n in examples if n not in (instead, "factors")}


def test_contract_lists_sections_one_line_each(cli) -> None:
    r = cli("contract")
    assert r.code == 0, r.err
    rows = [line for line in r.out.splitlines() if line.strip().startswith("[")]
    assert [row.split()[0] for row in rows] == [f"[{s.name}]" for s in docs.sections()]
    assert re.search(r"\[plan\]\s+output\s+The planned calls", r.out)
    assert "[project] (required)" in r.out


def test_contract_section_prints_every_key(cli) -> None:
    r = cli("contract", "[release]")  # brackets as the user sees the table name are accepted
    assert r.code == 0, r.err
    assert r.out.startswith("[release]: The release")
    for key in docs.section("release").keys:
        assert re.search(rf"^ {re.escape(key.path)}\s", r.out, re.M), key.path
    assert re.search(r"^ epoch\s+string\s+\"1980-01-01T00:00:00\"\s+matches", r.out, re.M)


def test_contract_json_is_the_whole_reference(cli) -> None:
    r = cli("contract", "--format", "json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert [s["name"] for s in doc["sections"]] == [s.name for s in docs.sections()]
    plan = next(s for s in doc["sections"] if s["name"] == "plan")
    assert plan["clauses"] == ["output"]
    row = next(k for k in plan["keys"] if k["key"] == "accept_statuses")
    assert row["default"] == [] and "length" in row["allowed"]
    assert "default" not in next(k for k in plan["keys"] if k["key"] == "replicates")
    one = json.loads(cli("contract", "cohort", "--format", "json").out)
    assert [s["name"] for s in one["sections"]] == ["cohort"]


def test_contract_markdown_of_one_section(cli) -> None:
    r = cli("contract", "models", "--format", "markdown")
    assert r.code == 0
    assert r.out.startswith("## `[models]`\n")
    assert "| `<key>.requested` | string | required | not empty |" in r.out


def test_unknown_section_is_a_usage_error_naming_the_sections(cli) -> None:
    r = cli("contract", "cohrt")
    assert r.code == 2
    assert "no section 'cohrt'" in r.err and "cohort" in r.err


def test_init_template_names_only_commands_that_exist(cli) -> None:
    """The template written by `provgraph init` points to `provgraph contract --help`, and
    every `provgraph ...` it names runs."""
    text = TEMPLATE.read_text(encoding="utf-8")
    assert "`provgraph contract --help`" in text
    named = set(re.findall(r"`provgraph ([a-z-]+)", text))
    assert "contract" in named
    for command in sorted(named):
        r = cli(command, "--help")
        assert r.code == 0, f"template names `provgraph {command}`: {r.err}"
    assert "provgraph contract SECTION" in " ".join(cli("contract", "--help").out.split())  # any wrap width


@pytest.mark.parametrize(
    ("extra", "section_name"),
    [("[plan]\nfiel = 'plan.csv'\n", "plan"), ("[models.m]\nrequested = 'x'\nalais = true\n", "models")],
)
def test_unknown_key_error_names_the_reference_that_lists_the_keys(
    cli, tmp_path: Path, extra: str, section_name: str
) -> None:
    path = tmp_path / "provgraph.toml"
    path.write_text('[project]\nname = "x"\nbase_iri = "https://example.org/x/"\n' + extra, encoding="utf-8")
    with pytest.raises(ContractError) as info:
        load_contract(path)
    named = re.search(r"`provgraph (contract [a-z]+)` describes them", str(info.value))
    assert named and named.group(1) == f"contract {section_name}", str(info.value)
    r = cli(*named.group(1).split())
    assert r.code == 0 and r.out.startswith(f"[{section_name}]:")
    allowed = re.search(r"\(allowed: ([^;]+);", str(info.value)).group(1).split(", ")
    listed = {k.path.split(".")[-1] for k in docs.section(section_name).keys}
    assert set(allowed) <= listed
