"""One exception root for the whole project.

Every error a user can cause derives from :class:`ProvgraphError` and carries the exit code
the CLI returns for it; the CLI prints ``str(err)`` as one line on stderr, never a traceback.
"""

from __future__ import annotations

from enum import IntEnum
from pathlib import Path


class ExitCode(IntEnum):
    """What the ``provgraph`` command exits with (the README's "Exit codes" table)."""

    #: Success; for ``check``, the gate passes.
    OK = 0
    #: The gate fails: ``check`` (and ``lineage``, ``release``) found blocking violations.
    VIOLATIONS = 1
    #: Usage or input error (bad option, contract or records), or the store cannot be used.
    USAGE = 2
    #: A bug in provgraph (an unexpected exception); ``-v`` shows the traceback.
    INTERNAL = 3
    #: Interrupted (Ctrl-C): the command stopped at once; the store keeps its last complete state.
    INTERRUPTED = 130


class ProvgraphError(Exception):
    """Root of all provgraph errors."""

    exit_code: ExitCode = ExitCode.USAGE


class UsageError(ProvgraphError):
    """The command line or the project layout is wrong (missing bundle, bad option value)."""


class InputError(ProvgraphError):
    """An input file cannot be read or does not have the expected shape.

    The message always names the file and, when known, the line or record.
    """

    def __init__(self, path: str | Path, reason: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {reason}")


class ContractError(InputError):
    """The contract file (``provgraph.toml``) is invalid: unknown key, wrong type, bad value."""

    def __init__(self, path: str | Path, key: str, reason: str, line: int | None = None) -> None:
        self.key = key
        super().__init__(path, f"{key}: {reason}" if key else reason, line)


class ImporterError(ProvgraphError):
    """Importer selection failed: unknown name, no match, or a tie between candidates."""


class StoreError(ProvgraphError):
    """The store cannot be opened, read or written."""


class StoreUnavailable(StoreError):
    """The store's server cannot be reached, stopped answering, or refuses the client.

    Unlike a query the server rejects, this stops a check at once: no rule result after it
    could be trusted, so the gate fails closed with this one line.
    """


class StoreChanged(StoreError):
    """Another client replaced graphs while a command was reading a shared store."""


class RuleError(ProvgraphError):
    """A rule file is malformed (bad header, unknown clause or severity)."""


class MissingExtraError(ProvgraphError):
    """An optional program or package is needed; the message says how to install it."""
