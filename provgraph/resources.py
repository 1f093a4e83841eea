"""Where the shipped data lives: the ontology, the rule files and the contract schemas.

``ontology/`` and ``queries/`` sit at the top of the repository and are installed as the
packages ``provgraph.ontology`` and ``provgraph.queries``; ``importlib.resources`` finds them
in both an editable checkout and a non-editable wheel.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def _package_dir(package: str) -> Path:
    return Path(str(files(package)))


def ontology_path() -> Path:
    """The vocabulary file ``provgraph.ttl``."""
    return _package_dir("provgraph.ontology") / "provgraph.ttl"


def queries_dir() -> Path:
    """The folder holding ``<clause>/<rule>.rq`` files."""
    return _package_dir("provgraph.queries")


def schemas_dir() -> Path:
    """The folder holding one JSON Schema per contract section."""
    return _package_dir("provgraph.contract") / "schemas"
