"""A small HTTP/1.1 keep-alive load generator and helpers shared by the benchmarks.

It speaks raw HTTP over asyncio streams so that the client costs little next to the server; every
benchmark compares two servers under the same generator, in the same run, so what it costs cancels.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import reserved_port, running_server  # noqa: E402

__all__ = ["cpu_seconds", "held_port", "median", "rps", "server_process"]

_HELD = ExitStack()
atexit.register(_HELD.close)


def held_port() -> int:
    """A port reserved (tests.support.reserved_port) until the benchmark ends: the server given
    it binds it, and no other process gets it meanwhile (a probed and released port it might)."""
    return int(_HELD.enter_context(reserved_port()))


async def _connection(
    host: str, port: int, request: bytes, deadline: float, counts: list[int]
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    done = 0
    try:
        while time.perf_counter() < deadline:
            writer.write(request)
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            if status != 200:
                raise RuntimeError(f"benchmark request answered {status}")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            done += 1
    finally:
        writer.close()
        counts.append(done)


def rps(
    port: int, path: str, headers: dict[str, str], *, seconds: float, connections: int = 8
) -> float:
    """Requests per second over `connections` keep-alive connections for `seconds`."""
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()

    async def run() -> float:
        counts: list[int] = []
        start = time.perf_counter()
        deadline = start + seconds
        await asyncio.gather(
            *(_connection("127.0.0.1", port, request, deadline, counts) for _ in range(connections))
        )
        return sum(counts) / (time.perf_counter() - start)

    return asyncio.run(run())


@contextmanager
def server_process(
    args: Sequence[str],
    port: int,
    log: Path,
    ready_path: str,
    env: Mapping[str, str] | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """`python <args>` (run from the checkout, which is on its path), once `ready_path` answers."""
    with running_server(
        args,
        port=port,
        log_path=log,
        ready_path=ready_path,
        env={"PYTHONPATH": str(ROOT), **(env or {})},
    ) as server:
        yield server.process


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process `pid` has used so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def median(values: Sequence[float]) -> float:
    return statistics.median(values)
