"""``[pixel]``: what the model-visible images must be. Puts the pixel clause in force.

``inputs`` says where the model-visible images come from. ``"dicom"`` (the default): every
image a call sent must be traceable to its DICOM in the bundle (a rendering record, or its
pixels matched to the source), MONOCHROME1 must have been inverted (and MONOCHROME2 not), and
rendered files must still hash to what their records say. ``"images"``: the benchmark's images
are PNG/JPEG files from the start (no DICOM, no rendering): those rules do not apply, and the
image each call sent is still compared across conditions.

Under ``"dicom"`` the pixels each call sent are also judged against their source DICOM,
re-rendered by the reference renderer (:mod:`provgraph.rules.pixelview`). ``sources`` is a
bundle path pattern naming a case's DICOMs (``{case}`` is the plan's case key, ``*`` any
characters), for when neither a rendering record nor the case key in the path links them;
``window`` (centre, width) is the declared rendering's VOI window, when the pipeline did not
use the header's.

```toml
[pixel]
inputs = "dicom"
sources = "dicom/{case}/*.dcm"   # a case's source DICOMs, when no rendering record names them
window = [40, 400]               # the declared rendering's VOI window (centre, width)
```
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
        "sources": {
            "type": "string",
            "pattern": "\\{case\\}",
            "description": "Bundle path pattern of a case's source DICOMs, e.g. "
            "'dicom/{case}/*.dcm' ({case}: the plan's case key; * any characters).",
        },
        "window": {
            "type": "array",
            "prefixItems": [{"type": "number"}, {"type": "number", "exclusiveMinimum": 0}],
            "items": False,
            "minItems": 2,
            "maxItems": 2,
            "description": "The declared rendering's VOI window [centre, width], when not the header's.",
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
    ctx.add(node, PG.sourcePattern, section.get("sources"))
    if "window" in section:
        ctx.add(node, PG.windowCenter, float(section["window"][0]))
        ctx.add(node, PG.windowWidth, float(section["window"][1]))
