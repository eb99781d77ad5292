"""Runs the official MCP conformance suite's server scenarios against `svc-mcp --http`.

For each protocol revision in REVISIONS it runs exactly the scenarios that revision requires
(`--requirements`), with `conformance/expected-failures-<revision>.yaml` as the baseline: a check
that fails and is not listed fails this script, and so does a listed check that now passes (the
baseline must shrink with it). Every entry of a baseline carries its reason in a comment.

Then the official TypeScript client (`conformance/ts-client.mjs`) lists the tools and calls one
eight times through a round-robin proxy in front of two gateways (`tests/mcp/round_robin.py`):
every call must be answered, whichever instance gets it.

The suite, the TypeScript SDK and a Node 22 to run them come pinned from
`conformance/package-lock.json` (`npm ci`, only when `conformance/node_modules` is missing or
older than the lock). The gateways serve on free loopback ports without a token (`--no-auth`),
with no backends behind them: the scenarios list and call tools, and a call that cannot reach a
backend is still a well-formed MCP answer (`unreachable: ...`).

Run: .venv/bin/uv run --locked --extra dev scripts/conformance.py
Results: test-artifacts/conformance/<revision>/.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import PORT, running_server  # noqa: E402

SUITE = ROOT / "conformance"
REVISIONS = ("2025-11-25", "2026-07-28")
OUT = ROOT / "test-artifacts" / "conformance"
ENTRY = re.compile(r"^\s*-\s+(\S+)\s*(#\s*\S.*)?$")


def install_suite() -> Path:
    """The pinned suite's entry point, installed with `npm ci` when needed."""
    modules = SUITE / "node_modules"
    lock = SUITE / "package-lock.json"
    marker = modules / ".package-lock.json"
    if not marker.exists() or marker.stat().st_mtime < lock.stat().st_mtime:
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("conformance: npm is missing (apt-get install -y nodejs npm)")
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=SUITE, check=True
        )
    return modules / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


def check_baseline(path: Path) -> list[str]:
    """Every entry of the baseline, each of which must give its reason in a comment."""
    entries, unexplained = [], []
    comment_above = False
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            comment_above = True
            continue
        if found := ENTRY.match(line):
            entries.append(found[1])
            if not (found[2] or comment_above):
                unexplained.append(found[1])
            continue
        comment_above = False
    if unexplained:
        raise SystemExit(f"conformance: {path.name}: entries without a reason: {unexplained}")
    return entries


def typescript_client(node: Path, env: dict[str, str]) -> list[str]:
    """Two gateways behind the round-robin proxy, driven by the official TypeScript client."""
    calls = 8
    with contextlib.ExitStack() as stack:
        upstreams = []
        for index in range(2):
            gateway = stack.enter_context(
                running_server(
                    ["-m", "svc_mcp", "--http", "--no-auth", "--port", PORT],
                    log_path=OUT / f"scale-out-gateway-{index}.log",
                    ready_path="/mcp",
                    env=env,
                )
            )
            upstreams.append(gateway.base_url)
        proxy = stack.enter_context(
            running_server(
                ["-m", "tests.mcp.round_robin", PORT, *upstreams],
                log_path=OUT / "scale-out-proxy.log",
                ready_path="/_proxy/counts",
                env={"PYTHONPATH": str(ROOT)},
            )
        )
        done = subprocess.run(
            [str(node), str(SUITE / "ts-client.mjs"), f"{proxy.base_url}/mcp", str(calls)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        counts = httpx.get(f"{proxy.base_url}/_proxy/counts").json()
    print(f"== TypeScript client through a round-robin proxy: {done.stdout.strip()}")
    print(f"   requests per gateway: {counts}")
    try:
        report = json.loads(done.stdout)
    except ValueError:
        print(done.stderr[-4000:], file=sys.stderr)
        return ["TypeScript client"]
    answered = report["outcomes"] == ["unreachable"] * calls
    if not (answered and report["tools"] > 0 and min(counts) > 0):
        return ["TypeScript client"]
    return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    index = install_suite()
    node = SUITE / "node_modules" / ".bin" / "node"
    failed = []
    OUT.mkdir(parents=True, exist_ok=True)
    log = OUT / "gateway.log"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SVC_MCP_", "SERVICE_", "PORTAL_", "DASHBOARD_"))
    }
    env.update({"SERVICE_API_BASE": "http://127.0.0.1:9", "PORTAL_API_BASE": "http://127.0.0.1:9"})
    with running_server(
        ["-m", "svc_mcp", "--http", "--no-auth", "--port", PORT],
        log_path=log,
        ready_path="/mcp",
        env=env,
    ) as gateway:
        for revision in REVISIONS:
            baseline = SUITE / f"expected-failures-{revision}.yaml"
            entries = check_baseline(baseline)
            out = OUT / revision
            shutil.rmtree(out, ignore_errors=True)
            started = time.monotonic()
            done = subprocess.run(
                [
                    str(node),
                    str(index),
                    "server",
                    "--url",
                    f"http://localhost:{gateway.port}/mcp",
                    "--requirements",
                    revision,
                    "--expected-failures",
                    str(baseline),
                    "-o",
                    str(out),
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            took = time.monotonic() - started
            report = done.stdout[done.stdout.find("=== SUMMARY ===") :]
            print(f"== {revision}: {len(entries)} expected failures, {took:.0f} s")
            print(report.rstrip() or done.stdout[-4000:])
            if done.returncode != 0:
                print(done.stderr[-4000:], file=sys.stderr)
                failed.append(revision)
    failed += typescript_client(node, env)
    if "Traceback" in log.read_text():
        print(f"conformance: the gateway logged a traceback, see {log}", file=sys.stderr)
        failed.append("gateway log")
    if failed:
        print(f"conformance: FAILED for {', '.join(failed)}", file=sys.stderr)
        return 1
    print("conformance: every scenario as the baselines expect")
    return 0


if __name__ == "__main__":
    sys.exit(main())
