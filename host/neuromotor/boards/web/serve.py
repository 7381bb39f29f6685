"""Serve the browser board's page on 127.0.0.1: the static site (boards/browser/site/) and
the build's micropython.mjs and micropython.wasm (`make firmware BOARD=browser`), each with
its MIME type (a browser compiles .wasm as it streams in only as application/wasm, and
runs module scripts only as JavaScript). Only GET and HEAD of those files; nothing else
on the machine is reachable through it."""

import http.server
import threading
from pathlib import Path

from neuromotor.errors import UserError
from neuromotor.paths import BOARDS_DIR, cache_dir

HOST = "127.0.0.1"
SITE_DIR = BOARDS_DIR / "browser" / "site"
BUILD_FILES = ("micropython.mjs", "micropython.wasm")
MIME = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".wasm": "application/wasm",
    ".nmp": "application/octet-stream",
}


def build_dir() -> Path:
    return cache_dir() / "firmware" / "browser"


def check_build(build=None) -> Path:
    """The build directory, or UserError naming the command that makes it."""
    build = Path(build) if build is not None else build_dir()
    missing = [f for f in BUILD_FILES if not (build / f).is_file()]
    if missing:
        raise UserError(f"the browser build is missing ({build / missing[0]}): run `make firmware BOARD=browser`")
    return build


def site_files(build: Path) -> dict:
    """URL path -> file: every file of the site and the two build files, nothing else."""
    files = {"/" + p.name: p for p in SITE_DIR.iterdir() if p.is_file() and p.suffix in MIME}
    files.update({"/" + name: build / name for name in BUILD_FILES})
    files["/"] = SITE_DIR / "index.html"
    return files


class _Handler(http.server.BaseHTTPRequestHandler):
    files: dict = {}
    quiet = True

    def _send(self, body_too):
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        f = self.files.get(path)
        if f is None or not f.is_file():
            self.send_error(404, "not part of the page")
            return
        data = f.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", MIME[f.suffix])
        self.send_header("Content-Length", str(len(data)))
        # the build changes under the same names: the browser asks again each load
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        if body_too:
            self.wfile.write(data)

    def do_GET(self):  # noqa: N802 (http.server's names)
        self._send(True)

    def do_HEAD(self):  # noqa: N802
        self._send(False)

    def log_message(self, fmt, *args):
        if not self.quiet:
            super().log_message(fmt, *args)


def make_server(port: int = 8000, build=None, quiet: bool = True) -> http.server.ThreadingHTTPServer:
    """A server bound to 127.0.0.1:port (0: any free port; its .server_port says which)."""
    build = check_build(build)
    handler = type("Handler", (_Handler,), {"files": site_files(build), "quiet": quiet})
    try:
        server = http.server.ThreadingHTTPServer((HOST, port), handler)
    except OSError as exc:
        raise UserError(f"cannot serve on {HOST}:{port} ({exc.strerror}): pick another --port") from None
    server.daemon_threads = True
    return server


def url(server) -> str:
    return f"http://{HOST}:{server.server_port}/"


class Background:
    """make_server() run in a thread: `with Background() as srv: srv.url`."""

    def __init__(self, port: int = 0, build=None):
        self.server = make_server(port, build)
        self.url = url(self.server)
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self._thread.join()
