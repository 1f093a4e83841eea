"""The release builder and verifier.

``build`` packs the ``[release]`` whitelist into one deterministic zip: entries sorted by
path, every timestamp set to ``[release].epoch``, every mode 0644, no extra fields, DEFLATE at
level 9, and a ``SHA256SUMS`` at the archive root listing every other member (its closed
manifest). A ``SHA256SUMS`` beside the archive lists the archive itself. The same inputs give
the same bytes (with the same zlib). Nothing is written unless the gate passes and the privacy
scan is clean.

``verify`` extracts an archive safely into a temporary folder and checks the extracted files
against the archive's own manifest (missing, extra, differing) and, when a ``SHA256SUMS``
sits beside the archive, the archive's bytes against it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provgraph.bundle.layout import Bundle, sha256_file
from provgraph.errors import ExitCode, ProvgraphError, UsageError
from provgraph.evidence import sha256sums as sums
from provgraph.evidence.archive import Limits, extract
from provgraph.evidence.patterns import matcher
from provgraph.evidence.privacy import Finding, Scanner

MANIFEST = "SHA256SUMS"
FILE_MODE = 0o100644


class ReleaseRefused(ProvgraphError):
    """The release was not built: the gate failed or the privacy scan found something."""

    exit_code = ExitCode.VIOLATIONS


@dataclass
class Built:
    archive: Path
    sha256: str
    members: list[tuple[str, str]]  # (path, sha256), the archive's manifest
    manifest: Path


@dataclass
class Verified:
    archive: str
    members: int = 0
    problems: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.findings


def section(bundle: Bundle) -> dict[str, Any]:
    found = bundle.contract.section("release")
    if found is None:
        raise UsageError(f"{bundle.contract.path}: no [release] section: declare the whitelist to release")
    return found


def whitelist(bundle: Bundle, spec: dict[str, Any]) -> list[tuple[str, Path]]:
    """``(archive path, file)`` for every whitelisted file, sorted; the output folder is never in it.

    A pattern that matches no file is an error (a whitelist entry nobody can find would
    silently drop something meant to be released).
    """
    include = spec.get("include", [])
    if not include:
        raise UsageError("[release].include is empty: list the files to release")
    exclude = matcher(spec.get("exclude", []))
    output = spec.get("output", "dist").strip("/")
    files: dict[str, Path] = {}
    hits = dict.fromkeys(include, 0)
    each = {p: matcher([p]) for p in include}
    for dirpath, dirnames, filenames in os.walk(bundle.root):
        base = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in sorted(filenames):
            path = base / name
            rel = bundle.relpath(path)
            if name.startswith(".") or rel == output or rel.startswith(output + "/"):
                continue
            matched = [p for p, m in each.items() if m and m.match(rel)]
            if not matched or (exclude and exclude.match(rel)):
                continue
            for p in matched:
                hits[p] += 1
            if path.is_symlink() and not path.resolve().is_relative_to(bundle.root):
                raise UsageError(f"{rel}: symbolic link leaves the bundle; it cannot be released")
            files[rel] = path
    empty = [p for p, n in hits.items() if n == 0]
    if empty:
        raise UsageError(f"[release].include pattern {empty[0]!r} matches no file")
    if MANIFEST in files:
        raise UsageError(f"{MANIFEST} at the bundle root would collide with the archive's own manifest")
    return sorted(files.items())


def _epoch(spec: dict[str, Any]) -> tuple[int, int, int, int, int, int]:
    when = dt.datetime.fromisoformat(spec.get("epoch", "1980-01-01T00:00:00"))
    return (when.year, when.month, when.day, when.hour, when.minute, when.second)


def archive_name(bundle: Bundle, spec: dict[str, Any]) -> str:
    name = spec.get("name") or bundle.contract.name
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in name)
    version = spec.get("version")
    return f"{safe}-{version}.zip" if version else f"{safe}.zip"


def write_zip(dest: Path, files: list[tuple[str, Path]], epoch: tuple[int, int, int, int, int, int]) -> Built:
    """Write the deterministic zip of ``files`` plus its root SHA256SUMS to ``dest`` atomically."""
    members = [(name, sha256_file(path)[0]) for name, path in files]
    manifest = sums.format_gnu(members).encode()
    entries: list[tuple[str, Path | bytes]] = [*files, (MANIFEST, manifest)]
    entries.sort(key=lambda e: e[0])
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".release-", suffix=".zip", dir=dest.parent)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", allowZip64=True) as zf:
            for name, source in entries:
                info = zipfile.ZipInfo(name, date_time=epoch)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.create_system = 3
                info.external_attr = FILE_MODE << 16
                if isinstance(source, bytes):
                    zf.writestr(info, source, compresslevel=9)
                    continue
                info.file_size = source.stat().st_size
                # zf.open has no level argument: it reads the level from the ZipInfo.
                for attr in ("compress_level", "_compresslevel"):  # Python >= 3.13, older
                    with contextlib.suppress(AttributeError):
                        setattr(info, attr, 9)
                with (
                    source.open("rb") as src,
                    zf.open(info, "w", force_zip64=info.file_size >= 1 << 31) as out,
                ):
                    while chunk := src.read(1 << 20):
                        out.write(chunk)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    digest, _ = sha256_file(dest)
    outer = dest.parent / MANIFEST
    outer.write_text(sums.format_gnu([(dest.name, digest)]), encoding="utf-8")
    return Built(dest, digest, members, outer)


def verify(
    archive: Path, manifest: Path | None = None, limits: Limits | None = None, scanner: Scanner | None = None
) -> Verified:
    """Check an archive after extraction against its root SHA256SUMS (and the one beside it)."""
    result = Verified(str(archive))
    beside = manifest or archive.parent / MANIFEST
    if beside.is_file():
        listed = {
            e.path: e.sha256 for _, e, _ in sums.parse(beside.read_text(encoding="utf-8").splitlines()) if e
        }
        if archive.name in listed:
            actual, _ = sha256_file(archive)
            if actual != listed[archive.name]:
                result.problems.append(
                    f"{archive.name}: archive bytes differ from {beside} "
                    f"(listed {listed[archive.name][:12]}..., actual {actual[:12]}...)"
                )
        elif manifest is not None:
            result.problems.append(f"{archive.name} is not listed in {manifest}")
    with tempfile.TemporaryDirectory(prefix="provgraph-verify-") as tmp:
        root = Path(tmp) / "x"
        extract(archive, root, limits, str(archive))
        inner = root / MANIFEST
        if not inner.is_file():
            result.problems.append(
                f"{archive.name}: no {MANIFEST} at the archive root; nothing to verify against"
            )
            return result
        listed: dict[str, str] = {}
        for line, entry, problem in sums.parse(
            inner.read_text(encoding="utf-8", errors="replace").splitlines()
        ):
            if problem or entry is None:
                result.problems.append(f"{MANIFEST}:{line}: {problem}")
            else:
                listed[entry.path] = entry.sha256
        found: dict[str, str] = {}
        for dirpath, _, filenames in os.walk(root):
            for name in filenames:
                path = Path(dirpath) / name
                rel = path.relative_to(root).as_posix()
                if rel == MANIFEST:
                    continue
                if path.is_symlink():
                    found[rel] = "symlink"
                    continue
                found[rel] = sha256_file(path)[0]
        result.members = len(found)
        for rel in sorted(set(listed) - set(found)):
            result.problems.append(f"{rel}: listed in {MANIFEST} but missing from the archive")
        for rel in sorted(set(found) - set(listed)):
            result.problems.append(f"{rel}: in the archive but not listed in {MANIFEST}")
        for rel in sorted(set(found) & set(listed)):
            if found[rel] != listed[rel]:
                result.problems.append(
                    f"{rel}: differs from {MANIFEST} (listed {listed[rel][:12]}..., "
                    f"actual {found[rel][:12]}...)"
                )
        if scanner is not None:
            files = [
                (f"{archive.name}!/{rel}", root / rel) for rel in sorted(found) if found[rel] != "symlink"
            ]
            result.findings = scanner.scan(files)
    return result


def build(bundle: Bundle, store: Any) -> tuple[Built, Any]:
    """Ingest the bundle, run the gate in-process, scan the whitelist, then write the release.

    Raises :class:`ReleaseRefused` (exit 1) when an import fails, the gate fails or the
    privacy scan finds something; nothing is written then.
    """
    # The gate (statistics, numpy) loads only for a build; `release verify` needs none of it.
    from provgraph.ingest.run import ingest_paths
    from provgraph.lineage.gate import run_gate
    from provgraph.rules import load_rules

    spec = section(bundle)
    results, problems = ingest_paths(store, bundle, [bundle.root])
    bad = [f"{r.rel}: {r.error}" for r in results if r.outcome == "failed"]
    bad += [str(p) for p in problems] + [str(p) for r in results for p in r.problems if not p.kept]
    if bad:
        raise ReleaseRefused(f"not released: {len(bad)} input problem(s), first: {bad[0]}")
    report = run_gate(store, load_rules())  # statistics, rules, then the record
    if not report.passed:
        blocking = [r.rule.id for r in report.results if r.blocks_gate]
        raise ReleaseRefused(
            f"not released: the gate fails ({', '.join(blocking)}); run `provgraph check` for the details"
        )
    files = whitelist(bundle, spec)
    findings = Scanner(spec.get("privacy"), str(bundle.contract.path)).scan(files)
    if findings:
        listed = "\n".join(f"  {f}" for f in findings[:20])
        more = f"\n  ... and {len(findings) - 20} more" if len(findings) > 20 else ""
        raise ReleaseRefused(f"not released: the privacy scan found {len(findings)} item(s):\n{listed}{more}")
    dest = bundle.root / spec.get("output", "dist") / archive_name(bundle, spec)
    return write_zip(dest, files, _epoch(spec)), report
