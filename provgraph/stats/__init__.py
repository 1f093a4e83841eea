"""Statistics recomputed from keyed subgraphs.

The numerical core (:mod:`~provgraph.stats.core.paired`, :mod:`~provgraph.stats.core.cluster`,
:mod:`~provgraph.stats.core.verdicts`) works on numpy arrays and knows nothing about graphs. The
engine (:mod:`~provgraph.stats.engine`) reads labels, cells and reviews from the store by
their scientific keys, builds keyed matrices, runs the numerical core and writes cells,
matrices and ``pg:Statistic`` nodes into their own named graph
(:mod:`~provgraph.stats.materialize`).
"""
