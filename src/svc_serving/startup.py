"""The start-up of a long-running server process."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def long_lived_imports() -> Iterator[None]:
    """A server's imports, made without the cyclic garbage collector. They make objects (classes,
    the SDK's hundreds of pydantic models, routes) that live as long as the process, so collecting
    while they are made costs CPU and frees nothing: a fifth of a stdio server's start-up
    (bench/stdio_startup.py). Afterwards the collector leaves them out of its passes for good
    (`gc.freeze`)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
