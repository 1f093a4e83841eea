"""provgraph: a W3C PROV graph of a benchmark, with fail-closed SPARQL contract rules."""

__version__ = "0.1.0"
