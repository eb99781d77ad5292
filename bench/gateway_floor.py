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
from _load import ROOT, held_port, server_process
from _peer_env import FASTMCP, peer_python

from server_stub.portal.admin import issue_session
from server_stub.portal.demo_data import write_demo_data
from tests.support import accepts, wait_ready

TOKEN = "bench-gateway-" + "t" * 40
CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "portal_whoami", "arguments": {}},
}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
}
ERAS: dict[str, tuple[dict[str, str], dict[str, object]]] = {
    # A stateless server answers a bare tools/call of the initialize era without a handshake.
    "initialize era": ({"MCP-Protocol-Version": "2025-06-18"}, CALL),
    "2026-07-28": (
        {
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "portal_whoami",
        },
        {**CALL, "params": {**CALL["params"], "_meta": ENVELOPE}},  # type: ignore[dict-item]
    ),
}
"""Headers and body of one call in each protocol era."""


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


def wrk_script(folder: Path, headers: Mapping[str, str], body: object) -> Path:
    lines = ['wrk.method = "POST"', f"wrk.body = {json.dumps(json.dumps(body))}"]
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
        [
            "wrk",
            "-t1",
            "--timeout",
            "30s",
            f"-c{connections}",
            f"-d{max(1, round(seconds))}s",
            "--latency",
            "-s",
            str(script),
            url,
        ],
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


def check_answer(url: str, headers: Mapping[str, str], body: object) -> None:
    """Each server's answer is the identity as a tool result, before anything is timed."""
    answer = httpx.post(url, json=body, headers=dict(headers), timeout=30)
    answer.raise_for_status()
    result = answer.json()["result"]
    assert not result.get("isError"), result
    assert "alice" in json.dumps(result["structuredContent"]), result


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
        portal_port = held_port()
        portal_args = ["-m", "server_stub", "portal", "--data", str(temp / "data")]
        with server_process(
            [*portal_args, "--port", str(portal_port)],
            portal_port,
            temp / "portal.log",
            "/api/page",
        ):
            backend = {
                "PORTAL_API_BASE": f"http://127.0.0.1:{portal_port}",
                "PORTAL_SESSION_TOKEN": session,
            }
            ports = {name: held_port() for name in ("svc-mcp", "floor", "peer")}
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
                servers = {"svc-mcp": gateway.pid, "floor": floor.pid, "peer": peer.pid}
                auth = {"svc-mcp": {"Authorization": f"Bearer {TOKEN}"}}
                contenders: dict[str, tuple[int, str, Path]] = {}
                for era, (era_headers, body) in ERAS.items():
                    for name, pid in servers.items():
                        if name == "floor" and era != "initialize era":
                            continue  # the floor reads no header: one figure serves both eras
                        url = f"http://127.0.0.1:{ports[name]}/mcp"
                        headers = {**HEADERS, **era_headers, **auth.get(name, {})}
                        check_answer(url, headers, body)
                        script = wrk_script(temp, headers, body)
                        contenders[label(name, era)] = (pid, url, script)
                        wrk(url, script, 4, 1.0, pid)  # warm-up
                samples: dict[tuple[str, int], list[Sample]] = {}
                for _ in range(args.rounds):
                    for connections in (1, args.connections):
                        for name, (pid, url, script) in contenders.items():
                            sample = wrk(url, script, connections, args.seconds, pid)
                            samples.setdefault((name, connections), []).append(sample)
    return report(samples, args)


def label(name: str, era: str) -> str:
    return "floor" if name == "floor" else f"{name}, {era}"


def report(samples: dict[tuple[str, int], list[Sample]], args: argparse.Namespace) -> int:
    def med(name: str, connections: int, field: str) -> float:
        return statistics.median(getattr(s, field) for s in samples[(name, connections)])

    figures: list[_rows.Figure] = []
    missed = False
    print(f"tools/call portal_whoami, raw POSTs by wrk, medians of {args.rounds} rounds")
    for connections in (1, args.connections):
        for name in dict.fromkeys(name for name, _ in samples):
            print(
                f"  {connections:>3} conn  {name:<27} {med(name, connections, 'rate'):7.0f} calls/s"
                f"  p99 {med(name, connections, 'p99_ms'):7.2f} ms"
                f"  server CPU {med(name, connections, 'cpu_ms'):.3f} ms/call"
            )
        for era in ERAS:
            ours = label("svc-mcp", era)
            for other, target in ((label("floor", era), 0.75), (label("peer", era), 1.0)):
                rate = med(ours, connections, "rate") / med(other, connections, "rate")
                cpu = med(ours, connections, "cpu_ms") / med(other, connections, "cpu_ms")
                p99 = med(ours, connections, "p99_ms") / med(other, connections, "p99_ms")
                ok = rate >= target and (other == "floor" or p99 <= 1.0)
                missed = missed or not ok
                name = "the floor" if other == "floor" else f"the FastMCP peer, {FASTMCP}"
                print(
                    f"  {connections:>3} conn  {ours} / {other}: calls/s {rate:.2f} "
                    f"(target >= {target:.2f}), CPU per call {cpu:.2f}, p99 {p99:.2f}: "
                    + ("ok" if ok else "MISSED")
                )
                figures.append(
                    _rows.versus(
                        f"tools/call portal_whoami, {era}, {connections} connection(s)",
                        med(ours, connections, "rate"),
                        med(other, connections, "rate"),
                        "calls/s",
                        name,
                        f">= {target:.2f}" + ("" if other == "floor" else ", p99 <= the peer's"),
                        f"CPU per call {med(ours, connections, 'cpu_ms'):.2f} vs "
                        f"{med(other, connections, 'cpu_ms'):.2f} ms (ratio {cpu:.2f}); p99 "
                        f"{med(ours, connections, 'p99_ms'):.1f} vs "
                        f"{med(other, connections, 'p99_ms'):.1f} ms; "
                        + ("ok" if ok else "MISSED"),
                    )
                )
    _rows.write(args.json, figures)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
