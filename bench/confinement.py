"""What confinement costs: start-up and stub throughput, confined vs unconfined, in one run.

Start-up: the time a process spends building its policy and confining itself (no_new_privs and
the Landlock ruleset), measured in fresh processes with SVC_*_CONFINEMENT=require against the same
processes with it off; and the portal's whole start (process start to first answer). Throughput:
`GET /api/catalog` on the portal and `GET /api/v1/system` on the data service, each a confined and
an unconfined process, in alternating rounds. Targets: start-up cost <= 5 ms, throughput within 3 %.
Usage: python bench/confinement.py [--starts 10] [--seconds 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from _load import ROOT, free_port, median, rps, server_process

from server_stub.portal.admin import issue_session
from server_stub.portal.demo_data import write_demo_data
from server_stub.service.demo_data import write_demo_database

TOKEN = "bench-confinement-token-0123456789abcdef"  # noqa: S105 (a throwaway stub token)
SETTINGS = {
    "portal": "SVC_STUB_CONFINEMENT",
    "service": "SVC_STUB_CONFINEMENT",
    "stdio": "SVC_MCP_CONFINEMENT",
}


def measure_confine(name: str, path: str) -> None:
    """In a fresh process: milliseconds from building the policy to confined (printed)."""
    from server_stub import confinement as stub
    from svc_mcp import confinement as mcp
    from svc_serving.confine import confine

    builders: dict[str, Callable[[], object]] = {
        "portal": lambda: stub.portal_policy(Path(path), 8081),
        "service": lambda: stub.service_policy(Path(path), 8080),
        "stdio": mcp.stdio_policy,
    }
    start = time.perf_counter()
    policy = builders[name]()
    confine(policy, SETTINGS[name])  # type: ignore[arg-type]
    print(json.dumps({"ms": (time.perf_counter() - start) * 1000}))


def confine_ms(name: str, path: Path, mode: str, starts: int) -> float:
    times = []
    for _ in range(starts):
        completed = subprocess.run(
            [sys.executable, __file__, "--measure-confine", name, str(path)],
            env={**os.environ, "PYTHONPATH": str(ROOT), SETTINGS[name]: mode},
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(json.loads(completed.stdout)["ms"])
    return median(times)


def portal_start_ms(data: Path, mode: str, temp: Path) -> float:
    port = free_port()
    args = ["-m", "server_stub", "portal", "--data", str(data), "--port", str(port)]
    start = time.perf_counter()
    with server_process(args, port, temp / "start.log", "/api/page", {SETTINGS["portal"]: mode}):
        return (time.perf_counter() - start) * 1000


def throughput(
    label: str,
    args: list[str],
    port_of: Callable[[], int],
    path: str,
    headers: dict[str, str],
    temp: Path,
    seconds: float,
    rounds: int,
    env: dict[str, str],
) -> None:
    ports = {"require": port_of(), "off": port_of()}
    with (
        server_process(
            [*args, "--port", str(ports["require"])],
            ports["require"],
            temp / "confined.log",
            path,
            {**env, "SVC_STUB_CONFINEMENT": "require"},
        ),
        server_process(
            [*args, "--port", str(ports["off"])],
            ports["off"],
            temp / "unconfined.log",
            path,
            {**env, "SVC_STUB_CONFINEMENT": "off"},
        ),
    ):
        for port in ports.values():
            rps(port, path, headers, seconds=0.5)  # warm up both
        figures: dict[str, list[float]] = {"require": [], "off": []}
        for _ in range(rounds):
            for mode, port in ports.items():
                figures[mode].append(rps(port, path, headers, seconds=seconds))
    confined, unconfined = median(figures["require"]), median(figures["off"])
    print(
        f"throughput {label}: confined {confined:,.0f} req/s vs unconfined {unconfined:,.0f} req/s; "
        f"ratio {confined / unconfined:.3f} (target >= 0.97)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--starts", type=int, default=10, help="fresh processes per start-up figure"
    )
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per server")
    parser.add_argument(
        "--measure-confine", nargs=2, metavar=("POLICY", "PATH"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.measure_confine:
        measure_confine(*args.measure_confine)
        return
    with tempfile.TemporaryDirectory() as name:
        temp = Path(name)
        data, db = temp / "data", temp / "db" / "service.db"
        write_demo_data(data)
        db.parent.mkdir()
        write_demo_database(db)
        token = issue_session(data, "bob", timedelta(hours=1))
        for policy, path in (("portal", data), ("service", db), ("stdio", temp)):
            confined = confine_ms(policy, path, "require", args.starts)
            unconfined = confine_ms(policy, path, "off", args.starts)
            print(
                f"start-up {policy}: policy and confinement {confined:.2f} ms vs off {unconfined:.2f} ms; "
                f"cost {confined - unconfined:.2f} ms (target <= 5 ms)"
            )
        starts = {mode: [] for mode in ("require", "off")}
        for _ in range(max(3, args.starts // 2)):
            for mode, runs in starts.items():
                runs.append(portal_start_ms(data, mode, temp))
        confined, unconfined = median(starts["require"]), median(starts["off"])
        print(
            f"start-up portal, process start to first answer: confined {confined:.0f} ms vs "
            f"unconfined {unconfined:.0f} ms; ratio {confined / unconfined:.3f}"
        )
        throughput(
            "portal GET /api/catalog",
            ["-m", "server_stub", "portal", "--data", str(data)],
            free_port,
            "/api/catalog",
            {"Authorization": f"Bearer {token}"},
            temp,
            args.seconds,
            args.rounds,
            {},
        )
        throughput(
            "service GET /api/v1/system",
            ["-m", "server_stub", "service", "--db", str(db)],
            free_port,
            "/api/v1/system",
            {"Authorization": f"Bearer {TOKEN}"},
            temp,
            args.seconds,
            args.rounds,
            {"SERVICE_API_TOKEN": TOKEN},
        )


if __name__ == "__main__":
    main()
