"""The JSON schema of a row's MCP structured result (the input schema is `ToolSpec.input_schema`).

A list payload is published as `{"result": [...], "next_cursor"?: "..."}`, the shape
`ToolResult.structured` returns; an object payload as the record's own schema. Every tool list
pays for these schemas in an agent's context, so they say only the shape: field names and types
(nullable ones as an `anyOf` with a `null` branch: a `type` array is not portable to
single-`type` dialects such as Google's OpenAPI subset) and enums, with references inlined; no
generated titles, no descriptions (the tool's description and docs/ say what fields mean), no
`required` lists (nullable types already say what may be missing, and `fields` may cut a record
down), no `additionalProperties: true` (the default), and no `type` below the root where other
keywords already say it (an enum's values, a const, an object's properties, an array's items).
"""

from __future__ import annotations

from typing import Any

from svc_mcp.core.calls import group_type, payload_type
from svc_mcp.core.toolspec import GROUPED_KEY, ToolSpec


def output_schema(spec: ToolSpec) -> dict[str, Any]:
    generated = payload_type(spec).json_schema(by_alias=True)
    schema: dict[str, Any] = compact(generated, generated.get("$defs", {}))
    if not spec.many:
        return {"type": "object", **schema}
    properties: dict[str, Any] = {"result": schema, "next_cursor": {"type": "string"}}
    if spec.grouped is not None:
        generated = group_type(spec).json_schema(by_alias=True)
        properties[GROUPED_KEY] = compact(generated, generated.get("$defs", {}))
    return {"type": "object", "properties": properties}


_DROPPED = frozenset({"title", "description", "required", "format", "default", "$defs"})


def compact(schema: Any, definitions: dict[str, Any]) -> Any:
    """`schema` without what only costs characters (see the module docstring)."""
    if isinstance(schema, list):
        return [compact(item, definitions) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        name = schema["$ref"].rpartition("/")[2]
        return compact({**definitions[name], **_without(schema, "$ref")}, definitions)
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED or (key == "additionalProperties" and value is True):
            continue
        if key == "type" and _implied(schema):
            continue
        if key == "properties":
            result[key] = {name: compact(field, definitions) for name, field in value.items()}
        else:
            result[key] = compact(value, definitions)
    return result


def _implied(schema: dict[str, Any]) -> bool:
    """Whether the schema's other keywords already say its `type` to a reader: an enum's
    values, an object's `properties`, an array's `items` (the root's `type` is kept)."""
    return (
        "enum" in schema
        or "const" in schema
        or (schema.get("type") == "object" and "properties" in schema)
        or (schema.get("type") == "array" and "items" in schema)
    )


def _without(schema: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}
