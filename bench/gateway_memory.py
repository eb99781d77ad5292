"""Memory of large answers (issue 33, finding 7): a real `svc-mcp --http` gateway whose data
service (a fake backend on loopback) answers `get_intel` with pages of `--bytes` bytes, `--calls`
of them at once. Prints the gateway's resident memory before the burst, at its peak and settled
(the lowest within `--settle` seconds after the last answer), for this gateway and, in the same
run, for the old behaviour: the same gateway with `svc_mcp.core.give_back` switched off.

Usage: uv run python bench/gateway_memory.py [--calls 16] [--bytes 8000000] [--settle 4]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import _load  # noqa: F401 (puts the checkout on the path)
from _rows import Figure, add_option, versus, write

from svc_mcp.core.backends import SERVICE
from tests.hardening.burst import Memory, burst, gateway
from tests.hardening.fake_backend import fake_backend

OLD = (
    "-c",
    "import sys; import svc_mcp.core.give_back as g; g.answer_read = lambda size: None; "
    "sys.argv[0] = 'svc-mcp'; from svc_mcp.cli.main import main; main()",
)
"""The old behaviour: nothing given back after a large answer."""


def measure(entry: tuple[str, ...], backend: str, calls: int, settle: float) -> Memory:
    with (
        tempfile.TemporaryDirectory() as home,
        gateway(backend, Path(home) / "g.log", entry) as server,
    ):
        memory, failed = burst(server, calls, settle)
    if any(failed):
        sys.exit(f"{sum(failed)} of {calls} calls failed")
    return memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=16)
    parser.add_argument("--bytes", type=int, default=8_000_000)
    parser.add_argument("--settle", type=float, default=4.0)
    add_option(parser)
    args = parser.parse_args()
    with fake_backend() as base:
        backend = f"{base}/big-{args.bytes}"
        old = measure(OLD, backend, args.calls, args.settle)
        new = measure(("-m", "svc_mcp"), backend, args.calls, args.settle)
    mib = 1024.0
    what = f"{args.calls} x {args.bytes / 1e6:g} MB answers at once"
    bound = new.baseline / mib + 2 * SERVICE.max_answer_bytes / 1024 / mib
    figures: list[Figure] = []
    for name, memory in (("old", old), ("new", new)):
        figures.append(Figure(f"{name}: RSS before {what}", memory.baseline / mib, "MiB"))
        figures.append(
            versus(
                f"{name}: RSS at the peak",
                memory.peak / mib,
                memory.baseline / mib,
                "MiB",
                "RSS before",
                "",
            )
        )
        figures.append(
            versus(
                f"{name}: RSS settled ({args.settle:g} s after)",
                memory.settled / mib,
                memory.baseline / mib,
                "MiB",
                "RSS before",
                f"new: below {bound:.0f} MiB, the RSS before + 2 x the cap",
            )
        )
    figures.append(
        versus(
            "new: RSS settled",
            new.settled / mib,
            old.settled / mib,
            "MiB",
            "old: RSS settled",
            "below 1",
        )
    )
    for figure in figures:
        print(figure.line())
    write(args.json, figures)


if __name__ == "__main__":
    main()
