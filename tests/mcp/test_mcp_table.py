"""The tool table itself: the spec's rows and CLI paths, the schemas, and the selection flags."""

from __future__ import annotations

import dataclasses
import json

import jsonschema
import pytest

from portal_tools.tools import ANYONE, PORTAL_TOOLS
from svc_mcp.core.backends import PORTAL, SERVICE, Toolset
from svc_mcp.core.errors import InvalidArgument
from svc_mcp.core.records import SecretFreeRecord
from svc_mcp.core.toolspec import READ_ONLY, Hints, ToolSpec
from svc_mcp.serve.schemas import compact, output_schema
from svc_mcp.tools.table import TOOLS, parse_toolsets, select_tools

SPEC_ROWS = {
    # tool -> (path, svc-portal command), as spec 1 section 4 names them
    "portal_catalog": ("/api/catalog", "catalog list"),
    "portal_mcp": ("/api/mcp", "mcp list"),
    "portal_web": ("/api/web", "web list"),
    "portal_cli": ("/api/cli", "cli list"),
    "portal_page": ("/api/page", "page get"),
    "portal_audit": ("/api/audit", "audit list"),
    "portal_gateway_audit": ("/api/gateway-audit", "gateway audit"),
    "portal_grants": ("/api/grants", "identity grants"),
    "portal_revokes": ("/api/revokes", "identity revokes"),
    "portal_whoami": ("/api/whoami", "identity whoami"),
    "portal_sessions": ("/api/sessions", "identity sessions"),
    "portal_credentials": ("/api/credentials", "identity credentials"),
    "portal_credential_revokes": ("/api/credential-revokes", "identity credential revokes"),
}
OBJECT_PAYLOADS = {"portal_page", "portal_whoami"}


def test_the_portal_rows_are_the_specs() -> None:
    rows = {spec.name: (spec.path, " ".join(spec.cli)) for spec in PORTAL_TOOLS}
    assert rows == SPEC_ROWS
    assert TOOLS[: len(PORTAL_TOOLS)] == PORTAL_TOOLS
    for spec in PORTAL_TOOLS:
        assert spec.method == "GET"
        assert spec.backend is PORTAL
        assert spec.toolset == "portal"
        assert spec.hints == READ_ONLY
        assert spec.many == (spec.name not in OBJECT_PAYLOADS)
        paging = ["limit", "cursor"] if spec.many else []
        selection = ["fields"] if spec.name in ("portal_audit", "portal_gateway_audit") else []
        assert [param.name for param in spec.params] == paging + selection


def test_descriptions_say_who_may_ask() -> None:
    for spec in TOOLS:
        # Short is fine where the output schema names the fields (get_positions: 20 characters);
        # the floor only catches an empty or one-word description.
        assert 15 < len(spec.description) <= 220, spec.name
        if spec.access.startswith("the auditor role"):
            assert "Auditor's human session (PORTAL_SESSION_TOKEN) only." in spec.description
        if spec.access == ANYONE and spec.many:
            assert "Anonymous callers see public ones only." in spec.description


@pytest.mark.parametrize("spec", TOOLS, ids=lambda spec: spec.name)
def test_schemas_are_valid_json_schema(spec: ToolSpec) -> None:
    jsonschema.Draft202012Validator.check_schema(spec.input_schema())
    schema = output_schema(spec)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    text = json.dumps(schema)
    assert '"title"' not in text.replace('"title": {"type"', "")  # a field named title stays
    assert "$ref" not in text
    assert '"type": [' not in text + json.dumps(spec.input_schema()), "no type arrays"
    if spec.many:
        grouped = {"groups"} if spec.grouped is not None else set()
        assert set(schema["properties"]) == {"result", "next_cursor", *grouped}
        limit = spec.input_schema()["properties"]["limit"]
        assert limit == {"type": "integer", "nullable": True, "description": "1-1000."}


def test_a_record_schema_names_its_wire_fields_and_nullable_types() -> None:
    sessions = next(spec for spec in PORTAL_TOOLS if spec.name == "portal_sessions")
    record = output_schema(sessions)["properties"]["result"]["items"]
    assert record["properties"] == {
        "id": {"type": "string"},
        "subject": {"type": "string"},
        "createdAt": {"type": "string"},
        "expiresAt": {"type": "string"},
        "revokedAt": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    }


def test_a_nullable_enum_admits_null() -> None:
    schema = compact({"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]}, {})
    assert schema == {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]}
    jsonschema.validate(None, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate("c", schema)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"limit": 0}, "limit must be from 1 to 1000, not 0"),
        ({"limit": 1001}, "limit must be from 1 to 1000, not 1001"),
        ({"limit": "many"}, "limit must be a whole number from 1 to 1000"),
        ({"limit": True}, "limit must be a whole number from 1 to 1000"),
        ({"limit": "²"}, "limit must be a whole number from 1 to 1000"),
        ({"cursor": 5}, "cursor must be a string"),
        ({"offset": 3}, "portal_catalog takes no argument offset; it takes limit, cursor"),
    ],
)
def test_arguments_outside_the_input_schema_are_refused(
    arguments: dict[str, object], says: str
) -> None:
    """The row's own check refuses what the published schema does not allow: by type in the
    schema, by range in the description (converters drop range keywords, so the schema does
    not pay for them), and other names by listing the ones it takes."""
    catalog = PORTAL_TOOLS[0]
    with pytest.raises(InvalidArgument) as raised:
        catalog.check_arguments(arguments)
    assert str(raised.value) == says
    assert raised.value.hint == next(iter(arguments))
    schema = catalog.input_schema()
    (name,) = arguments
    if name in schema["properties"]:
        assert name != "limit" or "1-1000" in schema["properties"]["limit"]["description"]
    else:
        assert set(schema["properties"]) == {"limit", "cursor"}
    if isinstance(arguments[name], bool | str) or name == "cursor":
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(arguments, schema)


def test_a_blank_text_or_list_is_not_given() -> None:
    """A strict converter makes every input required; a model then sends a blank cursor,
    filter or field list, which changes nothing."""
    orders = next(spec for spec in TOOLS if spec.name == "get_orders")
    blank = {"cursor": "", "symbol": "", "since": "", "fields": [], "status": None}
    assert orders.check_arguments(blank) == {}
    with pytest.raises(InvalidArgument, match="status must be one of"):
        orders.check_arguments({"status": ""})


def test_arguments_inside_the_input_schema_are_accepted() -> None:
    catalog = PORTAL_TOOLS[0]
    for arguments in ({}, {"limit": 1}, {"limit": 1000, "cursor": "bzoy"}):
        jsonschema.validate(arguments, catalog.input_schema())
        assert catalog.check_arguments(arguments) == arguments
    assert catalog.check_arguments({"limit": "20", "cursor": None}) == {"limit": 20}


def _said(description: str) -> dict[str, str]:
    return {"description": description} if description else {}


@pytest.mark.parametrize(
    "spec", [spec for spec in TOOLS if spec.params], ids=lambda spec: spec.name
)
def test_every_choice_in_the_schema_is_checked(spec: ToolSpec) -> None:
    """Enum parameters refuse what the schema does not list, and name what it does."""
    for param in spec.params:
        if not param.choices:
            continue
        schema = spec.input_schema()["properties"][param.name]
        if param.named_only:
            assert schema == {"type": "string", "nullable": True, **_said(param.description)}
        else:
            assert schema["anyOf"] == [
                {"type": "string", "enum": list(param.choices)},
                {"type": "null"},
            ]
            said = f"{', '.join(param.choices[:-1])} or {param.choices[-1]}."
            assert said in schema["description"]
        assert spec.check_arguments({param.name: param.choices[-1]}) == {
            param.name: param.choices[-1]
        }
        with pytest.raises(InvalidArgument, match=", ".join(param.choices)) as raised:
            spec.check_arguments({param.name: "pasted-secret-token"})
        assert "pasted-secret-token" not in str(raised.value), "a refused value is not echoed"


def test_each_row_names_its_backend_and_toolset() -> None:
    assert {spec.backend for spec in TOOLS} == {PORTAL, SERVICE}
    for spec in TOOLS:
        assert spec.toolset is spec.backend.toolset
        assert issubclass(spec.record_model(), SecretFreeRecord)


WRITER = dataclasses.replace(
    PORTAL_TOOLS[0],
    name="submit_something",
    backend=SERVICE,
    hints=Hints(read_only=False, destructive=False, idempotent=True, open_world=False),
)


def test_selection_by_toolset_and_read_only() -> None:
    table = (*PORTAL_TOOLS, WRITER)
    assert select_tools(table) == table
    assert select_tools(table, read_only=True) == PORTAL_TOOLS
    assert select_tools(table, toolsets={Toolset.SERVICE}) == (WRITER,)
    assert select_tools(table, toolsets={Toolset.SERVICE}, read_only=True) == ()
    assert select_tools(table, toolsets={Toolset.PORTAL}) == PORTAL_TOOLS


def test_toolset_names_are_checked() -> None:
    assert parse_toolsets("portal, service") == {"portal", "service"}
    assert parse_toolsets("analytics") == {"service"}
    with pytest.raises(ValueError, match="unknown toolset billing; choose from portal, service"):
        parse_toolsets("portal,billing")
    with pytest.raises(ValueError, match="none given"):
        parse_toolsets(",")


@pytest.mark.parametrize("spec", TOOLS, ids=lambda spec: spec.name)
def test_every_optional_input_says_so_to_every_framework(spec: ToolSpec) -> None:
    """`nullable` for smolagents; JSON Schema's `null` where a strict converter would otherwise
    force a choice; a neutral input (text, list, page size) gets a value that changes nothing."""
    schema = spec.input_schema()
    for param in spec.params:
        prop = schema["properties"][param.name]
        if param.required:
            assert "nullable" not in prop
            assert param.name in schema["required"]
            continue
        assert prop["nullable"] is True, param.name
        if param.neutral:
            assert prop["type"] == param.json_type
        else:
            jsonschema.validate({param.name: None}, schema)


def test_the_envelope_declares_its_fields() -> None:
    submit = next(spec for spec in TOOLS if spec.name == "submit_intel")
    envelope = submit.input_schema()["properties"]["envelope"]
    assert list(envelope["properties"]) == [
        *("schema", "id", "issued_at", "expires_at", "source", "kind", "body", "sig")
    ]
    assert envelope["properties"]["body"] == {"type": "object", "additionalProperties": True}
    assert "expires_at" not in envelope["required"]
    assert envelope["additionalProperties"] is False
