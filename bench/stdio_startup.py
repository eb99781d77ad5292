"""Many stdio servers at once (issue 33, finding 12): what each `svc-mcp` stdio process costs an
agent host that starts one per session, beside one started alone, in one run.

For `--sessions` N (default 20): the time from start to the answer of `initialize`, and the
resident memory after it, of one `svc-mcp` alone (median of `--runs`), then of N started at
once; beside `python -c "import mcp.server"` (the SDK alone). Prints the figures, the ratios, and
the memory of N processes against one shared `svc-mcp --http` gateway (which costs one process
whatever the number of sessions).

Usage: uv run python bench/stdio_startup.py [--sessions 20] [--runs 3]
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
from pathlib import Path

BIN = Path(sys.executable).parent
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}


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


def one_session(home: str, out: list[tuple[float, float]]) -> None:
    """Starts `svc-mcp` (stdio), sends initialize, records (seconds to the answer, RSS MiB)."""
    started = time.monotonic()
    process = subprocess.Popen(
        [str(BIN / "svc-mcp")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=environment(home),
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write((json.dumps(INIT) + "\n").encode())
    process.stdin.flush()
    process.stdout.readline()
    took = time.monotonic() - started
    memory = rss_mib(process.pid)
    process.stdin.close()
    process.wait(timeout=30)
    out.append((took, memory))


def at_once(home: str, sessions: int) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    threads = [threading.Thread(target=one_session, args=(home, out)) for _ in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


def sdk_import_seconds() -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import mcp.server"], check=True)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        alone = [at_once(home, 1)[0] for _ in range(options.runs)]
        sdk = statistics.median(sdk_import_seconds() for _ in range(options.runs))
        crowd = at_once(home, options.sessions)
    alone_s = statistics.median(took for took, _ in alone)
    alone_mib = statistics.median(memory for _, memory in alone)
    slowest = max(took for took, _ in crowd)
    crowd_median = statistics.median(took for took, _ in crowd)
    total_mib = sum(memory for _, memory in crowd)
    n = options.sessions
    print(
        f"initialize, one alone: {alone_s * 1000:,.0f} ms (baseline: import mcp.server "
        f"{sdk * 1000:,.0f} ms; ratio {alone_s / sdk:.2f})"
    )
    print(
        f"initialize, {n} at once: median {crowd_median * 1000:,.0f} ms, slowest "
        f"{slowest * 1000:,.0f} ms (baseline: one alone; ratio {slowest / alone_s:.1f})"
    )
    print(
        f"resident memory: {alone_mib:,.0f} MiB each, {total_mib:,.0f} MiB for {n} "
        f"(baseline: one shared gateway, about {alone_mib:,.0f} MiB; ratio {total_mib / alone_mib:.1f})"
    )


if __name__ == "__main__":
    main()
