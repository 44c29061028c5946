"""The viewer served on loopback: the page, its assets and the payloads, nothing else.

Only what the named sources hold is ever read (payloads are built from them; no request names
a file), the socket binds 127.0.0.1, and a request whose Host header is not this server's own
address is refused, so a web page elsewhere cannot reach it through a rebound DNS name."""

from __future__ import annotations

import base64
import hashlib
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from pytest_agentbench.view.page import ASSETS, asset, mode_script, page
from pytest_agentbench.view.viewer import NotFound, Viewer

HOST = "127.0.0.1"
TYPES = {".js": "text/javascript", ".css": "text/css", ".md": "text/plain"}
MODE_HASH = base64.b64encode(hashlib.sha256(mode_script("server").encode()).digest()).decode()
POLICY = (
    f"default-src 'none'; script-src 'self' 'sha256-{MODE_HASH}'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, viewer: Viewer, port: int = 0) -> None:
        super().__init__((HOST, port), _Handler)
        self.viewer = viewer
        host, bound = str(self.server_address[0]), int(self.server_address[1])
        self.url = f"http://{host}:{bound}/"
        self.hosts = {f"{host}:{bound}", f"localhost:{bound}"}

    def start(self) -> threading.Thread:
        """Serve on a thread of its own (tests, and the command's foreground loop)."""
        thread = threading.Thread(target=self.serve_forever, name="agentbench-view", daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    protocol_version = "HTTP/1.1"
    # Headers and body leave in two writes; with Nagle's algorithm on a kept-alive connection
    # the second waits for the browser's delayed ACK, some 40 ms a request.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the URL, not every request."""

    def do_GET(self) -> None:
        if self.headers.get("Host") not in self.server.hosts:
            self._send(HTTPStatus.FORBIDDEN, b"unknown Host header\n", "text/plain")
            return
        path = unquote(urlsplit(self.path).path)
        try:
            if path in ("/", "/index.html"):
                self._send(HTTPStatus.OK, page("server").encode(), "text/html")
            elif path.startswith("/assets/") and path[len("/assets/") :] in ASSETS:
                name = path[len("/assets/") :]
                self._send(HTTPStatus.OK, asset(name), TYPES[name[name.rfind(".") :]])
            elif path.startswith("/api/"):
                body = self.server.viewer.text(path[len("/api/") :]).encode()
                self._send(HTTPStatus.OK, body, "application/json")
            else:
                self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")
        except NotFound:
            self._send(HTTPStatus.NOT_FOUND, b"no such payload\n", "text/plain")
        except (ValueError, OSError) as exc:  # a source that went bad while the view was open
            message = f"{type(exc).__name__}: {exc}\n".encode()
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, message, "text/plain")

    def _send(self, status: HTTPStatus, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", POLICY)
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(body)
