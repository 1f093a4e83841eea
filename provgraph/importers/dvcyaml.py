"""Reading DVC's YAML files (``dvc.lock``, ``dvc.yaml``, ``params.yaml``) with aliases bounded.

DVC writes plain YAML mappings, with no anchors or aliases (its writer builds fresh dicts per
stage), so aliases are a hostile input here: they may expand to at most
:data:`MAX_ALIAS_NODES` nodes in all and never refer to themselves (a 486-byte "billion
laughs" file otherwise expands to 9^9 nodes).
"""

from __future__ import annotations

from functools import cache
from typing import Any

#: Most nodes that the aliases of one file may add once expanded.
MAX_ALIAS_NODES = 10_000


def load(text: str) -> tuple[Any, Any]:
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
    import yaml  # lazy: pyyaml is loaded only when a DVC file is read

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


def stage_lines(root: Any) -> dict[str, int]:
    """1-based line of each stage key (from the YAML node tree)."""
    import yaml  # lazy: pyyaml is loaded only when a DVC file is read

    found: dict[str, int] = {}
    if not isinstance(root, yaml.MappingNode):
        return found
    for key, value in root.value:
        if getattr(key, "value", None) == "stages" and isinstance(value, yaml.MappingNode):
            for stage_key, _ in value.value:
                found[str(stage_key.value)] = stage_key.start_mark.line + 1
    return found
