"""A tiny HTTP server in the test process that misbehaves on purpose, chosen by the first path
segment of the URL: `/<mode>/api/v1/system` answers as `<mode>` says. Every delay is bounded."""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SLOW_SECONDS = 5.0
"""How long the slow modes take, far beyond the client timeout the tests set."""
HANG_SECONDS = 12.0
"""How long `hang` holds a request: beyond the 5 s a stop used to wait."""
LATE_SECONDS = 1.0
"""How long `late` takes before it answers `get_system` well."""
SYSTEM = {
    "mode": "running",
    "trading_enabled": True,
    "mode_reason": None,
    "account": "fake",
    "base_currency": "USD",
    "equity": 1.0,
    "cash": 1.0,
    "gross_exposure": 0.0,
    "net_exposure": 0.0,
    "unrealized_pnl": 0.0,
    "open_positions": 0,
    "open_orders": 0,
    "daemon_version": "0",
    "started_at": "2026-01-01T00:00:00Z",
    "last_heartbeat_at": "2026-01-01T00:00:00Z",
    "updated_at": "2026-01-01T00:00:00Z",
}


def _envelope(code: str, message: str) -> bytes:
    return json.dumps({"ok": False, "error": {"code": code, "message": message}}).encode()


BODIES: dict[str, tuple[int, str, bytes]] = {
    "text": (200, "text/plain", b"all good, honestly"),
    "html": (200, "text/html", b"<!doctype html><html><body><h1>Welcome</h1></body></html>"),
    "wrong-envelope": (200, "application/json", b'{"status": "fine", "data": {"mode": "x"}}'),
    "ok-without-data": (200, "application/json", b'{"ok": true}'),
    "json-array": (200, "application/json", b"[1, 2, 3]"),
    "html-500": (500, "text/html", b"<html><body>Internal Server Error</body></html>"),
    "bad-utf8": (200, "application/json", b'{"ok": true, "data": "\xff\xfe"}'),
}
"""Answers that are not the documented envelope and payload."""

REFUSALS: dict[str, tuple[int, str, bytes]] = {
    "locked": (429, "application/json", _envelope("locked_out", "too many failures")),
    "limited": (429, "application/json", _envelope("rate_limited", "slow down")),
    "unavailable": (503, "application/json", _envelope("unavailable", "data unreadable")),
    "bad-gateway": (502, "text/html", b"<html><body>502 Bad Gateway</body></html>"),
    "gateway-timeout": (504, "text/html", b"<html><body>504 Gateway Time-out</body></html>"),
}
"""Well-formed refusals that the stubs never give in these tests' set-ups."""
HEADERS: dict[str, dict[str, str]] = {
    "locked": {"Retry-After": "840"},
    "limited": {"Retry-After": "30"},
    "unavailable": {"Retry-After": "7"},
}

RECORD_TEXT = 60 * 1024
"""The text in each record of a large page: about the largest intel envelope the service takes."""
INTEL_RECORD = {
    "id": "intel-0",
    "schema": "svc.intel.v1",
    "source": "fake",
    "kind": "note",
    "issued_at": "2026-01-01T00:00:00Z",
    "expires_at": None,
    "received_at": "2026-01-01T00:00:00Z",
    "body": {"text": "x" * RECORD_TEXT},
}
CATALOG_RECORD = {
    "id": "surface-0",
    "name": "x" * RECORD_TEXT,
    "version": "1",
    "channels": ["web"],
    "governanceState": "approved",
    "visibility": "public",
}


@functools.cache
def large_page(path: str, size: int) -> bytes:
    """A well-formed page of about `size` bytes of large records: `get_intel`'s for
    `/api/v1/intel`, `portal_catalog`'s otherwise."""
    record = INTEL_RECORD if path.endswith("/api/v1/intel") else CATALOG_RECORD
    count = max(size // len(json.dumps(record)), 1)
    return json.dumps({"ok": True, "data": [record] * count}).encode()


SENT: dict[str, list[int]] = {}
"""Bytes of each chunked answer that went out before the client stopped reading, per mode
(`chunked` for every size)."""

ARRIVALS: Counter[str] = Counter()
"""Requests received so far, per mode (a test polls it to know a call reached the server)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        return

    def do_GET(self) -> None:
        mode = self.path.split("/")[1]
        ARRIVALS[mode] += 1
        if mode == "echo":
            self._echo()
        elif mode == "slow":
            time.sleep(SLOW_SECONDS)
            self._send(200, "application/json", b'{"ok": true, "data": {}}')
        elif mode == "hang":
            time.sleep(HANG_SECONDS)
            self._send(200, "application/json", b'{"ok": true, "data": {}}')
        elif mode == "fast":
            self._send(200, "application/json", json.dumps({"ok": True, "data": SYSTEM}).encode())
        elif mode == "late":
            time.sleep(LATE_SECONDS)
            self._send(200, "application/json", json.dumps({"ok": True, "data": SYSTEM}).encode())
        elif mode == "huge":
            self._huge()
        elif mode.startswith("big-"):
            self._send(
                200,
                "application/json",
                large_page(self.path.split("?")[0], int(mode.removeprefix("big-"))),
            )
        elif mode.startswith("chunked-"):
            self._chunked(large_page(self.path.split("?")[0], int(mode.removeprefix("chunked-"))))
        elif mode == "trickle":
            self._trickle()
        else:
            status, content_type, body = {**BODIES, **REFUSALS}[mode]
            self._send(status, content_type, body, HEADERS.get(mode, {}))

    do_POST = do_GET

    def _send(
        self, status: int, content_type: str, body: bytes, headers: dict[str, str] | None = None
    ) -> None:
        with contextlib.suppress(OSError):
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def _echo(self) -> None:
        """A hostile backend: healthy, says auth is required, and refuses every other request
        with a 401 whose message repeats the credential it was sent, raw, escaped and in base64."""
        path = self.path.split("?")[0].removeprefix("/echo")
        if path == "/health/live":
            self._send(200, "application/json", b'{"ok": true, "data": {"status": "live"}}')
            return
        if path == "/api/v1/auth/status":
            body = {"ok": True, "data": {"auth_required": True, "authenticated": False}}
            self._send(200, "application/json", json.dumps(body).encode())
            return
        sent = self.headers.get("Authorization", "")
        token = sent.partition(" ")[2]
        said = f"bad credential {sent!r} {token} {base64.b64encode(token.encode()).decode()}"
        self._send(401, "application/json", _envelope("unauthorized", said))

    def _huge(self) -> None:
        """Says a gigabyte follows, sends a few bytes, then holds the connection."""
        with contextlib.suppress(OSError):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(1 << 30))
            self.end_headers()
            self.wfile.write(b'{"ok": true, "data": "')
            self.wfile.flush()
            time.sleep(SLOW_SECONDS)
        self.close_connection = True

    def _chunked(self, body: bytes) -> None:
        """The whole answer in 64 KiB chunks, with no Content-Length to refuse it by."""
        sent = 0
        with contextlib.suppress(OSError):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            view = memoryview(body)
            for start in range(0, len(body), 64 * 1024):
                piece = view[start : start + 64 * 1024]
                self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
                sent += len(piece)
            self.wfile.write(b"0\r\n\r\n")
        SENT.setdefault("chunked", []).append(sent)
        self.close_connection = True

    def _trickle(self) -> None:
        """Headers at once, then one byte every 0.1 s: no single read ever times out."""
        with contextlib.suppress(OSError):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            deadline = time.monotonic() + SLOW_SECONDS
            while time.monotonic() < deadline:
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.1)
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    """A burst's connections wait in the listen queue until the accepting thread takes them. At
    the default 5, a burst of 16 overflowed it (the kernel's ListenOverflows counted each), and
    a loaded machine retried those SYNs past the gateway's 5 s connect timeout."""


@contextlib.contextmanager
def fake_backend() -> Iterator[str]:
    """The base URL (`http://127.0.0.1:PORT`) of a misbehaving server, stopped afterwards."""
    server = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
