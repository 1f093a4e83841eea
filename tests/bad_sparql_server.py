"""A misbehaving SPARQL server on a free loopback port, for the HTTP answer-validation tests.

It is a real HTTP server (``http.server`` in a thread) in front of a real ``oxigraph serve``:
every request is forwarded, and the answers to the queries a test picks (by a substring of the
query text) come back broken in one chosen way, written byte for byte on the socket: cut
short, with a wrong ``Content-Length``, chunked without the final chunk, unframed and cut at a
line end, cut or non-JSON JSON, an HTML page, a 500.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl

#: Every way :class:`BadSparqlServer` can break an answer.
MODES = (
    "truncated",  # Content-Length of the whole answer, half of it sent, then the connection closes
    "short-length",  # Content-Length ends at a line end in the middle; the rest follows it
    "unterminated-chunks",  # chunked, the last chunk never comes
    "unframed-cut",  # neither Content-Length nor chunked, cut at a line end, connection closes
    "cut-json",  # a well-framed answer whose JSON document lacks its last character
    "not-json",  # Content-Type JSON, the body is not JSON
    "json-without-results",  # valid JSON, but neither "results" nor "boolean"
    "html",  # 200 with an HTML page (a login portal, a proxy's error page)
    "error-500",  # 500 with an HTML page
)


def _cut_at_line_end(body: bytes) -> bytes:
    """The first lines of ``body``, ending with a newline, about half of it."""
    end = body.rfind(b"\n", 0, max(1, len(body) // 2))
    return body[: end + 1] if end >= 0 else b""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: BadSparqlServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._forward(b"")

    def do_PUT(self) -> None:
        self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def do_POST(self) -> None:
        self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _forward(self, body: bytes) -> None:
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        req = urllib.request.Request(
            self.server.upstream + self.path, data=body or None, headers=headers, method=self.command
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                status, media, answer = resp.status, resp.headers.get("Content-Type", ""), resp.read()
        except urllib.error.HTTPError as err:
            status, media, answer = err.code, err.headers.get("Content-Type", ""), err.read()
        query = dict(parse_qsl(body.decode("utf-8", "replace"))).get("query", "")
        if self.path.startswith("/query") and self.server.picks(query):
            self.server.broken += 1
            self._broken(media, answer)
        else:
            self._send(status, media, answer)

    def _send(self, status: int, media: str, body: bytes, extra: str = "") -> None:
        head = f"HTTP/1.1 {status} X\r\nContent-Type: {media}\r\n{extra}"
        if "Content-Length" not in extra and "Transfer-Encoding" not in extra and "close" not in extra:
            head += f"Content-Length: {len(body)}\r\n"
        self.wfile.write(head.encode("latin-1") + b"\r\n" + body)
        self.wfile.flush()

    def _broken(self, media: str, body: bytes) -> None:
        mode = self.server.mode
        self.close_connection = True
        if mode == "truncated":
            self._send(200, media, body[: len(body) // 2], f"Content-Length: {len(body)}\r\n")
        elif mode == "short-length":
            self._send(200, media, body, f"Content-Length: {len(_cut_at_line_end(body))}\r\n")
        elif mode == "unterminated-chunks":
            half = len(body) // 2
            chunks = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:half], body[half:]) if p)
            self._send(200, media, chunks, "Transfer-Encoding: chunked\r\n")
        elif mode == "unframed-cut":
            self._send(200, media, _cut_at_line_end(body), "Connection: close\r\n")
        elif mode == "cut-json":
            self._send(200, "application/sparql-results+json", body.rstrip()[:-1])
        elif mode == "not-json":
            self._send(200, "application/sparql-results+json", b"Service temporarily overloaded\n")
        elif mode == "json-without-results":
            self._send(200, "application/sparql-results+json", b'{"head": {"vars": ["n"]}}')
        elif mode == "html":
            self._send(200, "text/html", b"<!DOCTYPE html>\n<html><body>Please log in</body></html>\n")
        elif mode == "error-500":
            self._send(500, "text/html", b"<html><body><h1>Internal Server Error</h1></body></html>\n")
        else:
            raise ValueError(mode)


class BadSparqlServer(ThreadingHTTPServer):
    """Forwards to ``upstream``; breaks the answers to queries containing ``pick`` with ``mode``."""

    daemon_threads = True

    def __init__(self, upstream: str, mode: str, pick: str = "") -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = upstream
        self.mode = mode
        self.pick = pick
        #: How many answers were broken (a test checks its target was reached).
        self.broken = 0
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    def picks(self, query: str) -> bool:
        return self.pick in query

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> BadSparqlServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
