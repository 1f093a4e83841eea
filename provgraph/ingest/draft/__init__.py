"""Drafting a contract from a bundle's artifacts (``provgraph init`` on a full folder).

``infer`` reads the folder with the real importers into a scratch in-memory store and asks it
what was intended (plans, requests, requested models, conditions); ``write`` renders what it
found as a commented ``provgraph.toml`` and, when the plan is frozen from requests, ``plan.csv``.
"""
