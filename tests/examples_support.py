"""Running a generated example bundle through the real CLI once per test module.

The example tests assert every count from the graph (SPARQL over the store, ``provgraph
stats`` JSON, the check report, lineage, the accounting functions), never from the
generators' variables; this module runs the commands and keeps their outputs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest
from conftest import REPO, TEST_SECRET

from provgraph.rdf.vocab import PG_NS, PROV_NS
from provgraph.store import open_store
from provgraph.store.base import Store

PREFIXES = f"PREFIX pg: <{PG_NS}>\nPREFIX prov: <{PROV_NS}>\n"


def generator(name: str) -> ModuleType:
    """``examples/<name>/generate.py`` as a module."""
    path = REPO / "examples" / name / "generate.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def run_cli(*args: str) -> tuple[int, str]:
    """``provgraph ARGS`` in-process: exit code and what it printed on stdout."""
    from provgraph.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, buf.getvalue()


@dataclass
class Bundle:
    """One generated twin after ``ingest`` and ``check`` (the check report as JSON)."""

    root: Path
    check: dict
    outputs: dict[str, object] = field(default_factory=dict)
    _store: Store | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = open_store(self.root / ".provgraph" / "store")
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def cli(self, *args: str) -> tuple[int, str]:
        """A command on this bundle (the module's store handle is closed first)."""
        self.close()
        return run_cli("-C", str(self.root), *args)

    def select(self, query: str) -> list[dict[str, str]]:
        return [
            {k: (v.value if v is not None else None) for k, v in row.items()}
            for row in self.store.select(PREFIXES + query)
        ]

    def count(self, query: str) -> int:
        (row,) = self.select(query)
        return int(next(iter(row.values())))

    @property
    def base(self) -> str:
        contract = tomllib.loads((self.root / "provgraph.toml").read_text(encoding="utf-8"))
        return contract["project"]["base_iri"]

    def fired(self) -> dict[str, dict[str, list[str]]]:
        """clause -> rule id -> focus nodes (relative to the base IRI) of the violated rules."""
        base = self.base
        out: dict[str, dict[str, list[str]]] = {}
        for rule in self.check["rules"]:
            if rule["violations"]:
                out.setdefault(rule["clause"], {})[rule["id"]] = sorted(
                    v["focus"].removeprefix(base) for v in rule["violations"]
                )
        return out

    def paths(self, rule_id: str) -> set[str]:
        """The files (``ARCHIVE!/MEMBER`` inside an archive) the violations of a rule point at."""
        (rule,) = [r for r in self.check["rules"] if r["id"] == rule_id]
        return {v["path"] for v in rule["violations"]}

    def messages(self, rule_id: str) -> list[str]:
        (rule,) = [r for r in self.check["rules"] if r["id"] == rule_id]
        return [v["message"] for v in rule["violations"]]


def prepare(root: Path, twin: str, generate) -> Bundle:
    """Generate ``twin`` into ``root``, ingest it and record a check (JSON report kept)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PROVGRAPH_SECRET", TEST_SECRET)
        mp.delenv("PROVGRAPH_SECRET_FILE", raising=False)
        generate(root, twin)
        code, text = run_cli("-C", str(root), "-q", "ingest")
        assert code == 0, text
        report = root.parent / f"{root.name}-check.json"  # outside the bundle
        code, _ = run_cli("-C", str(root), "-q", "check", "--format", "json", "--output", str(report))
        assert code == (1 if twin == "flawed" else 0)
        return Bundle(root, json.loads(report.read_text(encoding="utf-8")))
