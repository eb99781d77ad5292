"""Giving memory back to the system after large answers (issue 33, finding 7).

glibc's malloc keeps the memory of freed objects for its next allocations instead of returning
it: after 16 answers of 8 MB at once a gateway measured 86 MiB idle, 300 MiB at the peak and
200 MiB for good afterwards. `malloc_trim(0)` returns the free pages (to 100 MiB in the same run;
bench/gateway_memory.py). It is called on the event loop every `TRIM_EVERY_SECONDS` while large
answers arrive and until `QUIET_SECONDS` have passed without one, so the last trim comes after
the last large result has been sent. Small answers never trigger it. Where the C library has no
`malloc_trim` (musl, macOS) this does nothing.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from functools import cache

LARGE_ANSWER_BYTES = 1024 * 1024
"""An answer at least this large is worth giving back; a trim walks the whole heap."""
TRIM_EVERY_SECONDS = 1.0
QUIET_SECONDS = 3.0
"""How long after the last large answer the trims go on: its result is still being sent."""

_last_large = 0.0
_armed: asyncio.AbstractEventLoop | None = None
"""The loop a trim is due on; a loop that ended with one due (`asyncio.run` in doctor) is not
this one, so the next loop arms its own."""


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None; loaded on the first large answer (ctypes costs start-up)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim  # dlopen(NULL): no file read
    except (OSError, AttributeError):
        return None
    return trim


def answer_read(size: int) -> None:
    """Called on the event loop when an answer of `size` bytes has been read."""
    global _last_large, _armed
    if size < LARGE_ANSWER_BYTES or _malloc_trim() is None:
        return
    _last_large = time.monotonic()
    loop = asyncio.get_running_loop()
    if _armed is not loop:
        _armed = loop
        loop.call_later(TRIM_EVERY_SECONDS, _trim)


def _trim() -> None:
    global _armed
    trim = _malloc_trim()
    assert trim is not None
    trim(0)
    if time.monotonic() - _last_large < QUIET_SECONDS:
        asyncio.get_running_loop().call_later(TRIM_EVERY_SECONDS, _trim)
    else:
        _armed = None
