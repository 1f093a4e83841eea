"""The release clause's engine: safe archive reading, SHA256SUMS manifests, number and
name extraction from texts, the privacy scan and the deterministic release builder."""
