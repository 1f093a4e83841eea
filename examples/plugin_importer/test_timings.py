"""Tests of the call-timings importer, written with provgraph.ingest.testing."""

from pathlib import Path

from timings import TimingsImporter

from provgraph.ingest.testing import ingest_bundle, registered, write_bundle

CSV = """call_id,started_at,ended_at
c1,2026-01-05T10:00:00+00:00,2026-01-05T10:00:02+00:00
c2,yesterday,2026-01-05T10:00:09+00:00
"""


def test_timings_are_imported(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "bundle", {"timings.csv": CSV})
    with registered(TimingsImporter):  # as if installed: no package needed
        ingested = ingest_bundle(root)
    assert ingested.result("timings.csv").importer == "call-timings"
    assert [str(p) for p in ingested.rejected] == [
        "timings.csv:3: not an ISO 8601 time: Invalid isoformat string: 'yesterday'"
    ]
    rows = ingested.select("SELECT ?call ?end WHERE { ?t pg:forCall ?call ; pg:endedAt ?end }")
    assert rows == [{"call": "https://example.org/t/call/c1", "end": "2026-01-05T10:00:02Z"}]
