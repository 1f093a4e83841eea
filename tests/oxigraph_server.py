"""A real ``oxigraph serve`` (PyPI package ``oxigraph``) on a free loopback port, for the
SPARQL server backend tests."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path


def oxigraph_binary() -> str:
    """The ``oxigraph`` program of this environment (the test extra installs it)."""
    here = Path(sys.executable).parent / "oxigraph"
    found = str(here) if here.is_file() else shutil.which("oxigraph")
    if not found:
        raise RuntimeError(
            "the `oxigraph` server program is missing: pip install -e '.[test]' installs it (PyPI: oxigraph)"
        )
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OxigraphServer:
    """``oxigraph serve`` on 127.0.0.1 with its data in ``folder``; ``url`` is its base URL."""

    def __init__(self, folder: Path, *args: str) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.args = args
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    #: the engine's name, as ``provgraph info`` shows it after the store URL
    engine = "oxigraph"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base(self) -> str:
        """The server's address as provgraph names it (the store URL itself)."""
        return self.url

    def start(self, timeout: float = 30.0) -> OxigraphServer:
        for _ in range(3):  # another process may take the free port before the server binds it
            log = (self.folder / "server.log").open("ab")
            self.proc = subprocess.Popen(
                [
                    oxigraph_binary(),
                    "serve",
                    "-l",
                    str(self.folder / "data"),
                    "-b",
                    f"127.0.0.1:{self.port}",
                    *self.args,
                ],
                stdout=log,
                stderr=log,
            )
            log.close()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                if self._answers():
                    return self
                time.sleep(0.05)
            self.stop()
            self.port = free_port()
        raise RuntimeError(
            f"oxigraph serve did not start: {(self.folder / 'server.log').read_text()[-2000:]}"
        )

    def _answers(self) -> bool:
        with contextlib.suppress(OSError):
            req = urllib.request.Request(
                f"{self.url}/query?query=ASK%7B%7D", headers={"Accept": "application/sparql-results+json"}
            )
            with urllib.request.urlopen(req, timeout=2) as resp:
                return resp.status == 200
        return False

    def graphs(self) -> list[str]:
        """Every named graph provgraph minted (as :meth:`VirtuosoServer.graphs`)."""
        query = urllib.parse.urlencode({"query": "SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"})
        req = urllib.request.Request(f"{self.url}/query?{query}", headers={"Accept": "text/csv"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            lines = resp.read().decode().splitlines()[1:]
        return [g for g in lines if g.startswith("urn:provgraph:")]

    def clear(self) -> None:
        """Remove every graph (between bundles)."""
        req = urllib.request.Request(
            f"{self.url}/update",
            data=b"DROP ALL",
            headers={"Content-Type": "application/sparql-update"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status in (200, 204)

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        """SIGKILL: the server dies at once, like a crashed or powered-off host."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)  # a stopped process must run to die cleanly
            self.proc.kill()
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
