"""The provgraph vocabulary (``provgraph.ttl``), shipped as package data."""
