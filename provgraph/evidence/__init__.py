"""Evidence formats shared by importers, the recorder, the renderer, statistics and the release
builder: call identity, label rows, rendering records, pseudonyms, claims in texts, release
patterns, SHA256SUMS, safe archive reading, the privacy scan, and the claim and build nodes
importers write. Pure: nothing here reads the store or plans an import."""
