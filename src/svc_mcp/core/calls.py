"""Calling a tool: the plain functions every adapter runs for a row.

`call_tool` (async, over the pooled httpx client) serves MCP; `call_tool_once` (one request over
the standard library) serves a CLI call. Both check the arguments before anything is sent,
read the row's backend settings at that moment, and check the payload against the row's record
model before returning it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from functools import cache
from itertools import count
from typing import TYPE_CHECKING, Any

from svc_mcp.core.bounded import read_part_cursor
from svc_mcp.core.connection import Connection, Payload, unreachable
from svc_mcp.core.errors import (
    BadRequest,
    CallError,
    ServerError,
    Unavailable,
    Unreachable,
)
from svc_mcp.core.fields import known_fields
from svc_mcp.core.regroup import (
    Paging,
    Ungrouped,
    computed_page,
    page_records,
    raw_records,
)
from svc_mcp.core.results import ToolResult, within_bound
from svc_mcp.core.settings import timeout_seconds
from svc_mcp.core.telemetry import BackendRequest, backend_request
from svc_mcp.core.toolspec import CURSOR, FIELDS, GROUP_BY, GROUPED_KEY, ToolSpec

if TYPE_CHECKING:
    import anyio
    import httpx
    from pydantic import TypeAdapter

RETRY_DELAY_SECONDS = 0.2


@dataclass(frozen=True)
class _Request:
    connection: Connection
    query: dict[str, str]
    body: Any
    fields: tuple[str, ...] | None
    skipped: int = 0
    """Records of the backend page already given, when the cursor was one of `bounded`'s."""

    @property
    def grouped(self) -> bool:
        return GROUP_BY in self.query


Delegate = Callable[[ToolSpec, Connection], Connection]
"""How the gateway makes a call for the person behind it (svc_mcp.serve.oauth.portal_identity): the
connection the environment says, made theirs."""


def _prepare(
    spec: ToolSpec,
    arguments: Mapping[str, object],
    *,
    anonymous: bool = False,
    delegate: Delegate | None = None,
) -> _Request:
    given = spec.check_arguments(arguments)
    if spec.precheck is not None:
        spec.precheck(given)
    fields = known_fields(spec, given.pop(FIELDS.name)) if FIELDS.name in given else None
    connection = spec.backend.connect()
    if anonymous:
        connection = replace(connection, token=None)
    elif delegate is not None:
        connection = delegate(spec, connection)
    body = given.pop(spec.body, None) if spec.body else None
    query = {name: str(value) for name, value in given.items()}
    part = read_part_cursor(query.get(CURSOR.name, ""))
    if part is None:
        return _Request(connection, query, body, fields)
    page_cursor, skipped = part
    query.pop(CURSOR.name)
    if page_cursor is not None:
        query[CURSOR.name] = page_cursor
    return _Request(connection, query, body, fields, skipped)


def retry_delay(spec: ToolSpec, attempt: int, error: CallError) -> float | None:
    """The one retry rule of both transports: the seconds to wait before sending `spec`'s
    request again after its `attempt`-th try failed with `error`, or None to give up.

    Only a row that declares `transport_retries` is resent, and only when no HTTP answer came:
    an answer (a 429 above all, or a 5xx) is never retried. A write is resent only when its
    request provably never left (no connection was made); after a timeout or a dropped
    connection it may have reached the server."""
    if attempt > spec.transport_retries or not isinstance(error, Unreachable):
        return None
    if error.sent and not spec.hints.read_only:
        return None
    return RETRY_DELAY_SECONDS * attempt


async def call_tool(
    spec: ToolSpec,
    arguments: Mapping[str, object],
    http: httpx.AsyncClient,
    slot: anyio.Semaphore | None = None,
    *,
    anonymous: bool = False,
    delegate: Delegate | None = None,
) -> ToolResult:
    """Runs one row over `http`, resent as `retry_delay` says, each request holding one of its
    backend's `slot`s; `anonymous`: without the backend's token (doctor's probes before the one
    request that carries it); `delegate`: for the person the gateway serves. One deadline of
    `timeout_seconds()` bounds the whole call: the wait for a slot, every request and the pauses
    between them, so no call outlives it however many wait. Raises a `CallError` subclass on any
    failure."""
    import anyio

    from svc_mcp.core.client import fetch

    request = _prepare(spec, arguments, anonymous=anonymous, delegate=delegate)
    limit = timeout_seconds()
    sending = False
    try:
        with anyio.fail_after(limit):
            for attempt in count(1):
                try:
                    async with slot if slot is not None else nullcontext():
                        sending = True
                        try:
                            with _exchange(spec) as exchange:
                                payload = await fetch(
                                    http,
                                    request.connection,
                                    spec.method,
                                    spec.path,
                                    query=request.query,
                                    needs=spec.access,
                                    json_body=request.body,
                                    exchange=exchange,
                                )
                                result = _checked(spec, request, payload)
                        except (Ungrouped, BadRequest) as answer:
                            paging = _regrouping(request, answer)
                            result = await _regroup(spec, request, http, paging, answer)
                        page_cursor = request.query.get(CURSOR.name)
                        return within_bound(result, spec.name, page_cursor, request.skipped)
                except CallError as error:
                    delay = retry_delay(spec, attempt, error)
                    if delay is None:
                        raise
                sending = False
                await anyio.sleep(delay)
    except TimeoutError:
        raise _out_of_time(spec, request.connection, limit, sending=sending) from None
    raise AssertionError("unreachable: the loop returns or raises")


def _out_of_time(
    spec: ToolSpec, connection: Connection, limit: float, *, sending: bool
) -> CallError:
    """The call's deadline passed: in a request, or before one of the backend's slots freed."""
    if sending:
        error: CallError = unreachable(connection, f"no answer within {limit:g} s")
    else:
        error = Unavailable(
            f"{connection.service} is busy: every request slot this server keeps for it stayed "
            f"taken for {limit:g} s (slow or hung calls), so nothing was sent; retry later",
        )
    _advise(spec, error)
    return error


def _advise(spec: ToolSpec, error: CallError) -> None:
    if error.kind.retryable:
        error.advise(spec.retry_advice)


def call_tool_once(spec: ToolSpec, arguments: Mapping[str, object]) -> ToolResult:
    """`call_tool` for one CLI call, over the standard library; same checks, same rule, same
    errors."""
    from svc_mcp.core.oneshot import fetch_once

    request = _prepare(spec, arguments)
    for attempt in count(1):
        try:
            try:
                with _exchange(spec) as exchange:
                    payload = fetch_once(
                        request.connection,
                        spec.method,
                        spec.path,
                        query=request.query,
                        needs=spec.access,
                        json_body=request.body,
                        exchange=exchange,
                    )
                    return _checked(spec, request, payload)
            except (Ungrouped, BadRequest) as answer:
                paging = _regrouping(request, answer)
                return _regroup_once(spec, request, paging, answer)
        except CallError as error:
            delay = retry_delay(spec, attempt, error)
            if delay is None:
                raise
        time.sleep(delay)
    raise AssertionError("unreachable: the loop returns or raises")


@contextmanager
def _exchange(spec: ToolSpec) -> Iterator[BackendRequest]:
    """One backend request of `spec` (its client span when tracing is on); a failure in it
    carries the request's id, so a person can hand it to an operator."""
    with backend_request(spec.backend.name, spec.method, spec.path) as exchange:
        try:
            yield exchange
        except CallError as error:
            error.request_id = exchange.named_id()
            _advise(spec, error)
            raise


def _checked(spec: ToolSpec, request: _Request, payload: Payload) -> ToolResult:
    """The payload checked against the row's model; raises `Ungrouped` when a grouped request
    was answered with the row's raw records (a data service that ignores `group_by`)."""
    if request.grouped and raw_records(payload.data):
        _validated(spec, request, payload_type(spec), payload)
        raise Ungrouped
    _validated(spec, request, group_type(spec) if request.grouped else payload_type(spec), payload)
    data = payload.data
    if request.skipped and isinstance(data, list):
        data = data[request.skipped :]
    if request.grouped:
        return ToolResult(data, payload.next_cursor, GROUPED_KEY)
    if request.fields is not None:
        data = [{k: record[k] for k in request.fields if k in record} for record in data]
    return ToolResult(data, payload.next_cursor)


def _validated(
    spec: ToolSpec, request: _Request, expected: TypeAdapter[Any], payload: Payload
) -> None:
    from pydantic import ValidationError

    connection = request.connection
    try:
        expected.validate_python(payload.data)
    except ValidationError as exc:
        first, *others = exc.errors(include_input=False, include_url=False)
        where = ".".join(str(part) for part in first["loc"]) or "data"
        more = f" (and {len(others)} more problems)" if others else ""
        raise ServerError(
            f"{connection.service} answered {spec.method} {spec.path} with a payload that does "
            f"not match {spec.record_model().__name__}: {where}: {first['msg']}{more}"
        ) from None


def _regrouping(request: _Request, answer: Ungrouped | BadRequest) -> Paging:
    """The paging of the raw records when `answer` may say that the data service does not group
    (it answered raw records, or refused the grouped request); else `answer` stands."""
    if not request.grouped or CURSOR.name in request.query:
        # A refused cursor of the service's own is not a refusal of group_by.
        raise answer
    return page_records(request.query)


@contextmanager
def _refusal_stands(answer: Ungrouped | BadRequest, first: bool) -> Iterator[None]:
    """The first raw page refused too: the grouped request's refusal was not about group_by."""
    try:
        yield
    except BadRequest:
        if first and isinstance(answer, BadRequest):
            raise answer from None
        raise


async def _regroup(
    spec: ToolSpec,
    request: _Request,
    http: httpx.AsyncClient,
    paging: Paging,
    answer: Ungrouped | BadRequest,
) -> ToolResult:
    from svc_mcp.core.client import fetch

    query, first = next(paging), True
    while True:
        with _exchange(spec) as exchange, _refusal_stands(answer, first):
            payload = await fetch(
                http,
                request.connection,
                "GET",
                spec.path,
                query=query,
                needs=spec.access,
                exchange=exchange,
            )
            _validated(spec, request, payload_type(spec), payload)
        try:
            query, first = paging.send(payload), False
        except StopIteration as done:
            return _computed(spec, request, *done.value)


def _regroup_once(
    spec: ToolSpec, request: _Request, paging: Paging, answer: Ungrouped | BadRequest
) -> ToolResult:
    """`_regroup` for one CLI call."""
    from svc_mcp.core.oneshot import fetch_once

    query, first = next(paging), True
    while True:
        with _exchange(spec) as exchange, _refusal_stands(answer, first):
            payload = fetch_once(
                request.connection,
                "GET",
                spec.path,
                query=query,
                needs=spec.access,
                exchange=exchange,
            )
            _validated(spec, request, payload_type(spec), payload)
        try:
            query, first = paging.send(payload), False
        except StopIteration as done:
            return _computed(spec, request, *done.value)


def _computed(
    spec: ToolSpec, request: _Request, records: list[dict[str, Any]], complete: bool
) -> ToolResult:
    rows, cursor, said = computed_page(spec.path, request.query, request.skipped, records, complete)
    return ToolResult(rows, cursor, GROUPED_KEY, said)


@cache
def payload_type(spec: ToolSpec) -> TypeAdapter[Any]:
    """What the row's `data` must be: a list of its record model, or one record."""
    from pydantic import TypeAdapter

    model = spec.record_model()
    return TypeAdapter(list[model] if spec.many else model)  # type: ignore[valid-type]


@cache
def group_type(spec: ToolSpec) -> TypeAdapter[Any]:
    """What a grouped answer's `data` must be: a list of the row's group model."""
    from pydantic import TypeAdapter

    assert spec.grouped is not None
    model = spec.grouped()
    return TypeAdapter(list[model])  # type: ignore[valid-type]
