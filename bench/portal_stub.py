"""Requests per second of `GET /api/catalog` with a session vs a bare Starlette JSON route.

The portal runs as `svc-stub portal` does (its access log on); the baseline is a one-route
Starlette app under uvicorn's defaults (`bench/_bare_server.py`). Separate processes, measured in
alternating rounds in one run. Target: ratio >= 0.8.
Usage: python bench/portal_stub.py [--seconds 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import timedelta
from pathlib import Path

import _rows
from _load import held_port, median, rps, server_process

from server_stub.portal.admin import issue_session
from server_stub.portal.demo_data import write_demo_data


def main() -> str:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per server")
    _rows.add_option(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        data = Path(temp) / "data"
        write_demo_data(data)
        token = issue_session(data, "bob", timedelta(hours=1))
        portal_port, bare_port = held_port(), held_port()
        portal_args = [
            "-m",
            "server_stub",
            "portal",
            "--data",
            str(data),
            "--port",
            str(portal_port),
        ]
        with (
            server_process(portal_args, portal_port, Path(temp) / "portal.log", "/api/page"),
            server_process(
                ["bench/_bare_server.py", str(bare_port)],
                bare_port,
                Path(temp) / "bare.log",
                "/bare",
            ),
        ):
            headers = {"Authorization": f"Bearer {token}"}
            rps(portal_port, "/api/catalog", headers, seconds=0.5)  # warm up both
            rps(bare_port, "/bare", {}, seconds=0.5)
            portal, bare = [], []
            for _ in range(args.rounds):
                portal.append(rps(portal_port, "/api/catalog", headers, seconds=args.seconds))
                bare.append(rps(bare_port, "/bare", {}, seconds=args.seconds))
    figure = _rows.versus(
        "portal GET /api/catalog (session, access log on)",
        median(portal),
        median(bare),
        "req/s",
        "bare Starlette route",
        ">= 0.8",
    )
    print(figure.line())
    _rows.write(args.json, [figure])
    return figure.line()


if __name__ == "__main__":
    main()
