"""Runs every benchmark in bench/ with short options, each bounded in time, and writes one Markdown
table of figures, baselines and ratios to bench/results.md (and prints it).

Each benchmark runs as its own process, exactly as it runs alone, and writes its figures as JSON
rows (`--json`, bench/_rows.py); the table is built from those rows, never from printed text.
Usage: uv run python bench/run_all.py [--timeout 300] [--rows DIR]
(`--rows DIR` keeps each benchmark's rows there, as DIR/<name>.json; with `--assemble`, no
benchmark runs and the table is built from the rows already in DIR.)
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from _rows import read

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.md"

BENCHMARKS: dict[str, list[str]] = {
    "portal_stub": ["--seconds", "1", "--rounds", "3"],
    "service_stub": ["--requests", "4000", "--rounds", "3"],
    "stubs_vs_bare": ["--seconds", "2", "--rounds", "5"],
    "mcp_calls": ["--calls", "300", "--runs", "5"],
    "intel": ["--count", "150"],
    "context": [],
    "answers": ["--fills", "100000", "--runs", "5"],
    "gateway_load": ["--clients", "50", "--seconds", "5"],
    "gateway_floor": ["--seconds", "2", "--rounds", "2"],
    "stdio_startup": ["--sessions", "10", "--runs", "3"],
    "confinement": ["--starts", "10", "--seconds", "1", "--rounds", "3"],
    "telemetry": ["--calls", "8", "--seconds", "2", "--rounds", "3", "--clients", "20"],
    "gateway_memory": ["--calls", "16", "--bytes", "8000000", "--settle", "4"],
}

Row = dict[str, object]


def _number(value: object) -> str:
    if not isinstance(value, int | float):
        return ""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.2f}" if abs(value) >= 1 else f"{value:.3f}"


def cells(row: Row) -> list[str]:
    """benchmark, measure, figure, baseline, ratio, target, note."""
    unit = row["unit"]
    baseline = ""
    if row.get("baseline") is not None:
        baseline = f"{_number(row['baseline'])} {unit} ({row['baseline_name']})"
    ratio = f"{row['ratio']:.2f}" if isinstance(row.get("ratio"), int | float) else ""
    return [
        str(row["benchmark"]),
        str(row["name"]),
        f"{_number(row['value'])} {unit}",
        baseline,
        ratio,
        str(row.get("target", "")),
        str(row.get("note", "")),
    ]


def table(rows: list[Row], durations: dict[str, float]) -> str:
    commands = dict.fromkeys(f"`{row['command']}`" for row in rows)
    lines = [
        "# Benchmark results",
        "",
        f"Written by `bench/run_all.py` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"Python {platform.python_version()}, {platform.machine()}; short runs "
        "(see `BENCHMARKS` in run_all.py for the options), each server in its own process on "
        "loopback, figure and baseline measured in the same run.",
        "",
        "| benchmark | measure | figure | baseline | ratio | target | note |",
        "|---|---|---|---|---|---|---|",
        *("| " + " | ".join(cells(row)) + " |" for row in rows),
        "",
        "Commands: " + ", ".join(commands) + ".",
        "",
    ]
    if durations:
        lines += [
            "Wall time per benchmark: "
            + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in durations.items())
            + ".",
            "",
        ]
    return "\n".join(lines)


def run(name: str, options: list[str], rows: Path, timeout: float) -> str | None:
    """Runs one benchmark, its rows into `rows`; what went wrong, or None."""
    rows.unlink(missing_ok=True)
    print(f"== {name} {' '.join(options)}", file=sys.stderr, flush=True)
    try:
        done = subprocess.run(
            [sys.executable, str(HERE / f"{name}.py"), *options, "--json", str(rows)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=HERE.parent,
        )
    except subprocess.TimeoutExpired:
        return f"{name}: no result within {timeout:g} s"
    sys.stderr.write(done.stdout)
    if done.returncode != 0 or not rows.exists():
        return f"{name}: exit {done.returncode}\n{done.stderr}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=300, help="seconds per benchmark")
    parser.add_argument("--rows", type=Path, help="where each benchmark's JSON rows are kept")
    parser.add_argument(
        "--assemble", action="store_true", help="run nothing: build the table from --rows"
    )
    args = parser.parse_args()
    if args.assemble and args.rows is None:
        parser.error("--assemble needs --rows DIR")
    with tempfile.TemporaryDirectory(prefix="svc-bench-rows-") as temp:
        directory = args.rows or Path(temp)
        directory.mkdir(parents=True, exist_ok=True)
        durations: dict[str, float] = {}
        failed: list[str] = []
        for name, options in BENCHMARKS.items():
            if args.assemble:
                continue
            started = time.monotonic()
            failure = run(name, options, directory / f"{name}.json", args.timeout)
            durations[name] = time.monotonic() - started
            if failure:
                failed.append(failure)
        rows: list[Row] = []
        for name in BENCHMARKS:
            path = directory / f"{name}.json"
            if path.exists():
                rows += read(path)
            elif args.assemble:
                failed.append(f"{name}: no rows in {path}")
    text = table(rows, durations)
    RESULTS.write_text(text)
    print(text)
    for failure in failed:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
