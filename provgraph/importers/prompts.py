"""Prompt files a condition declares (``[conditions.<key>] system_prompt / user_prompt``).

The file node gets ``pg:PromptFile`` and ``pg:textSha256``: the SHA-256 of its UTF-8 text with
one trailing newline removed, comparable with the prompt hashes of executed calls.
"""

from __future__ import annotations

from pathlib import Path

from provgraph.bundle.contract.sections.conditions import prompt_files
from provgraph.evidence.identity import declared_text, sha256_text
from provgraph.ingest.api import (
    CERTAIN,
    NO,
    PG,
    RDF_TYPE,
    Bundle,
    ImportContext,
    Importer,
    InputError,
    Source,
)


class PromptFileImporter(Importer):
    name = "prompt-file"
    version = "1"
    description = "a prompt file a contract condition declares (its text hash)"
    handles = "file"
    uses_sections = ("conditions",)

    def detect(self, path: Path, bundle: Bundle) -> int:
        section = bundle.contract.section("conditions")
        cached = self.__dict__.get("_declared")
        if cached is None or cached[0] is not section:  # the planner asks once per file
            cached = self.__dict__["_declared"] = (section, prompt_files(section))
        return CERTAIN if bundle.relpath(path) in cached[1] else NO

    def ingest(self, source: Source, ctx: ImportContext) -> None:
        try:
            text = declared_text(source.path.read_bytes())
        except UnicodeDecodeError as err:
            raise InputError(source.rel, f"a prompt file must be UTF-8 text (byte {err.start})") from err
        ctx.add(ctx.source_iri, RDF_TYPE, PG.PromptFile)
        ctx.add(ctx.source_iri, PG.textSha256, sha256_text(text))
        ctx.record()
