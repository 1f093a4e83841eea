"""Lineage of a published number: what it is derived from, and whether its claim can stand.

:mod:`~provgraph.lineage.model` (edges walked, nodes, status policy), :mod:`~provgraph.lineage.resolve`
(a target to nodes), :mod:`~provgraph.lineage.trace` (the walk), :mod:`~provgraph.lineage.hubs`
(sampled hubs and their summaries), :mod:`~provgraph.lineage.show` (tree and Graphviz output) and
:mod:`~provgraph.lineage.gate` (the check as the commands run it: statistics, rules, record).
"""
