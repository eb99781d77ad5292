"""A scriptable authorization server on loopback for the key-set cases: its metadata and key set
over real HTTP, keys it adds and withdraws at will, tokens it signs with any key and any claims,
and ways to misbehave on the key set: a byte a second, a key set of any size (streamed, never
held), or no answer at all."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

from tests.oauth.conftest import signing_key

RESOURCE = "http://127.0.0.1:9/mcp"


class HostileIssuer:
    def __init__(self) -> None:
        self.private: dict[str, ec.EllipticCurvePrivateKey] = {}
        self.published: dict[str, dict[str, Any]] = {}
        self.drip_seconds = 0.0
        """Seconds between two bytes of the key set (0: all at once)."""
        self.padding = 0
        """Bytes of padding in the key set's JSON, streamed in 64 kB pieces."""
        self.delay_seconds = 0.0
        """Seconds before the key set's answer begins."""
        self.silent = False
        """Accept the key set's request and never answer it."""
        self.key_reads = 0
        self.introspections = 0
        self.introspection_status = 200
        """What the introspection endpoint answers; 200 says every token is inactive."""
        self.sent_bytes = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def add_key(self, kid: str) -> None:
        key, jwk = signing_key(kid)
        jwk = {name: value for name, value in jwk.items() if name != "d"}  # the public part
        self.private[kid], self.published[kid] = key, jwk

    def withdraw(self, kid: str) -> None:
        del self.published[kid]

    def token(self, kid: str, typ: str | None = "at+jwt", **claims: Any) -> str:
        """A token signed with `kid`'s key (published or not; a made-up kid gets a key of its
        own): the claims a valid token for RESOURCE carries, overridden by `claims`."""
        if kid not in self.private:
            self.private[kid] = signing_key(kid)[0]
        now = int(time.time())
        body = {
            "iss": self.issuer,
            "aud": RESOURCE,
            "sub": "alice",
            "client_id": "ci",
            "scope": "svc:read",
            "iat": now,
            "exp": now + 600,
            **claims,
        }
        headers: dict[str, Any] = {"kid": kid, "typ": typ}  # None: no typ at all
        return jwt.encode(body, self.private[kid], algorithm="ES256", headers=headers)

    def _key_set(self) -> bytes:
        return json.dumps({"keys": list(self.published.values())}).encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/.well-known/oauth-authorization-server":
                    document = {
                        "issuer": issuer.issuer,
                        "jwks_uri": issuer.issuer + "/jwks",
                        "introspection_endpoint": issuer.issuer + "/introspect",
                    }
                    self._send(json.dumps(document).encode())
                elif self.path == "/jwks":
                    issuer.key_reads += 1
                    self._key_set()
                else:
                    self.send_error(404)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path != "/introspect":
                    self.send_error(404)
                    return
                issuer.introspections += 1
                self._send(b'{"active": false}', issuer.introspection_status)

            def _send(self, body: bytes, status: int = 200) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _key_set(self) -> None:
                if issuer.silent:
                    time.sleep(60)
                    return
                time.sleep(issuer.delay_seconds)
                body = issuer._key_set()
                if not issuer.drip_seconds and not issuer.padding:
                    self._send(body)
                    return
                head = body[:-1] + b', "padding": "'
                size = len(head) + issuer.padding + 2
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(size))
                self.end_headers()
                try:
                    for piece in _pieces(head, issuer.padding, 1 if issuer.drip_seconds else 65536):
                        self.wfile.write(piece)
                        self.wfile.flush()
                        issuer.sent_bytes += len(piece)
                        time.sleep(issuer.drip_seconds)
                except OSError:
                    pass  # the reader gave up, as it should

        return Handler


def _pieces(head: bytes, padding: int, size: int) -> Iterator[bytes]:
    """`head`, `padding` bytes of x and the closing `"}`, in pieces of `size`, made as sent."""
    for start in range(0, len(head), size):
        yield head[start : start + size]
    filler = b"x" * size
    for start in range(0, padding, size):
        yield filler[: min(size, padding - start)]
    yield b'"}'[: max(size, 2)]


@contextmanager
def hostile_issuer(*kids: str) -> Iterator[HostileIssuer]:
    issuer = HostileIssuer()
    for kid in kids:
        issuer.add_key(kid)
    thread = threading.Thread(target=issuer.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        issuer.server.shutdown()
        issuer.server.server_close()
