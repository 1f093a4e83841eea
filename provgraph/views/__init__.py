"""Pictures of the graph: the collapsed whole-graph view and per-number lineage, as DOT/SVG/PNG."""
