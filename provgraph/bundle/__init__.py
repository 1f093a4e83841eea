"""A bundle: the folder of a benchmark's artifacts, and its contract (``provgraph.toml``)."""
