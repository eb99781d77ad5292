"""Background load on a real server, so that a test can check what a single request sees while
other requests keep the server busy."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import httpx

MAX_REQUESTS_PER_WORKER = 20_000
"""Bounds the load should a test hang; far more than a test needs."""


@contextmanager
def steady_load(
    base_url: str, path: str, headers: Mapping[str, str], *, workers: int = 4
) -> Iterator[list[int]]:
    """Runs `workers` threads, each with its own keep-alive connection, sending GET `path` until
    the block ends; yields the list of statuses answered (appended as they come)."""
    stop = threading.Event()
    statuses: list[int] = []

    def work() -> None:
        with httpx.Client(base_url=base_url, headers=dict(headers), timeout=10.0) as http:
            for _ in range(MAX_REQUESTS_PER_WORKER):
                if stop.is_set():
                    return
                statuses.append(http.get(path).status_code)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(workers)]
    for thread in threads:
        thread.start()
    try:
        yield statuses
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
