"""The stubs against a bare route, side by side in one run.

For the portal's catalog (an auditor's session), the data service's `/api/v1/system` (Bearer),
`/api/v1/orders` at its default page and `/health/live`: requests per second of the stub as it
ships (access log on, confined), of a bare one-route Starlette app answering the same bytes under
uvicorn's defaults (its access log on), and of that bare app with no log (the floor); beside them,
the same stub with tracing on at its default sampler (OTEL_* set, exporting to a receiver on
loopback that discards). Rounds alternate between the four; the figures are medians, each ratio the
median of the rounds' ratios. Load: wrk (`-t1 -c16`) where installed,
else bench/_load.py's client over 16 connections. The machine may be shared: compare ratios
within one run, not figures across runs.
Targets: stub / bare >= 1.0, stub / bare with no log >= 0.65.

Beside each rate, the server's CPU time per request (its user + system time over the round / the
requests answered), and the ratios by it (baseline CPU / stub CPU, so above 1 the stub costs
less): on a shared machine the rate also moves with what else runs, a server's own CPU per request
much less. Both are printed with the load averages at the start and the end.

Usage: python bench/stubs_vs_bare.py [--seconds 3] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import _rows
import httpx
from _load import cpu_seconds, held_port, median, rps, server_process
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


def measure_round(
    port: int, pid: int, path: str, headers: dict[str, str], seconds: float
) -> tuple[float, float]:
    """(requests per second, the server's CPU microseconds per request) over one round."""
    cpu_before, started = cpu_seconds(pid), time.perf_counter()
    rate = measure(port, path, headers, seconds)
    answered = rate * (time.perf_counter() - started)
    return rate, (cpu_seconds(pid) - cpu_before) / answered * 1e6


def paired(values: list[float], baselines: list[float]) -> float:
    """The median of each round's value / baseline: a round's servers run back to back, so a
    drift in the machine's speed between rounds cancels in its ratio."""
    return median([value / baseline for value, baseline in zip(values, baselines, strict=True)])


def load_averages() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


@contextmanager
def bare(path: str, body: bytes, temp: Path, *extra: str) -> Iterator[tuple[int, int]]:
    """The bare route's (port, pid)."""
    port = held_port()
    body_file = temp / f"body-{port}.json"
    body_file.write_bytes(body)
    args = ["bench/_bare_server.py", str(port), path, str(body_file), *extra]
    with server_process(args, port, temp / f"bare-{port}.log", path) as process:
        yield port, process.pid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one measurement")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
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
        pids: dict[str, int] = {}
        portal = ["-m", "server_stub", "portal", "--data", str(temp / "portal"), "--port"]
        service = ["-m", "server_stub.service", "service", "--db", str(temp / "service.db")]
        for name, environment in (("", {}), ("traced ", traced)):
            portal_port = ports[f"{name}portal"] = held_port()
            service_port = ports[f"{name}service"] = held_port()
            pids[f"{name}portal"] = stack.enter_context(
                server_process(
                    [*portal, str(portal_port)],
                    portal_port,
                    temp / f"{name}portal.log",
                    "/api/page",
                    environment,
                )
            ).pid
            pids[f"{name}service"] = stack.enter_context(
                server_process(
                    [*service, "--port", str(service_port)],
                    service_port,
                    temp / f"{name}service.log",
                    "/health/live",
                    {"SERVICE_API_TOKEN": TOKEN, **environment},
                )
            ).pid
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
            "OTEL_* set (default sampler); bare: one Starlette route, same bytes, uvicorn's defaults; "
            "ratios: the median of the rounds' ratios"
        )
        print(f"load averages at the start: {load_averages()}")
        print(
            f"{'route':<44} {'stub':>8} {'bare':>8} {'no log':>8}  stub/bare  stub/no-log  bytes"
            f" {'traced':>8}  traced/no-log"
        )
        cpu_lines = []
        for route in routes:
            port = ports[route.stub]
            body = httpx.get(f"http://127.0.0.1:{port}{route.path}", headers=route.headers).content
            with (
                bare(route.path, body, temp) as logged,
                bare(route.path, body, temp, "--no-access-log") as quiet,
            ):
                servers = {
                    "stub": (port, pids[route.stub], route.headers),
                    "traced": (
                        ports[f"traced {route.stub}"],
                        pids[f"traced {route.stub}"],
                        route.headers,
                    ),
                    "bare": (*logged, {}),
                    "quiet": (*quiet, {}),
                }
                for server_port, _, headers in servers.values():
                    measure(server_port, route.path, headers, 1)  # warm up
                rates: dict[str, list[float]] = {name: [] for name in servers}
                cpu: dict[str, list[float]] = {name: [] for name in servers}
                for _ in range(args.rounds):
                    for server, (server_port, pid, headers) in servers.items():
                        rate, cost = measure_round(
                            server_port, pid, route.path, headers, args.seconds
                        )
                        rates[server].append(rate)
                        cpu[server].append(cost)
            stub, logged_rate, floor = (median(rates[n]) for n in ("stub", "bare", "quiet"))
            traced_rate = median(rates["traced"])
            stub_cpu, logged_cpu, floor_cpu = (median(cpu[n]) for n in ("stub", "bare", "quiet"))
            by_rate = {
                "logged": paired(rates["stub"], rates["bare"]),
                "floor": paired(rates["stub"], rates["quiet"]),
                "traced": paired(rates["traced"], rates["quiet"]),
            }
            by_cpu = {
                "logged": paired(cpu["bare"], cpu["stub"]),
                "floor": paired(cpu["quiet"], cpu["stub"]),
            }
            cpu_lines.append(
                f"{route.label:<44} {stub_cpu:8.0f} {logged_cpu:8.0f} {floor_cpu:8.0f}"
                f"  {by_cpu['logged']:9.2f}  {by_cpu['floor']:11.2f}"
                f"  (stub rounds: {', '.join(f'{c:.0f}' for c in cpu['stub'])})"
            )
            print(
                f"{route.label:<44} {stub:8.0f} {logged_rate:8.0f} {floor:8.0f}"
                f"  {by_rate['logged']:9.2f}  {by_rate['floor']:11.2f}  {len(body):5d}"
                f" {traced_rate:8.0f}  {by_rate['traced']:13.2f}"
            )
            figures += [
                _rows.Figure(
                    f"{route.label}, stub as shipped",
                    stub,
                    "req/s",
                    logged_rate,
                    "bare route, access log on",
                    by_rate["logged"],
                    f">= {TARGET_LOGGED:.2f}",
                    f"ratio: median of the rounds' ratios; by server CPU per request: "
                    f"{by_cpu['logged']:.2f} ({stub_cpu:.0f} us vs {logged_cpu:.0f} us)",
                ),
                _rows.Figure(
                    f"{route.label}, stub as shipped",
                    stub,
                    "req/s",
                    floor,
                    "bare route, no log",
                    by_rate["floor"],
                    f">= {TARGET_FLOOR:.2f}",
                    f"ratio: median of the rounds' ratios; by server CPU per request: "
                    f"{by_cpu['floor']:.2f} ({stub_cpu:.0f} us vs {floor_cpu:.0f} us)",
                ),
                _rows.Figure(
                    f"{route.label}, stub traced (OTEL_* set, default sampler)",
                    traced_rate,
                    "req/s",
                    floor,
                    "bare route, no log",
                    by_rate["traced"],
                    "none (said, not targeted)",
                    "ratio: median of the rounds' ratios",
                ),
            ]
        print(
            f"\nserver CPU us per request (median of the rounds; ratios: median of the rounds' "
            "baseline CPU / stub CPU)\n"
            f"{'route':<44} {'stub':>8} {'bare':>8} {'no log':>8}  bare/stub  no-log/stub"
        )
        print(*cpu_lines, sep="\n")
        print(f"load averages at the end: {load_averages()}")
        print(f"targets: stub/bare >= {TARGET_LOGGED:.2f}, stub/no-log >= {TARGET_FLOOR:.2f}")
    _rows.write(args.json, figures)


if __name__ == "__main__":
    main()
