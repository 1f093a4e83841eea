"""Keyed hashes that stand in for identifying values (patient ids, names, dates, UIDs).

Raw identifying values never enter the store, an export, a message or a log: importers pass
them through :class:`Pseudonymizer` and keep only the digest.

The convention (the same for every importer, so one patient gets one node whichever source
named it):

* **Key**: the UTF-8 bytes of the project secret with surrounding whitespace removed. The
  secret is read from ``$PROVGRAPH_SECRET`` (the secret itself), else from the file named by
  ``$PROVGRAPH_SECRET_FILE``, else from ``<bundle>/.provgraph/secret``, which is created on
  first need with 64 random hex characters and mode 0600. It must be at least 32 characters
  and, when read from a file, not readable by group or others. The secret is never stored in
  the graph; lose it and the pseudonyms can no longer be reproduced.
* **Message**: ``kind + "\\0" + value``, UTF-8, where ``value`` is the identifier as the source
  writes it, Unicode NFC-normalised with leading and trailing whitespace and NUL padding
  removed. ``kind`` is ``patient`` for a patient identifier from any source (MIMIC
  ``subject_id``, DICOM PatientID, a cohort manifest's ``patient_key``), and the DICOM keyword
  for other attributes (``PatientName``, ``PatientBirthDate``, ``AccessionNumber``,
  ``StudyInstanceUID``, ...).
* **Digest**: HMAC-SHA256, lower-case hex. A patient node is ``ctx.iri("patient", digest)``.

The key id (a digest of a fixed message) identifies which secret made a pseudonym without
revealing it; importers that pseudonymise include it in their no-op key, so changing the
secret re-imports them.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
import unicodedata
from pathlib import Path

from provgraph.errors import UsageError

ENV_SECRET = "PROVGRAPH_SECRET"
ENV_SECRET_FILE = "PROVGRAPH_SECRET_FILE"
SECRET_FILE = "secret"
MIN_SECRET = 32
PATIENT = "patient"


def normalise(value: object) -> str:
    """An identifier as it enters the HMAC: NFC text without surrounding whitespace or NULs.

    >>> normalise("  10000032 ")
    '10000032'
    """
    return unicodedata.normalize("NFC", str(value)).strip(" \t\r\n\x00")


class Pseudonymizer:
    """HMAC-SHA256 of identifying values under one project secret."""

    def __init__(self, secret: str) -> None:
        key = secret.strip()
        if len(key) < MIN_SECRET:
            raise UsageError(
                f"the pseudonymisation secret must be at least {MIN_SECRET} characters "
                f"(got {len(key)}); see `provgraph ingest --help`"
            )
        self._key = key.encode("utf-8")
        self.key_id = self.digest("provgraph-key-id", "provgraph")[:16]

    def digest(self, kind: str, value: object) -> str:
        """Keyed hash of ``value`` (normalised) in the domain ``kind``."""
        message = f"{kind}\x00{normalise(value)}".encode()
        return hmac.digest(self._key, message, "sha256").hex()

    def optional(self, kind: str, value: object) -> str | None:
        """Like :meth:`digest`, but None for a missing or blank value."""
        if value is None or not normalise(value):
            return None
        return self.digest(kind, value)

    def patient(self, value: object) -> str | None:
        """The patient pseudonym of a raw patient identifier (None when blank)."""
        return self.optional(PATIENT, value)


def load_secret(default_file: Path) -> str:
    """The project secret: ``$PROVGRAPH_SECRET``, ``$PROVGRAPH_SECRET_FILE`` or ``default_file``.

    ``default_file`` is created (mode 0600, 64 random hex characters) when none is set.
    """
    value = os.environ.get(ENV_SECRET)
    if value:
        return value
    named = os.environ.get(ENV_SECRET_FILE)
    path = Path(named) if named else default_file
    if not path.exists():
        if named:
            raise UsageError(f"{path}: ${ENV_SECRET_FILE} names a file that does not exist")
        _create_secret(path)
    return _read_secret(path)


def _create_secret(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    ignore = path.parent / ".gitignore"
    if not ignore.exists():  # the bundle's state folder never belongs in version control
        ignore.write_text("*\n", encoding="utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # another process made it first
    except OSError as err:
        raise UsageError(f"{path}: cannot create the pseudonymisation secret: {err.strerror}") from err
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(secrets.token_hex(32) + "\n")


def _read_secret(path: Path) -> str:
    try:
        mode = path.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise UsageError(
                f"{path}: the pseudonymisation secret is accessible to group or others; "
                f"run `chmod 600 {path}`"
            )
        return path.read_text(encoding="utf-8")
    except OSError as err:
        raise UsageError(f"{path}: cannot read the pseudonymisation secret: {err.strerror}") from err
    except UnicodeDecodeError as err:
        raise UsageError(f"{path}: the pseudonymisation secret is not UTF-8 text") from err
