"""A real `svc-stub portal` process on loopback, under a write audit."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import httpx
import pytest

from tests.portal.conftest import AUDITOR_ONLY, CALLERS, ENDPOINTS, PortalData
from tests.portal.test_matrix import expected_get_status
from tests.portal.test_read_only import tree_digest
from tests.support import PORT, running_server

pytestmark = pytest.mark.e2e


async def one_request(
    client: httpx.AsyncClient, portal_data: PortalData, path: str, caller: str
) -> tuple[str, str, int, int, dict[str, object]]:
    response = await client.get(path, headers=portal_data.headers(caller))
    expected = expected_get_status(path, caller)
    return path, caller, response.status_code, expected, response.json()


async def burst(
    base_url: str, portal_data: PortalData, count: int
) -> list[tuple[str, str, int, int, dict[str, object]]]:
    plan = [(ENDPOINTS[i % len(ENDPOINTS)], list(CALLERS)[i % len(CALLERS)]) for i in range(count)]
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=30) as client:
        return await asyncio.gather(*(one_request(client, portal_data, p, c) for p, c in plan))


def test_concurrent_mixed_callers_on_a_real_process(
    portal_data: PortalData, tmp_path: Path
) -> None:
    before = tree_digest(portal_data.path)
    with running_server(
        [
            "-m",
            "tests.portal.audited_portal",
            "portal",
            "--data",
            str(portal_data.path),
            "--port",
            PORT,
        ],
        log_path=tmp_path / "portal.log",
        ready_path="/api/page",
        env={"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": os.getcwd()},
    ) as server:
        results = asyncio.run(burst(server.base_url, portal_data, 200))
        whoami = httpx.get(
            server.base_url + "/api/whoami", headers=portal_data.headers("human_auditor")
        )
        assert whoami.json()["data"]["id"] == "alice"
    assert len(results) == 200
    for path, caller, status, expected, body in results:
        assert status == expected, (path, caller)
        assert body["ok"] is (expected == 200)
        if path in AUDITOR_ONLY and caller == "human_auditor":
            assert isinstance(body["data"], list)
            assert body["data"]
    log = server.log()
    assert "write audit active" in log
    assert "WRITE:" not in log, log
    assert tree_digest(portal_data.path) == before
