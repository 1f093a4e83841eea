"""Planning: which importer reads which path of a bundle (explicit choice, contract, detection)."""

from __future__ import annotations

import fnmatch
import logging
import os
import re
from pathlib import Path

from provgraph.bundle.contract import CONTRACT_FILE
from provgraph.bundle.contract.load import key_line
from provgraph.bundle.contract.sections.records import claiming, declared, entry_key
from provgraph.bundle.layout import Bundle
from provgraph.errors import ImporterError
from provgraph.ingest import registry
from provgraph.ingest.base import FALLBACK, NO, Importer, Problem

log = logging.getLogger(__name__)


def choose_importer(path: Path, bundle: Bundle, explicit: str | None = None) -> Importer:
    """The importer for ``path``: an explicit name wins, then the contract, then detection.

    Detection asks every importer; the best score wins and a tie is an error that lists the
    candidates. No parser is tried-and-swallowed.
    """
    rel = bundle.relpath(path)
    name = explicit or declared_importer(path, bundle)
    if name:
        importer = registry.get(name)
        if not importer.accepts(path):
            kind = "folder" if path.is_dir() else "file"
            raise ImporterError(f"{rel}: importer {name!r} does not read a {kind}")
        return importer
    best = _detect(path, bundle)
    if not best:
        raise ImporterError(f"{rel}: no importer recognises this path")
    if len(best) > 1:
        raise ImporterError(
            f"{rel}: several importers match equally well ({', '.join(i.name for i in best)}); "
            "choose one with --importer or [ingest].importers in the contract"
        )
    return best[0]


#: The importer that reads the files an ``[[ingest.records]]`` declaration claims.
RECORDS = "records"


def declared_importer(path: Path, bundle: Bundle, rel: str | None = None) -> str | None:
    """The importer the contract names for ``path``: ``[ingest].importers``, or ``records``
    when an ``[[ingest.records]]`` glob claims the file. Both naming it (differently), or two
    declarations claiming it, is an :class:`ImporterError` that names them."""
    rel = rel if rel is not None else bundle.relpath(path)
    named = bundle.importer_override(rel)
    entries = declared(bundle.contract.section("ingest"))
    found = claiming(entries, rel) if entries and path.is_file() else []
    if len(found) > 1:
        names = " and ".join(_where(bundle, i) for i in found)
        raise ImporterError(f"{rel}: claimed by two [[ingest.records]] declarations: {names}")
    if found and named and named != RECORDS:
        raise ImporterError(
            f"{rel}: [ingest].importers names {named!r} but {_where(bundle, found[0])} declares it records"
        )
    return named or (RECORDS if found else None)


def _where(bundle: Bundle, index: int) -> str:
    line = key_line(bundle.contract.text, ["ingest", "records", str(index), "glob"])
    return f"{entry_key(index, 'glob')} ({CONTRACT_FILE}:{line})" if line else entry_key(index, "glob")


def unmatched_declarations(bundle: Bundle) -> list[Problem]:
    """A contract problem for each ``[[ingest.records]]`` glob that matches no file of the
    bundle (hidden and excluded files are not the bundle's)."""
    problems = []
    entries = declared(bundle.contract.section("ingest"))
    files = bundle.files_under(bundle.root) if entries else []
    for index, entry in enumerate(entries):
        match = re.compile(fnmatch.translate(entry["glob"])).match
        if not any(match(rel) for rel in files):
            keys = ["ingest", "records", str(index), "glob"]
            problems.append(
                Problem(
                    CONTRACT_FILE,
                    key_line(bundle.contract.text, keys),
                    f"{entry_key(index, 'glob')}: {entry['glob']!r} matches no file of the bundle "
                    "(none, or only excluded or hidden ones)",
                )
            )
    return problems


def _detect(
    path: Path,
    bundle: Bundle,
    minimum: int = FALLBACK,
    importers: list[Importer] | None = None,
    is_dir: bool | None = None,
    shortlists: dict[tuple[bool, str], list[Importer]] | None = None,
) -> list[Importer]:
    """The best-scoring importers of ``path``; ``shortlists`` keeps, per (folder?, suffix), the
    importers whose kind and suffix hint admit it (asked once per suffix, not once per file)."""
    scores: list[tuple[int, Importer]] = []
    is_dir = path.is_dir() if is_dir is None else is_dir
    suffix = path.suffix.lower()
    shortlists = {} if shortlists is None else shortlists
    admitted = shortlists.get((is_dir, suffix))
    if admitted is None:
        every = importers if importers is not None else registry.all_importers()
        admitted = shortlists[(is_dir, suffix)] = [i for i in every if _admits(i, is_dir, suffix)]
    for importer in admitted:
        if type(importer).accepts is not Importer.accepts and not importer.accepts(path):
            continue
        try:
            score = importer.detect(path, bundle)
        except Exception:  # detection only sniffs; a failure there means "not mine"
            log.debug("importer %s failed to detect %s", importer.name, path, exc_info=True)
            score = NO
        if score >= minimum:
            scores.append((score, importer))
    if not scores:
        return []
    top = max(s for s, _ in scores)
    return [i for s, i in scores if s == top]


def _admits(importer: Importer, is_dir: bool, suffix: str) -> bool:
    """Whether ``importer`` may claim a path of this kind and suffix (its own ``accepts``, when
    it has one, is asked per path)."""
    default = type(importer).accepts is Importer.accepts  # the usual case: no stat per importer
    if default and importer.handles != "any" and (importer.handles == "directory") != is_dir:
        return False
    return is_dir or importer.suffixes is None or suffix in importer.suffixes


def plan_bundle(
    bundle: Bundle, start: Path | None = None, overrides: dict[str, str] | None = None
) -> tuple[list[tuple[Path, Importer]], list[Problem]]:
    """Decide which importer reads which path under ``start`` (default: the whole bundle).

    A folder that an importer claims is read whole. Otherwise its files are offered one by
    one; a folder in which nothing is claimed becomes one tree source of the fallback
    importer, and unclaimed loose files become single-file sources of it. ``overrides`` maps
    bundle paths to importer names and wins like ``[ingest].importers``.
    """
    with bundle.listed():
        return _plan(bundle, start, overrides)


def _plan(
    bundle: Bundle, start: Path | None, overrides: dict[str, str] | None
) -> tuple[list[tuple[Path, Importer]], list[Problem]]:
    problems: list[Problem] = []
    fallback, importers = registry.get("files"), registry.all_importers()  # once, not per path
    shortlists: dict[tuple[bool, str], list[Importer]] = {}
    overrides = overrides or {}
    start = (start or bundle.root).resolve()

    def claim(path: Path, is_dir: bool | None = None) -> Importer | None:
        rel = bundle.relpath(path)
        try:
            override = overrides.get(rel) or declared_importer(path, bundle, rel)
            if override:
                return choose_importer(path, bundle, override)
            best = _detect(path, bundle, FALLBACK + 1, importers, is_dir, shortlists)
        except ImporterError as err:
            problems.append(Problem(rel, None, str(err).split(": ", 1)[-1]))
            return None
        if len(best) > 1:
            names = ", ".join(i.name for i in best)
            why = f"several importers match equally well ({names}); choose one in [ingest].importers"
            problems.append(Problem(rel, None, why))
            return None
        return best[0] if best else None

    def visit(folder: Path) -> tuple[list[tuple[Path, Importer]], list[Path], bool]:
        claims: list[tuple[Path, Importer]] = []
        leftovers: list[Path] = []
        flagged = False
        # directory entries know their type: no stat per file of a large folder
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            child, is_dir = Path(entry.path), entry.is_dir()
            if bundle.excluded(bundle.relpath(child)) or (
                entry.is_symlink() and not child.resolve().is_relative_to(bundle.root)
            ):
                continue
            before = len(problems)
            chosen = claim(child, is_dir)
            if chosen is not None:
                claims.append((child, chosen))
                if is_dir and (child / ".dvc").is_dir():
                    # a DVC root's dvc.lock, code and data are bundle files besides a (git) claim
                    sub_claims, sub_left, sub_flagged = visit(child)
                    claims += sub_claims
                    leftovers += sub_left
                    flagged = flagged or sub_flagged
            elif len(problems) > before:
                flagged = True
            elif is_dir:
                sub_claims, sub_left, sub_flagged = visit(child)
                if sub_claims or sub_flagged:
                    claims += sub_claims
                    leftovers += sub_left
                    flagged = flagged or sub_flagged
                elif sub_left:
                    leftovers.append(child)  # nothing inside is claimed: read it as one tree
            elif entry.is_file():
                leftovers.append(child)
        return claims, leftovers, flagged

    if start.is_file():
        try:
            name = overrides.get(bundle.relpath(start))
            return [(start, choose_importer(start, bundle, name))], problems
        except ImporterError as err:
            return [], [Problem(bundle.relpath(start), None, str(err).split(": ", 1)[-1])]
    first = claim(start) if start != bundle.root else None
    if first is not None:
        return [(start, first)], problems
    claims, leftovers, _ = visit(start)
    claims += [(p, fallback) for p in leftovers]
    if start == bundle.root:
        claims += _root_source(bundle, overrides, problems)
        problems += unmatched_declarations(bundle)
    # The contract goes first: everything else is minted under its base IRI.
    claims.sort(key=lambda c: (c[1].name != "contract", bundle.relpath(c[0])))
    return claims, problems


def _root_source(
    bundle: Bundle, overrides: dict[str, str], problems: list[Problem]
) -> list[tuple[Path, Importer]]:
    """The bundle root as a source of the importer named for ``.`` (``--importer NAME .``, or
    ``[ingest].importers = { "." = NAME }``), e.g. ``git`` for a bundle that is a repository.

    It is read *besides* the root's files, which are planned as usual: the root holds the
    contract and the working tree, which no folder importer reads for them (git reads history)."""
    name = overrides.get(".") or bundle.importer_override(".")
    if not name:
        return []
    try:
        return [(bundle.root, choose_importer(bundle.root, bundle, name))]
    except ImporterError as err:
        problems.append(Problem(".", None, str(err).split(": ", 1)[-1]))
        return []
