"""A backend's answer body, read as it streams and refused past the backend's size cap."""

from __future__ import annotations

import zlib
from typing import Protocol

from svc_mcp.core.connection import Connection
from svc_mcp.core.errors import ServerError


def too_large(connection: Connection, request: str) -> ServerError:
    """Not retryable: the same request gets the same answer; a page of fewer records may fit."""
    return ServerError(
        f"{connection.service} answered {request} with more than "
        f"{connection.max_answer_bytes / (1024 * 1024):g} MiB; refused (too large; where the "
        "tool takes a limit, a smaller one may fit)"
    )


def check_length(connection: Connection, request: str, content_length: str | None) -> None:
    """Refuses an answer that says it is too large before a byte of its body is read."""
    text = (content_length or "").strip()
    if text.isdigit() and int(text) > connection.max_answer_bytes:
        raise too_large(connection, request)


class Inflater(Protocol):
    """What a decompressor of `zlib.decompressobj()` offers here (its class is private)."""

    @property
    def unconsumed_tail(self) -> bytes: ...

    def decompress(self, data: bytes, max_length: int = 0, /) -> bytes: ...

    def flush(self, length: int = 16384, /) -> bytes: ...


class BodyReader:
    """Collects an answer's body as it streams, refused past the backend's `max_answer_bytes`
    once decoded.

    We ask for `identity`; a backend that compresses anyway with gzip or deflate is inflated
    here a bounded piece at a time (a few KiB of gzip can inflate to gigabytes), and any other
    coding is refused."""

    def __init__(self, connection: Connection, request: str, content_encoding: str | None):
        self._connection = connection
        self._request = request
        self._chunks: list[bytes] = []
        self._size = 0
        coding = (content_encoding or "identity").strip().lower()
        self._inflater: Inflater | None = None
        if coding in ("gzip", "x-gzip", "deflate"):
            # 47: a zlib or gzip header, detected; deflate servers send zlib-wrapped data.
            self._inflater = zlib.decompressobj(wbits=47)
        elif coding != "identity":
            raise ServerError(
                f"{connection.service} answered {request} in an encoding this client does not "
                "read although it asked for identity; refused"
            )

    def feed(self, chunk: bytes) -> None:
        inflater = self._inflater
        if inflater is None:
            self._keep(chunk)
            return
        data = chunk
        while data:
            limit = self._connection.max_answer_bytes
            self._keep(inflater.decompress(data, limit + 1 - self._size))
            data = inflater.unconsumed_tail

    def body(self) -> bytes:
        if self._inflater is not None:
            self._keep(self._inflater.flush())
        return b"".join(self._chunks)

    def _keep(self, data: bytes) -> None:
        self._size += len(data)
        if self._size > self._connection.max_answer_bytes:
            raise too_large(self._connection, self._request)
        self._chunks.append(data)
