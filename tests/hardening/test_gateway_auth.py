"""The gateway is safe by default for the other users of a machine, on real processes: with no
SVC_MCP_GATEWAY_TOKEN it makes a token, keeps it 0600 in the state directory and reuses it, so a
call from another uid (`nobody`, run with setpriv) is refused; `--no-auth` says what it allows;
`--uds` serves a socket only its owner may open. The token never reaches the log."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.mcp.conftest import SVC_MCP, process_env, run_commands
from tests.support import PORT, Server, reserved_port, running_server, wait_ready
from tests.support_other_user import python

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "gateway-auth-test", "version": "1"},
    },
}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
NOWHERE = {"PORTAL_API_BASE": "http://127.0.0.1:9", "SERVICE_API_BASE": "http://127.0.0.1:9"}
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
OTHER_USER_CALL = """
import json, sys, urllib.error, urllib.request
request = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(), method="POST",
    headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
try:
    print(urllib.request.urlopen(request, timeout=10).status)
except urllib.error.HTTPError as error:
    print(error.code)
"""
OTHER_USER_SOCKET = """
import socket, sys
probe = socket.socket(socket.AF_UNIX)
try:
    probe.connect(sys.argv[1])
    print("connected")
except PermissionError:
    print("refused")
"""

pytestmark = pytest.mark.e2e  # as root with setpriv, to act as another local user


def start_gateway(state: Path, log: Path, *args: str) -> contextlib.AbstractContextManager[Server]:
    return running_server(
        ["-m", "svc_mcp", "--http", "--port", PORT, *args],
        log_path=log,
        ready_path="/mcp",
        env=process_env({**NOWHERE, "XDG_STATE_HOME": str(state)}),
    )


def as_other_user(script: str, *args: str) -> str:
    done = subprocess.run(
        [*AS_NOBODY, str(python()), "-I", "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.strip()


def initialize(url: str, **headers: str) -> httpx.Response:
    return httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=10)


def test_by_default_another_user_is_refused_and_the_kept_token_is_reused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    token_file = state / "svc-mcp" / "gateway-token"
    with start_gateway(state, tmp_path / "first.log") as gateway:
        url = gateway.base_url + "/mcp"
        assert as_other_user(OTHER_USER_CALL, url, json_text()) == "401"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        assert len(token) >= 43  # 256 random bits, base64url
        assert initialize(url, Authorization=f"Bearer {token}").status_code == 200
        assert initialize(url).status_code == 401
    first_log = (tmp_path / "first.log").read_text()
    assert str(token_file) in first_log
    assert "made now" in first_log
    with start_gateway(state, tmp_path / "second.log") as gateway:
        assert token_file.read_text().strip() == token
        url = gateway.base_url + "/mcp"
        assert initialize(url, Authorization=f"Bearer {token}").status_code == 200
    second_log = (tmp_path / "second.log").read_text()
    assert "kept in" in second_log
    assert token not in first_log + second_log


def json_text() -> str:
    return json.dumps(INITIALIZE)


def test_a_token_file_others_may_read_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "svc-mcp" / "gateway-token"
    token_file.parent.mkdir()
    token_file.write_text("kept-token-Zq8Xw3Lr5Tn1Vb7Hm4Jk9Pd2Sf6Gc0\n")
    token_file.chmod(0o644)
    env = {**NOWHERE, "XDG_STATE_HOME": str(tmp_path)}
    with reserved_port() as port:
        [done] = run_commands([([SVC_MCP, "--http", "--port", str(port)], env)])
        assert done.returncode == 2
        assert f"chmod 600 {token_file}" in done.stderr
        assert "Zq8Xw3" not in done.stderr


def test_no_auth_serves_loopback_without_a_token_and_says_what_it_allows(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with start_gateway(state, tmp_path / "open.log", "--no-auth") as gateway:
        assert initialize(gateway.base_url + "/mcp").status_code == 200
    log = (tmp_path / "open.log").read_text()
    assert "warning: --no-auth: any local user or process that can reach this address" in log
    assert not (state / "svc-mcp").exists()
    env = {**NOWHERE, "XDG_STATE_HOME": str(state)}
    with reserved_port() as port:
        remote = [SVC_MCP, "--http", "--port", str(port), "--host", "0.0.0.0"]
        [refused] = run_commands([([*remote, "--allow-remote", "--no-auth"], env)])
        assert refused.returncode == 2
        assert "--no-auth serves on loopback or a Unix socket only" in refused.stderr


def test_no_auth_serves_on_localhost_spelled_in_capitals(tmp_path: Path) -> None:
    """The gateway's bind check and the client's cleartext check share one loopback rule."""
    state = tmp_path / "state"
    with start_gateway(
        state, tmp_path / "upper.log", "--host", "LOCALHOST", "--no-auth"
    ) as gateway:
        assert initialize(gateway.base_url + "/mcp").status_code == 200
    assert "--no-auth: any local user" in (tmp_path / "upper.log").read_text()
    env = {**NOWHERE, "XDG_STATE_HOME": str(state)}
    with reserved_port() as port:
        subdomain = [SVC_MCP, "--http", "--port", str(port), "--host", "gateway.localhost"]
        [refused] = run_commands([([*subdomain, "--no-auth"], env)])
        assert refused.returncode == 2
        assert "loopback or a Unix socket only, not on gateway.localhost" in refused.stderr


def accepts(socket_path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(socket_path))
        except OSError:
            return False
        return True


@contextlib.contextmanager
def gateway_on_socket(socket_path: Path, state: Path, log: Path) -> Iterator[None]:
    env = process_env({**NOWHERE, "XDG_STATE_HOME": str(state)})
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "svc_mcp", "--http", "--uds", str(socket_path)],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
        )
    try:
        wait_ready(process, log, lambda left: accepts(socket_path))
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_uds_serves_a_socket_only_its_owner_may_open(tmp_path: Path) -> None:
    # A folder anyone may enter, so that only the socket's own mode keeps `nobody` out.
    shared = Path(tempfile.mkdtemp(prefix="svc-mcp-uds-"))
    shared.chmod(0o755)
    socket_path = shared / "gateway.sock"
    try:
        with gateway_on_socket(socket_path, tmp_path / "state", tmp_path / "uds.log"):
            assert stat.S_ISSOCK(socket_path.stat().st_mode)
            assert stat.S_IMODE(socket_path.stat().st_mode) == 0o600
            assert as_other_user(OTHER_USER_SOCKET, str(socket_path)) == "refused"
            token = (tmp_path / "state" / "svc-mcp" / "gateway-token").read_text().strip()
            transport = httpx.HTTPTransport(uds=str(socket_path))
            with httpx.Client(transport=transport, timeout=10) as client:
                answer = client.post(
                    "http://localhost/mcp",
                    json=INITIALIZE,
                    headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"},
                )
                assert answer.status_code == 200
        # uvicorn ends on SIGTERM by the signal itself, which leaves the socket file; the next
        # start finds nobody listening there and takes the path over.
        with gateway_on_socket(socket_path, tmp_path / "state", tmp_path / "again.log"):
            assert stat.S_IMODE(socket_path.stat().st_mode) == 0o600
    finally:
        shutil.rmtree(shared, ignore_errors=True)
