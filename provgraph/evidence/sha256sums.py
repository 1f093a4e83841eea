"""SHA256SUMS manifests in GNU (``HEX  path``, ``HEX *path``) and BSD ``--tag`` styles
(``SHA256 (path) = HEX``), as written by ``sha256sum`` and ``shasum -a 256 --tag``.

GNU escaping is understood: a line starting with ``\\`` has ``\\\\`` and ``\\n`` escapes in
its file name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

_GNU = re.compile(r"^(\\?)([0-9a-fA-F]{64}) [ *](.+)$")
_BSD = re.compile(r"^(\\?)SHA256 \((.+)\) ?= ?([0-9a-fA-F]{64})$")
MANIFEST_NAMES = ("SHA256SUMS", "sha256sums", "SHA256SUMS.txt", "sha256sums.txt")


@dataclass(frozen=True)
class ManifestLine:
    line: int
    path: str
    sha256: str
    style: str


def _unescape(name: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), name)


def parse_line(text: str) -> tuple[str, str, str] | str:
    """``(path, sha256, style)`` of one manifest line, or the reason it is not one."""
    match = _GNU.match(text)
    if match:
        escaped, digest, name = match.groups()
        return (_unescape(name) if escaped else name), digest.lower(), "gnu"
    match = _BSD.match(text)
    if match:
        escaped, name, digest = match.groups()
        return (_unescape(name) if escaped else name), digest.lower(), "bsd"
    if re.match(r"^(SHA1|SHA224|SHA384|SHA512|MD5) \(", text):
        return f"not a SHA-256 line ({text.split(' ', 1)[0]})"
    return "expected 'HEX  path' (GNU) or 'SHA256 (path) = HEX' (BSD --tag)"


def parse(lines: Iterable[str]) -> Iterator[tuple[int, ManifestLine | None, str | None]]:
    """Yield ``(line number, entry, problem)`` for each non-blank line."""
    for number, raw in enumerate(lines, start=1):
        text = raw.rstrip("\r\n")
        if not text.strip():
            continue
        parsed = parse_line(text)
        if isinstance(parsed, str):
            yield number, None, parsed
            continue
        path, digest, style = parsed
        clean = path[2:] if path.startswith("./") else path
        yield number, ManifestLine(number, clean, digest, style), None


def format_gnu(entries: Iterable[tuple[str, str]]) -> str:
    """GNU ``sha256sum`` text for ``(path, sha256)`` pairs, sorted by path."""
    out = []
    for path, digest in sorted(entries):
        if "\\" in path or "\n" in path:
            out.append(f"\\{digest}  {path.replace(chr(92), chr(92) * 2).replace(chr(10), chr(92) + 'n')}\n")
        else:
            out.append(f"{digest}  {path}\n")
    return "".join(out)
