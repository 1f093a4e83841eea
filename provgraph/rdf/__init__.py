"""RDF plumbing: terms and the one escaping function that mints node IRIs, namespaces checked
against the ontology, SPARQL value binding, and where the shipped data files live."""
