"""What keying loopback peers by their local user costs (issue 31.3).

1. One lookup: `svc_serving.peer_owner.loopback_owner` on a live loopback connection (a netlink
   socket, one exact sock_diag request, the reply), median of 5 rounds of 2,000 calls.
2. Throughput of `GET /api/v1/system` (right token, from 127.0.0.1, 8 keep-alive connections) on
   three `svc-stub service --no-access-log` processes measured in the same run, alternating:
   A nothing locked (baseline); B a remote address locked (the lock check runs, no lookup);
   C another local user (uid 4242, via setpriv) locked, so every loopback request asks the kernel
   who owns its socket before it is let through: the worst case.
   Printed as server CPU per request (robust on a shared machine) and requests per second.

Run as root (setpriv): uv run python bench/loopback_owner.py [--seconds 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from _load import held_port, median, ratio_line, rps, server_process  # noqa: E402

from server_stub.service.demo_data import write_demo_database  # noqa: E402
from svc_serving.peer_owner import loopback_owner  # noqa: E402

TOKEN = "bench-token-" + "k" * 32
WRONG = "bench-wrong-" + "w" * 32
OTHER_UID = 4242
PROXIED = {"SERVICE_TRUST_PROXY": "1", "SERVICE_TRUSTED_PROXY_ADDRESSES": "127.0.0.1"}


def lookup_microseconds() -> float:
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        peer, local = accepted.getpeername(), accepted.getsockname()
        rounds = []
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(2000):
                assert loopback_owner(peer, local) == os.getuid()
            rounds.append((time.perf_counter() - started) / 2000 * 1e6)
        client.close()
        accepted.close()
    return statistics.median(rounds)


def wrong_tokens(port: int, *, forwarded_for: str | None = None, as_uid: int | None = None) -> None:
    headers = f'"X-API-Token": "{WRONG}"' + (
        f', "X-Forwarded-For": "{forwarded_for}"' if forwarded_for else ""
    )
    script = (
        "import http.client\n"
        "for _ in range(8):\n"
        f"    c = http.client.HTTPConnection('127.0.0.1', {port}, timeout=10)\n"
        f"    c.request('GET', '/api/v1/system', headers={{{headers}}})\n"
        "    c.getresponse().read(); c.close()\n"
    )
    prefix = (
        ["setpriv", f"--reuid={as_uid}", f"--regid={as_uid}", "--clear-groups"]
        if as_uid is not None
        else []
    )
    subprocess.run([*prefix, sys.executable, "-I", "-c", script], check=True, cwd="/")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    print(f"one loopback_owner lookup: {lookup_microseconds():.1f} us (median of 5 x 2,000)")

    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        ports, pids = {}, {}
        for name in ("A", "B", "C"):
            db = Path(folder) / f"{name}.db"
            write_demo_database(db)
            port = held_port()
            args = ["-m", "server_stub.service", "service", "--db", str(db), "--port", str(port)]
            child = stack.enter_context(
                server_process(
                    [*args, "--no-access-log"],
                    port,
                    Path(folder) / f"{name}.log",
                    "/health/live",
                    {"SERVICE_API_TOKEN": TOKEN, **PROXIED},
                )
            )
            ports[name], pids[name] = port, child.pid
        wrong_tokens(ports["B"], forwarded_for="203.0.113.9")
        wrong_tokens(ports["C"], as_uid=OTHER_UID)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        figures: dict[str, list[float]] = {name: [] for name in ports}
        cpu: dict[str, list[float]] = {name: [] for name in ports}
        for _ in range(options.rounds):
            for name, port in ports.items():
                before, started = cpu_seconds(pids[name]), time.perf_counter()
                rate = rps(port, "/api/v1/system", headers, seconds=options.seconds)
                requests = rate * (time.perf_counter() - started)
                figures[name].append(rate)
                cpu[name].append((cpu_seconds(pids[name]) - before) / requests * 1e6)
    a, b, c = (median(figures[name]) for name in ("A", "B", "C"))
    ca, cb, cc = (median(cpu[name]) for name in ("A", "B", "C"))
    print(ratio_line("B, a remote address locked (no lookup)", b, a, "req/s", "none"))
    print(ratio_line("C, another local user locked (a lookup per request)", c, a, "req/s", "none"))
    print(ratio_line("B server CPU per request", cb, ca, "us", "<= 1.10"))
    print(ratio_line("C server CPU per request", cc, ca, "us", "<= 2.0"))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
