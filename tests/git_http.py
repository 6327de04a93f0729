"""A git remote over smart HTTP on 127.0.0.1, as GitHub serves one to a push: `git http-backend`
behind http.server, answering only requests that carry the expected basic auth (others get
401 and are counted). For tests that a push authenticates the way CI sets it up."""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class _Server(ThreadingHTTPServer):
    root: Path
    expect: str
    denied: int


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        self._backend()

    def do_POST(self) -> None:  # noqa: N802
        self._backend()

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        data = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0], 16)
            chunk = self.rfile.read(size + 2)[:size]
            if not size:
                return data
            data += chunk

    def _backend(self) -> None:
        scheme, _, credentials = self.headers.get("Authorization", "").partition(" ")
        if (scheme.lower(), credentials) != ("basic", self.server.expect):  # scheme: any case
            self.server.denied += 1
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = self._body()
        path, _, query = self.path.partition("?")
        env = {"PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": str(self.server.root),
               "GIT_HTTP_EXPORT_ALL": "1", "REQUEST_METHOD": self.command, "PATH_INFO": path,
               "QUERY_STRING": query, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": "x-access-token",
               "REMOTE_ADDR": "127.0.0.1", "GIT_CONFIG_NOSYSTEM": "1",
               "HOME": str(self.server.root),
               "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
               "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", "")}
        out = subprocess.run(["git", "http-backend"], input=body, env=env,
                             capture_output=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            key, _, value = line.partition(": ")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers.append((key, value))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@dataclass
class GitHttp:
    server: _Server
    thread: threading.Thread

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{name}"

    @property
    def denied(self) -> int:
        return self.server.denied

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def start(root: Path, token: str) -> GitHttp:
    """Serve the repositories under `root` to requests authenticated as GitHub's
    `x-access-token:TOKEN`."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.root, server.denied = root, 0
    server.expect = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return GitHttp(server, thread)
