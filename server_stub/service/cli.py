"""`svc-stub service ...` commands (the data service stub)."""

from __future__ import annotations

import typer


def register(app: typer.Typer, *, demo_data: typer.Typer, admin: typer.Typer) -> None:
    """Adds the data service's commands to `svc-stub`."""
