"""The static HTML report: the check, accounting panels, plots, lineage and the graph picture."""
