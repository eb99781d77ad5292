"""A response's head and body in one write: one system call and one packet per response."""

from __future__ import annotations

import asyncio
from typing import Any


class HeadWithBody:
    """A transport for one response that sends its head with the first piece of its body: one
    write, so one system call and one packet, where uvicorn writes them one by one. Whatever
    else the response does (close, or completing without a body, as HEAD does) sends the held
    head first. For servers that answer with whole bodies, never a stream, so nothing waits on
    a head."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._held: bytes | None = None
        self._sent_head = False

    def write(self, data: bytes) -> None:
        if not self._sent_head and self._held is None:
            self._held = data
            return
        if self._held is not None:
            data, self._held = self._held + data, None
        self._sent_head = True
        self._transport.write(data)

    def flush(self) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            self._sent_head = True
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
