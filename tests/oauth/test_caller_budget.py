"""One person's flood cannot starve another's (issue 42): a budget per subject at the gateway.

The data service here answers each call after a second (the fake backend's `late` mode), so a
flood of 50 calls of one person would hold all 16 of the backend's request slots for four
seconds, past the 3 s call deadline, and another person's calls would queue behind it and fail.
With the budget, the flooder runs at most 8 at once and is answered `rate_limited` with
`retry_after` for the rest; the other person's calls all succeed meanwhile. The token bucket's
window is tested on an injected clock."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from svc_mcp.core.errors import Misconfigured
from svc_mcp.core.failures import FailureKind
from svc_mcp.serve.caller_budget import RATE, CallerBudgets, person_budgets
from tests.hardening.fake_backend import fake_backend
from tests.mcp.conftest import SERVICE_TOKEN, PortalStub
from tests.oauth.conftest import AuthServer, auth_server, service_client, start_gateway
from tests.support import Server, reserved_port

FLOOD = 50
CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "get_system", "arguments": {}},
}


@pytest.fixture(scope="module")
def stack(
    portal: PortalStub, idp_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, AuthServer, str]]:
    with reserved_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        clients = [service_client("flooder", "svc:read"), service_client("other", "svc:read")]
        log = tmp_path_factory.mktemp("caller-budget") / "gateway.log"
        with (
            fake_backend() as late,
            auth_server(idp_root, [url], clients, "k1") as (idp, _),
            start_gateway(
                portal,
                log,
                idp.issuer,
                port,
                SERVICE_API_BASE=f"{late}/late",
                SERVICE_API_TOKEN=SERVICE_TOKEN,
                SVC_MCP_TIMEOUT_SECONDS="3",
            ) as gateway,
        ):
            yield gateway, idp, url


async def call(http: httpx.AsyncClient, url: str, token: str) -> dict[str, Any]:
    answer = await http.post(
        url,
        json=CALL,
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()["result"]
    return result


def test_a_flood_of_one_person_leaves_another_their_calls(
    stack: tuple[Server, AuthServer, str],
) -> None:
    _, idp, url = stack
    flooder = idp.token("flooder", scope="svc:read", resource=url)
    other = idp.token("other", scope="svc:read", resource=url)

    async def run() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        limits = httpx.Limits(max_connections=FLOOD + 10)
        async with httpx.AsyncClient(timeout=30, limits=limits) as http:
            flood = [asyncio.create_task(call(http, url, flooder)) for _ in range(FLOOD)]
            await asyncio.sleep(0.2)  # the flood is in
            others = [await call(http, url, other) for _ in range(3)]
            return await asyncio.gather(*flood), others

    flood, others = asyncio.run(run())
    assert all(not result.get("isError") for result in others), others
    refused = [result["structuredContent"] for result in flood if result.get("isError")]
    assert refused, "the flood was never limited"
    assert all(content["kind"] == FailureKind.RATE_LIMITED for content in refused), refused
    assert all(content["retry_after"] >= 1 for content in refused)
    assert FLOOD - len(refused) >= 8  # its own share ran


def test_the_budget_refills_by_the_clock() -> None:
    now = [0.0]
    budgets = CallerBudgets(in_flight=2, rate=2.0, burst=3, clock=lambda: now[0])
    assert budgets.admit("a") is None
    assert budgets.admit("a") is None
    busy = budgets.admit("a")
    assert busy is not None
    assert busy.retry_after == 1
    assert budgets.admit("b") is None  # another person is not counted against a
    budgets.release("a")
    budgets.release("a")
    assert budgets.admit("a") is None  # the third of the burst
    budgets.release("a")
    spent = budgets.admit("a")
    assert spent is not None
    assert spent.kind == FailureKind.RATE_LIMITED
    assert spent.retry_after == 1
    now[0] = 0.5  # one call's worth at 2 a second
    assert budgets.admit("a") is None


def test_the_rate_is_a_setting_and_zero_turns_the_budget_off() -> None:
    default = person_budgets({})
    assert default is not None
    assert (default.rate, default.burst) == (RATE, RATE * 4)
    assert person_budgets({"SVC_MCP_PERSON_CALLS_PER_SECOND": "0"}) is None
    with pytest.raises(Misconfigured, match="SVC_MCP_PERSON_CALLS_PER_SECOND"):
        person_budgets({"SVC_MCP_PERSON_CALLS_PER_SECOND": "lots"})
