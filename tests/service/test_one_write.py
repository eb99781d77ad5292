"""Each stub response leaves in one write (svc_serving.one_write.HeadWithBody), and a response
without a body (HEAD) still sends its head."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import cast

from svc_serving.one_write import HeadWithBody
from tests.e2e import e2e_fixture
from tests.service.test_e2e import start
from tests.support import Server


class RecordingTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True


def transport() -> tuple[HeadWithBody, RecordingTransport]:
    recording = RecordingTransport()
    return HeadWithBody(cast(asyncio.Transport, recording)), recording


def test_the_head_leaves_with_the_first_body_write_then_writes_pass_through() -> None:
    one, recording = transport()
    one.write(b"HEAD\r\n\r\n")
    assert recording.writes == []
    one.write(b"body")
    one.write(b"more")
    one.flush()
    assert recording.writes == [b"HEAD\r\n\r\nbody", b"more"]


def test_a_head_without_body_leaves_on_flush_or_close() -> None:
    one, recording = transport()
    one.write(b"HEAD\r\n\r\n")
    one.flush()
    assert recording.writes == [b"HEAD\r\n\r\n"]
    other, recording = transport()
    other.write(b"HEAD\r\n\r\n")
    other.close()
    assert recording.writes == [b"HEAD\r\n\r\n"]
    assert recording.closed


@e2e_fixture()
def server(demo_db: Path, tmp_path: Path) -> Iterator[Server]:
    yield from start(demo_db, tmp_path / "server.log")


def test_head_then_get_pipelined_on_a_real_server_are_both_answered(server: Server) -> None:
    port = int(server.base_url.rsplit(":", 1)[1])
    request = "{} /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall((request.format("HEAD") + request.format("GET")).encode())
        received = b""
        while received.count(b"HTTP/1.1 200") < 2 or not received.endswith(b"}"):
            chunk = sock.recv(65536)
            assert chunk, f"connection closed after {received!r}"
            received += chunk
    head, _, get = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"cache-control: no-store" in head
    assert get.startswith(b"HTTP/1.1 200")
    assert get.endswith(b'{"ok":true,"data":{"status":"live"}}')
