"""``[pixel]``: what the model-visible images must be. Puts the pixel clause in force.

``inputs`` says where the model-visible images come from. ``"dicom"`` (the default): every
image a call sent must have a rendering record whose DICOM is in the bundle, MONOCHROME1 must
have been inverted (and MONOCHROME2 not), and rendered files must still hash to what their
records say. ``"images"``: the benchmark's images are PNG/JPEG files from the start (no DICOM,
no rendering): those rules do not apply, and the image each call sent is still compared across
conditions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from provgraph.rdf.vocab import PG, RDF_TYPE

if TYPE_CHECKING:
    from provgraph.ingest.api import ImportContext

NAME = "pixel"
CLAUSES: tuple[str, ...] = ("pixel",)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The intended pixels: how images reach the model.",
    "properties": {
        "inputs": {
            "enum": ["dicom", "images"],
            "default": "dicom",
            "description": "dicom: images are rendered from DICOM sources (rendering records and "
            "polarity are checked); images: PNG/JPEG files from the start, no DICOM.",
        },
        "same_image_across_conditions": {
            "type": "boolean",
            "default": True,
            "description": "true: every call of one case is fed byte-identical image input, so "
            "conditions differ only in what they are meant to differ in.",
        },
    },
    "additionalProperties": False,
}


def write(section: dict[str, Any], ctx: ImportContext) -> None:
    node = ctx.iri("pixel-protocol", "main")
    ctx.add(node, RDF_TYPE, PG.PixelProtocol)
    ctx.add(node, PG.contract, ctx.contract_iri)
    ctx.add(node, PG.sameImageAcrossConditions, section["same_image_across_conditions"])
    ctx.add(node, PG.imageInputs, section["inputs"])
