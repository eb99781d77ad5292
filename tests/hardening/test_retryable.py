"""A backend that says "not now" (502, 503, 504) gives a retryable `unavailable` failure that
carries the server's `Retry-After` and says whether sending the call again is safe (issue 33,
finding 4): over stdio with the official MCP client, and from the real data service stub, whose
storage 503s say when to retry."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from svc_mcp.core.failures import FailureKind
from tests.hardening.fake_backend import fake_backend
from tests.hardening.test_service_faults import envelope, exclusive_lock
from tests.mcp.conftest import INTEL_KEY, SERVICE_TOKEN, SVC_MCP, ServiceStub, process_env

pytestmark = pytest.mark.e2e

STORAGE_RETRY_AFTER = "2"


async def call(base_url: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    env = process_env(
        {
            "SERVICE_API_BASE": base_url,
            "SERVICE_API_TOKEN": SERVICE_TOKEN,
            "PORTAL_API_BASE": base_url,
        }
    )
    server = StdioServerParameters(command=SVC_MCP, env=env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await session.call_tool(tool, arguments)


def test_502_503_504_are_retryable_with_retry_after() -> None:
    cases = {
        ("unavailable", "get_system"): 7,
        ("bad-gateway", "get_positions"): None,
        ("gateway-timeout", "portal_catalog"): None,
    }
    with fake_backend() as base:

        async def every() -> list[CallToolResult]:
            return await asyncio.gather(*(call(f"{base}/{mode}", tool, {}) for mode, tool in cases))

        results = asyncio.run(every())
    assert FailureKind.UNAVAILABLE.retryable
    assert not FailureKind.SERVER_ERROR.retryable
    for ((mode, _), retry_after), result in zip(cases.items(), results, strict=True):
        assert result.is_error
        structured = result.structured_content or {}
        assert structured["kind"] == "unavailable", (mode, structured)
        assert structured.get("retry_after") == retry_after, (mode, structured)
        message = str(structured["message"])
        when = f"retry after {retry_after} seconds" if retry_after else "retry later"
        assert f"{when}; retrying is safe: this call only reads" in message, message


def test_submit_intel_says_resending_the_same_envelope_is_safe() -> None:
    signed = envelope("retry-me")
    with fake_backend() as base:
        result = asyncio.run(call(f"{base}/unavailable", "submit_intel", {"envelope": signed}))
    structured = result.structured_content or {}
    assert structured["kind"] == "unavailable"
    assert structured["retry_after"] == 7
    assert "re-sending the same envelope is safe (idempotent by id" in structured["message"]
    assert INTEL_KEY not in str(structured)


@pytest.mark.usefixtures("service")
def test_the_service_storage_503_carries_retry_after(service: ServiceStub) -> None:
    with (
        httpx.Client(base_url=service.base_url, headers=service.headers(), timeout=15) as http,
        exclusive_lock(service.db),
    ):
        refused = http.post("/api/v1/intel", json=envelope("while-locked"))
    assert refused.status_code == 503, refused.text
    assert refused.headers.get("Retry-After") == STORAGE_RETRY_AFTER
