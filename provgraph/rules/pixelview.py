"""The pixel verdict view: each image a call sent, judged against its source DICOM re-rendered.

A record's own word on polarity (a rendering record's ``inverted``) is not evidence of what the
model saw; the pixels sent are. For every (call, image sent) this module links the image to its
source DICOM(s), re-renders each with the reference renderer
(:func:`provgraph.capture.renderer.render_dataset`) under the declared rendering, and compares:

1. the sent image's pixel grid (:mod:`provgraph.evidence.pixels`: kept by the batch importers
   for inline images; read from the bundle for an image file a record names) against the
   correct render's grid: ``correct``, ``resembles`` (right polarity, not the declared
   rendering), ``inverted`` or ``unmatched``;
2. when the graph holds only the sent bytes' hash (no inline bytes, no file), that hash against
   the sha256 of the PNG the reference renderer writes: ``exact`` (else ``no-pixels``).

Links, tried in order: a rendering record whose ``image_sha256`` is the sent bytes (only its
``source`` and window are used: its ``inverted`` flag is not trusted); the DICOMs matching the
contract's ``[pixel] sources`` pattern for the call's case; else the DICOMs whose bundle path
has a folder named by the case key (or ``s`` + key, MIMIC-CXR's ``files/p10/p10000032/
s50414267/`` layout) or a file stem equal to it. Of several candidates (a PA and its lateral),
the best-matching one decides. The declared rendering is the contract's ``[pixel] window`` if
set, else the linked rendering record's window, else the header's VOI (what ``provgraph render``
does).

Evidence that is missing is a verdict too, so the rule can say what is missing: ``no-source``
(no DICOM linked), ``source-unreadable`` (not in the bundle at its recorded bytes, or not
renderable), ``no-pixels`` (the graph holds only a hash of the image), ``undecodable`` (the
bytes are not an image). One ``pg:PixelVerdict`` per (case, image) judged in the catalog slot
:data:`SLOT`: ``pg:verdictFor`` each call of the case that sent the image,
``pg:judgedImageSha256`` (and ``pg:judgedImagePath`` for a file), ``pg:pixelVerdict``,
``pg:correlation``, ``pg:judgedSource`` / ``pg:sourcePath`` / ``pg:photometricInterpretation`` of
the deciding DICOM and ``pg:verdictDetail``.

Source DICOMs are read from the bundle folder the last ingest read (recorded in the catalog)
and must still hash to what was imported. The view is recomputed when an import changed, like
the call evidence view (:mod:`provgraph.rules.callview`), after which it runs.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import io
import itertools
import logging
import os
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from provgraph.capture.renderer import read_dataset, render_dataset
from provgraph.errors import InputError
from provgraph.evidence.pixels import grid_from_hex, grid_of_array, grid_of_bytes, judge
from provgraph.rdf.terms import IRI, TripleWriter
from provgraph.rdf.vocab import PG, PG_NS, RDF_TYPE
from provgraph.rules import callview
from provgraph.store import catalog
from provgraph.store.base import Store

log = logging.getLogger(__name__)

SLOT = "derived:pixel-verdicts"
VIEW_VERSION = "2"
#: never decode more than this many source bytes for one DICOM (memory stays bounded)
MAX_SOURCE_BYTES = 512 << 20

_P = f"PREFIX pg: <{PG_NS}>\nPREFIX prov: <http://www.w3.org/ns/prov#>\n"
_Q = {
    "protocol": "SELECT ?inputs ?pattern ?center ?width WHERE { ?p a pg:PixelProtocol ; "
    "pg:imageInputs ?inputs OPTIONAL { ?p pg:sourcePattern ?pattern } "
    "OPTIONAL { ?p pg:windowCenter ?center ; pg:windowWidth ?width } }",
    # each image a call sent with the key of the call's planned case (read as the verdicts are
    # written: a call's judgement needs only its case, so nothing is kept per call)
    "sent": "SELECT ?call ?sha ?case WHERE { ?call pg:sentImageSha256 ?sha "
    "OPTIONAL { ?call a pg:PlannedCall ; pg:case/pg:key ?case } }",
    "files": "SELECT DISTINCT ?path ?sha WHERE { ?call pg:sentImage ?f . ?f pg:path ?path ; pg:sha256 ?sha }",
    "grids": "SELECT ?sha ?grid WHERE { ?i a pg:ImageBytes ; pg:gridOfSha256 ?sha ; pg:pixelGrid ?grid }",
    "cases": "SELECT DISTINCT ?case WHERE { ?call a pg:PlannedCall ; pg:case/pg:key ?case }",
    "dicoms": "SELECT ?d ?path ?sha ?pi WHERE { ?d a pg:DicomFile ; pg:path ?path ; pg:sha256 ?sha "
    "OPTIONAL { ?d pg:photometricInterpretation ?pi } }",
    "renderings": "SELECT ?sha ?d ?center ?width WHERE { ?r a pg:Rendering ; pg:renderedSha256 ?sha ; "
    "prov:used ?d OPTIONAL { ?r pg:windowCenter ?center ; pg:windowWidth ?width } }",
}


@dataclass(frozen=True)
class Dicom:
    node: str
    path: str
    sha256: str
    photometric: str


@dataclass
class Verdict:
    call: str
    sha: str
    verdict: str
    detail: str = ""
    correlation: float | None = None
    source: Dicom | None = None
    #: the key of the call's planned case: a verdict is one judgement of (case, image)
    case: str | None = None

    def node(self) -> IRI:
        """The judgement's node, one per (case, image): every call of the case that sent the
        image links to it (``pg:verdictFor``), so ten conditions are one node, not ten."""
        digest = hashlib.sha256(f"{self.case}\0{self.sha}".encode()).hexdigest()[:32]
        return IRI(f"urn:provgraph:pixel-verdict:judgement-{digest}")  # (a QName starts with a letter)


@dataclass
class Reference:
    """A source re-rendered: the PNG sha256 the reference renderer writes and its grid."""

    png_sha256: str | None = None
    grid: bytes | None = None
    error: str | None = None


@dataclass
class Evidence:
    """What the graph says, gathered once."""

    protocol: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # sha -> bundle path of a sent file
    grids: dict[str, bytes] = field(default_factory=dict)
    cases: set[str] = field(default_factory=set)  # the planned calls' case keys
    dicoms: dict[str, Dicom] = field(default_factory=dict)
    renderings: dict[str, list[tuple[str, tuple[float, float] | None]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    _of_case: dict[str, list[str]] | None = None  # case key -> DICOM nodes, built on first use
    _by_node: dict[str, dict[str, list[tuple[int, tuple[float, float] | None]]]] = field(default_factory=dict)
    decoded: dict[str, tuple[bytes | None, str]] = field(default_factory=dict)  # sent file sha -> grid

    def dicoms_of_case(self, case: str) -> list[str]:
        """The DICOM nodes whose bundle path is a source of ``case`` (:func:`case_matches`),
        indexed once: matching every DICOM against every call's case is quadratic."""
        if self._of_case is None:
            pattern = self.protocol.get("pattern")
            self._of_case = case_index(self.dicoms.values(), self.cases, pattern)
        return self._of_case.get(case, [])

    def rendered_from(self, sha: str) -> dict[str, list[tuple[int, tuple[float, float] | None]]]:
        """Image ``sha``'s rendering records by source node: (position in the records, window)."""
        found = self._by_node.get(sha)
        if found is None:
            found = self._by_node[sha] = defaultdict(list)
            for pos, (d, w) in enumerate(self.renderings.get(sha, [])):
                found[d].append((pos, w))
        return found


def gather(store: Store) -> Evidence:
    ev = Evidence()

    def rows(name: str) -> Iterator[tuple[Any, ...]]:  # values, not terms: a third of the time
        return store.stream(_P + _Q[name])

    for inputs, pattern, center, width in itertools.islice(rows("protocol"), 1):
        ev.protocol = {"inputs": inputs, "pattern": pattern, "center": center, "width": width}
    for path, sha in rows("files"):
        ev.files.setdefault(sha, path)
    for sha, hexgrid in rows("grids"):
        grid = grid_from_hex(hexgrid)
        if grid is not None:
            ev.grids[sha] = grid
    ev.cases = {case for (case,) in rows("cases")}
    for d, path, sha, pi in rows("dicoms"):
        ev.dicoms[d] = Dicom(d, path, sha, pi or "")
    for sha, d, center, width in rows("renderings"):
        window = (float(center), float(width)) if center is not None and width is not None else None
        ev.renderings[sha].append((d, window))
    return ev


def case_matches(path: str, case: str, pattern: str | None) -> bool:
    """Whether bundle path ``path`` is a source of ``case``: the declared pattern, else a folder
    named by the key (or ``s`` + key, MIMIC-CXR) or a file stem equal to it.

    >>> case_matches("files/p10/p10000032/s50414267/a.dcm", "50414267", None)
    True
    >>> case_matches("dicom/c1.dcm", "c1", None), case_matches("dicom/c10.dcm", "c1", None)
    (True, False)
    >>> case_matches("src/c1/x.dcm", "c1", "src/{case}/*.dcm")
    True
    """
    if pattern:
        return fnmatch.fnmatchcase(path, pattern.replace("{case}", case))
    parts = PurePosixPath(path)
    return case in parts.parts[:-1] or f"s{case}" in parts.parts[:-1] or parts.stem == case


def case_index(dicoms: Any, cases: set[str], pattern: str | None) -> dict[str, list[str]]:
    """Case key -> the nodes of ``dicoms`` whose path :func:`case_matches` it, in ``dicoms``' order.

    Without a pattern a path names its cases directly (its folders, ``s``-less folders, its
    stem); with one, a case key the path matches is a substring of it, so only the substrings
    that are known keys (of at most the longest key's length, and next to the characters the
    pattern puts around ``{case}`` when those are literal) are tried against the pattern.
    """
    index: dict[str, list[str]] = defaultdict(list)
    longest = max(map(len, cases), default=0)
    head, _, tail = (pattern or "").partition("{case}")
    before = head[-1:] if head[-1:] not in ("*", "?", "]") else ""
    after = tail[:1] if tail[:1] not in ("*", "?", "[") else ""
    for d in dicoms:
        if pattern:
            path = d.path
            if not head:  # the key opens the path
                starts: Any = [0]
            elif before:  # right after the literal the pattern puts before it
                starts = [i for i in range(1, len(path)) if path[i - 1] == before]
            else:
                starts = range(len(path))
            found = {
                path[i:j]
                for i in starts
                for j in range(i + 1, min(len(path), i + longest) + 1)
                if (j == len(path) if not tail else (not after or path[j : j + 1] == after))
            } & cases
            keys = {k for k in found if case_matches(path, k, pattern)}
        else:
            parts = PurePosixPath(d.path)
            folders = parts.parts[:-1]
            keys = {*folders, *(f[1:] for f in folders if f.startswith("s")), parts.stem}
        for key in keys:
            index[key].append(d.node)
    return index


class Renderer:
    """Re-renders source DICOMs from the bundle, once per (file, window)."""

    def __init__(self, root: str | None) -> None:
        self.root = root
        self.cache: dict[tuple[str, tuple[float, float] | None], Reference] = {}

    def reference(self, dicom: Dicom, window: tuple[float, float] | None, hashed: bool = False) -> Reference:
        """The render of ``dicom``; ``hashed``: with the sha256 of its PNG (encoding a PNG costs
        5x the render, so only when the sent image's pixels are not at hand, only its hash)."""
        key = (dicom.node, window)
        ref = self.cache.get(key)
        if ref is None or (hashed and ref.png_sha256 is None and ref.error is None):
            ref = self.cache[key] = self._render(dicom, window, hashed)
        return ref

    def _render(self, dicom: Dicom, window: tuple[float, float] | None, hashed: bool) -> Reference:
        if self.root is None:
            return Reference(error="the store records no bundle folder to read it from")
        path = os.path.join(self.root, dicom.path)
        try:
            if os.path.getsize(path) > MAX_SOURCE_BYTES:
                return Reference(error=f"larger than {MAX_SOURCE_BYTES >> 20} MiB, the limit for a source")
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as err:
            return Reference(error=f"cannot be read ({err.strerror or err})")
        if hashlib.sha256(data).hexdigest() != dicom.sha256:
            return Reference(error="has changed since it was imported (ingest again)")
        try:
            pixels = render_dataset(read_dataset(Path(path), data), dicom.path, window).pixels
        except InputError as err:
            return Reference(error=f"cannot be rendered: {err.reason}")
        except Exception as err:  # a malformed LUT or header the renderer trips on: bad input, not a bug
            return Reference(error=f"cannot be rendered ({type(err).__name__})")
        png_sha256 = hashlib.sha256(png_bytes(pixels)).hexdigest() if hashed else None
        return Reference(png_sha256, grid_of_array(pixels))


def png_bytes(pixels: Any) -> bytes:
    """The PNG the reference renderer writes for ``pixels`` (as ``capture.renderer.write_png``)."""
    # lazy: numpy and Pillow are loaded only when a source is re-rendered
    import numpy as np
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(pixels, dtype=np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def sent_grid(ev: Evidence, sha: str, root: str | None) -> tuple[bytes | None, str]:
    """The grid of sent image ``sha`` and, when there is none, why (a verdict name)."""
    if sha in ev.grids:
        return ev.grids[sha], ""
    if sha not in ev.decoded:  # one decode per image, however many calls sent it
        ev.decoded[sha] = _decode_sent(ev, sha, root)
    return ev.decoded[sha]


def _decode_sent(ev: Evidence, sha: str, root: str | None) -> tuple[bytes | None, str]:
    rel = ev.files.get(sha)
    if rel is None or root is None:
        return None, "no-pixels"
    path = os.path.join(root, rel)
    try:
        if os.path.getsize(path) > MAX_SOURCE_BYTES:  # (read(limit) would allocate the limit)
            return None, "no-pixels"
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None, "no-pixels"
    if hashlib.sha256(data).hexdigest() != sha:
        return None, "no-pixels"
    grid = grid_of_bytes(data)
    return (grid, "") if grid is not None else (None, "undecodable")


def candidates(ev: Evidence, case: str | None, sha: str) -> list[tuple[Dicom, tuple[float, float] | None]]:
    """The DICOMs image ``sha`` sent by a call of ``case`` (the key of its planned case, None
    for a call no plan names) may come from, each with the window to render it."""
    declared = None
    if ev.protocol.get("center") is not None:
        declared = (float(ev.protocol["center"]), float(ev.protocol["width"]))
    records = ev.renderings.get(sha, [])
    if records:
        # identical bytes rendered from several DICOMs: the call's own case decides which
        # (looked up from the case's few DICOMs: the bytes may have thousands of records)
        by_node = ev.rendered_from(sha)
        own = sorted(
            (pos, d, w) for d in (ev.dicoms_of_case(case) if case else []) for pos, w in by_node.get(d, [])
        )
        if own:
            return [(ev.dicoms[d], declared or w) for _, d, w in own]
        return [(ev.dicoms[d], declared or w) for d, w in records if d in ev.dicoms]
    if case is None:
        return []
    return [(ev.dicoms[d], declared) for d in ev.dicoms_of_case(case)]


def judge_image(ev: Evidence, renderer: Renderer, call: str, sha: str, case: str | None) -> Verdict:
    """The verdict on image ``sha`` that ``call`` sent (``case``: the key of its planned case)."""
    found = candidates(ev, case, sha)
    if not found:
        if ev.renderings.get(sha):
            detail = "its rendering record's source is not an imported DICOM"
        elif case is not None:
            detail = f"no DICOM of case {case} is in the bundle"
        else:
            detail = "the call has no case in the plan to find its DICOM by"
        return Verdict(call, sha, "no-source", detail)
    grid, missing = sent_grid(ev, sha, renderer.root)
    references = [(d, renderer.reference(d, w, hashed=grid is None)) for d, w in found]
    for dicom, ref in references:
        if ref.png_sha256 == sha:
            return Verdict(call, sha, "exact", correlation=1.0, source=dicom)
    usable = [(d, ref) for d, ref in references if ref.grid is not None]
    if not usable:
        dicom, ref = references[0]
        return Verdict(call, sha, "source-unreadable", f"{dicom.path} {ref.error}", source=dicom)
    if grid is None:
        return Verdict(call, sha, missing, source=usable[0][0])
    judged = [(judge(grid, ref.grid), d) for d, ref in usable]  # type: ignore[arg-type]
    (verdict, r), dicom = max(judged, key=lambda j: abs(j[0][1]))
    return Verdict(call, sha, verdict, correlation=r, source=dicom)


def judged(store: Store, ev: Evidence) -> Iterator[Verdict]:
    """Every (call, image sent) judged, as the store lists them; nothing when the benchmark's
    images are not rendered from DICOM.

    A verdict depends on the image and the call's case only, so each (case, image) is judged
    once and its verdict given to every call of the case that sent it (ten conditions sending
    one case's image are one judgement, not ten).
    """
    if ev.protocol.get("inputs") != "dicom":
        return
    renderer = Renderer(catalog.bundle_root(store))
    done: dict[tuple[str | None, str], Verdict] = {}
    rows = store.stream(_P + _Q["sent"])
    # a call with two planned case keys (a malformed plan) gives adjacent rows: the least key
    for (call, sha), same in itertools.groupby(rows, key=lambda row: row[:2]):
        case = min((c for _, _, c in same if c is not None), default=None)
        verdict = done.get((case, sha))  # type: ignore[arg-type]
        if verdict is None:
            verdict = done[(case, sha)] = judge_image(ev, renderer, call, sha, case)  # type: ignore[arg-type]
            verdict.case = case
        yield dataclasses.replace(verdict, call=call)


def judge_all(store: Store, ev: Evidence | None = None) -> list[Verdict]:
    """Every (call, image sent) judged (:func:`judged`), sorted by call and image."""
    return sorted(judged(store, ev or gather(store)), key=lambda v: (v.call, v.sha))


def write_view(w: TripleWriter, verdicts: Iterable[Verdict], files: dict[str, str] | None = None) -> int:
    """Write ``verdicts``: each judgement's node once, and a ``pg:verdictFor`` link per call
    (at 10^5 calls of 10 conditions: 0.18 M quads, where a node per call was 0.9 M, loaded and
    then scanned by the rules). Returns how many (call, image) verdicts there were."""
    add = w.add
    count = 0
    written: set[IRI] = set()  # judgements, not calls: as many as judged() keeps
    for count, v in enumerate(verdicts, 1):  # noqa: B007 (returned)
        node = v.node()
        add(node, PG.verdictFor, IRI(v.call))
        if node in written:
            continue
        written.add(node)
        add(node, RDF_TYPE, PG.PixelVerdict)
        add(node, PG.judgedImageSha256, v.sha)
        add(node, PG.judgedImagePath, (files or {}).get(v.sha))
        add(node, PG.pixelVerdict, v.verdict)
        add(node, PG.verdictDetail, v.detail or None)
        if v.correlation is not None:
            add(node, PG.correlation, round(v.correlation, 4))
        if v.source is not None:
            add(node, PG.judgedSource, IRI(v.source.node))
            add(node, PG.sourcePath, v.source.path)
            add(node, PG.photometricInterpretation, v.source.photometric or None)
    return count


def fingerprint(store: Store) -> str:
    text = f"{VIEW_VERSION}\n{catalog.bundle_root(store)}\n{callview.fingerprint(store)}"
    return hashlib.sha256(text.encode()).hexdigest()


def refresh(store: Store) -> bool:
    """Bring the view up to date (after the call evidence view); True when it was recomputed."""
    current = fingerprint(store)
    slot = catalog.current(store, SLOT)
    if slot is not None and slot.fingerprint == current:
        return False
    ev = gather(store)
    written: list[int] = []

    def produce(fh: IO[str]) -> None:
        # judged as written (the scan reads the call view, none of what this view holds)
        written.append(write_view(TripleWriter(fh), judged(store, ev), ev.files))

    catalog.replace_from(store, SLOT, current, produce)
    log.info("pixel verdict view: %d images judged", sum(written))
    return True
