"""What a stdio server costs an agent host that starts one per session (issues 33 finding 12, 36),
beside the FastMCP peer and the SDK alone, in one run.

Ready means: `initialize` answered, `notifications/initialized` sent, `tools/list` answered. For
`svc-mcp` (stdio) and the FastMCP peer (the same `portal_whoami` tool, bench/_fastmcp_peer.py, in
the throwaway environment of bench/_peer_env.py), in `--runs` alternating rounds: the CPU seconds
the process used until ready (/proc/<pid>/stat, which a busy machine disturbs less than wall
time) and its resident memory then. Beside them `python -c "import mcp"` (the official SDK,
which both load): what no server built on the SDK can go below.
Then `--sessions` svc-mcp servers started at once: the slowest's time to ready against one
alone, and their memory in all.
Targets (issue 36): memory <= 0.6x the peer's, CPU seconds <= 0.4x.

Usage: uv run python bench/stdio_startup.py [--sessions 10] [--runs 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import _rows
from _peer_env import FASTMCP, peer_python

BIN = Path(sys.executable).parent
HERE = Path(__file__).resolve().parent
MESSAGES = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]
SDK = [
    sys.executable,
    "-c",
    "import mcp, sys; sys.stdout.write('{}\\n{}\\n'); sys.stdout.flush(); sys.stdin.read()",
]
"""The SDK alone: answers two lines once `import mcp` is done, then waits for the end of stdin."""


@dataclass
class Ready:
    seconds: float
    """Wall time from start to the tools/list answer."""
    cpu: float
    """CPU seconds (user + system) the process used until then."""
    mib: float
    """Resident memory then."""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def environment(home: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin"),
        "HOME": home,
        "SERVICE_API_BASE": "http://127.0.0.1:9",
        "PORTAL_API_BASE": "http://127.0.0.1:9",
    }


def ready(command: list[str], home: str) -> Ready:
    """Starts `command`, sends initialize, initialized and tools/list, measures at the answer."""
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=environment(home),
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in MESSAGES))
    process.stdin.flush()
    answers = [process.stdout.readline(), process.stdout.readline()]
    took = time.monotonic() - started
    figures = Ready(took, cpu_seconds(process.pid), rss_mib(process.pid))
    if command is not SDK:
        assert b'"tools"' in answers[1], answers
    process.stdin.close()
    process.wait(timeout=30)
    return figures


def at_once(command: list[str], home: str, sessions: int) -> list[Ready]:
    out: list[Ready] = []
    threads = [
        threading.Thread(target=lambda: out.append(ready(command, home))) for _ in range(sessions)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    _rows.add_option(parser)
    options = parser.parse_args()
    commands = {
        "svc-mcp": [str(BIN / "svc-mcp")],
        "peer": [str(peer_python()), str(HERE / "_fastmcp_peer.py"), "stdio"],
        "sdk": SDK,
    }
    with tempfile.TemporaryDirectory() as home:
        runs: dict[str, list[Ready]] = {name: [] for name in commands}
        for _ in range(options.runs):
            for name, command in commands.items():
                runs[name].append(ready(command, home))
        crowd = at_once(commands["svc-mcp"], home, options.sessions)

    def med(name: str, field: str) -> float:
        return statistics.median(getattr(run, field) for run in runs[name])

    peer = f"the FastMCP peer, {FASTMCP}"
    print(f"stdio server ready (initialize + tools/list), medians of {options.runs} rounds")
    for name in commands:
        print(
            f"  {name:<8} CPU {med(name, 'cpu'):.3f} s  memory {med(name, 'mib'):5.1f} MiB  "
            f"wall {med(name, 'seconds') * 1000:,.0f} ms"
        )
    figures = []
    for field, unit, target in (("mib", "MiB", 0.6), ("cpu", "CPU s", 0.4)):
        ratio = med("svc-mcp", field) / med("peer", field)
        floor = med("sdk", field) / med("peer", field)
        verdict = "ok" if ratio <= target else "MISSED"
        what = "memory after initialize + tools/list" if field == "mib" else "CPU seconds to ready"
        print(
            f"  svc-mcp / peer, {what}: {ratio:.2f} (target <= {target}: {verdict}); "
            f"`import mcp` alone: {floor:.2f}"
        )
        figures.append(
            _rows.versus(
                f"stdio server {what}",
                med("svc-mcp", field),
                med("peer", field),
                unit,
                peer,
                f"<= {target}",
                f"`import mcp` alone: {med('sdk', field):.2f} {unit} ({floor:.2f} of the peer); "
                + verdict,
            )
        )
    alone = med("svc-mcp", "seconds")
    slowest = max(run.seconds for run in crowd)
    total = sum(run.mib for run in crowd)
    n = options.sessions
    print(
        f"  {n} svc-mcp started at once: slowest ready in {slowest * 1000:,.0f} ms "
        f"({slowest / alone:.1f}x one alone), {total:,.0f} MiB in all "
        f"(one shared gateway: one process)"
    )
    figures.append(
        _rows.versus(
            f"{n} stdio servers started at once: the slowest's time to ready",
            slowest * 1000,
            alone * 1000,
            "ms",
            "one alone",
            "",
            f"{total:,.0f} MiB in all",
        )
    )
    _rows.write(options.json, figures)


if __name__ == "__main__":
    main()
