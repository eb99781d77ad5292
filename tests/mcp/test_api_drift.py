"""The fast loop notices drift, with no process: each tool's record model against its stub's
OpenAPI document (field by field), and the tool list the server builds against the wire snapshot
(tool by tool). A difference fails with one line per field, or a short diff per tool, and says
how to bring the other side along (docs/developing.md, "When a tool's output changes")."""

from __future__ import annotations

import difflib
import json
from typing import Any

import anyio
import pytest
from mcp import Client

from server_stub.portal.openapi import document as portal_document
from server_stub.service.openapi import document as service_document
from svc_mcp.core.toolspec import ToolSpec
from svc_mcp.tools.table import TOOLS
from tests.mcp.conftest import in_memory
from tests.mcp.test_mcp_wire_snapshot import SNAPSHOT

Schema = dict[str, Any]
DOCUMENTS = {"portal": portal_document(None), "service": service_document(auth_required=True)}
HOW_TO_RE_RECORD = (
    "change the record model and the stub's OpenAPI document together, or list a deliberate "
    "difference in ALLOWED with its reason (docs/developing.md, 'When a tool's output changes')"
)
RE_RECORD = (
    "after a deliberate change, record the snapshot again: SVC_MCP_RECORD_SNAPSHOT=1 .venv/bin/uv "
    "run --locked --extra dev python -m pytest tests/mcp/test_mcp_wire_snapshot.py, and review "
    "its diff (docs/developing.md, 'When a tool's output changes')"
)
LOOSER = "the model accepts more than the document promises: a value the stub may add later"
ALLOWED: dict[tuple[str, str], tuple[str, str, str]] = {
    ("portal_mcp", "transport"): ("string", "string in [sse, stdio, streamable-http]", LOOSER),
    ("portal_sessions", "revokedAt"): ("string | null, optional", "string, optional", LOOSER),
    ("portal_credentials", "revokedAt"): ("string | null, optional", "string, optional", LOOSER),
    ("get_orders", "client_order_id"): ("string | null", "string", LOOSER),
    ("get_orders", "strategy"): ("string | null", "string", LOOSER),
    ("get_orders", "type"): ("string", "string in [limit, market, stop]", LOOSER),
    ("get_orders", "time_in_force"): ("string", "string in [day, gtc, ioc]", LOOSER),
    ("get_events", "id"): ("integer | string", "integer", LOOSER),
    ("get_intel", "forwarded_by"): (
        "string | null, optional",
        "string | null",
        "another implementation of spec 2 does not know who a gateway forwarded for",
    ),
    ("get_events", "source"): ("string", "string in [admin, daemon]", LOOSER),
    ("get_health", "status"): (
        "'ready'",
        "string",
        "a 200 from /health/ready means ready; anything else is a 503, not a record",
    ),
}
"""Differences reviewed and kept: (tool, field) -> (model, document, why)."""


def kind(schema: Schema, definitions: Schema) -> str:
    """A field's schema in a few words: its types, enum or constant, `| null` when nullable."""
    if "$ref" in schema:
        return kind(definitions[schema["$ref"].rsplit("/", 1)[1]], definitions)
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if alternatives:
        kinds = {kind(each, definitions) for each in alternatives}
        return " | ".join(sorted(kinds - {"null"}) + sorted(kinds & {"null"}))
    if "const" in schema:
        return repr(schema["const"])
    if "enum" in schema:
        return f"{schema.get('type', 'value')} in [{', '.join(sorted(map(str, schema['enum'])))}]"
    types = schema.get("type", "any JSON value")
    return " | ".join(types) if isinstance(types, list) else str(types)


def fields(record: Schema, definitions: Schema) -> dict[str, str]:
    required = set(record.get("required", ()))
    return {
        name: kind(schema, definitions) + ("" if name in required else ", optional")
        for name, schema in record.get("properties", {}).items()
    }


def model_fields(spec: ToolSpec) -> dict[str, str]:
    schema = spec.returns().model_json_schema(by_alias=True, mode="serialization")
    return fields(schema, schema.get("$defs", {}))


def document_fields(spec: ToolSpec) -> dict[str, str]:
    document = DOCUMENTS[spec.backend.name]
    answer = document["paths"][spec.path][spec.method.lower()]["responses"]["200"]
    data = answer["content"]["application/json"]["schema"]["properties"]["data"]
    record = data["items"] if spec.many else data
    if "anyOf" in record:  # a list that takes group_by: the raw record, or a group's row
        record = record["anyOf"][0]
    return fields(record, document.get("components", {}).get("schemas", {}))


def differences() -> dict[tuple[str, str], tuple[str, str]]:
    found = {}
    for spec in TOOLS:
        model, document = model_fields(spec), document_fields(spec)
        for name in sorted(model.keys() | document.keys()):
            pair = (model.get(name, "(absent)"), document.get(name, "(absent)"))
            if pair[0] != pair[1]:
                found[spec.name, name] = pair
    return found


def unexplained(
    found: dict[tuple[str, str], tuple[str, str]], allowed: dict[tuple[str, str], tuple[str, str]]
) -> list[str]:
    """One line per field whose difference ALLOWED does not list as it is, and per entry of
    ALLOWED that agrees by now."""
    lines = []
    for (tool, name), (model, document) in sorted(found.items()):
        listed = allowed.get((tool, name))
        if listed != (model, document):
            was = "" if listed is None else f" (ALLOWED lists model {listed[0]!r}, {listed[1]!r})"
            lines.append(f"{tool}.{name}: model {model!r}, API document {document!r}{was}")
    lines += [
        f"{tool}.{name}: listed in ALLOWED but agrees now"
        for tool, name in sorted(allowed.keys() - found.keys())
    ]
    return lines


def test_every_record_model_matches_its_api_document() -> None:
    allowed = {key: (model, document) for key, (model, document, _) in ALLOWED.items()}
    lines = unexplained(differences(), allowed)
    assert not lines, "\n".join(
        ["a record model and its API document differ:", *lines, HOW_TO_RE_RECORD]
    )


def test_the_comparison_sees_a_changed_field(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = next(spec for spec in TOOLS if spec.name == "get_system")
    document = json.loads(json.dumps(DOCUMENTS["service"]))
    answer = document["paths"][spec.path]["get"]["responses"]["200"]
    system = answer["content"]["application/json"]["schema"]["properties"]["data"]["properties"]
    system["cash"] = {"type": "string"}
    del system["account"]
    monkeypatch.setitem(DOCUMENTS, "service", document)
    found = differences()
    assert found["get_system", "cash"] == ("number", "string")
    assert found["get_system", "account"] == ("string", "(absent)")


async def _listed(client: Client) -> list[Schema]:
    listed = await client.list_tools()
    tools: list[Schema] = listed.model_dump(mode="json", by_alias=True, exclude_none=True)["tools"]
    return tools


def _diff(old: object, new: object) -> list[str]:
    before = json.dumps(old, indent=1, sort_keys=True).splitlines()
    after = json.dumps(new, indent=1, sort_keys=True).splitlines()
    return list(difflib.unified_diff(before, after, "snapshot", "served", n=1, lineterm=""))[2:]


def tool_list_differences(built: list[Schema], recorded: list[Schema]) -> list[str]:
    """Per tool: gone, new, or a short diff of each top-level key that changed."""
    now, before = {t["name"]: t for t in built}, {t["name"]: t for t in recorded}
    lines = [f"{name}: in the snapshot, no longer served" for name in before.keys() - now.keys()]
    lines += [f"{name}: served, not in the snapshot" for name in now.keys() - before.keys()]
    for name in sorted(now.keys() & before.keys()):
        for key in sorted(now[name].keys() | before[name].keys()):
            old, new = before[name].get(key), now[name].get(key)
            if old != new:
                lines += [f"{name}.{key}:", *(f"    {line}" for line in _diff(old, new)[:40])]
    if [t["name"] for t in built] != [t["name"] for t in recorded] and not lines:
        lines.append("the same tools, in another order")
    return lines


def test_the_tool_list_is_the_wire_snapshots() -> None:
    built = anyio.run(in_memory, _listed)
    recorded = json.loads(SNAPSHOT.read_text())["client"]["tools"]["tools"]
    lines = tool_list_differences(built, recorded)
    assert not lines, "\n".join(
        ["the tool list differs from tests/mcp/snapshots/stdio-wire.json:", *lines, RE_RECORD]
    )


def test_a_changed_description_is_shown_for_its_tool_only() -> None:
    recorded = json.loads(SNAPSHOT.read_text())["client"]["tools"]["tools"]
    changed = json.loads(json.dumps(recorded))
    changed[0]["description"] += " Now longer."
    lines = tool_list_differences(changed, recorded)
    assert lines[0] == f"{recorded[0]['name']}.description:"
    assert any(line.startswith("    +") and "Now longer." in line for line in lines)
    assert all(len(line) < 2_000 for line in lines)


def test_a_risk_limit_of_zero_passes_the_models_check() -> None:
    # What the drift test found: the stub answers utilization null for a zero limit, which the
    # model refused, so get_risk failed on such a row.
    from server_stub.service.shapes import risk_limit
    from svc_mcp.tools.service_models import RiskLimit

    row = {"name": "max_open_orders", "scope": "account", "symbol": None, "limit_value": 0,
           "current_value": 3, "unit": "orders", "updated_at": "2026-11-21T09:30:00Z"}  # fmt: skip
    checked = RiskLimit.model_validate(risk_limit(row))  # type: ignore[arg-type]
    assert checked.utilization is None
    assert checked.status == "ok"
