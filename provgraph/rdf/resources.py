"""Where the shipped data lives: ``provgraph/data/ontology/provgraph.ttl`` and the rule files
``provgraph/data/rules/<clause>/<rule-id>.rq``.

``importlib.resources`` finds them in both an editable checkout and an installed wheel.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def _data_dir() -> Path:
    return Path(str(files("provgraph"))) / "data"


def ontology_path() -> Path:
    """The vocabulary file ``provgraph.ttl``."""
    return _data_dir() / "ontology" / "provgraph.ttl"


def queries_dir() -> Path:
    """The folder holding ``<clause>/<rule>.rq`` files."""
    return _data_dir() / "rules"
