"""Lineage of a published number: what it is derived from, and whether its claim can stand."""
