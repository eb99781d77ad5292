"""What the seccomp filter costs a system call: nanoseconds per call in fresh processes, with the
filter every confined process installs (no_new_privs first) against none.

`send` on a socket pair goes through the filter (it reads `sendto`'s flags for MSG_FASTOPEN),
`socket()` too (family, type, protocol); `getppid` is a call the filter never reads, which the
kernel's seccomp cache answers without running it. Each figure is the best of `--runs` processes
(the least disturbed by other load), filtered and unfiltered processes alternating.
Target: a filtered `send` + `recv` within 10 % of an unfiltered one.
Usage: python bench/seccomp_filter.py [--calls 200000] [--runs 7]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import socket
import subprocess
import sys
import time

import _rows

_PR_SET_NO_NEW_PRIVS = 38
CALLS = ("getppid", "send + recv", "socket + close")


def measure(filtered: bool, calls: int) -> dict[str, float]:
    """In this process: nanoseconds per call of each kind (printed by the child)."""
    if filtered:
        from svc_serving.socket_filter import install_socket_filter

        ctypes.CDLL(None, use_errno=True).prctl(
            _PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), None, None, None
        )
        install_socket_filter(datagrams=False)
    left, right = socket.socketpair()
    timings: dict[str, float] = {}
    start = time.perf_counter()
    for _ in range(calls):
        os.getppid()
    timings["getppid"] = (time.perf_counter() - start) / calls * 1e9
    start = time.perf_counter()
    for _ in range(calls):
        left.send(b"x")
        right.recv(1)
    timings["send + recv"] = (time.perf_counter() - start) / calls * 1e9
    start = time.perf_counter()
    for _ in range(calls // 10):
        socket.socket().close()
    timings["socket + close"] = (time.perf_counter() - start) / (calls // 10) * 1e9
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200_000, help="calls per kind and process")
    parser.add_argument("--runs", type=int, default=7, help="processes per variant")
    parser.add_argument("--child", choices=("filtered", "unfiltered"), help=argparse.SUPPRESS)
    _rows.add_option(parser)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child == "filtered", args.calls)))
        return
    runs: dict[str, list[dict[str, float]]] = {"filtered": [], "unfiltered": []}
    for _ in range(args.runs):
        for variant, results in runs.items():
            child = [sys.executable, __file__, "--child", variant, "--calls", str(args.calls)]
            done = subprocess.run(child, capture_output=True, text=True, check=True)
            results.append(json.loads(done.stdout))
    figures = []
    for call in CALLS:
        filtered = min(result[call] for result in runs["filtered"])
        unfiltered = min(result[call] for result in runs["unfiltered"])
        target = "<= 1.10" if call == "send + recv" else "none (said, not targeted)"
        figure = _rows.versus(call, filtered, unfiltered, "ns", "no filter", target)
        print(figure.line())
        figures.append(figure)
    _rows.write(args.json, figures)


if __name__ == "__main__":
    main()
