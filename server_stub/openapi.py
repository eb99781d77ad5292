"""OpenAPI 3.1 building blocks shared by both stubs: schema shorthands, the envelope, operations.

Each stub describes its routes in a table of `Operation`s next to its routes
(`server_stub/portal/openapi.py`, `server_stub/service/openapi.py`); `build_document` turns a
table into the document served at `GET /openapi.json`. Tests check the table against the apps'
actual routes, so the document cannot drift from them. The document holds no secrets.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from svc_serving.contracts import DEFAULT_LIMIT, MAX_LIMIT, SAFE_HEADERS

Schema = dict[str, Any]
SecurityRequirement = dict[str, list[str]]

OPENAPI_PATH = "/openapi.json"

STRING: Schema = {"type": "string"}
NUMBER: Schema = {"type": "number"}
INTEGER: Schema = {"type": "integer"}
BOOLEAN: Schema = {"type": "boolean"}
ANY_OBJECT: Schema = {"type": "object"}
TIMESTAMP: Schema = {"type": "string", "description": "ISO 8601 UTC, e.g. 2026-11-21T09:30:00Z"}


def nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def enum(*values: str) -> Schema:
    return {"type": "string", "enum": list(values)}


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def record(required: Mapping[str, Schema], optional: Mapping[str, Schema] | None = None) -> Schema:
    """An object with exactly these fields (`optional` ones may be absent)."""
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
        "additionalProperties": False,
    }


FAILURE_ENVELOPE: Schema = record(
    {"ok": {"const": False}, "error": record({"code": STRING, "message": STRING})}
)


def success_envelope(data: Schema, *, paged: bool = False) -> Schema:
    optional = {"next_cursor": STRING} if paged else None
    return record({"ok": {"const": True}, "data": data}, optional)


ERROR_DESCRIPTIONS = {
    400: "bad_request (or a more specific code): a malformed query, header or body",
    401: "unauthorized: no credential, or one that does not verify",
    403: "forbidden: the caller may not use this route",
    404: "not_found",
    405: "method_not_allowed (with Allow)",
    409: "conflict",
    413: "payload_too_large: the body is over 64 KiB",
    414: "uri_too_long: the request target (path and query) is over 8 KiB",
    415: "unsupported_media_type: the body is not application/json",
    421: "misdirected_request: the Host header names a host this server does not answer for",
    422: "the envelope does not verify (bad_signature, not_yet_valid, expired) or its body nests "
    "too deep (too_deep)",
    429: "locked_out or rate_limited (with Retry-After, whole seconds)",
    431: "headers_too_large: request headers over 8 KiB",
    500: "storage_corrupt: the stored data is corrupt; no retry helps until it is restored",
    503: "unavailable: the stored data cannot be read or written right now (a temporary storage "
    "failure carries Retry-After, whole seconds)",
}
ERROR_HEADERS: dict[int, dict[str, Schema]] = {
    401: {"WWW-Authenticate": {"schema": STRING}},
    405: {"Allow": {"schema": STRING}},
    429: {"Retry-After": {"schema": {"type": "string", "pattern": "^[0-9]+$"}}},
    503: {"Retry-After": {"schema": {"type": "string", "pattern": "^[0-9]+$"}}},
}


def query(name: str, schema: Schema, description: str) -> Schema:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": schema,
        "description": description,
    }


PAGING_PARAMETERS = [
    query(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
        f"page size, 1..{MAX_LIMIT}",
    ),
    query("cursor", {"type": "string", "maxLength": 64}, "opaque, from next_cursor"),
]


@dataclass(frozen=True)
class Operation:
    """One method on one path, with every status it can answer."""

    method: str
    path: str
    summary: str
    data: Schema | None = None
    """The success envelope's `data`; None when the success body is not an envelope."""
    errors: Iterable[int] = ()
    success: Sequence[int] = (200,)
    paged: bool = False
    parameters: Sequence[Schema] = ()
    body: Schema | None = None
    security: Sequence[SecurityRequirement] | None = None
    """None: the document's default; []: open to everyone."""
    content: Mapping[str, Schema] | None = None
    """Success media types when the body is not a JSON envelope (pages, files)."""

    def render(self) -> Schema:
        responses: dict[str, Any] = {}
        for status in self.success:
            if self.content is not None:
                media = {name: {"schema": schema} for name, schema in self.content.items()}
            else:
                assert self.data is not None
                envelope = success_envelope(self.data, paged=self.paged)
                media = {"application/json": {"schema": envelope}}
            responses[str(status)] = {"description": "success", "content": media}
        for status in sorted(set(self.errors)):
            response: dict[str, Any] = {
                "description": ERROR_DESCRIPTIONS[status],
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/Failure"}}
                },
            }
            if status in ERROR_HEADERS:
                response["headers"] = ERROR_HEADERS[status]
            responses[str(status)] = response
        operation: dict[str, Any] = {"summary": self.summary, "responses": responses}
        parameters = [*(PAGING_PARAMETERS if self.paged else ()), *self.parameters]
        named = {parameter["name"] for parameter in parameters}
        parameters += [path_parameter(n) for n in _path_names(self.path) if n not in named]
        if parameters:
            operation["parameters"] = parameters
        if self.body is not None:
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": self.body}},
            }
        if self.security is not None:
            operation["security"] = list(self.security)
        return operation


def _path_names(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{") and part.endswith("}")]


def path_parameter(name: str, schema: Schema = STRING) -> Schema:
    return {"name": name, "in": "path", "required": True, "schema": schema}


def openapi_operation() -> Operation:
    return Operation(
        "GET",
        OPENAPI_PATH,
        "this OpenAPI document",
        content={"application/json": ANY_OBJECT},
        security=[],
    )


def build_document(
    *,
    title: str,
    description: str,
    operations: Iterable[Operation],
    security_schemes: Mapping[str, Schema],
    security: Sequence[SecurityRequirement],
) -> Schema:
    paths: dict[str, dict[str, Any]] = {}
    for operation in [*operations, openapi_operation()]:
        methods = paths.setdefault(operation.path, {})
        assert operation.method.lower() not in methods, operation
        methods[operation.method.lower()] = operation.render()
    components: dict[str, Any] = {"schemas": {"Failure": FAILURE_ENVELOPE}}
    if security_schemes:
        components["securitySchemes"] = dict(security_schemes)
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": "1", "description": description},
        "paths": paths,
        "components": components,
        "security": list(security),
    }


def openapi_route(document: Schema) -> Route:
    """`GET /openapi.json`, always open; the document is rendered once."""
    body = json.dumps(document, separators=(",", ":")).encode()

    async def serve(_: Request) -> Response:
        return Response(body, media_type="application/json", headers=SAFE_HEADERS)

    return Route(OPENAPI_PATH, serve, methods=["GET"])
