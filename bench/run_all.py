"""Runs every benchmark in bench/ with short options, each bounded in time, and writes one Markdown
table of figures, baselines and ratios to bench/results.md (and prints it).

Each benchmark runs as its own process, exactly as it runs alone, and its printed lines are read
back: what they measure does not change. Usage: uv run python bench/run_all.py [--timeout 300]
"""

from __future__ import annotations

import argparse
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.md"

BENCHMARKS: dict[str, list[str]] = {
    "portal_stub": ["--seconds", "1", "--rounds", "3"],
    "service_stub": ["--requests", "4000", "--rounds", "3"],
    "stubs_vs_bare": ["--seconds", "2", "--rounds", "3"],
    "mcp_calls": ["--calls", "300", "--runs", "5"],
    "intel": ["--count", "150"],
    "context": [],
    "gateway_load": ["--clients", "50", "--seconds", "5"],
    "confinement": ["--starts", "10", "--seconds", "1", "--rounds", "3"],
    "telemetry": ["--calls", "8", "--seconds", "2", "--rounds", "3", "--clients", "20"],
}


@dataclass(frozen=True)
class Row:
    benchmark: str
    measure: str
    figure: str
    baseline: str
    ratio: str
    target: str


NUMBER = r"([\d,.]+)"


def _portal_or_intel(name: str, out: str) -> list[Row]:
    rows = []
    pattern = rf"^(.+?): {NUMBER} (\S+) vs baseline {NUMBER} \S+; ratio {NUMBER} \(target (.+?)\)(?:; .*)?$"
    for label, figure, unit, baseline, ratio, target in re.findall(pattern, out, re.M):
        base = {"portal_stub": "bare Starlette route", "intel": "direct HTTP POST"}.get(
            name, "telemetry off / base revision"
        )
        rows.append(
            Row(name, label, f"{figure} {unit}", f"{baseline} {unit} ({base})", ratio, target)
        )
    return rows


def _service(out: str) -> list[Row]:
    rate = dict(
        re.findall(r"^  (bare Starlette JSON route|service.*?)\s{2,}(\d+) req/s", out, re.M)
    )
    rows = []
    for label, key in (
        ("default", "service (default: access log on)"),
        ("--no-access-log", "service --no-access-log"),
    ):
        found = re.search(
            rf"ratio service/bare \({re.escape(label)}\): {NUMBER} by req/s, {NUMBER} by server CPU",
            out,
        )
        if found:
            rows.append(
                Row(
                    "service_stub",
                    f"GET /api/v1/system, {key}",
                    f"{rate.get(key, '?')} req/s",
                    f"{rate.get('bare Starlette JSON route', '?')} req/s (bare Starlette route)",
                    f"{found[1]} (CPU/request: {found[2]})",
                    ">= 0.80" if label == "default" else "none (the log's cost)",
                )
            )
    for label, grown, tracked, held, of, verdict in re.findall(
        r"^  (.+? growth, .+?)\s+([\d.]+) MiB\s+tracked\s+([\d,]+)\s+still locked\s+([\d,]+) of\s+([\d,]+).*?(ok|FAIL)$",
        out,
        re.M,
    ):
        rows.append(
            Row(
                "service_stub",
                f"guard memory, 1,000,000 addresses: {label}",
                f"{grown} MiB; {held} of {of} locks held; {tracked} tracked",
                "64 MiB bound",
                f"{float(grown) / 64:.2f} of the bound",
                f"< 64 MiB ({verdict})",
            )
        )
    return rows


def _stubs_vs_bare(out: str) -> list[Row]:
    rows = []
    pattern = r"^(\S.+?)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+\d+\s+(\d+)\s+([\d.]+)$"
    for label, stub, logged, floor, to_logged, to_floor, traced, traced_to_floor in re.findall(
        pattern, out, re.M
    ):
        rows.append(
            Row(
                "stubs_vs_bare",
                f"{label}, stub as shipped",
                f"{stub} req/s",
                f"{logged} req/s bare route, log on; {floor} req/s no log",
                f"{to_logged}; {to_floor}",
                ">= 1.00; >= 0.65",
            )
        )
        rows.append(
            Row(
                "stubs_vs_bare",
                f"{label}, stub traced (OTEL_* set, default sampler)",
                f"{traced} req/s",
                f"{floor} req/s bare route, no log",
                traced_to_floor,
                "none (said, not targeted)",
            )
        )
    return rows


def _mcp_calls(out: str) -> list[Row]:
    rows = []
    imports = re.search(r"import mcp.server\s+([\d.]+) ms", out)
    starts = re.findall(
        r"^    (svc-mcp \S+)\s+([\d.]+) ms\s+ratio\s+([\d.]+)\s+\(target (.+)\)$", out, re.M
    )
    for command, ms, share, target in starts if imports else []:
        rows.append(
            Row(
                "mcp_calls",
                f"start-up: `{command}` (median wall time)",
                f"{ms} ms",
                f"{imports[1]} ms (`import mcp.server`)",
                share,
                target,
            )
        )
    median = dict(re.findall(r"^    (.+?)\s+median\s+([\d.]+) ms", out, re.M))
    ratio = re.search(r"tool / \(echo \+ GET\)\s+([\d.]+)\s+\(target (.+)\)$", out, re.M)
    if ratio and median:
        echo, direct = median.get("echo over stdio"), median.get("direct GET /api/whoami")
        rows.append(
            Row(
                "mcp_calls",
                "portal_whoami over stdio (median latency)",
                f"{median.get('portal_whoami over stdio')} ms",
                f"{echo} ms echo tool + {direct} ms direct GET",
                ratio[1],
                ratio[2],
            )
        )
    return rows


def _context(out: str) -> list[Row]:
    rows = []
    for measure, figure, budget in re.findall(
        r"^    ((?:whole result|shown to the model)(?: with views)?)\s+([\d,]+) chars\s+"
        r"\(budget ([\d,]+)",
        out,
        re.M,
    ):
        rows.append(
            Row("context", f"tools/list: {measure}", f"{figure} chars", "", "", f"<= {budget}")
        )
    total = re.search(
        r"^    total of (\d+) read tools\s+([\d,]+)\s+vs\s+([\d,]+)\s+ratio ([\d.]+)", out, re.M
    )
    if total:
        rows.append(
            Row(
                "context",
                f"default results of the {total[1]} read tools, text characters",
                total[2],
                f"{total[3]} (REST default pages, as MCP results used to be)",
                total[4],
                "each <= 8,000",
            )
        )
    return rows


def _gateway(out: str) -> list[Row]:
    rows = []
    for era in ("initialize era", "2026-07-28"):
        runs = dict(
            re.findall(
                rf"^  {re.escape(era)}\s+(1 client|\d+ clients)\s+([\d.]+ calls/s\s+median\s+[\d.]+ ms\s+p99\s+[\d.]+ ms)",
                out,
                re.M,
            )
        )
        verdict = re.search(
            rf"^  {re.escape(era)}\s+ratio ([\d.]+) .*?p99/median ([\d.]+) .*?: (ok|MISSED)$",
            out,
            re.M,
        )
        many = next((key for key in runs if key != "1 client"), None)
        if verdict and many:
            rows.append(
                Row(
                    "gateway_load",
                    f"get_system, {many.split()[0]} official-client sessions on one gateway, {era}",
                    " ".join(runs[many].split()),
                    "1 client alone: " + " ".join(runs["1 client"].split()),
                    f"{verdict[1]} of the calls/s; p99/median {verdict[2]}",
                    f">= 1.00 and <= 3.00 ({verdict[3]})",
                )
            )
    return rows


def _confinement(out: str) -> list[Row]:
    rows = []
    starts = r"^start-up (\w+): policy and confinement ([\d.]+) ms vs off ([\d.]+) ms; cost (-?[\d.]+) ms \(target (.+)\)$"
    for name, confined, off, cost, target in re.findall(starts, out, re.M):
        measure = f"start-up: {name} policy and confinement (median)"
        rows.append(
            Row(
                "confinement",
                measure,
                f"{confined} ms",
                f"{off} ms (off)",
                f"{float(cost):+.2f} ms",
                target,
            )
        )
    rates = rf"^throughput (.+?): confined {NUMBER} req/s vs unconfined {NUMBER} req/s; ratio {NUMBER} \(target (.+)\)$"
    for label, confined, unconfined, ratio, target in re.findall(rates, out, re.M):
        rows.append(
            Row(
                "confinement",
                f"{label}, confined",
                f"{confined} req/s",
                f"{unconfined} req/s (unconfined)",
                ratio,
                target,
            )
        )
    return rows


def parse(name: str, out: str) -> list[Row]:
    if name == "confinement":
        return _confinement(out)
    if name == "context":
        return _context(out)
    if name == "gateway_load":
        return _gateway(out)
    if name in ("portal_stub", "intel", "telemetry"):
        return _portal_or_intel(name, out)
    if name == "service_stub":
        return _service(out)
    if name == "stubs_vs_bare":
        return _stubs_vs_bare(out)
    return _mcp_calls(out)


def table(rows: list[Row], durations: dict[str, float]) -> str:
    lines = [
        "# Benchmark results",
        "",
        f"Written by `bench/run_all.py` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"Python {platform.python_version()}, {platform.machine()}; short runs "
        "(see `BENCHMARKS` in run_all.py for the options), each server in its own process on "
        "loopback, figure and baseline measured in the same run.",
        "",
        "| benchmark | measure | figure | baseline | ratio | target |",
        "|---|---|---|---|---|---|",
        *(
            f"| {r.benchmark} | {r.measure} | {r.figure} | {r.baseline} | {r.ratio} | {r.target} |"
            for r in rows
        ),
        "",
        "Wall time per benchmark: "
        + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in durations.items())
        + ".",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=300, help="seconds per benchmark")
    args = parser.parse_args()
    rows: list[Row] = []
    durations: dict[str, float] = {}
    failed: list[str] = []
    for name, options in BENCHMARKS.items():
        print(f"== {name} {' '.join(options)}", file=sys.stderr, flush=True)
        started = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, str(HERE / f"{name}.py"), *options],
                capture_output=True,
                text=True,
                timeout=args.timeout,
                cwd=HERE.parent,
            )
        except subprocess.TimeoutExpired:
            failed.append(f"{name}: no result within {args.timeout:g} s")
            continue
        finally:
            durations[name] = time.monotonic() - started
        sys.stderr.write(done.stdout)
        found = parse(name, done.stdout)
        if done.returncode != 0 or not found:
            failed.append(f"{name}: exit {done.returncode}, {len(found)} figures\n{done.stderr}")
        rows += found
    text = table(rows, durations)
    RESULTS.write_text(text)
    print(text)
    for failure in failed:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
