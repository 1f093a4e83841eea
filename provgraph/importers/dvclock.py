"""``dvc.lock``: every stage as a build with its command, dependencies, parameters and outputs.

Stages carry ``cmd``, ``deps[]`` and ``outs[]`` (``path``, ``md5`` or ``hash``, ``size``)
and ``params``. The stage's script is its code dep as DVC users write it (``src/train.py``:
:func:`provgraph.importers.dvcstatus.code_dep`). Paths are relative to the folder holding
``dvc.lock`` (``wdir`` is honoured). With the ``dvc.yaml`` beside it, the params files and
``.dvc/cache``, each stage carries what ``dvc status`` says of it (``pg:dvcStatus`` on the build
and on each dep and out, ``pg:dvcChange`` lines): :mod:`provgraph.importers.dvcstatus`.

YAML aliases are bounded (:mod:`provgraph.importers.dvcyaml`) and the file is read only up to
:data:`MAX_LOCK_BYTES`.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

from provgraph.evidence.buildnodes import Recorded, write_build
from provgraph.importers.dvcstatus import code_dep, dvc_root, joined, read_params, stage_status
from provgraph.importers.dvcyaml import MAX_ALIAS_NODES, load, stage_lines
from provgraph.ingest.api import CERTAIN, NO, Bundle, ImportContext, Importer, InputError, Source

#: Largest dvc.lock read (a lock of thousands of stages is well under 1 MiB; pure-Python YAML
#: parses about 1 MiB/s).
MAX_LOCK_BYTES = 16 << 20


def _recorded(item: Any) -> Recorded | str:
    if not isinstance(item, dict) or not isinstance(item.get("path"), str):
        return "expected a mapping with a 'path'"
    md5 = item.get("md5")  # dvc 3 also writes `hash: md5` beside it
    size = item.get("size")
    return Recorded(item["path"], None, str(md5) if md5 else None, size if isinstance(size, int) else None)


def _is_dir(item: Recorded) -> bool:
    return bool(item.md5 and item.md5.endswith(".dir"))


class DvcLockImporter(Importer):
    name = "dvclock"
    version = "1"
    description = "dvc.lock: stages as builds (cmd, deps and outs with md5 and size, params)"
    handles = "file"
    suffixes = frozenset({".lock"})  # detect() claims no other file

    def detect(self, path: Path, bundle: Bundle) -> int:
        return CERTAIN if path.name == "dvc.lock" else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        import yaml  # lazy: pyyaml is loaded only when a dvc.lock is imported

        size = source.path.stat().st_size
        if size > MAX_LOCK_BYTES:
            limit = f"{MAX_LOCK_BYTES >> 20} MiB"
            raise InputError(source.rel, f"{size} bytes, larger than {limit}, the limit for a dvc.lock")
        text = source.path.read_text(encoding="utf-8", errors="replace")
        try:
            root, data = load(text)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            # one line: pyyaml's reader errors span two ("... in "<unicode string>", position 64")
            reason = " ".join(str(getattr(err, "problem", None) or err).split())
            raise InputError(source.rel, f"invalid YAML: {reason}", mark.line + 1 if mark else None) from err
        if not isinstance(data, dict) or not isinstance(data.get("stages"), dict):
            raise InputError(source.rel, "expected a mapping with 'stages' (dvc.lock schema 2.0)", 1)
        lines = stage_lines(root)
        folder = posixpath.dirname(source.rel)
        specs = _pipeline(source, ctx)
        project = dvc_root(ctx.bundle.root, folder)
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
            base = joined(folder, stage.get("wdir") or ".")
            spec = specs.get(str(name)) if specs is not None else _spec_of_lock(stage)
            status = stage_status(ctx.bundle.root, base, project, spec, stage) if spec is not None else None
            if isinstance(status, str):
                ctx.problem(line, f"stage {name!r}: dvc status not computed: {status}")
                status = None
            # the code is the dep DVC users write as code (src/train.py), never merely the first
            # dep named in the command (that is often the data: `python src/prepare.py data.xml`)
            code = code_dep([d.path for d in deps if not _is_dir(d)], cmd)
            script = next((d for d in deps if d.path == code), None)
            inputs = [d for d in deps if d is not script]
            write_build(
                ctx, str(name), line, base, inputs, outs, script, cmd, stage.get("params"), status=status
            )
            ctx.record()


def _spec_of_lock(stage: dict[str, Any]) -> dict[str, Any]:
    """The stage as dvc.yaml would declare it, from its lock entry (no dvc.yaml beside it)."""
    params = stage.get("params")
    return {
        "cmd": stage.get("cmd"),
        "deps": [e["path"] for e in stage.get("deps") or [] if isinstance(e, dict) and "path" in e],
        "outs": [e["path"] for e in stage.get("outs") or [] if isinstance(e, dict) and "path" in e],
        "params": [{f: list(v)} for f, v in params.items() if isinstance(v, dict)]
        if isinstance(params, dict)
        else [],
    }


def _pipeline(source: Source, ctx: ImportContext) -> dict[str, Any] | None:
    """The stages of the dvc.yaml beside the dvc.lock (None when there is none or it is unreadable)."""
    path = source.path.with_name("dvc.yaml")
    if not path.is_file():
        return None
    try:
        data = read_params(path)
    except (ValueError, OSError) as err:
        ctx.problem(None, f"dvc.yaml beside it is unreadable ({err}); status from dvc.lock alone")
        return None
    stages = data.get("stages") if isinstance(data, dict) else None
    return {str(k): v for k, v in stages.items()} if isinstance(stages, dict) else None


__all__ = ["MAX_ALIAS_NODES", "MAX_LOCK_BYTES", "DvcLockImporter"]
