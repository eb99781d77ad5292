"""`svc-mcp tools`: the selected rows as JSON, or as a table on a terminal."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from portal_tools.toolspec import ToolSpec


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


def print_table(specs: Sequence[ToolSpec]) -> None:
    # Imported here: only a terminal pays for loading rich.
    from rich.console import Console
    from rich.table import Table

    table = Table("tool", "title", "toolset", "read-only", "options", title="svc-mcp tools")
    for spec in specs:
        options = " ".join(f"{param.option} <{param.json_type}>" for param in spec.params)
        table.add_row(spec.name, spec.title, spec.toolset, _yes(spec.hints.read_only), options)
    Console().print(table)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
