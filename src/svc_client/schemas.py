"""The JSON schema of a row's MCP structured result (the input schema is `ToolSpec.input_schema`).

A list payload is published as `{"result": [...], "next_cursor"?: "..."}`, the shape
`ToolResult.structured` returns; an object payload as the record's own schema. Every tool list
pays for these schemas in an agent's context, so they say only the shape: field names and types
(nullable ones as `type: [X, "null"]`) and enums, with references inlined; no generated
titles, no descriptions (the tool's description and docs/ say what fields mean), no `required`
lists (nullable types already say what may be missing, and `fields` may cut a record down), and
no `additionalProperties: true` (the default).
"""

from __future__ import annotations

from typing import Any

from svc_client.calls import payload_type
from svc_client.toolspec import ToolSpec


def output_schema(spec: ToolSpec) -> dict[str, Any]:
    generated = payload_type(spec).json_schema(by_alias=True)
    schema: dict[str, Any] = compact(generated, generated.get("$defs", {}))
    if not spec.many:
        return schema
    return {
        "type": "object",
        "properties": {"result": schema, "next_cursor": {"type": "string"}},
    }


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
        if key == "properties":
            result[key] = {name: compact(field, definitions) for name, field in value.items()}
        else:
            result[key] = compact(value, definitions)
    return _nullable(result)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`{"anyOf": [{"type": X, ...}, {"type": "null"}]}` as `{"type": [X, "null"], ...}`, and a
    union of plain types `{"anyOf": [{"type": X}, {"type": Y}]}` as `{"type": [X, Y]}`."""
    options = schema.get("anyOf")
    if not isinstance(options, list):
        return schema
    if all(
        isinstance(o, dict) and list(o) == ["type"] and isinstance(o["type"], str) for o in options
    ):
        return {**_without(schema, "anyOf"), "type": [option["type"] for option in options]}
    if not (len(options) == 2 and {"type": "null"} in options):
        return schema
    (other,) = [option for option in options if option != {"type": "null"}]
    if not isinstance(other.get("type"), str):
        return schema
    merged = {**_without(schema, "anyOf"), **other, "type": [other["type"], "null"]}
    if "enum" in merged:
        merged["enum"] = [*merged["enum"], None]
    return merged


def _without(schema: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}
