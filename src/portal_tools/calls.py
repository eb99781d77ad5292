"""Calling a tool: the one plain async function every adapter (MCP, CLI) runs for a row."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from portal_tools.client import fetch
from portal_tools.errors import ServerError, Unreachable
from portal_tools.toolspec import ToolSpec

RETRY_DELAY_SECONDS = 0.2


@dataclass(frozen=True)
class ToolResult:
    """The REST `data`, unchanged, and the cursor of the next page when more remain."""

    data: Any
    next_cursor: str | None = None

    def structured(self) -> dict[str, Any]:
        """MCP structured content, which must be an object: a list becomes `{"result": [...]}`
        plus `next_cursor` when paging; an object is returned as it is."""
        if isinstance(self.data, dict):
            return self.data
        content: dict[str, Any] = {"result": self.data}
        if self.next_cursor is not None:
            content["next_cursor"] = self.next_cursor
        return content


async def call_tool(
    spec: ToolSpec, arguments: Mapping[str, object], http: httpx.AsyncClient
) -> ToolResult:
    """Runs one row: reads its backend's settings now, sends the request, checks the payload.

    `arguments` are already validated against the row's parameters; `None` means not given.
    Only a row that declares `transport_retries` is resent, and only when the connection failed:
    an HTTP answer (a 429 above all) is never retried.
    Raises a `CallError` subclass on any failure.
    """
    given = {name: value for name, value in arguments.items() if value is not None}
    if spec.precheck is not None:
        spec.precheck(given)
    connection = spec.backend.connect()
    body = given.pop(spec.body, None) if spec.body else None
    query = {name: str(value) for name, value in given.items()}
    attempts = 1 + spec.transport_retries
    for attempt in range(1, attempts + 1):
        try:
            payload = await fetch(
                http,
                connection,
                spec.method,
                spec.path,
                query=query,
                needs=spec.access,
                json_body=body,
            )
            break
        except Unreachable:
            if attempt == attempts:
                raise
            await asyncio.sleep(RETRY_DELAY_SECONDS * attempt)
    try:
        _payload_type(spec.returns, spec.many).validate_python(payload.data)
    except ValidationError as exc:
        first, *others = exc.errors(include_input=False, include_url=False)
        where = ".".join(str(part) for part in first["loc"]) or "data"
        more = f" (and {len(others)} more problems)" if others else ""
        raise ServerError(
            f"{connection.service} answered {spec.method} {spec.path} with a payload that does "
            f"not match {spec.returns.__name__}: {where}: {first['msg']}{more}"
        ) from None
    return ToolResult(payload.data, payload.next_cursor)


@cache
def _payload_type(returns: type[BaseModel], many: bool) -> TypeAdapter[Any]:
    return TypeAdapter(list[returns] if many else returns)  # type: ignore[valid-type]
