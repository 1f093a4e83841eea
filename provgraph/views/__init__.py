"""Pictures of the graph: the collapsed whole-graph view and per-number lineage, as DOT/SVG/PNG.

:mod:`~provgraph.views.model` holds the picture as data (View, Box, Arrow, Mark);
:mod:`~provgraph.views.vocabulary` the classes, states and relations read from the ontology;
:mod:`~provgraph.views.whole` builds the collapsed whole-graph view through the node keys of
:mod:`~provgraph.views.keys`; :mod:`~provgraph.views.nodes` names nodes and builds one-box-per-node
views (lineage); :mod:`~provgraph.views.dot` writes DOT and renders it with graphviz.
"""
