"""The release builder and verifier: orchestrates ingest, the gate and the evidence formats."""
