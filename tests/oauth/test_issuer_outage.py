"""The issuer's outage is not the person's fault: with the real authorization server stopped
(SIGSTOP) when the gateway starts, a valid token is answered 503 with `Retry-After`, never 401
`invalid_token` (which sends a host to sign in again); the start-up says the issuer cannot be
read; and the token works within 5 s of the issuer's return (SIGCONT)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx

from tests.mcp.conftest import PortalStub
from tests.mcp.test_mcp_gateway import INITIALIZE, MCP_HEADERS
from tests.oauth.conftest import auth_server, service_client, start_gateway
from tests.support import reserved_port


def test_a_stopped_issuer_gets_503_and_its_return_is_noticed_at_once(
    portal: PortalStub, idp_root: Path, tmp_path: Path
) -> None:
    with reserved_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with auth_server(idp_root, [url], [service_client("ci")], "k1") as (idp, _):
            token = idp.token("ci", resource=url)
            assert idp.process is not None
            headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
            os.kill(idp.process.pid, signal.SIGSTOP)
            try:
                with start_gateway(portal, tmp_path / "gw.log", idp.issuer, port) as gateway:
                    started = time.monotonic()
                    answer = httpx.post(url, json=INITIALIZE, headers=headers, timeout=30)
                    assert answer.status_code == 503, answer.text
                    assert answer.headers["Retry-After"] == "5"
                    assert "WWW-Authenticate" not in answer.headers
                    assert answer.json()["error"]["data"]["kind"] == "unavailable"
                    assert time.monotonic() - started < 12
                    # Still so while it is stopped, and a made-up token is not told it is bad either.
                    assert (
                        httpx.post(url, json=INITIALIZE, headers=headers, timeout=30).status_code
                        == 503
                    )
                    deadline = time.monotonic() + 15
                    while "cannot be read" not in gateway.log() and time.monotonic() < deadline:
                        time.sleep(0.1)
                    line = next(x for x in gateway.log().splitlines() if "cannot be read" in x)
                    assert f"the OAuth issuer {idp.issuer} cannot be read" in line
                    assert "503" in line
                    os.kill(idp.process.pid, signal.SIGCONT)
                    back = time.monotonic()
                    statuses = []
                    while time.monotonic() - back < 5:
                        status = httpx.post(
                            url, json=INITIALIZE, headers=headers, timeout=30
                        ).status_code
                        statuses.append(status)
                        if status == 200:
                            break
                        assert status == 503
                        time.sleep(0.2)
                    assert statuses[-1] == 200, statuses
                    assert "answers again" in gateway.log()
            finally:
                os.kill(idp.process.pid, signal.SIGCONT)
