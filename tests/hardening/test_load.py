"""Load against real processes on loopback: 50 MCP clients on the `--http` gateway, a brute-force
flood from many remote addresses beside honest clients, and resident memory over a soak.

Durations: `SVC_LOAD_SECONDS` (default 10) and `SVC_SOAK_SECONDS` (default 30). The same tests run
in the default suite at these short durations and, marked `soak`, the load tests once more in CI
with a minute of load; CI's long soak is bench/soak.py (ten minutes, the same memory rule:
tests/hardening/steady.py). Figures go to test-artifacts/hardening/*.json.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from server_stub.service.guard import MAX_FAILURES
from tests import support_stub_data as stub_data
from tests.e2e import e2e_fixture
from tests.hardening.conftest import rss_kib, seconds_from_env, start_service
from tests.hardening.steady import RSS_GROWTH_BOUND_MIB, after_warm_up, warm_up_seconds
from tests.mcp.conftest import SERVICE_TOKEN, PortalStub, ServiceStub, process_env
from tests.support import PORT, ROOT, Server, running_server

pytestmark = [pytest.mark.soak, pytest.mark.alone]

LOAD_SECONDS = seconds_from_env("SVC_LOAD_SECONDS", 10)
SOAK_SECONDS = seconds_from_env("SVC_SOAK_SECONDS", 30)
CLIENTS = 50
TOOLS = ("get_system", "portal_catalog", "get_positions", "portal_page")
FLOOD_ADDRESSES = [f"127.0.0.{host}" for host in range(2, 251)]
"""Where the flooders connect from (each its own connection budget); each one relays a remote
address of its own, since all of one local user's loopback addresses are one guard client."""
BEHIND_LOOPBACK_PROXIES = {
    "SERVICE_TRUST_PROXY": "1",
    "SERVICE_TRUSTED_PROXY_ADDRESSES": "127.0.0.0/8",
}


def remote(address: str) -> str:
    """The remote address the flooder at loopback `address` speaks for."""
    return "10.30.0." + address.rsplit(".", 1)[1]


def record(name: str, figures: dict[str, Any]) -> None:
    out = ROOT / "test-artifacts" / "hardening"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(f"{name}: {json.dumps(figures)}")


def percentiles(latencies: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(latencies, n=100)
    return {
        "p50_ms": round(cuts[49] * 1000, 1),
        "p95_ms": round(cuts[94] * 1000, 1),
        "p99_ms": round(cuts[98] * 1000, 1),
        "max_ms": round(max(latencies) * 1000, 1),
    }


@dataclass(frozen=True)
class Stack:
    portal: Server
    service: ServiceStub
    gateway: Server

    @property
    def mcp_url(self) -> str:
        return self.gateway.base_url + "/mcp"

    def pids(self) -> dict[str, int]:
        return {
            "portal": self.portal.process.pid,
            "service": self.service.pid,
            "gateway": self.gateway.process.pid,
        }


@e2e_fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The portal stub, the data service stub and `svc-mcp --http` in front of both."""
    root = tmp_path_factory.mktemp("load")
    data = root / "portal-data"
    stub_data.portal_folder(data)
    with (
        running_server(
            ["-m", "server_stub", "portal", "--data", str(data), "--port", PORT],
            log_path=root / "portal.log",
            ready_path="/api/page",
        ) as portal,
        start_service(root) as service,
        running_server(
            ["-m", "svc_mcp", "--http", "--no-auth", "--port", PORT],
            log_path=root / "gateway.log",
            ready_path="/mcp",
            env=process_env(PortalStub(portal.base_url, {}).env() | service.env()),
        ) as gateway,
    ):
        yield Stack(portal, service, gateway)


async def mcp_client(url: str, deadline: float, latencies: list[float], errors: list[str]) -> int:
    """Calls the tools in turn until `deadline`; returns how many calls it made."""
    calls = 0
    try:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            while time.monotonic() < deadline:
                tool = TOOLS[calls % len(TOOLS)]
                started = time.monotonic()
                result = await session.call_tool(tool, {})
                latencies.append(time.monotonic() - started)
                calls += 1
                if result.is_error or result.structured_content is None:
                    errors.append(f"{tool}: {result.content}")
    except Exception as exc:  # any failure of the session counts as an error
        errors.append(f"session: {type(exc).__name__}: {exc}")
    return calls


def test_fifty_mcp_clients_on_the_gateway(stack: Stack) -> None:
    async def run() -> tuple[list[int], list[float], list[str]]:
        latencies: list[float] = []
        errors: list[str] = []
        deadline = time.monotonic() + LOAD_SECONDS
        calls = await asyncio.gather(
            *(mcp_client(stack.mcp_url, deadline, latencies, errors) for _ in range(CLIENTS))
        )
        return list(calls), latencies, errors

    started = time.monotonic()
    calls, latencies, errors = asyncio.run(run())
    took = time.monotonic() - started
    assert errors == [], errors[:5]
    assert min(calls) > 0, calls
    record(
        "gateway_load",
        {
            "clients": CLIENTS,
            "seconds": round(took, 1),
            "calls": sum(calls),
            "calls_per_second": round(sum(calls) / took, 1),
            "errors": len(errors),
            **percentiles(latencies),
        },
    )
    assert "Traceback" not in stack.gateway.log()


# One TLS context for every client: httpx builds one per client otherwise, which costs the test
# process seconds of CPU across 249 clients (the URLs are plain HTTP anyway).
TLS = ssl.create_default_context()


def client_from(address: str, base_url: str, **options: Any) -> httpx.AsyncClient:
    transport = httpx.AsyncHTTPTransport(local_address=address, verify=TLS)
    return httpx.AsyncClient(base_url=base_url, transport=transport, timeout=30, **options)


async def flooder(http: httpx.AsyncClient, deadline: float, seen: Counter[int]) -> None:
    """Wrong tokens from one address; `seen` counts its answers by status."""
    wrong = {"Authorization": "Bearer wrong-token-" + "x" * 24}
    async with http:
        while time.monotonic() < deadline:
            seen[(await http.get("/api/v1/system", headers=wrong)).status_code] += 1


async def honest(
    http: httpx.AsyncClient, deadline: float, latencies: list[float], bad: list[str]
) -> None:
    async with http:
        while time.monotonic() < deadline:
            started = time.monotonic()
            response = await http.get("/api/v1/system")
            latencies.append(time.monotonic() - started)
            if response.status_code != 200:
                bad.append(f"{response.status_code} {response.text[:200]}")


@pytest.mark.e2e
def test_brute_force_flood_does_not_starve_honest_clients(tmp_path: Path) -> None:
    with start_service(tmp_path, **BEHIND_LOOPBACK_PROXIES) as service:

        async def run() -> tuple[dict[str, Counter[int]], list[float], list[str]]:
            seen: dict[str, Counter[int]] = {address: Counter() for address in FLOOD_ADDRESSES}
            latencies: list[float] = []
            bad: list[str] = []
            flooders = [
                client_from(a, service.base_url, headers={"X-Forwarded-For": remote(a)})
                for a in FLOOD_ADDRESSES
            ]
            honest_clients = [
                client_from("127.0.0.1", service.base_url, headers=service.headers())
                for _ in range(4)
            ]
            deadline = time.monotonic() + LOAD_SECONDS
            await asyncio.gather(
                *(
                    flooder(http, deadline, seen[address])
                    for http, address in zip(flooders, FLOOD_ADDRESSES, strict=True)
                ),
                *(honest(http, deadline, latencies, bad) for http in honest_clients),
            )
            return seen, latencies, bad

        seen, latencies, bad = asyncio.run(run())
        with httpx.Client(base_url=service.base_url, headers=service.headers()) as http:
            assert http.get("/api/v1/system").status_code == 200
        log = service.log_path.read_text()
    assert bad == [], bad[:5]
    total: Counter[int] = sum(seen.values(), Counter())
    assert set(total) <= {401, 429}, total
    for address, statuses in seen.items():
        # 401 until the failure that locks (the 8th answers 429), then only 429s.
        sent = statuses.total()
        assert statuses[401] == min(sent, MAX_FAILURES - 1), (address, statuses)
        assert statuses[429] == sent - statuses[401], (address, statuses)
    assert "Traceback" not in log
    record(
        "flood",
        {
            "seconds": LOAD_SECONDS,
            "flood_addresses": len(FLOOD_ADDRESSES),
            "flood_requests": total.total(),
            "flood_statuses": {str(k): v for k, v in total.items()},
            "flood_addresses_locked": sum(1 for c in seen.values() if c[429]),
            "honest_requests": len(latencies),
            "honest_non_200": len(bad),
            **{f"honest_{k}": v for k, v in percentiles(latencies).items()},
        },
    )


def test_memory_is_steady_over_a_soak(stack: Stack) -> None:
    """Steady load on all three processes; RSS sampled from /proc/PID/status twice a second.

    Bound (tests/hardening/steady.py, shared with bench/soak.py): after a warm-up (the first
    quarter, at least 5 s), no process grows by more than 20 MiB."""
    pids = stack.pids()
    samples: dict[str, list[tuple[float, int]]] = {name: [] for name in pids}

    async def sampler(start: float, deadline: float) -> None:
        while time.monotonic() < deadline:
            for name, pid in pids.items():
                samples[name].append((time.monotonic() - start, rss_kib(pid)))
            await asyncio.sleep(0.5)  # the sampling interval, not a wait for an outcome

    async def direct(deadline: float, errors: list[str]) -> None:
        service_headers = {"Authorization": f"Bearer {SERVICE_TOKEN}"}
        async with httpx.AsyncClient(timeout=30) as http:
            while time.monotonic() < deadline:
                for url, headers in (
                    (stack.service.base_url + "/api/v1/orders?limit=50", service_headers),
                    (stack.portal.base_url + "/api/catalog", {}),
                ):
                    response = await http.get(url, headers=headers)
                    if response.status_code != 200:
                        errors.append(f"{url}: {response.status_code}")

    async def run() -> list[str]:
        errors: list[str] = []
        latencies: list[float] = []
        start = time.monotonic()
        deadline = start + SOAK_SECONDS
        await asyncio.gather(
            sampler(start, deadline),
            *(mcp_client(stack.mcp_url, deadline, latencies, errors) for _ in range(4)),
            direct(deadline, errors),
        )
        return errors

    errors = asyncio.run(run())
    assert errors == [], errors[:5]
    warm_up = warm_up_seconds(SOAK_SECONDS)
    figures: dict[str, Any] = {"seconds": SOAK_SECONDS, "warm_up_seconds": warm_up}
    for name, series in samples.items():
        after = after_warm_up([(at, kib / 1024) for at, kib in series], warm_up)
        figures[name] = {
            "rss_start_mib": round(series[0][1] / 1024, 1),
            "rss_after_warm_up_mib": round(after.first, 1),
            "rss_max_mib": round(after.highest, 1),
            "rss_end_mib": round(after.last, 1),
            "growth_after_warm_up_mib": round(after.growth, 1),
        }
    record("soak", figures)
    for name in pids:
        assert figures[name]["growth_after_warm_up_mib"] < RSS_GROWTH_BOUND_MIB, figures
