"""svc-mcp's gateway beside the floor and the FastMCP peer (issue 36), in one run.

One portal stub on loopback; three servers call its /api/whoami for a raw `tools/call` of
`portal_whoami` (stateless, JSON answers, one POST per call):
- svc-mcp: `svc-mcp --http` as shipped, with its gateway token (every check on);
- the floor: one Starlette route on uvicorn's fast stack, a pooled httpx client, no SDK, no
  checks, no log (bench/_floor_server.py);
- the peer: the same tool written with FastMCP (`fastmcp`, pinned in bench/_peer_env.py, in a
  throwaway environment outside the checkout), stateless with JSON answers
  (bench/_fastmcp_peer.py).
wrk drives each at 1 and at `--connections` connections, in alternating rounds; each figure is
the median of `--rounds`. Besides calls/s it reads each server's CPU time per call from
/proc/<pid>/stat, which a machine busy with other work disturbs less than the rate.
Targets: calls/s >= 0.75x the floor, >= 1.00x the peer, p99 <= the peer's.

Usage: uv run python bench/gateway_floor.py [--seconds 3] [--rounds 3] [--connections 50]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import _rows
import httpx
from _load import ROOT, free_port, server_process
from _peer_env import FASTMCP, peer_python

from server_stub.portal.admin import issue_session
from server_stub.portal.demo_data import write_demo_data
from tests.support import CONFINED, accepts, wait_ready

TOKEN = "bench-gateway-" + "t" * 40
CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "portal_whoami", "arguments": {}},
}
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Sample:
    rate: float
    p99_ms: float
    cpu_ms: float
    """Server CPU per call."""


def wrk_script(folder: Path, headers: Mapping[str, str]) -> Path:
    lines = ['wrk.method = "POST"', f"wrk.body = {json.dumps(json.dumps(CALL))}"]
    lines += [f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()]
    path = folder / f"call-{len(list(folder.glob('call-*.lua')))}.lua"
    path.write_text("\n".join(lines) + "\n")
    return path


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk(url: str, script: Path, connections: int, seconds: float, pid: int) -> Sample:
    before = cpu_seconds(pid)
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency", "-s", str(script), url],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    used = cpu_seconds(pid) - before
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"wrk saw failures against {url}:\n{out}")
    calls = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"\s99%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    return Sample(rate, p99, used / max(calls, 1) * 1000)


@contextlib.contextmanager
def peer_server(port: int, log: Path, env: Mapping[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """The FastMCP peer, with the peer environment's interpreter."""
    script = ROOT / "bench" / "_fastmcp_peer.py"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(peer_python()), str(script), "http", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
        )
    try:
        wait_ready(process, log, lambda _: accepts("127.0.0.1", port))
        yield process
    finally:
        process.terminate()
        process.wait(timeout=10)


def check_answer(url: str, headers: Mapping[str, str]) -> None:
    """Each server's answer is the identity as a tool result, before anything is timed."""
    answer = httpx.post(url, json=CALL, headers=dict(headers), timeout=30)
    answer.raise_for_status()
    result = answer.json()["result"]
    assert not result.get("isError"), result
    print(f"  {url}: {json.dumps(result)[:300]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    parser.add_argument("--connections", type=int, default=50)
    _rows.add_option(parser)
    args = parser.parse_args()
    peer_python()  # made before anything is started or timed
    with tempfile.TemporaryDirectory(prefix="svc-bench-") as temp_name:
        temp = Path(temp_name)
        write_demo_data(temp / "data")
        session = issue_session(temp / "data", "alice", timedelta(hours=2))
        portal_port = free_port()
        portal_args = ["-m", "server_stub", "portal", "--data", str(temp / "data")]
        with server_process(
            [*portal_args, "--port", str(portal_port)], portal_port, temp / "portal.log", "/api/page"
        ):
            backend = {
                "PORTAL_API_BASE": f"http://127.0.0.1:{portal_port}",
                "PORTAL_SESSION_TOKEN": session,
            }
            ports = {name: free_port() for name in ("svc-mcp", "floor", "peer")}
            with (
                server_process(
                    ["-m", "svc_mcp", "--http", "--port", str(ports["svc-mcp"])],
                    ports["svc-mcp"],
                    temp / "gateway.log",
                    "/mcp",
                    {**backend, "SVC_MCP_GATEWAY_TOKEN": TOKEN, "HOME": temp_name},
                ) as gateway,
                server_process(
                    ["bench/_floor_server.py", str(ports["floor"])],
                    ports["floor"],
                    temp / "floor.log",
                    "/",
                    backend,
                ) as floor,
                peer_server(ports["peer"], temp / "peer.log", backend) as peer,
            ):
                pids = {"svc-mcp": gateway.pid, "floor": floor.pid, "peer": peer.pid}
                headers = {
                    "svc-mcp": {**HEADERS, "Authorization": f"Bearer {TOKEN}"},
                    "floor": HEADERS,
                    "peer": HEADERS,
                }
                urls = {name: f"http://127.0.0.1:{port}/mcp" for name, port in ports.items()}
                scripts = {name: wrk_script(temp, headers[name]) for name in pids}
                for name in pids:
                    check_answer(urls[name], headers[name])
                    wrk(urls[name], scripts[name], 4, 1.0, pids[name])  # warm-up
                samples: dict[tuple[str, int], list[Sample]] = {}
                for _ in range(args.rounds):
                    for connections in (1, args.connections):
                        for name in pids:
                            sample = wrk(
                                urls[name], scripts[name], connections, args.seconds, pids[name]
                            )
                            samples.setdefault((name, connections), []).append(sample)
    return report(samples, args)


def report(samples: dict[tuple[str, int], list[Sample]], args: argparse.Namespace) -> int:
    def med(name: str, connections: int, field: str) -> float:
        return statistics.median(getattr(s, field) for s in samples[(name, connections)])

    figures: list[_rows.Figure] = []
    missed = False
    print(f"tools/call portal_whoami, raw POSTs by wrk, medians of {args.rounds} rounds")
    for connections in (1, args.connections):
        for name in ("svc-mcp", "floor", "peer"):
            print(
                f"  {connections:>3} conn  {name:<8} {med(name, connections, 'rate'):8.0f} calls/s"
                f"  p99 {med(name, connections, 'p99_ms'):7.2f} ms"
                f"  server CPU {med(name, connections, 'cpu_ms'):.3f} ms/call"
            )
        ours = med("svc-mcp", connections, "rate")
        for other, target in (("floor", 0.75), ("peer", 1.0)):
            theirs = med(other, connections, "rate")
            cpu_ratio = med(other, connections, "cpu_ms") / med("svc-mcp", connections, "cpu_ms")
            ok = ours / theirs >= target
            if other == "peer":
                ok = ok and med("svc-mcp", connections, "p99_ms") <= med("peer", connections, "p99_ms")
            missed = missed or not ok
            label = "the floor" if other == "floor" else f"FastMCP peer ({FASTMCP})"
            print(
                f"  {connections:>3} conn  svc-mcp / {other}: {ours / theirs:.2f} of the calls/s "
                f"(target >= {target:.2f}), {cpu_ratio:.2f} of the CPU per call inverted "
                f"({other} CPU / svc-mcp CPU): {'ok' if ok else 'MISSED'}"
            )
            figures.append(
                _rows.versus(
                    f"tools/call portal_whoami, {connections} connection(s), svc-mcp vs {label}",
                    ours,
                    theirs,
                    "calls/s",
                    label,
                    f">= {target:.2f}" + (" and p99 <= the peer's" if other == "peer" else ""),
                    f"CPU per call {med('svc-mcp', connections, 'cpu_ms'):.3f} vs "
                    f"{med(other, connections, 'cpu_ms'):.3f} ms; p99 "
                    f"{med('svc-mcp', connections, 'p99_ms'):.2f} vs "
                    f"{med(other, connections, 'p99_ms'):.2f} ms; " + ("ok" if ok else "MISSED"),
                )
            )
    _rows.write(args.json, figures)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
