"""Modules imported on first use, so that a row's lazy reference to its record model costs
nothing until a schema or a check needs it."""

from __future__ import annotations

import importlib
from typing import Any


def lazy_module(name: str) -> Any:
    """A stand-in for the module `name`, imported on first attribute access. Bound under
    `if not TYPE_CHECKING`, beside a real import for the type checker, so that
    `lambda: models.Record` is checked and costs nothing until it runs."""
    return _LazyModule(name)


class _LazyModule:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)
