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

import _rows
from _load import ROOT, held_port, median, rps, server_process
from service_stub import cpu_seconds

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
    from svc_mcp.serve import confinement as mcp
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
    port = held_port()
    args = ["-m", "server_stub", "portal", "--data", str(data), "--port", str(port)]
    start = time.perf_counter()
    with server_process(args, port, temp / "start.log", "/api/page", {SETTINGS["portal"]: mode}):
        return (time.perf_counter() - start) * 1000


def throughput(
    label: str,
    args: list[str],
    path: str,
    headers: dict[str, str],
    temp: Path,
    options: argparse.Namespace,
    env: dict[str, str],
) -> _rows.Figure:
    """Requests per second and server CPU per request of a confined and an unconfined process,
    in rounds that alternate which goes first (the busier the machine, the more CPU per request
    says: it does not count the time the server waited for a core)."""
    ports = {"require": held_port(), "off": held_port()}
    with (
        server_process(
            [*args, "--port", str(ports["require"])],
            ports["require"],
            temp / "confined.log",
            path,
            {**env, "SVC_STUB_CONFINEMENT": "require"},
        ) as confined_process,
        server_process(
            [*args, "--port", str(ports["off"])],
            ports["off"],
            temp / "unconfined.log",
            path,
            {**env, "SVC_STUB_CONFINEMENT": "off"},
        ) as unconfined_process,
    ):
        pids = {"require": confined_process.pid, "off": unconfined_process.pid}
        for port in ports.values():
            rps(port, path, headers, seconds=0.5)  # warm up both
        rates: dict[str, list[float]] = {"require": [], "off": []}
        cpu: dict[str, list[float]] = {"require": [], "off": []}
        for index in range(options.rounds):
            order = ["require", "off"] if index % 2 == 0 else ["off", "require"]
            for mode in order:
                before = cpu_seconds(pids[mode])
                rate = rps(ports[mode], path, headers, seconds=options.seconds)
                rates[mode].append(rate)
                cpu[mode].append((cpu_seconds(pids[mode]) - before) / (rate * options.seconds))
    confined, unconfined = median(rates["require"]), median(rates["off"])
    cpu_ratio = median(cpu["off"]) / median(cpu["require"])
    print(
        f"throughput {label}: confined {confined:,.0f} req/s vs unconfined {unconfined:,.0f} "
        f"req/s; ratio {confined / unconfined:.3f} (target >= 0.97); by server CPU per request "
        f"{median(cpu['require']) * 1e6:.0f} vs {median(cpu['off']) * 1e6:.0f} us, ratio {cpu_ratio:.3f}"
    )
    return _rows.versus(
        f"throughput {label}, confined",
        confined,
        unconfined,
        "req/s",
        "unconfined",
        ">= 0.97",
        f"by server CPU per request: {cpu_ratio:.3f}",
    )


def start_up(data: Path, db: Path, temp: Path, starts: int) -> list[_rows.Figure]:
    figures = []
    for policy, path in (("portal", data), ("service", db), ("stdio", temp)):
        confined = confine_ms(policy, path, "require", starts)
        unconfined = confine_ms(policy, path, "off", starts)
        print(
            f"start-up {policy}: policy and confinement {confined:.2f} ms vs off {unconfined:.2f} "
            f"ms; cost {confined - unconfined:.2f} ms (target <= 5 ms)"
        )
        figures.append(
            _rows.versus(
                f"start-up: {policy} policy and confinement (median)",
                confined,
                unconfined,
                "ms",
                "off",
                "cost <= 5 ms",
                f"cost {confined - unconfined:+.2f} ms",
            )
        )
    times: dict[str, list[float]] = {"require": [], "off": []}
    for _ in range(max(3, starts // 2)):
        for mode, runs in times.items():
            runs.append(portal_start_ms(data, mode, temp))
    confined, unconfined = median(times["require"]), median(times["off"])
    print(
        f"start-up portal, process start to first answer: confined {confined:.0f} ms vs "
        f"unconfined {unconfined:.0f} ms; ratio {confined / unconfined:.3f}"
    )
    figures.append(
        _rows.versus(
            "start-up: portal, process start to first answer (median)",
            confined,
            unconfined,
            "ms",
            "unconfined",
            "none (said, not targeted)",
        )
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=10, help="fresh processes per figure")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per server")
    parser.add_argument("--skip-startup", action="store_true", help="measure throughput only")
    parser.add_argument(
        "--measure-confine", nargs=2, metavar=("POLICY", "PATH"), help=argparse.SUPPRESS
    )
    _rows.add_option(parser)
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
        figures = [] if args.skip_startup else start_up(data, db, temp, args.starts)
        portal = ["-m", "server_stub", "portal", "--data", str(data)]
        session = {"Authorization": f"Bearer {token}"}
        figures.append(
            throughput("portal GET /api/catalog", portal, "/api/catalog", session, temp, args, {})
        )
        service = ["-m", "server_stub", "service", "--db", str(db)]
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        env = {"SERVICE_API_TOKEN": TOKEN}
        figures.append(
            throughput(
                "service GET /api/v1/system", service, "/api/v1/system", bearer, temp, args, env
            )
        )
    _rows.write(args.json, figures)


if __name__ == "__main__":
    main()
