"""Patient nodes for importers that pseudonymise (see :mod:`provgraph.evidence.pseudonym`)."""

from __future__ import annotations

from provgraph.bundle.layout import STORE_DIR, find_root
from provgraph.evidence.pseudonym import SECRET_FILE, Pseudonymizer, load_secret
from provgraph.ingest.base import ImportContext, Source
from provgraph.rdf.terms import IRI
from provgraph.rdf.vocab import PG, RDF_TYPE


class UsesSecret:
    """Mixin for importers that pseudonymise: the key id joins their no-op fingerprint, so
    changing the secret re-imports them instead of leaving patient nodes of the old key."""

    def state_key(self, source: Source) -> str | None:
        root = find_root(source.path)
        if root is None:
            return None
        return "key:" + Pseudonymizer(load_secret(root / STORE_DIR / SECRET_FILE)).key_id


class Patients:
    """Patient nodes for one import: raw identifier in, ``patient/<digest>`` node out."""

    def __init__(self, ctx: ImportContext) -> None:
        self.ctx = ctx
        self.pseudonyms = Pseudonymizer(load_secret(ctx.bundle.state_dir / SECRET_FILE))
        self._seen: set[str] = set()

    def node(self, raw: object) -> IRI | None:
        """Mint (and, once per import, type) the patient node; None when ``raw`` is blank.

        The raw value goes no further than the HMAC.
        """
        digest = self.pseudonyms.patient(raw)
        return None if digest is None else self.from_digest(digest)

    def from_digest(self, digest: str) -> IRI:
        """The patient node of a pseudonym computed elsewhere (a worker process), typed once."""
        node = self.ctx.iri("patient", digest)
        if digest not in self._seen:
            self._seen.add(digest)
            self.ctx.add(node, RDF_TYPE, PG.Patient)
            self.ctx.add(node, PG.pseudonym, digest)
        return node
