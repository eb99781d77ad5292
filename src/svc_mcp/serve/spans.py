"""The MCP server's span and duration per request, by the OpenTelemetry MCP conventions.

It takes the place of the SDK's own span middleware, which names a failed tool call's
`error.type` `tool_error`; ours names it by the failure's kind (`unauthorized`, `locked_out`,
...), sets `network.transport`, and records `mcp.server.operation.duration`. The parent comes
from the request's `_meta` (`traceparent`, `tracestate`), as the MCP 2026-07-28 revision says.
With telemetry off (svc_mcp.core.telemetry) a request costs one check; on the gateway, a call
its sampler leaves out (`svc_mcp.core.telemetry.sampled`) makes no span and still its metrics.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp.server import ServerRequestContext
from mcp.types import CallToolResult
from opentelemetry.propagate import extract
from opentelemetry.trace import SpanKind, StatusCode

from svc_mcp.core.telemetry import capture_arguments, instruments, sampled, unrecorded
from svc_mcp.serve.caller import CALLER
from svc_serving.secret_names import mentions_secret

REDACTED = "[redacted]"

CallNext = Callable[[ServerRequestContext[Any, Any]], Awaitable[Any]]


class RequestSpans:
    """Server middleware: one SERVER span per MCP request, `{mcp.method.name} {tool}`."""

    def __init__(self, transport: str) -> None:
        self.transport = transport
        """`pipe` for stdio, `tcp` for the HTTP gateway (`network.transport`)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        on = instruments()
        if on is None:
            return await call_next(ctx)
        params = ctx.params or {}
        name = params.get("name")
        tool = name if ctx.method == "tools/call" and isinstance(name, str) else None
        measured: dict[str, Any] = {
            "mcp.method.name": ctx.method,
            "network.transport": self.transport,
        }
        if tool is not None:
            measured["gen_ai.tool.name"] = tool
        gateway = self.transport == "tcp" and tool is not None
        if gateway:
            on.in_flight.add(1)
        started = time.perf_counter()
        failure: str | None = None
        try:
            if on.root_ratio is None or sampled(ctx.meta):
                result = await self._recorded(on.tracer, ctx, call_next, tool)
            else:
                with unrecorded(ctx.meta):
                    result = await call_next(ctx)
            failure = _failure_kind(result)
        except Exception as error:
            failure = type(error).__qualname__
            raise
        finally:
            if gateway:
                on.in_flight.add(-1)
            if failure is not None:
                measured["error.type"] = failure
            on.server_duration.record(time.perf_counter() - started, measured)
        return result

    async def _recorded(
        self,
        tracer: Any,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
        tool: str | None,
    ) -> Any:
        attributes: dict[str, Any] = {
            "mcp.method.name": ctx.method,
            "mcp.protocol.version": ctx.protocol_version,
            "network.transport": self.transport,
        }
        if ctx.request_id is not None:
            attributes["jsonrpc.request.id"] = str(ctx.request_id)
        if (caller := CALLER.get()) is not None:
            # The OAuth caller (svc_mcp.serve.oauth.gate) on the span only: a metric keyed by
            # subject would grow without bound.
            attributes["enduser.id"] = caller.subject or ""
            attributes["oauth.client_id"] = caller.client_id
        if tool is not None:
            attributes["gen_ai.tool.name"] = tool
            attributes["gen_ai.operation.name"] = "execute_tool"
            if capture_arguments():
                attributes["gen_ai.tool.call.arguments"] = captured(
                    (ctx.params or {}).get("arguments")
                )
        with tracer.start_as_current_span(
            f"{ctx.method} {tool}" if tool else ctx.method,
            kind=SpanKind.SERVER,
            attributes=attributes,
            context=_parent(ctx.meta),
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            failure: str | None = None
            try:
                result = await call_next(ctx)
                failure = _failure_kind(result)
            except Exception as error:
                failure = type(error).__qualname__
                raise
            finally:
                if failure is not None:
                    span.set_attribute("error.type", failure)
                    span.set_status(StatusCode.ERROR)
        return result


def _parent(meta: Mapping[str, Any] | None) -> Any:
    """The caller's context from `_meta`, or None (the span then starts a trace)."""
    if not meta:
        return None
    carrier = {key: value for key, value in meta.items() if isinstance(value, str)}
    return extract(carrier) if "traceparent" in carrier else None


def _failure_kind(result: object) -> str | None:
    """A failed call's kind (our `FailureKind`), from the result as the handler returned it or
    as the SDK has serialised it by then."""
    if isinstance(result, CallToolResult):
        failed, content = result.is_error, result.structured_content
    elif isinstance(result, Mapping):
        failed, content = result.get("isError") is True, result.get("structuredContent")
    else:
        return None
    if not failed:
        return None
    kind = content.get("kind") if isinstance(content, Mapping) else None
    return kind if isinstance(kind, str) else "tool_error"


def captured(value: object) -> str:
    """Arguments as JSON with every secret-named field's value replaced (the opt-in capture)."""
    return json.dumps(_redacted(value), ensure_ascii=False, default=str)[:4096]


def _redacted(value: object) -> object:
    if isinstance(value, Mapping):
        return {
            str(key): REDACTED if mentions_secret(str(key)) else _redacted(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    return value
