"""The one module an importer author imports: the importer framework, in one place.

An importer reads one file (or folder) of a bundle and writes RDF triples about it. It
subclasses :class:`Importer`, is registered as a ``provgraph.importers`` entry point, and uses
nothing but the names below (see "Writing an importer" in the README, and
:mod:`provgraph.ingest.testing` to test one).

The importer
    :class:`Importer`
        Base class. Set ``name`` (the entry-point name), ``version`` (bump it when the output
        changes: it is part of the no-op key), ``description``, ``handles`` (``"file"``,
        ``"directory"`` or ``"any"``), optionally ``suffixes`` (a hint that spares ``detect``
        calls) and ``uses_sections`` (contract sections the output depends on). Implement
        ``detect(path, bundle) -> score`` (cheap, never raises on foreign files) and
        ``ingest(source, ctx)``.
    ``NO``, ``FALLBACK``, ``MAYBE``, ``LIKELY``, ``CERTAIN``
        Scores ``detect`` returns: 0, 1, 50, 80, 100. The highest score wins; a tie is an
        error the user resolves in the contract. ``FALLBACK`` is for catch-all importers.

What ``ingest`` receives
    :class:`Source`
        The file or folder to read: ``path``, bundle-relative ``rel``, ``kind``, ``sha256``,
        ``size``, and for a folder its :class:`Member` files (``rel``, ``sha256``, ``size``).
    :class:`ImportContext`
        Where the triples go. ``ctx.add(s, p, o)`` writes one triple; ``ctx.iri(kind, *keys)``
        mints a node under the project's base IRI; ``ctx.file_iri(rel)`` is a file's node and
        ``ctx.source_iri`` the source's; ``ctx.bundle_rel(written)`` turns a path a record
        wrote into a bundle path (None if outside); ``ctx.problem(line, reason)`` rejects one
        record and carries on; ``ctx.record()`` counts an accepted one; ``ctx.advance(n)``
        reports ``n`` bytes of progress. ``ctx.bundle`` is the :class:`Bundle` (its
        ``contract`` holds the parsed ``provgraph.toml``).
    :class:`Problem`
        A rejected record (``path``, ``line``, ``reason``), as ``ctx.problems`` holds them.
    :func:`tree_rels`, :func:`tree_members`
        The files under a folder that the contract does not exclude (bundle paths, or paths).

Reading records (:mod:`provgraph.ingest.readers`)
    :func:`read_csv` (``(line, row, error)`` per row, the header must hold the required
    columns), :func:`read_jsonl` (``(line, value, error)`` per line), :func:`record_problem`
    (why a JSON record has the wrong shape, or None), and for ``detect``: :func:`sniff_text`,
    :func:`csv_header`, :func:`first_json_object`.

Patients (:mod:`provgraph.ingest.patients`)
    :class:`Patients` turns raw patient identifiers into pseudonymous ``pg:Patient`` nodes;
    importers that use it also mix in :class:`UsesSecret`, so a new secret re-imports them.

Terms and vocabulary
    :class:`IRI` (a ``str``) for nodes; plain Python values for literals, or :class:`Lit` for
    one with an explicit datatype (e.g. ``Lit("PT5S", XSD_NS + "duration")``). ``PG`` hands
    out only terms that the provgraph ontology defines (a typo raises); ``PROV``, ``RDF``,
    ``RDFS`` and ``XSD`` are open namespaces; ``RDF_TYPE`` and ``RDFS_LABEL`` are shortcuts.

Errors
    Raise :class:`InputError` (path, reason, line) when a whole source cannot be read: the
    CLI prints it as one line and exits with the usage code. :class:`MissingExtraError` says
    an optional package is needed; :class:`ProvgraphError` is the root of all of them.
"""

from __future__ import annotations

from provgraph.bundle.layout import Bundle
from provgraph.errors import InputError, MissingExtraError, ProvgraphError
from provgraph.ingest.base import (
    CERTAIN,
    FALLBACK,
    LIKELY,
    MAYBE,
    NO,
    ImportContext,
    Importer,
    Member,
    Problem,
    Source,
    tree_members,
    tree_rels,
)
from provgraph.ingest.patients import Patients, UsesSecret
from provgraph.ingest.readers import (
    MAX_RECORD_BYTES,
    RecordError,
    csv_header,
    document_bytes,
    first_json_object,
    loads_checked,
    lone_surrogate,
    read_csv,
    read_jsonl,
    record_problem,
    sniff_text,
)
from provgraph.rdf.terms import IRI, Lit
from provgraph.rdf.vocab import PG, PROV, RDF, RDF_TYPE, RDFS, RDFS_LABEL, XSD, XSD_NS

__all__ = [  # noqa: RUF022 (grouped as the docstring is, not sorted)
    # the importer and its scores
    "Importer",
    "NO",
    "FALLBACK",
    "MAYBE",
    "LIKELY",
    "CERTAIN",
    # what ingest() receives
    "Source",
    "Member",
    "ImportContext",
    "Problem",
    "Bundle",
    "tree_rels",
    "tree_members",
    # reading records
    "read_csv",
    "read_jsonl",
    "record_problem",
    "sniff_text",
    "csv_header",
    "first_json_object",
    "loads_checked",
    "lone_surrogate",
    "document_bytes",
    "RecordError",
    "MAX_RECORD_BYTES",
    # patients
    "Patients",
    "UsesSecret",
    # terms and vocabulary
    "IRI",
    "Lit",
    "PG",
    "PROV",
    "RDF",
    "RDFS",
    "XSD",
    "RDF_TYPE",
    "RDFS_LABEL",
    "XSD_NS",
    # errors
    "ProvgraphError",
    "InputError",
    "MissingExtraError",
]
