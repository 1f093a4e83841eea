"""``dvc.lock``: every stage as a build with its command, dependencies, parameters and outputs.

Stages carry ``cmd``, ``deps[]`` and ``outs[]`` (``path``, ``md5`` or ``hash``, ``size``)
and ``params``. A dependency named in the command is the stage's script. Paths are relative
to the folder holding ``dvc.lock`` (``wdir`` is honoured).

DVC writes a plain YAML mapping, with no anchors or aliases (its writer builds fresh dicts per
stage), so aliases are a hostile input here: they may expand to at most
:data:`MAX_ALIAS_NODES` nodes in all and never refer to themselves (a 486-byte "billion
laughs" file otherwise expands to 9^9 nodes), and the file is read only up to
:data:`MAX_LOCK_BYTES`.
"""

from __future__ import annotations

import posixpath
import shlex
from functools import cache
from pathlib import Path
from typing import Any

from provgraph.evidence.buildnodes import Recorded, write_build
from provgraph.ingest.api import CERTAIN, NO, Bundle, ImportContext, Importer, InputError, Source

#: Largest dvc.lock read (a lock of thousands of stages is well under 1 MiB; pure-Python YAML
#: parses about 1 MiB/s).
MAX_LOCK_BYTES = 16 << 20
#: Most nodes that the aliases of one dvc.lock may add once expanded.
MAX_ALIAS_NODES = 10_000


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
            root, data = _load(text)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            # one line: pyyaml's reader errors span two ("... in "<unicode string>", position 64")
            reason = " ".join(str(getattr(err, "problem", None) or err).split())
            raise InputError(source.rel, f"invalid YAML: {reason}", mark.line + 1 if mark else None) from err
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
            # a folder (.dir) named in the command is data it reads, not the script it runs
            script = next((d for d in deps if d.path in words and not _is_dir(d)), None)
            inputs = [d for d in deps if d is not script]
            write_build(ctx, str(name), line, base, inputs, outs, script, cmd, stage.get("params"))
            ctx.record()


def _load(text: str) -> tuple[Any, Any]:
    """The node tree (for line numbers) and the data of one YAML document, aliases bounded."""
    loader = _bounded_loader()(text)
    try:
        root = loader.get_single_node()
        return root, (loader.construct_document(root) if root is not None else None)
    finally:
        loader.dispose()


@cache
def _bounded_loader() -> type:
    """A ``SafeLoader`` that counts what aliases expand to (built on first use: lazy pyyaml)."""
    import yaml  # lazy: see DvcLockImporter.ingest

    class BoundedLoader(yaml.SafeLoader):
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.sizes: dict[int, int] = {}  # id(node) -> nodes once expanded; set when composed
            self.expanded = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                target = self.anchors.get(event.anchor)
                if target is not None:  # an unknown anchor: the composer's own error
                    if id(target) not in self.sizes:
                        raise yaml.composer.ComposerError(
                            None, None, f"alias *{event.anchor} refers to itself", event.start_mark
                        )
                    self.expanded += self.sizes[id(target)]
                    if self.expanded > MAX_ALIAS_NODES:
                        raise yaml.composer.ComposerError(
                            None,
                            None,
                            f"aliases expand to more than {MAX_ALIAS_NODES} nodes "
                            "(DVC writes no aliases: an alias bomb?)",
                            event.start_mark,
                        )
                return super().compose_node(parent, index)
            node = super().compose_node(parent, index)
            children = node.value if isinstance(node.value, list) else []
            flat = [n for c in children for n in (c if isinstance(c, tuple) else (c,))]
            self.sizes[id(node)] = 1 + sum(self.sizes.get(id(c), 1) for c in flat)
            return node

    return BoundedLoader


def _stage_lines(root: Any) -> dict[str, int]:
    """1-based line of each stage key (from the YAML node tree)."""
    import yaml  # lazy: see DvcLockImporter.ingest

    found: dict[str, int] = {}
    if not isinstance(root, yaml.MappingNode):
        return found
    for key, value in root.value:
        if getattr(key, "value", None) == "stages" and isinstance(value, yaml.MappingNode):
            for stage_key, _ in value.value:
                found[str(stage_key.value)] = stage_key.start_mark.line + 1
    return found
