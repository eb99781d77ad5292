"""The stubs against a bare route, side by side in one run.

For the portal's catalog (an auditor's session), the data service's `/api/v1/system` (Bearer),
`/api/v1/orders` at its default page and `/health/live`: requests per second of the stub as it
ships (access log on, confined), of a bare one-route Starlette app answering the same bytes under
uvicorn's defaults (its access log on), and of that bare app with no log (the floor); beside them,
the same stub with tracing on at its default sampler (OTEL_* set, exporting to a receiver on
loopback that discards). Rounds alternate between the four; the figures are medians. Load: wrk (`-t1 -c16`) where installed,
else bench/_load.py's client over 16 connections. The machine may be shared: compare ratios
within one run, not figures across runs.
Targets: stub / bare >= 1.0, stub / bare with no log >= 0.65.

Usage: python bench/stubs_vs_bare.py [--seconds 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import _rows
import httpx
from _load import held_port, median, rps, server_process
from telemetry import discarding_receiver

from server_stub.portal.admin import issue_session
from server_stub.portal.demo_data import write_demo_data
from server_stub.service.demo_data import write_demo_database

TOKEN = "bench-token-" + "k" * 32
CONNECTIONS = 16
TARGET_LOGGED = 1.0
TARGET_FLOOR = 0.65


@dataclass(frozen=True)
class Route:
    label: str
    stub: str
    path: str
    headers: dict[str, str]


def measure(port: int, path: str, headers: dict[str, str], seconds: float) -> float:
    """Requests per second; every answer must be a 200."""
    wrk = shutil.which("wrk")
    if wrk is None:
        return rps(port, path, headers, seconds=seconds, connections=CONNECTIONS)
    header_args = [arg for name, value in headers.items() for arg in ("-H", f"{name}: {value}")]
    out = subprocess.run(
        [
            wrk,
            "-t1",
            f"-c{CONNECTIONS}",
            f"-d{max(1, round(seconds))}s",
            *header_args,
            f"http://127.0.0.1:{port}{path}",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    if "Non-2xx" in out:
        raise RuntimeError(f"benchmark requests to {path} were refused:\n{out}")
    found = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if found is None:
        raise RuntimeError(f"wrk printed no rate:\n{out}")
    return float(found.group(1))


@contextmanager
def bare(path: str, body: bytes, temp: Path, *extra: str) -> Iterator[int]:
    port = held_port()
    body_file = temp / f"body-{port}.json"
    body_file.write_bytes(body)
    args = ["bench/_bare_server.py", str(port), path, str(body_file), *extra]
    with server_process(args, port, temp / f"bare-{port}.log", path):
        yield port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    _rows.add_option(parser)
    args = parser.parse_args()
    figures: list[_rows.Figure] = []
    with (
        tempfile.TemporaryDirectory(prefix="stubs-bench-") as name,
        discarding_receiver() as otlp,
        ExitStack() as stack,
    ):
        temp = Path(name)
        write_demo_data(temp / "portal")
        session = issue_session(temp / "portal", "alice", timedelta(hours=1))
        write_demo_database(temp / "service.db")
        traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp}
        ports: dict[str, int] = {}
        portal = ["-m", "server_stub", "portal", "--data", str(temp / "portal"), "--port"]
        service = ["-m", "server_stub.service", "service", "--db", str(temp / "service.db")]
        for name, environment in (("", {}), ("traced ", traced)):
            portal_port = ports[f"{name}portal"] = held_port()
            service_port = ports[f"{name}service"] = held_port()
            stack.enter_context(
                server_process(
                    [*portal, str(portal_port)],
                    portal_port,
                    temp / f"{name}portal.log",
                    "/api/page",
                    environment,
                )
            )
            stack.enter_context(
                server_process(
                    [*service, "--port", str(service_port)],
                    service_port,
                    temp / f"{name}service.log",
                    "/health/live",
                    {"SERVICE_API_TOKEN": TOKEN, **environment},
                )
            )
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        routes = [
            Route(
                "portal GET /api/catalog (auditor session)",
                "portal",
                "/api/catalog",
                {"Authorization": f"Bearer {session}"},
            ),
            Route("service GET /api/v1/system (Bearer)", "service", "/api/v1/system", bearer),
            Route("service GET /api/v1/orders (default page)", "service", "/api/v1/orders", bearer),
            Route("service GET /health/live", "service", "/health/live", {}),
        ]
        print(
            f"req/s, median of {args.rounds} alternating rounds of {args.seconds:g} s, "
            f"{CONNECTIONS} keep-alive connections ({'wrk -t1' if shutil.which('wrk') else 'bench/_load.py'}); "
            "stub: as shipped (access log on, confined, OTEL_* unset); traced: the same with "
            "OTEL_* set (default sampler); bare: one Starlette route, same bytes, uvicorn's defaults"
        )
        print(
            f"{'route':<44} {'stub':>8} {'bare':>8} {'no log':>8}  stub/bare  stub/no-log  bytes"
            f" {'traced':>8}  traced/no-log"
        )
        for route in routes:
            port = ports[route.stub]
            body = httpx.get(f"http://127.0.0.1:{port}{route.path}", headers=route.headers).content
            with (
                bare(route.path, body, temp) as logged,
                bare(route.path, body, temp, "--no-access-log") as quiet,
            ):
                servers = {
                    "stub": (port, route.headers),
                    "traced": (ports[f"traced {route.stub}"], route.headers),
                    "bare": (logged, {}),
                    "quiet": (quiet, {}),
                }
                for server_port, headers in servers.values():
                    measure(server_port, route.path, headers, 1)  # warm up
                rates: dict[str, list[float]] = {name: [] for name in servers}
                for _ in range(args.rounds):
                    for server, (server_port, headers) in servers.items():
                        rates[server].append(
                            measure(server_port, route.path, headers, args.seconds)
                        )
            stub, logged_rate, floor = (median(rates[n]) for n in ("stub", "bare", "quiet"))
            traced_rate = median(rates["traced"])
            print(
                f"{route.label:<44} {stub:8.0f} {logged_rate:8.0f} {floor:8.0f}"
                f"  {stub / logged_rate:9.2f}  {stub / floor:11.2f}  {len(body):5d}"
                f" {traced_rate:8.0f}  {traced_rate / floor:13.2f}"
            )
            figures += [
                _rows.versus(
                    f"{route.label}, stub as shipped",
                    stub,
                    logged_rate,
                    "req/s",
                    "bare route, access log on",
                    f">= {TARGET_LOGGED:.2f}",
                ),
                _rows.versus(
                    f"{route.label}, stub as shipped",
                    stub,
                    floor,
                    "req/s",
                    "bare route, no log",
                    f">= {TARGET_FLOOR:.2f}",
                ),
                _rows.versus(
                    f"{route.label}, stub traced (OTEL_* set, default sampler)",
                    traced_rate,
                    floor,
                    "req/s",
                    "bare route, no log",
                    "none (said, not targeted)",
                ),
            ]
        print(f"targets: stub/bare >= {TARGET_LOGGED:.2f}, stub/no-log >= {TARGET_FLOOR:.2f}")
    _rows.write(args.json, figures)


if __name__ == "__main__":
    main()
