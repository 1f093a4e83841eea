"""The examples in docstrings are run: a docstring that lies is a failing test."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import provgraph

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(provgraph.__path__, "provgraph.") if not m.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
