"""Contract rules: one SPARQL query per ``<clause>/<rule>.rq`` file, shipped as package data."""
