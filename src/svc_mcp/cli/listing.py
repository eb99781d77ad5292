"""`svc-mcp tools`: the selected rows as JSON, or as a table on a terminal."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from svc_mcp.core.toolspec import ToolSpec


def tool_summary(spec: ToolSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "toolset": spec.toolset,
        "backend": spec.backend.name,
        "method": spec.method,
        "path": spec.path,
        "cli": list(spec.cli),
        "access": spec.access,
        "annotations": spec.hints.annotations(),
        "inputSchema": spec.input_schema(),
    }


def print_json(specs: Sequence[ToolSpec]) -> None:
    print(json.dumps([tool_summary(spec) for spec in specs], indent=2))


def print_table(specs: Sequence[ToolSpec], console: Any = None) -> None:
    # Imported here: only a terminal pays for loading rich.
    from rich.console import Console
    from rich.table import Table

    table = Table(title="svc-mcp tools")
    # A tool's name is what the user types: never cut or wrapped, however narrow the terminal;
    # the other columns wrap instead.
    longest = max((len(spec.name) for spec in specs), default=4)
    table.add_column("tool", no_wrap=True, min_width=longest)
    for header in ("title", "toolset", "read-only"):
        table.add_column(header, overflow="fold")
    table.add_column("options", overflow="fold", ratio=1)
    for spec in specs:
        options = " ".join(f"{param.option} <{param.json_type}>" for param in spec.params)
        table.add_row(spec.name, spec.title, spec.toolset, _yes(spec.hints.read_only), options)
    (console or Console()).print(table)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
