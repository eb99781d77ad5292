"""The data service's access line: written at once (a running server's log already holds it, as
`tail -f` shows it), in the same format, and not at all with `--no-access-log`."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import BEARER, TOKEN
from tests.support import PORT, running_server

pytestmark = pytest.mark.e2e


def access_lines(log: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.splitlines() if line.startswith('{"ts":')]


@pytest.mark.parametrize("logged", [True, False])
def test_access_lines_are_written_at_once_or_not_at_all(
    demo_db: Path, tmp_path: Path, logged: bool
) -> None:
    args = ["-m", "server_stub.service", "service", "--db", str(demo_db), "--port", PORT]
    with (
        running_server(
            [*args] if logged else [*args, "--no-access-log"],
            log_path=tmp_path / "server.log",
            ready_path="/health/live",
            env={"SERVICE_API_TOKEN": TOKEN},
        ) as server,
        httpx.Client(base_url=server.base_url, headers=BEARER, timeout=10) as http,
    ):
        assert http.get("/api/v1/system").status_code == 200
        # The line of a request is written before the connection's next request is read.
        assert http.get("/health/live").status_code == 200
        lines = access_lines(server.log())  # the server still runs: nothing flushed at exit
    if not logged:
        assert lines == []
        return
    system = [line for line in lines if line["route"] == "/api/v1/system"]
    assert len(system) == 1
    assert list(system[0]) == ["ts", "client", "method", "route", "status", "ms", "request_id"]
    assert (system[0]["client"], system[0]["method"], system[0]["status"]) == (
        "127.0.0.1",
        "GET",
        200,
    )
