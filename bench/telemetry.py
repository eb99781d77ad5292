"""What telemetry costs (docs/observability.md), side by side in one run.

1. A CLI call's wall time (`svc-mcp get_system`, OTEL_* unset) with this checkout against another
   git revision's `src/` (`--base`, default main), alternating: telemetry off must be free.
2. The data service stub's throughput (GET /api/v1/system) with OTEL_* set, at the default
   sampler (the stubs': parent-based, roots 1 in 100; these requests carry no trace context),
   exporting to a receiver on loopback that discards, against the same stub with OTEL_* unset.
   Target: 0.9x or better. Beside it, with every request recorded (always_on), for the record.
3. The gateway's throughput (official clients calling get_system) likewise, traced at its
   default sampler (like the stubs': parent-based, roots 1 in 100; these calls carry no
   `_meta.traceparent`) against off.

Each pair alternates rounds, and which goes first alternates too, so drift hits both. Usage:
uv run python bench/telemetry.py [--base main] [--calls 15] [--seconds 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TypeVar

import _rows
from _load import ROOT, held_port, median, rps, server_process
from gateway_load import cpu_seconds, load

TOKEN = "bench-token-" + "k" * 32
AUTH = {"Authorization": f"Bearer {TOKEN}"}
T = TypeVar("T")


@contextlib.contextmanager
def discarding_receiver() -> Iterator[str]:
    """An OTLP/HTTP endpoint on loopback that answers 200 and keeps nothing."""

    class Discard(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Discard)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def base_sources(revision: str, into: Path) -> Path:
    """`src/` of `revision`, unpacked under `into`."""
    archive = subprocess.run(
        ["git", "archive", revision, "src"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def cli_seconds(env: dict[str, str], calls: int) -> list[float]:
    times = []
    for _ in range(calls):
        began = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "svc_mcp", "get_system"],
            env=env,
            check=True,
            capture_output=True,
        )
        times.append(time.perf_counter() - began)
    return times


def in_turn(round_number: int, pairs: list[T]) -> list[T]:
    """`pairs` in their order in even rounds, reversed in odd ones: measured, the one run second
    in a round loses a few per cent to drift (about 4 % for the gateway), so a fixed order would
    favour the first."""
    return pairs if round_number % 2 == 0 else pairs[::-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="git revision to compare the CLI with")
    parser.add_argument("--calls", type=int, default=15, help="CLI calls per round")
    parser.add_argument("--seconds", type=float, default=3.0, help="per throughput round")
    parser.add_argument("--clients", type=int, default=20, help="gateway clients")
    parser.add_argument("--rounds", type=int, default=3)
    _rows.add_option(parser)
    args = parser.parse_args()
    figures: list[_rows.Figure] = []

    def report(figure: _rows.Figure, extra: str = "") -> None:
        figures.append(figure)
        print(figure.line() + extra)

    plain = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    with tempfile.TemporaryDirectory(prefix="svc-bench-") as temp, discarding_receiver() as otlp:
        root = Path(temp)
        db = root / "service.db"
        subprocess.run(
            [sys.executable, "-m", "server_stub", "demo-data", "service", "--db", str(db)],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp}
        names = ("stub", "traced stub", "sampled stub", "gw", "traced gw")
        ports = {name: held_port() for name in names}
        stub = ["-m", "server_stub", "service", "--db", str(db), "--port"]
        gateway = ["-m", "svc_mcp", "--http", "--no-auth", "--port"]
        backend = {
            "SERVICE_API_TOKEN": TOKEN,
            "SERVICE_API_BASE": f"http://127.0.0.1:{ports['stub']}",
        }
        with contextlib.ExitStack() as stack:
            started = {}
            for name, command, env, ready in (
                ("stub", stub, {"SERVICE_API_TOKEN": TOKEN}, "/health/live"),
                ("traced stub", stub, {"SERVICE_API_TOKEN": TOKEN, **traced}, "/health/live"),
                (
                    "sampled stub",
                    stub,
                    {"SERVICE_API_TOKEN": TOKEN, **traced, "OTEL_TRACES_SAMPLER": "always_on"},
                    "/health/live",
                ),
                ("gw", gateway, backend, "/mcp"),
                ("traced gw", gateway, {**backend, **traced}, "/mcp"),
            ):
                started[name] = stack.enter_context(
                    server_process(
                        [*command, str(ports[name])], ports[name], root / f"{name}.log", ready, env
                    )
                )

            base_src = base_sources(args.base, root / "base")
            cli_env = {**plain, **backend}
            here, base = [], []
            cli_seconds(cli_env, 2)  # warm the file cache
            for _ in range(args.rounds):
                base += cli_seconds({**cli_env, "PYTHONPATH": str(base_src)}, args.calls)
                here += cli_seconds({**cli_env, "PYTHONPATH": str(ROOT / "src")}, args.calls)
            spread = (
                f"stdev {statistics.stdev(here) * 1000:.0f} / "
                f"{statistics.stdev(base) * 1000:.0f} ms"
            )
            report(
                _rows.versus(
                    f"CLI call start-up, OTEL_* unset, this checkout vs {args.base} (median)",
                    median(here) * 1000,
                    median(base) * 1000,
                    "ms",
                    f"{args.base}'s src/",
                    "<= 1.05, within noise",
                    spread,
                ),
                f"; {spread}",
            )

            stub_off: list[float] = []
            stub_on: list[float] = []
            stub_all: list[float] = []
            cpu: dict[str, list[float]] = {}  # server CPU per request, steadier than req/s
            for name in ("stub", "traced stub", "sampled stub"):
                rps(ports[name], "/api/v1/system", AUTH, seconds=1)  # warm-up
            for round_number in range(args.rounds):
                for name, rates in in_turn(
                    round_number,
                    [("stub", stub_off), ("traced stub", stub_on), ("sampled stub", stub_all)],
                ):
                    used = cpu_seconds(started[name].pid)
                    rate = rps(ports[name], "/api/v1/system", AUTH, seconds=args.seconds)
                    used = cpu_seconds(started[name].pid) - used
                    rates.append(rate)
                    cpu.setdefault(name, []).append(used / (rate * args.seconds))
            report(
                _rows.versus(
                    "service stub GET /api/v1/system, traced (default sampler) vs OTEL_* unset",
                    median(stub_on),
                    median(stub_off),
                    "req/s",
                    "OTEL_* unset",
                    ">= 0.90",
                )
            )
            report(
                _rows.versus(
                    "service stub server CPU per request, OTEL_* unset vs traced (default sampler)",
                    median(cpu["stub"]) * 1e6,
                    median(cpu["traced stub"]) * 1e6,
                    "us",
                    "traced (default sampler)",
                    ">= 0.90 (off/traced)",
                )
            )
            report(
                _rows.versus(
                    "service stub GET /api/v1/system, every request recorded (always_on) vs "
                    "OTEL_* unset",
                    median(stub_all),
                    median(stub_off),
                    "req/s",
                    "OTEL_* unset",
                    "none (what full sampling costs)",
                )
            )

            pids: dict[str, int] = {}
            gw_off: list[float] = []
            gw_on: list[float] = []
            for name in ("gw", "traced gw"):
                url = f"http://127.0.0.1:{ports[name]}/mcp"
                asyncio.run(load(url, "auto", 4, 1.0, pids))  # warm-up
            for round_number in range(args.rounds):
                for name, rates in in_turn(round_number, [("gw", gw_off), ("traced gw", gw_on)]):
                    url = f"http://127.0.0.1:{ports[name]}/mcp"
                    run, _ = asyncio.run(load(url, "auto", args.clients, args.seconds, pids))
                    if run.errors:
                        raise SystemExit(f"{name}: {run.errors[0]}")
                    rates.append(run.rate)
            report(
                _rows.versus(
                    f"gateway get_system, {args.clients} clients, traced (default sampler) vs "
                    "OTEL_* unset",
                    median(gw_on),
                    median(gw_off),
                    "calls/s",
                    "OTEL_* unset",
                    ">= 0.90",
                )
            )
    _rows.write(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
