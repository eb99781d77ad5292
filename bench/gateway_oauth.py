"""Gateway calls/s with OAuth (a JWT access token of a real authorization server) beside the
static gateway token, in one run.

A data service stub, panva's oidc-provider (tests/oauth/idp, installed with `npm ci` into a
temporary folder) and two gateways run on loopback: one with SVC_MCP_GATEWAY_TOKEN, one with
OAuth. The official Python client calls `get_system` back to back through each, in alternating
rounds. Target: OAuth at least 0.9x the static token's calls/s (a validated token is remembered:
no signature check and no network call per request).

Usage: uv run python bench/gateway_oauth.py [--seconds 5] [--rounds 3] [--clients 4]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
from _load import ROOT, held_port, server_process
from gateway_load import cpu_seconds
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.oauth.conftest import IDP, AuthServer, service_client, signing_key

TOKEN = "bench-token-" + "k" * 32
GATEWAY_TOKEN = "bench-gateway-token-" + "g" * 32


async def calls(url: str, bearer: str, seconds: float, clients: int) -> int:
    """Calls made by `clients` sessions in `seconds` (each connected and warmed up first)."""
    done = 0
    ready = asyncio.Barrier(clients)

    async def one() -> None:
        nonlocal done
        headers = {"Authorization": f"Bearer {bearer}"}
        async with (
            httpx2.AsyncClient(timeout=30, headers=headers) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as mcp,
        ):
            await mcp.call_tool("get_system", {})
            await ready.wait()
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                result = await mcp.call_tool("get_system", {})
                if result.is_error:
                    raise RuntimeError(str(result.content)[:200])
                done += 1

    await asyncio.gather(*(one() for _ in range(clients)))
    return done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per round and gateway")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    npm = shutil.which("npm")
    if npm is None:
        print("needs node and npm (apt-get install -y nodejs npm)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="svc-bench-oauth-") as temp:
        root = Path(temp)
        for name in ("package.json", "package-lock.json", "server.js"):
            shutil.copy(IDP / name, root / name)
        quiet = ["--no-audit", "--no-fund", "--loglevel=error", "--ignore-scripts"]
        subprocess.run([npm, "ci", *quiet], cwd=root, check=True, timeout=600)
        db = root / "service.db"
        subprocess.run(
            [sys.executable, "-m", "server_stub", "demo-data", "service", "--db", str(db)],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        service_port, static_port, oauth_port = held_port(), held_port(), held_port()
        oauth_url = f"http://127.0.0.1:{oauth_port}/mcp"
        _, jwk = signing_key("bench")
        idp = AuthServer(root, held_port(), [oauth_url], [jwk], [service_client("bench")])
        idp.start()
        env = {
            "SERVICE_API_TOKEN": TOKEN,
            "SERVICE_API_BASE": f"http://127.0.0.1:{service_port}",
        }
        gateway = ["-m", "svc_mcp", "--http", "--port"]
        try:
            with (
                server_process(
                    ["-m", "server_stub", "service", "--db", str(db), "--port", str(service_port),
                     "--no-access-log"],
                    service_port, root / "service.log", "/health/live", env,
                ),
                server_process(
                    [*gateway, str(static_port)], static_port, root / "static.log", "/mcp",
                    {**env, "SVC_MCP_GATEWAY_TOKEN": GATEWAY_TOKEN},
                ) as static_gateway,
                server_process(
                    [*gateway, str(oauth_port), "--oauth-issuer", idp.issuer, "--public-url",
                     oauth_url],
                    # One token for every client: the per-person budget would cap what is measured.
                    oauth_port, root / "oauth.log", "/mcp",
                    {**env, "SVC_MCP_PERSON_CALLS_PER_SECOND": "0"},
                ) as oauth_gateway,
            ):  # fmt: skip
                access_token = idp.token("bench", scope="svc:read", resource=oauth_url)
                targets = {
                    "static token": (f"http://127.0.0.1:{static_port}/mcp", GATEWAY_TOKEN,
                                     static_gateway.pid),
                    "OAuth (JWT)": (oauth_url, access_token, oauth_gateway.pid),
                }  # fmt: skip
                totals = {name: [0, 0.0, 0.0] for name in targets}  # calls, seconds, CPU s
                for url, bearer, _ in targets.values():
                    asyncio.run(calls(url, bearer, 0.5, 1))  # warm-up (and the key set fetched)
                print(
                    f"get_system through the gateway, {args.clients} clients, {args.rounds} "
                    f"rounds of {args.seconds:g} s each, alternating"
                )
                for round_ in range(args.rounds):
                    order = list(targets) if round_ % 2 == 0 else list(reversed(targets))
                    for name in order:
                        url, bearer, pid = targets[name]
                        cpu = cpu_seconds(pid)
                        made = asyncio.run(calls(url, bearer, args.seconds, args.clients))
                        totals[name][0] += made
                        totals[name][1] += args.seconds
                        totals[name][2] += cpu_seconds(pid) - cpu
        finally:
            idp.stop()
    rates = {}
    for name, (made, seconds, cpu) in totals.items():
        rates[name] = made / seconds
        print(
            f"  {name:<13} {rates[name]:7.1f} calls/s  gateway CPU per call "
            f"{cpu / made * 1000:.2f} ms  ({int(made)} calls)"
        )
    ratio = rates["OAuth (JWT)"] / rates["static token"]
    ok = ratio >= 0.9
    print(f"  ratio {ratio:.2f} of the static token's calls/s (target >= 0.90): "
          f"{'ok' if ok else 'MISSED'}")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
