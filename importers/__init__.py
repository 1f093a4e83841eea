"""Built-in importers, one module per source format (installed as ``provgraph.importers``)."""
