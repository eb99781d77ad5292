"""How the stdio server stops without dropping a call: on SIGTERM or when the host closes stdin,
it reads no new message, lets the requests already read finish and writes their answers (for at
most a grace period, longer than any call may take), then ends.

Stdin is read through a non-blocking pipe rather than the SDK's worker thread, so a stop on
SIGTERM need not wait for a line that never comes. Each request read is remembered until its
answer is written; the stream the server reads ends only once none is left.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
from collections.abc import AsyncIterator
from typing import Any

import anyio
from mcp import JSONRPCError, JSONRPCResponse

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest message line read; far beyond any call this server takes."""


class StdinLines:
    """Stdin's lines as the SDK's stdio transport reads them, ending on EOF or SIGTERM once every
    request read has been answered (or `grace` seconds have passed)."""

    def __init__(self, reader: asyncio.StreamReader, grace: float) -> None:
        self._reader = reader
        self._grace = grace
        self._stop = anyio.Event()
        self._pending: set[Any] = set()
        self._answered = anyio.Event()

    def stop(self) -> None:
        self._stop.set()

    def answered(self, item: Any) -> None:
        """Called for every message written (a `SessionMessage`): an answer settles its
        request."""
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            self._pending.discard(message.id)
            self._answered.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while True:
            line = await self._next_line()
            if not line:
                await self._drain()
                return
            self._note(line)
            yield line.decode("utf-8", errors="replace")

    async def _next_line(self) -> bytes:
        """The next line, or b"" at EOF or once a stop is asked for."""
        line = b""
        async with anyio.create_task_group() as group:

            async def read() -> None:
                nonlocal line
                try:
                    line = await self._reader.readline()
                except (ValueError, OSError):  # a line over the limit, a broken pipe: the end
                    line = b""
                group.cancel_scope.cancel()

            async def stopped() -> None:
                await self._stop.wait()
                group.cancel_scope.cancel()

            group.start_soon(read)
            group.start_soon(stopped)
        return line

    def _note(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if isinstance(message, dict) and "method" in message and "id" in message:
            self._pending.add(message["id"])

    async def _drain(self) -> None:
        with anyio.move_on_after(self._grace):
            while self._pending:
                self._answered = anyio.Event()
                await self._answered.wait()


class AnsweringStream:
    """The server's write stream, telling `lines` of every answer that goes out."""

    def __init__(self, inner: Any, lines: StdinLines) -> None:
        self._inner = inner
        self._lines = lines

    async def send(self, item: Any, /) -> None:
        await self._inner.send(item)
        self._lines.answered(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnsweringStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc)
        return result


async def stdin_lines(grace: float) -> StdinLines | None:
    """Stdin read without a thread, or None when it is not a pipe or a socket (a terminal, a
    file): the SDK's own reader then serves, and a stop does not wait for calls."""
    mode = os.fstat(0).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    pipe = os.fdopen(os.dup(0), "rb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    return StdinLines(reader, grace)


async def stop_on_sigterm(lines: StdinLines) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            lines.stop()
            return
