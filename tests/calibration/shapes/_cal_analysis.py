"""Helpers shared by the cal-analysis shapes (keyed analysis, extractor annotation, LLM-reviewer
harness): writing files, and naming a focus node the way provgraph mints it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from provgraph.rdf.terms import mint


def fresh(root: Path) -> Path:
    """``root`` as an empty folder."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    return root


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_json(root: Path, rel: str, data: Any) -> Path:
    return write(root, rel, json.dumps(data, indent=2) + "\n")


def write_csv(root: Path, rel: str, header: list[str], rows: list[list[object]]) -> Path:
    lines = [",".join(header)] + [",".join(_cell(v) for v in row) for row in rows]
    return write(root, rel, "\n".join(lines) + "\n")


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    if any(ch in text for ch in ',"\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def focus(base: str, kind: str, *keys: object) -> str:
    """A node IRI as provgraph mints it, relative to ``base`` (what ``Planted.focus`` holds)."""
    return str(mint(base, kind, *keys)).removeprefix(base)
