"""Catches any file opened for writing, through `sys.addaudithook` (PEP 578).

Audit hooks cannot be removed, so one hook per process records into whichever `WriteRecorder`
is active. Used in-process by the tests and inside the real portal process by `audited_portal`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_MUTATING_EVENTS = {
    "os.remove",
    "os.rename",
    "os.rmdir",
    "os.mkdir",
    "os.truncate",
    "os.chmod",
    "os.utime",
    "shutil.rmtree",
    "shutil.copyfile",
    "shutil.move",
}
_active: list[list[str]] = []


def writes_in(event: str, args: tuple[Any, ...]) -> str | None:
    """A description of the write this audit event is, or None."""
    if event == "open":
        path, mode, flags = ([*list(args), None, None, 0])[:3]
        by_mode = isinstance(mode, str) and any(c in mode for c in "wax+")
        by_flags = isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
        if by_mode or by_flags:
            return f"open {path!r} mode={mode!r} flags={flags!r}"
    elif event in _MUTATING_EVENTS:
        return f"{event} {args[0]!r}"
    return None


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if _active:
        found = writes_in(event, args)
        if found is not None:
            _active[-1].append(found)


_installed = False


def install() -> None:
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True


@contextmanager
def recording_writes() -> Iterator[list[str]]:
    install()
    found: list[str] = []
    _active.append(found)
    try:
        yield found
    finally:
        _active.remove(found)
