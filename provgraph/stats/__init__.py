"""Statistics recomputed from keyed subgraphs.

The numerical core (:mod:`~provgraph.stats.core`: :mod:`~provgraph.stats.core.grid`,
:mod:`~provgraph.stats.core.paired`, :mod:`~provgraph.stats.core.cluster`,
:mod:`~provgraph.stats.core.verdicts`) works on numpy arrays and knows nothing about graphs.
The graph side reads labels, cells and reviews from the store by their scientific keys
(:mod:`~provgraph.stats.query`, :mod:`~provgraph.stats.read_labels`, :mod:`~provgraph.stats.cells`,
:mod:`~provgraph.stats.reviews`), builds keyed matrices (:mod:`~provgraph.stats.matrices`), runs
the numerical core (:mod:`~provgraph.stats.compute`), matches reported values to the results
(:mod:`~provgraph.stats.statistic`) and writes cells, matrices and ``pg:Statistic`` nodes into
their own named graph (:mod:`~provgraph.stats.materialize`).
"""
