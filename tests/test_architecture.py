"""The tree shows the layers: each folder of the package is one layer and imports only downward.

The order is the README's architecture section ("Layers"); this test is what keeps the two true.
An import inside ``if TYPE_CHECKING:`` is for type hints only and never runs, so it may point up;
the ones that do are named in :data:`TYPE_ONLY_UP` (and in the README). Sizes are checked too:
a module over ~500 lines or a function over ~80 lines needs a reason in :data:`LONG`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "provgraph"

#: Bottom to top. A module's layer is the first entry its dotted name starts with.
LAYERS = (
    "provgraph.errors",
    "provgraph.rdf",
    "provgraph.store",
    "provgraph.evidence",
    "provgraph.bundle",
    "provgraph.ingest",
    "provgraph.importers",
    "provgraph.capture",
    "provgraph.stats",
    "provgraph.rules",
    "provgraph.lineage",
    "provgraph.views",
    "provgraph.report",
    "provgraph.release",
    "provgraph.export",
    "provgraph.cli",
    "provgraph.__main__",
)

#: Type-only imports allowed to point up: (importing module or package, imported module).
#: Contract sections and the claim/build node writers are handed the import's context and only
#: call its methods; the context class itself belongs to the ingest layer above them.
TYPE_ONLY_UP: set[tuple[str, str]] = {
    ("provgraph.bundle.contract.sections", "provgraph.ingest.api"),
    ("provgraph.evidence.buildnodes", "provgraph.ingest.api"),
    ("provgraph.evidence.claimnodes", "provgraph.ingest.api"),
}


def _type_only_allowed(source: str, target: str) -> bool:
    return any((source == s or source.startswith(s + ".")) and target == t for s, t in TYPE_ONLY_UP)


#: Modules or functions allowed past the size limits, with the reason.
LONG: dict[str, str] = {}

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    type_only: bool
    in_function: bool


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(name: str, path: Path, known: set[str]) -> list[Import]:
    """Every import of a provgraph module in ``path``, with where it sits."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def target_names(node: ast.ImportFrom | ast.Import) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        if node.level:
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            module = ".".join([*base, node.module] if node.module else base)
        else:
            module = node.module or ""
        # `from provgraph.x import y` imports the submodule provgraph.x.y when there is one
        return [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]

    def visit(node: ast.AST, type_only: bool, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                for target in target_names(child):
                    if target.split(".")[0] == "provgraph":
                        found.append(Import(name, target, child.lineno, type_only, in_function))
            elif isinstance(child, ast.If) and _is_type_checking(child):
                visit(child, True, in_function)
            else:
                fn = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                visit(child, type_only, in_function or fn)

    visit(tree, False, False)
    return found


def layer_of(module: str) -> int:
    for i, prefix in enumerate(LAYERS):
        if module == prefix or module.startswith(prefix + "."):
            return i
    return -1  # provgraph/__init__.py: the version, below everything


ALL = modules()
IMPORTS = [imp for name, path in ALL.items() for imp in imports_of(name, path, set(ALL))]


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in ALL if m != "provgraph" and layer_of(m) < 0]
    assert not unplaced, f"modules in no layer (add their folder to LAYERS and the README): {unplaced}"


def test_no_import_points_up_a_layer() -> None:
    up = [
        f"{imp.source}:{imp.line} imports {imp.target}" + (" (type-only)" if imp.type_only else "")
        for imp in IMPORTS
        if layer_of(imp.target) > layer_of(imp.source)
        and not (imp.type_only and _type_only_allowed(imp.source, imp.target))
    ]
    assert not up, "imports pointing up a layer:\n" + "\n".join(up)


def test_type_only_exceptions_are_still_needed() -> None:
    for s, t in TYPE_ONLY_UP:
        assert any(
            i.type_only and i.target == t and (i.source == s or i.source.startswith(s + ".")) for i in IMPORTS
        ), f"stale TYPE_ONLY_UP entry: {s} -> {t}"


def test_no_import_cycle() -> None:
    graph = nx.DiGraph()
    for imp in IMPORTS:
        if not imp.type_only and not imp.in_function and imp.target != imp.source:
            graph.add_edge(imp.source, imp.target)
    # a package's __init__ importing its own submodules is how packages work, not a cycle
    for imp in IMPORTS:
        if imp.target.startswith(imp.source + ".") and graph.has_edge(imp.source, imp.target):
            graph.remove_edge(imp.source, imp.target)
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


@pytest.mark.parametrize("name", sorted(ALL))
def test_sizes(name: str) -> None:
    path = ALL[name]
    text = path.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    if name not in LONG:
        assert lines <= MAX_MODULE_LINES, f"{path}: {lines} lines (split it, or say why in LONG)"
    for fn in _functions(ast.parse(text)):
        length = fn.end_lineno - fn.lineno + 1  # type: ignore[operator]
        key = f"{name}.{fn.name}"
        if key not in LONG:
            assert length <= MAX_FUNCTION_LINES, f"{path}:{fn.lineno}: {fn.name} is {length} lines"


def test_long_exceptions_are_still_needed() -> None:
    for key in LONG:
        assert key in ALL or key.rsplit(".", 1)[0] in ALL, f"LONG names nothing: {key}"


def test_function_level_imports_say_why() -> None:
    """An import inside a function (lazy, for start-up time or an optional extra) carries a
    comment on its line or above its block of imports; otherwise it belongs at the top."""
    silent = []
    for name, path in ALL.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for imp in IMPORTS:
            if imp.source != name or not imp.in_function or imp.type_only:
                continue
            first = imp.line - 1
            while first > 0 and lines[first - 1].strip().startswith(("from ", "import ")):
                first -= 1
            block = lines[first : imp.line]
            above = lines[first - 1] if first > 0 else ""
            here = lines[imp.line - 1]
            if not any("#" in b for b in block) and not above.strip().startswith("#"):
                silent.append(f"{path.relative_to(PACKAGE.parent)}:{imp.line}: {here.strip()}")
    assert not silent, "function-level imports without a reason:\n" + "\n".join(sorted(set(silent)))
