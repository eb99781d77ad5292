"""How a CLI tool call prints and exits; shared by `svc-portal` and `svc-mcp <tool>`.

stdout carries the JSON of the REST `data` and nothing else, so it equals the REST payload and
the MCP result. When more remain, `next_cursor: <cursor>` goes to stderr (pass it as
`--cursor`), and so does a line saying that svc-mcp grouped the rows itself, when it did. A
failure exits as `svc_mcp.core.exits` says.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from svc_mcp.core.calls import call_tool_once
from svc_mcp.core.errors import CallError
from svc_mcp.core.exits import fail
from svc_mcp.core.regroup import computed_note
from svc_mcp.core.safe_text import safe_json, visible
from svc_mcp.core.telemetry import setup, shutdown
from svc_mcp.core.toolspec import ToolSpec


def run_tool(prog: str, spec: ToolSpec, arguments: Mapping[str, object]) -> None:
    """Calls the tool once and prints its result, or fails with the error's exit code."""
    setup(prog)
    try:
        result = call_tool_once(spec, arguments)
    except CallError as error:
        shutdown()
        fail(prog, error.kind, error.told())
    shutdown()
    print(safe_json(result.data, indent=2))
    if result.next_cursor is not None:
        print(f"next_cursor: {visible(result.next_cursor)}", file=sys.stderr)
    if result.computed is not None:
        print(computed_note(result.computed), file=sys.stderr)
