"""Soak (issue 33): the `svc-mcp --http` gateway, the data service stub and the portal stub
together under steady calls for `--seconds` (default 60; CI's long run: 600), as a gate.

Load: `--clients` official MCP client sessions on the gateway call the read tools of both backends
in turn and, every fourth call, `submit_intel`, half the time with a new signed envelope and half
the time repeating one already sent by any session; one more client reads both stubs' REST APIs
directly. Each process's resident memory and open files are sampled every second; their slopes
per minute after the warm-up are printed beside the baseline of a steady process (0).

It exits 1, with one `FAIL` line per cause, when:
- an acknowledged envelope is not in the database (lost), or an envelope was stored as new twice
  (duplicated: a repeat must answer `duplicate=true`);
- any call failed (each kind is listed with its count, whether a retry can help, and its first
  message), or a process exited or logged a traceback;
- a process's resident memory or open files grew beyond the bound after the warm-up
  (tests/hardening/steady.py, the rule the pytest soak uses: the first quarter, at least 5 s,
  is warm-up; then at most 20 MiB and 64 open files over the first sample after it).

Usage: uv run python bench/soak.py [--seconds 60] [--clients 8]
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from _load import held_port, server_process
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from server_stub.intel.envelope import key_bytes, sign
from server_stub.portal.demo_data import write_demo_data
from server_stub.service.demo_data import write_demo_database
from svc_mcp.core.failures import FailureKind
from tests.hardening.conftest import rss_kib
from tests.hardening.steady import (
    OPEN_FILES_GROWTH_BOUND,
    RSS_GROWTH_BOUND_MIB,
    after_warm_up,
    warm_up_seconds,
)

READS = ("get_system", "portal_catalog", "get_positions", "get_intel", "portal_page", "get_events")
SUBMIT_EVERY = 4
"""Every fourth call of a session submits intel; every other submit repeats a sent envelope."""
CLEAN_STOPS = (0, -signal.SIGTERM)
"""How a process may end when sent SIGTERM at the end: the gateway exits 0 once its calls are
answered; uvicorn (the stubs) ends by the signal it was sent, after its graceful stop. Killed
(-9, when it did not stop within 10 s) or any other code is a failure."""
OWN_KINDS = {
    "session": "the MCP session itself broke (not a tool error): the soak opened a new one",
    "untyped": "a tool error without a `kind`: every tool error must carry one",
    "unexpected": "a call answered something other than the tool's documented result",
    "direct": "a direct REST read of a stub answered other than 200, or broke",
}
"""Error kinds the soak names itself, beside the tools' `FailureKind`s."""


@dataclass
class Tally:
    calls: int = 0
    sent: list[dict[str, Any]] = field(default_factory=list)
    """Every envelope submitted so far, by any session: the repeats come from here."""
    stored_new: Counter[str] = field(default_factory=Counter)
    """Per id, how many submits answered `duplicate=false`: more than one is a duplicate."""
    repeats: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    first_message: dict[str, str] = field(default_factory=dict)

    def error(self, kind: str, message: str) -> None:
        self.errors[kind] += 1
        self.first_message.setdefault(kind, message[:300])


def envelope_to_send(tally: Tally, turn: int, key: bytes) -> dict[str, Any]:
    if tally.sent and turn % (2 * SUBMIT_EVERY) == 0:
        tally.repeats += 1
        return tally.sent[secrets.randbelow(len(tally.sent))]
    draft = {"id": secrets.token_hex(8), "source": "soak", "kind": "note", "body": {"n": turn}}
    envelope = sign(draft, key, datetime.now(UTC))
    tally.sent.append(envelope)
    return envelope


async def one_session(url: str, key: bytes, deadline: float, tally: Tally) -> None:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        turn = 0
        while time.monotonic() < deadline:
            turn += 1
            if turn % SUBMIT_EVERY == 0:
                envelope = envelope_to_send(tally, turn, key)
                result = await session.call_tool("submit_intel", {"envelope": envelope})
            else:
                result = await session.call_tool(READS[turn % len(READS)], {})
            tally.calls += 1
            structured = result.structured_content or {}
            if result.is_error:
                kind = str(structured.get("kind") or "untyped")
                tally.error(kind, str(structured.get("message") or result.content))
            elif turn % SUBMIT_EVERY == 0:
                if structured.get("id") != envelope["id"] or "duplicate" not in structured:
                    tally.error("unexpected", f"submit_intel answered {structured}")
                elif structured["duplicate"] is False:
                    tally.stored_new[envelope["id"]] += 1


async def mcp_client(url: str, key: bytes, deadline: float, tally: Tally) -> None:
    """One session until `deadline`; a session that breaks is counted and replaced."""
    while time.monotonic() < deadline:
        try:
            await one_session(url, key, deadline, tally)
        except Exception as exc:  # any failure of the session itself counts as an error
            tally.error("session", f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(1.0)  # pace the next attempt; not a wait for an outcome


async def direct_client(
    reads: Mapping[str, Mapping[str, str]], deadline: float, tally: Tally
) -> None:
    """Reads each URL of `reads` (with its headers) in turn until `deadline`."""
    async with httpx.AsyncClient(timeout=30) as http:
        while time.monotonic() < deadline:
            for url, headers in reads.items():
                try:
                    status = (await http.get(url, headers=dict(headers))).status_code
                except httpx.HTTPError as exc:
                    tally.error("direct", f"GET {url}: {type(exc).__name__}: {exc}")
                    continue
                if status != 200:
                    tally.error("direct", f"GET {url}: {status}")


def measure(pid: int) -> tuple[float, float]:
    """Resident memory (MiB) and open files of process `pid`."""
    return rss_kib(pid) / 1024, len(list(Path(f"/proc/{pid}/fd").iterdir()))


Samples = dict[str, list[tuple[float, float, float]]]
"""Per process: (seconds since the start, resident MiB, open files)."""


async def sampler(
    processes: Mapping[str, subprocess.Popen[bytes]], deadline: float, into: Samples
) -> dict[str, int]:
    """Samples every process each second until `deadline`; which ones exited, with their code."""
    started = time.monotonic()
    exited: dict[str, int] = {}
    while time.monotonic() < deadline:
        for name, process in processes.items():
            if name in exited:
                continue
            if (code := process.poll()) is not None:
                exited[name] = code
                continue
            into[name].append((time.monotonic() - started, *measure(process.pid)))
        await asyncio.sleep(1.0)  # the sampling interval
    return exited


def stored(db: Path) -> tuple[set[str], int]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        rows = [row[0] for row in connection.execute("SELECT id FROM intel_inbox")]
    return set(rows), len(rows)


def slope_per_minute(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value), per minute."""
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_v = sum(v for _, v in samples) / n
    spread = sum((t - mean_t) ** 2 for t, _ in samples)
    if spread == 0:
        return 0.0
    return 60 * sum((t - mean_t) * (v - mean_v) for t, v in samples) / spread


@dataclass(frozen=True)
class Stack:
    processes: dict[str, subprocess.Popen[bytes]]
    logs: dict[str, Path]
    mcp_url: str
    direct_reads: dict[str, dict[str, str]]


@contextmanager
def stack(root: Path, db: Path, token: str, intel_key: str) -> Iterator[Stack]:
    """The portal stub, the data service stub and the gateway in front of both."""
    data = root / "portal-data"
    write_demo_data(data)
    portal_port, service_port, gateway_port = held_port(), held_port(), held_port()
    portal_url, service_url = f"http://127.0.0.1:{portal_port}", f"http://127.0.0.1:{service_port}"
    commands = {
        "portal": (
            ["-m", "server_stub", "portal", "--data", str(data), "--port", str(portal_port)],
            portal_port,
            "/api/page",
            {},
        ),
        "service": (
            [
                *("-m", "server_stub", "service", "--db", str(db)),
                *("--port", str(service_port), "--no-access-log"),
            ],
            service_port,
            "/health/live",
            {"SERVICE_API_TOKEN": token, "SERVICE_INTEL_HMAC": intel_key},
        ),
        "gateway": (
            ["-m", "svc_mcp", "--http", "--no-auth", "--port", str(gateway_port)],
            gateway_port,
            "/mcp",
            {
                "SERVICE_API_BASE": service_url,
                "SERVICE_API_TOKEN": token,
                "PORTAL_API_BASE": portal_url,
            },
        ),
    }
    logs = {name: root / f"{name}.log" for name in commands}
    with ExitStack() as running:
        processes = {
            name: running.enter_context(server_process(args, port, logs[name], ready, env))
            for name, (args, port, ready, env) in commands.items()
        }
        yield Stack(
            processes,
            logs,
            f"http://127.0.0.1:{gateway_port}/mcp",
            {
                f"{service_url}/api/v1/orders?limit=50": {"Authorization": f"Bearer {token}"},
                f"{portal_url}/api/catalog": {},
            },
        )


async def load(
    running: Stack, seconds: float, clients: int, key: bytes, tally: Tally, samples: Samples
) -> dict[str, int]:
    """The soak's load for `seconds`; which processes exited meanwhile, with their code."""
    deadline = time.monotonic() + seconds
    watching = asyncio.create_task(sampler(running.processes, deadline, samples))
    await asyncio.gather(
        direct_client(running.direct_reads, deadline, tally),
        *(mcp_client(running.mcp_url, key, deadline, tally) for _ in range(clients)),
    )
    return await watching


def explain(kind: str) -> str:
    if kind in OWN_KINDS:
        return f"not a tool failure kind: {OWN_KINDS[kind]}"
    if kind not in {k.value for k in FailureKind}:
        return "an unknown kind: the gateway named a kind the client does not know"
    failure = FailureKind(kind)
    if failure.retryable:
        return f"retryable (exit {failure.exit_code}): the same call may succeed later"
    return f"not retryable (exit {failure.exit_code}): the same call fails again"


def resource_failures(
    name: str, points: list[tuple[float, float, float]], warm_up: float
) -> list[str]:
    """Prints the process's figures; its failures, one line each."""
    failures = []
    rss = after_warm_up([(t, mib) for t, mib, _ in points], warm_up)
    files = after_warm_up([(t, count) for t, _, count in points], warm_up)
    steady = [point for point in points if point[0] >= warm_up]
    print(
        f"{name}: RSS {points[0][1]:.0f} -> {rss.first:.0f} after the warm-up -> {rss.last:.0f} "
        f"MiB (growth {rss.growth:.1f}, bound {RSS_GROWTH_BOUND_MIB:g}), slope "
        f"{slope_per_minute([(t, m) for t, m, _ in steady]):+.2f} MiB/min (baseline: 0); "
        f"open files {points[0][2]:.0f} -> {files.first:.0f} -> {files.last:.0f} (growth "
        f"{files.growth:.0f}, bound {OPEN_FILES_GROWTH_BOUND}), slope "
        f"{slope_per_minute([(t, f) for t, _, f in steady]):+.2f}/min (baseline: 0)"
    )
    if rss.growth > RSS_GROWTH_BOUND_MIB:
        failures.append(
            f"{name} memory: grew {rss.growth:.1f} MiB after the {warm_up:g} s warm-up "
            f"({rss.first:.1f} -> {rss.highest:.1f}), bound {RSS_GROWTH_BOUND_MIB:g} MiB"
        )
    if files.growth > OPEN_FILES_GROWTH_BOUND:
        failures.append(
            f"{name} open files: grew by {files.growth:.0f} after the {warm_up:g} s warm-up "
            f"({files.first:.0f} -> {files.highest:.0f}), bound {OPEN_FILES_GROWTH_BOUND}"
        )
    return failures


def envelope_failures(tally: Tally, ids: set[str], rows: int) -> list[str]:
    """Prints lost and duplicated; their failures, one line each."""
    lost = sorted(set(tally.stored_new) - ids)
    stored_twice = sorted(i for i, n in tally.stored_new.items() if n > 1)
    duplicated = len(stored_twice) + rows - len(ids)
    print(f"lost {len(lost)}, duplicated {duplicated} (target 0 and 0)")
    failures = []
    if lost:
        failures.append(
            f"lost: {len(lost)} acknowledged envelopes are not stored (first: {lost[0]})"
        )
    if duplicated:
        failures.append(
            f"duplicated: {duplicated} envelopes stored as new more than once"
            + (f" (first: {stored_twice[0]})" if stored_twice else "")
        )
    return failures


def error_failures(tally: Tally) -> list[str]:
    """Prints each error kind seen, explained; the failure line, if any."""
    errors = tally.errors.total()
    print(f"errors: {errors} (target 0)")
    for kind, count in tally.errors.most_common():
        print(f"  {kind}: {count}, {explain(kind)}; first: {tally.first_message[kind]!r}")
    if not errors:
        return []
    kinds = ", ".join(f"{kind} {count}" for kind, count in tally.errors.most_common())
    return [f"errors: {errors} calls failed ({kinds}; explained above)"]


def process_failures(running: Stack, exited: Mapping[str, int]) -> list[str]:
    """A process that exited during the soak or did not stop cleanly, or logged a traceback."""
    failures = []
    for name, log in running.logs.items():
        lines = log.read_text(errors="replace").strip().splitlines() or [""]
        stopped = running.processes[name].returncode
        if name in exited:
            failures.append(f"{name}: exited with {exited[name]} during the soak: {lines[-1]!r}")
        elif stopped not in CLEAN_STOPS:
            failures.append(f"{name}: SIGTERM stopped it with exit {stopped} (expected 0 or -15)")
        if any(line.startswith("Traceback") for line in lines):
            failures.append(f"{name}: its log has a traceback, ending {lines[-1]!r}")
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=8)
    options = parser.parse_args()
    token, intel_key = secrets.token_hex(24), secrets.token_hex(24)
    tally = Tally()
    with tempfile.TemporaryDirectory() as root_name:
        root = Path(root_name)
        db = root / "service.db"
        write_demo_database(db)
        before, _ = stored(db)
        with stack(root, db, token, intel_key) as running:
            samples: Samples = {name: [] for name in running.processes}
            key = key_bytes(intel_key)
            exited = asyncio.run(
                load(running, options.seconds, options.clients, key, tally, samples)
            )
        failures = process_failures(running, exited)
        ids, rows = stored(db)
    print(
        f"soak: {options.seconds:g} s, {options.clients} MCP sessions and 1 direct reader, "
        f"{tally.calls:,} MCP calls, {len(tally.stored_new):,} envelopes stored "
        f"({len(ids - before):,} new rows), {tally.repeats:,} repeats sent"
    )
    failures += envelope_failures(tally, ids, rows) + error_failures(tally)
    warm_up = warm_up_seconds(options.seconds)
    print(f"warm-up: the first {warm_up:g} s")
    for name, points in samples.items():
        if name in exited:
            continue  # judged above; too few samples to judge its growth by
        try:
            failures += resource_failures(name, points, warm_up)
        except ValueError as exc:
            failures.append(f"{name}: {exc}; run longer")
    for failure in failures:
        print(f"FAIL {failure}")
    if failures:
        sys.exit(1)
    print("soak: pass")


if __name__ == "__main__":
    main()
