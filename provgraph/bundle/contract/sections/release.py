"""``[release]``: what is released and the registry every released text must agree with.

Its presence puts the release clause in force. Keys:

- ``include`` / ``exclude``: the whitelist (globs relative to the bundle) `provgraph release
  build` packs; ``name``, ``version``, ``output`` and ``epoch`` name the archive, the folder it
  is written to and the fixed timestamp of every entry.
- ``derived``: globs of derived artifacts (figures, tables) that must have a build record.
- ``texts``: globs of the texts whose numbers become claims (also applied to archive members).
- ``archives``: globs of archives that must carry a closed ``SHA256SUMS`` manifest.
- ``values``: the registry of values: ``name`` (statistic name), ``value`` as written,
  ``status`` (current, superseded, withdrawn), ``aliases`` (Q for cochran_q), ``statistic``
  (the pg:Statistic that recomputes it, relative to the base IRI, by its segments in any order
  and spelling: ``statistic/cochran_q/globally-complete`` or
  ``statistic/name%3Dcochran_q/route%3Dglobally-complete``).
- ``entities``: canonical names (``canonical`` and stale ``variants``) and counts (``count``
  written before one of ``nouns``: "5 models").
- ``bind``: where the texts' names differ from the recomputed ones, ``rows`` (row label ->
  condition key) and ``columns`` (header -> statistic name); ``positives`` / ``negatives``: how
  many positive and negative items the texts' rates are over, when they do not say;
  ``integer_data``: headers whose means are of integer data (checked with GRIM).
- ``privacy``: the scan of everything released (``dicom``, built-in ``defaults``, extra
  ``patterns`` by name, ``allow`` expressions that clear a match).
- ``limits``: archive reading limits (members, bytes per member, total bytes, ratio).

```toml
[release]
name = "cxr-pilot"
version = "1.1"
include = ["README.md", "results/**", "figures/*.png"]
derived = ["figures/*.png"]                 # each needs a build record

[[release.values]]
name = "cochran_q"
value = "182.29"
aliases = ["Q"]

[[release.entities]]
key = "model-b"
canonical = "GPT-4o"
variants = ["GPT-4V"]
```
"""

from __future__ import annotations

import contextlib
import json
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from provgraph.evidence.claims import normal_text
from provgraph.evidence.patterns import glob_regex
from provgraph.rdf.vocab import PG, RDF_TYPE

if TYPE_CHECKING:
    from provgraph.ingest.api import ImportContext

NAME = "release"
CLAUSES: tuple[str, ...] = ("release",)

_GLOBS: dict[str, Any] = {"type": "array", "items": {"type": "string", "minLength": 1}}
_IRI_REF = r"^[^\s<>\"{}|\\^`]+$"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The release: whitelist, derived artifacts, registry, privacy and limits.",
    "properties": {
        "name": {
            "type": "string",
            "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
            "description": "archive base name (letters, digits, '.', '_', '-')",
        },
        "version": {
            "type": "string",
            "pattern": r"^[A-Za-z0-9][A-Za-z0-9._+-]*$",
            "description": "release version (letters, digits, '.', '_', '+', '-')",
        },
        "include": {**_GLOBS, "default": [], "description": "Whitelist of released paths (globs)."},
        "exclude": {**_GLOBS, "default": [], "description": "Globs removed from the whitelist."},
        "derived": {**_GLOBS, "default": [], "description": "Derived artifacts that need a build record."},
        "texts": {
            **_GLOBS,
            "default": ["*.md", "*.markdown", "*.tex"],
            "description": "Texts whose numbers become claims.",
        },
        "archives": {
            **_GLOBS,
            "default": ["*.zip", "*.tar", "*.tar.gz", "*.tgz"],
            "description": "Archives that must carry a closed SHA256SUMS manifest.",
        },
        "output": {
            "type": "string",
            "minLength": 1,
            "default": "dist",
            "description": "Folder (relative to the bundle) the release is written to.",
        },
        "epoch": {
            "type": "string",
            "default": "1980-01-01T00:00:00",
            "pattern": r"^(19[89]\d|2\d{3})-\d\d-\d\dT\d\d:\d\d:\d\d$",
            "description": "fixed entry timestamp YYYY-MM-DDTHH:MM:SS, 1980 or later",
        },
        "values": {
            "type": "array",
            "default": [],
            "description": "The registry: every number the released texts may state, with its status.",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "description": "Statistic name (cochran_q)."},
                    "value": {
                        "type": ["string", "number"],
                        "description": 'The value as the texts write it ("182.29", "12/40", "31%").',
                    },
                    "status": {
                        "enum": ["current", "superseded", "withdrawn"],
                        "default": "current",
                        "description": "current: may be stated; superseded or withdrawn: stating it is a "
                        "stale claim.",
                    },
                    "aliases": {
                        **_GLOBS,
                        "default": [],
                        "description": "Other names the texts give the statistic (Q for cochran_q).",
                    },
                    "statistic": {
                        "type": "string",
                        "pattern": _IRI_REF,
                        "description": "The pg:Statistic that recomputes it: its IRI (absolute, or "
                        "relative to base_iri; no spaces), or its segments in any order "
                        "(statistic/cochran_q/globally-complete).",
                    },
                },
                "required": ["name", "value"],
                "additionalProperties": False,
            },
        },
        "entities": {
            "type": "array",
            "default": [],
            "description": "Canonical names and counts the released texts must agree with.",
            "items": {
                "type": "object",
                "properties": {
                    "key": {"type": "string", "minLength": 1, "description": "The entity's key."},
                    "canonical": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The name the texts must use (GPT-4o).",
                    },
                    "variants": {
                        **_GLOBS,
                        "default": [],
                        "description": "Stale names that must not appear (GPT-4V).",
                    },
                    "count": {
                        "type": "integer",
                        "minimum": 0,
                        "description": 'How many there are, as a text states it before a noun ("5 models").',
                    },
                    "nouns": {
                        **_GLOBS,
                        "default": [],
                        "description": "The nouns a count is written before (models, VLMs).",
                    },
                },
                "required": ["key"],
                "anyOf": [{"required": ["canonical"]}, {"required": ["count", "nouns"]}],
                "additionalProperties": False,
            },
        },
        "bind": {
            "type": "object",
            "default": {},
            "description": "How the numbers of the texts' tables and sentences are bound to the "
            "statistics that recompute them, where the written names differ from the recomputed ones.",
            "properties": {
                "rows": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "default": {},
                    "description": "Row label as written -> condition key ('' leaves the row unbound).",
                },
                "columns": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "default": {},
                    "description": "Column header or label as written -> statistic name ('' leaves the "
                    "column unbound).",
                },
                "positives": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Number of positive items (flawed scripts, abnormal studies) the "
                    "texts' rates are over, when the texts do not state it.",
                },
                "negatives": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Number of negative items (sound scripts, normal studies), likewise.",
                },
                "integer_data": {
                    **_GLOBS,
                    "default": [],
                    "description": "Column headers or labels whose means are of integer-valued data "
                    "(Likert items, counts): such means are checked with GRIM.",
                },
            },
            "additionalProperties": False,
        },
        "privacy": {
            "type": "object",
            "default": {},
            "description": "The privacy scan of everything released (a finding blocks the release).",
            "properties": {
                "dicom": {
                    "type": "boolean",
                    "default": True,
                    "description": "A DICOM file (by suffix or DICM magic) in the release is a finding.",
                },
                "defaults": {
                    "type": "boolean",
                    "default": True,
                    "description": "Scan with the built-in patterns (e-mail, SSN, MIMIC-style ids, DICOM "
                    "UIDs, labelled patient fields).",
                },
                "patterns": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "minLength": 1},
                    "default": {},
                    "description": "Name -> regular expression: extra patterns scanned for.",
                },
                "allow": {
                    **_GLOBS,
                    "default": [],
                    "description": "Regular expressions that clear a match (a known-safe identifier).",
                },
            },
            "additionalProperties": False,
        },
        "limits": {
            "type": "object",
            "default": {},
            "description": "What an archive that is imported or verified may hold before it is refused "
            "as a decompression bomb.",
            "properties": {
                "max_members": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Most members (unset: 100000).",
                },
                "max_member_bytes": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Largest member, uncompressed bytes (unset: 1 GiB).",
                },
                "max_total_bytes": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Largest total, uncompressed bytes (unset: 4 GiB).",
                },
                "max_ratio": {
                    "type": "number",
                    "exclusiveMinimum": 1,
                    "description": "Largest uncompressed / compressed size ratio (unset: 200).",
                },
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}


def write(section: dict[str, Any], ctx: ImportContext) -> None:
    add = ctx.add
    spec = ctx.iri("release", "main")
    add(spec, RDF_TYPE, PG.ReleaseSpec)
    add(spec, PG.contract, ctx.contract_iri)
    add(spec, PG.name, section.get("name"))
    add(spec, PG.version, section.get("version"))
    add(spec, PG.settings, json.dumps(section.get("bind") or {}, sort_keys=True))
    for glob in section.get("include", []):
        add(spec, PG.includePattern, glob_regex(glob))
    for glob in section.get("derived", []):
        add(spec, PG.derivedPattern, glob_regex(glob))
    for glob in section.get("archives", []):
        add(spec, PG.archivePattern, glob_regex(glob))
    for v in section.get("values", []):
        text = str(v["value"])
        node = ctx.iri("registry-value", v["name"], normal_text(text))
        add(node, RDF_TYPE, PG.RegistryValue)
        add(node, PG.contract, ctx.contract_iri)
        add(node, PG.statName, v["name"])
        add(node, PG.text, text)
        number = text.rstrip("%").split("/")[0].replace(",", "").strip()
        with contextlib.suppress(InvalidOperation):
            if (value := Decimal(number)).is_finite():  # "NaN" is a text, not a value
                add(node, PG.value, value)
        add(node, PG.registryStatus, v.get("status", "current"))
        for alias in v.get("aliases", []):
            add(node, PG.alias, alias)
        # kept as written: the statistics engine resolves it by its facets, whatever the spelling
        add(node, PG.statisticRef, v.get("statistic"))
    for e in section.get("entities", []):
        node = ctx.iri("entity", e["key"])
        add(node, RDF_TYPE, PG.RegistryEntity)
        add(node, PG.contract, ctx.contract_iri)
        add(node, PG.key, e["key"])
        add(node, PG.name, e.get("canonical"))
        add(node, PG.count, e.get("count"))
        for variant in e.get("variants", []):
            add(node, PG.variant, variant)
