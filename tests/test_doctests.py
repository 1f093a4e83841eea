"""The examples in docstrings are run: a docstring that lies is a failing test.

Modules are found by walking the package's files (importers included), and only those that
hold an example (``>>>``) are collected; a collected module whose examples the doctest finder
cannot see (a ``>>>`` outside any docstring, an example in a function it skips) fails, so no
case passes by running nothing.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import provgraph

PACKAGE = Path(provgraph.__file__).resolve().parent


def _modules_with_examples() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__main__.py" or ">>>" not in path.read_text(encoding="utf-8"):
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


MODULES = _modules_with_examples()


def test_examples_are_found() -> None:
    assert len(MODULES) >= 10, MODULES
    assert "provgraph.ingest.testing" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    examples = sum(len(t.examples) for t in doctest.DocTestFinder().find(module))
    assert examples > 0, f"{name} holds '>>>' but the doctest finder sees no example"
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted == examples
