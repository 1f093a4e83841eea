"""One module per contract section: its JSON Schema, the clauses it puts in force, and how
it becomes graph nodes.

A section module defines ``NAME`` (the TOML table name), ``SCHEMA`` (JSON Schema for the
table), ``CLAUSES`` (clause names in force when the section is present) and optionally
``write(section, ctx)`` to emit the intended-state nodes. Modules are discovered by name, so
a clause adds its section by adding a file here. A module without ``NAME`` is a part of
another section (``records``: the ``[[ingest.records]]`` entries of ``[ingest]``).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType


@cache
def section_modules() -> dict[str, ModuleType]:
    """Section name -> module, for every module in this package."""
    found: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "NAME"):  # without one, a part of another section (records of ingest)
            found[module.NAME] = module
    return found
