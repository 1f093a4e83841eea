"""A real Virtuoso Open Source 7 (Debian package ``virtuoso-opensource``) on free loopback
ports, for the SPARQL server backend tests: its own database folder and ``virtuoso.ini``, run
in the foreground, ``SPARQL_UPDATE`` granted to the ``SPARQL`` user through ``isql``.

The ini keys are those of the package's own ``/etc/virtuoso-opensource-7/virtuoso.ini`` and of
Virtuoso's documentation (https://docs.openlinksw.com/virtuoso/dbadm/, "Virtuoso Configuration
File"); the grant is the one its SPARQL documentation asks for updates over HTTP
(https://docs.openlinksw.com/virtuoso/rdfsparqlprotocolendpoint/).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

from oxigraph_server import free_port

from provgraph.store.endpoint import PRESETS

INSTALL = "apt-get install virtuoso-opensource (Debian/Ubuntu; the server is `virtuoso-t`)"

#: The ini, as the package writes it, cut to what a private test server needs. The result
#: and time limits are switched off: with the package's ResultSetMaxRows = 10000 Virtuoso
#: returns the first 10,000 rows of a larger answer as if they were all of it, and with
#: MaxQueryExecutionTime it returns what it found in time ("anytime" answers).
INI = """\
[Database]
DatabaseFile = {d}/virtuoso.db
ErrorLogFile = {d}/virtuoso.log
LockFile = {d}/virtuoso.lck
TransactionFile = {d}/virtuoso.trx
xa_persistent_file = {d}/virtuoso.pxa
FileExtend = 200
Striping = 0
TempStorage = TempDatabase

[TempDatabase]
DatabaseFile = {d}/virtuoso-temp.db
TransactionFile = {d}/virtuoso-temp.trx
Striping = 0

[Parameters]
ServerPort = 127.0.0.1:{sql}
DisableUnixSocket = 1
CheckpointInterval = 0
NumberOfBuffers = {buffers}
MaxDirtyBuffers = {dirty}
ThreadsPerQuery = 2
DirsAllowed = .

[HTTPServer]
ServerPort = 127.0.0.1:{http}
ServerRoot = {d}
ServerThreads = 4
MaxKeepAlives = 4
EnabledGzipContent = 0

[SPARQL]
ResultSetMaxRows = {rows}
MaxQueryExecutionTime = 0
MaxQueryCostEstimationTime = 0
"""


def virtuoso_binaries() -> tuple[str, str] | None:
    """``virtuoso-t`` and its ``isql`` (Debian names it ``isql-vt``), or None."""
    server = shutil.which("virtuoso-t")
    isql = shutil.which("isql-vt") or shutil.which("isql")
    return (server, isql) if server and isql else None


class VirtuosoServer:
    """``virtuoso-t`` on 127.0.0.1 with its database in ``folder``; ``url`` is the provgraph
    store URL (the ``virtuoso`` preset on the server root)."""

    def __init__(self, folder: Path, max_rows: int = 0, buffers: int = 20_000) -> None:
        found = virtuoso_binaries()
        if found is None:
            raise RuntimeError(f"Virtuoso is not installed: {INSTALL}")
        self.server_bin, self.isql_bin = found
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.max_rows = max_rows  # ResultSetMaxRows: 0 for none, as provgraph needs
        self.buffers = buffers  # NumberOfBuffers, 8 KiB pages (MaxDirtyBuffers three fifths of it)
        self.proc: subprocess.Popen[bytes] | None = None
        self.sql_port = self.http_port = 0

    #: the engine's name, as ``provgraph info`` shows it after the server's address
    engine = "virtuoso"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def url(self) -> str:
        return f"virtuoso+{self.base}"

    def start(self, timeout: float = 120.0) -> VirtuosoServer:
        for _ in range(3):  # another process may take a free port before the server binds it
            self.sql_port, self.http_port = free_port(), free_port()
            ini = self.folder / "virtuoso.ini"
            ini.write_text(
                INI.format(
                    d=self.folder,
                    sql=self.sql_port,
                    http=self.http_port,
                    rows=self.max_rows,
                    buffers=self.buffers,
                    dirty=self.buffers * 3 // 5,
                )
            )
            log = (self.folder / "server.log").open("ab")
            self.proc = subprocess.Popen(
                [self.server_bin, "+foreground", "+configfile", str(ini)],
                cwd=self.folder,
                stdout=log,
                stderr=log,
            )
            log.close()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                if self._answers():
                    self._grant()
                    return self
                time.sleep(0.1)
            self.stop()
            for leftover in self.folder.glob("virtuoso*"):  # a half-created database
                if leftover.name != "virtuoso.ini":
                    leftover.unlink()
        raise RuntimeError(f"virtuoso-t did not start: {(self.folder / 'server.log').read_text()[-2000:]}")

    def _answers(self) -> bool:
        with contextlib.suppress(OSError):
            query = urllib.parse.urlencode({"query": "SELECT (1 AS ?x) WHERE {}"})
            req = urllib.request.Request(
                f"{self.base}/sparql?{query}", headers={"Accept": "application/sparql-results+xml"}
            )
            with urllib.request.urlopen(req, timeout=2) as resp:
                return resp.status == 200
        return False

    def _grant(self) -> None:
        """Updates over HTTP run as the SQL user ``SPARQL``, which may only read until granted
        ``SPARQL_UPDATE``; the default ``dba`` password of a fresh database is ``dba``."""
        self.sql('GRANT SPARQL_UPDATE TO "SPARQL";', allow="U0013")  # U0013: granted before

    def sql(self, statement: str, allow: str | None = None, timeout: float = 600) -> str:
        """Run one SQL statement as ``dba`` through isql (``CHECKPOINT;``, a grant); an error
        whose code is ``allow`` is not one."""
        proc = subprocess.run(
            [self.isql_bin, f"127.0.0.1:{self.sql_port}", "dba", "dba", f"exec={statement}"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        said = proc.stdout + proc.stderr
        if (proc.returncode != 0 or "Error" in said) and not (allow and allow in said):
            raise RuntimeError(f"isql could not run {statement!r}: {said}")
        return said

    def graphs(self) -> list[str]:
        """Every named graph provgraph minted (Virtuoso keeps system graphs of its own)."""
        query = urllib.parse.urlencode({"query": PRESETS["virtuoso"].graphs_query})
        req = urllib.request.Request(f"{self.base}/sparql?{query}", headers={"Accept": "text/csv"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            lines = resp.read().decode().splitlines()[1:]
        return [g.strip('"') for g in lines if g.startswith('"urn:provgraph:')]

    def clear(self) -> None:
        """Drop every provgraph graph (between bundles); Virtuoso's own graphs stay."""
        for graph in self.graphs():
            req = urllib.request.Request(
                f"{self.base}/sparql",
                data=f"DROP SILENT GRAPH <{graph}>".encode(),
                headers={"Content-Type": "application/sparql-update"},
                method="POST",
            )
            with urllib.request.urlopen(req, timeout=60) as resp:
                assert resp.status in (200, 204)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
