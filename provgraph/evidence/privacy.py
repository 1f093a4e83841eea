"""The privacy scan of everything released: DICOM files and identifier-like text.

Fail closed: every released file is scanned, binary or not (decoded byte for byte), and a
nested archive is scanned member by member. A finding names the file, the line and the
pattern, never the matched identifier itself (it is masked).

Built-in patterns (``[release.privacy] defaults = false`` turns them off): e-mail addresses,
US social security numbers, MIMIC-style subject and study identifiers (``p10000032``,
``s50414267``), DICOM UIDs and labelled patient fields (``PatientID: ...``, ``DOB: ...``).
``patterns`` adds named expressions; ``allow`` expressions clear a match they cover (for
instance the corresponding author's address).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provgraph.errors import ContractError
from provgraph.evidence.archive import Limits, archive_kind, walk

DEFAULT_PATTERNS = {
    "e-mail address": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}",
    "social security number": r"\b\d{3}-\d{2}-\d{4}\b",
    "MIMIC subject or study id": r"\b[ps]\d{8}\b",
    "DICOM UID": r"\b1\.2\.840\.\d+(?:\.\d+){3,}\b",
    "patient field": r"(?i)\b(?:patient[ _]?(?:id|name)|date of birth|dob|mrn)\s*[:=]\s*\S+",
}
DICOM_SUFFIXES = (".dcm", ".dicom")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int | None
    kind: str
    excerpt: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.kind}" + (f" ({self.excerpt})" if self.excerpt else "")


def mask(text: str) -> str:
    """Keep the first two characters of an identifier, hide the rest."""
    return text[:2] + "*" * max(len(text) - 2, 3)


class Scanner:
    """Compiled privacy patterns from ``[release.privacy]``."""

    def __init__(self, privacy: dict[str, Any] | None = None, contract: str = "provgraph.toml") -> None:
        privacy = privacy or {}
        self.dicom = privacy.get("dicom", True)
        patterns = dict(DEFAULT_PATTERNS) if privacy.get("defaults", True) else {}
        patterns.update(privacy.get("patterns", {}))
        try:
            self.patterns = {name: re.compile(p) for name, p in patterns.items()}
            self.allow = [re.compile(a) for a in privacy.get("allow", [])]
        except re.error as err:
            raise ContractError(contract, "release.privacy", f"invalid regular expression: {err}") from err

    def is_dicom(self, name: str, data: bytes) -> bool:
        return name.lower().endswith(DICOM_SUFFIXES) or data[128:132] == b"DICM"

    def scan_bytes(self, name: str, data: bytes) -> list[Finding]:
        if self.dicom and self.is_dicom(name, data):
            return [Finding(name, None, "DICOM file (medical image with header identifiers)", "")]
        findings = []
        text = data.decode("latin-1")
        for number, line in enumerate(text.split("\n"), start=1):
            for kind, pattern in self.patterns.items():
                for m in pattern.finditer(line):
                    if any(a.fullmatch(m.group(0)) or a.search(m.group(0)) for a in self.allow):
                        continue
                    findings.append(Finding(name, number, kind, mask(m.group(0))))
        return findings

    def scan_file(self, path: Path, name: str) -> list[Finding]:
        if archive_kind(path) is not None:
            findings = []
            for entry in walk(path, Limits(), name):
                if entry.kind == "file":
                    data = b"".join(entry.chunks())
                    findings += self.scan_bytes(f"{name}!/{entry.path}", data)
            return findings
        return self.scan_bytes(name, path.read_bytes())

    def scan(self, files: Iterable[tuple[str, Path]]) -> list[Finding]:
        found: list[Finding] = []
        for name, path in files:
            found += self.scan_file(path, name)
        return found
