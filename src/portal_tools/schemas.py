"""The JSON schema of a row's MCP structured result (the input schema is `ToolSpec.input_schema`).

A list payload is published as `{"result": [...], "next_cursor"?: "..."}`, the shape
`ToolResult.structured` returns; an object payload as the record's own schema.
"""

from __future__ import annotations

from typing import Any

from portal_tools.calls import payload_type
from portal_tools.toolspec import ToolSpec


def output_schema(spec: ToolSpec) -> dict[str, Any]:
    if not spec.many:
        return spec.record_model().model_json_schema()
    items = payload_type(spec).json_schema()
    definitions = items.pop("$defs", None)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "result": items,
            "next_cursor": {
                "type": "string",
                "description": "Present when more remain: pass it back as cursor.",
            },
        },
        "required": ["result"],
        "additionalProperties": False,
    }
    if definitions:
        schema["$defs"] = definitions
    return schema
