"""Importer plugins, found through the ``provgraph.importers`` entry-point group.

Built-in importers are registered in ``pyproject.toml`` exactly like third-party ones. Nothing
is imported until it is needed: listing names reads package metadata only, and an importer's
module is loaded the first time the importer is asked for.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING

from provgraph.errors import ImporterError

if TYPE_CHECKING:
    from provgraph.ingest.base import Importer

GROUP = "provgraph.importers"


@cache
def _entry_points() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=GROUP):
        # The first registration of a name wins; a duplicate is reported by `importers`.
        found.setdefault(ep.name, ep)
    return found


def names() -> list[str]:
    """Registered importer names, sorted, without loading any of them."""
    return sorted(_entry_points())


@cache
def get(name: str) -> Importer:
    """The importer registered under ``name``, loaded on first use."""
    eps = _entry_points()
    if name not in eps:
        raise ImporterError(
            f"unknown importer {name!r}; available: {', '.join(names()) or 'none'} "
            "(is provgraph installed, e.g. `pip install -e .`?)"
        )
    try:
        cls = eps[name].load()
    except Exception as err:  # a broken plugin must not take the others down
        raise ImporterError(f"importer {name!r} ({eps[name].value}) failed to load: {err}") from err
    importer = cls()
    if importer.name != name:
        raise ImporterError(
            f"importer {eps[name].value} calls itself {importer.name!r} but is registered as {name!r}"
        )
    return importer


def all_importers() -> list[Importer]:
    return [get(n) for n in names()]
