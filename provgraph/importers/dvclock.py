"""``dvc.lock``: every stage as a build with its command, dependencies, parameters and outputs.

Stages carry ``cmd``, ``deps[]`` and ``outs[]`` (``path``, ``md5`` or ``hash``, ``size``)
and ``params``. A dependency named in the command is the stage's script. Paths are relative
to the folder holding ``dvc.lock`` (``wdir`` is honoured).
"""

from __future__ import annotations

import posixpath
import shlex
from pathlib import Path
from typing import Any

from provgraph.evidence.buildnodes import Recorded, write_build
from provgraph.ingest.api import CERTAIN, NO, Bundle, ImportContext, Importer, InputError, Source


def _recorded(item: Any) -> Recorded | str:
    if not isinstance(item, dict) or not isinstance(item.get("path"), str):
        return "expected a mapping with a 'path'"
    md5 = item.get("md5")  # dvc 3 also writes `hash: md5` beside it
    size = item.get("size")
    return Recorded(item["path"], None, str(md5) if md5 else None, size if isinstance(size, int) else None)


class DvcLockImporter(Importer):
    name = "dvclock"
    version = "1"
    description = "dvc.lock: stages as builds (cmd, deps and outs with md5 and size, params)"
    handles = "file"
    suffixes = frozenset({".lock"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        return CERTAIN if path.name == "dvc.lock" else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        import yaml

        text = source.path.read_text(encoding="utf-8", errors="replace")
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            raise InputError(
                source.rel, f"invalid YAML: {getattr(err, 'problem', err)}", mark.line + 1 if mark else None
            ) from err
        if not isinstance(data, dict) or not isinstance(data.get("stages"), dict):
            raise InputError(source.rel, "expected a mapping with 'stages' (dvc.lock schema 2.0)", 1)
        lines = _stage_lines(root)
        folder = posixpath.dirname(source.rel)
        for name, stage in data["stages"].items():
            line = lines.get(str(name))
            if not isinstance(stage, dict) or not isinstance(stage.get("cmd"), (str, list)):
                ctx.problem(line, f"stage {name!r}: expected a mapping with 'cmd'")
                continue
            deps, outs, bad = [], [], None
            for key, into in (("deps", deps), ("outs", outs)):
                for item in stage.get(key) or []:
                    rec = _recorded(item)
                    if isinstance(rec, str):
                        bad = f"stage {name!r}: {key} entry {item!r}: {rec}"
                        break
                    into.append(rec)
            if bad:
                ctx.problem(line, bad)
                continue
            cmd = stage["cmd"] if isinstance(stage["cmd"], str) else " && ".join(map(str, stage["cmd"]))
            base = posixpath.normpath(posixpath.join(folder, stage.get("wdir") or "."))
            base = "" if base == "." else base
            try:
                words = set(shlex.split(cmd))
            except ValueError:
                words = set(cmd.split())
            script = next((d for d in deps if d.path in words), None)
            inputs = [d for d in deps if d is not script]
            write_build(ctx, str(name), line, base, inputs, outs, script, cmd, stage.get("params"))
            ctx.record()


def _stage_lines(root: Any) -> dict[str, int]:
    """1-based line of each stage key (from the YAML node tree)."""
    import yaml

    found: dict[str, int] = {}
    if not isinstance(root, yaml.MappingNode):
        return found
    for key, value in root.value:
        if getattr(key, "value", None) == "stages" and isinstance(value, yaml.MappingNode):
            for stage_key, _ in value.value:
                found[str(stage_key.value)] = stage_key.start_mark.line + 1
    return found
